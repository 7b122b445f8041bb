"""A deterministic, version-aware model of Kafka's classic group coordinator, one instance per group.

It reads like Kafka's ``GroupMetadataManager``: one handler per request type (``classic_group_join``,
``classic_group_sync``, ``classic_group_heartbeat``, ``classic_group_leave``, ``offset_commit``), the
state machine of :mod:`rebalance_replay.transforms.coordinator.state`, and keyed timers (``join-<group>``,
``sync-<group>``, ``heartbeat-<group>-<member>``) in :mod:`rebalance_replay.transforms.coordinator.timers`.

Every request handed to :meth:`CoordinatorEngine.handle` produces exactly one
:class:`~rebalance_replay.transforms.coordinator.types.Prediction`: at once, when a parked JoinGroup/SyncGroup
is
answered (``completion_ms`` = model time of the answer), or when it is superseded (``completion_ms``
None, unscored). Model-internal happenings are
:class:`~rebalance_replay.transforms.coordinator.types.ModelEvent` s.

Replay realities (warm start, track-mode reconciliation, coordinator moves) are documented on the
class and implemented in :mod:`rebalance_replay.transforms.coordinator.reconcile`.
"""

from __future__ import annotations

import copy
import dataclasses
import uuid
from collections.abc import Callable, Hashable
from typing import Any, Self

from rebalance_replay.transforms.coordinator import causes
from rebalance_replay.transforms.coordinator.codec import Json
from rebalance_replay.transforms.coordinator.config import (
    CoordinatorConfig,
    VersionFeatures,
)
from rebalance_replay.transforms.coordinator.fastobj import constructor
from rebalance_replay.transforms.coordinator.serde import (
    SavedModel,
    load_model,
    restore_persisted,
    save_model,
    snapshot_group,
)
from rebalance_replay.transforms.coordinator.state import (
    ClassicGroup,
    ClassicGroupMember,
    IllegalStateTransition,
    ParkedCall,
    ReplayBook,
    copy_attributes,
    next_generation,
)
from rebalance_replay.transforms.coordinator.timers import (
    BOOKKEEPING_PRIORITY,
    REBALANCE_PRIORITY,
    SESSION_PRIORITY,
    Timer,
    TimerQueue,
)
from rebalance_replay.transforms.coordinator.types import (
    NO_RESPONSE,
    Cause,
    EventKind,
    GroupRequest,
    GroupState,
    HeartbeatRun,
    LeaderEvent,
    LeaveMember,
    ModelEvent,
    ObservedResponse,
    PredictedResponse,
    Prediction,
    RemovalReason,
    Trigger,
)
from rebalance_replay.transforms.kafka_protocol import EXTERNAL_ERRORS, ApiKey, Errors

__all__ = ["CoordinatorConfig", "CoordinatorEngine", "IllegalStateTransition"]

EMPTY = GroupState.EMPTY
PREPARING = GroupState.PREPARING_REBALANCE
COMPLETING = GroupState.COMPLETING_REBALANCE
STABLE = GroupState.STABLE
DEAD = GroupState.DEAD

# the errors the handlers answer most, by their names
NONE, UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION = Errors.NONE, Errors.UNKNOWN_MEMBER_ID, Errors.ILLEGAL_GENERATION
REBALANCE_IN_PROGRESS, FENCED_INSTANCE_ID = Errors.REBALANCE_IN_PROGRESS, Errors.FENCED_INSTANCE_ID
INCONSISTENT_GROUP_PROTOCOL, NOT_COORDINATOR = Errors.INCONSISTENT_GROUP_PROTOCOL, Errors.NOT_COORDINATOR
SUPERSEDED_REASON = "superseded: never answered by the coordinator"

EXTERNAL_ERROR_NAMES = frozenset(e.name for e in EXTERNAL_ERRORS)
#: observed errors meaning the group's coordinator moved or is (re)loading it (§12, §16)
MOVE_ERRORS = frozenset({Errors.NOT_COORDINATOR, Errors.COORDINATOR_LOAD_IN_PROGRESS})

_ID_NAMESPACE = uuid.UUID("6d1b8f1e-2b8a-4c55-9b0e-7f3c9a1d2e44")

# timer kinds
T_INITIAL_JOIN = "initial-join"
T_JOIN = "join"
T_SYNC = "sync"
T_HEARTBEAT = "heartbeat"
T_OFFSETS = "offsets-expiration"
T_OBSERVED = "observed-answer"
#: answers the broker gives only to a member it knows (the log-gap rule)
_KEPT_BY_BROKER = {"NONE": True, "REBALANCE_IN_PROGRESS": True, "ILLEGAL_GENERATION": True}
#: join-phase expirations in a row with no member rejoining after which the rest up to the next other timer
#: are skipped (:meth:`CoordinatorEngine._skip_stalled_join`)
STALLED_JOIN_REPEATS = 32


#: hot-path constructors (see fastobj): a heartbeat/commit response, its Prediction, its event
new_response: Callable[[str, int, tuple[tuple[str, int, str], ...] | None], PredictedResponse] = constructor(
    PredictedResponse, ("error", "completion_ms", "partition_errors")
)
_new_stable_prediction: Callable[..., Prediction] = constructor(
    Prediction,
    ("seq", "request", "response", "generation_before", "generation_after"),
    state_before=STABLE,
    state_after=STABLE,
)
_new_liveness_event: Callable[..., ModelEvent] = constructor(
    ModelEvent, ("seq", "time_ms", "kind", "generation_id", "member_id", "ref"), state=STABLE
)


_HEARTBEAT = ApiKey.HEARTBEAT
_OFFSET_COMMIT = ApiKey.OFFSET_COMMIT
_HEARTBEAT_EVENT = EventKind.HEARTBEAT
_COMMIT_EVENT = EventKind.OFFSET_COMMIT


class _Out:
    """A response decided during the current operation, turned into a Prediction when it ends."""

    __slots__ = ("call", "response")

    def __init__(self, call: ParkedCall, response: PredictedResponse) -> None:
        self.call = call
        self.response = response


def _observed_error(obs: ObservedResponse | None) -> str | None:
    """The observed answer's error (an OffsetCommit's: its first partition's)."""
    if obs is None:
        return None
    err = obs.error
    if err is None and obs.partition_errors:
        err = obs.partition_errors[0][2]
    return err


def _move_error(obs: ObservedResponse | None) -> bool:
    """Whether the observed answer says the group's coordinator moved or is loading it (§12, §16)."""
    return _observed_error(obs) in MOVE_ERRORS


def _protocol_inconsistent(requested: str | None, group_value: str | None, java: bool) -> bool:
    """SyncGroup v5+'s protocol type/name check: Scala's ``!group.protocolName.contains(name)`` also
    rejects a name when the group has none (between generations); Java's ``isProtocolInconsistent``
    only compares two values."""
    if requested is None:
        return False
    if group_value is None:
        return not java
    return requested != group_value


#: what :meth:`CoordinatorEngine.settled_state` leaves out of the replay book: the outputs' sequence numbers
#: and event context, the notes by request seq, and the parked calls keyed by seq (compared by request)
_OUTPUT_BOOKKEEPING = frozenset({"seq", "clock", "ev_seq", "ev_ref", "notes", "parked"})


