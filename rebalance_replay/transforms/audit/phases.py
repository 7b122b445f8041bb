"""Rebalance-shape rules: what makes rebalances slow, frequent or repeated.

Which rules are here: ``docs/audit-rules.md`` (generated from the registry, column "family").
"""

from __future__ import annotations

from collections import Counter
from itertools import pairwise

from rebalance_replay.transforms.audit.base import (
    JOIN_GROUP,
    LEAVE_GROUP,
    escalate,
    kept_by_broker,
    make_finding,
    member_names,
    needs_version,
    pod_of,
    quantile,
    rebalance_window,
    time_rebalancing_ms,
)
from rebalance_replay.transforms.audit.config import (
    R01Settings,
    R05Settings,
    R09Settings,
    R13Settings,
    R14Settings,
    R16Settings,
    R19Settings,
    R22Settings,
)
from rebalance_replay.transforms.audit.model import Finding, GroupInputs, Rebalance, Req, seconds, span
from rebalance_replay.transforms.audit.registry import register
from rebalance_replay.transforms.audit.routine import heartbeats_left_out
from rebalance_replay.transforms.report.units import plural

HOUR_MS = 3_600_000
TRIGGER_RULE = {
    "session_expiry": "R02/R04/R11",
    "member_left": "R03/R13",
    "new_member": "R13",
    "metadata_change": "R16",
    "leader_rejoin": "R16/R22",
    "pending_sync_expiry": "R19",
    "rebalance_timeout_eviction": "R05",
    "coordinator_moved": "R20",
}


def _joins_in(inputs: GroupInputs, start: int, end: int) -> list[Req]:
    return [r for r in inputs.requests if r.api_name == JOIN_GROUP and start <= r.arrival_ms <= end]


def _trigger_rows(inputs: GroupInputs, rbs: list[Rebalance]) -> list[Req]:
    """The request that started each rebalance (the trigger member's JoinGroup/LeaveGroup at the start)."""
    rows = []
    for rb in rbs:
        near = [
            r
            for r in inputs.requests
            if abs(r.arrival_ms - rb.started_ms) <= 5
            and r.api_name in (JOIN_GROUP, LEAVE_GROUP)
            and (
                rb.trigger_member_id is None
                or rb.trigger_member_id in (r.member_id, r.response_member_id)
                or r.api_name == LEAVE_GROUP
            )
        ]
        rows += near[:1] or _joins_in(inputs, rb.started_ms, rb.join_completed_ms or rb.started_ms)[:1]
    return rows


