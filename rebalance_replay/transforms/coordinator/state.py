"""The coordinator's in-memory group metadata: ``ClassicGroup`` and ``ClassicGroupMember`` (Scala
``GroupMetadata`` / ``MemberMetadata``), with the state machine's table of legal previous states.

Member order is Kafka's: the leader after the leader leaves, the leader elected when the old one did
not rejoin, the order in which join responses and session timers are handed out and the order of the
leader's member list all follow the iteration order of the coordinator's ``members`` map. That map is a
``java.util.HashMap`` in Kafka 4.0's Java coordinator (``ClassicGroup``) and a Scala 2.13
``mutable.HashMap`` in the Scala coordinator of 2.x/3.x (``GroupMetadata``); :func:`hash_order`
reproduces either from the member ids (``String.hashCode``, the bucket spreading both share, the table
size the map grew to — it never shrinks — and, within a bucket, insertion order for Java and ascending
spread hash for Scala, whose ``put`` keeps each bucket sorted). ``members`` keeps insertion order as a
dict: a static member re-keyed by a replacement moves to the end, as ``remove`` + ``put`` do. Both
orders are checked against the real maps (``tests/unit/coordinator/test_java_hash_order.py``, and
``tests/realkafka/test_scala_hash_order.py`` on the scala-library a Kafka 3.7 broker runs).
"""

from __future__ import annotations

import copy
import functools
import operator
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from rebalance_replay.transforms.coordinator.types import Cause, GroupRequest, GroupState, Protocol
from rebalance_replay.transforms.kafka_protocol import Errors

#: The initial table size of both maps (``java.util.HashMap``, Scala 2.13 ``mutable.HashMap``), whose
#: load factor is 3/4.
JAVA_HASHMAP_CAPACITY = 16
_JAVA_LOAD_FACTOR_NUM, _JAVA_LOAD_FACTOR_DEN = 3, 4

#: Which ``members`` map the coordinator keeps: ``java`` (Kafka 4.0+) or ``scala`` (2.x/3.x).
MapLayout = Literal["java", "scala"]


#: ``31 ** k`` modulo 2³², for k up to the longest string hashed so far
_POWERS_OF_31 = [1]
_UTF16_NATIVE = "utf-16-le" if sys.byteorder == "little" else "utf-16-be"


def java_string_hash(text: str) -> int:
    """``String.hashCode()`` as an unsigned 32-bit value: ``s[0]·31^(n-1) + … + s[n-1]`` over the UTF-16
    code units, modulo 2³² (the sum at once, in C, rather than Java's loop: the model orders its members
    by it many times a request)."""
    units = memoryview(text.encode(_UTF16_NATIVE)).cast("H")
    powers = _POWERS_OF_31
    while len(powers) < len(units):
        powers.append(powers[-1] * 31 & 0xFFFFFFFF)
    h: int = sum(map(operator.mul, reversed(units), powers))
    return h & 0xFFFFFFFF


@functools.lru_cache(maxsize=1 << 16)
def _spread(key: str) -> int:
    """``h ^ (h >>> 16)`` of ``String.hashCode`` (Java's ``HashMap.hash``, Scala's ``improveHash``).
    Remembered: the model orders a group's members by it on most requests, with the same few ids."""
    h = java_string_hash(key)
    return h ^ (h >> 16)


def java_hash_order(keys: Iterable[str], capacity: int = JAVA_HASHMAP_CAPACITY) -> list[str]:
    """The iteration order of a ``java.util.HashMap<String, ?>`` with a table of ``capacity`` buckets
    whose keys were inserted in the order given: by bucket (``(h ^ h >>> 16) & (capacity - 1)``), then
    insertion order within a bucket (resizing keeps it). Buckets long enough to become trees (8+
    colliding keys) are not modelled."""
    mask = capacity - 1
    return sorted(keys, key=lambda k: _java_slot(k, mask))


