"""Replay realities: track-mode reconciliation, warm start, external errors, member id adoption.

Histories come from a "broker": the model itself in predict mode driving well-behaved Java-consumer
clients (heartbeat every 3 s, commit every 5 s, rejoin on REBALANCE_IN_PROGRESS, sync after join). Its
answers become the ``observed`` responses of a request log; the model under test then replays that log
with lines dropped (a lossy log), from the middle (warm start) or with coordinator errors.

The agreement asserted here is self-consistency: the "broker" is the model, so the replay recovering its
answers says nothing about Kafka's (a semantic bug sits on both sides). Agreement with Kafka is tested in
``tests/differential`` (Kafka's own coordinator) and ``tests/realkafka`` (real brokers).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pytest

from rebalance_replay.transforms.coordinator.config import CoordinatorConfig
from rebalance_replay.transforms.coordinator.model import GroupCoordinatorModel
from rebalance_replay.transforms.coordinator.types import (
    EventKind,
    GroupRequest,
    GroupState,
    LeaveMember,
    ModelEvent,
    ObservedResponse,
    Prediction,
    Protocol,
    RemovalReason,
)
from rebalance_replay.transforms.kafka_protocol import ApiKey

G = "orders"
PROTOCOLS = (Protocol("range", b"sub"),)


@dataclass
class Consumer:
    client_id: str
    member_id: str = ""
    generation: int = -1
    state: str = "idle"  # idle | joining | syncing | stable | gone
    next_hb: int = 0
    next_commit: int = 0
    leader: bool = False
    members: tuple[str, ...] = ()


@dataclass
class History:
    requests: list[GroupRequest] = field(default_factory=list)
    predictions: dict[int, Prediction] = field(default_factory=dict)

    def log(self) -> list[GroupRequest]:
        """The request log: every request with the broker's answer as ``observed``."""
        out = []
        for i, req in enumerate(self.requests):
            r = self.predictions[i].response
            obs = ObservedResponse(
                error=r.error,
                generation_id=r.generation_id,
                leader=r.leader,
                member_id=r.member_id,
                protocol_type=r.protocol_type,
                protocol_name=r.protocol_name,
                members=r.members,
                member_errors=r.member_errors,
                partition_errors=r.partition_errors,
                assignment=r.assignment,
                completion_ms=r.completion_ms,
            )
            out.append(replace(req, observed=obs, ref=("log", i)))
        return out


