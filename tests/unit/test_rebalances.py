"""Rebalance reconstruction (rebalance_replay.transforms.rebalances): hand-written model output for every
trigger, outcome and
session ending, the cooperative follow-up rule, partition movement, and chunking/serialisation invariance."""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Sequence
from typing import Any

import pytest

from rebalance_replay.schemas.tables import MEMBER_SESSIONS, REBALANCES, TRANSITIONS
from rebalance_replay.transforms.consumer_protocol import encode_assignment
from rebalance_replay.transforms.coordinator import config as config_mod
from rebalance_replay.transforms.coordinator import model as engine
from rebalance_replay.transforms.coordinator.causes import shown_client_reason, trigger_of_text
from rebalance_replay.transforms.coordinator.types import (
    EventKind,
    GroupRequest,
    GroupState,
    ModelEvent,
    PredictedResponse,
    Prediction,
    Protocol,
    RemovalReason,
    Trigger,
)
from rebalance_replay.transforms.kafka_protocol import ApiKey, Errors
from rebalance_replay.transforms.rebalances import RebalanceTracker, TrackerOutput, classify_cause

GROUP = "orders"
T0 = 1_700_000_000_000  # 2023-11-14T22:13:20Z
FILE = "broker-1/kafka-request.log"

EMPTY = GroupState.EMPTY
PR = GroupState.PREPARING_REBALANCE
CR = GroupState.COMPLETING_REBALANCE
STABLE = GroupState.STABLE
DEAD = GroupState.DEAD

Step = tuple[list[Prediction], list[ModelEvent]]


def enc(*tps: tuple[str, Sequence[int]]) -> bytes:
    return encode_assignment([(t, list(ps)) for t, ps in tps])


class Sim:
    """Writes the events and predictions the coordinator model would emit, one model step (= one ``seq``)
    at a time, keeping state, generation and parked JoinGroups so scenarios read like a log."""

    def __init__(self, group: str = GROUP, t0: int = T0) -> None:
        self.group = group
        self.t = t0
        self.seq = -1
        self.gen = 0
        self.state = EMPTY
        self.leader: str | None = None
        self.members: list[str] = []
        self.parked: dict[str, GroupRequest] = {}
        self.parked_seq: dict[str, int] = {}
        self.steps: list[Step] = []

    # -- plumbing -------------------------------------------------------------------------------
    def step(self, dt_ms: int = 100) -> Sim:
        self.seq += 1
        self.t += dt_ms
        self.steps.append(([], []))
        return self

    def ev(self, kind: EventKind, *, timer: bool = False, **kw: Any) -> None:
        ref = None if timer else (FILE, self.seq + 1)
        self.steps[-1][1].append(
            ModelEvent(
                seq=self.seq,
                time_ms=self.t,
                kind=kind,
                generation_id=self.gen,
                state=self.state,
                ref=ref,
                **kw,
            )
        )

    def transition(
        self,
        to: GroupState,
        cause: str | None,
        member: str | None = None,
        timer: bool = False,
        client_reason: str | None = None,
    ) -> None:
        frm = self.state
        self.state = to
        if frm == PR and to in (CR, EMPTY):
            self.gen += 1
        # the model's transitions carry the typed trigger its reason text is written from, and the
        # client's reason the text shows (``client_reason``)
        trigger = trigger_of_text(cause)
        self.ev(
            EventKind.TRANSITION,
            timer=timer,
            from_state=frm,
            member_id=member,
            cause=cause,
            trigger=trigger,
            client_reason=client_reason,
        )

    def predict(self, seq: int, req: GroupRequest, error: str = "NONE", **resp: Any) -> None:
        self.steps[-1][0].append(
            Prediction(
                seq=seq,
                request=req,
                response=PredictedResponse(error=error, completion_ms=self.t, **resp),
                state_before=self.state,
                generation_before=self.gen,
                state_after=self.state,
                generation_after=self.gen,
            )
        )

    def join_request(
        self,
        member: str,
        protocols: Sequence[str],
        instance: str | None,
        reason: str | None,
        sto: int,
        rto: int,
    ) -> GroupRequest:
        return GroupRequest(
            api=ApiKey.JOIN_GROUP,
            api_version=9,
            group_id=self.group,
            arrival_ms=self.t,
            member_id=member,
            group_instance_id=instance,
            client_id=f"client-{member}",
            client_host=f"10.0.0.{len(member)}",
            session_timeout_ms=sto,
            rebalance_timeout_ms=rto,
            protocol_type="consumer",
            protocols=tuple(Protocol(p) for p in protocols),
            reason=reason,
            ref=(FILE, self.seq + 1),
        )

    def _park(self, req: GroupRequest) -> None:
        assert req.member_id is not None
        self.parked[req.member_id] = req
        self.parked_seq[req.member_id] = self.seq

    # -- requests and timers --------------------------------------------------------------------
    def join(
        self,
        member: str,
        *,
        protocols: Sequence[str] = ("range",),
        instance: str | None = None,
        reason: str | None = None,
        sto: int = 45_000,
        rto: int = 300_000,
    ) -> Sim:
        """A new member's JoinGroup (the second one of KIP-394, or a static member's first)."""
        self._park(self.join_request(member, protocols, instance, reason, sto, rto))
        self.members.append(member)
        if self.leader is None:
            self.leader = member
        self.ev(EventKind.MEMBER_ADDED, member_id=member, group_instance_id=instance, client_reason=reason)
        if self.state in (EMPTY, STABLE, CR):
            inst = "None" if instance is None else f"Some({instance})"
            self.transition(
                PR,
                f"Adding new member {member} with group instance id {inst}; client reason: "
                f"{reason or 'not provided'}",
                member,
                client_reason=shown_client_reason(reason),
            )
        return self

    def rejoin(
        self,
        member: str,
        *,
        protocols: Sequence[str] = ("range",),
        reason: str | None = None,
        changed: bool = True,
        cause: str | None = None,
        sto: int = 45_000,
        rto: int = 300_000,
    ) -> Sim:
        """An existing member's JoinGroup."""
        self._park(self.join_request(member, protocols, None, reason, sto, rto))
        if changed:
            self.ev(EventKind.MEMBER_UPDATED, member_id=member, client_reason=reason)
        if self.state in (STABLE, CR):
            shown = None  # an explicit cause is an old version's wording: no client reason
            if cause is None:
                who = (
                    f"Leader {member} re-joining group"
                    if member == self.leader and self.state == STABLE
                    else f"Updating metadata for member {member}"
                )
                cause = f"{who} during {self.state.value}; client reason: {reason or 'not provided'}"
                shown = shown_client_reason(reason)
            self.transition(PR, cause, member, client_reason=shown)
        return self

    def complete(self, leader: str | None = None, protocol: str = "range", *, implicit: bool = False) -> Sim:
        """The join phase completes (members that did not rejoin are dropped first)."""
        for m in [m for m in self.members if m not in self.parked]:
            self.members.remove(m)
            if not implicit:
                self.ev(
                    EventKind.MEMBER_REMOVED,
                    timer=True,
                    member_id=m,
                    removal_reason=RemovalReason.REBALANCE_TIMEOUT_EVICTION,
                    cause=f"Group {self.group} removed dynamic members who haven't joined: Set({m})",
                )
        self.leader = leader or (self.leader if self.leader in self.members else self.members[0])
        self.transition(CR, None, timer=True)
        self.ev(
            EventKind.JOIN_COMPLETED,
            timer=True,
            members=tuple(self.members),
            leader=self.leader,
            protocol_name=protocol,
            protocol_type="consumer",
        )
        for m, req in self.parked.items():
            self.predict(
                self.parked_seq[m],
                req,
                generation_id=self.gen,
                leader=self.leader,
                member_id=m,
                protocol_name=protocol,
            )
        self.parked.clear()
        self.parked_seq.clear()
        return self

    def sync(self, assignments: dict[str, bytes | None]) -> Sim:
        """The leader's SyncGroup: the assignment is stored, the group is Stable."""
        assert self.leader is not None
        self.transition(STABLE, None, self.leader)
        self.ev(
            EventKind.SYNC_COMPLETED,
            members=tuple(self.members),
            assignments=tuple(assignments.items()),
        )
        req = GroupRequest(
            api=ApiKey.SYNC_GROUP,
            api_version=5,
            group_id=self.group,
            arrival_ms=self.t,
            member_id=self.leader,
            generation_id=self.gen,
            assignments=tuple(assignments.items()),
        )
        self.predict(self.seq, req, assignment=assignments.get(self.leader))
        return self

    def heartbeat(self, member: str) -> Sim:
        self.ev(EventKind.HEARTBEAT, member_id=member)
        req = GroupRequest(ApiKey.HEARTBEAT, 4, self.group, self.t, member_id=member, generation_id=self.gen)
        self.predict(self.seq, req)
        return self

    def commit(self, member: str) -> Sim:
        self.ev(EventKind.OFFSET_COMMIT, member_id=member)
        req = GroupRequest(
            ApiKey.OFFSET_COMMIT, 8, self.group, self.t, member_id=member, generation_id=self.gen
        )
        self.predict(self.seq, req)
        return self

    def _removed(self, member: str) -> None:
        self.members.remove(member)
        if member in self.parked:
            req = self.parked.pop(member)
            self.predict(self.parked_seq.pop(member), req, error="UNKNOWN_MEMBER_ID", member_id="")
        if self.leader == member:
            self.leader = self.members[0] if self.members else None
            self.ev(EventKind.LEADER_CHANGED, leader=self.leader)

    def leave(self, member: str, reason: str | None = "the consumer is being closed") -> Sim:
        self.ev(
            EventKind.MEMBER_REMOVED,
            member_id=member,
            removal_reason=RemovalReason.LEFT,
            client_reason=reason,
        )
        self._removed(member)
        if self.state in (STABLE, CR):
            self.transition(
                PR,
                f"Removing member {member} on LeaveGroup; client reason: {reason or 'not provided'}",
                member,
                client_reason=shown_client_reason(reason),
            )
        self._maybe_empty()
        return self

    def expire(self, member: str) -> Sim:
        self.ev(
            EventKind.TIMER_EXPIRED, timer=True, member_id=member, detail=f"heartbeat-{self.group}-{member}"
        )
        self.ev(
            EventKind.MEMBER_REMOVED,
            timer=True,
            member_id=member,
            removal_reason=RemovalReason.SESSION_EXPIRY,
            cause=f"removing member {member} on heartbeat expiration",
        )
        self._removed(member)
        if self.state in (STABLE, CR):
            self.transition(PR, f"removing member {member} on heartbeat expiration", member, timer=True)
        self._maybe_empty()
        return self

    def pending_sync_expire(self, unsynced: Sequence[str]) -> Sim:
        self.ev(EventKind.TIMER_EXPIRED, timer=True, detail=f"sync-{self.group}")
        for m in unsynced:
            self.ev(
                EventKind.MEMBER_REMOVED,
                timer=True,
                member_id=m,
                removal_reason=RemovalReason.PENDING_SYNC_EXPIRY,
            )
            self._removed(m)
        self.transition(
            PR, f"Removing Set({', '.join(unsynced)}) on pending sync request expiration", timer=True
        )
        self._maybe_empty()
        return self

    def _maybe_empty(self) -> None:
        if self.state == PR and not self.members:
            self.transition(EMPTY, None, timer=True)
            self.ev(EventKind.JOIN_COMPLETED, timer=True, members=(), protocol_type="consumer")

    def static_replace(self, old: str, new: str, instance: str) -> Sim:
        self._park(self.join_request(new, ("range",), instance, None, 45_000, 300_000))
        self.members[self.members.index(old)] = new
        self.parked.pop(old, None)
        self.ev(EventKind.STATIC_MEMBER_REPLACED, member_id=new, detail=old, group_instance_id=instance)
        if self.leader == old:
            self.leader = new
            self.ev(EventKind.LEADER_CHANGED, leader=new)
        if self.state == CR:
            self.transition(
                PR, f"Updating metadata for static member {new} with instance id Some({instance})", new
            )
        return self

    def external_error(self, error: str = "NOT_COORDINATOR") -> Sim:
        self.ev(EventKind.EXTERNAL_ERROR, detail=error, error=Errors[error])
        return self


