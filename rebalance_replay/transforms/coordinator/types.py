"""The coordinator model's contract: what goes in (a group's requests, in arrival order) and what comes
out (a predicted response per request, and the internal events a person needs to follow a rebalance).

Pure data, no logic: the engine (``rebalance_replay.transforms.coordinator.engine``), rebalance reconstruction
(``rebalance_replay.transforms.rebalances``) and the Spark adapter (``rebalance_replay.jobs.replay``) all
speak these types.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Final, Literal, TypeAlias

from rebalance_replay.transforms.kafka_protocol import ApiKey, Errors


class GroupState(str, Enum):
    """Kafka's classic group states, with their wire names."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class Protocol:
    """One entry of a JoinGroup ``protocols`` list. ``metadata`` is None in the text era (not dumped)."""

    name: str
    metadata: bytes | None = None
    metadata_length: int | None = None


@dataclass(frozen=True, slots=True)
class LeaveMember:
    member_id: str
    group_instance_id: str | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class ObservedResponse:
    """The response the broker logged for a request (all optional: absent fields are None)."""

    error: str | None = None  # Errors name, e.g. "NONE"
    generation_id: int | None = None  # JoinGroup
    leader: str | None = None  # JoinGroup
    member_id: str | None = None  # JoinGroup
    protocol_type: str | None = None
    protocol_name: str | None = None
    skip_assignment: bool | None = None
    members: tuple[str, ...] | None = None  # JoinGroup member ids (leader's response), in logged order
    member_errors: tuple[tuple[str, str], ...] | None = None  # LeaveGroup (member_id, error) in order
    partition_errors: tuple[tuple[str, int, str], ...] | None = None  # OffsetCommit (topic, part, error)
    assignment: bytes | None = None  # SyncGroup (JSON era)
    completion_ms: int | None = None
    #: the group instance id of each of ``members`` (None: dynamic member or not logged)
    member_instance_ids: tuple[str | None, ...] | None = None
    #: when the coordinator handed the response over: ``completion_ms`` (the line's time: the response
    #: sent) less the response-queue and send times the line logs (None: not logged)
    answered_ms: int | None = None


@dataclass(frozen=True, slots=True)
class GroupRequest:
    """One classic-group request, as the coordinator received it.

    ``ref`` is opaque to the model (the adapter passes ``(source_file, line_no)``) and is echoed in
    every output that the request causes.
    """

    api: ApiKey
    api_version: int
    group_id: str
    arrival_ms: int
    member_id: str | None = None
    group_instance_id: str | None = None
    client_id: str | None = None
    client_host: str | None = None
    generation_id: int | None = None
    session_timeout_ms: int | None = None
    rebalance_timeout_ms: int | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None  # SyncGroup v5+
    protocols: tuple[Protocol, ...] = ()
    reason: str | None = None
    assignments: tuple[tuple[str, bytes | None], ...] = ()  # SyncGroup leader: (member_id, bytes)
    leave_members: tuple[LeaveMember, ...] = ()  # LeaveGroup (v0-2: one element)
    commit_partitions: tuple[tuple[str, int], ...] = ()  # OffsetCommit (topic, partition)
    observed: ObservedResponse | None = None
    ref: tuple[str, int] | None = None


#: the error of a Prediction whose request the coordinator never answered (not a Kafka error: a
#: superseded JoinGroup/SyncGroup, a late answer the model had not given)
NO_RESPONSE: Final = "NO_RESPONSE"
#: a predicted response's error: Kafka's error, or :data:`NO_RESPONSE`
ResponseError: TypeAlias = Errors | Literal["NO_RESPONSE"]


@dataclass(frozen=True, slots=True)
class PredictedResponse:
    """What the model says the coordinator answered, and when. Errors are :class:`Errors` members (each
    is its name as a ``str``); the observed response keeps the logged names (a log may carry a code this
    table lacks, ``UNKNOWN_ERROR_<code>``)."""

    error: ResponseError
    completion_ms: int | None  # model time the response is sent (None: never answered)
    generation_id: int | None = None
    leader: str | None = None
    member_id: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    skip_assignment: bool | None = None
    members: tuple[str, ...] | None = None
    member_errors: tuple[tuple[str, Errors], ...] | None = None
    partition_errors: tuple[tuple[str, int, Errors], ...] | None = None
    assignment: bytes | None = None


