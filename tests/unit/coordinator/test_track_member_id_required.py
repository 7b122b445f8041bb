"""Track mode: the broker handed a new member an id (MEMBER_ID_REQUIRED, KIP-394, Kafka 2.2+) where the
model refused the join: the broker's configuration differs from the model's (here its
``group.min.session.timeout.ms`` is lower than the model's 6000 ms default, so the model answered
INVALID_SESSION_TIMEOUT). Kafka's coordinator (``doNewMemberJoinGroup`` with a required known member id)
records the new id as a pending member and schedules its expiration after the request's session timeout
(``addPendingMemberExpiration``): a pending member that never rejoins is removed then. The model takes the
broker's answer the same way, and says that it inferred it and from which answer (found by mutation
testing: no test took this branch)."""

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


def _join(at: int, member_id: str, observed: ObservedResponse, session_ms: int = 10_000) -> GroupRequest:
    return GroupRequest(
        ApiKey.JOIN_GROUP,
        5,
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


def test_a_member_id_the_broker_handed_out_is_pending_until_its_session_ends() -> None:
    model = GroupCoordinatorModel(
        GROUP, CoordinatorConfig(kafka_version="2.3", mode="track", group_initial_rebalance_delay_ms=0)
    )
    stable = [
        _join(
            0,
            "",
            ObservedResponse(error="MEMBER_ID_REQUIRED", generation_id=-1, member_id="a-1", completion_ms=0),
        ),
        _join(
            1,
            "a-1",
            ObservedResponse(
                error="NONE",
                generation_id=1,
                leader="a-1",
                member_id="a-1",
                protocol_name="range",
                members=("a-1",),
                completion_ms=1,
            ),
        ),
        GroupRequest(
            ApiKey.SYNC_GROUP,
            3,
            GROUP,
            2,
            member_id="a-1",
            generation_id=1,
            assignments=(("a-1", b"x"),),
            observed=ObservedResponse(error="NONE", assignment=b"x", completion_ms=2),
        ),
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
            ObservedResponse(
                error="MEMBER_ID_REQUIRED", generation_id=-1, member_id="b-1", completion_ms=100
            ),
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
