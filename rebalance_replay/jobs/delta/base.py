"""The storage interface jobs write and read through: what a Delta engine must do, and nothing more."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, get_args

from rebalance_replay.jobs.delta.partitions import PartitionSpec, normalize_specs
from rebalance_replay.jobs.delta.task_files import not_null_message
from rebalance_replay.jobs.paths import absolute_location
from rebalance_replay.schemas.core import TableDef

if TYPE_CHECKING:  # pragma: no cover - typing only
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql import DataFrame, SparkSession

#: A Delta engine (see the package docstring).
Engine = Literal["delta-spark", "delta-rs"]
#: ``storage.engine``: an engine, or ``auto`` (delta-spark when its classes are on the JVM classpath).
EngineChoice = Literal["auto", Engine]
ENGINES: Final[tuple[Engine, ...]] = get_args(Engine)
#: ``append`` adds rows; ``overwrite`` replaces the table or the given partitions.
WriteMode = Literal["append", "overwrite"]
ENGINE_CHOICES: Final[tuple[EngineChoice, ...]] = get_args(EngineChoice)


@dataclass(frozen=True)
class Write:
    """One checked :meth:`DeltaStore.append` or :meth:`DeltaStore.overwrite`, as an engine commits it."""

    mode: WriteMode
    specs: list[PartitionSpec] | None  # overwrite: the partitions replaced (None: the whole table)
    app_id: str | None
    txn_version: int | None


#: ``--as-of``: a Delta version (int) or an instant (epoch milliseconds, UTC) of the tables to read.
AsOf = int | tuple[Literal["ms"], int]


@dataclass(frozen=True)
class Commit:
    """One version of a table, from its Delta log's commit info."""

    version: int
    timestamp_ms: int
    operation: str
    run_id: str | None  # the rebalance-replay run that wrote it (the commit's userMetadata)
    engine: str  # the engine that committed it (commitInfo.engineInfo / clientVersion)
    rows: int | None  # rows the commit added, when the log says


@dataclass(frozen=True)
class Maintenance:
    """What :meth:`DeltaStore.maintain` did (or, in a dry run, would do) to one table."""

    table: str
    small_files: int  # data files below the compaction target before compaction
    compacted: int  # files rewritten by compaction (0 in a dry run)
    vacuum_files: list[str]  # files VACUUM deleted (dry run: would delete)
    checkpoint: bool  # a Delta log checkpoint was written (dry run: would be)
    retention_hours: int


@dataclass
class NewRows:
    """Rows a table gained since the last time they were consumed; call ``consumed()`` once they have
    been processed, so the next call starts after them."""

    rows: DataFrame
    consumed: Callable[[], None]


