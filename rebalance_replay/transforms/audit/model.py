"""The audit's plain data: what a rule reads about one group (:class:`GroupInputs`, built from rows of
the output tables ``requests``, ``rebalances``, ``member_sessions``, ``transitions``) and what it
writes (:class:`Finding`, one row of the ``findings`` table). No Spark here.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:  # pragma: no cover
    from rebalance_replay.transforms.audit.routine import RoutineSummary

#: the ``requests`` columns the rules read (besides a few derived ones, see :class:`Req`)
REQUEST_COLUMNS = (
    "source_file",
    "line_no",
    "broker_id",
    "api_name",
    "api_version",
    "arrival_ms",
    "completion_ms",
    "client_id",
    "client_address",
    "connection",
    "member_id",
    "group_instance_id",
    "generation_id",
    "session_timeout_ms",
    "rebalance_timeout_ms",
    "protocol_type",
    "reason",
    "error_name",
    "response_member_id",
    "response_generation_id",
    "response_leader",
    "remote_time_ms",
)
REBALANCE_COLUMNS = (
    "rebalance_seq",
    "generation_from",
    "generation_to",
    "started_ms",
    "join_completed_ms",
    "stable_ms",
    "ended_ms",
    "outcome",
    "total_duration_ms",
    "join_phase_ms",
    "sync_phase_ms",
    "trigger",
    "trigger_member_id",
    "trigger_client_reason",
    "members_before",
    "members_after",
    "joined",
    "left",
    "evicted",
    "protocol_name",
    "cooperative_follow_up",
)
SESSION_COLUMNS = (
    "member_id",
    "group_instance_id",
    "client_id",
    "client_address",
    "generation_id",
    "joined_ms",
    "last_heartbeat_ms",
    "heartbeats",
    "ended_ms",
    "end_reason",
    "session_timeout_ms",
    "rebalance_timeout_ms",
)
TRANSITION_COLUMNS = ("seq", "time_ms", "from_state", "to_state", "generation_id", "member_id")
#: ``predictions`` columns of a request whose predicted answer the broker contradicted
DISPUTE_COLUMNS = ("source_file", "line_no", "api", "mismatch_kinds", "observed_error", "predicted_error")


def _tuple(v: Any) -> tuple[Any, ...]:
    return () if v is None else tuple(v)


class Req(NamedTuple):
    """One ``requests`` row of the group (the columns the rules read).

    A named tuple, not a frozen dataclass: the audit builds one for every request of a changed group
    (1.4M of them for a group with 30 days of history), and a frozen dataclass's ``__init__`` sets each
    of its 26 fields through ``object.__setattr__`` — five times the cost of a tuple's construction.
    Immutable and hashable alike; compares equal to a tuple of the same values."""

    source_file: str
    line_no: int
    broker_id: str
    api_name: str
    api_version: int
    arrival_ms: int
    completion_ms: int
    client_id: str | None = None
    client_address: str | None = None
    connection: str | None = None
    member_id: str | None = None
    group_instance_id: str | None = None
    generation_id: int | None = None
    session_timeout_ms: int | None = None
    rebalance_timeout_ms: int | None = None
    protocol_type: str | None = None
    reason: str | None = None
    error_name: str | None = None
    response_member_id: str | None = None
    response_generation_id: int | None = None
    response_leader: str | None = None
    remote_time_ms: float | None = None
    protocol_names: tuple[str, ...] = ()  # JoinGroup protocols, in preference order
    leave_members: tuple[tuple[str | None, str | None, str | None], ...] = ()  # (member, instance, reason)
    commit_errors: tuple[str, ...] = ()  # OffsetCommit per-partition errors other than NONE
    assignments: tuple[tuple[str, bytes | None], ...] = ()  # leader SyncGroup (member, bytes)

    @property
    def host(self) -> str | None:
        addr = self.client_address
        return addr.rsplit(":", 1)[0] if addr else None

    @property
    def process(self) -> str:
        """The client process that sent the request, as the broker saw it: its end of the connection
        (host and port; a process keeps its connection to the coordinator), else the connection id, else
        the client id. Two pods with the default client id ``consumer-<group>-1`` are two processes."""
        return self.client_address or self.connection or self.client_id or ""

    @property
    def errors(self) -> tuple[str, ...]:
        """The top-level error (when not NONE) and the per-partition ones."""
        top = (self.error_name,) if self.error_name not in (None, "NONE") else ()
        return top + self.commit_errors  # type: ignore[return-value]

    @staticmethod
    def from_row(row: Mapping[str, Any]) -> Req:
        protocols = row.get("protocols") or ()
        commits = row.get("response_commit_partitions") or ()
        return Req.from_parts(
            row,
            protocol_names=(n for p in protocols if (n := p.get("name")) is not None),
            leave_members=row.get("leave_members") or (),
            commit_errors=(c["error_name"] for c in commits if c.get("error_name") not in (None, "NONE")),
            assignments=row.get("assignments") or (),
        )

    @staticmethod
    def from_parts(
        columns: Mapping[str, Any],
        *,
        protocol_names: Iterable[str],
        leave_members: Iterable[Mapping[str, Any]],
        commit_errors: Iterable[str],
        assignments: Iterable[Mapping[str, Any]],
    ) -> Req:
        """A request from its :data:`REQUEST_COLUMNS` values and what the rules keep of its nested
        columns: protocol names, leaving members (``member_id``, ``group_instance_id``, ``reason``),
        per-partition commit errors other than NONE, assignments (``member_id``, ``assignment``: bytes,
        or base64 from JSON)."""
        kw: dict[str, Any] = {c: columns.get(c) for c in REQUEST_COLUMNS}
        return Req(
            **kw,
            protocol_names=tuple(protocol_names),
            leave_members=tuple(
                (m.get("member_id"), m.get("group_instance_id"), m.get("reason")) for m in leave_members
            ),
            commit_errors=tuple(commit_errors),
            assignments=tuple((a.get("member_id") or "", _bytes(a.get("assignment"))) for a in assignments),
        )


def _bytes(v: Any) -> bytes | None:
    if v is None or isinstance(v, bytes):
        return v
    if isinstance(v, bytearray | memoryview):
        return bytes(v)
    return base64.b64decode(v)  # JSON-serialised binary (Spark's to_json writes base64)


@dataclass(frozen=True)
class Rebalance:
    rebalance_seq: int
    generation_from: int
    started_ms: int
    outcome: str
    trigger: str
    generation_to: int | None = None
    join_completed_ms: int | None = None
    stable_ms: int | None = None
    ended_ms: int | None = None
    total_duration_ms: int | None = None
    join_phase_ms: int | None = None
    sync_phase_ms: int | None = None
    trigger_member_id: str | None = None
    trigger_client_reason: str | None = None
    members_before: tuple[str, ...] = ()
    members_after: tuple[str, ...] = ()
    joined: tuple[str, ...] = ()
    left: tuple[str, ...] = ()
    evicted: tuple[str, ...] = ()
    protocol_name: str | None = None
    cooperative_follow_up: bool = False

    @staticmethod
    def from_row(row: Mapping[str, Any]) -> Rebalance:
        kw: dict[str, Any] = {c: row.get(c) for c in REBALANCE_COLUMNS}
        for c in ("members_before", "members_after", "joined", "left", "evicted"):
            kw[c] = _tuple(kw[c])
        kw["cooperative_follow_up"] = bool(kw["cooperative_follow_up"])
        return Rebalance(**kw)


@dataclass(frozen=True)
class Session:
    member_id: str
    generation_id: int
    joined_ms: int
    end_reason: str
    group_instance_id: str | None = None
    client_id: str | None = None
    client_address: str | None = None
    last_heartbeat_ms: int | None = None
    heartbeats: int = 0
    ended_ms: int | None = None
    session_timeout_ms: int | None = None
    rebalance_timeout_ms: int | None = None

    @staticmethod
    def from_row(row: Mapping[str, Any]) -> Session:
        kw: dict[str, Any] = {c: row.get(c) for c in SESSION_COLUMNS}
        return Session(**kw)


@dataclass(frozen=True)
class Transition:
    seq: int
    time_ms: int
    from_state: str
    to_state: str
    generation_id: int
    member_id: str | None = None

    @staticmethod
    def from_row(row: Mapping[str, Any]) -> Transition:
        kw: dict[str, Any] = {c: row.get(c) for c in TRANSITION_COLUMNS}
        return Transition(**kw)


@dataclass(frozen=True)
class Dispute:
    """A request whose answer the replay predicted otherwise than the broker logged it (a ``predictions``
    row scored and not matched): what the model derived around it — sessions, rebalances — is in doubt."""

    source_file: str
    line_no: int
    api: str
    mismatch_kinds: tuple[str, ...] = ()
    observed_error: str | None = None
    predicted_error: str | None = None

    @staticmethod
    def from_row(row: Mapping[str, Any]) -> Dispute:
        kw: dict[str, Any] = {c: row.get(c) for c in DISPUTE_COLUMNS}
        kw["mismatch_kinds"] = _tuple(kw["mismatch_kinds"])
        return Dispute(**kw)

    @property
    def text(self) -> str:
        """``JOIN_GROUP kafka-request.log:123 answered NONE, predicted UNKNOWN_MEMBER_ID`` (or the fields
        that differ when the errors agree)."""
        where = f"{self.source_file.rsplit('/', 1)[-1]}:{self.line_no}"
        if self.observed_error != self.predicted_error:
            return f"{self.api} {where} answered {self.observed_error}, predicted {self.predicted_error}"
        return f"{self.api} {where}: {', '.join(self.mismatch_kinds) or 'answer'} differs"


@dataclass(frozen=True)
class BrokerBounds:
    """Broker settings the rules compare against (``broker.*`` of the run's configuration)."""

    group_min_session_timeout_ms: int = 6_000
    group_max_session_timeout_ms: int = 1_800_000
    group_initial_rebalance_delay_ms: int = 3_000
    group_max_size: int = 2_147_483_647


def request_order(r: Req) -> tuple[int, int, str, int]:
    """The order of a group's requests in :class:`GroupInputs` (arrival, completion, file, line)."""
    return (r.arrival_ms, r.completion_ms, r.source_file, r.line_no)


@dataclass(frozen=True)
class GroupInputs:
    """Everything the rules see of one group, each list in time order."""

    group_id: str
    requests: tuple[Req, ...] = ()
    rebalances: tuple[Rebalance, ...] = ()
    sessions: tuple[Session, ...] = ()
    transitions: tuple[Transition, ...] = ()
    broker: BrokerBounds = field(default_factory=BrokerBounds)
    disputes: tuple[Dispute, ...] = ()
    #: what a helper of the rules derived from these inputs once, for the other rules that ask again
    #: (``cadence.member_cadences``: R06 and R12 each walk every heartbeat of the group for it); not a
    #: field a rule reads, not compared
    derived: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)
    #: set when most routine rows were left out of ``requests``: what is kept of them instead
    #: (:class:`~rebalance_replay.transforms.audit.routine.RoutineSummary`)
    routine: RoutineSummary | None = None

    @staticmethod
    def build(
        group_id: str,
        *,
        requests: Iterable[Req] = (),
        rebalances: Iterable[Rebalance] = (),
        sessions: Iterable[Session] = (),
        transitions: Iterable[Transition] = (),
        broker: BrokerBounds | None = None,
        disputes: Iterable[Dispute] = (),
    ) -> GroupInputs:
        """Sorted deterministically, whatever order the rows came in."""
        return GroupInputs(
            group_id,
            tuple(sorted(requests, key=request_order)),
            tuple(sorted(rebalances, key=lambda r: r.rebalance_seq)),
            tuple(sorted(sessions, key=lambda s: (s.joined_ms, s.member_id, s.generation_id))),
            # one request's transitions share seq and time (the last member leaving: Stable →
            # PreparingRebalance → Empty): the generation then the states tell them apart
            tuple(
                sorted(
                    transitions,
                    key=lambda t: (
                        t.seq,
                        t.time_ms,
                        t.generation_id,
                        t.from_state,
                        t.to_state,
                        t.member_id or "",
                    ),
                )
            ),
            broker or BrokerBounds(),
            tuple(sorted(disputes, key=lambda d: (d.source_file, d.line_no, d.api))),
        )

    def rebalance(self, seq: int) -> Rebalance | None:
        for r in self.rebalances:
            if r.rebalance_seq == seq:
                return r
        return None


