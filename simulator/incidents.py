"""The incident generator: realistic consumer-group traffic (``simulator.clients``) with injectable
incidents — one per audit rule the request log can show — each writing its ground truth.

    .venv/bin/python -m simulator.incidents [--out samples/incidents] [--seed 7]

Every incident is a group of its own (``inc-r02-…``); ``healthy-…`` groups are controls with ordinary
life (steady members, one graceful close, a new member). ``ground_truth.json`` beside the logs lists
per incident: rule id, group, window (epoch ms) and the client ids of the members involved
(``clients``; an empty list when the pattern is the group's, not a member's).

The logs are a Kafka 3.7 cluster's JSON request logs, gzipped per hour (a few MB in all); the
coordinator of every group is broker-1 except where an incident moves it (R20 → broker-2).
The ``group.max.size`` incident (R18) was produced by a broker
with ``group.max.size=8``: replay it with ``--set broker.group.max.size=8`` for the model to agree.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import shutil
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rebalance_replay.transforms.coordinator.config import CoordinatorConfig
from rebalance_replay.transforms.kafka_protocol import ApiKey, Errors
from simulator.clients import ConsumerSpec, SimConfig, simulate
from simulator.log_render import complete_record, render_line, rotated_file_name

KAFKA_VERSION = "3.7"
T0 = int(datetime(2024, 6, 3, 8, 0, 0, tzinfo=UTC).timestamp() * 1000)
S = 1_000
MIN = 60_000
MAX_SIZE = 8  # group.max.size of the incident brokers (R18)


@dataclass(frozen=True)
class Truth:
    """What an incident is: the rule that must find it, where and when, and who."""

    rule_id: str
    group_id: str
    window_start_ms: int
    window_end_ms: int
    clients: tuple[str, ...] = ()


@dataclass
class Incident:
    group_id: str
    truths: list[Truth]
    config: SimConfig | None = None  # simulated group (None: records made directly)
    records: list[dict[str, Any]] = field(default_factory=list)
    moved_to: tuple[int, str] | None = None  # from this time the group's coordinator is another broker


def _client(group: str, index: int) -> str:
    """The client id simulator.clients gives the index-th consumer (0-based) of a group."""
    return f"consumer-{group}-{index + 1}"


def _group(
    group: str,
    consumers: list[ConsumerSpec],
    minutes: float,
    start: int,
    *,
    topics: dict[str, int] | None = None,
    coordinator: CoordinatorConfig | None = None,
) -> SimConfig:
    return SimConfig(
        group_id=group,
        topics=topics or {f"{group}-events": 12},
        consumers=consumers,
        until_ms=start + int(minutes * MIN),
        kafka_version=KAFKA_VERSION,
        broker_id="broker-1",
        broker_host="10.0.0.1",
        coordinator=coordinator or CoordinatorConfig(kafka_version=KAFKA_VERSION, group_max_size=MAX_SIZE),
    )


def _on(on: bool, truth: Truth) -> list[Truth]:
    return [truth] if on else []


def _steady(n: int, start: int, rnd: random.Random, **kw: Any) -> list[ConsumerSpec]:
    return [ConsumerSpec(str(i), start + i * 400 + rnd.randint(0, 300), **kw) for i in range(n)]


# --------------------------------------------------------------------------------------------------
# One builder per incident: (group id, start, rnd) → Incident
# --------------------------------------------------------------------------------------------------


def cooperative_rounds(g: str, t: int, rnd: random.Random, on: bool = True) -> Incident:
    """R09: a cooperative-sticky group where, after a new member joins, a member keeps rejoining "to
    revoke partitions" three more times (four rounds; two are expected). Off: one follow-up round."""
    cs = _steady(3, t, rnd, assignor="cooperative-sticky")
    at = t + 40 * S + rnd.randint(0, 2 * S)
    cs.append(ConsumerSpec("3", at, assignor="cooperative-sticky"))
    rounds = (3, 6, 9) if on else (3,)
    cs[0] = replace(cs[0], refresh_at=tuple(at + k * S for k in rounds), refresh_reason=REVOKE_REASON)
    # the chain's triggers: the new member's join, then the member rejoining to revoke
    truth = Truth("R09", g, at, at + 10 * S, (_client(g, 0), _client(g, 3)))
    return Incident(g, _on(on, truth), _group(g, cs, 3, t))