@dataclass(frozen=True, slots=True)
class Prediction:
    """A request and the model's answer to it. Emitted when the model answers (parked JoinGroup and
    SyncGroup requests are answered later than they arrive), or when the request is superseded."""

    seq: int  # position of the request in the group's replay order
    request: GroupRequest
    response: PredictedResponse
    state_before: GroupState
    generation_before: int
    state_after: GroupState
    generation_after: int
    scored: bool = True
    unscored_reason: str | None = None
    reconciled: bool = False
    #: anomalies the model itself noticed in the observed data, e.g. ``member_id_format`` (a
    #: coordinator-generated member id that is not ``clientId-UUID`` / ``instanceId-UUID``)
    mismatch_kinds: tuple[str, ...] = ()


class EventKind(str, Enum):
    TRANSITION = "transition"  # state change: from_state → to_state (Kafka's state machine)
    #: reconciliation took the broker's state and/or generation (from_state → state, ``adopted``, trigger
    #: ADOPTED): a state change outside Kafka's state machine, so not a TRANSITION
    STATE_ADOPTED = "state_adopted"
    MEMBER_ADDED = "member_added"
    MEMBER_REMOVED = "member_removed"  # removal_reason says why
    PENDING_MEMBER_ADDED = "pending_member_added"  # MEMBER_ID_REQUIRED handed out
    PENDING_MEMBER_REMOVED = "pending_member_removed"
    STATIC_MEMBER_REPLACED = "static_member_replaced"  # member_id = new id, detail = old id
    LEADER_CHANGED = "leader_changed"
    MEMBER_UPDATED = "member_updated"  # rejoin with changed protocols/metadata
    TIMER_EXPIRED = "timer_expired"  # detail = timer key, e.g. heartbeat-<group>-<member>
    JOIN_COMPLETED = "join_completed"  # generation bumped, protocol selected
    SYNC_COMPLETED = "sync_completed"  # leader assignment stored, group Stable
    HEARTBEAT = "heartbeat"  # accepted heartbeat (session refreshed)
    OFFSET_COMMIT = "offset_commit"  # accepted commit
    RECONCILED = "reconciled"  # track mode: model adjusted to an observed response
    EXTERNAL_ERROR = "external_error"  # NOT_COORDINATOR & co. observed
    WARM_START = "warm_start"  # model state inferred from observed responses


class Trigger(str, Enum):
    """Why the group changed state (a TRANSITION's ``trigger``). The first eleven are the rebalance
    triggers of the ``rebalances`` table (same values); the rest name transitions that start no
    rebalance. Kafka's reason text (``cause``) is written from it by
    :mod:`~rebalance_replay.transforms.coordinator.causes`."""

    NEW_MEMBER = "new_member"
    MEMBER_LEFT = "member_left"
    SESSION_EXPIRY = "session_expiry"
    REBALANCE_TIMEOUT_EVICTION = "rebalance_timeout_eviction"
    LEADER_REJOIN = "leader_rejoin"
    METADATA_CHANGE = "metadata_change"
    PROTOCOL_CHANGE = "protocol_change"
    STATIC_MEMBER_REPLACED = "static_member_replaced"
    PENDING_SYNC_EXPIRY = "pending_sync_expiry"
    COORDINATOR_MOVED = "coordinator_moved"
    #: track mode: the broker was rebalancing and the model did not know why
    RECONCILED = "reconciled"
    #: a rebalance of the coordinator's own (a freshly loaded group over capacity, a failed store)
    COORDINATOR = "coordinator"
    JOIN_COMPLETED = "join_completed"  # PreparingRebalance -> CompletingRebalance / Empty
    SYNC_COMPLETED = "sync_completed"  # CompletingRebalance -> Stable (leader's assignment stored)
    UNLOADED = "unloaded"  # -> Dead: coordinator resigned / moved
    OFFSETS_EXPIRED = "offsets_expired"  # Empty -> Dead
    #: not a Kafka transition: reconciliation adopted the broker's state or generation (``adopted``)
    ADOPTED = "adopted"


@dataclass(frozen=True, slots=True)
class Cause:
    """A typed trigger and Kafka's reason text written from it (the ``cause`` people read), with what the
    text names as typed values: the member (``member_id``) and the client's reason as the text shows it
    (``client_reason``: None when the text has none or says ``not provided``)."""

    trigger: Trigger
    text: str
    member_id: str | None = None
    client_reason: str | None = None