# --------------------------------------------------------------------------------------------------
# running
# --------------------------------------------------------------------------------------------------


def tracker() -> RebalanceTracker:
    return RebalanceTracker(GROUP)


def run(
    steps: Sequence[Step],
    chunks: Sequence[int] | None = None,
    *,
    serialise: bool = False,
    make: Any = tracker,
) -> TrackerOutput:
    """Feed ``steps`` in chunks of the given sizes (default: one step per consume), draining after each
    chunk (and round-tripping the state through bytes if asked), then flush what is still open."""
    t: RebalanceTracker = make()
    out = TrackerOutput()
    sizes = list(chunks) if chunks is not None else [1] * len(steps)
    i = 0
    for n in sizes:
        part = steps[i : i + n]
        i += n
        t.consume([p for s in part for p in s[0]], [e for s in part for e in s[1]])
        out.extend(t.drain())
        if serialise:
            data = t.to_bytes()
            t = RebalanceTracker.from_bytes(data)
            assert t.to_bytes() == data
    assert i == len(steps)
    out.extend(t.flush_open())
    return out


def only(rows: list[dict[str, Any]], **match: Any) -> dict[str, Any]:
    found = [r for r in rows if all(r[k] == v for k, v in match.items())]
    assert len(found) == 1, (match, rows)
    return found[0]


def stable_group(*members: str, protocol: str = "range") -> Sim:
    """Empty → members join → Stable (generation 1), assignments t:0-5 split in order."""
    s = Sim()
    for i, m in enumerate(members):
        s.step(100 if i else 0).join(m, protocols=(protocol,))
    s.step(3000).complete(members[0], protocol)
    s.step(50).sync(split_assignment(members))
    return s


def split_assignment(members: Sequence[str], partitions: int = 6) -> dict[str, bytes | None]:
    out: dict[str, list[int]] = {m: [] for m in members}
    for p in range(partitions):
        out[members[p % len(members)]].append(p)
    return {m: enc(("t", ps)) for m, ps in out.items()}


# --------------------------------------------------------------------------------------------------
# schema
# --------------------------------------------------------------------------------------------------

_PY_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "int": (int,),
    "bigint": (int,),
    "boolean": (bool,),
    "date": (dt.date,),
    "array<string>": (list,),
}


def check_schema(out: TrackerOutput) -> None:
    for table, rows in (
        (TRANSITIONS, out.transitions),
        (REBALANCES, out.rebalances),
        (MEMBER_SESSIONS, out.member_sessions),
    ):
        for row in rows:
            assert list(row) == table.column_names, table.name
            for c in table.columns:
                v = row[c.name]
                if v is None:
                    assert c.nullable, (table.name, c.name)
                    continue
                assert isinstance(v, _PY_TYPES[c.type]), (table.name, c.name, v)
                if c.type in ("int", "bigint"):
                    assert not isinstance(v, bool), (table.name, c.name)
                if c.type == "array<string>":
                    assert all(isinstance(x, str) for x in v) and v == sorted(v), (table.name, c.name, v)


# --------------------------------------------------------------------------------------------------
# tests: rebalances by trigger
# --------------------------------------------------------------------------------------------------


def test_group_created_then_stable_full_row() -> None:
    s = stable_group("a", "b")
    s.step(1000).heartbeat("b")
    out = run(s.steps)
    check_schema(out)
    assert [(r["from_state"], r["to_state"], r["generation_id"]) for r in out.transitions] == [
        ("Empty", "PreparingRebalance", 0),
        ("PreparingRebalance", "CompletingRebalance", 1),
        ("CompletingRebalance", "Stable", 1),
    ]
    first = out.transitions[0]
    assert first["cause"] == "Adding new member a with group instance id None; client reason: not provided"
    assert (first["member_id"], first["source_file"], first["line_no"], first["seq"]) == ("a", FILE, 1, 0)
    assert out.transitions[1]["source_file"] is None and out.transitions[1]["cause"] == "join phase completed"
    assert first["log_date"] == dt.date(2023, 11, 14)

    (r,) = out.rebalances
    assert r == {
        "group_id": GROUP,
        "rebalance_seq": 1,
        "generation_from": 0,
        "generation_to": 1,
        "started_ms": T0,
        "join_completed_ms": T0 + 3100,
        "stable_ms": T0 + 3150,
        "ended_ms": T0 + 3150,
        "outcome": "stable",
        "total_duration_ms": 3150,
        "join_phase_ms": 3100,
        "sync_phase_ms": 50,
        "trigger": "group_created",
        "trigger_cause": "Adding new member a with group instance id None; client reason: not provided",
        "trigger_member_id": "a",
        "trigger_client_reason": None,
        "members_before": [],
        "members_after": ["a", "b"],
        "joined": ["a", "b"],
        "left": [],
        "evicted": [],
        "leader": "a",
        "protocol_type": "consumer",
        "protocol_name": "range",
        "partitions_moved": 6,
        "partitions_assigned": 6,
        "cooperative_follow_up": False,
        "log_date": dt.date(2023, 11, 14),
    }


def test_stable_row_waits_for_the_rest_of_its_step() -> None:
    s = stable_group("a")
    t = tracker()
    for preds, events in s.steps:
        t.consume(preds, events)
    assert t.drain().rebalances == []  # the Stable step could still bring its SYNC_COMPLETED
    assert [r["outcome"] for r in t.flush_open().rebalances] == ["stable"]
    s.step().heartbeat("a")
    t.consume(*s.steps[-1])
    (r,) = t.drain().rebalances
    assert (r["outcome"], r["partitions_assigned"]) == ("stable", 6)


def test_sync_completed_before_the_stable_transition_is_used_too() -> None:
    s = stable_group("a", "b")
    preds, events = s.steps[-1]
    s.steps[-1] = (preds, [events[1], events[0]])  # SYNC_COMPLETED first
    (r,) = run(s.steps).rebalances
    assert (r["outcome"], r["partitions_assigned"], r["partitions_moved"]) == ("stable", 6, 6)


def test_new_member() -> None:
    s = stable_group("a", "b")
    s.step(60_000).join("c", reason="rebalance failed due to MemberIdRequiredException")
    s.step(50).rejoin("a", changed=False).rejoin("b", changed=False)
    s.step(10).complete("a")
    s.step(20).sync(split_assignment(["a", "b", "c"]))
    s.step(1000).heartbeat("c")
    out = run(s.steps)
    check_schema(out)
    r = only(out.rebalances, rebalance_seq=2)
    assert r["trigger"] == "new_member"
    assert r["trigger_member_id"] == "c"
    assert r["trigger_client_reason"] == "rebalance failed due to MemberIdRequiredException"
    assert (r["members_before"], r["members_after"], r["joined"]) == (["a", "b"], ["a", "b", "c"], ["c"])
    assert (r["generation_from"], r["generation_to"]) == (1, 2)
    # a:[0,2,4] b:[1,3,5] → a:[0,3] b:[1,4] c:[2,5]: 2, 3, 4 and 5 change owner
    assert (r["partitions_moved"], r["partitions_assigned"]) == (4, 6)
    assert r["cooperative_follow_up"] is False


