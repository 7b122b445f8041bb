"""Rebalance reconstruction: turn the coordinator model's output into ``transitions``, ``rebalances`` and
``member_sessions`` rows, one group at a time, incrementally.

The tracker is pure (no I/O, no clock, no randomness) and serialisable: :meth:`RebalanceTracker.to_bytes`
captures everything, so a replay can be cut anywhere between two :meth:`~RebalanceTracker.consume` calls,
stored, and resumed with :meth:`~RebalanceTracker.from_bytes` without changing a single row.

Input
=====
``consume(predictions, events)`` takes the model's output in the order the model emitted it (each list in
its own emission order; chunks may be of any size, from one model step to the whole replay). Rows are
derived from **events**; predictions only supply what events do not carry — a member's client id, client
address, session and rebalance timeouts, and the protocol names of its JoinGroup requests. Those facts are
stored keyed by member, request ``seq`` and answered generation and looked up when a row is written, so
the tracker applies a chunk's predictions before its events and gets the same rows however the stream is
chunked. (The one thing this relies on: a member's JoinGroup prediction for a generation is emitted no
later than the model step that ends that member's session — true of every answered or superseded
JoinGroup.)

Rebalances
==========
A rebalance runs from a transition into PreparingRebalance (from Stable, CompletingRebalance or Empty;
a PreparingRebalance → PreparingRebalance re-arm continues the current one) to

* ``stable``      — CompletingRebalance → Stable (the leader's assignment was stored);
* ``empty``       — PreparingRebalance → Empty (the join phase completed with no members);
* ``superseded``  — CompletingRebalance → PreparingRebalance: the join phase completed but a new rebalance
  began before the group was stable; the new one gets its own row;
* ``dead``        — the group went Dead mid-rebalance (coordinator unload, deletion);
* ``unfinished``  — still open; only written by :meth:`~RebalanceTracker.flush_open`.

A rebalance whose start the replay did not see (warm start in PreparingRebalance or CompletingRebalance,
or a join completion without a start) gets a row with trigger ``unknown`` starting at the first moment
the tracker knew about it; its durations are lower bounds.

Track mode also changes the model's state and generation to agree with the broker's answers: those come
as STATE_ADOPTED events (``adopted=True``, trigger ``adopted``; the state may stay and only the
generation move). No transition row is written for them, but an adopted PreparingRebalance starts a
rebalance (trigger ``unknown``), an adopted CompletingRebalance/Stable/Empty completes or ends the open
one, and an adopted generation rolls the member sessions over (``next_generation``).

Events of one request (or of the timers that fire just before it) share a ``seq``. The events of the
transition's ``seq`` that precede it ("pre-context") and follow it ("post-context") belong to the new
rebalance: they name the trigger and count into ``joined``/``left``/``evicted`` and ``members_before``
is the membership before them. A rebalance that has ended stays pending until an event of another
``seq`` (or another transition) arrives, so late events of the same request — the leader's
``SYNC_COMPLETED``, a ``JOIN_COMPLETED`` after an Empty transition — still reach its row.

Trigger classification (first rule that applies)
------------------------------------------------
1. The transition's typed :class:`~rebalance_replay.transforms.coordinator.types.Trigger`: a rebalance trigger
is taken
   as it is (the enum's value is the row's), ``reconciled`` (track mode: the broker was rebalancing, the
   model did not know why) is ``unknown``, the others (a coordinator-made rebalance) decide nothing.

2. Otherwise the nearest pre-context event (then the post-context): MEMBER_REMOVED by its
   :class:`RemovalReason` (left → ``member_left``; session expiry, new-member join timeout, pending
   expiry → ``session_expiry``; rebalance-timeout eviction → ``rebalance_timeout_eviction``; pending-sync
   expiry → ``pending_sync_expiry``; fenced → ``static_member_replaced``), STATIC_MEMBER_REPLACED →
   ``static_member_replaced``, MEMBER_ADDED → ``new_member``, MEMBER_UPDATED → ``leader_rejoin`` if the
   member led the group else ``metadata_change``, TIMER_EXPIRED ``sync-…`` / ``heartbeat-…`` →
   ``pending_sync_expiry`` / ``session_expiry``.
3. Otherwise the transition's member: a member that led the group → ``leader_rejoin``, another member →
   ``metadata_change``, an unknown id → ``new_member``; no member → ``unknown``.

Then: a ``metadata_change``/``leader_rejoin`` whose JoinGroup listed different protocol names (names in
order) than the member's previous JoinGroup becomes ``protocol_change``; every rebalance out of Empty is
``group_created``; and a ``group_created``/``new_member``/``leader_rejoin``/``metadata_change``/
``unknown`` rebalance that starts within ``coordinator_error_window_ms`` after an EXTERNAL_ERROR naming
NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS or COORDINATOR_NOT_AVAILABLE is ``coordinator_moved``.
``trigger_member_id`` is the transition's member, else the deciding event's; ``trigger_client_reason``
the deciding event's ``client_reason`` (or that of another context event of the same member), else the
transition's typed ``client_reason`` (the client's reason as its cause shows it; ``not provided`` → null).
No reason text is parsed: the cause is only written out (``trigger_cause``).

Cooperative follow-up rule
--------------------------
``cooperative_follow_up`` is true when all of: (a) the protocol in force when the rebalance started (the
previous stable generation's, else this rebalance's) is in ``cooperative_protocols``; (b) the trigger is
``leader_rejoin`` or ``metadata_change`` by a member of the group before the rebalance (a rejoin, not a
new member, departure or expiry); (c) the rebalance started within ``follow_up_window_ms`` of the
previous rebalance's Stable time, or the client's reason says it must revoke partitions (``need to revoke
partitions and re-join``).

Lists and partitions
--------------------
``joined`` = members added (including a static member's new id), ``left`` = LeaveGroup removals,
``evicted`` = every other removal (session expiry, new-member timeout, rebalance-timeout eviction at join
completion, pending-sync expiry, fenced static ids, group max size, track-mode reconciliation). Members
that vanish from the membership at a join completion without a removal event count as rebalance-timeout
evictions. A member removed and then added again under the same id in one rebalance is in neither list:
Kafka never re-admits a removed id, so the add is track mode following the broker, which answered the
member as a member (the model's removal was wrong). ``partitions_moved`` counts partitions of the new
generation's assignment (its ``SYNC_COMPLETED``) whose owner differs from their owner in the last
assignment stored before (a partition nobody owned counts as moved; after Empty nobody owns anything).
Owners are compared by ``group.instance.id`` when the member has one, so a restarted static member keeps
its partitions. It is null when either side has no assignment bytes (text-era logs) or any of them cannot
be decoded.

Member sessions
===============
A session is a member's stay in one generation. Members of a completed join get a session from the
``JOIN_COMPLETED`` time; a member added during a rebalance gets a session for the generation it is
joining (group generation + 1) from the moment it was added; a static member's new id gets a session in
its predecessor's generation from the replacement. A session ends with ``next_generation`` at the next
join completion, or with the member's removal: ``left``, ``session_expiry`` (including the 5-minute
new-member join timeout), ``rebalance_timeout_eviction``, ``pending_sync_expiry``, ``fenced``,
``max_size``; ``reconciled`` (track mode removed it) and ``dead`` are the two values the model can add;
``open`` is only written by :meth:`~RebalanceTracker.flush_open`. Heartbeats and commits are counted from
HEARTBEAT and OFFSET_COMMIT events (the model emits one per accepted request).

When the group goes Dead with members (the coordinator unloaded it: a coordinator move), their sessions
are suspended, not ended: the group is normally served again (a WARM_START carrying the restored
members, or members rediscovered one by one in track mode) and they go on; members the served-again
group lacks, or all of them if the group is created afresh, end ``dead``. Members discovered by the
model (``MEMBER_ADDED`` with ``inferred``) join the current generation and are not counted in
``joined``; no event marked ``inferred`` (reconciliation) counts as context. Client id and address
come from the member's JoinGroup, else from any other request of the member; timeouts only from
JoinGroup.
"""

