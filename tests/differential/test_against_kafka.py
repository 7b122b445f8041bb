"""The model against Kafka's own classic-group coordinator, on generated request sequences.

Every sequence is written by seeded clients reacting to what the oracle (Kafka 4.0's Java
``GroupCoordinatorShard``) answered, then played to the model (Kafka 4.0, Java coordinator, predict
mode); every response field, and the answer time of parked requests, must agree. A failure prints the
first divergence of a shrunk sequence, op by op with both sides' answers."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

from rebalance_replay.transforms.coordinator import state
from rebalance_replay.transforms.kafka_protocol import ApiKey
from simulator import differential as d
from simulator.oracle import KafkaOracle

pytestmark = pytest.mark.differential

#: Sequences per CI run (≈ 70,000 requests); the slow test adds more (8,000 until stop 53: ~4 minutes of
#: CI's 90; the seeds are the same every run, so the extra 5,000 checked again what every earlier run had).
CI_SEQUENCES = 2000
SLOW_SEQUENCES = 3000


def _assert_agree(oracle: KafkaOracle, seeds: range, kafka_version: str = "4.0") -> d.Triage:
    report = d.triage(oracle, seeds, kafka_version, shrink_examples=True)
    if report.diverging:
        lines = [report.table()]
        for kind, seq in report.examples.items():
            lines += ["", f"## {kind}", *d.explain(oracle, seq, kafka_version)]
        pytest.fail("\n".join(lines), pytrace=False)
    return report


def test_generated_sequences_agree_with_kafka(oracle: KafkaOracle) -> None:
    report = _assert_agree(oracle, range(CI_SEQUENCES))
    assert report.sequences == CI_SEQUENCES and report.ops > 30 * CI_SEQUENCES


@pytest.mark.slow
def test_more_generated_sequences_agree_with_kafka(oracle: KafkaOracle) -> None:
    _assert_agree(oracle, range(CI_SEQUENCES, CI_SEQUENCES + SLOW_SEQUENCES))


def test_the_generators_reach_every_answer(oracle: KafkaOracle) -> None:
    """What the sequences make Kafka answer: every error a classic group gives, parked requests answered
    later and never, several members joining in one millisecond, every API version."""
    answers: Counter[tuple[str, str]] = Counter()
    versions: set[tuple[ApiKey, int]] = set()
    late = same_ms = 0
    for seed in range(300):
        seq = d.generate(oracle, seed)
        kafka = d.run_oracle(oracle, seq)
        for i, op in enumerate(seq.ops):
            a = kafka.get(i)
            answers[(d.OP_NAMES[op.api], a.error if a else "never")] += 1
            versions.add((op.api, op.version))
            late += a is not None and d.answered_at(a) > d.START_MS + op.at_ms
            same_ms += (
                op.api is ApiKey.JOIN_GROUP
                and i > 0
                and seq.ops[i - 1].api is ApiKey.JOIN_GROUP
                and seq.ops[i - 1].at_ms == op.at_ms
                and seq.ops[i - 1].client_id != op.client_id
            )
    rebalance = ("REBALANCE_IN_PROGRESS", "UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION")
    reached = {
        "JoinGroup": (
            *("MEMBER_ID_REQUIRED", "UNKNOWN_MEMBER_ID", "FENCED_INSTANCE_ID", "never"),
            *("GROUP_MAX_SIZE_REACHED", "INCONSISTENT_GROUP_PROTOCOL", "INVALID_SESSION_TIMEOUT"),
        ),
        "SyncGroup": (*rebalance, "FENCED_INSTANCE_ID", "INCONSISTENT_GROUP_PROTOCOL"),
        "Heartbeat": (*rebalance, "FENCED_INSTANCE_ID"),
        "LeaveGroup": ("UNKNOWN_MEMBER_ID",),
        "OffsetCommit": rebalance,
    }
    expected = {(api, error) for api, errors in reached.items() for error in ("NONE", *errors)}
    assert expected <= set(answers), sorted(expected - set(answers))
    assert versions >= {(api, v) for api, vs in d.VERSIONS.items() for v in vs}
    assert late > 1000 and same_ms > 100


def test_a_sequence_means_the_same_when_played_again(oracle: KafkaOracle) -> None:
    """Member-id references resolve per side: replaying a stored sequence to the oracle gives the
    answers its clients saw while writing it, and a shrunk sequence (ops removed) is still valid."""
    for seed in range(5):
        seq = d.generate(oracle, seed)
        assert d.run_oracle(oracle, seq) == d.run_oracle(oracle, seq)
        fewer = seq.without({0, 3})
        assert len(fewer.ops) == len(seq.ops) - 2
        d.run_oracle(oracle, fewer)  # no reference to a removed op is left dangling


def test_the_model_makes_the_member_ids_kafka_makes(oracle: KafkaOracle) -> None:
    seq = d.generate(oracle, 11)
    kafka, model = d.run_oracle(oracle, seq), d.run_model(seq)
    generated = [
        (kafka[i].member_id, model[i].member_id)
        for i, op in enumerate(seq.ops)
        if op.api is ApiKey.JOIN_GROUP
        and i in kafka
        and i in model
        and kafka[i].error == "MEMBER_ID_REQUIRED"
    ]
    assert generated and all(k == m for k, m in generated)


def test_a_wrong_model_is_caught_and_shrunk(oracle: KafkaOracle, monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison can fail: with insertion order instead of Kafka's hash order for the members, the
    leader's member list comes out in another order, and the shrinker cuts the example down."""
    monkeypatch.setattr(state, "java_hash_order", lambda keys, capacity=16: list(keys))
    report = d.triage(oracle, range(60), shrink_examples=True)
    assert report.counts["JoinGroup.members_order"] > 0
    example = report.examples["JoinGroup.members_order"]
    assert len(example.ops) <= 12
    first = d.diverge(oracle, example)[0]
    assert first.kind == "JoinGroup.members_order" and sorted(first.kafka) == sorted(first.model)


def test_a_different_broker_setting_is_caught(oracle: KafkaOracle) -> None:
    """A model told the wrong ``group.initial.rebalance.delay.ms`` answers the first join at another time."""
    seq = next(
        s for s in (d.generate(oracle, k) for k in range(50)) if s.settings.initial_rebalance_delay_ms == 3000
    )
    kafka = d.run_oracle(oracle, seq)
    wrong = replace(seq, settings=replace(seq.settings, initial_rebalance_delay_ms=1000))
    diffs = d.compare(seq, kafka, d.run_model(wrong))
    assert any(x.kind == "JoinGroup.time" for x in diffs)


def test_kafka_3_7_differs_only_by_the_scala_coordinator(oracle: KafkaOracle) -> None:
    """The model at 3.7 with the Java coordinator agrees with Kafka 4.0 everywhere (3.7 shares every
    version-matrix behaviour with 4.0), so what differs with 3.7's default Scala coordinator is the
    Scala/Java deltas alone (listed by kind in rebalance_replay/transforms/coordinator/README.md)."""
    seeds = range(300)
    scala = d.triage(oracle, seeds, "3.7", shrink_examples=False)
    assert scala.diverging > 0  # the deltas are there to see
    _assert_agree(oracle, seeds, "3.7:java")