def simulate(
    config: CoordinatorConfig,
    until: int,
    joins: dict[str, int],
    leaves: dict[str, int] | None = None,
    crashes: dict[str, int] | None = None,
) -> History:
    """Consumers join at ``joins[client]``, leave (LeaveGroup) at ``leaves`` or crash silently at
    ``crashes``; everyone behaves like the Java consumer in between."""
    leaves = leaves or {}
    crashes = crashes or {}
    broker = GroupCoordinatorModel(G, config)
    history = History()
    consumers = {c: Consumer(c) for c in joins}
    by_seq: dict[int, str] = {}
    t = 0

    def send(c: Consumer, req: GroupRequest) -> None:
        by_seq[len(history.requests)] = c.client_id
        history.requests.append(req)
        broker.handle(req)

    def join(c: Consumer) -> None:
        c.state = "joining"
        send(
            c,
            GroupRequest(
                ApiKey.JOIN_GROUP,
                7,
                G,
                t,
                member_id=c.member_id,
                client_id=c.client_id,
                session_timeout_ms=10_000,
                rebalance_timeout_ms=30_000,
                protocol_type="consumer",
                protocols=PROTOCOLS,
            ),
        )

    while t <= until:
        for c in consumers.values():
            if c.state == "gone":
                continue
            if t == crashes.get(c.client_id):
                c.state = "gone"
                continue
            if t == leaves.get(c.client_id) and c.member_id:
                c.state = "gone"
                send(
                    c,
                    GroupRequest(
                        ApiKey.LEAVE_GROUP,
                        3,
                        G,
                        t,
                        client_id=c.client_id,
                        leave_members=(LeaveMember(c.member_id),),
                    ),
                )
                continue
            if c.state == "idle" and t >= joins[c.client_id]:
                join(c)
            elif c.state == "stable" and t >= c.next_hb:
                c.next_hb = t + 3000
                send(
                    c,
                    GroupRequest(
                        ApiKey.HEARTBEAT,
                        4,
                        G,
                        t,
                        member_id=c.member_id,
                        client_id=c.client_id,
                        generation_id=c.generation,
                    ),
                )
            elif c.state == "stable" and t >= c.next_commit:
                c.next_commit = t + 5000
                send(
                    c,
                    GroupRequest(
                        ApiKey.OFFSET_COMMIT,
                        8,
                        G,
                        t,
                        member_id=c.member_id,
                        client_id=c.client_id,
                        generation_id=c.generation,
                        commit_partitions=(("orders", 0),),
                    ),
                )
        preds, _ = broker.drain()
        for p in preds:
            history.predictions[p.seq] = p
            c = consumers[by_seq[p.seq]]
            r = p.response
            api = p.request.api
            if c.state == "gone":
                continue
            if api is ApiKey.JOIN_GROUP:
                if r.error == "MEMBER_ID_REQUIRED":
                    c.member_id = r.member_id or ""
                    c.state = "idle"
                elif r.error == "NONE":
                    c.generation = r.generation_id or 0
                    c.leader = r.leader == c.member_id
                    c.members = r.members or ()
                    c.state = "syncing"
                    assignments = tuple((m, b"a:" + m.encode()) for m in c.members) if c.leader else ()
                    send(
                        c,
                        GroupRequest(
                            ApiKey.SYNC_GROUP,
                            3,
                            G,
                            t,
                            member_id=c.member_id,
                            client_id=c.client_id,
                            generation_id=c.generation,
                            assignments=assignments,
                        ),
                    )
                else:
                    c.member_id = ""
                    c.state = "idle"
            elif api is ApiKey.SYNC_GROUP:
                c.state = "stable" if r.error == "NONE" else "idle"
                c.next_hb = t + 3000
            elif r.error == "REBALANCE_IN_PROGRESS":
                c.state = "idle"
            elif r.error in ("UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION"):
                c.member_id = "" if r.error == "UNKNOWN_MEMBER_ID" else c.member_id
                c.state = "idle"
        # late answers (parked requests completing at timer deadlines) are seen next tick
        t += 100
        broker.advance_to(t)
    broker.advance_to(t)
    preds, _ = broker.drain()
    for p in preds:
        history.predictions[p.seq] = p
    assert len(history.predictions) == len(history.requests)
    return history


def replay(
    config: CoordinatorConfig, log: list[GroupRequest]
) -> tuple[list[Prediction], list[ModelEvent], GroupCoordinatorModel]:
    model = GroupCoordinatorModel(G, config)
    preds: list[Prediction] = []
    events: list[ModelEvent] = []
    for req in log:
        model.handle(req)
        p, e = model.drain()
        preds.extend(p)
        events.extend(e)
    model.advance_to(log[-1].arrival_ms + 60_000)
    p, e = model.drain()
    preds.extend(p)
    events.extend(e)
    return preds, events, model


def disagreements(preds: list[Prediction]) -> list[Prediction]:
    """Scored predictions whose error differs from the observed one."""
    bad = []
    for p in preds:
        obs = p.request.observed
        if not p.scored or obs is None:
            continue
        if p.response.error != obs.error:
            bad.append(p)
    return bad


BROKER = CoordinatorConfig(kafka_version="3.7", mode="predict", warm_start=False)
TRACK = CoordinatorConfig(kafka_version="3.7", mode="track", warm_start=False)
PREDICT = CoordinatorConfig(kafka_version="3.7", mode="predict", warm_start=False)


