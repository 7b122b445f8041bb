"""The delta-spark engine (clusters: Databricks, EMR, a standalone cluster, any Spark with the Delta jars).

Plain ``format("delta")`` reads and writes, ``txnAppId``/``txnVersion`` for idempotency, ``replaceWhere``
for partition overwrites, Delta's streaming source for the incremental feed (:meth:`new_rows`), and
Delta's SQL (``CREATE TABLE``, ``DESCRIBE HISTORY``, ``OPTIMIZE``, ``VACUUM``) for the rest: only the
jars are needed (no ``delta`` Python package, whose releases pin pyspark's patch version). The jars come
from Maven Central through ``spark.jars.packages`` (:func:`delta_session_conf`), or are already on the
cluster (Databricks).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rebalance_replay.jobs.delta.base import Commit, DeltaStore, Engine, Maintenance, NewRows, Write
from rebalance_replay.jobs.delta.features import additive_fields, breaking_change_message, fields_problems
from rebalance_replay.jobs.delta.partitions import PartitionSpec
from rebalance_replay.jobs.errors import SchemaEvolutionError
from rebalance_replay.jobs.paths import is_uri
from rebalance_replay.jobs.spark_session import session_conf
from rebalance_replay.schemas.core import TableDef

if TYPE_CHECKING:  # pragma: no cover - typing only
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructField

#: The Delta Lake release whose jars the delta-spark engine loads (its Maven artifact is built per Spark
#: minor: ``io.delta:delta-spark_<spark major.minor>_2.13``; Delta 4.4.0 is the release for Spark 4.2).
DELTA_LAKE_VERSION = "4.4.0"
DELTA_SQL_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}
#: Delta's partitions for reading a table's log into a snapshot (its state: every file, every
#: transaction), and Delta's own default for it
SNAPSHOT_PARTITIONS = "spark.databricks.delta.snapshotPartitions"
DELTA_DEFAULT_SNAPSHOT_PARTITIONS = 50


def delta_package(spark_version: str | None = None) -> str:
    """The Maven coordinate of Delta's jars for this pyspark (``io.delta:delta-spark_4.2_2.13:4.4.0``)."""
    if spark_version is None:
        import pyspark

        spark_version = pyspark.__version__
    major_minor = ".".join(spark_version.split(".")[:2])
    return f"io.delta:delta-spark_{major_minor}_2.13:{DELTA_LAKE_VERSION}"


def delta_session_conf(package: str | None = None, ivy_dir: str | None = None) -> dict[str, str]:
    """The settings a locally built session needs for the delta-spark engine: the jars from Maven
    Central (resolved by Spark's own Ivy at start, cached under ``ivy_dir`` or ``~/.ivy2.5.2``), Delta's
    SQL extension and catalog."""
    conf = {"spark.jars.packages": package or delta_package(), **DELTA_SQL_CONF}
    if ivy_dir:
        conf["spark.jars.ivy"] = ivy_dir
    return conf


def _sql_path(path: str) -> str:
    return "delta.`" + path.replace("`", "``") + "`"


