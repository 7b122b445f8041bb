"""Delta tables of the warehouse: the ONE package that knows which Delta engine runs.

Jobs see :class:`DeltaStore` (``exists``, ``version``, ``read``, ``append``, ``overwrite``, ``new_rows``,
``task_stage``/``commit_task_files``) and :func:`open_store`; nothing outside this package should know
which engine runs.

Modules:
    base        the interface jobs use, ``Engine``/``EngineChoice`` literals, :class:`NewRows`
    rs          the delta-rs engine (embedded default): Spark writes parquet, delta-rs commits the log
    spark       the delta-spark engine (Delta jars on the Spark classpath), ``delta_spark_available``
    features    Delta table features and schema drift the delta-rs engine refuses
    partitions  partition values: Python values, Delta log strings, hive-style folder names
    stats       per-file statistics from parquet footers
    task_files  parquet files a Python task writes itself from Arrow batches (``task_stage``)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rebalance_replay.jobs.delta.base import (
    ENGINE_CHOICES,
    ENGINES,
    AsOf,
    Commit,
    DeltaStore,
    Engine,
    EngineChoice,
    Maintenance,
    NewRows,
)
from rebalance_replay.jobs.delta.rs import AddedFile, DeltaRsStore
from rebalance_replay.jobs.delta.spark import (
    DELTA_LAKE_VERSION,
    DeltaSparkStore,
    delta_package,
    delta_session_conf,
    delta_spark_available,
)
from rebalance_replay.jobs.errors import HistoryUnavailableError, TableFeatureError
from rebalance_replay.jobs.paths import is_uri

if TYPE_CHECKING:  # pragma: no cover - typing only
    from pyspark.sql import SparkSession

__all__ = [
    "DELTA_LAKE_VERSION",
    "ENGINES",
    "ENGINE_CHOICES",
    "AddedFile",
    "AsOf",
    "Commit",
    "DeltaRsStore",
    "DeltaSparkStore",
    "DeltaStore",
    "Engine",
    "EngineChoice",
    "HistoryUnavailableError",
    "Maintenance",
    "NewRows",
    "TableFeatureError",
    "choose_engine",
    "delta_package",
    "delta_session_conf",
    "delta_spark_available",
    "open_store",
]


def _master(spark: SparkSession) -> str | None:
    sc = getattr(spark, "_sc", None)
    return None if sc is None else str(sc.master)


def choose_engine(spark: SparkSession, warehouse: str, engine: EngineChoice = "auto") -> tuple[Engine, str]:
    """The engine ``storage.engine`` names, and why (printed at start).

    ``auto``: delta-spark where the tables must be committed through the cluster's own file system
    (a warehouse URI such as ``s3://``/``abfss://``/``dbfs:/``, a cluster master, a Spark Connect session),
    delta-rs for a local master and a local warehouse (embedded: no jars to fetch, and the faster of the
    two there: ``benchmarks/bench_pipeline.py``)."""
    if engine not in ENGINE_CHOICES:
        raise ValueError(f"unknown Delta engine {engine!r}; expected {', '.join(map(repr, ENGINE_CHOICES))}")
    if engine != "auto":
        return engine, f"storage.engine={engine}"
    master = _master(spark)
    if is_uri(warehouse) and not warehouse.startswith("file:"):
        return "delta-spark", f"auto: the warehouse {warehouse} is not a local folder"
    if master is None:
        return "delta-spark", "auto: a Spark Connect session (the server commits)"
    if not master.startswith("local"):
        if delta_spark_available(spark):
            return "delta-spark", f"auto: master {master} runs executors on other machines"
        return "delta-rs", (
            f"auto: master {master} but Delta's jars are not on the classpath (spark-submit --packages "
            f"{delta_package()}); delta-rs needs the warehouse on a folder every machine shares"
        )
    return "delta-rs", "auto: local master and local warehouse (embedded, no jars; faster here)"


def open_store(spark: SparkSession, warehouse: str, engine: EngineChoice = "auto") -> DeltaStore:
    """The Delta store of ``warehouse``: ``engine`` is ``auto`` (:func:`choose_engine`), ``delta-rs`` or
    ``delta-spark``."""
    engine, _why = choose_engine(spark, warehouse, engine)
    if engine == "delta-rs":
        return DeltaRsStore(spark, warehouse)
    if engine == "delta-spark":
        return DeltaSparkStore(spark, warehouse)
    raise ValueError(f"unknown Delta engine {engine!r}; expected {', '.join(map(repr, ENGINE_CHOICES))}")