def rebalance_storm(inputs: GroupInputs, st: R01Settings, cap: int) -> list[Finding]:
    last_request = inputs.requests[-1].arrival_ms if inputs.requests else 0
    rbs = [rb for rb in inputs.rebalances if rb.started_ms <= last_request]  # not the log-end expiries
    best: tuple[int, int] | None = None
    j = 0
    for i in range(len(rbs)):
        j = max(j, i)
        while j + 1 < len(rbs) and rbs[j + 1].started_ms - rbs[i].started_ms < HOUR_MS:
            j += 1
        if best is None or j - i > best[1] - best[0]:
            best = (i, j)
    if best is None or best[1] - best[0] + 1 < st.max_rebalances_per_hour:
        return []
    window = rbs[best[0] : best[1] + 1]
    n = len(window)
    closing = max(window, key=lambda rb: rb.ended_ms or rb.started_ms)
    start, end = window[0].started_ms, closing.ended_ms or closing.started_ms
    triggers = Counter(rb.trigger for rb in window)
    dominant, dom_n = sorted(triggers.items(), key=lambda kv: (-kv[1], kv[0]))[0]
    hbs = [r for r in inputs.requests if r.api_name == "HEARTBEAT" and start <= r.arrival_ms <= end]
    hb27 = sum(1 for r in hbs if r.error_name == "REBALANCE_IN_PROGRESS")
    heartbeats = len(hbs) + heartbeats_left_out(inputs, window[0], closing)
    spent = time_rebalancing_ms(window)
    members = sorted({rb.trigger_member_id for rb in window if rb.trigger_member_id})
    # the pod behind the storm: the instance or host whose members started most of its rebalances
    pod = {m: pod_of(inputs, m) for m in members}  # once per member: pod_of reads the group's requests
    pods = Counter(pod[rb.trigger_member_id] for rb in window if rb.trigger_member_id)
    driver = ""
    if pods:
        top, top_n = sorted(pods.items(), key=lambda kv: (-kv[1], kv[0]))[0]
        if 2 * top_n > n:
            driver = f"; driven by {top} ({top_n} of {n} rebalances started by its members)"
    summary = (
        f"{n} rebalances within {seconds(min(end - start, HOUR_MS))} (threshold "
        f"{st.max_rebalances_per_hour}/hour), "
        f"{seconds(spent)} spent rebalancing; dominant trigger {dominant} ({dom_n} of {n}, see "
        f"{TRIGGER_RULE.get(dominant, 'the triggers')}){driver}; {hb27} of {heartbeats} heartbeats answered "
        "REBALANCE_IN_PROGRESS"
    )
    return [
        make_finding(
            inputs,
            st,
            cap,
            severity=escalate(st.severity, (n >= st.critical_rebalances_per_hour, "critical")),
            confidence=1.0,
            members=members,
            evidence=_trigger_rows(inputs, window),
            occurrences=n,
            summary=summary,
            fix=(
                f"remove the dominant trigger ({dominant}); then make rebalances cheap: group.instance.id "
                "(static membership), partition.assignment.strategy=cooperative-sticky, or "
                "group.protocol=consumer (KIP-848)"
            ),
            metrics={
                "rebalances_in_hour": float(n),
                "time_rebalancing_ms": float(spent),
                "heartbeats_rebalance_in_progress": float(hb27),
                "heartbeats": float(heartbeats),
            },
            rebalance_seqs=[rb.rebalance_seq for rb in window],
            window=(start, end),
        )
    ]


register("R01", "rebalance-storm", R01Settings)(rebalance_storm)


def held_by_slow_member(inputs: GroupInputs, st: R05Settings, cap: int) -> list[Finding]:
    held: list[tuple[Rebalance, str, Req | None]] = []
    for rb in inputs.rebalances:
        if rb.trigger == "group_created" or rb.join_phase_ms is None or rb.join_completed_ms is None:
            continue
        if rb.join_phase_ms < st.min_join_phase_ms:
            continue
        joins = _joins_in(inputs, rb.started_ms, rb.join_completed_ms)
        timed_out = [
            m
            for m in rb.evicted
            if m not in rb.members_after and kept_by_broker(inputs, m, rb.join_completed_ms) is None
        ]
        last = joins[-1] if joins else None
        if last is not None and last.arrival_ms - rb.started_ms >= st.min_wait_share * rb.join_phase_ms:
            held.append((rb, last.response_member_id or last.member_id or "", last))
        elif timed_out:
            held.append((rb, timed_out[0], None))
    if not held:
        return []
    members = sorted({m for _, m, _ in held if m})
    phases = [rb.join_phase_ms or 0 for rb, _, _ in held]
    waiting = max(len(rb.members_before) for rb, _, _ in held)
    rtos = [
        r.rebalance_timeout_ms for r in inputs.requests if r.api_name == JOIN_GROUP and r.rebalance_timeout_ms
    ]
    rto = max(rtos) if rtos else 0
    names = member_names(inputs, members)
    rows: list[Req] = []
    for rb, _, last in held:
        joins = _joins_in(inputs, rb.started_ms, rb.join_completed_ms or rb.started_ms)
        rows += joins[:1] + ([last] if last else [])
    summary = (
        f"{', '.join(names)} held {len(held)} rebalance{'s' if len(held) != 1 else ''} for {span(phases)} "
        f"in the join phase while up to {plural(waiting, 'member')} waited (group rebalance timeout "
        f"{seconds(rto)})"
    )
    return [
        make_finding(
            inputs,
            st,
            cap,
            severity=escalate(st.severity, (max(phases) >= st.critical_join_phase_ms, "critical")),
            confidence=0.9,
            confidence_note=(
                "the holder is the last member to rejoin; its own client-side delay is not in the log"
            ),
            members=members,
            evidence=rows,
            occurrences=len(held),
            summary=summary,
            fix=(
                "call poll() promptly (the rejoin happens inside it) and bound max.poll.interval.ms "
                f"(the group's rebalance timeout, now {rto} ms) so one slow member cannot hold the group"
            ),
            metrics={"max_join_phase_ms": float(max(phases)), "rebalance_timeout_ms": float(rto)},
            rebalance_seqs=[rb.rebalance_seq for rb, _, _ in held],
            window=(
                min(rb.started_ms for rb, _, _ in held),
                max(rb.join_completed_ms or 0 for rb, _, _ in held),
            ),
        )
    ]


