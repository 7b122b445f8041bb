"""The same-millisecond bursts of ``simulator.bursts`` recorded afresh from Kafka's own coordinator: the
answers equal the committed recordings (``tests/unit/coordinator/data/bursts``, which the unit tests
replay without Java), and the replay agrees with every one of them under shuffled line orders."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator import bursts
from simulator.oracle import KafkaOracle

pytestmark = pytest.mark.differential

DATA = Path(__file__).parent.parent / "unit" / "coordinator" / "data" / "bursts"


@pytest.mark.parametrize("scenario", bursts.SCENARIOS, ids=[s.name for s in bursts.SCENARIOS])
def test_kafkas_answers_to_the_bursts_are_the_recorded_ones(
    oracle: KafkaOracle, scenario: bursts.Scenario
) -> None:
    live = bursts.record(oracle, scenario)
    kept = bursts.read_fixture(DATA / f"{scenario.name}.jsonl")
    assert live.sequence == kept.sequence
    assert live.kafka == kept.kafka
    for shuffle in (None, 11, 12):
        assert bursts.check(live, shuffle) == []