class CoordinatorEngine:
    """The coordinator of one classic group, replayed from its requests in arrival order.

    Determinism: members are iterated in the order of Kafka's member map (``state.hash_order``, §16);
    generated member ids are ``clientId-<uuid5(group, n)>`` unless ``uuid_source`` says otherwise; timers
    with equal deadlines fire in arming order (Java) or rebalance-before-session (Scala,
    ``timer_tie_order``).

    Warm start (``config.warm_start``): the model starts *unconfident* and builds its view of a group
    that may already be running from the observed responses (members from accepted heartbeats/commits,
    the generation from the request that was accepted, leader/protocol/member list from JoinGroup
    responses; see :mod:`rebalance_replay.transforms.coordinator.reconcile`). Predictions made while
    unconfident are
    unscored (``"warm-up: ..."``). The model becomes **confident** when either (a) it observes the
    complete membership of a generation — a JoinGroup response carrying the leader's member list — or
    (b) the group is Empty/CompletingRebalance/Stable and no previously unknown member has shown up for
    ``warm_start_window_ms`` since the last discovery (or since the first request): every live member
    heartbeats every ``heartbeat.interval.ms`` (3 s by default), so after the window every member has
    been seen. Confidence is lost again (back to warm-up) when an observation cannot be placed (an
    ILLEGAL_GENERATION the model cannot explain) or the coordinator moves. Without warm start the
    model assumes the group does not exist before the first request and is confident from the start.

    Coordinator moves (§12/§16): an observed NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS is not
    predicted (unscored ``"external error: ..."``, an EXTERNAL_ERROR event). The first one after a
    normally answered request is taken as the group moving: the group is unloaded like
    ``onResignation`` (parked JoinGroup/SyncGroup answered NOT_COORDINATOR, state Dead, in-memory
    rebalance state and timers lost), then, when a request is answered normally again, loaded like
    ``onGroupLoaded`` from the last metadata the coordinator persisted (Stable with its members, each
    with a fresh session deadline, or Empty) and the model is back in warm-up. What the old
    coordinator's timers wrote after its last normal answer is dropped when a member of its group shows
    it had died by then (:meth:`_move_seen`: a dead broker persists nothing). While a
    COORDINATOR_LOAD_IN_PROGRESS episode lasts, Heartbeat is predicted NONE and Scala's SyncGroup
    REBALANCE_IN_PROGRESS (§3). Other external errors (authorization, ...) leave the model untouched.
    """

    #: take the hot path for accepted heartbeats/commits (tests switch it off to compare both paths)
    _fast_path = True
    #: where generated member ids get their UUID (None: ``uuid5(group, n)``, deterministic per group);
    #: the differential tests plug in the oracle's seeded ``java.util.Random`` to make Kafka's own ids
    uuid_source: Callable[[], uuid.UUID] | None = None

    def __init__(self, group_id: str, config: CoordinatorConfig) -> None:
        self.group_id = group_id
        self.config = config
        self._f: VersionFeatures = config.features()
        self._inclusive = config.timer_rule == "inclusive"
        self._track = config.mode == "track"
        self._liveness_events = config.emit_liveness_events
        # equal deadlines: rebalance (join/sync) timers before session timers, or pure arming order
        rebalance_first = config.resolved_timer_tie_order == "rebalance_first"
        self._p_rebalance = REBALANCE_PRIORITY if rebalance_first else SESSION_PRIORITY
        self._p_session = SESSION_PRIORITY
        self._group: ClassicGroup | None = None
        self._timers = TimerQueue()
        self._predictions: list[Prediction] = []
        self._events: list[ModelEvent] = []
        self._outs: list[_Out] = []
        self._book = ReplayBook(confident=not config.warm_start)
        # keys (precomputed)
        self._join_key = f"join-{group_id}"
        self._sync_key = f"sync-{group_id}"
        self._hb_prefix = f"heartbeat-{group_id}-"
        self._offsets_key = f"offsets-expiration-{group_id}"
        # how far an observed answer time may be from the model's and still be "the same instant": the
        # configured grace, widened by the replayer to the broker clock's resolution (set_clock_resolution)
        self.answer_grace_ms = config.late_answer_grace_ms

    # ============================================================================================
    # public API
    # ============================================================================================
    @property
    def state(self) -> GroupState | None:
        """Current group state (None: the coordinator has no such group)."""
        return None if self._group is None else self._group.state

    @property
    def generation_id(self) -> int | None:
        return None if self._group is None else self._group.generation_id

    @property
    def group(self) -> ClassicGroup | None:
        """Read-only view of the group metadata (for tests and diagnostics)."""
        return self._group

    @property
    def confident(self) -> bool:
        return self._book.confident

    @property
    def features(self) -> VersionFeatures:
        """What the configured Kafka version/implementation does."""
        return self._f

    @property
    def book(self) -> ReplayBook:
        """The replay bookkeeping (clock, counters, confidence, parked calls ...), for reconciliation and
        serialisation."""
        return self._book

    @property
    def now_ms(self) -> int | None:
        return self._book.now

    def assume_born(self, why: str) -> None:
        """The log shows the group's birth (its first generation): before any request, start confident
        from "no such group" instead of warming up."""
        if self._book.now is None and self._group is None and not self._book.confident:
            self.become_confident(why)

    def set_clock_resolution(self, resolution_ms: int) -> None:
        """The log's timestamps tick every ``resolution_ms``: observed answer times are that coarse."""
        self.answer_grace_ms = max(self.config.late_answer_grace_ms, resolution_ms)

    def timer_keys(self) -> list[str]:
        return [t.key for t in self._timers.timers()]

    def __deepcopy__(self, memo: dict[int, Any]) -> Self:
        return copy_attributes(self, memo)

    def fork(self) -> Self:
        """An independent copy to try requests on (the replay's tie ordering): the whole state, without
        the predictions and events not drained yet (they can be many, and the copy has no use for them)."""
        outputs = self._predictions, self._events
        self._predictions, self._events = [], []
        try:
            return copy.deepcopy(self)
        finally:
            self._predictions, self._events = outputs

    def output_marks(self) -> tuple[int, int]:
        """How many predictions and events are waiting to be drained (for :meth:`outputs_since` and
        :meth:`take_outputs_before`)."""
        return len(self._predictions), len(self._events)

    def outputs_since(self, marks: tuple[int, int]) -> list[Prediction]:
        """The predictions made since ``marks`` (:meth:`output_marks`) and not drained yet."""
        return self._predictions[marks[0] :]

    def take_outputs_before(self, other: Self, marks: tuple[int, int]) -> None:
        """Put ``other``'s undrained outputs made before ``marks`` ahead of this model's own: this model is a
        :meth:`fork` of ``other`` taken at ``marks`` and replayed again (the replay's late-timer
        backtrack), and takes its place."""
        self._predictions = other._predictions[: marks[0]] + self._predictions
        self._events = other._events[: marks[1]] + self._events

    def settled_state(self, firing_until: int | None = None) -> object:
        """The state, exactly, as far as later answers can tell (the replay's tie ordering: two orders of
        a tie that leave equal settled states are one for anything that follows, and neither needs its
        lookahead): :meth:`fingerprint`, with every timer's deadline (a session timer's too) in firing
        order, the members in the order they joined with every field, the group's remaining fields and
        the replay book's (its parked calls by request). Not the bookkeeping of outputs (sequence
        numbers, event context). Compared with ``==`` only (the written snapshots are dicts).

        ``firing_until``: only what answers up to then can tell — the timers due later are listed by
        key, not in the order they would fire (timers due together fire in the order they were armed:
        two members' SyncGroups in one instant arm their session timers in the order they came)."""
        due = self._timers.timers()
        if firing_until is not None:
            later = [t for t in due if t.deadline > firing_until]
            due = [t for t in due if t.deadline <= firing_until] + sorted(later, key=lambda t: t.key)
        timers = tuple((t.key, t.kind, t.deadline, t.priority, t.data) for t in due)
        b = self._book
        # every field of the book (a field added later is compared too) but the outputs' bookkeeping; the
        # parked calls by request, not by their sequence numbers
        book = (
            *(getattr(b, f.name) for f in dataclasses.fields(b) if f.name not in _OUTPUT_BOOKKEEPING),
            sorted(call.request.ref or ("", -1) for call in b.parked.values()),
        )
        group = self._group
        if group is None:
            return (self.fingerprint(), timers, book)
        members = tuple(
            (
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.protocol_type,
                m.protocols,
                m.session_timeout_ms,
                m.rebalance_timeout_ms,
                m.assignment,
                m.is_new,
                m.inferred,
                None if m.awaiting_join is None else m.awaiting_join.request.ref,
                None if m.awaiting_sync is None else m.awaiting_sync.request.ref,
            )
            for m in group.members.values()
        )
        return (
            self.fingerprint(),
            timers,
            members,
            group.previous_state,
            group.map_layout,
            group.peak_size,
            group.order_known,
            tuple(sorted(group.supported_protocols.items())),
            group.has_offsets,
            group.last_commit_ms,
            group.empty_since_ms,
            book,
        )

    def fingerprint(self) -> Hashable:
        """What the answers to later requests depend on, as one hashable value (the replay's tie ordering
        compares the states different orders lead to): the group's state, generation, protocol, leader,
        members in Kafka's order (with what each awaits), static, pending and pending-sync members, and the
        timers with the rebalance timers' deadlines (a session timer by key only: the orders of one instant
        arm it a millisecond apart). Not the bookkeeping of outputs (sequence numbers, arming order)."""
        timers = tuple(
            sorted((t.key, None if t.kind == T_HEARTBEAT else t.deadline) for t in self._timers.timers())
        )
        group = self._group
        if group is None:
            return (None, self._book.confident, timers)
        members = tuple(
            (
                m.member_id,
                m.group_instance_id,
                m.awaiting_join is not None,
                m.awaiting_sync is not None,
                m.is_new,
                m.protocols,
                m.session_timeout_ms,
                m.rebalance_timeout_ms,
                m.assignment,
            )
            for m in group.ordered_members()
        )
        return (
            group.state,
            group.generation_id,
            group.protocol_type,
            group.protocol_name,
            group.leader_id,
            members,
            tuple(sorted(group.static_members.items())),
            tuple(sorted(group.pending_members)),
            tuple(sorted(group.pending_sync_members)),
            group.new_member_added,
            self._book.confident,
            timers,
        )

    def to_state(self) -> Json:
        """The whole model as a JSON document (:mod:`~rebalance_replay.transforms.coordinator.serde`); the
        same state
        always gives the same document."""
        if self._outs:
            raise RuntimeError("cannot serialise the model in the middle of an operation")
        timers = self._timers
        return save_model(
            SavedModel(
                self.group_id,
                self._book,
                self._group,
                timers.timers(),
                timers.next_order,
                self._predictions,
                self._events,
            )
        )

    @classmethod
    def from_state(cls, doc: Json, config: CoordinatorConfig) -> Self:
        saved = load_model(doc)
        model = cls(saved.group_id, config)
        model._book = saved.book
        model.install_group(saved.group)
        model._timers.restore(saved.timers, saved.timer_order)
        model._predictions = saved.predictions
        model._events = saved.events
        return model

    def join_deadline_ms(self) -> tuple[int, int] | None:
        """When the join phase in progress ends by its timer, or None: (the timer's deadline, the latest
        end) — the same but for an initial delayed join, which the timer extends while members keep
        joining, up to the rebalance timeout."""
        timer = self._timers.get(self._join_key)
        if timer is None:
            return None
        if timer.kind == T_INITIAL_JOIN:
            return timer.deadline, timer.deadline + int(timer.data[1])
        return timer.deadline, timer.deadline

    def handle(
        self, request: GroupRequest, late_timers_from: int | None = None, *, hold: bool = False
    ) -> None:
        """Process one request (arrival order, non-decreasing ``arrival_ms``); fires due timers first.

        ``late_timers_from``: the timers due from that time up to the arrival fire *after* the request, at
        its arrival — a broker's timer thread running late (its purgatory reaper, a busy coordinator),
        which a log shows when a request right after a deadline was answered as if the timer had not
        fired yet. The replayer passes it only when the observed answer says so
        (``rebalance_replay.transforms.replay``, within ``validation.broker_lag_ms``). With ``hold`` they
        do not fire after it either: a later request's ``late_timers_from`` fires them after that one (a
        timer thread late past several requests)."""
        t = request.arrival_ms
        book = self._book
        if book.silent_move is not None or (not book.moved_episode and _move_error(request.observed)):
            self._move_seen(request)
        if late_timers_from is None:
            self._handle(request, t)
            return
        self._advance(min(late_timers_from, t), inclusive=False)  # strictly before: those fire on time
        served = self._handle(request, None)
        if not hold:
            self._advance(t, late=t)
        if served:  # the late timers ran at the broker that answered: alive then
            self._served()

    def next_timer_deadline(self) -> int | None:
        """When the earliest armed timer is due (None: no timer)."""
        return self._timers.peek_deadline()

    def _handle(self, request: GroupRequest, timers_until: int | None) -> bool:
        """Fire the timers due by ``timers_until`` (None: none), then handle ``request``. Returns whether
        the coordinator answered it normally (not an external error: :meth:`_served`)."""
        t = request.arrival_ms
        book = self._book
        now = book.now
        if now is not None and t < now:
            raise ValueError(f"request arrival {t} is before the model clock {now} (arrival order required)")
        if timers_until is not None and self._timers.may_be_due(timers_until):
            self._advance(timers_until)
        book.now = t
        last = book.last_request_ms
        if last is not None and t - last >= self.config.group_min_session_timeout_ms:
            book.silence_ms, book.silence_end_ms = t - last, t
        elif book.silence_ms is not None:
            self._forget_silence_past(t)
        book.last_request_ms = t
        seq = book.seq
        book.seq = seq + 1
        book.clock = t
        book.ev_seq = seq
        book.ev_ref = request.ref
        api = request.api
        if book.parked:
            self._answered_by_causality(request, t)
        if (
            (api is _HEARTBEAT or api is _OFFSET_COMMIT)
            and self._fast_path
            and self._liveness(request, seq, t)
        ):
            if book.written_since_served:
                self._served()
            return True
        group = self._group
        call = ParkedCall(
            seq,
            request,
            DEAD if group is None else group.state,
            -1 if group is None else group.generation_id,
            True,
            None,
        )
        served = not self._pre_handle(call)
        if served:
            if api is ApiKey.HEARTBEAT:
                self.classic_group_heartbeat(call)
            elif api is ApiKey.OFFSET_COMMIT:
                self.offset_commit(call)
            elif api is ApiKey.JOIN_GROUP:
                self.classic_group_join(call)
            elif api is ApiKey.SYNC_GROUP:
                self.classic_group_sync(call)
            elif api is ApiKey.LEAVE_GROUP:
                self.classic_group_leave(call)
            else:
                self.respond(call, PredictedResponse(error=Errors.UNSUPPORTED_VERSION, completion_ms=t))
                self._book.notes[seq] = ("api_not_modelled",)
        self._finish_op()
        if self._book.immediate:
            self._run_immediate(t)
        if served:
            self._served()
        return served

    def _liveness(self, request: GroupRequest, seq: int, t: int) -> bool:
        """The hot path: an accepted Heartbeat/OffsetCommit of a known member of a Stable group whose
        observed answer (if any) agrees. Produces exactly what the general handlers would (a property
        test compares both paths)."""
        group = self._group
        book = self._book
        if group is None or group.state is not STABLE or not book.confident or book.loading:
            return False
        if book.inferred_seen:  # answers may be unscored (see _silent_inferred_member)
            return False
        member_id = request.member_id
        member = group.members.get(member_id) if member_id else None
        if member is None or member.inferred or not request.group_id:
            return False
        gen = group.generation_id
        if request.generation_id != gen:
            return False
        if (
            request.group_instance_id is not None
            and group.static_members.get(request.group_instance_id) != member_id
        ):
            return False
        obs = request.observed
        if obs is not None:
            err = obs.error
            if err is None and obs.partition_errors:
                err = obs.partition_errors[0][2]
            if err is not None and err != NONE:
                return False
            book.moved_episode = False
        # refresh the session: usually a later deadline for the same timer (no heap operation)
        key = self._hb_prefix + member_id  # type: ignore[operator]
        deadline = t + member.session_timeout_ms
        timers = self._timers
        if not timers.postpone(key, deadline, self._p_session):
            timers.arm(key, deadline, self._p_session, T_HEARTBEAT, (member_id,))  # type: ignore[arg-type]
        if request.api is _HEARTBEAT:
            response = new_response(NONE, t, None)
            kind = _HEARTBEAT_EVENT
        else:
            group.has_offsets = True
            group.last_commit_ms = t
            response = new_response(NONE, t, tuple([(tp, p, NONE) for tp, p in request.commit_partitions]))
            kind = _COMMIT_EVENT
        if self._liveness_events:
            self._events.append(_new_liveness_event(seq, t, kind, gen, member_id, request.ref))
        self._predictions.append(_new_stable_prediction(seq, request, response, gen, gen))
        return True

    @property
    def emits_liveness_events(self) -> bool:
        """Whether accepted Heartbeats/OffsetCommits become HEARTBEAT / OFFSET_COMMIT events."""
        return self._liveness_events

    def _silent_within(self, run: HeartbeatRun) -> bool:
        """The run holds a silence the log-gap rule watches (or starts after one): each request of it
        must then go through :meth:`handle`, which records the silence."""
        bound = self.config.group_min_session_timeout_ms
        last = self._book.last_request_ms
        return run.max_gap_ms >= bound or (last is not None and run.first_ms - last >= bound)

    def bulk_heartbeats(self, run: HeartbeatRun) -> int | None:
        """A run of heartbeats and offset commits with nothing else between them, taken at once: what
        :meth:`handle` would do with each (the hot path, :meth:`_liveness`) when every one is accepted
        — a known member of the Stable generation, answered NONE — and no timer fires in between.
        Returns the seq of the run's first request, or None, having changed nothing, when that cannot be
        shown from the run's summary (then each request must go through :meth:`handle`). The caller
        makes the predictions and events the hot path would have made (the run's rows are all alike)."""
        group = self._group
        book = self._book
        if (
            not self._fast_path
            or group is None
            or group.state is not STABLE
            or not book.confident
            or book.loading
            or book.inferred_seen
            or book.parked
            or book.immediate
            or book.silent_move is not None
            or not self.group_id
            or (book.now is not None and run.first_ms < book.now)
            or run.generations != (group.generation_id,)
            or self._silent_within(run)
        ):
            return None
        for instance, member_id in run.instances:
            if group.static_members.get(instance) != member_id:
                return None
        updates: list[tuple[str, int, int, int]] = []
        keys: set[str] = set()
        for m in run.members:
            member = group.members.get(m.member_id)
            if member is None or member.inferred:
                return None
            session = member.session_timeout_ms
            key = self._hb_prefix + m.member_id
            timer = self._timers.get(key)
            # no timer of the member fires before its first heartbeat, between two, or after its last
            if (
                timer is None
                or timer.deadline <= m.first_ms
                or m.max_gap_ms >= session
                or m.last_ms + session <= run.last_ms
            ):
                return None
            keys.add(key)
            updates.append((key, m.first_ms + session, m.last_ms + session, m.last_index))
        for timer in self._timers.live():  # nor any other timer before the run's end
            if timer.key not in keys and timer.deadline <= run.last_ms:
                return None
        if not self._timers.postpone_many(updates, self._p_session, run.size):
            return None
        base = book.seq
        book.seq = base + run.size
        book.now = book.clock = run.last_ms
        book.last_request_ms = run.last_ms
        if book.silence_ms is not None:
            self._forget_silence_past(run.last_ms)  # as the run's last request would (:meth:`_handle`)
        book.ev_seq = base + run.size - 1
        book.ev_ref = run.last_ref
        book.moved_episode = False
        self._served()
        if run.last_commit_ms is not None:
            group.has_offsets = True
            group.last_commit_ms = run.last_commit_ms
        return base

    def advance_to(self, time_ms: int) -> None:
        """Fire the timers due before a request arriving at ``time_ms`` (strict: deadline < time_ms,
        inclusive: deadline <= time_ms)."""
        if self._book.now is not None and time_ms < self._book.now:
            raise ValueError(f"cannot go back in time from {self._book.now} to {time_ms}")
        self._advance(time_ms)
        self._book.now = time_ms

    def drain(self) -> tuple[list[Prediction], list[ModelEvent]]:
        """Predictions and events produced since the last drain, in order."""
        preds, events = self._predictions, self._events
        self._predictions = []
        self._events = []
        return preds, events

    # reconciliation hooks: filled in by rebalance_replay.transforms.coordinator.model.GroupCoordinatorModel
    def _reconcile_answer(self, call: ParkedCall, predicted: PredictedResponse) -> bool:
        """Compare the model's answer with the observed one and adjust the model; True when it adjusted."""
        return False

    def _reconcile_late_answer(self, call: ParkedCall, emit: bool) -> None:
        """The broker answered ``call`` (per the log) while the model still holds it."""

    # the replay's decisions inside Kafka's handlers (Kafka's behaviour here; the replay's in reconcile.py)
    def _keeps_unjoined(self, member: ClassicGroupMember) -> bool:
        """Whether a member that did not rejoin stays when the join phase completes (Kafka: never)."""
        return False

    def _unsure_join(self, group: ClassicGroup) -> bool:
        """Whether the completing join phase kept members the model is unsure of (Kafka: none)."""
        return False

    def _score_join_answer(self, group: ClassicGroup, call: ParkedCall, unsure: bool) -> None:
        """Before a completed join phase answers ``call``: leave it out of scoring where the model cannot
        be sure of the answer (Kafka: every answer is the broker's)."""

    def _check_generation_protocol(self, group: ClassicGroup, generation: int) -> None:
        """Before ``initNextGeneration`` selects the protocol (Kafka: the members always share one)."""

    def _learn_sync_protocol(self, group: ClassicGroup, request: GroupRequest) -> None:
        """Before a valid SyncGroup's protocol check, in CompletingRebalance or Stable (Kafka: the group's
        protocol is known since its JoinGroups)."""

    def unload(self, time_ms: int, cause: str = "coordinator resigned the offsets partition") -> None:
        """Partition unload (§16): parked JoinGroup/SyncGroup answered NOT_COORDINATOR, group → Dead.
        The Dead group stays visible until :meth:`load` or the next group creation. The coordinator ran
        until ``time_ms``: what its timers wrote by then is what the next coordinator loads."""
        self.advance_to(time_ms)
        self._served()
        self._resign(time_ms, cause)

    def moved_silently(self, cause: str) -> None:
        """The group's next request is answered normally by another broker, and no NOT_COORDINATOR was
        seen in between: the old coordinator died or resigned (clients found the new one themselves).
        Handled with that request (:meth:`_move_seen`): the group is unloaded and loaded from what the
        old coordinator had persisted (§16, as after an observed move). The model stays confident: the
        new coordinator serves what was persisted, and its log has every request it served (unlike an
        observed move, where answers before the group was loaded are missing)."""
        if self._book.now is None or self._group is None or self._group.state == DEAD:
            return
        self._book.silent_move = cause

    def load(self, time_ms: int) -> None:
        """Partition load (§16): the group comes back as Stable/Empty from its last persisted metadata,
        every member with a fresh session deadline."""
        self.advance_to(time_ms)
        self._book.clock = time_ms
        self._book.ev_seq = self._book.seq
        self._book.ev_ref = None
        self._load_persisted("group loaded from its last persisted metadata")
        self._finish_op()

    # ============================================================================================
    # timers
    # ============================================================================================
    def _advance(self, t: int, inclusive: bool | None = None, late: int | None = None) -> None:
        """Fire the timers due by ``t`` (the timer rule unless ``inclusive`` is given; at ``late`` when
        the broker's timer ran late)."""
        self._run_timers(t, self._inclusive if inclusive is None else inclusive, late)
        if self._book.immediate:
            self._book.immediate.clear()

    def _run_timers(self, t: int, inclusive: bool, late: int | None = None) -> None:
        timers = self._timers
        stalled = 0  # join timers fired in a row, each re-arming itself one rebalance timeout later
        while True:
            timer = timers.pop_due(t, inclusive)
            if timer is None:
                return
            self._fire_timer(timer, late)
            stalled = stalled + 1 if self._join_stalled(timer) else 0
            if stalled >= STALLED_JOIN_REPEATS:
                self._skip_stalled_join(t)
                stalled = 0

    def _join_stalled(self, fired: Timer) -> bool:
        """Whether ``fired`` was the join phase's timer and the phase re-armed it a rebalance timeout later
        (Kafka's "could not complete rebalance because no members rejoined")."""
        if fired.kind != T_JOIN or self._group is None:
            return False
        again = self._timers.get(self._join_key)
        return (
            again is not None
            and again.kind == T_JOIN
            and again.deadline == fired.deadline + self._group.rebalance_timeout_ms()
        )

    def _skip_stalled_join(self, t: int) -> None:
        """A join phase that completed :data:`STALLED_JOIN_REPEATS` times in a row with no member rejoining
        and no other timer in between is at a fixed point: every further expiration until the next other
        timer (or ``t``) changes nothing but the clock. Kafka's broker fires each of them; replaying a log
        whose clock jumps (years, for a broker clock set back to the epoch) one by one would take as long
        as the jump holds rebalance timeouts, so the timer moves to its last expiration before then (one
        TIMER_EXPIRED says how many were skipped) and the loop fires the rest."""
        timer = self._timers.get(self._join_key)
        group = self._group
        if timer is None or group is None:
            return
        period = group.rebalance_timeout_ms()
        others = [x.deadline for x in self._timers.live() if x.key != self._join_key]
        limit = min([t, *others])
        skipped = (limit - timer.deadline) // period - 1 if period > 0 else 0
        if skipped <= 0:
            return
        deadline = timer.deadline + skipped * period
        self._timers.arm(self._join_key, deadline, timer.priority, timer.kind, timer.data)
        self.emit(
            EventKind.TIMER_EXPIRED,
            detail=self._join_key,
            cause=f"Group {self.group_id} could not complete rebalance because no members rejoined: "
            f"{skipped} more expirations every {period} ms until {deadline} skipped (nothing changes)",
        )

    def _run_immediate(self, t: int) -> None:
        """Timers armed with a zero delay while handling a request run at once (``DelayedOperation``
        with delay 0 is completed on ``tryCompleteElseWatch``; ``MockTimer.add`` runs it), whatever
        the timer rule."""
        while self._book.immediate:
            key = self._book.immediate.pop(0)
            timer = self._timers.get(key)
            if timer is not None and timer.deadline <= t:
                self._timers.pop_key(key)
                self._fire_timer(timer)

    def _fire_timer(self, timer: Timer, late: int | None = None) -> None:
        """Fire ``timer`` at its deadline, or at ``late`` when the broker's timer ran late."""
        self._book.clock = timer.deadline if late is None else max(timer.deadline, late)
        self._book.ev_seq = self._book.seq
        self._book.ev_ref = None
        self._fire(timer)
        self._finish_op()

    def _arm(
        self, key: str, delay_ms: int, priority: int, kind: str, data: tuple[int | str, ...] = ()
    ) -> None:
        self._timers.arm(key, self._book.clock + delay_ms, priority, kind, data)
        if delay_ms <= 0:
            self._book.immediate.append(key)

    def arm_heartbeat(self, member: ClassicGroupMember, timeout_ms: int) -> None:
        """``rescheduleClassicGroupMemberHeartbeat`` / ``completeAndScheduleNextExpiration``."""
        if member.inferred:
            # timeouts unknown (warm start): never expires on its own; remember when it was last alive
            self._book.inferred_seen[member.member_id] = self._book.clock
            return
        self._timers.arm(
            self._hb_prefix + member.member_id,
            self._book.clock + timeout_ms,
            self._p_session,
            T_HEARTBEAT,
            (member.member_id,),
        )

    def cancel_heartbeat(self, member_id: str) -> None:
        self._timers.cancel(self._hb_prefix + member_id)

    def _fire(self, timer: Timer) -> None:
        kind = timer.kind
        if kind == T_OBSERVED:
            self._on_observed_answer_due(int(timer.data[0]))
            return
        group = self._group
        self.emit(EventKind.TIMER_EXPIRED, detail=timer.key)
        if group is None:
            return
        if kind == T_HEARTBEAT:
            self._expire_heartbeat(group, str(timer.data[0]))
        elif kind == T_INITIAL_JOIN:
            self._on_initial_join_due(group, int(timer.data[0]), int(timer.data[1]))
        elif kind == T_JOIN:
            self.complete_join(group)
        elif kind == T_SYNC:
            self._expire_pending_sync(group, int(timer.data[0]))
        elif kind == T_OFFSETS:
            self._expire_offsets(group)

    # ============================================================================================
    # outputs
    # ============================================================================================
    def emit(
        self,
        kind: EventKind,
        *,
        member_id: str | None = None,
        group_instance_id: str | None = None,
        cause: str | None = None,
        removal_reason: RemovalReason | None = None,
        client_reason: str | None = None,
        detail: str | None = None,
        from_state: GroupState | None = None,
        members: tuple[str, ...] = (),
        leader: str | None = None,
        protocol_name: str | None = None,
        protocol_type: str | None = None,
        assignments: tuple[tuple[str, bytes | None], ...] = (),
        trigger: Trigger | None = None,
        adopted: bool = False,
        inferred: bool = False,
        error: Errors | None = None,
    ) -> None:
        g = self._group
        self._events.append(
            ModelEvent(
                seq=self._book.ev_seq,
                time_ms=self._book.clock,
                kind=kind,
                generation_id=-1 if g is None else g.generation_id,
                state=DEAD if g is None else g.state,
                from_state=from_state,
                member_id=member_id,
                group_instance_id=group_instance_id,
                cause=cause,
                removal_reason=removal_reason,
                client_reason=client_reason,
                detail=detail,
                ref=self._book.ev_ref,
                members=members,
                leader=leader,
                protocol_name=protocol_name,
                protocol_type=protocol_type,
                assignments=assignments,
                trigger=trigger,
                adopted=adopted,
                inferred=inferred,
                error=error,
            )
        )

    def _on_transition(
        self, group: ClassicGroup, previous: GroupState, cause: Cause, member_id: str | None, adopted: bool
    ) -> None:
        """Every state change of the group (``ClassicGroup.transition_to``) becomes an event: TRANSITION,
        or STATE_ADOPTED for reconciliation's adoptions."""
        self.emit(
            EventKind.STATE_ADOPTED if adopted else EventKind.TRANSITION,
            from_state=previous,
            cause=cause.text,
            member_id=member_id if member_id is not None else cause.member_id,
            client_reason=cause.client_reason,
            trigger=cause.trigger,
            adopted=adopted,
        )

    # --- timers and outputs, as reconciliation uses them -------------------------------------------
    def cancel_join_timer(self) -> None:
        self._timers.cancel(self._join_key)

    def arm_join_timer(self, group: ClassicGroup) -> None:
        """The join phase ends at the latest after the group's rebalance timeout."""
        self._arm(self._join_key, group.rebalance_timeout_ms(), self._p_rebalance, T_JOIN)

    def cancel_offsets_timer(self) -> None:
        self._timers.cancel(self._offsets_key)

    def arm_session_timer(self, member_id: str, timeout_ms: int) -> None:
        """A member's (or pending member's) session deadline, ``timeout_ms`` from now."""
        self._timers.arm(
            self._hb_prefix + member_id,
            self._book.clock + timeout_ms,
            self._p_session,
            T_HEARTBEAT,
            (member_id,),
        )

    def event_count(self) -> int:
        """Events emitted and not drained yet."""
        return len(self._events)

    def events_since(self, count: int) -> list[ModelEvent]:
        """The events emitted after the first ``count`` not drained yet (see :meth:`event_count`)."""
        return self._events[count:]

    def install_group(self, group: ClassicGroup | None) -> None:
        """Make ``group`` the coordinator's group (None: no such group); its transitions become events."""
        if group is not None:
            group.on_transition = self._on_transition
            group.map_layout = "java" if self._f.java else "scala"
        self._group = group

    def respond(self, call: ParkedCall, response: PredictedResponse) -> None:
        """The coordinator answers ``call`` now."""
        self._book.parked.pop(call.seq, None)
        if call.emitted:  # its Prediction exists already (track mode re-parked it)
            self._timers.cancel(f"observed-{call.seq}")
            if not self._book.confident:
                self._confirm_full_join(call, response)
            return
        call.emitted = True
        self._outs.append(_Out(call, response))

    def learn_member_order(self, group: ClassicGroup, obs: ObservedResponse | None) -> None:
        """The leader's JoinGroup answer lists the members in the coordinator's order: take it."""
        if obs is None or not obs.members or set(obs.members) != set(group.members):
            return
        group.members = {mid: group.members[mid] for mid in obs.members}
        group.order_known = True

    def _confirm_full_join(self, call: ParkedCall, response: PredictedResponse) -> None:
        """A re-parked JoinGroup the model now answers the way the broker did, with the leader's complete
        member list: the model has seen a whole rebalance and knows the group."""
        obs = call.request.observed
        group = self._group
        if (
            obs is not None
            and obs.error == NONE
            and obs.members
            and group is not None
            and response.error == NONE
            and set(obs.members) == set(response.members or ())
        ):
            if obs.generation_id is not None and obs.generation_id > group.generation_id:
                # the broker's count (the log began mid-life)
                group.transition_to(
                    group.state,
                    Cause(
                        Trigger.ADOPTED,
                        f"generation {group.generation_id} -> {obs.generation_id}: "
                        "the broker's join response",
                    ),
                    adopted=True,
                    generation_id=obs.generation_id,
                )
            if obs.leader in group.members:
                group.leader_id = obs.leader
            self._book.observed_full_join = True
            self.become_confident(f"answered the complete membership of generation {group.generation_id}")

    def supersede(self, call: ParkedCall, reason: str = SUPERSEDED_REASON) -> None:
        """A parked JoinGroup/SyncGroup Kafka never answers (replaced by a newer one, or its member was
        removed while a SyncGroup was parked)."""
        if call.emitted:
            return
        call.emitted = True
        self._book.parked.pop(call.seq, None)
        self._timers.cancel(f"observed-{call.seq}")
        g = self._group
        self._predictions.append(
            Prediction(
                seq=call.seq,
                request=call.request,
                response=PredictedResponse(error=NO_RESPONSE, completion_ms=None),
                state_before=call.state_before,
                generation_before=call.generation_before,
                state_after=DEAD if g is None else g.state,
                generation_after=-1 if g is None else g.generation_id,
                scored=False,
                unscored_reason=reason,
                reconciled=False,
                mismatch_kinds=self._book.notes.pop(call.seq, ()),
            )
        )

    def _park(self, call: ParkedCall) -> ParkedCall:
        """Remember a request whose answer comes later (track mode also watches its observed answer)."""
        obs = call.request.observed
        if self._needs_reconcile() and obs is not None and obs.completion_ms is not None:
            self._book.parked[call.seq] = call
            due = max(obs.completion_ms + self.answer_grace_ms, self._book.clock)
            self._timers.arm(f"observed-{call.seq}", due, BOOKKEEPING_PRIORITY, T_OBSERVED, (call.seq,))
        return call

    def _finish_op(self) -> None:
        """End of one request or timer: turn decided responses into Predictions (reconciling them
        with the observed responses first, in track mode / during warm-up)."""
        while self._outs:
            outs = self._outs
            self._outs = []
            for out in outs:
                call = out.call
                reconciled = False
                self._timers.cancel(f"observed-{call.seq}")
                if self._book.silence_ms is not None and self._book.confident:
                    self._log_gap(call, out.response)
                if self._needs_reconcile() and call.request.observed is not None:
                    reconciled = self._reconcile_answer(call, out.response)
                group = self._group
                if group is not None and not group.order_known:
                    self.learn_member_order(group, call.request.observed)
                self.append_prediction(call, out.response, reconciled=reconciled)

    def _forget_silence_past(self, t: int) -> bool:
        """Forget the silence the log-gap rule watches once ``t`` is past its window (as long again as the
        silence, at least the smallest session timeout, after it ended): the members the gap hid would
        have shown by then. Checked at every answer (:meth:`_log_gap`) and at every request, so that a
        request the hot path takes (no answer goes through :meth:`_finish_op`) leaves the same state."""
        book = self._book
        silence, ended = book.silence_ms or 0, book.silence_end_ms or 0
        if t - ended > max(silence, self.config.group_min_session_timeout_ms):
            book.silence_ms = book.silence_end_ms = None
            return True
        return False

    def _log_gap(self, call: ParkedCall, predicted: PredictedResponse) -> None:
        """A log that lost lines: the group was silent in the log for at least the broker's smallest
        session timeout shortly before this request (within as long again), and the broker accepted it
        (NONE), or answered it as a member (rebalancing, another generation) where the model, having let
        sessions expire in the silence, refuses it. Kafka never accepts a member it expired, so the log is
        missing the requests that kept the members alive (a rotated file lost, an hour not
        shipped): the model goes back to warm-up — this and the following answers unscored, learnt from
        the broker until it is confident again — instead of counting the gap as the coordinator's
        mistakes. (Both modes, while confident; the silence is part of the saved state.)"""
        book = self._book
        silence = book.silence_ms or 0
        if self._forget_silence_past(book.clock):
            return
        obs = call.request.observed
        if (
            obs is None
            or not _KEPT_BY_BROKER.get(obs.error or "", False)
            or predicted.error is Errors.NONE
            or (obs.error != "NONE" and predicted.error is not Errors.UNKNOWN_MEMBER_ID)
            or call.seq != self._book.seq - 1  # an answer to the request being handled, not a timer's
        ):
            return
        book.silence_ms = book.silence_end_ms = None  # once per gap
        why = (
            f"log gap: no request of the group in the log for {silence / 1000:.1f} s before "
            f"{call.request.api.name} of {call.request.member_id or '<no member id>'}, which the broker "
            f"answered {obs.error} and the model {getattr(predicted.error, 'name', predicted.error)}"
        )
        self.lose_confidence(why)
        call.scored = False  # the gap's evidence, not the coordinator's answer
        call.unscored_reason = self._book.warm_reason
        group = self._group
        if group is not None and group.state in (EMPTY, DEAD) and not group.members:
            # every member expired in the silence, and the generation moved on without them: the group
            # as the model left it is the model's own account of a silence the broker did not have (its
            # members' answers, of the generation before, would read as stale and teach nothing). Forget
            # it, as at the start of a log: this answer and the next ones infer the running group again
            for key in (self._join_key, self._sync_key, self._offsets_key):
                self._timers.cancel(key)
            self._timers.cancel_prefix(self._hb_prefix)
            self.install_group(None)
            self.emit(EventKind.WARM_START, detail=f"{why}: the group the model let expire is forgotten")

    def _needs_reconcile(self) -> bool:
        return self._track or not self._book.confident

    def _note(self, seq: int, kind: str) -> None:
        self._book.notes[seq] = (*self._book.notes.get(seq, ()), kind)

    # ============================================================================================
    # request pre-processing: external errors, warm-up scoring
    # ============================================================================================
    def _pre_handle(self, call: ParkedCall) -> bool:
        """Returns True when the request is fully handled here (external error)."""
        req = call.request
        obs = req.observed
        if obs is not None:
            err = obs.error
            if err is None and obs.partition_errors:
                err = obs.partition_errors[0][2]
            if err is not None and err in EXTERNAL_ERROR_NAMES:
                call.scored = False
                call.unscored_reason = f"external error: {err}"
                error = Errors.named(err)
                self.emit(EventKind.EXTERNAL_ERROR, member_id=req.member_id, detail=err, error=error)
                if err == Errors.COORDINATOR_LOAD_IN_PROGRESS:
                    self._book.loading = True
                if err in MOVE_ERRORS and not self._book.moved_episode:
                    self._book.moved_episode = True
                    self._coordinator_moved(err)
                if err in MOVE_ERRORS and self._group is not None and self._group.state == DEAD:
                    self._note_member_heard(req)
                self.respond(
                    call,
                    PredictedResponse(
                        error=error,
                        completion_ms=obs.completion_ms if obs.completion_ms is not None else req.arrival_ms,
                        partition_errors=(
                            None
                            if obs.partition_errors is None
                            else tuple((t, p, Errors.named(e)) for t, p, e in obs.partition_errors)
                        ),
                        member_errors=(
                            None
                            if obs.member_errors is None
                            else tuple((m, Errors.named(e)) for m, e in obs.member_errors)
                        ),
                    ),
                )
                return True
            if self._book.loading and self._loading_answer(call):
                return True
            self._book.loading = False
            self._book.moved_episode = False
            if self._group is not None and self._group.state == DEAD:
                # the group is served again (another broker loaded it)
                self._note_member_heard(req)
                self._load_persisted("group served again after a coordinator move")
        if self._book.confident and self._book.inferred_seen and self._group is not None:
            silent = self._silent_inferred_member(self._group)
            if silent is not None:
                call.scored = False
                call.unscored_reason = (
                    f"warm-up: member {silent} (seen only through its requests, session timeout unknown) "
                    "may have expired"
                )
        if not self._book.confident:
            if self._book.last_discovery_ms is None:
                self._book.last_discovery_ms = self._book.clock
            self._check_warm_window()
            if not self._book.confident:
                call.scored = False
                call.unscored_reason = self._book.warm_reason
        return False

    def _silent_inferred_member(self, group: ClassicGroup) -> str | None:
        """An inferred member silent for at least ``group.min.session.timeout.ms`` (forgotten once it is
        no longer inferred or no longer a member)."""
        limit = self._book.clock - self.config.group_min_session_timeout_ms
        for member_id, seen in list(self._book.inferred_seen.items()):
            member = group.members.get(member_id)
            if member is None or not member.inferred:
                del self._book.inferred_seen[member_id]
            elif seen <= limit and member.awaiting_join is None and member.awaiting_sync is None:
                return member_id
        return None

    def _loading_answer(self, call: ParkedCall) -> bool:
        """§3 while the offsets partition is loading (an observed COORDINATOR_LOAD_IN_PROGRESS said
        so): Heartbeat is answered NONE blindly, SyncGroup REBALANCE_IN_PROGRESS (Scala; the Java
        coordinator surfaces COORDINATOR_LOAD_IN_PROGRESS, an external error). Any other API answered
        normally means the load finished."""
        req = call.request
        if not req.group_id:
            return False
        if req.api is ApiKey.HEARTBEAT:
            self._emit_unreconciled(call, PredictedResponse(error=NONE, completion_ms=self._book.clock))
            return True
        if req.api is ApiKey.SYNC_GROUP and not self._f.java:
            obs = req.observed
            if obs is not None and obs.error == REBALANCE_IN_PROGRESS:
                self._emit_unreconciled(call, self.sync_response(call, REBALANCE_IN_PROGRESS, None, False))
                return True
        return False

    def append_prediction(self, call: ParkedCall, response: PredictedResponse, *, reconciled: bool) -> None:
        """The one place a parked call's Prediction is built (answered, unreconciled or never answered)."""
        g = self._group
        self._predictions.append(
            Prediction(
                seq=call.seq,
                request=call.request,
                response=response,
                state_before=call.state_before,
                generation_before=call.generation_before,
                state_after=DEAD if g is None else g.state,
                generation_after=-1 if g is None else g.generation_id,
                scored=call.scored,
                unscored_reason=call.unscored_reason,
                reconciled=reconciled,
                mismatch_kinds=self._book.notes.pop(call.seq, ()),
            )
        )

    def _emit_unreconciled(self, call: ParkedCall, response: PredictedResponse) -> None:
        """An answer that says nothing about the group (blind answers while loading): no reconciliation."""
        call.emitted = True
        if not self._book.confident:
            call.scored = False
            call.unscored_reason = self._book.warm_reason
        self.append_prediction(call, response, reconciled=False)

    def _check_warm_window(self) -> None:
        last = self._book.last_discovery_ms
        if (
            last is not None
            and self._group is not None
            and self._group.state in (STABLE, COMPLETING, EMPTY)
            and self._book.clock - last >= self.config.warm_start_window_ms
        ):
            self.become_confident(
                f"no unknown member for {self.config.warm_start_window_ms} ms since the last discovery"
            )

    def become_confident(self, why: str) -> None:
        if self._book.confident:
            return
        self._book.confident = True
        self.emit(EventKind.WARM_START, detail=f"confident: {why}")

    def lose_confidence(self, why: str) -> None:
        self._book.confident = False
        self._book.warm_reason = f"warm-up: {why}"
        self._book.last_discovery_ms = self._book.clock
        self.emit(EventKind.WARM_START, detail=f"not confident: {why}")

    def _move_seen(self, request: GroupRequest) -> None:
        """``request`` is the first the log shows answered by another coordinator (a NOT_COORDINATOR or
        COORDINATOR_LOAD_IN_PROGRESS, or ``moved_silently``), before any timer due by its arrival fires.

        Which of the old coordinator's timers ran? Those due by its last normal answer did (it answered
        after them: alive). Past that answer the group's log cannot show the broker alive (where its own
        log ends is in other groups' lines, which this replay does not see), and a dead broker persists
        nothing. So a timer that would write (every session expired: Empty in a new generation) is taken
        to have fired in no broker when a member of the group as the old coordinator left it is the one
        heard from now: a live member that never learnt of its expiry, so that coordinator was not there
        to answer it (a real 3.7 coordinator killed: its members at the new one 13.8 s later, past their
        6 s sessions, accepted NONE; ``tests/data/real-kafka/3.7/failover``). The group is then unloaded
        as of the old coordinator's last activity, and loaded as it persisted it then. When no such member
        speaks (the group's members all gone: a live coordinator expired them and wrote the group Empty),
        or when nothing would be written, its timers run until this request as on a live broker; the load
        still takes the earlier snapshot if a member speaks before it (:meth:`_note_member_heard`)."""
        book = self._book
        silent, book.silent_move = book.silent_move, None
        group = self._group
        now, t = book.now, request.arrival_ms
        if now is None or t < now or group is None or group.state == DEAD:
            return
        written = self._written_after_served(t)
        if written and self._heard_member(request):
            book.members_outlived = True
            self._resign(now, silent or f"coordinator moved ({_observed_error(request.observed)} observed)")
        elif silent is not None:
            if written and self._timers.may_be_due(t):
                self._advance(t)  # the old coordinator was alive: its timers ran until the move was seen
                now = t
            self._resign(now, silent)

    def _written_after_served(self, until: int) -> bool:
        """Whether the coordinator's timers wrote the group since its last normal answer, or would by
        ``until`` (tried on a copy)."""
        book = self._book
        if book.written_since_served and book.persisted_served != book.persisted:
            return True
        if not self._timers.may_be_due(until):
            return False
        trial = self.fork()
        trial._advance(until)
        return trial._book.persisted != book.persisted

    def _heard_member(self, request: GroupRequest) -> bool:
        """Whether ``request`` comes from a member of the group as the model has it or as the coordinator
        persisted it at its last normal answer."""
        ids = {m.member_id for m in request.leave_members if m.member_id}
        if request.member_id:
            ids.add(request.member_id)
        if not ids:
            return False
        group = self._group
        if group is not None and not ids.isdisjoint(group.members):
            return True
        book = self._book
        snapshot = book.persisted_served if book.written_since_served else book.persisted
        members = None if snapshot is None else snapshot.get("members")
        return isinstance(members, list) and any(
            isinstance(m, dict) and m.get("member_id") in ids for m in members
        )

    def _note_member_heard(self, request: GroupRequest) -> None:
        """After a move, before the group is loaded: a member of the group as the old coordinator last
        served it speaks (:meth:`_move_seen`)."""
        book = self._book
        if book.written_since_served and not book.members_outlived and self._heard_member(request):
            book.members_outlived = True

    def _resign(self, at: int, cause: str) -> None:
        """The coordinator gives the group up at ``at`` (§16)."""
        book = self._book
        book.clock = at
        book.ev_seq = book.seq
        book.ev_ref = None
        self._unload(cause)
        self._finish_op()

    def _served(self) -> None:
        """The coordinator answered a request normally: it was alive, and what it has written so far (its
        timers' writes too) is what a coordinator taking the group over would load."""
        book = self._book
        if book.written_since_served:
            book.written_since_served = False
            book.persisted_served = None

    def _write(self, snapshot: dict[str, object] | None) -> None:
        """``storeGroup`` (None: the group's metadata deleted), keeping what was written as of the last
        normal answer (:meth:`_move_seen`)."""
        book = self._book
        if not book.written_since_served:
            book.persisted_served = book.persisted
            book.written_since_served = True
        book.persisted = snapshot

    def _coordinator_moved(self, err: str) -> None:
        self._unload(f"coordinator moved ({err} observed)")
        if self._group is not None and self.config.warm_start:
            self.lose_confidence(f"coordinator moved at {self._book.clock} ({err})")

    # ============================================================================================
    # group lifecycle
    # ============================================================================================
    def _create_group(self) -> ClassicGroup:
        group = ClassicGroup(self.group_id)
        if not self._book.confident:
            group.has_offsets = None  # the group may have existed before the log began
        self.install_group(group)
        return group

    def _unload(self, cause: str) -> None:
        group = self._group
        if group is None or group.state == DEAD:
            return
        previous = group.state
        group.transition_to(DEAD, Cause(Trigger.UNLOADED, cause))
        if previous == PREPARING:
            for m in list(group.members.values()):
                if m.awaiting_join is not None:
                    self.answer_join(group, m, self.join_error(m.awaiting_join, NOT_COORDINATOR, m.member_id))
        elif previous in (STABLE, COMPLETING):
            for m in group.members.values():
                if m.awaiting_sync is not None:
                    call = m.awaiting_sync
                    m.awaiting_sync = None
                    self.respond(call, self.sync_response(call, NOT_COORDINATOR, None, with_protocol=False))
        for key in [self._join_key, self._sync_key, self._offsets_key]:
            self._timers.cancel(key)
        self._timers.cancel_prefix(self._hb_prefix)

    def _load_persisted(self, why: str) -> None:
        book = self._book
        snapshot = book.persisted
        if book.written_since_served and book.members_outlived:
            # the old coordinator's writes after its last answer were made by no broker (_move_seen)
            snapshot = book.persisted_served
            why = f"{why} (as the old coordinator persisted it at its last answer)"
        book.persisted = snapshot
        book.written_since_served = book.members_outlived = False
        book.persisted_served = None
        if snapshot is None:
            self.install_group(None)
            self.emit(EventKind.WARM_START, detail=f"{why}: nothing persisted, group unknown")
            return
        group = restore_persisted(self.group_id, snapshot)
        self.install_group(group)
        self.emit(
            EventKind.WARM_START,
            detail=why,
            members=tuple(group.members),
            leader=group.leader_id,
            protocol_name=group.protocol_name,
            protocol_type=group.protocol_type,
        )
        if len(group.members) > self.config.group_max_size:
            self.prepare_rebalance(
                group,
                Cause(
                    Trigger.COORDINATOR,
                    f"Freshly-loaded group is over capacity ({self.config.group_max_size}). "
                    "Rebalancing in order to give a chance for consumers to commit offsets",
                ),
            )
        for m in group.members.values():
            self.arm_heartbeat(m, m.session_timeout_ms)
        if group.state == EMPTY:
            self.arm_offsets_expiration(group)

    def persist(self, group: ClassicGroup) -> None:
        """``storeGroup``: remember what the coordinator wrote (restored on a coordinator move)."""
        self._write(snapshot_group(group))

    def arm_offsets_expiration(self, group: ClassicGroup) -> None:
        """§11: an Empty group is deleted when it has no offsets left (next cleanup run) or when its
        offsets expire (retention counted from when it became Empty or the last commit)."""
        if group.has_offsets is False:
            deadline = group.empty_since_ms + self.config.offsets_retention_check_interval_ms
        else:
            deadline = max(group.empty_since_ms, group.last_commit_ms) + self.config.offsets_retention_ms
        self._timers.arm(self._offsets_key, deadline, BOOKKEEPING_PRIORITY, T_OFFSETS)

    def _expire_offsets(self, group: ClassicGroup) -> None:
        if group.state != EMPTY:
            return
        group.transition_to(
            DEAD, Cause(Trigger.OFFSETS_EXPIRED, "offsets expired: Empty group without offsets removed")
        )
        self.install_group(None)
        self._write(None)

    # ============================================================================================
    # member ids
    # ============================================================================================
    def _new_member_id(self, call: ParkedCall, instance_id: str | None) -> str:
        """Kafka generates ``clientId-UUID`` (static: ``instanceId-UUID``; 2.3.0: ``instanceId-<ts>``).
        The id the broker really generated is adopted from the observed response when it carries one."""
        req = call.request
        prefix = instance_id if instance_id is not None else (req.client_id or "")
        group = self._group
        obs = req.observed
        # a static member's JoinGroup held until another process took its instance id is answered
        # FENCED_INSTANCE_ID with the id it had been given
        if (
            obs is not None
            and obs.member_id
            and obs.error in (NONE, Errors.MEMBER_ID_REQUIRED, Errors.FENCED_INSTANCE_ID)
        ):
            candidate = obs.member_id
            if not self._id_format_ok(candidate, prefix):
                self._note(call.seq, "member_id_format")
            if group is None or (candidate not in group.members and candidate not in group.pending_members):
                return candidate
        while True:
            n = self._book.id_seq
            self._book.id_seq = n + 1
            if self._f.static_id_uses_timestamp and instance_id is not None:
                candidate = f"{prefix}-{self._book.clock + n}"
            else:
                source = self.uuid_source
                made = uuid.uuid5(_ID_NAMESPACE, f"{self.group_id}/{n}") if source is None else source()
                candidate = f"{prefix}-{made}"
            if group is None or (candidate not in group.members and candidate not in group.pending_members):
                return candidate

    def _id_format_ok(self, member_id: str, prefix: str) -> bool:
        if not member_id.startswith(prefix + "-"):
            return False
        suffix = member_id[len(prefix) + 1 :]
        if self._f.static_id_uses_timestamp and suffix.isdigit():
            return True
        try:
            uuid.UUID(suffix)
        except ValueError:
            return False
        return len(suffix) == 36

    # ============================================================================================
    # JoinGroup
    # ============================================================================================
    def join_error(self, call: ParkedCall, error: Errors, member_id: str) -> PredictedResponse:
        v = call.request.api_version
        return PredictedResponse(
            error=error,
            completion_ms=self._book.clock,
            generation_id=-1,
            leader="",
            member_id=member_id,
            protocol_type=None,
            # JoinGroup v0-6 cannot carry a null protocol name: the broker writes "" (v7+: null)
            protocol_name=None if v >= 7 else "",
            skip_assignment=False if v >= 9 else None,
            members=(),
        )

    def join_success(
        self,
        group: ClassicGroup,
        call: ParkedCall,
        member_id: str,
        leader: str | None,
        with_members: bool,
        skip_assignment: bool = False,
    ) -> PredictedResponse:
        v = call.request.api_version
        return PredictedResponse(
            error=NONE,
            completion_ms=self._book.clock,
            generation_id=group.generation_id,
            leader=leader if leader is not None else "",
            member_id=member_id,
            protocol_type=group.protocol_type if v >= 7 else None,
            protocol_name=group.protocol_name,
            skip_assignment=skip_assignment if v >= 9 else None,
            members=tuple(group.member_ids()) if with_members else (),
        )

    def answer_join(
        self, group: ClassicGroup, member: ClassicGroupMember, response: PredictedResponse
    ) -> None:
        """``maybeInvokeJoinCallback``."""
        call = member.awaiting_join
        if call is None:
            return
        member.awaiting_join = None
        group.num_awaiting_join -= 1
        self.respond(call, response)

    def classic_group_join(self, call: ParkedCall) -> None:
        """``handleJoinGroup`` / ``classicGroupJoinToClassicGroup``."""
        req = call.request
        f = self._f
        member_id = req.member_id or ""
        instance_id = req.group_instance_id
        if not req.group_id:
            self.respond(call, self.join_error(call, Errors.INVALID_GROUP_ID, member_id))
            return
        if instance_id is not None and not f.static_membership:
            self.respond(call, self.join_error(call, Errors.UNSUPPORTED_VERSION, member_id))
            return
        session = req.session_timeout_ms
        if session is not None and (
            session < self.config.group_min_session_timeout_ms or session > self.config.max_session_timeout_ms
        ):
            self.respond(call, self.join_error(call, Errors.INVALID_SESSION_TIMEOUT, member_id))
            return
        is_unknown = member_id == ""
        group = self._group
        if group is None:
            if not is_unknown:
                self.respond(call, self.join_error(call, UNKNOWN_MEMBER_ID, member_id))
                return
            group = self._create_group()
        if not self._accept_joining_member(group, member_id, is_unknown):
            # group.remove(memberId): 2.6+ drops a pending member too where remove does (3.0+)
            drop_pending = f.accept_joining_member and f.remove_drops_pending
            cause = f"group.max.size {self.config.group_max_size} reached"
            if member_id in group.members:
                self.remove_member(
                    group,
                    member_id,
                    RemovalReason.MAX_SIZE,
                    cause,
                    drop_pending=drop_pending,
                    leader_event="none",
                )
            else:  # a pending member, or nobody
                was_pending = group.is_pending(member_id)
                group.remove(member_id, drop_pending=drop_pending)
                if was_pending and not group.is_pending(member_id):
                    self.cancel_heartbeat(member_id)
                    self.emit(
                        EventKind.PENDING_MEMBER_REMOVED,
                        member_id=member_id,
                        removal_reason=RemovalReason.MAX_SIZE,
                        cause=cause,
                    )
            if instance_id is not None and not f.accept_joining_member:
                group.static_members.pop(instance_id, None)  # 2.3-2.5 removeStaticMember quirk
            self.respond(call, self.join_error(call, Errors.GROUP_MAX_SIZE_REACHED, ""))
        elif is_unknown:
            self._join_new_member(group, call, instance_id)
        else:
            self._join_existing_member(group, call, member_id, instance_id)
        # Scala checks the join purgatory after every JoinGroup; the Java coordinator tries to complete
        # the join phase only where it parks the member (add/update … OrCompleteJoin), never after a
        # JoinGroup it answered at once (an error, MEMBER_ID_REQUIRED, a static member's fast rejoin)
        if group.state == PREPARING and not (f.java and call.emitted):
            self.maybe_complete_join(group)

    def _accept_joining_member(self, group: ClassicGroup, member_id: str, is_unknown: bool) -> bool:
        state = group.state
        max_size = self.config.group_max_size
        if not self._f.accept_joining_member:
            # 2.2-2.5: shed an existing member not awaiting join when over capacity; refuse new ones at max
            member = group.members.get(member_id)
            over = len(group.members) > max_size
            if over and member is not None and member.awaiting_join is None:
                return False
            return not (is_unknown and len(group.members) >= max_size)
        if state in (EMPTY, DEAD):
            return True
        if state == PREPARING:
            member = group.members.get(member_id)
            return (
                member is not None and member.awaiting_join is not None
            ) or group.num_awaiting_join < max_size
        return member_id in group.members or len(group.members) < max_size

    def _join_new_member(self, group: ClassicGroup, call: ParkedCall, instance_id: str | None) -> None:
        """``doNewMemberJoinGroup`` / ``classicGroupJoinNewMember``."""
        req = call.request
        if group.state == DEAD:
            self.respond(call, self.join_error(call, self._f.dead_group_error, ""))
            return
        if not group.supports_protocols(req.protocol_type, req.protocols):
            self.respond(call, self.join_error(call, INCONSISTENT_GROUP_PROTOCOL, ""))
            return
        new_id = self._new_member_id(call, instance_id)
        if instance_id is not None:
            old_id = group.static_members.get(instance_id)
            if old_id is not None:
                self._update_static_member_and_rebalance(group, call, old_id, new_id, instance_id)
            else:
                self.add_member_and_rebalance(group, call, new_id, instance_id)
        elif req.api_version >= 4:
            # KIP-394: hand out an id, expect the member back with it
            group.pending_members[new_id] = None
            timeout = req.session_timeout_ms if req.session_timeout_ms is not None else 0
            self._timers.arm(
                self._hb_prefix + new_id, self._book.clock + timeout, self._p_session, T_HEARTBEAT, (new_id,)
            )
            self.emit(
                EventKind.PENDING_MEMBER_ADDED,
                member_id=new_id,
                cause=(
                    f"Dynamic member with unknown member id joins group {self.group_id} in "
                    f"{group.state.value} state. Created a new member id {new_id} and request the member "
                    "to rejoin with this id."
                ),
            )
            self.respond(call, self.join_error(call, Errors.MEMBER_ID_REQUIRED, new_id))
        else:
            self.add_member_and_rebalance(group, call, new_id, None)

    def _join_existing_member(
        self, group: ClassicGroup, call: ParkedCall, member_id: str, instance_id: str | None
    ) -> None:
        """``doCurrentMemberJoinGroup`` / ``classicGroupJoinExistingMember``."""
        req = call.request
        f = self._f
        if group.state == DEAD:
            self.respond(call, self.join_error(call, f.dead_group_error, member_id))
            return
        if not group.supports_protocols(req.protocol_type, req.protocols):
            self.respond(call, self.join_error(call, INCONSISTENT_GROUP_PROTOCOL, member_id))
            return
        if group.is_pending(member_id):
            if instance_id is not None:
                # Kafka throws IllegalStateException: the broker answers UNKNOWN_SERVER_ERROR, with the
                # response's default (empty) member id
                self.respond(call, self.join_error(call, Errors.UNKNOWN_SERVER_ERROR, ""))
                return
            self.add_member_and_rebalance(group, call, member_id, None)
            return
        error = self._validate_member(group, member_id, instance_id, strict=True)
        if error is not None:
            self.respond(call, self.join_error(call, error, member_id))
            return
        member = group.members[member_id]
        state = group.state
        reason = req.reason
        if state == PREPARING:
            self.update_member_and_rebalance(
                group, member, call, causes.member_joining(f, member_id, state.value, reason)
            )
        elif state == COMPLETING:
            if member.matches(req.protocols):
                leader = group.is_leader(member_id)
                self.respond(call, self.join_success(group, call, member_id, group.leader_id, leader))
            else:
                self.update_member_and_rebalance(
                    group, member, call, causes.updating_metadata(f, member_id, state.value, reason)
                )
        elif state == STABLE:
            if group.is_leader(member_id):
                self.update_member_and_rebalance(
                    group, member, call, causes.leader_rejoining(f, member_id, state.value, reason)
                )
            elif not member.matches(req.protocols):
                self.update_member_and_rebalance(
                    group, member, call, causes.updating_metadata(f, member_id, state.value, reason)
                )
            else:
                self.respond(call, self.join_success(group, call, member_id, group.leader_id, False))
        else:
            self.respond(call, self.join_error(call, UNKNOWN_MEMBER_ID, member_id))

    def _validate_member(
        self, group: ClassicGroup, member_id: str, instance_id: str | None, strict: bool
    ) -> Errors | None:
        """``ClassicGroup.validate_member`` with this version's rules. ``strict``: JoinGroup (an unknown
        instance id is UNKNOWN_MEMBER_ID in every version)."""
        f = self._f
        return group.validate_member(
            member_id,
            instance_id,
            static_membership=f.static_membership,
            strict=strict or f.validate_current_member,
        )

    def _rebalance_timeout_for(self, req: GroupRequest) -> int | None:
        if req.api_version == 0 or req.rebalance_timeout_ms is None:
            return req.session_timeout_ms
        return req.rebalance_timeout_ms

    def add_member_and_rebalance(
        self, group: ClassicGroup, call: ParkedCall, member_id: str, instance_id: str | None
    ) -> None:
        """``addMemberAndRebalance`` / ``addMemberThenRebalanceOrCompleteJoin``."""
        req = call.request
        session = req.session_timeout_ms if req.session_timeout_ms is not None else 0
        rebalance = self._rebalance_timeout_for(req)
        member = ClassicGroupMember(
            member_id,
            instance_id,
            req.client_id or "",
            req.client_host or "",
            rebalance if rebalance is not None else session,
            session,
            req.protocol_type or "",
            req.protocols,
        )
        member.is_new = True
        if group.state == PREPARING and (
            group.previous_state == EMPTY if self._f.java else group.generation_id == 0
        ):
            group.new_member_added = True
        was_pending = member_id in group.pending_members
        group.add(member, self._park(call))
        self.arm_heartbeat(member, self.config.new_member_join_timeout_ms)
        cause = causes.adding_member(self._f, member_id, instance_id, req.reason)
        if was_pending:
            self.emit(EventKind.PENDING_MEMBER_REMOVED, member_id=member_id, detail="joined")
        self.emit(
            EventKind.MEMBER_ADDED,
            member_id=member_id,
            group_instance_id=instance_id,
            cause=cause.text,
            client_reason=req.reason,
        )
        if group.leader_id == member_id and len(group.members) == 1:
            self.emit(EventKind.LEADER_CHANGED, member_id=member_id, leader=member_id, cause="first member")
        self.maybe_prepare_rebalance(group, cause, member_id)

    def update_member_and_rebalance(
        self, group: ClassicGroup, member: ClassicGroupMember, call: ParkedCall, cause: Cause
    ) -> None:
        """``updateMemberAndRebalance`` / ``updateMemberThenRebalanceOrCompleteJoin``."""
        req = call.request
        if member.awaiting_join is not None:
            self.supersede(member.awaiting_join)
            member.awaiting_join = None
            group.num_awaiting_join -= 1
        changed = not member.matches(req.protocols)
        updates = self._f.rejoin_updates_timeouts or member.inferred
        group.update_member(
            member,
            req.protocols,
            self._rebalance_timeout_for(req) if updates else None,
            req.session_timeout_ms if updates else None,
            self._park(call),
        )
        if changed:
            self.emit(
                EventKind.MEMBER_UPDATED,
                member_id=member.member_id,
                cause=cause.text,
                client_reason=req.reason,
                inferred=cause.trigger is Trigger.RECONCILED,
            )
        self.maybe_prepare_rebalance(group, cause, member.member_id)

    def _update_static_member_and_rebalance(
        self, group: ClassicGroup, call: ParkedCall, old_id: str, new_id: str, instance_id: str
    ) -> None:
        """``updateStaticMemberAndRebalance`` / ``updateStaticMemberThenRebalanceOrCompleteJoin``."""
        req = call.request
        f = self._f
        current_leader = group.leader_id
        old = group.members[old_id]
        if old.awaiting_join is not None:
            self.answer_join(group, old, self.join_error(old.awaiting_join, FENCED_INSTANCE_ID, old_id))
        if old.awaiting_sync is not None:
            sync_call = old.awaiting_sync
            old.awaiting_sync = None
            self.respond(
                sync_call, self.sync_response(sync_call, FENCED_INSTANCE_ID, None, with_protocol=False)
            )
        member = group.replace_static_member(instance_id, old_id, new_id)
        if f.java:
            member.is_new = False  # the Java coordinator builds a fresh ClassicGroupMember
        self.cancel_heartbeat(old_id)
        self.emit(
            EventKind.STATIC_MEMBER_REPLACED,
            member_id=new_id,
            group_instance_id=instance_id,
            detail=old_id,
            cause=(
                f"Static member with groupInstanceId={instance_id} and unknown member id joins group "
                f"{self.group_id} in {group.state.value} state. Replacing previously mapped member {old_id} "
                "with this groupInstanceId."
            ),
        )
        if current_leader == old_id:
            self.emit(
                EventKind.LEADER_CHANGED,
                member_id=new_id,
                leader=new_id,
                detail=old_id,
                cause="static leader replaced",
            )
        self.arm_heartbeat(member, member.session_timeout_ms)
        updates = f.rejoin_updates_timeouts or member.inferred
        group.update_member(
            member,
            req.protocols,
            self._rebalance_timeout_for(req) if updates else None,
            req.session_timeout_ms if updates else None,
            self._park(call),
        )
        state = group.state
        if state == STABLE:
            if f.static_stable_protocol_check:
                if group.protocol_name == group.select_protocol():
                    self.persist(group)
                    if req.api_version >= 9:
                        leads = group.is_leader(new_id)
                        resp = self.join_success(
                            group, call, new_id, group.leader_id, leads, skip_assignment=leads
                        )
                    else:
                        resp = self.join_success(group, call, new_id, current_leader, False)
                    self.answer_join(group, member, resp)
                else:
                    self.maybe_prepare_rebalance(
                        group, causes.static_protocol_change(f, new_id, instance_id, req.reason), new_id
                    )
            else:
                self.answer_join(group, member, self.join_success(group, call, new_id, current_leader, False))
        elif state == COMPLETING:
            if f.static_completing_rebalances:
                self.prepare_rebalance(
                    group, causes.static_updating(f, new_id, instance_id, req.reason), new_id
                )
            else:
                self.answer_join(group, member, self.join_success(group, call, new_id, current_leader, False))
        elif state in (EMPTY, DEAD):
            raise IllegalStateTransition(
                f"group {self.group_id} was not supposed to be in state {state.value} when the unknown "
                f"static member {instance_id} rejoins"
            )

    # ============================================================================================
    # rebalance (join phase)
    # ============================================================================================
    def maybe_prepare_rebalance(
        self, group: ClassicGroup, cause: Cause, member_id: str | None = None
    ) -> None:
        if group.state in (STABLE, COMPLETING, EMPTY):
            self.prepare_rebalance(group, cause, member_id)

    def prepare_rebalance(self, group: ClassicGroup, cause: Cause, member_id: str | None = None) -> None:
        """``prepareRebalance``: flush parked SyncGroups, cancel pending-sync, arm the join timer."""
        if group.state == COMPLETING:
            self._reset_and_propagate_assignment_error(group, REBALANCE_IN_PROGRESS)
        self.remove_sync_expiration(group)
        initial = group.state == EMPTY
        if initial:
            delay = self.config.group_initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            self._arm(self._join_key, delay, self._p_rebalance, T_INITIAL_JOIN, (delay, remaining))
            self._timers.cancel(self._offsets_key)
        else:
            self._arm(self._join_key, group.rebalance_timeout_ms(), self._p_rebalance, T_JOIN)
        group.transition_to(PREPARING, cause, member_id)
        if not initial and group.has_all_members_joined():
            self.complete_join(group)

    def _join_is_initial(self, group: ClassicGroup) -> bool:
        if self._f.java:
            return group.previous_state == EMPTY
        timer = self._timers.get(self._join_key)
        return timer is not None and timer.kind == T_INITIAL_JOIN

    def maybe_complete_join(self, group: ClassicGroup, ignore_initial: bool = False) -> None:
        """``rebalancePurgatory.checkAndComplete(GroupJoinKey)`` / ``maybeCompleteJoinPhase``: an
        initial delayed join never completes early."""
        if group.state != PREPARING or not group.has_all_members_joined():
            return
        if not ignore_initial and self._join_is_initial(group):
            return
        self.complete_join(group)

    def _on_initial_join_due(self, group: ClassicGroup, delay: int, remaining: int) -> None:
        """``InitialDelayedJoin.onComplete``: extend while new members keep arriving."""
        if group.new_member_added and remaining != 0:
            group.new_member_added = False
            new_delay = min(self.config.group_initial_rebalance_delay_ms, remaining)
            new_remaining = max(remaining - delay, 0)
            self._arm(
                self._join_key, new_delay, self._p_rebalance, T_INITIAL_JOIN, (new_delay, new_remaining)
            )
            self.emit(
                EventKind.TIMER_EXPIRED,
                detail=self._join_key,
                cause=f"initial rebalance delay extended by {new_delay} ms (remaining {new_remaining} ms)",
            )
        else:
            self.complete_join(group)

    def complete_join(self, group: ClassicGroup) -> None:
        """``onCompleteJoin`` / ``completeClassicGroupJoin``: members that did not rejoin removed, a
        leader that rejoined (or none: wait another rebalance timeout), then the next generation
        (:meth:`start_next_generation`). Track mode completing the phase as the broker's answer says:
        ``reconcile.complete_join_as_observed``."""
        self._timers.cancel(self._join_key)
        f = self._f
        not_rejoined = [
            m
            for m in group.members.values()
            if m.awaiting_join is None
            and (not m.is_static or not f.static_membership)
            and not self._keeps_unjoined(m)
        ]
        if not_rejoined:
            ids = [m.member_id for m in not_rejoined]
            cause = causes.not_rejoined(self.group_id, ids, f.java)
            for m in not_rejoined:
                self.remove_member(
                    group,
                    m.member_id,
                    RemovalReason.REBALANCE_TIMEOUT_EVICTION,
                    cause,
                    leader_event="successor",
                )
        if group.state == DEAD:
            return
        if not self._maybe_elect_new_joined_leader(group) and group.members:
            self._arm(self._join_key, group.rebalance_timeout_ms(), self._p_rebalance, T_JOIN)
            self.emit(
                EventKind.TIMER_EXPIRED,
                detail=self._join_key,
                cause=f"Group {self.group_id} could not complete rebalance because no members rejoined",
            )
            return
        self.start_next_generation(group)

    def start_next_generation(self, group: ClassicGroup, observed_generation: int | None = None) -> None:
        """The end of ``onCompleteJoin``: ``initNextGeneration``; an Empty group is stored, else every
        member is answered (Kafka's member order), its heartbeat re-armed and it awaits its SyncGroup
        (``schedulePendingSync``). ``observed_generation``: the broker's, when track mode completes the
        phase as its answer says (the generation never goes back)."""
        f = self._f
        generation = max(next_generation(group.generation_id), observed_generation or 0)
        text = (
            f"Stabilized group {self.group_id} generation {generation} with {len(group.members)} members"
            if group.members
            else f"Group {self.group_id} with generation {generation} is now empty"
        )
        self._check_generation_protocol(group, generation)
        group.init_next_generation(Cause(Trigger.JOIN_COMPLETED, text), observed_generation)
        if not group.members:
            group.empty_since_ms = self._book.clock
            self.persist(group)
            self.arm_offsets_expiration(group)
        ordered = group.ordered_members()  # Kafka's order: the list, and who is answered/re-armed first
        self.emit(
            EventKind.JOIN_COMPLETED,
            members=tuple(m.member_id for m in ordered),
            leader=group.leader_id,
            protocol_name=group.protocol_name,
            protocol_type=group.protocol_type,
        )
        if not group.members:
            return
        leader = group.leader_id
        unsure = self._unsure_join(group)
        for member in ordered:
            call = member.awaiting_join
            if call is not None:
                self._score_join_answer(group, call, unsure)
                self.answer_join(
                    group,
                    member,
                    self.join_success(group, call, member.member_id, leader, member.member_id == leader),
                )
            self.arm_heartbeat(member, member.session_timeout_ms)
            member.is_new = False
            group.pending_sync_members[member.member_id] = None
        if f.pending_sync_timeout:
            self._arm(
                self._sync_key,
                group.rebalance_timeout_ms(),
                self._p_rebalance,
                T_SYNC,
                (group.generation_id,),
            )

    def _maybe_elect_new_joined_leader(self, group: ClassicGroup) -> bool:
        """``ClassicGroup.maybe_elect_new_joined_leader``, reporting a new leader."""
        old = group.leader_id
        leader = group.maybe_elect_new_joined_leader()
        if leader is not None and leader != old:
            self.emit(
                EventKind.LEADER_CHANGED,
                member_id=leader,
                leader=leader,
                detail=old,
                cause=f"Group leader [member.id: {old}] failed to join before rebalance timeout, "
                f"while new leader {leader} was elected.",
            )
        return leader is not None

    # ============================================================================================
    # removal
    # ============================================================================================
    def remove_member(
        self,
        group: ClassicGroup,
        member_id: str,
        reason: RemovalReason,
        cause: str,
        *,
        client_reason: str | None = None,
        inferred: bool = False,
        drop_pending: bool = True,
        leader_event: LeaderEvent = "always",
        removed: ClassicGroupMember | None = None,
    ) -> None:
        """Every removal of a member: ``ClassicGroup.remove`` (which elects the next leader), the member's
        heartbeat timer cancelled (``removeHeartbeatForLeavingMember``), MEMBER_REMOVED and, when it led
        the group, LEADER_CHANGED. ``member_id`` not a member (a stale pending-sync id): removed as Kafka
        removes it, no event.

        ``leader_event`` says when the leader's removal is reported, as each caller always has:
        ``"always"`` (``removeMemberAndUpdateGroup``, also when nobody is left to lead), ``"successor"``
        (only when another member leads now: the join phase's evictions) or ``"none"`` (a member refused
        at ``group.max.size``, one dropped by reconciliation). ``removed``: the member object, when the
        caller holds it."""
        member = group.members.get(member_id) if removed is None else removed
        was_leader = group.leader_id == member_id
        group.remove(member_id, drop_pending=drop_pending)
        self.cancel_heartbeat(member_id)
        if member is None:
            return
        self.emit(
            EventKind.MEMBER_REMOVED,
            member_id=member_id,
            group_instance_id=member.group_instance_id,
            removal_reason=reason,
            cause=cause,
            client_reason=client_reason,
            inferred=inferred,
        )
        if was_leader and (
            leader_event == "always" or (leader_event == "successor" and group.leader_id is not None)
        ):
            self.emit(
                EventKind.LEADER_CHANGED,
                member_id=group.leader_id,
                leader=group.leader_id,
                detail=member_id,
                cause="leader removed",
            )

    def remove_member_and_update_group(
        self,
        group: ClassicGroup,
        member: ClassicGroupMember,
        cause: Cause,
        reason: RemovalReason,
        client_reason: str | None = None,
        ignore_initial: bool = False,
        update: bool = True,
    ) -> None:
        """``removeMemberAndUpdateGroup`` / ``removeMemberAndUpdateClassicGroup``."""
        if member.awaiting_join is not None:
            self.answer_join(group, member, self.join_error(member.awaiting_join, UNKNOWN_MEMBER_ID, ""))
        self.remove_member(
            group,
            member.member_id,
            reason,
            cause.text,
            client_reason=client_reason,
            inferred=cause.trigger is Trigger.RECONCILED,
            removed=member,
        )
        if member.awaiting_sync is not None:
            # Kafka drops the member before flushing parked SyncGroups: this one is never answered
            call = member.awaiting_sync
            member.awaiting_sync = None
            self.supersede(call, "never answered: member removed while its SyncGroup was parked")
        if not update:
            return
        state = group.state
        if state in (STABLE, COMPLETING):
            self.maybe_prepare_rebalance(group, cause, member.member_id)
        elif state == PREPARING:
            self.maybe_complete_join(group, ignore_initial=ignore_initial)

    def _remove_pending_member(
        self, group: ClassicGroup, member_id: str, reason: RemovalReason, cause: str, ignore_initial: bool
    ) -> None:
        """``removePendingMemberAndUpdateGroup``."""
        group.pending_members.pop(member_id, None)
        self.emit(EventKind.PENDING_MEMBER_REMOVED, member_id=member_id, removal_reason=reason, cause=cause)
        if group.state == PREPARING:
            self.maybe_complete_join(group, ignore_initial=ignore_initial)

    def _expire_heartbeat(self, group: ClassicGroup, member_id: str) -> None:
        """``onExpireHeartbeat`` / ``expireClassicGroupMemberHeartbeat``."""
        if group.state == DEAD:
            return
        java = self._f.java
        if group.is_pending(member_id):
            self._remove_pending_member(
                group,
                member_id,
                RemovalReason.PENDING_EXPIRY,
                causes.pending_member_expired(member_id, self.group_id),
                ignore_initial=java,
            )
            return
        member = group.members.get(member_id)
        if member is None or member.has_satisfied_heartbeat():
            return
        reason = RemovalReason.NEW_MEMBER_JOIN_TIMEOUT if member.is_new else RemovalReason.SESSION_EXPIRY
        self.remove_member_and_update_group(
            group, member, causes.heartbeat_expiration(self._f, member_id), reason, ignore_initial=java
        )

    # ============================================================================================
    # SyncGroup
    # ============================================================================================
    def sync_response(
        self, call: ParkedCall, error: Errors, assignment: bytes | None, with_protocol: bool
    ) -> PredictedResponse:
        v5 = call.request.api_version >= 5
        g = self._group
        return PredictedResponse(
            error=error,
            completion_ms=self._book.clock,
            protocol_type=(g.protocol_type if (with_protocol and v5 and g is not None) else None),
            protocol_name=(g.protocol_name if (with_protocol and v5 and g is not None) else None),
            assignment=assignment if error == NONE else b"",
        )

    def classic_group_sync(self, call: ParkedCall) -> None:
        """``handleSyncGroup`` / ``classicGroupSyncToClassicGroup``."""
        req = call.request
        f = self._f
        member_id = req.member_id or ""
        if not req.group_id:
            self.respond(call, self.sync_response(call, Errors.INVALID_GROUP_ID, None, False))
            return
        if req.group_instance_id is not None and not f.static_membership:
            self.respond(call, self.sync_response(call, Errors.UNSUPPORTED_VERSION, None, False))
            return
        if req.api_version >= 5 and (req.protocol_type is None or req.protocol_name is None):
            self.respond(call, self.sync_response(call, INCONSISTENT_GROUP_PROTOCOL, None, False))
            return
        group = self._group
        if group is None or (f.java and group.state == EMPTY):
            self.respond(call, self.sync_response(call, UNKNOWN_MEMBER_ID, None, False))
            return
        error: Errors | None
        if group.state == DEAD:
            error = f.dead_group_error
        elif not f.static_membership and not f.java:  # 2.2: membership only (no validateGroupMember)
            error = UNKNOWN_MEMBER_ID if member_id not in group.members else None
        else:
            error = self._validate_member(group, member_id, req.group_instance_id, strict=False)
        if error is None and req.generation_id != group.generation_id:
            error = ILLEGAL_GENERATION
        if error is None and group.state in (COMPLETING, STABLE):
            self._learn_sync_protocol(group, req)
        if (
            error is None
            and f.sync_protocol_check
            and (
                _protocol_inconsistent(req.protocol_type, group.protocol_type, f.java)
                or _protocol_inconsistent(req.protocol_name, group.protocol_name, f.java)
            )
        ):
            error = INCONSISTENT_GROUP_PROTOCOL
        if error is not None:
            self.respond(call, self.sync_response(call, error, None, False))
            return
        state = group.state
        member = group.members[member_id]
        if state == EMPTY:
            self.respond(call, self.sync_response(call, UNKNOWN_MEMBER_ID, None, False))
        elif state == PREPARING:
            self.respond(call, self.sync_response(call, REBALANCE_IN_PROGRESS, None, False))
        elif state == COMPLETING:
            if member.awaiting_sync is not None:
                self.supersede(member.awaiting_sync)
            member.awaiting_sync = self._park(call)
            self._remove_pending_sync_member(group, member_id)
            if group.is_leader(member_id):
                assignment: dict[str, bytes | None] = {}
                for mid, data in req.assignments:
                    if mid in group.members:
                        assignment[mid] = data
                for mid in group.members:
                    assignment.setdefault(mid, b"")
                # storeGroup succeeds: the model never fails a write
                if group.state == COMPLETING and req.generation_id == group.generation_id:
                    self.set_and_propagate_assignment(group, assignment)
                    group.transition_to(
                        STABLE,
                        Cause(
                            Trigger.SYNC_COMPLETED,
                            f"Assignment received from leader {member_id} for group {self.group_id} "
                            f"for generation {group.generation_id}. The group has {len(group.members)} "
                            f"members, {len(group.static_members)} of which are static.",
                        ),
                        member_id,
                    )
                    self.persist(group)
                    self.emit(
                        EventKind.SYNC_COMPLETED,
                        member_id=member_id,
                        members=tuple(group.members),
                        leader=group.leader_id,
                        protocol_name=group.protocol_name,
                        protocol_type=group.protocol_type,
                        assignments=tuple((mid, group.members[mid].assignment) for mid in group.members),
                    )
        else:  # STABLE
            self._remove_pending_sync_member(group, member_id)
            self.respond(call, self.sync_response(call, NONE, member.assignment, True))
            if f.sync_stable_refreshes:
                self.arm_heartbeat(member, member.session_timeout_ms)

    def _remove_pending_sync_member(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_sync_members.pop(member_id, None)
        if not group.pending_sync_members:
            self._timers.cancel(self._sync_key)

    def remove_sync_expiration(self, group: ClassicGroup) -> None:
        group.pending_sync_members.clear()
        self._timers.cancel(self._sync_key)

    def set_and_propagate_assignment(self, group: ClassicGroup, assignment: dict[str, bytes | None]) -> None:
        for mid, m in group.members.items():
            m.assignment = assignment.get(mid, b"")
        self._propagate_assignment(group, NONE)

    def _reset_and_propagate_assignment_error(self, group: ClassicGroup, error: Errors) -> None:
        for m in group.members.values():
            m.assignment = b""
        self._propagate_assignment(group, error)

    def _propagate_assignment(self, group: ClassicGroup, error: Errors) -> None:
        # in Kafka's member order: it is the order the session timers are re-armed (ties expire in it)
        for m in group.ordered_members():
            call = m.awaiting_sync
            if call is not None:
                m.awaiting_sync = None
                self.respond(call, self.sync_response(call, error, m.assignment, error == NONE))
                self.arm_heartbeat(m, m.session_timeout_ms)

    def _expire_pending_sync(self, group: ClassicGroup, generation_id: int) -> None:
        """``onExpirePendingSync`` / ``expirePendingSync``."""
        if generation_id != group.generation_id or group.state not in (COMPLETING, STABLE):
            return
        if not group.pending_sync_members:
            return
        pending = list(group.pending_sync_members)
        cause = causes.pending_sync_expiration(self._f, pending)
        for mid in pending:
            # an id re-keyed by a static member's replacement stays pending here: removed as nobody
            self.remove_member(group, mid, RemovalReason.PENDING_SYNC_EXPIRY, cause.text)
        self.prepare_rebalance(group, cause)

    # ============================================================================================
    # Heartbeat
    # ============================================================================================
    def classic_group_heartbeat(self, call: ParkedCall) -> None:
        """``handleHeartbeat`` / ``classicGroupHeartbeat`` (hot path)."""
        req = call.request
        group = self._group
        f = self._f
        member_id = req.member_id or ""
        error = NONE
        refresh: ClassicGroupMember | None = None
        if not req.group_id:
            error = Errors.INVALID_GROUP_ID
        elif req.group_instance_id is not None and not f.static_membership:
            error = Errors.UNSUPPORTED_VERSION
        elif group is None:
            error = UNKNOWN_MEMBER_ID
        elif f.heartbeat_completing == "no_check" and not f.java:
            error, refresh = self._heartbeat_2_2(group, member_id, req.generation_id)
        elif group.state == DEAD:
            error = f.dead_group_error
        else:
            member = group.members.get(member_id)
            instance_id = req.group_instance_id
            if member is None or instance_id is not None:
                err = self._validate_member(group, member_id, instance_id, strict=False)
                if err is not None:
                    error = err
            if error == NONE:
                if req.generation_id != group.generation_id:
                    error = ILLEGAL_GENERATION
                else:
                    state = group.state
                    if state == STABLE:
                        refresh = member
                    elif state == PREPARING:
                        refresh = member
                        error = REBALANCE_IN_PROGRESS
                    elif state == COMPLETING:
                        if f.heartbeat_completing == "none" or f.java:
                            refresh = member
                        else:
                            error = REBALANCE_IN_PROGRESS
                    else:  # EMPTY
                        error = UNKNOWN_MEMBER_ID
        if refresh is not None:
            self.arm_heartbeat(refresh, refresh.session_timeout_ms)
            if self.config.emit_liveness_events:
                self.emit(EventKind.HEARTBEAT, member_id=member_id)
        self.respond(call, PredictedResponse(error=error, completion_ms=self._book.clock))

    def _heartbeat_2_2(
        self, group: ClassicGroup, member_id: str, generation_id: int | None
    ) -> tuple[Errors, ClassicGroupMember | None]:
        state = group.state
        if state in (DEAD, EMPTY):
            return UNKNOWN_MEMBER_ID, None
        member = group.members.get(member_id)
        if member is None:
            return UNKNOWN_MEMBER_ID, None
        if state == COMPLETING:
            return REBALANCE_IN_PROGRESS, None
        if generation_id != group.generation_id:
            return ILLEGAL_GENERATION, None
        return (REBALANCE_IN_PROGRESS if state == PREPARING else NONE), member

    # ============================================================================================
    # LeaveGroup
    # ============================================================================================
    def classic_group_leave(self, call: ParkedCall) -> None:
        """``handleLeaveGroup`` / ``classicGroupLeaveToClassicGroup``."""
        req = call.request
        f = self._f
        batch = req.api_version >= 3
        identities = list(req.leave_members)
        if not identities and not batch:
            identities = [LeaveMember(member_id=req.member_id or "")]
        group = self._group
        top: Errors = NONE
        results: list[tuple[str, Errors]] = []
        if not req.group_id:
            top = Errors.INVALID_GROUP_ID
        elif group is None:
            results = [(lm.member_id, UNKNOWN_MEMBER_ID) for lm in identities]
        elif group.state == DEAD:
            top = f.dead_group_error
        else:
            removed: list[str] = []
            for lm in identities:
                err = self._leave_one(
                    group, lm.member_id, lm.group_instance_id, lm.reason or req.reason, removed
                )
                results.append((lm.member_id, err))
            if f.java and removed:
                state = group.state
                cause = causes.java_leave_batch(removed)
                if state in (STABLE, COMPLETING):
                    self.maybe_prepare_rebalance(group, cause)
                elif state == PREPARING:
                    self.maybe_complete_join(group)
        if batch:
            self.respond(
                call,
                PredictedResponse(
                    error=top,
                    completion_ms=self._book.clock,
                    member_errors=tuple(results) if top == NONE else (),
                ),
            )
        else:
            error = top if top != NONE else (results[0][1] if results else NONE)
            self.respond(call, PredictedResponse(error=error, completion_ms=self._book.clock))

    def _leave_one(
        self,
        group: ClassicGroup,
        member_id: str,
        instance_id: str | None,
        reason: str | None,
        removed: list[str],
    ) -> Errors:
        f = self._f
        java = f.java
        if f.validate_current_member or java:
            if member_id == "":
                mapped = group.static_members.get(instance_id) if instance_id is not None else None
                if mapped is None:
                    return UNKNOWN_MEMBER_ID
                self._remove_leaving_member(group, group.members[mapped], mapped, reason)
                removed.append(member_id)
                return NONE
            if group.is_pending(member_id):
                self._leave_pending(group, member_id)
                removed.append(member_id)
                return NONE
            err = self._validate_member(group, member_id, instance_id, strict=False)
            if err is not None:
                return err
            self._remove_leaving_member(group, group.members[member_id], member_id, reason)
            removed.append(member_id)
            return NONE
        if f.leave_by_instance_id:
            if member_id != "" and instance_id is not None:
                mapped = group.static_members.get(instance_id)
                if mapped is not None and mapped != member_id:
                    return FENCED_INSTANCE_ID
            if group.is_pending(member_id):
                self._leave_pending(group, member_id)
                return NONE
            mapped = group.static_members.get(instance_id) if instance_id is not None else None
            if member_id not in group.members and mapped is None:
                return UNKNOWN_MEMBER_ID
            target = mapped if mapped is not None else member_id
            self._remove_leaving_member(group, group.members[target], member_id, reason)
            return NONE
        # 2.2-2.3: one member id
        if group.is_pending(member_id):
            self._leave_pending(group, member_id)
            return NONE
        if member_id not in group.members:
            return UNKNOWN_MEMBER_ID
        self._remove_leaving_member(group, group.members[member_id], member_id, reason)
        return NONE

    def _leave_pending(self, group: ClassicGroup, member_id: str) -> None:
        self._timers.cancel(self._hb_prefix + member_id)
        if self._f.java:
            group.pending_members.pop(member_id, None)
            self.emit(
                EventKind.PENDING_MEMBER_REMOVED,
                member_id=member_id,
                removal_reason=RemovalReason.LEFT,
                cause=causes.pending_member_left(member_id, self.group_id),
            )
            return
        self._remove_pending_member(
            group,
            member_id,
            RemovalReason.LEFT,
            causes.pending_member_left(member_id, self.group_id),
            ignore_initial=False,
        )

    def _remove_leaving_member(
        self, group: ClassicGroup, member: ClassicGroupMember, request_member_id: str, reason: str | None
    ) -> None:
        f = self._f
        cause_id = member.member_id if f.leave_cause_names_removed_member else request_member_id
        self.remove_member_and_update_group(
            group,
            member,
            causes.leave_group(f, cause_id, reason),
            RemovalReason.LEFT,
            client_reason=reason,
            update=not f.java,
        )

    # ============================================================================================
    # OffsetCommit
    # ============================================================================================
    def offset_commit(self, call: ParkedCall) -> None:
        """``handleCommitOffsets`` + ``validateOffsetCommit`` (Java: ``OffsetMetadataManager``)."""
        req = call.request
        f = self._f
        member_id = req.member_id or ""
        instance_id = req.group_instance_id
        gen = req.generation_id if req.generation_id is not None else -1
        group = self._group
        error: Errors | None = None
        refresh: ClassicGroupMember | None = None
        if group is None:
            if gen < 0:
                group = self._create_group()
            elif f.commit_group_id_not_found_v9 and req.api_version >= 9:
                error = Errors.GROUP_ID_NOT_FOUND
            else:
                error = ILLEGAL_GENERATION
        if error is None and group is not None:
            error, refresh = self._validate_offset_commit(group, member_id, instance_id, gen)
        if error is None:
            assert group is not None
            group.has_offsets = True
            group.last_commit_ms = self._book.clock
            if group.state == EMPTY:
                self.arm_offsets_expiration(group)
            if refresh is not None:
                self.arm_heartbeat(refresh, refresh.session_timeout_ms)
            if self.config.emit_liveness_events:
                self.emit(EventKind.OFFSET_COMMIT, member_id=member_id or None)
            error = NONE
        self.respond(
            call,
            PredictedResponse(
                error=error,
                completion_ms=self._book.clock,
                partition_errors=tuple((t, p, error) for t, p in req.commit_partitions),
            ),
        )

    def _validate_offset_commit(
        self, group: ClassicGroup, member_id: str, instance_id: str | None, gen: int
    ) -> tuple[Errors | None, ClassicGroupMember | None]:
        f = self._f
        state = group.state
        if not f.java and not f.validate_current_member:
            if state == DEAD:
                return f.dead_group_error, None
            if f.static_membership and instance_id is not None:
                mapped = group.static_members.get(instance_id)
                if mapped is not None and mapped != member_id:
                    return FENCED_INSTANCE_ID, None
            if gen < 0 and state == EMPTY:
                return None, None
            if f.commit_state_before_member and state == COMPLETING:
                return REBALANCE_IN_PROGRESS, None
            member = group.members.get(member_id)
            if member is None:
                return UNKNOWN_MEMBER_ID, None
            if gen != group.generation_id:
                return ILLEGAL_GENERATION, None
            if state == COMPLETING:
                return REBALANCE_IN_PROGRESS, None
            return None, member
        if state == DEAD:
            return Errors.COORDINATOR_NOT_AVAILABLE, None
        if gen < 0 and state == EMPTY and not f.commit_strict_gen_minus_one:
            return None, None
        if gen >= 0 or member_id != "" or instance_id is not None:
            err = self._validate_member(group, member_id, instance_id, strict=True)
            if err is not None:
                return err, None
            if gen != group.generation_id:
                return ILLEGAL_GENERATION, None
        elif state != EMPTY:
            return UNKNOWN_MEMBER_ID, None
        if state == EMPTY:
            return None, None
        if state == COMPLETING:
            return REBALANCE_IN_PROGRESS, None
        return None, group.members.get(member_id)

    # ============================================================================================
    # track mode (see reconcile.py)
    # ============================================================================================
    def _answered_by_causality(self, request: GroupRequest, t: int) -> None:
        """A member cannot send SyncGroup before its JoinGroup is answered, nor heartbeat or commit
        with a newer generation than the model's; nor send a second SyncGroup while one is parked. If
        the model still holds that earlier request (and the broker had answered it by now), the broker
        answered it: reconcile at once rather than at the observed completion + grace. (A LeaveGroup,
        or a Heartbeat/OffsetCommit of the old generation, may legitimately overlap a parked request.)"""
        group = self._group
        if group is None or not request.member_id:
            return
        member = group.members.get(request.member_id)
        if member is None:
            return
        api = request.api
        newer = request.generation_id is not None and request.generation_id > group.generation_id
        late: ParkedCall | None = None
        if member.awaiting_join is not None and (
            api is ApiKey.SYNC_GROUP or (newer and api in (ApiKey.HEARTBEAT, ApiKey.OFFSET_COMMIT))
        ):
            late = member.awaiting_join
        elif member.awaiting_sync is not None and api is ApiKey.SYNC_GROUP:
            late = member.awaiting_sync
        if late is None or late.seq not in self._book.parked:
            return
        obs = late.request.observed
        if obs is None or obs.completion_ms is None or obs.completion_ms > t:
            return
        self._timers.cancel(f"observed-{late.seq}")
        self._on_observed_answer_due(late.seq)
        self._finish_op()

    def _on_observed_answer_due(self, seq: int) -> None:
        call = self._book.parked.pop(seq, None)
        if call is None:
            return
        # an emitted call still parked was re-parked by reconciliation: reconcile the state only
        self._reconcile_late_answer(call, emit=not call.emitted)
        self._served()  # the log has the broker's answer: it ran until then
