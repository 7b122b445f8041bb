"""Saving the coordinator model: its state as one JSON document (the replay's codec,
:mod:`rebalance_replay.transforms.coordinator.codec`), and the group snapshots the coordinator persists
(``snapshot_group`` / ``restore_persisted``).

Everything that influences future outputs round-trips exactly: group metadata, member order, armed
timers (deadline, priority, arming order), parked JoinGroup/SyncGroup requests, the replay bookkeeping
(:class:`~rebalance_replay.transforms.coordinator.state.ReplayBook`: id and sequence counters, clock,
warm-start state
...), and outputs not yet drained. The same model state always gives the same document. This module
knows the model's parts, not the engine: :class:`SavedModel` is what it saves and gives back.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from rebalance_replay.transforms.coordinator.codec import Codec, Json
from rebalance_replay.transforms.coordinator.state import (
    ClassicGroup,
    ClassicGroupMember,
    ParkedCall,
    ReplayBook,
)
from rebalance_replay.transforms.coordinator.timers import Timer
from rebalance_replay.transforms.coordinator.types import (
    EventKind,
    GroupRequest,
    GroupState,
    LeaveMember,
    ModelEvent,
    ObservedResponse,
    PredictedResponse,
    Prediction,
    Protocol,
    RemovalReason,
    Trigger,
)
from rebalance_replay.transforms.kafka_protocol import ApiKey, Errors

#: the coordinator's values (requests, predictions, events) and enums
CODEC = Codec(
    classes=(
        GroupRequest,
        ObservedResponse,
        Protocol,
        LeaveMember,
        Prediction,
        PredictedResponse,
        ModelEvent,
    ),
    enums=(ApiKey, GroupState, EventKind, RemovalReason, Trigger, Errors),
)

_BOOK_FIELDS = tuple(f.name for f in dataclasses.fields(ReplayBook) if f.name != "parked")


@dataclass(slots=True)
class SavedModel:
    """The parts of a model that are saved."""

    group_id: str
    book: ReplayBook
    group: ClassicGroup | None
    timers: list[Timer]
    timer_order: int
    predictions: list[Prediction]
    events: list[ModelEvent]


# ------------------------------------------------------------------------------------------------
# the model
# ------------------------------------------------------------------------------------------------
def save_model(saved: SavedModel) -> Json:
    """The document of a model (key-sorted JSON values)."""
    book, g = saved.book, saved.group
    calls: dict[int, ParkedCall] = {}
    if g is not None:
        for m in g.members.values():
            for c in (m.awaiting_join, m.awaiting_sync):
                if c is not None:
                    calls[c.seq] = c
    for c in book.parked.values():
        calls[c.seq] = c
    return {
        "group_id": saved.group_id,
        "book": {name: CODEC.encode(getattr(book, name)) for name in _BOOK_FIELDS},
        "parked": sorted(book.parked),
        "calls": [_call(calls[k]) for k in sorted(calls)],
        "group": None if g is None else _group(g),
        "timers": [[t.key, t.deadline, t.priority, t.order, t.kind, list(t.data)] for t in saved.timers],
        "timer_order": saved.timer_order,
        "predictions": [CODEC.encode(p) for p in saved.predictions],
        "events": [CODEC.encode(e) for e in saved.events],
    }


def load_model(doc: Json) -> SavedModel:
    calls = {row["seq"]: _uncall(row) for row in doc["calls"]}
    saved = doc["book"]  # a field added since the state was saved keeps its default
    book = ReplayBook(**{name: CODEC.decode(saved[name]) for name in _BOOK_FIELDS if name in saved})
    book.parked = {seq: calls[seq] for seq in doc["parked"]}
    return SavedModel(
        group_id=doc["group_id"],
        book=book,
        group=None if doc["group"] is None else _ungroup(doc["group_id"], doc["group"], calls),
        timers=[Timer(k, d, p, o, kind, tuple(data)) for k, d, p, o, kind, data in doc["timers"]],
        timer_order=doc["timer_order"],
        predictions=[CODEC.decode(p) for p in doc["predictions"]],
        events=[CODEC.decode(e) for e in doc["events"]],
    )


# ------------------------------------------------------------------------------------------------
# group metadata
# ------------------------------------------------------------------------------------------------
def _member(m: ClassicGroupMember, with_calls: bool = True) -> dict[str, Any]:
    return {
        "member_id": m.member_id,
        "group_instance_id": m.group_instance_id,
        "client_id": m.client_id,
        "client_host": m.client_host,
        "rebalance_timeout_ms": m.rebalance_timeout_ms,
        "session_timeout_ms": m.session_timeout_ms,
        "protocol_type": m.protocol_type,
        "protocols": m.protocols,
        "assignment": m.assignment,
        "awaiting_join": None if m.awaiting_join is None or not with_calls else m.awaiting_join.seq,
        "awaiting_sync": None if m.awaiting_sync is None or not with_calls else m.awaiting_sync.seq,
        "is_new": m.is_new and with_calls,
        "inferred": m.inferred,
    }


def _unmember(d: dict[str, Any], calls: dict[int, ParkedCall]) -> ClassicGroupMember:
    m = ClassicGroupMember(
        d["member_id"],
        d["group_instance_id"],
        d["client_id"],
        d["client_host"],
        d["rebalance_timeout_ms"],
        d["session_timeout_ms"],
        d["protocol_type"],
        tuple(d["protocols"]),
        inferred=d["inferred"],
    )
    m.assignment = d["assignment"]
    m.awaiting_join = None if d["awaiting_join"] is None else calls[d["awaiting_join"]]
    m.awaiting_sync = None if d["awaiting_sync"] is None else calls[d["awaiting_sync"]]
    m.is_new = d["is_new"]
    return m


def _group(g: ClassicGroup) -> Json:
    return {
        "state": g.state.value,
        "previous_state": g.previous_state.value,
        "generation": g.generation_id,
        "peak": g.peak_size,
        "protocol_type": g.protocol_type,
        "protocol_name": g.protocol_name,
        "leader": g.leader_id,
        "members": [CODEC.encode(_member(m)) for m in g.members.values()],
        "static": [[k, v] for k, v in g.static_members.items()],
        "pending": list(g.pending_members),
        "pending_sync": list(g.pending_sync_members),
        "supported": [[k, v] for k, v in g.supported_protocols.items()],
        "num_awaiting": g.num_awaiting_join,
        "num_inferred": g.num_inferred,
        "order_known": g.order_known,
        "new_member_added": g.new_member_added,
        "has_offsets": g.has_offsets,
        "last_commit_ms": g.last_commit_ms,
        "empty_since_ms": g.empty_since_ms,
    }


def _ungroup(group_id: str, d: Json, calls: dict[int, ParkedCall]) -> ClassicGroup:
    g = ClassicGroup(group_id, state=GroupState(d["state"]), generation_id=d["generation"])
    g.previous_state = GroupState(d["previous_state"])
    if "peak" in d:
        g.peak_size = d["peak"]
    else:  # saved before the peak size was kept: the Java table size it gave (16 holds up to 12)
        g.peak_size = max(len(d["members"]), d["capacity"] * 3 // 4 if d["capacity"] > 16 else 0)
    g.protocol_type = d["protocol_type"]
    g.protocol_name = d["protocol_name"]
    g.leader_id = d["leader"]
    for row in d["members"]:
        m = _unmember(CODEC.decode(row), calls)
        g.members[m.member_id] = m
    g.static_members = {k: v for k, v in d["static"]}
    g.pending_members = dict.fromkeys(d["pending"])
    g.pending_sync_members = dict.fromkeys(d["pending_sync"])
    g.supported_protocols = {k: v for k, v in d["supported"]}
    g.num_awaiting_join = d["num_awaiting"]
    g.num_inferred = d["num_inferred"]
    g.order_known = d["order_known"]
    g.new_member_added = d["new_member_added"]
    g.has_offsets = d["has_offsets"]
    g.last_commit_ms = d["last_commit_ms"]
    g.empty_since_ms = d["empty_since_ms"]
    return g


def snapshot_group(group: ClassicGroup) -> dict[str, object]:
    """What ``storeGroup`` writes: generation, protocol, leader, members with metadata and assignment."""
    return {
        "generation": group.generation_id,
        "protocol_type": group.protocol_type,
        "protocol_name": group.protocol_name,
        "leader": group.leader_id,
        "members": [_member(m, with_calls=False) for m in group.members.values()],
        "has_offsets": group.has_offsets,
        "last_commit_ms": group.last_commit_ms,
        "empty_since_ms": group.empty_since_ms,
    }


def restore_persisted(group_id: str, snap: dict[str, Any]) -> ClassicGroup:
    """``GroupMetadata.loadGroup``: a group loaded from the log is Stable (with members) or Empty."""
    members = [_unmember(d, {}) for d in snap["members"]]
    g = ClassicGroup(
        group_id,
        state=GroupState.STABLE if members else GroupState.EMPTY,
        generation_id=snap["generation"],
    )
    g.protocol_type = snap["protocol_type"]
    g.protocol_name = snap["protocol_name"]
    for m in members:
        g.add(m, None)
    g.leader_id = snap["leader"] if snap["leader"] in g.members else next(iter(g.members), None)
    g.has_offsets = snap["has_offsets"]
    g.last_commit_ms = snap["last_commit_ms"]
    g.empty_since_ms = snap["empty_since_ms"]
    return g


# ------------------------------------------------------------------------------------------------
# parked calls
# ------------------------------------------------------------------------------------------------
def _call(c: ParkedCall) -> Json:
    return {
        "seq": c.seq,
        "request": CODEC.encode(c.request),
        "state_before": c.state_before.value,
        "generation_before": c.generation_before,
        "scored": c.scored,
        "unscored_reason": c.unscored_reason,
        "emitted": c.emitted,
    }


def _uncall(d: Json) -> ParkedCall:
    c = ParkedCall(
        d["seq"],
        CODEC.decode(d["request"]),
        GroupState(d["state_before"]),
        d["generation_before"],
        d["scored"],
        d["unscored_reason"],
    )
    c.emitted = d["emitted"]
    return c
