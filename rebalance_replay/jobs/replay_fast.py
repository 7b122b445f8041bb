"""The fast path (batch only): ``repartition(group_id)`` + ``sortWithinPartitions`` + ``mapInArrow``, key
boundaries handled in the function: no per-key overhead, for large backfills."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from rebalance_replay.jobs.group_runs import fewer_collections, grouped_partitions, key_runs
from rebalance_replay.jobs.replay_run import ReplayResult, _finish_result, _write_small
from rebalance_replay.jobs.replay_wire import (
    PredictionRows,
    SideRows,
    _predicted,
    _read_side,
    _status_rows,
    _write_side,
    pack,
    side_batch,
    step_to,
    unpack,
)
from rebalance_replay.schemas import PREDICTIONS
from rebalance_replay.transforms.ordering import SORT_COLUMNS
from rebalance_replay.transforms.replay import GroupReplayer, ReplaySettings

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

    from rebalance_replay.jobs.delta import DeltaStore


def fast_function(
    settings: ReplaySettings, side_dir: str
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function over partitions of rows packed by :func:`pack`, sorted by (group, replay
    order): groups are cut at key boundaries (as columns); a long group goes through its replayer in
    bounded chunks. Yields the ``predictions`` rows; the rest (the small tables' rows, each group's status)
    goes to ``<side_dir>/part-<partition>.parquet`` (the same name on a retry, written whole, then renamed),
    so the predictions stream straight into their commit."""
    chunk = 20_000

    def fn(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        with fewer_collections():
            yield from replay_all(batches)

    def replay_all(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        replayer: GroupReplayer | None = None
        parts: list[tuple[_Batch, int, int]] = []  # the current group's rows not yet fed: batch, from, to
        waiting = 0
        outputs = PredictionRows()  # made one table a chunk
        side = SideRows()  # thousands of small groups a task: compacted as they come
        last: tuple[int, bool] = (0, False)  # the current group's last row's bucket end and final flag

        def replay_chunk() -> None:
            # replay only what arrived before the chunk's last row: rows tied with it may follow
            nonlocal waiting
            assert replayer is not None
            rows = pa.concat_tables([batch.table.slice(a, b - a) for batch, a, b in parts])
            replayer.feed_table(rows)
            out = replayer.process(int(rows.column("arrival_ms")[-1].as_py()))
            side.add_batch(side_batch(replayer, out, outputs.add(out)))
            parts.clear()
            waiting = 0

        def finish_group() -> None:
            # the rows left, then the group's end: its last row's bucket end and final flag (a tick)
            nonlocal waiting
            assert replayer is not None
            if replayer.takes_columns(waiting):
                out = step_to(
                    replayer, pa.concat_tables([t.table.slice(a, b - a) for t, a, b in parts]), *last
                )
            else:  # a small group: its rows from its batches' rows, made once a batch
                replayer.feed([row for t, a, b in parts for row in t.rows()[a:b]])
                out = step_to(replayer, None, *last)
            side.add_batch(side_batch(replayer, out, outputs.add(out)))
            parts.clear()
            waiting = 0

        for record_batch in batches:
            table = unpack(pa.Table.from_batches([record_batch]))
            batch = _Batch(table)
            ends = table.column("bucket_end_ms").to_pylist()
            finals = table.column("final").to_pylist()
            for group_id, a, b in key_runs(table.column("group_id")):
                if replayer is None or group_id != replayer.group_id:
                    if replayer is not None:
                        finish_group()
                    replayer = GroupReplayer(group_id, settings)
                parts.append((batch, a, b))
                last = (int(ends[b - 1]), bool(finals[b - 1]))
                waiting += b - a
                if waiting >= chunk:
                    replay_chunk()
            if outputs.count >= chunk:
                yield from outputs.take().to_batches()
        if replayer is not None:
            finish_group()
        if outputs.count:
            yield from outputs.take().to_batches()
        _write_side(side_dir, f"part-{_partition_id():05d}", side.tables())

    return fn


class _Batch:
    """One input batch (unpacked), and its rows as Python dicts, made at once the first time a small group
    of it needs them: a call of a few dozen rows converted on its own pays Arrow's cost per column (~4 µs
    each of the feed's ~40) on top of the rows' (measured: ~260 µs a group of 32 rows)."""

    __slots__ = ("_rows", "table")

    def __init__(self, table: pa.Table) -> None:
        self.table = table
        self._rows: list[dict[str, Any]] | None = None

    def rows(self) -> list[dict[str, Any]]:
        if self._rows is None:
            self._rows = self.table.to_pylist()
        return self._rows


def _partition_id() -> int:
    from pyspark import TaskContext

    context = TaskContext.get()
    return 0 if context is None else int(context.partitionId())


def _replay_fast(
    spark: SparkSession,
    store: DeltaStore,
    settings: ReplaySettings,
    rows: DataFrame,
    n_rows: int,
    horizon: int,
    work: Path,
) -> ReplayResult:
    """One pass: the tasks' predictions go straight into their commit (nothing cached); the small
    tables' rows and the status rows come from the tasks' side files under ``work``."""
    from pyspark.sql import functions as F

    side_dir = work / f"fast-{uuid.uuid4().hex[:12]}"
    feed = rows.withColumn("bucket_end_ms", F.lit(horizon).cast("long")).withColumn("final", F.lit(True))
    ordered = grouped_partitions(pack(feed), *SORT_COLUMNS)
    predictions = ordered.mapInArrow(fast_function(settings, str(side_dir)), PREDICTIONS.spark_schema())
    try:
        written = store.write(predictions, PREDICTIONS, "overwrite")
        small = _read_side(side_dir)
        status = _status_rows(small)
        counts = {"predictions": _predicted(status) if written is None else written}
        counts.update(_write_small(spark, store, small, "overwrite"))
    finally:
        shutil.rmtree(side_dir, ignore_errors=True)
    return _finish_result("batch", "fast", horizon, n_rows, counts, status)
