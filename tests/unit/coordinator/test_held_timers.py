"""A coordinator timer held past several requests (``handle(..., hold=True)``) and the outputs the replay
moves from one copy of the model to another when it takes a held timer
(rebalance_replay.transforms.replay.GroupReplayer._handle).

The expected answers are Kafka's ``InitialDelayedJoin`` (3.x GroupCoordinator.scala, 4.x
GroupMetadataManager): when its timer fires and a member was added since it was armed, the join phase is
delayed again by min(the initial delay, what is left of the rebalance timeout); otherwise it completes."""

from __future__ import annotations

from rebalance_replay.transforms.coordinator.config import CoordinatorConfig
from rebalance_replay.transforms.coordinator.model import GroupCoordinatorModel
from rebalance_replay.transforms.coordinator.types import EventKind, Prediction
from tests.unit.coordinator.scenario import J

CONFIG = CoordinatorConfig(kafka_version="3.7", group_initial_rebalance_delay_ms=3000)


def joined(model: GroupCoordinatorModel, at: int) -> str:
    """A new member: its JoinGroup without id (MEMBER_ID_REQUIRED) handled at ``at``; returns its id."""
    model.handle(J(at).request({}))
    (p,) = [p for p in model.outputs_since((0, 0)) if p.request.arrival_ms == at]
    assert p.response.error == "MEMBER_ID_REQUIRED" and p.response.member_id
    return p.response.member_id


def completed(predictions: list[Prediction]) -> dict[str, tuple[int, int | None]]:
    """Each answered JoinGroup's member id → (completion time, generation)."""
    return {
        str(p.request.member_id): (p.response.completion_ms, p.response.generation_id)
        for p in predictions
        if p.request.member_id and p.response.error == "NONE"
    }


def group_with_the_delay_armed() -> tuple[GroupCoordinatorModel, str]:
    """Member a joins a new group at 1 ms: the initial delay is armed until 3,001."""
    model = GroupCoordinatorModel("g", CONFIG)
    a = joined(model, 0)
    model.handle(J(1, a).request({}))
    assert model.next_timer_deadline() == 3001
    return model, a


def test_a_timer_held_past_two_requests_fires_after_the_last() -> None:
    """b gets its id at 3,005 and joins at 3,010, both after the delay's deadline (3,001). The timer held
    past the first and fired after the second finds b added: one extension, both members at 6,010."""
    model, a = group_with_the_delay_armed()
    b_unknown = J(3005).request({})
    model.handle(b_unknown, late_timers_from=3001, hold=True)
    assert model.next_timer_deadline() == 3001  # held: not fired after the request
    (p,) = model.outputs_since((0, 0))[-1:]
    b = p.response.member_id
    assert p.response.error == "MEMBER_ID_REQUIRED" and b
    model.handle(J(3010, b).request({}), late_timers_from=3001)
    model.advance_to(10_000)
    assert completed(model.drain()[0]) == {a: (6010, 1), b: (6010, 1)}


def test_on_time_the_first_member_completes_alone() -> None:
    """The same requests with the timer on time: nobody was added during the delay, so it completes at
    3,001 with a alone; b's join then waits for a to rejoin (a new join phase)."""
    model, a = group_with_the_delay_armed()
    b = joined(model, 3005)
    model.handle(J(3010, b).request({}))
    model.advance_to(10_000)
    assert completed(model.drain()[0]) == {a: (3001, 1)}


def test_without_hold_the_timer_fires_after_the_first_request() -> None:
    """Late past the first request only: the timer fires at 3,005 with nobody added, a completes alone."""
    model, a = group_with_the_delay_armed()
    model.handle(J(3005).request({}), late_timers_from=3001)
    assert model.next_timer_deadline() != 3001
    model.advance_to(10_000)
    assert completed(model.drain()[0]) == {a: (3005, 1)}


def test_outputs_since_marks_and_taken_before() -> None:
    """The predictions made since a mark are those of the requests handled since; a copy taken at the mark
    and replayed again takes the original's outputs from before the mark ahead of its own."""
    model, _ = group_with_the_delay_armed()
    marks = model.output_marks()
    before = model.outputs_since((0, 0))
    assert marks[0] == len(before) == 1 and marks[1] > marks[0]  # two predictions and events differ
    copy = model.fork()
    joined(model, 3005)
    since = model.outputs_since(marks)
    assert [p.request.arrival_ms for p in since] == [1, 3005]  # a's join, completed by the timer at 3,001
    joined(copy, 3005)
    copy.take_outputs_before(model, marks)
    predictions, events = copy.drain()
    assert [p.request.arrival_ms for p in predictions] == [0, 1, 3005]
    original_predictions, original_events = model.drain()
    assert [(p.seq, p.response) for p in predictions] == [(p.seq, p.response) for p in original_predictions]
    assert events[: marks[1]] == original_events[: marks[1]]
    assert len(events) == len(original_events)


def test_an_extended_initial_delay_says_by_how_much_and_what_is_left() -> None:
    """``InitialDelayedJoin``: armed with the delay (3 s) and what is left of the rebalance timeout after it
    (60 s − 3 s = 57 s); when it fires with a member added since, it is armed again with min(the delay, what
    is left) and what is left less the delay it ran (57 − 3 = 54 s) — the event names both."""
    model, _ = group_with_the_delay_armed()
    b = joined(model, 2000)
    model.handle(J(2000, b).request({}))
    model.advance_to(3001)
    _, events = model.drain()
    fired = [e for e in events if e.kind is EventKind.TIMER_EXPIRED and e.time_ms == 3001]
    assert [(e.detail, e.cause) for e in fired] == [
        ("join-g", None),  # the timer fired
        ("join-g", "initial rebalance delay extended by 3000 ms (remaining 54000 ms)"),  # and was armed again
    ]
    assert model.next_timer_deadline() == 6001
