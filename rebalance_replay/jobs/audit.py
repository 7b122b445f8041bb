"""Audit on Spark: run the rules of ``rebalance_replay.transforms.audit`` on every group and keep the
``findings`` table.

Each group's rows of ``requests``, ``rebalances``, ``member_sessions`` and ``transitions`` are brought
together (one stacked frame: ``group_id``, ``kind``, the ``requests`` columns the rules read as typed
columns with their nested columns reduced in the JVM to one JSON string on the few rows that fill them,
the other tables' few rows as JSON), partitioned by group and sorted within each partition
(:func:`~rebalance_replay.jobs.group_runs.grouped_partitions`: no Arrow stream and Python call a group, as
``applyInArrow`` would pay) and handed to the pure rules by ``mapInArrow``, a group at a time; the
findings come back as JSON and are typed with ``from_json`` against the ``findings`` schema.

Incremental: a fingerprint per group (row counts and a sum of hashes of the row keys of the input
tables) and one of the run (audit settings, broker bounds, the rules' source) are kept in
``<warehouse>/_audit/state.json``; the sums behind the group fingerprints are carried in
``<warehouse>/_audit/fingerprints.json`` (:mod:`rebalance_replay.jobs.carry`): a scheduled run sums only
the rows each table appended since the last one. A run re-evaluates only groups whose fingerprint
changed (new rows), with the findings of *all* their rows, so three scheduled runs give the findings of one
batch run; a changed run fingerprint re-evaluates every group; when nothing changed the table is not written
at all (a rerun changes nothing). A scheduled run does not read all the rows of a group again: it keeps each
group it evaluates compacted (:func:`rebalance_replay.transforms.audit.routine.compact`: the non-routine
requests, the routine ones a rule can reach, sums of the others; the same findings) with the fingerprint
sums, as of the version of ``requests`` it read, and the group's disputes as of the version of
``predictions`` it read; the next run resumes from that plus the requests and predictions appended since (a
group whose new requests arrived before the rows its state left out, or whose kept state cannot be read, is
read whole again; so is every group once ``predictions`` was written again).

Across runs: the run merges the findings it found with the table's rows
(:func:`rebalance_replay.transforms.audit.lifecycle.merge`): each finding keeps its ``finding_key`` and gets
its status (new, ongoing, resolved). A group's *coverage* (its newest request, bounded by the incremental
replay's late-arrival horizon, kept per group in the state file) tells whether a run looked at later time
than the last one: only then can a finding that did not occur again be resolved.

Killed at any point (``kill -9``), a rerun ends as an uninterrupted run: the state file names the version of
``findings`` the run merges with (``merged_with``) before the table is overwritten, so a run killed between
the overwrite and the state's update merges again with that version (time travel), never with its own rows
(they would count as seen twice: ``ongoing``, not ``new``); and the state says when the findings suite of
Great Expectations has not run on the table yet (``gx_done``), so a run killed in that step runs it again.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rebalance_replay.jobs.bookkeeping import crash_point, utc, write_json
from rebalance_replay.jobs.carry import Carry
from rebalance_replay.jobs.config import Config
from rebalance_replay.jobs.errors import MissingTableError
from rebalance_replay.jobs.group_runs import collector_paused, grouped_partitions
from rebalance_replay.schemas import (
    FINDINGS,
    MEMBER_SESSIONS,
    PREDICTIONS,
    REBALANCES,
    REQUESTS,
    TRANSITIONS,
)
from rebalance_replay.schemas.core import Column, TableDef
from rebalance_replay.transforms.audit import (
    RULES,
    AuditSettings,
    BrokerBounds,
    GroupInputs,
    evaluate,
    lifecycle,
    selected_rules,
)
from rebalance_replay.transforms.audit.model import (
    DISPUTE_COLUMNS,
    REBALANCE_COLUMNS,
    REQUEST_COLUMNS,
    SESSION_COLUMNS,
    TRANSITION_COLUMNS,
    Dispute,
    Rebalance,
    Req,
    Session,
    Transition,
)
from rebalance_replay.transforms.audit.registry import rule_ids_text
from rebalance_replay.transforms.audit.routine import (
    KEPT_FORMAT,
    compact,
    kept_disputes,
    kept_from_doc,
    kept_to_json,
    settled_before,
)
from rebalance_replay.transforms.report.units import fmt_dur, fmt_time, plural

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql import Column as SparkColumn
    from pyspark.sql import DataFrame, SparkSession

    from rebalance_replay.jobs.delta import DeltaStore
    from rebalance_replay.jobs.forensics import Forensics

Log = Callable[[str], object]

#: the row keys whose hash makes a group's fingerprint, per input table
KEYS = {
    "requests": ("source_file", "line_no"),
    "rebalances": ("rebalance_seq", "started_ms", "ended_ms", "outcome", "trigger"),
    "member_sessions": ("member_id", "generation_id", "joined_ms", "ended_ms", "end_reason"),
    "transitions": ("seq", "time_ms", "to_state"),
    "disputes": ("source_file", "line_no", "api"),
}
SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}
#: the terminal's audit names at most this many new findings and groups, a line each (summary.json has
#: them all): 20,000 groups in an hour were 20,000 lines
TERMINAL_LINES = 50
#: what the per-group function returns: one row a finding or unsupported rule, its JSON in ``payload``
AUDIT_OUTPUT = TableDef(
    name="_audit_output",
    columns=(Column("group_id", "string"), Column("kind", "string"), Column("payload", "string")),
)


def broker_bounds(config: Config) -> BrokerBounds:
    coord = config.coordinator_config()
    return BrokerBounds(
        group_min_session_timeout_ms=config.broker.group_min_session_timeout_ms,
        group_max_session_timeout_ms=coord.max_session_timeout_ms,
        group_initial_rebalance_delay_ms=config.broker.group_initial_rebalance_delay_ms,
        group_max_size=config.broker.group_max_size,
    )


#: the stacked frame's and the output's kind of a group's kept state (``transforms.audit.routine``)
KEPT = "kept"
#: the carried entry of the ``predictions`` version the kept states' disputes are as of
KEPT_DISPUTES = "kept:disputes"


@dataclass(frozen=True)
class Keeping:
    """A scheduled audit compacts each group it evaluates and keeps the result for the next run: the
    shortest heartbeat gap R12 may ask for, and the replay's late-arrival horizon (None: a batch replay)."""

    floor: int
    horizon_ms: int | None