REVOKE_REASON = "need to revoke partitions and re-join"


def storm(g: str, t: int, rnd: random.Random, on: bool = True) -> Incident:
    """R01: eight consumers join one by one, 15 s apart (a scale-out), while the leader keeps rejoining
    every 40 s for a reason the client does not say."""
    cs = [ConsumerSpec(str(i), t + i * 15 * S + rnd.randint(0, 500)) for i in range(8)]
    if not on:  # the same scale-out, slower (a minute apart) and without the leader's rejoins
        cs = [replace(c, start_ms=t + i * 60 * S) for i, c in enumerate(cs[:5])]
    else:
        cs[0] = replace(cs[0], refresh_every_ms=40 * S, refresh_reason="")
    truth = Truth("R01", g, t, t + 6 * MIN, tuple(_client(g, i) for i in range(8)))  # every trigger
    return Incident(g, _on(on, truth), _group(g, cs, 6, t, topics={"e": 24}))


def crashes(g: str, t: int, rnd: random.Random, on: bool = True) -> Incident:
    """R02: two members crash (no LeaveGroup) a minute apart: each evicted after 45 s."""
    cs = _steady(4, t, rnd)
    c1, c2 = t + 60 * S + rnd.randint(0, 5 * S), t + 120 * S + rnd.randint(0, 5 * S)
    if on:
        cs[1] = replace(cs[1], crash_ms=c1)
        cs[2] = replace(cs[2], crash_ms=c2)
    truth = Truth("R02", g, c1 - 3 * S, c2 + 50 * S, (_client(g, 1), _client(g, 2)))
    return Incident(g, _on(on, truth), _group(g, cs, 5, t))


def poll_timeout(g: str, t: int, rnd: random.Random, on: bool = True) -> Incident:
    """R03: a dynamic member's poll() overruns max.poll.interval.ms (the heartbeat thread leaves)."""
    cs = _steady(3, t, rnd)
    at = t + 90 * S + rnd.randint(0, 5 * S)
    if on:
        cs[0] = replace(cs[0], poll_timeout_ms=at, poll_return_ms=8 * S)
    return Incident(g, _on(on, Truth("R03", g, at - S, at + 10 * S, (_client(g, 0),))), _group(g, cs, 4, t))


def static_stall(g: str, t: int, rnd: random.Random, on: bool = True) -> Incident:
    """R04: a static member's poll loop stalls for 45 s (session timeout 30 s): evicted, then it speaks
    again with its old member id."""
    cs = _steady(3, t, rnd, session_timeout_ms=30 * S)
    cs = [replace(c, group_instance_id=f"{g}-{i}") for i, c in enumerate(cs)]
    at = t + 80 * S + rnd.randint(0, 3 * S)
    if on:
        cs[1] = replace(cs[1], stall_ms=at, stall_for_ms=45 * S)
    return Incident(
        g, _on(on, Truth("R04", g, at - 3 * S, at + 47 * S, (_client(g, 1),))), _group(g, cs, 4, t)
    )


def slow_joiner(g: str, t: int, rnd: random.Random, on: bool = True) -> Incident:
    """R05: one member rejoins 25 s late each time the group rebalances (a slow poll loop)."""
    cs = _steady(3, t, rnd, rebalance_timeout_ms=60 * S)
    if on:
        cs[2] = replace(cs[2], slow_rejoin_ms=25 * S)
    late = t + 90 * S + rnd.randint(0, 3 * S)
    cs.append(ConsumerSpec("3", late, rebalance_timeout_ms=60 * S))
    return Incident(g, _on(on, Truth("R05", g, late, late + 30 * S, (_client(g, 2),))), _group(g, cs, 4, t))