def test_member_left_with_client_reason_and_session_end() -> None:
    s = stable_group("a", "b")
    s.step(5000).heartbeat("b").commit("b")
    s.step(5000).leave("b", reason="the consumer is being closed")
    s.step(50).rejoin("a", changed=False)
    s.step(10).complete("a")
    s.step(10).sync({"a": enc(("t", range(6)))})
    s.step(10).heartbeat("a")
    out = run(s.steps)
    r = only(out.rebalances, rebalance_seq=2)
    assert (r["trigger"], r["trigger_member_id"], r["trigger_client_reason"]) == (
        "member_left",
        "b",
        "the consumer is being closed",
    )
    assert (r["members_before"], r["members_after"], r["left"], r["evicted"]) == (
        ["a", "b"],
        ["a"],
        ["b"],
        [],
    )
    assert r["partitions_moved"] == 3
    b = only(out.member_sessions, member_id="b", generation_id=1)
    assert (b["end_reason"], b["ended_ms"], b["heartbeats"], b["commits"]) == ("left", T0 + 13_150, 1, 1)
    # b's generation-1 session starts when it was added, during the rebalance that formed generation 1
    assert (b["last_heartbeat_ms"], b["joined_ms"]) == (T0 + 8_150, T0 + 100)
    assert (b["client_id"], b["session_timeout_ms"], b["rebalance_timeout_ms"]) == (
        "client-b",
        45_000,
        300_000,
    )


def test_session_expiry() -> None:
    s = stable_group("a", "b")
    s.step(46_000).expire("b")
    s.step(100).rejoin("a", changed=False)
    s.step(10).complete("a")
    s.step(10).sync({"a": enc(("t", range(6)))})
    out = run(s.steps)
    r = only(out.rebalances, rebalance_seq=2)
    assert (r["trigger"], r["trigger_member_id"], r["evicted"], r["left"]) == (
        "session_expiry",
        "b",
        ["b"],
        [],
    )
    assert r["trigger_cause"] == "removing member b on heartbeat expiration"
    expiry = only(out.transitions, cause="removing member b on heartbeat expiration")
    assert (expiry["source_file"], expiry["line_no"], expiry["member_id"]) == (None, None, "b")  # a timer
    assert only(out.member_sessions, member_id="b")["end_reason"] == "session_expiry"


def test_rebalance_timeout_eviction_at_join_completion() -> None:
    s = stable_group("a", "b", "c")
    s.step(1000).rejoin("a", changed=False)  # leader rejoins: rebalance; b and c never do
    s.step(1000).rejoin("b", changed=False)
    s.step(300_000).complete("a")  # c dropped with a removal event ...
    s.step(10).sync({"a": enc(("t", [0, 1, 2])), "b": enc(("t", [3, 4, 5]))})
    s.step(10).heartbeat("a")
    out = run(s.steps)
    r = only(out.rebalances, rebalance_seq=2)
    assert (r["trigger"], r["evicted"], r["members_after"]) == ("leader_rejoin", ["c"], ["a", "b"])
    assert only(out.member_sessions, member_id="c")["end_reason"] == "rebalance_timeout_eviction"
    # ... or silently (no removal event): the same row
    s2 = stable_group("a", "b", "c")
    s2.step(1000).rejoin("a", changed=False)
    s2.step(1000).rejoin("b", changed=False)
    s2.step(300_000).complete("a", implicit=True)
    s2.step(10).sync({"a": enc(("t", [0, 1, 2])), "b": enc(("t", [3, 4, 5]))})
    s2.step(10).heartbeat("a")
    out2 = run(s2.steps)
    assert only(out2.rebalances, rebalance_seq=2)["evicted"] == ["c"]
    assert only(out2.member_sessions, member_id="c")["end_reason"] == "rebalance_timeout_eviction"


def test_rebalance_timeout_eviction_trigger_from_cause_or_event() -> None:
    assert classify_cause("Group g removed dynamic members who haven't joined: Set(m1)") == (
        "rebalance_timeout_eviction"
    )
    s = stable_group("a", "b")
    s.step(1000)
    s.ev(
        EventKind.MEMBER_REMOVED,
        timer=True,
        member_id="b",
        removal_reason=RemovalReason.REBALANCE_TIMEOUT_EVICTION,
    )
    s.members.remove("b")
    s.transition(PR, None, timer=True)
    r = only(run(s.steps).rebalances, rebalance_seq=2)
    assert (r["trigger"], r["trigger_member_id"], r["outcome"]) == (
        "rebalance_timeout_eviction",
        "b",
        "unfinished",
    )


def test_leader_rejoin_and_old_kafka_wording() -> None:
    s = stable_group("a", "b")
    s.step(600_000).rejoin("a", changed=False, reason="cached metadata has changed")
    s.step(50).rejoin("b", changed=False)
    s.step(10).complete("a")
    s.step(10).sync(split_assignment(["a", "b"]))
    s.step(10).rejoin("a", changed=False, cause="Updating metadata for member a")  # Kafka < 2.6
    out = run(s.steps)
    r = only(out.rebalances, rebalance_seq=2)
    assert (r["trigger"], r["trigger_member_id"], r["trigger_client_reason"]) == (
        "leader_rejoin",
        "a",
        "cached metadata has changed",
    )
    assert r["partitions_moved"] == 0
    assert only(out.rebalances, rebalance_seq=3)["trigger"] == "leader_rejoin"


def test_metadata_change() -> None:
    s = stable_group("a", "b")
    s.step(1000).rejoin("b", reason="subscription has changed")
    out = run(s.steps)
    r = only(out.rebalances, rebalance_seq=2)
    assert (r["trigger"], r["trigger_member_id"], r["trigger_client_reason"], r["outcome"]) == (
        "metadata_change",
        "b",
        "subscription has changed",
        "unfinished",
    )
    assert (
        r["trigger_cause"]
        == "Updating metadata for member b during Stable; client reason: subscription has changed"
    )


def test_protocol_change_from_the_member_protocol_list() -> None:
    s = stable_group("a", "b")
    s.step(1000).rejoin("b", protocols=("cooperative-sticky", "range"))  # KIP-429 first bounce
    s.step(50).rejoin("a", changed=False)
    s.step(10).complete("a")
    s.step(10).sync(split_assignment(["a", "b"]))
    s.step(10).heartbeat("a")
    for chunks in (None, [len(s.steps)], [5, 1, 1, 1, 1]):
        r = only(run(s.steps, chunks, serialise=True).rebalances, rebalance_seq=2)
        assert (r["trigger"], r["trigger_member_id"]) == ("protocol_change", "b")


def test_protocol_change_of_a_static_member() -> None:
    assert (
        classify_cause(
            "Group's selectedProtocol will change because static member m-2 with instance id Some(i-2) "
            "joined with change of protocol; client reason: not provided"
        )
        == "protocol_change"
    )


def test_static_member_replaced_keeps_its_partitions() -> None:
    s = Sim()
    s.step(0).join("a1", instance="ia")
    s.step(100).join("b1", instance="ib")
    s.step(3000).complete("a1")
    s.step(5)
    s.static_replace("b1", "b2", "ib")  # restarted before syncing: CompletingRebalance → rebalance
    s.step(10).rejoin("a1", changed=False)
    s.step(10).complete("a1")
    s.step(10).sync({"a1": enc(("t", [0, 1, 2])), "b2": enc(("t", [3, 4, 5]))})
    s.step(10).heartbeat("b2")
    out = run(s.steps)
    first = only(out.rebalances, rebalance_seq=1)
    assert (first["outcome"], first["generation_to"], first["stable_ms"]) == ("superseded", 1, None)
    assert first["members_after"] == ["a1", "b1"]
    r = only(out.rebalances, rebalance_seq=2)
    assert (r["trigger"], r["trigger_member_id"]) == ("static_member_replaced", "b2")
    assert (r["members_before"], r["joined"], r["evicted"], r["members_after"]) == (
        ["a1", "b1"],
        ["b2"],
        ["b1"],
        ["a1", "b2"],
    )
    assert (r["generation_from"], r["generation_to"]) == (1, 2)
    assert r["partitions_moved"] == 6  # the first assignment had no previous one: everything moved
    b1 = only(out.member_sessions, member_id="b1")
    assert (b1["end_reason"], b1["group_instance_id"], b1["generation_id"]) == ("fenced", "ib", 1)
    b2 = only(out.member_sessions, member_id="b2", generation_id=1)
    assert (b2["end_reason"], b2["group_instance_id"]) == ("next_generation", "ib")
    assert only(out.member_sessions, member_id="b2", generation_id=2)["end_reason"] == "open"


def test_static_restart_partitions_follow_the_instance_id() -> None:
    s = Sim()
    s.step(0).join("a1", instance="ia")
    s.step(100).join("b1", instance="ib")
    s.step(3000).complete("a1")
    s.step(10).sync({"a1": enc(("t", [0, 1, 2])), "b1": enc(("t", [3, 4, 5]))})
    s.step(60_000)
    s.static_replace("b1", "b2", "ib")  # Stable: no rebalance
    s.step(10).rejoin("a1", changed=False)  # a later leader rejoin
    s.step(10).rejoin("b2", changed=False)
    s.step(10).complete("a1")
    s.step(10).sync({"a1": enc(("t", [0, 1, 2])), "b2": enc(("t", [3, 4, 5]))})
    s.step(10).heartbeat("b2")
    out = run(s.steps)
    assert len(out.rebalances) == 2
    r = only(out.rebalances, rebalance_seq=2)
    assert (r["trigger"], r["partitions_moved"], r["members_before"]) == ("leader_rejoin", 0, ["a1", "b2"])
    assert only(out.member_sessions, member_id="b1")["end_reason"] == "fenced"


