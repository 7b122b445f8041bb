"""What goes on a report page: lanes, spans, markers, bands, heartbeat ticks or density, and the tables.

Inputs are plain rows (mappings with the columns of ``rebalance_replay/schemas/tables.py``: predictions,
transitions,
rebalances, member_sessions and, when the audit has run, findings), already restricted to one group.
Routine heartbeats arrive pre-binned (``HeartbeatBin``): the Spark side counts them per member and bin of
``bin_ms`` (1 ms bins = exact ticks), so a 1,000-member group over a day stays a few hundred thousand
cells; every non-routine heartbeat (an error, a mismatch) stays an event of its own.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Row = Mapping[str, Any]

#: Exact heartbeat ticks up to this many per group page; above it, density.
MAX_TICKS = 5000
#: Density bins across the page's time span.
TARGET_BINS = 300
#: Mismatch examples kept per group page.
MISMATCH_EXAMPLES = 10

EVICTION_REASONS = (
    "session_expiry",
    "rebalance_timeout_eviction",
    "pending_sync_expiry",
    "fenced",
    "max_size",
)
SEVERITY_RANK = {"critical": 3, "warning": 2, "info": 1}
#: Rebalance band colours by trigger (colour-blind friendly, Okabe-Ito + greys).
TRIGGER_COLOURS = {
    "group_created": "#56B4E9",
    "new_member": "#009E73",
    "member_left": "#E69F00",
    "session_expiry": "#D55E00",
    "rebalance_timeout_eviction": "#CC79A7",
    "pending_sync_expiry": "#CC79A7",
    "leader_rejoin": "#0072B2",
    "metadata_change": "#F0E442",
    "protocol_change": "#F0E442",
    "static_member_replaced": "#999999",
    "coordinator_moved": "#666666",
    "unknown": "#BBBBBB",
}
SPAN_APIS = ("JOIN_GROUP", "SYNC_GROUP")
#: Member ids longer than this are shortened in the middle in lane labels.
LABEL_ID_CHARS = 30


def heartbeat_bin_ms(total: int, span_ms: int, *, max_ticks: int = MAX_TICKS, bins: int = TARGET_BINS) -> int:
    """Bin width for a group's routine heartbeats: 1 (exact ticks) when there are at most ``max_ticks``,
    else the span cut into about ``bins`` bins, rounded up to a whole second."""
    if total <= max_ticks:
        return 1
    width = max(1, math.ceil(max(span_ms, 1) / bins))
    return int(math.ceil(width / 1000) * 1000)


@dataclass(frozen=True)
class HeartbeatBin:
    member_id: str
    bin_start_ms: int
    count: int


@dataclass(frozen=True)
class Lane:
    index: int
    member_id: str
    group_instance_id: str | None = None
    client_id: str | None = None
    host: str | None = None

    @property
    def label(self) -> str:
        """Short lane label: instance id (static members) and member id (long generated ids shortened
        in the middle), client id @ host. The full values are in :attr:`title`."""
        member = self.member_id or "(no member id)"
        if len(member) > LABEL_ID_CHARS:
            member = member[: LABEL_ID_CHARS - 9] + "…" + member[-8:]
        who = f"{self.group_instance_id} · {member}" if self.group_instance_id else member
        extra = "@".join(x for x in (self.client_id, self.host) if x)
        return f"{who} ({extra})" if extra else who

    @property
    def title(self) -> str:
        parts = [f"member id {self.member_id or '(none)'}"]
        parts += [
            f"{k} {v}"
            for k, v in (
                ("instance id", self.group_instance_id),
                ("client id", self.client_id),
                ("host", self.host),
            )
            if v
        ]
        return "<br>".join(parts)


@dataclass(frozen=True)
class Span:
    lane: int
    api: str
    start_ms: int
    end_ms: int
    error: str | None
    generation: int | None
    mismatch: bool
    where: str


@dataclass(frozen=True)
class Marker:
    lane: int  # 0 = the group lane
    time_ms: int
    kind: str  # leave, eviction, mismatch, finding, transition, heartbeat
    text: str
    severity: str | None = None


@dataclass(frozen=True)
class Band:
    rebalance_seq: int
    start_ms: int
    end_ms: int
    trigger: str
    label: str
    colour: str
    hover: str
    open: bool


@dataclass(frozen=True)
class Density:
    bin_ms: int
    start_ms: int
    bins: int
    counts: dict[int, list[int]]  # lane -> count per bin


@dataclass
class GroupPage:
    group_id: str
    lanes: list[Lane]
    spans: list[Span]
    markers: list[Marker]
    bands: list[Band]
    ticks: dict[int, list[int]]  # lane -> exact heartbeat times (when not dense)
    density: Density | None
    start_ms: int
    end_ms: int
    rebalances: list[dict[str, Any]]
    findings: list[dict[str, Any]] | None  # None: the audit has not run
    sessions: list[dict[str, Any]]
    agreement: list[dict[str, Any]]
    mismatches: list[dict[str, Any]]
    heartbeats: int = 0
    stats: dict[str, Any] = field(default_factory=dict)


def _where(r: Row) -> str:
    return f"{r.get('source_file')}:{r.get('line_no')}"


def _mismatch(r: Row) -> bool:
    return bool(r.get("scored")) and not bool(r.get("matched"))


def _lane_member(r: Row) -> str:
    """The member a request belongs to: its member id, or (a first JoinGroup) the id it was given."""
    for key in ("member_id", "observed_member_id", "predicted_member_id"):
        v = r.get(key)
        if v:
            return str(v)
    return ""


def _left_by(sessions: Sequence[Row], p: Row, lane_of: Mapping[str, int]) -> list[int]:
    """Lanes of the members whose session a LeaveGroup ended (end_reason ``left`` between its arrival and
    its completion)."""
    lo = int(p["arrival_ms"])
    hi = int(p.get("observed_completion_ms") or lo)
    return sorted(
        {
            lane_of[str(s["member_id"])]
            for s in sessions
            if s.get("end_reason") == "left"
            and s.get("ended_ms") is not None
            and lo <= int(s["ended_ms"]) <= hi
            and str(s["member_id"]) in lane_of
        }
    )


def build_lanes(
    sessions: Sequence[Row], predictions: Sequence[Row], bins: Sequence[HeartbeatBin]
) -> list[Lane]:
    """One lane per member id (lane 0 is the group), in order of first appearance; instance id, client id
    and host from the member's sessions."""
    first: dict[str, int] = {}
    info: dict[str, tuple[str | None, str | None, str | None]] = {}

    def seen(member: str, t: int) -> None:
        if member not in first or t < first[member]:
            first[member] = t

    for s in sessions:
        m = str(s["member_id"])
        seen(m, int(s["joined_ms"]))
        prev = info.get(m, (None, None, None))
        info[m] = (
            prev[0] or s.get("group_instance_id"),
            prev[1] or s.get("client_id"),
            prev[2] or s.get("client_address"),
        )
    for p in predictions:
        m = _lane_member(p)
        if m:
            seen(m, int(p["arrival_ms"]))
            if p.get("group_instance_id") and m not in info:
                info[m] = (p["group_instance_id"], None, None)
    for b in bins:
        seen(b.member_id, b.bin_start_ms)
    order = sorted(first, key=lambda m: (first[m], m))
    return [Lane(i + 1, m, *info.get(m, (None, None, None))) for i, m in enumerate(order)]