def scala_hash_order(keys: Iterable[str], capacity: int = JAVA_HASHMAP_CAPACITY) -> list[str]:
    """The iteration order of a Scala 2.13 ``mutable.HashMap[String, _]`` with ``capacity`` buckets
    whose keys were inserted in the order given: by bucket (the same spread hash and mask as Java), and
    within a bucket by the spread hash as a signed ``Int`` (``put0`` walks past every node whose hash is
    ``<=`` the new one), equal hashes in insertion order; ``growTable`` splits buckets keeping their
    order, ``remove`` unlinks."""
    mask = capacity - 1
    return sorted(keys, key=lambda k: _scala_slot(k, mask))


def _java_slot(key: str, mask: int) -> tuple[int, int]:
    """A ``java.util.HashMap`` key's place: its bucket (insertion order within it)."""
    return _spread(key) & mask, 0


def _scala_slot(key: str, mask: int) -> tuple[int, int]:
    """A Scala 2.13 ``mutable.HashMap`` key's place: its bucket, then its spread hash as a signed ``Int``
    (insertion order among equal hashes)."""
    h = _spread(key)
    return h & mask, h - (1 << 32) if h & 0x80000000 else h


def java_hashmap_capacity(capacity: int, size: int) -> int:
    """The table size after a ``put`` brought the map to ``size`` entries (doubling past 3/4 full)."""
    while size * _JAVA_LOAD_FACTOR_DEN > capacity * _JAVA_LOAD_FACTOR_NUM:
        capacity *= 2
    return capacity


def scala_hashmap_capacity(capacity: int, size: int) -> int:
    """The table size after a ``put`` brought a Scala 2.13 ``mutable.HashMap`` to ``size`` entries:
    ``put0`` doubles the table *before* inserting when ``size + 1 >= threshold`` (threshold
    ``(length * 0.75).toInt``), one entry earlier than Java."""
    while size * _JAVA_LOAD_FACTOR_DEN >= capacity * _JAVA_LOAD_FACTOR_NUM:
        capacity *= 2
    return capacity


def _scala_improve(h: int) -> int:
    """``scala.collection.Hashing.improve`` on a 32-bit hash (unsigned in, unsigned out)."""
    m = 0xFFFFFFFF
    h = (h + (~(h << 9) & m)) & m
    h ^= h >> 14
    h = (h + (h << 4)) & m
    return h ^ (h >> 10)


def scala_immutable_hash_order(keys: Iterable[str]) -> list[str]:
    """The iteration order of a Scala 2.13 ``immutable.HashMap[String, _]`` (a CHAMP trie): at each
    level the keys alone in their 5-bit fragment of the improved hash, by fragment, then the sub-tries
    by fragment, each the same way; keys whose improved hashes are equal stay in the order given."""

    def order(entries: list[tuple[str, int]], shift: int) -> list[str]:
        if len(entries) <= 1 or shift >= 32:
            return [k for k, _ in entries]
        by_fragment: dict[int, list[tuple[str, int]]] = {}
        for entry in entries:
            by_fragment.setdefault((entry[1] >> shift) & 31, []).append(entry)
        singles = [group[0][0] for _, group in sorted(by_fragment.items()) if len(group) == 1]
        nested = [
            k for _, group in sorted(by_fragment.items()) if len(group) > 1 for k in order(group, shift + 5)
        ]
        return singles + nested

    return order([(k, _scala_improve(java_string_hash(k))) for k in keys], 0)


def hash_order(keys: Iterable[str], layout: MapLayout, peak_size: int) -> list[str]:
    """The iteration order of the coordinator's ``members`` map of ``layout`` holding ``keys`` (in
    insertion order) after it once held ``peak_size`` entries (the table never shrinks)."""
    if layout == "java":
        return java_hash_order(keys, java_hashmap_capacity(JAVA_HASHMAP_CAPACITY, peak_size))
    return scala_hash_order(keys, scala_hashmap_capacity(JAVA_HASHMAP_CAPACITY, peak_size))


def hash_slot(key: str, layout: MapLayout, peak_size: int) -> tuple[int, int]:
    """Where :func:`hash_order` puts ``key``: keys of one slot are iterated in insertion order, slots in
    the order of this value (Java: the bucket; Scala: the bucket, then the spread hash as a signed
    ``Int``). The replay's tie ordering reads a logged member list's order of joins from it."""
    if layout == "java":
        return _java_slot(key, java_hashmap_capacity(JAVA_HASHMAP_CAPACITY, peak_size) - 1)
    return _scala_slot(key, scala_hashmap_capacity(JAVA_HASHMAP_CAPACITY, peak_size) - 1)


