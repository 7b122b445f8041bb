"""Delta tables of the warehouse: the ONE module that knows which Delta engine runs.

Two engines behind one interface, :class:`DeltaStore`:

``delta-rs`` (embedded default, no JVM jars needed)
    Spark writes the parquet data files in parallel into a staging folder inside the table folder
    (``<table>/_stage-<uuid>``); the driver moves them into the table's own hive-style partition
    folders (``log_date=2024-05-01/part-....parquet``) and commits them in ONE Delta commit with
    delta-rs' transaction API, with per-file statistics read from the parquet footers and Delta's
    application transaction id (``txn``) for idempotent retries. Reads list the snapshot's files with
    delta-rs and read them with Spark. Tables using a Delta feature this path cannot honour
    (deletion vectors, column mapping, ...) are refused with :class:`TableFeatureError`.

``delta-spark`` (clusters: Databricks, EMR, any Spark with the Delta jars)
    Plain ``format("delta")`` reads and writes, ``txnAppId``/``txnVersion`` for idempotency,
    ``replaceWhere`` for partition overwrites.

:func:`open_store` picks the engine (``auto``: delta-spark when its classes are on the JVM classpath).
Nothing outside this module should know which engine runs.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shutil
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from jobs.bookkeeping import crash_point, write_json
from schemas.core import TableDef

if TYPE_CHECKING:  # pragma: no cover - typing only
    from deltalake import DeltaTable
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "ENGINES",
    "AddedFile",
    "DeltaRsStore",
    "DeltaSparkStore",
    "DeltaStore",
    "HistoryUnavailableError",
    "TableFeatureError",
    "delta_spark_available",
    "open_store",
]

ENGINE_DELTA_RS = "delta-rs"
ENGINE_DELTA_SPARK = "delta-spark"
ENGINES = (ENGINE_DELTA_RS, ENGINE_DELTA_SPARK)

STAGE_PREFIX = "_stage-"
#: staging folders older than this are leftovers of a killed writer and are removed by the next write
STALE_STAGE_SECONDS = 24 * 3600

_HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
_COMMIT_FILE = re.compile(r"^(\d{20})\.json$")
_PARTITION_TYPES = ("string", "date", "int", "bigint", "boolean")
#: string statistics longer than this are left out (a truncated max would not be an upper bound)
_MAX_STATS_STRING = 256


# --------------------------------------------------------------------------------------------------
# Errors and results
# --------------------------------------------------------------------------------------------------


class TableFeatureError(RuntimeError):
    """The table uses a Delta table feature this engine cannot honour."""

    def __init__(self, table: str, path: str, features: Sequence[str], engine: str, action: str) -> None:
        self.table = table
        self.path = path
        self.features = tuple(features)
        self.engine = engine
        super().__init__(
            f"Delta table {table!r} at {path} uses table feature(s) {', '.join(self.features)} that the "
            f"{engine} engine cannot honour when it {action}s; use the delta-spark engine (Delta jars on the "
            f"Spark classpath) for this table"
        )


class HistoryUnavailableError(RuntimeError):
    """The commits needed for an incremental read are no longer in the Delta log (cleaned up):
    read the whole table instead."""


@dataclass(frozen=True)
class AddedFile:
    """A data file of the current snapshot, with the version of the commit that added it."""

    version: int
    path: str  # absolute path (local) or URI, as the engine reads it
    partition_values: Mapping[str, Any] = field(default_factory=dict)  # typed: date, int, str, bool, None
    size_bytes: int = 0
    num_records: int | None = None
    data_change: bool = True  # False: the file rewrote existing rows (compaction), adds no new data


# --------------------------------------------------------------------------------------------------
# The interface
# --------------------------------------------------------------------------------------------------


@dataclass
class NewRows:
    """Rows a table gained since the last time they were consumed; call ``consumed()`` once they have
    been processed, so the next call starts after them."""

    rows: DataFrame
    consumed: Callable[[], None]


class DeltaStore(ABC):
    """Delta tables under one warehouse folder, each ``TableDef`` in ``<warehouse>/<table.name>``."""

    engine: str

    def __init__(self, spark: SparkSession, warehouse: str) -> None:
        self.spark = spark
        self.warehouse = warehouse.rstrip("/") or "/"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(engine={self.engine!r}, warehouse={self.warehouse!r})"

    def path(self, table: TableDef) -> str:
        """Where the table lives."""
        return f"{self.warehouse.rstrip('/')}/{table.name}"

    @abstractmethod
    def exists(self, table: TableDef) -> bool:
        """True when the table has been created (has a Delta log)."""

    @abstractmethod
    def version(self, table: TableDef) -> int | None:
        """The latest committed version, None when the table does not exist."""

    @abstractmethod
    def read(self, table: TableDef) -> DataFrame:
        """The current snapshot with the table's columns in order and types; empty (with exactly the
        table's schema) if the table does not exist. (Read from files, Spark marks every column
        nullable; a TableDef column the table does not have yet reads as null.)"""

    @abstractmethod
    def append(
        self, df: DataFrame, table: TableDef, *, app_id: str | None = None, txn_version: int | None = None
    ) -> bool:
        """Append ``df`` (columns selected in table order and cast; extra columns dropped) in one commit.

        Creates the table when absent, even when ``df`` is empty. With ``app_id``/``txn_version`` the
        commit records Delta's application transaction id; if that app already committed a version
        ``>= txn_version`` nothing is written and False is returned (idempotent retry).
        """

    @abstractmethod
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

    @abstractmethod
    def transaction_version(self, table: TableDef, app_id: str) -> int | None:
        """The last ``txn_version`` committed by ``app_id``, None if none (or no table)."""

    @abstractmethod
    def files_added_since(self, table: TableDef, version: int | None) -> list[AddedFile]:
        """Data files of the current snapshot added by commits after ``version`` (None: all current
        files), sorted by (version, path). Files added and then removed again (by an overwrite) are not
        listed: they are no longer part of the table.

        Raises:
            HistoryUnavailableError: a commit after ``version`` has been cleaned out of the log.
        """

    @abstractmethod
    def read_files(self, table: TableDef, files: Sequence[AddedFile]) -> DataFrame:
        """The rows of the given files (from :meth:`files_added_since`), columns as in :meth:`read`."""

    def new_rows(self, table: TableDef, progress_dir: str) -> NewRows:
        """The rows appended to ``table`` since the last :meth:`NewRows.consumed` under ``progress_dir``
        (all rows the first time): the incremental feed of scheduled jobs.

        This engine: the files the Delta log added after the version recorded in ``progress_dir``.
        """
        progress = Path(progress_dir) / "version.json"
        since = json.loads(progress.read_text())["version"] if progress.exists() else None
        current = self.version(table)  # first: a commit landing meanwhile waits for the next call
        files = [f for f in self.files_added_since(table, since) if current is None or f.version <= current]

        def consumed() -> None:
            write_json(progress, {"version": current})

        return NewRows(self.read_files(table, files) if files else self.empty(table), consumed)

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
                    expr.isNull(),
                    F.raise_error(F.lit(f"NOT NULL column {table.name}.{col.name} is null")),
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
# --------------------------------------------------------------------------------------------------


def _partition_type(table: TableDef, name: str) -> str:
    if name not in table.partition_by:
        raise ValueError(
            f"{name!r} is not a partition column of table {table.name!r} "
            f"(partitioned by {', '.join(table.partition_by) or 'nothing'})"
        )
    return table.column(name).type.strip()


def _check_partition_types(table: TableDef) -> None:
    for name in table.partition_by:
        t = table.column(name).type.strip()
        if t not in _PARTITION_TYPES:
            raise ValueError(
                f"table {table.name!r}: partition column {name!r} has type {t}; "
                f"supported partition types are {', '.join(_PARTITION_TYPES)}"
            )


def _typed_partition_value(ctype: str, value: Any) -> Any:
    """A partition value (Python value, or its string form in a Delta log / folder name) as Python."""
    if value is None:
        return None
    if ctype == "string":
        return str(value)
    if ctype == "date":
        if isinstance(value, datetime):
            raise ValueError(f"a date partition value must be a date, not a datetime: {value!r}")
        if isinstance(value, date):
            return value
        return date.fromisoformat(str(value)[:10])
    if ctype in ("int", "bigint"):
        if isinstance(value, bool):
            raise ValueError(f"an integer partition value must not be a bool: {value!r}")
        return int(value)
    if ctype == "boolean":
        if isinstance(value, bool):
            return value
        s = str(value).strip().lower()
        if s in ("true", "false"):
            return s == "true"
        raise ValueError(f"not a boolean partition value: {value!r}")
    raise ValueError(f"unsupported partition column type {ctype}")


def _delta_partition_string(ctype: str, value: Any) -> str | None:
    """Delta's serialized form of a partition value (PROTOCOL.md 'Partition Value Serialization')."""
    v = _typed_partition_value(ctype, value)
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, date):
        return v.isoformat()
    return str(v)