def _fmt_ms(ms: Any) -> str:
    return "–" if ms is None else f"{int(ms) / 1000:.3f} s"


def build_bands(rebalances: Sequence[Row], end_ms: int) -> list[Band]:
    bands = []
    for r in sorted(rebalances, key=lambda r: (int(r["started_ms"]), int(r["rebalance_seq"]))):
        trigger = str(r.get("trigger") or "unknown")
        gen_to = r.get("generation_to")
        label = f"gen {r['generation_from']}→{'?' if gen_to is None else gen_to}"
        ended = r.get("ended_ms")
        hover = (
            f"rebalance #{r['rebalance_seq']} {label}<br>trigger: {trigger}"
            + (f" ({r['trigger_cause']})" if r.get("trigger_cause") else "")
            + f"<br>outcome: {r.get('outcome')}, total {_fmt_ms(r.get('total_duration_ms'))}"
            + f" (join {_fmt_ms(r.get('join_phase_ms'))}, sync {_fmt_ms(r.get('sync_phase_ms'))})"
        )
        bands.append(
            Band(
                int(r["rebalance_seq"]),
                int(r["started_ms"]),
                int(ended) if ended is not None else end_ms,
                trigger,
                label,
                TRIGGER_COLOURS.get(trigger, TRIGGER_COLOURS["unknown"]),
                hover,
                ended is None,
            )
        )
    return bands


