"""Hypothesis property tests over random request sequences.

A driver plays a handful of clients (some static) that join, sync, heartbeat, commit and leave with
the member ids and generations the model gave them, at random times, against every modelled
version/implementation. Properties: generation never decreases, the leader of a CompletingRebalance
or Stable group is a member, no id is both pending and a member, only legal transitions, exactly one
Prediction per request, determinism, split/serialise equivalence, hot path ≡ general path, and track
mode (fed with another version's answers) keeps every invariant.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rebalance_replay.transforms.coordinator.config import CoordinatorConfig
from rebalance_replay.transforms.coordinator.model import GroupCoordinatorModel
from rebalance_replay.transforms.coordinator.state import VALID_PREVIOUS_STATES
from rebalance_replay.transforms.coordinator.types import (
    EventKind,
    GroupRequest,
    GroupState,
    LeaveMember,
    ModelEvent,
    ObservedResponse,
    Prediction,
    Protocol,
)
from rebalance_replay.transforms.kafka_protocol import ApiKey

GROUP = "g"
VERSIONS = [
    ("2.2", None),
    ("2.3.0", None),
    ("2.4", None),
    ("2.5", None),
    ("2.6.0", None),
    ("2.8.0", None),
    ("2.8", None),
    ("3.0", None),
    ("3.3.0", None),
    ("3.7", "scala"),
    ("3.7", "java"),
    ("4.0", None),
]
PROTOCOL_SETS = [
    (Protocol("range", b"r"),),
    (Protocol("range", b"r2"),),
    (Protocol("roundrobin", b"x"), Protocol("range", b"r")),
    (Protocol("roundrobin", b"x"),),
]


@dataclass
class Client:
    client_id: str
    instance: str | None
    member_id: str = ""
    generation: int = -1
    pending: bool = False  # holds a MEMBER_ID_REQUIRED id, has not joined with it yet
    waiting: bool = False  # its JoinGroup/SyncGroup is parked


@dataclass
class Driver:
    """Turns abstract actions into requests using what the model answered so far."""

    clients: list[Client]
    t: int = 0
    requests: list[GroupRequest] = field(default_factory=list)
    owner: dict[int, int] = field(default_factory=dict)  # request index -> client index

    def learn(self, preds: list[Prediction]) -> None:
        for p in preds:
            idx = self.owner.get(p.seq)
            if idx is None:
                continue
            c = self.clients[idx]
            r = p.response
            api = p.request.api
            if api in (ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP):
                c.waiting = False
            if api is ApiKey.JOIN_GROUP:
                c.pending = False
                if r.error == "MEMBER_ID_REQUIRED" and r.member_id:
                    c.member_id = r.member_id
                    c.pending = True
                elif r.error == "NONE":
                    c.member_id = r.member_id or c.member_id
                    c.generation = r.generation_id if r.generation_id is not None else c.generation
                elif r.error in ("UNKNOWN_MEMBER_ID", "FENCED_INSTANCE_ID", "GROUP_MAX_SIZE_REACHED"):
                    c.member_id = ""
            elif (
                r.error in ("UNKNOWN_MEMBER_ID", "FENCED_INSTANCE_ID") and api is not ApiKey.LEAVE_GROUP
            ) or (api is ApiKey.LEAVE_GROUP and r.error == "NONE"):
                c.member_id = ""

    def build(self, action: tuple[Any, ...], seq: int) -> GroupRequest | None:
        kind, ci, dt, a, b = action
        self.t += dt
        if kind in ("sync", "heartbeat", "commit", "leave"):
            known = [i for i, cl in enumerate(self.clients) if cl.member_id]
            if known and a % 6:
                ci = known[ci % len(known)]
        c = self.clients[ci]
        t = self.t
        if kind == "advance" or (c.waiting and a % 5):
            return None  # a client waits for its parked request (but sometimes re-sends)
        if (c.pending or (not c.member_id and a % 3)) and kind in ("sync", "heartbeat", "commit"):
            kind = "join"  # a member with a MEMBER_ID_REQUIRED id (or none yet) joins
        if kind in ("join", "sync"):
            c.waiting = True
        if kind == "join":
            version = (3, 4, 5, 7, 9)[a % 5]
            return self._add(
                ci,
                GroupRequest(
                    ApiKey.JOIN_GROUP,
                    version,
                    GROUP,
                    t,
                    member_id=c.member_id,
                    group_instance_id=c.instance if version >= 5 else None,
                    client_id=c.client_id,
                    session_timeout_ms=(45000, 10000, 45000, 6000, 45000, 3000)[b % 6],
                    rebalance_timeout_ms=(6000, 30000)[b % 2],
                    protocol_type="consumer",
                    protocols=PROTOCOL_SETS[(a + b) % len(PROTOCOL_SETS)],
                    reason="r" if version >= 8 else None,
                ),
                seq,
            )
        if kind == "sync":
            assignments = tuple((cl.member_id, b"a") for cl in self.clients if cl.member_id) if a % 2 else ()
            version = (3, 4, 5)[b % 3]
            return self._add(
                ci,
                GroupRequest(
                    ApiKey.SYNC_GROUP,
                    version,
                    GROUP,
                    t,
                    member_id=c.member_id,
                    group_instance_id=c.instance,
                    generation_id=c.generation + (1 if a % 7 == 6 else 0),
                    protocol_type="consumer" if version >= 5 else None,
                    protocol_name=("range" if b % 4 else "roundrobin") if version >= 5 else None,
                    assignments=assignments,
                ),
                seq,
            )
        if kind == "heartbeat":
            return self._add(
                ci,
                GroupRequest(
                    ApiKey.HEARTBEAT,
                    3,
                    GROUP,
                    t,
                    member_id=c.member_id,
                    group_instance_id=c.instance,
                    generation_id=c.generation - (1 if a % 9 == 8 else 0),
                ),
                seq,
            )
        if kind == "commit":
            return self._add(
                ci,
                GroupRequest(
                    ApiKey.OFFSET_COMMIT,
                    (7, 8, 9)[b % 3],
                    GROUP,
                    t,
                    member_id=c.member_id if a % 5 else "",
                    group_instance_id=c.instance if a % 3 else None,
                    generation_id=c.generation if a % 5 else -1,
                    commit_partitions=(("t", 0),),
                ),
                seq,
            )
        # leave
        version = (1, 3, 5)[a % 3]
        mid = c.member_id if (b % 4 or c.instance is None) else ""
        return self._add(
            ci,
            GroupRequest(
                ApiKey.LEAVE_GROUP,
                version,
                GROUP,
                t,
                member_id=mid if version < 3 else None,
                leave_members=(LeaveMember(mid, c.instance if version >= 3 else None, "bye"),),
            ),
            seq,
        )

    def _add(self, ci: int, req: GroupRequest, seq: int) -> GroupRequest:
        self.owner[seq] = ci
        self.requests.append(req)
        return req


ACTIONS = st.tuples(
    st.sampled_from(
        ["join"] * 3 + ["sync"] * 3 + ["heartbeat"] * 3 + ["commit", "leave", "advance", "advance"]
    ),
    st.integers(0, 4),
    st.sampled_from([0, 1, 5, 20, 100, 100, 300, 500, 500, 1000, 1000, 2000, 3500, 8000, 50_000]),
    st.integers(0, 20),
    st.integers(0, 20),
)


@st.composite
def scenarios(draw: Any) -> tuple[CoordinatorConfig, list[tuple[Any, ...]], int]:
    version, impl = draw(st.sampled_from(VERSIONS))
    config = CoordinatorConfig(
        kafka_version=version,
        implementation=impl,  # type: ignore[arg-type]
        group_initial_rebalance_delay_ms=draw(st.sampled_from([0, 100, 3000])),
        group_max_size=draw(st.sampled_from([2, 3, 100])),
        timer_rule=draw(st.sampled_from(["strict", "inclusive"])),
        mode="predict",
        warm_start=False,
        offsets_retention_check_interval_ms=draw(st.sampled_from([60_000, 600_000])),
    )
    actions = draw(st.lists(ACTIONS, min_size=1, max_size=80))
    n_static = draw(st.integers(0, 3))
    return config, actions, n_static


def make_clients(n_static: int) -> list[Client]:
    return [Client(f"client-{i}", f"instance-{i}" if i < n_static else None) for i in range(5)]


class InvariantError(AssertionError):
    pass


def check_group(model: GroupCoordinatorModel) -> None:
    g = model.group
    if g is None:
        return
    overlap = set(g.pending_members) & set(g.members)
    if overlap:
        raise InvariantError(f"both pending and joined: {overlap}")
    if g.state in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE) and g.leader_id not in g.members:
        raise InvariantError(f"leader {g.leader_id} is not a member in {g.state.value}")
    if g.num_awaiting_join != sum(1 for m in g.members.values() if m.awaiting_join is not None):
        raise InvariantError("numMembersAwaitingJoin out of sync")
    for iid, mid in g.static_members.items():
        if mid not in g.members or g.members[mid].group_instance_id != iid:
            raise InvariantError(f"static map {iid} -> {mid} is stale")


def check_events(events: list[ModelEvent]) -> None:
    last_gen: int | None = None
    for e in events:
        if e.kind is EventKind.TRANSITION:
            assert e.from_state is not None
            if e.from_state not in VALID_PREVIOUS_STATES[e.state]:
                raise InvariantError(f"illegal transition {e.from_state} -> {e.state}")
        if e.state is GroupState.DEAD:
            last_gen = None  # the group is gone; a new one starts at generation 0
            continue
        if last_gen is not None and e.generation_id < last_gen:
            raise InvariantError(f"generation went back from {last_gen} to {e.generation_id}")
        last_gen = e.generation_id


def drive(
    config: CoordinatorConfig, actions: list[tuple[Any, ...]], n_static: int
) -> tuple[list[GroupRequest], list[Prediction], list[ModelEvent], bytes]:
    """Run the driver against a model, checking invariants after every step."""
    model = GroupCoordinatorModel(GROUP, config)
    driver = Driver(make_clients(n_static))
    preds: list[Prediction] = []
    events: list[ModelEvent] = []
    for action in actions:
        req = driver.build(action, len(driver.requests))
        if req is None:
            model.advance_to(driver.t)
        else:
            model.handle(req)
        p, e = model.drain()
        driver.learn(p)
        preds.extend(p)
        events.extend(e)
        check_group(model)
    model.advance_to(driver.t + 10 * 24 * 3600 * 1000)
    p, e = model.drain()
    preds.extend(p)
    events.extend(e)
    check_group(model)
    return driver.requests, preds, events, model.to_bytes()


def replay(
    config: CoordinatorConfig, requests: list[GroupRequest], split: int | None = None, fast: bool = True
) -> tuple[list[Prediction], list[ModelEvent], bytes]:
    model = GroupCoordinatorModel(GROUP, config)
    model._fast_path = fast  # type: ignore[attr-defined]
    preds: list[Prediction] = []
    events: list[ModelEvent] = []
    end = (requests[-1].arrival_ms if requests else 0) + 10 * 24 * 3600 * 1000
    for i, req in enumerate(requests):
        if split is not None and i == split:
            model.advance_to(req.arrival_ms)
            p, e = model.drain()
            preds.extend(p)
            events.extend(e)
            model = GroupCoordinatorModel.from_bytes(model.to_bytes(), config)
            model._fast_path = fast  # type: ignore[attr-defined]
        model.handle(req)
        p, e = model.drain()
        preds.extend(p)
        events.extend(e)
    model.advance_to(end)
    p, e = model.drain()
    preds.extend(p)
    events.extend(e)
    return preds, events, model.to_bytes()


PROPERTY_SETTINGS = settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


@PROPERTY_SETTINGS
@given(scenarios())
def test_invariants_and_one_prediction_per_request(
    scenario: tuple[CoordinatorConfig, list[Any], int],
) -> None:
    config, actions, n_static = scenario
    requests, preds, events, _ = drive(config, actions, n_static)
    seqs = sorted(p.seq for p in preds)
    assert seqs == list(range(len(requests))), "every request gets exactly one Prediction"
    check_events(events)
    for p in preds:
        if p.response.completion_ms is not None:
            assert p.response.completion_ms >= p.request.arrival_ms


@PROPERTY_SETTINGS
@given(scenarios(), st.integers(0, 1000))
def test_determinism_and_split_equivalence(
    scenario: tuple[CoordinatorConfig, list[Any], int], cut: int
) -> None:
    config, actions, n_static = scenario
    requests, _, _, _ = drive(config, actions, n_static)
    once = replay(config, requests)
    again = replay(config, requests)
    assert once == again, "identical input gives identical output"
    if requests:
        split = cut % (len(requests) + 1)
        assert replay(config, requests, split=split) == once, f"split at {split} differs"


@PROPERTY_SETTINGS
@given(scenarios())
def test_hot_path_matches_general_path(scenario: tuple[CoordinatorConfig, list[Any], int]) -> None:
    config, actions, n_static = scenario
    requests, _, _, _ = drive(config, actions, n_static)
    assert replay(config, requests, fast=True) == replay(config, requests, fast=False)


def test_the_hot_path_forgets_a_past_silence_as_the_general_path_does() -> None:
    """Found by the property above, run with 40,000 examples: an 8 s silence in the log (longer than the
    smallest session timeout, 6 s) is watched by the log-gap rule until as long again has passed. The
    general path forgot it at the next answer past that window (the heartbeat at 16,001); the hot path,
    which answers heartbeats without that step, kept it: the same answers and events, but another saved
    state (and so another state after a resume). Both now forget it at the first request past the window."""
    config = CoordinatorConfig(kafka_version="2.2", group_initial_rebalance_delay_ms=0, group_max_size=2)
    actions = [("join", 0, 0, 0, 0)] * 8 + [
        ("join", 0, 8000, 0, 0),
        ("join", 0, 1, 0, 0),
        ("join", 0, 500, 0, 0),
        ("join", 0, 2000, 0, 0),
        ("join", 0, 3500, 0, 0),
        ("sync", 0, 1000, 0, 0),
        ("heartbeat", 0, 1000, 0, 0),
    ]
    requests, _, _, _ = drive(config, actions, 0)
    assert [r.arrival_ms for r in requests[7:]] == [0, 8000, 8001, 8501, 10501, 14001, 15001, 16001]
    fast, general = replay(config, requests, fast=True), replay(config, requests, fast=False)
    assert fast == general
    assert GroupCoordinatorModel.from_bytes(fast[2], config)._book.silence_ms is None


def with_answers(requests: list[Any], preds: list[Prediction]) -> list[Any]:
    """The requests as a broker's log shows them: each carrying the answer the model gave it."""
    by_seq = {p.seq: p.response for p in preds}
    observed = []
    for i, req in enumerate(requests):
        r = by_seq[i]
        obs = ObservedResponse(
            error=None if r.error == "NO_RESPONSE" else r.error,
            generation_id=r.generation_id,
            leader=r.leader,
            member_id=r.member_id,
            protocol_name=r.protocol_name,
            members=r.members,
            member_errors=r.member_errors,
            partition_errors=r.partition_errors,
            completion_ms=r.completion_ms,
        )
        observed.append(replace(req, observed=obs))
    return observed


