"""A group's inputs without most of its routine traffic, the rules' findings unchanged.

Nearly every request of a group with a long history is *routine*: a Heartbeat or an OffsetCommit answered
``NONE`` (no per-partition error). The rules read routine rows only in a few ways, so :func:`compact` keeps
the non-routine rows and, of the routine ones, only the *anchors* a rule can reach:

- around each time a rule asks about a member (a session expired, a member evicted from a join phase, a
  LeaveGroup naming it): its last routine row at or before that time, its first three after it, and its
  first answered as a member after it (R02, R03, R04, R05, R11, R12, R19);
- the first and last row of each run of one broker's answers (R20: the coordinator moves; the last is
  the group's last row: the audit's coverage, the log's end for R01 and R02);
- the first row of each member id, instance id, client id, address, connection, API and version seen
  together (who a finding names, the process of a member first seen heartbeating; R10, R15);
- each member's last (the one before its expiry, should a later run learn of one).

What cannot be kept as rows is kept as sums (:class:`RoutineSummary`): each member's heartbeat cadence
(R06 and R12: :mod:`~rebalance_replay.transforms.audit.cadence`) and how many routine heartbeats were left
out before each rebalance began and up to when it ended (R01 counts the heartbeats of its window). A group
that speaks KIP-848's ConsumerGroupHeartbeat is left whole; one compacted while classic and upgraded since
keeps every row that came after (R23 adds the heartbeats left out, ``left_out``, to its classic ones).

Carried from run to run (:func:`kept_to_json`), a group's kept rows plus the rows that came since are
compacted again with the same result as all its rows at once, provided the routine rows left out are older
than every time a session or rebalance still to come may name (``until``: the replay's late-arrival
horizon, and the start of a rebalance still going on).
"""

from __future__ import annotations

import base64
import bisect
import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rebalance_replay.transforms.audit.base import HEARTBEAT, answered_as_member
from rebalance_replay.transforms.audit.cadence import Cadence, Gap, cadences, then
from rebalance_replay.transforms.audit.model import (
    DISPUTE_COLUMNS,
    Dispute,
    GroupInputs,
    Rebalance,
    Req,
    request_order,
)
from rebalance_replay.transforms.audit.protocol import GROUP_APIS

ROUTINE_APIS = (HEARTBEAT, "OFFSET_COMMIT")
#: the session ends a rule looks around (a member gone without a LeaveGroup)
EXPIRIES = ("session_expiry", "pending_sync_expiry")
#: how many of a member's routine rows after a time are kept (R02 and R03 look at the next three)
AFTER = 3


def is_routine(r: Req) -> bool:
    """A Heartbeat or OffsetCommit answered ``NONE``, no partition refused (an unlogged error is not)."""
    return r.api_name in ROUTINE_APIS and r.error_name == "NONE" and not r.commit_errors


@dataclass(frozen=True)
class RoutineSummary:
    """What :func:`compact` keeps of the routine rows it leaves out, besides the anchor rows."""

    #: each member's heartbeat cadence over every heartbeat up to ``through`` (the sort key of the last row
    #: it counted); its floor, ``audit.R12.min_silence_ms``
    cadences: Mapping[str, Cadence]
    floor: int
    through: tuple[int, int, str, int]
    #: the routine rows before this arrival time were left out (but the anchors); the later ones are kept
    until: int
    #: how many routine heartbeats were left out in all, and, at each time a rebalance began or ended
    #: before ``until``: how many of them arrived before it and how many up to it
    left_out: int
    left_out_at: Mapping[int, tuple[int, int]]

    def heartbeats_left_out(self, start: int, end: int) -> int:
        """How many heartbeats left out arrived from ``start`` to ``end`` (both in: a rebalance's start and
        another's end)."""
        return self.before(end, inclusive=True) - self.before(start, inclusive=False)

    def before(self, t: int, *, inclusive: bool) -> int:
        """How many heartbeats left out arrived before ``t`` (``inclusive``: or at it)."""
        if t >= self.until:
            return self.left_out
        try:
            return self.left_out_at[t][1 if inclusive else 0]
        except KeyError:
            raise ValueError(
                f"no count of the heartbeats left out at {t} (a rebalance unknown then)"
            ) from None


