"""Same-millisecond bursts answered by Kafka's own coordinator, written as a broker's log and replayed.

A request log stamps requests with the millisecond they arrived in; the replay has to choose an order for
the requests of one group that share it (a tie set, ``rebalance_replay.transforms.ordering``). This
module makes such bursts with **Kafka's own coordinator** as the truth (``simulator.oracle``):

* :data:`SCENARIOS` — small scripts, each playing clients against the oracle: many new members joining
  in one millisecond against ``group.max.size`` (JoinGroup v3, without KIP-394's round trip, and v5+ with
  it, in one millisecond or two), static members, a Stable group whose members rejoin and leave in the
  millisecond new members join, SyncGroups of a generation in the millisecond new members join, 50
  joiners at once. Every request of a burst is sent at the same clock millisecond.
* :func:`record` runs a scenario against the oracle: the :class:`~simulator.differential.Sequence` and
  Kafka's answers (response JSON and time per op), which :func:`write_fixture` / :func:`read_fixture`
  keep as JSON lines (``tests/unit/coordinator/data/bursts/``), so tests replay them without Java.
* :func:`log_rows` renders Kafka's answers as a Kafka 4.0 broker's ``kafka-request.log``
  (``simulator.differential.log_records`` and ``simulator.log_render``), parsed back into bronze rows:
  ``shuffle`` draws the clients' connection ports (a broker logs ephemeral ports, nothing that tells
  the order of arrival) and the order of the lines completed in the same millisecond.
* :func:`replay` runs the rows through the product's :class:`GroupReplayer` and :func:`disagreements`
  lists the requests whose prediction differs from Kafka's answer (or is left unscored).

``python -m simulator.bursts [--seeds N]`` records every scenario and prints the agreement per seed.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC
from pathlib import Path
from typing import Any

from rebalance_replay.transforms.coordinator.config import CoordinatorConfig
from rebalance_replay.transforms.kafka_protocol import ApiKey
from simulator import differential as d
from simulator.fidelity import parse_rows, replay_rows
from simulator.log_render import complete_record, render_line
from simulator.oracle import KafkaOracle, OracleUnavailable

KAFKA_VERSION = "4.0"
_META = base64.b64encode(b"\x00\x01\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff").decode()


# =================================================================================================
# Playing clients against the oracle
# =================================================================================================
class Driver:
    """Sends requests to the oracle at chosen milliseconds and keeps Kafka's answers per op."""

    def __init__(self, oracle: KafkaOracle, seed: int, settings: d.Settings) -> None:
        self.oracle = oracle
        self.seed = seed
        self.settings = settings
        self.ops: list[d.Op] = []
        self.answers: dict[int, d.Answer] = {}
        self.bodies: dict[int, dict[str, Any]] = {}
        self.by_req: dict[int, int] = {}
        self.ids: dict[int, str] = {}
        self.now = 0
        oracle.reset(d.START_MS, settings.oracle_config(), seed=seed)

    def _take(self, events: list[dict[str, Any]]) -> None:
        for i, a, body in d.oracle_answers(events, self.by_req, self.ops):
            self.answers[i], self.bodies[i] = a, body
            if self.ops[i].api is ApiKey.JOIN_GROUP and a.member_id:
                self.ids[i] = a.member_id

    def at(self, ms: int) -> None:
        """Move the clock to ``ms`` (after the start), firing Kafka's timers on the way."""
        if ms > self.now:
            self._take(self.oracle.send({"op": "advance", "ms": ms - self.now}))
            self.now = ms

    def send(self, api: ApiKey, version: int, client: str, **fields: Any) -> int:
        op = d.Op(self.now, api, version, client, fields)
        i = len(self.ops)
        self.ops.append(op)
        self.by_req[self.oracle.sent] = i
        self._take(self.oracle.send(d.oracle_request(d.group_request(op, i, self.ids))))
        return i

    def join(
        self, client: str, version: int, member: str = "", instance: str | None = None, **extra: Any
    ) -> int:
        fields: dict[str, Any] = {
            "member_id": member,
            "session_timeout_ms": 10_000,
            "protocol_type": "consumer",
            "protocols": [["range", _META]],
        }
        if version >= 1:
            fields["rebalance_timeout_ms"] = 10_000
        if version >= 5:
            fields["group_instance_id"] = instance
        fields.update(extra)
        return self.send(ApiKey.JOIN_GROUP, version, client, **fields)

    def rejoin(self, joined: int, version: int | None = None) -> int:
        """Op ``joined``'s client joins again with the member id Kafka gave it."""
        op = self.ops[joined]
        v = op.version if version is None else version
        return self.join(op.client_id, v, self.ref(joined), op.fields.get("group_instance_id"))

    def ref(self, joined: int) -> str:
        """The member id Kafka answered op ``joined`` with, as a reference (``"${N}"``)."""
        return f"${{{self.first_ref(self.ids[joined])}}}"

    def first_ref(self, member_id: str) -> int:
        return min(i for i, m in self.ids.items() if m == member_id)

    def sync(self, joined: int, version: int = 3) -> int:
        """The SyncGroup of the member op ``joined`` made, for the generation it was answered with."""
        a = self.answers[joined]
        op = self.ops[joined]
        assignments = []
        if a.leader and a.leader == a.member_id:
            members = list(a.members or ())
            assignments = [
                [f"${{{self.first_ref(m)}}}", base64.b64encode(bytes([k, len(members)])).decode()]
                for k, m in enumerate(members)
            ]
        fields: dict[str, Any] = {
            "member_id": self.ref(joined),
            "generation_id": a.generation_id,
            "assignments": assignments,
        }
        if version >= 3:
            fields["group_instance_id"] = op.fields.get("group_instance_id")
        if version >= 5:
            fields["protocol_type"], fields["protocol_name"] = "consumer", a.protocol_name
        return self.send(ApiKey.SYNC_GROUP, version, op.client_id, **fields)

    def heartbeat(self, joined: int) -> int:
        a, op = self.answers[joined], self.ops[joined]
        return self.send(
            ApiKey.HEARTBEAT, 3, op.client_id, member_id=self.ref(joined), generation_id=a.generation_id
        )

    def leave(self, joined: int) -> int:
        op = self.ops[joined]
        members = [[self.ref(joined), op.fields.get("group_instance_id"), "the consumer is being closed"]]
        return self.send(ApiKey.LEAVE_GROUP, 5, op.client_id, leave_members=members)

    def accepted(self, joins: list[int]) -> list[int]:
        """The ops of ``joins`` Kafka answered NONE."""
        return [i for i in joins if i in self.answers and self.answers[i].error == "NONE"]

    def settle(self, joins: list[int], step_ms: int = 500, limit_ms: int = 60_000) -> int:
        """Advance until every op of ``joins`` is answered; the time of the last answer."""
        stop = self.now + limit_ms
        while any(i not in self.answers for i in joins) and self.now < stop:
            self.at(self.now + step_ms)
        return max(d.answered_at(self.answers[i]) - d.START_MS for i in joins if i in self.answers)

    def sequence(self, end_ms: int) -> d.Sequence:
        self.at(end_ms)
        return d.Sequence(self.seed, self.settings, tuple(self.ops), end_ms)


