"""``rebalance-replay report``: the HTML forensics report of a warehouse (or of one forensics run).

Spark does the heavy part: it filters the tables to the asked groups and window, counts routine
heartbeats per member and unit (exact ticks for small groups, seconds, minutes or hours for big ones) and
the agreement per group and API; only the rows a page draws one by one (JoinGroup/SyncGroup, LeaveGroup,
non-routine heartbeats, mismatches) and the small tables come to the driver, with, per member id, the
client ends of the connections it spoke from (``requests``: the page's lanes are processes, not member
ids). A scheduled report of the whole warehouse keeps those counts (``<warehouse>/_report/carry.json``,
:mod:`rebalance_replay.transforms.report.inputs`) and reads only the rows appended since the last one. A
report scoped to a window or groups counts its numbers from its own rows, not ``summary.json``. The page model
and HTML are pure (``rebalance_replay/transforms/report``). Output: ``<out>/index.html``, one
``group-….html`` per group and ``<out>/assets/plotly.min.js`` (plotly.js from the ``plotly`` package,
written once, referenced relatively: the folder opens offline).
"""

from __future__ import annotations

import json
import os
import time
from collections import defaultdict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from rebalance_replay.jobs.bookkeeping import crash_point, write_json
from rebalance_replay.jobs.carry import Carry
from rebalance_replay.jobs.config import Config
from rebalance_replay.jobs.forensics import arrived_in
from rebalance_replay.schemas import MEMBER_SESSIONS, PREDICTIONS, REBALANCES, REQUESTS, TRANSITIONS
from rebalance_replay.schemas.core import TableDef
from rebalance_replay.transforms.report.html import (
    PLOTLY_ASSET,
    RULES_PAGE,
    group_html,
    overview_html,
    rules_html,
)
from rebalance_replay.transforms.report.inputs import ConnectionCounts, PredictionCounts
from rebalance_replay.transforms.report.model import (
    Window,
    api_agreement,
    build_group_page,
    build_overview,
    group_timeline,
    scoped_summary,
)
from rebalance_replay.transforms.report.naming import page_file
from rebalance_replay.transforms.report.units import fmt_time

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql import DataFrame, SparkSession

    from rebalance_replay.jobs.delta import DeltaStore

T = TypeVar("T")
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
    #: groups with no page (``report.max_group_members``) → why, in one line
    refused: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "pages": self.pages,
            "groups": self.groups,
            "findings": self.findings,
            "seconds": round(self.seconds, 2),
            "refused_groups": [{"group": g, "reason": r} for g, r in sorted(self.refused.items())],
        }

    def refused_lines(self) -> list[str]:
        """One line per group the report drew no page for, with why (the other groups have theirs)."""
        return [f"report: refused group {g}: {r}" for g, r in sorted(self.refused.items())]


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


def _requests_store(spark: SparkSession, store: DeltaStore, warehouse: str | None) -> DeltaStore:
    """Where the requests are: ``store``'s own table, else (a forensics run's tables) the warehouse's."""
    if store.exists(REQUESTS) or not warehouse:
        return store
    from rebalance_replay.jobs.delta import open_store

    return open_store(spark, warehouse, store.engine)


#: ``<warehouse>/_report/carry.json``: what the last scheduled report read of ``predictions`` and
#: ``requests`` (:mod:`rebalance_replay.transforms.report.inputs`), carried from run to run
CARRY_FILE = ("_report", "carry.json")
CARRY_FORMAT = 1


def _member(answered: str) -> SparkColumn:
    """The member id a row speaks as: a first JoinGroup has none yet, it speaks as the one its response
    gives (column ``answered``: ``observed_member_id`` in ``predictions``, ``response_member_id`` in
    ``requests``)."""
    from pyspark.sql import functions as F

    return F.coalesce(F.when(F.col("member_id") != "", F.col("member_id")), F.col(answered))


def count_predictions(
    predictions: DataFrame, routine_heartbeat: SparkColumn, counts: PredictionCounts, *, join_members: bool
) -> None:
    """One pass over ``predictions`` per group and API (at hour 720 of a 30-day warehouse the report read
    the table three times for these): the agreement, the routine heartbeats' count and span and, with
    ``join_members``, the member ids JoinGroups answered; added to ``counts``."""
    from pyspark.sql import functions as F

    hb_arrival = F.when(routine_heartbeat, F.col("arrival_ms"))
    members = (
        F.collect_set(F.when(F.col("api") == "JOIN_GROUP", _member("observed_member_id")))
        if join_members
        else F.array().cast("array<string>")  # typed: Arrow has no non-nullable list of nulls
    )
    rows = _rows(
        predictions.groupBy("group_id", "api").agg(
            F.count(F.lit(1)).alias("n"),
            F.sum(F.col("scored").cast("long")).alias("scored"),
            F.sum(F.col("matched").cast("long")).alias("matched"),
            F.count(hb_arrival).alias("hb_n"),
            F.min(hb_arrival).alias("hb_lo"),
            F.max(hb_arrival).alias("hb_hi"),
            members.alias("members"),
        )
    )
    counts.add_counts(rows, {str(r["group_id"]): r["members"] for r in rows if r["members"]})


