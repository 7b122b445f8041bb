"""Replay throughput: the same request log through the primary (stateful) path, the fast path and the
pure replayer single-process, side by side.

    .venv/bin/python benchmarks/bench_replay.py [--requests 1000000] [--groups 200] [--members 5]

A heartbeat-dominated log (the simulator's consumers heartbeat every 3 s and commit every 5 s) of about
``--requests`` requests over ``--groups`` groups is generated once into ``benchmarks/.data`` and ingested
into a warehouse there (both reused on later runs with the same parameters). Prints events/s for each path.
Not a test: numbers depend on the machine (2 cores here).
"""

from __future__ import annotations

import argparse
import heapq
import shutil
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rebalance_replay.jobs.config import load_config  # noqa: E402
from simulator.clients import simulate, steady_group  # noqa: E402
from simulator.log_render import complete_record, render_line  # noqa: E402

T0 = int(datetime(2024, 5, 1, tzinfo=UTC).timestamp() * 1000)


BROKERS = ("broker-1", "broker-2", "broker-3")


def line_ms(line: str) -> int:
    """Epoch ms of a generated line's ``[yyyy-MM-dd HH:mm:ss,SSS]`` (UTC)."""
    t = datetime.strptime(line[1:20], "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
    return int(t.timestamp()) * 1000 + int(line[21:24])


def _rendered(cfg: Any) -> Iterator[tuple[int, str]]:
    for rec in simulate(cfg):
        fields = {k: v for k, v in rec.items() if not k.startswith("_")}
        line = render_line(complete_record(fields, kafka_version="3.7"), kafka_version="3.7", tz=UTC)
        yield line_ms(line), line


def broker_lines(requests: float, groups: int, members: int) -> dict[str, Iterator[tuple[int, str]]]:
    """About ``requests`` request lines of ``groups`` steady groups of ``members`` consumers (a group's
    coordinator: one of three brokers in turn), as each broker writes its file: (epoch ms, line) in time
    order — the groups' lines merged, each group's own order kept (a file written group after group steps
    its clock back at every group: ingest quarantines such lines, issue 29)."""
    # ~ (1/3 + 1/5) requests per member per second
    minutes = requests / groups / (members * (1 / 3 + 1 / 5)) / 60
    per_broker: dict[str, list[Iterator[tuple[int, str]]]] = {b: [] for b in BROKERS}
    for g in range(groups):
        broker = BROKERS[g % len(BROKERS)]
        cfg = steady_group(f"bench-{g:05d}", members, minutes, start_ms=T0 + g * 10, broker_id=broker)
        per_broker[broker].append(_rendered(cfg))
    return {b: heapq.merge(*its, key=lambda x: x[0]) for b, its in per_broker.items()}


def generate(out: Path, requests: int, groups: int, members: int) -> int:
    n = 0
    for broker, lines in broker_lines(requests, groups, members).items():
        (out / broker).mkdir(parents=True, exist_ok=True)
        with open(out / broker / "kafka-request.log", "w", encoding="utf-8") as f:
            for _, line in lines:
                f.write(line + "\n")
                n += 1
    return n


def replay_in_process(table: Any, settings: Any, horizon: int, columns: bool = False) -> tuple[int, float]:
    """The replay baseline: every group of ``table`` (classic-group ``requests`` rows, an Arrow table)
    through ``GroupReplayer`` in this one process, rows already in memory: as dicts, every request through
    the model one by one (``columns`` False), or as each group's Arrow slice with bulk validation
    (``columns`` True: what the Spark paths do per group, without Spark). Returns (groups, seconds of the
    replay alone)."""
    from rebalance_replay.transforms.replay import GroupReplayer

    groups: dict[str, Any] = {}
    if columns:
        ordered = table.sort_by("group_id")
        ids = ordered.column("group_id").to_pylist()
        start = 0
        for i in range(1, len(ids) + 1):
            if i == len(ids) or ids[i] != ids[start]:
                groups[str(ids[start])] = ordered.slice(start, i - start)
                start = i
    else:
        for r in table.to_pylist():
            groups.setdefault(str(r["group_id"]), []).append(r)
    t = time.perf_counter()
    for gid, group_rows in groups.items():
        rp = GroupReplayer(gid, settings)
        if columns:
            rp.feed_table(group_rows)
        else:
            rp.feed(group_rows)
        rp.process(horizon)
        rp.finish()
    return len(groups), time.perf_counter() - t


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--requests", type=int, default=1_000_000)
    p.add_argument("--groups", type=int, default=200)
    p.add_argument("--members", type=int, default=5)
    p.add_argument("--skip", nargs="*", default=[], choices=["stateful", "fast", "model"])
    args = p.parse_args()
    data = ROOT / "benchmarks" / ".data" / f"r{args.requests}-g{args.groups}-m{args.members}"
    logs, wh = data / "logs", data / "warehouse"
    if not (data / "ok").exists():
        shutil.rmtree(data, ignore_errors=True)
        t = time.perf_counter()
        n = generate(logs, args.requests, args.groups, args.members)
        print(f"generated {n} request lines in {time.perf_counter() - t:.1f}s")
    from rebalance_replay.jobs.delta import open_store
    from rebalance_replay.jobs.ingest import ingest
    from rebalance_replay.jobs.spark_session import get_spark

    config = load_config(warehouse=str(wh))
    spark = get_spark("bench-replay", conf={"spark.ui.showConsoleProgress": "false"})
    store = open_store(spark, str(wh), "auto")
    if not (data / "ok").exists():
        t = time.perf_counter()
        res = ingest(spark, store, config, [str(logs)], log=lambda m: None)
        print(
            f"ingested {res.run.requests} requests in {time.perf_counter() - t:.1f}s "
            f"({res.run.lines_read / (time.perf_counter() - t):,.0f} lines/s)"
        )
        (data / "ok").write_text("ok")

    from rebalance_replay.jobs.replay import (
        ReplayDirs,
        _classic_rows,
        _replay_fast,
        _replay_stateful_batch,
        settings_from,
    )
    from rebalance_replay.schemas import REQUESTS

    settings = settings_from(config)
    rows = _classic_rows(store.read(REQUESTS)).persist()
    n = rows.count()
    horizon = int(rows.agg({"completion_ms": "max"}).collect()[0][0]) + 1
    per_group = {r["group_id"]: int(r["count"]) for r in rows.groupBy("group_id").count().collect()}
    groups = sorted(per_group)
    print(f"{n:,} classic-group requests, {args.groups} groups")
    results = {}
    if "stateful" not in args.skip:
        t = time.perf_counter()
        _replay_stateful_batch(
            spark,
            store,
            config,
            settings,
            ReplayDirs(str(wh)),
            rows,
            groups,
            n,
            horizon,
            lambda m: None,
            busiest_group=max(per_group.values()),
        )
        results["stateful (applyInPandasWithState, streaming AvailableNow)"] = time.perf_counter() - t
    if "fast" not in args.skip:
        t = time.perf_counter()
        _replay_fast(spark, store, settings, rows, n, horizon, ReplayDirs(str(wh)).root)
        results["fast (repartition + sortWithinPartitions + mapInArrow)"] = time.perf_counter() - t
    if "model" not in args.skip:
        _, results["pure replayer, one process (no Spark)"] = replay_in_process(
            rows.toArrow(), settings, horizon
        )
    print(f"{'path':<62} {'seconds':>8} {'events/s':>10}")
    for name, secs in results.items():
        print(f"{name:<62} {secs:8.1f} {n / secs:10,.0f}")
    rows.unpersist()


if __name__ == "__main__":
    main()