def test_pending_sync_expiry_supersedes() -> None:
    s = stable_group("a", "b")
    s.step(1000).rejoin("a", changed=False)
    s.step(10).rejoin("b", changed=False)
    s.step(10).complete("a")  # generation 2, nobody syncs b
    s.step(300_000).pending_sync_expire(["b"])
    out = run(s.steps)
    old = only(out.rebalances, rebalance_seq=2)
    assert (old["outcome"], old["generation_to"], old["ended_ms"], old["stable_ms"]) == (
        "superseded",
        2,
        s.t,
        None,
    )
    assert old["members_after"] == ["a", "b"] and old["sync_phase_ms"] is None
    assert old["total_duration_ms"] == s.t - old["started_ms"]
    new = only(out.rebalances, rebalance_seq=3)
    assert (new["trigger"], new["evicted"], new["members_before"], new["generation_from"]) == (
        "pending_sync_expiry",
        ["b"],
        ["a", "b"],
        2,
    )
    assert only(out.member_sessions, member_id="b", generation_id=2)["end_reason"] == "pending_sync_expiry"


def test_coordinator_moved() -> None:
    s = stable_group("a", "b")
    s.step(600_000).external_error("NOT_COORDINATOR")
    s.step(2_000).rejoin("a", changed=False)
    s.step(10).rejoin("b", changed=False)
    s.step(10).complete("a")
    s.step(10).sync(split_assignment(["a", "b"]))
    s.step(600_000).rejoin("a", changed=False)  # long after the error: an ordinary leader rejoin
    out = run(s.steps)
    assert only(out.rebalances, rebalance_seq=2)["trigger"] == "coordinator_moved"
    assert only(out.rebalances, rebalance_seq=3)["trigger"] == "leader_rejoin"
    # a departure right after the move is still a departure
    s2 = stable_group("a", "b")
    s2.step(1000).external_error("COORDINATOR_LOAD_IN_PROGRESS")
    s2.step(1000).leave("b")
    assert only(run(s2.steps).rebalances, rebalance_seq=2)["trigger"] == "member_left"


def test_superseded_by_a_new_member_during_completing_rebalance() -> None:
    s = stable_group("a", "b")
    s.step(1000).rejoin("a", changed=False)
    s.step(10).rejoin("b", changed=False)
    s.step(10).complete("a")
    s.step(10).join("c")  # CompletingRebalance → PreparingRebalance
    s.step(10).rejoin("a", changed=False).rejoin("b", changed=False)
    s.step(10).complete("a")
    s.step(10).sync(split_assignment(["a", "b", "c"]))
    s.step(10).heartbeat("a")
    out = run(s.steps)
    old, new = only(out.rebalances, rebalance_seq=2), only(out.rebalances, rebalance_seq=3)
    assert (old["outcome"], old["trigger"], old["generation_from"], old["generation_to"]) == (
        "superseded",
        "leader_rejoin",
        1,
        2,
    )
    assert old["members_after"] == new["members_before"] == ["a", "b"]
    assert old["joined"] == [] and new["joined"] == ["c"]
    assert (new["trigger"], new["outcome"], new["generation_from"], new["generation_to"]) == (
        "new_member",
        "stable",
        2,
        3,
    )
    assert new["started_ms"] == old["ended_ms"]
    # the previous *stored* assignment is generation 1's: a:[0,2,4] b:[1,3,5] → a:[0,3] b:[1,4] c:[2,5]
    assert new["partitions_moved"] == 4
    assert [r["to_state"] for r in out.transitions].count("PreparingRebalance") == 3


def test_empty_outcome_when_everyone_leaves() -> None:
    s = stable_group("a", "b")
    s.step(1000).leave("b")
    s.step(10).leave("a", reason=None)  # PreparingRebalance → Empty in the same step
    s.step(10).join("c")  # the group is re-created
    out = run(s.steps)
    r = only(out.rebalances, rebalance_seq=2)
    assert (r["outcome"], r["generation_from"], r["generation_to"], r["members_after"], r["left"]) == (
        "empty",
        1,
        2,
        [],
        ["a", "b"],
    )
    assert (r["leader"], r["protocol_name"], r["protocol_type"], r["stable_ms"]) == (
        None,
        None,
        "consumer",
        None,
    )
    assert r["join_completed_ms"] == r["ended_ms"] == T0 + 3150 + 1010
    created = only(out.rebalances, rebalance_seq=3)
    assert (created["trigger"], created["generation_from"], created["outcome"]) == (
        "group_created",
        2,
        "unfinished",
    )
    assert [x["end_reason"] for x in out.member_sessions if x["generation_id"] == 1] == ["left", "left"]
    assert only(out.member_sessions, member_id="c") == {
        **only(out.member_sessions, member_id="c"),
        "generation_id": 3,
        "end_reason": "open",
        "ended_ms": None,
    }


def test_last_member_leaves_a_stable_group() -> None:
    s = stable_group("a")
    s.step(1000).leave("a")  # Stable → PreparingRebalance → Empty, one request
    s.step(10)
    s.ev(EventKind.HEARTBEAT, member_id="ghost")  # Empty: no member can heartbeat; ignored
    out = run(s.steps)
    r = only(out.rebalances, rebalance_seq=2)
    assert (r["trigger"], r["outcome"], r["total_duration_ms"], r["members_after"]) == (
        "member_left",
        "empty",
        0,
        [],
    )
    assert [x["member_id"] for x in out.member_sessions] == ["a"]


def test_dead_mid_rebalance_then_served_again() -> None:
    """A coordinator move: the rebalance ends ``dead``; the members' sessions survive the unload and go on
    when the group is loaded again (only members the loaded group lacks end ``dead``)."""
    s = stable_group("a", "b")
    s.step(1000).external_error("NOT_COORDINATOR")
    s.transition(DEAD, "coordinator moved (NOT_COORDINATOR observed)")
    s.step(5000)
    s.state = STABLE
    s.ev(EventKind.WARM_START, members=("a",), leader="a", protocol_name="range", protocol_type="consumer")
    s.members = ["a"]
    s.step(10).heartbeat("a")
    s.step(10).rejoin("a", changed=False)
    out = run(s.steps)
    check_schema(out)
    # nothing was rebalancing when it moved; the leader's rejoin right after is the move's doing
    after = only(out.rebalances, rebalance_seq=2)
    assert (after["trigger"], after["outcome"]) == ("coordinator_moved", "unfinished")
    assert only(out.member_sessions, member_id="a")["end_reason"] == "open"
    assert only(out.member_sessions, member_id="b")["end_reason"] == "dead"  # not in the loaded group
    s2 = stable_group("a", "b")
    s2.step(1000).rejoin("a", changed=False)
    s2.step(10).external_error("NOT_COORDINATOR")
    s2.transition(DEAD, "coordinator moved (NOT_COORDINATOR observed)")
    s2.step(5000)
    s2.state = STABLE
    s2.ev(EventKind.WARM_START, members=("a",), leader="a", protocol_name="range", protocol_type="consumer")
    s2.members, s2.parked = ["a"], {}
    s2.step(10).heartbeat("a")
    s2.step(10).rejoin("a", changed=False)
    out = run(s2.steps)
    r = only(out.rebalances, rebalance_seq=2)
    assert (r["outcome"], r["ended_ms"], r["members_after"], r["generation_to"]) == (
        "dead",
        T0 + 4160,
        [],
        None,
    )
    assert only(out.rebalances, rebalance_seq=3)["trigger"] == "coordinator_moved"
    a = only(out.member_sessions, member_id="a")
    assert (a["generation_id"], a["end_reason"], a["heartbeats"]) == (1, "open", 1)
    b = only(out.member_sessions, member_id="b")
    assert (b["end_reason"], b["ended_ms"]) == ("dead", T0 + 9160)


def test_dead_group_created_afresh() -> None:
    s = stable_group("a", "b")
    s.step(1000).transition(DEAD, "coordinator moved (NOT_COORDINATOR observed)")
    s.step(10)
    s.gen, s.state, s.members, s.leader = -1, DEAD, [], None
    s.ev(EventKind.WARM_START, detail="group served again: nothing persisted, group unknown")
    s.gen, s.state = 0, EMPTY
    s.join("c")
    out = run(s.steps)
    assert sorted((x["member_id"], x["end_reason"]) for x in out.member_sessions) == [
        ("a", "dead"),
        ("b", "dead"),
        ("c", "open"),
    ]
    created = only(out.rebalances, rebalance_seq=2)
    assert (created["trigger"], created["members_before"], created["generation_from"]) == (
        "group_created",
        [],
        0,
    )


def test_unknown_trigger_and_warm_start() -> None:
    s = Sim()
    s.step(0)
    s.gen, s.state = 7, STABLE
    s.ev(
        EventKind.WARM_START, members=("a", "b"), leader="a", protocol_name="range", protocol_type="consumer"
    )
    s.members, s.leader = ["a", "b"], "a"
    s.step(100).heartbeat("b")
    s.step(100).transition(PR, None)  # no cause, no member, no context
    s.step(100)
    s.gen = 9
    s.ev(EventKind.WARM_START, detail="not confident: whatever")
    out = run(s.steps)
    r = only(out.rebalances, rebalance_seq=1)
    assert (r["trigger"], r["generation_from"], r["members_before"], r["outcome"]) == (
        "unknown",
        7,
        ["a", "b"],
        "unfinished",
    )
    b = only(out.member_sessions, member_id="b")
    assert (b["generation_id"], b["heartbeats"], b["joined_ms"], b["end_reason"]) == (7, 1, T0, "open")
    assert only(out.member_sessions, member_id="a")["is_leader"] is True


