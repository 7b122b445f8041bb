"""Kafka's own words for why a rebalance started or a member went away, per version/implementation
(``GroupCoordinator.scala`` ``maybePrepareRebalance(reason)`` strings, ``GroupMetadataManager.java``
ones; reference request-log-format.md §4)."""

from __future__ import annotations

from collections.abc import Iterable

from transforms.coordinator.config import VersionFeatures


def option(value: str | None, java: bool) -> str:
    """How the coordinator prints an optional instance id: Scala ``Some(x)``/``None``, Java ``x``/``null``."""
    if java:
        return "null" if value is None else value
    return "None" if value is None else f"Some({value})"


def _client(f: VersionFeatures, reason: str | None) -> str:
    if not (f.client_reasons or f.java):
        return ""
    return f"; client reason: {reason if reason is not None else 'not provided'}"


def adding_member(f: VersionFeatures, member_id: str, instance_id: str | None, reason: str | None) -> str:
    if f.version < (2, 3, 0) and not f.java:
        return f"Adding new member {member_id}"
    if f.version < (2, 5, 0) and not f.java:
        return f"Adding new member {member_id} with group instanceid {option(instance_id, False)}"
    return f"Adding new member {member_id} with group instance id {option(instance_id, f.java)}" + _client(
        f, reason
    )


def member_joining(f: VersionFeatures, member_id: str, state: str, reason: str | None) -> str:
    if f.java:
        return f"Member {member_id} is joining group during {state}" + _client(f, reason)
    if not f.state_in_causes:
        return f"Updating metadata for member {member_id}"
    return f"Member {member_id} joining group during {state}" + _client(f, reason)


def updating_metadata(f: VersionFeatures, member_id: str, state: str, reason: str | None) -> str:
    if not f.state_in_causes and not f.java:
        return f"Updating metadata for member {member_id}"
    return f"Updating metadata for member {member_id} during {state}" + _client(f, reason)


def leader_rejoining(f: VersionFeatures, member_id: str, state: str, reason: str | None) -> str:
    if not f.state_in_causes and not f.java:
        return f"Updating metadata for member {member_id}"
    leader = "Leader" if (f.java or f.version >= (3, 0, 0)) else "leader"
    return f"{leader} {member_id} re-joining group during {state}" + _client(f, reason)


def static_protocol_change(f: VersionFeatures, member_id: str, instance_id: str, reason: str | None) -> str:
    return (
        f"Group's selectedProtocol will change because static member {member_id} with instance id "
        f"{option(instance_id, f.java)} joined with change of protocol" + _client(f, reason)
    )


def static_updating(f: VersionFeatures, member_id: str, instance_id: str, reason: str | None) -> str:
    return (
        f"Updating metadata for static member {member_id} with instance id {option(instance_id, f.java)}"
        + (_client(f, reason))
    )


def heartbeat_expiration(f: VersionFeatures, member_id: str) -> str:
    return f"removing member {member_id} on heartbeat expiration" + ("." if f.java else "")


def leave_group(f: VersionFeatures, member_id: str, reason: str | None) -> str:
    if f.version < (3, 0, 0) and not f.java:
        return f"removing member {member_id} on LeaveGroup"
    return f"Removing member {member_id} on LeaveGroup" + _client(f, reason)


def java_leave_batch(member_ids: Iterable[str]) -> str:
    return f"explicit `LeaveGroup` request for ({', '.join(member_ids)}) members."


def pending_sync_expiration(f: VersionFeatures, member_ids: Iterable[str]) -> str:
    ids = ", ".join(member_ids)
    rendered = f"[{ids}]" if f.java else f"Set({ids})"
    return f"Removing {rendered} on pending sync request expiration"


def pending_member_expired(member_id: str, group_id: str) -> str:
    return (
        f"Pending member {member_id} in group {group_id} has been removed after session timeout expiration."
    )


def pending_member_left(member_id: str, group_id: str) -> str:
    return (
        f"Pending member with memberId={member_id} has left group {group_id} "
        "through explicit `LeaveGroup` request"
    )


def not_rejoined(group_id: str, member_ids: Iterable[str], java: bool) -> str:
    ids = ", ".join(member_ids)
    rendered = f"[{ids}]" if java else f"Set({ids})"
    return f"Group {group_id} removed dynamic members who haven't joined: {rendered}"