register("R05", "rebalance-held-by-slow-member", R05Settings)(held_by_slow_member)


def cooperative_follow_ups(inputs: GroupInputs, st: R09Settings, cap: int) -> list[Finding]:
    chains: list[list[Rebalance]] = []
    current: list[Rebalance] = []
    for rb in inputs.rebalances:
        if rb.cooperative_follow_up and current:
            current.append(rb)
        else:
            if len(current) - 1 > st.max_follow_up_rounds:
                chains.append(current)
            current = [rb]
    if len(current) - 1 > st.max_follow_up_rounds:
        chains.append(current)
    if not chains:
        return []
    rbs = [rb for c in chains for rb in c]
    rounds = max(len(c) for c in chains)
    members = sorted({rb.trigger_member_id for rb in rbs if rb.trigger_member_id})
    return [
        make_finding(
            inputs,
            st,
            cap,
            severity=st.severity,
            confidence=1.0,
            members=members,
            evidence=_trigger_rows(inputs, rbs),
            occurrences=len(chains),
            summary=(
                f"{len(chains)} trigger{'s' if len(chains) != 1 else ''} needed up to {rounds} cooperative "
                "rounds "
                "(expected 2: one revoking, one assigning), "
                f"{seconds(time_rebalancing_ms(rbs))} in all"
            ),
            fix=(
                "upgrade clients and assignors (KAFKA-8767) and use one "
                "partition.assignment.strategy=cooperative-sticky everywhere"
            ),
            metrics={"max_rounds": float(rounds)},
            rebalance_seqs=[rb.rebalance_seq for rb in rbs],
            window=rebalance_window(rbs),
        )
    ]


register("R09", "cooperative-follow-up-rounds", R09Settings)(cooperative_follow_ups)


