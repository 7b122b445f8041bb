"""Replay on Spark: every group's requests through the coordinator model, with Spark's per-key state.

Two paths, one pure core (:class:`rebalance_replay.transforms.replay.GroupReplayer`), identical output rows:

* **stateful** (primary) — ``groupBy("group_id").applyInPandasWithState`` in a Structured Streaming query
  with ``Trigger.AvailableNow``. Each run first turns the rows landed since the last run into a *feed*:
  one parquet file per arrival-time bucket (``replay.bucket_ms``), oldest first, consumed one bucket per
  micro-batch, so a group's requests reach the model in arrival order and in bounded chunks. With the
  kept checkpoint (``--incremental``) this is the scheduled audit: the coordinator state, its timers and
  the rows not yet replayable live in the state store between runs. With a fresh checkpoint it is the
  one-shot batch replay, fed in ONE micro-batch when every group's rows fit one call
  (``replay.max_rows_per_call``). Each micro-batch's output is written from ``foreachBatch``.
* **fast** — ``repartition(group_id)`` + ``sortWithinPartitions`` + ``mapInArrow``, key boundaries handled
  in the function: no per-key overhead, for large backfills (batch only).

The *horizon* of a run: batch replays everything (what arrived before newest completion + 1 ms);
incremental runs replay what arrived before ``newest completion + 1 ms − replay.late_tolerance_ms`` and
keep the rest for the next run (with a zero tolerance the two horizons are the same).
Output depends only on the rows and the horizon, never on how the rows were chunked.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import itertools
import json
import os
import shutil
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rebalance_replay.jobs.bookkeeping import crash_point, write_json, write_parquet
from rebalance_replay.jobs.config import Config
from rebalance_replay.jobs.errors import MissingTableError
from rebalance_replay.schemas import MEMBER_SESSIONS, PREDICTIONS, REBALANCES, REQUESTS, TRANSITIONS
from rebalance_replay.schemas.core import Column, TableDef, arrow_table
from rebalance_replay.transforms.kafka_protocol import STATE_CHANGING_APIS, ApiKey
from rebalance_replay.transforms.ordering import SORT_COLUMNS
from rebalance_replay.transforms.replay import (
    OUTPUT_KINDS,
    REPLAY_COLUMNS,
    GroupReplayer,
    ReplayOutput,
    ReplaySettings,
)

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

    from rebalance_replay.jobs.delta import DeltaStore
    from rebalance_replay.jobs.delta.base import WriteMode

OUTPUT_TABLES: dict[str, TableDef] = {
    "predictions": PREDICTIONS,
    "transitions": TRANSITIONS,
    "rebalances": REBALANCES,
    "member_sessions": MEMBER_SESSIONS,
}
APP_ID = "rebalance-replay/replay"


def _union_output() -> TableDef:
    """One schema for everything a replay task emits: the row kind, every output table's columns, and a
    per-group status (pending work, KIP-848)."""
    cols: dict[str, Column] = {"kind": Column("kind", "string", False)}
    for t in OUTPUT_TABLES.values():
        for c in t.columns:
            prev = cols.get(c.name)
            if prev is not None and prev.type != c.type:
                raise TypeError(f"column {c.name} is {prev.type} in one output table and {c.type} in another")
            cols.setdefault(c.name, Column(c.name, c.type, True, c.doc))
    for c in (
        Column("pending", "boolean"),
        Column("kip848", "boolean"),
        Column("replayed", "bigint"),
        Column("late", "bigint"),
        Column("bulk", "bigint"),
        Column("predicted", "bigint"),
    ):
        cols[c.name] = c
    return TableDef(name="_replay_output", columns=tuple(cols.values()))


UNION = _union_output()

#: What the stateful function and the fast path read: the replay columns, plus the feed's bucket end and
#: whether this is the last call of a batch replay.
FEED = TableDef(
    name="_replay_feed",
    columns=(
        *(Column(c, REQUESTS.column(c).type, True) for c in REPLAY_COLUMNS),
        Column("bucket_end_ms", "bigint"),
        Column("final", "boolean"),
    ),
)


#: The nested columns only JoinGroup, SyncGroup and LeaveGroup rows fill. They cross to the Python
#: workers as one JSON string (:data:`PACKED`, null on every other row): Spark's Arrow writer pays for a
#: nested column on every row, null or not — measured at 1M rows, these six cost four times the rest of
#: the hand-off together.
PACKED_COLUMNS = (
    "protocols",
    "assignments",
    "leave_members",
    "response_members",
    "response_assignment",
    "response_leave_members",
)
PACKED = "packed_json"
#: The feed as it crosses to the Python workers (and as the stateful feed files hold it): :data:`FEED`
#: with :data:`PACKED_COLUMNS` packed.
WIRE = TableDef(
    name="_replay_wire",
    columns=(
        *(c for c in FEED.columns if c.name not in PACKED_COLUMNS),
        Column(PACKED, "string", True, "the packed columns as one JSON object (Spark's to_json)"),
    ),
)
_FEED_SCHEMA = FEED.arrow_schema()
_WIRE_SCHEMA = WIRE.arrow_schema()


def pack(df: DataFrame) -> DataFrame:
    """The feed (:data:`FEED` columns) as it crosses to Python (:data:`WIRE`); :func:`unpack` undoes it."""
    from pyspark.sql import functions as F

    filled = functools.reduce(lambda a, b: a | b, [F.col(c).isNotNull() for c in PACKED_COLUMNS])
    return df.select(
        *[c for c in WIRE.column_names if c != PACKED],
        F.when(filled, F.to_json(F.struct(*PACKED_COLUMNS))).alias(PACKED),
    )


def unpack(table: pa.Table) -> pa.Table:
    """A :data:`WIRE` table as the :data:`FEED` table it was packed from."""
    packed = table.column(PACKED).combine_chunks()
    n = table.num_rows
    at = np.flatnonzero(np.asarray(packed.is_valid().to_numpy(zero_copy_only=False), dtype=bool))
    restored: dict[str, pa.Array] = {}
    if len(at):
        objects = [json.loads(s) for s in packed.take(pa.array(at)).to_pylist()]
        where = np.full(n, -1, dtype=np.int64)
        where[at] = np.arange(len(at))
        scatter = pa.array(where, mask=where < 0)
        for name in PACKED_COLUMNS:
            kind = _FEED_SCHEMA.field(name).type
            values = pa.array([_from_json_value(o.get(name), kind) for o in objects], kind)
            restored[name] = values.take(scatter)
    columns = [
        restored.get(f.name, pa.nulls(n, f.type)) if f.name in PACKED_COLUMNS else table.column(f.name)
        for f in _FEED_SCHEMA
    ]
    return pa.Table.from_arrays(columns, schema=_FEED_SCHEMA)


def _from_json_value(value: Any, kind: pa.DataType) -> Any:
    """A value of Spark's ``to_json`` back as the Python value of Arrow type ``kind`` (binary comes as
    base64; a null struct field is left out)."""
    if value is None:
        return None
    if pa.types.is_binary(kind):
        return base64.b64decode(value)
    if pa.types.is_list(kind):
        return [_from_json_value(v, kind.value_type) for v in value]
    if pa.types.is_struct(kind):
        return {f.name: _from_json_value(value.get(f.name), f.type) for f in kind}
    return value


def settings_from(config: Config) -> ReplaySettings:
    return ReplaySettings(
        coordinator=config.coordinator_config(),
        completion_tolerance_ms=config.validation.completion_tolerance_ms,
        broker_lag_ms=config.validation.broker_lag_ms,
        cooperative_protocols=frozenset(config.replay.cooperative_protocols),
        follow_up_window_ms=config.replay.follow_up_window_ms,
        order_search_exhaustive_max=config.replay.order_search_exhaustive_max,
        order_search_max=config.replay.order_search_max,
        order_search_lookahead_max=config.replay.order_search_lookahead_max,
        bulk=config.replay.bulk,
    )


_UNION_SCHEMA = UNION.arrow_schema()


def _as_union(table: pa.Table, kind: str) -> pa.Table:
    """One output table's rows (any subset of the union's columns) in the union's shape."""
    return _shaped(table, _UNION_SCHEMA, {"kind": pa.repeat(pa.scalar(kind), table.num_rows)})


