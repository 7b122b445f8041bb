"""``rebalance-replay report``: the HTML forensics report of a warehouse (or of one forensics run).

Spark does the heavy part: it filters the tables to the asked groups and window, counts routine
heartbeats per member and bin (exact ticks for small groups, density for big ones) and the agreement per
group and API; only the rows a page draws one by one (JoinGroup/SyncGroup, LeaveGroup, non-routine
heartbeats, mismatches) and the small tables come to the driver. The page model and HTML are pure
(``rebalance_replay/transforms/report``). Output: ``<out>/index.html``, one ``group-….html`` per group and
``<out>/assets/plotly.min.js`` (plotly.js from the ``plotly`` package, written once, referenced
relatively: the folder opens offline).
"""

from __future__ import annotations

import json
import os
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rebalance_replay.jobs.bookkeeping import write_json
from rebalance_replay.jobs.config import Config
from rebalance_replay.schemas import MEMBER_SESSIONS, PREDICTIONS, REBALANCES, TRANSITIONS
from rebalance_replay.schemas.core import TableDef
from rebalance_replay.transforms.report.html import PLOTLY_ASSET, group_html, overview_html
from rebalance_replay.transforms.report.model import (
    HeartbeatBin,
    api_agreement,
    build_group_page,
    build_overview,
    heartbeat_bin_ms,
)
from rebalance_replay.transforms.report.naming import page_file

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

    from rebalance_replay.jobs.delta import DeltaStore

FINDINGS_TABLE = "findings"
#: predictions columns a page needs for the rows it draws one by one
EVENT_COLUMNS = (
    "source_file",
    "line_no",
    "group_id",
    "api",
    "seq",
    "member_id",
    "group_instance_id",
    "request_generation_id",
    "arrival_ms",
    "observed_error",
    "predicted_error",
    "observed_generation_id",
    "predicted_generation_id",
    "observed_member_id",
    "predicted_member_id",
    "observed_completion_ms",
    "scored",
    "matched",
    "mismatch_kinds",
)


@dataclass
class ReportResult:
    index: str
    pages: int
    groups: int
    findings: int | None
    seconds: float

    def as_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "pages": self.pages,
            "groups": self.groups,
            "findings": self.findings,
            "seconds": round(self.seconds, 2),
        }


def write_plotly_asset(out: Path) -> Path:
    """plotly.js from the installed ``plotly`` package, once per report folder."""
    from plotly.offline import get_plotlyjs

    path = out / PLOTLY_ASSET
    text = get_plotlyjs()
    if not path.exists() or path.stat().st_size != len(text.encode()):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return path


def _rows(df: DataFrame) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = df.toArrow().to_pylist()
    return rows


def read_findings(store: DeltaStore) -> list[dict[str, Any]] | None:
    """The ``findings`` rows (through the store: its engine, its ``--as-of``), or None when the audit has
    not written the table (or had not, at that version)."""
    from rebalance_replay.schemas import FINDINGS

    if not store.exists(FINDINGS) or store.version_as_of(FINDINGS) is None:
        return None
    return [r.asDict(recursive=True) for r in store.read(FINDINGS).collect()]


def as_of_text(store: DeltaStore, tables: Sequence[TableDef]) -> str | None:
    """What a ``--as-of`` report shows: the version of each table it read; None for the latest."""
    if store.as_of is None:
        return None
    from datetime import UTC, datetime

    asked = (
        f"version {store.as_of}"
        if isinstance(store.as_of, int)
        else datetime.fromtimestamp(store.as_of[1] / 1000, UTC).isoformat(timespec="seconds")
    )
    seen = {t.name: store.version_as_of(t) for t in tables}
    versions = ", ".join(
        f"{name} {'(not yet written)' if v is None else f'v{v}'}" for name, v in seen.items()
    )
    return f"as of {asked} ({versions})"