def test_warm_start_in_preparing_rebalance_gives_an_unknown_rebalance() -> None:
    s = Sim()
    s.step(0)
    s.gen, s.state = 4, PR
    s.ev(EventKind.WARM_START, members=("a",), leader="a")
    s.members, s.leader = ["a"], "a"
    s.parked["a"] = s.join_request("a", ("range",), None, None, 10_000, 60_000)
    s.parked_seq["a"] = 0
    s.step(500).complete("a")
    s.step(10).sync({"a": None})
    s.step(10).heartbeat("a")
    (r,) = run(s.steps).rebalances
    assert (r["trigger"], r["trigger_cause"], r["generation_from"], r["generation_to"]) == (
        "unknown",
        "warm start: rebalance already in progress",
        4,
        5,
    )
    assert (r["started_ms"], r["join_phase_ms"], r["partitions_moved"], r["partitions_assigned"]) == (
        T0,
        500,
        None,
        None,
    )


def test_trigger_from_events_when_the_cause_is_missing() -> None:
    cases = [
        (RemovalReason.LEFT, "member_left"),
        (RemovalReason.SESSION_EXPIRY, "session_expiry"),
        (RemovalReason.NEW_MEMBER_JOIN_TIMEOUT, "session_expiry"),
        (RemovalReason.PENDING_SYNC_EXPIRY, "pending_sync_expiry"),
        (RemovalReason.FENCED, "static_member_replaced"),
    ]
    for reason, trigger in cases:
        s = stable_group("a", "b")
        s.step(1000)
        s.ev(EventKind.MEMBER_REMOVED, member_id="b", removal_reason=reason, client_reason="bye")
        s.members.remove("b")
        s.transition(PR, None)
        r = only(run(s.steps).rebalances, rebalance_seq=2)
        assert (r["trigger"], r["trigger_member_id"], r["trigger_client_reason"]) == (trigger, "b", "bye"), (
            reason
        )
    # a member update (post-context: the transition comes first), by the leader and by a follower
    for member, trigger in (("a", "leader_rejoin"), ("b", "metadata_change")):
        s = stable_group("a", "b")
        s.step(1000)
        s.transition(PR, None)
        s.ev(EventKind.MEMBER_UPDATED, member_id=member)
        r = only(run(s.steps).rebalances, rebalance_seq=2)
        assert (r["trigger"], r["trigger_member_id"]) == (trigger, member)
    # a new member added after the transition
    s = stable_group("a")
    s.step(1000)
    s.transition(PR, None)
    s.ev(EventKind.MEMBER_ADDED, member_id="z")
    r = only(run(s.steps).rebalances, rebalance_seq=2)
    assert (r["trigger"], r["trigger_member_id"], r["joined"], r["members_before"]) == (
        "new_member",
        "z",
        ["z"],
        ["a"],
    )
    # only a timer key
    s = stable_group("a")
    s.step(1000)
    s.ev(EventKind.TIMER_EXPIRED, timer=True, detail="sync-orders")
    s.transition(PR, None, timer=True)
    assert only(run(s.steps).rebalances, rebalance_seq=2)["trigger"] == "pending_sync_expiry"


@pytest.mark.parametrize(
    ("cause", "trigger"),
    [
        ("Adding new member m with group instanceid None", "new_member"),
        ("Adding new member m", "new_member"),
        ("removing member m on LeaveGroup", "member_left"),
        ("explicit `LeaveGroup` request for (m1, m2) members.", "member_left"),
        ("removing member m on heartbeat expiration.", "session_expiry"),
        ("Removing [m1, m2] on pending sync request expiration", "pending_sync_expiry"),
        ("leader m re-joining group during Stable; client reason: not provided", "leader_rejoin"),
        ("Updating metadata for member m during CompletingRebalance", "metadata_change"),
        ("Member m is joining group during Stable; client reason: leader said so", "metadata_change"),
        ("Updating metadata for static member m with instance id i", "static_member_replaced"),
        (
            "Error NOT_COORDINATOR when storing group assignment during SyncGroup (member: m)",
            "coordinator_moved",
        ),
        ("Error MESSAGE_TOO_LARGE when storing group assignment during SyncGroup (member: m)", None),
        (None, None),
    ],
)
def test_classify_cause(cause: str | None, trigger: str | None) -> None:
    assert classify_cause(cause) == trigger


# --------------------------------------------------------------------------------------------------
# cooperative follow-ups
# --------------------------------------------------------------------------------------------------


def cooperative_scenario(gap_ms: int, reason: str | None, protocol: str = "cooperative-sticky") -> Sim:
    s = stable_group("a", "b", protocol=protocol)
    s.step(60_000).join("c")  # round 1: revoke
    s.step(20).rejoin("a", changed=False, protocols=(protocol,)).rejoin("b", protocols=(protocol,))
    s.step(10).complete("a", protocol)
    s.step(10).sync({"a": enc(("t", [0, 2])), "b": enc(("t", [1, 3])), "c": enc()})
    s.step(gap_ms).rejoin("b", protocols=(protocol,), reason=reason)  # round 2: b gave up 5
    s.step(20).rejoin("a", changed=False, protocols=(protocol,)).rejoin(
        "c", changed=False, protocols=(protocol,)
    )
    s.step(10).complete("a", protocol)
    s.step(10).sync({"a": enc(("t", [0, 2])), "b": enc(("t", [1, 3])), "c": enc(("t", [4, 5]))})
    s.step(10).heartbeat("a")
    return s


def test_cooperative_follow_up_round() -> None:
    out = run(cooperative_scenario(300, "need to revoke partitions and re-join").steps)
    round1, round2 = only(out.rebalances, rebalance_seq=2), only(out.rebalances, rebalance_seq=3)
    assert (round1["trigger"], round1["cooperative_follow_up"], round1["partitions_moved"]) == (
        "new_member",
        False,
        0,  # c gets nothing yet; a and b keep what they still own
    )
    assert round1["partitions_assigned"] == 4
    assert (round2["trigger"], round2["trigger_client_reason"], round2["cooperative_follow_up"]) == (
        "metadata_change",
        "need to revoke partitions and re-join",
        True,
    )
    assert round2["partitions_moved"] == 2


@pytest.mark.parametrize(
    ("gap_ms", "reason", "protocol", "expected"),
    [
        (300, None, "cooperative-sticky", True),  # within the window, no client reason (clients < 3.2)
        (10_000, None, "cooperative-sticky", True),  # the window is inclusive
        (10_001, None, "cooperative-sticky", False),
        (60_000, "need to revoke partitions and re-join", "cooperative-sticky", True),  # the client says so
        (300, "need to revoke partitions and re-join", "range", False),  # eager protocols have no follow-ups
    ],
)
def test_cooperative_follow_up_rule(gap_ms: int, reason: str | None, protocol: str, expected: bool) -> None:
    out = run(cooperative_scenario(gap_ms, reason, protocol).steps)
    assert only(out.rebalances, rebalance_seq=3)["cooperative_follow_up"] is expected


def test_cooperative_protocols_are_configurable() -> None:
    steps = cooperative_scenario(300, None, protocol="my-coop").steps
    assert only(run(steps).rebalances, rebalance_seq=3)["cooperative_follow_up"] is False
    out = run(steps, make=lambda: RebalanceTracker(GROUP, cooperative_protocols=frozenset({"my-coop"})))
    assert only(out.rebalances, rebalance_seq=3)["cooperative_follow_up"] is True
    out = run(
        steps,
        make=lambda: RebalanceTracker(
            GROUP, cooperative_protocols=frozenset({"my-coop"}), follow_up_window_ms=100
        ),
    )
    assert only(out.rebalances, rebalance_seq=3)["cooperative_follow_up"] is False


def test_new_member_or_departure_is_never_a_follow_up() -> None:
    s = stable_group("a", "b", protocol="cooperative-sticky")
    s.step(500).join("c")
    s.step(10).rejoin("a", changed=False).rejoin("b", changed=False)
    s.step(10).complete("a", "cooperative-sticky")
    s.step(10).sync(split_assignment(["a", "b", "c"]))
    s.step(500).leave("c")
    out = run(s.steps)
    assert [r["cooperative_follow_up"] for r in out.rebalances] == [False, False, False]


# --------------------------------------------------------------------------------------------------
# partitions
# --------------------------------------------------------------------------------------------------


def test_partitions_unknown_without_bytes_or_when_undecodable() -> None:
    s = stable_group("a", "b")
    s.step(1000).rejoin("a", changed=False)
    s.step(10).rejoin("b", changed=False)
    s.step(10).complete("a")
    s.step(10).sync({"a": None, "b": None})  # text era: lengths only
    s.step(1000).rejoin("a", changed=False)
    s.step(10).rejoin("b", changed=False)
    s.step(10).complete("a")
    s.step(10).sync(split_assignment(["a", "b"]))
    s.step(1000).rejoin("a", changed=False)
    s.step(10).rejoin("b", changed=False)
    s.step(10).complete("a")
    s.step(10).sync({"a": b"\x00\x07garbage", "b": enc(("t", [1]))})
    s.step(10).heartbeat("a")
    out = run(s.steps)
    assert [(r["partitions_moved"], r["partitions_assigned"]) for r in out.rebalances] == [
        (6, 6),
        (None, None),  # no bytes
        (None, 6),  # the previous side had no bytes
        (None, None),  # undecodable
    ]


def test_empty_assignment_bytes_mean_no_partitions() -> None:
    s = stable_group("a", "b")
    s.step(1000).rejoin("a", changed=False)
    s.step(10).rejoin("b", changed=False)
    s.step(10).complete("a")
    s.step(10).sync({"a": enc(("t", range(6))), "b": b""})
    s.step(10).heartbeat("a")
    r = only(run(s.steps).rebalances, rebalance_seq=2)
    assert (r["partitions_moved"], r["partitions_assigned"]) == (3, 6)


