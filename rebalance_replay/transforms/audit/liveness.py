"""Liveness rules: members that stop heartbeating, poll too slowly, restart too slowly, or leak.

Which rules are here: ``docs/audit-rules.md`` (generated from the registry, column "family").
"""

from __future__ import annotations

import math

from rebalance_replay.transforms.audit.base import (
    HEARTBEAT,
    JOIN_GROUP,
    LEAVE_GROUP,
    disputed_note,
    escalate,
    kept_by_broker,
    make_finding,
    member_names,
    member_requests,
    needs_version,
    rebalances_caused_by,
    session_timeout_of,
)
from rebalance_replay.transforms.audit.cadence import Cadence, member_cadences
from rebalance_replay.transforms.audit.config import (
    R02Settings,
    R03Settings,
    R04Settings,
    R06Settings,
    R11Settings,
    R12Settings,
    R15Settings,
    RuleSettings,
)
from rebalance_replay.transforms.audit.model import Finding, GroupInputs, Req, Session, seconds, span
from rebalance_replay.transforms.audit.registry import register
from rebalance_replay.transforms.report.units import plural

SESSION_EXPIRY = "session_expiry"


def _round_up(ms: float, step: int = 5_000) -> int:
    return int(math.ceil(ms / step) * step)


def _last_heartbeat_before(inputs: GroupInputs, member: str, t: int) -> Req | None:
    best = None
    for r in inputs.requests:
        if r.arrival_ms > t:
            break
        if r.member_id == member and r.api_name in (HEARTBEAT, JOIN_GROUP, "SYNC_GROUP", "OFFSET_COMMIT"):
            best = r
    return best


def _expired_sessions(inputs: GroupInputs) -> list[Session]:
    """Sessions the replay ended with a session expiry while the group still had traffic."""
    last_request = inputs.requests[-1].arrival_ms if inputs.requests else 0
    return [
        s
        for s in inputs.sessions
        if s.end_reason == SESSION_EXPIRY
        and s.ended_ms is not None
        # the whole group went silent (stopped, or its log ends): no one is left waiting on a
        # rebalance, and the log cannot tell a crash from a stop
        and s.ended_ms <= last_request
    ]


def _disputed_expiries(inputs: GroupInputs) -> list[tuple[Session, Req]]:
    """Session expiries the broker contradicts (:func:`kept_by_broker`): the session, the answer."""
    out = []
    for s in _expired_sessions(inputs):
        kept = kept_by_broker(inputs, s.member_id, s.ended_ms or 0)
        if kept is not None:
            out.append((s, kept))
    return out


def _expiries(
    inputs: GroupInputs, disputed: list[tuple[Session, Req]] | None = None
) -> list[tuple[Session, Req | None, str]]:
    """Every session-expiry eviction (while the group still had traffic) that the broker does not
    contradict (:func:`_disputed_expiries` are left out: the broker answered the member as a member
    afterwards; ``disputed``: those, when the caller has them) with the member's last request before
    it and its kind:
    ``dynamic``, ``static-stalled`` (the process was alive: the same member id speaks again, or the
    instance rejoins from the very process — the same connection — that held the evicted member, as a Java
    client does after a poll timeout: it forgets its member id but keeps its connection),
    ``static-restarted`` (the instance id rejoins from a new process), ``static-gone``."""
    out = []
    left_out = [s for s, _ in (_disputed_expiries(inputs) if disputed is None else disputed)]
    for s in _expired_sessions(inputs):
        if s in left_out or s.ended_ms is None:
            continue
        last = _last_heartbeat_before(inputs, s.member_id, s.ended_ms)
        kind = "dynamic"
        if s.group_instance_id:
            later = [r for r in inputs.requests if r.arrival_ms > s.ended_ms]
            rejoin = next(
                (r for r in later if r.api_name == JOIN_GROUP and r.group_instance_id == s.group_instance_id),
                None,
            )
            if any(r.member_id == s.member_id for r in later) or (
                rejoin is not None and rejoin.process == _process_before(inputs, s.member_id, s.ended_ms)
            ):
                kind = "static-stalled"
            elif rejoin is not None:
                kind = "static-restarted"
            else:
                kind = "static-gone"
        out.append((s, last, kind))
    return out