from __future__ import annotations

import bisect
import dataclasses
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

from rebalance_replay.transforms.consumer_protocol import try_decode_assignment
from rebalance_replay.transforms.coordinator.causes import trigger_of_text
from rebalance_replay.transforms.coordinator.codec import Codec, pack, unpack
from rebalance_replay.transforms.coordinator.state import next_generation
from rebalance_replay.transforms.coordinator.types import (
    EventKind,
    GroupState,
    ModelEvent,
    Prediction,
    RemovalReason,
    Trigger,
)
from rebalance_replay.transforms.kafka_protocol import ApiKey, Errors

__all__ = ["RebalanceTracker", "TrackerOutput", "classify_cause"]

Row = dict[str, Any]

_MAGIC = b"RRRT"  # rebalance-replay rebalance tracker

PR = GroupState.PREPARING_REBALANCE.value
CR = GroupState.COMPLETING_REBALANCE.value
STABLE = GroupState.STABLE.value
EMPTY = GroupState.EMPTY.value
DEAD = GroupState.DEAD.value

# trigger values (rebalance_replay.schemas.tables.REBALANCES.trigger): the typed triggers' values, and two of
# the tracker's
NEW_MEMBER = Trigger.NEW_MEMBER.value
MEMBER_LEFT = Trigger.MEMBER_LEFT.value
SESSION_EXPIRY = Trigger.SESSION_EXPIRY.value
REBALANCE_TIMEOUT_EVICTION = Trigger.REBALANCE_TIMEOUT_EVICTION.value
LEADER_REJOIN = Trigger.LEADER_REJOIN.value
METADATA_CHANGE = Trigger.METADATA_CHANGE.value
PROTOCOL_CHANGE = Trigger.PROTOCOL_CHANGE.value
STATIC_MEMBER_REPLACED = Trigger.STATIC_MEMBER_REPLACED.value
PENDING_SYNC_EXPIRY = Trigger.PENDING_SYNC_EXPIRY.value
COORDINATOR_MOVED = Trigger.COORDINATOR_MOVED.value
GROUP_CREATED = "group_created"
UNKNOWN = "unknown"

_REJOIN_TRIGGERS = frozenset({LEADER_REJOIN, METADATA_CHANGE})
_COORDINATOR_OVERRIDABLE = frozenset({GROUP_CREATED, NEW_MEMBER, LEADER_REJOIN, METADATA_CHANGE, UNKNOWN})
_COORDINATOR_ERRORS = frozenset(
    {Errors.NOT_COORDINATOR, Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.COORDINATOR_NOT_AVAILABLE}
)

#: a transition's typed trigger -> the row's trigger (None: it names none, the context decides)
_ROW_TRIGGER: dict[Trigger, str | None] = {
    **{t: t.value for t in Trigger},
    Trigger.RECONCILED: UNKNOWN,
    Trigger.COORDINATOR: None,
    Trigger.JOIN_COMPLETED: None,
    Trigger.SYNC_COMPLETED: None,
    Trigger.UNLOADED: None,
    Trigger.OFFSETS_EXPIRED: None,
    Trigger.ADOPTED: None,
}
_REVOKE_REASON = re.compile(r"revoke", re.IGNORECASE)

_REMOVAL_TRIGGER: dict[RemovalReason, str] = {
    RemovalReason.LEFT: MEMBER_LEFT,
    RemovalReason.SESSION_EXPIRY: SESSION_EXPIRY,
    RemovalReason.NEW_MEMBER_JOIN_TIMEOUT: SESSION_EXPIRY,
    RemovalReason.PENDING_EXPIRY: SESSION_EXPIRY,
    RemovalReason.REBALANCE_TIMEOUT_EVICTION: REBALANCE_TIMEOUT_EVICTION,
    RemovalReason.PENDING_SYNC_EXPIRY: PENDING_SYNC_EXPIRY,
    RemovalReason.FENCED: STATIC_MEMBER_REPLACED,
}
_REMOVAL_END_REASON: dict[RemovalReason, str] = {
    RemovalReason.LEFT: "left",
    RemovalReason.SESSION_EXPIRY: "session_expiry",
    RemovalReason.NEW_MEMBER_JOIN_TIMEOUT: "session_expiry",
    RemovalReason.PENDING_EXPIRY: "session_expiry",
    RemovalReason.REBALANCE_TIMEOUT_EVICTION: "rebalance_timeout_eviction",
    RemovalReason.PENDING_SYNC_EXPIRY: "pending_sync_expiry",
    RemovalReason.FENCED: "fenced",
    RemovalReason.MAX_SIZE: "max_size",
    RemovalReason.RECONCILED: "reconciled",
}
_DEFAULT_CAUSE: dict[tuple[str, str], str] = {
    (PR, CR): "join phase completed",
    (PR, EMPTY): "join phase completed with no members",
    (PR, PR): "join phase timer re-armed while static members are absent",
    (CR, STABLE): "assignment received from leader",
}

# kinds kept in a context segment (the rest only update state)
_CTX_KINDS = frozenset(
    {
        EventKind.MEMBER_ADDED,
        EventKind.MEMBER_REMOVED,
        EventKind.STATIC_MEMBER_REPLACED,
        EventKind.MEMBER_UPDATED,
        EventKind.TIMER_EXPIRED,
    }
)


def _utc_date(ms: int) -> date:
    return datetime.fromtimestamp(ms / 1000.0, tz=UTC).date()


def classify_cause(cause: str | None) -> str | None:
    """The row trigger a Kafka reason text stands for (e.g. a ``trigger_cause`` value or a broker's own
    log line; :func:`~rebalance_replay.transforms.coordinator.causes.trigger_of_text`), or None when it names
    none. The
    tracker itself never reads text: it reads the transition's typed trigger."""
    trigger = trigger_of_text(cause)
    return None if trigger is None else _ROW_TRIGGER[trigger]


# --------------------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TrackedHeartbeats:
    """A run of accepted heartbeats as :meth:`RebalanceTracker.consume_heartbeat_run` takes it."""

    #: (member, seq, client id, client host): each member's first heartbeat with each client identity
    clients: tuple[tuple[str, int, str | None, str | None], ...]
    #: (member, seq of its last heartbeat in the run)
    client_last_seqs: tuple[tuple[str, int], ...]
    #: each member's first HEARTBEAT event (seq order); empty when the model emits no liveness events
    firsts: tuple[ModelEvent, ...]
    #: (member, heartbeats and offset commits besides its first event, arrival of its last heartbeat)
    more: tuple[tuple[str, int, int | None, int], ...]
    last_seq: int


