"""The warehouse's tables as a platform team uses them: by name in the Spark catalog
(:func:`register_tables`), their versions and the runs that wrote them (:func:`history`), and kept tidy
(:func:`maintain`: compaction, VACUUM, log checkpoints).

Each run has an id (``run_id``: time, command, random suffix), recorded in ``summary.json`` (``runs``)
and written into every Delta commit it makes (the commit's ``userMetadata``, shown by ``DESCRIBE
HISTORY``), so a table version leads to its run and a run to its table versions.
"""

from __future__ import annotations

import json
import math
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rebalance_replay.schemas import ALL_TABLES
from rebalance_replay.schemas.core import TableDef

if TYPE_CHECKING:  # pragma: no cover - typing only
    from pyspark.sql import SparkSession

    from rebalance_replay.jobs.config import Config
    from rebalance_replay.jobs.delta import Commit, DeltaStore, Maintenance


def new_run_id(command: str) -> str:
    """``20240501T101500Z-replay-3f9a1c``: sortable by time, names the command, unique."""
    return f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{command}-{uuid.uuid4().hex[:6]}"


def table_versions(store: DeltaStore) -> dict[str, int]:
    """The latest version of every table the warehouse has (a damaged one the command did not read is
    left out: the commands that read it say so, ``rebalance_replay.jobs.damage``)."""
    out = {}
    for t in ALL_TABLES:
        try:
            v = store.version(t)
        except Exception:  # its log cannot be read: not this command's table
            continue
        if v is not None:
            out[t.name] = v
    return out


# ---- tables by name --------------------------------------------------------------------------------


def _quote(name: str) -> str:
    return ".".join(f"`{part}`" for part in name.split("."))


def register_tables(
    spark: SparkSession, store: DeltaStore, database: str, tables: tuple[TableDef, ...] = ALL_TABLES
) -> list[str]:
    """``CREATE DATABASE IF NOT EXISTS`` and, for every table the warehouse has, ``CREATE TABLE IF NOT
    EXISTS database.name USING delta LOCATION 'path'`` (an external table: dropping it leaves the data).
    A name already registered at another location is replaced. Returns the names registered."""
    from pyspark.errors import AnalysisException

    from rebalance_replay.jobs.delta.spark import sql_string

    spark.sql(f"CREATE DATABASE IF NOT EXISTS {_quote(database)}")
    done = []
    for t in tables:
        if not store.exists(t):
            continue
        name = f"{database}.{t.name}"
        location = store.path(t)
        location_sql = sql_string(location)
        try:
            rows = spark.sql(f"DESCRIBE DETAIL {_quote(name)}").collect()
            registered = str(rows[0]["location"]) if rows else ""
        except AnalysisException:
            registered = ""
        if registered and registered.rstrip("/").removeprefix("file:") != location.rstrip("/"):
            spark.sql(f"DROP TABLE {_quote(name)}")  # external: the data stays
            registered = ""
        if not registered:
            spark.sql(f"CREATE TABLE IF NOT EXISTS {_quote(name)} USING delta LOCATION {location_sql}")
        done.append(name)
    return done


def catalog_conf(warehouse: str) -> dict[str, str]:
    """A locally built session's catalog for ``storage.database``: Spark's embedded Hive metastore (Derby)
    kept in ``<warehouse>/_catalog``, so the names outlive the process (``rebalance-replay sql``, or any
    session started with these settings)."""
    root = Path(warehouse) / "_catalog"
    return {
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": str(root / "spark-warehouse"),
        "spark.hadoop.javax.jdo.option.ConnectionURL": (
            f"jdbc:derby:;databaseName={root / 'metastore_db'};create=true"
        ),
        # Derby's log next to it, not in the working folder
        "spark.driver.extraJavaOptions": f"-Duser.timezone=UTC -Dderby.system.home={root}",
    }


# ---- history ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HistoryRow:
    table: str
    commit: Commit
    command: str | None  # the run's command, from summary.json (None: a run it does not list)


def runs_of(warehouse: str) -> dict[str, dict[str, Any]]:
    """``summary.json``'s runs by id."""
    path = Path(warehouse) / "summary.json"
    if not path.exists():
        return {}
    try:
        runs = json.loads(path.read_text()).get("runs") or []
    except json.JSONDecodeError:
        return {}
    return {str(r["run_id"]): r for r in runs if isinstance(r, dict) and r.get("run_id")}