def slow_heartbeats(g: str, t: int, rnd: random.Random, on: bool = True) -> Incident:
    """R06: heartbeat.interval.ms=20000 against session.timeout.ms=45000."""
    cs = _steady(3, t, rnd)
    if on:
        cs[1] = replace(cs[1], heartbeat_interval_ms=20 * S)
    return Incident(g, _on(on, Truth("R06", g, t, t + 4 * MIN, (_client(g, 1),))), _group(g, cs, 4, t))


def bad_session_timeout(g: str, t: int, rnd: random.Random, on: bool = True) -> Incident:
    """R07: a consumer configured with session.timeout.ms=3000 (broker minimum 6000)."""
    cs = _steady(2, t, rnd)
    at = t + 40 * S + rnd.randint(0, 2 * S)
    cs.append(ConsumerSpec("2", at, session_timeout_ms=3 * S if on else 45 * S))
    return Incident(g, _on(on, Truth("R07", g, at, at + 2 * S, (_client(g, 2),))), _group(g, cs, 3, t))


def mixed_assignors(g: str, t: int, rnd: random.Random, on: bool = True) -> Incident:
    """R08: a member configured with roundrobin joins a group of range consumers."""
    cs = _steady(2, t, rnd)
    at = t + 40 * S + rnd.randint(0, 2 * S)
    cs.append(ConsumerSpec("2", at, assignor="roundrobin" if on else "range"))
    return Incident(g, _on(on, Truth("R08", g, at, at + 2 * S, (_client(g, 2),))), _group(g, cs, 3, t))


def duplicate_instance(g: str, t: int, rnd: random.Random, on: bool = True) -> Incident:
    """R10: two replicas share group.instance.id (a Deployment reusing a hostname)."""
    cs = _steady(2, t, rnd, session_timeout_ms=30 * S)
    cs = [replace(c, group_instance_id=f"{g}-{i}") for i, c in enumerate(cs)]
    at = t + 50 * S + rnd.randint(0, 2 * S)
    cs.append(ConsumerSpec("2", at, group_instance_id=f"{g}-{0 if on else 2}", session_timeout_ms=30 * S))
    truth = Truth("R10", g, at, t + 4 * MIN, (_client(g, 0), _client(g, 2)))
    return Incident(g, _on(on, truth), _group(g, cs, 4, t))


def slow_static_restart(g: str, t: int, rnd: random.Random, on: bool = True) -> Incident:
    """R11: a static member restarts in 50 s with session.timeout.ms=30000."""
    cs = _steady(3, t, rnd, session_timeout_ms=30 * S)
    cs = [replace(c, group_instance_id=f"{g}-{i}") for i, c in enumerate(cs)]
    at = t + 70 * S + rnd.randint(0, 3 * S)
    cs[2] = replace(cs[2], crash_ms=at, restart_ms=at + (50 if on else 12) * S)  # off: within the timeout
    return Incident(
        g, _on(on, Truth("R11", g, at - 3 * S, at + 52 * S, (_client(g, 2),))), _group(g, cs, 4, t)
    )


def static_long_timeout(g: str, t: int, rnd: random.Random, on: bool = True) -> Incident:
    """R12: a static member with session.timeout.ms=600000 silent for 150 s: no rebalance, idle partitions."""
    cs = _steady(2, t, rnd, session_timeout_ms=600 * S)
    cs = [replace(c, group_instance_id=f"{g}-{i}") for i, c in enumerate(cs)]
    at = t + 40 * S + rnd.randint(0, 3 * S)
    if on:
        cs[0] = replace(cs[0], stall_ms=at, stall_for_ms=150 * S)
    return Incident(
        g, _on(on, Truth("R12", g, at - 3 * S, at + 153 * S, (_client(g, 0),))), _group(g, cs, 4, t)
    )