@dataclass
class TrackerOutput:
    """Rows ready for ``transitions``, ``rebalances`` and ``member_sessions`` (column names as in
    :mod:`rebalance_replay.schemas.tables`)."""

    transitions: list[Row] = field(default_factory=list)
    rebalances: list[Row] = field(default_factory=list)
    member_sessions: list[Row] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.transitions) + len(self.rebalances) + len(self.member_sessions)

    def extend(self, other: TrackerOutput) -> None:
        self.transitions.extend(other.transitions)
        self.rebalances.extend(other.rebalances)
        self.member_sessions.extend(other.member_sessions)


# --------------------------------------------------------------------------------------------------
# Internal state (saved with the replay's codec: rebalance_replay.transforms.coordinator.codec)
# --------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Ctx:
    """A context event of a rebalance (what a membership event says about why it happened)."""

    kind: EventKind
    member_id: str | None
    removal_reason: RemovalReason | None = None
    client_reason: str | None = None
    detail: str | None = None
    was_leader: bool = False


def _implicit_eviction(member: str) -> _Ctx:
    """A member that vanished at a join completion without a removal event."""
    return _Ctx(EventKind.MEMBER_REMOVED, member, RemovalReason.REBALANCE_TIMEOUT_EVICTION)


def _ctx(e: ModelEvent, leader: str | None) -> _Ctx:
    return _Ctx(
        e.kind,
        e.member_id,
        e.removal_reason,
        e.client_reason,
        e.detail,
        e.member_id is not None and e.member_id == leader,
    )


@dataclass(slots=True)
class _Rebalance:
    rebalance_seq: int
    start_seq: int
    from_state: str
    generation_from: int
    started_ms: int
    cause: str | None
    #: the client's reason the starting transition's cause shows (typed: ``ModelEvent.client_reason``)
    cause_client_reason: str | None
    #: the row trigger the starting transition's typed trigger names (None: the context decides)
    trigger: str | None
    start_member: str | None
    start_member_known: bool
    start_member_was_leader: bool
    members_before: list[str]
    coordinator_error_ms: int | None
    prev_stable_ms: int | None
    prev_protocol: str | None
    synthetic: bool = False
    ctx_pre: list[_Ctx] = field(default_factory=list)
    ctx_post: list[_Ctx] = field(default_factory=list)
    joined: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)
    evicted: list[str] = field(default_factory=list)
    generation_to: int | None = None
    join_completed_ms: int | None = None
    stable_ms: int | None = None
    ended_ms: int | None = None
    close_seq: int | None = None
    outcome: str | None = None
    members_after: list[str] | None = None
    leader: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    partitions_moved: int | None = None
    partitions_assigned: int | None = None


@dataclass(slots=True)
class _Session:
    member_id: str
    generation: int
    joined_ms: int
    open_seq: int
    group_instance_id: str | None = None
    last_heartbeat_ms: int | None = None
    heartbeats: int = 0
    commits: int = 0
    is_leader: bool = False


@dataclass(slots=True)
class _Segment:
    """The events of one ``seq`` since the last transition: a rebalance's context."""

    seq: int | None = None
    post_start: bool = False
    events: list[_Ctx] = field(default_factory=list)
    presence_before: dict[str, bool] = field(default_factory=dict)  # member -> in group before the segment


@dataclass(slots=True)
class _JoinRec:
    """A member's JoinGroup, as the tracker keeps it (from the request and the model's answer)."""

    seq: int
    generation: int | None  # the generation it was answered into (None: not accepted)
    protocols: list[str]
    session_timeout_ms: int | None
    rebalance_timeout_ms: int | None
    client_id: str | None
    client_host: str | None
    group_instance_id: str | None


@dataclass(slots=True)
class _Client:
    """A member's client id and address from any of its requests (the first values seen are kept)."""

    last_seq: int
    client_id: str | None
    client_host: str | None


_CODEC = Codec(
    classes=(_Ctx, _Rebalance, _Session, _Segment, _JoinRec, _Client),
    enums=(EventKind, RemovalReason, GroupState),
)


# --------------------------------------------------------------------------------------------------
# The tracker
# --------------------------------------------------------------------------------------------------


