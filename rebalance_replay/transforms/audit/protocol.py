"""Protocol and configuration rules: what the coordinator refuses, and group shapes it cannot serve.

Which rules are here: ``docs/audit-rules.md`` (generated from the registry, column "family").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from rebalance_replay.transforms.audit.base import (
    JOIN_GROUP,
    OFFSET_COMMIT,
    SYNC_GROUP,
    client_names,
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
from rebalance_replay.transforms.report.units import plural


def _members_of(rows: list[Req]) -> list[str]:
    return sorted({m for r in rows for m in (r.member_id, r.response_member_id) if m})


def _clients(inputs: GroupInputs, rows: list[Req]) -> str:
    return ", ".join(client_names(inputs, rows))


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
            f"{_clients(inputs, rows)} asked for session.timeout.ms {', '.join(map(str, stos))}, outside the "
            f"broker's [{lo}, {hi}]: {plural(len(rows), 'JoinGroup')} refused with INVALID_SESSION_TIMEOUT, "
            "the consumer cannot join"
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


def _assignors(names: Sequence[str]) -> str:
    """``only range``, ``cooperative-sticky, range`` (in the member's order of preference)."""
    if not names:
        return "no assignor"
    return f"only {names[0]}" if len(names) == 1 else ", ".join(names)


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
    common: tuple[str, ...] = ()
    if sets:
        most = sets.most_common(1)[0][0]
        common = next(r.protocol_names for r in joins if frozenset(r.protocol_names) == most)
        odd = [r for r in joins if frozenset(r.protocol_names) != most]
    if not refused and not odd:
        return []
    rows = refused + odd
    # who offered what: each client once per list it offered (a refused list, then an accepted odd one)
    offers: dict[tuple[str, tuple[str, ...]], None] = {}
    for r in rows:
        for name in client_names(inputs, [r]):
            offers.setdefault((name, r.protocol_names), None)
    shown = [f"{name} offered {_assignors(names)}" for name, names in list(offers)[:5]]
    if len(offers) > 5:
        shown.append(f"{plural(len(offers) - 5, 'other client')} likewise")
    # the assignor the group actually runs: the protocol its rebalances chose (in time order)
    used = list(dict.fromkeys(rb.protocol_name for rb in inputs.rebalances if rb.protocol_name))
    if used:
        group = f"the group uses {used[0]}" if len(used) == 1 else f"the group used {', then '.join(used)}"
        if odd:
            group += f" and its other members offer {_assignors(common)}"
    elif common:
        group = f"the group's other members offer {_assignors(common)}"
    else:
        group = "no member of the group was accepted"
    counts = (
        [f"{plural(len(refused), 'JoinGroup')} refused with INCONSISTENT_GROUP_PROTOCOL"] if refused else []
    )
    if odd:
        counts.append(f"{plural(len(odd), 'JoinGroup')} accepted with a different assignor list")
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
            summary=f"{'; '.join(shown)}; {group}: {', '.join(counts)}",
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
                    f"({_clients(inputs, rows)}); they fence each other: {plural(len(f), 'request')} "
                    "answered FENCED_INSTANCE_ID"
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
                f"{len(empty)} of {plural(size, 'member')} got no partitions "
                f"({plural(parts, 'partition')} assigned) in {plural(len(hits), 'generation')}: they "
                "consume nothing but still rebalance with the group"
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
            f"{plural(len(rows), 'JoinGroup')} from {', '.join(clients)} refused with GROUP_MAX_SIZE_REACHED "
            f"(group.max.size={inputs.broker.group_max_size}, {plural(peak, 'member')} at most)"
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
                    f"the group's coordinator moved {plural(len(moves), 'time')} ({path})"
                    if moves
                    else "the coordinator was not ready for the group's first members"
                    if starting
                    else "the coordinator was unavailable"
                )
                + (
                    f"; {plural(len(errs), 'request')} answered "
                    f"{', '.join(sorted({r.error_name or '' for r in errs}))}"
                    if errs
                    else ""
                )
                + f"; {plural(len(seqs), 'rebalance')} followed within {seconds(60_000)}"
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
    commits = [
        r
        for r in inputs.requests
        if r.api_name == OFFSET_COMMIT and any(e in RACING_ERRORS for e in r.errors)
    ]
    # the Java consumer's rejoin after a CommitFailedException: a failed commit the log may not show
    rejoins = [
        r for r in inputs.requests if r.api_name == JOIN_GROUP and "offset commit failed" in (r.reason or "")
    ]
    rows = commits + rejoins
    if not rows:
        return []
    # a failed commit is a refused OffsetCommit; the rejoins tell of failures only when the log has no
    # refused commit (the same failure is not counted twice)
    n = len(commits) or len(rejoins)
    # each refused commit once, by the racing errors its partitions got (a commit row's top-level error is
    # its first partition's, the parsers' error_code: counted with the partitions, not again); the
    # partitions, when more than the commits, are told apart
    by_error = Counter(
        "/".join(sorted({e for e in (r.commit_errors or r.errors) if e in RACING_ERRORS})) for r in commits
    )
    partitions = sum(1 for r in commits for e in (r.commit_errors or r.errors) if e in RACING_ERRORS)
    seqs = [
        rb.rebalance_seq
        for rb in inputs.rebalances
        if any(rb.started_ms <= r.arrival_ms <= (rb.ended_ms or 1 << 62) for r in commits)
    ]
    reason = 'with the reason "offset commit failed"'
    if commits:
        how = ", ".join(f"{k} ×{v}" for k, v in sorted(by_error.items()))
        if partitions != len(commits):
            how += f"; {plural(partitions, 'partition')} in all"
        if rejoins:
            how += f"; {plural(len(rejoins), 'JoinGroup')} rejoined {reason}"
    else:
        how = f"told by {plural(len(rejoins), 'JoinGroup')} {reason}; the refused commits are not in the log"
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
                f"{plural(n, 'offset commit')} failed because the group was rebalancing ({how}): the work "
                "behind them may be processed twice"
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


def _still_classic(n: int) -> str:
    return f"{plural(n, 'client')} still {'uses' if n == 1 else 'use'}"


def kip848_group(inputs: GroupInputs, st: R23Settings, cap: int) -> list[Finding]:
    cgh = [r for r in inputs.requests if r.api_name == "CONSUMER_GROUP_HEARTBEAT"]
    if not cgh:
        return []
    classic = [r for r in inputs.requests if r.api_name in ("JOIN_GROUP", "SYNC_GROUP", "HEARTBEAT")]
    errs = [r for r in cgh if r.error_name in KIP848_ERRORS]
    mixed = bool(classic)
    # a group compacted while classic (``routine``): its heartbeats left out count too (the first of each
    # client was kept)
    classic_requests = len(classic) + (0 if inputs.routine is None else inputs.routine.left_out)
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
                f"{plural(len(members), 'member')} {'speaks' if len(members) == 1 else 'speak'} the KIP-848 "
                f"consumer protocol ({plural(len(cgh), 'ConsumerGroupHeartbeat request')}"
                + (
                    f", {len(errs)} answered {', '.join(sorted({r.error_name or '' for r in errs}))}"
                    if errs
                    else ""
                )
                + ")"
                + (
                    f" while {_still_classic(len({r.client_id for r in classic}))} the classic protocol "
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
            metrics={
                "consumer_group_heartbeats": float(len(cgh)),
                "classic_requests": float(classic_requests),
            },
        )
    ]


register("R23", "kip848-group", R23Settings)(kip848_group)