def _capped_v3(g: Driver) -> None:
    """Ten new members (JoinGroup v3: no KIP-394 round trip) in one millisecond, group.max.size 5."""
    g.at(1000)
    joins = [g.join(f"c{k}", 3) for k in range(10)]
    done = g.settle(joins)
    g.at(done + 2)
    members = g.accepted(joins)
    for i in members:
        g.sync(i)
    g.at(done + 1500)
    for i in members:
        g.heartbeat(i)


def _capped_kip394(g: Driver) -> None:
    """Ten new members (v5): MEMBER_ID_REQUIRED to all in one millisecond, all rejoining in the next,
    group.max.size 5."""
    g.at(1000)
    first = [g.join(f"c{k}", 5 + k % 5) for k in range(10)]
    g.at(1001)
    second = [g.rejoin(i) for i in first]
    done = g.settle(second)
    g.at(done + 3)
    for i in g.accepted(second):
        g.sync(i, 5)


def _kip394_one_ms(g: Driver) -> None:
    """Eight new members (v7) each sending both JoinGroups of KIP-394 in the same millisecond,
    group.max.size 4."""
    g.at(1000)
    first = [g.join(f"c{k}", 7) for k in range(8)]
    second = [g.rejoin(i) for i in first]
    done = g.settle(second)
    g.at(done + 1)
    for i in g.accepted(second):
        g.sync(i, 5)