def _normalize_specs(table: TableDef, partitions: Sequence[Mapping[str, Any]]) -> list[dict[str, str | None]]:
    """Partition specs as {column: Delta string} dicts, validated against the table."""
    if isinstance(partitions, Mapping):
        raise ValueError("partitions must be a sequence of mappings, e.g. [{'log_date': date(2024, 5, 1)}]")
    if not partitions:
        raise ValueError("partitions must not be empty; pass partitions=None to replace the whole table")
    specs: list[dict[str, str | None]] = []
    for spec in partitions:
        if not spec:
            raise ValueError("a partition spec must name at least one partition column")
        specs.append({k: _delta_partition_string(_partition_type(table, k), v) for k, v in spec.items()})
    return specs


def _spec_matches(spec: Mapping[str, str | None], values: Mapping[str, str | None]) -> bool:
    return all(values.get(k) == v for k, v in spec.items())


def _stage_partition_values(table: TableDef, rel_dir: str) -> dict[str, str | None]:
    """Delta partition strings from the hive-style folders Spark wrote (``a=1/b=x``)."""
    parts = [p for p in rel_dir.split("/") if p]
    if [p.split("=", 1)[0] for p in parts] != list(table.partition_by):
        raise RuntimeError(f"unexpected partition folder {rel_dir!r} for table {table.name!r}")
    out: dict[str, str | None] = {}
    for p in parts:
        name, raw = p.split("=", 1)
        value = unquote(raw)
        out[name] = (
            None if value == _HIVE_NULL else _delta_partition_string(table.column(name).type.strip(), value)
        )
    return out


def _typed_values(table: TableDef, values: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in values.items():
        ctype = table.column(k).type.strip() if k in table.column_names else "string"
        try:
            out[k] = _typed_partition_value(ctype, v)
        except ValueError:
            out[k] = v
    return out


# --------------------------------------------------------------------------------------------------
# Parquet footer statistics (Delta's per-file "stats")
# --------------------------------------------------------------------------------------------------


def _ts_stat(value: Any, *, upper: bool) -> str | None:
    """Delta timestamp stats are ISO-8601 UTC with millisecond precision: floor the min, ceil the max."""
    if isinstance(value, int):  # raw int64 micros
        value = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=value)
    if not isinstance(value, datetime):
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    value = value.astimezone(UTC)
    extra = value.microsecond % 1000
    if extra:
        value -= timedelta(microseconds=extra)
        if upper:
            value += timedelta(milliseconds=1)
    return str(value.strftime("%Y-%m-%dT%H:%M:%S.")) + f"{value.microsecond // 1000:03d}Z"


