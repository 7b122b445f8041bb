"""Kafka's own answers, written as a Kafka 4.0 broker's ``kafka-request.log`` and run through the
product: ingest, ordering and replay must add no error of their own — the agreement on the log equals
the direct comparison of the model with the oracle (which is exact)."""

from __future__ import annotations

import random
from collections import Counter
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest

from rebalance_replay.jobs.cli import main
from simulator import differential as d
from simulator.log_render import complete_record, render_line
from simulator.oracle import KafkaOracle
from tests.helpers import read_table

pytestmark = [pytest.mark.differential, pytest.mark.spark]

SEQUENCES = 60


def _broker_logs(oracle: KafkaOracle, root: Path) -> tuple[int, int]:
    """Writes two brokers' logs (groups alternate between them); returns (lines, direct divergences)."""
    rng = random.Random(5)
    per_broker: dict[str, list[tuple[int, str]]] = {}
    diverging = 0
    for seed in range(SEQUENCES):
        seq = d.generate(oracle, 10_000 + seed, settings=d.Settings(), realistic=True)
        bodies: dict[int, dict[str, Any]] = {}
        answers = d.run_oracle(oracle, seq, bodies)
        diverging += len(d.compare(seq, answers, d.run_model(seq)))
        for rec in d.log_records(seq, answers, bodies, group_id=f"orders-{seed}"):
            full = complete_record(rec, kafka_version="4.0")
            line = render_line(full, kafka_version="4.0", tz=UTC)
            per_broker.setdefault(f"broker-{seed % 2}", []).append((int(rec["completion_ms"]), line))
    total = 0
    for broker, lines in per_broker.items():
        rng.shuffle(lines)  # same-millisecond lines in any order, as a broker's log has them
        lines.sort(key=lambda x: x[0])
        (root / broker).mkdir(parents=True)
        (root / broker / "kafka-request.log").write_text("".join(line + "\n" for _, line in lines))
        total += len(lines)
    return total, diverging


@pytest.mark.parametrize(
    "mode",
    [["--set", "replay.mode=predict", "--set", "replay.warm_start=false"], []],
    ids=["predict", "track"],
)
def test_kafkas_answers_as_a_log_replay_as_the_direct_comparison(
    oracle: KafkaOracle, spark: object, tmp_path: Path, mode: list[str]
) -> None:
    logs, wh = tmp_path / "logs", tmp_path / "wh"
    lines, diverging = _broker_logs(oracle, logs)
    assert diverging == 0  # the direct comparison
    settings = ["--set", "kafka.version=4.0", *mode]
    assert main(["ingest", "--input", str(logs), "--warehouse", str(wh), *settings]) == 0
    assert main(["replay", "--warehouse", str(wh), *settings]) == 0
    requests = read_table(wh / "requests")
    assert len(requests) == lines and not read_table(wh / "quarantine")
    predictions = read_table(wh / "predictions")
    assert len(predictions) == lines
    mismatched = [
        (p["group_id"], p["api"], p["arrival_ms"], p["mismatch_kinds"])
        for p in predictions
        if p["scored"] and not p["matched"]
    ]
    assert mismatched == []  # as in the direct comparison
    unscored = Counter(p["unscored_reason"] for p in predictions if not p["scored"])
    # track mode may hold back a handful of answers it reconciled with the log (never one it got wrong)
    assert sum(unscored.values()) <= (0 if mode else lines // 500), unscored