def _mixed_versions(g: Driver) -> None:
    """Ten new members in one millisecond, old (v2) and KIP-394 (v6) clients alternating,
    group.max.size 5: a full group refuses a KIP-394 join before handing out an id."""
    g.at(1000)
    first = [g.join(f"c{k}", 2 if k % 2 else 6) for k in range(10)]
    g.at(1001)
    second = [g.rejoin(i) for i in first if i in g.answers and g.answers[i].error == "MEMBER_ID_REQUIRED"]
    joins = [i for i in first if g.answers.get(i) is None or g.answers[i].error == "NONE"] + second
    done = g.settle(joins)
    g.at(done + 2)
    for i in g.accepted(joins):
        if g.answers[i].generation_id is not None:
            g.sync(i)


def _static_capped(g: Driver) -> None:
    """Six static members (v5, no KIP-394 round trip) in one millisecond, group.max.size 3."""
    g.at(1000)
    joins = [g.join(f"c{k}", 5, instance=f"pod-{k}") for k in range(6)]
    done = g.settle(joins)
    g.at(done + 1)
    for i in g.accepted(joins):
        g.sync(i, 5)


def _stable_then_burst(g: Driver) -> None:
    """A Stable group of three; in one millisecond two of them rejoin, the third leaves and five new
    members join (v3), group.max.size 6; then the new generation syncs in one millisecond."""
    g.at(1000)
    first = [g.join(f"m{k}", 9) for k in range(3)]
    g.at(1001)
    second = [g.rejoin(i) for i in first]
    done = g.settle(second)
    g.at(done + 5)
    for i in second:
        g.sync(i, 5)
    g.at(done + 3000)
    burst = [g.rejoin(second[0]), g.leave(second[2])]
    burst += [g.join(f"n{k}", 3) for k in range(5)]
    burst.append(g.rejoin(second[1]))
    joins = [i for i in burst if g.ops[i].api is ApiKey.JOIN_GROUP]
    done = g.settle(joins)
    g.at(done + 2)
    for i in g.accepted(joins):
        g.sync(i, 5 if g.ops[i].version >= 5 else 3)


def _sync_with_joins(g: Driver) -> None:
    """A generation of four completes; in one millisecond its SyncGroups arrive with three new members'
    JoinGroups (v3), group.max.size 5."""
    g.at(1000)
    joins = [g.join(f"m{k}", 3) for k in range(4)]
    done = g.settle(joins)
    g.at(done + 4)
    burst = [g.sync(joins[k]) for k in (1, 0)]
    burst += [g.join(f"n{k}", 3) for k in range(3)]
    burst += [g.sync(joins[k]) for k in (2, 3)]
    new = [i for i in burst if g.ops[i].api is ApiKey.JOIN_GROUP]
    rejoin = [g.join(g.ops[i].client_id, 3, g.ref(i)) for i in joins]
    done = g.settle([*new, *rejoin])
    g.at(done + 1)
    for i in g.accepted([*new, *rejoin]):
        g.sync(i)


def _fifty(g: Driver) -> None:
    """Fifty new members (v3) in one millisecond, group.max.size 20; the twenty sync in one."""
    g.at(1000)
    joins = [g.join(f"c{k:02d}", 3) for k in range(50)]
    done = g.settle(joins)
    g.at(done + 2)
    for i in g.accepted(joins):
        g.sync(i)


