"""A coordinator that dies: what the new coordinator loads (§16).

Kafka's new coordinator loads the group from ``__consumer_offsets`` (``onGroupLoaded``: Stable with its
members, each with a fresh session deadline, or Empty). What is there is what the old coordinator wrote
while it ran: the session expiries the model would fire after the old coordinator's last answer fired in
no broker when it was dead by then. Replayed without Spark:

- ``tests/data/real-kafka/3.7/failover``: a live 3.7.2 recording trimmed to its group — the coordinator
  (broker-2) killed, the members at the new coordinator (broker-3) 13.8 s later (session timeout 6 s),
  NOT_COORDINATOR while it loaded, then NONE: it had loaded the group Stable with both members;
- the committed corpus's ``3.7/three`` ``coordinator-moves`` (no NOT_COORDINATOR in between) with a
  micro-batch ending inside the failover's silence, after the members' session deadlines;
- hand-written logs for the other side: a coordinator that was alive when the group's members went
  silent expired them and wrote the group Empty, and the new coordinator loads that.
"""

from __future__ import annotations

import gzip
import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rebalance_replay.transforms.coordinator.config import CoordinatorConfig
from rebalance_replay.transforms.coordinator.model import GroupCoordinatorModel
from rebalance_replay.transforms.coordinator.types import (
    EventKind,
    GroupRequest,
    GroupState,
    ObservedResponse,
    Prediction,
)
from rebalance_replay.transforms.replay import GroupReplayer, ReplaySettings
from simulator.fidelity import parse_rows
from tests.unit.coordinator.scenario import GROUP, H, J, S, Step
from tests.unit.test_real_kafka_replay import LAG_MS, broker_config, disagreements, recording_rows, replay

FAILOVER = Path(__file__).resolve().parents[2] / "data" / "real-kafka" / "3.7" / "failover"
MOVE_ERRORS = ("NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS")
MODES = ("track", "predict")


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> Iterator[str]:
    yield request.param


def failover_rows() -> list[dict[str, Any]]:
    files: dict[str, list[str]] = {}
    for path in sorted(FAILOVER.glob("broker-*/kafka-request.log.gz")):
        with gzip.open(path, "rt") as f:
            files[path.parent.name] = f.read().splitlines()
    return parse_rows(files)


def failover_config(mode: str) -> CoordinatorConfig:
    trimmed = json.loads((FAILOVER / "trimmed.json").read_text())
    settings = trimmed["broker_settings"]
    return CoordinatorConfig(
        kafka_version=trimmed["release"],
        group_initial_rebalance_delay_ms=int(settings["group.initial.rebalance.delay.ms"]),
        group_min_session_timeout_ms=int(settings["group.min.session.timeout.ms"]),
        mode=mode,  # type: ignore[arg-type]
    )


def test_the_new_coordinator_loads_what_the_killed_one_last_persisted(mode: str) -> None:
    """Every request broker-3 answered once it had loaded the group is predicted as it answered: NONE
    for both members' heartbeats and commits (the model had let their sessions expire during the
    silence, written the group Empty in generation 2, loaded that, and answered UNKNOWN_MEMBER_ID)."""
    rows = [r for r in failover_rows() if r.get("group_id") == "coordinator-moves"]
    replayer = GroupReplayer("coordinator-moves", ReplaySettings(failover_config(mode), broker_lag_ms=LAG_MS))
    replayer.feed(rows)
    kept = list(replayer.process(max(int(r["completion_ms"]) for r in rows) + 1).rows["predictions"])
    served = [p for p in kept if p["broker_id"] == "broker-3" and p["observed_error"] not in MOVE_ERRORS]
    assert len(served) == 40
    assert {p["observed_error"] for p in served} == {"NONE"}
    wrong = [(p["line_no"], p["api"], p["predicted_error"]) for p in served if p["predicted_error"] != "NONE"]
    assert wrong == []
    assert disagreements(kept) == []