@pytest.fixture(scope="module")
def history() -> History:
    # a, b, c form the group; d joins later; b leaves; c crashes (session expiry)
    return simulate(
        BROKER,
        120_000,
        joins={"a": 0, "b": 100, "c": 200, "d": 40_000},
        leaves={"b": 70_000},
        crashes={"c": 90_000},
    )


def test_history_is_interesting(history: History) -> None:
    gens = {
        p.response.generation_id for p in history.predictions.values() if p.request.api is ApiKey.JOIN_GROUP
    }
    assert max(g for g in gens if g is not None) >= 4
    assert any(p.response.error == "REBALANCE_IN_PROGRESS" for p in history.predictions.values())


def test_faithful_log_replays_without_reconciliation(history: History) -> None:
    log = history.log()
    for config in (TRACK, PREDICT):
        preds, events, _ = replay(config, log)
        assert len(preds) == len(log)
        assert not disagreements(preds)
        assert not any(p.reconciled for p in preds)
        assert not any(e.kind is EventKind.RECONCILED for e in events)
        by_seq = {p.seq: p for p in preds}
        for i, req in enumerate(log):
            assert by_seq[i].response.completion_ms == req.observed.completion_ms  # type: ignore[union-attr]


@pytest.mark.parametrize("api", [ApiKey.LEAVE_GROUP, ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP])
def test_a_lost_line_does_not_cascade(history: History, api: ApiKey) -> None:
    """Drop one line of the given API in the middle of the log: track mode recovers within a few
    requests; predict mode (no reconciliation) keeps disagreeing for much longer."""
    log = history.log()
    candidates = [i for i, r in enumerate(log) if r.api is api and 30_000 < r.arrival_ms < 80_000]
    # the first such line whose loss matters (a follower's SyncGroup, say, may change nothing)
    lost = next(i for i in candidates if disagreements(replay(PREDICT, log[:i] + log[i + 1 :])[0]))
    lossy = log[:lost] + log[lost + 1 :]
    track_preds, track_events, _model = replay(TRACK, lossy)
    bad_track = disagreements(track_preds)
    assert len(bad_track) <= 6, [
        (p.request.api.name, p.request.arrival_ms, p.response.error) for p in bad_track
    ]
    assert any(p.reconciled for p in track_preds)
    assert any(e.kind is EventKind.RECONCILED for e in track_events)
    # the tail of the log agrees again
    tail = [p for p in track_preds if p.request.arrival_ms > 100_000]
    assert tail and not disagreements(tail)
    predict_preds, _, _ = replay(PREDICT, lossy)
    assert len(disagreements(predict_preds)) >= len(bad_track)


def test_reconciled_prediction_keeps_the_original_answer(history: History) -> None:
    log = history.log()
    lost = next(i for i, r in enumerate(log) if r.api is ApiKey.LEAVE_GROUP)
    lossy = log[:lost] + log[lost + 1 :]
    preds, _, _ = replay(TRACK, lossy)
    reconciled = [p for p in preds if p.reconciled]
    assert reconciled
    # the model's own (wrong) answer is what the Prediction carries
    assert any(p.response.error != p.request.observed.error for p in reconciled)  # type: ignore[union-attr]


@pytest.mark.parametrize("start_at", [30_000, 55_000, 95_000])
def test_warm_start_mid_life(history: History, start_at: int) -> None:
    """The log begins while the group is already running: early predictions are unscored warm-up,
    the model becomes confident, and scored predictions then agree with the broker."""
    log = [r for r in history.log() if r.arrival_ms >= start_at]
    config = replace(TRACK, warm_start=True)
    preds, events, model = replay(config, log)
    assert len(preds) == len(log)
    warm = [p for p in preds if not p.scored]
    assert warm and all((p.unscored_reason or "").startswith("warm-up") for p in warm)
    assert model.confident
    assert any(e.kind is EventKind.WARM_START and (e.detail or "").startswith("confident") for e in events)
    assert not disagreements(preds)
    assert sum(p.scored for p in preds) > len(preds) // 3


