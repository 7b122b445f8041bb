"""The Kafka answers the coordinator unit tests keep on disk (``tests/unit/coordinator/data/*.kafka.json``)
are what Kafka's own coordinator answers today: each stored sequence is played to the oracle again and
its answers must equal the recorded ones (times and response JSON)."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.oracle import KafkaOracle
from tests.unit.coordinator import kafka_answers as ka
from tests.unit.coordinator.test_differential_regressions import WITH_KAFKA_ANSWERS

pytestmark = pytest.mark.differential


@pytest.mark.parametrize("path", WITH_KAFKA_ANSWERS, ids=lambda p: p.stem)
def test_recorded_answers_are_kafkas(oracle: KafkaOracle, path: Path) -> None:
    assert ka.answers_path(path).is_file()
    assert ka.record(oracle, ka.load_sequence(path)) == ka.recorded(path)
