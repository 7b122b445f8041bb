"""Protocol and configuration rules: what the coordinator refuses, and group shapes it cannot serve.

Which rules are here: ``docs/audit-rules.md`` (generated from the registry, column "family").
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from rebalance_replay.transforms.audit.base import (
    JOIN_GROUP,
    OFFSET_COMMIT,
    SYNC_GROUP,
    escalate,
    make_finding,
)
from rebalance_replay.transforms.audit.config import (
    R07Settings,
    R08Settings,
    R10Settings,
    R17Settings,
    R18Settings,
    R20Settings,
    R21Settings,
    R23Settings,
    RuleSettings,
)
from rebalance_replay.transforms.audit.model import Finding, GroupInputs, Req, seconds
from rebalance_replay.transforms.audit.registry import register
from rebalance_replay.transforms.consumer_protocol import try_decode_assignment


def _members_of(rows: list[Req]) -> list[str]:
    return sorted({m for r in rows for m in (r.member_id, r.response_member_id) if m})


def _clients(rows: list[Req]) -> str:
    return ", ".join(sorted({f"{r.client_id} ({r.host})" if r.host else str(r.client_id) for r in rows}))


def _refused_joins(inputs: GroupInputs, error: str) -> list[Req]:
    return [r for r in inputs.requests if r.api_name == JOIN_GROUP and r.error_name == error]


def _refused_finding(
    inputs: GroupInputs, st: RuleSettings, cap: int, severity: str, rows: list[Req], **text: Any
) -> list[Finding]:
    """A finding of JoinGroups the coordinator refused (one error, fatal for the client)."""
    return [
        make_finding(
            inputs,
            st,
            cap,
            severity=severity,
            confidence=1.0,
            members=_members_of(rows),
            evidence=rows,
            occurrences=len(rows),
            **text,
        )
    ]


def session_timeout_out_of_bounds(inputs: GroupInputs, st: R07Settings, cap: int) -> list[Finding]:
    rows = _refused_joins(inputs, "INVALID_SESSION_TIMEOUT")
    if not rows:
        return []
    stos = sorted({r.session_timeout_ms or 0 for r in rows})
    lo, hi = inputs.broker.group_min_session_timeout_ms, inputs.broker.group_max_session_timeout_ms
    return _refused_finding(
        inputs,
        st,
        cap,
        st.severity,
        rows,
        summary=(
            f"{_clients(rows)} asked for session.timeout.ms {', '.join(map(str, stos))}, outside the "
            f"broker's [{lo}, {hi}]: {len(rows)} JoinGroup(s) refused with INVALID_SESSION_TIMEOUT, the "
            "consumer cannot join"
        ),
        fix=(
            f"set session.timeout.ms between group.min.session.timeout.ms={lo} and "
            f"group.max.session.timeout.ms={hi} (e.g. {min(max(45000, lo), hi)}), or change the broker bounds"
        ),
        metrics={
            "session_timeout_ms": float(stos[0]),
            "broker_min_ms": float(lo),
            "broker_max_ms": float(hi),
        },
    )


register("R07", "session-timeout-out-of-bounds", R07Settings)(session_timeout_out_of_bounds)


def inconsistent_assignors(inputs: GroupInputs, st: R08Settings, cap: int) -> list[Finding]:
    refused = [
        r
        for r in inputs.requests
        if r.api_name == JOIN_GROUP and r.error_name == "INCONSISTENT_GROUP_PROTOCOL"
    ]
    joins = [
        r
        for r in inputs.requests
        if r.api_name == JOIN_GROUP and r.protocol_names and r.error_name != "INCONSISTENT_GROUP_PROTOCOL"
    ]
    sets = Counter(frozenset(r.protocol_names) for r in joins)
    odd: list[Req] = []
    if len(sets) > 1:
        common = sets.most_common(1)[0][0]
        odd = [r for r in joins if frozenset(r.protocol_names) != common]
    if not refused and not odd:
        return []
    rows = refused + odd
    offered = sorted({"+".join(r.protocol_names) for r in rows} | {"+".join(sorted(s)) for s in sets})
    return [
        make_finding(
            inputs,
            st,
            cap,
            severity=st.severity if refused else escalate("warning"),
            confidence=1.0,
            members=_members_of(rows),
            evidence=rows,
            occurrences=len(rows),
            summary=(
                f"{_clients(rows)} offered assignors that do not match the group's ({', '.join(offered)}): "
                f"{len(refused)} JoinGroup(s) refused with INCONSISTENT_GROUP_PROTOCOL"
                + (f", {len(odd)} join(s) with a different assignor list" if odd else "")
            ),
            fix=(
                "use one partition.assignment.strategy in every member of the group (upgrade with KIP-429's "
                "two "
                "rolling bounces listing both assignors), and give each application its own group.id"
            ),
            metrics={"refused_joins": float(len(refused)), "assignor_sets": float(len(sets))},
        )
    ]


register("R08", "inconsistent-assignors", R08Settings)(inconsistent_assignors)


def duplicate_instance_id(inputs: GroupInputs, st: R10Settings, cap: int) -> list[Finding]:
    fenced = [r for r in inputs.requests if r.error_name == "FENCED_INSTANCE_ID" and r.group_instance_id]
    if not fenced:
        return []
    out = []
    for instance in sorted({r.group_instance_id or "" for r in fenced}):
        rows = [r for r in inputs.requests if r.group_instance_id == instance]
        users = sorted({(r.client_id or "", r.host or "", r.connection or "") for r in rows})
        f = [r for r in fenced if r.group_instance_id == instance]
        out.append(
            make_finding(
                inputs,
                st,
                cap,
                severity=st.severity,
                confidence=1.0 if len({(c, h) for c, h, _ in users}) > 1 else 0.7,
                confidence_note=(
                    "one client id and host: possibly a restarted process with a stale one still running"
                ),
                members=_members_of(rows),
                evidence=f,
                occurrences=len(f),
                summary=(
                    f"group.instance.id {instance} is used by {len(users)} client connections "
                    f"({', '.join(sorted({f'{c} ({h})' for c, h, _ in users}))}); they fence each other: "
                    f"{len(f)} requests answered FENCED_INSTANCE_ID"
                ),
                fix=(
                    "give every replica a unique group.instance.id (e.g. the StatefulSet ordinal, not a "
                    "hostname a Deployment reuses)"
                ),
                metrics={"fenced_requests": float(len(f)), "connections": float(len(users))},
            )
        )
    return out


register("R10", "duplicate-group-instance-id", R10Settings)(duplicate_instance_id)


def _leader_syncs(inputs: GroupInputs) -> list[Req]:
    return [r for r in inputs.requests if r.api_name == SYNC_GROUP and r.assignments]


def _assignment_support(inputs: GroupInputs) -> str | None:
    syncs = _leader_syncs(inputs)
    if not syncs:
        return "no leader SyncGroup with assignments in the log"
    if not any(b for r in syncs for _, b in r.assignments):
        return "the leader's SyncGroup assignments carry no bytes (only lengths are logged)"
    return None


def over_provisioned(inputs: GroupInputs, st: R17Settings, cap: int) -> list[Finding]:
    # A member is idle for want of partitions only when the group has more members than the partitions
    # it is ever given: a cooperative first round (partitions being moved are revoked before anyone gets
    # them) leaves a member empty in a group that is not too big.
    assigned: list[tuple[Req, list[str], int]] = []
    for r in _leader_syncs(inputs):
        decoded = [(m, try_decode_assignment(b)) for m, b in r.assignments]
        if any(a is None for _, a in decoded):
            continue
        empty = [m for m, a in decoded if a is not None and not any(ps for _, ps in a.partitions)]
        parts = sum(len(ps) for _, a in decoded if a is not None for _, ps in a.partitions)
        assigned.append((r, empty, parts))
    most = max((parts for _, _, parts in assigned), default=0)
    hits = [(r, empty, most) for r, empty, _ in assigned if empty and len(r.assignments) > most]
    if not hits:
        return []
    last, empty, parts = hits[-1]
    members = sorted({m for _, e, _ in hits for m in e})
    size = len(last.assignments)
    return [
        make_finding(
            inputs,
            st,
            cap,
            severity=st.severity,
            confidence=1.0,
            members=members,
            evidence=[h[0] for h in hits],
            occurrences=len(hits),
            summary=(
                f"{len(empty)} of {size} members got no partitions ({parts} partitions assigned) in "
                f"{len(hits)} "
                "generation(s): they consume nothing but still rebalance with the group"
            ),
            fix=f"right-size the group: at most {parts} members for {parts} partitions, or add partitions",
            metrics={"members": float(size), "idle_members": float(len(empty)), "partitions": float(parts)},
        )
    ]


register("R17", "over-provisioned-group", R17Settings, support=_assignment_support)(over_provisioned)


def group_max_size(inputs: GroupInputs, st: R18Settings, cap: int) -> list[Finding]:
    rows = _refused_joins(inputs, "GROUP_MAX_SIZE_REACHED")
    if not rows:
        return []
    peak = max((len(rb.members_after) for rb in inputs.rebalances), default=0)
    clients = sorted({r.client_id or "" for r in rows})
    return _refused_finding(
        inputs,
        st,
        cap,
        st.severity,
        rows,
        summary=(
            f"{len(rows)} JoinGroup(s) from {', '.join(clients)} refused with GROUP_MAX_SIZE_REACHED "
            f"(group.max.size={inputs.broker.group_max_size}, {peak} members at most)"
        ),
        fix=f"raise group.max.size on the brokers to ≥ {peak + len(clients)} or shrink the group",
        metrics={"refused_joins": float(len(rows)), "peak_members": float(peak)},
    )


register("R18", "group-max-size-reached", R18Settings)(group_max_size)


COORDINATOR_ERRORS = ("COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR")
GROUP_APIS = (
    "JOIN_GROUP",
    "SYNC_GROUP",
    "HEARTBEAT",
    "LEAVE_GROUP",
    "OFFSET_COMMIT",
    "CONSUMER_GROUP_HEARTBEAT",
)


def coordinator_moving(inputs: GroupInputs, st: R20Settings, cap: int) -> list[Finding]:
    errs = [r for r in inputs.requests if r.error_name in COORDINATOR_ERRORS]
    moves: list[tuple[Req, Req]] = []
    prev: Req | None = None
    for r in inputs.requests:
        if r.api_name not in GROUP_APIS:
            continue
        if prev is not None and r.broker_id != prev.broker_id:
            moves.append((prev, r))
        prev = r
    if not errs and not moves:
        return []
    rows = errs + [r for m in moves for r in m]
    start = min(r.arrival_ms for r in rows)
    end = max(r.arrival_ms for r in rows)
    seqs = [rb.rebalance_seq for rb in inputs.rebalances if start <= rb.started_ms <= end + 60_000]
    path = " → ".join([moves[0][0].broker_id] + [b.broker_id for _, b in moves]) if moves else ""
    # A group's first requests on a fresh coordinator (its __consumer_offsets partition being created or
    # loaded) are answered COORDINATOR_NOT_AVAILABLE until it is ready: a start, not an incident.
    first_member = min(
        (
            r.arrival_ms
            for r in inputs.requests
            if r.api_name == JOIN_GROUP and r.error_name in (None, "NONE")
        ),
        default=None,
    )
    starting = not moves and first_member is not None and end < first_member
    return [
        make_finding(
            inputs,
            st,
            cap,
            severity="info" if starting else st.severity,
            confidence=1.0,
            members=[],
            evidence=rows,
            occurrences=len(moves) + len(errs),
            summary=(
                (
                    f"the group's coordinator moved {len(moves)} time(s) ({path})"
                    if moves
                    else "the coordinator was not ready for the group's first members"
                    if starting
                    else "the coordinator was unavailable"
                )
                + (
                    f"; {len(errs)} request(s) answered "
                    f"{', '.join(sorted({r.error_name or '' for r in errs}))}"
                    if errs
                    else ""
                )
                + f"; {len(seqs)} rebalance(s) followed within {seconds(60_000)}"
            ),
            fix=(
                "check the brokers' health (restarts, GC, controller moves), "
                "offsets.topic.replication.factor ≥ 3 "
                "for __consumer_offsets, and stagger broker restarts"
            ),
            metrics={"coordinator_moves": float(len(moves)), "coordinator_errors": float(len(errs))},
            rebalance_seqs=seqs,
            window=(start, end),
        )
    ]


register("R20", "coordinator-unavailable-or-moving", R20Settings)(coordinator_moving)


RACING_ERRORS = ("REBALANCE_IN_PROGRESS", "ILLEGAL_GENERATION", "UNKNOWN_MEMBER_ID")


def commits_racing(inputs: GroupInputs, st: R21Settings, cap: int) -> list[Finding]:
    rows = [
        r
        for r in inputs.requests
        if r.api_name == OFFSET_COMMIT and any(e in RACING_ERRORS for e in r.errors)
    ]
    rows += [
        r for r in inputs.requests if r.api_name == JOIN_GROUP and "offset commit failed" in (r.reason or "")
    ]
    if not rows:
        return []
    commits = [r for r in rows if r.api_name == OFFSET_COMMIT]
    n = len(commits) or len(rows)
    # per partition: a commit row's top-level error is its first partition's (the parsers' error_code),
    # counted once with the partitions, not again
    errs = Counter(e for r in commits for e in (r.commit_errors or r.errors) if e in RACING_ERRORS)
    seqs = [
        rb.rebalance_seq
        for rb in inputs.rebalances
        if any(rb.started_ms <= r.arrival_ms <= (rb.ended_ms or 1 << 62) for r in commits)
    ]
    return [
        make_finding(
            inputs,
            st,
            cap,
            severity=escalate(st.severity, (n >= st.warning_failed_commits, "warning")),
            confidence=1.0,
            members=_members_of(rows),
            evidence=rows,
            occurrences=n,
            summary=(
                f"{n} offset commit(s) failed because the group was rebalancing "
                f"(errors: {', '.join(f'{k} ×{v}' for k, v in sorted(errs.items()))}): the work behind them "
                "may be processed twice"
            ),
            fix=(
                "commit synchronously in ConsumerRebalanceListener.onPartitionsRevoked and make processing "
                "idempotent; "
                "partition.assignment.strategy=cooperative-sticky revokes fewer partitions"
            ),
            metrics={"failed_commits": float(n)},
            rebalance_seqs=seqs,
            caused=False,  # the commits raced these rebalances; they did not start them
        )
    ]


register("R21", "commits-racing-rebalances", R21Settings)(commits_racing)


KIP848_ERRORS = (
    "FENCED_MEMBER_EPOCH",
    "UNRELEASED_INSTANCE_ID",
    "UNSUPPORTED_ASSIGNOR",
    "STALE_MEMBER_EPOCH",
)


def kip848_group(inputs: GroupInputs, st: R23Settings, cap: int) -> list[Finding]:
    cgh = [r for r in inputs.requests if r.api_name == "CONSUMER_GROUP_HEARTBEAT"]
    if not cgh:
        return []
    classic = [r for r in inputs.requests if r.api_name in ("JOIN_GROUP", "SYNC_GROUP", "HEARTBEAT")]
    errs = [r for r in cgh if r.error_name in KIP848_ERRORS]
    mixed = bool(classic)
    members = sorted({m for r in cgh for m in (r.member_id, r.response_member_id) if m})
    return [
        make_finding(
            inputs,
            st,
            cap,
            severity=escalate(st.severity, (mixed or bool(errs), "warning")),
            confidence=1.0,
            members=members,
            evidence=cgh[:1] + errs + classic[:1] + cgh[-1:],
            occurrences=len(cgh),
            summary=(
                f"{len(members)} member(s) speak the KIP-848 consumer protocol ({len(cgh)} "
                "ConsumerGroupHeartbeat requests"
                + (
                    f", {len(errs)} answered {', '.join(sorted({r.error_name or '' for r in errs}))}"
                    if errs
                    else ""
                )
                + ")"
                + (
                    f" while {len({r.client_id for r in classic})} client(s) still use the classic protocol "
                    "(mixed group)"
                    if mixed
                    else ""
                )
                + ": the classic coordinator model does not validate this group"
            ),
            fix=(
                "analyse the group with a KIP-848 state machine; if mixed, finish the migration "
                "(group.protocol=consumer "
                "on every member) or roll back consistently"
            ),
            metrics={"consumer_group_heartbeats": float(len(cgh)), "classic_requests": float(len(classic))},
        )
    ]


register("R23", "kip848-group", R23Settings)(kip848_group)
