"""A replay run's bookkeeping on the driver: its result (``summary.json``'s replay part), the manifest that
says what the last run did (``<warehouse>/_replay/manifest.json``), and the small output tables written
from the calls' side rows."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import pyarrow as pa
import pyarrow.compute as pc

from rebalance_replay.jobs.bookkeeping import write_json
from rebalance_replay.jobs.config import Config
from rebalance_replay.jobs.replay_wire import OUTPUT_TABLES
from rebalance_replay.transforms.report.units import fmt_dur, fmt_time, plural

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

    from rebalance_replay.jobs.delta import DeltaStore
    from rebalance_replay.jobs.delta.base import WriteMode


@dataclass
class ReplayResult:
    mode: str
    path: str
    horizon_ms: int | None
    new_rows: int
    counts: dict[str, int] = field(default_factory=dict)
    groups: int = 0
    kip848_groups: list[str] = field(default_factory=list)
    #: groups the replay refused (``replay.max_group_members``) → why, in one line
    refused_groups: dict[str, str] = field(default_factory=dict)
    late_rows: int = 0
    #: requests validated in bulk (routine traffic, rebalance_replay.transforms.bulk)
    bulk_validated: int = 0
    up_to_date: bool = False
    seconds: float = 0.0
    #: what the log tells about the brokers (``rebalance_replay.jobs.broker_facts``), summary.json ``broker``
    broker: dict[str, Any] = field(default_factory=dict)
    #: incremental: what waits for the next run and why, in UTC (summary.json replay.held_back)
    held_back: str | None = None
    #: incremental: requests landed but not replayed yet (arrived at or after the horizon), for a later run
    held_rows: int = 0
    #: requests replayed in this run (incremental: the new ones and those held before, less those held
    #: now); None when not known (a checkpoint from a version that did not count what it held)
    replayed_rows: int | None = None
    #: incremental: the run's number, its late-arrival tolerance (ms) and whether it closed the horizon
    run: int | None = None
    tolerance_ms: int | None = None
    final: bool = False
    #: the output tables' rows in the warehouse after this run (empty: the counts, a batch replay rewrites
    #: the tables)
    totals: dict[str, int] = field(default_factory=dict)

    @property
    def warehouse_counts(self) -> dict[str, int]:
        """Rows of each output table in the warehouse after this run."""
        source = self.totals or self.counts
        return {k: int(source.get(k, 0)) for k in OUTPUT_TABLES}

    def as_summary(self) -> dict[str, Any]:
        """summary.json's replay keys: the top-level counts are the warehouse's totals (what a report and the
        `run:` line show), ``replay.this_run`` what this run added."""
        totals = self.warehouse_counts
        return {
            **({"broker": self.broker} if self.broker else {}),
            "replay": {
                "mode": self.mode,
                "path": self.path,
                "horizon_ms": self.horizon_ms,
                "new_rows": self.new_rows,
                "replayed_rows": self.replayed_rows,
                "held_rows": self.held_rows,
                "groups": self.groups,
                "late_rows": self.late_rows,
                "bulk_validated": self.bulk_validated,
                "kip848_groups": self.kip848_groups,
                "refused_groups": [{"group": g, "reason": r} for g, r in sorted(self.refused_groups.items())],
                "seconds": round(self.seconds, 2),
                "up_to_date": self.up_to_date,
                "held_back": self.held_back,
                "this_run": {k: int(self.counts.get(k, 0)) for k in OUTPUT_TABLES},
            },
            **totals,
            "kip848_groups": len(self.kip848_groups),
        }

    def this_run_line(self) -> str:
        """What this run replayed, and what it held back for late arrivals (the horizon in UTC)."""
        if self.up_to_date and self.mode == "batch":
            return (
                "replay: this run: nothing to replay (the requests and the configuration are those of the "
                "last batch replay)"
            )
        if self.up_to_date:
            return "replay: this run: nothing has landed to replay"
        if self.mode == "batch":
            return (
                f"replay: this run: batch replay ({self.path} path) of {plural(self.groups, 'group')}, "
                f"{plural(self.new_rows, 'request')} → {counts_text(self.counts)}"
            )
        replayed = "" if self.replayed_rows is None else f", {self.replayed_rows} replayed"
        text = (
            f"replay: this run: incremental run{'' if self.run is None else f' {self.run}'} over "
            f"{plural(self.groups, 'group')}, {plural(self.new_rows, 'new request')}{replayed} → "
            f"{counts_text(self.counts)}"
        )
        if self.horizon_ms is None:
            return text
        if self.final:
            return f"{text}; nothing held back: --final closed the horizon at {fmt_time(self.horizon_ms)}"
        if not self.held_rows:
            return (
                f"{text}; nothing held back for late arrivals (horizon {fmt_time(self.horizon_ms)}, "
                f"replay.late_tolerance_ms {fmt_dur(self.tolerance_ms)} behind the newest completion)"
            )
        return (
            f"{text}; {plural(self.held_rows, 'request')} held back for late arrivals: those arriving from "
            f"{fmt_time(self.horizon_ms)} on wait for the next run (replay.late_tolerance_ms "
            f"{fmt_dur(self.tolerance_ms)} behind the newest completion; a run with --final replays them)"
        )

    def warehouse_line(self) -> str:
        """The output tables' rows in the warehouse after this run."""
        return f"replay: warehouse total: {counts_text(self.warehouse_counts)}"

    def refused_lines(self) -> list[str]:
        """One line per group the replay refused, with why (the other groups were replayed)."""
        return [f"replay: refused group {g}: {r}" for g, r in sorted(self.refused_groups.items())]