def test_warm_start_in_predict_mode_infers_then_predicts(history: History) -> None:
    log = [r for r in history.log() if r.arrival_ms >= 55_000]
    preds, _, model = replay(replace(PREDICT, warm_start=True), log)
    assert model.confident
    assert not disagreements(preds)


def test_leader_from_the_observed_response_is_adopted() -> None:
    """When the broker chose another leader than the model (a log that began mid-life, a line lost),
    the model adopts the broker's (and the follower's sync completes)."""
    a = "ca-0f0e1d2c-3b4a-4958-8776-655443322110"
    b = "cb-1f0e1d2c-3b4a-4958-8776-655443322111"

    def join(t: int, mid: str, client: str, obs: ObservedResponse) -> GroupRequest:
        return GroupRequest(
            ApiKey.JOIN_GROUP,
            4,
            G,
            t,
            member_id=mid,
            client_id=client,
            session_timeout_ms=10_000,
            rebalance_timeout_ms=30_000,
            protocol_type="consumer",
            protocols=PROTOCOLS,
            observed=obs,
        )

    log = [
        join(0, "", "ca", ObservedResponse(error="MEMBER_ID_REQUIRED", member_id=a, completion_ms=0)),
        join(1, "", "cb", ObservedResponse(error="MEMBER_ID_REQUIRED", member_id=b, completion_ms=1)),
        join(
            2,
            a,
            "ca",
            ObservedResponse(
                error="NONE", generation_id=1, leader=b, member_id=a, members=(), completion_ms=6002
            ),
        ),
        join(
            3,
            b,
            "cb",
            ObservedResponse(
                error="NONE", generation_id=1, leader=b, member_id=b, members=(a, b), completion_ms=6002
            ),
        ),
        GroupRequest(
            ApiKey.SYNC_GROUP,
            3,
            G,
            6010,
            member_id=b,
            generation_id=1,
            assignments=((a, b"x"), (b, b"y")),
            observed=ObservedResponse(error="NONE", completion_ms=6010),
        ),
        GroupRequest(
            ApiKey.SYNC_GROUP,
            3,
            G,
            6011,
            member_id=a,
            generation_id=1,
            observed=ObservedResponse(error="NONE", completion_ms=6011),
        ),
    ]
    preds, events, _ = replay(TRACK, log)
    by_seq = {p.seq: p for p in preds}
    # the model's own pick (the first member added)... corrected by the first of the broker's answers
    # it hands out (in Kafka's member order: b's before a's)
    assert by_seq[3].response.leader == by_seq[2].response.leader == a
    assert by_seq[3].reconciled
    assert by_seq[4].response.error == "NONE" and by_seq[4].state_after is GroupState.STABLE
    assert by_seq[5].response.assignment == b"x"
    assert any(e.kind is EventKind.LEADER_CHANGED and "reconciled" in (e.cause or "") for e in events)


def test_member_id_is_adopted_and_its_format_checked() -> None:
    log = [
        GroupRequest(
            ApiKey.JOIN_GROUP,
            5,
            G,
            0,
            member_id="",
            client_id="consumer-1",
            session_timeout_ms=10_000,
            rebalance_timeout_ms=30_000,
            protocol_type="consumer",
            protocols=PROTOCOLS,
            observed=ObservedResponse(error="MEMBER_ID_REQUIRED", member_id="consumer-1-not-a-uuid"),
        ),
        GroupRequest(
            ApiKey.JOIN_GROUP,
            5,
            G,
            1,
            member_id="",
            client_id="consumer-2",
            session_timeout_ms=10_000,
            rebalance_timeout_ms=30_000,
            protocol_type="consumer",
            protocols=PROTOCOLS,
            observed=ObservedResponse(
                error="MEMBER_ID_REQUIRED", member_id="consumer-2-6f1c3e1a-7a55-4a6e-9d1b-1c2d3e4f5a6b"
            ),
        ),
    ]
    preds, _, model = replay(PREDICT, log)
    assert preds[0].response.member_id == "consumer-1-not-a-uuid"
    assert preds[0].mismatch_kinds == ("member_id_format",)
    assert preds[1].mismatch_kinds == ()
    assert model.group is not None and set(model.group.pending_members) <= {
        "consumer-1-not-a-uuid",
        "consumer-2-6f1c3e1a-7a55-4a6e-9d1b-1c2d3e4f5a6b",
    }


