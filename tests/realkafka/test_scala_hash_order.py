"""The Scala coordinator's member order (Kafka 2.x/3.x ``GroupMetadata.members``, a Scala 2.13
``mutable.HashMap``) against the very ``scala-library`` jar each Scala release's broker runs, fetched
from Maven Central with the broker: who becomes leader when the leader leaves or does not rejoin, and the
order of the leader's member list, follow it (a rolling restart recorded on Kafka 3.7 elected a leader
that Java's ``HashMap`` order did not predict). Marked ``realkafka``: CI fails it when Maven Central or
Java is missing."""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path

import pytest

from simulator.realkafka.jars import RELEASES, HarnessUnavailable, fetch
from tests.realkafka.conftest import unavailable
from tests.unit.coordinator.test_java_hash_order import (
    SCALA_IMMUTABLE_PROGRAM,
    SCALA_PROGRAM,
    VOTE_ORDERS,
    python_order,
    python_vote_order,
    run_program,
    scripts,
    vote_scripts,
)

pytestmark = [pytest.mark.realkafka]

SCALA_RELEASES = sorted(line for line, rel in RELEASES.items() if rel.version < "4")


#: Assignor names as real clients send them, and a few custom ones: the keys of the vote map.
PROTOCOLS = ["range", "roundrobin", "sticky", "cooperative-sticky", "uniform", "custom-a", "custom-b", "rack"]


def _java_and_library(release: str) -> tuple[str, str]:
    """``java`` and the scala-library jar the release's broker runs (fetched with the broker)."""
    java = shutil.which("java")
    if java is None or shutil.which("mvn") is None:
        unavailable("Java and Maven are needed to fetch the broker's scala-library")
        raise AssertionError("unreachable")
    try:
        jars = fetch(RELEASES[release], "kafka_2.13")
    except HarnessUnavailable as e:
        unavailable(str(e))
        raise AssertionError("unreachable") from e
    library = sorted(jars.glob("scala-library-*.jar"))
    assert library, f"no scala-library jar among {jars}"
    return java, str(library[0])


@pytest.mark.parametrize("release", SCALA_RELEASES)
def test_protocol_vote_ties_follow_scalas_immutable_hashmap(release: str, tmp_path: Path) -> None:
    """``selectProtocol``'s ``groupBy(identity).maxBy(...)``: the first maximum in the order of an
    immutable ``HashMap`` of protocol names."""
    java, library = _java_and_library(release)
    rng = random.Random(5)
    all_scripts = [
        ["+" + p for p in rng.sample(PROTOCOLS, rng.randrange(1, len(PROTOCOLS) + 1))] for _ in range(60)
    ]
    all_scripts += scripts(random.Random(13), count=40)  # many keys: deeper tries
    lines = run_program(java, SCALA_IMMUTABLE_PROGRAM, tmp_path, all_scripts, classpath=library)
    wrong = [
        (s, line)
        for s, line in zip(all_scripts, lines, strict=True)
        if python_vote_order(s) != (line.split(" ") if line else [])
    ]
    assert wrong == []


@pytest.mark.parametrize("release", SCALA_RELEASES)
def test_member_order_is_scala_mutable_hashmaps(release: str, tmp_path: Path) -> None:
    java, library = _java_and_library(release)
    all_scripts = scripts(random.Random(11), count=120)
    lines = run_program(java, SCALA_PROGRAM, tmp_path, all_scripts, classpath=library)
    wrong = [
        (i, python_order(s, "scala"), line)
        for i, (s, line) in enumerate(zip(all_scripts, lines, strict=True))
        if python_order(s, "scala") != (line.split(" ") if line else [])
    ]
    assert wrong == []
    # and the two layouts do differ on these scripts (else this test would not tell them apart)
    assert any(python_order(s, "java") != python_order(s, "scala") for s in all_scripts)


@pytest.mark.parametrize("release", SCALA_RELEASES)
def test_the_recorded_vote_orders_are_the_scala_librarys(release: str, tmp_path: Path) -> None:
    """The fast unit test of the vote order (``test_java_hash_order.py``) compares the model with orders
    recorded once from the real scala-library: they must still be what the library gives.
    ``RECORD_VOTE_ORDERS=1`` writes them again (from the last release checked)."""
    java, library = _java_and_library(release)
    lines = run_program(java, SCALA_IMMUTABLE_PROGRAM, tmp_path, vote_scripts(), classpath=library)
    orders = [line.split(" ") if line else [] for line in lines]
    if os.environ.get("RECORD_VOTE_ORDERS"):
        recorded = json.loads(VOTE_ORDERS.read_text())
        body = ",\n".join("  " + json.dumps(o) for o in orders)
        libraries = json.dumps(recorded["scala_library"])
        VOTE_ORDERS.write_text(f'{{\n "scala_library": {libraries},\n "orders": [\n{body}\n ]\n}}\n')
    assert json.loads(VOTE_ORDERS.read_text())["orders"] == orders