#: the audit function hands its output rows to Spark this many at a time
OUTPUT_BATCH_ROWS = 10_000
#: the other input tables' columns the rules read (their rows are few: each crosses as one JSON string)
TABLE_COLUMNS = {
    "rebalances": REBALANCE_COLUMNS,
    "member_sessions": SESSION_COLUMNS,
    "transitions": TRANSITION_COLUMNS,
    "disputes": DISPUTE_COLUMNS,  # predictions scored and not matched
}
#: :class:`Req` fields made from the nested ``requests`` columns (filled on few rows: they cross as one
#: JSON string, ``nested``; Spark's Arrow writer pays for a nested column on every row, null or not)
NESTED_FIELDS = ("protocol_names", "leave_members", "commit_errors", "assignments")
if list(Req._fields) != [*REQUEST_COLUMNS, *NESTED_FIELDS]:
    raise AssertionError("Req's fields must be REQUEST_COLUMNS then NESTED_FIELDS, in this order")


def nested_request_column() -> SparkColumn:
    """``nested``: a JSON object of what :meth:`Req.from_row` keeps of the nested ``requests`` columns
    (protocol names; member, instance and reason of leaving members; per-partition commit errors other
    than NONE; member and bytes of the leader's assignments), reduced in the JVM; null when all are
    empty (most rows: heartbeats, and commits without errors)."""
    from pyspark.sql import functions as F

    fields = {  # no lambdas: higher-order functions are interpreted row by row, these are compiled
        "protocol_names": F.array_compact(F.col("protocols.name")),
        "leave_members": F.col("leave_members"),  # (member_id, group_instance_id, reason)
        "commit_errors": F.array_compact(
            F.array_remove(F.col("response_commit_partitions.error_name"), F.lit("NONE"))
        ),
        "assignments": F.col("assignments"),  # (member_id, assignment, assignment_length)
    }
    filled = [F.coalesce(F.size(c), F.lit(0)) > 0 for c in fields.values()]
    any_filled = filled[0]
    for f in filled[1:]:
        any_filled = any_filled | f
    return F.when(any_filled, F.to_json(F.struct(*[c.alias(n) for n, c in fields.items()])))


def stacked_inputs(frames: dict[str, DataFrame]) -> DataFrame:
    """One frame stacking every input table's rows of every group: ``group_id``, ``kind``, the
    ``requests`` columns the rules read (typed; null on the other tables' rows) with
    :func:`nested_request_column`, and ``payload``: the JSON of another table's row."""
    from pyspark.sql import functions as F

    out = None
    for kind, df in frames.items():
        cols = (
            [*REQUEST_COLUMNS, nested_request_column().alias("nested")]
            if kind == "requests"
            else [F.to_json(F.struct(*TABLE_COLUMNS[kind])).alias("payload")]
        )
        part = df.where(F.col("group_id").isNotNull()).select("group_id", F.lit(kind).alias("kind"), *cols)
        out = part if out is None else out.unionByName(part, allowMissingColumns=True)
    assert out is not None
    return out


def stacked_rows(table: pa.Table) -> Iterator[tuple[str, str, Req | dict[str, Any]]]:
    """(group id, kind, row) of each row of a stacked table (see :func:`stacked_inputs`), in its order: a
    :class:`Req` for a ``requests`` row, the other table's row as a dict. Each column is converted once
    for the whole table (a filter and a conversion per group and kind were most of a quiet group's cost)."""
    names = set(table.column_names)
    n = table.num_rows
    groups = table.column("group_id").to_pylist()
    kinds = table.column("kind").to_pylist()
    nothing: list[Any] = [None] * n
    payloads = table.column("payload").to_pylist() if "payload" in names else nothing
    if "nested" in names:  # the requests columns: on every row (null on the other tables' rows)
        nested = table.column("nested").to_pylist()
        plain: Iterable[tuple[Any, ...]] = zip(
            *(table.column(c).to_pylist() for c in REQUEST_COLUMNS), strict=True
        )
    else:
        nested = nothing
        plain = nothing
    for group_id, kind, payload, extra, values in zip(groups, kinds, payloads, nested, plain, strict=True):
        if kind != "requests":
            yield group_id, kind, json.loads(payload)
            continue
        if extra is None:
            yield group_id, kind, Req(*values)
            continue
        more = json.loads(extra)
        yield (
            group_id,
            kind,
            Req.from_parts(
                dict(zip(REQUEST_COLUMNS, values, strict=True)),
                protocol_names=more.get("protocol_names") or (),
                leave_members=more.get("leave_members") or (),
                commit_errors=more.get("commit_errors") or (),
                assignments=more.get("assignments") or (),
            ),
        )


