"""The audit's shared arithmetic on hand-made inputs: the cost of the rebalances a finding names, the
rebalances a set of members caused, a finding's window. (Mutation testing found these unchecked.)"""

from __future__ import annotations

from dataclasses import replace

from rebalance_replay.transforms.audit import GroupInputs
from rebalance_replay.transforms.audit.base import (
    answered_as_member,
    cost,
    make_finding,
    rebalances_caused_by,
)
from rebalance_replay.transforms.audit.config import R02Settings
from rebalance_replay.transforms.audit.model import Rebalance, Req, Transition
from tests.helpers import audit_request


def _rb(seq: int, *, duration: int | None = 500, **kw: object) -> Rebalance:
    base = Rebalance(
        rebalance_seq=seq,
        generation_from=seq,
        generation_to=seq + 1,
        started_ms=10_000 * seq,
        ended_ms=10_000 * seq + (duration or 0),
        total_duration_ms=duration,
        outcome="stable",
        trigger="new_member",
        trigger_member_id="m1",
        members_before=("m1", "m2"),
        members_after=("m1", "m2"),
    )
    return replace(base, **kw)  # type: ignore[arg-type]


def _req(t: int, member: str = "m1") -> Req:
    return audit_request(t, api_name="JOIN_GROUP", api_version=9, member_id=member, client_id="c1")


def test_cost_adds_durations_and_members_times_seconds() -> None:
    rbs = [
        _rb(0),  # 2 members x 0.5 s
        _rb(1, duration=2000, members_after=("m1", "m2", "m3")),  # 3 members (before ∪ after) x 2 s
        _rb(2, duration=None),  # still open: no duration, no cost
    ]
    gi = GroupInputs.build("g", requests=[_req(1)], rebalances=rbs)
    assert cost(gi, [1, 0, 1, 2, 7]) == {
        "rebalance_time_caused_ms": 2500.0,
        "member_seconds_without_assignment": 7.0,
    }
    assert cost(gi, []) == {"rebalance_time_caused_ms": 0.0, "member_seconds_without_assignment": 0.0}


def test_rebalances_caused_by_trigger_member_evicted_or_left() -> None:
    rbs = [
        _rb(0, trigger="new_member", trigger_member_id="m3"),
        _rb(1, trigger="member_left", trigger_member_id="m9", left=("m3",)),
        _rb(2, trigger="session_expired", trigger_member_id="m9", evicted=("m3",)),
        _rb(3, trigger="member_left", trigger_member_id="m9", left=("m4",)),
    ]
    gi = GroupInputs.build("g", requests=[_req(1)], rebalances=rbs)
    assert rebalances_caused_by(gi, ["m3"], ["new_member", "member_left", "session_expired"]) == [0, 1, 2]
    assert rebalances_caused_by(gi, ["m3"], ["member_left"]) == [1]
    assert rebalances_caused_by(gi, ["m3"], ["session_expired"]) == [2]
    assert rebalances_caused_by(gi, ["m5"], ["member_left", "session_expired", "new_member"]) == []


def test_a_findings_window_spans_its_evidence_unless_given() -> None:
    gi = GroupInputs.build("g", requests=[_req(1000), _req(3000)], rebalances=[_rb(0)])
    common = {
        "severity": "info",
        "confidence": 1.0,
        "members": ["m1"],
        "occurrences": 1,
        "summary": "s",
        "fix": "f",
    }
    f = make_finding(gi, R02Settings(), 10, evidence=[_req(3000), _req(1000)], **common)  # type: ignore[arg-type]
    assert (f.window_start_ms, f.window_end_ms) == (1000, 3000)
    assert (f.rule_id, f.rule) == ("R02", "session-timeout-eviction")  # the rule of the settings given
    assert gi.group_id == f.group_id == "g"
    f = make_finding(
        gi, R02Settings(), 10, evidence=[_req(1000)], window=(500, 2500), rebalance_seqs=[0], **common
    )  # type: ignore[arg-type]
    assert (f.window_start_ms, f.window_end_ms) == (500, 2500)
    assert (
        f.metric("rebalance_time_caused_ms") == 500.0 and f.metric("member_seconds_without_assignment") == 1.0
    )