def _shaped(table: pa.Table, schema: pa.Schema, given: Mapping[str, pa.Array] | None = None) -> pa.Table:
    """``table`` (any subset of ``schema``'s columns) in ``schema``: the rest from ``given``, else null."""
    columns = {name: table.column(name) for name in table.column_names}
    return arrow_table(schema, table.num_rows, {**columns, **(given or {})})


def split_output(replayer: GroupReplayer, out: ReplayOutput) -> tuple[pa.Table, pa.Table]:
    """One call's output as (its ``predictions`` rows, in that table's schema; everything else — the
    small tables' rows and the group's status row — in the union schema)."""
    schema = PREDICTIONS.arrow_schema()
    tables = [_shaped(t, schema) for t in out.prediction_tables]
    if out.rows["predictions"]:
        tables.append(pa.Table.from_pylist(out.rows["predictions"], schema=schema))
    predictions = pa.concat_tables(tables) if tables else schema.empty_table()
    parts = []
    for kind in OUTPUT_KINDS:
        rows = out.rows[kind]
        if rows and kind != "predictions":
            parts.append(
                _as_union(pa.Table.from_pylist(rows, schema=OUTPUT_TABLES[kind].arrow_schema()), kind)
            )
    status = {
        "group_id": replayer.group_id,
        "pending": replayer.has_pending_work,
        "kip848": replayer.kip848,
        "replayed": out.replayed,
        "late": out.late,
        "bulk": sum(t.num_rows for t in out.prediction_tables),
        "predicted": predictions.num_rows,
    }
    parts.append(_as_union(pa.Table.from_pylist([status]), "status"))
    return predictions, pa.concat_tables(parts)