def test_generated_ids_are_deterministic() -> None:
    req = GroupRequest(
        ApiKey.JOIN_GROUP,
        5,
        G,
        0,
        member_id="",
        client_id="consumer-1",
        session_timeout_ms=10_000,
        rebalance_timeout_ms=30_000,
        protocol_type="consumer",
        protocols=PROTOCOLS,
    )
    ids = []
    for _ in range(2):
        m = GroupCoordinatorModel(G, PREDICT)
        m.handle(req)
        ids.append(m.drain()[0][0].response.member_id)
    assert ids[0] == ids[1] and ids[0] is not None and ids[0].startswith("consumer-1-")


def test_not_coordinator_is_external_and_unloads_the_group(history: History) -> None:
    """NOT_COORDINATOR: not predicted (unscored), EXTERNAL_ERROR event; the in-memory rebalance state is
    lost and the group continues from its persisted metadata in warm-up until confident again."""
    log = history.log()
    at = next(i for i, r in enumerate(log) if r.api is ApiKey.HEARTBEAT and r.arrival_ms > 60_000)
    moved = replace(
        log[at], observed=ObservedResponse(error="NOT_COORDINATOR", completion_ms=log[at].arrival_ms)
    )
    preds, events, _model = replay(replace(TRACK, warm_start=True), [*log[:at], moved, *log[at + 1 :]])
    p = next(p for p in preds if p.seq == at)
    assert not p.scored and p.unscored_reason == "external error: NOT_COORDINATOR"
    assert any(e.kind is EventKind.EXTERNAL_ERROR for e in events)
    assert any(e.kind is EventKind.TRANSITION and e.state is GroupState.DEAD for e in events)
    assert any(e.kind is EventKind.WARM_START and "not confident" in (e.detail or "") for e in events)
    assert not disagreements(preds)
    assert len(preds) == len(log)


def test_other_external_errors_are_unscored_without_state_change(history: History) -> None:
    log = history.log()
    at = next(i for i, r in enumerate(log) if r.api is ApiKey.OFFSET_COMMIT)
    denied = replace(
        log[at], observed=ObservedResponse(partition_errors=(("orders", 0, "GROUP_AUTHORIZATION_FAILED"),))
    )
    preds, events, _ = replay(TRACK, [*log[:at], denied, *log[at + 1 :]])
    p = next(p for p in preds if p.seq == at)
    assert not p.scored and p.unscored_reason == "external error: GROUP_AUTHORIZATION_FAILED"
    assert not any(e.kind is EventKind.TRANSITION and e.state is GroupState.DEAD for e in events)


def test_late_answer_reconciliation() -> None:
    """The broker answered a parked JoinGroup while the model still waited for a member the broker
    no longer had (its LeaveGroup line is missing): Prediction NO_RESPONSE (the model had not answered),
    then the join phase is completed as the broker did."""
    history = simulate(BROKER, 40_000, joins={"a": 0, "b": 0}, leaves={"b": 20_000})
    log = history.log()
    lost = next(i for i, r in enumerate(log) if r.api is ApiKey.LEAVE_GROUP)
    preds, events, _ = replay(TRACK, log[:lost] + log[lost + 1 :])
    late = [p for p in preds if p.response.error == "NO_RESPONSE" and p.reconciled]
    assert late and late[0].response.completion_ms is None and late[0].scored
    after = [p for p in preds if p.seq > late[0].seq]
    assert after[0].request.api is ApiKey.SYNC_GROUP and after[0].response.error == "NONE"
    assert after[0].state_after is GroupState.STABLE and after[0].generation_after == 2
    assert not disagreements(after)
    assert any(e.kind is EventKind.RECONCILED and (e.detail or "").startswith("late:") for e in events)