#: new findings first, then ongoing (and rows from before the statuses), then resolved
STATUS_RANK = {"new": 0, "ongoing": 1, None: 1, "resolved": 2}


def finding_anchor(f: Row) -> str:
    """The id of a finding's row on its group's page (``finding-<finding_key>``)."""
    key = f.get("finding_key") or f"{f.get('rule_id')}-{f.get('window_start_ms')}"
    return f"finding-{key}"


def evidence_anchor(f: Row, i: int) -> str:
    """The id of a finding's ``i``-th evidence row on its group's page."""
    return f"ev-{finding_anchor(f).removeprefix('finding-')}-{i}"


def _rebalance_at(rebalances: Sequence[Row], t: int) -> int | None:
    """The rebalance under way at ``t`` (started ≤ t ≤ ended; open ones never end), else None."""
    for r in rebalances:
        end = r.get("ended_ms")
        if int(r["started_ms"]) <= t and (end is None or t <= int(end)):
            return int(r["rebalance_seq"])
    return None


def _finding_row(f: Row, rebalances: Sequence[Row] = ()) -> dict[str, Any]:
    """A finding with its evidence as text, with an anchor each (``evidence_anchor``) and the rebalance
    under way when it arrived (its row on the page is ``rebalance-<seq>``)."""
    items = []
    for i, e in enumerate(f.get("evidence") or []):
        at = e.get("arrival_ms")
        items.append(
            {
                "text": f"{e.get('source_file')}:{e.get('line_no')} {e.get('api') or ''}".strip(),
                "anchor": evidence_anchor(f, i),
                "arrival_ms": at,
                "rebalance_seq": None if at is None else _rebalance_at(rebalances, int(at)),
            }
        )
    return {
        **dict(f),
        "anchor": finding_anchor(f),
        "evidence_text": [x["text"] for x in items],
        "evidence_items": items,
    }


def finding_order(f: Row) -> tuple[int, int, str, int]:
    """New first, then worst severity, group, window start."""
    return (
        STATUS_RANK.get(f.get("status"), 1),  # type: ignore[arg-type]
        -SEVERITY_RANK.get(str(f.get("severity")), 0),
        str(f.get("group_id")),
        int(f.get("window_start_ms") or 0),
    )


