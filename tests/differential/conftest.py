"""The differential tests need Kafka's own coordinator (``../shared/kafka-oracle`` or
``$KAFKA_ORACLE_HOME``) and Java 17. Without them they skip with a one-line reason, unless CI requires
the tier (``DIFFERENTIAL_REQUIRED=1``, set by ``.ci/run`` for ``make test``, or
``INDEPENDENT_TIERS_REQUIRED=1``): then a missing oracle fails them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from simulator.oracle import KafkaOracle, OracleUnavailable, oracle_home
from tests import helpers

REQUIRED = "DIFFERENTIAL_REQUIRED"


def differential_required() -> bool:
    return helpers.tier_required(REQUIRED)


@pytest.fixture(scope="session")
def oracle() -> Iterator[KafkaOracle]:
    try:
        home = oracle_home()
    except OracleUnavailable as exc:
        helpers.unavailable("differential", REQUIRED, str(exc))
    with KafkaOracle(home) as process:
        yield process