def rolling_deploy(g: str, t: int, rnd: random.Random, on: bool = True) -> Incident:
    """R13: a rolling deploy of four dynamic pods: each closed (LeaveGroup) and replaced 5 s later."""
    cs = _steady(4, t, rnd)
    first = t + 60 * S
    for i in range(4 if on else 1):  # off: one pod replaced (an ordinary restart)
        stop = first + i * 30 * S + rnd.randint(0, 2 * S)
        cs[i] = replace(cs[i], close_ms=stop)
        cs.append(ConsumerSpec(str(4 + i), stop + 5 * S))
    olds, news = [_client(g, i) for i in range(4)], [_client(g, 4 + i) for i in range(4)]
    last = cs[-1].start_ms
    return Incident(g, _on(on, Truth("R13", g, first, last + 5 * S, tuple(olds + news))), _group(g, cs, 5, t))


def short_lived(g: str, t: int, rnd: random.Random, on: bool = True) -> Incident:
    """R14: short-lived consumers (a CLI tool run every 40 s): the group empties and forms again, each
    first join waiting group.initial.rebalance.delay.ms."""
    cs = []
    for i in range(4 if on else 1):  # off: one consumer's run
        start = t + i * 40 * S + rnd.randint(0, S)
        cs.append(ConsumerSpec(str(i), start, close_ms=start + 20 * S))
    # a group-level finding: no member is to blame (the truth names none, and so must the finding)
    return Incident(g, _on(on, Truth("R14", g, t, cs[-1].close_ms or 0)), _group(g, cs, 3, t))


def double_join(g: str, t: int, rnd: random.Random, on: bool = True) -> Incident:
    """R15: a client hit by the KIP-394 double-join bug leaks a pending member id."""
    cs = _steady(2, t, rnd)
    at = t + 40 * S + rnd.randint(0, 2 * S)
    cs.append(ConsumerSpec("2", at, double_join=on))
    return Incident(g, _on(on, Truth("R15", g, at, at + 2 * S, (_client(g, 2),))), _group(g, cs, 3, t))


def metadata_churn(g: str, t: int, rnd: random.Random, on: bool = True) -> Incident:
    """R16: the leader's regex subscription sees new topics every minute and rejoins."""
    cs = _steady(3, t, rnd)
    if on:
        cs[0] = replace(cs[0], refresh_every_ms=60 * S)
    return Incident(
        g, _on(on, Truth("R16", g, t + 60 * S, t + 5 * MIN, (_client(g, 0),))), _group(g, cs, 5, t)
    )


def over_provisioned(g: str, t: int, rnd: random.Random, on: bool = True) -> Incident:
    """R17: five consumers for a two-partition topic."""
    cs = _steady(5, t, rnd)
    topics = {"narrow": 2 if on else 6}
    # the three members left without a partition (range over two partitions: the first two get them)
    truth = Truth("R17", g, t, t + 10 * S, tuple(_client(g, i) for i in (2, 3, 4)))
    return Incident(g, _on(on, truth), _group(g, cs, 3, t, topics=topics))


def max_size(g: str, t: int, rnd: random.Random, on: bool = True) -> Incident:
    """R18: a ninth consumer against group.max.size=8."""
    cs = _steady(8 if on else 7, t, rnd)
    at = t + 40 * S + rnd.randint(0, 2 * S)
    cs.append(ConsumerSpec(str(len(cs)), at))
    return Incident(g, _on(on, Truth("R18", g, at, at + 2 * S, (_client(g, 8),))), _group(g, cs, 3, t))


def hung_sync(g: str, t: int, rnd: random.Random, on: bool = True) -> Incident:
    """R19: a member blocked in its rebalance listener never sends SyncGroup (rebalance timeout 20 s)."""
    cs = _steady(3, t, rnd, rebalance_timeout_ms=20 * S)
    at = t + 60 * S + rnd.randint(0, 2 * S)
    if on:
        cs[1] = replace(cs[1], hang_sync_after_ms=at)
    cs.append(ConsumerSpec("3", at, rebalance_timeout_ms=20 * S))
    return Incident(g, _on(on, Truth("R19", g, at, at + 25 * S, (_client(g, 1),))), _group(g, cs, 3, t))