def _process_before(inputs: GroupInputs, member: str, t: int) -> str | None:
    """The process that sent ``member``'s last request at or before ``t`` (None: no request)."""
    before = [r for r in member_requests(inputs, member) if r.arrival_ms <= t]
    return before[-1].process if before else None


def _after(inputs: GroupInputs, member: str, t: int, limit: int = 3) -> list[Req]:
    return [r for r in member_requests(inputs, member) if r.arrival_ms > t][:limit]


def session_timeout_eviction(inputs: GroupInputs, st: R02Settings, cap: int) -> list[Finding]:
    disputed = _disputed_expiries(inputs)
    ev = [(s, last, k) for s, last, k in _expiries(inputs, disputed) if k in ("dynamic", "static-gone")]
    if not ev:
        return []  # also when every eviction the replay reports is disputed by the broker's answers
    members = [s.member_id for s, _, _ in ev]
    gaps = [s.ended_ms - (last.arrival_ms if last else s.joined_ms) for s, last, _ in ev if s.ended_ms]
    stos = [s.session_timeout_ms or 0 for s, _, _ in ev]
    rows: list[Req] = []
    for s, last, _ in ev:
        rows += ([last] if last else []) + _after(inputs, s.member_id, s.ended_ms or 0)
    seqs = rebalances_caused_by(inputs, members, ("session_expiry",))
    durations = [
        rb.total_duration_ms for rb in inputs.rebalances if rb.rebalance_seq in seqs and rb.total_duration_ms
    ]
    sizes = [len(set(rb.members_before)) for rb in inputs.rebalances if rb.rebalance_seq in seqs]
    names = member_names(inputs, members)
    n = len(ev)
    cost_text = (
        f"; each eviction cost a {span(durations)} rebalance of "
        f"{plural(max(sizes), 'member') if sizes else '? members'}"
        if durations
        else ""
    )
    alive_later = sum(1 for s, _, _ in ev if _after(inputs, s.member_id, s.ended_ms or 0))
    summary = (
        f"{'member' if len(names) == 1 else 'members'} {', '.join(names)} "
        f"{'was' if n == 1 else 'were'} evicted {n} time{'s' if n != 1 else ''} after "
        f"{span(gaps)} without a heartbeat (session.timeout.ms {span(stos)}, no LeaveGroup){cost_text}"
        f"{disputed_note(inputs, [(s.member_id, r) for s, r in disputed])}"
    )
    fix = (
        "find the pause source (crash, GC, network, a starved heartbeat thread) on "
        f"{', '.join(names)}; if pauses are expected raise session.timeout.ms to ≥ "
        f"{_round_up(max(gaps) * 1.5)} "
        f"(now {max(stos)}), and close consumers with close() so they send a LeaveGroup"
    )
    return [
        make_finding(
            inputs,
            st,
            cap,
            severity=escalate(
                st.severity, (n >= st.warning_evictions, "warning"), (n >= st.critical_evictions, "critical")
            ),
            confidence=1.0 if all(last for _, last, _ in ev) else 0.8,
            confidence_note="a member's last heartbeat is not in the log",
            members=members,
            evidence=rows,
            occurrences=n,
            summary=summary,
            fix=fix,
            metrics={
                "evictions": n,
                "max_gap_ms": max(gaps),
                "session_timeout_ms": max(stos),
                "members_alive_after_eviction": alive_later,
            },
            rebalance_seqs=seqs,
            window=(
                min((last.arrival_ms if last else s.joined_ms) for s, last, _ in ev),
                max(s.ended_ms or 0 for s, _, _ in ev),
            ),
        )
    ]


register("R02", "session-timeout-eviction", R02Settings)(session_timeout_eviction)


POLL_TIMEOUT = "poll timeout"


def _is_poll_timeout_leave(r: Req) -> bool:
    return r.api_name == LEAVE_GROUP and any(
        POLL_TIMEOUT in (reason or "").lower() for _, _, reason in r.leave_members
    )


