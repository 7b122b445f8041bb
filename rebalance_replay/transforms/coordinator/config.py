"""Configuration of the coordinator model and the version switches derived from it.

``CoordinatorConfig`` names Kafka's broker settings (``group.*``) and the replay knobs. The behaviour
matrix of the semantics reference (§14 per-version deltas, §15 Java-coordinator deltas) is resolved
once into a :class:`VersionFeatures` so the request handlers test plain booleans.

Version strings (:mod:`rebalance_replay.transforms.kafka_version`): ``"X.Y"`` means the **last patch release**
of that
line (what production clusters run, and what the patch-level backports 2.6.1 / 2.8.1 / 3.3.1 / 3.3.2
need), ``"X.Y.Z"`` an exact release. ``"2.8"`` therefore has the pending-sync timeout (2.8.1) and
``"2.8.0"`` does not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from rebalance_replay.transforms.coordinator.types import shared_when_copied
from rebalance_replay.transforms.kafka_protocol import Errors
from rebalance_replay.transforms.kafka_version import Version
from rebalance_replay.transforms.kafka_version import (
    parse_kafka_version as parse_kafka_version,  # the one parser
)

#: Which coordinator's behaviour is modelled: Kafka's Scala ``GroupCoordinator`` or the Java one (4.0+).
Implementation = Literal["scala", "java"]
#: ``track``: reconcile with the observed responses; ``predict``: the pure model.
Mode = Literal["track", "predict"]
#: When a timer due at D fires for a request stamped D: ``inclusive`` (the broker) or ``strict``.
TimerRule = Literal["strict", "inclusive"]
#: Which of several timers with equal deadlines fires first (see ``CoordinatorConfig.timer_tie_order``).
TimerTieOrder = Literal["rebalance_first", "arming_order", "auto"]

#: ``NewMemberJoinTimeoutMs`` (Scala) / ``CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS`` (Java): not a config.
NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000

#: Rebalance timeout assumed for members inferred from a warm start (no JoinGroup seen): the Java
#: consumer's ``max.poll.interval.ms`` default, which it sends as ``rebalanceTimeoutMs``.
ASSUMED_REBALANCE_TIMEOUT_MS = 300_000


def modelled_version(text: str) -> Version:
    """The version the model runs as (bare ``"X.Y"``: the last patch); ValueError outside 2.2 … 4.x."""
    v = parse_kafka_version(text)
    if v < (2, 2, 0):
        raise ValueError(f"Kafka {text} is older than 2.2, the oldest version modelled")
    if v[0] > 4:
        raise ValueError(f"Kafka {text} is newer than the 4.x line modelled")
    return v


@dataclass(frozen=True, slots=True)
class CoordinatorConfig:
    """Broker settings and replay options of one model run.

    ``timer_rule`` defaults to ``"inclusive"``: the broker's ``SystemTimer`` is a hierarchical timing
    wheel with 1 ms ticks whose buckets are handed to the expiration reaper by a ``DelayQueue`` as soon
    as ``now >= expiration`` (``TimerTaskList.getDelay`` is ``max(expiration - now, 0)``), so a timer
    due at D has fired by the time a request stamped D is handled (reference §16a). ``"strict"``
    reproduces Scala's ``MockTimer`` (fires only when the clock is past D).
    """

    kafka_version: str = "3.7"
    implementation: Implementation | None = None
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int | None = None
    group_initial_rebalance_delay_ms: int = 3000
    group_max_size: int = 2**31 - 1
    new_member_join_timeout_ms: int = NEW_MEMBER_JOIN_TIMEOUT_MS
    timer_rule: TimerRule = "inclusive"
    #: equal deadlines: ``rebalance_first`` (join/sync timers before session timers, then arming order —
    #: what reproduces the Scala coordinator's tests, §16a), ``arming_order`` (FIFO: the Java
    #: coordinator's keyed timers, as Kafka 4.0's own coordinator code fires them in the differential
    #: tests) or ``auto`` (by the implementation)
    timer_tie_order: TimerTieOrder = "auto"
    mode: Mode = "track"
    warm_start: bool = True
    #: §11: an Empty group is deleted (→ Dead, generation restarts at 0) when its offsets expire.
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000
    #: §11: period of the offset-expiration task; an Empty group without offsets is deleted by it.
    offsets_retention_check_interval_ms: int = 600_000
    #: Warm start: the model is confident once no unknown member has appeared for this long (every
    #: live member heartbeats every ``heartbeat.interval.ms``, 3 s by default).
    warm_start_window_ms: int = 30_000
    #: Track mode: a parked request the broker answered at T counts as "answered late by the model"
    #: (and is reconciled) only if the model still holds it at T + this grace (log ms rounding).
    late_answer_grace_ms: int = 5
    #: Emit a HEARTBEAT / OFFSET_COMMIT event for every accepted heartbeat / commit.
    emit_liveness_events: bool = True

    def __post_init__(self) -> None:
        modelled_version(self.kafka_version)
        for name, allowed in (
            ("implementation", (*get_args(Implementation), None)),
            ("timer_rule", get_args(TimerRule)),
            ("timer_tie_order", get_args(TimerTieOrder)),
            ("mode", get_args(Mode)),
        ):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, not {getattr(self, name)!r}")
        if self.group_max_size < 1:
            raise ValueError("group.max.size must be >= 1")
        if self.group_initial_rebalance_delay_ms < 0:
            raise ValueError("group.initial.rebalance.delay.ms must be >= 0")

    @property
    def version(self) -> Version:
        return modelled_version(self.kafka_version)

    @property
    def resolved_implementation(self) -> Implementation:
        if self.implementation is not None:
            return self.implementation
        return "java" if self.version >= (4, 0, 0) else "scala"

    @property
    def resolved_timer_tie_order(self) -> Literal["rebalance_first", "arming_order"]:
        if self.timer_tie_order != "auto":
            return self.timer_tie_order
        return "arming_order" if self.resolved_implementation == "java" else "rebalance_first"

    @property
    def max_session_timeout_ms(self) -> int:
        if self.group_max_session_timeout_ms is not None:
            return self.group_max_session_timeout_ms
        return 300_000 if self.version < (2, 3, 0) else 1_800_000

    def features(self) -> VersionFeatures:
        return VersionFeatures.of(self)


@dataclass(frozen=True, slots=True)
class VersionFeatures:
    """Every version- or implementation-dependent behaviour, resolved to a flag (reference §14/§15)."""

    version: Version
    java: bool
    #: KIP-345 static membership (2.3+).
    static_membership: bool
    #: Error for a Dead group: UNKNOWN_MEMBER_ID (2.2) / COORDINATOR_NOT_AVAILABLE (2.3+, KAFKA-8386).
    dead_group_error: Errors
    #: ``acceptJoiningMember`` (2.6+, KAFKA-9844/9885); before: the 2.2-2.5 inline rule.
    accept_joining_member: bool
    #: Heartbeat in CompletingRebalance: "no_check" (2.2: RIP before member/generation checks),
    #: "rip" (2.3-2.6.0: RIP after the checks, no refresh), "none" (2.6.1+: NONE + refresh).
    heartbeat_completing: Literal["no_check", "rip", "none"]
    #: Static rejoin in Stable persisted, rebalancing when the selected protocol changes (2.6.1+).
    static_stable_protocol_check: bool
    #: Static rejoin in CompletingRebalance forces a rebalance (2.5.0+, KAFKA-9801).
    static_completing_rebalances: bool
    #: 2.3.0 generated static member ids as ``instanceId-<state timestamp>`` (KAFKA-8715).
    static_id_uses_timestamp: bool
    #: Unified ``validateCurrentMember`` (3.0+): an unknown instance id is UNKNOWN_MEMBER_ID for
    #: Heartbeat/Sync/Commit/Leave; leave by instance id needs member id "".
    validate_current_member: bool
    #: KIP-345 LeaveGroup by group instance id, with the fenced-instance check (2.4+; before: one
    #: member id).
    leave_by_instance_id: bool
    #: A LeaveGroup's removal cause names the removed member, capitalized, with the client's reason
    #: (3.0+ and Java); before, Scala named the request's member id ("removing member … on LeaveGroup").
    leave_cause_names_removed_member: bool
    #: Wording of a new member's rebalance cause: "Adding new member X" (2.2), "... with group
    #: instanceid ..." (2.3-2.4 Scala), "... with group instance id ..." (2.5+, Java).
    new_member_cause: Literal["bare", "instanceid", "instance_id"]
    #: "Leader X re-joining group" (3.0+, Java) / "leader X re-joining group" (2.6-2.8 Scala).
    leader_cause_capitalized: bool
    #: KIP-559 SyncGroup protocolType/Name check (2.5+).
    sync_protocol_check: bool
    #: KAFKA-12890 pending-sync timeout (2.8.1 and 3.0+).
    pending_sync_timeout: bool
    #: KAFKA-14009: a rejoin updates rebalance/session timeouts (3.3.2, 3.4+).
    rejoin_updates_timeouts: bool
    #: Removing a member id also drops it from the pending set (3.0+).
    remove_drops_pending: bool
    #: OffsetCommit: 2.2-2.3 check CompletingRebalance before membership.
    commit_state_before_member: bool
    #: OffsetCommit: gen -1 with member/instance id on an Empty group rejected (3.0.0-3.3.0).
    commit_strict_gen_minus_one: bool
    #: KIP-800 client reasons appended to rebalance causes (3.2+).
    client_reasons: bool
    #: 2.6+ per-state wording of the rebalance causes.
    state_in_causes: bool
    #: Scala SyncGroup in Stable re-arms the session (Java does not, §15.3).
    sync_stable_refreshes: bool
    #: Java OffsetCommit v9+ on an unknown group with generation >= 0 → GROUP_ID_NOT_FOUND.
    commit_group_id_not_found_v9: bool

    @staticmethod
    def of(config: CoordinatorConfig) -> VersionFeatures:
        v = config.version
        java = config.resolved_implementation == "java"
        if v < (2, 3, 0):
            hb_cr: Literal["no_check", "rip", "none"] = "no_check"
        elif v < (2, 6, 1):
            hb_cr = "rip"
        else:
            hb_cr = "none"
        return VersionFeatures(
            version=v,
            java=java,
            static_membership=v >= (2, 3, 0),
            dead_group_error=Errors.UNKNOWN_MEMBER_ID if v < (2, 3, 0) else Errors.COORDINATOR_NOT_AVAILABLE,
            accept_joining_member=v >= (2, 6, 0),
            heartbeat_completing=hb_cr,
            static_stable_protocol_check=v >= (2, 6, 1),
            static_completing_rebalances=v >= (2, 5, 0),
            static_id_uses_timestamp=v == (2, 3, 0),
            validate_current_member=v >= (3, 0, 0),
            leave_by_instance_id=v >= (2, 4, 0),
            leave_cause_names_removed_member=java or v >= (3, 0, 0),
            new_member_cause=(
                "instance_id" if java or v >= (2, 5, 0) else "instanceid" if v >= (2, 3, 0) else "bare"
            ),
            leader_cause_capitalized=java or v >= (3, 0, 0),
            sync_protocol_check=v >= (2, 5, 0),
            pending_sync_timeout=v >= (3, 0, 0) or (2, 8, 1) <= v < (2, 9, 0),
            rejoin_updates_timeouts=v >= (3, 4, 0) or (3, 3, 2) <= v < (3, 4, 0),
            remove_drops_pending=v >= (3, 0, 0),
            commit_state_before_member=v < (2, 4, 0),
            commit_strict_gen_minus_one=(3, 0, 0) <= v < (3, 3, 1),
            client_reasons=v >= (3, 2, 0),
            state_in_causes=v >= (2, 6, 0),
            sync_stable_refreshes=not java,
            commit_group_id_not_found_v9=java,
        )


for _frozen in (CoordinatorConfig, VersionFeatures):
    _frozen.__deepcopy__ = shared_when_copied  # type: ignore[union-attr]
