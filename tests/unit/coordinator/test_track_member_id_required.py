"""Track mode, pending members (KIP-394) the broker and the model disagree on.

1. The broker handed a new member an id (MEMBER_ID_REQUIRED, Kafka 2.2+) where the model refused the
   join: the broker's configuration differs from the model's (here its ``group.min.session.timeout.ms`` is
   lower than the model's 6000 ms default, so the model answered INVALID_SESSION_TIMEOUT). Kafka's
   coordinator (``doNewMemberJoinGroup`` with a required known member id) records the new id as a pending
   member and schedules its expiration after the request's session timeout
   (``addPendingMemberExpiration``): a pending member that never rejoins is removed then. The model takes
   the broker's answer the same way, and says that it inferred it and from which answer.
2. The broker refused that pending member's JoinGroup with GROUP_MAX_SIZE_REACHED while the join phase
   waited for it. docs/coordinator-semantics.md §4.2: in PreparingRebalance ``acceptJoiningMember`` counts
   the members awaiting join, a refused member is removed, then the join phase may end early (since Kafka
   3.0 removing an id drops it from the pending set too; before, a pending id refused so stayed pending
   until its session expired: ../shared/reference's version notes). So the two members waiting get
   generation 3 at that instant.

Both found by mutation testing (stop 55): no test took these branches of ``_reconcile_join``."""

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

GROUP = "orders"
PROTOCOLS = (Protocol("range", b"m"),)


def _join(
    at: int, member_id: str, observed: ObservedResponse, session_ms: int = 10_000, version: int = 5
) -> GroupRequest:
    return GroupRequest(
        ApiKey.JOIN_GROUP,
        version,
        GROUP,
        at,
        member_id=member_id,
        client_id="consumer-orders-1",
        session_timeout_ms=session_ms,
        rebalance_timeout_ms=30_000,
        protocol_type="consumer",
        protocols=PROTOCOLS,
        observed=observed,
    )


def _required(at: int, member_id: str) -> ObservedResponse:
    """The broker's MEMBER_ID_REQUIRED answer handing ``member_id`` to a new member (KIP-394)."""
    return ObservedResponse(
        error="MEMBER_ID_REQUIRED", generation_id=-1, member_id=member_id, completion_ms=at
    )


def _answered(
    at: int, member_id: str, generation: int, members: tuple[str, ...] | None = None
) -> ObservedResponse:
    return ObservedResponse(
        error="NONE",
        generation_id=generation,
        leader="a-1",
        member_id=member_id,
        protocol_name="range",
        members=members,
        completion_ms=at,
    )


def _sync(
    at: int, member_id: str, generation: int, assignments: tuple[tuple[str, bytes | None], ...] = ()
) -> GroupRequest:
    return GroupRequest(
        ApiKey.SYNC_GROUP,
        5,
        GROUP,
        at,
        member_id=member_id,
        generation_id=generation,
        protocol_type="consumer",
        protocol_name="range",
        assignments=assignments,
        observed=ObservedResponse(error="NONE", assignment=b"x", completion_ms=at),
    )


def test_a_member_id_the_broker_handed_out_is_pending_until_its_session_ends() -> None:
    model = GroupCoordinatorModel(
        GROUP, CoordinatorConfig(kafka_version="2.3", mode="track", group_initial_rebalance_delay_ms=0)
    )
    stable = [
        _join(0, "", _required(0, "a-1")),
        _join(1, "a-1", _answered(1, "a-1", 1, ("a-1",))),
        _sync(2, "a-1", 1, (("a-1", b"x"),)),
    ]
    for request in stable:
        model.handle(request)
    model.drain()
    assert model.group is not None and model.group.state is GroupState.STABLE

    # a second consumer with a 3 s session: the model (minimum 6 s) refuses it, the broker hands out b-1
    model.handle(
        _join(
            100,
            "",
            _required(100, "b-1"),
            session_ms=3000,
        )
    )
    (answer,), events = model.drain()
    assert answer.response.error == "INVALID_SESSION_TIMEOUT" and answer.reconciled
    added = [e for e in events if e.kind is EventKind.PENDING_MEMBER_ADDED]
    assert [(e.member_id, e.inferred, e.cause) for e in added] == [
        ("b-1", True, "reconciled: JOIN_GROUP of <new member> answered MEMBER_ID_REQUIRED")
    ]
    assert list(model.group.pending_members) == ["b-1"] and list(model.group.members) == ["a-1"]
    assert model.group.state is GroupState.STABLE  # a pending member starts no rebalance

    # b-1 never rejoins: Kafka removes the pending member when the request's 3 s session timeout passes
    model.advance_to(100 + 3000 - 1)
    assert [e.kind for e in model.drain()[1] if e.member_id == "b-1"] == []
    model.advance_to(100 + 3000)
    removed = [e for e in model.drain()[1] if e.kind is EventKind.PENDING_MEMBER_REMOVED]
    assert [e.member_id for e in removed] == ["b-1"]
    assert not model.group.pending_members and list(model.group.members) == ["a-1"]