def refusal_text(members: int, limit: int) -> str:
    """Why a group whose JoinGroups answered ``members`` member ids gets no page. A member-id-required storm
    gives every joiner a member id and a lane: 100,000 lanes are no page anyone can read, and their rows
    would all come to the driver."""
    return (
        f"{members:,} member ids, more than report.max_group_members {limit:,}: no page (its rows are in "
        "the tables)"
    )


def count_connections(
    requests: DataFrame, window: Window, counts: ConnectionCounts, without: Collection[str] = ()
) -> None:
    """One pass over ``requests``: per group, member id, client address and client id, the first and last
    arrival and the requests inside ``window``; added to ``counts``. The groups ``without`` (no page) add
    their requests only (their members stay in Spark)."""
    from pyspark.sql import functions as F

    inside = arrived_in(window)
    member = _member("response_member_id")
    per_member = requests.groupBy("group_id", member.alias("member"), "client_address", "client_id").agg(
        F.min("arrival_ms").alias("first_ms"),
        F.max("arrival_ms").alias("last_ms"),
        F.sum(inside.cast("long")).alias("inside"),
    )
    if without:
        dropped = F.col("group_id").isin(list(without))
        rows = per_member.filter(dropped).groupBy("group_id").agg(F.sum("inside").alias("inside")).collect()
        counts.add_requests({str(r["group_id"]): int(r["inside"] or 0) for r in rows})
        per_member = per_member.filter(~dropped)
    counts.add(_rows(per_member))


def _carried(
    carry: Carry | None,
    name: str,
    table: TableDef,
    fingerprint: Any,
    full: DataFrame,
    empty: T,
    from_json: Callable[[Any], T],
) -> tuple[T, DataFrame | None]:
    """What the last report kept as ``name`` and the rows of ``table`` to add to it (None: none); without a
    carry (or one that must count again, or a kept state it cannot read), ``empty`` and ``full``."""
    got = None if carry is None else carry.added(name, table, fingerprint)
    if got is None:
        return empty, full
    tally, rows = got
    try:
        return from_json(tally), rows
    except (KeyError, TypeError, ValueError, AttributeError):  # damaged by hand: read everything again
        return empty, full


def scope_text(groups: Sequence[str], window: Window) -> str | None:
    """``groups a, b, window 2024-… → end`` for a scoped report; None for the whole warehouse."""
    lo, hi = window
    parts = [f"groups {', '.join(groups)}"] if groups else []
    if window != (None, None):
        parts.append(f"window {fmt_time(lo) if lo else 'start'} → {fmt_time(hi) if hi else 'end'}")
    return ", ".join(parts) or None


