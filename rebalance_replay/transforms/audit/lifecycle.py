"""Findings across runs: a stable key per finding and its status (new, ongoing, resolved) from one audit
run to the next. Pure: rows of the ``findings`` table in, rows out.

**Key.** ``finding_key`` = the first 16 hex digits of SHA-256 over ``rule_id``, ``group_id`` and the
finding's *subject*, what the finding is about:

* ``instance:<group.instance.id>`` for the rules that report one finding per static instance
  (:data:`PER_INSTANCE`: R10 duplicate-group-instance-id);
* ``group`` for every other rule: it reports at most one finding per group, whose members, window,
  occurrences and severity grow as the log grows (member ids change at every restart of a dynamic
  member, so they cannot be part of a key).

The key depends on nothing that grows, so it is the same across runs and across re-audits of a group
whose finding's window grows. Should a rule ever report two findings with one subject, the later ones
(by window start) get ``#2``, ``#3``… appended to the subject.

**Status** (as of the last audit run that wrote the table; ``first_seen_ms``/``last_seen_ms`` are that
run's wall-clock times, ``runs_seen`` counts the runs it was open in):

* ``new`` — found in this run, and not open before (never seen, or resolved and occurring again, i.e.
  found with a later window end or more occurrences than when it was resolved: it is new again,
  ``first_seen_ms`` keeps the first time);
* ``ongoing`` — open before and still found: its evidence grew (later window end or more occurrences),
  or this run covered no later time of its group (a late row, a settings change), or its group had no
  new rows (the finding is carried over as it is);
* ``resolved`` — open before, and a run that covered later time of its group (the group's newest request,
  bounded by the replay's late-arrival horizon) did not find it again, or found it without any new
  occurrence. It stays in the table (``last_seen_ms``: the last run it was open in) until its group
  leaves the warehouse; findings of rules a run did not evaluate (``--rules``) are dropped.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from rebalance_replay.transforms.audit.config import SEVERITIES

Status = Literal["new", "ongoing", "resolved"]
STATUSES: tuple[Status, ...] = ("new", "ongoing", "resolved")
OPEN: frozenset[str] = frozenset({"new", "ongoing"})
#: rules reporting one finding per static instance (group.instance.id): their subject is the instance
PER_INSTANCE: frozenset[str] = frozenset({"R10"})
#: the lifecycle columns of ``findings`` (filled here, null in rows written before they existed)
LIFECYCLE_COLUMNS = ("finding_key", "subject", "status", "first_seen_ms", "last_seen_ms", "runs_seen")


def subject_of(row: Mapping[str, Any]) -> str:
    """What a finding is about (see the module docstring)."""
    if row["rule_id"] in PER_INSTANCE:
        ids = sorted(row.get("group_instance_ids") or ())
        if ids:
            return "instance:" + ",".join(ids)
    return "group"


def finding_key(rule_id: str, group_id: str, subject: str) -> str:
    data = "\x1f".join((rule_id, group_id, subject)).encode()
    return hashlib.sha256(data).hexdigest()[:16]


def with_keys(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The rows with ``subject`` and ``finding_key`` (computed again, so rows written before the keys
    existed get theirs; a second finding with one subject gets ``#2``, by window start)."""
    out: list[dict[str, Any]] = []
    seen: dict[tuple[str, str, str], int] = {}
    for r in sorted(
        rows, key=lambda r: (r["group_id"], r["rule_id"], r["window_start_ms"], r["window_end_ms"])
    ):
        subject = subject_of(r)
        n = seen[(r["rule_id"], r["group_id"], subject)] = (
            seen.get((r["rule_id"], r["group_id"], subject), 0) + 1
        )
        if n > 1:
            subject = f"{subject}#{n}"
        out.append(
            {**r, "subject": subject, "finding_key": finding_key(r["rule_id"], r["group_id"], subject)}
        )
    return out


@dataclass(frozen=True)
class AuditRun:
    """What a run did, for :func:`merge`."""

    now_ms: int
    #: groups whose rows the run evaluated (the others' findings are carried over)
    evaluated: frozenset[str]
    #: the rules the run evaluated (previous findings of other rules are dropped)
    rules: frozenset[str]
    #: groups no longer in the warehouse (their findings are dropped)
    removed: frozenset[str] = frozenset()
    #: evaluated group → the time this run covered (its newest request, bounded by the replay horizon)
    coverage: Mapping[str, int] = field(default_factory=dict)
    #: group → the time the run that evaluated it before covered (absent: unknown)
    previous_coverage: Mapping[str, int] = field(default_factory=dict)


