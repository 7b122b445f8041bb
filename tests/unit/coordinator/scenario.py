"""A small DSL for coordinator scenarios: timed requests, what the coordinator must answer to each,
and the group at the end. Reused by the table-driven tests (and meant to be rendered into request-log
lines by the log-synthesis tests).

Members are named by **aliases** ("a", "b", ...). Kafka generates member ids, so a JoinGroup step
binds its alias to the member id the model answers with (MEMBER_ID_REQUIRED or the join response);
later steps use the alias and it is resolved to the bound id (an unbound alias is used literally).

    case = Case(
        "testJoinGroupUnknownMemberNewGroup",  # the Kafka test it mirrors
        steps=[
            J(0, alias="a", v=5, expect=E(error="MEMBER_ID_REQUIRED")),
            J(1, member="a", v=5, expect=E(error="NONE", gen=1, leader="a", completion=3001)),
        ],
        end=End(state="CompletingRebalance", generation=1, members={"a"}, leader="a"),
    )
    run_case(case)  # raises ScenarioFailure naming the step that disagreed
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import MISSING, dataclass, field, replace
from typing import Any

from rebalance_replay.transforms.coordinator.config import CoordinatorConfig
from rebalance_replay.transforms.coordinator.model import GroupCoordinatorModel
from rebalance_replay.transforms.coordinator.types import (
    EventKind,
    GroupRequest,
    LeaveMember,
    ModelEvent,
    ObservedResponse,
    Prediction,
    Protocol,
)
from rebalance_replay.transforms.kafka_protocol import ApiKey

GROUP = "group"
UNKNOWN = ""
_UNSET: Any = object()


class ScenarioFailure(AssertionError):
    """A scenario step (or the end state) disagreed with the model."""


# ------------------------------------------------------------------------------------------------
# expectations
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class E:
    """Expected answer to a request. Unset fields are not checked; aliases are resolved.

    ``completion``: model time of the answer (None: never answered). ``members``: the leader's member
    list as a set of aliases/ids. ``member_errors``: LeaveGroup v3+ errors as ``{alias: ERROR}``.
    ``unanswered=True``: superseded / never answered by the coordinator.
    """

    error: str | None = None
    gen: int | None = None
    leader: str | None = None
    member: str | None = None
    members: frozenset[str] | set[str] | None = None
    completion: int | Any | None = _UNSET
    skip: bool | None = None
    protocol: str | None = None
    assignment: bytes | Any | None = _UNSET
    member_errors: dict[str, str] | None = None
    unanswered: bool = False
    scored: bool | None = None
    reconciled: bool | None = None


@dataclass(frozen=True)
class End:
    """Expected group at the end (after ``Case.until`` if given)."""

    state: str | None = None
    generation: int | None = None
    members: set[str] | frozenset[str] | None = None
    leader: str | Any | None = _UNSET
    pending: set[str] | frozenset[str] | None = None
    protocol: str | Any | None = _UNSET
    static: dict[str, str] | None = None  # instance id -> alias
    exists: bool | None = None


# ------------------------------------------------------------------------------------------------
# steps
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Step:
    at: int
    expect: E | None = None
    observed: ObservedResponse | None = None
    client: str = "client"
    v: int = -1

    def request(self, ids: dict[str, str]) -> GroupRequest:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def alias(self) -> str | None:
        return None


def _resolve(ids: dict[str, str], name: str | None) -> str | None:
    if name is None:
        return None
    return ids.get(name, name)


def protocols(*names: str, metadata: bytes = b"m") -> tuple[Protocol, ...]:
    return tuple(Protocol(name=n, metadata=metadata) for n in names)


@dataclass(frozen=True, init=False)
class J(Step):
    """JoinGroup. ``member`` defaults to UNKNOWN (""); ``alias`` names the member id it gets."""

    member: str = UNKNOWN
    alias_: str | None = None
    instance: str | None = None
    session: int = 10_000
    rebalance: int = 60_000
    protos: tuple[str, ...] = ("range",)
    metadata: bytes = b"m"
    protocol_type: str = "consumer"
    reason: str | None = None
    group: str = GROUP

    def __init__(self, at: int, member: str = UNKNOWN, *, alias: str | None = None, **kw: Any) -> None:
        _init(
            self,
            J,
            at,
            kw,
            member=member,
            alias_=alias if alias is not None else (member or None),
            v=kw.pop("v", 5),
        )

    @property
    def alias(self) -> str | None:
        return self.alias_

    def request(self, ids: dict[str, str]) -> GroupRequest:
        return GroupRequest(
            api=ApiKey.JOIN_GROUP,
            api_version=self.v,
            group_id=self.group,
            arrival_ms=self.at,
            member_id=_resolve(ids, self.member),
            group_instance_id=self.instance,
            client_id=self.client,
            client_host="/127.0.0.1",
            session_timeout_ms=self.session,
            rebalance_timeout_ms=self.rebalance,
            protocol_type=self.protocol_type,
            protocols=protocols(*self.protos, metadata=self.metadata),
            reason=self.reason,
            observed=self.observed,
        )


@dataclass(frozen=True, init=False)
class S(Step):
    """SyncGroup. ``assignments``: ``{alias: bytes}`` (leader)."""

    member: str = ""
    gen: int = 1
    instance: str | None = None
    assignments: dict[str, bytes] | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    group: str = GROUP

    def __init__(self, at: int, member: str, gen: int = 1, **kw: Any) -> None:
        _init(self, S, at, kw, member=member, gen=gen, v=kw.pop("v", 3))

    def request(self, ids: dict[str, str]) -> GroupRequest:
        return GroupRequest(
            api=ApiKey.SYNC_GROUP,
            api_version=self.v,
            group_id=self.group,
            arrival_ms=self.at,
            member_id=_resolve(ids, self.member),
            group_instance_id=self.instance,
            client_id=self.client,
            generation_id=self.gen,
            protocol_type=self.protocol_type,
            protocol_name=self.protocol_name,
            assignments=tuple((_resolve(ids, k) or k, v) for k, v in (self.assignments or {}).items()),
            observed=self.observed,
        )


@dataclass(frozen=True, init=False)
class H(Step):
    """Heartbeat."""

    member: str = ""
    gen: int = 1
    instance: str | None = None
    group: str = GROUP

    def __init__(self, at: int, member: str, gen: int = 1, **kw: Any) -> None:
        _init(self, H, at, kw, member=member, gen=gen, v=kw.pop("v", 3))

    def request(self, ids: dict[str, str]) -> GroupRequest:
        return GroupRequest(
            api=ApiKey.HEARTBEAT,
            api_version=self.v,
            group_id=self.group,
            arrival_ms=self.at,
            member_id=_resolve(ids, self.member),
            group_instance_id=self.instance,
            client_id=self.client,
            generation_id=self.gen,
            observed=self.observed,
        )


@dataclass(frozen=True, init=False)
class L(Step):
    """LeaveGroup. ``members``: aliases, or ``(alias, instance_id)`` pairs (v3+ batch)."""

    members: tuple[Any, ...] = ()
    reason: str | None = None
    group: str = GROUP

    def __init__(self, at: int, *members: Any, **kw: Any) -> None:
        _init(self, L, at, kw, members=tuple(members), v=kw.pop("v", 3))

    def request(self, ids: dict[str, str]) -> GroupRequest:
        leave = []
        for m in self.members:
            mid, inst = (m, None) if isinstance(m, str) else m
            leave.append(
                LeaveMember(member_id=_resolve(ids, mid) or "", group_instance_id=inst, reason=self.reason)
            )
        return GroupRequest(
            api=ApiKey.LEAVE_GROUP,
            api_version=self.v,
            group_id=self.group,
            arrival_ms=self.at,
            member_id=leave[0].member_id if (leave and self.v < 3) else None,
            client_id=self.client,
            leave_members=tuple(leave),
            reason=self.reason,
            observed=self.observed,
        )


@dataclass(frozen=True, init=False)
class C(Step):
    """OffsetCommit of one partition ``topic-0``."""

    member: str = ""
    gen: int = 1
    instance: str | None = None
    group: str = GROUP

    def __init__(self, at: int, member: str, gen: int = 1, **kw: Any) -> None:
        _init(self, C, at, kw, member=member, gen=gen, v=kw.pop("v", 7))

    def request(self, ids: dict[str, str]) -> GroupRequest:
        return GroupRequest(
            api=ApiKey.OFFSET_COMMIT,
            api_version=self.v,
            group_id=self.group,
            arrival_ms=self.at,
            member_id=_resolve(ids, self.member),
            group_instance_id=self.instance,
            client_id=self.client,
            generation_id=self.gen,
            commit_partitions=(("topic", 0),),
            observed=self.observed,
        )


@dataclass(frozen=True, init=False)
class Advance(Step):
    """Let time pass (fires due timers) without a request."""

    def __init__(self, at: int) -> None:
        _init(self, Advance, at, {})

    def request(self, ids: dict[str, str]) -> GroupRequest:
        raise TypeError("Advance has no request")


@dataclass(frozen=True, init=False)
class Unload(Step):
    """The coordinator resigns the group's offsets partition (§16): parked requests are answered
    NOT_COORDINATOR and the group is Dead until :class:`Load`."""

    def __init__(self, at: int) -> None:
        _init(self, Unload, at, {})

    def request(self, ids: dict[str, str]) -> GroupRequest:
        raise TypeError("Unload has no request")


@dataclass(frozen=True, init=False)
class Load(Step):
    """The coordinator loads the group from its last persisted metadata (§16)."""

    def __init__(self, at: int) -> None:
        _init(self, Load, at, {})

    def request(self, ids: dict[str, str]) -> GroupRequest:
        raise TypeError("Load has no request")


def _init(obj: Any, cls: type[Any], at: int, kw: dict[str, Any], **fixed: Any) -> None:
    values: dict[str, Any] = {}
    for f in cls.__dataclass_fields__.values():
        if f.default is not MISSING:
            values[f.name] = f.default
    values.update(fixed)
    unknown = set(kw) - set(values) - {"expect", "observed", "client", "v"}
    if unknown:
        raise TypeError(f"{cls.__name__} has no field(s) {sorted(unknown)}")
    values.update(kw)
    values["at"] = at
    for k, val in values.items():
        object.__setattr__(obj, k, val)


# ------------------------------------------------------------------------------------------------
# cases
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    """One scenario. ``mirrors``: the Kafka unit test(s) it ports (GroupCoordinatorTest.scala /
    GroupMetadataManagerTest.java). ``until``: advance the clock to this time before checking ``end``."""

    mirrors: str
    steps: Sequence[Step]
    end: End | None = None
    config: CoordinatorConfig = field(
        default_factory=lambda: CoordinatorConfig(warm_start=False, mode="predict")
    )
    until: int | None = None
    name: str = ""
    events: Sequence[tuple[str, str]] = ()  # (EventKind value, substring of cause/detail) that must occur

    @property
    def id(self) -> str:
        return self.name or self.mirrors

    def with_config(self, **kw: Any) -> Case:
        return replace(self, config=replace(self.config, **kw))


@dataclass
class ScenarioResult:
    model: GroupCoordinatorModel
    ids: dict[str, str]
    predictions: dict[int, Prediction]
    events: list[ModelEvent]
    requests: list[GroupRequest]


def default_config(**kw: Any) -> CoordinatorConfig:
    base: dict[str, Any] = {"warm_start": False, "mode": "predict"}
    base.update(kw)
    return CoordinatorConfig(**base)


def run_case(case: Case, *, check: bool = True) -> ScenarioResult:
    model = GroupCoordinatorModel(GROUP, case.config)
    ids: dict[str, str] = {}
    preds: dict[int, Prediction] = {}
    events: list[ModelEvent] = []
    requests: list[GroupRequest] = []
    step_of_seq: dict[int, Step] = {}

    def collect() -> None:
        p, e = model.drain()
        events.extend(e)
        for pred in p:
            if pred.seq in preds:
                raise ScenarioFailure(f"{case.id}: request #{pred.seq} got two predictions")
            preds[pred.seq] = pred
            step = step_of_seq[pred.seq]
            alias = step.alias
            mid = pred.response.member_id
            if isinstance(step, J) and alias and mid and alias not in ids and alias != mid:
                ids[alias] = mid

    seq = 0
    for step in case.steps:
        if isinstance(step, Advance):
            model.advance_to(step.at)
            collect()
            continue
        if isinstance(step, Unload):
            model.unload(step.at)
            collect()
            continue
        if isinstance(step, Load):
            model.load(step.at)
            collect()
            continue
        # let due timers answer parked joins first, so aliases are bound before the request is built
        model.advance_to(step.at)
        collect()
        req = step.request(ids)
        requests.append(req)
        step_of_seq[seq] = step
        seq += 1
        model.handle(req)
        collect()
    if case.until is not None:
        model.advance_to(case.until)
        collect()
    result = ScenarioResult(model, ids, preds, events, requests)
    if check:
        check_case(case, result)
    return result


def _ids(ids: dict[str, str], names: Iterable[str]) -> set[str]:
    return {ids.get(n, n) for n in names}


def check_case(case: Case, result: ScenarioResult) -> None:
    ids = result.ids
    seq = 0
    for step in case.steps:
        if isinstance(step, Advance | Unload | Load):
            continue
        this = seq
        seq += 1
        exp = step.expect
        if exp is None:
            continue
        pred = result.predictions.get(this)
        where = f"{case.id}: step #{this} ({type(step).__name__} at {step.at})"
        if exp.completion is None or exp.unanswered:
            if pred is not None and pred.response.completion_ms is not None:
                raise ScenarioFailure(f"{where}: expected no answer, got {pred.response}")
            if exp.unanswered and pred is None:
                raise ScenarioFailure(f"{where}: expected a superseded/unanswered Prediction, got none yet")
            if exp.unanswered or pred is None:
                continue
        if pred is None:
            raise ScenarioFailure(f"{where}: still parked (no answer yet), expected {exp}")
        r = pred.response
        checks: list[tuple[str, Any, Any]] = []
        if exp.error is not None:
            checks.append(("error", exp.error, r.error))
        if exp.gen is not None:
            checks.append(("generation", exp.gen, r.generation_id))
        if exp.leader is not None:
            checks.append(("leader", ids.get(exp.leader, exp.leader), r.leader))
        if exp.member is not None:
            checks.append(("member_id", ids.get(exp.member, exp.member), r.member_id))
        if exp.members is not None:
            checks.append(("members", _ids(ids, exp.members), set(r.members or ())))
        if exp.completion is not _UNSET:
            checks.append(("completion_ms", exp.completion, r.completion_ms))
        if exp.skip is not None:
            checks.append(("skip_assignment", exp.skip, r.skip_assignment))
        if exp.protocol is not None:
            checks.append(("protocol_name", exp.protocol, r.protocol_name))
        if exp.assignment is not _UNSET:
            checks.append(("assignment", exp.assignment, r.assignment))
        if exp.member_errors is not None:
            want = {ids.get(k, k): v for k, v in exp.member_errors.items()}
            checks.append(("member_errors", want, dict(r.member_errors or ())))
        if exp.scored is not None:
            checks.append(("scored", exp.scored, pred.scored))
        if exp.reconciled is not None:
            checks.append(("reconciled", exp.reconciled, pred.reconciled))
        bad = [f"{name}: expected {want!r}, got {got!r}" for name, want, got in checks if want != got]
        if bad:
            raise ScenarioFailure(f"{where}: " + "; ".join(bad) + f"\n  response={r}")
    end = case.end
    model = result.model
    if end is not None:
        g = model.group
        where = f"{case.id}: end"
        if end.exists is not None and (g is not None) != end.exists:
            raise ScenarioFailure(f"{where}: group exists={g is not None}, expected {end.exists}")
        if g is None:
            if end.state is not None or end.members:
                raise ScenarioFailure(f"{where}: the group does not exist")
        else:
            checks2: list[tuple[str, Any, Any]] = []
            if end.state is not None:
                checks2.append(("state", end.state, g.state.value))
            if end.generation is not None:
                checks2.append(("generation", end.generation, g.generation_id))
            if end.members is not None:
                checks2.append(("members", _ids(ids, end.members), set(g.members)))
            if end.leader is not _UNSET:
                checks2.append(
                    ("leader", None if end.leader is None else ids.get(end.leader, end.leader), g.leader_id)
                )
            if end.pending is not None:
                checks2.append(("pending", _ids(ids, end.pending), set(g.pending_members)))
            if end.protocol is not _UNSET:
                checks2.append(("protocol", end.protocol, g.protocol_name))
            if end.static is not None:
                checks2.append(
                    ("static", {k: ids.get(v, v) for k, v in end.static.items()}, dict(g.static_members))
                )
            bad = [f"{name}: expected {want!r}, got {got!r}" for name, want, got in checks2 if want != got]
            if bad:
                raise ScenarioFailure(f"{where}: " + "; ".join(bad))
    for kind, text in case.events:
        if not any(
            e.kind == EventKind(kind) and (text in (e.cause or "") or text in (e.detail or ""))
            for e in result.events
        ):
            raise ScenarioFailure(f"{case.id}: no {kind} event mentioning {text!r}")