def test_answered_as_member_reads_the_brokers_answer() -> None:
    """Kafka validates the member before the generation and the state (3.7.1 ``validateCurrentMember``
    in ``validateHeartbeat`` / ``validateSyncGroup`` / ``validateOffsetCommit`` and the known-member
    JoinGroup): NONE, REBALANCE_IN_PROGRESS and ILLEGAL_GENERATION are only ever told a member;
    UNKNOWN_MEMBER_ID and FENCED_INSTANCE_ID say it is not one; anything else tells nothing."""

    def req(api: str, error: str | None, member: str = "m1", generation: int | None = 3) -> Req:
        return _req(5, member)._replace(api_name=api, error_name=error, generation_id=generation)

    cases = {
        ("HEARTBEAT", "NONE"): True,
        ("HEARTBEAT", "REBALANCE_IN_PROGRESS"): True,
        ("SYNC_GROUP", "ILLEGAL_GENERATION"): True,
        ("JOIN_GROUP", "NONE"): True,
        ("OFFSET_COMMIT", "NONE"): True,
        ("HEARTBEAT", "UNKNOWN_MEMBER_ID"): False,
        ("JOIN_GROUP", "FENCED_INSTANCE_ID"): False,
        ("OFFSET_COMMIT", "UNKNOWN_MEMBER_ID"): False,
        ("HEARTBEAT", "NOT_COORDINATOR"): None,
        ("JOIN_GROUP", "COORDINATOR_LOAD_IN_PROGRESS"): None,
        ("SYNC_GROUP", None): None,
        ("LEAVE_GROUP", "NONE"): None,
        ("LEAVE_GROUP", "UNKNOWN_MEMBER_ID"): None,
    }
    for (api, error), verdict in cases.items():
        assert answered_as_member(req(api, error), "m1") is verdict, (api, error)
    # another member's request, or a commit without a generation (any client may make one), says nothing
    assert answered_as_member(req("HEARTBEAT", "NONE", member="m2"), "m1") is None
    assert answered_as_member(req("HEARTBEAT", "UNKNOWN_MEMBER_ID", member="m2"), "m1") is None
    assert answered_as_member(req("OFFSET_COMMIT", "NONE", generation=-1), "m1") is None
    assert answered_as_member(req("OFFSET_COMMIT", "UNKNOWN_MEMBER_ID", generation=None), "m1") is None


def test_one_requests_transitions_come_in_one_order_whatever_order_they_came_in() -> None:
    """The last member leaving moves Stable → PreparingRebalance → Empty in one request (same seq and
    time; Kafka bumps the generation on the way to Empty): the generation orders them, then the states
    and the member, so the inputs do not depend on the order Spark hands the rows over."""
    chain = [
        Transition(seq=7, time_ms=5_000, from_state="Empty", to_state="PreparingRebalance", generation_id=1),
        Transition(7, 9_000, "Stable", "PreparingRebalance", 3, "m1"),
        Transition(7, 9_000, "PreparingRebalance", "Empty", 4),
        Transition(7, 9_000, "PreparingRebalance", "Empty", 4, "m2"),
        Transition(7, 9_000, "PreparingRebalance", "Dead", 4),
        Transition(8, 1_000, "Empty", "Dead", 4),
    ]
    for order in (chain, chain[::-1], [chain[3], chain[5], chain[1], chain[4], chain[0], chain[2]]):
        gi = GroupInputs.build("g", requests=[_req(1)], transitions=order)
        assert gi.transitions == (chain[0], chain[1], chain[4], chain[2], chain[3], chain[5])