def _grew(found: Mapping[str, Any], before: Mapping[str, Any]) -> bool:
    return int(found["window_end_ms"]) > int(before["window_end_ms"]) or int(found["occurrences"]) > int(
        before["occurrences"]
    )


def _covered_later(run: AuditRun, group: str, before: Mapping[str, Any]) -> bool:
    now = run.coverage.get(group)
    if now is None:
        return False
    then = run.previous_coverage.get(group)
    return now > (int(before["window_end_ms"]) if then is None else then)


def _open(row: Mapping[str, Any]) -> bool:
    return (row.get("status") or "ongoing") in OPEN  # rows from before the lifecycle columns were open


def merge(
    previous: Sequence[Mapping[str, Any]], found: Sequence[Mapping[str, Any]], run: AuditRun
) -> list[dict[str, Any]]:
    """The findings table after ``run``: ``previous`` (the table before it) and ``found`` (the findings of
    the groups it evaluated), with keys and statuses, in :func:`ordered` order."""
    now = run.now_ms
    before = {r["finding_key"]: r for r in with_keys(previous)}
    out: list[dict[str, Any]] = []
    for r in before.values():
        g = r["group_id"]
        if g in run.removed or g in run.evaluated or r["rule_id"] not in run.rules:
            continue
        if _open(r):  # carried over: its group had no new rows, so it would be found again as it is
            r = {
                **r,
                "status": "ongoing",
                "first_seen_ms": r.get("first_seen_ms") or now,
                "last_seen_ms": now,
                "runs_seen": int(r.get("runs_seen") or 1) + 1,
            }
        out.append(r)
    matched: set[str] = set()
    for f in with_keys(found):
        key = f["finding_key"]
        b = before.get(key)
        matched.add(key)
        if b is None:
            status: Status = "new"
        elif not _open(b):  # the rules read the whole history: a resolved one is found as it was
            status = "new" if _grew(f, b) else "resolved"
        elif _grew(f, b) or not _covered_later(run, f["group_id"], b):
            status = "ongoing"
        else:
            status = "resolved"
        runs = int(b.get("runs_seen") or 1) if b is not None else 0
        out.append(
            {
                **f,
                "status": status,
                "first_seen_ms": (b.get("first_seen_ms") if b is not None else None) or now,
                "last_seen_ms": (b.get("last_seen_ms") or now) if status == "resolved" and b else now,
                "runs_seen": runs if status == "resolved" else runs + 1,
            }
        )
    for key, b in before.items():
        g = b["group_id"]
        if key in matched or g not in run.evaluated or g in run.removed or b["rule_id"] not in run.rules:
            continue
        if _open(b):  # no longer found
            b = {
                **b,
                "status": "resolved",
                "first_seen_ms": b.get("first_seen_ms") or now,
                "last_seen_ms": b.get("last_seen_ms") or now,
                "runs_seen": int(b.get("runs_seen") or 1),
            }
        out.append(b)
    return ordered(out)


def ordered(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """New findings first, then ongoing, then resolved; worst severity first; then group, rule, window."""
    return sorted(
        (dict(r) for r in rows),
        key=lambda r: (
            STATUSES.index(r.get("status") or "ongoing"),
            -SEVERITIES.index(r["severity"]),
            r["group_id"],
            r["rule_id"],
            r["window_start_ms"],
            r.get("finding_key") or "",
        ),
    )


def at_least(severity: str, threshold: str) -> bool:
    return SEVERITIES.index(severity) >= SEVERITIES.index(threshold)  # type: ignore[arg-type]


def failing(
    rows: Iterable[Mapping[str, Any]], threshold: str, *, include_ongoing: bool
) -> list[dict[str, Any]]:
    """The findings that fail a run with ``--fail-on threshold``: new ones (with ``include_ongoing``: every
    open one) at that severity or worse."""
    wanted = OPEN if include_ongoing else frozenset({"new"})
    return [dict(r) for r in rows if r.get("status") in wanted and at_least(r["severity"], threshold)]
