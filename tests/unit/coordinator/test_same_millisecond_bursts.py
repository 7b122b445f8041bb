"""Same-millisecond bursts answered by Kafka's own coordinator (``simulator.bursts``): the replay finds an
order of each tie set that explains every logged answer, whatever order the lines and connections come
in. The expected answers are Kafka's, recorded from the oracle into ``data/bursts/*.jsonl``
(``python -m simulator.bursts --write tests/unit/coordinator/data/bursts``; checked live against the
oracle by ``tests/differential/test_bursts_from_kafka.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rebalance_replay.transforms.kafka_protocol import ApiKey
from rebalance_replay.transforms.replay import AMBIGUOUS_ORDER_REASON
from simulator import bursts

DATA = Path(__file__).parent / "data" / "bursts"
FIXTURES = sorted(DATA.glob("*.jsonl"))
#: line/connection shuffles per recording (None: the lines of an instant in arrival order)
SHUFFLES = [None, 0, 1, 2, 3]


def test_every_scenario_is_recorded() -> None:
    assert sorted(p.stem for p in FIXTURES) == sorted(s.name for s in bursts.SCENARIOS)


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
@pytest.mark.parametrize("shuffle", SHUFFLES)
def test_the_replay_agrees_with_every_answer_kafka_gave(path: Path, shuffle: int | None) -> None:
    rec = bursts.read_fixture(path)
    assert bursts.check(rec, shuffle) == []


@pytest.mark.parametrize("name", ["capped_v3", "capped_kip394", "static_capped"])
def test_track_mode_agrees_too(name: str) -> None:
    path = DATA / f"{name}.jsonl"
    assert bursts.check(bursts.read_fixture(path), 7, mode="track") == []


def test_the_burst_of_the_issue_is_in_the_recording() -> None:
    """Ten JoinGroups in one millisecond against group.max.size 5: five refused at once, five parked and
    answered together later, led by one of them."""
    rec = bursts.read_fixture(DATA / "capped_v3.jsonl")
    answers = rec.answers()
    joins = [i for i, op in enumerate(rec.sequence.ops) if op.api is ApiKey.JOIN_GROUP]
    assert len(joins) == 10 and len({rec.sequence.ops[i].at_ms for i in joins}) == 1
    refused = [i for i in joins if answers[i].error == "GROUP_MAX_SIZE_REACHED"]
    accepted = [i for i in joins if answers[i].error == "NONE"]
    assert len(refused) == 5 and len(accepted) == 5
    arrival = bursts.d.START_MS + rec.sequence.ops[joins[0]].at_ms
    assert all(answers[i].completion_ms == arrival for i in refused)
    assert all(answers[i].completion_ms > arrival for i in accepted)  # type: ignore[operator]
    assert len({answers[i].leader for i in accepted}) == 1


def test_an_order_the_log_does_not_single_out_is_reported_ambiguous() -> None:
    """The same burst in a log that lost the parked JoinGroups' leader and member list: any of the five
    accepted members may have joined first, and each order makes another leader. Their answers are
    unscored as ambiguous rather than guessed; nothing is scored as a disagreement."""
    rec = bursts.read_fixture(DATA / "capped_v3.jsonl")
    rows, line_ops = bursts.log_rows(rec, 2)
    blind = set()
    for row in rows:
        if row["api_key"] == ApiKey.JOIN_GROUP and row["completion_ms"] > row["arrival_ms"]:
            row["response_leader"], row["response_members"] = None, None
            blind.add(line_ops[row["line_no"]])
    assert len(blind) == 5
    predictions = bursts.replay(rows, bursts.coordinator(rec))
    outcomes = bursts.disagreements(rec, predictions, line_ops)
    assert not [o for o in outcomes if o.what.startswith("mismatch")]
    ambiguous = {o.op for o in outcomes if o.what == f"unscored: {AMBIGUOUS_ORDER_REASON}"}
    assert blind <= ambiguous


def test_an_order_that_explains_the_log_at_once_is_still_checked_for_ambiguity() -> None:
    """The same blinded log without the five refused JoinGroups (the order the lines give explains
    every answer, so no search runs): the reversed order explains them too and makes another leader,
    so the five answers are still unscored as ambiguous."""
    rec = bursts.read_fixture(DATA / "capped_v3.jsonl")
    rows, line_ops = bursts.log_rows(rec, 2)
    kept, blind = [], set()
    for row in rows:
        if row["api_key"] == ApiKey.JOIN_GROUP and row["error_name"] != "NONE":
            continue
        if row["api_key"] == ApiKey.JOIN_GROUP and row["completion_ms"] > row["arrival_ms"]:
            row["response_leader"], row["response_members"] = None, None
            blind.add(line_ops[row["line_no"]])
        kept.append(row)
    assert len(blind) == 5 and len(kept) == len(rows) - 5
    predictions = bursts.replay(kept, bursts.coordinator(rec))
    outcomes = bursts.disagreements(rec, predictions, line_ops)
    assert not [o for o in outcomes if o.what.startswith("mismatch")]
    ambiguous = {o.op for o in outcomes if o.what == f"unscored: {AMBIGUOUS_ORDER_REASON}"}
    assert blind <= ambiguous
