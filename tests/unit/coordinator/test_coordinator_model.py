"""The model's public surface: configuration and version parsing, ordering rules, serialisation,
events, the state machine table, placement, loading, warm-up confidence by time window."""

from __future__ import annotations

import copy
import zlib

import pytest

from rebalance_replay.transforms.coordinator.config import CoordinatorConfig, parse_kafka_version
from rebalance_replay.transforms.coordinator.model import GroupCoordinatorModel
from rebalance_replay.transforms.coordinator.placement import coordinator_partition, java_string_hash
from rebalance_replay.transforms.coordinator.state import IllegalStateTransition, check_transition
from rebalance_replay.transforms.coordinator.timers import SESSION_PRIORITY, TimerQueue
from rebalance_replay.transforms.coordinator.types import (
    EventKind,
    GroupRequest,
    GroupState,
    ObservedResponse,
    Protocol,
)
from rebalance_replay.transforms.kafka_protocol import ApiKey
from tests.unit.coordinator.scenario import C, Case, E, End, H, J, S, default_config, run_case

G = "group"
PROTOCOLS = (Protocol("range", b"m"),)


def join(t: int, member: str = "", v: int = 5, **kw: object) -> GroupRequest:
    return GroupRequest(
        ApiKey.JOIN_GROUP,
        v,
        G,
        t,
        member_id=member,
        client_id="c",
        session_timeout_ms=10_000,
        rebalance_timeout_ms=30_000,
        protocol_type="consumer",
        protocols=PROTOCOLS,
        **kw,
    )  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------ config
@pytest.mark.parametrize(
    ("text", "expected"),
    [("2.2", (2, 2, 99)), ("3.3.1", (3, 3, 1)), ("4.0.0-SNAPSHOT", (4, 0, 0)), (" 3.7 ", (3, 7, 99))],
)
def test_version_parsing(text: str, expected: tuple[int, int, int]) -> None:
    assert parse_kafka_version(text) == expected


@pytest.mark.parametrize("text", ["2.1", "1.1", "five", "5.0"])
def test_unsupported_versions_are_rejected(text: str) -> None:
    with pytest.raises(ValueError):
        CoordinatorConfig(kafka_version=text)


def test_config_defaults_follow_kafka() -> None:
    assert CoordinatorConfig().timer_rule == "inclusive"
    assert CoordinatorConfig(kafka_version="3.9").resolved_implementation == "scala"
    assert CoordinatorConfig(kafka_version="4.0").resolved_implementation == "java"
    assert CoordinatorConfig(kafka_version="3.7", implementation="java").features().java
    assert CoordinatorConfig(kafka_version="2.2").max_session_timeout_ms == 300_000
    assert CoordinatorConfig(kafka_version="2.3").max_session_timeout_ms == 1_800_000
    assert CoordinatorConfig(group_max_session_timeout_ms=5).max_session_timeout_ms == 5
    f28, f280 = (
        CoordinatorConfig(kafka_version="2.8").features(),
        CoordinatorConfig(kafka_version="2.8.0").features(),
    )
    assert f28.pending_sync_timeout and not f280.pending_sync_timeout
    assert CoordinatorConfig(kafka_version="3.3.1").features().commit_strict_gen_minus_one is False
    assert CoordinatorConfig(kafka_version="3.3.0").features().commit_strict_gen_minus_one is True
    with pytest.raises(ValueError):
        CoordinatorConfig(mode="replay")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        CoordinatorConfig(group_max_size=0)


# ---------------------------------------------------------------------------------------- ordering
def test_requests_must_arrive_in_order() -> None:
    m = GroupCoordinatorModel(G, default_config())
    m.handle(join(10))
    with pytest.raises(ValueError):
        m.handle(join(9))
    with pytest.raises(ValueError):
        m.advance_to(5)
    m.advance_to(10)  # same time is fine
    m.handle(join(10))


def test_advance_then_handle_equals_handle() -> None:
    reqs = [join(0), join(1, "c-x", v=3)]
    a = GroupCoordinatorModel(G, default_config())
    b = GroupCoordinatorModel(G, default_config())
    for r in reqs:
        a.handle(r)
        b.advance_to(r.arrival_ms)
        b.handle(r)
    a.advance_to(10_000)
    b.advance_to(10_000)
    assert a.drain() == b.drain()
    assert a.to_bytes() == b.to_bytes()


