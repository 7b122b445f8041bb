"""The real-Kafka tier, recorded afresh: brokers of every release started from Maven Central's jars,
a part of the scenario library run against them by real Java and librdkafka consumers, and the same
checks as on the committed corpus. Marked ``realkafka`` (``make test-realkafka``; CI runs it with
``REALKAFKA_REQUIRED=1``, where a missing Java, Maven or Maven Central fails instead of skipping)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from simulator.realkafka.agreement import MODES, evaluate
from simulator.realkafka.audit_truth import verdicts
from simulator.realkafka.jars import RELEASES, HarnessUnavailable, fetch
from simulator.realkafka.record import record
from tests.realkafka.checks import agreement_problems, ingest_problems, scored_everywhere
from tests.realkafka.conftest import unavailable

pytestmark = [pytest.mark.realkafka, pytest.mark.spark, pytest.mark.slow]

#: What CI records afresh per release (the whole library is ``make real-kafka-corpus``): birth with the
#: initial delay, a crash, a static restart, a rolling restart of default client ids, librdkafka,
#: group.max.size, the coordinator moving, and a static member's poll timeout (its rejoin on the same
#: connection); the audit must find each scenario's rules and nothing on the controls.
LIVE = {
    "birth",
    "crash",
    "static-restart-inside",
    "rolling-restart",
    "rdkafka-basic",
    "max-size",
    "coordinator-moves",
    "static-poll-timeout",
}


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("release", sorted(RELEASES))
def test_fresh_recording_through_the_product(release: str, tmp_path: Path, spark: Any) -> None:
    if shutil.which("mvn") is None or shutil.which("java") is None:
        unavailable("Java 17 and Maven are needed to fetch and run real brokers")
    try:
        fetch(RELEASES[release], "kafka_2.13")
    except HarnessUnavailable as e:
        unavailable(str(e))
    saved = record([release], tmp_path / "corpus", tmp_path / "work", LIVE)
    assert saved
    results = [evaluate(rec, tmp_path / "eval" / rec.name) for rec in saved]
    assert [r for res in results for r in res.manifest["failed"]] == []
    assert [p for res in results for p in ingest_problems(res)] == []
    for mode in MODES:
        assert agreement_problems(results, mode) == []
    assert scored_everywhere(results) == []
    assert verdicts(results)[1] == []