def _stat_value(ctype: str, value: Any, *, upper: bool) -> Any:
    """A parquet min/max as Delta stats JSON, or None to leave it out."""
    if value is None:
        return None
    if ctype in ("int", "bigint"):
        return int(value) if isinstance(value, int) and not isinstance(value, bool) else None
    if ctype == "double":
        f = float(value)
        return None if math.isnan(f) or math.isinf(f) else f
    if ctype == "boolean":
        return bool(value)
    if ctype == "date":
        if isinstance(value, datetime):
            return value.date().isoformat()
        if isinstance(value, date):
            return value.isoformat()
        return None
    if ctype == "timestamp":
        return _ts_stat(value, upper=upper)
    if ctype == "string":
        if isinstance(value, bytes):
            try:
                value = value.decode("utf-8")
            except UnicodeDecodeError:
                return None
        return value if isinstance(value, str) and len(value) <= _MAX_STATS_STRING else None
    return None  # binary and complex types: no min/max


def _stats_columns(table: TableDef, config: Mapping[str, str | None]) -> list[str]:
    """The data columns Delta collects statistics for: ``delta.dataSkippingStatsColumns`` if set, else
    the first ``delta.dataSkippingNumIndexedCols`` (default 32; -1 = all) columns."""
    data_cols = [c.name for c in table.columns if c.name not in table.partition_by]
    explicit = config.get("delta.dataSkippingStatsColumns")
    if explicit:
        wanted = {n.strip().strip("`") for n in explicit.split(",")}
        return [c for c in data_cols if c in wanted]
    try:
        n = int(config.get("delta.dataSkippingNumIndexedCols") or 32)
    except ValueError:
        n = 32
    return data_cols if n < 0 else data_cols[:n]


def _file_stats(local_path: str, table: TableDef, columns: Sequence[str]) -> tuple[int, str]:
    """(numRecords, Delta stats JSON) from a parquet file's footer, for the given top-level columns."""
    import pyarrow.parquet as pq

    md = pq.read_metadata(local_path)
    types = {name: table.column(name).type.strip() for name in columns}
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, int] = {}
    # top-level primitive columns only: their parquet leaf path is the column name itself
    leaves = {md.schema.column(i).path: i for i in range(md.num_columns)}
    for name, ctype in types.items():
        idx = leaves.get(name)
        if idx is None:
            continue
        lo: Any = None
        hi: Any = None
        nc: int | None = 0
        minmax_ok = md.num_row_groups > 0
        for rg in range(md.num_row_groups):
            chunk = md.row_group(rg).column(idx)
            st = chunk.statistics
            if st is None:
                nc = None
                minmax_ok = False
                continue
            if nc is not None:
                nc = nc + int(st.null_count) if st.has_null_count else None
            if chunk.num_values == (st.null_count if st.has_null_count else -1):
                continue  # an all-null row group has no min/max and does not need one
            if not st.has_min_max:
                minmax_ok = False
                continue
            try:
                lo = st.min if lo is None or st.min < lo else lo
                hi = st.max if hi is None or st.max > hi else hi
            except TypeError:
                minmax_ok = False
        if nc is not None:
            nulls[name] = nc
        if minmax_ok and lo is not None:
            smin = _stat_value(ctype, lo, upper=False)
            smax = _stat_value(ctype, hi, upper=True)
            if smin is not None and smax is not None:
                mins[name] = smin
                maxs[name] = smax
    stats = {"numRecords": md.num_rows, "minValues": mins, "maxValues": maxs, "nullCount": nulls}
    return int(md.num_rows), json.dumps(stats, separators=(",", ":"))


# --------------------------------------------------------------------------------------------------
# Table features
# --------------------------------------------------------------------------------------------------

#: reader features the delta-rs path honours: the files it lists are plain parquet files to read whole
_READER_FEATURES_OK = frozenset({"timestampNtz"})
#: writer features the delta-rs path honours outright (appendOnly: delta-rs refuses data removals itself)
_WRITER_FEATURES_OK = frozenset({"appendOnly", "timestampNtz", "changeDataFeed"})
#: writer features that are harmless while unused (no invariant, constraint, generated/identity column)
_WRITER_FEATURES_IF_UNUSED = frozenset(
    {"invariants", "checkConstraints", "generatedColumns", "identityColumns"}
)


def _field_metadata_keys(schema_json: Mapping[str, Any]) -> set[str]:
    keys: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            meta = node.get("metadata")
            if isinstance(meta, dict):
                keys.update(meta)
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(schema_json)
    return keys


def _features_in_use(dt: DeltaTable) -> tuple[set[str], set[str]]:
    """(reader features, writer features) of the table that actually matter for its files."""
    proto = dt.protocol()
    config = dict(dt.metadata().configuration or {})
    meta_keys = _field_metadata_keys(json.loads(dt.schema().to_json()))
    column_mapping = config.get("delta.columnMapping.mode", "none").lower() not in ("", "none")

    reader: set[str] = set()
    if proto.min_reader_version >= 3:
        reader.update(proto.reader_features or [])
    elif proto.min_reader_version == 2 and column_mapping:
        reader.add("columnMapping")

    writer: set[str] = set()
    wv = proto.min_writer_version
    if wv >= 7:
        writer.update(proto.writer_features or [])
    else:  # legacy protocol versions imply their features; count those in use
        if wv >= 2:
            writer.add("appendOnly")
            if any(k == "delta.invariants" for k in meta_keys):
                writer.add("invariants")
        if wv >= 3 and any(k.startswith("delta.constraints.") for k in config):
            writer.add("checkConstraints")
        if wv >= 4:
            writer.add("changeDataFeed")
            if "delta.generationExpression" in meta_keys:
                writer.add("generatedColumns")
        if wv >= 5 and column_mapping:
            writer.add("columnMapping")
        if wv >= 6 and any(k.startswith("delta.identity.") for k in meta_keys):
            writer.add("identityColumns")
    # writer features that only matter when used
    in_use = {
        "invariants": "delta.invariants" in meta_keys,
        "checkConstraints": any(k.startswith("delta.constraints.") for k in config),
        "generatedColumns": "delta.generationExpression" in meta_keys,
        "identityColumns": any(k.startswith("delta.identity.") for k in meta_keys),
    }
    writer = {f for f in writer if f not in _WRITER_FEATURES_IF_UNUSED or in_use[f]}
    return reader, writer


