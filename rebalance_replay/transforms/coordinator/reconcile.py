"""Track mode and warm start: bring the model back in line with what the broker answered.

The model first predicts (the Prediction keeps that original answer), then, if the observed response
says otherwise, adjusts its state the least it can and records a ``RECONCILED`` event:

* what an accepted response proves is adopted — the member exists (an unknown member id accepted by
  Heartbeat/OffsetCommit/SyncGroup is *inferred*: added with unknown protocols and timeouts, assumed
  unchanged when it rejoins), a *later* generation (generations never go back: an answer about an
  older generation is stale), the leader, the protocol and, from the leader's JoinGroup response, the
  full member list;
* a member the broker does not know (``UNKNOWN_MEMBER_ID``) is removed through Kafka's removal path
  (so the rebalance it caused in the broker also starts in the model); a fenced static member
  (``FENCED_INSTANCE_ID``) is dropped silently (its replacement's id will show up);
* ``REBALANCE_IN_PROGRESS`` when the model is Stable starts the rebalance the model missed; ``NONE``
  to a heartbeat while the model is preparing a rebalance aborts the model's (spurious) rebalance;
* a JoinGroup the broker held (its observed answer comes later) but the model answered at once (e.g.
  the MEMBER_ID_REQUIRED line is missing, so the model does not know the id) is applied the way the
  broker did: the member joins and waits for the join phase;
* a JoinGroup/SyncGroup the broker answered while the model still holds it (checked at the observed
  completion time plus ``late_answer_grace_ms``, or as soon as the member sends a request it could
  only send after that answer) gets a Prediction ``NO_RESPONSE`` / ``completion_ms=None`` (the model had
  not answered), and the model completes the join phase *as observed* (the broker's generation and
  leader, evicting nobody: members the broker evicted are removed when it answers them
  ``UNKNOWN_MEMBER_ID``), completes the sync phase, or removes the member;
* an observation the model cannot place (``ILLEGAL_GENERATION`` while the model agrees on the
  generation, a commit answered ``REBALANCE_IN_PROGRESS`` outside CompletingRebalance) sends the model
  back to warm-up (predictions unscored until it is confident again).

During warm-up the same adoption rules run in predict mode too: they are how a model that starts in
the middle of a group's life learns it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from rebalance_replay.transforms.coordinator.config import ASSUMED_REBALANCE_TIMEOUT_MS, VersionFeatures
from rebalance_replay.transforms.coordinator.state import (
    ClassicGroup,
    ClassicGroupMember,
    ParkedCall,
    ReplayBook,
)
from rebalance_replay.transforms.coordinator.types import (
    Cause,
    EventKind,
    GroupRequest,
    GroupState,
    LeaderEvent,
    ModelEvent,
    ObservedResponse,
    PredictedResponse,
    RemovalReason,
    ResponseError,
    Trigger,
)
from rebalance_replay.transforms.kafka_protocol import ApiKey, Errors

#: JoinGroup answers while the member map's order (which decides the leader) is still being learned
ORDER_UNKNOWN_REASON = "warm-up: the order of members seen only through their requests (who leads) is unknown"


#: JoinGroup answers of a join phase a member seen only through its requests did not rejoin
UNSURE_JOIN_REASON = (
    "warm-up: a member seen only through its requests did not rejoin (its timeouts are unknown)"
)


INFERRED_TIMEOUT_REASON = (
    "warm-up: the rebalance timeout of members seen only through their requests is unknown"
)

EMPTY = GroupState.EMPTY
PREPARING = GroupState.PREPARING_REBALANCE
COMPLETING = GroupState.COMPLETING_REBALANCE
STABLE = GroupState.STABLE
DEAD = GroupState.DEAD


class Coordinator(Protocol):
    """What reconciliation uses of the coordinator (``CoordinatorEngine`` implements it): its group
    and bookkeeping, Kafka's handler steps, and a few timer and output operations. Nothing else."""

    group_id: str
    answer_grace_ms: int

    @property
    def group(self) -> ClassicGroup | None: ...
    @property
    def book(self) -> ReplayBook: ...
    @property
    def features(self) -> VersionFeatures: ...

    # group, events, confidence
    def install_group(self, group: ClassicGroup | None) -> None: ...

    @property
    def emit(self) -> Callable[..., None]:
        """``emit(kind, **fields of ModelEvent)``: an event at the current clock."""

    def event_count(self) -> int: ...
    def events_since(self, count: int) -> list[ModelEvent]: ...
    def become_confident(self, why: str) -> None: ...
    def lose_confidence(self, why: str) -> None: ...
    def learn_member_order(self, group: ClassicGroup, obs: ObservedResponse | None) -> None: ...
    def persist(self, group: ClassicGroup) -> None: ...

    # Kafka's handler steps
    def add_member_and_rebalance(
        self, group: ClassicGroup, call: ParkedCall, member_id: str, instance_id: str | None
    ) -> None: ...
    def update_member_and_rebalance(
        self, group: ClassicGroup, member: ClassicGroupMember, call: ParkedCall, cause: Cause
    ) -> None: ...
    def remove_member(
        self,
        group: ClassicGroup,
        member_id: str,
        reason: RemovalReason,
        cause: str,
        *,
        inferred: bool = ...,
        leader_event: LeaderEvent = ...,
    ) -> None: ...
    def remove_member_and_update_group(
        self, group: ClassicGroup, member: ClassicGroupMember, cause: Cause, reason: RemovalReason
    ) -> None: ...
    def prepare_rebalance(self, group: ClassicGroup, cause: Cause, member_id: str | None = None) -> None: ...
    def maybe_complete_join(self, group: ClassicGroup, ignore_initial: bool = False) -> None: ...
    def start_next_generation(self, group: ClassicGroup, observed_generation: int | None = None) -> None: ...
    def set_and_propagate_assignment(
        self, group: ClassicGroup, assignment: dict[str, bytes | None]
    ) -> None: ...
    def remove_sync_expiration(self, group: ClassicGroup) -> None: ...

    # answers
    def join_error(self, call: ParkedCall, error: Errors, member_id: str) -> PredictedResponse: ...
    def join_success(
        self, group: ClassicGroup, call: ParkedCall, member_id: str, leader: str | None, with_members: bool
    ) -> PredictedResponse: ...
    def sync_response(
        self, call: ParkedCall, error: Errors, assignment: bytes | None, with_protocol: bool
    ) -> PredictedResponse: ...
    def answer_join(
        self, group: ClassicGroup, member: ClassicGroupMember, response: PredictedResponse
    ) -> None: ...
    def respond(self, call: ParkedCall, response: PredictedResponse) -> None: ...
    def supersede(self, call: ParkedCall, reason: str = ...) -> None: ...
    def append_prediction(
        self, call: ParkedCall, response: PredictedResponse, *, reconciled: bool
    ) -> None: ...

    # timers
    def arm_heartbeat(self, member: ClassicGroupMember, timeout_ms: int) -> None: ...
    def cancel_heartbeat(self, member_id: str) -> None: ...
    def arm_session_timer(self, member_id: str, timeout_ms: int) -> None: ...
    def arm_join_timer(self, group: ClassicGroup) -> None: ...
    def cancel_join_timer(self) -> None: ...
    def arm_offsets_expiration(self, group: ClassicGroup) -> None: ...
    def cancel_offsets_timer(self) -> None: ...


