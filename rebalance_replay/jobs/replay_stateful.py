"""The stateful path: ``groupBy("group_id").applyInPandasWithState`` in a Structured Streaming query with
``Trigger.AvailableNow`` over the feed (:mod:`rebalance_replay.jobs.replay_feed`), the group's replayer
as its state; each micro-batch's output written from ``foreachBatch``. A fresh checkpoint is the batch
replay; the kept one (``--incremental``) is the scheduled audit."""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from rebalance_replay.jobs.bookkeeping import write_json
from rebalance_replay.jobs.config import Config
from rebalance_replay.jobs.group_runs import fewer_collections
from rebalance_replay.jobs.replay_feed import _classic_rows, _write_feed, _write_whole_feed
from rebalance_replay.jobs.replay_run import (
    ReplayDirs,
    ReplayManifest,
    ReplayResult,
    _config_fingerprint,
    _finish_result,
    _write_small,
    checkpoint_query_id,
    foreign_checkpoint,
)
from rebalance_replay.jobs.replay_wire import (
    _WIRE_SCHEMA,
    OUTPUT_TABLES,
    WIRE,
    _predicted,
    _read_side,
    _status_rows,
    _step,
    _write_side,
    side_table,
    split_output,
    unpack,
)
from rebalance_replay.schemas import PREDICTIONS, REQUESTS
from rebalance_replay.transforms.replay import OUTPUT_KINDS, GroupReplayer, ReplaySettings
from rebalance_replay.transforms.report.units import fmt_dur, fmt_time, plural

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

    from rebalance_replay.jobs.delta import DeltaStore
    from rebalance_replay.jobs.delta.base import WriteMode

APP_ID = "rebalance-replay/replay"


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
        with fewer_collections():
            out = _step(replayer, rows)
            state.update((replayer.to_bytes(),))
            predictions, rest = split_output(replayer, out)
        _write_side(side_dir, f"call-{uuid.uuid4().hex}", [side_table([rest])])
        yield predictions.to_pandas(integer_object_nulls=True, date_as_object=True)

    return fn


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
            say(
                f"replay: {plural(files, 'feed file')}, one micro-batch → applyInPandasWithState (fresh "
                "checkpoint)"
            )
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
            say(f"replay: {plural(files, 'feed file')} → applyInPandasWithState (fresh checkpoint)")
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


def _owner(store: DeltaStore, inc: Path) -> dict[str, str | None]:
    """What a scheduled audit's state records of what it belongs to: the Delta ids of the tables it reads
    and writes, and the streaming query of its checkpoint."""
    return {
        "requests_table_id": store.table_id(REQUESTS),
        "predictions_table_id": store.table_id(PREDICTIONS),
        "query_id": checkpoint_query_id(inc / "checkpoint"),
    }


def held_back_text(horizon: int, newest_completion: int, tolerance: int, final: bool) -> str:
    """What an incremental run leaves for the next one and why, in UTC."""
    from rebalance_replay.jobs.bookkeeping import utc

    if final:
        return (
            f"nothing: --final closed the horizon at {utc(horizon)} (the newest completion "
            f"{utc(newest_completion)} + 1 ms); rows landing later for earlier times count as late rows"
        )
    return (
        f"requests that arrived from {utc(horizon)} on wait for the next run: replay.late_tolerance_ms="
        f"{tolerance} behind the newest completion {utc(newest_completion)}, in case rows landing later "
        "belong before them; the last run of a period replays them with --final"
    )