@dataclass(frozen=True)
class Scenario:
    name: str
    settings: d.Settings
    play: Callable[[Driver], None]
    end_ms: int = 60_000


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("capped_v3", d.Settings(max_size=5), _capped_v3),
    Scenario("capped_kip394", d.Settings(max_size=5), _capped_kip394),
    Scenario("kip394_one_ms", d.Settings(max_size=4, initial_rebalance_delay_ms=0), _kip394_one_ms),
    Scenario("mixed_versions", d.Settings(max_size=5), _mixed_versions),
    Scenario("static_capped", d.Settings(max_size=3), _static_capped),
    Scenario("stable_then_burst", d.Settings(max_size=6, initial_rebalance_delay_ms=100), _stable_then_burst),
    Scenario("sync_with_joins", d.Settings(max_size=5, initial_rebalance_delay_ms=0), _sync_with_joins),
    Scenario("fifty", d.Settings(max_size=20), _fifty),
)


# =================================================================================================
# Recording
# =================================================================================================
@dataclass(frozen=True)
class Recording:
    """A scenario's requests and Kafka's answers: op index → (answer time, Kafka's response JSON)."""

    name: str
    sequence: d.Sequence
    kafka: dict[int, tuple[int, dict[str, Any]]]

    def answers(self) -> dict[int, d.Answer]:
        ops = self.sequence.ops
        return {
            i: d.answer_from_oracle(ops[i].api, ops[i].version, t, body)
            for i, (t, body) in self.kafka.items()
        }


def record(oracle: KafkaOracle, scenario: Scenario, seed: int = 0) -> Recording:
    g = Driver(oracle, seed, scenario.settings)
    scenario.play(g)
    seq = g.sequence(scenario.end_ms)
    kafka = {i: (d.answered_at(a), g.bodies[i]) for i, a in g.answers.items()}
    return Recording(scenario.name, seq, kafka)


def write_fixture(rec: Recording, path: Path) -> None:
    """JSON lines: a head (name, seed, settings, end), then one line per op with Kafka's answer (``null``
    when Kafka never answered it)."""
    seq = rec.sequence
    head = {"name": rec.name, "seed": seq.seed, "settings": seq.settings.__dict__, "end": seq.end_ms}
    lines = [json.dumps(head)]
    for i, op in enumerate(seq.ops):
        answer = rec.kafka.get(i)
        kafka = None if answer is None else {"t": answer[0], "body": answer[1]}
        lines.append(json.dumps({"op": op.to_json(), "kafka": kafka}, sort_keys=True))
    path.write_text("\n".join(lines) + "\n")


def read_fixture(path: Path) -> Recording:
    head, *ops = (json.loads(line) for line in path.read_text().strip().splitlines())
    seq = d.Sequence(
        head["seed"],
        d.Settings(**head["settings"]),
        tuple(d.Op.from_json(o["op"]) for o in ops),
        head["end"],
    )
    kafka = {i: (int(o["kafka"]["t"]), o["kafka"]["body"]) for i, o in enumerate(ops) if o["kafka"]}
    return Recording(head["name"], seq, kafka)


# =================================================================================================
# Kafka's answers as a log, replayed
# =================================================================================================
BROKER = "broker-0"