def _observed_error(obs: ObservedResponse) -> str | None:
    if obs.error is not None:
        return obs.error
    if obs.partition_errors:
        return obs.partition_errors[0][2]
    return None


def _reconciled(model: Coordinator, detail: str, member_id: str | None = None) -> None:
    model.emit(EventKind.RECONCILED, member_id=member_id, detail=detail)


def _because(what: str) -> Cause:
    """The cause of what the model does because the broker's answer says so (why is unknown)."""
    return Cause(Trigger.RECONCILED, f"reconciled: {what}")


# ------------------------------------------------------------------------------------------------
# building blocks
# ------------------------------------------------------------------------------------------------
def ensure_group(model: Coordinator, why: str) -> ClassicGroup:
    group = model.group
    if group is None or group.state == DEAD:
        group = ClassicGroup(model.group_id)
        group.has_offsets = None
        model.install_group(group)
        _reconciled(model, f"group exists in the broker ({why})")
    return group


def ensure_member(
    model: Coordinator,
    group: ClassicGroup,
    member_id: str,
    instance_id: str | None,
    client_id: str | None,
    protocol_type: str | None,
    why: str,
) -> ClassicGroupMember:
    """Make ``member_id`` a member (inferred if the model has never seen its JoinGroup)."""
    member = group.members.get(member_id)
    if member is not None:
        if instance_id is not None and member.inferred and member.group_instance_id is None:
            # an inferred member shows its group instance id: it is a static member
            member.group_instance_id = instance_id
            group.static_members[instance_id] = member_id
        return member
    if instance_id is not None:
        mapped = group.static_members.get(instance_id)
        if mapped is not None and mapped in group.members:
            member = group.replace_static_member(instance_id, mapped, member_id)
            model.cancel_heartbeat(mapped)
            model.emit(
                EventKind.STATIC_MEMBER_REPLACED,
                member_id=member_id,
                group_instance_id=instance_id,
                detail=mapped,
                cause=f"reconciled: {why}",
                inferred=True,
            )
            _reconciled(model, f"static member {instance_id} is {member_id} in the broker ({why})", member_id)
            return member
        group.static_members.pop(instance_id, None)
    group.pending_members.pop(member_id, None)
    member = ClassicGroupMember(
        member_id,
        instance_id,
        client_id or "",
        "",
        ASSUMED_REBALANCE_TIMEOUT_MS,
        0,
        protocol_type or group.protocol_type or "",
        (),
        inferred=True,
    )
    had_members = bool(group.members)
    group.add(member, None)
    if had_members:
        group.order_known = False
    if not had_members and group.protocol_type is None:
        group.protocol_type = protocol_type
    model.book.last_discovery_ms = model.book.clock
    model.emit(
        EventKind.MEMBER_ADDED,
        member_id=member_id,
        group_instance_id=instance_id,
        cause=f"inferred: {why}",
        inferred=True,
    )
    _reconciled(model, f"member {member_id} exists in the broker ({why})", member_id)
    return member


