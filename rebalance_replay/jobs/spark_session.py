"""The one way this project gets a SparkSession.

``get_spark()`` returns the session that is already running (spark-submit, Databricks, a test fixture)
untouched, and otherwise builds a local one sized for a small machine (2 cores, 24 GB): UTC, Arrow on,
quiet logs, no UI, few shuffle partitions, TIMESTAMP_MICROS parquet (what Delta expects), the RocksDB
state store, and Python workers running the driver's own interpreter.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from rebalance_replay.jobs.errors import JAVA_MISSING_MESSAGE, JavaMissingError

if TYPE_CHECKING:  # pragma: no cover - typing only
    from pyspark.sql import SparkSession

__all__ = [
    "DEFAULT_CONF",
    "JAVA_MISSING_MESSAGE",
    "JavaMissingError",
    "get_spark",
    "java_available",
    "java_executable",
    "local_cores",
    "session_conf",
]


ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"

#: log4j2 configuration of a locally built session's JVM: errors only, no start-up notices
LOG4J2_CONFIG = Path(__file__).resolve().parent.parent / "conf" / "log4j2.properties"

#: Settings of a locally built session (``spark.master``, the warehouse dir and the Python executables
#: are added by :func:`get_spark`). Any of them can be overridden through ``get_spark(conf=...)``.
DEFAULT_CONF: Mapping[str, str] = {
    # memory for a 2-core / 24 GB box; driver memory only counts before the JVM starts (it does here)
    "spark.driver.memory": "4g",
    "spark.driver.maxResultSize": "2g",
    "spark.sql.shuffle.partitions": "8",
    # time: UTC everywhere, on the SQL side and in the JVM
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.extraJavaOptions": f"-Duser.timezone=UTC -Dlog4j2.configurationFile={LOG4J2_CONFIG}",
    "spark.executor.extraJavaOptions": "-Duser.timezone=UTC",
    # Arrow for toPandas/createDataFrame/pandas UDFs
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # quiet: errors only from the start (LOG4J2_CONFIG), no UI, no progress bars
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    # Delta wants INT64 microsecond timestamps, not INT96
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    # no _SUCCESS marker files in written folders
    "spark.hadoop.mapreduce.fileoutputcommitter.marksuccessfuljobs": "false",
    # transformWithState (streaming) needs RocksDB
    "spark.sql.streaming.stateStore.providerClass": ROCKSDB_PROVIDER,
}

#: Spark's log level once a local session runs (``spark.log.level`` or the CLI's ``--verbose``: WARN)
DEFAULT_LOG_LEVEL = "ERROR"


def _java_binary_name() -> str:
    return "java.exe" if os.name == "nt" else "java"


def java_executable() -> str | None:
    """The ``java`` Spark's launcher would run, or None.

    Mirrors ``bin/spark-class``: when ``JAVA_HOME`` is set, only ``$JAVA_HOME/bin/java`` counts (the
    launcher does not fall back to ``PATH``); otherwise the first ``java`` on ``PATH``.
    """
    java_home = os.environ.get("JAVA_HOME", "").strip()
    if java_home:
        candidate = os.path.join(java_home, "bin", _java_binary_name())
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
        return None
    return shutil.which("java")


def java_available() -> bool:
    """True when a Java runtime can be found the way Spark's launcher looks for one."""
    return java_executable() is not None


def _missing_java_detail() -> str:
    java_home = os.environ.get("JAVA_HOME", "").strip()
    if java_home:
        return f"JAVA_HOME={java_home} has no executable bin/{_java_binary_name()}"
    return "no java on PATH and JAVA_HOME is not set"


def _existing_session() -> SparkSession | None:
    """The session already running in this process (this thread's active one first), if any."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    default = SparkSession._instantiatedSession
    if default is not None:
        sc = getattr(default, "_sc", None)
        if sc is not None and getattr(sc, "_jsc", None) is not None:
            return default
    return None


def _preset_keys() -> set[str]:
    """Settings already fixed by spark-submit (the driver JVM exists before our code runs), which a
    locally built session must not override. Empty when no JVM runs yet."""
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        return set()
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()
    return {k for k, _ in SparkConf().getAll()}


_TEMP_WAREHOUSES: list[str] = []


def _cleanup_temp_warehouses() -> None:
    for d in _TEMP_WAREHOUSES:
        shutil.rmtree(d, ignore_errors=True)


atexit.register(_cleanup_temp_warehouses)


def _temp_warehouse() -> str:
    d = tempfile.mkdtemp(prefix="rebalance-replay-spark-warehouse-")
    _TEMP_WAREHOUSES.append(d)
    return d


def get_spark(
    app_name: str = "rebalance-replay", *, conf: Mapping[str, str] | None = None, log_level: str | None = None
) -> SparkSession:
    """Return the running SparkSession unchanged, or build a local one.

    If a session already exists (spark-submit after it created one, Databricks, a test fixture) it is
    returned as is: none of its settings are overridden, ``conf`` is ignored. Otherwise a session is
    built from :data:`DEFAULT_CONF` plus ``spark.master=local[*]``, a temporary ``spark.sql.warehouse.dir``
    and the driver's Python for the workers, with ``conf`` applied on top (``conf["spark.master"]``
    picks another master). Settings fixed by spark-submit are kept.

    Raises:
        JavaMissingError: no Java runtime was found (checked before trying to start the JVM).
    """
    existing = _existing_session()
    if existing is not None:
        return existing

    if "PYSPARK_GATEWAY_PORT" not in os.environ and not java_available():
        raise JavaMissingError(_missing_java_detail())

    from pyspark.sql import SparkSession

    caller = dict(conf or {})
    preset = _preset_keys()
    settings: dict[str, str] = {
        "spark.master": "local[*]",
        "spark.app.name": app_name,
        **DEFAULT_CONF,
    }
    if "spark.sql.warehouse.dir" not in caller and "spark.sql.warehouse.dir" not in preset:
        settings["spark.sql.warehouse.dir"] = _temp_warehouse()
    settings.update(caller)
    # settings spark-submit fixed (its --master, --conf …) win over our defaults and the config file
    settings = {k: v for k, v in settings.items() if k not in preset}

    master = settings.get("spark.master", "")
    if master.startswith("local"):
        # Workers must see the driver's packages (pandas, pyarrow...): run them on this interpreter.
        os.environ["PYSPARK_PYTHON"] = sys.executable
        os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable

    builder = SparkSession.builder
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level or settings.get("spark.log.level", DEFAULT_LOG_LEVEL))
    # transformWithState in batch needs the StateStoreCoordinator, registered on first use of streams.
    _ = spark.streams.active
    return spark


@contextlib.contextmanager
def session_conf(spark: SparkSession, settings: Mapping[str, str]) -> Iterator[None]:
    """Set runtime SQL settings for the duration of a block (a write, a query), then put the session's
    values back."""
    changed: dict[str, str | None] = {}
    for key, value in settings.items():
        old = spark.conf.get(key, None)
        if old != value:
            changed[key] = old
            spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, old in changed.items():
            if old is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, old)


def local_cores(spark: SparkSession) -> int | None:
    """The number of cores of a ``local[...]`` master (its default parallelism), None on a cluster."""
    master = spark.sparkContext.master
    if not re.fullmatch(r"local(\[.*\])?", master):
        return None
    return max(1, int(spark.sparkContext.defaultParallelism))