class RebalanceTracker:
    """Reconstructs the transitions, rebalances and member sessions of one group (see the module doc).

    ``consume`` the model's output, ``drain`` the rows closed so far, ``flush_open`` for a provisional
    view of what is still open, ``to_bytes``/``from_bytes`` to suspend and resume.
    """

    def __init__(
        self,
        group_id: str,
        *,
        cooperative_protocols: frozenset[str] = frozenset({"cooperative-sticky"}),
        follow_up_window_ms: int = 10_000,
        coordinator_error_window_ms: int = 60_000,
    ) -> None:
        self.group_id = group_id
        self.cooperative_protocols = frozenset(cooperative_protocols)
        self.follow_up_window_ms = int(follow_up_window_ms)
        self.coordinator_error_window_ms = int(coordinator_error_window_ms)
        # group as the events describe it
        self._state: str | None = None
        self._generation = 0
        self._members: set[str] = set()
        # members of a group the coordinator unloaded (Dead): kept until the group is served again
        self._suspended: set[str] = set()
        self._leader: str | None = None
        self._protocol_type: str | None = None
        self._protocol_name: str | None = None
        self._instance_of: dict[str, str] = {}
        # rebalances
        self._rebalance_count = 0
        self._open: _Rebalance | None = None
        self._closing: _Rebalance | None = None
        self._seg = _Segment()
        self._last_stable_ms: int | None = None
        self._last_stable_protocol: str | None = None
        self._last_coordinator_error_ms: int | None = None
        # last stored assignment: owner key per (topic, partition); None = unknown
        self._owners: dict[tuple[str, int], str] | None = None
        self._owners_generation: int | None = None
        # sessions and JoinGroup facts
        self._sessions: dict[str, _Session] = {}
        self._joins: dict[str, list[_JoinRec]] = {}
        # client id/address per member from any request
        self._clients: dict[str, _Client] = {}
        # rows not yet drained
        self._out = TrackerOutput()

    # ------------------------------------------------------------------------------------------
    # public API
    # ------------------------------------------------------------------------------------------

    def consume(self, predictions: Sequence[Prediction], events: Sequence[ModelEvent]) -> None:
        """Feed the model's output (each list in emission order). Predictions are applied first; they
        only contribute keyed member facts, so any chunking gives the same rows."""
        for p in predictions:
            self._on_prediction(p)
        for e in events:
            self._on_event(e)

    def drain(self) -> TrackerOutput:
        """Rows finished since the last drain: every transition, every ended rebalance (once the events of
        its last ``seq`` are in) and every ended member session."""
        out, self._out = self._out, TrackerOutput()
        return out

    def flush_open(self) -> TrackerOutput:
        """Provisional rows for what :meth:`drain` has not returned yet, without changing any state:

        * the open rebalance, with outcome ``unfinished`` (``generation_to``, ``ended_ms`` and the total
          duration null; join-phase fields filled if the join phase completed);
        * a rebalance that has ended but waits for further events of its last ``seq``, as it stands;
        * every open member session, with end_reason ``open`` and ``ended_ms`` null.

        For reports at the end of a replay (call :meth:`drain` first). If the replay continues, later
        drains return the final rows under the same keys (``group_id, rebalance_seq`` and
        ``group_id, member_id, generation_id``), so a writer should upsert.
        """
        out = TrackerOutput()
        seg = self._seg
        if self._closing is not None:
            r = self._copy(self._closing)
            if seg.seq == r.close_seq and seg.events:
                self._attribute(r, seg.events)
                r.members_after = sorted(self._members)
            out.rebalances.append(self._rebalance_row(r))
        if self._open is not None:
            r = self._copy(self._open)
            if seg.post_start:
                r.ctx_post.extend(seg.events)
            self._attribute(r, seg.events)
            r.outcome = "unfinished"
            out.rebalances.append(self._rebalance_row(r))
        for m in sorted(self._sessions):
            out.member_sessions.append(self._session_row(self._sessions[m], None, "open", None))
        return out

    #: the attributes :meth:`to_state` saves (everything but the configuration)
    _SAVED = (
        "_state",
        "_generation",
        "_members",
        "_suspended",
        "_leader",
        "_protocol_type",
        "_protocol_name",
        "_instance_of",
        "_rebalance_count",
        "_open",
        "_closing",
        "_seg",
        "_last_stable_ms",
        "_last_stable_protocol",
        "_last_coordinator_error_ms",
        "_owners",
        "_owners_generation",
        "_sessions",
        "_joins",
        "_clients",
    )

    def to_state(self) -> dict[str, Any]:
        """Everything, as a JSON document (the replay's codec); :meth:`from_state` restores it."""
        return {
            "group_id": self.group_id,
            "config": [
                sorted(self.cooperative_protocols),
                self.follow_up_window_ms,
                self.coordinator_error_window_ms,
            ],
            "state": {name: _CODEC.encode(getattr(self, name)) for name in self._SAVED},
            "out": [
                _CODEC.encode(rows)
                for rows in (self._out.transitions, self._out.rebalances, self._out.member_sessions)
            ],
        }

    @classmethod
    def from_state(cls, doc: dict[str, Any]) -> RebalanceTracker:
        coop, window, coord_window = doc["config"]
        t = cls(
            doc["group_id"],
            cooperative_protocols=frozenset(coop),
            follow_up_window_ms=window,
            coordinator_error_window_ms=coord_window,
        )
        for name in cls._SAVED:
            setattr(t, name, _CODEC.decode(doc["state"][name]))
        transitions, rebalances, sessions = (_CODEC.decode(rows) for rows in doc["out"])
        t._out = TrackerOutput(transitions, rebalances, sessions)
        return t

    def to_bytes(self) -> bytes:
        """Everything, compactly (:func:`~rebalance_replay.transforms.coordinator.codec.pack`);
        ``from_bytes(b).to_bytes()
        == b``."""
        return pack(_MAGIC, self.to_state())

    @classmethod
    def from_bytes(cls, data: bytes) -> RebalanceTracker:
        return cls.from_state(unpack(_MAGIC, data, "rebalance tracker"))

    # ------------------------------------------------------------------------------------------
    # predictions: JoinGroup facts only
    # ------------------------------------------------------------------------------------------

    def _on_prediction(self, p: Prediction) -> None:
        req = p.request
        member = req.member_id or (p.response.member_id if req.api == ApiKey.JOIN_GROUP else None)
        if not member:
            return
        self._client_fact(member, p.seq, req.client_id, req.client_host)
        if req.api != ApiKey.JOIN_GROUP:
            return
        gen = p.response.generation_id if p.response.error == "NONE" else None
        rec = _JoinRec(
            p.seq,
            gen,
            [pr.name for pr in req.protocols],
            req.session_timeout_ms,
            req.rebalance_timeout_ms,
            req.client_id,
            req.client_host,
            req.group_instance_id,
        )
        recs = self._joins.setdefault(member, [])
        seqs = [r.seq for r in recs]
        i = bisect.bisect_left(seqs, p.seq)
        if i < len(recs) and recs[i].seq == p.seq:
            recs[i] = rec
        else:
            recs.insert(i, rec)

    def _client_fact(self, member: str, seq: int, client_id: str | None, client_host: str | None) -> None:
        if client_id is None and client_host is None:
            return
        # a member id belongs to one client instance: the first values seen are kept
        cl = self._clients.get(member)
        if cl is None:
            self._clients[member] = _Client(seq, client_id, client_host)
            return
        if seq > cl.last_seq:
            cl.last_seq = seq
        if cl.client_id is None:
            cl.client_id = client_id
        if cl.client_host is None:
            cl.client_host = client_host

    def consume_heartbeat_run(self, run: TrackedHeartbeats) -> None:
        """What :meth:`consume` does with the predictions and HEARTBEAT events of a run of accepted
        heartbeats in a Stable generation (bulk validation), from its summary: each member's first event
        is applied as it is; the others only count (they change no segment, rebalance or membership)."""
        for member, seq, client_id, client_host in run.clients:
            self._client_fact(member, seq, client_id, client_host)
        for member, seq in run.client_last_seqs:
            cl = self._clients.get(member)
            if cl is not None and seq > cl.last_seq:
                cl.last_seq = seq
        if not run.firsts:
            return
        for e in run.firsts:
            self._on_event(e)
        for member, heartbeats, last_heartbeat_ms, commits in run.more:
            s = self._sessions.get(member)
            if s is None:
                continue
            if heartbeats:
                s.heartbeats += heartbeats
                s.last_heartbeat_ms = last_heartbeat_ms
            s.commits += commits
        if self._seg.seq != run.last_seq:
            self._close_segment()
            self._seg = _Segment(seq=run.last_seq)

    def _attrs(self, member: str, generation: int, until_seq: int | None) -> _JoinRec | None:
        """The JoinGroup that put ``member`` into ``generation`` (or its latest before), else its latest
        JoinGroup up to ``until_seq``."""
        recs = self._joins.get(member)
        if not recs:
            return None
        best: _JoinRec | None = None
        for r in recs:
            if until_seq is not None and r.seq > until_seq:
                break
            if r.generation is not None and r.generation <= generation:
                best = r
        if best is not None:
            return best
        for r in recs:
            if until_seq is not None and r.seq > until_seq:
                break
            best = r
        return best

    def _prune_joins(self, member: str, used: _JoinRec | None) -> None:
        recs = self._joins.get(member)
        if recs and used is not None:
            self._joins[member] = [r for r in recs if r.seq >= used.seq]

    def _prune_departed(self, upto_seq: int) -> None:
        """Drop the facts of ids that are no longer in the group (keeping any from later requests)."""
        for m in [m for m, cl in self._clients.items() if cl.last_seq <= upto_seq]:
            if m not in self._members and m not in self._sessions and m not in self._suspended:
                del self._clients[m]
        for m in list(self._joins):
            if m in self._members or m in self._sessions or m in self._suspended:
                continue
            kept = [r for r in self._joins[m] if r.seq > upto_seq]
            if kept:
                self._joins[m] = kept
            else:
                del self._joins[m]

    # ------------------------------------------------------------------------------------------
    # events
    # ------------------------------------------------------------------------------------------

    def _on_event(self, e: ModelEvent) -> None:
        if self._seg.seq != e.seq:
            self._close_segment()
            if self._closing is not None and self._closing.close_seq != e.seq:
                self._finalize_closing()
            self._seg = _Segment(seq=e.seq)
        kind = e.kind
        if kind == EventKind.TRANSITION:
            self._on_transition(e)
            return
        if kind == EventKind.STATE_ADOPTED:
            self._on_adopted(e)
            return
        if kind in _CTX_KINDS and not e.inferred:
            self._seg.events.append(_ctx(e, self._leader))
        if kind == EventKind.HEARTBEAT:
            s = self._session_for_activity(e)
            if s is not None:
                s.heartbeats += 1
                s.last_heartbeat_ms = e.time_ms
        elif kind == EventKind.OFFSET_COMMIT:
            s = self._session_for_activity(e)
            if s is not None:
                s.commits += 1
        elif kind == EventKind.MEMBER_ADDED:
            self._on_member_added(e)
        elif kind == EventKind.MEMBER_REMOVED:
            self._on_member_removed(e)
        elif kind == EventKind.STATIC_MEMBER_REPLACED:
            self._on_static_replaced(e)
        elif kind == EventKind.LEADER_CHANGED:
            self._on_leader_changed(e.leader or e.member_id)
        elif kind == EventKind.JOIN_COMPLETED:
            self._on_join_completed(e)
        elif kind == EventKind.SYNC_COMPLETED:
            self._on_sync_completed(e)
        elif kind == EventKind.EXTERNAL_ERROR:
            if e.error in _COORDINATOR_ERRORS:
                self._last_coordinator_error_ms = e.time_ms
        elif kind == EventKind.WARM_START:
            self._on_warm_start(e)
        elif kind == EventKind.RECONCILED and e.members:
            self._reconcile_members(e, set(e.members))
        self._generation = e.generation_id
        self._state = e.state  # a str enum: compares and serialises as its wire name

    # membership --------------------------------------------------------------------------------

    def _mark_presence(self, member: str) -> None:
        self._seg.presence_before.setdefault(member, member in self._members)

    def _on_member_added(self, e: ModelEvent) -> None:
        m = e.member_id
        if not m:
            return
        if e.group_instance_id:
            self._instance_of[m] = e.group_instance_id
        if e.inferred:
            # discovered (warm start, reconciliation): already in the current generation, not a join
            self._suspended.discard(m)
            self._members.add(m)
            if m not in self._sessions:
                self._sessions[m] = _Session(m, e.generation_id, e.time_ms, e.seq, e.group_instance_id)
            return
        self._resolve_suspension(e)
        self._mark_presence(m)
        self._members.add(m)
        if m not in self._sessions:
            self._sessions[m] = _Session(
                member_id=m,
                generation=next_generation(e.generation_id),  # Java's int: wraps past 2^31-1
                joined_ms=e.time_ms,
                open_seq=e.seq,
                group_instance_id=e.group_instance_id,
            )

    def _on_member_removed(self, e: ModelEvent) -> None:
        m = e.member_id
        if not m:
            return
        if m in self._members:
            self._mark_presence(m)
            self._members.discard(m)
        self._suspended.discard(m)
        if self._leader == m:
            self._leader = None
        reason = e.removal_reason
        self._close_session(m, e.time_ms, e.seq, "left" if reason is None else _REMOVAL_END_REASON[reason])

    def _on_static_replaced(self, e: ModelEvent) -> None:
        new, old = e.member_id, e.detail
        if not new:
            return
        old_session = self._sessions.get(old) if old else None
        if old:
            if old in self._members:
                self._mark_presence(old)
                self._members.discard(old)
            self._close_session(old, e.time_ms, e.seq, "fenced")
        self._mark_presence(new)
        self._members.add(new)
        instance = e.group_instance_id or (self._instance_of.get(old) if old else None)
        if instance:
            self._instance_of[new] = instance
        was_leader = old is not None and self._leader == old
        if was_leader:
            self._leader = new
        gen = old_session.generation if old_session is not None else e.generation_id
        s = self._sessions.get(new)
        if s is None:
            self._sessions[new] = _Session(
                member_id=new,
                generation=gen,
                joined_ms=e.time_ms,
                open_seq=e.seq,
                group_instance_id=instance,
                is_leader=was_leader or (old_session is not None and old_session.is_leader),
            )
        else:
            if old_session is not None:
                s.generation = old_session.generation
                s.is_leader = s.is_leader or old_session.is_leader
            s.group_instance_id = s.group_instance_id or instance

    def _on_leader_changed(self, leader: str | None) -> None:
        self._leader = leader
        if leader and leader in self._sessions:
            self._sessions[leader].is_leader = True
        r = self._open
        if r is not None and r.join_completed_ms is not None:
            r.leader = leader

    def _reconcile_members(self, e: ModelEvent, target: set[str]) -> None:
        for m in sorted(self._members - target):
            self._mark_presence(m)
            self._seg.events.append(_Ctx(EventKind.MEMBER_REMOVED, m, RemovalReason.RECONCILED))
            self._members.discard(m)
            self._close_session(m, e.time_ms, e.seq, "reconciled")
        for m in sorted(target - self._members):
            self._mark_presence(m)
            self._members.add(m)
            if m not in self._sessions:
                self._sessions[m] = _Session(m, e.generation_id, e.time_ms, e.seq, self._instance_of.get(m))

    def _on_warm_start(self, e: ModelEvent) -> None:
        if e.state == GroupState.DEAD:
            return  # "not confident", "nothing persisted": the group stays unknown for now
        if self._state == DEAD or self._suspended:
            # the group is served again (coordinator move): its members continue their sessions
            for m in e.members:
                self._suspended.discard(m)
                self._members.add(m)
                if m not in self._sessions:
                    self._sessions[m] = _Session(
                        m, e.generation_id, e.time_ms, e.seq, self._instance_of.get(m)
                    )
            self._resolve_suspension(e)
        elif e.members:
            self._reconcile_members(e, set(e.members))
        if e.leader is not None:
            self._on_leader_changed(e.leader)
        if e.protocol_type is not None:
            self._protocol_type = e.protocol_type
        if e.protocol_name is not None:
            self._protocol_name = e.protocol_name
        state = e.state.value
        if state == EMPTY:
            self._owners, self._owners_generation = {}, e.generation_id
        elif self._open is None and state in (PR, CR):
            r = self._new_rebalance(e, from_state=state, cause="warm start: rebalance already in progress")
            r.synthetic = True
            if state == CR:
                r.generation_from = e.generation_id - 1
                r.generation_to = e.generation_id
                r.join_completed_ms = e.time_ms
                r.leader, r.protocol_type, r.protocol_name = e.leader, e.protocol_type, e.protocol_name
            self._open = r

    # join / sync ----------------------------------------------------------------------------------

    def _on_join_completed(self, e: ModelEvent) -> None:
        self._resolve_suspension(e)
        gen, t = e.generation_id, e.time_ms
        members = list(e.members)
        in_gen = set(members)
        # members that disappeared without a removal event were dropped at join completion
        for m in sorted(self._members - in_gen):
            self._mark_presence(m)
            self._seg.events.append(_implicit_eviction(m))
            self._members.discard(m)
        for m in sorted(self._sessions):
            s = self._sessions[m]
            if s.generation >= gen and m in in_gen:
                continue
            reason = "next_generation" if m in in_gen else "rebalance_timeout_eviction"
            self._close_session(m, t, e.seq, reason)
        for m in sorted(in_gen - self._members):
            self._mark_presence(m)
        self._members |= in_gen
        for m in members:
            if m not in self._sessions:
                self._sessions[m] = _Session(m, gen, t, e.seq, self._instance_of.get(m))
        self._leader = e.leader
        if e.leader and e.leader in self._sessions:
            self._sessions[e.leader].is_leader = True
        if e.protocol_type is not None:
            self._protocol_type = e.protocol_type
        self._protocol_name = e.protocol_name if members else None
        r = self._open
        if r is None and members:
            r = self._open = self._new_rebalance(e, from_state=PR, cause=None)
            r.synthetic = True
            r.generation_from = gen - 1
        target = r if r is not None else self._closing
        if target is not None and (target.generation_to is None or target.generation_to == gen):
            target.generation_to = gen
            if target.join_completed_ms is None:
                target.join_completed_ms = t
            target.leader = e.leader if members else None
            target.protocol_type = e.protocol_type if e.protocol_type is not None else self._protocol_type
            target.protocol_name = e.protocol_name if members else None

    def _on_sync_completed(self, e: ModelEvent) -> None:
        gen = e.generation_id
        if self._owners_generation == gen and self._owners is not None:
            return
        cur = self._decode_owners(e.assignments)
        target = None
        for r in (self._open, self._closing):
            if r is not None and r.generation_to == gen:
                target = r
        if target is not None:
            target.partitions_assigned = len(cur) if cur is not None else None
            if cur is not None and self._owners is not None:
                prev = self._owners
                target.partitions_moved = sum(1 for tp, owner in cur.items() if prev.get(tp) != owner)
            else:
                target.partitions_moved = None
        self._owners, self._owners_generation = cur, gen

    def _owner_key(self, member: str) -> str:
        inst = self._instance_of.get(member)
        if inst is None:
            for r in self._joins.get(member, ()):
                if r.group_instance_id:
                    inst = r.group_instance_id
        return f"i:{inst}" if inst else f"m:{member}"

    def _decode_owners(
        self, assignments: Iterable[tuple[str, bytes | None]]
    ) -> dict[tuple[str, int], str] | None:
        owners: dict[tuple[str, int], str] = {}
        for member, data in assignments:
            if data is None:
                return None
            if len(data) == 0:
                continue
            a = try_decode_assignment(data)
            if a is None:
                return None
            key = self._owner_key(member)
            for topic, parts in a.partitions:
                for p in parts:
                    owners[(topic, int(p))] = key
        return owners

    # transitions ----------------------------------------------------------------------------------

    def _on_transition(self, e: ModelEvent) -> None:
        to = e.state.value
        frm = e.from_state.value if e.from_state is not None else (self._state or to)
        t, gen = e.time_ms, e.generation_id
        cause = (
            e.cause
            or _DEFAULT_CAUSE.get((frm, to))
            or ("group unloaded or deleted" if to == DEAD else f"{frm} -> {to}")
        )
        ref = e.ref
        self._out.transitions.append(
            {
                "group_id": self.group_id,
                "seq": int(e.seq),
                "time_ms": int(t),
                "from_state": frm,
                "to_state": to,
                "generation_id": int(gen),
                "cause": cause,
                "member_id": e.member_id,
                "source_file": ref[0] if ref is not None else None,
                "line_no": int(ref[1]) if ref is not None else None,
                "log_date": _utc_date(t),
            }
        )
        seg = self._seg
        self._finalize_closing()
        if to != DEAD:
            self._resolve_suspension(e)
        if frm == EMPTY:
            self._owners, self._owners_generation = {}, gen
        if to == PR and frm != PR:
            if self._open is not None:
                old = self._open
                old.outcome = "superseded"
                old.ended_ms, old.close_seq = t, e.seq
                old.members_after = self._members_before_segment()
                self._open = None
                self._emit_rebalance(old)
            r = self._new_rebalance(e, from_state=frm, cause=e.cause)
            r.ctx_pre = list(seg.events)
            self._attribute(r, seg.events)
            self._open = r
            self._seg = _Segment(seq=e.seq, post_start=True)
        else:
            target = self._open
            if target is not None:
                if seg.post_start:
                    target.ctx_post.extend(seg.events)
                self._attribute(target, seg.events)
            self._seg = _Segment(seq=e.seq)
            if to == CR:
                cur = self._open
                if cur is None:
                    cur = self._open = self._new_rebalance(e, from_state=PR, cause=None)
                    cur.synthetic = True
                    cur.generation_from = gen - 1
                if cur.join_completed_ms is None:
                    cur.join_completed_ms = t
                cur.generation_to = gen
            elif to == STABLE:
                self._last_stable_ms = t
                self._last_stable_protocol = self._protocol_name
                if self._open is not None:
                    self._close_open("stable", e)
            elif to == EMPTY:
                self._protocol_name = None
                for m in sorted(self._members):
                    self._mark_presence(m)
                    self._seg.events.append(_implicit_eviction(m))
                self._members.clear()
                for m in sorted(self._sessions):
                    self._close_session(m, t, e.seq, "rebalance_timeout_eviction")
                self._owners, self._owners_generation = {}, gen
                if self._open is not None:
                    if self._open.join_completed_ms is None:
                        self._open.join_completed_ms = t
                    self._open.generation_to = gen
                    self._close_open("empty", e)
                self._leader = None
            elif to == DEAD:
                self._suspend(e)
        self._generation = gen
        self._state = to

    def _suspend(self, e: ModelEvent) -> None:
        """The group went Dead (coordinator unload, deletion, or the model lost it): an open rebalance
        ends ``dead``; member sessions stay open until the group is served again (a restore continues
        them) or is created afresh (they end ``dead``)."""
        if self._open is not None:
            self._close_open("dead", e)
            if self._closing is not None:
                self._closing.members_after = []
        self._suspended |= self._members
        self._members = set()
        self._leader = None
        self._protocol_name = None

    def _resolve_suspension(self, e: ModelEvent) -> None:
        for m in sorted(self._suspended):
            self._close_session(m, e.time_ms, e.seq, "dead")
        self._suspended.clear()

    def _on_adopted(self, e: ModelEvent) -> None:
        """An adopted transition (track-mode reconciliation took the broker's state and/or generation):
        keep the rebalance and the sessions in step, write no transition row."""
        self._adopt(e)
        self._generation = e.generation_id
        self._state = e.state

    def _adopt(self, e: ModelEvent) -> None:
        prev_state, state, gen = self._state, e.state, e.generation_id
        if prev_state is None or (state == prev_state and gen == self._generation):
            return
        if state == DEAD:
            if prev_state != DEAD:
                self._finalize_closing()
                self._suspend(e)
            return
        if prev_state == DEAD:
            return
        why = e.cause
        if gen > self._generation >= 0:
            self._roll_sessions(e)
            r = self._open
            if r is not None and gen > r.generation_from:
                r.generation_to = gen
                if r.join_completed_ms is None:
                    r.join_completed_ms = e.time_ms
        if state == prev_state:
            return
        self._finalize_closing()
        if state == PR:
            if self._open is not None:
                old = self._open
                old.outcome = "superseded"
                old.ended_ms, old.close_seq = e.time_ms, e.seq
                old.members_after = sorted(self._members)
                self._open = None
                self._emit_rebalance(old)
            r = self._new_rebalance(e, from_state=prev_state, cause=why)
            r.synthetic = True
            self._open = r
        elif state == CR:
            r = self._open
            if r is None:
                r = self._open = self._new_rebalance(e, from_state=PR, cause=why)
                r.synthetic = True
                r.generation_from = gen - 1
            if r.join_completed_ms is None:
                r.join_completed_ms = e.time_ms
            r.generation_to = gen
        elif state == STABLE:
            if self._open is not None:
                self._last_stable_ms = e.time_ms
                self._last_stable_protocol = self._protocol_name
                self._close_open("stable", e)
        elif state == EMPTY and self._open is not None:
            self._open.generation_to = gen
            if self._open.join_completed_ms is None:
                self._open.join_completed_ms = e.time_ms
            self._close_open("empty", e)

    def _roll_sessions(self, e: ModelEvent) -> None:
        """The generation moved on without a join completion the tracker saw (reconciliation)."""
        gen = e.generation_id
        for m in sorted(self._sessions):
            s = self._sessions[m]
            if m not in self._members or s.generation >= gen:
                continue
            if s.open_seq == e.seq and s.heartbeats == 0 and s.commits == 0:
                s.generation = gen  # discovered in this very request: it belongs to the adopted generation
                continue
            self._close_session(m, e.time_ms, e.seq, "next_generation")
            self._sessions[m] = _Session(
                m, gen, e.time_ms, e.seq, self._instance_of.get(m), is_leader=m == self._leader
            )

    def _close_open(self, outcome: str, e: ModelEvent) -> None:
        r = self._open
        assert r is not None
        r.outcome = outcome
        r.ended_ms, r.close_seq = e.time_ms, e.seq
        if outcome == "stable":
            r.stable_ms = e.time_ms
        r.members_after = sorted(self._members)
        self._open = None
        self._closing = r

    def _finalize_closing(self) -> None:
        r = self._closing
        if r is None:
            return
        self._closing = None
        self._emit_rebalance(r)

    def _emit_rebalance(self, r: _Rebalance) -> None:
        self._out.rebalances.append(self._rebalance_row(r))
        self._prune_departed(r.close_seq if r.close_seq is not None else r.start_seq)

    def _new_rebalance(self, e: ModelEvent, *, from_state: str, cause: str | None) -> _Rebalance:
        self._rebalance_count += 1
        kafka_transition = e.kind == EventKind.TRANSITION
        member = e.member_id if kafka_transition else None
        trigger = _ROW_TRIGGER[e.trigger] if kafka_transition and e.trigger is not None else None
        before = self._members_before_segment()
        return _Rebalance(
            rebalance_seq=self._rebalance_count,
            start_seq=e.seq,
            from_state=from_state,
            generation_from=e.generation_id,
            started_ms=e.time_ms,
            cause=cause,
            cause_client_reason=e.client_reason if kafka_transition else None,
            trigger=trigger,
            start_member=member,
            start_member_known=member is not None and member in before,
            start_member_was_leader=member is not None and member == self._leader,
            members_before=before,
            coordinator_error_ms=self._last_coordinator_error_ms,
            prev_stable_ms=self._last_stable_ms,
            prev_protocol=self._last_stable_protocol if self._last_stable_ms is not None else None,
        )

    def _members_before_segment(self) -> list[str]:
        before = set(self._members)
        for m, present in self._seg.presence_before.items():
            if present:
                before.add(m)
            else:
                before.discard(m)
        return sorted(before)

    def _close_segment(self) -> None:
        seg = self._seg
        if not seg.events:
            return
        target = self._open
        if target is None and self._closing is not None and self._closing.close_seq == seg.seq:
            target = self._closing
            if target.members_after is not None:
                target.members_after = sorted(self._members)
        if target is None:
            return
        if seg.post_start:
            target.ctx_post.extend(seg.events)
        self._attribute(target, seg.events)

    @staticmethod
    def _copy(r: _Rebalance) -> _Rebalance:
        """A copy of an open rebalance to finish as a row: its lists copied (they are extended and sorted
        into), their strings and context events shared (never changed once made)."""
        return dataclasses.replace(
            r,
            members_before=list(r.members_before),
            ctx_pre=list(r.ctx_pre),
            ctx_post=list(r.ctx_post),
            joined=list(r.joined),
            left=list(r.left),
            evicted=list(r.evicted),
            members_after=None if r.members_after is None else list(r.members_after),
        )

    @staticmethod
    def _attribute(r: _Rebalance, events: Sequence[_Ctx]) -> None:
        def add(lst: list[str], m: str | None) -> None:
            if m and m not in lst:
                bisect.insort(lst, m)

        for c in events:
            kind = c.kind
            if kind == EventKind.MEMBER_ADDED and c.member_id in r.evicted:
                # an id removed and added again: Kafka never re-admits a removed member id (its JoinGroup
                # is answered UNKNOWN_MEMBER_ID, §4.4), so only track mode adds it back, because the
                # broker answered it as a member: it was neither evicted nor did it join
                r.evicted.remove(c.member_id)
            elif kind == EventKind.MEMBER_ADDED:
                add(r.joined, c.member_id)
            elif kind == EventKind.MEMBER_REMOVED:
                add(r.left if c.removal_reason == RemovalReason.LEFT else r.evicted, c.member_id)
            elif kind == EventKind.STATIC_MEMBER_REPLACED:
                add(r.joined, c.member_id)
                add(r.evicted, c.detail)

    # sessions ---------------------------------------------------------------------------------------

    def _session_for_activity(self, e: ModelEvent) -> _Session | None:
        m = e.member_id
        if not m:
            return None
        if m in self._suspended:
            self._suspended.discard(m)
            self._members.add(m)
        s = self._sessions.get(m)
        if s is None:
            if e.state in (GroupState.EMPTY, GroupState.DEAD):
                return None  # e.g. an admin commit with a member id into an Empty group: not a member
            # a member the tracker has not seen join (warm start, reconciliation): its session starts now
            s = self._sessions[m] = _Session(m, e.generation_id, e.time_ms, e.seq, self._instance_of.get(m))
            self._members.add(m)
        return s

    def _close_session(self, member: str, t: int, seq: int, reason: str) -> None:
        s = self._sessions.pop(member, None)
        if s is None:
            return
        rec = self._attrs(member, s.generation, seq)
        self._out.member_sessions.append(self._session_row(s, t, reason, rec))
        if reason == "next_generation":
            self._prune_joins(member, rec)

    def _session_row(self, s: _Session, ended_ms: int | None, reason: str, rec: _JoinRec | None) -> Row:
        if rec is None and ended_ms is None:
            rec = self._attrs(s.member_id, s.generation, None)
        instance = (
            s.group_instance_id
            or (rec.group_instance_id if rec is not None else None)
            or self._instance_of.get(s.member_id)
        )
        cl = self._clients.get(s.member_id)
        client_id = rec.client_id if rec is not None and rec.client_id is not None else None
        if client_id is None and cl is not None:
            client_id = cl.client_id
        client_host = rec.client_host if rec is not None and rec.client_host is not None else None
        if client_host is None and cl is not None:
            client_host = cl.client_host
        return {
            "group_id": self.group_id,
            "member_id": s.member_id,
            "group_instance_id": instance,
            "client_id": client_id,
            "client_address": client_host,
            "generation_id": int(s.generation),
            "joined_ms": int(s.joined_ms),
            "last_heartbeat_ms": s.last_heartbeat_ms,
            "heartbeats": int(s.heartbeats),
            "commits": int(s.commits),
            "ended_ms": ended_ms,
            "end_reason": reason,
            "session_timeout_ms": rec.session_timeout_ms if rec is not None else None,
            "rebalance_timeout_ms": rec.rebalance_timeout_ms if rec is not None else None,
            "is_leader": bool(s.is_leader),
            "log_date": _utc_date(s.joined_ms),
        }

    # rows -------------------------------------------------------------------------------------------

    def _classify(self, r: _Rebalance) -> tuple[str, str | None, str | None]:
        """(trigger, trigger_member_id, trigger_client_reason) — the rules of the module doc."""
        if r.synthetic:
            return UNKNOWN, r.start_member, None
        decisive: _Ctx | None = None
        event_trigger: str | None = None
        for c in [*reversed(r.ctx_pre), *r.ctx_post]:
            t = self._ctx_trigger(c)
            if t is not None:
                decisive, event_trigger = c, t
                break
        trigger = r.trigger or event_trigger
        if trigger is None and r.start_member is not None:
            if r.start_member_known:
                trigger = LEADER_REJOIN if r.start_member_was_leader else METADATA_CHANGE
            else:
                trigger = NEW_MEMBER
        if trigger is None:
            trigger = UNKNOWN
        if trigger == METADATA_CHANGE and r.start_member_was_leader:
            trigger = LEADER_REJOIN  # Kafka < 2.6 words a leader's rejoin "Updating metadata for member"
        member = r.start_member or (decisive.member_id if decisive is not None else None)
        client_reason = (
            decisive.client_reason if decisive is not None and decisive.member_id == member else None
        )
        if client_reason is None and member is not None:
            for c in [*reversed(r.ctx_pre), *r.ctx_post]:
                if c.member_id == member and c.client_reason:
                    client_reason = c.client_reason
                    break
        if client_reason is None:
            client_reason = r.cause_client_reason
        if trigger in _REJOIN_TRIGGERS and member is not None:
            names = self._trigger_protocols(r, member)
            if names is not None and names[0] != names[1]:
                trigger = PROTOCOL_CHANGE
        if r.from_state == EMPTY:
            trigger = GROUP_CREATED
        if (
            trigger in _COORDINATOR_OVERRIDABLE
            and r.coordinator_error_ms is not None
            and 0 <= r.started_ms - r.coordinator_error_ms <= self.coordinator_error_window_ms
        ):
            trigger = COORDINATOR_MOVED
        return trigger, member, client_reason

    @staticmethod
    def _ctx_trigger(c: _Ctx) -> str | None:
        kind, reason, detail = c.kind, c.removal_reason, c.detail
        if kind == EventKind.MEMBER_REMOVED:
            return _REMOVAL_TRIGGER.get(reason) if reason is not None else None
        if kind == EventKind.STATIC_MEMBER_REPLACED:
            return STATIC_MEMBER_REPLACED
        if kind == EventKind.MEMBER_ADDED:
            return NEW_MEMBER
        if kind == EventKind.MEMBER_UPDATED:
            return LEADER_REJOIN if c.was_leader else METADATA_CHANGE
        if kind == EventKind.TIMER_EXPIRED and detail:
            d = str(detail).lower()
            if d.startswith("sync"):
                return PENDING_SYNC_EXPIRY
            if d.startswith("heartbeat"):
                return SESSION_EXPIRY
        return None

    def _trigger_protocols(self, r: _Rebalance, member: str) -> tuple[list[str], list[str]] | None:
        """(protocol names of the triggering JoinGroup, of the member's JoinGroup before it), if known."""
        recs = self._joins.get(member)
        if not recs:
            return None
        cur = prev = None
        for rec in recs:
            if rec.seq < r.start_seq:
                prev = rec
            elif rec.seq == r.start_seq:
                cur = rec
        if cur is None or prev is None:
            return None
        return cur.protocols, prev.protocols

    def _rebalance_row(self, r: _Rebalance) -> Row:
        trigger, member, client_reason = self._classify(r)
        protocol = r.prev_protocol or r.protocol_name
        follow_up = (
            protocol is not None
            and protocol in self.cooperative_protocols
            and trigger in _REJOIN_TRIGGERS
            and member is not None
            and member in r.members_before
            and (
                (
                    r.prev_stable_ms is not None
                    and 0 <= r.started_ms - r.prev_stable_ms <= self.follow_up_window_ms
                )
                or (client_reason is not None and _REVOKE_REASON.search(client_reason) is not None)
            )
        )
        finished = r.outcome in ("stable", "empty", "superseded", "dead")
        ended = r.ended_ms if finished else None
        return {
            "group_id": self.group_id,
            "rebalance_seq": int(r.rebalance_seq),
            "generation_from": int(r.generation_from),
            "generation_to": r.generation_to if finished else None,
            "started_ms": int(r.started_ms),
            "join_completed_ms": r.join_completed_ms,
            "stable_ms": r.stable_ms,
            "ended_ms": ended,
            "outcome": r.outcome or "unfinished",
            "total_duration_ms": ended - r.started_ms if ended is not None else None,
            "join_phase_ms": r.join_completed_ms - r.started_ms if r.join_completed_ms is not None else None,
            "sync_phase_ms": (
                r.stable_ms - r.join_completed_ms
                if r.stable_ms is not None and r.join_completed_ms is not None
                else None
            ),
            "trigger": trigger,
            "trigger_cause": r.cause,
            "trigger_member_id": member,
            "trigger_client_reason": client_reason,
            "members_before": list(r.members_before),
            "members_after": list(r.members_after) if finished and r.members_after is not None else None,
            "joined": list(r.joined),
            "left": list(r.left),
            "evicted": list(r.evicted),
            "leader": r.leader,
            "protocol_type": r.protocol_type,
            "protocol_name": r.protocol_name,
            "partitions_moved": r.partitions_moved,
            "partitions_assigned": r.partitions_assigned,
            "cooperative_follow_up": bool(follow_up),
            "log_date": _utc_date(r.started_ms),
        }