@pytest.mark.parametrize("checkpoint", [False, True], ids=["kept", "checkpointed"])
@pytest.mark.parametrize("into_silence", [0.6, 0.95])
def test_a_micro_batch_ending_in_the_failover_silence(
    mode: str, into_silence: float, checkpoint: bool
) -> None:
    """The committed 3.7 ``coordinator-moves`` (broker-3 killed, the group answered NONE by broker-1
    12.5 s later with no NOT_COORDINATOR in between) replayed in two micro-batches, the first ending
    inside the silence after both members' session deadlines: the watermark runs the dead broker's
    timers, but what it wrote then is not what broker-1 loaded. The same answers as in one batch, also
    when the replay state is saved between the batches (a streaming checkpoint)."""
    rows = [r for r in recording_rows("3.7", "three") if r.get("group_id") == "coordinator-moves"]
    classic = sorted(
        int(r["completion_ms"])
        for r in rows
        if r["api_name"] in ("JOIN_GROUP", "SYNC_GROUP", "HEARTBEAT", "OFFSET_COMMIT", "LEAVE_GROUP")
    )
    last, first = max((b - a, a, b) for a, b in itertools.pairwise(classic))[1:]
    assert first - last > 12_000
    settings = ReplaySettings(broker_config("3.7", "three", mode), broker_lag_ms=LAG_MS)
    replayer = GroupReplayer("coordinator-moves", settings)
    replayer.feed(rows)
    kept = list(replayer.process(last + int((first - last) * into_silence)).rows["predictions"])
    if checkpoint:
        replayer = GroupReplayer.from_bytes(replayer.to_bytes(), settings)
    kept += replayer.process(max(int(r["completion_ms"]) for r in rows) + 1).rows["predictions"]
    whole = replay("3.7", "three", "coordinator-moves", mode, broker_lag_ms=LAG_MS)
    assert len(kept) == len(whole) == 60
    assert disagreements(kept) == []
    assert all(p["scored"] for p in kept)


# ------------------------------------------------------------------------------------------------
# hand-written logs: which of the old coordinator's timers count
# ------------------------------------------------------------------------------------------------
SESSION = 6_000
CONFIG = CoordinatorConfig(
    kafka_version="3.7",
    warm_start=False,
    mode="predict",
    group_min_session_timeout_ms=4_000,
    group_initial_rebalance_delay_ms=1_000,
)


def answered(error: str, at: int) -> ObservedResponse:
    return ObservedResponse(error=error, completion_ms=at)


def two_stable() -> list[Step]:
    """Members a and b (JoinGroup v3: ids given at once) in generation 1 (the initial delay, extended once
    by b, ends at 2000), heartbeating until 5001: their sessions end at 11000 and 11001."""
    return [
        J(0, alias="a", v=3, session=SESSION, rebalance=30_000, observed=answered("NONE", 2_000)),
        J(10, alias="b", v=3, session=SESSION, rebalance=30_000, observed=answered("NONE", 2_000)),
        S(2_010, "a", 1, assignments={"a": b"x", "b": b"y"}, observed=answered("NONE", 2_010)),
        S(2_011, "b", 1, observed=answered("NONE", 2_011)),
        H(3_500, "a", 1, observed=answered("NONE", 3_500)),
        H(3_501, "b", 1, observed=answered("NONE", 3_501)),
        H(5_000, "a", 1, observed=answered("NONE", 5_000)),
        H(5_001, "b", 1, observed=answered("NONE", 5_001)),
    ]


class _Moved(Step):
    """The next request is answered by another broker, with no NOT_COORDINATOR seen (the replayer's
    ``GroupReplayer._serving`` calls ``moved_silently`` then)."""

    def __init__(self) -> None:
        object.__setattr__(self, "at", 0)


def run(steps: list[Step], until: int = 20_000) -> tuple[GroupCoordinatorModel, list[Prediction], list[Any]]:
    """Each step handled as the replayer does: after the group's start (where the clock is moved to each
    request first, so the JoinGroups' answers name the member ids the next requests use), no advance of
    the clock between requests — the timers due before a request fire when it arrives — and at the end
    up to ``until``."""
    model = GroupCoordinatorModel(GROUP, CONFIG)
    ids: dict[str, str] = {}
    preds: list[Prediction] = []
    events: list[Any] = []
    alias_of: dict[int, str] = {}

    def collect() -> None:
        p, e = model.drain()
        preds.extend(p)
        events.extend(e)
        for pred in p:
            alias = alias_of.get(pred.seq)
            if alias and pred.response.member_id:
                ids.setdefault(alias, pred.response.member_id)

    seq = 0
    for step in steps:
        if isinstance(step, _Moved):
            model.moved_silently("answered by another broker now")
            continue
        if step.at < 10_000:
            model.advance_to(step.at)
            collect()
        request: GroupRequest = step.request(ids)
        if isinstance(step, J) and step.alias:
            alias_of[seq] = step.alias
        seq += 1
        model.handle(request)
        collect()
    model.advance_to(until)
    collect()
    return model, preds, events


def loaded(events: list[Any]) -> list[tuple[GroupState, int, tuple[str, ...]]]:
    return [
        (e.state, e.generation_id, e.members)
        for e in events
        if e.kind is EventKind.WARM_START and "served again" in (e.detail or "")
    ]