def _by_group(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        out[str(r["group_id"])].append(r)
    return out


def report(
    spark: SparkSession,
    store: DeltaStore,
    config: Config,
    *,
    out_dir: str,
    groups: Sequence[str] = (),
    window: tuple[int | None, int | None] = (None, None),
    summary_dir: str | None = None,
    warehouse: str | None = None,
    log: Callable[[str], None] = print,
) -> ReportResult:
    """Write the report of ``store``'s tables (restricted to ``groups`` and ``window`` when given)."""
    from pyspark.sql import functions as F

    started = time.monotonic()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    lo, hi = window

    def keep(df: DataFrame, start: str, end: str | None = None) -> DataFrame:
        if groups:
            df = df.filter(F.col("group_id").isin(list(groups)))
        if hi is not None:
            df = df.filter(F.col(start) < F.lit(hi))
        if lo is not None:
            col = F.col(end or start)
            df = df.filter(col.isNull() | (col >= F.lit(lo))) if end else df.filter(col >= F.lit(lo))
        return df

    preds = keep(store.read(PREDICTIONS), "arrival_ms")
    mismatch = F.col("scored") & ~F.col("matched")
    routine_hb = (
        (F.col("api") == "HEARTBEAT")
        & (F.col("observed_error").isNull() | (F.col("observed_error") == "NONE"))
        & ~mismatch
    )
    hb = preds.filter(routine_hb).select("group_id", "member_id", "arrival_ms")
    spans = {
        r["group_id"]: (int(r["n"]), int(r["hi"]) - int(r["lo"]))
        for r in _rows(
            hb.groupBy("group_id").agg(
                F.count(F.lit(1)).alias("n"), F.min("arrival_ms").alias("lo"), F.max("arrival_ms").alias("hi")
            )
        )
    }
    bin_of = {g: heartbeat_bin_ms(n, span) for g, (n, span) in spans.items()}
    bins: dict[str, list[HeartbeatBin]] = defaultdict(list)
    if bin_of:
        sizes = spark.createDataFrame(list(bin_of.items()), "group_id string, bin_ms long")
        binned = (
            hb.join(F.broadcast(sizes), "group_id")
            .withColumn("bin_start_ms", F.floor(F.col("arrival_ms") / F.col("bin_ms")) * F.col("bin_ms"))
            .groupBy("group_id", "member_id", "bin_start_ms")
            .count()
        )
        for r in _rows(binned):
            bins[r["group_id"]].append(
                HeartbeatBin(str(r["member_id"] or ""), int(r["bin_start_ms"]), int(r["count"]))
            )
    events = _by_group(
        _rows(
            preds.filter(
                F.col("api").isin("JOIN_GROUP", "SYNC_GROUP", "LEAVE_GROUP")
                | (F.col("api") == "HEARTBEAT") & ~routine_hb
                | mismatch
            ).select(*EVENT_COLUMNS)
        )
    )
    agreement_rows = _rows(
        preds.groupBy("group_id", "api").agg(
            F.count(F.lit(1)).alias("n"),
            F.sum(F.col("scored").cast("long")).alias("scored"),
            F.sum(F.col("matched").cast("long")).alias("matched"),
        )
    )
    agreement = _by_group(agreement_rows)
    trans = _by_group(_rows(keep(store.read(TRANSITIONS), "time_ms")))
    rebs = _by_group(_rows(keep(store.read(REBALANCES), "started_ms", "ended_ms")))
    sess = _by_group(_rows(keep(store.read(MEMBER_SESSIONS), "joined_ms", "ended_ms")))
    all_findings = read_findings(store)
    findings: dict[str, list[dict[str, Any]]] | None = None
    if all_findings is not None:
        all_findings = [
            f
            for f in all_findings
            if (not groups or f.get("group_id") in groups)
            and (hi is None or (f.get("window_start_ms") or 0) < hi)
            and (lo is None or (f.get("window_end_ms") or hi or 0) >= lo)
        ]
        findings = _by_group(all_findings)

    group_ids = sorted(set(events) | set(bins) | set(trans) | set(rebs) | set(sess) | set(agreement))
    src = Path(summary_dir or store.warehouse)
    summary: dict[str, Any] = {}
    if (src / "summary.json").exists():
        summary = json.loads((src / "summary.json").read_text())
    scope = "forensics run " + src.name if src.parent.name == "forensics" else "scheduled tables"
    title = f"{src} ({scope})"
    as_of = as_of_text(store, (PREDICTIONS, TRANSITIONS, REBALANCES, MEMBER_SESSIONS))
    if as_of is not None:
        title += " · " + as_of
        log(f"report: {as_of}")
    if groups or window != (None, None):
        from rebalance_replay.transforms.report.html import fmt_time

        title += " · " + ", ".join(
            x
            for x in (
                f"groups {', '.join(groups)}" if groups else "",
                f"window {fmt_time(lo) if lo else 'start'} → {fmt_time(hi) if hi else 'end'}"
                if window != (None, None)
                else "",
            )
            if x
        )
    write_plotly_asset(out)
    overview_groups = []
    for g in group_ids:
        page = build_group_page(
            g,
            predictions=events.get(g, []),
            heartbeat_bins=bins.get(g, []),
            bin_ms=bin_of.get(g, 1),
            transitions=trans.get(g, []),
            rebalances=rebs.get(g, []),
            sessions=sess.get(g, []),
            findings=None if findings is None else findings.get(g, []),
            agreement=api_agreement(agreement.get(g, [])),
        )
        if page.density is not None:
            log(
                f"report: {g}: {page.heartbeats} heartbeats drawn as density per "
                f"{page.density.bin_ms // 1000} s"
            )
        name = page_file(g)
        (out / name).write_text(group_html(page, title=title), encoding="utf-8")
        overview_groups.append({"group_id": g, "page": name, **page.stats})
    docs = summary.get("data_docs") if src == Path(warehouse or store.warehouse) else None
    docs_href = os.path.relpath(docs, out) if docs and os.path.exists(docs) else None
    ov = build_overview(
        summary,
        overview_groups,
        all_findings,
        agreement=api_agreement(agreement_rows),
        data_docs=docs_href,
        title=title,
    )
    index = out / "index.html"
    index.write_text(overview_html(ov), encoding="utf-8")
    write_json(out / "report.json", {"groups": overview_groups, "title": title}, indent=1)
    return ReportResult(
        str(index.resolve()),
        len(group_ids) + 1,
        len(group_ids),
        None if all_findings is None else sum(f.get("status") != "resolved" for f in all_findings),
        time.monotonic() - started,
    )
