"""Recordings of real brokers that the replay once disagreed with, kept as found
(``tests/data/real-kafka-found``) and run through the whole product (ingest, both modes) with its defaults.

``4.4/single`` (recorded by ``make test-realkafka`` on 2026-11-29, Kafka 4.4.0, one broker, initial
rebalance delay 1 s): group ``birth``'s three Java consumers join at 8,639 (creating the group and the
1 s initial delay), 8,891 and 9,657 ms (the last 18 ms after the first delay's end, 9,639). The broker
extended the delay once and answered all three JoinGroups at 10,694-10,707 ms, generation 1: its timer
fired after the third join. The replay tries a timer due within ``validation.broker_lag_ms`` before a
request as firing after it when only that explains the broker's answer; a parked JoinGroup is judged by
its answer when the broker gave it (``GroupReplayer._explains``). Before that, the model extended the
delay twice and completed at 11,639 (tests/unit/test_real_kafka_replay.py shows the same without Spark)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from simulator.realkafka.agreement import MODES, evaluate
from tests.realkafka.checks import agreement_problems, ingest_problems

FOUND = Path(__file__).resolve().parents[1] / "data" / "real-kafka-found"

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(900)]


def test_initial_delay_with_a_late_timer_agrees(tmp_path: Path, spark: Any) -> None:
    result = evaluate(FOUND / "4.4" / "single", tmp_path / "eval")
    assert ingest_problems(result) == []
    assert [p for mode in MODES for p in agreement_problems([result], mode)] == []
