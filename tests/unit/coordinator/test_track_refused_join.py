"""Regression (found by hypothesis): warm start in track mode, every request stamped at the same
millisecond. A JoinGroup the model admits (the group's protocol is unknown: its only member is inferred)
is refused by the broker with INCONSISTENT_GROUP_PROTOCOL; before that answer is due, the join phase
completes with members that share no protocol. The model must keep going (no "no protocol can be
selected" crash), stop trusting its answers, and still answer every request."""

from dataclasses import replace

from rebalance_replay.transforms.coordinator.config import CoordinatorConfig
from rebalance_replay.transforms.coordinator.model import GroupCoordinatorModel
from rebalance_replay.transforms.coordinator.types import (
    EventKind,
    GroupRequest,
    GroupState,
    ObservedResponse,
    Protocol,
)
from rebalance_replay.transforms.kafka_protocol import ApiKey
from tests.unit.coordinator.test_coordinator_properties import GROUP, check_group, drive, with_answers

ACTIONS = [
    ("join", 2, 0, 10, 2),
    ("sync", 0, 0, 0, 0),
    ("join", 0, 0, 0, 3),
    ("join", 0, 0, 0, 3),
    ("join", 0, 0, 0, 3),
    ("join", 0, 0, 2, 0),
    ("join", 3, 0, 1, 0),
    ("sync", 0, 0, 1, 0),
    ("sync", 1, 0, 1, 2),
    *[("join", 0, 0, 0, 0)] * 9,
    ("join", 2, 0, 0, 0),
]


def test_join_phase_without_a_shared_protocol_loses_confidence_instead_of_crashing() -> None:
    config = CoordinatorConfig(
        kafka_version="2.2",
        group_min_session_timeout_ms=6000,
        group_initial_rebalance_delay_ms=0,
        group_max_size=2,
        timer_rule="strict",
        emit_liveness_events=True,
    )
    requests, preds, _, _ = drive(config, ACTIONS, 1)
    observed = with_answers(requests, preds)
    suffix = observed[len(observed) // 3 :]
    warm = GroupCoordinatorModel(GROUP, replace(config, mode="track", warm_start=True))
    out = []
    events = []
    for req in suffix:
        warm.handle(req)
        p, e = warm.drain()
        out.extend(p)
        events.extend(e)
        check_group(warm)
    warm.advance_to(suffix[-1].arrival_ms + 10 * 24 * 3600 * 1000)
    out.extend(warm.drain()[0])
    assert sorted(p.seq for p in out) == list(range(len(suffix)))
    assert any(
        e.kind is EventKind.WARM_START and "no protocol shared by every member" in (e.detail or "")
        for e in events
    )


def test_a_fenced_first_join_of_a_warm_start_leaves_the_group_empty() -> None:
    """Regression (found by hypothesis): a warm-started model in track mode meets a group it has never seen
    with a static member's JoinGroup (empty member id) that the broker answers FENCED_INSTANCE_ID (another
    member holds the instance there). The model had taken the joiner in as the group's only member and
    completed the join phase; the broker refused it, so the member goes and the group is Empty — before,
    CompletingRebalance with no member and no leader, a state Kafka never holds."""
    warm = GroupCoordinatorModel(
        GROUP,
        CoordinatorConfig(
            kafka_version="2.3", mode="track", warm_start=True, group_initial_rebalance_delay_ms=0
        ),
    )
    join = GroupRequest(
        ApiKey.JOIN_GROUP,
        5,
        GROUP,
        0,
        member_id="",
        group_instance_id="instance-0",
        client_id="client-0",
        session_timeout_ms=10_000,
        rebalance_timeout_ms=30_000,
        protocol_type="consumer",
        protocols=(Protocol("range", b"m"),),
        observed=ObservedResponse(
            error="FENCED_INSTANCE_ID", generation_id=-1, leader="", member_id="instance-0-1", completion_ms=0
        ),
    )
    warm.handle(join)
    (answer,), _ = warm.drain()
    check_group(warm)
    assert answer.reconciled  # the model had said NONE
    assert warm.group is not None and warm.group.state is GroupState.EMPTY and not warm.group.members