def _step(replayer: GroupReplayer, rows: pa.Table) -> ReplayOutput:
    """Feed one call's rows (ticks included) and replay up to their bucket end; a final tick also
    closes open rows."""
    replayer.feed_table(rows)
    until = pc.min(rows.column("bucket_end_ms")).as_py()
    out = replayer.process(int(until))
    if pc.any(pc.fill_null(rows.column("final"), False)).as_py():
        fin = replayer.finish()
        for kind in OUTPUT_KINDS:
            out.extend(kind, fin.rows[kind])
    return out


# ----------------------------------------------------------------------------------------------------
# Executor side
# ----------------------------------------------------------------------------------------------------


def stateful_function(settings: ReplaySettings, side_dir: str) -> Callable[..., Iterator[Any]]:
    """The ``applyInPandasWithState`` function (over rows packed by :func:`pack`): state = the group's
    replayer bytes. Yields the call's ``predictions`` rows; its other rows (small tables, the group's
    status) go to a side file in ``side_dir`` (a fresh name each attempt: the driver keeps one call a
    group per micro-batch, see :func:`_read_side`)."""

    def fn(key: tuple[str], pdfs: Iterator[Any], state: Any) -> Iterator[Any]:
        group_id = key[0]
        replayer = (
            GroupReplayer.from_bytes(bytes(state.get[0]), settings)
            if state.exists
            else GroupReplayer(group_id, settings)
        )
        rows = unpack(
            pa.concat_tables(
                [
                    pa.Table.from_pandas(pdf[WIRE.column_names], schema=_WIRE_SCHEMA, preserve_index=False)
                    for pdf in pdfs
                ]
            )
        )
        out = _step(replayer, rows)
        state.update((replayer.to_bytes(),))
        predictions, rest = split_output(replayer, out)
        _write_side(side_dir, f"call-{uuid.uuid4().hex}", [rest])
        yield predictions.to_pandas(integer_object_nulls=True, date_as_object=True)

    return fn


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
        side: list[pa.Table] = []
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
            side.append(rest)
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
            side.append(rest)
            produced += predictions.num_rows
            parts.clear()
            waiting = 0

        for batch in batches:
            table = unpack(pa.Table.from_batches([batch]))
            group = table.column("group_id").combine_chunks()
            codes = np.asarray(pc.dictionary_encode(group).indices.to_numpy(zero_copy_only=False))
            cuts = [0, *(np.flatnonzero(np.diff(codes)) + 1).tolist(), table.num_rows]
            for a, b in itertools.pairwise(cuts):
                if a == b:
                    continue
                group_id = group[a].as_py()
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
        _write_side(side_dir, f"part-{_partition_id():05d}", side)

    return fn


def _partition_id() -> int:
    from pyspark import TaskContext

    context = TaskContext.get()
    return 0 if context is None else int(context.partitionId())


def _write_side(side_dir: str, name: str, tables: Sequence[pa.Table]) -> None:
    """One task's small output rows (union schema) as ``<side_dir>/<name>.parquet``, written whole."""
    table = pa.concat_tables(tables) if tables else _UNION_SCHEMA.empty_table()
    write_parquet(os.path.join(side_dir, f"{name}.parquet"), table)


# ----------------------------------------------------------------------------------------------------
# Driver side
# ----------------------------------------------------------------------------------------------------


@dataclass
class ReplayResult:
    mode: str
    path: str
    horizon_ms: int | None
    new_rows: int
    counts: dict[str, int] = field(default_factory=dict)
    groups: int = 0
    kip848_groups: list[str] = field(default_factory=list)
    late_rows: int = 0
    #: requests validated in bulk (routine traffic, rebalance_replay.transforms.bulk)
    bulk_validated: int = 0
    up_to_date: bool = False
    seconds: float = 0.0
    #: what the log tells about the brokers (``rebalance_replay.jobs.broker_facts``), summary.json ``broker``
    broker: dict[str, Any] = field(default_factory=dict)

    def as_summary(self) -> dict[str, Any]:
        return {
            **({"broker": self.broker} if self.broker else {}),
            "replay": {
                "mode": self.mode,
                "path": self.path,
                "horizon_ms": self.horizon_ms,
                "new_rows": self.new_rows,
                "groups": self.groups,
                "late_rows": self.late_rows,
                "bulk_validated": self.bulk_validated,
                "kip848_groups": self.kip848_groups,
                "seconds": round(self.seconds, 2),
                "up_to_date": self.up_to_date,
            },
            "predictions": self.counts.get("predictions", 0),
            "transitions": self.counts.get("transitions", 0),
            "rebalances": self.counts.get("rebalances", 0),
            "member_sessions": self.counts.get("member_sessions", 0),
            "kip848_groups": len(self.kip848_groups),
        }