def _replay_incremental(
    spark: SparkSession,
    store: DeltaStore,
    config: Config,
    settings: ReplaySettings,
    dirs: ReplayDirs,
    manifest: ReplayManifest,
    say: Callable[[str], None],
    *,
    final: bool = False,
    last_horizon_ms: int | None = None,
) -> ReplayResult:
    """The scheduled audit: replay what landed since the last run, keeping state in the checkpoint
    (``final``: close the late-arrival horizon, :func:`~rebalance_replay.jobs.replay.replay`).

    A rebuild (the checkpoint lost, damaged or another warehouse's) replays every request again from empty
    tables; its horizon is never behind the last run's (``last_horizon_ms``, else the manifest's), whose rows
    were final: after a ``--final`` run, the rebuild would otherwise hold the log's last minutes back again
    and the tables would lose their rows until the next ``--final``."""
    from pyspark.sql import functions as F

    if last_horizon_ms is None and manifest.mode == "incremental":
        last_horizon_ms = manifest.horizon_ms
    inc = dirs.incremental
    state_file = inc / "state.json"
    fresh = not state_file.exists() or manifest.mode != "incremental"
    if not fresh and not (inc / "checkpoint" / "metadata").exists():
        say(
            f"replay: the incremental checkpoint {inc / 'checkpoint'} is missing; rebuilding the scheduled "
            "audit from the tables"
        )
        fresh = True
    if not fresh:  # a checkpoint copied from another warehouse would replay its groups' state onto these rows
        foreign = foreign_checkpoint(json.loads(state_file.read_text()), _owner(store, inc))
        if foreign is not None:
            say(
                f"replay: the incremental checkpoint {inc} {foreign}; rebuilding the scheduled audit from "
                "this warehouse's tables"
            )
            fresh = True
            last_horizon_ms = None  # the other warehouse's run, not this one's
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
        tolerance = 0 if final else config.replay.late_tolerance_ms
        horizon = int(max_c) + 1 - tolerance
        if fresh and last_horizon_ms is not None:  # a rebuild: as far as the last run had replayed
            horizon = max(horizon, last_horizon_ms)
        ticks = [(g, False) for g in state["pending_groups"]]
        say(
            f"replay: incremental run {run_id}{' (final)' if final else ''}: {plural(n_new, 'new request')}, "
            f"horizon {fmt_time(horizon)} ({fmt_dur(tolerance)} behind the newest completion)"
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
            return _replay_incremental(
                spark,
                store,
                config,
                settings,
                dirs,
                ReplayManifest(),
                say,
                final=final,
                last_horizon_ms=last_horizon_ms,
            )
        result = _finish_result("incremental", "stateful", horizon, n_new, totals, statuses)
        result.held_back = held_back_text(horizon, int(max_c), tolerance, final)
        result.run, result.tolerance_ms, result.final = run_id, tolerance, final
        held_before = 0 if fresh else state.get("held_rows")
        if held_before is not None:
            result.replayed_rows = held_before + n_new - result.held_rows
        # the warehouse's totals: those before this run (none after a fresh start, which empties the
        # tables) and what it wrote; counted from the tables once, for a state that did not keep them
        before = {k: 0 for k in OUTPUT_KINDS} if fresh else state.get("totals")
        result.totals = (
            {k: int(before.get(k, 0)) + totals[k] for k in OUTPUT_KINDS}
            if before is not None
            else {k: store.read(OUTPUT_TABLES[k]).count() for k in OUTPUT_KINDS}
        )
        pending = set(state["pending_groups"])
        for s in statuses:
            (pending.add if s["pending"] else pending.discard)(s["group_id"])
        state.update(
            _owner(store, inc),
            run=run_id,
            max_completion_ms=int(max_c),
            pending_groups=sorted(pending),
            kip848_groups=sorted(set(state["kip848_groups"]) | set(result.kip848_groups)),
            held_rows=result.held_rows,
            totals=result.totals,
        )
        result.kip848_groups = state["kip848_groups"]
        write_json(state_file, state)
        landed.consumed()
        dirs.save_manifest(
            ReplayManifest(
                mode="incremental",
                runs=run_id,
                horizon_ms=horizon,
                final=final,
                config=_config_fingerprint(config),
            )
        )
        return result
    finally:
        new_rows.unpersist()
