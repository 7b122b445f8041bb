"""Kafka's answers to a stored request sequence, written down so a model test runs without Java.

A sequence (``simulator.differential.Sequence``, one JSON line per op after a head line) sits beside
``<name>.kafka.json``: per answered op, the oracle's answer time and Kafka's response JSON, recorded from
Kafka 4.0's own coordinator (``../shared/kafka-oracle``) by :func:`record`.
``tests/differential/test_recorded_answers.py`` records them again and requires the same file, so the
expected answers of the unit tests stay Kafka's, never the model's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from simulator import differential as d
from simulator.oracle import KafkaOracle


def load_sequence(path: Path) -> d.Sequence:
    head, *ops = (json.loads(line) for line in path.read_text().strip().splitlines())
    return d.Sequence(
        head["seed"], d.Settings(**head["settings"]), tuple(map(d.Op.from_json, ops)), head["end"]
    )


def answers_path(sequence_path: Path) -> Path:
    return sequence_path.with_suffix(".kafka.json")


def record(oracle: KafkaOracle, seq: d.Sequence) -> dict[str, Any]:
    """Kafka's answers to ``seq`` as stored: op index → ``{"t": ms after the start, "body": JSON}``."""
    bodies: dict[int, dict[str, Any]] = {}
    answers = d.run_oracle(oracle, seq, bodies)
    return {str(i): {"t": d.answered_at(answers[i]) - d.START_MS, "body": bodies[i]} for i in sorted(answers)}


def write(path: Path, recorded: dict[str, Any]) -> None:
    path.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")


def recorded(sequence_path: Path) -> dict[str, Any]:
    return json.loads(answers_path(sequence_path).read_text())  # type: ignore[no-any-return]


def kafka_answers(seq: d.Sequence, stored: dict[str, Any]) -> dict[int, d.Answer]:
    """The stored answers read as :func:`simulator.differential.run_oracle` reads the oracle's."""
    return {
        int(i): d.answer_from_oracle(
            seq.ops[int(i)].api, seq.ops[int(i)].version, d.START_MS + int(a["t"]), a["body"]
        )
        for i, a in stored.items()
    }