def drop_member(model: Coordinator, group: ClassicGroup, member_id: str, why: str) -> None:
    """Remove a member without any rebalance (the broker already did whatever it did)."""
    member = group.members.get(member_id)
    if member is None:
        return
    if member.awaiting_join is not None:
        call = member.awaiting_join
        model.answer_join(group, member, model.join_error(call, Errors.UNKNOWN_MEMBER_ID, ""))
    if member.awaiting_sync is not None:
        call = member.awaiting_sync
        member.awaiting_sync = None
        model.supersede(call, "never answered: member dropped by reconciliation")
    model.remove_member(
        group, member_id, RemovalReason.RECONCILED, f"reconciled: {why}", inferred=True, leader_event="none"
    )


def force_state(model: Coordinator, group: ClassicGroup, target: GroupState, why: str) -> None:
    """Set the state the broker is in, bypassing the transition table (a reconciliation, not a Kafka
    transition: recorded as RECONCILED, never as TRANSITION)."""
    current = group.state
    if current == target:
        return
    if current == PREPARING:
        model.cancel_join_timer()
        leader = group.leader_id
        for m in list(group.members.values()):
            call = m.awaiting_join
            if call is not None:
                model.answer_join(
                    group,
                    m,
                    model.join_success(
                        group, call, m.member_id, leader, m.member_id == leader and target == COMPLETING
                    ),
                )
    if current == COMPLETING and target != PREPARING:
        for m in group.members.values():
            call = m.awaiting_sync
            if call is not None:
                m.awaiting_sync = None
                model.respond(call, model.sync_response(call, Errors.NONE, m.assignment, True))
    if target in (PREPARING, EMPTY):
        model.remove_sync_expiration(group)
    if target == PREPARING:
        model.arm_join_timer(group)
    group.transition_to(
        target, Cause(Trigger.ADOPTED, f"state {current.value} -> {target.value}: {why}"), adopted=True
    )
    if target == EMPTY:
        group.empty_since_ms = model.book.clock
        model.arm_offsets_expiration(group)
    elif current == EMPTY:
        model.cancel_offsets_timer()
    _reconciled(model, f"state {current.value} -> {target.value}: {why}")