def counts_text(counts: Mapping[str, int]) -> str:
    """``14155 predictions, 301 transitions, 1 rebalance, 429 member sessions``."""
    return ", ".join(
        plural(int(counts.get(kind, 0)), kind.replace("_", " ").removesuffix("s")) for kind in OUTPUT_TABLES
    )


@dataclass
class ReplayManifest:
    """What the last replay into a warehouse did (``<warehouse>/_replay/manifest.json``). A batch replay
    writes every field but ``runs``; an incremental run writes ``mode``, ``runs``, ``horizon_ms`` and
    ``config``. A field missing from the file (an older manifest, the other mode's) reads as its default;
    keys this version does not know are ignored."""

    mode: Literal["batch", "incremental"] | None = None
    #: the configuration's fingerprint (:func:`_config_fingerprint`; a forensics batch adds its window and
    #: groups)
    config: str | None = None
    horizon_ms: int | None = None
    # batch
    path: str | None = None
    requests_version: int | None = None
    #: the Delta id of the ``requests`` table replayed (a manifest copied from another warehouse names
    #: another table: not up to date)
    requests_table_id: str | None = None
    complete: bool = False
    counts: dict[str, int] = field(default_factory=dict)
    groups: int = 0
    bulk_validated: int = 0
    kip848_groups: list[str] = field(default_factory=list)
    refused_groups: dict[str, str] = field(default_factory=dict)
    # incremental
    runs: int | None = None
    #: the run closed the horizon (``--final``): nothing landed is held back
    final: bool = False

    _BATCH: ClassVar[tuple[str, ...]] = (
        "mode",
        "path",
        "requests_version",
        "requests_table_id",
        "config",
        "complete",
        "horizon_ms",
        "counts",
        "groups",
        "bulk_validated",
        "kip848_groups",
        "refused_groups",
    )
    _INCREMENTAL: ClassVar[tuple[str, ...]] = ("mode", "runs", "horizon_ms", "final", "config")

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ReplayManifest:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def to_json(self) -> dict[str, Any]:
        keys = self._INCREMENTAL if self.mode == "incremental" else self._BATCH
        return {k: getattr(self, k) for k in keys}


