"""The differential tests need Kafka's own coordinator (``../shared/kafka-oracle`` or
``$KAFKA_ORACLE_HOME``) and Java 17; without them they skip with a one-line reason."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from simulator.oracle import KafkaOracle, OracleUnavailable, oracle_home


@pytest.fixture(scope="session")
def oracle() -> Iterator[KafkaOracle]:
    try:
        home = oracle_home()
    except OracleUnavailable as exc:
        pytest.skip(str(exc))
    with KafkaOracle(home) as process:
        yield process