def rolling_deploy(inputs: GroupInputs, st: R13Settings, cap: int) -> list[Finding]:
    leaves = [
        r
        for r in inputs.requests
        if r.api_name == LEAVE_GROUP
        and r.error_name in (None, "NONE")
        and not any(i for _, i, _ in r.leave_members)
        and not any("poll timeout" in (reason or "") for _, _, reason in r.leave_members)
    ]
    # A pod is its process's end of the connection (host and port), never its client id: every
    # single-consumer Java pod is ``consumer-<group>-1``. A process's first JoinGroup (no member id) makes
    # it a new member. A leaving pod's successor is the first new process to join after the LeaveGroup,
    # within the replace window (a deploy with surge pairs each leave with the next pod's start). Processes
    # that all started and stopped together (a batch job, fifty consumers of one process) are no deploy:
    # their first joins all come before the leaves.
    first_joins: dict[str, Req] = {}
    for r in inputs.requests:
        if r.api_name == JOIN_GROUP and not r.member_id and not r.group_instance_id:
            first_joins.setdefault(r.process, r)
    empties = [t.time_ms for t in inputs.transitions if t.to_state == "Empty"]
    pairs: list[tuple[Req, Req]] = []
    taken: set[str] = set()
    candidates = sorted(first_joins.items(), key=lambda kv: (kv[1].arrival_ms, kv[0]))
    for lv in leaves:
        for key, j in candidates:
            if key in taken or key == lv.process or j.arrival_ms < lv.arrival_ms:
                continue
            if j.arrival_ms - lv.arrival_ms > st.replace_window_ms:
                break
            if any(lv.arrival_ms <= e <= j.arrival_ms for e in empties):  # emptied: short-lived (R14)
                break
            pairs.append((lv, j))
            taken.add(key)
            break
    if len(pairs) < st.min_replacements:
        return []
    start = min(min(a.arrival_ms, b.arrival_ms) for a, b in pairs)
    end = max(max(a.arrival_ms, b.arrival_ms) for a, b in pairs)
    rbs = [rb for rb in inputs.rebalances if start <= rb.started_ms <= end + st.replace_window_ms]
    members = sorted({m for a, _ in pairs for m, _, _ in a.leave_members if m})
    new = [
        next(
            (
                r.response_member_id
                for r in inputs.requests
                if r.process == j.process
                and r.api_name == JOIN_GROUP
                and r.response_member_id
                and r.arrival_ms >= j.arrival_ms
            ),
            None,
        )
        for _, j in pairs
    ]
    return [
        make_finding(
            inputs,
            st,
            cap,
            severity=st.severity,
            confidence=0.9,
            confidence_note=(
                "pods are paired by time: a LeaveGroup and a new dynamic member within the replace window"
            ),
            members=members + [m for m in new if m],
            evidence=[r for p in pairs for r in p],
            occurrences=len(pairs),
            summary=(
                f"a rolling deploy replaced {len(pairs)} dynamic members in {seconds(end - start)}: each "
                "pod's "
                f"LeaveGroup and its successor's join cost {plural(len(rbs), 'rebalance')} "
                f"({len(rbs) / len(pairs):.1f} per pod, "
                f"{seconds(time_rebalancing_ms(rbs))} rebalancing)"
            ),
            fix=(
                "set group.instance.id per pod (e.g. the StatefulSet ordinal) with session.timeout.ms above "
                "the "
                "restart time, plus partition.assignment.strategy=cooperative-sticky — or "
                "group.protocol=consumer (KIP-848)"
            ),
            metrics={"pods_replaced": float(len(pairs)), "rebalances": float(len(rbs))},
            rebalance_seqs=[rb.rebalance_seq for rb in rbs],
            window=(start, end),
        )
    ]


register("R13", "rolling-deploy-without-static-membership", R13Settings)(rolling_deploy)


def initial_delay_churn(inputs: GroupInputs, st: R14Settings, cap: int) -> list[Finding]:
    cycles = [t for t in inputs.transitions if t.from_state == "Empty" and t.to_state == "PreparingRebalance"]
    if len(cycles) < st.min_cycles:
        return []
    created = [rb for rb in inputs.rebalances if rb.trigger == "group_created"]
    phases = [rb.join_phase_ms or 0 for rb in created]
    rows = [
        next((r for r in inputs.requests if r.api_name == JOIN_GROUP and r.arrival_ms >= t.time_ms - 5), None)
        for t in cycles
    ]
    delay = inputs.broker.group_initial_rebalance_delay_ms
    return [
        make_finding(
            inputs,
            st,
            cap,
            severity=st.severity,
            confidence=1.0,
            members=(),  # the churn is the group's, no single member
            evidence=[r for r in rows if r is not None],
            occurrences=len(cycles),
            summary=(
                f"the group emptied and formed again {len(cycles)} times (short-lived consumers); each "
                "first join "
                f"waited {span(phases)} for group.initial.rebalance.delay.ms={delay}"
            ),
            fix=(
                "for test or ephemeral clusters set group.initial.rebalance.delay.ms=0 on the brokers; for "
                "short-lived "
                "consumers reuse one long-lived member or use assign() instead of subscribe()"
            ),
            metrics={
                "empty_cycles": float(len(cycles)),
                "median_first_join_ms": quantile(phases, 0.5) if phases else 0.0,
            },
            rebalance_seqs=[rb.rebalance_seq for rb in created],
            window=(
                cycles[0].time_ms,
                max(rb.ended_ms or rb.started_ms for rb in created) if created else cycles[-1].time_ms,
            ),
        )
    ]