def adopt_generation(model: Coordinator, group: ClassicGroup, generation: int, why: str) -> bool:
    """Adopt a *later* generation the broker proved. Never goes back: an observation carrying an older
    generation is stale (or the log inconsistent), and generations only grow in the coordinator."""
    if generation < 0 or generation <= group.generation_id:
        return False
    old = group.generation_id
    group.transition_to(
        group.state,
        Cause(Trigger.ADOPTED, f"generation {old} -> {generation}: {why}"),
        adopted=True,
        generation_id=generation,
    )
    model.remove_sync_expiration(group)
    _reconciled(model, f"generation {old} -> {generation}: {why}")
    return True


def lose_confidence(model: Coordinator, why: str) -> None:
    model.lose_confidence(why)


# ------------------------------------------------------------------------------------------------
# answered requests
# ------------------------------------------------------------------------------------------------
def reconcile_answer(model: Coordinator, call: ParkedCall, predicted: PredictedResponse) -> bool:
    """Compare the model's answer with the broker's; adjust the model. True when it adjusted."""
    req = call.request
    obs = req.observed
    if obs is None:
        return False
    observed = _observed_error(obs)
    if observed is None or observed == "NO_RESPONSE":
        return False
    api = req.api
    before = model.event_count()
    if api is ApiKey.JOIN_GROUP:
        _reconcile_join(model, call, predicted, obs, observed)
    elif api is ApiKey.LEAVE_GROUP:
        _reconcile_leave(model, call, predicted, obs, observed)
    elif observed != predicted.error or (not model.book.confident and observed == "NONE"):
        _reconcile_member_request(model, call, observed)
    return any(e.kind is EventKind.RECONCILED for e in model.events_since(before))


def _reconcile_member_request(model: Coordinator, call: ParkedCall, observed: str) -> None:
    """Heartbeat, OffsetCommit, SyncGroup: what the broker's answer says about the group."""
    req = call.request
    api = req.api
    member_id = req.member_id or ""
    gen = req.generation_id if req.generation_id is not None else -1
    instance_id = req.group_instance_id
    group = model.group
    what = f"{api.name} of {member_id or '<no member id>'} answered {observed}"
    if observed == "NONE":
        if api is ApiKey.OFFSET_COMMIT and gen < 0 and not member_id:
            ensure_group(model, what)
            return
        group = ensure_group(model, what)
        if 0 <= gen < group.generation_id:
            return  # an accepted request of an older generation: stale or inconsistent, nothing to learn
        ensure_member(model, group, member_id, instance_id, req.client_id, req.protocol_type, what)
        adopt_generation(model, group, gen, what)
        state = group.state
        if api is ApiKey.HEARTBEAT:
            allowed = (
                (STABLE, COMPLETING)
                if model.features.heartbeat_completing == "none" or model.features.java
                else (STABLE,)
            )
        elif api is ApiKey.OFFSET_COMMIT:
            allowed = (STABLE, PREPARING)
        else:
            allowed = (STABLE,)
        if state not in allowed:
            force_state(model, group, STABLE, what)
        member = group.members.get(member_id)
        if member is not None and api is not ApiKey.SYNC_GROUP:
            model.arm_heartbeat(member, member.session_timeout_ms)
    elif observed == "REBALANCE_IN_PROGRESS":
        group = ensure_group(model, what)
        ensure_member(model, group, member_id, instance_id, req.client_id, req.protocol_type, what)
        if api is ApiKey.OFFSET_COMMIT:
            adopt_generation(model, group, gen, what)
            if group.state != COMPLETING:
                lose_confidence(model, f"{what} while the model is {group.state.value}")
            if group.state == EMPTY:
                # the broker refuses commits so only in CompletingRebalance, and a group with a member
                # is never Empty (a static member's rejoin would then meet a state Kafka rules out)
                force_state(model, group, COMPLETING, what)
            return
        if group.state == PREPARING or (gen >= 0 and gen < group.generation_id):
            return  # already rebalancing / a stale answer about an older generation
        if gen >= 0 and group.state != EMPTY:
            adopt_generation(model, group, gen, what)
        if group.state in (STABLE, COMPLETING, EMPTY):
            _reconciled(model, f"the broker is rebalancing ({what})", member_id)
            model.prepare_rebalance(group, _because(what), member_id or None)
            if any(m.inferred for m in group.members.values()):
                # a member known only from its heartbeats (timeouts unknown) may have expired on the
                # broker: the model cannot tell who left, so it is back in warm-up until it sees again
                lose_confidence(model, f"{what}: a member whose timeouts are unknown may have expired")
    elif observed == "UNKNOWN_MEMBER_ID":
        if group is None:
            return
        target = member_id
        if instance_id is not None and group.static_members.get(instance_id) not in (None, member_id):
            return
        member = group.members.get(target)
        if member is not None:
            _reconciled(model, f"member {target} is unknown to the broker ({what})", target)
            model.remove_member_and_update_group(group, member, _because(what), RemovalReason.RECONCILED)
    elif observed == "FENCED_INSTANCE_ID":
        if group is None or instance_id is None:
            return
        if group.static_members.get(instance_id) == member_id:
            drop_member(
                model, group, member_id, f"{what}: instance {instance_id} belongs to another member id"
            )
    elif observed == "ILLEGAL_GENERATION":
        group = ensure_group(model, what)
        if member_id:
            ensure_member(model, group, member_id, instance_id, req.client_id, req.protocol_type, what)
        if group.generation_id == gen:
            lose_confidence(model, f"{what}: the broker's generation is not {gen}")
        if group.state == EMPTY and group.members:
            # the broker checks the generation only of a member it has, and a group with a member is
            # never Empty: it has moved to a later generation the model has not seen (which of the
            # live states it is in, the answer does not say — Stable, as an accepted request would)
            lose_confidence(model, f"{what} while the model is Empty")
            force_state(model, group, STABLE, what)
    elif observed == "COORDINATOR_NOT_AVAILABLE" or observed == "GROUP_ID_NOT_FOUND":
        return