def coordinator_move(g: str, t: int, rnd: random.Random, on: bool = True) -> Incident:
    """R20: the group's coordinator moves to broker-2 (partition leadership of __consumer_offsets)."""
    cs = _steady(3, t, rnd)
    at = t + 2 * MIN + rnd.randint(0, 5 * S)
    moved = (at, "broker-2") if on else None
    # a group-level finding: no member is to blame (the truth names none, and so must the finding)
    return Incident(g, _on(on, Truth("R20", g, at - 5 * S, at + 5 * S)), _group(g, cs, 4, t), moved_to=moved)


def commit_races(g: str, t: int, rnd: random.Random, on: bool = True) -> Incident:
    """R21: a member keeps committing (every 500 ms, from its processing thread) while it is slow to
    rejoin a rebalance (15 s, rebalance timeout 10 s): it is removed and every commit is refused. Its
    slow rejoin also holds the join phase (R05)."""
    cs = _steady(3, t, rnd, rebalance_timeout_ms=10 * S)
    if on:
        cs[1] = replace(cs[1], commit_interval_ms=500, slow_rejoin_ms=15 * S, commit_during_rebalance=True)
    at = t + 60 * S + rnd.randint(0, 2 * S)
    cs.append(ConsumerSpec("3", at, rebalance_timeout_ms=10 * S))
    truths = [
        Truth("R21", g, at, at + 20 * S, (_client(g, 1),)),
        Truth("R05", g, at, at + 12 * S, (_client(g, 1),)),
    ]
    return Incident(g, truths if on else [], _group(g, cs, 3, t))


def probing(g: str, t: int, rnd: random.Random, on: bool = True) -> Incident:
    """R22: a Kafka Streams-like leader triggers a probing rebalance every 10 minutes."""
    cs = _steady(2, t, rnd, heartbeat_interval_ms=10 * S, commit_interval_ms=30 * S)
    if on:
        cs[0] = replace(cs[0], refresh_every_ms=600 * S, refresh_reason="")
    truth = Truth("R22", g, t + 10 * MIN, t + 31 * MIN, (_client(g, 0),))
    return Incident(g, _on(on, truth), _group(g, cs, 32, t))


def kip848(g: str, t: int, rnd: random.Random, on: bool = True) -> Incident:
    """R23: three members on the KIP-848 consumer protocol (ConsumerGroupHeartbeat)."""
    if not on:  # the same members on the classic protocol
        return Incident(g, [], _group(g, _steady(3, t, rnd), 3, t))
    records = []
    for i in range(3):
        member = f"{g}-m{i}"
        epoch = 0
        for k in range(36):
            at = t + i * 300 + k * 5 * S + rnd.randint(0, 40)
            records.append(
                {
                    "api_key": int(ApiKey.CONSUMER_GROUP_HEARTBEAT),
                    "api_version": 0,
                    "correlation_id": k + 1,
                    "client_id": _client(g, i),
                    "connection": f"10.0.0.1:9092-10.3.0.{10 + i}:{51000 + i}-{i}",
                    "group_id": g,
                    "member_id": member if k else "",
                    "member_epoch": epoch,
                    "rebalance_timeout_ms": 300_000 if k == 0 else -1,
                    "completion_ms": at + 2,
                    "total_time_ms": 2.2,
                    "error_code": 0,
                    "response_member_id": member,
                    "response_member_epoch": epoch + (1 if k == 0 else 0),
                }
            )
            epoch = epoch + (1 if k == 0 else 0)
    return Incident(
        g, [Truth("R23", g, t, t + 3 * MIN, tuple(_client(g, i) for i in range(3)))], records=records
    )


def healthy(g: str, t: int, rnd: random.Random, on: bool = True) -> Incident:
    """A control group: steady members, one graceful close, one new member later."""
    n = rnd.randint(2, 5)
    cs = _steady(n, t, rnd)
    cs[-1] = replace(cs[-1], close_ms=t + 2 * MIN + rnd.randint(0, 20 * S))
    cs.append(ConsumerSpec(str(n), t + 3 * MIN + rnd.randint(0, 20 * S)))
    return Incident(g, [], _group(g, cs, 5, t))