def inputs_of(
    group_id: str, rows: Sequence[tuple[str, Req | dict[str, Any]]], broker: BrokerBounds
) -> GroupInputs:
    """One group's :class:`GroupInputs` from its (kind, row) pairs (:func:`stacked_rows`)."""
    requests: list[Req] = []
    others: dict[str, list[dict[str, Any]]] = {k: [] for k in TABLE_COLUMNS}
    summary = None
    disputes: list[Dispute] = []
    for kind, row in rows:
        if isinstance(row, Req):
            requests.append(row)
        elif kind == KEPT:  # what the last scheduled audit kept of the group (its rows before the new ones)
            kept_rows, summary = kept_from_doc(row)
            requests += kept_rows
            disputes += kept_disputes(row)
        else:
            others[kind].append(row)
    inputs = GroupInputs.build(
        group_id,
        requests=requests,
        rebalances=[Rebalance.from_row(r) for r in others["rebalances"]],
        sessions=[Session.from_row(r) for r in others["member_sessions"]],
        transitions=[Transition.from_row(r) for r in others["transitions"]],
        broker=broker,
        disputes=[*disputes, *(Dispute.from_row(r) for r in others["disputes"])],
    )
    return inputs if summary is None else dataclasses.replace(inputs, routine=summary)


def group_inputs(group_id: str, table: pa.Table, broker: BrokerBounds) -> GroupInputs:
    """One group's :class:`GroupInputs` from its rows of the stacked frame (:func:`stacked_inputs`)."""
    return inputs_of(group_id, [(kind, row) for _g, kind, row in stacked_rows(table)], broker)


def group_output(
    inputs: GroupInputs,
    settings: AuditSettings,
    only: tuple[str, ...] | None,
    keeping: Keeping | None = None,
) -> list[dict[str, str]]:
    """One group's rows of :data:`AUDIT_OUTPUT`: its findings, its coverage (newest request), the rules
    it cannot support; with ``keeping`` (a scheduled audit), the group compacted first (the same findings)
    and what the next run needs of it (kind ``kept``)."""
    gid = inputs.group_id
    kept: list[dict[str, str]] = []
    if keeping is not None:
        inputs = compact(inputs, keeping.floor, settled_before(inputs, keeping.horizon_ms))
        if inputs.routine is not None:
            kept.append({"group_id": gid, "kind": KEPT, "payload": kept_to_json(inputs)})
    result = evaluate(inputs, settings, only)
    rows = [{"group_id": gid, "kind": "finding", "payload": f.to_json()} for f in result.findings]
    newest = max((r.arrival_ms for r in inputs.requests), default=None)
    rows.append({"group_id": gid, "kind": "coverage", "payload": json.dumps({"newest_ms": newest})})
    rows += [
        {"group_id": gid, "kind": "unsupported", "payload": json.dumps({"rule_id": r, "reason": why})}
        for r, why in result.unsupported
    ]
    return rows + kept