class ReplayDirs:
    """Where a warehouse keeps its replay bookkeeping (``<warehouse>/_replay``)."""

    def __init__(self, warehouse: str) -> None:
        self.root = Path(warehouse) / "_replay"
        self.manifest = self.root / "manifest.json"
        self.incremental = self.root / "incremental"

    def load_manifest(self) -> dict[str, Any]:
        if self.manifest.exists():
            data: dict[str, Any] = json.loads(self.manifest.read_text())
            return data
        return {}

    def save_manifest(self, data: dict[str, Any]) -> None:
        write_json(self.manifest, data, indent=1)


def _config_fingerprint(config: Config) -> str:
    relevant = {k: config.raw.get(k) for k in ("kafka", "broker", "replay", "validation")}
    return hashlib.sha1(json.dumps(relevant, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _classic_rows(df: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    keep = [int(a) for a in STATE_CHANGING_APIS] + [int(ApiKey.CONSUMER_GROUP_HEARTBEAT)]
    return df.filter(F.col("group_id").isNotNull() & F.col("api_key").isin(keep)).select(*REPLAY_COLUMNS)


def bucket_ms_for(bucket_ms: int, busiest: int, max_rows_per_call: int) -> int:
    """The bucket size for a run: ``bucket_ms`` halved until the busiest group's busiest bucket (``busiest``
    rows at ``bucket_ms``) fits ``max_rows_per_call`` (assuming a steady rate), never under one second."""
    while busiest > max_rows_per_call and bucket_ms > 1000:
        bucket_ms = max(1000, bucket_ms // 2)
        busiest = (busiest + 1) // 2
    return bucket_ms


def _bounded_bucket_ms(
    rows: DataFrame, bucket_ms: int, max_rows_per_call: int, rows_bound: int | None = None
) -> int:
    """Shrink the bucket so one stateful call (one group, one bucket) holds at most ``max_rows_per_call``
    rows: a 1,000-member group over a day is replayed in small time slices, never in one frame.
    ``rows_bound``: an upper bound, known to the caller, on any group's rows (no job when it fits)."""
    from pyspark.sql import functions as F

    if rows_bound is not None and rows_bound <= max_rows_per_call:
        return bucket_ms

    busiest = (
        rows.groupBy("group_id", F.floor(F.col("arrival_ms") / F.lit(bucket_ms)).alias("b"))
        .count()
        .agg(F.max("count"))
        .collect()[0][0]
    )
    return bucket_ms_for(bucket_ms, int(busiest or 0), max_rows_per_call)


def _write_feed(
    spark: SparkSession,
    rows: DataFrame,
    ticks: list[tuple[str, bool]],
    feed_dir: Path,
    run_id: int,
    horizon_ms: int,
    bucket_ms: int,
    max_rows_per_call: int,
    rows_bound: int | None = None,
) -> int:
    """Write the run's feed: one parquet file per arrival bucket (mtime ascending), then a file of ticks.
    Returns the number of files written. ``rows_bound``: see :func:`_bounded_bucket_ms`."""
    from pyspark.sql import functions as F

    stage = feed_dir.parent / f"_stage-{uuid.uuid4().hex}"
    bucket_ms = _bounded_bucket_ms(rows, bucket_ms, max_rows_per_call, rows_bound)
    bucket = F.floor(F.col("arrival_ms") / F.lit(bucket_ms)).cast("long")
    end = F.least((bucket + 1) * F.lit(bucket_ms), F.lit(horizon_ms))
    shaped = pack(rows.withColumn("bucket_end_ms", end).withColumn("final", F.lit(False))).withColumn(
        "_bucket", bucket
    )
    shaped.repartition("_bucket").write.partitionBy("_bucket").parquet(str(stage))
    feed_dir.mkdir(parents=True, exist_ok=True)
    base_mtime = 1_000_000_000 + run_id * 100_000  # consumed oldest first: runs, then buckets, in order
    written = 0
    try:
        buckets = sorted((int(p.name.split("=", 1)[1]), p) for p in stage.glob("_bucket=*"))
        for i, (b, folder) in enumerate(buckets):
            for j, f in enumerate(sorted(folder.glob("*.parquet"))):
                target = feed_dir / f"run{run_id:06d}-b{b:012d}-{j:03d}.parquet"
                shutil.move(str(f), target)
                os.utime(target, (base_mtime + i, base_mtime + i))
                written += 1
        if ticks:
            import pyarrow.parquet as pq

            tick_rows = [{"group_id": g, "bucket_end_ms": horizon_ms, "final": final} for g, final in ticks]
            target = feed_dir / f"run{run_id:06d}-ticks.parquet"
            pq.write_table(pa.Table.from_pylist(tick_rows, schema=_WIRE_SCHEMA), target)
            os.utime(target, (base_mtime + 99_999, base_mtime + 99_999))
            written += 1
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return written


def replay(
    spark: SparkSession,
    store: DeltaStore,
    config: Config,
    *,
    incremental: bool = False,
    path: str | None = None,
    window: tuple[int | None, int | None] = (None, None),
    groups: Sequence[str] = (),
    output: DeltaStore | None = None,
    log: Callable[[str], None] | None = None,
) -> ReplayResult:
    """Replay the warehouse's ``requests`` into the output tables. See the module docstring.

    ``window`` (batch only): replay only requests that arrived in ``[start, end)`` (epoch ms, either side
    open) and ``groups`` (batch only): only these groups — forensics on an incident; the model
    warm-starts if the window opens mid-life. ``output``: the store the output tables (and the replay
    bookkeeping, ``<output>/_replay``) go to instead of ``store`` — a forensics run's own folder, so the
    scheduled tables are never touched (``requests`` is always read from ``store``).
    """
    if incremental and (window != (None, None) or groups or output is not None):
        raise ValueError(
            "replay: --from/--to/--group select a forensics window for a batch replay, not for --incremental"
        )
    from pyspark.sql import functions as F

    say = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    started = time.monotonic()
    out_store = store if output is None else output
    dirs = ReplayDirs(out_store.warehouse)
    manifest = dirs.load_manifest()
    mode = "incremental" if incremental else "batch"
    requests_version = store.version_as_of(REQUESTS)  # --as-of: the version read
    broker: dict[str, Any] = {}
    if requests_version is not None:  # what the log tells about the brokers (version, settings)
        from rebalance_replay.jobs.broker_facts import broker_facts

        facts = broker_facts(spark, store, config)
        config, broker = facts.config, facts.summary
    fingerprint = (
        _config_fingerprint(config)
        + (f"/{window[0]}-{window[1]}" if window != (None, None) else "")
        + (f"/groups={','.join(sorted(groups))}" if groups else "")
    )
    chosen = path or config.replay.path
    if requests_version is None:
        raise MissingTableError(
            f"replay: no requests table in {config.storage.warehouse}; run `rebalance-replay ingest` first"
        )

    if (
        not incremental
        and manifest.get("mode") == "batch"
        and manifest.get("requests_version") == requests_version
        and manifest.get("config") == fingerprint
        and manifest.get("complete")
    ):
        say(f"replay: up to date (requests version {requests_version}, same configuration)")
        res = ReplayResult(
            mode,
            manifest.get("path", chosen),
            manifest.get("horizon_ms"),
            0,
            counts=manifest.get("counts", {}),
            groups=manifest.get("groups", 0),
            bulk_validated=manifest.get("bulk_validated", 0),
            kip848_groups=manifest.get("kip848_groups", []),
            up_to_date=True,
            broker=broker,
        )
        res.seconds = time.monotonic() - started
        return res

    settings = settings_from(config)
    if incremental:
        result = _replay_incremental(spark, store, config, settings, dirs, manifest, say)
    else:
        all_rows = _classic_rows(store.read(REQUESTS))
        if window[0] is not None:
            all_rows = all_rows.filter(F.col("arrival_ms") >= F.lit(window[0]))
        if window[1] is not None:
            all_rows = all_rows.filter(F.col("arrival_ms") < F.lit(window[1]))
        if groups:
            all_rows = all_rows.filter(F.col("group_id").isin(list(groups)))
        # one pass for everything the run needs to know: groups, rows, newest completion
        per_group = (
            all_rows.groupBy("group_id")
            .agg(F.count(F.lit(1)).alias("n"), F.max("completion_ms").alias("max_c"))
            .collect()
        )
        if not per_group:
            say("replay: no classic-group requests to replay")
            return ReplayResult(mode, chosen, None, 0, up_to_date=True)
        groups = sorted(r["group_id"] for r in per_group)
        n_rows = sum(int(r["n"]) for r in per_group)
        horizon = max(int(r["max_c"]) for r in per_group) + 1
        if chosen == "auto":
            chosen = "fast" if len(groups) >= config.replay.fast_path_min_groups else "stateful"
        say(f"replay: batch over {len(groups)} group(s), {chosen} path")
        if chosen == "fast":
            result = _replay_fast(spark, out_store, settings, all_rows, n_rows, horizon, dirs.root)
        else:
            busiest = max(int(r["n"]) for r in per_group)
            result = _replay_stateful_batch(
                spark,
                out_store,
                config,
                settings,
                dirs,
                all_rows,
                groups,
                n_rows,
                horizon,
                say,
                busiest_group=busiest,
            )
        crash_point("replay:before_manifest")  # outputs committed, manifest not yet written
        shutil.rmtree(dirs.incremental, ignore_errors=True)  # a batch replay resets the scheduled audit
        dirs.save_manifest(
            {
                "mode": "batch",
                "path": chosen,
                "requests_version": requests_version,
                "config": fingerprint,
                "complete": True,
                "horizon_ms": horizon,
                "counts": result.counts,
                "groups": result.groups,
                "bulk_validated": result.bulk_validated,
                "kip848_groups": result.kip848_groups,
            }
        )
    result.broker = broker
    result.seconds = time.monotonic() - started
    return result


def _split_and_write(
    spark: SparkSession,
    store: DeltaStore,
    out: DataFrame,
    side_dir: Path,
    *,
    overwrite: bool,
    app_id: str | None = None,
    txn_version: int | None = None,
) -> tuple[dict[str, int], list[dict[str, Any]]]:
    """Write a stateful micro-batch into the output tables; return row counts and the per-group status
    rows. ``out``: the micro-batch's ``predictions`` rows, computed once — written straight into their
    commit, nothing cached; the calls leave their other rows in ``side_dir`` (emptied first: what is
    there after the write is this micro-batch's), read on the driver for the small tables. Counts come
    from the commits (a write skipped as already committed counts what the calls predicted)."""
    mode: WriteMode = "overwrite" if overwrite else "append"
    shutil.rmtree(side_dir, ignore_errors=True)
    written = store.write(out, PREDICTIONS, mode, app_id=app_id, txn_version=txn_version)
    if written is None:  # committed by an earlier attempt: run the calls for their side files only
        out.write.format("noop").mode("overwrite").save()
    small = _read_side(side_dir)
    status = _status_rows(small)
    counts = {"predictions": _predicted(status) if written is None else written}
    counts.update(_write_small(spark, store, small, mode, app_id=app_id, txn_version=txn_version))
    shutil.rmtree(side_dir, ignore_errors=True)
    return counts, status


def _read_side(side_dir: Path) -> pa.Table:
    """The side files of one micro-batch (or one fast replay): one call a group is kept — a task that ran
    again (a retry, a speculative copy) left a second, identical file."""
    import pyarrow.parquet as pq

    files = sorted(side_dir.glob("*.parquet")) if side_dir.exists() else []
    tables = [pq.read_table(f, schema=_UNION_SCHEMA) for f in files]
    keep: list[pa.Table] = []
    seen: set[tuple[str, ...]] = set()
    for table in tables:
        groups = tuple(sorted(set(table.column("group_id").to_pylist()) - {None}))
        if groups in seen:
            continue
        seen.add(groups)
        keep.append(table)
    return pa.concat_tables(keep) if keep else _UNION_SCHEMA.empty_table()


def _write_small(
    spark: SparkSession,
    store: DeltaStore,
    small: pa.Table,
    mode: WriteMode,
    *,
    app_id: str | None = None,
    txn_version: int | None = None,
) -> dict[str, int]:
    """Write the small output tables (transitions, rebalances, member sessions) from their rows in the
    union schema, held on the driver; their row counts (from the commits)."""
    counts: dict[str, int] = {}
    for kind, table in OUTPUT_TABLES.items():
        if kind == "predictions":
            continue
        rows = small.filter(pc.equal(small.column("kind"), kind)).select(table.column_names)
        # (pyspark cannot build a frame from an Arrow table without chunks: an empty one has none)
        df = spark.createDataFrame(rows).coalesce(1) if rows.num_rows else store.empty(table)
        written = store.write(df, table, mode, app_id=app_id, txn_version=txn_version)
        counts[kind] = rows.num_rows if written is None else written
    return counts


def _predicted(status: Sequence[Mapping[str, Any]]) -> int:
    """The ``predictions`` rows the calls emitted, from their status rows (for a write that was skipped
    as already committed: nothing is computed twice to count them)."""
    return sum(s["predicted"] or 0 for s in status)


def _status_rows(small: pa.Table) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = (
        small.filter(pc.equal(small.column("kind"), "status"))
        .select(["group_id", "pending", "kip848", "replayed", "late", "bulk", "predicted"])
        .to_pylist()
    )
    return rows


def _finish_result(
    mode: str,
    path: str,
    horizon: int | None,
    new_rows: int,
    counts: dict[str, int],
    status: Sequence[Mapping[str, Any]],
) -> ReplayResult:
    latest: dict[str, Mapping[str, Any]] = {}
    late = bulk = 0
    for s in status:
        latest[s["group_id"]] = s
        late += s["late"] or 0
        bulk += s["bulk"] or 0
    kip848 = sorted(g for g, s in latest.items() if s["kip848"])
    return ReplayResult(
        mode,
        path,
        horizon,
        new_rows,
        counts,
        groups=len(latest),
        kip848_groups=kip848,
        late_rows=late,
        bulk_validated=bulk,
    )


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
    n = max(1, spark.sparkContext.defaultParallelism * 2)
    ordered = pack(feed).repartition(n, "group_id").sortWithinPartitions("group_id", *SORT_COLUMNS)
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


def _stateful_query(
    spark: SparkSession,
    feed_dir: Path,
    checkpoint: Path,
    settings: ReplaySettings,
    on_batch: Callable[[DataFrame, int], None],
    side_dir: Path,
    files_per_trigger: int = 1,
) -> None:
    """Run the stateful query over the feed (``files_per_trigger`` feed files per micro-batch; the calls'
    side files go to ``side_dir``, see :func:`_split_and_write`). On a
    local master a new checkpoint gets one shuffle partition (one state store) per core: the query's
    cost is partly per partition and micro-batch, and more partitions than cores buy nothing there. On a
    cluster the session's setting stands (an existing checkpoint keeps the count it was created with)."""
    from rebalance_replay.jobs.spark_session import local_cores, session_conf

    cores = local_cores(spark)
    conf = {} if cores is None else {"spark.sql.shuffle.partitions": str(cores)}
    with session_conf(spark, conf):
        stream = (
            spark.readStream.schema(WIRE.spark_schema())
            .option("maxFilesPerTrigger", files_per_trigger)
            .parquet(str(feed_dir))
        )
        replayed = stream.groupBy("group_id").applyInPandasWithState(
            stateful_function(settings, str(side_dir)),
            PREDICTIONS.spark_schema(),
            "replayer binary",
            "append",
            "NoTimeout",
        )
        query = (
            replayed.writeStream.trigger(availableNow=True)
            .option("checkpointLocation", str(checkpoint))
            .foreachBatch(on_batch)
            .start()
        )
        query.awaitTermination()


def _write_whole_feed(rows: DataFrame, feed_dir: Path, horizon_ms: int) -> int:
    """A batch replay's feed when every group's rows fit one stateful call: all rows, each group's
    final call (replay to the horizon, then close), in one micro-batch. Returns the number of files."""
    from pyspark.sql import functions as F

    feed = rows.withColumn("bucket_end_ms", F.lit(horizon_ms).cast("long")).withColumn("final", F.lit(True))
    pack(feed).write.parquet(str(feed_dir))
    return len(list(feed_dir.glob("*.parquet")))


def _replay_stateful_batch(
    spark: SparkSession,
    store: DeltaStore,
    config: Config,
    settings: ReplaySettings,
    dirs: ReplayDirs,
    rows: DataFrame,
    groups: list[str],
    n_rows: int,
    horizon: int,
    say: Callable[[str], None],
    *,
    busiest_group: int,
) -> ReplayResult:
    """A fresh checkpoint over a feed of all rows; each micro-batch's output goes straight to the tables
    (the first overwrites them, the rest append, under a transaction id of this run). ``busiest_group``:
    the most rows any group has — when it fits ``replay.max_rows_per_call``, the feed is one micro-batch
    instead of one per arrival bucket."""
    work = dirs.root / f"batch-{uuid.uuid4().hex[:12]}"
    feed_dir, checkpoint, side_dir = work / "feed", work / "checkpoint", work / "side"
    whole = busiest_group <= config.replay.max_rows_per_call
    try:
        if whole:
            files = _write_whole_feed(rows, feed_dir, horizon)
            say(f"replay: {files} feed file(s), one micro-batch → applyInPandasWithState (fresh checkpoint)")
            batches = 1
        else:
            files = _write_feed(
                spark,
                rows,
                [(g, True) for g in groups],
                feed_dir,
                0,
                horizon,
                config.replay.bucket_ms,
                config.replay.max_rows_per_call,
            )
            say(f"replay: {files} feed file(s) → applyInPandasWithState (fresh checkpoint)")
            batches = files
        totals: dict[str, int] = {k: 0 for k in OUTPUT_TABLES}
        statuses: list[dict[str, Any]] = []
        done: list[int] = []
        app_id = f"{APP_ID}/{work.name}"

        def on_batch(df: DataFrame, batch_id: int) -> None:
            counts, status = _split_and_write(
                spark, store, df, side_dir, overwrite=not done, app_id=app_id, txn_version=batch_id
            )
            for k, v in counts.items():
                totals[k] += v
            statuses.extend(status)
            done.append(batch_id)
            say(f"replay: micro-batch {len(done)}/{batches} done")

        _stateful_query(
            spark,
            feed_dir,
            checkpoint,
            settings,
            on_batch,
            side_dir,
            files_per_trigger=max(1, files) if whole else 1,
        )
        if not done:  # no micro-batch ran: the run's output is empty
            _split_and_write(spark, store, store.empty(PREDICTIONS), side_dir, overwrite=True)
        return _finish_result("batch", "stateful", horizon, n_rows, totals, statuses)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _replay_incremental(
    spark: SparkSession,
    store: DeltaStore,
    config: Config,
    settings: ReplaySettings,
    dirs: ReplayDirs,
    manifest: dict[str, Any],
    say: Callable[[str], None],
) -> ReplayResult:
    """The scheduled audit: replay what landed since the last run, keeping state in the checkpoint."""
    from pyspark.sql import functions as F

    inc = dirs.incremental
    state_file = inc / "state.json"
    fresh = not state_file.exists() or manifest.get("mode") != "incremental"
    if not fresh and not (inc / "checkpoint" / "metadata").exists():
        say(
            f"replay: the incremental checkpoint {inc / 'checkpoint'} is missing; rebuilding the scheduled "
            "audit from the tables"
        )
        fresh = True
    if fresh:
        shutil.rmtree(inc, ignore_errors=True)
        inc.mkdir(parents=True)
        state: dict[str, Any] = {
            "run": 0,
            "checkpoint_id": uuid.uuid4().hex,
            "max_completion_ms": None,
            "pending_groups": [],
            "kip848_groups": [],
        }
    else:
        state = json.loads(state_file.read_text())
    run_id = state["run"] + 1
    # the rows landed since the last run (the store knows how: Delta's streaming source, or the files the
    # Delta log added since the version the last run stopped at)
    landed = store.new_rows(REQUESTS, str(inc / "source"))
    new_rows = _classic_rows(landed.rows).persist()
    try:
        agg = new_rows.agg(F.max("completion_ms").alias("m"), F.count(F.lit(1)).alias("n")).collect()[0]
        n_new = int(agg["n"])
        max_c = max((x for x in (state["max_completion_ms"], agg["m"]) if x is not None), default=None)
        if max_c is None:
            say("replay: nothing landed yet")
            return ReplayResult("incremental", "stateful", None, 0, up_to_date=True)
        horizon = int(max_c) + 1 - config.replay.late_tolerance_ms
        ticks = [(g, False) for g in state["pending_groups"]]
        say(
            f"replay: incremental run {run_id}: {n_new} new row(s), horizon "
            f"{horizon} ({config.replay.late_tolerance_ms} ms behind the newest completion)"
        )
        feed_dir = inc / "feed"
        files = _write_feed(
            spark,
            new_rows,
            ticks,
            feed_dir,
            run_id,
            horizon,
            config.replay.bucket_ms,
            config.replay.max_rows_per_call,
            rows_bound=n_new,  # no group has more rows than the run
        )
        totals: dict[str, int] = {k: 0 for k in OUTPUT_KINDS}
        statuses: list[dict[str, Any]] = []
        done: list[int] = []  # micro-batches of this run (the checkpoint numbers them across runs)
        side_dir = inc / "side"
        if fresh:  # a fresh scheduled audit starts from empty output tables
            _split_and_write(spark, store, store.empty(PREDICTIONS), side_dir, overwrite=True)

        def on_batch(df: DataFrame, batch_id: int) -> None:
            counts, status = _split_and_write(
                spark,
                store,
                df,
                side_dir,
                overwrite=False,
                app_id=f"{APP_ID}/{state['checkpoint_id']}",
                txn_version=batch_id,
            )
            for k, v in counts.items():
                totals[k] += v
            statuses.extend(status)
            done.append(batch_id)
            say(f"replay: micro-batch {len(done)}/{files} committed ({counts['predictions']} predictions)")

        try:
            _stateful_query(spark, feed_dir, inc / "checkpoint", settings, on_batch, side_dir)
        except Exception as e:
            if fresh or done:
                raise
            from rebalance_replay.jobs.errors import user_message

            say(
                f"replay: the incremental checkpoint {inc / 'checkpoint'} cannot be read "
                f"({user_message(e)[:160]}); rebuilding the scheduled audit from the tables"
            )
            shutil.rmtree(inc, ignore_errors=True)
            return _replay_incremental(spark, store, config, settings, dirs, {}, say)
        result = _finish_result("incremental", "stateful", horizon, n_new, totals, statuses)
        pending = set(state["pending_groups"])
        for s in statuses:
            (pending.add if s["pending"] else pending.discard)(s["group_id"])
        state.update(
            run=run_id,
            max_completion_ms=int(max_c),
            pending_groups=sorted(pending),
            kip848_groups=sorted(set(state["kip848_groups"]) | set(result.kip848_groups)),
        )
        result.kip848_groups = state["kip848_groups"]
        write_json(state_file, state)
        landed.consumed()
        dirs.save_manifest(
            {
                "mode": "incremental",
                "runs": run_id,
                "horizon_ms": horizon,
                "config": _config_fingerprint(config),
            }
        )
        return result
    finally:
        new_rows.unpersist()