def test_partitions_after_the_group_was_empty_count_as_moved() -> None:
    s = stable_group("a")
    s.step(1000).leave("a")
    s.step(1000).join("b")
    s.step(3000).complete("b")
    s.step(10).sync({"b": enc(("t", range(6)))})
    s.step(10).heartbeat("b")
    r = only(run(s.steps).rebalances, rebalance_seq=3)
    assert (r["trigger"], r["partitions_moved"], r["generation_from"]) == ("group_created", 6, 2)


# --------------------------------------------------------------------------------------------------
# member sessions
# --------------------------------------------------------------------------------------------------


def test_member_sessions_across_generations() -> None:
    s = stable_group("a", "b")
    for _ in range(3):
        s.step(3000).heartbeat("a").heartbeat("b")
    s.step(10).commit("b")
    s.step(60_000).rejoin("a", changed=False, sto=10_000, rto=60_000)  # 3.4+: new timeouts
    s.step(10).heartbeat("b")  # REBALANCE_IN_PROGRESS but refreshed: the model reports it
    s.step(10).rejoin("b", changed=False)
    s.step(10).complete("a")
    s.step(10).sync(split_assignment(["a", "b"]))
    s.step(10).heartbeat("b")
    out = run(s.steps)
    check_schema(out)
    a1 = only(out.member_sessions, member_id="a", generation_id=1)
    assert a1 == {
        "group_id": GROUP,
        "member_id": "a",
        "group_instance_id": None,
        "client_id": "client-a",
        "client_address": "10.0.0.1",
        "generation_id": 1,
        "joined_ms": T0,
        "last_heartbeat_ms": T0 + 3150 + 9000,
        "heartbeats": 3,
        "commits": 0,
        "ended_ms": s.t - 20,
        "end_reason": "next_generation",
        "session_timeout_ms": 45_000,
        "rebalance_timeout_ms": 300_000,
        "is_leader": True,
        "log_date": dt.date(2023, 11, 14),
    }
    b1 = only(out.member_sessions, member_id="b", generation_id=1)
    assert (b1["joined_ms"], b1["heartbeats"], b1["commits"], b1["is_leader"]) == (T0 + 100, 4, 1, False)
    a2 = only(out.member_sessions, member_id="a", generation_id=2)
    assert (a2["joined_ms"], a2["end_reason"], a2["ended_ms"], a2["session_timeout_ms"]) == (
        s.t - 20,
        "open",
        None,
        10_000,
    )
    assert a2["rebalance_timeout_ms"] == 60_000
    b2 = only(out.member_sessions, member_id="b", generation_id=2)
    assert (b2["heartbeats"], b2["last_heartbeat_ms"]) == (1, s.t)


def test_max_size_removal_of_a_new_member() -> None:
    s = stable_group("a")
    s.step(10).join("b")
    s.ev(EventKind.MEMBER_REMOVED, member_id="b", removal_reason=RemovalReason.MAX_SIZE)
    s._removed("b")
    out = run(s.steps)
    b = only(out.member_sessions, member_id="b")
    assert (b["end_reason"], b["generation_id"], b["joined_ms"], b["ended_ms"]) == ("max_size", 2, s.t, s.t)
    assert only(out.rebalances, rebalance_seq=2)["evicted"] == ["b"]


def test_flush_open_changes_nothing() -> None:
    s = stable_group("a", "b")
    s.step(1000).rejoin("a", changed=False)
    t = tracker()
    for step in s.steps:
        t.consume(*step)
    before = t.to_bytes()
    first = t.flush_open()
    assert t.to_bytes() == before
    assert t.flush_open() == first
    assert [r["outcome"] for r in first.rebalances] == ["unfinished"]
    r = first.rebalances[0]
    assert (r["generation_to"], r["ended_ms"], r["total_duration_ms"], r["members_after"]) == (
        None,
        None,
        None,
        None,
    )
    assert sorted((x["member_id"], x["end_reason"]) for x in first.member_sessions) == [
        ("a", "open"),
        ("b", "open"),
    ]


# --------------------------------------------------------------------------------------------------
# determinism: chunking and serialisation
# --------------------------------------------------------------------------------------------------


def long_scenario() -> Sim:
    s = stable_group("a", "b", protocol="cooperative-sticky")
    for _ in range(2):
        s.step(3000).heartbeat("a").heartbeat("b").commit("a")
    s.step(100).join("c", reason="rebalance failed due to MemberIdRequiredException")
    s.step(100).heartbeat("b")
    s.step(10).rejoin("a", changed=False, protocols=("cooperative-sticky",))
    s.step(10).rejoin("b", protocols=("cooperative-sticky",))
    s.step(10).complete("a", "cooperative-sticky")
    s.step(10).sync({"a": enc(("t", [0, 2])), "b": enc(("t", [1, 3])), "c": enc()})
    s.step(200).rejoin("b", protocols=("cooperative-sticky",), reason="need to revoke partitions and re-join")
    s.step(10).rejoin("a", changed=False, protocols=("cooperative-sticky",))
    s.step(10).rejoin("c", changed=False, protocols=("cooperative-sticky",))
    s.step(10).complete("a", "cooperative-sticky")
    s.step(10).sync({"a": enc(("t", [0, 2])), "b": enc(("t", [1, 3])), "c": enc(("t", [4, 5]))})
    s.step(3000).heartbeat("c").commit("c")
    s.step(50_000).expire("c")
    s.step(10).rejoin("a", changed=False, protocols=("cooperative-sticky",))
    s.step(10).rejoin("b", protocols=("cooperative-sticky", "range"))
    s.step(10).complete("a", "cooperative-sticky")
    s.step(10).join("d")  # supersedes
    s.step(10).rejoin("a", changed=False).rejoin("b", changed=False)
    s.step(10).complete("a", "cooperative-sticky")
    s.step(300_000).pending_sync_expire(["a", "b", "d"])  # nobody synced: → Empty
    s.step(10_000).external_error("NOT_COORDINATOR")
    s.step(10).join("e", instance="ie")
    s.step(3000).complete("e")
    s.step(10).sync({"e": enc(("t", range(6)))})
    s.step(10).static_replace("e", "e2", "ie")
    s.step(10).heartbeat("e2").commit("e2")
    s.step(20).leave("e2")
    s.step(100_000).join("f")
    return s


def canonical(out: TrackerOutput) -> dict[str, list[dict[str, Any]]]:
    return {"t": out.transitions, "r": out.rebalances, "s": out.member_sessions}


def test_long_scenario_is_sane() -> None:
    out = run(long_scenario().steps)
    check_schema(out)
    assert [(r["rebalance_seq"], r["trigger"], r["outcome"]) for r in out.rebalances] == [
        (1, "group_created", "stable"),
        (2, "new_member", "stable"),
        (3, "metadata_change", "stable"),
        (4, "session_expiry", "superseded"),
        (5, "new_member", "superseded"),
        (6, "pending_sync_expiry", "empty"),
        (7, "coordinator_moved", "stable"),
        (8, "member_left", "empty"),
        (9, "group_created", "unfinished"),
    ]
    assert [r["cooperative_follow_up"] for r in out.rebalances] == [False, False, True] + [False] * 6
    seq = [r["rebalance_seq"] for r in out.rebalances]
    assert seq == sorted(seq)


def test_same_rows_however_the_stream_is_cut() -> None:
    steps = long_scenario().steps
    reference = canonical(run(steps))
    assert canonical(run(steps, [len(steps)])) == reference  # one consume call
    for k in range(1, len(steps)):
        assert canonical(run(steps, [k, len(steps) - k], serialise=True)) == reference, k
    rng = random.Random(7)
    for _ in range(25):
        sizes: list[int] = []
        while sum(sizes) < len(steps):
            sizes.append(min(rng.randint(1, 8), len(steps) - sum(sizes)))
        assert canonical(run(steps, sizes, serialise=rng.random() < 0.5)) == reference, sizes


def test_same_rows_when_the_stream_is_cut_inside_a_step() -> None:
    """Even between a step's events (its predictions travelling in the earlier chunk)."""
    steps = long_scenario().steps
    reference = canonical(run(steps))
    events = [(e, i) for i, s in enumerate(steps) for e in s[1]]
    for cut in range(1, len(events)):
        step_of_cut = events[cut][1]
        first = [p for s in steps[: step_of_cut + 1] for p in s[0]]
        rest = [p for s in steps[step_of_cut + 1 :] for p in s[0]]
        t = tracker()
        out = TrackerOutput()
        t.consume(first, [e for e, _ in events[:cut]])
        out.extend(t.drain())
        t = RebalanceTracker.from_bytes(t.to_bytes())
        t.consume(rest, [e for e, _ in events[cut:]])
        out.extend(t.drain())
        out.extend(t.flush_open())
        assert canonical(out) == reference, cut


def test_identical_input_identical_bytes() -> None:
    steps = long_scenario().steps
    t1, t2 = tracker(), tracker()
    for step in steps:
        t1.consume(*step)
        t2.consume(*step)
    assert t1.to_bytes() == t2.to_bytes()
    assert len(t1.to_bytes()) < 4000
    with pytest.raises(ValueError, match="version"):
        import json
        import zlib

        RebalanceTracker.from_bytes(zlib.compress(json.dumps({"v": 99}).encode()))


def test_settings_survive_serialisation() -> None:
    t = RebalanceTracker("g", cooperative_protocols=frozenset({"x", "y"}), follow_up_window_ms=5)
    u = RebalanceTracker.from_bytes(t.to_bytes())
    assert (u.group_id, u.cooperative_protocols, u.follow_up_window_ms) == ("g", frozenset({"x", "y"}), 5)


# --------------------------------------------------------------------------------------------------
# end to end: the real coordinator model's output
# --------------------------------------------------------------------------------------------------