def test_any_single_lost_line_costs_at_most_a_few_disagreements(history: History) -> None:
    """Drop each line of the log in turn: track mode never disagrees with the broker on more than a
    handful of requests (predict mode, without reconciliation, cascades)."""
    log = history.log()
    worst = 0
    for lost in range(len(log)):
        preds, _, _ = replay(TRACK, log[:lost] + log[lost + 1 :])
        worst = max(worst, len(disagreements(preds)))
    assert worst <= 5


# ------------------------------------------------------------------------------------------------
# late and stale answers, hand-written logs (the broker's answers follow docs/coordinator-semantics.md)
# ------------------------------------------------------------------------------------------------
def _join(t: int, member: str, instance: str, observed: ObservedResponse, version: int = 7) -> GroupRequest:
    return GroupRequest(
        ApiKey.JOIN_GROUP,
        version,
        G,
        t,
        member_id=member,
        group_instance_id=instance,
        client_id="client-" + instance,
        session_timeout_ms=10_000,
        rebalance_timeout_ms=30_000,
        protocol_type="consumer",
        protocols=PROTOCOLS,
        observed=observed,
    )


def _sync(
    t: int,
    member: str,
    instance: str,
    observed: ObservedResponse,
    assignments: tuple[tuple[str, bytes | None], ...] = (),
) -> GroupRequest:
    return GroupRequest(
        ApiKey.SYNC_GROUP,
        5,
        G,
        t,
        member_id=member,
        group_instance_id=instance,
        client_id="client-" + instance,
        generation_id=1,
        protocol_type="consumer",
        protocol_name="range",
        assignments=assignments,
        observed=observed,
    )


def _heartbeat(t: int, member: str, instance: str, generation: int, error: str) -> GroupRequest:
    return GroupRequest(
        ApiKey.HEARTBEAT,
        4,
        G,
        t,
        member_id=member,
        group_instance_id=instance,
        client_id="client-" + instance,
        generation_id=generation,
        observed=ObservedResponse(error=error, completion_ms=t),
    )


def _replay_until(log: list[GroupRequest], until: int) -> tuple[list[Prediction], list[ModelEvent]]:
    model = GroupCoordinatorModel(G, TRACK)
    preds: list[Prediction] = []
    events: list[ModelEvent] = []
    for req in log:
        model.advance_to(req.arrival_ms)
        model.handle(req)
        p, e = model.drain()
        preds.extend(p)
        events.extend(e)
    model.advance_to(until)
    p, e = model.drain()
    return preds + p, events + e


# static members ia-1 (leader) and ib-1 form generation 1 (initial delay 3000 ms, extended once: 6000)
A, B = "ia-1", "ib-1"
GENERATION_1 = [
    _join(
        0,
        "",
        "ia",
        ObservedResponse("NONE", 1, A, A, protocol_name="range", members=(A, B), completion_ms=6000),
    ),
    _join(
        0, "", "ib", ObservedResponse("NONE", 1, A, B, protocol_name="range", members=(), completion_ms=6000)
    ),
    _sync(
        6000, A, "ia", ObservedResponse("NONE", assignment=b"x", completion_ms=6000), ((A, b"x"), (B, b"y"))
    ),
    _sync(6000, B, "ib", ObservedResponse("NONE", assignment=b"y", completion_ms=6000)),
]


