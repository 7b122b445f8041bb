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
  together (who a finding names, the process of a member first seen heartbeating; R10, R15).

What cannot be kept as rows is kept as sums (:class:`RoutineSummary`): each member's heartbeat cadence
(R06 and R12: :mod:`~rebalance_replay.transforms.audit.cadence`) and how many routine heartbeats were left
out before each rebalance began and up to when it ended (R01 counts the heartbeats of its window). A group
that speaks KIP-848's ConsumerGroupHeartbeat (R23 counts its classic heartbeats) is left whole.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from rebalance_replay.transforms.audit.base import HEARTBEAT, answered_as_member
from rebalance_replay.transforms.audit.cadence import Cadence, cadences
from rebalance_replay.transforms.audit.model import GroupInputs, Rebalance, Req
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

    #: each member's heartbeat cadence over every heartbeat (its ``floor``: ``audit.R12.min_silence_ms``)
    cadences: Mapping[str, Cadence]
    floor: int
    #: rebalance seq → (routine heartbeats left out that arrived before it began, and up to when it ended)
    heartbeats_left_out: Mapping[int, tuple[int, int]]


def compact(inputs: GroupInputs, floor: int) -> GroupInputs:
    """``inputs`` with only the routine rows a rule can reach (see the module docstring) and the summary
    of the others; ``floor``: the shortest heartbeat gap R12 may ask for (``audit.R12.min_silence_ms``)."""
    reqs = inputs.requests
    if inputs.routine is not None or any(r.api_name == "CONSUMER_GROUP_HEARTBEAT" for r in reqs):
        return inputs
    keep = {i for i, r in enumerate(reqs) if not is_routine(r)}
    own: dict[str, list[int]] = {}  # member id → its routine rows
    identities: set[tuple[object, ...]] = set()
    for i, r in enumerate(reqs):
        if not is_routine(r):
            continue
        own.setdefault(r.member_id or "", []).append(i)
        # the first row of each identity: also each member's first with a process
        who = (r.member_id, r.group_instance_id, r.client_id, r.client_address, r.connection)
        if (*who, r.api_name, r.api_version) not in identities:
            identities.add((*who, r.api_name, r.api_version))
            keep.add(i)
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
    counts = {
        rb.rebalance_seq: (
            bisect.bisect_left(left_out, rb.started_ms),
            bisect.bisect_right(left_out, rb.ended_ms or rb.started_ms),
        )
        for rb in inputs.rebalances
    }
    summary = RoutineSummary(cadences(reqs, floor), floor, counts)
    return dataclasses.replace(inputs, requests=tuple(reqs[i] for i in sorted(keep)), routine=summary)


def _asked(inputs: GroupInputs) -> set[tuple[str, int]]:
    """(member, time) of every time a rule asks what a member sent around: its session's expiry, its
    eviction from a join phase, a LeaveGroup naming it."""
    out: set[tuple[str, int]] = set()
    for s in inputs.sessions:
        if s.end_reason in EXPIRIES:
            out.update((s.member_id, t) for t in (s.ended_ms, s.joined_ms) if t is not None)
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
    counts = inputs.routine.heartbeats_left_out
    return counts[last.rebalance_seq][1] - counts[first.rebalance_seq][0]