def audit_function(
    settings: AuditSettings,
    only: tuple[str, ...] | None,
    broker: BrokerBounds,
    keeping: Keeping | None = None,
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function over the stacked frame's partitions, each sorted by group
    (:func:`~rebalance_replay.jobs.group_runs.grouped_partitions`): a group's rows are gathered across
    batches until the next group's begin, then its findings and unsupported rules come out as JSON rows."""

    def fn(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        schema = AUDIT_OUTPUT.arrow_schema()
        out: list[dict[str, str]] = []
        current: str | None = None
        rows: list[tuple[str, Req | dict[str, Any]]] = []
        for batch in batches:
            with collector_paused():
                for group_id, kind, row in stacked_rows(pa.Table.from_batches([batch])):
                    if group_id != current:
                        if current is not None:
                            out += group_output(inputs_of(current, rows, broker), settings, only, keeping)
                        current, rows = group_id, []
                    rows.append((kind, row))
            if len(out) >= OUTPUT_BATCH_ROWS:
                yield from pa.Table.from_pylist(out, schema=schema).to_batches()
                out = []
        if current is not None:
            with collector_paused():
                out += group_output(inputs_of(current, rows, broker), settings, only, keeping)
        if out:
            yield from pa.Table.from_pylist(out, schema=schema).to_batches()

    return fn


#: ``<warehouse>/_audit/fingerprints.json``: each input table's per-group sums, carried from run to run
FINGERPRINTS_FILE = ("_audit", "fingerprints.json")
FINGERPRINTS_FORMAT = 1


def group_sums(frames: Mapping[str, DataFrame]) -> dict[str, dict[str, list[int]]]:
    """Per input table (``kind``), group id → [rows, sum of the row keys' hashes]: sums, so the sums of
    rows appended later add to them. One Spark job for all the tables."""
    from pyspark.sql import functions as F

    out: dict[str, dict[str, list[int]]] = {kind: {} for kind in frames}
    parts = [
        df.where(F.col("group_id").isNotNull())
        .groupBy("group_id")
        .agg(
            F.count(F.lit(1)).alias("n"),
            F.sum(F.pmod(F.xxhash64(*KEYS[kind]), F.lit(2147483647))).alias("h"),
        )
        .select(F.lit(kind).alias("kind"), "group_id", "n", "h")
        for kind, df in frames.items()
    ]
    if parts:
        for r in functools.reduce(lambda x, y: x.unionByName(y), parts).collect():
            out[r["kind"]][r["group_id"]] = [int(r["n"]), int(r["h"])]
    return out


def group_fingerprints(
    frames: dict[str, DataFrame], carry: Carry | None = None, tables: Mapping[str, TableDef] | None = None
) -> dict[str, str]:
    """group id → a fingerprint of its rows in every input table. With ``carry`` (a scheduled run), a
    table's sums are the last run's plus those of the rows it appended since (``tables``: the Delta table
    each frame reads; ``disputes`` is ``predictions``' unmatched rows), else counted in full."""
    kept: dict[str, dict[str, list[int]]] = {}
    to_sum: dict[str, DataFrame] = {}
    for kind, df in frames.items():
        table = None if tables is None else tables.get(kind)
        got = None
        if carry is not None and table is not None:
            got = carry.added(f"fingerprint:{kind}", table, [FINGERPRINTS_FORMAT, KEYS[kind]])
        if got is None:
            to_sum[kind] = df
            continue
        kept[kind], rows = got
        if rows is not None:
            to_sum[kind] = disputed(rows) if kind == "disputes" else rows
    summed = group_sums(to_sum)
    parts: dict[str, list[str]] = {}
    for kind in frames:
        sums = {g: list(v) for g, v in kept.get(kind, {}).items()}
        for g, (n, h) in summed.get(kind, {}).items():
            old = sums.setdefault(g, [0, 0])
            old[0] += n
            old[1] += h
        table = None if tables is None else tables.get(kind)
        if carry is not None and table is not None:
            carry.keep(f"fingerprint:{kind}", table, [FINGERPRINTS_FORMAT, KEYS[kind]], sums)
        for g, (n, h) in sums.items():
            parts.setdefault(g, []).append(f"{kind}:{n}:{h}")
    return {g: hashlib.sha256("|".join(sorted(fps)).encode()).hexdigest()[:24] for g, fps in parts.items()}


def disputed(predictions: DataFrame) -> DataFrame:
    """The predictions the broker's answer contradicted (scored, not matched): the rules' disputes."""
    from pyspark.sql import functions as F

    return predictions.where(F.col("scored") & ~F.col("matched"))


def settings_fingerprint(settings: AuditSettings, only: tuple[str, ...] | None, broker: BrokerBounds) -> str:
    data = {
        "settings": {
            "evidence_cap": settings.evidence_cap,
            **{k: dataclasses.asdict(v) for k, v in settings.rules.items()},
        },
        "only": list(only) if only else None,
        "broker": dataclasses.asdict(broker),
        "rules": sorted(RULES),
        "code": rules_code_fingerprint(),
    }
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:24]


def rules_code_fingerprint() -> str:
    """A hash of the rules' source: a new version of a rule re-evaluates every group."""
    import rebalance_replay.transforms.audit as pkg

    h = hashlib.sha256()
    for f in sorted(Path(pkg.__file__).parent.glob("*.py")):
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:16]