#: ``GroupState.validPreviousStates`` (GroupMetadata.scala / ClassicGroupState.java).
VALID_PREVIOUS_STATES: dict[GroupState, frozenset[GroupState]] = {
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}
    ),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}


class IllegalStateTransition(RuntimeError):
    """A transition the state machine forbids: a bug in the model, never a property of the input."""


def check_transition(current: GroupState, target: GroupState) -> None:
    """``assertValidTransition``."""
    if current not in VALID_PREVIOUS_STATES[target]:
        raise IllegalStateTransition(f"illegal group state transition {current.value} -> {target.value}")


_Slotted = TypeVar("_Slotted")
_ATOMIC = (int, str, bytes, float, type(None))


def copy_slots(
    obj: _Slotted,
    memo: dict[int, Any],
    shallow: frozenset[str] = frozenset(),
    shared: frozenset[str] = frozenset(),
) -> _Slotted:
    """``copy.deepcopy`` of a slotted object for the model's ``fork`` (the replay copies the model for nearly
    every request it tries): numbers, strings and the ``shared`` slots (immutable, or never changed in
    place) are taken as they are, the ``shallow`` slots (containers of such values) copied one level, and
    any other slot deep-copied with ``memo`` (so that a parked call both a member and the book hold stays
    one object). ``copy.deepcopy``'s generic walk goes through ``__reduce_ex__`` and every value."""
    cls = type(obj)
    new = cls.__new__(cls)
    memo[id(obj)] = new
    for name in cls.__slots__:  # type: ignore[attr-defined]
        try:
            value = getattr(obj, name)
        except AttributeError:
            continue
        if name in shallow:
            value = value.copy()
        elif not (isinstance(value, _ATOMIC) or name in shared):
            value = copy.deepcopy(value, memo)
        setattr(new, name, value)
    return new


def copy_attributes(obj: _Slotted, memo: dict[int, Any]) -> _Slotted:
    """:func:`copy_slots` for an object whose attributes live in its ``__dict__`` (the model itself):
    numbers and strings taken as they are, anything else deep-copied with ``memo``, without
    ``copy.deepcopy``'s generic ``__reduce_ex__`` walk."""
    cls = type(obj)
    new = cls.__new__(cls)
    memo[id(obj)] = new
    new.__dict__.update(
        {
            name: value if isinstance(value, _ATOMIC) else copy.deepcopy(value, memo)
            for name, value in obj.__dict__.items()
        }
    )
    return new


#: called by :meth:`ClassicGroup.transition_to` after every state change: (group, previous state,
#: cause, causing member, adopted)
TransitionListener = Callable[["ClassicGroup", GroupState, Cause, "str | None", bool], None]


class ParkedCall:
    """A JoinGroup or SyncGroup request the coordinator has not answered yet (its callback/future)."""

    __slots__ = (
        "emitted",
        "generation_before",
        "request",
        "scored",
        "seq",
        "state_before",
        "unscored_reason",
    )

    def __init__(
        self,
        seq: int,
        request: GroupRequest,
        state_before: GroupState,
        generation_before: int,
        scored: bool,
        unscored_reason: str | None,
    ) -> None:
        self.seq = seq
        self.request = request
        self.state_before = state_before
        self.generation_before = generation_before
        self.scored = scored
        self.unscored_reason = unscored_reason
        #: track mode: its Prediction was already emitted (the broker answered it before the model)
        self.emitted = False

    def __deepcopy__(self, memo: dict[int, Any]) -> ParkedCall:
        return copy_slots(self, memo, shared=frozenset({"request"}))


