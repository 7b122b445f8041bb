"""Replaying one group: bronze request rows in, output-table rows out. Pure; shared by every Spark path.

A :class:`GroupReplayer` owns a group's coordinator model, its rebalance tracker and a buffer of rows that
have landed but may not be replayed yet. ``process(until_ms)`` replays, in arrival order, every buffered
request that arrived before ``until_ms`` (the *horizon*), lets the coordinator's timers run up to it, and
returns the rows of ``predictions``, ``transitions``, ``rebalances`` and ``member_sessions`` that became
final. Everything a later call needs (model, tracker, buffer) round-trips through ``to_bytes``.

Because the output depends only on the rows and the horizon — not on how the rows were split into calls —
the streaming path (``applyInPandasWithState``, state in the state store between scheduled runs) and the
sorted-partition fast path (``mapInArrow``) produce the same rows.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rebalance_replay.schemas import REQUESTS
from rebalance_replay.transforms import bulk
from rebalance_replay.transforms.coordinator.codec import Codec, pack, unpack
from rebalance_replay.transforms.coordinator.config import CoordinatorConfig
from rebalance_replay.transforms.coordinator.engine import EXTERNAL_ERROR_NAMES
from rebalance_replay.transforms.coordinator.fastobj import constructor
from rebalance_replay.transforms.coordinator.model import GroupCoordinatorModel
from rebalance_replay.transforms.coordinator.state import ClassicGroup, hash_slot, next_generation
from rebalance_replay.transforms.coordinator.types import (
    GroupRequest,
    GroupState,
    LeaveMember,
    ObservedResponse,
    PredictedResponse,
    Prediction,
    Protocol,
)
from rebalance_replay.transforms.kafka_protocol import STATE_CHANGING_APIS, ApiKey
from rebalance_replay.transforms.ordering import (
    connection_arrivals,
    is_routine,
    predecessors,
    search_order,
    sort_key,
    tie_sets,
)
from rebalance_replay.transforms.rebalances import RebalanceTracker
from rebalance_replay.transforms.report.units import fmt_time
from rebalance_replay.transforms.validation import compare, prediction_row

#: saved replayer state: the one header and compression of everything a group's replay saves
_MAGIC = b"RRGR"  # rebalance-replay group replayer
#: buffered rows are plain values (the codec's JSON forms: bytes, lists, dicts)
_ROWS = Codec()

LATE_REASON = "late: landed after its arrival time had been replayed (raise replay.late_tolerance_ms)"
#: a request of a tie set that another order of the tie explains as well, with another answer (or state)
AMBIGUOUS_ORDER_REASON = (
    "ambiguous order: another order of the requests logged in the same instant explains the log as well "
    "and answers this one differently"
)

#: Row kinds a replayer emits: one per output table.
OUTPUT_KINDS = ("predictions", "transitions", "rebalances", "member_sessions")

#: Clock resolutions a broker's log may show (ms), coarsest first, and how many logged completion times
#: it takes before a coarse one is believed.
CLOCK_DIVISORS = (1000, 100, 10, 1)
CLOCK_MIN_SAMPLES = 16

#: The largest session timeout a broker accepts by default (group.max.session.timeout.ms, 3.x)
MAX_SESSION_TIMEOUT_MS = 1_800_000


@dataclass(frozen=True)
class ReplaySettings:
    coordinator: CoordinatorConfig
    completion_tolerance_ms: int = 5
    #: how much later than the model a broker may answer a JoinGroup/SyncGroup and still agree
    #: (``validation.broker_lag_ms``; see rebalance_replay.transforms.validation)
    broker_lag_ms: int = 0
    #: how much earlier than the model a broker's answer may be: the lag of the line that anchors the model's
    #: instant (``validation.line_lag_ms``; see rebalance_replay.transforms.validation)
    line_lag_ms: int = 0
    cooperative_protocols: frozenset[str] = frozenset({"cooperative-sticky"})
    follow_up_window_ms: int = 10_000
    #: same-instant requests: the search tries at least every prefix of every order of this many
    #: requests (``ordering.search_budget``), none above ``order_search_max`` tied requests (see
    #: rebalance_replay.transforms.ordering)
    order_search_exhaustive_max: int = 6
    order_search_max: int = 64
    #: at most this many of the group's following requests score an order of a tie set beyond its own
    #: answers (:func:`lookahead_rows`); 0: the tie's own answers only
    order_search_lookahead_max: int = 64
    #: rows fed as columns (:meth:`GroupReplayer.feed_table`) get bulk validation of routine traffic
    #: (rebalance_replay.transforms.bulk); False: every request through the model one by one
    bulk: bool = True
    #: ...for a call of at least this many rows; a smaller one is fed one by one (the output is the same,
    #: the cost lower: ``replay.bulk_min_rows``); 0: columns whatever the size
    bulk_min_rows: int = 0
    #: a group with more members and pending members (KIP-394: joiners given a member id, not back yet) at
    #: once is refused (:attr:`GroupReplayer.refused`); 0: no limit (``replay.max_group_members``)
    max_group_members: int = 0


@dataclass
class ReplayOutput:
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: {k: [] for k in OUTPUT_KINDS})
    #: ``predictions`` rows of bulk-validated requests, as columns (schemas.PREDICTIONS)
    prediction_tables: list[pa.Table] = field(default_factory=list)
    replayed: int = 0
    late: int = 0

    def extend(self, kind: str, rows: Iterable[dict[str, Any]]) -> None:
        self.rows[kind].extend(rows)

    def count(self) -> int:
        return sum(len(v) for v in self.rows.values()) + sum(int(t.num_rows) for t in self.prediction_tables)

    def all_predictions(self) -> list[dict[str, Any]]:
        """Every ``predictions`` row as a dict, the bulk-validated ones included (tests, small outputs)."""
        return [*self.rows["predictions"], *(r for t in self.prediction_tables for r in t.to_pylist())]


def _host(address: str | None) -> str | None:
    if not address:
        return None
    host, sep, _port = address.rpartition(":")
    return host if sep else address


def _errors_pairs(items: Sequence[Mapping[str, Any]] | None, key: str) -> tuple[tuple[str, str], ...] | None:
    if items is None:
        return None
    return tuple((str(i.get(key) or ""), str(i.get("error_name") or "NONE")) for i in items)


_APIS = {int(a): a for a in ApiKey}

#: hot-path constructors (see rebalance_replay.transforms.coordinator.fastobj) for Heartbeat / OffsetCommit
#: rows
_new_liveness_observed: Callable[..., ObservedResponse] = constructor(
    ObservedResponse, ("error", "partition_errors", "completion_ms")
)
_new_liveness_request: Callable[..., GroupRequest] = constructor(
    GroupRequest,
    (
        "api",
        "api_version",
        "group_id",
        "arrival_ms",
        "member_id",
        "group_instance_id",
        "client_id",
        "client_host",
        "generation_id",
        "commit_partitions",
        "observed",
        "ref",
    ),
)


#: timing fields saying the network thread held an answer longer than this are not believed (a day)
MAX_ANSWER_LAG_MS = 86_400_000


def request_key(source_file: str, line_no: int, completion_ms: int | None) -> str:
    """A request's name while its prediction is to come: its file and line, and its line's time — a live
    file's lines are numbered again from 1 after each rotation, so the path and line number alone name a
    request of every hour the scheduled runs read the live ``kafka-request.log`` in."""
    return f"{source_file}:{line_no}@{completion_ms}"


def _take(keys: set[str], *candidates: str) -> bool:
    """Remove the first of ``candidates`` in ``keys``; whether one was there."""
    for k in candidates:
        if k in keys:
            keys.discard(k)
            return True
    return False


def answered_ms(row: Mapping[str, Any]) -> int | None:
    """When the broker's coordinator handed a JoinGroup/SyncGroup response over, per its line: the line's
    time (response sent) less ``responseQueueTimeMs`` and ``sendTimeMs`` (network-thread time after the
    answer; None when the line has no timing fields)."""
    done = row.get("completion_ms")
    queue, send = row.get("response_queue_time_ms"), row.get("send_time_ms")
    if done is None or queue is None or send is None:
        return None
    after = float(queue) + float(send)
    if not 0 <= after <= MAX_ANSWER_LAG_MS:  # NaN, negative or absurd timing fields: no answer time
        return None
    return int(done) - round(after)


def connection_ordered(table: pa.Table, *, lower: bool = True) -> pa.Table:
    """``table`` with its connections' requests in arrival order: an earlier request lowered to a later
    one's arrival (``lower``) or a later one raised to its predecessor's
    (:func:`~rebalance_replay.transforms.ordering.connection_arrivals`); ``table`` itself if none moved."""
    if table.num_rows < 2:
        return table
    key = pc.binary_join_element_wise(table.column("broker_id"), table.column("connection"), "|")
    codes = np.asarray(pc.fill_null(pc.dictionary_encode(key).combine_chunks().indices, -1).to_numpy())
    correlations = np.asarray(pc.fill_null(table.column("correlation_id"), -1).to_numpy())
    arrivals = table.column("arrival_ms").to_numpy()
    moved = connection_arrivals(codes, correlations, arrivals, lower=lower)
    return _table_with_arrivals(table, arrivals, moved)


def _table_with_arrivals(table: pa.Table, arrivals: np.ndarray, raised: np.ndarray) -> pa.Table:
    """``table`` with its ``arrival_ms`` column replaced by ``raised`` (``table`` itself if nothing moved)."""
    if raised is arrivals or np.array_equal(raised, arrivals):
        return table
    at = table.schema.get_field_index("arrival_ms")
    return table.set_column(at, table.schema.field(at), pa.array(raised, type=table.schema.field(at).type))


def _rows_with_arrivals(
    rows: list[Mapping[str, Any]], arrivals: np.ndarray, raised: np.ndarray
) -> list[Mapping[str, Any]]:
    """``rows`` with the arrivals that moved replaced (in copies; the other rows are kept as they are)."""
    if raised is arrivals:
        return rows
    return [
        r if int(a) == int(b) else {**r, "arrival_ms": int(b)}
        for r, a, b in zip(rows, arrivals, raised, strict=True)
    ]


def leader_first_arrivals(table: pa.Table, lag_ms: int) -> pa.Table:
    """``table`` with the join of each join phase's logged leader no later than the phase's first join,
    when it came at most ``lag_ms`` (``validation.broker_lag_ms``) after it.

    Kafka makes the first member added to an empty group its leader, so the answers name which join the
    coordinator took first. The arrival the log gives (the line's time less ``totalTimeMs``) can be late
    by however long the broker took to write the line after its own timing ended: a real 4.4 broker
    wrote the 50-member leader answer of a burst 14 ms late, so the leader's JoinGroup came out 14 ms
    after joins its coordinator took after it (``server.log``'s "Adding to the group now" order). The
    leader's join moves back by how much later than the phase's other answers its answer left (all of a
    phase's answers leave the coordinator at one instant), and at least to the phase's first arrival,
    where the tie set it joins is ordered by the observed answers (rebalance_replay.transforms.ordering).

    The same lateness on the leader's SyncGroup: Kafka answers a generation's parked SyncGroups when the
    leader's (the one carrying the assignments) is handled, so it arrived no later than the first of
    the other members' NONE answers of that generation. A real 3.7 broker under load wrote the leader's
    line late enough that its arrival came out after a follower's answer; the model, holding the
    follower's SyncGroup past its observed answer, called it a late answer (NO_RESPONSE). The leader's
    SyncGroup moves back to that first answer when it came at most ``lag_ms`` after it."""
    if lag_ms <= 0 or table.num_rows < 2:
        return table
    # only JoinGroups and SyncGroups take part: the routine rows (most of a log) never become Python
    # objects here
    apis = table.column("api_key")
    phases = pc.fill_null(
        pc.or_(pc.equal(apis, int(ApiKey.JOIN_GROUP)), pc.equal(apis, int(ApiKey.SYNC_GROUP))), False
    )
    rows = np.flatnonzero(phases)
    if len(rows) < 2:
        return table
    picked = table.take(rows)
    columns = {c: picked.column(c).to_pylist() for c in _PHASE_COLUMNS}
    columns["assignments"] = [bool(a) for a in picked.column("assignments").to_pylist()]
    arrivals = table.column("arrival_ms").to_numpy()
    shifted = _phase_shifts(columns, arrivals[rows], lag_ms)
    raised = arrivals.copy()
    raised[rows] = shifted
    return _table_with_arrivals(table, arrivals, raised)


def leader_first_arrivals_rows(rows: list[Mapping[str, Any]], lag_ms: int) -> list[Mapping[str, Any]]:
    """:func:`leader_first_arrivals` for rows (a moved row is a copy; the others are kept)."""
    if lag_ms <= 0 or len(rows) < 2:
        return rows
    columns = {c: [r.get(c) for r in rows] for c in _PHASE_COLUMNS}
    columns["assignments"] = [bool(r.get("assignments")) for r in rows]
    arrivals = np.asarray([int(r["arrival_ms"]) for r in rows], dtype=np.int64)
    raised = _phase_shifts(columns, arrivals, lag_ms)
    return _rows_with_arrivals(rows, arrivals, raised)


_PHASE_COLUMNS = (
    "api_key",
    "error_name",
    "generation_id",
    "response_generation_id",
    "response_leader",
    "member_id",
    "completion_ms",
    "response_queue_time_ms",
    "send_time_ms",
)


def _leader_first_shift(columns: Mapping[str, list[Any]], arrivals: np.ndarray, lag_ms: int) -> np.ndarray:
    phases: dict[int, list[int]] = {}
    leaders: dict[int, str] = {}
    for i, (api, error, generation, leader) in enumerate(
        zip(
            columns["api_key"],
            columns["error_name"],
            columns["response_generation_id"],
            columns["response_leader"],
            strict=True,
        )
    ):
        if api == int(ApiKey.JOIN_GROUP) and error == "NONE" and generation is not None and generation >= 0:
            phases.setdefault(generation, []).append(i)
            if leader:
                leaders[generation] = leader
    raised = arrivals
    for generation, rows in phases.items():
        leader = leaders.get(generation)
        mine = [i for i in rows if columns["member_id"][i] == leader]
        if len(rows) < 2 or len(mine) != 1:
            continue
        first = min(int(arrivals[i]) for i in rows)
        own = int(arrivals[mine[0]])
        if not 0 < own - first <= lag_ms:
            continue
        # how much later than the phase's other answers the leader's line was written: its arrival is
        # late by as much (the phase's answers leave the coordinator at one instant)
        answered = [_answered(columns, i) for i in rows]
        excess = (answered[rows.index(mine[0])] or 0) - min((a for a in answered if a is not None), default=0)
        if raised is arrivals:
            raised = arrivals.copy()
        raised[mine[0]] = min(first, own - excess) if 0 < excess <= lag_ms else first
    return raised


def _phase_shifts(columns: Mapping[str, list[Any]], arrivals: np.ndarray, lag_ms: int) -> np.ndarray:
    """The causal mends of :func:`leader_first_arrivals`, in order: the join phase's leader first, then
    the leader's SyncGroup. (Each join of a phase arrived before the phase's answer too, but a join
    answered at once right after the phase ended looks the same in the log as one whose line was written
    late; moving it into the phase broke Kafka's own answers in the differential tier.)"""
    return _leader_sync_shift(columns, _leader_first_shift(columns, arrivals, lag_ms), lag_ms)


def _leader_sync_shift(columns: Mapping[str, list[Any]], arrivals: np.ndarray, lag_ms: int) -> np.ndarray:
    """Each generation's first leader SyncGroup (it carries the assignments) no later than the first
    NONE answer to another member's SyncGroup of that generation (see :func:`leader_first_arrivals`)."""
    leaders: dict[int, int] = {}
    answers: dict[int, list[int]] = {}
    for i, (api, error, generation) in enumerate(
        zip(columns["api_key"], columns["error_name"], columns["generation_id"], strict=True)
    ):
        if api != int(ApiKey.SYNC_GROUP) or error != "NONE" or generation is None or generation < 0:
            continue
        if columns["assignments"][i]:
            if generation not in leaders or arrivals[i] < arrivals[leaders[generation]]:
                leaders[generation] = i
        else:
            answers.setdefault(generation, []).append(i)
    raised = arrivals
    for generation, leader in leaders.items():
        released = [
            _answered(columns, i) or columns["completion_ms"][i]
            for i in answers.get(generation, ())
            if columns["member_id"][i] != columns["member_id"][leader]
        ]
        first = min((int(t) for t in released if t is not None), default=None)
        if first is None or not 0 < int(arrivals[leader]) - first <= lag_ms:
            continue
        if raised is arrivals:
            raised = arrivals.copy()
        raised[leader] = first
    return raised


def _answered(columns: Mapping[str, list[Any]], i: int) -> int | None:
    return answered_ms(
        {c: columns[c][i] for c in ("completion_ms", "response_queue_time_ms", "send_time_ms")}
    )


def connection_ordered_rows(rows: list[Mapping[str, Any]], *, lower: bool = True) -> list[Mapping[str, Any]]:
    """:func:`connection_ordered` for rows (a moved row is a copy; the others are kept)."""
    if len(rows) < 2:
        return rows
    index: dict[tuple[Any, Any], int] = {}
    codes = np.asarray(
        [
            -1
            if r.get("connection") is None
            else index.setdefault((r.get("broker_id"), r["connection"]), len(index))
            for r in rows
        ],
        dtype=np.int64,
    )
    correlations = np.asarray(
        [-1 if r.get("correlation_id") is None else int(r["correlation_id"]) for r in rows], dtype=np.int64
    )
    arrivals = np.asarray([int(r["arrival_ms"]) for r in rows], dtype=np.int64)
    raised = connection_arrivals(codes, correlations, arrivals, lower=lower)
    return _rows_with_arrivals(rows, arrivals, raised)


def request_from_row(row: Mapping[str, Any]) -> GroupRequest:
    """A bronze ``requests`` row (as a mapping) → the model's :class:`GroupRequest`.

    Hot path (one call per replayed request): Heartbeat and OffsetCommit, most of any log, skip the
    JoinGroup/SyncGroup/LeaveGroup fields.
    """
    get = row.get
    api = _APIS[int(row["api_key"])]
    partitions = get("response_commit_partitions")
    ref = (row["source_file"], int(row["line_no"]))
    if api is ApiKey.HEARTBEAT or api is ApiKey.OFFSET_COMMIT:
        observed = _new_liveness_observed(
            get("error_name"),
            None
            if partitions is None
            else tuple(
                (p["topic"] or "", p["partition"] or 0, p["error_name"] or "NONE") for p in partitions
            ),
            get("completion_ms"),
        )
        commits = get("commit_partitions")
        return _new_liveness_request(
            api,
            int(row["api_version"]),
            row["group_id"],
            int(row["arrival_ms"]),
            get("member_id"),
            get("group_instance_id"),
            get("client_id"),
            _host(get("client_address")),
            get("generation_id"),
            () if not commits else tuple((c["topic"] or "", c["partition"] or 0) for c in commits),
            observed,
            ref,
        )
    members = get("response_members")
    observed = ObservedResponse(
        error=get("error_name"),
        generation_id=get("response_generation_id"),
        leader=get("response_leader"),
        member_id=get("response_member_id"),
        protocol_type=get("response_protocol_type"),
        protocol_name=get("response_protocol_name"),
        skip_assignment=get("response_skip_assignment"),
        members=None if members is None else tuple(m.get("member_id") or "" for m in members),
        member_instance_ids=None if members is None else tuple(m.get("group_instance_id") for m in members),
        member_errors=_errors_pairs(get("response_leave_members"), "member_id"),
        assignment=get("response_assignment"),
        completion_ms=get("completion_ms"),
        answered_ms=answered_ms(row),
    )
    return GroupRequest(
        api=api,
        api_version=int(row["api_version"]),
        group_id=row["group_id"],
        arrival_ms=int(row["arrival_ms"]),
        member_id=get("member_id"),
        group_instance_id=get("group_instance_id"),
        client_id=get("client_id"),
        client_host=_host(get("client_address")),
        generation_id=get("generation_id"),
        session_timeout_ms=get("session_timeout_ms"),
        rebalance_timeout_ms=get("rebalance_timeout_ms"),
        protocol_type=get("protocol_type"),
        protocol_name=get("protocol_name"),
        protocols=tuple(
            Protocol(p["name"], p.get("metadata"), p.get("metadata_length")) for p in (get("protocols") or ())
        ),
        reason=get("reason"),
        assignments=tuple(
            (a.get("member_id") or "", a.get("assignment")) for a in (get("assignments") or ())
        ),
        leave_members=tuple(
            LeaveMember(m.get("member_id") or "", m.get("group_instance_id"), m.get("reason"))
            for m in (get("leave_members") or ())
        ),
        observed=observed,
        ref=ref,
    )


#: Bronze columns a replayer needs (the Spark side selects only these).
REPLAY_COLUMNS = (
    "source_file",
    "line_no",
    "broker_id",
    "api_key",
    "api_version",
    "group_id",
    "correlation_id",
    "client_id",
    "connection",
    "client_address",
    "arrival_ms",
    "completion_ms",
    "member_id",
    "group_instance_id",
    "generation_id",
    "session_timeout_ms",
    "rebalance_timeout_ms",
    "protocol_type",
    "protocol_name",
    "protocols",
    "reason",
    "assignments",
    "leave_members",
    "commit_partitions",
    "error_name",
    "response_generation_id",
    "response_leader",
    "response_member_id",
    "response_protocol_type",
    "response_protocol_name",
    "response_skip_assignment",
    "response_members",
    "response_assignment",
    "response_leave_members",
    "response_commit_partitions",
    "response_queue_time_ms",
    "send_time_ms",
)


#: The replay columns as Arrow types (:meth:`GroupReplayer.feed_table`).
REPLAY_SCHEMA = pa.schema([REQUESTS.arrow_schema().field(c) for c in REPLAY_COLUMNS])
_STATE_CHANGING = pa.array(sorted(int(a) for a in STATE_CHANGING_APIS), type=pa.int32())

#: ``source_file`` of a JoinGroup the replay infers although the log has no line for it
INFERRED_SOURCE = "(inferred: unanswered JoinGroup)"

#: The Java client's JoinGroup request timeout is max(request.timeout.ms, rebalance timeout + 5 s)
#: (``AbstractCoordinator.sendJoinGroupRequest``, ``JOIN_GROUP_TIMEOUT_LAPSE``); the default
#: request.timeout.ms.
CLIENT_REQUEST_TIMEOUT_MS = 30_000
JOIN_GROUP_TIMEOUT_LAPSE_MS = 5_000


def unlogged_join_sent(
    arrival_ms: int, previous_ms: int, rebalance_timeout_ms: int, session_timeout_ms: int
) -> int | None:
    """When a member sent the JoinGroup the broker held but never answered (None: it needed none).

    The member's last answer was at ``previous_ms``; its JoinGroup arriving at ``arrival_ms`` was
    answered NONE as the member's own. Kafka expires a member silent for its session timeout unless it
    waits in JoinGroup or SyncGroup (3.7.1 ``MemberMetadata.hasSatisfiedHeartbeat``: "Members that are
    awaiting a rebalance automatically satisfy expected heartbeats"), so a silence of at least
    ``session_timeout_ms`` means an earlier JoinGroup was held, sent within the session timeout of
    ``previous_ms`` (the Java coordinator alike: ``ClassicGroupMember.hasSatisfiedHeartbeat``). The
    Java client re-sends a JoinGroup after ``T = max(request.timeout.ms, rebalance timeout + 5 s)``
    without an answer (3.7.1 ``AbstractCoordinator.sendJoinGroupRequest``), and Kafka keeps only the
    latest one (2.7.2/3.7.1 ``GroupMetadata.updateMember`` replaces ``awaitingJoinCallback``, 4.x
    ``ClassicGroup.updateMember`` the awaiting join future; the first is never answered, so never
    logged): the first was sent ``k·T`` before this one. ``T`` with the default
    request.timeout.ms (30 s) is tried first, then ``T = rebalance timeout + 5 s`` (a request.timeout.ms
    at most that: the client's setting is not in the log), ``k`` = 1, 2, …; when no such time falls
    within the session timeout of ``previous_ms`` (a request.timeout.ms the log cannot tell), the
    JoinGroup was sent at ``previous_ms``: a Java consumer rejoins as soon as it is told to (a real
    3.7 broker, ``tests/data/real-kafka/3.7/held``: a member with request.timeout.ms 10 s re-sent its
    JoinGroup twice, 13 s apart, and was answered NONE about 26 s after its last heartbeat).
    """
    session = max(session_timeout_ms, 0)
    lapse = rebalance_timeout_ms + JOIN_GROUP_TIMEOUT_LAPSE_MS
    default = max(CLIENT_REQUEST_TIMEOUT_MS, lapse)
    if previous_ms <= arrival_ms - default < previous_ms + session:
        return arrival_ms - default
    if session <= 0 or arrival_ms - previous_ms < session:
        return None  # alive without a held JoinGroup (or nothing known of its session)
    for timeout in (default, lapse):
        k = 1
        while timeout > 0 and arrival_ms - k * timeout >= previous_ms:
            sent = arrival_ms - k * timeout
            if sent < previous_ms + session:
                return sent
            k += 1
    return previous_ms


def infer_unlogged_joins(
    rows: Sequence[Mapping[str, Any]], last_answer: Mapping[str, int]
) -> list[dict[str, Any]]:
    """JoinGroups the broker held but never answered, so the log has no line for them.

    A client whose JoinGroup waits longer than its request timeout drops the connection and sends the
    JoinGroup again; the broker never answers the first. The log shows a member ``M`` answered at ``P``
    (a heartbeat told to rebalance, a ``MEMBER_ID_REQUIRED`` handing out its id, …), then silence, then a
    JoinGroup from ``M`` arriving at ``R`` that the broker accepted as ``M``'s — so ``M`` was kept alive
    meanwhile, which only a parked JoinGroup does. The inferred JoinGroup arrives when the client sent
    the first one (:func:`unlogged_join_sent`). ``rows``: one group's rows in replay order;
    ``last_answer``: member id → the completion time of its last request replayed before ``rows``.
    """
    seen = dict(last_answer)
    inferred: list[dict[str, Any]] = []
    for row in rows:
        member = row.get("member_id")
        api = int(row["api_key"])
        if member and api == ApiKey.JOIN_GROUP and row.get("error_name") == "NONE":
            previous = seen.get(member)
            rebalance_timeout = row.get("rebalance_timeout_ms") or row.get("session_timeout_ms") or 0
            session = int(row.get("session_timeout_ms") or 0)
            first_sent = (
                None
                if previous is None
                else unlogged_join_sent(int(row["arrival_ms"]), previous, int(rebalance_timeout), session)
            )
            if first_sent is not None:
                inferred.append(
                    {
                        **row,
                        "source_file": INFERRED_SOURCE,
                        "line_no": -int(row["line_no"]),
                        "arrival_ms": first_sent,
                        "completion_ms": None,
                        "correlation_id": (row.get("correlation_id") or 0) - 1,
                        "error_name": None,
                        "response_generation_id": None,
                        "response_leader": None,
                        "response_member_id": None,
                        "response_protocol_name": None,
                        "response_protocol_type": None,
                        "response_skip_assignment": None,
                        "response_members": None,
                    }
                )
        done = row.get("completion_ms")
        if done is not None:
            for m in (member, row.get("response_member_id")):
                if m:
                    seen[m] = int(done)
    return inferred


#: Answers a coordinator gives a request from no member of the group, whether the group exists or not.
_STRANGER_ERRORS = frozenset({"UNKNOWN_MEMBER_ID", "GROUP_ID_NOT_FOUND"})


def _rejected_as_stranger(row: Mapping[str, Any], joined: set[str]) -> bool:
    """A SyncGroup/Heartbeat/LeaveGroup/OffsetCommit turned away as not from a member, or an offset
    commit outside any generation: it says nothing about whether the group was live (unlike an accepted
    one, or REBALANCE_IN_PROGRESS / ILLEGAL_GENERATION, which name a member)."""
    api = int(row["api_key"])
    error = row.get("error_name")
    generation = row.get("generation_id")
    if api == ApiKey.OFFSET_COMMIT and generation is not None and generation < 0:
        return True  # a "simple" commit (no generation): any client may make one, member or not
    if api == ApiKey.OFFSET_COMMIT:
        errors = [p.get("error_name") for p in row.get("response_commit_partitions") or ()] or [error]
        if all(e == "ILLEGAL_GENERATION" for e in errors) and row.get("member_id") not in joined:
            return True  # a commit to a group that does not exist (before v9) from no member of ours
    elif api == ApiKey.LEAVE_GROUP and error == "NONE":
        errors = [m.get("error_name") for m in row.get("response_leave_members") or ()] or ["NONE"]
    elif api == ApiKey.SYNC_GROUP and error == "INCONSISTENT_GROUP_PROTOCOL":
        return True  # checked before the member: any group with another protocol answers it
    else:
        errors = [error]
    return all(e in _STRANGER_ERRORS for e in errors)


def _leave_of(row: Mapping[str, Any], joined: set[str]) -> bool:
    """A LeaveGroup of members whose ids the log itself handed out (joiners leaving again)."""
    if int(row["api_key"]) != ApiKey.LEAVE_GROUP:
        return False
    leaving = [m.get("member_id") for m in row.get("leave_members") or ()] or [row.get("member_id")]
    return all(m in joined for m in leaving)


def _current_id(group: ClassicGroup, member_id: str) -> str:
    """The id a member has now: a static member's later id (``instanceId-UUID``, Kafka's format) names
    the same member as the id its instance has in the group now (it is re-keyed when replaced)."""
    if member_id in group.members or len(member_id) < 38 or member_id[-37] != "-":
        return member_id
    try:
        uuid.UUID(member_id[-36:])
    except ValueError:
        return member_id
    return group.static_members.get(member_id[:-37], member_id)


def born_in_log(rows: Sequence[Mapping[str, Any]]) -> str | None:
    """Why the log proves the group was born inside it, or None. ``rows``: the group's first rows, in
    replay order.

    Proof: the leader's answer to the first join phase — a JoinGroup answered with generation 1 (Kafka's
    first generation of a group that did not exist, or was Empty at generation 0) and the complete member
    list — and every listed member's JoinGroup is in the log before that answer, with nothing else before
    it but requests turned away as not from a member (an accepted Heartbeat, SyncGroup, OffsetCommit or
    LeaveGroup, or one told to rebalance, would come from a live group). A static member
    replaced in a live group at generation 1 is answered generation 1 too, but its member list names
    members whose JoinGroups the log does not have.
    """
    joined: set[str] = set()
    for row in rows:
        if int(row["api_key"]) != ApiKey.JOIN_GROUP:
            if _rejected_as_stranger(row, joined) or _leave_of(row, joined):
                continue
            return None
        for m in (row.get("member_id"), row.get("response_member_id")):
            if m:
                joined.add(m)
        members = row.get("response_members")
        if row.get("error_name") != "NONE" or not members:
            continue
        # when the coordinator answered (the line's time less its network-thread time: a 50-member answer
        # took a real 4.4 broker 32 ms to send, and members it had answered first sent SyncGroups meanwhile)
        answered = answered_ms(row)
        done = row.get("completion_ms") if answered is None else answered
        if row.get("response_generation_id") != 1 or done is None:
            return None
        listed = {m.get("member_id") or "" for m in members}
        before = [r for r in rows if r["arrival_ms"] < done]
        handed = {
            m
            for r in before
            if int(r["api_key"]) == ApiKey.JOIN_GROUP
            for m in (r.get("member_id"), r.get("response_member_id"))
            if m
        }
        if (
            all(
                int(r["api_key"]) == ApiKey.JOIN_GROUP
                or _rejected_as_stranger(r, handed)
                or _leave_of(r, handed)
                for r in before
            )
            and listed <= handed
        ):
            return f"the log shows the group's birth: its first join phase answered generation 1 at {done}"
        return None
    return None


_MEMBERSHIP_APIS = frozenset({int(ApiKey.JOIN_GROUP), int(ApiKey.SYNC_GROUP), int(ApiKey.LEAVE_GROUP)})


def lookahead_rows(
    tie: Sequence[Mapping[str, Any]], following: Sequence[Mapping[str, Any]]
) -> tuple[list[Mapping[str, Any]], int | None]:
    """The rows after a tie set that score its orders (:class:`_TieTrial`), and until when the model's
    timers may run after them. ``following``: the group's next rows in replay order (as many as the
    lookahead may take).

    The orders of a tie differ in the answers still to come: those of its own requests held in a join
    phase, and those of the group's next JoinGroups, SyncGroups and LeaveGroups. The lookahead takes the
    rows up to when the last of these was logged (the tie's, then those of the rows taken), and at least
    up to the group's next such request. When a later row shows that nothing before then is missing, the
    timers run to just past it (the held answers come out); else no further than the last row taken."""
    horizon = max(
        int(r["completion_ms"] if r.get("completion_ms") is not None else r["arrival_ms"]) for r in tie
    )
    taken: list[Mapping[str, Any]] = []
    membership = False
    for row in following:
        if int(row["arrival_ms"]) > horizon and membership:
            return taken, horizon + 1
        taken.append(row)
        if int(row["api_key"]) in _MEMBERSHIP_APIS:
            membership = True
            if row.get("completion_ms") is not None:
                horizon = max(horizon, int(row["completion_ms"]))
    return taken, (int(taken[-1]["arrival_ms"]) if taken else None)


def _plain_handle(model: GroupCoordinatorModel, request: GroupRequest) -> None:
    model.handle(request)


class _TieTrial:
    """The replayer's :class:`~rebalance_replay.transforms.ordering.Trial`: a tie set's requests tried on
    copies of the model, scored against the observed answers (a disagreement weighs 2, an answer time
    the order's join timer does not explain 1).

    A whole order is also scored on what follows it (*lookahead*): the group's next requests (``after``, in
    replay order: :func:`lookahead_rows`) are handled on the copy, its timers run to ``lookahead_until``,
    and their disagreements count too. An order that explains the tie's own answers but leaves the group in
    a state later answers contradict (a KIP-394 pending member taken into a join phase that two LeaveGroups
    emptied before it ended) loses to one that explains both."""

    def __init__(
        self,
        model: GroupCoordinatorModel,
        requests: list[GroupRequest],
        tolerance: int,
        after: Sequence[GroupRequest] = (),
        lookahead_until: int | None = None,
        handle: Callable[[GroupCoordinatorModel, GroupRequest], None] | None = None,
    ) -> None:
        self.model = model
        self.requests = requests
        self.tolerance = tolerance
        self.t = requests[0].arrival_ms
        self.handle: Callable[[GroupCoordinatorModel, GroupRequest], None] = handle or _plain_handle
        self.after = after
        #: how far the lookahead lets the copy's timers run (None: not past the last request fed)
        self.lookahead_until = lookahead_until
        # the tie's JoinGroups the broker accepted and answered after this instant (order-independent)
        parked = [
            r.observed
            for r in requests
            if r.api is ApiKey.JOIN_GROUP
            and r.observed is not None
            and r.observed.error == "NONE"
            and r.observed.completion_ms is not None
            and r.observed.completion_ms > self.t
        ]
        self.answered_later = [obs.completion_ms for obs in parked if obs.completion_ms is not None]
        # the leader each generation the tie's parked JoinGroups were answered with names (the first
        # member to join that join phase, or the previous leader when it rejoined)
        leaders: dict[int, set[str]] = {}
        for obs in parked:
            if obs.leader and obs.generation_id is not None:
                leaders.setdefault(obs.generation_id, set()).add(obs.leader)
        self.leaders = {g: next(iter(ls)) for g, ls in leaders.items() if len(ls) == 1}
        # the member list of each such generation, in Kafka's order (its HashMap's: members that share a
        # bucket are listed in the order they joined)
        self.member_lists = {
            obs.generation_id: obs.members for obs in parked if obs.members and obs.generation_id is not None
        }
        #: the lookahead's last instant: a timer due later fires in no order the lookahead sees
        self.horizon = max([self.t, *(r.arrival_ms for r in after), lookahead_until or self.t])
        #: orders played by :meth:`outcome` and not used since (a model run for an order is used up by
        #: the lookahead: taken once)
        self._kept: dict[tuple[int, ...], tuple[GroupCoordinatorModel, list[Prediction]]] = {}

    def refused_at_once(self) -> list[int]:
        """The tie's requests the broker answered at once with an error."""
        return [
            i
            for i, r in enumerate(self.requests)
            if r.observed is not None
            and r.observed.error not in (None, "NONE")
            and r.observed.completion_ms is not None
            and r.observed.completion_ms <= self.t
        ]

    # -- ordering.Trial ------------------------------------------------------------------------------
    def root(self) -> GroupCoordinatorModel:
        return self.model.fork()

    def place(self, node: GroupCoordinatorModel, i: int) -> tuple[GroupCoordinatorModel, int, int]:
        child = node.fork()
        child.handle(self.requests[i])
        predictions, _ = child.drain()
        return child, self._disagreements(predictions), self._provisional(child)

    def close(self, node: GroupCoordinatorModel) -> tuple[int, Hashable]:
        score = 2 * self._provisional(node) + self._deadline(node)
        end = self._answers_depend_on(node)
        if self.after or self.lookahead_until is not None:
            score += self._lookahead(node)[0]
        return score, end

    def key(self, node: GroupCoordinatorModel) -> Hashable:
        return node.fingerprint()

    def run(self, order: Sequence[int]) -> tuple[int, Hashable]:
        return self._scored(*self._played(order))

    def run_unless(self, order: Sequence[int], end: Hashable) -> tuple[int, Hashable] | None:
        model, predictions = self._played(order)
        if self._answers_depend_on(model) == end:
            return None  # the lookahead (most of a run's cost) not run
        return self._scored(model, predictions)

    def _scored(self, model: GroupCoordinatorModel, predictions: list[Prediction]) -> tuple[int, Hashable]:
        """A whole order's disagreements (its answers, then :meth:`close`'s) and its end fingerprint."""
        extra, end = self.close(model)
        return self._disagreements(predictions) + extra, end

    def outcome(self, order: Sequence[int]) -> object:
        model, predictions = self._played(order)
        self._kept[tuple(order)] = model, predictions  # for run, when the outcomes differ
        # each request's answer (in whatever order the model gave them: the order of the output rows is
        # the real replay's, which plays the chosen order again)
        by_request = {p.request.ref: (p.response, p.reconciled) for p in predictions}
        answers: object = by_request
        if None in by_request or len(by_request) != len(predictions):  # not one answer a logged request
            answers = [(p.request.ref, p.response, p.reconciled) for p in predictions]
        return (
            answers,
            2 * self._provisional(model) + self._deadline(model),
            model.settled_state(self.horizon),
        )

    def _played(self, order: Sequence[int]) -> tuple[GroupCoordinatorModel, list[Prediction]]:
        """A copy of the model after the tie's requests in ``order``, and the answers it gave them."""
        kept = self._kept.pop(tuple(order), None)
        if kept is not None:
            return kept
        model = self.model.fork()
        for i in order:
            model.handle(self.requests[i])
        predictions, _ = model.drain()
        return model, predictions

    @staticmethod
    def _answers_depend_on(model: GroupCoordinatorModel) -> Hashable:
        """What the answers still to come depend on (two explaining orders that agree on it are not
        ambiguous): the group's state, generation, protocol, leader, members in Kafka's order with what
        each awaits, and when the join phase ends by its timer."""
        group = model.group
        if group is None:
            return None
        return (
            group.state,
            group.generation_id,
            group.protocol_name,
            group.leader_id,
            tuple(
                (m.member_id, m.awaiting_join is not None, m.awaiting_sync is not None)
                for m in group.ordered_members()
            ),
            model.join_deadline_ms(),
        )

    # -- scoring -------------------------------------------------------------------------------------
    def _lookahead(
        self, model: GroupCoordinatorModel
    ) -> tuple[int, dict[tuple[str, int] | None, PredictedResponse], set[tuple[str, int]]]:
        """The disagreements of the requests that follow the tie, run on ``model`` (the state after an order
        of the tie, used up: no caller reads it afterwards), up to when the last of the tie's answers was
        logged; the answers predicted meanwhile (request ref → response); and the requests still held
        then."""
        for request in self.after:
            self.handle(model, request)
        until = self.lookahead_until
        if until is not None and until > (model.now_ms or self.t):
            model.advance_to(until)
        predictions, _ = model.drain()
        bad = self._disagreements(predictions)
        held: set[tuple[str, int]] = set()
        group = model.group
        if group is not None:
            for member in group.members.values():
                for call in (member.awaiting_join, member.awaiting_sync):
                    if call is None or call.emitted or call.request.ref is None:
                        continue
                    held.add(call.request.ref)
                    logged = None if call.request.observed is None else call.request.observed.completion_ms
                    if until is not None and logged is not None and logged + self.tolerance < until:
                        bad += 2  # held by the model although the broker had answered it by then
        return bad, {p.request.ref: p.response for p in predictions}, held

    def differing(self, order: Sequence[int], other: Sequence[int]) -> list[int]:
        """The requests (indexes) whose answers differ between two orders (the tie's, then the
        lookahead's), or are still to come after it in either (then they depend on the state the order
        left)."""
        answers = []
        held: set[tuple[str, int]] = set()
        for o in (order, other):
            model, predictions = self._played(o)
            _, later, still = self._lookahead(model)
            answers.append({**{p.request.ref: p.response for p in predictions}, **later})
            held |= still
        first, second = answers
        return [
            i for i, r in enumerate(self.requests) if r.ref in held or first.get(r.ref) != second.get(r.ref)
        ]

    def _disagreements(self, predictions: Sequence[Prediction]) -> int:
        bad = 0
        for p in predictions:
            obs = p.request.observed
            if p.reconciled or (  # track mode: the model had to be corrected to the observed answer
                obs is not None
                and compare(p.request, obs, p.response, completion_tolerance_ms=self.tolerance).mismatches
            ):
                bad += 2
        return bad

    def _provisional(self, model: GroupCoordinatorModel) -> int:
        """Requests held by the model although the broker had answered them in this instant, a join phase
        led by a member the log's answers do not name (a leader that has joined it stays leader), and its
        members in an order its answers do not show."""
        group = model.group
        if group is None:
            return 0
        bad = 0
        for member in group.members.values():
            for call in (member.awaiting_join, member.awaiting_sync):
                if call is None or call.emitted or call.request.observed is None:
                    continue
                done = call.request.observed.completion_ms
                if done is not None and done <= self.t:
                    bad += 1
        if group.state is GroupState.PREPARING_REBALANCE and group.leader_id is not None:
            expected = self.leaders.get(next_generation(group.generation_id))
            leader = group.members.get(group.leader_id)
            if (
                expected is not None
                and leader is not None
                and leader.awaiting_join is not None
                and group.leader_id != _current_id(group, expected)
            ):
                bad += 1
            bad += self._member_order(group)
        return bad

    def _member_order(self, group: ClassicGroup) -> int:
        """1 when the members of the join phase in progress joined in an order the later answer's member
        list contradicts: Kafka lists members by their slot in its HashMap (``hash_slot``), and the members
        of one slot in the order they joined — so in each slot, the members in the group must be the first
        ones listed."""
        listed = self.member_lists.get(next_generation(group.generation_id))
        if listed is None:
            return 0
        ids = [_current_id(group, m) for m in listed]
        peak = max(group.peak_size, len(ids))
        shown: dict[tuple[int, int], list[str]] = {}
        for m in ids:
            shown.setdefault(hash_slot(m, group.map_layout, peak), []).append(m)
        wanted = set(ids)
        joined: dict[tuple[int, int], list[str]] = {}
        for m in group.members:
            if m in wanted:
                joined.setdefault(hash_slot(m, group.map_layout, peak), []).append(m)
        return int(any(members != shown[b][: len(members)] for b, members in joined.items()))

    def _deadline(self, model: GroupCoordinatorModel) -> int:
        """When the tie's parked JoinGroups were answered bounds the join phase the order started: the
        broker cannot have answered later than the join timer the model armed (a timer that ends exactly
        when the broker answered is the likeliest explanation)."""
        bounds = model.join_deadline_ms()
        if bounds is None or not self.answered_later:
            return 0
        deadline, latest = bounds
        tolerance = self.tolerance
        if any(done > latest + tolerance for done in self.answered_later):
            return 2  # answered after the join timer the order armed: impossible
        if all(not deadline - tolerance <= done <= latest + tolerance for done in self.answered_later):
            return 1  # not explained by the timer (all members joining may still be)
        return 0


#: how many requests after a timer's deadline the replay may find that the broker's timer fired after
#: (:meth:`GroupReplayer._handle`); a copy of the model is tried per request while it looks
HELD_REQUESTS_MAX = 4


@dataclass
class _Held:
    """A timer due just before a request the model handled with the timer on time, kept to try again with
    the timer late past that request and the next ones (:meth:`GroupReplayer._handle`)."""

    model: GroupCoordinatorModel  # a fork from before the first request, the timer not fired
    marks: tuple[int, int]  # the model's undrained outputs then (GroupCoordinatorModel.output_marks)
    due: int  # the timer's deadline
    requests: list[GroupRequest]  # handled since, in order


class GroupReplayer:
    """Replays one group; see the module docstring."""

    def __init__(self, group_id: str, settings: ReplaySettings) -> None:
        self.group_id = group_id
        self.settings = settings
        self.model = GroupCoordinatorModel(group_id, settings.coordinator)
        self.tracker = RebalanceTracker(
            group_id,
            cooperative_protocols=settings.cooperative_protocols,
            follow_up_window_ms=settings.follow_up_window_ms,
        )
        self.buffer: list[Mapping[str, Any]] = []  # landed, not yet replayed (arrival ≥ horizon)
        self.pending: list[pa.Table] = []  # the same, fed as columns (feed_table)
        # request_key → broker id, for requests whose prediction is still to come
        self.brokers: dict[str, str] = {}
        self.horizon_ms: int | None = None  # everything before it has been replayed
        self.late: set[str] = set()  # request_key of late requests whose prediction is still to come
        # request_key of requests whose answer depends on an order of their tie set the log leaves open
        self.ambiguous: set[str] = set()
        self.replayed = 0
        self.kip848 = False  # the group speaks ConsumerGroupHeartbeat: not a classic group
        #: why the group is no longer replayed (it outgrew ``settings.max_group_members``), in one line
        self.refused: str | None = None
        self.serving_broker: str | None = None  # the broker answering the group's requests (its coordinator)
        # the broker clock's resolution, told from the logged completion times (see clock_resolution_ms)
        self.clock_samples = 0
        self.last_answer: dict[str, int] = {}  # member id → completion time of its last request
        self.clock_divisor = CLOCK_DIVISORS[0]
        self._held: _Held | None = None  # not saved: dropped when the model's outputs are drained
        # id(row) → (row, its request) for rows a tie's trial made requests of, until they are replayed
        # (within one process call)
        self._made: dict[int, tuple[Mapping[str, Any], GroupRequest]] = {}

    # -- feeding ------------------------------------------------------------------------------------
    def feed(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Buffer a group's rows (any order; those of other APIs are ignored). Rows are kept, not copied."""
        done: list[int] = []
        for row in rows:
            api = row.get("api_key")
            if api is None:
                continue  # a tick: no request, just "replay up to the horizon"
            if int(api) == ApiKey.CONSUMER_GROUP_HEARTBEAT:
                self.kip848 = True
            if int(api) in STATE_CHANGING_APIS:
                if row.get("completion_ms") is not None:
                    done.append(int(row["completion_ms"]))
                self.buffer.append(row)  # trimmed to REPLAY_COLUMNS only when the state is serialised
        self._sample_clock(np.asarray(done, dtype=np.int64))

    def feed_table(self, table: pa.Table) -> None:
        """Buffer a group's rows given as Arrow columns (at least ``REPLAY_COLUMNS``; rows without an
        ``api_key`` are ticks and those of other APIs are ignored, as in :meth:`feed`). With
        ``settings.bulk`` they stay columns (a call of at least ``settings.bulk_min_rows`` rows), and
        :meth:`process` validates routine runs of heartbeats in bulk; else they become rows for
        :meth:`feed`."""
        if not self.takes_columns(table.num_rows):
            self.feed(table.to_pylist())
            return
        api = table.column("api_key")
        if pc.any(pc.equal(api, int(ApiKey.CONSUMER_GROUP_HEARTBEAT))).as_py():
            self.kip848 = True
        rows = table.filter(pc.fill_null(pc.is_in(api, value_set=_STATE_CHANGING.cast(api.type)), False))
        if rows.num_rows == 0:
            return
        rows = rows.select(list(REPLAY_COLUMNS)).cast(REPLAY_SCHEMA)
        self._sample_clock(rows.column("completion_ms").drop_null().to_numpy())
        self.pending.append(rows)

    def takes_columns(self, n_rows: int) -> bool:
        """Whether :meth:`feed_table` keeps a call of ``n_rows`` rows as columns (else it makes them rows
        for :meth:`feed`)."""
        return self.settings.bulk and n_rows >= self.settings.bulk_min_rows

    def _sample_clock(self, done: np.ndarray) -> None:
        """Logged completion times seen: the clock's resolution is the coarsest divisor of them all."""
        self.clock_samples += len(done)
        while self.clock_divisor > 1 and bool(np.any(done % self.clock_divisor)):
            self.clock_divisor = next(d for d in CLOCK_DIVISORS if d < self.clock_divisor)

    @property
    def completion_tolerance_ms(self) -> int:
        """The configured tolerance, widened to the broker clock's resolution when the log shows a coarse
        clock (every logged time a multiple of 10/100/1000 ms over at least ``CLOCK_MIN_SAMPLES`` lines):
        a time read off a clock ticking every R ms is off by up to R."""
        resolution = self.clock_divisor if self.clock_samples >= CLOCK_MIN_SAMPLES else 1
        return max(self.settings.completion_tolerance_ms, resolution)

    # -- replaying ----------------------------------------------------------------------------------
    def process(self, until_ms: int) -> ReplayOutput:
        """Replay buffered requests that arrived before ``until_ms`` and run timers up to it."""
        out = ReplayOutput()
        if self.kip848 or self.refused:
            # reported by the job (a KIP-848 group: the classic model does not apply; a refused group)
            self.buffer.clear()
            self.pending.clear()
            return out
        self.model.set_clock_resolution(self.completion_tolerance_ms)
        table: pa.Table | None = None
        blocks: Sequence[list[Mapping[str, Any]] | bulk.RunSummary]
        if self.pending:
            table, blocks = self._ready_columns(until_ms)
        else:
            blocks = self._ready_rows(until_ms)
        for block in blocks:
            if self.refused:
                break
            if isinstance(block, bulk.RunSummary):
                assert table is not None
                self._replay_run(table, block, out)
                continue
            end = 0
            for tie in tie_sets(block):
                if self.refused:
                    break
                end += len(tie)
                if (
                    len(tie) > 1
                    and not is_routine(tie)
                    and (self.horizon_ms is None or tie[0]["arrival_ms"] >= self.horizon_ms)
                ):
                    ahead = self.settings.order_search_lookahead_max
                    # one row more than the lookahead may take: it shows whether anything was left out
                    tie = self._order_tie(tie, block[end : end + ahead + 1] if ahead else ())
                self._replay_rows(tie, out)
        if self.refused:
            self._collect(out)  # what the model answered before the group outgrew the limit
            self._drop()
            return out
        self._made.clear()
        if self.horizon_ms is None or until_ms > self.horizon_ms:
            self.model.advance_to(until_ms)
            self.horizon_ms = until_ms
        self._collect(out)
        return out

    def _request(self, row: Mapping[str, Any]) -> GroupRequest:
        """``request_from_row(row)``, made once for a row a tie's trial handled (its own and the lookahead's:
        the same rows are replayed after it)."""
        made = self._made.get(id(row))  # the entry keeps its row alive: no other row has that id
        if made is not None:
            return made[1]
        request = request_from_row(row)
        self._made[id(row)] = (row, request)
        return request

    def _outgrown(self, at_ms: int) -> bool:
        """Whether the group has just outgrown ``settings.max_group_members`` (members and pending members
        at once): then it is refused. The replay's cost per request grows with the group (a request a
        broker's late timer thread may have answered is tried on a copy of the model), so a
        member-id-required storm of thousands of joiners a second would hold a worker for hours."""
        limit = self.settings.max_group_members
        group = self.model.group
        if not limit or group is None:
            return False
        members, pending = len(group.members), len(group.pending_members)
        if members + pending <= limit:
            return False
        self.refused = (
            f"{members + pending:,} members at once at {fmt_time(at_ms)} ({members:,} joined, {pending:,} "
            f"given a member id and not back), more than replay.max_group_members {limit:,}: not replayed "
            "from then on"
        )
        return True

    def _drop(self) -> None:
        """Forget a refused group's replay state (rows, model, tracker): its state stays a few bytes."""
        self.buffer, self.pending = [], []
        self._made.clear()
        self.brokers.clear()
        self.late.clear()
        self.ambiguous.clear()
        self.last_answer.clear()
        self.model = GroupCoordinatorModel(self.group_id, self.settings.coordinator)
        self.tracker = RebalanceTracker(
            self.group_id,
            cooperative_protocols=self.settings.cooperative_protocols,
            follow_up_window_ms=self.settings.follow_up_window_ms,
        )

    def _ready_rows(self, until_ms: int) -> list[list[Mapping[str, Any]]]:
        """The buffered rows that arrived before ``until_ms``, in replay order with the inferred JoinGroups,
        as one block (the answer bookkeeping and the birth check done)."""
        # the lines' own order per connection first, then the causal mends, then no mend may put a
        # request before its connection's previous one (only when a mend moved one: the lowered
        # arrivals are in connection order already)
        ordered = connection_ordered_rows(self.buffer)
        mended = leader_first_arrivals_rows(ordered, self.settings.broker_lag_ms)
        self.buffer = mended if mended is ordered else connection_ordered_rows(mended, lower=False)
        self.buffer.sort(key=sort_key)
        cut = 0
        while cut < len(self.buffer) and self.buffer[cut]["arrival_ms"] < until_ms:
            cut += 1
        ready, self.buffer = self.buffer[:cut], self.buffer[cut:]
        unlogged = infer_unlogged_joins(ready, self.last_answer)
        if unlogged:
            ready = sorted([*ready, *unlogged], key=sort_key)
        self._remember_answers(ready, until_ms)
        if self.replayed == 0 and ready:
            self._check_birth(ready)
        return [ready]

    def _check_birth(self, first_rows: Sequence[Mapping[str, Any]]) -> None:
        birth = born_in_log(first_rows)
        if birth is not None:
            self.model.assume_born(birth)

    def _ready_columns(
        self, until_ms: int
    ) -> tuple[pa.Table, list[list[Mapping[str, Any]] | bulk.RunSummary]]:
        """:meth:`_ready_rows` for rows fed as columns: blocks of rows (dicts) and runs of routine
        heartbeats (:class:`~rebalance_replay.transforms.bulk.RunSummary`), in replay order. The answer
        bookkeeping, the inferred JoinGroups and the birth check see each run as its members' last
        answers, which is all they read of it."""
        tables = self.pending
        if self.buffer:
            tables = [pa.Table.from_pylist(self.buffer, schema=REPLAY_SCHEMA), *tables]
        table = pa.concat_tables(tables)
        ordered = connection_ordered(table)  # as above
        mended = leader_first_arrivals(ordered, self.settings.broker_lag_ms)
        table = bulk.sort_rows(mended if mended is ordered else connection_ordered(mended, lower=False))
        arrival = table.column("arrival_ms").to_numpy()
        cut = int(np.searchsorted(arrival, until_ms, side="left"))
        ready, rest = table.slice(0, cut), table.slice(cut)
        self.buffer, self.pending = [], ([rest] if rest.num_rows else [])
        blocks = self._blocks(ready, bulk.candidates(ready, self.horizon_ms), (), [])
        unlogged = infer_unlogged_joins(self._answer_rows(blocks), self.last_answer)
        if unlogged:
            moments = [int(r["arrival_ms"]) for r in unlogged]
            breaks = np.searchsorted(arrival[:cut], moments, side="left").tolist()
            blocks = self._blocks(ready, bulk.candidates(ready, self.horizon_ms, moments), breaks, unlogged)
        self._remember_answers(self._answer_rows(blocks), until_ms)
        if self.replayed == 0 and cut:
            first: list[Mapping[str, Any]] = []
            for block in blocks:  # up to the first heartbeat of a run: born_in_log stops there
                if isinstance(block, bulk.RunSummary):
                    first.extend(ready.slice(block.start, 1).to_pylist())
                    break
                first.extend(block)
            self._check_birth(first)
        return ready, blocks

    @staticmethod
    def _blocks(
        ready: pa.Table, mask: np.ndarray, breaks: Sequence[int], extra: Sequence[Mapping[str, Any]]
    ) -> list[list[Mapping[str, Any]] | bulk.RunSummary]:
        found = bulk.runs(mask, breaks)
        in_run = np.zeros(ready.num_rows, dtype=bool)
        for a, b in found:
            in_run[a:b] = True
        rows: list[Mapping[str, Any]] = ready.take(np.flatnonzero(~in_run)).to_pylist()
        if extra:
            rows = sorted([*rows, *extra], key=sort_key)
        blocks: list[list[Mapping[str, Any]] | bulk.RunSummary] = []
        i = 0
        for a, b in found:
            summary = bulk.summarize(ready, a, b)
            j = i
            while j < len(rows) and rows[j]["arrival_ms"] < summary.model.first_ms:
                j += 1
            if j > i:
                blocks.append(rows[i:j])
            blocks.append(summary)
            i = j
        if i < len(rows):
            blocks.append(rows[i:])
        return blocks

    @staticmethod
    def _answer_rows(blocks: Sequence[list[Mapping[str, Any]] | bulk.RunSummary]) -> list[Mapping[str, Any]]:
        """The rows as the answer bookkeeping reads them: a run as one heartbeat per member, carrying its
        last answer time in the run."""
        rows: list[Mapping[str, Any]] = []
        for block in blocks:
            if isinstance(block, bulk.RunSummary):
                rows.extend(
                    {
                        "api_key": int(ApiKey.HEARTBEAT),
                        "member_id": m,
                        "completion_ms": done,
                        "error_name": "NONE",
                    }
                    for m, done in block.last_answers
                )
            else:
                rows.extend(block)
        return rows

    def _replay_run(self, table: pa.Table, run: bulk.RunSummary, out: ReplayOutput) -> None:
        """A run of routine heartbeats and commits: in bulk when the model takes it so; else, while the
        group is Stable (a timer firing inside the run: a member's session expiring), each half the same
        way; else one by one."""
        # a run answered by another broker than the group's coordinator so far goes row by row (_serving)
        brokers = pc.unique(table.column("broker_id").slice(run.start, run.end - run.start)).to_pylist()
        serving = self.serving_broker if self.serving_broker is not None else brokers[0]
        base = None if brokers != [serving] else self.model.bulk_heartbeats(run.model)
        if base is None:
            size = run.end - run.start
            if size >= 2 * bulk.MIN_RUN and self.model.state is GroupState.STABLE and self.model.confident:
                middle = run.start + size // 2
                self._replay_run(table, bulk.summarize(table, run.start, middle), out)
                self._replay_run(table, bulk.summarize(table, middle, run.end), out)
                return
            self._replay_rows(table.slice(run.start, size).to_pylist(), out)
            return
        self.serving_broker = serving
        generation = self.model.generation_id
        assert generation is not None
        self._drain_model(out)  # what came before the run reaches the tracker first
        self.tracker.consume_heartbeat_run(
            bulk.tracked(run, base, generation, self.model.emits_liveness_events, _host)
        )
        out.prediction_tables.append(bulk.liveness_predictions(table, run, base, generation))
        self.replayed += run.model.size
        out.replayed += run.model.size

    def _remember_answers(self, rows: Sequence[Mapping[str, Any]], until_ms: int) -> None:
        """Each member's last answer time (for infer_unlogged_joins in later calls); forgotten once it is
        older than any session timeout Kafka allows."""
        for row in rows:
            done = row.get("completion_ms")
            if done is None:
                continue
            for m in (row.get("member_id"), row.get("response_member_id")):
                if m:
                    self.last_answer[m] = int(done)
        stale = until_ms - MAX_SESSION_TIMEOUT_MS
        for m in [m for m, t in self.last_answer.items() if t < stale]:
            del self.last_answer[m]

    def _order_tie(
        self, tie: list[Mapping[str, Any]], following: Sequence[Mapping[str, Any]] = ()
    ) -> list[Mapping[str, Any]]:
        """Requests that arrived in the same instant, in the order that respects the log's constraints
        and agrees best with the observed responses (rebalance_replay.transforms.ordering), those of the
        tie and of the ``following`` rows (the group's next ones ready, in replay order: the lookahead of
        :class:`_TieTrial`). When another order explains the log as well but leads elsewhere, the
        requests whose answers differ between the two (or are still to come) are marked to be unscored
        (``AMBIGUOUS_ORDER_REASON``)."""
        requests = [self._request(row) for row in tie]
        taken, until = lookahead_rows(tie, following)
        after = [self._request(row) for row in taken]
        trial = _TieTrial(self.model, requests, self.completion_tolerance_ms, after, until, self._handle_on)
        choice = search_order(
            predecessors(tie, () if self.model.group is None else self.model.group.members),
            trial,
            exhaustive_max=self.settings.order_search_exhaustive_max,
            search_max=self.settings.order_search_max,
            first=trial.refused_at_once(),
        )
        if choice.alternative is not None:
            for i in trial.differing(choice.order, choice.alternative):
                self.ambiguous.add(
                    request_key(tie[i]["source_file"], tie[i]["line_no"], tie[i]["completion_ms"])
                )
        return [tie[i] for i in choice.order]

    def _replay_rows(self, rows: Iterable[Mapping[str, Any]], out: ReplayOutput) -> None:
        for row in rows:
            key = request_key(row["source_file"], row["line_no"], row["completion_ms"])
            made = self._made.pop(id(row), None) if self._made else None
            request = request_from_row(row) if made is None else made[1]
            if self.horizon_ms is not None and request.arrival_ms < self.horizon_ms:
                # landed after its time had been replayed (beyond replay.late_tolerance_ms): replayed now, at
                # the horizon it missed, and not scored
                out.late += 1
                self.late.add(key)
                request = replace(request, arrival_ms=self.horizon_ms)
            if row["source_file"] != INFERRED_SOURCE:
                self._serving(row.get("broker_id"), request)
            self._handle(request)
            if row["source_file"] == INFERRED_SOURCE:
                continue
            self.brokers[key] = row["broker_id"]
            self.replayed += 1
            out.replayed += 1
            if self._outgrown(request.arrival_ms):
                return

    def _serving(self, broker: str | None, request: GroupRequest) -> None:
        """Which broker coordinates the group: the one answering its requests normally. A change with no
        NOT_COORDINATOR seen is a coordinator that died; the model moves the group (``moved_silently``).
        A real 3.7 cluster whose coordinator was killed: the clients' next requests went to the new
        coordinator, which had loaded the group Stable with its members (tests/data/real-kafka)."""
        obs = request.observed
        if not broker or obs is None or obs.error is None or obs.error in EXTERNAL_ERROR_NAMES:
            return
        if self.serving_broker is not None and broker != self.serving_broker:
            self.model.moved_silently(
                f"its requests are answered by {broker} now, by {self.serving_broker} before"
            )
            self._held = None  # taken before the move: it cannot be replayed again without it
        self.serving_broker = broker

    def _handle(self, request: GroupRequest) -> None:
        """The model handles ``request`` (:meth:`_handle_on`), or, when the model does not explain the
        broker's answer to it and a timer was due at most ``broker_lag_ms`` before it, the model taken back
        to before the timer fired and the requests since handled again with the timer firing after them
        all — if that explains this answer and those since no worse. :meth:`_handle_on` tries a timer late
        past one request; a real 3.7 broker's initial-delay timer fired after two: due 38 ms before a
        MEMBER_ID_REQUIRED join (answered alike either way) and 41 ms before that member's join with its
        new id, which it took into the first extension (tests/data/real-kafka-found/3.7/single, group
        ``birth``). Not across :meth:`process` calls (the outputs are drained at the end of each)."""
        lag = self.settings.broker_lag_ms
        t = request.arrival_ms
        held = self._held
        if held is not None and (t - lag > held.due or len(held.requests) >= HELD_REQUESTS_MAX):
            held = self._held = None
        if held is not None and request.observed is not None:
            trial = self._held_trial(held, request)
            if trial is not None:
                self.model = trial
                self._held = None
                return
        if held is None:
            due = self._lagging_timer(self.model, request)
            if due is not None:
                held = self._held = _Held(self.model.fork(), self.model.output_marks(), due, [])
        self._handle_on(self.model, request)
        if held is not None:
            held.requests.append(request)

    def _held_trial(self, held: _Held, request: GroupRequest) -> GroupCoordinatorModel | None:
        """The model as it would be with ``held``'s timer firing after ``request``, when that explains
        ``request``'s answer and disagrees with fewer of the broker's answers than the model does (those of
        the requests since the timer fell due, and those the model gives up to ``request``'s answer)."""
        found, bad = self._outcome(self.model, request, None)
        if found and not bad:
            return None
        trial = held.model.fork()
        for r in held.requests:
            trial.handle(r, late_timers_from=held.due, hold=True)
        late_found, late_bad = self._outcome(trial, request, held.due)
        if late_found is not True:
            return None
        before = self._disagreeing(self.model.outputs_since(held.marks)) + bad + (found is None)
        if self._disagreeing(trial.outputs_since((0, 0))) + late_bad >= before:
            return None
        trial.handle(request, late_timers_from=held.due)
        trial.take_outputs_before(self.model, held.marks)
        return trial

    def _disagreeing(self, predictions: Sequence[Prediction]) -> int:
        """How many of ``predictions`` disagree with the broker's answers."""
        return sum(
            1 for p in predictions if p.request.observed is not None and self._judged(p.request, [p]) is False
        )

    def _handle_on(self, model: GroupCoordinatorModel, request: GroupRequest) -> None:
        """The model handles ``request``. A timer due within ``broker_lag_ms`` before it is taken as firing
        after it when only that explains the broker's answer: a broker's timer thread runs late by a few
        ms (a real 3.7 broker expired a session 4 ms after its deadline and answered a heartbeat that
        arrived in between as if the member were still there; tests/data/real-kafka)."""
        due = self._lagging_timer(model, request)
        if (
            due is not None
            and not self._explains(model, request, None)
            and self._explains(model, request, due)
        ):
            model.handle(request, late_timers_from=due)
            return
        model.handle(request)

    def _lagging_timer(self, model: GroupCoordinatorModel, request: GroupRequest) -> int | None:
        """The deadline of ``model``'s next timer when it fell due at most ``broker_lag_ms`` before
        ``request`` and the log gives the broker's answer to it (a timer the broker may have fired late)."""
        lag = self.settings.broker_lag_ms
        if not lag or request.observed is None:
            return None
        due = model.next_timer_deadline()
        t = request.arrival_ms
        return due if due is not None and t - lag <= due <= t else None

    def _explains(
        self, model: GroupCoordinatorModel, request: GroupRequest, late_timers_from: int | None
    ) -> bool | None:
        """Whether a copy of ``model`` answers ``request`` as the broker did (None: not answered by when
        the broker answered it, or not answered yet when the log gives no answer time). A request the
        model parks (a JoinGroup held until its join phase ends) is judged by the answer the copy gives
        when its timers have run to the broker's answer: a real 4.4 broker's initial-delay timer fired
        after a join 18 ms past its deadline, took that member into the first extension and ended the
        delay one extension early (tests/data/real-kafka-found/4.4/single, group ``birth``)."""
        return self._outcome(model, request, late_timers_from)[0]

    def _outcome(
        self, model: GroupCoordinatorModel, request: GroupRequest, late_timers_from: int | None
    ) -> tuple[bool | None, int]:
        """:meth:`_explains`, and how many of the answers a copy of ``model`` gives by then disagree with
        the broker's (``request``'s and those of requests it completes or contradicts)."""
        trial = model.fork()
        trial.handle(request, late_timers_from=late_timers_from)
        predictions, _ = trial.drain()
        obs = request.observed
        assert obs is not None
        found = self._judged(request, predictions)
        if found is None and obs.completion_ms is not None:
            until = obs.completion_ms + self.completion_tolerance_ms + self.settings.line_lag_ms
            if until > request.arrival_ms:
                trial.advance_to(until)
                later = trial.drain()[0]
                found = self._judged(request, later)
                predictions = predictions + later
        return found, self._disagreeing(predictions)

    def _judged(self, request: GroupRequest, predictions: Sequence[Prediction]) -> bool | None:
        """Whether the prediction of ``request`` among ``predictions`` agrees with its observed answer
        (None: not among them)."""
        obs = request.observed
        assert obs is not None
        for p in predictions:
            if p.request.ref == request.ref:
                return (
                    not p.reconciled
                    and not compare(
                        request,
                        obs,
                        p.response,
                        completion_tolerance_ms=self.completion_tolerance_ms,
                        broker_lag_ms=self.settings.broker_lag_ms,
                        line_lag_ms=self.settings.line_lag_ms,
                    ).mismatches
                )
        return None

    def finish(self) -> ReplayOutput:
        """Rows for rebalances and member sessions still open at the end of the log (batch replays)."""
        out = ReplayOutput()
        if self.kip848 or self.refused:
            return out
        flushed = self.tracker.flush_open()
        out.extend("rebalances", flushed.rebalances)
        out.extend("member_sessions", flushed.member_sessions)
        return out

    def _drain_model(self, out: ReplayOutput) -> None:
        self._held = None  # its marks count outputs drained now
        predictions, events = self.model.drain()
        predictions = [p for p in predictions if p.request.ref is None or p.request.ref[0] != INFERRED_SOURCE]
        self.tracker.consume(predictions, events)
        out.extend("predictions", [self._prediction_row(p) for p in predictions])

    def _collect(self, out: ReplayOutput) -> None:
        self._drain_model(out)
        tracked = self.tracker.drain()
        out.extend("transitions", tracked.transitions)
        out.extend("rebalances", tracked.rebalances)
        out.extend("member_sessions", tracked.member_sessions)

    def _prediction_row(self, p: Prediction) -> dict[str, Any]:
        source_file, line_no = p.request.ref or ("", 0)
        obs = p.request.observed
        key = request_key(source_file, line_no, None if obs is None else obs.completion_ms)
        saved = f"{source_file}:{line_no}"  # the key as a state saved before the time was part of it has it
        broker_id = self.brokers.pop(key, None) or self.brokers.pop(saved, "")
        if _take(self.late, key, saved):
            p = replace(p, scored=False, unscored_reason=LATE_REASON)
        if _take(self.ambiguous, key, saved) and p.scored:  # taken either way
            p = replace(p, scored=False, unscored_reason=AMBIGUOUS_ORDER_REASON)
        return prediction_row(
            p,
            completion_tolerance_ms=self.completion_tolerance_ms,
            broker_lag_ms=self.settings.broker_lag_ms,
            line_lag_ms=self.settings.line_lag_ms,
            broker_id=broker_id,
            source_file=source_file,
            line_no=line_no,
        )

    @property
    def has_pending_work(self) -> bool:
        """Rows still buffered, requests parked in the model, or coordinator timers still to run (a session
        that will expire even if the group never sends another request): the next run must call it."""
        return bool(self.buffer) or bool(self.pending) or bool(self.brokers) or bool(self.model.timer_keys())

    # -- state --------------------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        """Everything (model, tracker, buffer ...) as one document, framed and compressed once
        (:func:`~rebalance_replay.transforms.coordinator.codec.pack`)."""
        doc = {
            "group": self.group_id,
            "model": self.model.to_state(),
            "tracker": self.tracker.to_state(),
            "buffer": _ROWS.encode(
                [{c: row.get(c) for c in REPLAY_COLUMNS} for row in self.buffer]
                + [row for t in self.pending for row in t.to_pylist()]
            ),
            "brokers": self.brokers,
            "late": sorted(self.late),
            "ambiguous": sorted(self.ambiguous),
            "clock": [self.clock_samples, self.clock_divisor],
            "last_answer": self.last_answer,
            "horizon": self.horizon_ms,
            "replayed": self.replayed,
            "kip848": self.kip848,
            "refused": self.refused,
            "serving_broker": self.serving_broker,
        }
        return pack(_MAGIC, doc)

    @classmethod
    def from_bytes(cls, data: bytes, settings: ReplaySettings) -> GroupReplayer:
        doc = unpack(_MAGIC, data, "group replay state (a checkpoint)")
        r = cls(doc["group"], settings)
        r.model = GroupCoordinatorModel.from_state(doc["model"], settings.coordinator)
        r.tracker = RebalanceTracker.from_state(doc["tracker"])
        r.buffer = _ROWS.decode(doc["buffer"])
        r.brokers = doc["brokers"]
        r.late = set(doc["late"])
        r.ambiguous = set(doc.get("ambiguous", ()))  # absent from states saved before it was kept
        r.clock_samples, r.clock_divisor = doc["clock"]
        r.last_answer = doc["last_answer"]
        r.horizon_ms = doc["horizon"]
        r.replayed = doc["replayed"]
        r.kip848 = doc["kip848"]
        r.refused = doc.get("refused")  # absent from states saved before groups were refused
        r.serving_broker = doc.get("serving_broker")  # absent from states saved before it was kept
        return r