def a_waits_for_c() -> GroupCoordinatorModel:
    """A 3.7 group of a-1 and c-1 (group.max.size 2) in track mode, as the log shows it: generation 2 Stable,
    then a-1 rejoins at 100 and waits in PreparingRebalance for c-1 (the broker answered it at 300)."""
    model = GroupCoordinatorModel(
        GROUP,
        CoordinatorConfig(
            kafka_version="3.7", mode="track", group_initial_rebalance_delay_ms=0, group_max_size=2
        ),
    )
    both = (("a-1", b"x"), ("c-1", b"x"))
    requests = [
        _join(0, "", _required(0, "a-1"), version=7),
        _join(1, "a-1", _answered(1, "a-1", 1, ("a-1",)), version=7),
        _sync(2, "a-1", 1, (("a-1", b"x"),)),
        _join(10, "", _required(10, "c-1"), version=7),
        _join(11, "c-1", _answered(13, "c-1", 2), version=7),
        _join(13, "a-1", _answered(13, "a-1", 2, ("a-1", "c-1")), version=7),
        _sync(14, "c-1", 2),
        _sync(15, "a-1", 2, both),
        _join(100, "a-1", _answered(300, "a-1", 3, ("a-1", "c-1")), version=7),
    ]
    for line, request in enumerate(requests, 1):
        model.handle(replace(request, ref=("broker-1/kafka-request.log", line)))
    model.drain()
    return model


def test_a_pending_member_the_broker_refuses_for_size_no_longer_holds_the_join_phase() -> None:
    model = a_waits_for_c()
    requests = [
        # a third consumer, 3 s session: the model refuses it (minimum 6 s), the broker hands out b-1
        _join(200, "", _required(200, "b-1"), session_ms=3000, version=7),
        # c-1 rejoins: every member awaits the join, but the pending b-1 holds the phase open (both sides)
        _join(250, "c-1", _answered(300, "c-1", 3), version=7),
    ]
    for request in requests:
        model.handle(request)
    model.drain()
    assert model.group is not None and model.group.state is GroupState.PREPARING_REBALANCE
    assert list(model.group.pending_members) == ["b-1"]

    # b-1 rejoins; two members await the join and group.max.size is 2: GROUP_MAX_SIZE_REACHED, b-1 leaves the
    # pending set, and the join phase completes at once with a-1 and c-1
    refused = ObservedResponse(
        error="GROUP_MAX_SIZE_REACHED", generation_id=-1, member_id="", completion_ms=300
    )
    model.handle(_join(300, "b-1", refused, session_ms=3000, version=7))
    answers, events = model.drain()
    by_member = {a.request.member_id: a for a in answers}
    assert sorted(by_member) == ["a-1", "b-1", "c-1"]
    for member in ("a-1", "c-1"):
        response = by_member[member].response
        assert (response.error, response.generation_id, response.completion_ms) == ("NONE", 3, 300)
        assert not by_member[member].reconciled  # the model's own answer, as the broker gave it
    assert by_member["b-1"].reconciled
    removed = [e for e in events if e.kind is EventKind.PENDING_MEMBER_REMOVED]
    assert [(e.member_id, e.inferred) for e in removed] == [("b-1", True)]
    assert model.group.state is GroupState.COMPLETING_REBALANCE and model.group.generation_id == 3
    assert sorted(model.group.members) == ["a-1", "c-1"] and not model.group.pending_members
