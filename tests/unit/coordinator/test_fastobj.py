"""``fastobj.constructor``: the compiled constructors of the hot path's frozen dataclasses build exactly the
object the dataclass itself builds — parameters, constants, defaults and default factories each in their
field — and refuse a field the class lacks or a field left without a value. The product builds them when
its modules are imported; these tests build them at test time, so that a wrong constructor shows here
(found by mutation testing, stop 55: no test built one)."""

from __future__ import annotations

import dataclasses

import pytest

from rebalance_replay.transforms.coordinator.fastobj import constructor
from rebalance_replay.transforms.coordinator.types import EventKind, GroupState, ModelEvent


@dataclasses.dataclass(frozen=True, slots=True)
class Answer:
    seq: int
    kind: str
    member: str | None = None
    errors: tuple[str, ...] = dataclasses.field(default_factory=tuple)
    notes: list[str] = dataclasses.field(default_factory=list)
    at: int = 0


def test_a_constructor_builds_what_the_dataclass_builds() -> None:
    build = constructor(Answer, ("seq", "at"), kind="heartbeat")
    built = build(7, 1234)
    assert type(built) is Answer
    assert built == Answer(seq=7, kind="heartbeat", at=1234)
    assert (built.member, built.errors, built.notes) == (None, (), [])
    # a default factory's value is made once, when the constructor is built, and shared (fields of the
    # frozen outputs are never changed in place)
    assert build(8, 0).notes is built.notes


def test_the_products_event_constructor_matches_the_dataclass() -> None:
    """As engine.py builds its liveness events: six parameters, the state a constant, the rest defaults."""
    params = ("seq", "time_ms", "kind", "generation_id", "member_id", "ref")
    build = constructor(ModelEvent, params, state=GroupState.STABLE)
    values = (3, 99, EventKind.HEARTBEAT, 4, "m-1", ("broker-1/kafka-request.log", 12))
    assert build(*values) == ModelEvent(**dict(zip(params, values, strict=True)), state=GroupState.STABLE)


def test_a_field_the_class_lacks_or_a_field_without_a_value_is_refused() -> None:
    with pytest.raises(TypeError, match="colour"):
        constructor(Answer, ("seq",), kind="x", colour="red")
    with pytest.raises(TypeError, match="kind"):
        constructor(Answer, ("seq",))