# ------------------------------------------------------------------------------------------- serde
def test_serialisation_round_trips_parked_requests_timers_and_outputs() -> None:
    config = default_config()
    m = GroupCoordinatorModel(G, config)
    m.handle(join(0))
    mid = m.drain()[0][0].response.member_id
    m.handle(join(1, mid or ""))  # parked, initial delay armed
    data = m.to_bytes()
    assert data[:4] == b"RRCM" and len(zlib.decompress(data[5:])) > len(data)
    copy = GroupCoordinatorModel.from_bytes(data, config)
    assert copy.to_bytes() == data
    assert copy.timer_keys() == m.timer_keys() and f"join-{G}" in copy.timer_keys()
    assert copy.drain() == m.drain()  # undrained outputs survive too
    m.advance_to(10_000)
    copy.advance_to(10_000)
    assert copy.drain() == m.drain()
    assert copy.to_bytes() == m.to_bytes()


def test_serialised_bytes_are_validated() -> None:
    with pytest.raises(ValueError):
        GroupCoordinatorModel.from_bytes(b"nope", default_config())
    data = bytearray(GroupCoordinatorModel(G, default_config()).to_bytes())
    data[4] = 99
    with pytest.raises(ValueError):
        GroupCoordinatorModel.from_bytes(bytes(data), default_config())


# ------------------------------------------------------------------------------------ state machine
def test_transition_table() -> None:
    check_transition(GroupState.EMPTY, GroupState.PREPARING_REBALANCE)
    check_transition(GroupState.STABLE, GroupState.DEAD)
    for bad in [
        (GroupState.EMPTY, GroupState.STABLE),
        (GroupState.STABLE, GroupState.COMPLETING_REBALANCE),
        (GroupState.DEAD, GroupState.EMPTY),
        (GroupState.COMPLETING_REBALANCE, GroupState.EMPTY),
    ]:
        with pytest.raises(IllegalStateTransition):
            check_transition(*bad)


def test_timer_queue_orders_equal_deadlines_rebalance_first_then_fifo() -> None:
    q = TimerQueue()
    q.arm("heartbeat-g-a", 100, SESSION_PRIORITY, "heartbeat")
    q.arm("join-g", 100, 0, "join")
    q.arm("heartbeat-g-b", 100, SESSION_PRIORITY, "heartbeat")
    q.arm("heartbeat-g-a", 150, SESSION_PRIORITY, "heartbeat")  # lazily re-armed later
    assert q.pop_due(100, inclusive=False) is None
    fired = []
    while (t := q.pop_due(200, inclusive=True)) is not None:
        fired.append((t.key, t.deadline))
    assert fired == [("join-g", 100), ("heartbeat-g-b", 100), ("heartbeat-g-a", 150)]


def test_timer_queue_pop_key_removes_the_timer_and_tells_an_unarmed_key() -> None:
    """``pop_key`` returns the timer armed under the key, which then never fires, and None for a key with
    no timer (the immediate timers' loop pops only armed keys: a mutation making an unarmed key raise
    passed every other test)."""
    q = TimerQueue()
    q.arm("join-g", 100, 0, "join")
    q.arm("heartbeat-g-a", 100, SESSION_PRIORITY, "heartbeat")
    popped = q.pop_key("join-g")
    assert popped is not None and (popped.key, popped.deadline) == ("join-g", 100)
    assert q.pop_key("join-g") is None and q.pop_key("never-armed") is None
    fired = q.pop_due(200, inclusive=True)
    assert fired is not None and fired.key == "heartbeat-g-a" and q.pop_due(200, inclusive=True) is None