_VERSIONS = {
    ApiKey.JOIN_GROUP: 9,
    ApiKey.SYNC_GROUP: 5,
    ApiKey.HEARTBEAT: 4,
    ApiKey.LEAVE_GROUP: 5,
    ApiKey.OFFSET_COMMIT: 8,
}


class Broker:
    """Drives ``GroupCoordinatorModel`` with requests; every request (or clock advance) is one step."""

    def __init__(self, **config: Any) -> None:
        settings = {"mode": "predict", "warm_start": False, **config}
        self.model = engine.GroupCoordinatorModel(GROUP, config_mod.CoordinatorConfig(**settings))
        self.now = T0
        self.line = 0
        self.steps: list[Step] = []

    def _collect(self) -> tuple[list[Prediction], list[ModelEvent]]:
        preds, events = self.model.drain()
        self.steps.append((list(preds), list(events)))
        return preds, events

    def send(self, dt_ms: int, api: ApiKey, client: str, **kw: Any) -> list[Prediction]:
        self.now += dt_ms
        self.line += 1
        req = GroupRequest(
            api=api,
            api_version=kw.pop("v", _VERSIONS[api]),
            group_id=GROUP,
            arrival_ms=self.now,
            client_id=client,
            client_host=f"10.1.0.{len(client)}",
            ref=(FILE, self.line),
            **kw,
        )
        self.model.handle(req)
        return self._collect()[0]

    def advance(self, dt_ms: int) -> None:
        self.now += dt_ms
        self.model.advance_to(self.now)
        self._collect()

    def join(
        self,
        dt_ms: int,
        client: str,
        member_id: str = "",
        *,
        protocol: str = "range",
        metadata: bytes | None = None,
        instance: str | None = None,
        reason: str | None = None,
    ) -> str:
        """A JoinGroup; a dynamic newcomer does the KIP-394 round trip. Returns the member id."""
        preds = self.send(
            dt_ms,
            ApiKey.JOIN_GROUP,
            client,
            member_id=member_id,
            group_instance_id=instance,
            session_timeout_ms=10_000,
            rebalance_timeout_ms=60_000,
            protocol_type="consumer",
            protocols=(Protocol(protocol, metadata),),
            reason=reason,
        )
        if member_id == "" and instance is None:
            (own,) = [p for p in preds if p.request.ref == (FILE, self.line)]
            assert own.response.error == "MEMBER_ID_REQUIRED", own
            return self.join(1, client, own.response.member_id or "", protocol=protocol, reason=reason)
        if member_id == "":  # a static member: added or replacing its previous id
            (added,) = [
                e.member_id
                for e in self.steps[-1][1]
                if e.kind in (EventKind.MEMBER_ADDED, EventKind.STATIC_MEMBER_REPLACED)
            ]
            assert added is not None
            return added
        return member_id

    def sync(
        self, dt_ms: int, client: str, member_id: str, assignments: dict[str, bytes] | None = None
    ) -> None:
        self.send(
            dt_ms,
            ApiKey.SYNC_GROUP,
            client,
            member_id=member_id,
            generation_id=self.model.generation_id,
            protocol_type="consumer",
            protocol_name=self.model.group.protocol_name,
            assignments=tuple((assignments or {}).items()),
        )

    def heartbeat(self, dt_ms: int, client: str, member_id: str) -> None:
        self.send(
            dt_ms, ApiKey.HEARTBEAT, client, member_id=member_id, generation_id=self.model.generation_id
        )

    def keepalive(self, duration_ms: int, *members: tuple[str, str]) -> None:
        """Every member heartbeats every 3 s for ``duration_ms``."""
        for _ in range(duration_ms // 3000):
            for i, (client, member_id) in enumerate(members):
                self.heartbeat(0 if i else 3000, client, member_id)

    def leave(self, dt_ms: int, client: str, member_id: str, reason: str | None = None) -> None:
        from rebalance_replay.transforms.coordinator.types import LeaveMember

        self.send(dt_ms, ApiKey.LEAVE_GROUP, client, leave_members=(LeaveMember(member_id, None, reason),))


def assert_chunking_invariant(steps: Sequence[Step]) -> TrackerOutput:
    reference = run(steps)
    check_schema(reference)
    assert canonical(run(steps, [len(steps)])) == canonical(reference)
    for k in range(1, len(steps)):
        assert canonical(run(steps, [k, len(steps) - k], serialise=True)) == canonical(reference), k
    keys = [(r["member_id"], r["generation_id"]) for r in reference.member_sessions]
    assert len(keys) == len(set(keys)), keys
    return reference


def test_engine_eager_group_lifecycle() -> None:
    b = Broker(group_initial_rebalance_delay_ms=0)
    a = b.join(0, "app-a")
    c = b.join(10, "app-c")  # arrives while a's first generation waits for its SyncGroup
    b.join(10, "app-a", a)
    b.sync(10, "app-a", a, {a: enc(("t", [0, 1, 2])), c: enc(("t", [3, 4, 5]))})
    b.sync(5, "app-c", c)
    for _ in range(3):
        b.heartbeat(3000, "app-a", a)
        b.heartbeat(0, "app-c", c)
    b.leave(1000, "app-c", c, "the consumer is being closed")
    b.join(10, "app-a", a)
    b.sync(10, "app-a", a, {a: enc(("t", range(6)))})
    b.advance(30_000)  # a stops heartbeating: its session expires, the group is Empty
    out = assert_chunking_invariant(b.steps)

    assert [
        (r["trigger"], r["outcome"], r["generation_from"], r["generation_to"]) for r in out.rebalances
    ] == [
        ("group_created", "superseded", 0, 1),
        ("new_member", "stable", 1, 2),
        ("member_left", "stable", 2, 3),
        ("session_expiry", "empty", 3, 4),
    ]
    created, joined, left, expired = out.rebalances
    assert created["trigger_member_id"] == a and created["members_after"] == [a]
    assert (joined["joined"], joined["members_after"], joined["leader"]) == ([c], sorted([a, c]), a)
    assert (joined["partitions_assigned"], joined["partitions_moved"]) == (6, 6)
    assert (left["left"], left["trigger_client_reason"], left["partitions_moved"]) == (
        [c],
        "the consumer is being closed",
        3,
    )
    assert (expired["evicted"], expired["members_after"], expired["total_duration_ms"]) == ([a], [], 0)
    assert [r["to_state"] for r in out.transitions] == [
        "PreparingRebalance",
        "CompletingRebalance",
        "PreparingRebalance",
        "CompletingRebalance",
        "Stable",
        "PreparingRebalance",
        "CompletingRebalance",
        "Stable",
        "PreparingRebalance",
        "Empty",
    ]
    sessions = {(r["member_id"], r["generation_id"]): r for r in out.member_sessions}
    assert {k: r["end_reason"] for k, r in sessions.items()} == {
        (a, 1): "next_generation",
        (a, 2): "next_generation",
        (c, 2): "left",
        (a, 3): "session_expiry",
    }
    c2 = sessions[(c, 2)]
    assert (c2["heartbeats"], c2["client_id"], c2["client_address"], c2["session_timeout_ms"]) == (
        3,
        "app-c",
        "10.1.0.5",
        10_000,
    )
    assert (sessions[(a, 2)]["is_leader"], c2["is_leader"]) == (True, False)


def test_engine_rebalance_timeout_eviction_and_pending_sync_expiry() -> None:
    b = Broker(group_initial_rebalance_delay_ms=0)
    a = b.join(0, "app-a")
    b.sync(10, "app-a", a, {a: enc(("t", range(6)))})
    m2 = b.join(10, "app-b")
    m3 = b.join(10, "app-c")
    b.join(10, "app-a", a)
    b.sync(10, "app-a", a, split_assignment([a, m2, m3]))
    b.sync(1, "app-b", m2)
    b.sync(1, "app-c", m3)
    # the leader rejoins; app-b follows, app-c keeps heartbeating but never rejoins
    b.join(1000, "app-a", a)
    b.join(10, "app-b", m2)
    b.keepalive(63_000, ("app-c", m3))
    # generation 3 completed without app-c; app-b heartbeats but never sends SyncGroup
    b.sync(10, "app-a", a, split_assignment([a, m2]))
    b.keepalive(60_000, ("app-a", a), ("app-b", m2))
    out = assert_chunking_invariant(b.steps)
    by_trigger = {r["trigger"]: r for r in out.rebalances}
    held = by_trigger["leader_rejoin"]
    assert (held["evicted"], held["members_after"], held["outcome"]) == ([m3], sorted([a, m2]), "stable")
    assert held["join_phase_ms"] >= 60_000  # pattern 5: the join phase waited for the rebalance timeout
    sync_exp = by_trigger["pending_sync_expiry"]
    assert (sync_exp["evicted"], sync_exp["members_before"]) == ([m2], sorted([a, m2]))
    ends = {(r["member_id"], r["generation_id"]): r["end_reason"] for r in out.member_sessions}
    assert ends[(m3, 2)] == "rebalance_timeout_eviction"
    assert ends[(m2, 3)] == "pending_sync_expiry"
    accepted = sum(
        1 for _, evs in b.steps for e in evs if e.kind == EventKind.HEARTBEAT and e.member_id == m3
    )
    assert only(out.member_sessions, member_id=m3, generation_id=2)["heartbeats"] == accepted == 19


def test_engine_cooperative_follow_up() -> None:
    coop = "cooperative-sticky"
    b = Broker(group_initial_rebalance_delay_ms=0)
    a = b.join(0, "app-a", protocol=coop, metadata=b"owned:none")
    b.sync(10, "app-a", a, {a: enc(("t", range(6)))})
    b.keepalive(60_000, ("app-a", a))
    c = b.join(100, "app-c", protocol=coop, metadata=b"owned:none")
    b.join(10, "app-a", a, protocol=coop, metadata=b"owned:none")
    b.sync(10, "app-a", a, {a: enc(("t", [0, 1, 2])), c: enc()})  # round 1: a gives up 3-5
    b.sync(1, "app-c", c)
    b.join(
        200, "app-a", a, protocol=coop, metadata=b"owned:0-2", reason="need to revoke partitions and re-join"
    )
    b.join(10, "app-c", c, protocol=coop, metadata=b"owned:none")
    b.sync(10, "app-a", a, {a: enc(("t", [0, 1, 2])), c: enc(("t", [3, 4, 5]))})
    b.sync(1, "app-c", c)
    b.heartbeat(3000, "app-a", a)
    out = assert_chunking_invariant(b.steps)
    round1, round2 = out.rebalances[-2:]
    assert (round1["trigger"], round1["cooperative_follow_up"], round1["partitions_moved"]) == (
        "new_member",
        False,
        0,
    )
    assert (round2["trigger"], round2["trigger_client_reason"], round2["cooperative_follow_up"]) == (
        "leader_rejoin",
        "need to revoke partitions and re-join",
        True,
    )
    assert (round2["partitions_moved"], round2["protocol_name"]) == (3, coop)


def test_engine_static_member_restart_and_coordinator_move() -> None:
    from rebalance_replay.transforms.coordinator.types import ObservedResponse

    b = Broker(group_initial_rebalance_delay_ms=0)
    a = b.join(0, "app-a", instance="pod-a")
    s1 = b.join(10, "app-s", instance="pod-s")
    b.join(10, "app-a", a)
    b.sync(10, "app-a", a, {a: enc(("t", [0, 1, 2])), s1: enc(("t", [3, 4, 5]))})
    b.sync(1, "app-s", s1)
    s2 = b.join(5000, "app-s", instance="pod-s")  # restarted pod: replaced without a rebalance
    assert s2 != s1
    b.heartbeat(3000, "app-s", s2)
    # the coordinator moves: a NOT_COORDINATOR, then the group is served again and the leader rejoins
    b.send(
        1000,
        ApiKey.HEARTBEAT,
        "app-a",
        member_id=a,
        generation_id=b.model.generation_id,
        observed=ObservedResponse(error="NOT_COORDINATOR", completion_ms=b.now + 1000),
    )
    b.send(  # the group is served again (the broker answers normally)
        2000,
        ApiKey.HEARTBEAT,
        "app-s",
        member_id=s2,
        generation_id=b.model.generation_id,
        observed=ObservedResponse(error="NONE", completion_ms=b.now + 2000),
    )
    b.join(10, "app-a", a)
    b.join(10, "app-s", s2)
    b.sync(10, "app-a", a, {a: enc(("t", [0, 1, 2])), s2: enc(("t", [3, 4, 5]))})
    b.heartbeat(3000, "app-a", a)
    out = assert_chunking_invariant(b.steps)
    assert "Dead" in [r["to_state"] for r in out.transitions]
    last = out.rebalances[-1]
    assert (last["trigger"], last["outcome"], last["partitions_moved"]) == ("coordinator_moved", "stable", 0)
    s1_row = only(out.member_sessions, member_id=s1)
    assert (s1_row["end_reason"], s1_row["group_instance_id"]) == ("fenced", "pod-s")
    s2_first = only(out.member_sessions, member_id=s2, generation_id=s1_row["generation_id"])
    assert s2_first["end_reason"] == "next_generation" and s2_first["heartbeats"] >= 1
    assert not [r for r in out.member_sessions if r["end_reason"] == "dead"]


def test_engine_track_mode_warm_start() -> None:
    from rebalance_replay.transforms.coordinator.types import ObservedResponse

    b = Broker(mode="track", warm_start=True)
    x, y, z = "app-x-1", "app-y-2", "app-z-3"

    def ok(**kw: Any) -> ObservedResponse:
        return ObservedResponse(error=kw.pop("error", "NONE"), completion_ms=b.now, **kw)

    for _ in range(3):
        b.send(3000, ApiKey.HEARTBEAT, "app-x", member_id=x, generation_id=57, observed=ok())
        b.send(0, ApiKey.HEARTBEAT, "app-y", member_id=y, generation_id=57, observed=ok())
    joins = {
        "session_timeout_ms": 45_000,
        "rebalance_timeout_ms": 300_000,
        "protocol_type": "consumer",
        "protocols": (Protocol("range"),),
    }
    b.send(
        1000,
        ApiKey.JOIN_GROUP,
        "app-z",
        member_id="",
        observed=ok(error="MEMBER_ID_REQUIRED", member_id=z),
        **joins,
    )
    b.send(
        5,
        ApiKey.JOIN_GROUP,
        "app-z",
        member_id=z,
        observed=ok(generation_id=58, leader=x, member_id=z),
        **joins,
    )
    b.send(
        20,
        ApiKey.HEARTBEAT,
        "app-x",
        member_id=x,
        generation_id=57,
        observed=ok(error="REBALANCE_IN_PROGRESS"),
    )
    b.send(
        10,
        ApiKey.JOIN_GROUP,
        "app-x",
        member_id=x,
        observed=ok(generation_id=58, leader=x, member_id=x, protocol_name="range", members=(x, y, z)),
        **joins,
    )
    b.send(
        20,
        ApiKey.JOIN_GROUP,
        "app-y",
        member_id=y,
        observed=ok(generation_id=58, leader=x, member_id=y),
        **joins,
    )
    b.send(
        60,
        ApiKey.SYNC_GROUP,
        "app-x",
        member_id=x,
        generation_id=58,
        protocol_type="consumer",
        protocol_name="range",
        assignments=tuple(split_assignment([x, y, z]).items()),
        observed=ok(),
    )
    b.send(3000, ApiKey.HEARTBEAT, "app-z", member_id=z, generation_id=58, observed=ok())
    out = assert_chunking_invariant(b.steps)
    (r,) = out.rebalances
    # z's JoinGroup (a member the warm-started model had not seen) starts the rebalance
    assert (r["trigger"], r["generation_from"], r["generation_to"], r["members_after"]) == (
        "new_member",
        57,
        58,
        [x, y, z],
    )
    x57 = only(out.member_sessions, member_id=x, generation_id=57)
    assert (x57["client_id"], x57["end_reason"], x57["heartbeats"]) == ("app-x", "next_generation", 2)
    z58 = only(out.member_sessions, member_id=z, generation_id=58)
    assert (z58["session_timeout_ms"], z58["heartbeats"], z58["end_reason"]) == (45_000, 1, "open")


# --------------------------------------------------------------------------------------------------
# adoptions (track mode): typed STATE_ADOPTED events, no transition rows
# --------------------------------------------------------------------------------------------------


def adopt(s: Sim, to: GroupState, generation: int, why: str) -> None:
    frm, s.state, s.gen = s.state, to, generation
    s.ev(
        EventKind.STATE_ADOPTED,
        from_state=frm,
        cause=f"state {frm.value} -> {to.value}: {why}",
        trigger=Trigger.ADOPTED,
        adopted=True,
    )


def test_adopted_states_follow_the_broker_without_transition_rows() -> None:
    s = stable_group("a", "b")
    s.step(1000)
    adopt(s, PR, 1, "the broker is rebalancing")
    s.step(10)
    adopt(s, CR, 2, "JOIN_GROUP of a answered NONE")  # the join phase the model missed, at generation 2
    s.step(10)
    adopt(s, STABLE, 2, "SYNC_GROUP of a answered NONE")
    s.step(10).heartbeat("a")
    for chunks in (None, [1] * len(s.steps)):
        out = run(s.steps, chunks, serialise=True)
        assert [(t["from_state"], t["to_state"]) for t in out.transitions] == [
            ("Empty", "PreparingRebalance"),
            ("PreparingRebalance", "CompletingRebalance"),
            ("CompletingRebalance", "Stable"),
        ]  # the Kafka transitions of the group's formation only
        r = only(out.rebalances, rebalance_seq=2)
        assert (r["trigger"], r["outcome"], r["generation_from"], r["generation_to"]) == (
            "unknown",
            "stable",
            1,
            2,
        )
        assert r["trigger_cause"] == "state Stable -> PreparingRebalance: the broker is rebalancing"
        sessions = {(m["member_id"], m["generation_id"]): m["end_reason"] for m in out.member_sessions}
        assert sessions[("a", 1)] == sessions[("b", 1)] == "next_generation"


def test_inferred_members_are_not_joins() -> None:
    s = stable_group("a")
    s.step(1000)
    s.ev(EventKind.MEMBER_ADDED, member_id="z", inferred=True, cause="inferred: HEARTBEAT of z answered NONE")
    s.step(10)
    s.transition(PR, None)
    r = only(run(s.steps).rebalances, rebalance_seq=2)
    assert (r["joined"], r["members_before"]) == ([], ["a", "z"])


def test_the_tracker_reads_typed_values_never_the_reason_text() -> None:
    """The causing member and the client's reason come from the events' typed fields: a cause text that
    names a member and a reason the events do not carry is only written out (``trigger_cause``)."""
    s = stable_group("a", "b")
    text = "Updating metadata for member zz during Stable; client reason: only in the text"
    s.step(1000).transition(PR, text, None)
    s.step(1000).transition(CR, None, timer=True)
    s.step(10).transition(STABLE, None, "a")
    s.step(1000).transition(PR, "a cause in no Kafka wording", None, client_reason="typed reason")
    out = run(s.steps)
    untyped = only(out.rebalances, rebalance_seq=2)
    assert (untyped["trigger_cause"], untyped["trigger_member_id"], untyped["trigger_client_reason"]) == (
        text,
        None,
        None,
    )
    typed = only(out.rebalances, rebalance_seq=3)
    assert (typed["trigger_member_id"], typed["trigger_client_reason"]) == (None, "typed reason")