@pytest.mark.parametrize("silently", [False, True], ids=["not-coordinator", "silent"])
def test_members_back_after_the_silence_outlived_the_old_coordinator(silently: bool) -> None:
    """Both members heartbeat again 13 s after their last answer (their sessions would have ended at
    11000): they never learnt of an expiry, so the old coordinator did not run their timers — it died
    after its last answer. The new one loads generation 1 with both members and accepts them."""
    steps = two_stable()
    if silently:
        steps += [_Moved(), H(18_000, "a", 1, observed=answered("NONE", 18_000))]
    else:
        steps += [
            H(18_000, "a", 1, observed=answered("NOT_COORDINATOR", 18_000)),
            H(18_500, "a", 1, observed=answered("NONE", 18_500)),
        ]
    steps += [H(18_501, "b", 1, observed=answered("NONE", 18_501))]
    model, preds, events = run(steps)
    assert [(s, g, len(m)) for s, g, m in loaded(events)] == [(GroupState.STABLE, 1, 2)]
    after = [p for p in preds if p.request.arrival_ms >= 18_000 and p.scored]
    assert [p.response.error for p in after] == ["NONE", "NONE"]
    assert not any(e.kind is EventKind.MEMBER_REMOVED for e in events)  # no expiry in no broker
    assert model.state is GroupState.STABLE and model.generation_id == 1


@pytest.mark.parametrize("silently", [False, True], ids=["not-coordinator", "silent"])
def test_a_silent_group_expired_by_a_live_coordinator_moves_empty(silently: bool) -> None:
    """Both members stop (a crash: no LeaveGroup); a new consumer joins 13 s later, when the group's
    coordinator has moved. Nothing in the log says the old coordinator was gone when the sessions ended
    (no member of its group speaks again): it was alive, expired both, and wrote the group Empty in
    generation 2 — what the new coordinator loads. The newcomer's join then waits the initial delay of
    an Empty group and starts generation 3."""
    steps = two_stable()
    if silently:
        steps += [_Moved()]
    else:
        steps += [J(18_000, alias="c", v=3, session=SESSION, observed=answered("NOT_COORDINATOR", 18_000))]
    steps += [J(18_500, alias="c", v=3, session=SESSION, observed=answered("NONE", 19_500))]
    model, preds, events = run(steps)
    assert loaded(events) == [(GroupState.EMPTY, 2, ())]
    expired = [e.member_id for e in events if e.kind is EventKind.MEMBER_REMOVED]
    assert len(expired) == 2  # by the old coordinator, at 11000 and 11001
    join = next(p for p in preds if p.request.arrival_ms == 18_500).response
    assert (join.error, join.generation_id, join.completion_ms) == ("NONE", 3, 19_500)
    assert model.generation_id == 3


def test_a_member_heard_before_the_load_outlived_the_old_coordinator() -> None:
    """The first answer of the move is a newcomer's (nothing said yet about the old coordinator: its
    timers run), then a member of its group is answered NOT_COORDINATOR too, before the new coordinator
    has loaded the group: that member outlived its session there, so the load is generation 1 again."""
    steps = [
        *two_stable(),
        J(18_000, alias="c", v=3, session=SESSION, observed=answered("NOT_COORDINATOR", 18_000)),
        H(18_200, "a", 1, observed=answered("NOT_COORDINATOR", 18_200)),
        H(18_500, "a", 1, observed=answered("NONE", 18_500)),
        H(18_501, "b", 1, observed=answered("NONE", 18_501)),
    ]
    model, preds, events = run(steps)
    assert [(s, g, len(m)) for s, g, m in loaded(events)] == [(GroupState.STABLE, 1, 2)]
    after = [p for p in preds if p.request.arrival_ms >= 18_500]
    assert [p.response.error for p in after] == ["NONE", "NONE"]
    assert model.state is GroupState.STABLE and model.generation_id == 1


def test_an_unload_names_its_cause_in_the_dead_transition() -> None:
    """``unload``'s cause (the replay gives the move it saw) is the Dead transition's cause; without one,
    Kafka's: the coordinator resigned the offsets partition."""
    for cause, expected in [
        ("the group's requests are answered NOT_COORDINATOR by broker-1", None),
        (None, "coordinator resigned the offsets partition"),
    ]:
        model, _, _ = run(two_stable(), until=6_000)
        model.drain()
        if cause is None:
            model.unload(6_000)
        else:
            model.unload(6_000, cause)
        _, events = model.drain()
        dead = [e for e in events if e.kind is EventKind.TRANSITION and e.state is GroupState.DEAD]
        assert [(e.from_state, e.time_ms, e.cause) for e in dead] == [
            (GroupState.STABLE, 6_000, expected or cause)
        ]