def _unsupported_features(dt: DeltaTable, *, write: bool, overwrite: bool = False) -> list[str]:
    reader, writer = _features_in_use(dt)
    bad = {f for f in reader if f not in _READER_FEATURES_OK}
    if write:
        ok = _READER_FEATURES_OK | _WRITER_FEATURES_OK
        bad.update(f for f in writer if f not in ok)
        config = dict(dt.metadata().configuration or {})
        if overwrite and config.get("delta.appendOnly", "false").lower() == "true":
            bad.add("appendOnly (delta.appendOnly=true forbids overwrites)")
    return sorted(bad)


# --------------------------------------------------------------------------------------------------
# Schema checks
# --------------------------------------------------------------------------------------------------


def _loose_type(t: Any) -> Any:
    """A Delta schema type (JSON) without metadata and nested nullability."""
    if isinstance(t, dict):
        out: dict[str, Any] = {}
        for k, v in t.items():
            if k in ("metadata", "nullable", "containsNull", "valueContainsNull"):
                continue
            out[k] = _loose_type(v)
        return out
    if isinstance(t, list):
        return [_loose_type(v) for v in t]
    return t


def _schema_problems(dt: DeltaTable, table: TableDef, *, for_read: bool = False) -> list[str]:
    """How the table's schema disagrees with the TableDef. For reads only what breaks reading counts:
    a column of another type, other partition columns (a TableDef column the table lacks reads as null)."""
    from deltalake import Schema

    have = {f["name"]: f for f in json.loads(dt.schema().to_json())["fields"]}
    want = {f["name"]: f for f in json.loads(Schema.from_arrow(table.arrow_schema()).to_json())["fields"]}
    problems: list[str] = []
    for name, f in want.items():
        if name not in have:
            if not for_read:
                problems.append(f"column {name} is missing from the table")
            continue
        if _loose_type(have[name]["type"]) != _loose_type(f["type"]):
            problems.append(
                f"column {name} is {json.dumps(have[name]['type'])} in the table, "
                f"{json.dumps(f['type'])} in the TableDef"
            )
        if not for_read and not have[name].get("nullable", True) and f.get("nullable", True):
            problems.append(f"column {name} is NOT NULL in the table but nullable in the TableDef")
    for name, f in have.items():
        if not for_read and name not in want and not f.get("nullable", True):
            problems.append(f"NOT NULL column {name} of the table is not in the TableDef")
    parts = list(dt.metadata().partition_columns)
    if parts != list(table.partition_by):
        problems.append(f"table is partitioned by {parts}, the TableDef by {list(table.partition_by)}")
    return problems


# --------------------------------------------------------------------------------------------------
# Incremental file listing (shared by both engines)
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _LiveFile:
    path: str
    partition_values: Mapping[str, Any]
    size_bytes: int
    num_records: int | None


def _resolve_added(
    live: Mapping[str, _LiveFile],
    commit_adds: Iterable[tuple[int, str, bool]],
    *,
    since: int | None,
    first_read_version: int,
) -> list[AddedFile]:
    """Tag the snapshot's files (keyed by decoded relative path) with the commit that added them.

    ``commit_adds``: (version, key, data_change) of every ``add`` in the commits read, which must cover
    every version after ``since`` (or, for ``since=None``, start at ``first_read_version``). A file added
    twice counts from its latest add.
    """
    added: dict[str, tuple[int, bool]] = {}
    for version, key, data_change in commit_adds:
        if key in live and (key not in added or added[key][0] <= version):
            added[key] = (version, data_change)
    out: list[AddedFile] = []
    for key, lf in live.items():
        if key in added:
            version, data_change = added[key]
        elif since is None:
            # added by a commit whose log file has been cleaned up: at or before the first one read
            version, data_change = max(first_read_version - 1, 0), True
        else:
            continue
        if since is not None and version <= since:
            continue
        out.append(
            AddedFile(version, lf.path, lf.partition_values, lf.size_bytes, lf.num_records, data_change)
        )
    out.sort(key=lambda f: (f.version, f.path))
    return out


def _check_since(version: int | None) -> None:
    if version is not None and (isinstance(version, bool) or not isinstance(version, int) or version < -1):
        raise ValueError(f"version must be None or an int >= -1, got {version!r}")


# --------------------------------------------------------------------------------------------------
# delta-rs engine
# --------------------------------------------------------------------------------------------------


def _local_dir(warehouse: str) -> str:
    """A local absolute folder from a path or ``file:`` URI (the delta-rs engine moves files itself)."""
    parsed = urlparse(warehouse)
    if parsed.scheme == "file":
        return os.path.abspath(unquote(parsed.path))
    if parsed.scheme and len(parsed.scheme) > 1:  # not a Windows drive letter
        raise ValueError(
            f"the delta-rs engine works on local folders only, not {warehouse!r}; "
            "use the delta-spark engine for object stores"
        )
    return os.path.abspath(warehouse)