def sent_while_its_join_was_parked(requests: list[Any], preds: list[Prediction]) -> bool:
    """Whether a member's SyncGroup, Heartbeat or OffsetCommit arrived at the very ms its JoinGroup was
    answered and the model, taking the request first, answered the JoinGroup after it. Real clients never
    send those while their JoinGroup is parked (the driver may); track mode takes such a request as proof
    that the broker had answered the JoinGroup first (the causality rule, ``_answered_by_causality``): the
    other order of one ms, so a reconciliation even against the model's own answers."""
    position = {p.seq: k for k, p in enumerate(preds)}
    answers = {p.seq: p.response for p in preds}
    later_apis = (ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT, ApiKey.OFFSET_COMMIT)
    for j, join in enumerate(requests):
        done = answers[j].completion_ms
        if join.api is not ApiKey.JOIN_GROUP or done is None:
            continue
        member = answers[j].member_id or join.member_id
        if any(
            r.member_id == member
            and r.api in later_apis
            and r.arrival_ms == done
            and position[i] < position[j]
            for i, r in enumerate(requests[j + 1 :], start=j + 1)
        ):
            return True
    return False


@PROPERTY_SETTINGS
@given(scenarios(), st.sampled_from(VERSIONS))
def test_track_mode_with_another_versions_answers(
    scenario: tuple[CoordinatorConfig, list[Any], int], other: tuple[str, str | None]
) -> None:
    """Feed model B (track mode) the answers model A gave: B reconciles and keeps every invariant."""
    config, actions, n_static = scenario
    requests, preds, _, _ = drive(config, actions, n_static)
    observed = with_answers(requests, preds)
    track = replace(config, kafka_version=other[0], implementation=other[1], mode="track")  # type: ignore[arg-type]
    model = GroupCoordinatorModel(GROUP, track)
    out: list[Prediction] = []
    events: list[ModelEvent] = []
    for req in observed:
        model.handle(req)
        p, e = model.drain()
        out.extend(p)
        events.extend(e)
        check_group(model)
    model.advance_to((observed[-1].arrival_ms if observed else 0) + 10 * 24 * 3600 * 1000)
    p, e = model.drain()
    out.extend(p)
    events.extend(e)
    assert sorted(p.seq for p in out) == list(range(len(observed)))
    for e in events:
        if e.kind is EventKind.TRANSITION:
            assert e.from_state is not None and e.from_state in VALID_PREVIOUS_STATES[e.state]
    if (other[0], other[1]) == (config.kafka_version, config.implementation) and not (
        sent_while_its_join_was_parked(requests, preds)
    ):
        assert not any(p.reconciled for p in out), "a model agreeing with itself never reconciles"
    # warm start from the middle of the log keeps every invariant too
    suffix = observed[len(observed) // 3 :]
    warm = GroupCoordinatorModel(GROUP, replace(track, warm_start=True))
    warm_preds: list[Prediction] = []
    for req in suffix:
        warm.handle(req)
        warm_preds.extend(warm.drain()[0])
        check_group(warm)
    warm.advance_to((suffix[-1].arrival_ms if suffix else 0) + 10 * 24 * 3600 * 1000)
    warm_preds.extend(warm.drain()[0])
    assert sorted(p.seq for p in warm_preds) == list(range(len(suffix)))
    # track mode is deterministic and split/serialise-equivalent too (parked requests, observed timers)
    once = replay(track, observed)
    assert replay(track, observed) == once
    if observed:
        split = (len(observed) * 2) // 3
        assert replay(track, observed, split=split) == once


def test_a_sync_sent_while_its_join_was_parked_at_the_ms_the_join_phase_ended() -> None:
    """Found by the property above with 40,000 examples: a member's JoinGroup waits in the initial delay
    (due 3,000) and the same member sends a SyncGroup (generation -1) at 3,000 — which no real client does.
    The model (timer rule strict) takes the SyncGroup first (ILLEGAL_GENERATION) and completes the join at
    3,000 after it. Fed those answers, track mode takes the SyncGroup as proof that the broker had answered
    the JoinGroup before it (completion 3,000 at or before the SyncGroup's arrival): one reconciliation,
    the other order of one ms. Of the property's example only this case is exempt from "a model agreeing
    with itself never reconciles"."""
    config = CoordinatorConfig(
        kafka_version="2.8.0",
        group_initial_rebalance_delay_ms=3000,
        group_max_size=2,
        timer_rule="strict",
        mode="predict",
        warm_start=False,
    )
    actions = [
        ("join", 3, 0, 1, 0),
        ("sync", 0, 0, 0, 0),
        ("join", 3, 0, 0, 0),
        ("sync", 0, 500, 0, 0),
        ("sync", 0, 1000, 0, 0),
        ("sync", 0, 1000, 5, 0),
        ("sync", 0, 500, 1, 0),
    ]
    requests, preds, _, _ = drive(config, actions, 0)
    join, sync = requests[5], requests[6]
    assert (join.api, sync.api, sync.member_id, sync.arrival_ms) == (
        ApiKey.JOIN_GROUP,
        ApiKey.SYNC_GROUP,
        join.member_id,
        3000,
    )
    answers = {p.seq: p for p in preds}
    assert answers[5].response.completion_ms == 3000 and answers[6].response.error == "ILLEGAL_GENERATION"
    assert sent_while_its_join_was_parked(requests, preds)
    model = GroupCoordinatorModel(GROUP, replace(config, mode="track"))
    reconciled = []
    for req in with_answers(requests, preds):
        model.handle(req)
        reconciled += [p.seq for p in model.drain()[0] if p.reconciled]
    assert reconciled == [5]
    # the same log with the SyncGroup one ms later: the model's own order, nothing to reconcile
    later = [*requests[:6], replace(sync, arrival_ms=3001)]
    later_preds, _, _ = replay(config, later)
    assert not sent_while_its_join_was_parked(later, later_preds)
    model = GroupCoordinatorModel(GROUP, replace(config, mode="track"))
    for req in with_answers(later, later_preds):
        model.handle(req)
        assert not any(p.reconciled for p in model.drain()[0])


def warm_start_answers_the_static_rejoin(
    config: CoordinatorConfig,
    observed: list[Any],
    after: Callable[[Any, GroupCoordinatorModel], None] | None = None,
) -> None:
    """A 2.3.0 model in track mode warm-started from the third of ``observed`` (a 2.8 broker's answers):
    every invariant after each request (and ``after``'s checks), each request answered once, and the last
    one, a static member's rejoin, answered as the broker did."""
    warm = GroupCoordinatorModel(GROUP, replace(config, kafka_version="2.3.0", mode="track", warm_start=True))
    suffix = observed[2:]
    answered = []
    for req in suffix:
        warm.handle(req)
        answered.extend(warm.drain()[0])
        check_group(warm)
        if after is not None:
            after(req, warm)
    assert sorted(p.seq for p in answered) == list(range(len(suffix)))
    join = answered[-1]
    assert (join.request.api, join.response.error, join.response.member_id) == (
        ApiKey.JOIN_GROUP,
        "NONE",
        suffix[-1].observed.member_id if suffix[-1].observed else None,
    )


def test_warm_start_on_a_heartbeat_of_an_old_generation_then_a_static_rejoin() -> None:
    """Found by the property above under CI's random seed (a 2.8 broker's answers, a 2.3.0 model in track
    mode, warm start from the third request): a Heartbeat answered ILLEGAL_GENERATION after the model had
    emptied the group made the model adopt its member but leave the group Empty, and the static member's
    rejoin that followed raised IllegalStateTransition. The broker checks the generation only of a member
    it has, so its group is not Empty: the model now puts it in Stable and knows it is guessing."""
    config = CoordinatorConfig(kafka_version="2.8", group_initial_rebalance_delay_ms=0, group_max_size=2)
    actions = [
        ("join", 0, 0, 0, 0),
        ("join", 0, 0, 0, 0),
        ("join", 0, 0, 0, 0),
        ("join", 0, 0, 0, 0),
        ("join", 0, 0, 0, 3),
        ("heartbeat", 0, 0, 8, 0),
        ("join", 0, 8000, 0, 0),
        ("join", 0, 0, 2, 0),
    ]
    requests, preds, _, _ = drive(config, actions, 1)
    observed = with_answers(requests, preds)
    heartbeat = observed[5]
    assert heartbeat.api is ApiKey.HEARTBEAT and heartbeat.observed is not None
    assert heartbeat.observed.error == "ILLEGAL_GENERATION"

    def after(req: Any, warm: GroupCoordinatorModel) -> None:
        if req is heartbeat:
            assert warm.group is not None and warm.group.state is GroupState.STABLE
            assert not warm.book.confident

    warm_start_answers_the_static_rejoin(config, observed, after)


def test_warm_start_on_a_commit_refused_mid_rebalance_then_a_static_rejoin() -> None:
    """Found by the property above (a 2.8 broker's answers, a 2.3.0 model in track mode, warm start from
    the commit): an OffsetCommit answered REBALANCE_IN_PROGRESS made the model adopt its member and
    generation but left the group Empty — a group with a member, which Kafka never has — and the static
    member's rejoin that followed raised IllegalStateTransition. Commits are refused so only in
    CompletingRebalance, so that is where the model now puts the group."""
    config = CoordinatorConfig(kafka_version="2.8", group_initial_rebalance_delay_ms=0, group_max_size=2)
    actions = [
        ("join", 0, 0, 0, 0),
        ("join", 2, 0, 0, 0),
        ("join", 0, 8000, 0, 0),
        ("commit", 0, 0, 1, 0),
        ("sync", 0, 8000, 1, 0),
        ("join", 2, 0, 2, 0),
    ]
    requests, preds, _, _ = drive(config, actions, 3)
    observed = with_answers(requests, preds)
    warm_start_answers_the_static_rejoin(config, observed)