register("R14", "initial-rebalance-delay-churn", R14Settings)(initial_delay_churn)


METADATA_REASONS = ("metadata has changed", "subscription has changed", "metadata")


def metadata_driven(inputs: GroupInputs, st: R16Settings, cap: int) -> list[Finding]:
    rbs = [
        rb
        for rb in inputs.rebalances
        if rb.trigger in ("metadata_change", "leader_rejoin")
        and any(k in (rb.trigger_client_reason or "").lower() for k in METADATA_REASONS)
    ]
    if not rbs:
        return []
    members = sorted({rb.trigger_member_id for rb in rbs if rb.trigger_member_id})
    n = len(rbs)
    reasons = sorted({rb.trigger_client_reason or "" for rb in rbs})
    return [
        make_finding(
            inputs,
            st,
            cap,
            severity=escalate(st.severity, (n >= st.warning_rebalances, "warning")),
            confidence=1.0,
            members=members,
            evidence=_trigger_rows(inputs, rbs),
            occurrences=n,
            summary=(
                f"{n} rebalance{'s' if n != 1 else ''} with unchanged membership were started by members "
                "rejoining "
                f"because of topic metadata ({'; '.join(repr(r) for r in reasons)}), "
                f"{seconds(time_rebalancing_ms(rbs))} rebalancing"
            ),
            fix=(
                "avoid churny regex subscriptions, batch topic creation, or use group.protocol=consumer "
                "(KIP-848 "
                "matches regexes on the broker); a larger metadata.max.age.ms spaces the refreshes"
            ),
            metrics={"metadata_rebalances": float(n)},
            rebalance_seqs=[rb.rebalance_seq for rb in rbs],
            window=rebalance_window(rbs),
        )
    ]


register(
    "R16",
    "metadata-driven-rebalances",
    R16Settings,
    support=needs_version(JOIN_GROUP, 8, "the client's rejoin reasons"),
)(metadata_driven)