#: what Delta expects of the parquet files Spark writes for it, whatever the session says
_PARQUET_WRITE_CONF = {
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",  # not INT96
    "spark.sql.parquet.writeLegacyFormat": "false",
}


@contextlib.contextmanager
def _session_conf(spark: SparkSession, settings: Mapping[str, str]) -> Iterator[None]:
    """Set runtime SQL settings for the duration of a write, then put the session's values back."""
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


def _spark_path(local: str) -> str:
    return "file://" + local if local.startswith("/") else local


class DeltaRsStore(DeltaStore):
    """delta-rs commits of files Spark writes (see the module docstring)."""

    engine = ENGINE_DELTA_RS

    def __init__(self, spark: SparkSession, warehouse: str) -> None:
        super().__init__(spark, _local_dir(warehouse))

    def path(self, table: TableDef) -> str:
        return os.path.join(self.warehouse, table.name)

    # ---- snapshot --------------------------------------------------------------------------------

    def _load(self, table: TableDef) -> DeltaTable | None:
        from deltalake import DeltaTable
        from deltalake.exceptions import DeltaProtocolError, TableNotFoundError

        path = self.path(table)
        if not DeltaTable.is_deltatable(path):
            return None
        try:
            return DeltaTable(path)
        except TableNotFoundError:
            return None
        except DeltaProtocolError as e:  # delta-rs itself cannot read the log
            raise TableFeatureError(table.name, path, [str(e)], self.engine, "read") from e

    def _check_features(
        self, dt: DeltaTable, table: TableDef, *, write: bool, overwrite: bool = False
    ) -> None:
        bad = _unsupported_features(dt, write=write, overwrite=overwrite)
        if bad:
            raise TableFeatureError(
                table.name, self.path(table), bad, self.engine, "write" if write else "read"
            )

    def _check_schema(self, dt: DeltaTable, table: TableDef, *, for_read: bool = False) -> None:
        problems = _schema_problems(dt, table, for_read=for_read)
        if problems:
            raise ValueError(
                f"Delta table {table.name!r} at {self.path(table)} does not match its TableDef: "
                + "; ".join(problems)
            )

    def exists(self, table: TableDef) -> bool:
        from deltalake import DeltaTable

        return bool(DeltaTable.is_deltatable(self.path(table)))

    def version(self, table: TableDef) -> int | None:
        dt = self._load(table)
        return None if dt is None else int(dt.version())

    def transaction_version(self, table: TableDef, app_id: str) -> int | None:
        dt = self._load(table)
        if dt is None:
            return None
        v = dt.transaction_version(app_id)
        return None if v is None else int(v)

    def _read_paths(self, table: TableDef, files: Sequence[str]) -> DataFrame:
        if not files:
            return self.empty(table)
        df = (
            self.spark.read.option("basePath", _spark_path(self.path(table)))
            .schema(table.spark_schema())
            .parquet(*[_spark_path(f) for f in files])
        )
        return df.select(*[f"`{c}`" for c in table.column_names])

    def read(self, table: TableDef) -> DataFrame:
        dt = self._load(table)
        if dt is None:
            return self.empty(table)
        self._check_features(dt, table, write=False)
        self._check_schema(dt, table, for_read=True)
        return self._read_paths(table, list(dt.file_uris()))

    def read_files(self, table: TableDef, files: Sequence[AddedFile]) -> DataFrame:
        dt = self._load(table)
        if dt is not None:
            self._check_features(dt, table, write=False)
            self._check_schema(dt, table, for_read=True)
        return self._read_paths(table, [f.path for f in files])

    # ---- incremental -----------------------------------------------------------------------------

    def _live_files(self, dt: DeltaTable, table: TableDef) -> dict[str, _LiveFile]:
        import pyarrow as pa

        actions = pa.table(dt.get_add_actions(flatten=True)).to_pylist()
        live: dict[str, _LiveFile] = {}
        base = self.path(table)
        for a in actions:
            rel = unquote(a["path"])  # the log's (URI-encoded) path
            parsed = urlparse(rel)
            local = unquote(parsed.path) if parsed.scheme == "file" else os.path.join(base, rel)
            pvals = {k[len("partition.") :]: v for k, v in a.items() if k.startswith("partition.")}
            n = a.get("num_records")
            live[rel] = _LiveFile(
                local, _typed_values(table, pvals), int(a["size_bytes"]), None if n is None else int(n)
            )
        return live

    def files_added_since(self, table: TableDef, version: int | None) -> list[AddedFile]:
        _check_since(version)
        dt = self._load(table)
        if dt is None:
            return []
        current = int(dt.version())
        if version is not None and version >= current:
            return []
        live = self._live_files(dt, table)
        log = os.path.join(self.path(table), "_delta_log")
        start = 0 if version is None else version + 1
        adds: list[tuple[int, str, bool]] = []
        first_read = current + 1
        for v in range(start, current + 1):
            commit = os.path.join(log, f"{v:020d}.json")
            try:
                with open(commit, encoding="utf-8") as fh:
                    lines = fh.readlines()
            except FileNotFoundError:
                if version is None:
                    continue
                raise HistoryUnavailableError(
                    f"commit {v} of Delta table {table.name!r} is no longer in its log; "
                    f"cannot list the files added after version {version}: read the whole table"
                ) from None
            first_read = min(first_read, v)
            for line in lines:
                line = line.strip()
                if not line:
                    continue
                action = json.loads(line)
                add = action.get("add")
                if add:
                    adds.append((v, unquote(add["path"]), bool(add.get("dataChange", True))))
        return _resolve_added(live, adds, since=version, first_read_version=first_read)

    # ---- writes ----------------------------------------------------------------------------------

    def append(
        self, df: DataFrame, table: TableDef, *, app_id: str | None = None, txn_version: int | None = None
    ) -> bool:
        return self._write(df, table, mode="append", partitions=None, app_id=app_id, txn_version=txn_version)

    def overwrite(
        self,
        df: DataFrame,
        table: TableDef,
        *,
        partitions: Sequence[Mapping[str, Any]] | None = None,
        app_id: str | None = None,
        txn_version: int | None = None,
    ) -> bool:
        return self._write(
            df, table, mode="overwrite", partitions=partitions, app_id=app_id, txn_version=txn_version
        )

    @staticmethod
    def _already_committed(dt: DeltaTable | None, app_id: str | None, txn_version: int | None) -> bool:
        if dt is None or app_id is None or txn_version is None:
            return False
        done = dt.transaction_version(app_id)
        return done is not None and int(done) >= txn_version

    def _remove_stale_stages(self, table_dir: str) -> None:
        try:
            entries = list(os.scandir(table_dir))
        except FileNotFoundError:
            return
        now = time.time()
        for e in entries:
            if e.name.startswith(STAGE_PREFIX) and e.is_dir():
                try:
                    if now - e.stat().st_mtime > STALE_STAGE_SECONDS:
                        shutil.rmtree(e.path, ignore_errors=True)
                except OSError:
                    pass

    def _write(
        self,
        df: DataFrame,
        table: TableDef,
        *,
        mode: str,
        partitions: Sequence[Mapping[str, Any]] | None,
        app_id: str | None,
        txn_version: int | None,
    ) -> bool:
        self._check_txn(app_id, txn_version)
        _check_partition_types(table)
        specs = None if partitions is None else _normalize_specs(table, partitions)
        conformed = self._conform(df, table)

        dt = self._load(table)
        if dt is not None:
            self._check_features(dt, table, write=True, overwrite=mode == "overwrite")
            self._check_schema(dt, table)
        if self._already_committed(dt, app_id, txn_version):
            return False

        table_dir = self.path(table)
        os.makedirs(table_dir, exist_ok=True)
        self._remove_stale_stages(table_dir)
        stage = os.path.join(table_dir, f"{STAGE_PREFIX}{uuid.uuid4().hex}")
        moved: list[str] = []
        try:
            writer = conformed.write.mode("errorifexists").option("compression", "snappy")
            if table.partition_by:
                writer = writer.partitionBy(*table.partition_by)
            with _session_conf(self.spark, _PARQUET_WRITE_CONF):
                writer.parquet(_spark_path(stage))

            config = dict(table.properties) if dt is None else dict(dt.metadata().configuration or {})
            adds = self._stage_to_table(stage, table, specs, _stats_columns(table, config), moved)
            return self._commit(table, adds, mode=mode, specs=specs, app_id=app_id, txn_version=txn_version)
        except BaseException:
            self._discard_uncommitted(table, moved)
            raise
        finally:
            shutil.rmtree(stage, ignore_errors=True)

    def _staged_files(self, stage: str) -> Iterator[tuple[str, str]]:
        """(relative folder, file name) of every data file Spark wrote under ``stage``."""
        for root, dirs, files in os.walk(stage):
            dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
            rel_dir = os.path.relpath(root, stage)
            for name in sorted(files):
                if name.endswith(".parquet") and not name.startswith((".", "_")):
                    yield ("" if rel_dir == "." else rel_dir.replace(os.sep, "/")), name

    def _stage_to_table(
        self,
        stage: str,
        table: TableDef,
        specs: list[dict[str, str | None]] | None,
        stats_columns: Sequence[str],
        moved: list[str],
    ) -> list[Any]:
        """Move the staged files into the table's partition folders; their Delta add actions."""
        from deltalake.transaction import AddAction

        table_dir = self.path(table)
        staged = []
        for rel_dir, name in self._staged_files(stage):
            values = _stage_partition_values(table, rel_dir)
            if specs is not None and not any(_spec_matches(s, values) for s in specs):
                raise ValueError(
                    f"overwrite of table {table.name!r}: the DataFrame has rows in partition {values}, "
                    f"which is not among the partitions being replaced {specs}"
                )
            staged.append((rel_dir, name, values))

        adds = []
        for rel_dir, name, values in staged:
            src = os.path.join(stage, rel_dir, name)
            num_records, stats = _file_stats(src, table, stats_columns)
            if num_records == 0:
                continue  # Spark writes an empty file for an empty non-partitioned DataFrame
            rel = f"{rel_dir}/{name}" if rel_dir else name
            dest = os.path.join(table_dir, rel)
            if os.path.exists(dest):
                raise RuntimeError(f"refusing to overwrite existing data file {dest}")
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            os.rename(src, dest)
            moved.append(dest)
            st = os.stat(dest)
            adds.append(AddAction(rel, st.st_size, values, int(st.st_mtime * 1000), True, stats))
        return adds

    def _commit(
        self,
        table: TableDef,
        adds: list[Any],
        *,
        mode: str,
        specs: list[dict[str, str | None]] | None,
        app_id: str | None,
        txn_version: int | None,
    ) -> bool:
        from deltalake import Schema
        from deltalake.exceptions import DeltaError
        from deltalake.transaction import (
            CommitProperties,
            RemoveAction,
            Transaction,
            create_table_with_add_actions,
        )

        operation = "append" if mode == "append" else ("overwrite" if specs is None else "replacePartitions")
        custom: dict[str, Any] = {"rebalanceReplay": {"operation": operation, "table": table.name}}
        if specs is not None:
            custom["rebalanceReplay"]["partitions"] = specs
        props = CommitProperties(
            custom_metadata=custom,
            app_transactions=None if app_id is None else [Transaction(app_id, int(txn_version or 0))],
        )
        path = self.path(table)

        crash_point(f"commit:{table.name}")  # data files written, not yet committed
        for attempt in range(2):
            dt = self._load(table)
            if dt is None:
                try:
                    create_table_with_add_actions(
                        path,
                        Schema.from_arrow(table.arrow_schema()),
                        adds,
                        mode="error",
                        partition_by=list(table.partition_by) or None,
                        name=table.name,
                        description=table.doc or None,
                        configuration=dict(table.properties) or None,
                        commit_properties=props,
                    )
                    return True
                except DeltaError:
                    if attempt == 0 and self.exists(table):
                        continue  # another writer created it meanwhile: commit into it instead
                    raise
            # re-check just before committing: a concurrent retry of the same batch may have won
            self._check_features(dt, table, write=True, overwrite=mode == "overwrite")
            if self._already_committed(dt, app_id, txn_version):
                self._discard_files(path, [os.path.join(path, a.path) for a in adds])
                return False
            actions: list[Any] = list(adds)
            write_mode = mode
            partition_filters: list[tuple[str, str, Any]] | None = None
            if specs is not None:
                partition_filters = self._conjunction(specs)
                if partition_filters is None:
                    # not one conjunction (several specs over several columns): remove the files explicitly
                    write_mode = "append"
                    now = int(time.time() * 1000)
                    for rel, pv, size in self._files_matching(dt, table, specs):
                        actions.append(RemoveAction(rel, True, now, size, dict(pv)))
            dt.create_write_transaction(
                actions,
                write_mode,
                dt.schema(),
                partition_by=list(table.partition_by) or None,
                partition_filters=partition_filters,
                commit_properties=props,
            )
            return True
        raise RuntimeError("unreachable")  # pragma: no cover

    @staticmethod
    def _conjunction(specs: list[dict[str, str | None]]) -> list[tuple[str, str, Any]] | None:
        """The specs as ONE delta-rs partition filter conjunction, or None if that is impossible."""
        if len(specs) == 1:
            return [(k, "=", "" if v is None else v) for k, v in specs[0].items()]
        keys = {tuple(sorted(s)) for s in specs}
        if len(keys) == 1 and len(next(iter(keys))) == 1:
            (col,) = next(iter(keys))
            if any(s[col] is None for s in specs):
                return None
            return [(col, "in", sorted({str(s[col]) for s in specs}))]
        return None

    @staticmethod
    def _files_matching(
        dt: DeltaTable, table: TableDef, specs: list[dict[str, str | None]]
    ) -> list[tuple[str, dict[str, str | None], int]]:
        """(decoded relative path, partition strings, size) of the snapshot's files in ``specs``."""
        import pyarrow as pa

        out = []
        for a in pa.table(dt.get_add_actions(flatten=True)).to_pylist():
            pv = {
                k[len("partition.") :]: _delta_partition_string(
                    table.column(k[len("partition.") :]).type.strip(), v
                )
                for k, v in a.items()
                if k.startswith("partition.")
            }
            if any(_spec_matches(s, pv) for s in specs):
                out.append((unquote(a["path"]), pv, int(a["size_bytes"])))
        return out

    def _discard_files(self, table_dir: str, paths: Sequence[str]) -> None:
        for p in paths:
            with contextlib.suppress(FileNotFoundError):
                os.remove(p)

    def _discard_uncommitted(self, table: TableDef, moved: Sequence[str]) -> None:
        """After a failure, delete the files we moved into the table unless a commit references them."""
        if not moved:
            return
        try:
            dt = self._load(table)
            live = set() if dt is None else {os.path.normpath(u) for u in dt.file_uris()}
        except Exception:  # cannot tell: keep the files (orphans are harmless, deleting live data is not)
            return
        self._discard_files(self.path(table), [p for p in moved if os.path.normpath(p) not in live])