def _reconcile_join(
    model: Coordinator,
    call: ParkedCall,
    predicted: PredictedResponse,
    obs: ObservedResponse,
    observed: str,
) -> None:
    req = call.request
    group = model.group
    what = f"JOIN_GROUP of {req.member_id or '<new member>'} answered {observed}"
    if observed == "NONE":
        group = ensure_group(model, what)
        mid = obs.member_id or req.member_id or ""
        late = obs.completion_ms is not None and obs.completion_ms > model.book.clock + model.answer_grace_ms
        # an answer the model gave too (same generation, leader, members) was not parked for another join
        # phase: the broker only took longer over it (a real broker's own work, a delay of 0 that still
        # goes through the purgatory)
        if late and mid and not _join_answer_agrees(predicted, obs, mid):
            # the broker parked this JoinGroup (it answers later) while the model answered it at once:
            # apply it the way the broker did — the member joins and waits for the join phase
            _repark_join(model, group, call, mid, what)
            return
        if model.book.confident and _join_answer_agrees(predicted, obs, mid):
            # the model answered as the broker did: nothing to learn, and its state may rightly have
            # moved on since the answer was made (a static member replaced after its fast rejoin)
            return
        if (
            mid
            and mid not in group.members
            and not (predicted.error == "NONE" and predicted.member_id == mid)
        ):
            ensure_member(model, group, mid, req.group_instance_id, req.client_id, req.protocol_type, what)
        adopt_join_view(model, group, obs, what)
        return
    if observed == predicted.error:
        return
    if observed == "MEMBER_ID_REQUIRED":
        if group is None or not obs.member_id:
            return
        mid = obs.member_id
        if mid in group.members:
            return
        if mid not in group.pending_members:
            group.pending_members[mid] = None
            timeout = req.session_timeout_ms or 0
            model.arm_session_timer(mid, timeout)
            model.emit(
                EventKind.PENDING_MEMBER_ADDED, member_id=mid, cause=f"reconciled: {what}", inferred=True
            )
            _reconciled(model, f"pending member {mid} ({what})", mid)
        return
    if group is None:
        return
    # the broker refused the join the model accepted: undo the model's acceptance
    for mid in {req.member_id or "", predicted.member_id or ""}:
        if not mid:
            continue
        if mid in group.pending_members:
            group.pending_members.pop(mid, None)
            model.cancel_heartbeat(mid)
            model.emit(
                EventKind.PENDING_MEMBER_REMOVED,
                member_id=mid,
                removal_reason=RemovalReason.RECONCILED,
                cause=f"reconciled: {what}",
                inferred=True,
            )
            _reconciled(model, f"pending member {mid} refused by the broker ({what})", mid)
            if group.state == PREPARING:
                model.maybe_complete_join(group)
        member = group.members.get(mid)
        if member is not None and observed in (
            "UNKNOWN_MEMBER_ID",
            "GROUP_MAX_SIZE_REACHED",
            "INCONSISTENT_GROUP_PROTOCOL",
            "INVALID_SESSION_TIMEOUT",
        ):
            _reconciled(model, f"member {mid} refused by the broker ({what})", mid)
            model.remove_member_and_update_group(group, member, _because(what), RemovalReason.RECONCILED)
        elif member is not None and observed == "FENCED_INSTANCE_ID":
            drop_member(model, group, mid, what)
    if not group.members and group.state in (COMPLETING, STABLE):
        # the member the model took in for this join was the group's only one (a warm start's first
        # sight of it): Kafka never holds a generation without members, the group is Empty
        force_state(model, group, EMPTY, f"{what}: no member left")