@dataclass(slots=True)
class ReplayBook:
    """The model's replay bookkeeping — everything besides the group, its timers and undrained outputs
    that a resumed replay needs: the clock, sequence counters, event context, warm-start confidence,
    coordinator-move episode, parked calls (track mode) and notes. Saved and restored whole by
    :mod:`~rebalance_replay.transforms.coordinator.serde`."""

    #: model time of the last request or timer (None: nothing handled yet)
    now: int | None = None
    #: seq of the next request
    seq: int = 0
    #: generated member ids so far
    id_seq: int = 0
    #: event context: time, seq and request ref of the events being emitted
    clock: int = 0
    ev_seq: int = 0
    ev_ref: tuple[str, int] | None = None
    #: warm start (see CoordinatorEngine)
    confident: bool = True
    warm_reason: str = "warm-up: group state not yet known"
    last_discovery_ms: int | None = None
    observed_full_join: bool = False
    #: inferred members (timeouts unknown) -> when last seen alive
    inferred_seen: dict[str, int] = field(default_factory=dict)
    #: coordinator moves: an episode of NOT_COORDINATOR & co. is being handled; the group is loading
    moved_episode: bool = False
    loading: bool = False
    #: what the coordinator last wrote for the group (``serde.snapshot_group``)
    persisted: dict[str, object] | None = None
    #: coordinator moves (§16): what the coordinator had written as of the last request it answered
    #: normally, kept once something has been written since (``written_since_served``; its timers: the old
    #: coordinator's last answer is where the log last shows it alive)
    persisted_served: dict[str, object] | None = None
    written_since_served: bool = False
    #: a member of the group as its old coordinator left it spoke after the move: the old coordinator had
    #: stopped at its last answer, and the new one loads ``persisted_served``
    members_outlived: bool = False
    #: ``moved_silently``: the next request is answered by another broker (the cause), not yet handled
    silent_move: str | None = None
    #: track mode: parked calls by request seq; model notes (mismatch kinds) by request seq
    parked: dict[int, ParkedCall] = field(default_factory=dict)
    notes: dict[int, tuple[str, ...]] = field(default_factory=dict)
    #: keys of timers armed with zero delay during the current request (run before it ends)
    immediate: list[str] = field(default_factory=list)
    #: the log-gap rule (``CoordinatorEngine._log_gap``): when the last request came, and the group's last
    #: silence long enough for sessions to expire in it (its length and end; None: none to check)
    last_request_ms: int | None = None
    silence_ms: int | None = None
    silence_end_ms: int | None = None

    def __deepcopy__(self, memo: dict[int, Any]) -> ReplayBook:
        # the persisted snapshots are replaced whole, never changed in place: shared
        return copy_slots(
            self,
            memo,
            shallow=frozenset({"inferred_seen", "notes", "immediate"}),
            shared=frozenset({"ev_ref", "persisted", "persisted_served"}),
        )


def next_generation(generation: int) -> int:
    """``generationId + 1`` as Java's ``int`` does it: past 2147483647 it wraps to -2147483648 (a
    generation that large comes only from damaged or fuzzed lines adopted in track mode)."""
    return -(2**31) if generation >= 2**31 - 1 else generation + 1


class ClassicGroupMember:
    """``MemberMetadata`` / ``ClassicGroupMember``."""

    __slots__ = (
        "assignment",
        "awaiting_join",
        "awaiting_sync",
        "client_host",
        "client_id",
        "group_instance_id",
        "inferred",
        "is_new",
        "member_id",
        "protocol_type",
        "protocols",
        "rebalance_timeout_ms",
        "session_timeout_ms",
    )

    def __init__(
        self,
        member_id: str,
        group_instance_id: str | None,
        client_id: str,
        client_host: str,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        protocol_type: str,
        protocols: tuple[Protocol, ...],
        inferred: bool = False,
    ) -> None:
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.client_id = client_id
        self.client_host = client_host
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.session_timeout_ms = session_timeout_ms
        self.protocol_type = protocol_type
        self.protocols = protocols
        self.assignment: bytes | None = b""
        self.awaiting_join: ParkedCall | None = None
        self.awaiting_sync: ParkedCall | None = None
        self.is_new = False
        #: warm start / reconciliation: known only from other members' or its own non-join requests,
        #: so protocols and timeouts are unknown (it supports any protocol, never expires on its own)
        self.inferred = inferred

    def __deepcopy__(self, memo: dict[int, Any]) -> ClassicGroupMember:
        return copy_slots(self, memo, shared=frozenset({"protocols"}))

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    def matches(self, protocols: tuple[Protocol, ...]) -> bool:
        """Same names, same order, byte-identical metadata (text era: same lengths). An inferred
        member's metadata is unknown: the model assumes it did not change."""
        return self.inferred or self.protocols == protocols

    def vote(self, candidates: set[str], fallback: str | None) -> str | None:
        if self.inferred:
            return fallback if fallback in candidates else None
        for p in self.protocols:
            if p.name in candidates:
                return p.name
        return None

    def has_satisfied_heartbeat(self) -> bool:
        """``hasSatisfiedHeartbeat`` evaluated when a session deadline passes (the expectation was
        never satisfied, since any refresh re-arms the timer): only members parked in JoinGroup or
        SyncGroup survive, and new members never do."""
        if self.is_new:
            return False
        return self.awaiting_join is not None or self.awaiting_sync is not None