def compact(inputs: GroupInputs, floor: int, until: int | None = None) -> GroupInputs:
    """``inputs`` with only the routine rows a rule can reach (see the module docstring) and the summary
    of the others; ``floor``: the shortest heartbeat gap R12 may ask for (``audit.R12.min_silence_ms``);
    ``until``: routine rows from this arrival on are all kept (None: none is), for a later call to leave
    out once every time a rule may ask about them is known (the replay's late-arrival horizon).

    ``inputs`` may be compacted already (its rows the ones kept, then the rows that came after, in
    ``requests``; its summary in ``routine``): the result is then what compacting all the rows at once
    would have given, provided every session and rebalance time before the earlier ``until`` was known
    then."""
    reqs = inputs.requests
    old = inputs.routine
    if any(r.api_name == "CONSUMER_GROUP_HEARTBEAT" for r in reqs):
        if old is None:  # a KIP-848 group: left whole
            return inputs
        # compacted while classic, since moved to the consumer protocol: no row is left out any more, the
        # summary is brought up to date with the rows that came since
        until = old.until
    if old is not None and until is not None and until < old.until:
        raise ValueError(f"cannot keep again the rows before {old.until} left out (until {until})")
    cut = until if until is not None else (reqs[-1].arrival_ms + 1 if reqs else 0)
    droppable = [is_routine(r) and r.arrival_ms < cut for r in reqs]
    keep = {i for i, d in enumerate(droppable) if not d}
    own: dict[str, list[int]] = {}  # member id → its routine rows that may be left out
    identities: set[tuple[object, ...]] = set()
    for i, r in enumerate(reqs):
        if not droppable[i]:
            continue
        own.setdefault(r.member_id or "", []).append(i)
        # the first row of each identity: also each member's first with a process
        who = (r.member_id, r.group_instance_id, r.client_id, r.client_address, r.connection)
        if (*who, r.api_name, r.api_version) not in identities:
            identities.add((*who, r.api_name, r.api_version))
            keep.add(i)
    for rows in own.values():  # the last: the one before a time a later run learns of
        keep.add(rows[-1])
    for member, t in _asked(inputs):
        rows = own.get(member, [])
        times = [reqs[i].arrival_ms for i in rows]
        at = bisect.bisect_right(times, t)  # rows[:at] arrived at or before t
        keep.update(rows[max(0, at - 1) : at + AFTER])
        answered = next((i for i in rows[at:] if answered_as_member(reqs[i], member) is not None), None)
        if answered is not None:
            keep.add(answered)
    # the ends of each broker's run: the group's last routine row among them (the audit's coverage)
    coordinated = [i for i, r in enumerate(reqs) if r.api_name in GROUP_APIS]
    for k, i in enumerate(coordinated):
        broker = reqs[i].broker_id
        if k == 0 or reqs[coordinated[k - 1]].broker_id != broker:
            keep.add(i)
        if k == len(coordinated) - 1 or reqs[coordinated[k + 1]].broker_id != broker:
            keep.add(i)
    left_out = [r.arrival_ms for i, r in enumerate(reqs) if i not in keep and r.api_name == HEARTBEAT]
    bounds = {t for rb in inputs.rebalances for t in (rb.started_ms, rb.ended_ms or rb.started_ms) if t < cut}
    counts: dict[int, tuple[int, int]] = {}
    for t in bounds:
        lt = 0 if old is None else old.before(t, inclusive=False)
        le = 0 if old is None else old.before(t, inclusive=True)
        counts[t] = (lt + bisect.bisect_left(left_out, t), le + bisect.bisect_right(left_out, t))
    if old is None:
        beats = cadences(reqs, floor)
    else:
        if old.floor != floor:
            raise ValueError(f"cadences were kept from {old.floor} ms, not {floor} ms")
        beats = then(old.cadences, cadences([r for r in reqs if request_order(r) > old.through], floor))
    through = request_order(reqs[-1]) if reqs else (0, 0, "", 0) if old is None else old.through
    summary = RoutineSummary(
        cadences=beats,
        floor=floor,
        through=through,
        until=cut,
        left_out=len(left_out) + (0 if old is None else old.left_out),
        left_out_at=counts,
    )
    return dataclasses.replace(inputs, requests=tuple(reqs[i] for i in sorted(keep)), routine=summary)


def _asked(inputs: GroupInputs) -> set[tuple[str, int]]:
    """(member, time) of every time a rule asks what a member sent around: its session's expiry, its
    eviction from a join phase, a LeaveGroup naming it."""
    out: set[tuple[str, int]] = set()
    for s in inputs.sessions:
        if s.end_reason in EXPIRIES:  # a session not ended yet: from its start (R19)
            out.add((s.member_id, s.joined_ms if s.ended_ms is None else s.ended_ms))
    for rb in inputs.rebalances:
        if rb.join_completed_ms is not None:
            out.update((m, rb.join_completed_ms) for m in rb.evicted)
    for r in inputs.requests:
        if r.api_name == "LEAVE_GROUP":
            out.update((m, r.arrival_ms) for m, _, _ in r.leave_members if m)
    return out


def heartbeats_left_out(inputs: GroupInputs, first: Rebalance, last: Rebalance) -> int:
    """How many routine heartbeats :func:`compact` left out of ``inputs`` that arrived from when rebalance
    ``first`` began to when rebalance ``last`` ended (both in; 0 for inputs it did not compact)."""
    if inputs.routine is None:
        return 0
    return inputs.routine.heartbeats_left_out(first.started_ms, last.ended_ms or last.started_ms)


#: the layout of :func:`kept_to_json`'s document (a state kept by an earlier version is not read)
KEPT_FORMAT = 2