def _repark_join(
    model: Coordinator, group: ClassicGroup, call: ParkedCall, member_id: str, what: str
) -> None:
    req = call.request
    if group.state == DEAD:
        return
    member = group.members.get(member_id)
    _reconciled(model, f"the broker holds this JoinGroup until the join phase ends ({what})", member_id)
    if member is None:
        group.pending_members.pop(member_id, None)
        if req.group_instance_id is not None:
            mapped = group.static_members.get(req.group_instance_id)
            if mapped is not None and mapped in group.members:
                drop_member(model, group, mapped, f"{what}: replaced by {member_id}")
        model.add_member_and_rebalance(group, call, member_id, req.group_instance_id)
    else:
        model.update_member_and_rebalance(group, member, call, _because(what))
    if group.state == PREPARING:
        model.maybe_complete_join(group)


def _join_answer_agrees(predicted: PredictedResponse, obs: ObservedResponse, member_id: str) -> bool:
    return (
        predicted.error == "NONE"
        and predicted.member_id == member_id
        and predicted.generation_id == obs.generation_id
        and predicted.leader == obs.leader
        and (not obs.protocol_name or predicted.protocol_name == obs.protocol_name)
        and (not obs.members or set(obs.members) == set(predicted.members or ()))
    )


def adopt_join_view(model: Coordinator, group: ClassicGroup, obs: ObservedResponse, what: str) -> None:
    """A successful JoinGroup response: generation, leader, protocol and (leader) the member list."""
    if obs.generation_id is not None:
        adopt_generation(model, group, obs.generation_id, what)
    if obs.members:
        wanted = list(obs.members)
        instances = obs.member_instance_ids or (None,) * len(wanted)
        for mid, instance in zip(wanted, instances, strict=False):
            ensure_member(
                model, group, mid, instance, None, obs.protocol_type, f"{what}: listed by the leader"
            )
        for mid in [m for m in group.members if m not in set(wanted)]:
            drop_member(model, group, mid, f"{what}: not in the leader's member list")
        if not group.order_known:
            model.learn_member_order(group, obs)
    if obs.leader and group.leader_id != obs.leader:
        if obs.leader not in group.members:
            ensure_member(model, group, obs.leader, None, None, obs.protocol_type, f"{what}: the leader")
        old = group.leader_id
        group.leader_id = obs.leader
        model.emit(
            EventKind.LEADER_CHANGED,
            member_id=obs.leader,
            leader=obs.leader,
            detail=old,
            cause=f"reconciled: {what}",
            inferred=True,
        )
        _reconciled(model, f"leader {old} -> {obs.leader} ({what})", obs.leader)
    if obs.protocol_name and group.protocol_name != obs.protocol_name:
        old_name = group.protocol_name
        group.protocol_name = obs.protocol_name
        _reconciled(model, f"protocol {old_name} -> {obs.protocol_name} ({what})")
    if group.state in (PREPARING, EMPTY) and group.members:
        force_state(model, group, COMPLETING, what)
    if obs.members and not model.book.confident:
        model.book.observed_full_join = True
        model.become_confident(f"observed the complete membership of generation {group.generation_id}")


