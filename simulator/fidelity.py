"""Fidelity corpus: simulated groups rendered as a broker with a coarse clock would log them, replayed.

Real request logs have millisecond timestamps (or coarser clocks), bursts of requests in the same
instant, and lines of one instant in no particular order. This module renders simulator traces that
way and replays them through the product's pure replay path (parse each line → per-group
:class:`GroupReplayer`), so tests and ``python -m simulator.fidelity`` can measure agreement per API:

* ``scenario_configs(seed)`` — groups covering bursts of joins, static members joining together,
  ``group.max.size`` with simultaneous joiners, leader rejoin, slow members, followers that never sync,
  session expiry, rolling restarts, and a Java client re-sending a JoinGroup the broker held too long;
* ``render_coarse(configs, resolution_ms, seed)`` — every time truncated to ``resolution_ms`` and the
  lines of one timestamp shuffled inside each broker file;
* ``replay_lines(files, config)`` — prediction rows; ``agreement(rows)`` — matched/scored per API.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from rebalance_replay.transforms.coordinator.config import CoordinatorConfig
from rebalance_replay.transforms.replay import GroupReplayer, ReplaySettings
from rebalance_replay.transforms.request_log import LineKind, parse_line
from simulator.clients import ConsumerSpec, SimConfig, simulate
from simulator.log_render import complete_record, render_line

T0 = int(datetime(2024, 5, 1, 10, 0, tzinfo=UTC).timestamp() * 1000)
S = 1000
KAFKA_VERSION = "3.7"


def _burst(
    rng: random.Random, name: str, n: int, start: int, *, spread_ms: int = 0, **kw: Any
) -> list[ConsumerSpec]:
    return [
        ConsumerSpec(f"{name}{i}", start + (rng.randrange(spread_ms + 1) if spread_ms else 0), **kw)
        for i in range(n)
    ]


def scenario_configs(seed: int, *, minutes: int = 4) -> list[SimConfig]:
    """One set of groups; ``seed`` varies start times, crash/leave instants and member counts."""
    rng = random.Random(seed)
    end = T0 + minutes * 60 * S
    b = f"s{seed}"
    configs: list[SimConfig] = []

    # a deploy: every member starts in the same millisecond, later a rolling restart (dynamic members)
    n = rng.randint(3, 7)
    deploy = _burst(rng, "d", n, T0 + rng.randrange(1000), session_timeout_ms=10_000)
    for i, spec in enumerate(deploy[: n // 2]):
        spec.close_ms = T0 + 70 * S + i * 7 * S
    deploy += _burst(rng, "r", n // 2, T0 + 75 * S + rng.randrange(50), spread_ms=rng.choice((0, 3, 30)))
    configs.append(SimConfig(f"{b}-deploy", {"events": 12}, deploy, end, broker_id="broker-1"))

    # static members joining together; one restarts within its session timeout, one crashes for good
    static = [
        ConsumerSpec(f"st{i}", T0 + 2 * S, group_instance_id=f"{b}-static-{i}", session_timeout_ms=20_000)
        for i in range(rng.randint(2, 4))
    ]
    static[0].crash_ms, static[0].restart_ms = T0 + 50 * S + rng.randrange(1000), T0 + 58 * S
    static[-1].crash_ms = T0 + 100 * S + rng.randrange(1000)
    configs.append(SimConfig(f"{b}-static", {"ledger": 6}, static, end, broker_id="broker-2"))

    # group.max.size with simultaneous joiners
    capped = _burst(rng, "c", rng.randint(4, 6), T0 + 3 * S + rng.randrange(100), session_timeout_ms=10_000)
    configs.append(
        SimConfig(
            f"{b}-capped",
            {"capped": 6},
            capped,
            end,
            broker_id="broker-1",
            coordinator=CoordinatorConfig(group_max_size=3),
        )
    )

    # leader rejoin (metadata change), a slow member evicted at the rebalance timeout, a crash (expiry)
    slow = [
        ConsumerSpec("l0", T0 + 1 * S, session_timeout_ms=10_000, refresh_ms=T0 + 40 * S + rng.randrange(S)),
        ConsumerSpec("l1", T0 + 1 * S, session_timeout_ms=10_000),
        ConsumerSpec(
            "l2", T0 + 1 * S, session_timeout_ms=10_000, rebalance_timeout_ms=10_000, slow_rejoin_ms=15_000
        ),
        ConsumerSpec(
            "l3", T0 + 1 * S + 5, session_timeout_ms=10_000, crash_ms=T0 + 120 * S + rng.randrange(S)
        ),
    ]
    for spec in slow:
        if spec.name != "l2":
            spec.rebalance_timeout_ms = 10_000
    configs.append(SimConfig(f"{b}-slow", {"slow": 8}, slow, end, broker_id="broker-2"))

    # a follower that never sends SyncGroup (pending-sync expiry)
    hung = _burst(rng, "h", 3, T0 + 4 * S, session_timeout_ms=10_000, rebalance_timeout_ms=10_000)
    hung[2].start_ms = T0 + 30 * S
    hung[1].hang_sync_after_ms = T0 + 30 * S
    configs.append(SimConfig(f"{b}-hung", {"hung": 4}, hung, end, broker_id="broker-1"))

    # a JoinGroup held longer than the client's request timeout (max(30 s, rebalance timeout + 5 s)) while
    # the group waits for a slow member: re-sent on a new connection; the first is never answered (no line)
    held = [
        ConsumerSpec("j0", T0 + 1 * S, session_timeout_ms=10_000, rebalance_timeout_ms=20_000),
        ConsumerSpec(
            "j1",
            T0 + 1 * S,
            session_timeout_ms=60_000,
            rebalance_timeout_ms=120_000,
            slow_rejoin_ms=45_000,
        ),
        ConsumerSpec(
            "j2", T0 + 60 * S + rng.randrange(S), session_timeout_ms=10_000, rebalance_timeout_ms=20_000
        ),
    ]
    configs.append(SimConfig(f"{b}-held", {"held": 4}, held, end, broker_id="broker-2"))
    return configs


# ---------------------------------------------------------------------------------------------------
# rendering with a coarse clock
# ---------------------------------------------------------------------------------------------------
def _coarse(ms: int, resolution_ms: int) -> int:
    return ms - ms % resolution_ms


def render_coarse(
    configs: Sequence[SimConfig], resolution_ms: int, seed: int, kafka_version: str = KAFKA_VERSION
) -> dict[str, list[str]]:
    """Broker → lines of ``kafka-request.log``: arrival and completion truncated to ``resolution_ms``,
    lines in completion order with each same-timestamp run shuffled."""
    rng = random.Random(seed * 7919 + resolution_ms)
    per_broker: dict[str, list[tuple[int, str]]] = {}
    for cfg in configs:
        for rec in simulate(cfg):
            fields = {k: v for k, v in rec.items() if not k.startswith("_")}
            arrival = _coarse(int(fields["completion_ms"] - round(fields["total_time_ms"])), resolution_ms)
            completion = _coarse(int(fields["completion_ms"]), resolution_ms)
            fields["completion_ms"] = completion
            fields["total_time_ms"] = round(completion - arrival + 0.123, 3)
            fields["remote_time_ms"] = round(max(0.0, completion - arrival - 0.5), 3)
            full = complete_record(fields, kafka_version=kafka_version)
            line = render_line(full, kafka_version=kafka_version, tz=UTC)
            per_broker.setdefault(cfg.broker_id, []).append((completion, line))
    out: dict[str, list[str]] = {}
    for broker, lines in per_broker.items():
        lines.sort(key=lambda x: x[0])
        shuffled: list[str] = []
        i = 0
        while i < len(lines):
            j = i
            while j < len(lines) and lines[j][0] == lines[i][0]:
                j += 1
            run = [line for _, line in lines[i:j]]
            rng.shuffle(run)
            shuffled.extend(run)
            i = j
        out[broker] = shuffled
    return out


# ---------------------------------------------------------------------------------------------------
# replay and agreement
# ---------------------------------------------------------------------------------------------------
def parse_rows(files: Mapping[str, Sequence[str]]) -> list[dict[str, Any]]:
    """Bronze-shaped rows of the group requests in ``files`` (broker → lines)."""
    rows: list[dict[str, Any]] = []
    for broker, lines in files.items():
        for no, line in enumerate(lines, 1):
            outcome = parse_line(line, UTC)
            if outcome.kind is not LineKind.REQUEST or outcome.record is None:
                continue
            row = dict(outcome.record)
            row.update(source_file=f"{broker}/kafka-request.log", line_no=no, broker_id=broker)
            rows.append(row)
    return rows


def replay_rows(rows: Iterable[Mapping[str, Any]], coordinator: CoordinatorConfig) -> list[dict[str, Any]]:
    """One batch replay per group (as ``rebalance-replay replay`` does): prediction rows."""
    by_group: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        if row.get("group_id"):
            by_group.setdefault(str(row["group_id"]), []).append(row)
    predictions: list[dict[str, Any]] = []
    settings = ReplaySettings(coordinator=coordinator)
    for group_id in sorted(by_group):
        group_rows = by_group[group_id]
        replayer = GroupReplayer(group_id, settings)
        replayer.feed(group_rows)
        end = max(int(r["completion_ms"]) for r in group_rows) + 1
        predictions.extend(replayer.process(end).rows["predictions"])
    return predictions


def replay_lines(files: Mapping[str, Sequence[str]], coordinator: CoordinatorConfig) -> list[dict[str, Any]]:
    return replay_rows(parse_rows(files), coordinator)


@dataclass
class Agreement:
    matched: int = 0
    scored: int = 0
    total: int = 0

    @property
    def ratio(self) -> float:
        return self.matched / self.scored if self.scored else 1.0


def agreement(predictions: Iterable[Mapping[str, Any]]) -> dict[str, Agreement]:
    """``api`` → matched / scored / total, plus ``ALL``."""
    out: dict[str, Agreement] = {}
    for p in predictions:
        for key in (str(p["api"]), "ALL"):
            a = out.setdefault(key, Agreement())
            a.total += 1
            if p["scored"]:
                a.scored += 1
                a.matched += bool(p["matched"])
    return out


def mismatches(predictions: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [p for p in predictions if p["scored"] and not p["matched"]]


def coordinator_for(cfg: SimConfig, base: CoordinatorConfig) -> CoordinatorConfig:
    """The replay's broker config for a scenario (what ``--set broker.…`` would say)."""
    return replace(base, group_max_size=cfg.coordinator.group_max_size, kafka_version=cfg.kafka_version)