@dataclass
class AuditResult:
    groups: int
    evaluated_groups: int
    up_to_date: bool
    #: every row of the findings table after this run, new first (``lifecycle.ordered``)
    findings: list[dict[str, Any]]
    unsupported: dict[str, dict[str, Any]]  # rule id → {"groups": n, "reasons": [...]}
    rules: list[str]
    health: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    gx: Any = None
    #: the replay's late-arrival horizon (incremental replay): rows arriving from it on are not audited yet
    horizon_ms: int | None = None
    #: the last replay closed the horizon (``--final``): nothing landed is held back
    horizon_closed: bool = False
    #: of the groups evaluated, those resumed from what the last scheduled audit kept of them (their
    #: requests appended since read, not all of them)
    resumed_groups: int = 0

    @property
    def open_findings(self) -> list[dict[str, Any]]:
        """New and ongoing findings (rows from before the lifecycle columns count as ongoing)."""
        return [f for f in self.findings if (f.get("status") or "ongoing") in lifecycle.OPEN]

    @property
    def new_findings(self) -> list[dict[str, Any]]:
        """The findings this run found first (none when it changed nothing: a rerun reports nothing new)."""
        return [] if self.up_to_date else [f for f in self.findings if f.get("status") == "new"]

    def counts(self) -> dict[str, int]:
        """Open findings per rule."""
        out: dict[str, int] = {}
        for f in self.open_findings:
            out[f["rule_id"]] = out.get(f["rule_id"], 0) + 1
        return dict(sorted(out.items()))

    def status_counts(self) -> dict[str, int]:
        out: dict[str, int] = dict.fromkeys(lifecycle.STATUSES, 0)
        for f in self.findings:
            out[f.get("status") or "ongoing"] += 1
        if self.up_to_date:  # the table's "new" ones were new in an earlier run
            out["ongoing"] += out["new"]
            out["new"] = 0
        return out

    def held_back(self, when: Callable[[int], str] = utc) -> str | None:
        """What the audit could not see yet, in UTC (None when the replay covers every row); ``when``
        writes the horizon (ISO 8601 for summary.json and notifications, ``fmt_time`` on the terminal)."""
        if self.horizon_ms is None:
            return None
        if self.horizon_closed:
            return f"nothing: the replay closed its horizon (--final) at {when(self.horizon_ms)}"
        return (
            f"requests arriving from {when(self.horizon_ms)} on are held back by the replay's late-arrival "
            "horizon (replay.late_tolerance_ms behind the newest completion) until a later run replays them: "
            "findings there are not reported, and none is resolved past it; a run with --final closes it"
        )

    def as_summary(self) -> dict[str, Any]:
        by_sev: dict[str, int] = {}
        for f in self.open_findings:
            by_sev[f["severity"]] = by_sev.get(f["severity"], 0) + 1
        new_sev: dict[str, int] = {}
        for f in self.new_findings:
            new_sev[f["severity"]] = new_sev.get(f["severity"], 0) + 1
        return {
            "findings": self.counts(),
            "audit": {
                "groups": self.groups,
                "evaluated_groups": self.evaluated_groups,
                "resumed_groups": self.resumed_groups,
                "up_to_date": self.up_to_date,
                "rules": self.rules,
                "by_severity": dict(sorted(by_sev.items())),
                "status": self.status_counts(),
                "new_by_severity": dict(sorted(new_sev.items())),
                "new_findings": [
                    {
                        k: f.get(k)
                        for k in ("finding_key", "rule_id", "severity", "group_id", "subject", "summary")
                    }
                    for f in self.new_findings
                ],
                "horizon_ms": self.horizon_ms,
                "horizon_utc": None if self.horizon_ms is None else utc(self.horizon_ms),
                "held_back": self.held_back(),
                "unsupported": {
                    k: f"unsupported: {', '.join(v['reasons'])} ({plural(v['groups'], 'group')})"
                    for k, v in sorted(self.unsupported.items())
                },
                "table": rule_table(self.open_findings, new=self.new_findings),
                "health": self.health,
                "gx": None if self.gx is None else self.gx.as_dict(),
            },
        }

    def format_text(self) -> str:
        """The terminal's audit: what this run evaluated and found, the warehouse's findings in total, a row
        per rule and severity (each finding counted at its own severity), the new findings, each group's
        health, what the replay still holds back (in UTC)."""
        st = self.status_counts()
        rules = plural(len(self.rules), "rule")
        if self.up_to_date:
            run = f"nothing new to audit, up to date ({plural(self.groups, 'group')} unchanged), {rules}"
        else:
            run = (
                f"{self.evaluated_groups} of {plural(self.groups, 'group')} evaluated, {rules}: "
                f"{plural(st['new'], 'new finding')}"
            )
        by_sev: dict[str, int] = {}
        for f in self.open_findings:
            by_sev[f["severity"]] = by_sev.get(f["severity"], 0) + 1
        sev = ", ".join(f"{by_sev[k]} {k}" for k in SEVERITY_ORDER if by_sev.get(k))
        lines = [
            f"audit: this run: {run}",
            f"audit: warehouse total: {plural(len(self.open_findings), 'open finding')}"
            + (f" ({sev}; {st['new']} new, {st['ongoing']} ongoing)" if self.open_findings else "")
            + f", {st['resolved']} resolved",
        ]
        table = rule_table(self.open_findings, new=self.new_findings)
        if table:
            lines.append(
                f"  {'rule':<48} {'severity':<9} {'new':>4} {'groups':>6} {'occurrences':>11} "
                f"{'rebalance time caused':>22}"
            )
            for t in table:
                lines.append(
                    f"  {t['rule_id'] + ' ' + t['rule']:<48} {t['severity']:<9} {t['new']:>4} "
                    f"{t['groups']:>6} {t['occurrences']:>11} {t['rebalance_time_caused_s']:>20.1f} s"
                )
        new = self.new_findings
        for f in new[:TERMINAL_LINES]:
            lines.append(f"  NEW {f['severity']} {f['rule_id']} {f['group_id']}: {f['summary']}")
        if len(new) > TERMINAL_LINES:
            lines.append(
                f"  … {len(new) - TERMINAL_LINES} more new findings (summary.json audit.new_findings)"
            )
        for rule_id, v in sorted(self.unsupported.items()):
            lines.append(
                f"  {rule_id}: unsupported: {'; '.join(v['reasons'])} ({plural(v['groups'], 'group')})"
            )
        for h in _worst_groups(self.health, TERMINAL_LINES):
            top = ", ".join(h["top_findings"]) or "no findings"
            lines.append(
                f"  group {h['group_id']}: {plural(h['rebalances'], 'rebalance')}, "
                f"{fmt_dur(h['rebalancing_s'] * 1000)} rebalancing; {top}"
            )
        if len(self.health) > TERMINAL_LINES:
            lines.append(
                f"  … {len(self.health) - TERMINAL_LINES} more groups (summary.json audit.health; the report)"
            )
        held = self.held_back(fmt_time)
        if held:
            lines.append(f"  held back: {held}")
        if self.gx is not None:
            lines.append(f"  Great Expectations: {'ok' if self.gx.success else 'FAILED'}: findings_contract")
        return "\n".join(lines)