def test_timer_queue_postpones_a_live_timer_without_a_heap_entry() -> None:
    """``postpone`` is the heartbeat's fast path: a live session timer moved later keeps its heap entry (the
    entry is checked lazily when it comes up) and takes a new arming order, as :meth:`arm` would give it;
    it declines (False, nothing changed) a key with no timer, an earlier deadline or another priority.
    Found by mutation testing (stop 55): a postpone that always declined passed every test, the callers
    falling back to ``arm``."""
    q = TimerQueue()
    q.arm("heartbeat-g-a", 100, SESSION_PRIORITY, "heartbeat")
    q.arm("heartbeat-g-b", 100, SESSION_PRIORITY, "heartbeat")
    entries = len(q._heap)
    assert q.postpone("heartbeat-g-a", 150, SESSION_PRIORITY) is True
    assert len(q._heap) == entries  # no heap operation
    timer = q.get("heartbeat-g-a")
    assert timer is not None and timer.deadline == 150 and timer.order == 2  # after b's 1
    assert q.postpone("heartbeat-g-c", 150, SESSION_PRIORITY) is False  # no such timer
    assert q.postpone("heartbeat-g-b", 90, SESSION_PRIORITY) is False  # earlier
    assert q.postpone("heartbeat-g-b", 150, 0) is False  # another priority
    fired = [(t.key, t.deadline) for t in iter(lambda: q.pop_due(1000, inclusive=True), None)]
    assert fired == [("heartbeat-g-b", 100), ("heartbeat-g-a", 150)]


def test_timer_queue_copy_keeps_deepcopy_contract_and_is_independent() -> None:
    """``TimerQueue.__deepcopy__`` (the fork's fast copy) registers its copy in ``memo`` under the queue's
    own id: a graph that holds the queue twice gets one copy twice, and an entry under another id would
    hand that copy out for an unrelated object (``None`` here) copied with the same memo. The copy's
    timers are its own: re-arming or firing them leaves the original as it was."""
    q = TimerQueue()
    q.arm("join-g", 100, 0, "join")
    q.arm("heartbeat-g-a", 120, SESSION_PRIORITY, "heartbeat")
    first, second, nothing = copy.deepcopy([q, q, None])
    assert first is second and first is not q and nothing is None
    first.arm("heartbeat-g-a", 500, SESSION_PRIORITY, "heartbeat")
    assert first.pop_key("join-g") is not None
    fired = [(t.key, t.deadline) for t in iter(lambda: q.pop_due(1000, inclusive=True), None)]
    assert fired == [("join-g", 100), ("heartbeat-g-a", 120)]
    fired_copy = [(t.key, t.deadline) for t in iter(lambda: first.pop_due(1000, inclusive=True), None)]
    assert fired_copy == [("heartbeat-g-a", 500)]


# ------------------------------------------------------------------------------------------ events
def test_events_carry_kafka_causes_members_and_assignments() -> None:
    case = Case(
        "testSyncGroupLeaderAfterFollower",
        [
            J(0, alias="a", v=3, expect=E(error="NONE", completion=6000)),
            J(1, alias="b", v=3, expect=E(error="NONE", completion=6000)),
            S(6001, "b", 1, expect=E(error="NONE", assignment=b"B")),
            S(6002, "a", 1, assignments={"a": b"A", "b": b"B"}, expect=E(error="NONE", assignment=b"A")),
            H(6003, "a", 1),
            C(6004, "b", 1),
        ],
        End(state="Stable"),
        config=default_config(),
    )
    result = run_case(case)
    ids = result.ids
    ev = result.events
    joined = [e for e in ev if e.kind is EventKind.JOIN_COMPLETED]
    assert joined[0].members == (ids["a"], ids["b"]) and joined[0].leader == ids["a"]
    assert joined[0].protocol_name == "range" and joined[0].protocol_type == "consumer"
    synced = [e for e in ev if e.kind is EventKind.SYNC_COMPLETED]
    assert dict(synced[0].assignments) == {ids["a"]: b"A", ids["b"]: b"B"}
    added = [e for e in ev if e.kind is EventKind.MEMBER_ADDED]
    assert (
        added[0].cause
        == f"Adding new member {ids['a']} with group instance id None; client reason: not provided"
    )
    transitions = [(e.from_state, e.state) for e in ev if e.kind is EventKind.TRANSITION]
    assert transitions == [
        (GroupState.EMPTY, GroupState.PREPARING_REBALANCE),
        (GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE),
        (GroupState.COMPLETING_REBALANCE, GroupState.STABLE),
    ]
    assert [e.kind for e in ev[-2:]] == [EventKind.HEARTBEAT, EventKind.OFFSET_COMMIT]
    assert all(e.ref is None for e in ev if e.kind is EventKind.TIMER_EXPIRED)


