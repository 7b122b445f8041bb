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

import shutil
import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from rebalance_replay.jobs.bookkeeping import crash_point
from rebalance_replay.jobs.config import Config
from rebalance_replay.jobs.errors import MissingTableError
from rebalance_replay.jobs.forensics import in_scope
from rebalance_replay.jobs.replay_fast import _replay_fast
from rebalance_replay.jobs.replay_feed import _classic_rows
from rebalance_replay.jobs.replay_run import ReplayDirs, ReplayManifest, ReplayResult, _config_fingerprint
from rebalance_replay.jobs.replay_stateful import _replay_incremental, _replay_stateful_batch
from rebalance_replay.jobs.replay_wire import OUTPUT_TABLES
from rebalance_replay.schemas import REQUESTS
from rebalance_replay.transforms.replay import ReplaySettings
from rebalance_replay.transforms.report.units import plural

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

    from rebalance_replay.jobs.delta import DeltaStore

__all__ = ["ReplayDirs", "ReplayManifest", "ReplayResult", "replay", "settings_from"]


def settings_from(config: Config) -> ReplaySettings:
    return ReplaySettings(
        coordinator=config.coordinator_config(),
        completion_tolerance_ms=config.validation.completion_tolerance_ms,
        broker_lag_ms=config.validation.broker_lag_ms,
        line_lag_ms=config.validation.line_lag_ms,
        cooperative_protocols=frozenset(config.replay.cooperative_protocols),
        follow_up_window_ms=config.replay.follow_up_window_ms,
        order_search_exhaustive_max=config.replay.order_search_exhaustive_max,
        order_search_max=config.replay.order_search_max,
        order_search_lookahead_max=config.replay.order_search_lookahead_max,
        bulk=config.replay.bulk,
        bulk_min_rows=config.replay.bulk_min_rows,
        max_group_members=config.replay.max_group_members,
    )


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
    final: bool = False,
) -> ReplayResult:
    """Replay the warehouse's ``requests`` into the output tables. See the module docstring.

    ``final`` (incremental only): the last run of a period closes the late-arrival horizon (newest
    completion + 1 ms, no ``replay.late_tolerance_ms`` held back for a run that will not come).

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

    requests_id = store.table_id(REQUESTS)
    foreign = manifest.requests_table_id not in (None, requests_id)
    if foreign and not incremental and manifest.mode == "batch":
        say(
            f"replay: {dirs.manifest} was written for another requests table ({manifest.requests_table_id}; "
            f"this warehouse's is {requests_id}): it was copied from elsewhere; replaying this warehouse's"
        )
    if (
        not incremental
        and manifest.mode == "batch"
        and manifest.requests_version == requests_version
        and not foreign
        and manifest.config == fingerprint
        and manifest.complete
    ):
        say(f"replay: up to date (requests version {requests_version}, same configuration)")
        res = ReplayResult(
            mode,
            manifest.path if manifest.path is not None else chosen,
            manifest.horizon_ms,
            0,
            counts=manifest.counts,
            groups=manifest.groups,
            bulk_validated=manifest.bulk_validated,
            kip848_groups=manifest.kip848_groups,
            refused_groups=manifest.refused_groups,
            up_to_date=True,
            broker=broker,
        )
        res.seconds = time.monotonic() - started
        return res

    settings = settings_from(config)
    for table in OUTPUT_TABLES.values():  # a breaking schema change is refused before any work
        out_store.prepare(table)
    if incremental:
        result = _replay_incremental(spark, store, config, settings, dirs, manifest, say, final=final)
    else:
        all_rows = in_scope(_classic_rows(store.read(REQUESTS)), window, tuple(groups))
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
        say(f"replay: batch over {plural(len(groups), 'group')}, {chosen} path")
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
            ReplayManifest(
                mode="batch",
                path=chosen,
                requests_version=requests_version,
                requests_table_id=requests_id,
                config=fingerprint,
                complete=True,
                horizon_ms=horizon,
                counts=result.counts,
                groups=result.groups,
                bulk_validated=result.bulk_validated,
                kip848_groups=result.kip848_groups,
                refused_groups=result.refused_groups,
            )
        )
    result.broker = broker
    result.seconds = time.monotonic() - started
    return result