def _worst_groups(health: Sequence[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """``health`` as it is when it has at most ``n`` groups; else the ``n`` with the worst finding, then
    the most time rebalancing, in ``health``'s order."""
    if len(health) <= n:
        return list(health)

    def rank(h: dict[str, Any]) -> tuple[int, float]:
        worst = min(
            (o for sev, o in SEVERITY_ORDER.items() for t in h["top_findings"] if t.endswith(f"({sev})")),
            default=len(SEVERITY_ORDER),
        )
        return worst, -float(h["rebalancing_s"])

    keep = {id(h) for h in sorted(health, key=rank)[:n]}
    return [h for h in health if id(h) in keep]


def rule_table(
    findings: Sequence[dict[str, Any]], new: Sequence[dict[str, Any]] = ()
) -> list[dict[str, Any]]:
    """A row per rule and severity — each finding counted at its own severity (a rule warning in one group
    and critical in another is two rows, never one at the worst of them) —: new findings, groups,
    occurrences, rebalance time caused (s); rows with new findings first, then by severity."""
    new_keys = {(f["rule_id"], f.get("finding_key")) for f in new}
    by: dict[tuple[str, str], dict[str, Any]] = {}
    for f in findings:
        t = by.setdefault(
            (f["rule_id"], f["severity"]),
            {
                "rule_id": f["rule_id"],
                "rule": f["rule"],
                "severity": f["severity"],
                "new": 0,
                "groups": set(),
                "occurrences": 0,
                "rebalance_time_caused_s": 0.0,
            },
        )
        t["new"] += (f["rule_id"], f.get("finding_key")) in new_keys
        t["groups"].add(f["group_id"])
        t["occurrences"] += int(f["occurrences"])
        t["rebalance_time_caused_s"] += (f["metrics"] or {}).get("rebalance_time_caused_ms", 0.0) / 1000
    out = []
    for key in sorted(by, key=lambda k: (by[k]["new"] == 0, SEVERITY_ORDER[k[1]], k[0])):
        t = by[key]
        out.append(
            {
                **t,
                "groups": len(t["groups"]),
                "rebalance_time_caused_s": round(t["rebalance_time_caused_s"], 3),
            }
        )
    return out


def replay_horizon(warehouse: str) -> tuple[int | None, bool]:
    """The scheduled (incremental) replay's late-arrival horizon, from its manifest, and whether its last
    run closed it (``--final``); None after a batch replay (everything replayed)."""
    path = Path(warehouse) / "_replay" / "manifest.json"
    if not path.exists():
        return None, False
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError:
        return None, False
    h = data.get("horizon_ms")
    if data.get("mode") != "incremental" or h is None:
        return None, False
    return int(h), bool(data.get("final"))


def _state_path(warehouse: str) -> Path:
    return Path(warehouse) / "_audit" / "state.json"


def reset_state(warehouse: str) -> None:
    """Forget what the audits evaluated: the next one evaluates every group and sums every table
    (``audit --repair``)."""
    _state_path(warehouse).unlink(missing_ok=True)
    Path(warehouse).joinpath(*FINGERPRINTS_FILE).unlink(missing_ok=True)


def _previous_findings(store: DeltaStore, state: dict[str, Any]) -> list[dict[str, Any]]:
    """The findings the run merges with: the table as the last complete audit left it. A run killed after
    overwriting the table but before recording its state left ``merged_with`` (the version it merged
    with) in the state: that version, not the killed run's own rows."""
    if not store.exists(FINDINGS):
        return []
    source = store
    if "merged_with" in state and state["merged_with"] != store.version(FINDINGS):
        if state["merged_with"] is None:  # the table did not exist before the killed run
            return []
        source = store.at(int(state["merged_with"]))
    return [_json_ready(r.asDict(recursive=True)) for r in source.read(FINDINGS).collect()]


def audit(
    spark: SparkSession,
    store: DeltaStore,
    config: Config,
    *,
    rules: Sequence[str] | None = None,
    log: Log = print,
    now_ms: int | None = None,
    within: Forensics | None = None,
) -> AuditResult:
    """Evaluate the rules on every group with new rows and update ``findings`` (see module docstring).
    ``within``: audit a forensics run (its tables in ``store``, its requests the scheduled ones in its
    window and groups; its ``_audit`` state and Great Expectations results in its own folder; no
    notification).

    Raises:
        MissingTableError: no ``requests`` table (run ingest first).
    """

    started = time.monotonic()
    source = store if within is None else within.source
    root = config.storage.warehouse if within is None else within.folder
    if not source.exists(REQUESTS):
        raise MissingTableError(
            f"audit: no requests table in {config.storage.warehouse}; run `rebalance-replay ingest` first"
        )
    unknown = [r for r in (rules or ()) if r not in RULES]
    if unknown:
        raise ValueError(f"audit: unknown rule id(s) {', '.join(unknown)} (rules are {rule_ids_text()})")
    settings = config.audit
    only = tuple(sorted(rules)) if rules else None
    from rebalance_replay.jobs.broker_facts import broker_facts

    # the settings the replay ran with: what the log tells about the brokers, the configuration otherwise
    broker = broker_bounds(broker_facts(spark, source, config).config)
    chosen = [r.rule_id for r in selected_rules(settings, only)]
    frames: dict[str, DataFrame] = {"requests": store.read(REQUESTS) if within is None else within.requests()}
    for name, table in (
        ("rebalances", REBALANCES),
        ("member_sessions", MEMBER_SESSIONS),
        ("transitions", TRANSITIONS),
    ):
        if store.exists(table):
            frames[name] = store.read(table)
    if store.exists(PREDICTIONS):
        frames["disputes"] = disputed(store.read(PREDICTIONS))
    tables = {
        "disputes": PREDICTIONS,
        **{t.name: t for t in (REQUESTS, REBALANCES, MEMBER_SESSIONS, TRANSITIONS)},
    }
    # a scheduled audit on a local warehouse adds the sums of the rows appended since the last one (a
    # forensics run's requests are a window of the scheduled table: counted in full)
    carry = (
        None
        if within is not None
        else Carry.scheduled(store, root, FINGERPRINTS_FILE, FINGERPRINTS_FORMAT, [tables[k] for k in frames])
    )
    fps = group_fingerprints(frames, carry, tables)
    if carry is not None:  # sums as of the versions read: right whatever this run does next
        carry.save()
    settings_fp = settings_fingerprint(settings, only, broker)
    state_file = _state_path(root)
    state: dict[str, Any] = json.loads(state_file.read_text()) if state_file.exists() else {}
    previous_coverage = {
        g: int(v["covered_ms"]) for g, v in state.get("groups", {}).items() if v.get("covered_ms") is not None
    }
    horizon_ms, horizon_closed = replay_horizon(root)
    # a scheduled audit keeps each group it evaluates compacted (its routine rows summed) and resumes
    # from that with the requests appended since, instead of reading every request of the group again
    keeping = None if carry is None else Keeping(settings.rule("R12").min_silence_ms, horizon_ms)  # type: ignore[attr-defined]
    kept_fp = [KEPT_FORMAT, settings_fp]
    kept = None if carry is None else carry.added(KEPT, REQUESTS, kept_fp)
    # the kept states hold their groups' disputes as of the predictions the last audit read: a resumed
    # group reads only the predictions appended since (none resumes when predictions were written again)
    new_disputes: DataFrame | None = None
    if carry is not None and kept is not None:
        if "disputes" not in frames:
            kept = None if KEPT_DISPUTES in carry.entries else kept
        elif (got := carry.added(KEPT_DISPUTES, PREDICTIONS, kept_fp)) is None:
            kept = None
        elif got[1] is not None:
            new_disputes = disputed(got[1])
    docs: dict[str, str] = {} if kept is None else dict(kept[0])
    appended = None if kept is None else kept[1]
    same_settings = state.get("settings") == settings_fp and store.exists(FINDINGS)
    old = state.get("groups", {}) if same_settings else {}
    changed = sorted(g for g, fp in fps.items() if old.get(g, {}).get("fp") != fp)
    removed = sorted(set(old) - set(fps))
    up_to_date = not changed and not removed
    resumed: set[str] = set()
    groups_state: dict[str, Any] = {g: v for g, v in old.items() if g in fps and g not in changed}
    if not up_to_date:
        unchanged = len(fps) - len(changed)
        if kept is not None:
            resumed = _resumable(changed, docs, appended, log)
        whole = [g for g in changed if g not in resumed]
        resumed_text = f", {len(resumed)} resumed from what the last audit kept" if resumed else ""
        log(
            f"audit: evaluating {plural(len(changed), 'group')} with new rows ({unchanged} unchanged"
            f"{resumed_text})"
        )
        parts: list[DataFrame] = []
        if whole and len(whole) == len(fps):  # every group (a first audit, new settings): no join
            parts.append(stacked_inputs(frames))
        elif whole:  # the changed groups' rows (a semi join: there may be many groups)
            parts.append(_of_groups(stacked_inputs(frames), whole))
        if resumed:  # their kept state, the requests and predictions appended since, their other tables' rows
            since = {**frames, "requests": store.empty(REQUESTS) if appended is None else appended}
            if new_disputes is not None:
                since["disputes"] = new_disputes
            else:
                since.pop("disputes", None)
            parts.append(_of_groups(stacked_inputs(since), resumed))
            parts.append(
                spark.createDataFrame(
                    [(g, KEPT, docs[g]) for g in sorted(resumed)],
                    "group_id string, kind string, payload string",
                )
            )
        stacked = (
            functools.reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), parts)
            if parts
            else None
        )
        new_findings: list[dict[str, Any]] = []
        coverage: dict[str, int] = {}
        unsupported_rows: dict[str, list[list[str]]] = {g: [] for g in changed}
        for g in changed:  # evaluated now: kept again below, or not at all (a group left whole)
            docs.pop(g, None)
        if stacked is not None:
            out = (
                grouped_partitions(stacked)
                .mapInArrow(audit_function(settings, only, broker, keeping), AUDIT_OUTPUT.spark_schema())
                .collect()
            )
            for row in out:
                if row["kind"] == KEPT:
                    docs[row["group_id"]] = row["payload"]
                    continue
                payload = json.loads(row["payload"])
                if row["kind"] == "finding":
                    new_findings.append(payload)
                elif row["kind"] == "coverage":
                    if payload["newest_ms"] is not None:  # bounded by what the replay has replayed
                        newest = int(payload["newest_ms"])
                        coverage[row["group_id"]] = newest if horizon_ms is None else min(newest, horizon_ms)
                else:
                    unsupported_rows[row["group_id"]].append([payload["rule_id"], payload["reason"]])
        if carry is not None:  # as of the version of requests read; a group evaluated in full starts one
            carry.keep(KEPT, REQUESTS, kept_fp, {g: d for g, d in sorted(docs.items()) if g in fps})
            if "disputes" in frames:  # its version is what counts: no tally
                carry.keep(KEPT_DISPUTES, PREDICTIONS, kept_fp, None)
            carry.save()
        for g in changed:
            groups_state[g] = {
                "fp": fps[g],
                "unsupported": sorted(unsupported_rows[g]),
                "covered_ms": coverage.get(g, previous_coverage.get(g)),
            }
        previous = _previous_findings(store, state)
        run = lifecycle.AuditRun(
            now_ms=int(time.time() * 1000) if now_ms is None else now_ms,
            evaluated=frozenset(changed),
            rules=frozenset(chosen),
            removed=frozenset(removed),
            coverage=coverage,
            previous_coverage=previous_coverage,
        )
        rows = lifecycle.merge(previous, new_findings, run)
        df = findings_frame(spark, rows)
        if "merged_with" not in state:  # written ahead: a rerun after a kill merges with the same rows
            state["merged_with"] = store.version(FINDINGS)
            write_json(state_file, state)
        store.overwrite(df, FINDINGS)
        crash_point("audit:before_state")  # findings committed, the state not yet recorded
        gx_due = config.report.great_expectations
        state = {"settings": settings_fp, "groups": dict(sorted(groups_state.items())), "gx_done": not gx_due}
        write_json(state_file, state)
    findings = lifecycle.ordered(
        _json_ready(r.asDict(recursive=True)) for r in store.read(FINDINGS).collect()
    )
    unsupported: dict[str, dict[str, Any]] = {}
    for _g, v in sorted(groups_state.items()):
        for rule_id, reason in v.get("unsupported", []):
            u = unsupported.setdefault(rule_id, {"groups": 0, "reasons": []})
            u["groups"] += 1
            if reason not in u["reasons"]:
                u["reasons"].append(reason)
    result = AuditResult(
        horizon_ms=horizon_ms,
        horizon_closed=horizon_closed,
        groups=len(fps),
        evaluated_groups=len(changed),
        resumed_groups=len(resumed),
        up_to_date=up_to_date,
        findings=findings,
        unsupported=unsupported,
        rules=chosen,
        health=group_health(
            frames.get("rebalances"),
            [f for f in findings if (f.get("status") or "ongoing") in lifecycle.OPEN],
        ),
    )
    # the suite runs on a table it has not checked yet: this run's, or one a killed run left unchecked
    if config.report.great_expectations and (not up_to_date or state.get("gx_done") is False):
        from rebalance_replay.jobs.expectations import FINDINGS_SUITE, findings_contract_frame, run_gx

        result.gx = run_gx(
            root,
            {FINDINGS_SUITE: findings_contract_frame(store.read(FINDINGS))},
            min_agreement=config.validation.min_agreement,
            log=log,
            keep_results=config.report.gx_keep_results,
        )
        if state.get("gx_done") is False:
            write_json(state_file, {**state, "gx_done": True})
    result.seconds = time.monotonic() - started
    return result