INCIDENTS: dict[str, Callable[[str, int, random.Random, bool], Incident]] = {
    "R01": storm,
    "R02": crashes,
    "R03": poll_timeout,
    "R04": static_stall,
    "R05": slow_joiner,
    "R06": slow_heartbeats,
    "R07": bad_session_timeout,
    "R08": mixed_assignors,
    "R09": cooperative_rounds,
    "R10": duplicate_instance,
    "R11": slow_static_restart,
    "R12": static_long_timeout,
    "R13": rolling_deploy,
    "R14": short_lived,
    "R15": double_join,
    "R16": metadata_churn,
    "R17": over_provisioned,
    "R18": max_size,
    "R19": hung_sync,
    "R20": coordinator_move,
    "R21": commit_races,
    "R22": probing,
    "R23": kip848,
}


def incident_name(rule_id: str) -> str:
    """The incident's group-name part: its function's name in kebab case (``poll_timeout`` → poll-timeout)."""
    return INCIDENTS[rule_id].__name__.replace("_", "-")


def incidents(
    seed: int = 7, rules: list[str] | None = None, healthy_groups: int = 3, *, inject: bool = True
) -> list[Incident]:
    """The incidents (one group each, staggered starts) and ``healthy_groups`` control groups.
    ``inject=False``: the same groups without their incidents (and no ground truth)."""
    rnd = random.Random(seed)
    out = []
    for k, rule_id in enumerate(sorted(rules or INCIDENTS)):
        g = f"inc-{rule_id.lower()}-{incident_name(rule_id)}"
        out.append(INCIDENTS[rule_id](g, T0 + k * 7 * S, rnd, inject))
    for k in range(healthy_groups):
        out.append(healthy(f"healthy-{k + 1}", T0 + (k * 11 + 3) * S, rnd))
    return out


def incident_records(inc: Incident) -> list[tuple[str, dict[str, Any]]]:
    """(broker id, bronze-shaped record) of one incident's traffic."""
    recs = (
        inc.records
        if inc.config is None
        else [{k: v for k, v in r.items() if not k.startswith("_")} for r in simulate(inc.config)]
    )
    out = []
    for r in recs:
        broker = "broker-1"
        if inc.moved_to is not None and r["completion_ms"] >= inc.moved_to[0]:
            broker = inc.moved_to[1]
            if r.get("api_name") == "FIND_COORDINATOR":
                r = {**r, "response_coordinator_node_id": 2}
        if "error_code" in r and "error_name" not in r:
            r = {**r, "error_name": Errors.name_of(r["error_code"])}
        out.append((broker, r))
    return out


def generate(
    out: Path, seed: int = 7, rules: list[str] | None = None, healthy_groups: int = 3
) -> list[Truth]:
    """Write the logs (``<out>/broker-N/kafka-request.log.<hour>.gz``) and ``<out>/ground_truth.json``."""
    by_broker: dict[str, list[tuple[int, str]]] = {}
    truths: list[Truth] = []
    for inc in incidents(seed, rules, healthy_groups):
        truths += inc.truths
        for broker, rec in incident_records(inc):
            line = render_line(
                complete_record(rec, kafka_version=KAFKA_VERSION), kafka_version=KAFKA_VERSION, tz=UTC
            )
            by_broker.setdefault(broker, []).append((rec["completion_ms"], line))
    if out.exists():
        shutil.rmtree(out)
    for broker, lines in sorted(by_broker.items()):
        d = out / broker
        d.mkdir(parents=True)
        lines.sort(key=lambda x: x[0])
        hours: dict[str, list[str]] = {}
        for t, line in lines:
            hours.setdefault(rotated_file_name(t), []).append(line)
        for name, hl in sorted(hours.items()):
            data = "".join(x + "\n" for x in hl).encode("utf-8")
            (d / f"{name}.gz").write_bytes(gzip.compress(data, mtime=0))
    (out / "ground_truth.json").write_text(
        json.dumps({"seed": seed, "incidents": [asdict(t) for t in truths]}, indent=1) + "\n"
    )
    return truths


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=str(Path(__file__).resolve().parent.parent / "samples" / "incidents"))
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args()
    truths = generate(Path(args.out), args.seed)
    print(f"{len(truths)} incidents → {args.out}")


