"""What goes on a report page: lanes, spans, markers, bands, heartbeat ticks or density, and the tables.

Inputs are plain rows (mappings with the columns of ``rebalance_replay/schemas/tables.py``: predictions,
transitions, rebalances, member_sessions and, when the audit has run, findings), already restricted to one
group. Routine heartbeats arrive pre-binned (``HeartbeatBin``): the Spark side counts them per member and
bin of ``bin_ms`` (1 ms bins = exact ticks), so a 1,000-member group over a day stays a few hundred
thousand cells; every non-routine heartbeat (an error, a mismatch) stays an event of its own.

A lane is a client process, not a member id: a pod that crash-looped 18 times is one lane with 18 member
ids (:func:`build_lanes`). The ends of the connections members spoke from come from the ``requests`` table
(``MemberConnection``; member_sessions knows the host only).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from rebalance_replay.transforms.report.units import fmt_dur, fmt_time

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
#: Ids (member, instance, client) longer than this are shortened in the middle in lane labels.
LABEL_ID_CHARS = 30
Window = tuple[int | None, int | None]


#: The whole units a density bin is rounded up to, finest first: a second, a minute, an hour. Each divides
#: the next, so a page's bins add up from counts kept at a finer unit (:func:`heartbeat_unit_ms`): a
#: scheduled report adds the last hour's heartbeats to the counts it kept instead of reading them all again.
BIN_UNITS_MS = (1000, 60_000, 3_600_000)


def heartbeat_bin_ms(total: int, span_ms: int, *, max_ticks: int = MAX_TICKS, bins: int = TARGET_BINS) -> int:
    """Bin width for a group's routine heartbeats: 1 (exact ticks) when there are at most ``max_ticks``,
    else the span cut into about ``bins`` bins, rounded up to a whole second (under a minute), a whole
    minute (under an hour) or a whole hour (:data:`BIN_UNITS_MS`)."""
    if total <= max_ticks:
        return 1
    width = max(1, math.ceil(max(span_ms, 1) / bins))
    unit = BIN_UNITS_MS[0]
    for u in BIN_UNITS_MS:
        if width > u:
            unit = u
    return int(math.ceil(width / unit) * unit)


def heartbeat_unit_ms(bin_ms: int) -> int:
    """The coarsest unit of :data:`BIN_UNITS_MS` that divides ``bin_ms`` (1 for exact ticks): counts kept
    per member and unit make bins of ``bin_ms`` and of any width that a longer span gives later."""
    return max((u for u in BIN_UNITS_MS if bin_ms % u == 0), default=1)


@dataclass(frozen=True)
class HeartbeatBin:
    member_id: str
    bin_start_ms: int
    count: int


@dataclass(frozen=True)
class MemberConnection:
    """What the ``requests`` table says of one member id: a client end of a connection it spoke from
    (``client_address``, host:port), the client id it sent there, and when its first and last requests
    there arrived (its whole life, not only the page's window)."""

    member_id: str
    client_address: str | None
    client_id: str | None
    first_ms: int
    last_ms: int


def _shorten(text: str, chars: int = LABEL_ID_CHARS) -> str:
    """``text`` shortened in the middle to ``chars`` characters (the end of a generated id tells ids
    apart)."""
    return text if len(text) <= chars else text[: chars - 9] + "…" + text[-8:]


@dataclass(frozen=True)
class Lane:
    """One client process: its member ids in the order they appeared (with when each joined), its static
    instance id, client id and host. ``where`` is what the label names after ``@``: the host, or the
    connection's host:port when another lane would read the same."""

    index: int
    member_ids: tuple[str, ...]
    joined_ms: tuple[int, ...] = ()
    group_instance_id: str | None = None
    client_id: str | None = None
    host: str | None = None
    where: str | None = None

    @property
    def member_id(self) -> str:
        """The first member id of the process."""
        return self.member_ids[0] if self.member_ids else ""

    @property
    def name(self) -> str:
        """The process as a person names it: the instance id (static members), else client id @ host, else
        the member id (long ids shortened in the middle)."""
        client = "@".join(x for x in (_shorten(self.client_id or ""), self.where or self.host or "") if x)
        return (
            _shorten(self.group_instance_id or "") or client or _shorten(self.member_id or "(no member id)")
        )

    @property
    def label(self) -> str:
        """Short lane label: :attr:`name`, and ``×N member ids`` when the process had several. The full
        values are in :attr:`title`."""
        n = len(self.member_ids)
        return f"{self.name} ×{n} member ids" if n > 1 else self.name

    @property
    def title(self) -> str:
        """Host, client id, instance id and every member id with when it joined (hover text)."""
        parts = [
            f"{k} {v}"
            for k, v in (
                ("host", self.host),
                ("connection", self.where),
                ("client id", self.client_id),
                ("instance id", self.group_instance_id),
            )
            if v
        ]
        joined = self.joined_ms or (None,) * len(self.member_ids)
        parts += [
            f"member id {m or '(none)'} joined {fmt_time(t)}"
            for m, t in zip(self.member_ids, joined, strict=False)
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
    generation_to: int | None = None


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


def _endpoint(address: str | None, *, port: bool) -> tuple[str | None, str | None]:
    """(host, host:port) of a client address; the second is None when the address names no port
    (``port``: it always does, as in ``requests``; else only ``host:port`` with one colon or ``[v6]:port``
    is one: member_sessions keeps the host alone)."""
    if not address:
        return None, None
    host, sep, digits = address.rpartition(":")
    if sep and host and digits.isdigit() and (port or ":" not in host or host.endswith("]")):
        return host, address
    return address, None


@dataclass
class _Member:
    """A member id as the page sees it: when it was first seen and last sent a request, where it ran."""

    member_id: str
    first_ms: int
    last_ms: int
    joined_ms: int | None = None
    instance: str | None = None
    client_id: str | None = None
    host: str | None = None
    ends: set[str] = field(default_factory=set)

    def at(self, host: str | None, end: str | None, client_id: str | None) -> None:
        self.host = self.host or host
        self.client_id = self.client_id or client_id
        if end:
            self.ends.add(end)


def _members(
    sessions: Sequence[Row],
    predictions: Sequence[Row],
    bins: Sequence[HeartbeatBin],
    connections: Sequence[MemberConnection],
) -> list[_Member]:
    """Every member id of the page, by first appearance. Its last activity is its last request (predictions,
    heartbeat bins, the session's last heartbeat, the ``requests`` table), never the coordinator's session
    end: a crashed pod's old member is expired only after its new one joined."""
    seen: dict[str, _Member] = {}

    def touch(member: str, t: int, *, request: bool = True) -> _Member:
        m = seen.get(member)
        if m is None:
            m = seen[member] = _Member(member, t, t)
        m.first_ms = min(m.first_ms, t)
        if request:
            m.last_ms = max(m.last_ms, t)
        return m

    # the earliest session first: a later generation's "joined" is the coordinator's time, not a request
    for s in sorted(sessions, key=lambda s: int(s["joined_ms"])):
        m = touch(str(s["member_id"]), int(s["joined_ms"]), request=False)
        m.joined_ms = int(s["joined_ms"]) if m.joined_ms is None else min(m.joined_ms, int(s["joined_ms"]))
        if s.get("last_heartbeat_ms") is not None:
            touch(m.member_id, int(s["last_heartbeat_ms"]))
        m.instance = m.instance or s.get("group_instance_id")
        m.at(*_endpoint(s.get("client_address"), port=False), s.get("client_id"))
    for p in predictions:
        if member := _lane_member(p):
            m = touch(member, int(p["arrival_ms"]))
            m.instance = m.instance or p.get("group_instance_id")
    for b in bins:
        if b.member_id:
            touch(b.member_id, b.bin_start_ms)
    for c in connections:
        if c.member_id in seen:  # members the page shows, with their whole life's requests
            touch(c.member_id, c.first_ms)
            touch(c.member_id, c.last_ms).at(*_endpoint(c.client_address, port=True), c.client_id)
    return sorted(seen.values(), key=lambda m: (m.first_ms, m.member_id))


@dataclass
class _Process:
    members: list[_Member]
    last_ms: int


def _continued(m: _Member, candidates: Iterable[Iterable[_Process]]) -> _Process | None:
    """The process ``m`` continues: from the first non-empty candidate set, those whose last request
    arrived at or before ``m``'s first (two members at once are two processes), the latest one."""
    for found in candidates:
        free = [p for p in found if p.last_ms <= m.first_ms]
        if free:
            return max(free, key=lambda p: p.last_ms)
    return None


def _processes(members: Sequence[_Member]) -> list[_Process]:
    """Member ids grouped into process lineages: a static member is its instance id; a dynamic one
    continues a process it shares the client end of a connection with (host:port: the same process,
    rejoining), else one on its host under its client id (a restarted pod: new port, same default
    ``consumer-<group>-1``), as long as that process was no longer active; else it is a new process."""
    processes: list[_Process] = []
    static: dict[str, _Process] = {}
    by_end: dict[str, dict[int, _Process]] = defaultdict(dict)
    by_client: dict[tuple[str, str], dict[int, _Process]] = defaultdict(dict)
    for m in members:
        client = (m.host, m.client_id) if m.host and m.client_id else None
        if m.instance:
            proc = static.get(m.instance)
        else:
            ends = (p for e in sorted(m.ends) for p in by_end[e].values())
            proc = _continued(m, [ends, by_client[client].values() if client else ()])
        if proc is None:
            proc = _Process([], m.last_ms)
            processes.append(proc)
            if m.instance:
                static[m.instance] = proc
        proc.members.append(m)
        proc.last_ms = max(proc.last_ms, m.last_ms)
        if not m.instance:
            for e in m.ends:
                by_end[e][id(proc)] = proc
            if client:
                by_client[client][id(proc)] = proc
    return processes


def _lane(index: int, proc: _Process) -> Lane:
    ms = proc.members
    return Lane(
        index,
        tuple(m.member_id for m in ms),
        tuple(m.first_ms if m.joined_ms is None else m.joined_ms for m in ms),
        next((m.instance for m in ms if m.instance), None),
        next((m.client_id for m in ms if m.client_id), None),
        next((m.host for m in ms if m.host), None),
    )


def build_lanes(
    sessions: Sequence[Row],
    predictions: Sequence[Row],
    bins: Sequence[HeartbeatBin],
    connections: Sequence[MemberConnection] = (),
) -> list[Lane]:
    """One lane per client process (lane 0 is the group), in order of first appearance; see
    :func:`_processes`. Lanes that would read alike (two pods on one host with the default client id)
    name their connection's host:port instead of the host."""
    procs = _processes(_members(sessions, predictions, bins, connections))
    lanes = [_lane(i + 1, p) for i, p in enumerate(procs)]
    alike = Counter(lane.name for lane in lanes)
    ends = [min((e for m in p.members for e in m.ends), default=None) for p in procs]
    return [
        replace(lane, where=end) if alike[lane.name] > 1 and end and not lane.group_instance_id else lane
        for lane, end in zip(lanes, ends, strict=True)
    ]


def build_bands(rebalances: Sequence[Row], start_ms: int, end_ms: int) -> list[Band]:
    """One band per rebalance, drawn inside ``[start_ms, end_ms]`` (the page's span: one that began before
    a window starts at its edge; an open one ends at the page's end)."""
    bands = []
    for r in sorted(rebalances, key=lambda r: (int(r["started_ms"]), int(r["rebalance_seq"]))):
        trigger = str(r.get("trigger") or "unknown")
        gen_to = r.get("generation_to")
        label = f"gen {r['generation_from']}→{'?' if gen_to is None else gen_to}"
        ended = r.get("ended_ms")
        hover = (
            f"rebalance #{r['rebalance_seq']} {label}<br>trigger: {trigger}"
            + (f" ({r['trigger_cause']})" if r.get("trigger_cause") else "")
            + f"<br>outcome: {r.get('outcome')}, total {fmt_dur(r.get('total_duration_ms'))}"
            + f" (join {fmt_dur(r.get('join_phase_ms'))}, sync {fmt_dur(r.get('sync_phase_ms'))})"
        )
        start = _clip(int(r["started_ms"]), start_ms, end_ms)
        bands.append(
            Band(
                int(r["rebalance_seq"]),
                start,
                max(start, _clip(end_ms if ended is None else int(ended), start_ms, end_ms)),
                trigger,
                label,
                TRIGGER_COLOURS.get(trigger, TRIGGER_COLOURS["unknown"]),
                hover,
                ended is None,
                None if gen_to is None else int(gen_to),
            )
        )
    return bands


def _clip(t: int, lo: int, hi: int) -> int:
    return min(max(t, lo), hi)


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


@dataclass(frozen=True)
class _LaneIndex:
    """Which lane a member id (or, for a request without one, a static instance id) is drawn on."""

    by_member: dict[str, int]
    by_instance: dict[str, int]

    @classmethod
    def of_lanes(cls, lanes: Sequence[Lane]) -> _LaneIndex:
        return cls(
            {m: lane.index for lane in lanes for m in lane.member_ids},
            {lane.group_instance_id: lane.index for lane in lanes if lane.group_instance_id},
        )

    def lane(self, member: str | None, instance: str | None = None) -> int:
        """The member's lane, else the instance's, else 0 (the group's)."""
        return self.by_member.get(member or "") or self.by_instance.get(instance or "", 0)


def _page_span(
    predictions: Sequence[Row],
    bins: Sequence[HeartbeatBin],
    bin_ms: int,
    transitions: Sequence[Row],
    rebalances: Sequence[Row],
    sessions: Sequence[Row],
    window: Window,
) -> tuple[int, int]:
    """The page's time axis: from its first row to its last, clipped to ``window`` (a session or rebalance
    that began before the window starts the axis at the window's start)."""
    times: list[int] = []
    for p in predictions:
        times += [int(p["arrival_ms"]), int(p.get("observed_completion_ms") or p["arrival_ms"])]
    times += [b.bin_start_ms for b in bins] + [b.bin_start_ms + bin_ms for b in bins]
    times += [int(t["time_ms"]) for t in transitions]
    times += [int(s["joined_ms"]) for s in sessions] + [
        int(s["ended_ms"]) for s in sessions if s.get("ended_ms")
    ]
    times += [int(r["started_ms"]) for r in rebalances]
    times += [int(r["ended_ms"]) for r in rebalances if r.get("ended_ms") is not None]
    lo, hi = window
    if not times:
        start = 0 if lo is None else lo
        return start, (start + 1 if hi is None else hi)
    start = min(times) if lo is None else max(min(times), lo)
    end = max(times) if hi is None else min(max(times), hi)
    return start, max(start, end)


def _request_marks(
    predictions: Sequence[Row], sessions: Sequence[Row], lanes: _LaneIndex, end_ms: int
) -> tuple[list[Span], list[Marker], list[dict[str, Any]]]:
    """JoinGroup/SyncGroup spans (ending at the page's end at the latest), LeaveGroup, non-routine
    heartbeat and mismatch markers, and the first mismatches as examples."""
    spans: list[Span] = []
    markers: list[Marker] = []
    mismatches: list[dict[str, Any]] = []
    for p in sorted(predictions, key=lambda p: (int(p["arrival_ms"]), int(p.get("seq") or 0))):
        api, at = str(p["api"]), int(p["arrival_ms"])
        lane = lanes.lane(_lane_member(p), p.get("group_instance_id"))
        mism = _mismatch(p)
        if api in SPAN_APIS:
            done = min(int(p.get("observed_completion_ms") or at), max(at, end_ms))
            generation = p.get("observed_generation_id") or p.get("request_generation_id")
            spans.append(Span(lane, api, at, done, p.get("observed_error"), generation, mism, _where(p)))
        elif api == "LEAVE_GROUP":
            text = f"LeaveGroup ({p.get('observed_error')}) {_where(p)}"
            # v3+ names its members in a list (the row has no member id): the sessions it ended
            leavers = [lane] if lane else _left_by(sessions, p, lanes.by_member) or [0]
            markers.extend(Marker(x, at, "leave", text) for x in leavers)
        elif api == "HEARTBEAT" and not mism:
            text = (
                f"Heartbeat → {p.get('observed_error')} (generation {p.get('request_generation_id')}) "
                f"{_where(p)}"
            )
            markers.append(Marker(lane, at, "heartbeat", text))
        if mism:
            kinds = ", ".join(p.get("mismatch_kinds") or []) or "?"
            text = (
                f"{api} mismatch ({kinds}): observed {p.get('observed_error')}, predicted "
                f"{p.get('predicted_error')} {_where(p)}"
            )
            markers.append(Marker(lane, at, "mismatch", text))
            if len(mismatches) < MISMATCH_EXAMPLES:
                mismatches.append({**dict(p), "text": text})
    return spans, markers, mismatches


def _state_marks(sessions: Sequence[Row], transitions: Sequence[Row], lanes: _LaneIndex) -> list[Marker]:
    """Evictions on the evicted member's lane, state transitions on the group's."""
    markers = [
        Marker(
            lanes.lane(str(s["member_id"])),
            int(s["ended_ms"]),
            "eviction",
            f"{s['member_id']} removed by the coordinator: {s.get('end_reason')} "
            f"(generation {s['generation_id']})",
        )
        for s in sessions
        if s.get("end_reason") in EVICTION_REASONS and s.get("ended_ms") is not None
    ]
    for t in sorted(transitions, key=lambda t: (int(t["time_ms"]), int(t["seq"]))):
        text = f"{t['from_state']} → {t['to_state']} (generation {t['generation_id']}): {t['cause']}"
        markers.append(Marker(0, int(t["time_ms"]), "transition", text))
    return markers


def finding_time(f: Row, start_ms: int, end_ms: int) -> int:
    """Where a finding is drawn on a page spanning ``[start_ms, end_ms]``: its first evidence, inside."""
    return _clip(int(f.get("window_start_ms") or start_ms), start_ms, end_ms)


def _finding_marks(
    findings: Sequence[Row] | None, rebalances: Sequence[Row], lanes: _LaneIndex, start_ms: int, end_ms: int
) -> tuple[list[dict[str, Any]] | None, list[Marker]]:
    """The findings' rows (new first) and a marker each, on the lane of the first member it names."""
    if findings is None:
        return None, []
    rows = [_finding_row(f, rebalances) for f in sorted(findings, key=finding_order)]
    markers = [
        Marker(
            next((x for x in map(lanes.lane, f.get("member_ids") or []) if x), 0),
            finding_time(f, start_ms, end_ms),
            "finding",
            f"{f.get('rule_id')} {f.get('rule')} [{f.get('severity')}]: {f.get('summary')}"
            f"<br>fix: {f.get('fix')}",
            str(f.get("severity")),
        )
        for f in rows
    ]
    return rows, markers


def _heartbeats(
    bins: Sequence[HeartbeatBin], bin_ms: int, lanes: _LaneIndex
) -> tuple[dict[int, list[int]], Density | None]:
    """Routine heartbeats per lane: exact ticks (1 ms bins), else counts per bin (density)."""
    if bin_ms <= 1:
        ticks: dict[int, list[int]] = defaultdict(list)
        for b in bins:
            ticks[lanes.lane(b.member_id)].extend([b.bin_start_ms] * b.count)
        return dict(ticks), None
    if not bins:
        return {}, None
    first_bin = min(b.bin_start_ms for b in bins)
    n = (max(b.bin_start_ms for b in bins) - first_bin) // bin_ms + 1
    counts: dict[int, list[int]] = {}
    for b in bins:
        cells = counts.setdefault(lanes.lane(b.member_id), [0] * n)
        cells[(b.bin_start_ms - first_bin) // bin_ms] += b.count
    return {}, Density(bin_ms, first_bin, n, counts)


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
    connections: Sequence[MemberConnection] = (),
    window: Window = (None, None),
) -> GroupPage:
    """The page of one group. ``predictions`` are the group's rows other than routine heartbeats (those
    come as ``heartbeat_bins`` of ``bin_ms``); ``findings`` None means the audit has not run;
    ``connections`` (from ``requests``) tell processes apart (:func:`build_lanes`). With a ``window`` the
    axis is clipped to it: what began before it is drawn from its start, what is outside is not drawn."""
    lanes = build_lanes(sessions, predictions, heartbeat_bins, connections)
    index = _LaneIndex.of_lanes(lanes)
    start_ms, end_ms = _page_span(
        predictions, heartbeat_bins, bin_ms, transitions, rebalances, sessions, window
    )
    spans, markers, mismatches = _request_marks(predictions, sessions, index, end_ms)
    finding_rows, finding_markers = _finding_marks(findings, rebalances, index, start_ms, end_ms)
    markers = [
        m
        for m in markers + _state_marks(sessions, transitions, index) + finding_markers
        if start_ms <= m.time_ms <= end_ms
    ]
    ticks, density = _heartbeats(heartbeat_bins, bin_ms, index)
    bands = build_bands(rebalances, start_ms, end_ms)
    total_hb = sum(b.count for b in heartbeat_bins)
    open_findings = [f for f in finding_rows or [] if f.get("status") != "resolved"]
    stats = {
        "members": len(index.by_member),
        "processes": len(lanes),
        "rebalances": len(bands),
        "rebalance_ms": sum(b.end_ms - b.start_ms for b in bands),
        "heartbeats": total_hb,
        "mismatches": sum(1 for m in markers if m.kind == "mismatch"),
        # open findings (resolved ones stay listed, last, but no longer rank the group)
        "findings": None if finding_rows is None else len(open_findings),
        "worst_severity": worst_severity(open_findings),
        "start_ms": start_ms,
        "end_ms": end_ms,
    }
    return GroupPage(
        group_id=group_id,
        lanes=lanes,
        spans=spans,
        markers=markers,
        bands=bands,
        ticks=ticks,
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


def group_timeline(page: GroupPage, page_name: str) -> dict[str, Any]:
    """A group's row of the overview timeline: its rebalances as drawn on its page (open ones to its end)
    and its open findings, each with the anchor of its row on the page."""
    return {
        "group_id": page.group_id,
        "page": page_name,
        "rebalances": [
            {
                "seq": b.rebalance_seq,
                "start_ms": b.start_ms,
                "end_ms": b.end_ms,
                "trigger": b.trigger,
                "generation_to": b.generation_to,
            }
            for b in page.bands
        ],
        "findings": [
            {
                "time_ms": finding_time(f, page.start_ms, page.end_ms),
                "severity": str(f.get("severity")),
                "rule_id": str(f.get("rule_id")),
                "summary": str(f.get("summary")),
                "anchor": finding_anchor(f),
            }
            for f in page.findings or []
            if f.get("status") != "resolved"
        ],
    }


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
    #: per group, ordered like ``by_rebalancing`` (:func:`group_timeline`): its rebalances and open findings
    timeline: list[dict[str, Any]] = field(default_factory=list)
    #: the span of every group page (None: no page)
    start_ms: int | None = None
    end_ms: int | None = None
    #: groups a stage refused (a limit of the configuration): group, stage, reason
    refused: list[dict[str, str]] = field(default_factory=list)
    #: groups of the report (with a page), and how many the tables and the timeline show (``max_groups``)
    groups_total: int = 0
    groups_shown: int = 0


#: the overview's numbers: label, summary key
NUMBER_KEYS = (
    ("lines read", "lines_read"),
    ("requests", "requests"),
    ("quarantined", "quarantined"),
    ("predictions", "predictions"),
    ("matched", "matched"),
    ("rebalances", "rebalances"),
    ("agreement", "agreement"),
)


def scoped_summary(requests: int, agreement: Iterable[Row], rebalances: int) -> dict[str, Any]:
    """The overview's numbers of a report scoped to a window or groups, from its own rows (``summary.json``
    counts the whole warehouse): requests in scope, predictions, matched and agreement (``agreement``:
    rows with api/n/scored/matched, as for :func:`api_agreement`), rebalances drawn. Lines read and
    quarantined lines belong to no group or request time: left out."""
    per_api = api_agreement(agreement)
    scored = sum(int(a["scored"]) for a in per_api)
    matched = sum(int(a["matched"]) for a in per_api)
    return {
        "requests": requests,
        "predictions": sum(int(a["predictions"]) for a in per_api),
        "matched": matched,
        "rebalances": rebalances,
        "agreement": matched / scored if scored else None,
    }


def _numbers(summary: Mapping[str, Any], scope: str | None) -> list[tuple[str, str]]:
    numbers = []
    for label, key in NUMBER_KEYS:
        value = summary.get(key)
        if value is not None:
            text = f"{float(value):.2%}" if key == "agreement" else str(value)
            numbers.append((f"{label} {scope}" if scope else label, text))
    return numbers


def build_overview(
    summary: Mapping[str, Any],
    groups: Sequence[Mapping[str, Any]],
    findings: Sequence[Row] | None,
    *,
    agreement: Sequence[Row],
    data_docs: str | None,
    title: str,
    scope: str | None = None,
    timeline: Sequence[Mapping[str, Any]] = (),
    refused: Sequence[Mapping[str, str]] = (),
    max_groups: int = 0,
) -> Overview:
    """The overview: the run's numbers (from ``summary.json``, or :func:`scoped_summary` labelled with
    ``scope``, e.g. "in window"), groups ranked by time spent rebalancing and by findings severity
    (``groups``: group_id, page, rebalances, rebalance_ms, members, processes, findings, worst_severity,
    start_ms, end_ms), the agreement per API (``agreement``, from :func:`api_agreement`), the findings
    linking to the group pages, the groups' timelines (:func:`group_timeline`) and the groups a stage
    refused (``refused``: group, stage, reason). ``max_groups`` (0: all): the two group tables list the
    first that many of their ranking and the timeline draws the first that many by time rebalancing (20,000
    groups were an 18 MB page of 20,000 timeline rows no browser draws); every group keeps its page."""
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
    if max_groups and len(groups) > max_groups:
        by_rebalancing, by_severity = by_rebalancing[:max_groups], by_severity[:max_groups]
        drawn = {str(g["group_id"]) for g in by_rebalancing}
        timeline = [t for t in timeline if str(t["group_id"]) in drawn]
    rows = None
    if findings is not None:
        rows = [
            {**_finding_row(f), "page": page_of.get(str(f.get("group_id")))}
            for f in sorted(findings, key=finding_order)
        ]
    rank = {str(g["group_id"]): i for i, g in enumerate(by_rebalancing)}
    starts = [int(g["start_ms"]) for g in groups if g.get("start_ms") is not None]
    ends = [int(g["end_ms"]) for g in groups if g.get("end_ms") is not None]
    return Overview(
        numbers=_numbers(summary, scope),
        agreement_by_api=by_api,
        by_rebalancing=[dict(g) for g in by_rebalancing],
        by_severity=[dict(g) for g in by_severity],
        findings=rows,
        data_docs=data_docs,
        title=title,
        timeline=[dict(t) for t in sorted(timeline, key=lambda t: rank.get(str(t["group_id"]), len(rank)))],
        start_ms=min(starts, default=None),
        end_ms=max(ends, default=None),
        groups_total=len(groups),
        groups_shown=len(by_rebalancing),
        refused=[
            {
                "group": str(r["group"]),
                "stage": str(r["stage"]),
                "reason": str(r["reason"]),
                "page": str(page_of.get(str(r["group"])) or ""),  # a group the replay cut short has one
            }
            for r in refused
        ],
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