@dataclass(frozen=True)
class Evidence:
    source_file: str
    line_no: int
    api: str
    arrival_ms: int

    @staticmethod
    def of(r: Req) -> Evidence:
        return Evidence(r.source_file, r.line_no, r.api_name, r.arrival_ms)


@dataclass(frozen=True)
class Finding:
    """One row of ``findings`` (``log_date`` is derived from ``window_start_ms``)."""

    rule_id: str
    rule: str
    severity: str
    confidence: float
    group_id: str
    member_ids: tuple[str, ...]
    group_instance_ids: tuple[str, ...]
    client_ids: tuple[str, ...]
    client_hosts: tuple[str, ...]
    window_start_ms: int
    window_end_ms: int
    occurrences: int
    summary: str
    evidence: tuple[Evidence, ...]
    metrics: tuple[tuple[str, float], ...]
    fix: str
    rebalance_seqs: tuple[int, ...]

    @property
    def log_date(self) -> str:
        return datetime.fromtimestamp(self.window_start_ms / 1000, UTC).date().isoformat()

    def metric(self, name: str) -> float | None:
        return dict(self.metrics).get(name)

    def as_row(self) -> dict[str, Any]:
        return {
            "rule_id": self.rule_id,
            "rule": self.rule,
            "severity": self.severity,
            "confidence": self.confidence,
            "group_id": self.group_id,
            "member_ids": list(self.member_ids),
            "group_instance_ids": list(self.group_instance_ids),
            "client_ids": list(self.client_ids),
            "client_hosts": list(self.client_hosts),
            "window_start_ms": self.window_start_ms,
            "window_end_ms": self.window_end_ms,
            "occurrences": self.occurrences,
            "summary": self.summary,
            "evidence": [
                {"source_file": e.source_file, "line_no": e.line_no, "api": e.api, "arrival_ms": e.arrival_ms}
                for e in self.evidence
            ],
            "metrics": dict(self.metrics),
            "fix": self.fix,
            "rebalance_seqs": list(self.rebalance_seqs),
            # across runs: filled by the audit (transforms/audit/lifecycle.py), which knows the earlier runs
            "finding_key": None,
            "subject": None,
            "status": None,
            "first_seen_ms": None,
            "last_seen_ms": None,
            "runs_seen": None,
            "log_date": self.log_date,
        }

    def to_json(self) -> str:
        return json.dumps(self.as_row(), sort_keys=False, separators=(",", ":"))


def finite(v: float) -> float:
    """Metric values are finite doubles (NaN/inf would make rows differ between runs)."""
    return float(v) if math.isfinite(v) else 0.0


def sorted_unique(values: Iterable[str | None]) -> tuple[str, ...]:
    return tuple(sorted({v for v in values if v}))


def seconds(ms: float | None) -> str:
    """A duration for a summary: ``45 s``, ``1.5 s``, ``12 min``."""
    if ms is None:
        return "?"
    if ms < 1000:
        return f"{ms:.0f} ms"
    s = ms / 1000
    if s >= 600:
        return f"{s / 60:.0f} min"
    if s >= 10:
        return f"{s:.0f} s"
    return f"{s:.1f} s".replace(".0 s", " s")


def span(values: Sequence[float]) -> str:
    """``12–31 s`` (or ``12 s`` when all equal)."""
    if not values:
        return "?"
    lo, hi = seconds(min(values)), seconds(max(values))
    return (
        lo
        if lo == hi
        else f"{lo.removesuffix(' s')}–{hi}"
        if lo.endswith(" s") and hi.endswith(" s")
        else f"{lo}–{hi}"
    )