# --------------------------------------------------------------------------------------------------
# delta-spark engine
# --------------------------------------------------------------------------------------------------


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


def _replace_where(table: TableDef, specs: list[dict[str, str | None]]) -> str:
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


def _norm_uri(uri: str) -> str:
    """A file URI/path in one comparable form (decoded, ``file:`` scheme dropped)."""
    u = unquote(uri)
    for prefix in ("file://", "file:"):
        if u.startswith(prefix):
            u = u[len(prefix) :]
            break
    return u


class DeltaSparkStore(DeltaStore):
    """Delta through Spark's own Delta connector (delta-spark jars + the ``delta`` Python package)."""

    engine = ENGINE_DELTA_SPARK

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

    def _log_json(self, table: TableDef, schema: str) -> DataFrame:
        from pyspark.sql import functions as F

        return (
            self.spark.read.schema(schema)
            .json(f"{self._log_dir(table)}/*.json")
            .withColumn("_file", F.col("_metadata.file_name"))
        )

    def transaction_version(self, table: TableDef, app_id: str) -> int | None:
        """From the ``txn`` actions of the log's commits and checkpoints (Delta PROTOCOL.md)."""
        from pyspark.errors import AnalysisException
        from pyspark.sql import functions as F

        if not self.exists(table):
            return None
        txn_schema = "txn struct<appId:string,version:bigint>"
        versions: list[int] = []
        frames = [self._log_json(table, txn_schema)]
        with contextlib.suppress(AnalysisException):  # raised when there is no checkpoint yet
            frames.append(
                self.spark.read.schema(txn_schema).parquet(f"{self._log_dir(table)}/*.checkpoint*.parquet")
            )
        for frame in frames:
            row = frame.where(F.col("txn.appId") == F.lit(app_id)).agg(F.max("txn.version")).first()
            if row is not None and row[0] is not None:
                versions.append(int(row[0]))
        return max(versions) if versions else None

    def _snapshot_files(self, table: TableDef) -> list[str]:
        """URIs of the current snapshot's data files."""
        return list(self.spark.read.format("delta").load(self.path(table)).inputFiles())

    def files_added_since(self, table: TableDef, version: int | None) -> list[AddedFile]:
        from pyspark.sql import functions as F

        _check_since(version)
        current = self.version(table)
        if current is None or (version is not None and version >= current):
            return []
        base = self.path(table).rstrip("/")
        live_uris = self._snapshot_files(table)
        add_schema = (
            "add struct<path:string,partitionValues:map<string,string>,size:bigint,"
            "dataChange:boolean,stats:string>"
        )
        rows = (
            self._log_json(table, add_schema)
            .where(F.col("add").isNotNull())
            .select("_file", "add.path", "add.partitionValues", "add.size", "add.dataChange", "add.stats")
            .collect()
        )
        commits: list[tuple[int, str, bool]] = []
        info: dict[str, tuple[Mapping[str, Any], int, int | None]] = {}
        seen_versions: set[int] = set()
        for r in rows:
            m = _COMMIT_FILE.match(r["_file"])
            if not m:
                continue  # a JSON checkpoint, not a commit
            v = int(m.group(1))
            seen_versions.add(v)
            p = r["path"]
            key = _norm_uri(p if urlparse(p).scheme else f"{base}/{p}")
            commits.append((v, key, True if r["dataChange"] is None else bool(r["dataChange"])))
            n = None
            if r["stats"]:
                try:
                    n = json.loads(r["stats"]).get("numRecords")
                except ValueError:
                    n = None
            info[key] = (dict(r["partitionValues"] or {}), int(r["size"] or 0), None if n is None else int(n))
        if version is not None:
            missing = [v for v in range(version + 1, current + 1) if v not in seen_versions]
            # commits without any add (e.g. deletes) are also absent from `rows`: check the files exist
            if missing:
                names = {
                    r[0]
                    for r in self.spark.read.text(f"{self._log_dir(table)}/*.json")
                    .select(F.col("_metadata.file_name"))
                    .distinct()
                    .collect()
                }
                gone = [v for v in missing if f"{v:020d}.json" not in names]
                if gone:
                    raise HistoryUnavailableError(
                        f"commit {gone[0]} of Delta table {table.name!r} is no longer in its log; "
                        f"cannot list the files added after version {version}: read the whole table"
                    )
        live: dict[str, _LiveFile] = {}
        for uri in live_uris:
            key = _norm_uri(uri)
            pv, size, n = info.get(key, ({}, 0, None))
            live[key] = _LiveFile(uri, _typed_values(table, pv), size, n)
        first = min(seen_versions) if seen_versions else current + 1
        return _resolve_added(live, commits, since=version, first_read_version=first)

    def read_files(self, table: TableDef, files: Sequence[AddedFile]) -> DataFrame:
        from pyspark.sql import functions as F

        if not files or not self.exists(table):
            return self.empty(table)
        wanted = sorted({_norm_uri(f.path) for f in files})
        # through the Delta reader (deletion vectors, column mapping honoured), keeping those files only
        df = self.spark.read.format("delta").load(self.path(table))
        path_col = F.regexp_replace(F.url_decode(F.col("_metadata.file_path")), r"^file:(//)?", "")
        return self._project(df.where(path_col.isin(wanted)), table)

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

    def append(
        self, df: DataFrame, table: TableDef, *, app_id: str | None = None, txn_version: int | None = None
    ) -> bool:
        return self._write(df, table, partitions=None, append=True, app_id=app_id, txn_version=txn_version)

    def overwrite(
        self,
        df: DataFrame,
        table: TableDef,
        *,
        partitions: Sequence[Mapping[str, Any]] | None = None,
        app_id: str | None = None,
        txn_version: int | None = None,
    ) -> bool:
        return self._write(
            df, table, partitions=partitions, append=False, app_id=app_id, txn_version=txn_version
        )

    def _write(
        self,
        df: DataFrame,
        table: TableDef,
        *,
        partitions: Sequence[Mapping[str, Any]] | None,
        append: bool,
        app_id: str | None,
        txn_version: int | None,
    ) -> bool:
        self._check_txn(app_id, txn_version)
        specs = None if partitions is None else _normalize_specs(table, partitions)
        conformed = self._conform(df, table)
        if app_id is not None and txn_version is not None:
            done = self.transaction_version(table, app_id)
            if done is not None and done >= txn_version:
                return False
        self._create_if_absent(table)
        writer = conformed.write.format("delta")
        if table.partition_by:
            writer = writer.partitionBy(*table.partition_by)
        if app_id is not None:
            # Delta itself also skips the write if this (app, version) is already committed
            writer = writer.option("txnAppId", app_id).option("txnVersion", str(txn_version))
        if append:
            writer = writer.mode("append")
        else:
            writer = writer.mode("overwrite").option("partitionOverwriteMode", "static")
            if specs is not None:
                writer = writer.option("replaceWhere", _replace_where(table, specs))
        writer.save(self.path(table))
        return True


# --------------------------------------------------------------------------------------------------
# Engine choice
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


def open_store(spark: SparkSession, warehouse: str, engine: str = "auto") -> DeltaStore:
    """The Delta store of ``warehouse``: ``engine`` is ``auto`` (delta-spark when its classes are on the
    JVM classpath, else delta-rs), ``delta-rs`` or ``delta-spark``."""
    if engine == "auto":
        engine = ENGINE_DELTA_SPARK if delta_spark_available(spark) else ENGINE_DELTA_RS
    if engine == ENGINE_DELTA_RS:
        return DeltaRsStore(spark, warehouse)
    if engine == ENGINE_DELTA_SPARK:
        return DeltaSparkStore(spark, warehouse)
    raise ValueError(f"unknown Delta engine {engine!r}; expected 'auto', {', '.join(map(repr, ENGINES))}")