def log_rows(rec: Recording, shuffle: int | None = None) -> tuple[list[dict[str, Any]], dict[int, int]]:
    """Bronze rows of the recording as a Kafka 4.0 broker's log, and line number → op index.

    Lines are in completion order; ``shuffle`` (a seed) draws the order of the lines completed in the
    same millisecond and each client's connection port, else they follow the ops (a log that happens to
    list a burst in arrival order)."""
    seq, answers = rec.sequence, rec.answers()
    bodies = {i: body for i, (_, body) in rec.kafka.items()}
    records = d.log_records(seq, answers, bodies, group_id=d.GROUP_ID)
    answered = [i for i in range(len(seq.ops)) if i in answers]
    rng = random.Random(shuffle)
    if shuffle is not None:
        ports: dict[str, str] = {}
        for r in records:
            conn = str(r["connection"])
            if conn not in ports:
                ports[conn] = f"127.0.0.1:9092-127.0.0.1:{rng.randrange(32768, 61000)}-{rng.randrange(100)}"
            r["connection"] = ports[conn]
    lines = []
    for i, r in zip(answered, records, strict=True):
        full = complete_record(r, kafka_version=KAFKA_VERSION)
        key = rng.random() if shuffle is not None else float(i)
        lines.append(
            (int(r["completion_ms"]), key, i, render_line(full, kafka_version=KAFKA_VERSION, tz=UTC))
        )
    lines.sort()
    rows = parse_rows({BROKER: [line for *_, line in lines]})
    return rows, {no: i for no, (_, _, i, _) in enumerate(lines, 1)}


def coordinator(rec: Recording, mode: str = "predict") -> CoordinatorConfig:
    config = rec.sequence.settings.model_config(KAFKA_VERSION)
    return config if mode == "predict" else replace(config, mode="track", warm_start=True)


def replay(rows: list[dict[str, Any]], config: CoordinatorConfig) -> list[dict[str, Any]]:
    return replay_rows(rows, config)


@dataclass(frozen=True)
class Outcome:
    op: int
    api: str
    what: str  # "mismatch: error,leader", "unscored: <reason>", "missing"


def disagreements(
    rec: Recording, predictions: Sequence[Mapping[str, Any]], line_ops: Mapping[int, int]
) -> list[Outcome]:
    """Kafka's answers the replay did not predict: a scored mismatch, an unscored row (its reason), or an
    answered request without a prediction."""
    out: list[Outcome] = []
    seen: set[int] = set()
    for p in predictions:
        i = line_ops[int(p["line_no"])]
        seen.add(i)
        if not p["scored"]:
            out.append(Outcome(i, str(p["api"]), f"unscored: {p['unscored_reason']}"))
        elif not p["matched"]:
            out.append(Outcome(i, str(p["api"]), "mismatch: " + ",".join(p["mismatch_kinds"])))
    for i in sorted(set(line_ops.values()) - seen):
        out.append(Outcome(i, rec.sequence.ops[i].api.name, "missing"))
    return sorted(out, key=lambda o: o.op)


def check(rec: Recording, shuffle: int | None, mode: str = "predict") -> list[Outcome]:
    rows, line_ops = log_rows(rec, shuffle)
    return disagreements(rec, replay(rows, coordinator(rec, mode)), line_ops)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m simulator.bursts", description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=10, help="shuffles per scenario")
    p.add_argument("--mode", choices=("predict", "track"), default="predict")
    p.add_argument("--write", type=Path, help="write each recording to DIR/<name>.jsonl")
    p.add_argument("--only", help="one scenario")
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args(argv)
    try:
        oracle = KafkaOracle()
    except OracleUnavailable as exc:
        print(f"bursts: {exc}", file=sys.stderr)
        return 2
    agreed = total = 0
    with oracle:
        for scenario in SCENARIOS:
            if args.only and scenario.name != args.only:
                continue
            rec = record(oracle, scenario)
            if args.write:
                write_fixture(rec, args.write / f"{scenario.name}.jsonl")
            good = 0
            for seed in [None, *range(args.seeds)]:
                bad = check(rec, seed, args.mode)
                good += not bad
                if bad and args.verbose:
                    print(f"  {scenario.name} shuffle={seed}: {[(o.op, o.api, o.what) for o in bad]}")
            runs = args.seeds + 1
            agreed, total = agreed + good, total + runs
            print(f"{scenario.name:20s} {len(rec.sequence.ops):3d} ops: {good}/{runs} shuffles agree")
    print(f"all: {agreed}/{total}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
