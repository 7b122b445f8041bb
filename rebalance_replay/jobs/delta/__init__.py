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
    DeltaStore,
    Engine,
    EngineChoice,
    NewRows,
)
from rebalance_replay.jobs.delta.rs import AddedFile, DeltaRsStore
from rebalance_replay.jobs.delta.spark import DeltaSparkStore, delta_spark_available
from rebalance_replay.jobs.errors import HistoryUnavailableError, TableFeatureError

if TYPE_CHECKING:  # pragma: no cover - typing only
    from pyspark.sql import SparkSession

__all__ = [
    "ENGINES",
    "ENGINE_CHOICES",
    "AddedFile",
    "DeltaRsStore",
    "DeltaSparkStore",
    "DeltaStore",
    "Engine",
    "EngineChoice",
    "HistoryUnavailableError",
    "NewRows",
    "TableFeatureError",
    "delta_spark_available",
    "open_store",
]


def open_store(spark: SparkSession, warehouse: str, engine: EngineChoice = "auto") -> DeltaStore:
    """The Delta store of ``warehouse``: ``engine`` is ``auto`` (delta-spark when its classes are on the
    JVM classpath, else delta-rs), ``delta-rs`` or ``delta-spark``."""
    if engine == "auto":
        engine = "delta-spark" if delta_spark_available(spark) else "delta-rs"
    if engine == "delta-rs":
        return DeltaRsStore(spark, warehouse)
    if engine == "delta-spark":
        return DeltaSparkStore(spark, warehouse)
    raise ValueError(f"unknown Delta engine {engine!r}; expected {', '.join(map(repr, ENGINE_CHOICES))}")
