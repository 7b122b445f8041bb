"""The product on logs recorded from real Kafka brokers and real clients.

``tests/data/real-kafka`` is the committed corpus (``make real-kafka-corpus`` records it again); the
tests marked ``realkafka`` record a part of it afresh from Maven Central's jars and run the same checks.
When CI requires the real-Kafka tier (``REALKAFKA_REQUIRED=1``, set by ``.ci/run``), a missing Java,
Maven or Maven Central fails those tests instead of skipping them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

from simulator.realkafka.agreement import CORPUS, RecordingResult, evaluate, recordings
from tests import helpers

REQUIRED = "REALKAFKA_REQUIRED"


def realkafka_required() -> bool:
    return helpers.tier_required(REQUIRED)


def unavailable(reason: str) -> NoReturn:
    """Fail when CI requires the tier, else skip with the reason (``tests.helpers.unavailable``)."""
    helpers.unavailable("real-Kafka", REQUIRED, reason)


@pytest.fixture(scope="session", params=["with server.log", "request log only"])
def corpus_results(
    request: pytest.FixtureRequest, spark: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[list[RecordingResult]]:
    """Every committed recording ingested once and replayed in both modes, with the product's defaults:
    once with the brokers' server.log beside their request logs, once with the request logs alone (what
    most users ship; the versions and settings must then come from the answers)."""
    recs = recordings(CORPUS)
    assert recs, f"no recordings under {CORPUS}"
    alone = request.param == "request log only"
    work = tmp_path_factory.mktemp("realkafka-corpus")
    yield [evaluate(rec, work / rec.parent.name / rec.name, request_log_only=alone) for rec in recs]


def corpus_recordings() -> list[Path]:
    return recordings(CORPUS)