@pytest.mark.parametrize(
    ("version", "impl", "cause"),
    [
        ("2.2", None, "Adding new member {a}"),
        ("2.4", None, "Adding new member {a} with group instanceid None"),
        ("2.5", None, "Adding new member {a} with group instance id None"),
        ("3.7", "java", "Adding new member {a} with group instance id null; client reason: not provided"),
    ],
)
def test_cause_wording_per_version(version: str, impl: str | None, cause: str) -> None:
    case = Case(
        "testValidJoinGroup",
        [J(0, alias="a", v=3)],
        config=default_config(kafka_version=version, implementation=impl),
    )
    result = run_case(case)
    added = next(e for e in result.events if e.kind is EventKind.MEMBER_ADDED)
    assert added.cause == cause.format(a=added.member_id)


def test_static_member_replacement_event() -> None:
    case = Case(
        "staticMemberRejoinAsFollowerWithUnknownMemberId",
        [
            J(0, alias="s", instance="I", v=5),
            S(6001, "s", 1, instance="I", assignments={}),
            J(6100, alias="s2", instance="I", v=5, expect=E(error="NONE", gen=1)),
        ],
        config=default_config(),
    )
    result = run_case(case)
    replaced = [e for e in result.events if e.kind is EventKind.STATIC_MEMBER_REPLACED]
    assert replaced and replaced[0].detail == result.ids["s"] and replaced[0].member_id == result.ids["s2"]


# --------------------------------------------------------------------------------------- placement
@pytest.mark.parametrize(
    ("group", "hash_", "p50", "p2"),
    [
        ("groupId", 293428218, 18, 0),
        ("otherGroup", -204443313, 13, 1),
        ("polygenelubricants", -(2**31), 0, 0),
    ],
)
def test_coordinator_placement(group: str, hash_: int, p50: int, p2: int) -> None:
    assert java_string_hash(group) == hash_
    assert coordinator_partition(group) == p50 and coordinator_partition(group, 2) == p2


# ---------------------------------------------------------------------------------- version switches
def test_instance_id_before_2_3_is_unsupported() -> None:
    m = GroupCoordinatorModel(G, default_config(kafka_version="2.2"))
    m.handle(GroupRequest(ApiKey.HEARTBEAT, 2, G, 0, member_id="m", generation_id=1, group_instance_id="i"))
    m.handle(GroupRequest(ApiKey.SYNC_GROUP, 2, G, 1, member_id="m", generation_id=1, group_instance_id="i"))
    assert [p.response.error for p in m.drain()[0]] == ["UNSUPPORTED_VERSION", "UNSUPPORTED_VERSION"]


def test_unmodelled_api_is_answered_and_flagged() -> None:
    m = GroupCoordinatorModel(G, default_config())
    m.handle(GroupRequest(ApiKey.DESCRIBE_GROUPS, 5, G, 0))
    (p,), _ = m.drain()
    assert p.mismatch_kinds == ("api_not_modelled",)


# ----------------------------------------------------------------------------------------- loading
def test_heartbeat_while_loading_is_answered_blindly() -> None:
    config = default_config(mode="track", warm_start=True)
    m = GroupCoordinatorModel(G, config)
    m.handle(
        GroupRequest(
            ApiKey.JOIN_GROUP,
            5,
            G,
            0,
            member_id="",
            client_id="c",
            session_timeout_ms=10_000,
            rebalance_timeout_ms=30_000,
            protocol_type="consumer",
            protocols=PROTOCOLS,
            observed=ObservedResponse(error="COORDINATOR_LOAD_IN_PROGRESS"),
        )
    )
    m.handle(
        GroupRequest(
            ApiKey.HEARTBEAT,
            4,
            G,
            1,
            member_id="unknown",
            generation_id=7,
            observed=ObservedResponse(error="NONE"),
        )
    )
    m.handle(
        GroupRequest(
            ApiKey.SYNC_GROUP,
            3,
            G,
            2,
            member_id="unknown",
            generation_id=7,
            observed=ObservedResponse(error="REBALANCE_IN_PROGRESS"),
        )
    )
    preds, events = m.drain()
    assert [p.response.error for p in preds] == [
        "COORDINATOR_LOAD_IN_PROGRESS",
        "NONE",
        "REBALANCE_IN_PROGRESS",
    ]
    assert not preds[0].scored and preds[0].unscored_reason == "external error: COORDINATOR_LOAD_IN_PROGRESS"
    assert not any(p.reconciled for p in preds)
    assert any(e.kind is EventKind.EXTERNAL_ERROR for e in events)


