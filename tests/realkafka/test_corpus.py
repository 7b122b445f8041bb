"""The committed real-Kafka corpus (``tests/data/real-kafka``: Kafka 2.7, 3.7 and 4.4 brokers, Java and
librdkafka consumers, one group per scenario) through the product with its defaults: every line ingested,
nothing quarantined, and the replay agreeing with what the real brokers answered."""

from __future__ import annotations

import json

import pytest

from rebalance_replay.transforms.audit.registry import rule_ids
from simulator.realkafka.agreement import CORPUS, MODES, RecordingResult, recordings
from simulator.realkafka.audit_truth import NOT_TRIGGERABLE, verdicts
from simulator.realkafka.scenarios import SCENARIOS
from tests.realkafka.checks import agreement_problems, ingest_problems, scored_everywhere

#: the corpus fixture runs the product ~60 times per variant (~5 min on a quiet box, beside the other xdist
#: worker): more than the default 600 s timeout allows on a loaded one
pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(1800)]


def test_the_corpus_covers_every_release_and_scenario() -> None:
    """Three releases (text era 2.7, JSON 3.7, newest 4.x), every scenario of the library recorded
    where its release supports it, with its ground truth, and no scenario that failed to run."""
    recs = recordings(CORPUS)
    releases = {r.parent.name for r in recs}
    assert releases == {"2.7", "3.7", "4.4"}, releases
    for release in releases:
        recorded: set[str] = set()
        for rec in (r for r in recs if r.parent.name == release):
            manifest = json.loads((rec / "manifest.json").read_text())
            assert manifest["failed"] == [], (rec, manifest["failed"])
            truth = json.loads((rec / "ground_truth.json").read_text())
            recorded |= {s["scenario"] for s in truth["scenarios"]}
            assert all(s["error"] is None for s in truth["scenarios"])
        wanted = {s.name for s in SCENARIOS if s.releases is None or release in s.releases}
        assert recorded == wanted, (release, wanted ^ recorded)
    assert len({s.name for s in SCENARIOS}) >= 20


def test_every_line_is_ingested(corpus_results: list[RecordingResult]) -> None:
    problems = [p for res in corpus_results for p in ingest_problems(res)]
    assert problems == []


@pytest.mark.parametrize("mode", MODES)
def test_replay_agrees_with_the_real_brokers(corpus_results: list[RecordingResult], mode: str) -> None:
    assert agreement_problems(corpus_results, mode) == []
    assert scored_everywhere(corpus_results) == []


def test_the_audit_holds_on_real_clients(corpus_results: list[RecordingResult]) -> None:
    """Every rule a real client can trigger is found in its scenario (its group, a member of each process
    it is about, inside the scenario's run) on every release whose log can show it; the controls
    (ordinary behaviour: a group's start, scale-out and -in, clean closes, static restarts and deploys,
    eager and cooperative rebalances) and the harness's warm-up group raise no warning or critical
    finding, and no scenario raises one it was not written for."""
    found, problems = verdicts(corpus_results)
    assert problems == []
    assert {v.rule for v in found if v.outcome == "found"} == set(rule_ids()) - set(NOT_TRIGGERABLE)
