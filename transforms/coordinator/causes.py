"""Kafka's own words for why a rebalance started or a member went away, per version/implementation
(``GroupCoordinator.scala`` ``maybePrepareRebalance(reason)`` strings, ``GroupMetadataManager.java``
ones; reference request-log-format.md §4).

The builders of rebalance causes return a :class:`~transforms.coordinator.types.Cause`: the typed
trigger each one stands for, and the text written for it. Consumers read the trigger; the text is only
output for people."""

from __future__ import annotations

import re
from collections.abc import Iterable

from transforms.coordinator.config import VersionFeatures
from transforms.coordinator.types import Cause, Trigger


def option(value: str | None, java: bool) -> str:
    """How the coordinator prints an optional instance id: Scala ``Some(x)``/``None``, Java ``x``/``null``."""
    if java:
        return "null" if value is None else value
    return "None" if value is None else f"Some({value})"


def _client(f: VersionFeatures, reason: str | None) -> str:
    if not (f.client_reasons or f.java):
        return ""
    return f"; client reason: {reason if reason is not None else 'not provided'}"


def adding_member(f: VersionFeatures, member_id: str, instance_id: str | None, reason: str | None) -> Cause:
    if f.version < (2, 3, 0) and not f.java:
        return Cause(Trigger.NEW_MEMBER, f"Adding new member {member_id}")
    if f.version < (2, 5, 0) and not f.java:
        return Cause(
            Trigger.NEW_MEMBER,
            f"Adding new member {member_id} with group instanceid {option(instance_id, False)}",
        )
    return Cause(
        Trigger.NEW_MEMBER,
        f"Adding new member {member_id} with group instance id {option(instance_id, f.java)}"
        + _client(f, reason),
    )


def member_joining(f: VersionFeatures, member_id: str, state: str, reason: str | None) -> Cause:
    if f.java:
        return Cause(
            Trigger.METADATA_CHANGE,
            f"Member {member_id} is joining group during {state}" + _client(f, reason),
        )
    if not f.state_in_causes:
        return Cause(Trigger.METADATA_CHANGE, f"Updating metadata for member {member_id}")
    return Cause(
        Trigger.METADATA_CHANGE, f"Member {member_id} joining group during {state}" + _client(f, reason)
    )


def updating_metadata(f: VersionFeatures, member_id: str, state: str, reason: str | None) -> Cause:
    if not f.state_in_causes and not f.java:
        return Cause(Trigger.METADATA_CHANGE, f"Updating metadata for member {member_id}")
    return Cause(
        Trigger.METADATA_CHANGE,
        f"Updating metadata for member {member_id} during {state}" + _client(f, reason),
    )


def leader_rejoining(f: VersionFeatures, member_id: str, state: str, reason: str | None) -> Cause:
    if not f.state_in_causes and not f.java:
        return Cause(Trigger.LEADER_REJOIN, f"Updating metadata for member {member_id}")
    leader = "Leader" if (f.java or f.version >= (3, 0, 0)) else "leader"
    return Cause(
        Trigger.LEADER_REJOIN, f"{leader} {member_id} re-joining group during {state}" + _client(f, reason)
    )


def static_protocol_change(f: VersionFeatures, member_id: str, instance_id: str, reason: str | None) -> Cause:
    return Cause(
        Trigger.PROTOCOL_CHANGE,
        (
            f"Group's selectedProtocol will change because static member {member_id} with instance id "
            f"{option(instance_id, f.java)} joined with change of protocol" + _client(f, reason)
        ),
    )


def static_updating(f: VersionFeatures, member_id: str, instance_id: str, reason: str | None) -> Cause:
    return Cause(
        Trigger.STATIC_MEMBER_REPLACED,
        (
            f"Updating metadata for static member {member_id} with instance id {option(instance_id, f.java)}"
            + (_client(f, reason))
        ),
    )


def heartbeat_expiration(f: VersionFeatures, member_id: str) -> Cause:
    return Cause(
        Trigger.SESSION_EXPIRY,
        f"removing member {member_id} on heartbeat expiration" + ("." if f.java else ""),
    )


def leave_group(f: VersionFeatures, member_id: str, reason: str | None) -> Cause:
    if f.version < (3, 0, 0) and not f.java:
        return Cause(Trigger.MEMBER_LEFT, f"removing member {member_id} on LeaveGroup")
    return Cause(Trigger.MEMBER_LEFT, f"Removing member {member_id} on LeaveGroup" + _client(f, reason))


def java_leave_batch(member_ids: Iterable[str]) -> Cause:
    return Cause(Trigger.MEMBER_LEFT, f"explicit `LeaveGroup` request for ({', '.join(member_ids)}) members.")


def pending_sync_expiration(f: VersionFeatures, member_ids: Iterable[str]) -> Cause:
    ids = ", ".join(member_ids)
    rendered = f"[{ids}]" if f.java else f"Set({ids})"
    return Cause(Trigger.PENDING_SYNC_EXPIRY, f"Removing {rendered} on pending sync request expiration")


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


# ------------------------------------------------------------------------------------------------
# reading reason text that did not come with a typed trigger
# ------------------------------------------------------------------------------------------------
#: Kafka's wordings (every version's, above) of each rebalance trigger, case-insensitive, first match
_TEXT_RULES: tuple[tuple[re.Pattern[str], Trigger], ...] = tuple(
    (re.compile(p, re.IGNORECASE), t)
    for p, t in (
        (r"pending[ -]sync", Trigger.PENDING_SYNC_EXPIRY),
        (r"heartbeat expiration|has failed", Trigger.SESSION_EXPIRY),
        (r"leave ?group", Trigger.MEMBER_LEFT),
        (r"selectedprotocol will change|change of protocol", Trigger.PROTOCOL_CHANGE),
        (r"static member", Trigger.STATIC_MEMBER_REPLACED),
        (r"adding new member|new member", Trigger.NEW_MEMBER),
        (r"leader\s+\S+\s+re-?joining", Trigger.LEADER_REJOIN),
        (r"updating metadata|joining group during", Trigger.METADATA_CHANGE),
        (r"haven't joined|have not joined|rebalance timeout", Trigger.REBALANCE_TIMEOUT_EVICTION),
        (
            r"not_coordinator|load_in_progress|coordinator_not_available|coordinator moved",
            Trigger.COORDINATOR_MOVED,
        ),
    )
)
_CLIENT_REASON_SUFFIX = re.compile(r";\s*client reason:.*\Z", re.IGNORECASE | re.DOTALL)


def trigger_of_text(text: str | None) -> Trigger | None:
    """The trigger a reason text in Kafka's words stands for — for text that comes without one (a
    broker's own log line, a stored ``trigger_cause``); None when it names none. The model's events
    carry their trigger and are never read this way. ``reconciled: ...`` is :attr:`Trigger.RECONCILED`."""
    if not text:
        return None
    if text.startswith("reconciled"):
        return Trigger.RECONCILED
    head = _CLIENT_REASON_SUFFIX.sub("", text)
    for pattern, trigger in _TEXT_RULES:
        if pattern.search(head):
            return trigger
    return None