# ---------------------------------------------------------------------------------------- warm-up
def test_warm_start_confidence_after_the_window() -> None:
    """A Stable group whose JoinGroups are not in the log: members are inferred from accepted
    heartbeats; after warm_start_window_ms without a new member the model is confident."""
    config = default_config(mode="predict", warm_start=True, warm_start_window_ms=10_000)
    m = GroupCoordinatorModel(G, config)
    preds = []
    for t in range(0, 40_000, 1000):
        for member in ("a", "b"):
            m.handle(
                GroupRequest(
                    ApiKey.HEARTBEAT,
                    4,
                    G,
                    t,
                    member_id=member,
                    generation_id=7,
                    observed=ObservedResponse(error="NONE"),
                )
            )
        preds.extend(m.drain()[0])
    assert m.state is GroupState.STABLE and m.generation_id == 7
    assert m.confident
    warm = [p for p in preds if not p.scored]
    scored = [p for p in preds if p.scored]
    assert warm and warm[-1].request.arrival_ms < 10_000 <= scored[0].request.arrival_ms
    assert all(p.response.error == "NONE" for p in scored)
    assert all(p.unscored_reason and p.unscored_reason.startswith("warm-up") for p in warm)


def test_without_warm_start_the_log_is_assumed_to_begin_with_the_group() -> None:
    m = GroupCoordinatorModel(G, default_config(mode="predict", warm_start=False))
    m.handle(
        GroupRequest(
            ApiKey.HEARTBEAT, 4, G, 0, member_id="a", generation_id=7, observed=ObservedResponse(error="NONE")
        )
    )
    (p,), _ = m.drain()
    assert p.scored and p.response.error == "UNKNOWN_MEMBER_ID" and not p.reconciled
    assert m.group is None


@pytest.mark.parametrize(
    ("tie_order", "reason"),
    [("rebalance_first", "rebalance_timeout_eviction"), ("arming_order", "session_expiry")],
)
def test_timer_tie_order(tie_order: str, reason: str) -> None:
    """a's session deadline and the join deadline coincide at 700: rebalance-first completes the join
    (a evicted for not rejoining); arming order expires a's session first (armed earlier)."""
    from tests.unit.coordinator.test_coordinator_scenarios import cfg, kj, two_stable

    case = Case(
        "testSessionTimeoutDuringRebalance",
        [*two_stable(), H(200, "a", 1), kj(200, "b", protos=("roundrobin", "range"))],
        End(state="CompletingRebalance", generation=2, members={"b"}),
        config=cfg(timer_tie_order=tie_order),
        until=800,
    )
    result = run_case(case)
    removed = [e for e in result.events if e.kind is EventKind.MEMBER_REMOVED]
    assert [e.removal_reason.value for e in removed if e.removal_reason] == [reason]


def test_hot_path_objects_are_ordinary_dataclass_instances() -> None:
    """The compiled constructors build real, frozen instances: equal, hashable, picklable, replaceable."""
    import dataclasses
    import pickle

    from rebalance_replay.transforms.coordinator.engine import (
        _new_liveness_event,
        _new_stable_prediction,
        new_response,
    )

    req = GroupRequest(ApiKey.HEARTBEAT, 4, G, 5, member_id="m", generation_id=1)
    resp = new_response("NONE", 5, None)
    pred = _new_stable_prediction(0, req, resp, 1, 1)
    event = _new_liveness_event(0, 5, EventKind.HEARTBEAT, 1, "m", None)
    from rebalance_replay.transforms.coordinator.types import ModelEvent, PredictedResponse, Prediction

    assert type(resp) is PredictedResponse and resp == PredictedResponse(error="NONE", completion_ms=5)
    assert type(pred) is Prediction and pred == Prediction(
        seq=0,
        request=req,
        response=resp,
        state_before=GroupState.STABLE,
        generation_before=1,
        state_after=GroupState.STABLE,
        generation_after=1,
    )
    assert type(event) is ModelEvent and event == ModelEvent(
        seq=0, time_ms=5, kind=EventKind.HEARTBEAT, generation_id=1, state=GroupState.STABLE, member_id="m"
    )
    for obj in (resp, pred, event):
        assert pickle.loads(pickle.dumps(obj)) == obj
        assert hash(obj) == hash(pickle.loads(pickle.dumps(obj)))
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(obj, type(obj).__slots__[0], 3)
    assert dataclasses.replace(pred, scored=False).scored is False