def max_poll_interval_exceeded(inputs: GroupInputs, st: R03Settings, cap: int) -> list[Finding]:
    leaves = [r for r in inputs.requests if _is_poll_timeout_leave(r)]
    if not leaves:
        return []
    members = sorted({m for r in leaves for m, _, _ in r.leave_members if m})
    rows: list[Req] = list(leaves)
    for r in leaves:
        for m, _, _ in r.leave_members:
            if m:
                rows += [x for x in _after(inputs, m, r.arrival_ms) if x.errors]
        nxt = [
            x
            for x in inputs.requests
            if x.arrival_ms > r.arrival_ms and x.api_name == JOIN_GROUP and x.process == r.process
        ]
        rows += nxt[:1]
    rtos = [
        x.rebalance_timeout_ms
        for m in members
        for x in member_requests(inputs, m)
        if x.api_name == JOIN_GROUP and x.rebalance_timeout_ms
    ]
    rto = max(rtos) if rtos else None
    seqs = rebalances_caused_by(inputs, members, ("member_left",))
    n = len(leaves)
    names = member_names(inputs, members)
    summary = (
        f"{', '.join(names)} left the group {n} time{'s' if n != 1 else ''} with "
        f'"consumer poll timeout has expired": poll() was not called within max.poll.interval.ms'
        f" ({seconds(rto)}) while heartbeats continued, so its in-flight commits fail and it rejoins"
    )
    fix = (
        f"raise max.poll.interval.ms above the slowest batch (now {rto if rto else 'unknown'}; e.g. "
        f"{2 * rto if rto else 600000}) or lower max.poll.records, and move slow processing off the poll "
        "thread (pause()/resume())"
    )
    return [
        make_finding(
            inputs,
            st,
            cap,
            severity=escalate(st.severity, (n >= st.critical_occurrences, "critical")),
            confidence=1.0,
            members=members,
            evidence=rows,
            occurrences=n,
            summary=summary,
            fix=fix,
            metrics={"poll_timeouts": n, "max_poll_interval_ms": float(rto or 0)},
            rebalance_seqs=seqs,
        )
    ]


register(
    "R03",
    "max-poll-interval-exceeded",
    R03Settings,
    support=needs_version(LEAVE_GROUP, 5, "the client's leave reasons"),
)(max_poll_interval_exceeded)


def _static_eviction_findings(
    inputs: GroupInputs,
    st: RuleSettings,
    cap: int,
    kind: str,
    *,
    severity: str,
    confidence: float,
    note: str,
    summary_tail: str,
    fix: str,
    extra: dict[str, float],
) -> list[Finding]:
    ev = [e for e in _expiries(inputs) if e[2] == kind]
    if not ev:
        return []
    members = [s.member_id for s, _, _ in ev]
    gaps = [(s.ended_ms or 0) - (last.arrival_ms if last else s.joined_ms) for s, last, _ in ev]
    stos = [s.session_timeout_ms or 0 for s, _, _ in ev]
    rows: list[Req] = []
    ends: list[int] = []
    for s, last, _ in ev:
        rows += [last] if last else []
        later = [
            r
            for r in inputs.requests
            if r.arrival_ms > (s.ended_ms or 0)
            and (
                r.member_id == s.member_id
                or (r.api_name == JOIN_GROUP and r.group_instance_id == s.group_instance_id)
            )
        ][:2]
        rows += later
        ends.append(max([s.ended_ms or 0] + [r.arrival_ms for r in later]))
    seqs = [rb.rebalance_seq for rb in inputs.rebalances if set(members) & set(rb.evicted)]
    instances = sorted({s.group_instance_id or "" for s, _, _ in ev})
    seqs += [
        rb.rebalance_seq
        for rb in inputs.rebalances
        if rb.trigger in ("new_member", "static_member_replaced")
        and any(
            rb.started_ms >= (s.ended_ms or 0) and rb.started_ms <= e
            for (s, _, _), e in zip(ev, ends, strict=True)
        )
    ]
    n = len(ev)
    summary = (
        f"static member{'s' if len(instances) > 1 else ''} {', '.join(instances)}: evicted "
        f"{plural(n, 'time')} after {span(gaps)} without a heartbeat (session.timeout.ms {span(stos)}); "
        f"{summary_tail}"
    )
    return [
        make_finding(
            inputs,
            st,
            cap,
            severity=severity,
            confidence=confidence,
            confidence_note=note,
            members=members,
            evidence=rows,
            occurrences=n,
            summary=summary,
            fix=fix.format(gap=_round_up(max(gaps) * 1.2), sto=max(stos)),
            metrics={"evictions": n, "max_gap_ms": max(gaps), "session_timeout_ms": max(stos), **extra},
            rebalance_seqs=seqs,
            window=(min((last.arrival_ms if last else s.joined_ms) for s, last, _ in ev), max(ends)),
        )
    ]