class DeltaStore(ABC):
    """Delta tables under one warehouse folder, each ``TableDef`` in ``<warehouse>/<table.name>``."""

    engine: Engine
    #: read the tables as they were (``--as-of``): a version or ``("ms", epoch_ms)``; writes are refused
    as_of: AsOf | None = None
    #: written into the commit info (``userMetadata``) of every commit this store makes
    run_id: str | None = None

    def __init__(self, spark: SparkSession, warehouse: str) -> None:
        self.spark = spark
        # absolute on the driver: a task resolving a relative path would use its executor's own folder
        self.warehouse = absolute_location(warehouse).rstrip("/") or "/"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(engine={self.engine!r}, warehouse={self.warehouse!r})"

    def path(self, table: TableDef) -> str:
        """Where the table lives."""
        return f"{self.warehouse.rstrip('/')}/{table.name}"

    def at(self, as_of: AsOf | None) -> DeltaStore:
        """This store reading every table as it was at ``as_of`` (read-only)."""
        import copy

        view = copy.copy(self)
        view.as_of = as_of
        return view

    # ---- history and time travel ----------------------------------------------------------------

    @abstractmethod
    def history(self, table: TableDef) -> list[Commit]:
        """The table's commits still in its log, oldest first (empty when the table does not exist)."""

    def version_as_of(self, table: TableDef) -> int | None:
        """The version :meth:`read` reads: the latest one, or the one ``as_of`` names (for an instant:
        the last commit at or before it; None when the table did not exist yet). A version the log no
        longer has is a :class:`~rebalance_replay.jobs.errors.UsageError` naming the versions it has."""
        from rebalance_replay.jobs.errors import UsageError

        if self.as_of is None:
            return self.version(table)
        commits = self.history(table)
        if isinstance(self.as_of, int):
            if not commits:
                raise UsageError(f"--as-of {self.as_of}: table {table.name!r} does not exist")
            have = [c.version for c in commits]
            if self.as_of not in have:
                raise UsageError(
                    f"--as-of {self.as_of}: table {table.name!r} has versions {have[0]}..{have[-1]}"
                )
            return self.as_of
        at_ms = self.as_of[1]
        before = [c.version for c in commits if c.timestamp_ms <= at_ms]
        return before[-1] if before else None

    def maintain(
        self,
        table: TableDef,
        *,
        retention_hours: int,
        target_file_bytes: int,
        dry_run: bool,
        compact: bool = True,
    ) -> Maintenance:
        """Compact small files (unless ``compact`` is False), VACUUM files unreferenced for longer than
        ``retention_hours``, checkpoint the log; a dry run only says what it would do."""
        raise NotImplementedError(f"the {self.engine} engine does not maintain tables")

    @abstractmethod
    def exists(self, table: TableDef) -> bool:
        """True when the table has been created (has a Delta log)."""

    @abstractmethod
    def version(self, table: TableDef) -> int | None:
        """The latest committed version, None when the table does not exist."""

    @abstractmethod
    def table_id(self, table: TableDef) -> str | None:
        """The table's Delta id (its ``metaData.id``: unique per table, kept by every commit; a table made
        again or copied from another warehouse has another), None when the table does not exist."""

    @abstractmethod
    def transaction_version(self, table: TableDef, app_id: str) -> int | None:
        """The last ``txn_version`` committed under ``app_id`` (Delta's application transactions), None
        when there is none."""

    @abstractmethod
    def read(self, table: TableDef) -> DataFrame:
        """The current snapshot with the table's columns in order and types; empty (with exactly the
        table's schema) if the table does not exist. (Read from files, Spark marks every column
        nullable; a TableDef column the table does not have yet reads as null.)"""

    def append(
        self, df: DataFrame, table: TableDef, *, app_id: str | None = None, txn_version: int | None = None
    ) -> bool:
        """Append ``df`` (columns selected in table order and cast; extra columns dropped) in one commit.

        Creates the table when absent, even when ``df`` is empty. With ``app_id``/``txn_version`` the
        commit records Delta's application transaction id; if that app already committed a version
        ``>= txn_version`` nothing is written and False is returned (idempotent retry).
        """
        return self.write(df, table, "append", app_id=app_id, txn_version=txn_version) is not None

    def overwrite(
        self,
        df: DataFrame,
        table: TableDef,
        *,
        partitions: Sequence[Mapping[str, Any]] | None = None,
        app_id: str | None = None,
        txn_version: int | None = None,
    ) -> bool:
        """Replace the whole table (``partitions=None``) or only the given partitions, e.g.
        ``[{"log_date": date(2024, 5, 1)}]``, with ``df`` in one commit. Every row of ``df`` must belong
        to one of ``partitions`` (ValueError otherwise). Idempotency as in :meth:`append`."""
        written = self.write(
            df, table, "overwrite", partitions=partitions, app_id=app_id, txn_version=txn_version
        )
        return written is not None

    def write(
        self,
        df: DataFrame,
        table: TableDef,
        mode: WriteMode,
        *,
        partitions: Sequence[Mapping[str, Any]] | None = None,
        app_id: str | None = None,
        txn_version: int | None = None,
    ) -> int | None:
        """:meth:`append` or :meth:`overwrite` (``partitions``: overwrite only) by ``mode``, returning the
        number of rows the commit added (from the commit itself, no extra pass over ``df``), or None when
        nothing was written because the transaction was already committed."""
        self._check_txn(app_id, txn_version)
        self._check_table(table)
        self._check_writable()
        if partitions is not None and mode != "overwrite":
            raise ValueError("partitions: only an overwrite replaces partitions")
        specs = None if partitions is None else normalize_specs(table, partitions)
        return self._write(self._conform(df, table), table, Write(mode, specs, app_id, txn_version))

    def task_stage(self, table: TableDef) -> str | None:
        """A new folder (a local path every executor can write) into which Spark tasks may write the
        table's parquet files themselves with :class:`~rebalance_replay.jobs.delta.task_files
        .TaskFileWriter`, for :meth:`commit_task_files`; None when this engine commits only what Spark's
        own writer writes (then use :meth:`write`)."""
        return None

    def commit_task_files(
        self,
        table: TableDef,
        stage: str,
        files: Sequence[str],
        *,
        app_id: str | None = None,
        txn_version: int | None = None,
    ) -> int | None:
        """Append the listed files (paths relative to ``stage``, from :meth:`task_stage`) in one commit,
        as :meth:`write` appends: the number of rows committed, None when the transaction was already
        committed. The stage is removed either way (with the files of task attempts not listed)."""
        self._check_txn(app_id, txn_version)
        self._check_table(table)
        self._check_writable()
        return self._commit_task_files(table, stage, files, Write("append", None, app_id, txn_version))

    def _commit_task_files(
        self, table: TableDef, stage: str, files: Sequence[str], write: Write
    ) -> int | None:
        raise NotImplementedError(
            f"the {self.engine} engine commits only what Spark writes (task_stage is None)"
        )

    def prepare(self, table: TableDef) -> None:
        """Make an existing table ready for this release's rows before a long write starts: a column the
        release added is added (an additive change), a breaking change refused with
        :class:`~rebalance_replay.jobs.errors.SchemaEvolutionError` — the check each write makes, made up
        front, so that a streaming query's micro-batch never fails on it half-way (Spark would log the
        refusal as a stack trace of its own)."""
        self._check_writable()

    def _check_writable(self) -> None:
        if self.as_of is not None:
            raise ValueError("a store reading as of an earlier version is read-only")

    def _check_table(self, table: TableDef) -> None:
        """What the engine refuses in a table definition before it writes (nothing by default)."""
        return None

    @abstractmethod
    def _write(self, df: DataFrame, table: TableDef, write: Write) -> int | None:
        """The engine's one commit behind :meth:`write`: ``df`` is conformed to the table and the
        arguments are checked. The number of rows committed; None when ``write``'s transaction was
        already committed."""

    @abstractmethod
    def new_rows(self, table: TableDef, progress_dir: str) -> NewRows:
        """The rows appended to ``table`` since the last :meth:`NewRows.consumed` under ``progress_dir``
        (all rows the first time): the incremental feed of scheduled jobs."""

    def appended_since(self, table: TableDef, version: int, upto: int) -> DataFrame | None:
        """The rows the commits after ``version`` up to ``upto`` (the table's current version) appended, or
        None when the engine cannot tell them apart or one of those commits removed rows (an overwrite, a
        delete; a compaction removes none) or has left the log: the caller then reads the whole table.
        Empty when ``version == upto``. The tallies of scheduled runs (``validate``) are carried forward
        with it. This engine cannot tell: None."""
        return None

    # ---- shared helpers -------------------------------------------------------------------------

    def empty(self, table: TableDef) -> DataFrame:
        """An empty DataFrame with the table's schema."""
        return self.spark.createDataFrame([], table.spark_schema())

    def _conform(self, df: DataFrame, table: TableDef) -> DataFrame:
        """``df`` as the table's columns, in order, cast to the table's types; NOT NULL columns fail the
        write (inside the same Spark job, no extra pass) when a null shows up."""
        from pyspark.sql import functions as F

        have = set(df.columns)
        missing = [c for c in table.column_names if c not in have]
        if missing:
            raise ValueError(
                f"cannot write table {table.name!r}: DataFrame lacks column(s) {', '.join(missing)}"
            )
        schema = table.spark_schema()
        cols: list[SparkColumn] = []
        for col in table.columns:
            expr = F.col(f"`{col.name}`").cast(schema[col.name].dataType)
            if not col.nullable:
                expr = F.when(
                    expr.isNull(), F.raise_error(F.lit(not_null_message(table, col.name)))
                ).otherwise(expr)
            cols.append(expr.alias(col.name))
        return df.select(*cols)

    @staticmethod
    def _check_txn(app_id: str | None, txn_version: int | None) -> None:
        if (app_id is None) != (txn_version is None):
            raise ValueError("app_id and txn_version go together: give both or neither")
        if app_id is not None and not app_id:
            raise ValueError("app_id must not be empty")
        if txn_version is not None and (
            isinstance(txn_version, bool) or not isinstance(txn_version, int) or txn_version < 0
        ):
            raise ValueError(f"txn_version must be an int >= 0, got {txn_version!r}")


# --------------------------------------------------------------------------------------------------
# Partition values