def run_corpus(seeds: Iterable[int], resolution_ms: int, base: CoordinatorConfig) -> list[dict[str, Any]]:
    """Every seed's scenarios rendered at ``resolution_ms`` and replayed (each group with its broker
    config); prediction rows of all of them."""
    predictions: list[dict[str, Any]] = []
    for seed in seeds:
        configs = scenario_configs(seed)
        rows = parse_rows(render_coarse(configs, resolution_ms, seed))
        for cfg in configs:
            group_rows = [r for r in rows if r["group_id"] == cfg.group_id]
            predictions.extend(replay_rows(group_rows, coordinator_for(cfg, base)))
    return predictions


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--resolutions", default="1,10")
    ap.add_argument("--mode", choices=("track", "predict"), default="track")
    ap.add_argument("--no-warm-start", action="store_true")
    ap.add_argument("--examples", type=int, default=0)
    args = ap.parse_args(argv)
    base = CoordinatorConfig(mode=args.mode, warm_start=not args.no_warm_start)
    for res in (int(x) for x in args.resolutions.split(",")):
        preds = run_corpus(range(args.seeds), res, base)
        table = agreement(preds)
        print(f"resolution {res} ms ({args.mode}, warm_start={base.warm_start}):")
        for api in sorted(table):
            a = table[api]
            print(f"  {api:14s} {100 * a.ratio:7.2f}%  {a.matched}/{a.scored} scored of {a.total}")
        for p in mismatches(preds)[: args.examples]:
            print(
                "   ",
                p["group_id"],
                p["api"],
                p["arrival_ms"] - T0,
                p["member_id"],
                p["mismatch_kinds"],
                f"obs={p['observed_error']}/{p['observed_generation_id']}",
                f"pred={p['predicted_error']}/{p['predicted_generation_id']}",
            )


if __name__ == "__main__":
    main()