class RemovalReason(str, Enum):
    LEFT = "left"  # LeaveGroup
    SESSION_EXPIRY = "session_expiry"
    NEW_MEMBER_JOIN_TIMEOUT = "new_member_join_timeout"  # 5-minute timeout of a new member
    REBALANCE_TIMEOUT_EVICTION = "rebalance_timeout_eviction"  # did not rejoin before join completed
    PENDING_SYNC_EXPIRY = "pending_sync_expiry"
    FENCED = "fenced"  # static member replaced
    MAX_SIZE = "max_size"  # GROUP_MAX_SIZE_REACHED
    PENDING_EXPIRY = "pending_expiry"  # pending (MEMBER_ID_REQUIRED) id expired
    RECONCILED = "reconciled"  # track mode removed it to agree with the broker


#: When a removal reports the removed leader's successor (LEADER_CHANGED): ``always`` (also when nobody
#: is left to lead), ``successor`` (only when another member leads now) or ``none``.
LeaderEvent = Literal["always", "successor", "none"]


@dataclass(frozen=True, slots=True)
class ModelEvent:
    """Something that happened inside the coordinator, on the recorded clock."""

    seq: int  # seq of the request being handled, or of the next request for timer-driven events
    time_ms: int
    kind: EventKind
    generation_id: int
    state: GroupState  # state after the event
    from_state: GroupState | None = None  # TRANSITION only
    member_id: str | None = None
    group_instance_id: str | None = None
    cause: str | None = None  # Kafka's reason, e.g. "Adding new member ... with group instance id None"
    removal_reason: RemovalReason | None = None
    #: JoinGroup v8+/LeaveGroup v5+ reason given by the client; TRANSITION: the cause's ``client_reason``
    client_reason: str | None = None
    detail: str | None = None
    ref: tuple[str, int] | None = None  # request that caused it (None for timers)
    members: tuple[str, ...] = field(default=())  # JOIN_COMPLETED/SYNC_COMPLETED: members of the generation
    leader: str | None = None  # JOIN_COMPLETED: leader; LEADER_CHANGED: new leader
    protocol_name: str | None = None  # JOIN_COMPLETED: selected protocol
    protocol_type: str | None = None
    assignments: tuple[tuple[str, bytes | None], ...] = ()  # SYNC_COMPLETED: stored assignment per member
    #: TRANSITION, STATE_ADOPTED: why (``cause`` is its text); the causing member is ``member_id`` (the
    #: member the transition was made for, else the one its cause names)
    trigger: Trigger | None = None
    #: STATE_ADOPTED: not a Kafka transition but reconciliation adopting the broker's state/generation (the
    #: generation may move while the state stays); no transition row is written for it
    adopted: bool = False
    #: MEMBER_ADDED and co.: a member discovered from other requests (warm start) or put back to agree
    #: with the broker (track mode), not one that joined
    inferred: bool = False
    #: EXTERNAL_ERROR: the observed error
    error: Errors | None = None


@dataclass(frozen=True, slots=True)
class RunMember:
    """One member's share of a :class:`HeartbeatRun`."""

    member_id: str
    first_ms: int  # arrival of its first heartbeat in the run
    last_ms: int  # and of its last
    last_index: int  # position of its last heartbeat in the run (0-based)
    max_gap_ms: int  # longest time between two of its heartbeats in the run (0 for one)


@dataclass(frozen=True, slots=True)
class HeartbeatRun:
    """Consecutive requests of one group (arrival order, nothing else between them), all Heartbeats
    and OffsetCommits answered NONE, summarised for :meth:`CoordinatorEngine.bulk_heartbeats`: the bulk
    validation of routine traffic (the replayer builds it from the rows' columns)."""

    size: int  # requests
    first_ms: int
    last_ms: int
    last_ref: tuple[str, int]  # (source file, line) of the last
    last_commit_ms: int | None  # arrival of the last OffsetCommit (None: heartbeats only)
    generations: tuple[int | None, ...]  # the distinct request generations
    instances: tuple[tuple[str, str], ...]  # distinct (group instance id, member id) of static members
    members: tuple[RunMember, ...]
    max_gap_ms: int = 0  # the longest time between two consecutive requests of the run


def shared_when_copied(self: object, memo: dict[int, object]) -> object:
    """A deep copy of a frozen value made only of immutable values is the value itself: the model's
    ``fork`` (the replay's tie ordering copies the model once per request tried) shares requests,
    answers and the configuration instead of copying them field by field (``__deepcopy__`` of such
    classes, here and in ``config``)."""
    return self


for _frozen in (Protocol, LeaveMember, ObservedResponse, GroupRequest, PredictedResponse):
    _frozen.__deepcopy__ = shared_when_copied  # type: ignore[union-attr]
