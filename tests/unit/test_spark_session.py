"""get_spark's Java detection and session reuse, without starting a JVM."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from rebalance_replay.jobs import spark_session
from rebalance_replay.jobs.spark_session import (
    DEFAULT_CONF,
    JAVA_MISSING_MESSAGE,
    JavaMissingError,
    get_spark,
    java_available,
    java_executable,
    local_cores,
)


def _fake_java(folder: Path, *, executable: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    java = folder / "java"
    java.write_text("#!/bin/sh\nexit 0\n")
    mode = java.stat().st_mode
    java.chmod(mode | stat.S_IXUSR if executable else mode & ~(stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH))
    return java


@pytest.fixture
def no_java(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An environment without any Java: no JAVA_HOME, PATH holding only an empty folder."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    monkeypatch.setenv("PATH", str(empty))
    # a session another test already started in this process would be reused before any Java check
    monkeypatch.setattr("rebalance_replay.jobs.spark_session._existing_session", lambda: None)
    return empty


def test_java_on_path_is_found(no_java: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    java = _fake_java(tmp_path / "jdk" / "bin")
    monkeypatch.setenv("PATH", os.pathsep.join([str(no_java), str(java.parent)]))
    assert java_available()
    assert java_executable() == str(java)


def test_java_home_is_used(no_java: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    java = _fake_java(tmp_path / "jdk17" / "bin")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk17"))
    assert java_available()
    assert java_executable() == str(java)


def test_java_home_wins_over_path_like_spark_launcher(
    no_java: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # bin/spark-class runs $JAVA_HOME/bin/java when JAVA_HOME is set and never falls back to PATH
    on_path = _fake_java(tmp_path / "path-jdk" / "bin")
    monkeypatch.setenv("PATH", str(on_path.parent))
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "broken-jdk"))
    assert not java_available()
    with pytest.raises(JavaMissingError, match=r"JAVA_HOME=.*broken-jdk"):
        get_spark()


def test_empty_java_home_counts_as_unset(
    no_java: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    java = _fake_java(tmp_path / "jdk" / "bin")
    monkeypatch.setenv("JAVA_HOME", "  ")
    monkeypatch.setenv("PATH", str(java.parent))
    assert java_executable() == str(java)


def test_non_executable_java_does_not_count(
    no_java: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # (even root needs one x bit for os.access(X_OK))
    _fake_java(tmp_path / "jdk" / "bin", executable=False)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    assert not java_available()


def test_no_java_anywhere(no_java: Path) -> None:
    assert not java_available()
    assert java_executable() is None


def test_get_spark_raises_before_starting_a_jvm(no_java: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spark_session, "_existing_session", lambda: None)

    def must_not_build(*args: object, **kwargs: object) -> None:  # pragma: no cover - the assertion
        raise AssertionError("tried to build a SparkSession without Java")

    monkeypatch.setattr(spark_session, "_preset_keys", must_not_build)
    with pytest.raises(JavaMissingError) as info:
        get_spark()
    message = str(info.value)
    assert message.startswith(JAVA_MISSING_MESSAGE)
    assert "\n" not in message
    assert JAVA_MISSING_MESSAGE == "Java 17 is required to run Spark: install a JDK and set JAVA_HOME"


def test_existing_session_is_returned_untouched(no_java: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class FakeSession:
        def __getattr__(self, name: str) -> object:
            raise AssertionError(f"get_spark touched the existing session ({name})")

    existing = FakeSession()
    monkeypatch.setattr(spark_session, "_existing_session", lambda: existing)
    # even without Java and with conf given: the running session wins and is not reconfigured
    assert get_spark(conf={"spark.sql.shuffle.partitions": "99"}) is existing


def test_default_conf_suits_a_small_box() -> None:
    assert DEFAULT_CONF["spark.driver.memory"] == "4g"
    assert DEFAULT_CONF["spark.sql.shuffle.partitions"] == "8"
    assert DEFAULT_CONF["spark.sql.session.timeZone"] == "UTC"
    assert DEFAULT_CONF["spark.sql.execution.arrow.pyspark.enabled"] == "true"
    assert DEFAULT_CONF["spark.sql.parquet.outputTimestampType"] == "TIMESTAMP_MICROS"
    assert DEFAULT_CONF["spark.ui.enabled"] == "false"
    assert DEFAULT_CONF["spark.ui.showConsoleProgress"] == "false"
    assert DEFAULT_CONF["spark.sql.streaming.stateStore.providerClass"].endswith("RocksDBStateStoreProvider")


@pytest.mark.spark
@pytest.mark.timeout(120)
def test_built_session_settings_and_reuse(spark: object) -> None:
    import sys

    s: Any = spark
    # the running session comes back as is: conf given now is not applied to it
    assert get_spark() is s
    assert get_spark(conf={"spark.sql.shuffle.partitions": "99"}) is s
    assert s.conf.get("spark.sql.shuffle.partitions") == "2"  # the test fixture's value
    assert s.conf.get("spark.sql.session.timeZone") == "UTC"
    assert s.conf.get("spark.sql.execution.arrow.pyspark.enabled") == "true"
    assert s.conf.get("spark.sql.parquet.outputTimestampType") == "TIMESTAMP_MICROS"
    assert s.conf.get("spark.sql.streaming.stateStore.providerClass").endswith("RocksDBStateStoreProvider")
    assert s.sparkContext.getConf().get("spark.ui.enabled") == "false"
    # Python workers run this interpreter (and so see pandas/pyarrow)
    workers = s.sparkContext.parallelize([0], 1).map(lambda _: __import__("sys").executable).collect()
    assert workers == [sys.executable]


@pytest.mark.parametrize(
    ("master", "parallelism", "cores"),
    [
        ("local[4]", 4, 4),
        ("local[*]", 2, 2),
        ("local", 1, 1),
        ("local[2,3]", 2, 2),  # with task retries
        ("local-cluster[2,1,1024]", 2, None),  # separate executor processes: a cluster
        ("yarn", 16, None),
        ("spark://host:7077", 16, None),
    ],
)
def test_local_cores(master: str, parallelism: int, cores: int | None) -> None:
    class Context:
        def __init__(self) -> None:
            self.master = master
            self.defaultParallelism = parallelism

    class Session:
        sparkContext = Context()

    fake: Any = Session()
    assert local_cores(fake) == cores