def static_member_poll_timeout(inputs: GroupInputs, st: R04Settings, cap: int) -> list[Finding]:
    return _static_eviction_findings(
        inputs,
        st,
        cap,
        "static-stalled",
        severity=st.severity,
        confidence=0.8,
        note=(
            "a static member sends no LeaveGroup: the log cannot tell a stalled poll loop from a "
            "stalled heartbeat thread"
        ),
        summary_tail=(
            "the same process spoke again afterwards (with its old member id, or rejoining on the same "
            "connection), so it stalled rather than restarted"
        ),
        fix=(
            "lower max.poll.records or raise max.poll.interval.ms and move slow work off the poll "
            "thread; "
            "static members are detected only after session.timeout.ms ({sto}), so a stalled poll loop "
            "keeps its partitions idle that long"
        ),
        extra={},
    )


register("R04", "static-member-poll-timeout", R04Settings)(static_member_poll_timeout)


def static_restart_slow(inputs: GroupInputs, st: R11Settings, cap: int) -> list[Finding]:
    return _static_eviction_findings(
        inputs,
        st,
        cap,
        "static-restarted",
        severity=st.severity,
        confidence=0.9,
        note="the restart time is measured from the last heartbeat, not from the process stop",
        summary_tail=(
            "the instance rejoined with a new member id afterwards: the restart took longer than the "
            "session timeout, costing two rebalances instead of none"
        ),
        fix=(
            "raise session.timeout.ms above the p99 restart time (≥ {gap}; now {sto}) so a restart is a "
            "static replacement without a rebalance"
        ),
        extra={},
    )


register("R11", "static-restart-slower-than-session-timeout", R11Settings)(static_restart_slow)


def heartbeat_interval_near_timeout(inputs: GroupInputs, st: R06Settings, cap: int) -> list[Finding]:
    flagged: list[tuple[str, float, float, int, Cadence]] = []
    for member, c in sorted(member_cadences(inputs).items()):
        sto = session_timeout_of(inputs, member)
        if not sto or not c.n or c.n < st.min_heartbeats:
            continue
        med, p99 = c.quantile(0.5), c.quantile(0.99)
        if med > st.max_median_share * sto or p99 > st.max_p99_share * sto:
            flagged.append((member, med, p99, sto, c))
    if not flagged:
        return []
    rows: list[Req] = []
    for *_, c in flagged:
        for _, a, b in c.top:
            rows += [a, b]
    members = [m for m, *_ in flagged]
    med = max(f[1] for f in flagged)
    p99 = max(f[2] for f in flagged)
    sto = min(f[3] for f in flagged)
    names = member_names(inputs, members)
    first = min(c.first[1].arrival_ms for *_, c in flagged if c.first is not None)
    last = max(c.last[2].arrival_ms for *_, c in flagged if c.last is not None)
    if len(names) == 1:
        summary = (
            f"{names[0]} heartbeats every {seconds(med)} (median; p99 {seconds(p99)}) against a session "
            f"timeout of {seconds(sto)}: one or two late heartbeats evict the member"
        )
    else:
        summary = (
            f"members {', '.join(names)} heartbeat every {span([f[1] for f in flagged])} (median; p99 up to "
            f"{seconds(p99)}) against a session timeout of {span([f[3] for f in flagged])}: one or two late "
            "heartbeats evict a member"
        )
    return [
        make_finding(
            inputs,
            st,
            cap,
            severity=st.severity,
            confidence=0.8,
            confidence_note=(
                "heartbeat.interval.ms is inferred from the cadence (classic JoinGroup does not carry it)"
            ),
            members=members,
            evidence=rows,
            occurrences=len(flagged),
            summary=summary,
            fix=f"set heartbeat.interval.ms ≤ {sto // 3} (a third of session.timeout.ms={sto}; default 3000)",
            metrics={"median_gap_ms": med, "p99_gap_ms": p99, "session_timeout_ms": float(sto)},
            window=(first, last),
        )
    ]


register("R06", "heartbeat-interval-near-session-timeout", R06Settings)(heartbeat_interval_near_timeout)