class ReplayDirs:
    """Where a warehouse keeps its replay bookkeeping (``<warehouse>/_replay``)."""

    def __init__(self, warehouse: str) -> None:
        self.root = Path(warehouse) / "_replay"
        self.manifest = self.root / "manifest.json"
        self.incremental = self.root / "incremental"

    def load_manifest(self) -> ReplayManifest:
        if self.manifest.exists():
            return ReplayManifest.from_json(json.loads(self.manifest.read_text()))
        return ReplayManifest()

    def save_manifest(self, manifest: ReplayManifest) -> None:
        write_json(self.manifest, manifest.to_json(), indent=1)


#: what a scheduled audit's state records of the tables it belongs to (their Delta ids)
OWNER_KEYS: tuple[str, ...] = ("requests_table_id", "predictions_table_id")


def foreign_checkpoint(recorded: Mapping[str, Any], actual: Mapping[str, str | None]) -> str | None:
    """Why a scheduled audit's state (``recorded``) is not this warehouse's (``actual``: the Delta ids of
    its tables, ``query_id``: the streaming query of the checkpoint folder), None when it is. A key the
    state does not have (an older version wrote it) is not held against it."""
    for key in (*OWNER_KEYS, "query_id"):
        mine, theirs = actual.get(key), recorded.get(key)
        if theirs is None or mine == theirs or (mine is None and key == "query_id"):
            continue
        if mine is None:
            return (
                f"was kept with a {key.removesuffix('_table_id')} table that is no longer in this warehouse"
            )
        if key == "query_id":
            return (
                f"holds the state of another streaming query ({mine}; this audit's is {theirs}): it was "
                "copied from elsewhere"
            )
        table = key.removesuffix("_table_id")
        return (
            f"belongs to another warehouse (its {table} table id {theirs}, this warehouse's {mine}): it was "
            "copied from elsewhere"
        )
    return None


def checkpoint_query_id(checkpoint: Path) -> str | None:
    """The id of the streaming query a Spark checkpoint folder belongs to (its ``metadata`` file)."""
    try:
        return str(json.loads((checkpoint / "metadata").read_text().splitlines()[0])["id"])
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return None


def _config_fingerprint(config: Config) -> str:
    relevant = {k: config.raw.get(k) for k in ("kafka", "broker", "replay", "validation")}
    return hashlib.sha1(json.dumps(relevant, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _write_small(
    spark: SparkSession,
    store: DeltaStore,
    small: pa.Table,
    mode: WriteMode,
    *,
    app_id: str | None = None,
    txn_version: int | None = None,
) -> dict[str, int]:
    """Write the small output tables (transitions, rebalances, member sessions) from their rows in the
    union schema, held on the driver; their row counts (from the commits)."""
    counts: dict[str, int] = {}
    for kind, table in OUTPUT_TABLES.items():
        if kind == "predictions":
            continue
        rows = small.filter(pc.equal(small.column("kind"), kind)).select(table.column_names)
        # (pyspark cannot build a frame from an Arrow table without chunks: an empty one has none)
        df = spark.createDataFrame(rows).coalesce(1) if rows.num_rows else store.empty(table)
        written = store.write(df, table, mode, app_id=app_id, txn_version=txn_version)
        counts[kind] = rows.num_rows if written is None else written
    return counts


def _finish_result(
    mode: str,
    path: str,
    horizon: int | None,
    new_rows: int,
    counts: dict[str, int],
    status: Sequence[Mapping[str, Any]],
) -> ReplayResult:
    latest: dict[str, Mapping[str, Any]] = {}
    late = bulk = 0
    for s in status:
        latest[s["group_id"]] = s
        late += s["late"] or 0
        bulk += s["bulk"] or 0
    kip848 = sorted(g for g, s in latest.items() if s["kip848"])
    refused = {g: str(s["refused"]) for g, s in sorted(latest.items()) if s.get("refused")}
    return ReplayResult(
        mode,
        path,
        horizon,
        new_rows,
        counts,
        groups=len(latest),
        kip848_groups=kip848,
        refused_groups=refused,
        late_rows=late,
        bulk_validated=bulk,
        # each group holding rows has pending work, so it is called every run: its last status says all
        held_rows=sum(s.get("held") or 0 for s in latest.values()),
    )
