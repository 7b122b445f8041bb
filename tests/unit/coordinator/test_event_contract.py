"""The typed contract between the model and the rebalance tracker (issue 9): every state change is a
TRANSITION carrying a typed trigger and the causing member, reconciliation's adoptions included (marked
``adopted``); discovered members are ``inferred``; observed errors are ``Errors``; and the one saved-state
format (framing, version header, tagged values)."""

from __future__ import annotations

import json
import zlib
from dataclasses import replace
from datetime import date

import pytest

from rebalance_replay.transforms.coordinator import causes
from rebalance_replay.transforms.coordinator.codec import FORMAT_VERSION, Codec, SavedStateError, pack, unpack
from rebalance_replay.transforms.coordinator.config import VersionFeatures
from rebalance_replay.transforms.coordinator.model import GroupCoordinatorModel
from rebalance_replay.transforms.coordinator.state import ClassicGroup, IllegalStateTransition
from rebalance_replay.transforms.coordinator.types import (
    Cause,
    EventKind,
    GroupRequest,
    GroupState,
    LeaveMember,
    ModelEvent,
    ObservedResponse,
    Protocol,
    Trigger,
)
from rebalance_replay.transforms.kafka_protocol import ApiKey, Errors
from tests.unit.coordinator.scenario import default_config

G = "group"


def join(t: int, member: str = "", **kw: object) -> GroupRequest:
    return GroupRequest(
        ApiKey.JOIN_GROUP,
        3,  # before KIP-394: a new member is added at once
        G,
        t,
        member_id=member,
        client_id="c",
        session_timeout_ms=10_000,
        rebalance_timeout_ms=30_000,
        protocol_type="consumer",
        protocols=(Protocol("range", b"m"),),
        **kw,
    )  # type: ignore[arg-type]


def transitions(events: list[ModelEvent]) -> list[ModelEvent]:
    return [e for e in events if e.kind is EventKind.TRANSITION]


def test_kafka_transitions_carry_a_typed_trigger_and_the_causing_member() -> None:
    model = GroupCoordinatorModel(G, default_config())
    model.handle(join(0))
    model.advance_to(10_000)
    _preds, events = model.drain()
    added = next(e for e in events if e.kind is EventKind.MEMBER_ADDED)
    assert added.inferred is False and added.member_id
    first, completed = transitions(events)
    assert (first.from_state, first.state, first.trigger, first.member_id, first.adopted) == (
        GroupState.EMPTY,
        GroupState.PREPARING_REBALANCE,
        Trigger.NEW_MEMBER,
        added.member_id,
        False,
    )
    assert first.cause is not None and first.cause.startswith(f"Adding new member {added.member_id}")
    assert (completed.state, completed.trigger) == (GroupState.COMPLETING_REBALANCE, Trigger.JOIN_COMPLETED)


def test_reconciliation_adopts_through_transitions_marked_adopted() -> None:
    """Warm start: an accepted heartbeat of an unknown member at generation 7 proves the group, the
    member, the generation and the Stable state — all typed, none silent."""
    model = GroupCoordinatorModel(G, default_config(mode="track", warm_start=True))
    hb = GroupRequest(
        ApiKey.HEARTBEAT,
        4,
        G,
        1_000,
        member_id="m-1",
        generation_id=7,
        observed=ObservedResponse(error="NONE"),
    )
    model.handle(hb)
    _preds, events = model.drain()
    added = [e for e in events if e.kind is EventKind.MEMBER_ADDED]
    assert [(e.member_id, e.inferred) for e in added] == [("m-1", True)]
    assert not transitions(events)  # not Kafka transitions ...
    adopted = [e for e in events if e.kind is EventKind.STATE_ADOPTED]  # ... but typed adoptions
    assert adopted and all(e.adopted and e.trigger is Trigger.ADOPTED for e in adopted)
    # the generation is adopted while the state stays, then the state
    assert (adopted[0].from_state, adopted[0].state, adopted[0].generation_id) == (
        GroupState.EMPTY,
        GroupState.EMPTY,
        7,
    )
    assert (adopted[-1].from_state, adopted[-1].state) == (GroupState.EMPTY, GroupState.STABLE)
    assert model.state is GroupState.STABLE and model.generation_id == 7
    # every change of state or generation the events show comes with a transition or an adoption
    last: tuple[GroupState | None, int | None] = (None, None)
    for e in events:
        now = (e.state, e.generation_id)
        if last[0] not in (None, GroupState.DEAD) and now != last:
            assert e.kind in (EventKind.TRANSITION, EventKind.STATE_ADOPTED), e
        last = now


