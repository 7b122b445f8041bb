"""The delta-spark engine (clusters: Databricks, EMR, any Spark with the Delta jars).

Plain ``format("delta")`` reads and writes, ``txnAppId``/``txnVersion`` for idempotency, ``replaceWhere``
for partition overwrites, and Delta's streaming source for the incremental feed (:meth:`new_rows`).
delta-spark is not installable everywhere (its jars come from Maven): its tests skip without the jars.
"""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rebalance_replay.jobs.delta.base import DeltaStore, Engine, NewRows, Write
from rebalance_replay.jobs.delta.partitions import PartitionSpec
from rebalance_replay.schemas.core import TableDef

if TYPE_CHECKING:  # pragma: no cover - typing only
    from pyspark.sql import DataFrame, SparkSession


def _sql_literal(ctype: str, value: str | None) -> str:
    if value is None:
        return "NULL"
    if ctype == "date":
        return f"DATE'{value}'"
    if ctype in ("int", "bigint"):
        return str(int(value))
    if ctype == "boolean":
        return "TRUE" if value == "true" else "FALSE"
    escaped = value.replace("\\", "\\\\").replace("'", "\\'")
    return f"'{escaped}'"


def _replace_where(table: TableDef, specs: list[PartitionSpec]) -> str:
    ors = []
    for spec in specs:
        ands = []
        for k, v in spec.items():
            ident = "`" + k.replace("`", "``") + "`"
            ands.append(
                f"{ident} IS NULL"
                if v is None
                else f"{ident} = {_sql_literal(table.column(k).type.strip(), v)}"
            )
        ors.append("(" + " AND ".join(ands) + ")")
    return " OR ".join(ors)


