"""Differential testing: the same request sequence through Kafka's own coordinator and through the model.

Kafka's side is ``../shared/kafka-oracle`` (Kafka 4.0's Java ``GroupCoordinatorShard`` behind a pipe,
:mod:`simulator.oracle`); the model's side is
:class:`~rebalance_replay.transforms.coordinator.model.GroupCoordinatorModel`
set to Kafka 4.0, the Java coordinator, ``predict`` mode, no warm start (or to another version, for the
comparisons of behaviour Kafka 4.0 shares with it).

* A :class:`Sequence` is a group's requests at chosen times (:class:`Op`), with the broker settings. A
  member id a client learnt from a JoinGroup answer is written as ``"${N}"`` (the answer to op ``N``),
  and each side substitutes its *own* answer, so a sequence means the same to both.
* :func:`generate` writes sequences by playing seeded clients **against the oracle** (they react to
  what Kafka answers: KIP-394's second join, SyncGroup after the join, heartbeats and commits at
  intervals, rejoining on REBALANCE_IN_PROGRESS, static restarts, leaves, protocol changes, slow members,
  followers that never sync), mixed with adversarial requests (unknown ids, stale generations, wrong
  protocol types, out-of-bounds session timeouts, every API version).
* :func:`compare` lines the two sides' answers up per op: error, answer time, and every field the API
  and version carry (generation, leader, member id, protocol type/name, the member list in order,
  skipAssignment, the assignment, per-member and per-partition errors). The model makes the same member
  ids as the oracle (the oracle draws them from a seeded ``java.util.Random``; :class:`JavaRandomUuids`
  replays it), and ids are also mapped answer by answer, so a difference in ids is reported, not hidden.
* :func:`shrink` cuts a diverging sequence down to a minimal one that still shows the same first
  divergence; :func:`triage` groups divergences by kind with a minimal example each.

``python -m simulator.differential --sequences 500 --seed 0`` prints the triage table.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import re
import sys
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from collections.abc import Sequence as SequenceOf
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from rebalance_replay.transforms.coordinator.config import CoordinatorConfig
from rebalance_replay.transforms.coordinator.model import GroupCoordinatorModel
from rebalance_replay.transforms.coordinator.types import (
    GroupRequest,
    LeaveMember,
    PredictedResponse,
    Protocol,
)
from rebalance_replay.transforms.kafka_protocol import ApiKey, Errors
from rebalance_replay.transforms.request_log import map_response_body
from simulator.clients import request_fields
from simulator.log_render import render_request_body
from simulator.oracle import KafkaOracle, OracleUnavailable

GROUP_ID = "g"
START_MS = 1_700_000_000_000
#: Longest sequence (ms): below the Java coordinator's 10-minute metadata-expiration tick.
MAX_SPAN_MS = 540_000

#: The oracle's op name per API.
OP_NAMES: dict[ApiKey, str] = {
    ApiKey.JOIN_GROUP: "JoinGroup",
    ApiKey.SYNC_GROUP: "SyncGroup",
    ApiKey.HEARTBEAT: "Heartbeat",
    ApiKey.LEAVE_GROUP: "LeaveGroup",
    ApiKey.OFFSET_COMMIT: "OffsetCommit",
}
#: Versions Kafka 4.0 accepts per API (the classic-group APIs; 4.0 dropped JoinGroup v0-1 and
#: OffsetCommit v0-1 (KIP-896) — the oracle's Kafka code is from before that removal and takes them).
VERSIONS: dict[ApiKey, range] = {
    ApiKey.JOIN_GROUP: range(0, 10),
    ApiKey.SYNC_GROUP: range(0, 6),
    ApiKey.HEARTBEAT: range(0, 5),
    ApiKey.LEAVE_GROUP: range(0, 6),
    ApiKey.OFFSET_COMMIT: range(2, 10),
}

_REF = re.compile(r"^\$\{(\d+)\}$")


# =================================================================================================
# Sequences
# =================================================================================================
@dataclass(frozen=True)
class Settings:
    """Broker settings of one sequence (the ones that change the classic coordinator's answers)."""

    initial_rebalance_delay_ms: int = 3000
    max_size: int = 2**31 - 1
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1_800_000

    def oracle_config(self) -> dict[str, str]:
        return {
            "group.initial.rebalance.delay.ms": str(self.initial_rebalance_delay_ms),
            "group.max.size": str(self.max_size),
            "group.min.session.timeout.ms": str(self.min_session_timeout_ms),
            "group.max.session.timeout.ms": str(self.max_session_timeout_ms),
        }

    def model_config(
        self, kafka_version: str = "4.0", implementation: str | None = None
    ) -> CoordinatorConfig:
        return CoordinatorConfig(
            kafka_version=kafka_version,
            implementation=implementation or ("java" if kafka_version.startswith("4") else "scala"),  # type: ignore[arg-type]
            group_min_session_timeout_ms=self.min_session_timeout_ms,
            group_max_session_timeout_ms=self.max_session_timeout_ms,
            group_initial_rebalance_delay_ms=self.initial_rebalance_delay_ms,
            group_max_size=self.max_size,
            mode="predict",
            warm_start=False,
        )


@dataclass(frozen=True)
class Op:
    """One request: at ``at_ms`` after the start, API/version, the client id, and the request's fields
    (``GroupRequest`` names, JSON values: protocols ``[[name, base64 metadata]]``, assignments
    ``[[member, base64]]``, leave members ``[[member, instance, reason]]``, commit partitions
    ``[[topic, partition]]``). Member ids may be ``"${N}"``: the member id of the answer to op ``N``."""

    at_ms: int
    api: ApiKey
    version: int
    client_id: str
    fields: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {
            "at": self.at_ms,
            "api": OP_NAMES[self.api],
            "v": self.version,
            "client": self.client_id,
            **self.fields,
        }

    @staticmethod
    def from_json(doc: dict[str, Any]) -> Op:
        rest = {k: v for k, v in doc.items() if k not in ("at", "api", "v", "client")}
        api = next(a for a, n in OP_NAMES.items() if n == doc["api"])
        return Op(int(doc["at"]), api, int(doc["v"]), str(doc["client"]), rest)


@dataclass(frozen=True)
class Sequence:
    seed: int
    settings: Settings
    ops: tuple[Op, ...]
    end_ms: int

    def without(self, drop: set[int]) -> Sequence:
        """The sequence without the ops in ``drop``; references to a dropped op become ``""`` and later
        references are renumbered."""
        keep = [i for i in range(len(self.ops)) if i not in drop]
        renumber = {old: f"${{{new}}}" for new, old in enumerate(keep)}
        ops = tuple(
            Op(
                op.at_ms,
                op.api,
                op.version,
                op.client_id,
                {k: _map_refs(v, renumber) for k, v in op.fields.items()},
            )
            for op in (self.ops[i] for i in keep)
        )
        return Sequence(self.seed, self.settings, ops, self.end_ms)

    def to_json(self) -> str:
        head = {"seed": self.seed, "settings": self.settings.__dict__, "end": self.end_ms}
        return "\n".join([json.dumps(head), *(json.dumps(op.to_json()) for op in self.ops)])


def _map_refs(value: Any, refs: dict[int, str]) -> Any:
    """``value`` with every ``"${N}"`` in it (strings, nested lists) replaced by ``refs[N]``, or ``""``
    when ``refs`` has no N: resolving member ids (N → id) and renumbering (N → ``"${M}"``) alike."""
    if isinstance(value, str):
        m = _REF.match(value)
        return refs.get(int(m.group(1)), "") if m else value
    if isinstance(value, list):
        return [_map_refs(v, refs) for v in value]
    return value


def _b64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


def group_request(op: Op, index: int, ids: dict[int, str]) -> GroupRequest:
    """The op as the model's request, member-id references resolved with ``ids`` (op index → member id)."""
    f = {k: _map_refs(v, ids) for k, v in op.fields.items()}
    protocols = tuple(Protocol(n, _b64(m), len(_b64(m) or b"")) for n, m in f.pop("protocols", []) or [])
    assignments = tuple((m, _b64(a)) for m, a in f.pop("assignments", []) or [])
    leave = tuple(LeaveMember(m, i, r) for m, i, r in f.pop("leave_members", []) or [])
    commits = tuple((t, int(p)) for t, p in f.pop("commit_partitions", []) or [])
    return GroupRequest(
        api=op.api,
        api_version=op.version,
        group_id=GROUP_ID,
        arrival_ms=START_MS + op.at_ms,
        client_id=op.client_id,
        client_host="127.0.0.1",
        protocols=protocols,
        assignments=assignments,
        leave_members=leave,
        commit_partitions=commits,
        ref=("op", index),
        **f,
    )


def oracle_request(req: GroupRequest) -> dict[str, Any]:
    """The oracle's input line for ``req``: Kafka's JSON for the request data, rendered by the product's
    own log renderer (the same text a Kafka 4.0 broker logs)."""
    record = {
        "api_key": int(req.api),
        "api_version": req.api_version,
        **request_fields(req, committed_offset=42),
    }
    body = render_request_body(record, kafka_version="4.0")
    assert body is not None
    return {"op": OP_NAMES[req.api], "v": req.api_version, "clientId": req.client_id, "req": json.loads(body)}


# =================================================================================================
# Answers
# =================================================================================================
#: One side's answer to one op: the model's own response type (when, the error, and the fields the
#: API/version carries); Kafka's answers are read into it from its response JSON. Always answered
#: (``completion_ms`` set): an op never answered has no Answer.
Answer = PredictedResponse


def answered_at(a: Answer) -> int:
    assert a.completion_ms is not None
    return a.completion_ms


def answer_from_oracle(api: ApiKey, version: int, t: int, body: dict[str, Any]) -> Answer:
    r: dict[str, Any] = dict(map_response_body(api, version, body))
    members = r.get("response_members")
    leave = r.get("response_leave_members")
    commits = r.get("response_commit_partitions")
    return Answer(
        completion_ms=t,
        error=Errors.named(str(r.get("error_name") or "NONE")),
        generation_id=r.get("response_generation_id"),
        leader=r.get("response_leader"),
        member_id=r.get("response_member_id"),
        protocol_type=r.get("response_protocol_type"),
        protocol_name=r.get("response_protocol_name"),
        skip_assignment=r.get("response_skip_assignment"),
        members=None if members is None else tuple(m["member_id"] for m in members),
        assignment=r.get("response_assignment"),
        member_errors=None
        if leave is None
        else tuple((m["member_id"], Errors.named(m["error_name"])) for m in leave),
        partition_errors=None
        if commits is None
        else tuple((p["topic"], p["partition"], Errors.named(p["error_name"])) for p in commits),
    )


def answer_from_model(p: PredictedResponse) -> Answer | None:
    return None if p.completion_ms is None else p


# =================================================================================================
# The two sides
# =================================================================================================
class JavaRandomUuids:
    """``UUID.randomUUID()`` under the oracle's seeded ``SecureRandom`` (a ``java.util.Random(seed)``):
    the member ids Kafka generates in the oracle, in the order it generates them."""

    _MASK = (1 << 48) - 1

    def __init__(self, seed: int) -> None:
        self._seed = (seed ^ 0x5DEECE66D) & self._MASK

    def _next_int(self) -> int:
        self._seed = (self._seed * 0x5DEECE66D + 0xB) & self._MASK
        return self._seed >> 16  # next(32), as an unsigned 32-bit value

    def __call__(self) -> uuid.UUID:
        data = bytearray()
        while len(data) < 16:
            rnd = self._next_int()
            for _ in range(min(16 - len(data), 4)):
                data.append(rnd & 0xFF)
                rnd >>= 8
        data[6] = (data[6] & 0x0F) | 0x40
        data[8] = (data[8] & 0x3F) | 0x80
        return uuid.UUID(bytes=bytes(data))


def oracle_answers(
    events: Iterable[dict[str, Any]], by_req: Mapping[int, int], ops: SequenceOf[Op]
) -> Iterator[tuple[int, Answer, dict[str, Any]]]:
    """The oracle's responses among ``events`` to ops we sent (oracle request number → op index in
    ``by_req``): (op index, answer, Kafka's response JSON). A failure reported by the oracle raises."""
    for e in events:
        kind = e.get("type")
        if kind in ("error", "timer_error"):
            raise RuntimeError(f"the oracle failed: {e}")
        if kind == "response" and e["req"] in by_req:
            i = by_req[e["req"]]
            yield i, answer_from_oracle(ops[i].api, ops[i].version, int(e["t"]), e["body"]), e["body"]


def run_oracle(
    oracle: KafkaOracle, seq: Sequence, bodies: dict[int, dict[str, Any]] | None = None
) -> dict[int, Answer]:
    """Kafka's answers to ``seq``: op index → answer (ops never answered are absent). ``bodies``, when
    given, receives Kafka's response JSON per op."""
    oracle.reset(START_MS, seq.settings.oracle_config(), seed=seq.seed)
    answers: dict[int, Answer] = {}
    ids: dict[int, str] = {}
    by_req: dict[int, int] = {}
    now = 0

    def take(events: list[dict[str, Any]]) -> None:
        for i, a, body in oracle_answers(events, by_req, seq.ops):
            answers[i] = a
            if bodies is not None:
                bodies[i] = body
            if seq.ops[i].api is ApiKey.JOIN_GROUP and a.member_id:
                ids[i] = a.member_id

    for i, op in enumerate(seq.ops):
        if op.at_ms > now:
            take(oracle.send({"op": "advance", "ms": op.at_ms - now}))
            now = op.at_ms
        by_req[oracle.sent] = i
        take(oracle.send(oracle_request(group_request(op, i, ids))))
    if seq.end_ms > now:
        take(oracle.send({"op": "advance", "ms": seq.end_ms - now}))
    return answers


def run_model(seq: Sequence, kafka_version: str = "4.0") -> dict[int, Answer]:
    """The model's answers to ``seq`` (same shape as :func:`run_oracle`). ``kafka_version`` may name
    the implementation too: ``"3.7"`` is Scala's coordinator, ``"3.7:java"`` the Java one at 3.7."""
    version, _, implementation = kafka_version.partition(":")
    model = GroupCoordinatorModel(GROUP_ID, seq.settings.model_config(version, implementation or None))
    model.uuid_source = JavaRandomUuids(seq.seed)
    answers: dict[int, Answer] = {}
    ids: dict[int, str] = {}

    def take() -> None:
        predictions, _ = model.drain()
        for p in predictions:
            assert p.request.ref is not None
            i = p.request.ref[1]
            a = answer_from_model(p.response)
            if a is None:
                continue
            answers[i] = a
            if p.request.api is ApiKey.JOIN_GROUP and a.member_id:
                ids[i] = a.member_id

    for i, op in enumerate(seq.ops):
        model.advance_to(START_MS + op.at_ms)  # answers due by then are known to the client sending op
        take()
        model.handle(group_request(op, i, ids))
        take()
    model.advance_to(START_MS + seq.end_ms)
    take()
    return answers


# =================================================================================================
# Comparison
# =================================================================================================
@dataclass(frozen=True)
class Divergence:
    index: int  # op index
    kind: str  # e.g. "JoinGroup.error", "SyncGroup.time", "JoinGroup.members_order"
    kafka: Any
    model: Any

    @property
    def detail(self) -> str:
        if self.kind.endswith(".error"):
            return f"{self.kind} {self.kafka}→{self.model}"
        return self.kind


def _fields(api: ApiKey, version: int, a: Answer) -> dict[str, Any]:
    """The fields compared for an answer (beyond error and time)."""
    out: dict[str, Any] = {}
    if api is ApiKey.JOIN_GROUP:
        out["generation"] = a.generation_id
        out["leader"] = a.leader
        out["member_id"] = a.member_id
        out["protocol_name"] = a.protocol_name
        if version >= 7:
            out["protocol_type"] = a.protocol_type
        if version >= 9:
            out["skip_assignment"] = a.skip_assignment
        out["members"] = frozenset(a.members or ())
        out["members_order"] = tuple(a.members or ())
    elif api is ApiKey.SYNC_GROUP:
        out["assignment"] = a.assignment or b""
        if version >= 5:
            out["protocol_type"] = a.protocol_type
            out["protocol_name"] = a.protocol_name
    elif api is ApiKey.LEAVE_GROUP and version >= 3:
        out["member_errors"] = tuple(a.member_errors or ())
    elif api is ApiKey.OFFSET_COMMIT:
        out["partition_errors"] = tuple(sorted(a.partition_errors or ()))
    return out


def _map_ids(a: Answer, id_map: dict[str, str]) -> Answer:
    def m(x: str | None) -> str | None:
        return None if x is None else id_map.get(x, x)

    return replace(
        a,
        leader=m(a.leader),
        member_id=m(a.member_id),
        members=None if a.members is None else tuple(id_map.get(x, x) for x in a.members),
        member_errors=None
        if a.member_errors is None
        else tuple((id_map.get(x, x), e) for x, e in a.member_errors),
    )


def compare(seq: Sequence, kafka: dict[int, Answer], model: dict[int, Answer]) -> list[Divergence]:
    """Every difference between the two sides' answers, op by op. Kafka's member ids are mapped onto the
    model's through the JoinGroup answers to the same op (identity when the ids agree)."""
    id_map: dict[str, str] = {}
    out: list[Divergence] = []
    for i, op in enumerate(seq.ops):
        k, m = kafka.get(i), model.get(i)
        name = OP_NAMES[op.api]
        if k is not None and m is not None and op.api is ApiKey.JOIN_GROUP and k.member_id and m.member_id:
            id_map.setdefault(k.member_id, m.member_id)
        if k is None or m is None:
            if k is not m:
                out.append(Divergence(i, f"{name}.answered", k is not None, m is not None))
            continue
        k = _map_ids(k, id_map)
        if k.error != m.error:
            out.append(Divergence(i, f"{name}.error", k.error, m.error))
            continue
        if k.completion_ms != m.completion_ms:
            out.append(Divergence(i, f"{name}.time", answered_at(k) - START_MS, answered_at(m) - START_MS))
        kf, mf = _fields(op.api, op.version, k), _fields(op.api, op.version, m)
        for key, kv in kf.items():
            if key == "members_order" and kf.get("members") != mf.get("members"):
                continue  # a different set is reported once, as "members"
            if mf.get(key) != kv:
                out.append(Divergence(i, f"{name}.{key}", kv, mf.get(key)))
    return out


# =================================================================================================
# Generation: seeded clients playing against the oracle
# =================================================================================================
_TOPICS = ("t", "u")
_META = {  # ConsumerProtocol subscriptions, base64 (contents do not matter to the coordinator)
    "range": base64.b64encode(b"\x00\x01\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff").decode(),
    "roundrobin": base64.b64encode(b"\x00\x01\x00\x00\x00\x01\x00\x01u\xff\xff\xff\xff").decode(),
    "cooperative-sticky": base64.b64encode(
        b"\x00\x01\x00\x00\x00\x02\x00\x01t\x00\x01u\xff\xff\xff\xff"
    ).decode(),
}


#: Client phases in which the Java consumer's heartbeat thread runs: from a JoinGroup answer until the
#: application's next poll() starts a new JoinGroup ("rejoin": told to rebalance, not yet re-joining —
#: a slow member keeps heartbeating meanwhile).
_HEARTBEATING = ("joined", "waiting", "stable", "hung", "rejoin")


@dataclass
class _Client:
    client_id: str
    instance_id: str | None
    versions: dict[ApiKey, int]
    session_ms: int
    rebalance_ms: int
    protocols: list[str]
    protocol_type: str = "consumer"
    member_ref: str = ""  # "" or "${N}"
    generation: int = -1
    phase: str = "new"  # new, joining, waiting (for a SyncGroup), rejoin, joined, stable, hung, gone
    leader: bool = False
    members: list[str] = field(default_factory=list)  # refs of the leader's member list
    protocol_name: str | None = None
    next_heartbeat: int = 0
    deferred: str | None = None  # a heartbeat/commit error met while a SyncGroup was in flight
    reason: str | None = None


class _Generator:
    """Plays seeded clients against a live oracle and records what they send as a :class:`Sequence`."""

    def __init__(
        self, oracle: KafkaOracle, seed: int, rng: random.Random, settings: Settings | None, realistic: bool
    ) -> None:
        self.oracle = oracle
        self.realistic = realistic
        self.seed = seed
        self.rng = rng
        r = rng
        drawn = Settings(
            initial_rebalance_delay_ms=r.choice([0, 0, 100, 3000, 3000, r.randrange(0, 5000)]),
            max_size=r.choice([2**31 - 1] * 4 + [1, 2, 3]),
            min_session_timeout_ms=r.choice([6000, 6000, 1000, 10_000]),
            max_session_timeout_ms=r.choice([1_800_000, 1_800_000, 30_000, 60_000]),
        )
        self.settings = settings or drawn
        self.ops: list[Op] = []
        self.clients: list[_Client] = []
        self.by_req: dict[int, int] = {}
        self.waiting: dict[int, _Client] = {}  # op index → client waiting for that answer
        self.id_ref: dict[str, str] = {}  # oracle member id → "${N}"
        self.now = 0
        self.static_pool = [f"static-{k}" for k in range(r.choice([1, 2, 3]))]
        self.client_seq = 0
        oracle.reset(START_MS, self.settings.oracle_config(), seed=seed)

    # -- sending ----------------------------------------------------------------------------------
    def ref_of(self, member_id: str) -> str:
        return self.id_ref.get(member_id, member_id)

    def resolved(self) -> dict[int, str]:
        return {int(v[2:-1]): k for k, v in self.id_ref.items()}

    def advance(self, ms: int) -> None:
        if ms <= 0 or self.now + ms > MAX_SPAN_MS:
            return
        if not self.realistic:
            self.take(self.oracle.send({"op": "advance", "ms": ms}))
            self.now += ms
            return
        # realistic clients react to an answer when it comes: advance timer by timer and stop as soon
        # as one of them has something to do (a parked JoinGroup answered, told to rejoin, …)
        target = self.now + ms
        while self.now < target:
            pending = [
                int(t) - START_MS
                for e in self.oracle.send({"op": "timers"})
                if e.get("type") == "timers"
                for t in e.get("pending", {}).values()
            ]
            step_to = min([t for t in pending if self.now < t < target] or [target])
            self.take(self.oracle.send({"op": "advance", "ms": step_to - self.now}))
            self.now = step_to
            if any(c.phase in ("rejoin", "joined") for c in self.clients):
                break

    def send(self, client: _Client | None, api: ApiKey, version: int, client_id: str, **fields: Any) -> None:
        op = Op(self.now, api, version, client_id, fields)
        i = len(self.ops)
        self.ops.append(op)
        if client is not None:
            self.waiting[i] = client
        self.by_req[self.oracle.sent] = i
        self.take(self.oracle.send(oracle_request(group_request(op, i, self.resolved()))))

    def take(self, events: list[dict[str, Any]]) -> None:
        for i, a, _ in oracle_answers(events, self.by_req, self.ops):
            op = self.ops[i]
            if op.api is ApiKey.JOIN_GROUP and a.member_id and a.member_id not in self.id_ref:
                self.id_ref[a.member_id] = f"${{{i}}}"
            c = self.waiting.pop(i, None)
            if c is not None:
                self.on_answer(c, op, a)

    # -- client reactions (the Java consumer's, simplified) ----------------------------------------
    def on_answer(self, c: _Client, op: Op, a: Answer) -> None:
        err = a.error
        if c.phase == "gone":
            return
        if op.api is ApiKey.JOIN_GROUP:
            if err == "MEMBER_ID_REQUIRED":
                c.member_ref = self.ref_of(a.member_id or "")
                c.phase, c.reason = "rejoin", "need to re-join with the given member id"
            elif err == "NONE":
                c.member_ref = self.ref_of(a.member_id or "")
                c.generation = a.generation_id if a.generation_id is not None else -1
                c.leader = bool(a.leader) and a.leader == a.member_id
                c.members = [self.ref_of(m) for m in (a.members or ())]
                c.protocol_name = a.protocol_name
                c.phase = "hung" if self.rng.random() < 0.06 else "joined"
                c.next_heartbeat = answered_at(a) - START_MS + min(3000, c.session_ms // 3)
            elif err in ("UNKNOWN_MEMBER_ID", "FENCED_INSTANCE_ID"):
                c.member_ref, c.generation = "", -1
                c.phase, c.reason = (
                    ("gone" if err == "FENCED_INSTANCE_ID" else "rejoin"),
                    f"rebalance failed due to {err}",
                )
            elif err in ("GROUP_MAX_SIZE_REACHED", "INCONSISTENT_GROUP_PROTOCOL", "INVALID_SESSION_TIMEOUT"):
                c.phase = "gone" if self.rng.random() < 0.7 else "rejoin"
            else:
                c.phase = "rejoin"
        elif op.api is ApiKey.SYNC_GROUP:
            deferred, c.deferred = c.deferred, None
            if err == "NONE":
                c.phase = "stable"
                if deferred is not None:
                    self.on_liveness_error(c, deferred)
            elif err == "UNKNOWN_MEMBER_ID":
                c.member_ref, c.generation, c.phase = "", -1, "rejoin"
            else:
                c.phase = "rejoin"
        elif op.api in (ApiKey.HEARTBEAT, ApiKey.OFFSET_COMMIT):
            errs = [e for *_, e in (a.partition_errors or ())] if op.api is ApiKey.OFFSET_COMMIT else [err]
            bad = next((e for e in errs if e != "NONE"), "NONE")
            if self.realistic and c.phase == "waiting":
                # the Java consumer finishes the SyncGroup in flight before it acts on a heartbeat error
                if bad != "NONE":
                    c.deferred = bad
                return
            self.on_liveness_error(c, bad)
        elif op.api is ApiKey.LEAVE_GROUP:
            c.phase = "gone"

    def on_liveness_error(self, c: _Client, bad: str) -> None:
        """A heartbeat's or commit's error, as the Java consumer reacts to it."""
        if bad == "UNKNOWN_MEMBER_ID":
            c.member_ref, c.generation, c.phase = "", -1, "rejoin"
        elif bad == "FENCED_INSTANCE_ID":
            c.phase = "gone"
        elif bad in ("REBALANCE_IN_PROGRESS", "ILLEGAL_GENERATION"):
            c.phase, c.reason = "rejoin", "group is already rebalancing"
        elif c.phase in ("waiting", "joining"):
            c.phase = "stable"

    # -- actions -------------------------------------------------------------------------------------
    def new_client(self) -> _Client:
        r = self.rng
        self.client_seq += 1
        modern = r.random() < 0.8
        versions = {
            ApiKey.JOIN_GROUP: r.choice([9, 9, 8, 7, 6, 5])
            if modern
            else r.choice(list(VERSIONS[ApiKey.JOIN_GROUP])),
            ApiKey.SYNC_GROUP: r.choice([5, 5, 4, 3])
            if modern
            else r.choice(list(VERSIONS[ApiKey.SYNC_GROUP])),
            ApiKey.HEARTBEAT: r.choice([4, 4, 3]) if modern else r.choice(list(VERSIONS[ApiKey.HEARTBEAT])),
            ApiKey.LEAVE_GROUP: r.choice([5, 5, 4, 3])
            if modern
            else r.choice(list(VERSIONS[ApiKey.LEAVE_GROUP])),
            ApiKey.OFFSET_COMMIT: r.choice([9, 8, 8, 7])
            if modern
            else r.choice(list(VERSIONS[ApiKey.OFFSET_COMMIT])),
        }
        instance = None
        if versions[ApiKey.JOIN_GROUP] >= 5 and r.random() < 0.35:
            instance = r.choice(self.static_pool)
        protocols = r.choice(
            [["range"], ["range"], ["cooperative-sticky", "range"], ["roundrobin", "range"], ["roundrobin"]]
        )
        c = _Client(
            client_id=f"c{self.client_seq}",
            instance_id=instance,
            versions=versions,
            session_ms=r.choice([10_000, 10_000, 45_000, 6000, r.randrange(1000, 60_000)]),
            rebalance_ms=r.choice(
                [300_000 if not self.realistic else 60_000, 30_000, 10_000, 5000, r.randrange(1000, 60_000)]
            ),
            protocols=protocols,
        )
        self.clients.append(c)
        return c

    def join(self, c: _Client, member_ref: str | None = None, **override: Any) -> None:
        v = c.versions[ApiKey.JOIN_GROUP]
        fields: dict[str, Any] = {
            "member_id": c.member_ref if member_ref is None else member_ref,
            "session_timeout_ms": c.session_ms,
            "protocol_type": c.protocol_type,
            "protocols": [[p, _META[p]] for p in c.protocols],
        }
        if v >= 1:
            fields["rebalance_timeout_ms"] = c.rebalance_ms
        if v >= 5:
            fields["group_instance_id"] = c.instance_id
        if v >= 8:
            fields["reason"] = c.reason
        fields.update(override)
        c.phase = "joining"
        self.send(c, ApiKey.JOIN_GROUP, v, c.client_id, **fields)

    def sync(self, c: _Client) -> None:
        v = c.versions[ApiKey.SYNC_GROUP]
        assignments = []
        if c.leader:
            for k, m in enumerate(c.members):
                assignments.append([m, base64.b64encode(bytes([k, len(c.members)])).decode()])
        fields: dict[str, Any] = {
            "member_id": c.member_ref,
            "generation_id": c.generation,
            "assignments": assignments,
        }
        if v >= 3:
            fields["group_instance_id"] = c.instance_id
        if v >= 5:
            fields["protocol_type"] = c.protocol_type
            fields["protocol_name"] = c.protocol_name
        c.phase = "waiting"
        self.send(c, ApiKey.SYNC_GROUP, v, c.client_id, **fields)

    def heartbeat(self, c: _Client, generation: int | None = None) -> None:
        v = c.versions[ApiKey.HEARTBEAT]
        fields: dict[str, Any] = {
            "member_id": c.member_ref,
            "generation_id": c.generation if generation is None else generation,
        }
        if v >= 3:
            fields["group_instance_id"] = c.instance_id
        self.send(c, ApiKey.HEARTBEAT, v, c.client_id, **fields)

    def commit(self, c: _Client, generation: int | None = None) -> None:
        v = c.versions[ApiKey.OFFSET_COMMIT]
        parts = [[t, p] for t in _TOPICS for p in range(2) if self.rng.random() < 0.5] or [["t", 0]]
        fields: dict[str, Any] = {
            "member_id": c.member_ref,
            "generation_id": c.generation if generation is None else generation,
            "commit_partitions": parts,
        }
        if v >= 7:
            fields["group_instance_id"] = c.instance_id
        self.send(c, ApiKey.OFFSET_COMMIT, v, c.client_id, **fields)

    def leave(self, c: _Client) -> None:
        v = c.versions[ApiKey.LEAVE_GROUP]
        r = self.rng
        if v >= 3:
            members = [
                [
                    c.member_ref if c.instance_id is None or r.random() < 0.7 else "",
                    c.instance_id,
                    "the consumer is being closed" if v >= 5 else None,
                ]
            ]
            if r.random() < 0.15:
                members.append([r.choice(["ghost-1", c.member_ref]), None, None])
            self.send(c, ApiKey.LEAVE_GROUP, v, c.client_id, leave_members=members)
        else:
            self.send(c, ApiKey.LEAVE_GROUP, v, c.client_id, member_id=c.member_ref)

    def adversarial(self) -> None:
        r = self.rng
        known = [c for c in self.clients if c.member_ref]
        # realistic: a stranger (a misconfigured or foreign client), never one that uses a live member's
        # id or instance id — requests a log cannot tell apart from that member's own
        victim = r.choice(known) if known and r.random() < 0.8 and not self.realistic else None
        api = r.choice(list(OP_NAMES))
        v = r.choice(list(VERSIONS[api]))
        member = r.choice(["ghost-1", "", victim.member_ref if victim else "ghost-2"])
        gen = r.choice([-1, 0, 1, 2, 7, (victim.generation if victim else 1)])
        pool = ["stranger"] if self.realistic else [r.choice(self.static_pool), "stranger"]
        instance = r.choice([None, None, *pool]) if v >= 3 else None
        client_id = victim.client_id if victim is not None else "intruder"
        if api is ApiKey.JOIN_GROUP:
            fields: dict[str, Any] = {
                "member_id": member,
                "session_timeout_ms": r.choice([1, 5999, 6000, 10_000, 1_800_001, 99_999_999]),
                "protocol_type": r.choice(["consumer", "consumer", "connect", ""]),
                "protocols": r.choice(
                    [[["range", _META["range"]]], [["roundrobin", _META["roundrobin"]]], []]
                ),
            }
            if v >= 1:
                fields["rebalance_timeout_ms"] = r.choice([1, 1000, 300_000])
            if v >= 5:
                fields["group_instance_id"] = instance
        elif api is ApiKey.SYNC_GROUP:
            fields = {"member_id": member, "generation_id": gen, "assignments": []}
            if v >= 3:
                fields["group_instance_id"] = instance
            if v >= 5:
                fields["protocol_type"] = r.choice(["consumer", "connect", None])
                fields["protocol_name"] = r.choice(["range", "roundrobin", None])
        elif api is ApiKey.HEARTBEAT:
            fields = {"member_id": member, "generation_id": gen}
            if v >= 3:
                fields["group_instance_id"] = instance
        elif api is ApiKey.LEAVE_GROUP:
            fields = {"leave_members": [[member, instance, None]]} if v >= 3 else {"member_id": member}
        else:
            fields = {"member_id": member, "generation_id": gen, "commit_partitions": [["t", 0]]}
            if v >= 7:
                fields["group_instance_id"] = instance
        self.send(None, api, v, client_id, **fields)

    def step(self) -> None:
        r = self.rng
        live = [c for c in self.clients if c.phase != "gone"]
        choices: list[tuple[float, Callable[[], None]]] = []
        if len(self.clients) < 7:
            choices.append((1.5 if len(live) < 2 else 0.5, lambda: self.join(self.new_client(), "")))
        for c in live:
            if c.phase == "rejoin":
                choices.append((3.0, partial(self.join, c)))
            elif c.phase == "joined":
                choices.append((3.0, partial(self.sync, c)))
            elif c.phase == "stable":
                choices.append((1.5, partial(self.heartbeat, c)))
                choices.append((0.6, partial(self.commit, c)))
                choices.append((0.15, partial(self.leave, c)))
                choices.append((0.15, partial(self.change_protocols, c)))
                if c.instance_id is not None:
                    choices.append((0.2, partial(self.restart_static, c)))
            elif (
                c.phase in ("waiting", "hung", *(() if self.realistic else ("joining",)))
                and c.member_ref
                and r.random() < 0.3
            ):
                choices.append((0.3, partial(self.heartbeat, c)))
        choices.append((0.4, self.adversarial))
        total = sum(w for w, _ in choices)
        x = r.random() * total
        for w, action in choices:
            x -= w
            if x <= 0:
                action()
                return

    def react(self) -> bool:
        """The Java consumer acts on an answer at once: it re-joins as soon as it is told to (after a
        ``MEMBER_ID_REQUIRED``, a REBALANCE_IN_PROGRESS, …) and sends SyncGroup as soon as its JoinGroup
        is answered — within a few milliseconds, mostly (one in ten waits like a slow member)."""
        urgent = [c for c in self.clients if c.phase in ("rejoin", "joined")]
        if not urgent or self.rng.random() < 0.1:
            return False
        c = self.rng.choice(urgent)
        self.advance(self.heartbeat_until(self.now + self.rng.choice([0, 0, 1, 2, 5, 20])))
        if c.phase == "rejoin":
            self.join(c)
        elif c.phase == "joined":
            self.sync(c)
        return True

    def heartbeat_until(self, until: int) -> int:
        """The Java consumer's heartbeat thread: every member that has joined heartbeats each
        ``heartbeat.interval.ms`` (a third of its session timeout, at most 3 s) up to ``until``; returns
        the time left to advance."""
        while True:
            due = [
                (c.next_heartbeat, k)
                for k, c in enumerate(self.clients)
                if c.phase in _HEARTBEATING and c.member_ref and c.next_heartbeat
            ]
            if not due:
                break
            at, k = min(due)
            if at > until or at > MAX_SPAN_MS:
                break
            self.advance(max(0, at - self.now))
            c = self.clients[k]
            if c.phase in _HEARTBEATING:
                self.heartbeat(c)
            c.next_heartbeat = self.now + min(3000, c.session_ms // 3) if c.phase in _HEARTBEATING else 0
        return max(0, until - self.now)

    def change_protocols(self, c: _Client) -> None:
        c.protocols = self.rng.choice(
            [["roundrobin"], ["range", "roundrobin"], ["cooperative-sticky", "range"], ["range"]]
        )
        c.reason = "protocol change"
        self.join(c)

    def restart_static(self, c: _Client) -> None:
        """A static member's process restarts: a new client joins with the same instance id and no
        member id (the old client is gone without leaving)."""
        c.phase = "gone"
        fresh = self.new_client()
        fresh.instance_id = c.instance_id
        fresh.versions = dict(c.versions)
        self.join(fresh, "")

    def gap(self) -> int:
        r = self.rng
        x = r.random()
        if x < 0.35:
            return 0  # same millisecond: bursts
        if x < 0.7:
            return r.randrange(1, 400)
        if x < 0.9:
            return r.randrange(400, 4000)
        if x < 0.97:
            return r.randrange(4000, 15_000)
        return r.randrange(15_000, 70_000)

    def run(self, steps: int) -> Sequence:
        # realistic sequences stop early enough for every parked request to be answered by the end (a
        # request Kafka still holds when a log ends has no line in it): rebalance timeouts are at most
        # 60 s there, so session expiry + join + sync + another join phase fit in the remaining time
        last = MAX_SPAN_MS - (380_000 if self.realistic else 80_000)
        for _ in range(steps):
            if self.now >= last:
                break
            if self.realistic and self.react():
                continue
            gap = self.gap()
            if self.realistic:
                gap = self.heartbeat_until(self.now + gap)
            self.advance(gap)
            self.step()
        linger = MAX_SPAN_MS if self.realistic else self.now + self.rng.choice([0, 1000, 30_000, 70_000])
        return Sequence(self.seed, self.settings, tuple(self.ops), min(MAX_SPAN_MS, linger))


def generate(
    oracle: KafkaOracle, seed: int, settings: Settings | None = None, realistic: bool = False
) -> Sequence:
    """One sequence, written by seeded clients reacting to the oracle's answers (broker settings drawn
    from the seed unless given). ``realistic`` keeps the clients to what a Java consumer does where the
    default clients are adversarial too: no heartbeat while a JoinGroup is in flight (the Java client's
    heartbeat thread is off then), so no JoinGroup is ever re-sent while the broker holds the first one
    — a request Kafka never answers, which a request log therefore never shows."""
    rng = random.Random(seed)
    return _Generator(oracle, seed, rng, settings, realistic).run(rng.randrange(8, 60))


# =================================================================================================
# Kafka's answers as a broker's request log
# =================================================================================================
def log_records(
    seq: Sequence, answers: dict[int, Answer], bodies: dict[int, dict[str, Any]], group_id: str
) -> list[dict[str, Any]]:
    """The sequence as a Kafka 4.0 broker logs it (``kafka.request.logger``): one bronze-shaped record
    per answered request — request fields with Kafka's own member ids, Kafka's response, arrival and
    completion times — for ``simulator.log_render``. Unanswered requests leave no line."""
    ids = {i: a.member_id for i, a in answers.items() if seq.ops[i].api is ApiKey.JOIN_GROUP and a.member_id}
    clients = list(dict.fromkeys(op.client_id for op in seq.ops))
    ports = {c: 50_000 + k for k, c in enumerate(clients)}
    correlation: dict[str, int] = {}
    out = []
    for i, op in enumerate(seq.ops):
        a = answers.get(i)
        if a is None:
            continue
        req = group_request(
            op, i, {k: v for k, v in ids.items() if answered_at(answers[k]) <= START_MS + op.at_ms}
        )
        arrival = START_MS + op.at_ms
        total = float(answered_at(a) - arrival) + 0.25
        rec: dict[str, Any] = {
            "api_key": int(op.api),
            "api_name": op.api.name,
            "api_version": op.version,
            # per client, as a Kafka client numbers its requests (the log has no global order)
            "correlation_id": correlation.setdefault(op.client_id, 0),
            "client_id": op.client_id,
            "connection": f"127.0.0.1:9092-127.0.0.1:{ports[op.client_id]}-{clients.index(op.client_id)}",
            "security_protocol": "PLAINTEXT",
            "principal": "User:ANONYMOUS",
            "listener": "PLAINTEXT",
            "client_software_name": "apache-kafka-java",
            "client_software_version": "4.0.0",
            "completion_ms": answered_at(a),
            "total_time_ms": round(total, 3),
            "request_queue_time_ms": 0.05,
            "local_time_ms": 0.1,
            "remote_time_ms": round(max(0.0, total - 0.2), 3),
            "throttle_time_ms": 0,
            "response_queue_time_ms": 0.02,
            "send_time_ms": 0.03,
            **request_fields(req, committed_offset=42),
            **map_response_body(op.api, op.version, bodies[i]),
        }
        rec["group_id"] = group_id
        correlation[op.client_id] += 1
        if rec.get("error_name") is None:
            rec["error_name"] = Errors.name_of(int(rec.get("error_code") or 0))
        out.append(rec)
    return out


# =================================================================================================
# Running, shrinking, triage
# =================================================================================================
def diverge(oracle: KafkaOracle, seq: Sequence, kafka_version: str = "4.0") -> list[Divergence]:
    return compare(seq, run_oracle(oracle, seq), run_model(seq, kafka_version))


def shrink(
    oracle: KafkaOracle, seq: Sequence, kind: str, kafka_version: str = "4.0", budget: int = 400
) -> Sequence:
    """A smaller sequence whose first divergence has the same ``kind`` (greedy delta debugging)."""

    def still(s: Sequence) -> bool:
        d = diverge(oracle, s, kafka_version)
        return bool(d) and d[0].detail == kind

    tries = 0
    chunk = max(1, len(seq.ops) // 2)
    while chunk >= 1 and tries < budget:
        i = 0
        shrunk = False
        while i < len(seq.ops) and tries < budget:
            cand = seq.without(set(range(i, min(i + chunk, len(seq.ops)))))
            tries += 1
            if cand.ops and still(cand):
                seq = cand
                shrunk = True
            else:
                i += chunk
        if not shrunk:
            chunk //= 2
    return seq


@dataclass
class Triage:
    sequences: int = 0
    ops: int = 0
    diverging: int = 0
    counts: Counter[str] = field(default_factory=Counter)  # first divergence kind → sequences
    examples: dict[str, Sequence] = field(default_factory=dict)
    responses: Counter[str] = field(default_factory=Counter)  # every diverging response, by kind

    def table(self) -> str:
        lines = [
            f"{self.sequences} sequences, {self.ops} requests: {self.diverging} sequences diverge",
            "",
            "| first divergence | sequences | diverging responses | minimal example (ops) |",
            "|---|---|---|---|",
        ]
        for kind, n in self.counts.most_common():
            ex = self.examples.get(kind)
            lines.append(f"| {kind} | {n} | {self.responses[kind]} | {len(ex.ops) if ex else '-'} |")
        return "\n".join(lines)


def triage(
    oracle: KafkaOracle,
    seeds: Iterable[int],
    kafka_version: str = "4.0",
    shrink_examples: bool = True,
    on_sequence: Callable[[Sequence, list[Divergence]], None] | None = None,
) -> Triage:
    out = Triage()
    for seed in seeds:
        seq = generate(oracle, seed)
        ds = diverge(oracle, seq, kafka_version)
        out.sequences += 1
        out.ops += len(seq.ops)
        if on_sequence is not None:
            on_sequence(seq, ds)
        if not ds:
            continue
        out.diverging += 1
        kind = ds[0].detail
        out.counts[kind] += 1
        for d in ds:
            out.responses[d.detail] += 1
        if kind not in out.examples or len(seq.ops) < len(out.examples[kind].ops):
            out.examples[kind] = seq
    if shrink_examples:
        out.examples = {k: shrink(oracle, s, k, kafka_version) for k, s in out.examples.items()}
    return out


def explain(oracle: KafkaOracle, seq: Sequence, kafka_version: str = "4.0") -> Iterator[str]:
    """The sequence op by op with both sides' answers (for a person reading a minimal example)."""
    kafka, model = run_oracle(oracle, seq), run_model(seq, kafka_version)
    bad = {d.index: d for d in compare(seq, kafka, model)}
    yield json.dumps({"seed": seq.seed, "settings": seq.settings.__dict__, "end": seq.end_ms})
    for i, op in enumerate(seq.ops):
        mark = f"  <-- {bad[i].kind}: kafka={bad[i].kafka!r} model={bad[i].model!r}" if i in bad else ""
        yield f"[{i}] {json.dumps(op.to_json())}{mark}"
        for side, ans in (("kafka", kafka.get(i)), ("model", model.get(i))):
            yield f"      {side}: {_brief(ans)}"


def _brief(a: Answer | None) -> str:
    if a is None:
        return "(no answer)"
    parts = [f"t={answered_at(a) - START_MS}", a.error]
    for k in (
        "generation_id",
        "leader",
        "member_id",
        "protocol_name",
        "members",
        "member_errors",
        "partition_errors",
    ):
        v = getattr(a, k)
        if v not in (None, "", ()):
            parts.append(f"{k}={v}")
    return " ".join(parts)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m simulator.differential", description=__doc__.split("\n\n")[0])
    p.add_argument("--sequences", type=int, default=200)
    p.add_argument("--seed", type=int, default=0, help="first seed")
    p.add_argument(
        "--kafka-version",
        default="4.0",
        help="the model's Kafka version (the oracle is 4.0); 3.7:java = 3.7 with the Java coordinator",
    )
    p.add_argument("--no-shrink", action="store_true")
    p.add_argument("--explain", action="store_true", help="print each minimal example op by op")
    args = p.parse_args(argv)
    version, _, implementation = args.kafka_version.partition(":")
    try:
        Settings().model_config(version, implementation or None)
    except ValueError as exc:
        p.error(f"--kafka-version {args.kafka_version}: {exc}")
    try:
        oracle = KafkaOracle()
    except OracleUnavailable as exc:
        print(f"differential: {exc}", file=sys.stderr)
        return 2
    with oracle:
        t = triage(
            oracle, range(args.seed, args.seed + args.sequences), args.kafka_version, not args.no_shrink
        )
        print(t.table())
        if args.explain:
            for kind, seq in t.examples.items():
                print(f"\n## {kind}")
                for line in explain(oracle, seq, args.kafka_version):
                    print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