def test_external_errors_are_typed() -> None:
    model = GroupCoordinatorModel(G, default_config())
    model.handle(join(0, observed=ObservedResponse(error="NOT_COORDINATOR")))
    _preds, events = model.drain()
    ext = next(e for e in events if e.kind is EventKind.EXTERNAL_ERROR)
    assert ext.error is Errors.NOT_COORDINATOR


def test_transition_to_checks_kafkas_table_unless_adopted() -> None:
    seen: list[tuple[GroupState, GroupState, Trigger, bool]] = []
    group = ClassicGroup(
        G, lambda g, prev, cause, _m, adopted: seen.append((prev, g.state, cause.trigger, adopted))
    )
    with pytest.raises(IllegalStateTransition):
        group.transition_to(GroupState.STABLE, Cause(Trigger.SYNC_COMPLETED, "x"))
    assert group.state is GroupState.EMPTY and not seen
    group.transition_to(GroupState.STABLE, Cause(Trigger.ADOPTED, "broker says so"), adopted=True)
    group.transition_to(GroupState.PREPARING_REBALANCE, Cause(Trigger.SESSION_EXPIRY, "gone"), "m")
    assert seen == [
        (GroupState.EMPTY, GroupState.STABLE, Trigger.ADOPTED, True),
        (GroupState.STABLE, GroupState.PREPARING_REBALANCE, Trigger.SESSION_EXPIRY, False),
    ]
    assert group.previous_state is GroupState.STABLE


# ------------------------------------------------------------------------------ saved-state format
def test_codec_round_trips_every_form() -> None:
    codec = Codec(classes=(Protocol,), enums=(GroupState, Errors))
    value = {
        "bytes": b"\x00\xff",
        "tuple": (1, "a", None),
        "list": [1, [2, 3]],
        ("tuple", 1): {3: "int keys"},
        "set": {"b", "a"},
        "date": date(2024, 2, 29),
        "enums": [GroupState.STABLE, Errors.NOT_COORDINATOR],
        "dataclass": Protocol("range", b"m", 1),
        "dollar": {"$d": "a plain dict that looks like a tag"},
    }
    encoded = codec.encode(value)
    assert codec.decode(json.loads(json.dumps(encoded))) == value
    with pytest.raises(TypeError):
        codec.encode(object())


def test_saved_state_has_one_header_and_refuses_other_versions() -> None:
    data = pack(b"TEST", {"x": 1})
    assert data[:4] == b"TEST" and data[4] == FORMAT_VERSION
    assert unpack(b"TEST", data, "thing") == {"x": 1}
    with pytest.raises(SavedStateError, match=f"format version {FORMAT_VERSION + 1}"):
        unpack(b"TEST", data[:4] + bytes([FORMAT_VERSION + 1]) + data[5:], "thing")
    earlier = zlib.compress(json.dumps({"v": 2, "model": "..."}).encode())
    with pytest.raises(SavedStateError, match=r"earlier version.*v=2"):
        unpack(b"TEST", earlier, "thing")
    with pytest.raises(SavedStateError, match="not a saved thing"):
        unpack(b"TEST", b"garbage", "thing")


def test_model_state_round_trips_with_pending_outputs() -> None:
    model = GroupCoordinatorModel(G, default_config(mode="track", warm_start=True))
    model.handle(join(0, observed=ObservedResponse(error="NONE", completion_ms=5_000)))
    data = model.to_bytes()
    back = GroupCoordinatorModel.from_bytes(data, default_config(mode="track", warm_start=True))
    assert back.to_bytes() == data
    assert back.drain() == model.drain()
    assert list(back.book.parked) == list(model.book.parked) == [0]  # the parked JoinGroup
    assert (back.book.seq, back.book.now, back.book.confident) == (model.book.seq, model.book.now, False)


# ------------------------------------------------------------------------------ typed causes and errors
def test_a_transition_carries_the_member_and_the_client_reason_its_cause_shows() -> None:
    def first_transition(kafka_version: str, reason: str) -> ModelEvent:
        model = GroupCoordinatorModel(G, default_config(kafka_version=kafka_version))
        model.handle(replace(join(0), api_version=8, reason=reason))  # KIP-394: MEMBER_ID_REQUIRED
        member_id = model.drain()[0][0].response.member_id
        assert member_id
        model.handle(replace(join(1, member_id), api_version=8, reason=reason))
        first = transitions(model.drain()[1])[0]
        assert first.member_id == member_id and first.trigger is Trigger.NEW_MEMBER
        assert first.cause is not None and first.cause.startswith(f"Adding new member {member_id}")
        return first

    first = first_transition("3.7", " boot. ")
    assert first.cause is not None and first.cause.endswith("; client reason:  boot. ")
    assert first.client_reason == "boot"  # as the text shows it: trimmed, no final full stop
    old = first_transition("3.1", "boot")  # prints no client reason
    assert old.client_reason is None and old.cause is not None and "client reason" not in old.cause


