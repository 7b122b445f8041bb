"""Kafka's own words for why a rebalance started or a member went away, per version/implementation
(``GroupCoordinator.scala`` ``maybePrepareRebalance(reason)`` strings, ``GroupMetadataManager.java``
ones; reference request-log-format.md §4).

The builders of rebalance causes return a :class:`~rebalance_replay.transforms.coordinator.types.Cause`: the
typed
trigger each one stands for, the member it names, the client's reason as the text shows it, and the text
written from them. Consumers read the typed fields; the text is only output for people."""

from __future__ import annotations

import re
from collections.abc import Iterable

from rebalance_replay.transforms.coordinator.config import VersionFeatures
from rebalance_replay.transforms.coordinator.types import Cause, Trigger


def option(value: str | None, java: bool) -> str:
    """How the coordinator prints an optional instance id: Scala ``Some(x)``/``None``, Java ``x``/``null``."""
    if java:
        return "null" if value is None else value
    return "None" if value is None else f"Some({value})"


def shown_client_reason(reason: str | None) -> str | None:
    """The client's reason as a reason text shows it: trimmed, without a final full stop; None when
    it gave none (``not provided``)."""
    if reason is None:
        return None
    shown = reason.strip().rstrip(".").strip()
    return None if not shown or shown.lower() == "not provided" else shown


def _of_member(
    trigger: Trigger,
    text: str,
    member_id: str,
    f: VersionFeatures,
    reason: str | None,
    *,
    client: bool = True,
) -> Cause:
    """A cause that names ``member_id``, ending with the client's reason where this version prints it
    (``client``: the wording has that ending at all)."""
    if not (client and (f.client_reasons or f.java)):
        return Cause(trigger, text, member_id)
    return Cause(
        trigger,
        f"{text}; client reason: {reason if reason is not None else 'not provided'}",
        member_id,
        shown_client_reason(reason),
    )


def adding_member(f: VersionFeatures, member_id: str, instance_id: str | None, reason: str | None) -> Cause:
    t = Trigger.NEW_MEMBER
    if f.new_member_cause == "bare":
        return _of_member(t, f"Adding new member {member_id}", member_id, f, reason, client=False)
    if f.new_member_cause == "instanceid":
        text = f"Adding new member {member_id} with group instanceid {option(instance_id, False)}"
        return _of_member(t, text, member_id, f, reason, client=False)
    text = f"Adding new member {member_id} with group instance id {option(instance_id, f.java)}"
    return _of_member(t, text, member_id, f, reason)


def member_joining(f: VersionFeatures, member_id: str, state: str, reason: str | None) -> Cause:
    t = Trigger.METADATA_CHANGE
    if f.java:
        return _of_member(t, f"Member {member_id} is joining group during {state}", member_id, f, reason)
    if not f.state_in_causes:
        return _of_member(t, f"Updating metadata for member {member_id}", member_id, f, reason, client=False)
    return _of_member(t, f"Member {member_id} joining group during {state}", member_id, f, reason)


def updating_metadata(f: VersionFeatures, member_id: str, state: str, reason: str | None) -> Cause:
    t = Trigger.METADATA_CHANGE
    if not f.state_in_causes and not f.java:
        return _of_member(t, f"Updating metadata for member {member_id}", member_id, f, reason, client=False)
    return _of_member(t, f"Updating metadata for member {member_id} during {state}", member_id, f, reason)


def leader_rejoining(f: VersionFeatures, member_id: str, state: str, reason: str | None) -> Cause:
    t = Trigger.LEADER_REJOIN
    if not f.state_in_causes and not f.java:
        return _of_member(t, f"Updating metadata for member {member_id}", member_id, f, reason, client=False)
    leader = "Leader" if f.leader_cause_capitalized else "leader"
    return _of_member(t, f"{leader} {member_id} re-joining group during {state}", member_id, f, reason)


def static_protocol_change(f: VersionFeatures, member_id: str, instance_id: str, reason: str | None) -> Cause:
    text = (
        f"Group's selectedProtocol will change because static member {member_id} with instance id "
        f"{option(instance_id, f.java)} joined with change of protocol"
    )
    return _of_member(Trigger.PROTOCOL_CHANGE, text, member_id, f, reason)


def static_updating(f: VersionFeatures, member_id: str, instance_id: str, reason: str | None) -> Cause:
    text = f"Updating metadata for static member {member_id} with instance id {option(instance_id, f.java)}"
    return _of_member(Trigger.STATIC_MEMBER_REPLACED, text, member_id, f, reason)


def heartbeat_expiration(f: VersionFeatures, member_id: str) -> Cause:
    text = f"removing member {member_id} on heartbeat expiration" + ("." if f.java else "")
    return _of_member(Trigger.SESSION_EXPIRY, text, member_id, f, None, client=False)


def leave_group(f: VersionFeatures, member_id: str, reason: str | None) -> Cause:
    t = Trigger.MEMBER_LEFT
    if not f.leave_cause_names_removed_member:
        return _of_member(t, f"removing member {member_id} on LeaveGroup", member_id, f, reason, client=False)
    return _of_member(t, f"Removing member {member_id} on LeaveGroup", member_id, f, reason)


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