def sync_never_completes(inputs: GroupInputs, st: R19Settings, cap: int) -> list[Finding]:
    expired = [
        s
        for s in inputs.sessions
        if s.end_reason == "pending_sync_expiry"
        and kept_by_broker(inputs, s.member_id, s.ended_ms or s.joined_ms) is None
    ]
    slow = [
        rb
        for rb in inputs.rebalances
        if rb.sync_phase_ms is not None
        and rb.sync_phase_ms >= st.slow_sync_ms
        and rb.trigger != "pending_sync_expiry"
    ]
    if not expired and not slow:
        return []
    members = sorted({s.member_id for s in expired})
    rows: list[Req] = []
    for s in expired:
        rows += [
            r
            for r in inputs.requests
            if s.member_id in (r.member_id, r.response_member_id)
            and r.api_name == JOIN_GROUP
            and r.arrival_ms <= (s.ended_ms or 0)
        ][-1:]
    seqs = [
        rb.rebalance_seq
        for rb in inputs.rebalances
        if set(members) & set(rb.evicted) or rb.trigger == "pending_sync_expiry"
    ]
    leaders: list[str] = []  # a slow sync phase is its leader's: the SyncGroup carrying the assignment
    for rb in slow:
        syncs = [
            r
            for r in inputs.requests
            if r.api_name == "SYNC_GROUP"
            and (rb.join_completed_ms or 0) <= r.arrival_ms <= (rb.stable_ms or 0)
        ]
        leader_sync = next((r for r in syncs if r.assignments), syncs[-1] if syncs else None)
        if leader_sync is not None:
            rows.append(leader_sync)
            if leader_sync.assignments and leader_sync.member_id and leader_sync.member_id not in leaders:
                leaders.append(leader_sync.member_id)
        seqs.append(rb.rebalance_seq)
    if not rows:
        rows = _joins_in(
            inputs, min(rb.started_ms for rb in inputs.rebalances if rb.rebalance_seq in seqs), 1 << 62
        )[:1]
    rtos = [s.rebalance_timeout_ms or 0 for s in expired]
    names = member_names(inputs, members)
    parts = []
    if expired:
        parts.append(
            f"{', '.join(names)} got the JoinGroup answer but never sent SyncGroup within the rebalance "
            "timeout "
            f"({span(rtos)}) and {'was' if len(expired) == 1 else 'were'} removed, starting another rebalance"
        )
    if slow:
        by = f"the leader {', '.join(member_names(inputs, leaders))}" if leaders else "the leader"
        parts.append(
            f"{len(slow)} of {plural(len(inputs.rebalances), 'sync phase')} took "
            f"{span([rb.sync_phase_ms or 0 for rb in slow])}: {by} sent its assignment that long after the "
            "join phase, while every member waited (slow leader assignment)"
        )
        members = sorted(set(members) | set(leaders))
    windows = [(s.joined_ms, s.ended_ms or s.joined_ms) for s in expired] + [
        (rb.join_completed_ms or rb.started_ms, rb.stable_ms or rb.ended_ms or rb.started_ms) for rb in slow
    ]
    return [
        make_finding(
            inputs,
            st,
            cap,
            severity=st.severity,
            confidence=1.0 if expired else 0.8,
            confidence_note="a slow sync phase may be the leader's network, not its assignor",
            members=members,
            evidence=rows,
            occurrences=len(expired) + len(slow),
            summary="; ".join(parts),
            fix=(
                "keep the rebalance listener (onPartitionsRevoked/onPartitionsAssigned) free of blocking "
                "work and check "
                "the leader's assignor performance and health; max.poll.interval.ms bounds the wait"
            ),
            metrics={"pending_sync_expiries": float(len(expired)), "slow_syncs": float(len(slow))},
            rebalance_seqs=seqs,
            window=(min(w[0] for w in windows), max(w[1] for w in windows)),
        )
    ]


register("R19", "sync-never-completes", R19Settings)(sync_never_completes)


def probing_rebalances(inputs: GroupInputs, st: R22Settings, cap: int) -> list[Finding]:
    same = [
        rb
        for rb in inputs.rebalances
        if rb.members_before
        and set(rb.members_before) == set(rb.members_after)
        and not rb.joined
        and not rb.left
        and not rb.evicted
    ]
    lo, hi = st.probing_interval_ms * (1 - st.tolerance), st.probing_interval_ms * (1 + st.tolerance)
    best: list[Rebalance] = []
    run: list[Rebalance] = []
    for rb in same:
        if run and lo <= rb.started_ms - run[-1].started_ms <= hi:
            run.append(rb)
        else:
            run = [rb]
        if len(run) > len(best):
            best = list(run)
    if len(best) < st.min_rebalances:
        return []
    gaps = [b.started_ms - a.started_ms for a, b in pairwise(best)]
    return [
        make_finding(
            inputs,
            st,
            cap,
            severity=st.severity,
            confidence=0.7,
            confidence_note=(
                "recognised by cadence and unchanged membership: the log does not say the clients are Kafka "
                "Streams"
            ),
            members=sorted({rb.trigger_member_id for rb in best if rb.trigger_member_id}),
            evidence=_trigger_rows(inputs, best),
            occurrences=len(best),
            summary=(
                f"{len(best)} rebalances with identical membership every {span(gaps)} "
                f"(probing.rebalance.interval.ms={st.probing_interval_ms}): warm-up replicas are not "
                "catching up"
            ),
            fix=(
                "let warm-up tasks catch up: raise acceptable.recovery.lag, max.warmup.replicas or "
                "num.standby.replicas, "
                "or raise probing.rebalance.interval.ms"
            ),
            metrics={"median_interval_ms": quantile(gaps, 0.5)},
            rebalance_seqs=[rb.rebalance_seq for rb in best],
            window=rebalance_window(best),
        )
    ]


register("R22", "periodic-probing-rebalances", R22Settings)(probing_rebalances)
