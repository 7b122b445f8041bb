"""Minimal sequences the differential tests found (``simulator.differential.shrink``), kept as plain
model tests with Kafka's answers written down, so they run without the oracle."""

from __future__ import annotations

import json
from pathlib import Path

from simulator import differential as d

DATA = Path(__file__).parent / "data"

#: seed 4842 of the slow range: SyncGroup v5 naming a protocol while the group, back from an Empty
#: generation, has none — Java's ``isProtocolInconsistent`` only compares two values, so Kafka 4.0
#: answers REBALANCE_IN_PROGRESS (Scala would say INCONSISTENT_GROUP_PROTOCOL).
SYNC_WITHOUT_GROUP_PROTOCOL = DATA / "sync_without_group_protocol.jsonl"


def _sequence(path: Path) -> d.Sequence:
    head, *ops = (json.loads(line) for line in path.read_text().strip().splitlines())
    return d.Sequence(
        head["seed"], d.Settings(**head["settings"]), tuple(map(d.Op.from_json, ops)), head["end"]
    )


def test_sync_naming_a_protocol_of_a_group_without_one_is_told_to_rebalance() -> None:
    seq = _sequence(SYNC_WITHOUT_GROUP_PROTOCOL)
    java = d.run_model(seq)
    assert [java[i].error for i in range(4)] == [
        "NONE",
        "MEMBER_ID_REQUIRED",
        "NONE",
        "REBALANCE_IN_PROGRESS",
    ]
    assert (java[0].generation_id, java[2].generation_id) == (1, 3)
    assert d.run_model(seq, "3.7")[3].error == "INCONSISTENT_GROUP_PROTOCOL"  # Scala's check


def test_member_ids_are_the_ones_the_oracle_draws() -> None:
    """``JavaRandomUuids`` replays ``UUID.randomUUID()`` under ``new Random(seed)`` (the oracle's own
    example output for seed 0)."""
    ids = d.JavaRandomUuids(0)
    assert [str(ids()) for _ in range(2)] == [
        "60b420bb-3851-49d4-bacb-933dbe70399b",
        "f6c92da3-3af0-4d4f-b770-e98c0325f41d",
    ]