class ClassicGroup:
    """``GroupMetadata`` / ``ClassicGroup``: state, generation, members, static and pending maps, and the
    group's own rules: :meth:`transition_to` (the only way its state changes; every change is reported to
    ``on_transition``), :meth:`validate_member`, :meth:`maybe_elect_new_joined_leader`,
    :meth:`init_next_generation`."""

    __slots__ = (
        "empty_since_ms",
        "generation_id",
        "group_id",
        "has_offsets",
        "last_commit_ms",
        "leader_id",
        "map_layout",
        "members",
        "new_member_added",
        "num_awaiting_join",
        "num_inferred",
        "on_transition",
        "order_known",
        "peak_size",
        "pending_members",
        "pending_sync_members",
        "previous_state",
        "protocol_name",
        "protocol_type",
        "state",
        "static_members",
        "supported_protocols",
    )

    def __init__(
        self,
        group_id: str,
        on_transition: TransitionListener | None = None,
        state: GroupState = GroupState.EMPTY,
        generation_id: int = 0,
    ) -> None:
        """A new group is Empty; a group loaded from the log (``loadGroup``) or from saved replay state
        starts in the ``state`` it was stored in."""
        self.group_id = group_id
        self.on_transition = on_transition
        self.state = state
        self.previous_state = state
        self.generation_id = generation_id
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, ClassicGroupMember] = {}
        #: the ``members`` map Kafka keeps (set by the coordinator that installs the group) and the largest
        #: size it ever had: its table grows with it and never shrinks
        self.map_layout: MapLayout = "java"
        self.peak_size = 0
        self.static_members: dict[str, str] = {}
        self.pending_members: dict[str, None] = {}  # ordered set
        self.pending_sync_members: dict[str, None] = {}
        self.num_awaiting_join = 0
        self.num_inferred = 0
        #: False once a member is inferred (warm start): the member map's order is then a guess until a
        #: leader's JoinGroup answer shows the whole list
        self.order_known = True
        self.supported_protocols: dict[str, int] = {}
        self.new_member_added = False
        #: §11 offsets bookkeeping: None = unknown (warm start), treated as "has offsets"
        self.has_offsets: bool | None = False
        self.last_commit_ms = 0
        self.empty_since_ms = 0

    def __deepcopy__(self, memo: dict[int, Any]) -> ClassicGroup:
        return copy_slots(
            self,
            memo,
            shallow=frozenset(
                {"pending_members", "pending_sync_members", "static_members", "supported_protocols"}
            ),
        )

    # --- state machine (GroupMetadata.transitionTo / assertValidTransition) --------------------
    def transition_to(
        self,
        target: GroupState,
        cause: Cause,
        member_id: str | None = None,
        *,
        adopted: bool = False,
        generation_id: int | None = None,
    ) -> None:
        """Move to ``target`` (checked against the state machine) and report it to ``on_transition``.

        ``adopted``: not a Kafka transition but reconciliation taking the state (and/or, with
        ``generation_id``, the generation) the broker proved; not checked, and the state may stay."""
        previous = self.state
        if not adopted:
            check_transition(previous, target)
        if target is not previous:
            self.previous_state = previous
            self.state = target
        if generation_id is not None:
            self.generation_id = generation_id
        listener = self.on_transition
        if listener is not None:
            listener(self, previous, cause, member_id, adopted)

    def init_next_generation(self, cause: Cause, observed_generation: int | None = None) -> None:
        """``initNextGeneration``: next generation (or the broker's, track mode), protocol selected,
        pending-sync set cleared, CompletingRebalance (members) or Empty (none)."""
        self.generation_id = max(next_generation(self.generation_id), observed_generation or 0)
        self.pending_sync_members.clear()
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition_to(GroupState.COMPLETING_REBALANCE, cause)
        else:
            self.protocol_name = None
            self.transition_to(GroupState.EMPTY, cause)

    def maybe_elect_new_joined_leader(self) -> str | None:
        """``maybeElectNewJoinedLeader``: keep a leader that rejoined, else elect the first member (in
        Kafka's order) that did. Returns the leader, or None when no member rejoined (then the leader is
        unchanged). The caller reports a change (``leader_id`` differs from before)."""
        leader_id = self.leader_id
        if leader_id is None:
            return None
        leader = self.members.get(leader_id)
        if leader is not None and leader.awaiting_join is not None:
            return leader_id
        for m in self.ordered_members():
            if m.awaiting_join is not None:
                self.leader_id = m.member_id
                return m.member_id
        return None

    # --- queries -------------------------------------------------------------------------------
    def member_ids(self) -> list[str]:
        """The member ids in Kafka's iteration order (module docstring)."""
        return hash_order(self.members, self.map_layout, self.peak_size)

    def ordered_members(self) -> list[ClassicGroupMember]:
        members = self.members
        return [members[m] for m in self.member_ids()]

    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def is_pending(self, member_id: str) -> bool:
        return member_id in self.pending_members

    def validate_member(
        self, member_id: str, instance_id: str | None, *, static_membership: bool, strict: bool
    ) -> Errors | None:
        """``validateCurrentMember`` (3.0+, Java) or the 2.3-2.8 ``isStaticMemberFenced`` + ``has``: the
        error (an :class:`Errors` member) or None. ``strict``: an unknown instance id is UNKNOWN_MEMBER_ID."""
        if instance_id is not None and static_membership:
            mapped = self.static_members.get(instance_id)
            if mapped is None:
                if strict:
                    return Errors.UNKNOWN_MEMBER_ID
            elif mapped != member_id:
                return Errors.FENCED_INSTANCE_ID
        if member_id not in self.members:
            return Errors.UNKNOWN_MEMBER_ID
        return None

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_awaiting_join and not self.pending_members

    def rebalance_timeout_ms(self) -> int:
        timeout = 0
        for m in self.members.values():
            if m.rebalance_timeout_ms > timeout:
                timeout = m.rebalance_timeout_ms
        return timeout

    def candidate_protocols(self) -> set[str]:
        need = len(self.members) - self.num_inferred
        return {name for name, count in self.supported_protocols.items() if count == need}

    def supports_protocols(self, protocol_type: str | None, protocols: tuple[Protocol, ...]) -> bool:
        """§4.7: Empty → non-empty type and list; otherwise same type and one name supported by all."""
        if self.state == GroupState.EMPTY:
            return bool(protocol_type) and bool(protocols)
        if self.protocol_type is None:  # known only from inferred members (warm start)
            return bool(protocol_type) and bool(protocols)
        if self.protocol_type != protocol_type:
            return False
        need = len(self.members) - self.num_inferred
        sp = self.supported_protocols
        return any(sp.get(p.name, 0) == need for p in protocols)

    def select_protocol(self) -> str:
        """§4.8: each member (in Kafka's member order) votes for its first candidate; most votes wins;
        ties → the first maximum in the order of Kafka's vote map (a ``HashMap`` of protocol names: Java's
        or, on the Scala coordinator, ``groupBy``'s immutable one)."""
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        for m in self.ordered_members():
            choice = m.vote(candidates, self.protocol_name)
            if choice is not None:
                votes[choice] = votes.get(choice, 0) + 1
        if not votes:
            if self.protocol_name is not None:
                return self.protocol_name
            # Kafka admits no member that shares no protocol with the group (§4.7), so this is reached only
            # while track mode / warm start still holds a join the broker refused (its answer not due
            # yet): each member's first choice votes, and the engine stops trusting its answers
            for m in self.ordered_members():
                if m.protocols:
                    votes[m.protocols[0].name] = votes.get(m.protocols[0].name, 0) + 1
            if not votes:
                raise RuntimeError(f"no protocol can be selected for group {self.group_id}")
        best = max(votes.values())
        # Kafka counts the votes in a map and takes the first maximum in its iteration order: a
        # java.util.HashMap (4.0's ClassicGroup), or the immutable HashMap of Scala's groupBy (2.x/3.x)
        tally = java_hash_order(votes) if self.map_layout == "java" else scala_immutable_hash_order(votes)
        return next(name for name in tally if votes[name] == best)

    # --- mutations (GroupMetadata.add / remove / updateMember) ---------------------------------
    def _inc_protocols(self, member: ClassicGroupMember) -> None:
        if member.inferred:
            self.num_inferred += 1
            return
        sp = self.supported_protocols
        for p in member.protocols:
            sp[p.name] = sp.get(p.name, 0) + 1

    def _dec_protocols(self, member: ClassicGroupMember) -> None:
        if member.inferred:
            self.num_inferred -= 1
            return
        sp = self.supported_protocols
        for p in member.protocols:
            n = sp.get(p.name, 0) - 1
            if n:
                sp[p.name] = n
            else:
                sp.pop(p.name, None)

    def add(self, member: ClassicGroupMember, parked: ParkedCall | None) -> None:
        if member.group_instance_id is not None:
            if member.group_instance_id in self.static_members:
                raise RuntimeError(
                    f"static member {member.group_instance_id} cannot be added to group "
                    f"{self.group_id} since it is already a member"
                )
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members or (self.protocol_type is None and not member.inferred):
            self.protocol_type = member.protocol_type or None
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self.peak_size = max(self.peak_size, len(self.members))
        self._inc_protocols(member)
        member.awaiting_join = parked
        if parked is not None:
            self.num_awaiting_join += 1
        self.pending_members.pop(member.member_id, None)

    def remove(self, member_id: str, drop_pending: bool = True) -> ClassicGroupMember | None:
        member = self.members.pop(member_id, None)
        if member is not None:
            self._dec_protocols(member)
            if member.awaiting_join is not None:
                self.num_awaiting_join -= 1
            if member.group_instance_id is not None:
                self.static_members.pop(member.group_instance_id, None)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.member_ids()), None)
        if drop_pending:
            self.pending_members.pop(member_id, None)
        self.pending_sync_members.pop(member_id, None)
        return member

    def update_member(
        self,
        member: ClassicGroupMember,
        protocols: tuple[Protocol, ...],
        rebalance_timeout_ms: int | None,
        session_timeout_ms: int | None,
        parked: ParkedCall | None,
    ) -> None:
        self._dec_protocols(member)
        member.protocols = protocols
        member.inferred = False
        self._inc_protocols(member)
        if rebalance_timeout_ms is not None:
            member.rebalance_timeout_ms = rebalance_timeout_ms
        if session_timeout_ms is not None:
            member.session_timeout_ms = session_timeout_ms
        if parked is not None and member.awaiting_join is None:
            self.num_awaiting_join += 1
        elif parked is None and member.awaiting_join is not None:
            self.num_awaiting_join -= 1
        member.awaiting_join = parked

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> ClassicGroupMember:
        """Re-key a static member: removed under the old id and put under the new one (so it moves to
        the end of the member order). Like Kafka, the pending-sync set is *not* re-keyed: an old id
        still pending there keeps the pending-sync timer from completing."""
        member = self.members.pop(old_id)
        member.member_id = new_id
        self.members[new_id] = member
        if self.leader_id == old_id:
            self.leader_id = new_id
        self.static_members[instance_id] = new_id
        return member
