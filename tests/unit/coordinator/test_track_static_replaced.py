"""Track mode, warm start: a static member seen only through its heartbeats, then a heartbeat of another
member id with the same group instance id, which the broker accepts. Kafka's coordinator holds one member
per instance id: a restarted static member's JoinGroup replaces the old member id with a new one
(``replaceStaticMember``, KIP-345; docs/coordinator-semantics.md §4.6), and this log lost that JoinGroup.
The model infers the replacement, and its event names the instance, the new member and the old one (found
by mutation testing, stop 55: the instance id dropped from the event passed every test)."""

from rebalance_replay.transforms.coordinator.config import CoordinatorConfig
from rebalance_replay.transforms.coordinator.model import GroupCoordinatorModel
from rebalance_replay.transforms.coordinator.types import EventKind, GroupRequest, ObservedResponse
from rebalance_replay.transforms.kafka_protocol import ApiKey

GROUP = "orders"


def _heartbeat(at: int, member_id: str, generation: int) -> GroupRequest:
    return GroupRequest(
        ApiKey.HEARTBEAT,
        4,
        GROUP,
        at,
        member_id=member_id,
        group_instance_id="orders-pod-0",
        generation_id=generation,
        observed=ObservedResponse(error="NONE", completion_ms=at),
    )


def test_a_static_members_new_member_id_replaces_the_old_one() -> None:
    model = GroupCoordinatorModel(
        GROUP, CoordinatorConfig(kafka_version="3.7", mode="track", warm_start=True)
    )
    model.handle(_heartbeat(0, "orders-pod-0-aaa", 4))
    model.drain()
    model.handle(_heartbeat(5000, "orders-pod-0-bbb", 5))
    _, events = model.drain()
    replaced = [e for e in events if e.kind is EventKind.STATIC_MEMBER_REPLACED]
    assert [(e.member_id, e.group_instance_id, e.detail, e.inferred) for e in replaced] == [
        ("orders-pod-0-bbb", "orders-pod-0", "orders-pod-0-aaa", True)
    ]
    assert model.group is not None and list(model.group.members) == ["orders-pod-0-bbb"]
    assert model.group.static_members == {"orders-pod-0": "orders-pod-0-bbb"}
    assert model.group.generation_id == 5
