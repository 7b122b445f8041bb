"""Shared fixtures: one SparkSession per test run (starting the JVM costs several seconds) and a fresh
warehouse folder per test. Tests marked ``spark`` are all skipped, with the reason, when no Java runtime
can be found.

Hypothesis profiles: ``ci`` (derandomized: the same examples every run, the failing example's blob
printed, no deadline) is selected when ``CI`` is set; ``random`` (fresh random examples each run, blob
printed, no deadline) is the separate randomized run (``HYPOTHESIS_PROFILE=random``); ``dev`` otherwise.
``HYPOTHESIS_PROFILE`` names a profile explicitly."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parents[1]

# A pytest-xdist worker's __main__ (execnet's) has neither __spec__ nor __file__, which pyspark.sql.connect
# (imported by Great Expectations) takes for a doctest run without Spark Connect and answers with
# sys.exit(0). Name the worker's main module so it is taken for what it is: a program.
if os.environ.get("PYTEST_XDIST_WORKER"):
    _main = sys.modules["__main__"]
    if getattr(_main, "__spec__", None) is None and not hasattr(_main, "__file__"):
        _main.__file__ = "<pytest-xdist worker>"
if str(ROOT) not in sys.path:  # the project is not installed into the venv: import it from the tree
    sys.path.insert(0, str(ROOT))

from rebalance_replay.jobs.spark_session import JAVA_MISSING_MESSAGE, java_available  # noqa: E402

settings.register_profile("ci", derandomize=True, print_blob=True, deadline=None)
settings.register_profile("random", derandomize=False, print_blob=True, deadline=None)
settings.register_profile("dev", print_blob=True, deadline=None)


def hypothesis_profile(environ: dict[str, str] | os._Environ[str] = os.environ) -> str:
    """The profile this run uses: ``HYPOTHESIS_PROFILE`` if set, else ``ci`` under CI, else ``dev``."""
    named = environ.get("HYPOTHESIS_PROFILE")
    if named:
        return named
    return "ci" if environ.get("CI", "") not in ("", "0", "false") else "dev"


settings.load_profile(hypothesis_profile())

SPARK_SKIP_REASON = f"{JAVA_MISSING_MESSAGE} (no Java found, Spark tests skipped)"

#: small and quick: 2 local cores, few partitions, no UI
TEST_SPARK_CONF = {
    "spark.master": "local[2]",
    "spark.driver.memory": "2g",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.adaptive.coalescePartitions.initialPartitionNum": "2",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.log.level": "ERROR",
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if java_available():
        return
    skip = pytest.mark.skip(reason=SPARK_SKIP_REASON)
    for item in items:
        if "spark" in item.keywords:
            item.add_marker(skip)


#: where the tests' Spark (and the cluster tests' drivers) cache Delta's jars from Maven Central
IVY_DIR = ROOT / ".cache" / "ivy"
#: Set (``.ci/run`` does) to fail, not skip, the delta-spark tests when Delta's jars cannot be fetched.
DELTA_SPARK_REQUIRED = "DELTA_SPARK_REQUIRED"
#: why the session has no Delta jars (None: it has them)
DELTA_SPARK_MISSING: list[str] = []


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The test run's SparkSession (built through ``get_spark`` with test-friendly settings), with
    Delta's jars from Maven Central (``spark.jars.packages``, cached in ``.cache/ivy``) so both storage
    engines run in it. Without them (no network, no cache) the session starts without, and the
    delta-spark tests skip — or fail when ``DELTA_SPARK_REQUIRED`` is set (CI)."""
    if not java_available():
        pytest.skip(SPARK_SKIP_REASON)
    from rebalance_replay.jobs.delta import delta_session_conf
    from rebalance_replay.jobs.spark_session import get_spark

    conf = dict(TEST_SPARK_CONF)
    conf["spark.sql.warehouse.dir"] = str(tmp_path_factory.mktemp("spark-warehouse"))
    try:
        session = get_spark(
            "rebalance-replay-tests", conf={**conf, **delta_session_conf(ivy_dir=str(IVY_DIR))}
        )
    except Exception as e:  # Ivy could not resolve the jars: the JVM did not start with them
        DELTA_SPARK_MISSING.append(
            f"Delta's jars could not be fetched ({str(e).strip().splitlines()[0][:200]})"
        )
        session = get_spark("rebalance-replay-tests", conf=conf)
    yield session
    session.stop()


def delta_spark_or_skip(spark: Any) -> None:
    """Skip a delta-spark test when the session has no Delta jars; fail instead when CI requires them."""
    from rebalance_replay.jobs.delta import delta_spark_available
    from tests.helpers import unavailable

    if not delta_spark_available(spark):
        reason = DELTA_SPARK_MISSING[0] if DELTA_SPARK_MISSING else "Delta's jars are not on the classpath"
        unavailable("delta-spark", DELTA_SPARK_REQUIRED, reason)


@pytest.fixture(params=["delta-rs", pytest.param("delta-spark", marks=pytest.mark.deltaspark)])
def engine(request: pytest.FixtureRequest, spark: Any) -> str:
    """Each storage engine in turn (the delta-spark one needs Delta's jars: see ``spark``)."""
    if request.param == "delta-spark":
        delta_spark_or_skip(spark)
    return str(request.param)


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    """An empty warehouse folder for one test."""
    d = tmp_path / "warehouse"
    d.mkdir()
    return d