def _resumable(
    changed: Sequence[str], docs: Mapping[str, str], appended: DataFrame | None, log: Log = print
) -> set[str]:
    """The changed groups the audit resumes from their kept state: those with one, whose requests
    appended since all arrived after the rows the state may have left out (a request landing later than
    that, a log file read late, makes the group evaluated in full again). A kept state that cannot be read
    (a damaged state file) is dropped with a line in the log: the group is evaluated from all its rows."""
    from pyspark.sql import functions as F

    until: dict[str, int] = {}
    for g in changed:
        if g not in docs:
            continue
        try:
            doc = json.loads(docs[g])
            kept_disputes(doc)
            until[g] = kept_from_doc(doc)[1].until
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as e:
            log(
                f"audit: group {g}: the kept state in {'/'.join(FINGERPRINTS_FILE)} cannot be read "
                f"({type(e).__name__}: {str(e)[:120]}); evaluating the group from all its rows"
            )
    if not until:
        return set()
    first: dict[str, int] = {}
    if appended is not None:
        wanted = _of_groups(appended, until)
        first = {r[0]: int(r[1]) for r in wanted.groupBy("group_id").agg(F.min("arrival_ms")).collect()}
    return {g for g, u in until.items() if g not in first or first[g] >= u}


def _of_groups(df: DataFrame, groups: Iterable[str]) -> DataFrame:
    """``df``'s rows of ``groups`` (a broadcast semi join: there may be many groups)."""
    from pyspark.sql import functions as F

    wanted = df.sparkSession.createDataFrame([(g,) for g in sorted(groups)], "group_id string")
    return df.join(F.broadcast(wanted), "group_id", "left_semi")