def build_group_page(
    group_id: str,
    *,
    predictions: Sequence[Row],
    heartbeat_bins: Sequence[HeartbeatBin],
    bin_ms: int,
    transitions: Sequence[Row],
    rebalances: Sequence[Row],
    sessions: Sequence[Row],
    findings: Sequence[Row] | None,
    agreement: Sequence[Row] = (),
) -> GroupPage:
    """The page of one group. ``predictions`` are the group's rows other than routine heartbeats (those
    come as ``heartbeat_bins`` of ``bin_ms``); ``findings`` None means the audit has not run."""
    lanes = build_lanes(sessions, predictions, heartbeat_bins)
    lane_of = {lane.member_id: lane.index for lane in lanes}
    by_instance = {lane.group_instance_id: lane.index for lane in lanes if lane.group_instance_id}

    times: list[int] = []
    for p in predictions:
        times.append(int(p["arrival_ms"]))
        times.append(int(p.get("observed_completion_ms") or p["arrival_ms"]))
    times += [b.bin_start_ms for b in heartbeat_bins] + [b.bin_start_ms + bin_ms for b in heartbeat_bins]
    times += [int(t["time_ms"]) for t in transitions]
    times += [int(s["joined_ms"]) for s in sessions] + [
        int(s["ended_ms"]) for s in sessions if s.get("ended_ms")
    ]
    times += [int(r["started_ms"]) for r in rebalances]
    times += [int(r["ended_ms"]) for r in rebalances if r.get("ended_ms") is not None]
    start_ms, end_ms = (min(times), max(times)) if times else (0, 1)

    spans: list[Span] = []
    markers: list[Marker] = []
    mismatches: list[dict[str, Any]] = []
    for p in sorted(predictions, key=lambda p: (int(p["arrival_ms"]), int(p.get("seq") or 0))):
        api = str(p["api"])
        lane = lane_of.get(_lane_member(p), 0)
        mism = _mismatch(p)
        if api in SPAN_APIS:
            spans.append(
                Span(
                    lane,
                    api,
                    int(p["arrival_ms"]),
                    int(p.get("observed_completion_ms") or p["arrival_ms"]),
                    p.get("observed_error"),
                    p.get("observed_generation_id") or p.get("request_generation_id"),
                    mism,
                    _where(p),
                )
            )
        elif api == "LEAVE_GROUP":
            if lane == 0 and p.get("group_instance_id"):
                lane = by_instance.get(p["group_instance_id"], 0)
            text = f"LeaveGroup ({p.get('observed_error')}) {_where(p)}"
            # v3+ names its members in a list (the row has no member id): the sessions it ended
            leavers = [lane] if lane else _left_by(sessions, p, lane_of) or [0]
            markers.extend(Marker(x, int(p["arrival_ms"]), "leave", text) for x in leavers)
        elif api == "HEARTBEAT" and not mism:
            markers.append(
                Marker(
                    lane,
                    int(p["arrival_ms"]),
                    "heartbeat",
                    f"Heartbeat → {p.get('observed_error')} (generation {p.get('request_generation_id')}) "
                    f"{_where(p)}",
                )
            )
        if mism:
            kinds = ", ".join(p.get("mismatch_kinds") or []) or "?"
            text = (
                f"{api} mismatch ({kinds}): observed {p.get('observed_error')}, predicted "
                f"{p.get('predicted_error')} {_where(p)}"
            )
            markers.append(Marker(lane, int(p["arrival_ms"]), "mismatch", text))
            if len(mismatches) < MISMATCH_EXAMPLES:
                mismatches.append({**dict(p), "text": text})

    for s in sessions:
        reason = s.get("end_reason")
        if reason in EVICTION_REASONS and s.get("ended_ms") is not None:
            markers.append(
                Marker(
                    lane_of.get(str(s["member_id"]), 0),
                    int(s["ended_ms"]),
                    "eviction",
                    f"{s['member_id']} removed by the coordinator: {reason} "
                    f"(generation {s['generation_id']})",
                )
            )
    for t in sorted(transitions, key=lambda t: (int(t["time_ms"]), int(t["seq"]))):
        markers.append(
            Marker(
                0,
                int(t["time_ms"]),
                "transition",
                f"{t['from_state']} → {t['to_state']} (generation {t['generation_id']}): {t['cause']}",
            )
        )
    finding_rows: list[dict[str, Any]] | None = None
    if findings is not None:
        finding_rows = []
        for f in sorted(findings, key=finding_order):
            row = _finding_row(f, rebalances)
            finding_rows.append(row)
            members = list(f.get("member_ids") or [])
            lane = next((lane_of[m] for m in members if m in lane_of), 0)
            markers.append(
                Marker(
                    lane,
                    int(f.get("window_start_ms") or start_ms),
                    "finding",
                    f"{f.get('rule_id')} {f.get('rule')} [{f.get('severity')}]: {f.get('summary')}"
                    f"<br>fix: {f.get('fix')}",
                    str(f.get("severity")),
                )
            )

    ticks: dict[int, list[int]] = defaultdict(list)
    density: Density | None = None
    total_hb = sum(b.count for b in heartbeat_bins)
    if bin_ms <= 1:
        for b in heartbeat_bins:
            ticks[lane_of.get(b.member_id, 0)].extend([b.bin_start_ms] * b.count)
    elif heartbeat_bins:
        first_bin = min(b.bin_start_ms for b in heartbeat_bins)
        n = (max(b.bin_start_ms for b in heartbeat_bins) - first_bin) // bin_ms + 1
        counts: dict[int, list[int]] = {}
        for b in heartbeat_bins:
            cells = counts.setdefault(lane_of.get(b.member_id, 0), [0] * n)
            cells[(b.bin_start_ms - first_bin) // bin_ms] += b.count
        density = Density(bin_ms, first_bin, n, counts)

    bands = build_bands(rebalances, end_ms)
    rebalance_time = sum(b.end_ms - b.start_ms for b in bands)
    stats = {
        "members": len(lanes),
        "rebalances": len(bands),
        "rebalance_ms": rebalance_time,
        "heartbeats": total_hb,
        "mismatches": sum(1 for m in markers if m.kind == "mismatch"),
        # open findings (resolved ones stay listed, last, but no longer rank the group)
        "findings": None
        if finding_rows is None
        else sum(f.get("status") != "resolved" for f in finding_rows),
        "worst_severity": worst_severity(f for f in finding_rows or [] if f.get("status") != "resolved"),
    }
    return GroupPage(
        group_id=group_id,
        lanes=lanes,
        spans=spans,
        markers=markers,
        bands=bands,
        ticks=dict(ticks),
        density=density,
        start_ms=start_ms,
        end_ms=end_ms,
        rebalances=[dict(r) for r in sorted(rebalances, key=lambda r: int(r["rebalance_seq"]))],
        findings=finding_rows,
        sessions=[
            dict(s) for s in sorted(sessions, key=lambda s: (int(s["joined_ms"]), str(s["member_id"])))
        ],
        agreement=[dict(a) for a in sorted(agreement, key=lambda a: str(a["api"]))],
        mismatches=mismatches,
        heartbeats=total_hb,
        stats=stats,
    )


def worst_severity(findings: Iterable[Row]) -> str | None:
    worst = max(
        (str(f.get("severity")) for f in findings), key=lambda s: SEVERITY_RANK.get(s, 0), default=None
    )
    return worst


@dataclass
class Overview:
    numbers: list[tuple[str, str]]
    agreement_by_api: list[tuple[str, str]]
    by_rebalancing: list[dict[str, Any]]
    by_severity: list[dict[str, Any]]
    findings: list[dict[str, Any]] | None
    data_docs: str | None
    title: str


def build_overview(
    summary: Mapping[str, Any],
    groups: Sequence[Mapping[str, Any]],
    findings: Sequence[Row] | None,
    *,
    agreement: Sequence[Row],
    data_docs: str | None,
    title: str,
) -> Overview:
    """The overview: the run's numbers (from ``summary.json``), groups ranked by time spent rebalancing and
    by findings severity (``groups``: group_id, page, rebalances, rebalance_ms, members, findings,
    worst_severity), the agreement per API (``agreement``, from :func:`api_agreement`) and the findings
    linking to the group pages."""
    keys = [
        ("lines read", "lines_read"),
        ("requests", "requests"),
        ("quarantined", "quarantined"),
        ("predictions", "predictions"),
        ("matched", "matched"),
        ("rebalances", "rebalances"),
    ]
    numbers = [(label, str(summary[k])) for label, k in keys if summary.get(k) is not None]
    if summary.get("agreement") is not None:
        numbers.append(("agreement", f"{float(summary['agreement']):.2%}"))
    by_api = []
    for a in agreement:
        ratio = a.get("agreement")
        text = "n/a" if ratio is None else f"{float(ratio):.2%}"
        by_api.append((str(a["api"]), f"{text} ({a.get('matched')}/{a.get('scored')} scored)"))
    by_rebalancing = sorted(groups, key=lambda g: (-int(g.get("rebalance_ms") or 0), str(g["group_id"])))
    by_severity = sorted(
        groups,
        key=lambda g: (
            -SEVERITY_RANK.get(str(g.get("worst_severity")), 0),
            -int(g.get("findings") or 0),
            str(g["group_id"]),
        ),
    )
    page_of = {str(g["group_id"]): g.get("page") for g in groups}
    rows = None
    if findings is not None:
        rows = [
            {**_finding_row(f), "page": page_of.get(str(f.get("group_id")))}
            for f in sorted(findings, key=finding_order)
        ]
    return Overview(
        numbers=numbers,
        agreement_by_api=by_api,
        by_rebalancing=[dict(g) for g in by_rebalancing],
        by_severity=[dict(g) for g in by_severity],
        findings=rows,
        data_docs=data_docs,
        title=title,
    )


def api_agreement(rows: Iterable[Row]) -> list[dict[str, Any]]:
    """Per API: predictions, scored, matched, agreement — from rows carrying api/scored/matched counts
    (``n``, ``scored``, ``matched`` columns, as the Spark side aggregates them)."""
    acc: dict[str, Counter[str]] = defaultdict(Counter)
    for r in rows:
        c = acc[str(r["api"])]
        c["n"] += int(r.get("n") or 0)
        c["scored"] += int(r.get("scored") or 0)
        c["matched"] += int(r.get("matched") or 0)
    out = []
    for api, c in sorted(acc.items()):
        out.append(
            {
                "api": api,
                "predictions": c["n"],
                "scored": c["scored"],
                "matched": c["matched"],
                "agreement": (c["matched"] / c["scored"]) if c["scored"] else None,
            }
        )
    return out
