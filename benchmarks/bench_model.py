"""Throughput of the coordinator model on heartbeat-dominated traffic of Stable groups.

    .venv/bin/python benchmarks/bench_model.py [--events 1000000] [--groups 200] [--members 10]
        [--mode track|predict] [--profile]

Each group is formed first (JoinGroup + SyncGroup of every member, not timed), then the timed part
replays ``--events`` requests: every member heartbeats every 3 s (with the observed response NONE,
as a request log would carry it) and commits offsets every 5th heartbeat. Requests are built in
batches outside the timed section; the timed section is ``handle`` + ``drain`` for every request.
Prints events/s and peak memory (tracemalloc peak of the timed section, and the process max RSS).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import resource
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rebalance_replay.transforms.coordinator.config import CoordinatorConfig
from rebalance_replay.transforms.coordinator.model import GroupCoordinatorModel
from rebalance_replay.transforms.coordinator.types import GroupRequest, ObservedResponse, Protocol
from rebalance_replay.transforms.kafka_protocol import ApiKey

HEARTBEAT_INTERVAL_MS = 3000
OK = ObservedResponse(error="NONE")


def form_groups(
    n_groups: int, n_members: int, config: CoordinatorConfig
) -> tuple[list[GroupCoordinatorModel], list[list[str]], int]:
    """Join + sync every member of every group; returns the models, member ids and the clock."""
    models = []
    members: list[list[str]] = []
    protocols = (Protocol("range", b"\x00\x03subscription"),)
    t = 0
    for g in range(n_groups):
        gid = f"group-{g}"
        model = GroupCoordinatorModel(gid, config)
        ids = []
        for m in range(n_members):
            req = GroupRequest(
                ApiKey.JOIN_GROUP,
                5,
                gid,
                t,
                member_id="",
                client_id=f"consumer-{g}-{m}",
                session_timeout_ms=45_000,
                rebalance_timeout_ms=300_000,
                protocol_type="consumer",
                protocols=protocols,
            )
            model.handle(req)
            preds, _ = model.drain()
            mid = preds[-1].response.member_id or ""
            ids.append(mid)
            model.handle(
                GroupRequest(
                    ApiKey.JOIN_GROUP,
                    5,
                    gid,
                    t,
                    member_id=mid,
                    client_id=f"consumer-{g}-{m}",
                    session_timeout_ms=45_000,
                    rebalance_timeout_ms=300_000,
                    protocol_type="consumer",
                    protocols=protocols,
                )
            )
        t_sync = t + 2 * config.group_initial_rebalance_delay_ms + 10  # one extension: all joined in window 1
        model.advance_to(t_sync)
        for i, mid in enumerate(ids):
            model.handle(
                GroupRequest(
                    ApiKey.SYNC_GROUP,
                    3,
                    gid,
                    t_sync,
                    member_id=mid,
                    generation_id=1,
                    assignments=tuple((x, b"a") for x in ids) if i == 0 else (),
                )
            )
        model.drain()
        assert model.state is not None and model.state.value == "Stable", model.state
        models.append(model)
        members.append(ids)
    return models, members, t + 2 * config.group_initial_rebalance_delay_ms + 10


def request_batches(
    models: list[GroupCoordinatorModel],
    members: list[list[str]],
    start: int,
    total: int,
    batch: int = 100_000,
):
    """Yield lists of (model, request) in arrival order, ``batch`` at a time."""
    n_groups = len(models)
    n_members = len(members[0])
    per_round = n_groups * n_members
    step = max(HEARTBEAT_INTERVAL_MS // per_round, 1)
    t = start
    produced = 0
    rnd = 0
    while produced < total:
        out = []
        while len(out) < batch and produced < total:
            for m in range(n_members):
                for g in range(n_groups):
                    if produced >= total or len(out) >= batch:
                        break
                    model = models[g]
                    mid = members[g][m]
                    t += step
                    if rnd % 5 == 4:
                        req = GroupRequest(
                            ApiKey.OFFSET_COMMIT,
                            8,
                            model.group_id,
                            t,
                            member_id=mid,
                            generation_id=1,
                            commit_partitions=(("topic", m),),
                            observed=OK,
                        )
                    else:
                        req = GroupRequest(
                            ApiKey.HEARTBEAT,
                            4,
                            model.group_id,
                            t,
                            member_id=mid,
                            generation_id=1,
                            observed=OK,
                        )
                    out.append((model, req))
                    produced += 1
            rnd += 1
        yield out


def run(events: int, n_groups: int, n_members: int, mode: str, profile: bool, liveness_events: bool) -> None:
    config = CoordinatorConfig(
        kafka_version="3.7",
        mode=mode,  # type: ignore[arg-type]
        warm_start=False,
        emit_liveness_events=liveness_events,
    )
    models, members, t0 = form_groups(n_groups, n_members, config)
    elapsed = 0.0
    cpu = 0.0
    handled = 0
    predictions = 0
    prof = cProfile.Profile() if profile else None
    last_t = t0
    for batch in request_batches(models, members, t0, events):
        last_t = batch[-1][1].arrival_ms
        if prof:
            prof.enable()
        start = time.perf_counter()
        start_cpu = time.process_time()
        for model, req in batch:
            model.handle(req)
            preds, _events = model.drain()
            predictions += len(preds)
        elapsed += time.perf_counter() - start
        cpu += time.process_time() - start_cpu
        if prof:
            prof.disable()
        handled += len(batch)
    # memory of the model itself: traced separately (tracemalloc slows every allocation down)
    tracemalloc.start()
    for batch in request_batches(models, members, last_t + 1, min(events, 50_000)):
        for model, req in batch:
            model.handle(req)
            model.drain()
    _cur, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    bad = sum(1 for m in models if m.state is None or m.state.value != "Stable")
    print(
        f"groups={n_groups} members/group={n_members} mode={mode} events={handled} predictions={predictions}"
    )
    print(f"handle+drain: {elapsed:.3f} s wall -> {handled / elapsed:,.0f} events/s")
    print(f"handle+drain: {cpu:.3f} s CPU  -> {handled / cpu:,.0f} events/s (process CPU time)")
    print(
        f"peak traced memory while replaying 50k more events: {peak / 1e6:.1f} MB; "
        f"process max RSS (incl. the pre-built request batch): {rss_mb:.0f} MB"
    )
    print(
        f"groups not Stable at the end: {bad}; "
        f"serialised state of one group: {len(models[0].to_bytes())} bytes"
    )
    if prof:
        pstats.Stats(prof).sort_stats("tottime").print_stats(15)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--groups", type=int, default=200)
    ap.add_argument("--members", type=int, default=10)
    ap.add_argument("--mode", choices=["track", "predict"], default="track")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--no-liveness-events", action="store_true", help="emit_liveness_events=False")
    args = ap.parse_args()
    run(args.events, args.groups, args.members, args.mode, args.profile, not args.no_liveness_events)


if __name__ == "__main__":
    main()