def _reconcile_leave(
    model: Coordinator,
    call: ParkedCall,
    predicted: PredictedResponse,
    obs: ObservedResponse,
    observed: str,
) -> None:
    group = model.group
    if group is None:
        return
    req = call.request
    pairs: list[tuple[str, str]]
    if obs.member_errors:
        pairs = list(obs.member_errors)
    elif req.api_version < 3:
        pairs = [(req.leave_members[0].member_id if req.leave_members else (req.member_id or ""), observed)]
    else:
        return
    predicted_errors: dict[str, ResponseError] = dict(predicted.member_errors or ())
    if req.api_version < 3 and pairs:
        predicted_errors = {pairs[0][0]: predicted.error}
    for mid, err in pairs:
        if err == "NONE" and predicted_errors.get(mid) != "NONE" and mid in group.members:
            member = group.members[mid]
            _reconciled(model, f"member {mid} left in the broker", mid)
            model.remove_member_and_update_group(
                group, member, _because(f"LeaveGroup of {mid} accepted"), RemovalReason.RECONCILED
            )


# ------------------------------------------------------------------------------------------------
# answered by the broker, still parked in the model
# ------------------------------------------------------------------------------------------------
def reconcile_late_answer(model: Coordinator, call: ParkedCall, emit: bool = True) -> None:
    """The broker answered ``call`` (per the log) while the model still holds it. ``emit``: the model
    never answered it, so its Prediction is NO_RESPONSE (otherwise the Prediction exists already)."""
    req = call.request
    obs = req.observed
    if obs is None:
        return
    observed = _observed_error(obs)
    call.emitted = True
    if emit:
        group = model.group
        if group is not None and group.num_inferred and call.scored:
            # when the join phase ends depends on the rebalance timeout of members seen only through
            # their requests, which the model does not know: its "not answered yet" is a guess
            call.scored = False
            call.unscored_reason = INFERRED_TIMEOUT_REASON
        _emit_no_response(model, call)
    group = model.group
    if group is None:
        return
    holder = _holder(group, call)
    who = req.member_id or "<new member>"
    what = f"{req.api.name} of {who} answered {observed} by the broker at {obs.completion_ms}"
    _reconciled(model, f"late: {what}, the model had not answered", holder.member_id if holder else None)
    _apply_late_answer(model, call, obs, observed, holder, what)


def _emit_no_response(model: Coordinator, call: ParkedCall) -> None:
    model.append_prediction(call, PredictedResponse(error="NO_RESPONSE", completion_ms=None), reconciled=True)