def static_timeout_too_large(inputs: GroupInputs, st: R12Settings, cap: int) -> list[Finding]:
    evicted = {s.member_id for s, _, _ in _expiries(inputs)}
    silent: list[tuple[str, int, Req, Req, int]] = []
    for member, c in sorted(member_cadences(inputs, st.min_silence_ms).items()):
        if member in evicted or c.first is None or not c.first[1].group_instance_id:
            continue
        sto = session_timeout_of(inputs, member) or 0
        for g, a, b in c.long:
            if g >= st.min_silence_ms and g < sto:
                silent.append((member, g, a, b, sto))
    if not silent:
        return []
    longest = max(x[1] for x in silent)
    instances = sorted({x[2].group_instance_id or "" for x in silent})
    sto = max(x[4] for x in silent)
    summary = (
        f"static member{'s' if len(instances) > 1 else ''} {', '.join(instances)} went silent for up to "
        f"{seconds(longest)} ({len(silent)} time{'s' if len(silent) != 1 else ''}) without a rebalance: "
        f"session.timeout.ms={sto} lets a dead member keep its partitions idle for {seconds(sto)}"
    )
    return [
        make_finding(
            inputs,
            st,
            cap,
            severity=escalate(st.severity, (longest >= st.warning_silence_ms, "warning")),
            confidence=0.7,
            confidence_note="idle partitions are inferred: the request log does not show consumer lag",
            members=[x[0] for x in silent],
            evidence=[r for x in silent for r in (x[2], x[3])],
            occurrences=len(silent),
            summary=summary,
            fix=(
                f"balance restart tolerance against failover: set session.timeout.ms just above the p99 "
                f"restart time (now {sto}; silences seen up to {longest} ms)"
            ),
            metrics={"max_silence_ms": float(longest), "session_timeout_ms": float(sto)},
            window=(min(x[2].arrival_ms for x in silent), max(x[3].arrival_ms for x in silent)),
        )
    ]


register("R12", "static-session-timeout-too-large", R12Settings)(static_timeout_too_large)


def double_join(inputs: GroupInputs, st: R15Settings, cap: int) -> list[Finding]:
    required = [
        r for r in inputs.requests if r.api_name == JOIN_GROUP and r.error_name == "MEMBER_ID_REQUIRED"
    ]
    used = {r.member_id for r in inputs.requests if r.member_id}
    hits: list[tuple[Req, Req]] = []
    for i, a in enumerate(required):
        for b in required[i + 1 :]:
            if b.arrival_ms - a.arrival_ms > st.double_join_window_ms:
                break
            if (
                b.process == a.process
                and a.response_member_id != b.response_member_id
                and a.response_member_id not in used
            ):
                hits.append((a, b))
                break
    if not hits:
        return []
    leaked = sorted({a.response_member_id or "" for a, _ in hits})
    clients = sorted({a.client_id or "" for a, _ in hits})
    seqs = [
        rb.rebalance_seq
        for rb in inputs.rebalances
        if any(
            rb.started_ms <= a.arrival_ms + st.double_join_window_ms
            and (rb.ended_ms or 1 << 62) >= a.arrival_ms
            for a, _ in hits
        )
    ]
    holds = [inputs.rebalance(s).join_phase_ms or 0 for s in seqs if inputs.rebalance(s)]  # type: ignore[union-attr]
    summary = (
        f"{', '.join(clients)} sent JoinGroup twice and got MEMBER_ID_REQUIRED twice within "
        f"{st.double_join_window_ms} ms ({len(hits)} time{'s' if len(hits) != 1 else ''}); the first member "
        "id "
        f"was never used and stayed pending, holding the join phase for {span(holds) if holds else '?'}"
    )
    used_ids = [b.response_member_id or "" for _, b in hits]
    return [
        make_finding(
            inputs,
            st,
            cap,
            severity=st.severity,
            confidence=1.0,
            members=leaked + used_ids,
            evidence=[r for pair in hits for r in pair],
            occurrences=len(hits),
            summary=summary,
            fix=(
                "upgrade the client (the KIP-394 double-join bug is fixed in newer client releases, e.g. "
                "librdkafka PR #5570); until then a lower session.timeout.ms shortens the hold"
            ),
            metrics={"leaked_members": float(len(leaked)), "max_join_phase_ms": float(max(holds, default=0))},
            rebalance_seqs=seqs,
        )
    ]


register("R15", "double-join-leaked-member", R15Settings)(double_join)