def _json_ready(row: dict[str, Any]) -> dict[str, Any]:
    out = dict(row)
    if out.get("log_date") is not None:
        out["log_date"] = str(out["log_date"])
    out["metrics"] = dict(sorted((out.get("metrics") or {}).items()))
    return out


def findings_frame(spark: SparkSession, rows: Sequence[dict[str, Any]]) -> DataFrame:
    """The findings rows as a DataFrame typed by the ``findings`` schema (JSON → ``from_json``)."""
    from pyspark.sql import functions as F

    schema = FINDINGS.spark_schema()
    payload = spark.createDataFrame([(json.dumps(r, sort_keys=True),) for r in rows], "payload string")
    return payload.select(F.from_json("payload", schema).alias("f")).select("f.*")


def group_health(rebalances: DataFrame | None, findings: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per group: rebalances, time spent rebalancing, the top findings (worst severity first)."""
    from pyspark.sql import functions as F

    stats: dict[str, tuple[int, float]] = {}
    if rebalances is not None:
        for r in (
            rebalances.groupBy("group_id")
            .agg(F.count(F.lit(1)).alias("n"), F.sum(F.coalesce("total_duration_ms", F.lit(0))).alias("ms"))
            .collect()
        ):
            stats[r["group_id"]] = (int(r["n"]), float(r["ms"] or 0) / 1000)
    by_group: dict[str, list[dict[str, Any]]] = {}
    for f in findings:
        by_group.setdefault(f["group_id"], []).append(f)
    out = []
    for g in sorted(set(stats) | set(by_group)):
        fs = sorted(by_group.get(g, []), key=lambda f: (SEVERITY_ORDER[f["severity"]], f["rule_id"]))
        n, s = stats.get(g, (0, 0.0))
        out.append(
            {
                "group_id": g,
                "rebalances": n,
                "rebalancing_s": round(s, 3),
                "top_findings": [f"{f['rule_id']} {f['rule']} ({f['severity']})" for f in fs[:3]],
            }
        )
    return out


def iter_findings_text(findings: Sequence[dict[str, Any]]) -> Iterator[str]:
    for f in findings:
        yield f"{f['severity']:<8} {f['rule_id']} {f['group_id']}: {f['summary']}"