def kept_to_json(inputs: GroupInputs) -> str:
    """What a compacted group's next run needs of it: its rows and summary, as one JSON document (each
    request once, referred to by its place: the cadences' gaps are mostly rows kept too), and its disputes
    (the next run reads only the ``predictions`` appended since: :func:`kept_disputes`)."""
    summary = inputs.routine
    if summary is None:
        raise ValueError(f"group {inputs.group_id} is not compacted")
    table: dict[Req, int] = {}

    def ref(r: Req) -> int:
        return table.setdefault(r, len(table))

    def gap(g: Gap | None) -> list[int] | None:
        return None if g is None else [g[0], ref(g[1]), ref(g[2])]

    rows = [ref(r) for r in inputs.requests]
    beats = {
        member: {
            "first_heartbeat": ref(c.first_heartbeat),
            "last_heartbeat": ref(c.last_heartbeat),
            "n": c.n,
            "counts": sorted(c.counts.items()),
            "first": gap(c.first),
            "last": gap(c.last),
            "top": [gap(g) for g in c.top],
            "long": [gap(g) for g in c.long],
        }
        for member, c in sorted(summary.cadences.items())
    }
    doc = {
        "format": KEPT_FORMAT,
        "group": inputs.group_id,
        "requests": [_req_json(r) for r in table],
        "rows": rows,
        "floor": summary.floor,
        "through": list(summary.through),
        "until": summary.until,
        "left_out": summary.left_out,
        "left_out_at": sorted([t, *v] for t, v in summary.left_out_at.items()),
        "cadences": beats,
        "disputes": [[getattr(d, c) for c in DISPUTE_COLUMNS] for d in inputs.disputes],
    }
    return json.dumps(doc, separators=(",", ":"))


def kept_from_json(text: str) -> tuple[tuple[Req, ...], RoutineSummary]:
    """The rows and summary :func:`kept_to_json` wrote."""
    return kept_from_doc(json.loads(text))


def kept_from_doc(doc: Mapping[str, Any]) -> tuple[tuple[Req, ...], RoutineSummary]:
    """The rows and summary of :func:`kept_to_json`'s document, parsed."""
    if doc.get("format") != KEPT_FORMAT:
        raise ValueError(f"a kept audit state of format {doc.get('format')}, not {KEPT_FORMAT}")
    reqs = [_req_of(v) for v in doc["requests"]]
    floor = int(doc["floor"])

    def gap(v: list[int] | None) -> Gap | None:
        return None if v is None else (v[0], reqs[v[1]], reqs[v[2]])

    beats: dict[str, Cadence] = {}
    for member, c in doc["cadences"].items():
        beat = Cadence(reqs[c["first_heartbeat"]], reqs[c["last_heartbeat"]], floor, c["n"])
        beat.counts = {int(ms): int(k) for ms, k in c["counts"]}
        beat.first, beat.last = gap(c["first"]), gap(c["last"])
        beat.top = [g for v in c["top"] if (g := gap(v)) is not None]
        beat.long = [g for v in c["long"] if (g := gap(v)) is not None]
        beats[member] = beat
    through = doc["through"]
    summary = RoutineSummary(
        cadences=beats,
        floor=floor,
        through=(int(through[0]), int(through[1]), str(through[2]), int(through[3])),
        until=int(doc["until"]),
        left_out=int(doc["left_out"]),
        left_out_at={int(t): (int(lt), int(le)) for t, lt, le in doc["left_out_at"]},
    )
    return tuple(reqs[i] for i in doc["rows"]), summary


def kept_disputes(doc: Mapping[str, Any]) -> tuple[Dispute, ...]:
    """The disputes :func:`kept_to_json`'s document kept (the group's as of the ``predictions`` it read)."""
    return tuple(Dispute.from_row(dict(zip(DISPUTE_COLUMNS, v, strict=True))) for v in doc["disputes"])


def _req_json(r: Req) -> list[Any]:
    values: list[Any] = list(r)
    values[-1] = [[m, None if b is None else base64.b64encode(b).decode()] for m, b in r.assignments]
    return values


def _req_of(v: list[Any]) -> Req:
    *plain, protocols, leaving, errors, assignments = v
    return Req(
        *plain,
        protocol_names=tuple(protocols),
        leave_members=tuple(tuple(m) for m in leaving),  # type: ignore[misc]
        commit_errors=tuple(errors),
        assignments=tuple((m, None if b is None else base64.b64decode(b)) for m, b in assignments),
    )


#: the group states of a rebalance still going on (its ``rebalances`` row comes when it ends)
REBALANCING = ("PreparingRebalance", "CompletingRebalance")


def settled_before(inputs: GroupInputs, horizon_ms: int | None) -> int | None:
    """The arrival time before which a scheduled audit may leave routine rows out (:func:`compact`'s
    ``until``): the replay's late-arrival horizon (None: a batch replay, everything replayed), and no later
    than the start of a rebalance the group is still in (its ``transitions``: the last one into
    PreparingRebalance when the last one leaves it rebalancing). None: no bound (every row)."""
    bounds = [] if horizon_ms is None else [horizon_ms]
    if inputs.transitions and inputs.transitions[-1].to_state in REBALANCING:
        began = [t.time_ms for t in inputs.transitions if t.to_state == "PreparingRebalance"]
        bounds.append(began[-1] if began else inputs.transitions[-1].time_ms)
    return min(bounds) if bounds else None