def sql_string(text: str) -> str:
    """``text`` as a Spark SQL string literal (backslashes and quotes escaped)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _column_sql(field: StructField) -> str:
    """A column of ``CREATE TABLE``/``ADD COLUMNS``: name, type, NOT NULL when not nullable, comment."""
    col = f"`{field.name}` {field.dataType.simpleString()}"
    if not field.nullable:
        col += " NOT NULL"
    comment = field.metadata.get("comment")
    if comment:
        col += f" COMMENT {sql_string(comment)}"
    return col


def _sql_literal(ctype: str, value: str | None) -> str:
    if value is None:
        return "NULL"
    if ctype == "date":
        return f"DATE'{value}'"
    if ctype in ("int", "bigint"):
        return str(int(value))
    if ctype == "boolean":
        return "TRUE" if value == "true" else "FALSE"
    return sql_string(value)


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
    """Delta through Spark's own Delta connector (the delta-spark jars on the classpath)."""

    engine: Engine = "delta-spark"

    def __init__(self, spark: SparkSession, warehouse: str) -> None:
        # a local path is absolute (base class); a URI resolves against its own file system
        super().__init__(spark, warehouse)
        if not delta_spark_available(spark):
            from rebalance_replay.jobs.errors import StorageError

            raise StorageError(
                "the delta-spark engine needs the Delta Lake jars on the Spark classpath "
                f"(spark.jars.packages={delta_package()}, or spark-submit --packages {delta_package()})"
            )
        size_snapshots(spark)

    def _commit_conf(self) -> dict[str, str]:
        """Session settings of this store's commits: the run id in each commit's ``userMetadata``."""
        return {} if self.run_id is None else {"spark.databricks.delta.commitInfo.userMetadata": self.run_id}

    # ---- snapshot --------------------------------------------------------------------------------

    def exists(self, table: TableDef) -> bool:
        from pyspark.errors import AnalysisException

        log = f"{self.path(table)}/_delta_log"
        try:
            jvm = self.spark._jvm  # type: ignore[attr-defined]
            jpath = jvm.org.apache.hadoop.fs.Path(log)
            fs = jpath.getFileSystem(self.spark._jsc.hadoopConfiguration())  # type: ignore[attr-defined]
            if not fs.exists(jpath):
                return False
        except AttributeError:  # Spark Connect: no JVM here
            pass
        try:
            self.spark.sql(f"DESCRIBE HISTORY {_sql_path(self.path(table))} LIMIT 1").first()
            return True
        except AnalysisException:
            return False

    def version(self, table: TableDef) -> int | None:
        if not self.exists(table):
            return None
        row = self.spark.sql(f"DESCRIBE HISTORY {_sql_path(self.path(table))} LIMIT 1").first()
        return None if row is None else int(row["version"])

    def history(self, table: TableDef) -> list[Commit]:
        if not self.exists(table):
            return []
        rows = self.spark.sql(f"DESCRIBE HISTORY {_sql_path(self.path(table))}").collect()
        out = []
        for r in rows:
            metrics = r["operationMetrics"] or {}
            n = metrics.get("numOutputRows")
            out.append(
                Commit(
                    int(r["version"]),
                    int(r["timestamp"].timestamp() * 1000),
                    str(r["operation"]),
                    r["userMetadata"] or None,
                    str(r["engineInfo"] or ""),
                    None if n is None else int(n),
                )
            )
        return sorted(out, key=lambda c: c.version)

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
        version = self.version_as_of(table)
        if version is None:
            return self.empty(table)
        reader = self.spark.read.format("delta")
        if self.as_of is not None:
            reader = reader.option("versionAsOf", str(version))
        df = reader.load(self.path(table))
        have = {f["name"]: f for f in df.schema.jsonValue()["fields"]}
        problems = fields_problems(have, self._partition_columns(table), table, for_read=True)
        if problems:
            raise SchemaEvolutionError(breaking_change_message(table, self.path(table), problems))
        return self._project(df, table)

    def table_id(self, table: TableDef) -> str | None:
        if not self.exists(table):
            return None
        row = self.spark.sql(f"DESCRIBE DETAIL {_sql_path(self.path(table))}").first()
        return None if row is None else str(row["id"])

    def _partition_columns(self, table: TableDef) -> list[str]:
        """The table's partition columns (they never change in a Delta table: the latest say it)."""
        row = self.spark.sql(f"DESCRIBE DETAIL {_sql_path(self.path(table))}").first()
        return [] if row is None else [str(c) for c in row["partitionColumns"]]

    def _evolve(self, table: TableDef) -> None:
        """Add the TableDef's new nullable columns (``ALTER TABLE … ADD COLUMNS``: an additive change),
        then refuse whatever else differs (:func:`breaking_change_message`)."""
        schema = self.spark.read.format("delta").load(self.path(table)).schema
        have = {f["name"]: f for f in schema.jsonValue()["fields"]}
        parts = self._partition_columns(table)
        added = additive_fields(have, table)
        if added and not fields_problems({**have, **{f["name"]: f for f in added}}, parts, table):
            spark_fields = {f.name: f for f in table.spark_schema().fields}
            cols = [_column_sql(spark_fields[f["name"]]) for f in added]  # nullable, as added columns are
            with session_conf(self.spark, self._commit_conf()):
                self.spark.sql(f"ALTER TABLE {_sql_path(self.path(table))} ADD COLUMNS ({', '.join(cols)})")
            have.update({f["name"]: f for f in added})
        problems = fields_problems(have, parts, table)
        # Spark's reader reports every column nullable: NOT NULL is checked by Delta at write time
        problems = [p for p in problems if "NOT NULL" not in p]
        if problems:
            raise SchemaEvolutionError(breaking_change_message(table, self.path(table), problems))

    def prepare(self, table: TableDef) -> None:
        super().prepare(table)
        if self.exists(table):
            self._evolve(table)

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

    # ---- incremental -----------------------------------------------------------------------------

    def new_rows(self, table: TableDef, progress_dir: str) -> NewRows:
        """This engine: Delta's streaming source (``readStream.format("delta")``, ``Trigger.AvailableNow``)
        from the version after the one recorded in ``progress_dir/version.json`` (the same record the
        delta-rs engine keeps, so a warehouse can change engine between scheduled runs) stages the new
        rows; ``consumed()`` records the version read and drops the stage."""
        from rebalance_replay.jobs.bookkeeping import write_json

        progress = Path(progress_dir) / "version.json"
        since = json.loads(progress.read_text())["version"] if progress.exists() else None
        current = self.version(table)  # the warehouse lock keeps writers out until consumed()
        if current is None or (since is not None and since >= current):
            return NewRows(self.empty(table), lambda: write_json(progress, {"version": current}))
        attempt = Path(progress_dir) / f"stream-{uuid.uuid4().hex[:12]}"
        shutil.rmtree(Path(progress_dir) / "staged", ignore_errors=True)  # an older layout's stage
        for old in Path(progress_dir).glob("stream-*") if Path(progress_dir).exists() else []:
            shutil.rmtree(old, ignore_errors=True)  # a run that failed before consuming
        stage = attempt / "staged"
        reader = self.spark.readStream.format("delta")
        if since is not None:
            reader = reader.option("startingVersion", str(since + 1))
        query = (
            reader.load(self.path(table))
            .writeStream.trigger(availableNow=True)
            .option("checkpointLocation", str(attempt / "checkpoint"))
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
        rows = self._project(rows, table)

        def consumed() -> None:
            write_json(progress, {"version": current})
            shutil.rmtree(attempt, ignore_errors=True)

        return NewRows(rows, consumed)

    # ---- writes ----------------------------------------------------------------------------------

    def _create_if_absent(self, table: TableDef) -> None:
        """Create the table with the TableDef's schema (NOT NULL, comments), partitioning, properties."""
        if self.exists(table):
            return
        cols = [_column_sql(field) for field in table.spark_schema().fields]
        ddl = f"CREATE TABLE IF NOT EXISTS {_sql_path(self.path(table))} ({', '.join(cols)}) USING delta"
        if table.partition_by:
            ddl += " PARTITIONED BY (" + ", ".join(f"`{c}`" for c in table.partition_by) + ")"
        if table.doc:
            ddl += f" COMMENT {sql_string(table.doc)}"
        if table.properties:
            ddl += (
                " TBLPROPERTIES ("
                + ", ".join(f"{sql_string(k)} = {sql_string(v)}" for k, v in table.properties.items())
                + ")"
            )
        with session_conf(self.spark, self._commit_conf()):
            self.spark.sql(ddl)

    def _write(self, conformed: DataFrame, table: TableDef, write: Write) -> int | None:
        mode, specs, app_id, txn_version = write.mode, write.specs, write.app_id, write.txn_version
        if app_id is not None and txn_version is not None:
            done = self.transaction_version(table, app_id)
            if done is not None and done >= txn_version:
                return None
        if self.exists(table):
            self._evolve(table)
        else:
            self._create_if_absent(table)
        before = self.version(table)
        writer = conformed.write.format("delta")
        if table.partition_by:
            writer = writer.partitionBy(*table.partition_by)
        if app_id is not None:
            # Delta itself also skips the write if this (app, version) is already committed
            writer = writer.option("txnAppId", app_id).option("txnVersion", str(txn_version))
        if self.run_id is not None:
            writer = writer.option("userMetadata", self.run_id)
        if mode == "append":
            writer = writer.mode("append")
        else:
            writer = writer.mode("overwrite").option("partitionOverwriteMode", "static")
            if specs is not None:
                writer = writer.option("replaceWhere", _replace_where(table, specs))
        from pyspark.errors import AnalysisException

        # the session's timestamp type is Spark's INT96 by default: Delta's readers (delta-rs, the
        # protocol) expect INT64 micros, as the delta-rs engine writes them
        with session_conf(self.spark, {"spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS"}):
            try:
                writer.save(self.path(table))
            except AnalysisException as e:
                if "DELTA_REPLACE_WHERE_MISMATCH" not in str(e):
                    raise
                raise ValueError(
                    f"overwrite of table {table.name!r}: the DataFrame has rows in a partition which is "
                    f"not among the partitions being replaced {specs} (nothing committed)"
                ) from None
        return self._rows_written(conformed, table, before)

    def _rows_written(self, conformed: DataFrame, table: TableDef, before: int | None) -> int:
        """The rows the write just committed: the commit's ``operationMetrics.numOutputRows`` (Delta
        records it for every write), counted from ``conformed`` only if the metric is absent; 0 when
        Delta made no commit (an empty append: the table's version is still ``before``)."""
        row = self.spark.sql(f"DESCRIBE HISTORY {_sql_path(self.path(table))} LIMIT 1").first()
        if row is not None and int(row["version"]) == before:
            return 0
        metrics = (row["operationMetrics"] if row is not None else None) or {}
        value = metrics.get("numOutputRows")
        return int(value) if value is not None else int(conformed.count())

    # ---- maintenance -----------------------------------------------------------------------------

    def maintain(
        self,
        table: TableDef,
        *,
        retention_hours: int,
        target_file_bytes: int,
        dry_run: bool,
        compact: bool = True,
    ) -> Maintenance:
        """``OPTIMIZE`` (bin-packing compaction to ``target_file_bytes``), ``VACUUM … RETAIN n HOURS``
        (``DRY RUN`` first: the files it deletes), a log checkpoint."""
        path = self.path(table)
        small = self._small_files(table, target_file_bytes)
        compacted = 0
        settings = {
            **self._commit_conf(),
            "spark.databricks.delta.optimize.maxFileSize": str(target_file_bytes),
            "spark.databricks.delta.optimize.minFileSize": str(target_file_bytes),
            # retention below Delta's 7-day default is the caller's decision (maintain checks readers)
            "spark.databricks.delta.retentionDurationCheck.enabled": "false",
            # VACUUM lists the table's folders in this many tasks: Spark's default, 10,000, cost 30-70 s per
            # VACUUM of the sample's small tables on a 2-core box (6-7 s with a few tasks per core)
            "spark.sql.sources.parallelPartitionDiscovery.parallelism": str(
                4 * max(1, int(self.spark.sparkContext.defaultParallelism))
            ),
        }
        with session_conf(self.spark, settings):
            if compact and not dry_run and small > 1:
                row = self.spark.sql(f"OPTIMIZE {_sql_path(path)}").first()
                metrics = row["metrics"] if row is not None else None
                compacted = int(metrics["numFilesRemoved"]) if metrics is not None else 0
            hours = str(int(retention_hours))
            listed = self.spark.sql(f"VACUUM {_sql_path(path)} RETAIN {hours} HOURS DRY RUN").collect()
            files = sorted(str(r[0]) for r in listed)
            if not dry_run and files:
                self.spark.sql(f"VACUUM {_sql_path(path)} RETAIN {hours} HOURS")
        if not dry_run:
            self._checkpoint(path)
        return Maintenance(table.name, small, compacted, files, True, retention_hours)

    def _small_files(self, table: TableDef, target_file_bytes: int) -> int:
        files = self.spark.read.format("delta").load(self.path(table)).inputFiles()
        if not files:
            return 0
        jvm = self.spark._jvm  # type: ignore[attr-defined]
        conf = self.spark._jsc.hadoopConfiguration()  # type: ignore[attr-defined]
        n = 0
        for f in files:
            p = jvm.org.apache.hadoop.fs.Path(f)
            if p.getFileSystem(conf).getFileStatus(p).getLen() < target_file_bytes:
                n += 1
        return n

    def _checkpoint(self, path: str) -> None:
        """A checkpoint of the log's current version (Delta's ``DeltaLog.checkpoint``; on a local folder,
        delta-rs' ``create_checkpoint`` if this Delta release does not offer it to Python)."""
        from py4j.protocol import Py4JError

        try:
            jvm = self.spark._jvm  # type: ignore[attr-defined]
            delta_log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(
                self.spark._jsparkSession,  # type: ignore[attr-defined]
                path,
            )
            delta_log.checkpoint()
        except (Py4JError, AttributeError):
            if is_uri(path) and not path.startswith("file:"):
                raise
            from deltalake import DeltaTable

            DeltaTable(path).create_checkpoint()


# --------------------------------------------------------------------------------------------------
# Is delta-spark on the classpath?
# --------------------------------------------------------------------------------------------------

_DELTA_CLASSES = ("io.delta.tables.DeltaTable", "org.apache.spark.sql.delta.catalog.DeltaCatalog")


def size_snapshots(spark: SparkSession) -> None:
    """Delta reads a table's log into a snapshot in :data:`SNAPSHOT_PARTITIONS` tasks, 50 unless set: sized
    for logs of millions of files. A warehouse's tables have small logs, and every command reads several
    snapshots, so on a small machine those 50 tasks a snapshot were most of a small command's time
    (benchmarks/README.md, stop 53: two ingests, a replay and ``history`` of the sample on delta-spark
    took 0.53x the wall time with 8 than with Delta's 50).
    Unless the session sets it, it gets the session's shuffle partitions (the parallelism the session was
    sized for), when those are fewer than Delta's 50."""
    if spark.conf.get(SNAPSHOT_PARTITIONS, None) is not None:
        return  # the session's own choice
    shuffle = int(str(spark.conf.get("spark.sql.shuffle.partitions", "200")))
    if shuffle < DELTA_DEFAULT_SNAPSHOT_PARTITIONS:
        spark.conf.set(SNAPSHOT_PARTITIONS, str(shuffle))


def delta_spark_available(spark: SparkSession) -> bool:
    """True when the Delta Lake classes are on the session's JVM classpath (never raises).

    A Spark Connect session has no local JVM to ask: it is assumed to be a Delta-enabled server."""
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:
        sc = getattr(spark, "_sc", None)
        jvm = getattr(sc, "_jvm", None)
    if jvm is None:
        return type(spark).__module__.startswith("pyspark.sql.connect")
    return jvm_has_delta(jvm)


def jvm_has_delta(jvm: Any) -> bool:
    """True when Delta's classes are on this JVM's classpath (e.g. spark-submit --packages gave them)."""
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


def submitted_with_delta() -> bool:
    """Under spark-submit (the driver JVM runs before the session is built): were Delta's jars given
    (``--packages``/``--jars``)? Then the session gets Delta's SQL extension and catalog too."""
    import os

    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        return False
    from pyspark import SparkContext

    SparkContext._ensure_initialized()
    return SparkContext._jvm is not None and jvm_has_delta(SparkContext._jvm)
