"""The fast path (batch only): ``repartition(group_id)`` + ``sortWithinPartitions`` + ``mapInArrow``, key
boundaries handled in the function: no per-key overhead, for large backfills."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from rebalance_replay.jobs.group_runs import grouped_partitions, key_runs
from rebalance_replay.jobs.replay_run import ReplayResult, _finish_result, _write_small
from rebalance_replay.jobs.replay_wire import (
    _FEED_SCHEMA,
    SideRows,
    _predicted,
    _read_side,
    _status_rows,
    _step,
    _write_side,
    pack,
    split_output,
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
        replayer: GroupReplayer | None = None
        parts: list[pa.Table] = []  # the current group's rows not yet fed
        waiting = 0
        outputs: list[pa.Table] = []
        side = SideRows()  # thousands of small groups a task: compacted as they come
        produced = 0
        last: dict[str, Any] = {}  # the current group's last row's bucket end and final flag

        def replay_chunk() -> None:
            # replay only what arrived before the chunk's last row: rows tied with it may follow
            nonlocal waiting, produced
            assert replayer is not None
            rows = pa.concat_tables(parts)
            replayer.feed_table(rows)
            out = replayer.process(int(rows.column("arrival_ms")[-1].as_py()))
            predictions, rest = split_output(replayer, out)
            outputs.append(predictions)
            side.add_batch(rest)
            produced += predictions.num_rows
            parts.clear()
            waiting = 0

        def finish_group() -> None:
            nonlocal waiting, produced
            assert replayer is not None
            tick = pa.Table.from_pylist([{"group_id": replayer.group_id, **last}], schema=_FEED_SCHEMA)
            out = _step(replayer, pa.concat_tables([*parts, tick]))
            predictions, rest = split_output(replayer, out)
            outputs.append(predictions)
            side.add_batch(rest)
            produced += predictions.num_rows
            parts.clear()
            waiting = 0

        for batch in batches:
            table = unpack(pa.Table.from_batches([batch]))
            for group_id, a, b in key_runs(table.column("group_id")):
                if replayer is None or group_id != replayer.group_id:
                    if replayer is not None:
                        finish_group()
                    replayer = GroupReplayer(group_id, settings)
                parts.append(table.slice(a, b - a))
                last.update(table.slice(b - 1, 1).select(["bucket_end_ms", "final"]).to_pylist()[0])
                waiting += b - a
                if waiting >= chunk:
                    replay_chunk()
            if produced >= chunk:
                yield from pa.concat_tables(outputs).to_batches()
                outputs.clear()
                produced = 0
        if replayer is not None:
            finish_group()
        if outputs:
            yield from pa.concat_tables(outputs).to_batches()
        _write_side(side_dir, f"part-{_partition_id():05d}", side.tables())

    return fn


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