class DeltaSparkStore(DeltaStore):
    """Delta through Spark's own Delta connector (delta-spark jars + the ``delta`` Python package)."""

    engine: Engine = "delta-spark"

    def __init__(self, spark: SparkSession, warehouse: str) -> None:
        # paths stay as given: without a scheme they resolve against Spark's default file system
        super().__init__(spark, warehouse)
        if not delta_spark_available(spark):
            raise RuntimeError(
                "the delta-spark engine needs the Delta Lake jars on the Spark classpath "
                "(e.g. spark.jars.packages=io.delta:delta-spark_2.13:<version>)"
            )
        self._delta_table_api()  # fail now, not at the first write, without the Python package

    def new_rows(self, table: TableDef, progress_dir: str) -> NewRows:
        """This engine: Delta's streaming source (``readStream.format("delta")``, ``Trigger.AvailableNow``,
        its checkpoint under ``progress_dir``) stages the new rows; ``consumed()`` drops the stage. Rows
        staged by a run that failed before consuming them are served again."""
        stage = Path(progress_dir) / "staged"
        query = (
            self.spark.readStream.format("delta")
            .load(self.path(table))
            .writeStream.trigger(availableNow=True)
            .option("checkpointLocation", str(Path(progress_dir) / "checkpoint"))
            .foreachBatch(
                lambda df, batch_id: df.write.mode("overwrite").parquet(str(stage / f"b={batch_id}"))
            )
            .start()
        )
        query.awaitTermination()
        batches = sorted(str(p) for p in stage.glob("b=*")) if stage.exists() else []
        rows = (
            self.spark.read.schema(table.spark_schema()).parquet(*batches) if batches else self.empty(table)
        )
        return NewRows(rows, lambda: shutil.rmtree(stage, ignore_errors=True))

    @staticmethod
    def _delta_table_api() -> Any:
        try:
            from delta.tables import DeltaTable
        except ImportError as e:  # pragma: no cover - cluster only
            raise RuntimeError(
                "the delta-spark engine needs the 'delta-spark' Python package "
                "(pip install 'rebalance-replay[cluster]')"
            ) from e
        return DeltaTable

    def exists(self, table: TableDef) -> bool:
        return bool(self._delta_table_api().isDeltaTable(self.spark, self.path(table)))

    def version(self, table: TableDef) -> int | None:
        if not self.exists(table):
            return None
        row = (
            self._delta_table_api().forPath(self.spark, self.path(table)).history(1).select("version").first()
        )
        return None if row is None else int(row[0])

    def _project(self, df: DataFrame, table: TableDef) -> DataFrame:
        from pyspark.sql import functions as F

        have = set(df.columns)
        schema = table.spark_schema()
        return df.select(
            *[
                (F.col(f"`{c.name}`") if c.name in have else F.lit(None))
                .cast(schema[c.name].dataType)
                .alias(c.name)
                for c in table.columns
            ]
        )

    def read(self, table: TableDef) -> DataFrame:
        if not self.exists(table):
            return self.empty(table)
        return self._project(self.spark.read.format("delta").load(self.path(table)), table)

    def _log_dir(self, table: TableDef) -> str:
        return f"{self.path(table)}/_delta_log"

    def transaction_version(self, table: TableDef, app_id: str) -> int | None:
        """From the ``txn`` actions of the log's commits and checkpoints (Delta PROTOCOL.md)."""
        from pyspark.errors import AnalysisException
        from pyspark.sql import functions as F

        if not self.exists(table):
            return None
        txn_schema = "txn struct<appId:string,version:bigint>"
        versions: list[int] = []
        frames = [self.spark.read.schema(txn_schema).json(f"{self._log_dir(table)}/*.json")]
        with contextlib.suppress(AnalysisException):  # raised when there is no checkpoint yet
            frames.append(
                self.spark.read.schema(txn_schema).parquet(f"{self._log_dir(table)}/*.checkpoint*.parquet")
            )
        for frame in frames:
            row = frame.where(F.col("txn.appId") == F.lit(app_id)).agg(F.max("txn.version")).first()
            if row is not None and row[0] is not None:
                versions.append(int(row[0]))
        return max(versions) if versions else None

    def _create_if_absent(self, table: TableDef) -> None:
        """Create the table with the TableDef's schema (NOT NULL, comments), partitioning, properties."""
        if self.exists(table):
            return
        builder = (
            self._delta_table_api()
            .createIfNotExists(self.spark)
            .location(self.path(table))
            .addColumns(table.spark_schema())
        )
        if table.partition_by:
            builder = builder.partitionedBy(*table.partition_by)
        if table.doc:
            builder = builder.comment(table.doc)
        for k, v in table.properties.items():
            builder = builder.property(k, v)
        builder.execute()

    def _write(self, conformed: DataFrame, table: TableDef, write: Write) -> int | None:
        mode, specs, app_id, txn_version = write.mode, write.specs, write.app_id, write.txn_version
        if app_id is not None and txn_version is not None:
            done = self.transaction_version(table, app_id)
            if done is not None and done >= txn_version:
                return None
        self._create_if_absent(table)
        writer = conformed.write.format("delta")
        if table.partition_by:
            writer = writer.partitionBy(*table.partition_by)
        if app_id is not None:
            # Delta itself also skips the write if this (app, version) is already committed
            writer = writer.option("txnAppId", app_id).option("txnVersion", str(txn_version))
        if mode == "append":
            writer = writer.mode("append")
        else:
            writer = writer.mode("overwrite").option("partitionOverwriteMode", "static")
            if specs is not None:
                writer = writer.option("replaceWhere", _replace_where(table, specs))
        writer.save(self.path(table))
        return self._rows_written(conformed, table)

    def _rows_written(self, conformed: DataFrame, table: TableDef) -> int:
        """The rows the write just committed: the commit's ``operationMetrics.numOutputRows`` (Delta
        records it for every write), counted from ``conformed`` only if the metric is absent."""
        row = (
            self._delta_table_api()
            .forPath(self.spark, self.path(table))
            .history(1)
            .select("operationMetrics")
            .first()
        )
        metrics = (row[0] if row is not None else None) or {}
        value = metrics.get("numOutputRows")
        return int(value) if value is not None else int(conformed.count())


# --------------------------------------------------------------------------------------------------
# Is delta-spark on the classpath?
# --------------------------------------------------------------------------------------------------

_DELTA_CLASSES = ("io.delta.tables.DeltaTable", "org.apache.spark.sql.delta.catalog.DeltaCatalog")


def delta_spark_available(spark: SparkSession) -> bool:
    """True when the Delta Lake classes are on the session's JVM classpath (never raises).

    A Spark Connect session has no local JVM to ask: it is assumed to be a Delta-enabled server."""
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:
        sc = getattr(spark, "_sc", None)
        jvm = getattr(sc, "_jvm", None)
    if jvm is None:
        return type(spark).__module__.startswith("pyspark.sql.connect")
    try:
        loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    except Exception:
        return False
    for name in _DELTA_CLASSES:
        try:
            jvm.java.lang.Class.forName(name, False, loader)
            return True
        except Exception:
            continue
    return False