if __name__ == "__main__":
    main()


# --------------------------------------------------------------------------------------------------
# The pure path (no Spark): render → parse → replay → audit inputs, for fast rule tests
# --------------------------------------------------------------------------------------------------


def log_files(
    seed: int = 7, rules: list[str] | None = None, healthy_groups: int = 3, *, inject: bool = True
) -> tuple[dict[str, list[str]], list[Truth]]:
    """broker → rendered lines (in completion order), and the ground truth."""
    by_broker: dict[str, list[tuple[int, str]]] = {}
    truths: list[Truth] = []
    for inc in incidents(seed, rules, healthy_groups, inject=inject):
        truths += inc.truths
        for broker, rec in incident_records(inc):
            line = render_line(
                complete_record(rec, kafka_version=KAFKA_VERSION), kafka_version=KAFKA_VERSION, tz=UTC
            )
            by_broker.setdefault(broker, []).append((rec["completion_ms"], line))
    return {
        b: [line for _, line in sorted(v, key=lambda x: x[0])] for b, v in sorted(by_broker.items())
    }, truths


def group_inputs_of(files: dict[str, list[str]], coordinator: CoordinatorConfig) -> dict[str, Any]:
    """group id → :class:`rebalance_replay.transforms.audit.GroupInputs`, through the product's pure parse and
    replay
    (what ``rebalance-replay run`` computes with Spark)."""
    from rebalance_replay.transforms.audit.model import (
        BrokerBounds,
        GroupInputs,
        Rebalance,
        Req,
        Session,
        Transition,
    )
    from rebalance_replay.transforms.replay import GroupReplayer, ReplaySettings
    from simulator.fidelity import parse_rows

    by_group: dict[str, list[dict[str, Any]]] = {}
    for row in parse_rows(files):
        if row.get("group_id"):
            by_group.setdefault(str(row["group_id"]), []).append(row)
    broker = BrokerBounds(
        group_min_session_timeout_ms=coordinator.group_min_session_timeout_ms,
        group_max_session_timeout_ms=coordinator.max_session_timeout_ms,
        group_initial_rebalance_delay_ms=coordinator.group_initial_rebalance_delay_ms,
        group_max_size=coordinator.group_max_size,
    )
    out: dict[str, Any] = {}
    settings = ReplaySettings(coordinator=coordinator)
    # a batch replay runs every group to one horizon: the newest completion of the whole log
    horizon = max(int(r["completion_ms"]) for rows in by_group.values() for r in rows) + 1
    for gid in sorted(by_group):
        rows = by_group[gid]
        replayer = GroupReplayer(gid, settings)
        replayer.feed(rows)
        produced = replayer.process(horizon)
        final = replayer.finish()
        kinds: dict[str, list[dict[str, Any]]] = {}
        for o in (produced, final):
            for k, v in o.rows.items():
                kinds.setdefault(k, []).extend(v)
        out[gid] = GroupInputs.build(
            gid,
            requests=[Req.from_row(r) for r in rows],
            rebalances=[Rebalance.from_row(r) for r in kinds.get("rebalances", [])],
            sessions=[Session.from_row(r) for r in kinds.get("member_sessions", [])],
            transitions=[Transition.from_row(r) for r in kinds.get("transitions", [])],
            broker=broker,
        )
    return out


def incident_coordinator() -> CoordinatorConfig:
    """The brokers' settings the incidents were produced with."""
    return CoordinatorConfig(kafka_version=KAFKA_VERSION, group_max_size=MAX_SIZE)
