"""Encoding of the coordinator's values (requests, predictions, events, groups, members, parked calls)
and the group snapshots the coordinator persists (``snapshot_group`` / ``restore_persisted``). The
model's ``to_bytes`` / ``from_bytes`` (:mod:`transforms.coordinator.model`) are built from them:
zlib-compressed, key-sorted JSON with a format version tag. Everything that influences future outputs
round-trips exactly: group metadata, member order, armed timers (deadline, priority, arming order),
parked JoinGroup/SyncGroup requests, id and sequence counters, warm-start state, and outputs not yet
drained. The same model state always gives the same bytes.
"""

from __future__ import annotations

import base64
import dataclasses
from enum import Enum
from typing import Any

from transforms.coordinator.state import JAVA_HASHMAP_CAPACITY, ClassicGroup, ClassicGroupMember, ParkedCall
from transforms.coordinator.types import (
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
from transforms.kafka_protocol import ApiKey, Errors

FORMAT_VERSION = 1
_MAGIC = b"RRCM"  # rebalance-replay coordinator model

_DATACLASSES: dict[str, type[Any]] = {
    cls.__name__: cls
    for cls in (
        GroupRequest,
        ObservedResponse,
        Protocol,
        LeaveMember,
        Prediction,
        PredictedResponse,
        ModelEvent,
    )
}
_ENUMS: dict[str, type[Enum]] = {
    cls.__name__: cls for cls in (ApiKey, GroupState, EventKind, RemovalReason, Trigger, Errors)
}
_FIELDS: dict[str, tuple[str, ...]] = {
    name: tuple(f.name for f in dataclasses.fields(cls)) for name, cls in _DATACLASSES.items()
}

Json = Any


# ------------------------------------------------------------------------------------------------
# generic values (requests, predictions, events)
# ------------------------------------------------------------------------------------------------
def enc(value: Any) -> Json:
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, Enum):
        return {"$e": type(value).__name__, "v": value.value}
    if isinstance(value, int):
        return value
    if isinstance(value, bytes):
        return {"$b": base64.b64encode(value).decode("ascii")}
    if isinstance(value, tuple | list):
        return [enc(v) for v in value]
    name = type(value).__name__
    if name in _FIELDS:
        return {"$d": name, "f": [enc(getattr(value, f)) for f in _FIELDS[name]]}
    raise TypeError(f"cannot serialise {type(value).__name__}")


def dec(value: Json) -> Any:
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, list):
        return tuple(dec(v) for v in value)
    if "$b" in value:
        return base64.b64decode(value["$b"])
    if "$e" in value:
        return _ENUMS[value["$e"]](value["v"])
    name = value["$d"]
    return _DATACLASSES[name](**dict(zip(_FIELDS[name], (dec(v) for v in value["f"]), strict=True)))


def _b(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def _unb(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


# ------------------------------------------------------------------------------------------------
# group metadata
# ------------------------------------------------------------------------------------------------
def _member(m: ClassicGroupMember) -> Json:
    return [
        m.member_id,
        m.group_instance_id,
        m.client_id,
        m.client_host,
        m.rebalance_timeout_ms,
        m.session_timeout_ms,
        m.protocol_type,
        [[p.name, _b(p.metadata), p.metadata_length] for p in m.protocols],
        _b(m.assignment),
        None if m.awaiting_join is None else m.awaiting_join.seq,
        None if m.awaiting_sync is None else m.awaiting_sync.seq,
        m.is_new,
        m.inferred,
    ]


def _unmember(row: Json, calls: dict[int, ParkedCall]) -> ClassicGroupMember:
    m = ClassicGroupMember(
        row[0],
        row[1],
        row[2],
        row[3],
        row[4],
        row[5],
        row[6],
        tuple(Protocol(name=p[0], metadata=_unb(p[1]), metadata_length=p[2]) for p in row[7]),
        inferred=row[12],
    )
    m.assignment = _unb(row[8])
    m.awaiting_join = None if row[9] is None else calls[row[9]]
    m.awaiting_sync = None if row[10] is None else calls[row[10]]
    m.is_new = row[11]
    return m


def _group(g: ClassicGroup) -> Json:
    return {
        "state": g.state.value,
        "previous_state": g.previous_state.value,
        "generation": g.generation_id,
        "capacity": g.table_capacity,
        "protocol_type": g.protocol_type,
        "protocol_name": g.protocol_name,
        "leader": g.leader_id,
        "members": [_member(m) for m in g.members.values()],
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
    g.table_capacity = d.get("capacity", JAVA_HASHMAP_CAPACITY)
    g.protocol_type = d["protocol_type"]
    g.protocol_name = d["protocol_name"]
    g.leader_id = d["leader"]
    for row in d["members"]:
        m = _unmember(row, calls)
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
        "members": [
            [
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.rebalance_timeout_ms,
                m.session_timeout_ms,
                m.protocol_type,
                [[p.name, _b(p.metadata), p.metadata_length] for p in m.protocols],
                _b(m.assignment),
                None,
                None,
                False,
                m.inferred,
            ]
            for m in group.members.values()
        ],
        "has_offsets": group.has_offsets,
        "last_commit_ms": group.last_commit_ms,
        "empty_since_ms": group.empty_since_ms,
    }


def restore_persisted(group_id: str, snap: dict[str, Any]) -> ClassicGroup:
    """``GroupMetadata.loadGroup``: a group loaded from the log is Stable (with members) or Empty."""
    members = [_unmember(row, {}) for row in snap["members"]]
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
    return [
        c.seq,
        enc(c.request),
        c.state_before.value,
        c.generation_before,
        c.scored,
        c.unscored_reason,
        c.emitted,
    ]


def _uncall(row: Json) -> ParkedCall:
    c = ParkedCall(row[0], dec(row[1]), GroupState(row[2]), row[3], row[4], row[5])
    c.emitted = row[6]
    return c