def test_a_late_fenced_join_answer_removes_the_fenced_member() -> None:
    """§4.6: a static member restarts (new id ib-2) while its old id's JoinGroup is parked: the broker
    answers the old one FENCED_INSTANCE_ID. The log lost the restarted member's JoinGroup, so the model
    still holds the old join when the broker's answer is due: it must then drop ib-1 (not rebalance
    again: the broker already did), and learn ib-2 from the leader's member list."""
    c, b2 = "ic-1", "ib-2"
    log = [
        *GENERATION_1,
        _join(7000, "", "ic", ObservedResponse("NONE", 2, A, c, protocol_name="range", completion_ms=7400)),
        _join(7200, B, "ib", ObservedResponse("FENCED_INSTANCE_ID", member_id=B, completion_ms=7300)),
        # lost: the restarted ib's JoinGroup at 7300, answered NONE (ib-2) at 7400
        _join(
            7400,
            A,
            "ia",
            ObservedResponse("NONE", 2, A, A, protocol_name="range", members=(A, c, b2), completion_ms=7400),
        ),
    ]
    preds, events = _replay_until(log, 8000)
    fenced = next(p for p in preds if p.seq == 5)
    assert fenced.response.error == "NO_RESPONSE" and fenced.reconciled
    removed = [e for e in events if e.kind is EventKind.MEMBER_REMOVED]
    assert [(e.member_id, e.removal_reason, e.inferred) for e in removed] == [
        (B, RemovalReason.RECONCILED, True)
    ]
    assert 7300 <= removed[0].time_ms < 7400
    assert (
        removed[0].cause == f"reconciled: JOIN_GROUP of {B} answered FENCED_INSTANCE_ID by the broker at 7300"
    )
    # no rebalance of the model's own: generation 2 completes once, with the broker's members
    assert [e.generation_id for e in events if e.kind is EventKind.JOIN_COMPLETED] == [1, 2]
    assert not disagreements([p for p in preds if p.seq != 5])


def test_a_late_sync_answer_completes_the_assignment_for_the_member_it_answered() -> None:
    """The leader's SyncGroup line is lost: the follower's SyncGroup, parked in CompletingRebalance, is
    answered NONE by the broker. When the answer is due the model moves to Stable (the broker had the
    assignment) and the transition is the follower's: the member whose request caused it (docs/tables.md,
    the events table's member_id)."""
    history = simulate(BROKER, 20_000, joins={"a": 0, "b": 0})
    log = history.log()
    leader_sync = next(i for i, r in enumerate(log) if r.api is ApiKey.SYNC_GROUP and r.assignments)
    follower_sync = next(r for r in log if r.api is ApiKey.SYNC_GROUP and not r.assignments)
    assert follower_sync.observed is not None and follower_sync.observed.error == "NONE"
    _, events, _ = replay(TRACK, log[:leader_sync] + log[leader_sync + 1 :])
    stable = [e for e in events if e.kind is EventKind.TRANSITION and e.state is GroupState.STABLE]
    assert stable and stable[0].from_state is GroupState.COMPLETING_REBALANCE
    assert stable[0].member_id == follower_sync.member_id
    assert stable[0].generation_id == 1


def test_rebalance_in_progress_for_generation_0_is_stale_in_generation_1() -> None:
    """§8.1: a heartbeat is answered REBALANCE_IN_PROGRESS only when its generation is the group's (a
    wrong one gets ILLEGAL_GENERATION first). Generations start at 0 (§1), so that answer to a generation-0
    heartbeat speaks of the group before generation 1 formed: in Stable generation 1 it is stale and
    must not start a rebalance (generation 0 is a generation, not "none" like -1)."""
    log = [
        *GENERATION_1,
        _heartbeat(6500, A, "ia", 0, "REBALANCE_IN_PROGRESS"),
        _heartbeat(7000, A, "ia", 1, "NONE"),
        _heartbeat(7000, B, "ib", 1, "NONE"),
    ]
    preds, events = _replay_until(log, 8000)
    after = [e for e in events if e.time_ms >= 6500]
    assert not [e for e in after if e.kind in (EventKind.TRANSITION, EventKind.RECONCILED)]
    assert [(p.seq, p.response.error, p.reconciled) for p in preds if p.seq >= 5] == [
        (5, "NONE", False),
        (6, "NONE", False),
    ]