def test_causes_name_their_member_and_reason_as_typed_values() -> None:
    f = VersionFeatures.of(default_config(kafka_version="3.7"))
    c = causes.leave_group(f, "m-1", "not provided")
    assert (c.trigger, c.member_id, c.client_reason) == (Trigger.MEMBER_LEFT, "m-1", None)
    c = causes.leader_rejoining(f, "m-2", "Stable", "need to revoke partitions.")
    assert (c.trigger, c.member_id, c.client_reason) == (
        Trigger.LEADER_REJOIN,
        "m-2",
        "need to revoke partitions",
    )
    assert c.text == "Leader m-2 re-joining group during Stable; client reason: need to revoke partitions."
    assert causes.heartbeat_expiration(f, "m-3").member_id == "m-3"
    assert causes.pending_sync_expiration(f, ["x", "y"]).member_id is None  # names several


def test_predicted_responses_carry_errors_members_also_after_a_restore() -> None:
    model = GroupCoordinatorModel(G, default_config())
    model.handle(GroupRequest(ApiKey.HEARTBEAT, 4, G, 0, member_id="nobody", generation_id=1))
    model.handle(GroupRequest(ApiKey.LEAVE_GROUP, 3, G, 1, leave_members=(LeaveMember("nobody"),)))
    model.handle(
        GroupRequest(
            ApiKey.OFFSET_COMMIT, 8, G, 2, member_id="nobody", generation_id=1, commit_partitions=(("t", 0),)
        )
    )
    model.handle(replace(join(3), api_version=4))  # MEMBER_ID_REQUIRED, left undrained across a restore
    restored = GroupCoordinatorModel.from_bytes(model.to_bytes(), default_config())
    preds, events = restored.drain()
    hb, leave, commit, joined = (p.response for p in preds)
    assert hb.error is Errors.UNKNOWN_MEMBER_ID
    assert leave.error is Errors.NONE and leave.member_errors == (("nobody", Errors.UNKNOWN_MEMBER_ID),)
    assert leave.member_errors is not None and leave.member_errors[0][1] is Errors.UNKNOWN_MEMBER_ID
    assert commit.partition_errors is not None
    assert [e for _t, _p, e in commit.partition_errors] == [Errors.ILLEGAL_GENERATION]
    assert all(type(e) is Errors for _t, _p, e in commit.partition_errors)
    assert joined.error is Errors.MEMBER_ID_REQUIRED
    assert all(type(e.kind) is EventKind and type(e.state) is GroupState for e in events)


def test_errors_are_their_names_with_their_wire_codes() -> None:
    assert Errors.NOT_COORDINATOR == "NOT_COORDINATOR" and Errors.NOT_COORDINATOR.code == 16
    assert Errors.name_of(16) == "NOT_COORDINATOR" and Errors.name_of(9999) == "UNKNOWN_ERROR_9999"
    assert Errors.named("NONE") is Errors.NONE
    unknown = Errors.named("UNKNOWN_ERROR_74")
    assert (unknown, unknown.code, str(unknown)) == ("UNKNOWN_ERROR_74", 74, "UNKNOWN_ERROR_74")
    with pytest.raises(KeyError):
        Errors.named("NOT_AN_ERROR")
    assert len({e.code for e in Errors}) == len(Errors)  # one member per code


@pytest.mark.parametrize("implementation", ["scala", "java"])
def test_a_pending_member_that_leaves_is_removed_by_name(implementation: str) -> None:
    """KIP-394: a JoinGroup v4 without a member id is answered MEMBER_ID_REQUIRED and the new id waits in
    the pending set; its LeaveGroup removes it from there (GroupCoordinator.handleLeaveGroup /
    GroupMetadataManager.classicGroupLeave: removePendingMember) and the event names that member."""
    model = GroupCoordinatorModel(G, default_config(implementation=implementation))
    model.handle(replace(join(0), api_version=4))
    (pred,), _ = model.drain()
    pending = pred.response.member_id
    assert pred.response.error is Errors.MEMBER_ID_REQUIRED and pending
    model.handle(GroupRequest(ApiKey.LEAVE_GROUP, 3, G, 5, leave_members=(LeaveMember(pending),)))
    (leave,), events = model.drain()
    assert leave.response.error is Errors.NONE
    removed = [e for e in events if e.kind is EventKind.PENDING_MEMBER_REMOVED]
    assert [(e.member_id, e.removal_reason is not None) for e in removed] == [(pending, True)]