def history(store: DeltaStore, tables: tuple[TableDef, ...] = ALL_TABLES) -> list[HistoryRow]:
    runs = runs_of(store.warehouse)
    out = []
    for t in tables:
        for c in store.history(t):
            run = runs.get(c.run_id or "")
            out.append(HistoryRow(t.name, c, None if run is None else str(run.get("command"))))
    return out


def format_history(rows: list[HistoryRow]) -> str:
    lines = [f"  {'table':<16}{'version':>8}  {'committed (UTC)':<23}  {'operation':<18}{'rows':>8}  run"]
    for r in rows:
        c = r.commit
        # to the millisecond: the time --as-of compares with (a time cut to the second can fall before it)
        when = datetime.fromtimestamp(c.timestamp_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
        run = c.run_id or "-"
        if r.command:
            run += f" ({r.command})"
        rows_text = "" if c.rows is None else str(c.rows)
        lines.append(
            f"  {r.table:<16}{c.version:>8}  {when:<23}  {c.operation[:17]:<18}{rows_text:>8}  {run}"
        )
    return "\n".join(lines)


# ---- maintenance -----------------------------------------------------------------------------------


def _feed_pending(store: DeltaStore, table: TableDef) -> list[Commit] | None:
    """The commits of ``table`` the incremental feed has not read yet (after the version it consumed
    last, ``_replay/incremental/source/version.json``); None when no feed reads the table."""
    if table.name != "requests":
        return None
    progress = Path(store.warehouse) / "_replay" / "incremental" / "source" / "version.json"
    if not progress.exists():
        return None
    try:
        since = json.loads(progress.read_text())["version"]
    except (json.JSONDecodeError, KeyError):
        return None
    return [c for c in store.history(table) if since is None or c.version > since]


def _hours_since(commits: list[Commit], now_ms: int) -> int:
    """Retention reaching back to the oldest of ``commits`` (so VACUUM keeps what they added)."""
    if not commits:
        return 0
    return math.ceil(max(0, now_ms - min(c.timestamp_ms for c in commits)) / 3_600_000) + 1


@dataclass
class MaintainResult:
    tables: list[Maintenance]
    dry_run: bool

    def format_text(self) -> str:
        verb = "would" if self.dry_run else "did"
        lines = [
            f"maintain: {len(self.tables)} table(s){' (dry run: nothing changed)' if self.dry_run else ''}"
        ]
        for m in self.tables:
            compaction = (
                f"compact {m.small_files} small file(s)"
                if self.dry_run
                else f"compacted {m.compacted} of {m.small_files} small file(s)"
            )
            lines.append(
                f"  {m.table:<16} {verb}: {compaction}, vacuum {len(m.vacuum_files)} file(s) unreferenced "
                f"for > {m.retention_hours} h, checkpoint the log"
            )
        return "\n".join(lines)

    def as_summary(self) -> dict[str, Any]:
        return {
            "maintain": {
                "dry_run": self.dry_run,
                "tables": {
                    m.table: {
                        "small_files": m.small_files,
                        "compacted": m.compacted,
                        "vacuumed": len(m.vacuum_files),
                        "retention_hours": m.retention_hours,
                    }
                    for m in self.tables
                },
            }
        }


def maintain(
    store: DeltaStore, config: Config, *, dry_run: bool, log: Callable[[str], None] = lambda _m: None
) -> MaintainResult:
    """Compact, VACUUM and checkpoint every table of the warehouse (the caller holds the warehouse
    lock: nothing else writes). Retention is ``maintain.retention_hours``, raised per table to what the
    incremental feed still needs."""
    now_ms = int(time.time() * 1000)
    done = []
    for t in ALL_TABLES:
        if not store.exists(t):
            continue
        hours = config.maintain.retention_hours
        pending = _feed_pending(store, t)
        needed = _hours_since(pending or [], now_ms)
        if needed > hours:
            log(
                f"maintain: {t.name}: retention raised from {hours} h to {needed} h (the incremental feed "
                "has not read its newest commits yet)"
            )
            hours = needed
        if pending:
            log(
                f"maintain: {t.name}: not compacted: the incremental feed has not read versions "
                f"{pending[0].version}..{pending[-1].version} yet (the next replay --incremental does)"
            )
        done.append(
            store.maintain(
                t,
                retention_hours=hours,
                target_file_bytes=config.maintain.target_file_mb << 20,
                dry_run=dry_run,
                compact=not pending,
            )
        )
    return MaintainResult(done, dry_run)
