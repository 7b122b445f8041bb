"""A member's heartbeat cadence as sums that add: what R06 and R12 read of the gaps between its heartbeats,
kept so that a span of the log's summary followed by a later span's is the summary of both (the audit can
carry it from run to run instead of walking every heartbeat of a 30-day history again).

A *gap* is the time between two consecutive heartbeats of one member (``member_id``) with the same
generation at the same broker, the later one answered ``NONE`` (or with no error logged): a rebalance in
between restarts the cadence, a coordinator move is the time the client took to find the new coordinator,
and a failed heartbeat ends no gap (it still starts the next one). What is kept of the gaps:

- how many, and how many of each length (the nearest-rank median and p99 come from the counts);
- the first and the last (the span a finding covers; the static member's instance id);
- the three longest, ties to the earliest (R06's evidence);
- every gap at least ``floor`` long, in time order (R12's silences: ``floor`` ≤ ``audit.R12.min_silence_ms``);
- the member's first and last heartbeat of the span, whatever their answer (the gap across two spans).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from rebalance_replay.transforms.audit.base import HEARTBEAT, nearest_rank
from rebalance_replay.transforms.audit.config import R12Settings
from rebalance_replay.transforms.audit.model import GroupInputs, Req

#: how many of the longest gaps a cadence keeps (R06 shows a member's three longest)
TOP = 3

Gap = tuple[int, Req, Req]


def ends_gap(prev: Req, r: Req) -> bool:
    """Whether heartbeat ``r`` after the same member's heartbeat ``prev`` closes a gap of its cadence."""
    return (
        prev.generation_id == r.generation_id
        and prev.broker_id == r.broker_id
        and r.error_name in (None, "NONE")
    )


@dataclass
class Cadence:
    """One member's heartbeat gaps over a span of the log (see the module docstring)."""

    first_heartbeat: Req
    last_heartbeat: Req
    floor: int
    n: int = 0
    counts: dict[int, int] = field(default_factory=dict)
    first: Gap | None = None
    last: Gap | None = None
    top: list[Gap] = field(default_factory=list)
    long: list[Gap] = field(default_factory=list)

    def add(self, g: Gap) -> None:
        """A gap later than every gap counted so far."""
        ms = g[0]
        self.n += 1
        self.counts[ms] = self.counts.get(ms, 0) + 1
        if self.first is None:
            self.first = g
        self.last = g
        if len(self.top) < TOP or ms > self.top[-1][0]:
            self.top = _longest([*self.top, g])
        if ms >= self.floor:
            self.long.append(g)

    def then(self, later: Cadence) -> Cadence:
        """This span's cadence followed by ``later``'s (the member's heartbeats after every one of these)."""
        if later.floor != self.floor:
            raise ValueError(f"cadences kept from different floors ({self.floor} ms, {later.floor} ms)")
        out = Cadence(self.first_heartbeat, later.last_heartbeat, self.floor, self.n, dict(self.counts))
        out.first, out.last, out.top, out.long = self.first, self.last, list(self.top), list(self.long)
        a, b = self.last_heartbeat, later.first_heartbeat
        if ends_gap(a, b):
            out.add((b.arrival_ms - a.arrival_ms, a, b))
        if later.n:
            out.n += later.n
            for ms, k in later.counts.items():
                out.counts[ms] = out.counts.get(ms, 0) + k
            if out.first is None:
                out.first = later.first
            out.last = later.last
            out.top = _longest([*out.top, *later.top])
            out.long += later.long
        return out

    def quantile(self, q: float) -> float:
        """The nearest-rank ``q`` quantile of the gaps (:func:`~rebalance_replay.transforms.audit.base.
        quantile` of every gap)."""
        if not self.n:
            raise ValueError("no gaps")
        k = nearest_rank(self.n, q)
        seen = 0
        for ms in sorted(self.counts):
            seen += self.counts[ms]
            if seen > k:
                return float(ms)
        raise AssertionError("counts do not add up to n")


def _longest(gaps: list[Gap]) -> list[Gap]:
    """The :data:`TOP` longest of ``gaps`` (in time order), ties to the earliest."""
    return sorted(gaps, key=lambda g: -g[0])[:TOP]


def cadences(requests: Iterable[Req], floor: int) -> dict[str, Cadence]:
    """Each member's cadence over ``requests`` (in the audit's order: arrival, completion, file, line)."""
    out: dict[str, Cadence] = {}
    for r in requests:
        if r.api_name != HEARTBEAT or not r.member_id:
            continue
        c = out.get(r.member_id)
        if c is None:
            out[r.member_id] = Cadence(r, r, floor)
            continue
        prev = c.last_heartbeat
        if ends_gap(prev, r):
            c.add((r.arrival_ms - prev.arrival_ms, prev, r))
        c.last_heartbeat = r
    return out


def then(earlier: Mapping[str, Cadence], later: Mapping[str, Cadence]) -> dict[str, Cadence]:
    """Every member's cadence over two consecutive spans (``later``'s heartbeats after all of
    ``earlier``'s)."""
    out = dict(earlier)
    for member, c in later.items():
        before = out.get(member)
        out[member] = c if before is None else before.then(c)
    return out


#: the floor a cadence is derived with when its caller needs no long gaps (R06): R12's default, so that
#: R12 with its default settings reads the same cadences
DEFAULT_FLOOR = R12Settings().min_silence_ms


def member_cadences(inputs: GroupInputs, floor: int | None = None) -> dict[str, Cadence]:
    """Each member's cadence over the group's requests, derived once per group (``inputs.derived``) and
    again only for a lower ``floor`` than the one kept (None: any floor). Callers read it, never change it."""
    summary = inputs.routine  # inputs without most heartbeats: their cadences were kept
    if summary is not None:
        if floor is not None and floor < summary.floor:
            raise ValueError(f"cadences were kept from {summary.floor} ms, not {floor} ms")
        return dict(summary.cadences)
    kept: dict[str, Cadence] | None = inputs.derived.get("cadences")
    kept_floor: int | None = inputs.derived.get("cadence_floor")
    if kept is not None and kept_floor is not None and (floor is None or kept_floor <= floor):
        return kept
    use = DEFAULT_FLOOR if floor is None else floor
    out = cadences(inputs.requests, use)
    inputs.derived["cadences"], inputs.derived["cadence_floor"] = out, use
    return out