def _apply_late_answer(
    model: Coordinator,
    call: ParkedCall,
    obs: ObservedResponse,
    observed: str | None,
    holder: ClassicGroupMember | None,
    what: str,
) -> None:
    req = call.request
    group = model.group
    if group is None:
        return
    if req.api is ApiKey.JOIN_GROUP:
        if observed == "NONE":
            if (
                group.state == PREPARING
                and obs.generation_id is not None
                and obs.generation_id == group.generation_id > 0
            ):
                # answered at the current generation: the broker never started the rebalance the model
                # did (e.g. a static member replaced in place) — no generation the log does not show
                back = group.previous_state if group.previous_state in (STABLE, COMPLETING) else STABLE
                force_state(model, group, back, what)
            elif group.state == PREPARING:
                complete_join_as_observed(
                    model, group, obs.generation_id if obs.generation_id is not None else -1, obs.leader
                )
            adopt_join_view(model, group, obs, what)
        elif holder is not None:
            if observed == "FENCED_INSTANCE_ID":
                drop_member(model, group, holder.member_id, what)
            else:
                model.remove_member_and_update_group(group, holder, _because(what), RemovalReason.RECONCILED)
    elif req.api is ApiKey.SYNC_GROUP:
        if observed == "NONE":
            if group.state == COMPLETING:
                assignment = {mid: m.assignment for mid, m in group.members.items()}
                if obs.assignment is not None and holder is not None:
                    assignment[holder.member_id] = obs.assignment
                model.set_and_propagate_assignment(group, assignment)
                group.transition_to(STABLE, _because(what), holder.member_id if holder else None)
                model.persist(group)
        elif observed == "REBALANCE_IN_PROGRESS":
            if group.state in (COMPLETING, STABLE):
                model.prepare_rebalance(group, _because(what))
        elif holder is not None:
            if holder.awaiting_sync is call:
                holder.awaiting_sync = None
            if observed == "UNKNOWN_MEMBER_ID":
                model.remove_member_and_update_group(group, holder, _because(what), RemovalReason.RECONCILED)
            elif observed == "FENCED_INSTANCE_ID":
                drop_member(model, group, holder.member_id, what)


def _holder(group: ClassicGroup, call: ParkedCall) -> ClassicGroupMember | None:
    for m in group.members.values():
        if m.awaiting_join is call or m.awaiting_sync is call:
            return m
    return None


# ------------------------------------------------------------------------------------------------
# the join phase and SyncGroup: the replay's decisions inside Kafka's handlers (engine hooks)
# ------------------------------------------------------------------------------------------------
def keeps_unjoined(member: ClassicGroupMember) -> bool:
    """A member known only from its requests (warm start) that did not rejoin is kept when the join phase
    completes: its rebalance timeout is unknown, so whether the broker evicted it is a guess; if it did,
    the broker's next answer to it (UNKNOWN_MEMBER_ID) removes it. That join's answers are then not
    scored (:func:`unsure_join`)."""
    return member.inferred


def unsure_join(group: ClassicGroup) -> bool:
    return any(m.inferred and m.awaiting_join is None for m in group.members.values())


def score_join_answer(group: ClassicGroup, call: ParkedCall, unsure: bool) -> None:
    """A join phase that kept unsure members, or whose member order (who leads) is unknown: its answers
    are not scored."""
    if (unsure or not group.order_known) and call.scored:
        call.scored = False
        call.unscored_reason = UNSURE_JOIN_REASON if unsure else ORDER_UNKNOWN_REASON


def check_generation_protocol(model: Coordinator, group: ClassicGroup, generation: int) -> None:
    """Members (some inferred) sharing no protocol the model knows: the model is no longer sure."""
    if group.members and group.protocol_name is None and not group.candidate_protocols():
        model.lose_confidence(
            f"no protocol shared by every member of {model.group_id} at generation {generation}"
        )


def learn_sync_protocol(group: ClassicGroup, request: GroupRequest) -> None:
    """A live group always has a protocol; none known means the model has not observed it (warm start
    from mid-life): learn it from the first SyncGroup that names it instead of rejecting it."""
    if not group.protocol_type and request.protocol_type:
        group.protocol_type = request.protocol_type
    if not group.protocol_name and request.protocol_name:
        group.protocol_name = request.protocol_name


def complete_join_as_observed(
    model: Coordinator, group: ClassicGroup, generation: int, leader: str | None
) -> None:
    """The broker answered a JoinGroup the model still holds: the join phase completes *as its answer
    says*, at that generation and leader, without evicting members the model did not see rejoin (the log
    may just lack their lines; a member the broker evicted is removed when the broker says
    UNKNOWN_MEMBER_ID to it)."""
    model.cancel_join_timer()
    if group.state == DEAD:
        return
    if leader and leader in group.members and group.leader_id != leader:
        old = group.leader_id
        group.leader_id = leader
        model.emit(
            EventKind.LEADER_CHANGED,
            member_id=leader,
            leader=leader,
            detail=old,
            cause="reconciled: the broker's join response",
            inferred=True,
        )
    model.start_next_generation(group, generation)
