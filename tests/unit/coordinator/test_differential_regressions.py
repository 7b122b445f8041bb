"""Minimal sequences the differential tests found (``simulator.differential.shrink``), kept as plain
model tests with Kafka's answers written down, so they run without the oracle. Where a
``<name>.kafka.json`` sits beside the sequence, the expected answers are Kafka's own, recorded from the
oracle (``tests/unit/coordinator/kafka_answers.py``; ``tests/differential/test_recorded_answers.py``
checks them against the oracle again)."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator import differential as d
from tests.unit.coordinator.kafka_answers import kafka_answers, load_sequence, recorded

DATA = Path(__file__).parent / "data"

#: seed 4842 of the slow range: SyncGroup v5 naming a protocol while the group, back from an Empty
#: generation, has none — Java's ``isProtocolInconsistent`` only compares two values, so Kafka 4.0
#: answers REBALANCE_IN_PROGRESS (Scala would say INCONSISTENT_GROUP_PROTOCOL).
SYNC_WITHOUT_GROUP_PROTOCOL = DATA / "sync_without_group_protocol.jsonl"

#: seeds 143 and 176 of the differential range, shrunk: a member parked in SyncGroup (its leader never
#: syncs) outlives its session timeout, as Kafka's ``hasSatisfiedHeartbeat`` says (a member awaiting a
#: SyncGroup answer satisfies its heartbeat); it is answered REBALANCE_IN_PROGRESS only when the group's
#: rebalance timeout removes the leader. A model that expired it instead (issue 24's surviving mutation)
#: never answers the parked SyncGroup, or answers the rejoined member's sync differently.
SYNC_PARKED_PAST_SESSION = DATA / "sync_parked_past_session.jsonl"
SYNC_PARKED_PAST_SESSION_REJOIN = DATA / "sync_parked_past_session_rejoin.jsonl"
WITH_KAFKA_ANSWERS = [SYNC_PARKED_PAST_SESSION, SYNC_PARKED_PAST_SESSION_REJOIN]


def _sequence(path: Path) -> d.Sequence:
    return load_sequence(path)


@pytest.mark.parametrize("path", WITH_KAFKA_ANSWERS, ids=lambda p: p.stem)
def test_the_model_gives_kafkas_recorded_answers(path: Path) -> None:
    seq = load_sequence(path)
    kafka = kafka_answers(seq, recorded(path))
    assert kafka, "no recorded answers"
    diffs = d.compare(seq, kafka, d.run_model(seq))
    assert diffs == []


def test_a_member_parked_in_sync_group_outlives_its_session() -> None:
    """c2 (session 6 s) joins generation 2 at 11.664 s and parks its SyncGroup at 11.703 s; the leader
    never syncs. Its session would end at 17.664 s, but a parked member satisfies its heartbeat: Kafka
    keeps it until the 30 s rebalance timeout ends the generation, then answers REBALANCE_IN_PROGRESS."""
    seq = load_sequence(SYNC_PARKED_PAST_SESSION)
    kafka = kafka_answers(seq, recorded(SYNC_PARKED_PAST_SESSION))
    sync = 4
    assert seq.ops[sync].api.name == "SYNC_GROUP"
    assert (kafka[sync].error.name, d.answered_at(kafka[sync]) - d.START_MS) == (
        "REBALANCE_IN_PROGRESS",
        41664,
    )
    model = d.run_model(seq)
    assert sync in model, "the model expired the parked member: its SyncGroup is never answered"
    assert (model[sync].error.name, d.answered_at(model[sync]) - d.START_MS) == (
        "REBALANCE_IN_PROGRESS",
        41664,
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