def report(
    spark: SparkSession,
    store: DeltaStore,
    config: Config,
    *,
    out_dir: str,
    groups: Sequence[str] = (),
    window: Window = (None, None),
    summary_dir: str | None = None,
    warehouse: str | None = None,
    log: Callable[[str], None] = print,
) -> ReportResult:
    """Write the report of ``store``'s tables (restricted to ``groups`` and ``window`` when given: then
    the pages' axes are the window's and the overview's numbers are counted in it)."""
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
    requests_store = _requests_store(spark, store, warehouse)
    # a scheduled report of the whole warehouse (a local one) adds the rows appended since the last one to
    # what that one read; a scoped, time-travelling or forensics report reads its rows in full
    carry = (
        Carry.scheduled(store, store.warehouse, CARRY_FILE, CARRY_FORMAT, (PREDICTIONS, REQUESTS))
        if not groups and window == (None, None) and requests_store is store
        else None
    )
    limit = config.report.max_group_members
    pc, new_preds = _carried(
        carry,
        "report:predictions",
        PREDICTIONS,
        [CARRY_FORMAT, limit],
        preds,
        PredictionCounts(),
        PredictionCounts.from_json,
    )
    mismatch = F.col("scored") & ~F.col("matched")
    routine_hb = (
        (F.col("api") == "HEARTBEAT")
        & (F.col("observed_error").isNull() | (F.col("observed_error") == "NONE"))
        & ~mismatch
    )
    if new_preds is not None:
        count_predictions(new_preds, routine_hb, pc, join_members=bool(limit))
    refused = {g: refusal_text(n, limit) for g, n in pc.refused(limit).items()}
    for g, why in refused.items():
        log(f"report: no page for group {g}: {why}")
    pc.drop_pages(refused)
    bin_of = pc.bin_ms(refused)
    units = pc.next_units(bin_of)
    if new_preds is not None:
        if refused:  # their rows stay in Spark
            new_preds = new_preds.filter(~F.col("group_id").isin(list(refused)))
        if units:
            unit_of = spark.createDataFrame(list(units.items()), "group_id string, unit_ms long")
            pc.add_units(
                _rows(
                    new_preds.filter(routine_hb)
                    .join(F.broadcast(unit_of), "group_id")
                    .withColumn(
                        "unit_start_ms", F.floor(F.col("arrival_ms") / F.col("unit_ms")) * F.col("unit_ms")
                    )
                    .groupBy("group_id", "member_id", "unit_start_ms")
                    .count()
                )
            )
        pc.add_events(
            _rows(
                new_preds.filter(
                    F.col("api").isin("JOIN_GROUP", "SYNC_GROUP", "LEAVE_GROUP")
                    | (F.col("api") == "HEARTBEAT") & ~routine_hb
                    | mismatch
                ).select(*EVENT_COLUMNS)
            )
        )
    bins = pc.heartbeat_bins(bin_of)
    events = pc.events
    agreement_rows = [r for r in pc.agreement_rows() if r["group_id"] not in refused]
    agreement = _by_group(agreement_rows)
    trans = _by_group(_rows(keep(store.read(TRANSITIONS), "time_ms")))
    rebs = _by_group(_rows(keep(store.read(REBALANCES), "started_ms", "ended_ms")))
    sess = _by_group(_rows(keep(store.read(MEMBER_SESSIONS), "joined_ms", "ended_ms")))
    for g in refused:
        for table in (trans, rebs, sess):
            table.pop(g, None)
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
    requests = requests_store.read(REQUESTS)
    if groups:
        requests = requests.filter(F.col("group_id").isin(list(groups)))
    cc, new_requests = _carried(
        carry,
        "report:requests",
        REQUESTS,
        [CARRY_FORMAT],
        requests,
        ConnectionCounts(),
        ConnectionCounts.from_json,
    )
    if new_requests is not None:
        count_connections(new_requests, window, cc, without=sorted(refused))
    cc.drop_pages(refused)
    if carry is not None:
        carry.keep("report:predictions", PREDICTIONS, [CARRY_FORMAT, limit], pc.to_json())
        carry.keep("report:requests", REQUESTS, [CARRY_FORMAT], cc.to_json())
        carry.save()
    connections = cc.member_connections()
    in_window = sum(cc.requests.values())
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
    scoped = scope_text(groups, window)
    if scoped is not None:
        title += " · " + scoped
    write_plotly_asset(out)
    (out / RULES_PAGE).write_text(rules_html(), encoding="utf-8")  # what each finding's rule means
    overview_groups = []
    timeline = []
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
            connections=connections.get(g, []),
            window=window,
        )
        if page.density is not None:
            log(
                f"report: {g}: {page.heartbeats} heartbeats drawn as density per "
                f"{page.density.bin_ms // 1000} s"
            )
        name = page_file(g)
        (out / name).write_text(group_html(page, title=title), encoding="utf-8")
        overview_groups.append({"group_id": g, "page": name, **page.stats})
        timeline.append(group_timeline(page, name))
    docs = summary.get("data_docs") if src == Path(warehouse or store.warehouse) else None
    docs_href = os.path.relpath(docs, out) if docs and os.path.exists(docs) else None
    numbers, label = summary, None
    if scoped is not None:  # summary.json counts the whole warehouse
        numbers = scoped_summary(in_window, agreement_rows, sum(len(r) for r in rebs.values()))
        label = "in window" if window != (None, None) else "in these groups"
    ov = build_overview(
        numbers,
        overview_groups,
        all_findings,
        agreement=api_agreement(agreement_rows),
        data_docs=docs_href,
        title=title,
        scope=label,
        timeline=timeline,
        max_groups=config.report.overview_max_groups,
        # the groups a stage refused: the replay's (summary.json) and this report's own
        refused=[
            *(r for r in summary.get("refused_groups") or [] if r.get("stage") != "report"),
            *({"group": g, "stage": "report", "reason": why} for g, why in sorted(refused.items())),
        ],
    )
    crash_point("report:before_index")  # the group pages written, the overview not yet
    index = out / "index.html"
    index.write_text(overview_html(ov), encoding="utf-8")
    write_json(
        out / "report.json",
        {
            "groups": overview_groups,
            "title": title,
            "numbers": dict(ov.numbers),
            "start_ms": ov.start_ms,
            "end_ms": ov.end_ms,
        },
        indent=1,
    )
    return ReportResult(
        str(index.resolve()),
        len(group_ids) + 1,
        len(group_ids),
        None if all_findings is None else sum(f.get("status") != "resolved" for f in all_findings),
        time.monotonic() - started,
        refused=refused,
    )
