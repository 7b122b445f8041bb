"""Every rule's finding on its incident, exactly: severity, confidence, occurrences, summary, fix, metrics,
evidence and rebalances — not only "found in its window" (``test_rules_incidents.py``).

The expected values come from the incident's definition (``simulator.incidents``: who, how many, which
timeouts and settings), Kafka's behaviour (a member is evicted exactly ``session.timeout.ms`` after its
last heartbeat; the join phase ends at the rebalance timeout; the broker defaults: session timeouts in
[6000, 1800000], ``group.initial.rebalance.delay.ms`` 3000) and the rule's documented text
(``docs``/the audit catalogue) — or, for counts the definition leaves to the simulation (heartbeats,
refused commits, fenced requests), from counting the group's request log here, independently of the rule.
Numbers neither gives (a rebalance's duration) are matched as «any number» («»).

Seed 7, default thresholds; hosts are the simulator's ``10.1.0.(10 + consumer index)``.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

import pytest

from rebalance_replay.transforms.audit import AuditSettings, Finding, GroupInputs
from tests.unit.audit.test_rules_incidents import audited, incident_inputs

ANY = "«»"


def inputs_of() -> dict[str, GroupInputs]:
    return incident_inputs(7)[0]


def like(template: str, text: str) -> bool:
    """``text`` is ``template`` with each «» a number."""
    pattern = r"[0-9]+(?:\.[0-9]+)?".join(re.escape(part) for part in template.split(ANY))
    return re.fullmatch(pattern, text) is not None


def finding(rule_id: str, group: str) -> Finding:
    findings, _ = audited(7)
    got = [f for f in findings[group] if f.rule_id == rule_id]
    assert len(got) == 1, f"{rule_id} in {group}: {[f.rule_id for f in findings[group]]}"
    return got[0]


def client(group: str, index: int) -> str:
    """The client id and host of the group's index-th consumer (simulator.clients)."""
    return f"consumer-{group}-{index + 1} (10.1.0.{10 + index})"


@dataclass(frozen=True)
class Want:
    rule_id: str
    group: str
    severity: str
    confidence: float
    occurrences: int
    summary: str
    fix: str
    metrics: dict[str, float] = field(default_factory=dict)
    rebalances: int | None = None  # how many rebalances the finding blames (None: not checked)


R02 = "inc-r02-crashes"
R03 = "inc-r03-poll-timeout"
R04 = "inc-r04-static-stall"
R05 = "inc-r05-slow-joiner"
R06 = "inc-r06-slow-heartbeats"
R07 = "inc-r07-bad-session-timeout"
R08 = "inc-r08-mixed-assignors"
R09 = "inc-r09-cooperative-rounds"
R11 = "inc-r11-slow-static-restart"
R12 = "inc-r12-static-long-timeout"
R13 = "inc-r13-rolling-deploy"
R14 = "inc-r14-short-lived"
R15 = "inc-r15-double-join"
R16 = "inc-r16-metadata-churn"
R17 = "inc-r17-over-provisioned"
R18 = "inc-r18-max-size"
R19 = "inc-r19-hung-sync"
R20 = "inc-r20-coordinator-move"
R21 = "inc-r21-commit-races"
R22 = "inc-r22-probing"
R23 = "inc-r23-kip848"

WANTS = [
    # two dynamic members crash (consumers 1 and 2): each evicted exactly 45 s (the default session
    # timeout) after its last heartbeat, nothing from them afterwards; the first eviction's rebalance
    # stops the 4 members; raise to ≥ 45 s × 1.5 rounded up to 5 s
    Want(
        "R02",
        R02,
        "warning",
        1.0,
        2,
        f"members {client(R02, 1)}, {client(R02, 2)} were evicted 2 times after 45 s without a heartbeat "
        f"(session.timeout.ms 45 s, no LeaveGroup); each eviction cost a {ANY} ms rebalance of 4 members",
        f"find the pause source (crash, GC, network, a starved heartbeat thread) on {client(R02, 1)}, "
        f"{client(R02, 2)}; if pauses are expected raise session.timeout.ms to ≥ 70000 (now 45000), and "
        "close consumers with close() so they send a LeaveGroup",
        {
            "evictions": 2,
            "max_gap_ms": 45_000,
            "session_timeout_ms": 45_000,
            "members_alive_after_eviction": 0,
            "evidence_rows": 2,  # each one's last heartbeat
        },
        rebalances=2,
    ),
    # one poll timeout of consumer 0; max.poll.interval.ms is the JoinGroup's rebalance timeout (the
    # simulator's 300000); evidence: the LeaveGroup, the refused commit when poll() returns, the rejoin
    Want(
        "R03",
        R03,
        "warning",
        1.0,
        1,
        f'{client(R03, 0)} left the group 1 time with "consumer poll timeout has expired": poll() was not '
        "called within max.poll.interval.ms (300 s) while heartbeats continued, so its in-flight commits "
        "fail and it rejoins",
        "raise max.poll.interval.ms above the slowest batch (now 300000; e.g. 600000) or lower "
        "max.poll.records, and move slow processing off the poll thread (pause()/resume())",
        {"poll_timeouts": 1, "max_poll_interval_ms": 300_000, "evidence_rows": 3},
        rebalances=1,
    ),
    # static member 1 stalls 45 s against a 30 s session timeout, then speaks again with its old id
    Want(
        "R04",
        R04,
        "warning",
        0.8,
        1,
        f"static member {R04}-1: evicted 1 time after 30 s without a heartbeat (session.timeout.ms 30 s); "
        "the same process spoke again afterwards (with its old member id, or rejoining on the same "
        "connection), so it stalled rather than restarted (confidence 0.80: a static member sends no "
        "LeaveGroup: the log cannot tell a "
        "stalled poll loop from a stalled heartbeat thread)",
        "lower max.poll.records or raise max.poll.interval.ms and move slow work off the poll thread; "
        "static members are detected only after session.timeout.ms (30000), so a stalled poll loop keeps "
        "its partitions idle that long",
        {"evictions": 1, "max_gap_ms": 30_000, "session_timeout_ms": 30_000},
    ),
    # consumer 2 rejoins 25 s late when the 4th member joins: 3 members wait (rebalance timeout 60 s)
    Want(
        "R05",
        R05,
        "warning",
        0.9,
        1,
        f"{client(R05, 2)} held 1 rebalance for {ANY} s in the join phase while up to 3 members waited "
        "(group rebalance timeout 60 s) (confidence 0.90: the holder is the last member to rejoin; its own "
        "client-side delay is not in the log)",
        "call poll() promptly (the rejoin happens inside it) and bound max.poll.interval.ms (the group's "
        "rebalance timeout, now 60000 ms) so one slow member cannot hold the group",
        {"rebalance_timeout_ms": 60_000},
        rebalances=1,
    ),
    # consumer 1 is 15 s late against a 10 s rebalance timeout: the join phase ends at the timeout
    Want(
        "R05",
        R21,
        "warning",
        0.9,
        1,
        f"{client(R21, 1)} held 1 rebalance for 10 s in the join phase while up to 3 members waited "
        "(group rebalance timeout 10 s) (confidence 0.90: the holder is the last member to rejoin; its own "
        "client-side delay is not in the log)",
        "call poll() promptly (the rejoin happens inside it) and bound max.poll.interval.ms (the group's "
        "rebalance timeout, now 10000 ms) so one slow member cannot hold the group",
        {"rebalance_timeout_ms": 10_000, "max_join_phase_ms": 10_000},
        rebalances=1,
    ),
    # heartbeat.interval.ms=20000 against the default 45 s session timeout: a third is 15000
    Want(
        "R06",
        R06,
        "warning",
        0.8,
        1,
        f"{client(R06, 1)} heartbeats every 20 s (median; p99 20 s) against a session timeout of 45 s: one "
        "or two late heartbeats evict the member (confidence 0.80: heartbeat.interval.ms is inferred from "
        "the cadence (classic JoinGroup does not carry it))",
        "set heartbeat.interval.ms ≤ 15000 (a third of session.timeout.ms=45000; default 3000)",
        {"median_gap_ms": 20_000, "p99_gap_ms": 20_000, "session_timeout_ms": 45_000},
        rebalances=0,
    ),
    # session.timeout.ms=3000 below the broker's default minimum 6000 (maximum 1800000): refused
    Want(
        "R07",
        R07,
        "critical",
        1.0,
        1,
        f"{client(R07, 2)} asked for session.timeout.ms 3000, outside the broker's [6000, 1800000]: 1 "
        "JoinGroup refused with INVALID_SESSION_TIMEOUT, the consumer cannot join",
        "set session.timeout.ms between group.min.session.timeout.ms=6000 and "
        "group.max.session.timeout.ms=1800000 (e.g. 45000), or change the broker bounds",
        {"session_timeout_ms": 3000, "broker_min_ms": 6000, "broker_max_ms": 1_800_000, "evidence_rows": 1},
        rebalances=0,
    ),
    # a roundrobin member joins range members: refused once; one assignor set among accepted members
    Want(
        "R08",
        R08,
        "critical",
        1.0,
        1,
        f"{client(R08, 2)} offered only roundrobin; the group uses range: 1 JoinGroup refused with "
        "INCONSISTENT_GROUP_PROTOCOL",
        "use one partition.assignment.strategy in every member of the group (upgrade with KIP-429's two "
        "rolling bounces listing both assignors), and give each application its own group.id",
        {"refused_joins": 1, "assignor_sets": 1, "evidence_rows": 1},
        rebalances=0,
    ),
    # a new member's join, then three rejoins "to revoke": four rounds for one trigger
    Want(
        "R09",
        R09,
        "warning",
        1.0,
        1,
        "1 trigger needed up to 4 cooperative rounds (expected 2: one revoking, one assigning), "
        f"{ANY} s in all",
        "upgrade clients and assignors (KAFKA-8767) and use one "
        "partition.assignment.strategy=cooperative-sticky everywhere",
        {"max_rounds": 4, "evidence_rows": 4},
        rebalances=4,
    ),
    # static member 2 restarts after 50 s against a 30 s session timeout: evicted 30 s after its last
    # heartbeat; the fix asks for ≥ 30 s × 1.2 rounded up to 5 s
    Want(
        "R11",
        R11,
        "warning",
        0.9,
        1,
        f"static member {R11}-2: evicted 1 time after 30 s without a heartbeat (session.timeout.ms 30 s); "
        "the instance rejoined with a new member id afterwards: the restart took longer than the session "
        "timeout, costing two rebalances instead of none (confidence 0.90: the restart time is measured "
        "from the last heartbeat, not from the process stop)",
        "raise session.timeout.ms above the p99 restart time (≥ 40000; now 30000) so a restart is a static "
        "replacement without a rebalance",
        {"evictions": 1, "max_gap_ms": 30_000, "session_timeout_ms": 30_000},
        rebalances=2,
    ),
    # static member 0 silent for 150 s (+ up to a heartbeat interval) under a 600 s session timeout
    Want(
        "R12",
        R12,
        "warning",
        0.7,
        1,
        f"static member {R12}-0 went silent for up to {ANY} s (1 time) without a rebalance: "
        "session.timeout.ms=600000 lets a dead member keep its partitions idle for 10 min (confidence "
        "0.70: idle partitions are inferred: the request log does not show consumer lag)",
        "balance restart tolerance against failover: set session.timeout.ms just above the p99 restart "
        f"time (now 600000; silences seen up to {ANY} ms)",
        {"session_timeout_ms": 600_000},
        rebalances=0,
    ),
    # four dynamic pods, each closed (LeaveGroup) and replaced: two rebalances per pod
    Want(
        "R13",
        R13,
        "warning",
        0.9,
        4,
        f"a rolling deploy replaced 4 dynamic members in {ANY} s: each pod's LeaveGroup and its successor's "
        f"join cost 8 rebalances (2.0 per pod, {ANY} s rebalancing) (confidence 0.90: pods are paired by "
        "time: a LeaveGroup and a new dynamic member within the replace window)",
        "set group.instance.id per pod (e.g. the StatefulSet ordinal) with session.timeout.ms above the "
        "restart time, plus partition.assignment.strategy=cooperative-sticky — or group.protocol=consumer "
        "(KIP-848)",
        {"pods_replaced": 4, "rebalances": 8, "evidence_rows": 8},
        rebalances=8,
    ),
    # four runs of a lone short-lived consumer: each first join waits exactly the 3 s initial delay
    Want(
        "R14",
        R14,
        "warning",
        1.0,
        4,
        "the group emptied and formed again 4 times (short-lived consumers); each first join waited 3 s "
        "for group.initial.rebalance.delay.ms=3000",
        "for test or ephemeral clusters set group.initial.rebalance.delay.ms=0 on the brokers; for "
        "short-lived consumers reuse one long-lived member or use assign() instead of subscribe()",
        {"empty_cycles": 4, "median_first_join_ms": 3000, "evidence_rows": 4},
        rebalances=4,
    ),
    # KIP-394: the leaked pending member holds the join phase until its 45 s session timeout
    Want(
        "R15",
        R15,
        "warning",
        1.0,
        1,
        f"consumer-{R15}-3 sent JoinGroup twice and got MEMBER_ID_REQUIRED twice within 1000 ms (1 time); "
        "the first member id was never used and stayed pending, holding the join phase for 45 s",
        "upgrade the client (the KIP-394 double-join bug is fixed in newer client releases, e.g. librdkafka "
        "PR #5570); until then a lower session.timeout.ms shortens the hold",
        {"leaked_members": 1, "evidence_rows": 2},
        rebalances=1,
    ),
    # the leader rejoins every 60 s of a 5-minute life: at 1, 2, 3 and 4 minutes
    Want(
        "R16",
        R16,
        "warning",
        1.0,
        4,
        "4 rebalances with unchanged membership were started by members rejoining because of topic "
        f"metadata ('cached metadata has changed'), {ANY} ms rebalancing",
        "avoid churny regex subscriptions, batch topic creation, or use group.protocol=consumer (KIP-848 "
        "matches regexes on the broker); a larger metadata.max.age.ms spaces the refreshes",
        {"metadata_rebalances": 4, "evidence_rows": 4},
        rebalances=4,
    ),
    # five consumers, two partitions: three idle, in the one generation
    Want(
        "R17",
        R17,
        "warning",
        1.0,
        1,
        "3 of 5 members got no partitions (2 partitions assigned) in 1 generation: they consume nothing "
        "but still rebalance with the group",
        "right-size the group: at most 2 members for 2 partitions, or add partitions",
        {"idle_members": 3, "members": 5, "partitions": 2, "evidence_rows": 1},
        rebalances=0,
    ),
    # the ninth consumer against group.max.size=8
    Want(
        "R18",
        R18,
        "critical",
        1.0,
        1,
        f"1 JoinGroup from consumer-{R18}-9 refused with GROUP_MAX_SIZE_REACHED (group.max.size=8, 8 "
        "members at most)",
        "raise group.max.size on the brokers to ≥ 9 or shrink the group",
        {"refused_joins": 1, "peak_members": 8, "evidence_rows": 1},
        rebalances=0,
    ),
    # consumer 1 never sends SyncGroup (rebalance timeout 20 s): removed on the pending-sync expiry
    Want(
        "R19",
        R19,
        "warning",
        1.0,
        1,
        f"{client(R19, 1)} got the JoinGroup answer but never sent SyncGroup within the rebalance timeout "
        "(20 s) and was removed, starting another rebalance",
        "keep the rebalance listener (onPartitionsRevoked/onPartitionsAssigned) free of blocking work and "
        "check the leader's assignor performance and health; max.poll.interval.ms bounds the wait",
        {"pending_sync_expiries": 1, "slow_syncs": 0, "evidence_rows": 1},
        rebalances=1,
    ),
    # the coordinator moves once, broker-1 → broker-2, without errors or a rebalance
    Want(
        "R20",
        R20,
        "warning",
        1.0,
        1,
        "the group's coordinator moved 1 time (broker-1 → broker-2); 0 rebalances followed within 60 s",
        "check the brokers' health (restarts, GC, controller moves), offsets.topic.replication.factor ≥ 3 "
        "for __consumer_offsets, and stagger broker restarts",
        {"coordinator_moves": 1, "coordinator_errors": 0, "evidence_rows": 2},
        rebalances=0,
    ),
    # three KIP-848 members, 36 ConsumerGroupHeartbeats each, no classic request
    Want(
        "R23",
        R23,
        "info",
        1.0,
        108,
        "3 members speak the KIP-848 consumer protocol (108 ConsumerGroupHeartbeat requests): the classic "
        "coordinator model does not validate this group",
        "analyse the group with a KIP-848 state machine; if mixed, finish the migration "
        "(group.protocol=consumer on every member) or roll back consistently",
        {"consumer_group_heartbeats": 108, "classic_requests": 0},
        rebalances=0,
    ),
    # a Streams-like leader probes every 10 minutes of a 32-minute life: at 10, 20, 30
    Want(
        "R22",
        R22,
        "warning",
        0.7,
        3,
        "3 rebalances with identical membership every 10 min (probing.rebalance.interval.ms=600000): "
        "warm-up replicas are not catching up (confidence 0.70: recognised by cadence and unchanged "
        "membership: the log does not say the clients are Kafka Streams)",
        "let warm-up tasks catch up: raise acceptable.recovery.lag, max.warmup.replicas or "
        "num.standby.replicas, or raise probing.rebalance.interval.ms",
        {"evidence_rows": 3},
        rebalances=3,
    ),
]


HB, JG, SG, LG, OC = "HEARTBEAT", "JOIN_GROUP", "SYNC_GROUP", "LEAVE_GROUP", "OFFSET_COMMIT"
#: the evidence rows' APIs, in time order, as each incident's definition shows it
EVIDENCE: dict[tuple[str, str], list[str]] = {
    ("R02", R02): [HB, HB],  # each crashed member's last heartbeat (nothing from them afterwards)
    ("R03", R03): [LG, OC, JG],  # the poll-timeout leave, the commit refused when poll() returns, the rejoin
    ("R04", R04): [HB, HB, JG],  # the last heartbeat; the same id speaking again (refused), its rejoin
    ("R05", R05): [JG, JG],
    ("R05", R21): [JG],
    ("R06", R06): [HB] * 4,
    ("R07", R07): [JG],  # the refused join
    ("R08", R08): [JG],
    ("R09", R09): [JG] * 4,  # one join per round
    ("R11", R11): [HB, JG],  # the last heartbeat, the restarted instance's join
    ("R12", R12): [HB, HB],  # the heartbeats around the silence
    ("R13", R13): [LG, JG] * 4,  # per pod: its LeaveGroup, its successor's join
    ("R14", R14): [JG] * 4,  # each run's first join
    ("R15", R15): [JG, JG],  # the double join
    ("R16", R16): [JG] * 4,  # the leader's rejoins
    ("R17", R17): [SG],  # the leader's SyncGroup with the empty assignments
    ("R18", R18): [JG],
    ("R19", R19): [JG],  # the answered join never followed by a SyncGroup
    ("R20", R20): [HB, OC],  # the last request to broker-1, the first to broker-2
    ("R22", R22): [JG] * 3,
    ("R23", R23): ["CONSUMER_GROUP_HEARTBEAT"] * 2,
}


#: The hosts a finding's summary names besides its members (issue 26: "names hosts/instances as the log shows
#: them"), as the incidents give them: consumer i of an incident connects from 10.1.0.(10+i) (the KIP-848
#: incident's from 10.3.0.(10+i)); more than five are cut to "and N more".
_FIVE_AND_3 = "; hosts 10.1.0.10, 10.1.0.11, 10.1.0.12, 10.1.0.13, 10.1.0.14 and 3 more"
WHO: dict[tuple[str, str], str] = {
    ("R04", R04): "; host 10.1.0.11",  # static member 1
    ("R09", R09): "; hosts 10.1.0.10, 10.1.0.13",
    ("R11", R11): "; host 10.1.0.12",  # static member 2
    ("R12", R12): "; host 10.1.0.10",  # static member 0
    ("R13", R13): _FIVE_AND_3,  # eight pods' members
    ("R15", R15): "; host 10.1.0.12",  # consumer 2 (client id …-3)
    ("R16", R16): "; host 10.1.0.10",  # the leader, consumer 0
    ("R17", R17): "; hosts 10.1.0.12, 10.1.0.13, 10.1.0.14",  # the three idle members
    ("R18", R18): "; host 10.1.0.18",  # the ninth consumer (client id …-9)
    ("R22", R22): "; host 10.1.0.10",
    ("R23", R23): "; hosts 10.3.0.10, 10.3.0.11, 10.3.0.12",
    ("R01", "inc-r01-storm"): _FIVE_AND_3,
    ("R21", R21): "; host 10.1.0.11",  # consumer 1
}


def with_who(template: str, rule_id: str, group: str) -> str:
    """``template`` with the hosts clause where the summary puts it: before "(confidence …)", else last."""
    clause = WHO.get((rule_id, group), "")
    at = template.find(" (confidence")
    return template + clause if at < 0 else template[:at] + clause + template[at:]


@pytest.mark.parametrize("want", WANTS, ids=lambda w: f"{w.rule_id}-{w.group}")
def test_the_finding_is_exactly_the_incident(want: Want) -> None:
    f = finding(want.rule_id, want.group)
    assert (f.severity, f.confidence, f.occurrences) == (want.severity, want.confidence, want.occurrences)
    assert like(with_who(want.summary, want.rule_id, want.group), f.summary), f.summary
    assert like(want.fix, f.fix), f.fix
    for name, value in want.metrics.items():
        assert f.metric(name) == value, (name, f.metric(name))
    rows = f.metric("evidence_rows")
    assert rows is not None
    assert len(f.evidence) == min(rows, AuditSettings().evidence_cap)
    assert f.metric("evidence_omitted") == max(0, rows - AuditSettings().evidence_cap)
    if want.rebalances is not None:
        assert len(f.rebalance_seqs) == want.rebalances
    assert [e.api for e in f.evidence] == EVIDENCE[(want.rule_id, want.group)]
    # evidence at different times: a window that lasts
    if len({e.arrival_ms for e in f.evidence}) > 1:
        assert f.window_start_ms < f.window_end_ms


def test_cost_metrics_add_up_the_blamed_rebalances() -> None:
    """``rebalance_time_caused_ms``: the blamed rebalances' durations added up; members × seconds: each
    duration times the members it stopped (before ∪ after), in seconds."""
    for want in WANTS:
        f = finding(want.rule_id, want.group)
        gi = inputs_of()[want.group]
        rbs = [gi.rebalance(s) for s in f.rebalance_seqs]
        durations = [rb.total_duration_ms or 0 for rb in rbs if rb is not None]
        stopped = [
            len(set(rb.members_before) | set(rb.members_after)) * (rb.total_duration_ms or 0) / 1000
            for rb in rbs
            if rb is not None
        ]
        assert f.metric("rebalance_time_caused_ms") == float(sum(durations)), want.rule_id
        assert f.metric("member_seconds_without_assignment") == pytest.approx(sum(stopped)), want.rule_id


def test_storm_counts_come_from_the_log() -> None:
    """R01 (eight members joining 15 s apart while the leader rejoins every 40 s): the rebalances of the
    hour, the heartbeats and those answered REBALANCE_IN_PROGRESS, counted from the group's log here."""
    g = "inc-r01-storm"
    f = finding("R01", g)
    gi = inputs_of()[g]
    # the rebalances the log shows starting (not the expiries after its last request), all in 6 minutes
    rbs = [rb for rb in gi.rebalances if rb.started_ms <= gi.requests[-1].arrival_ms]
    start, end = rbs[0].started_ms, max(rb.ended_ms or rb.started_ms for rb in rbs)
    heartbeats = [r for r in gi.requests if r.api_name == "HEARTBEAT" and start <= r.arrival_ms <= end]
    busy = [r for r in heartbeats if r.error_name == "REBALANCE_IN_PROGRESS"]
    n = len(rbs)
    triggers = Counter(rb.trigger for rb in rbs)
    top, top_n = triggers.most_common(1)[0]
    assert top == "leader_rejoin"  # the leader's 8 rejoins outnumber the 7 later joins
    # the pod behind it: the leader's host started its first rebalance and the 8 rejoins
    hosts = Counter(
        next(r.host for r in gi.requests if rb.trigger_member_id in (r.member_id, r.response_member_id))
        for rb in rbs
        if rb.trigger_member_id
    )
    (pod, pod_n), *_ = hosts.most_common()
    assert (pod, pod_n) == ("10.1.0.10", 9)
    assert (f.severity, f.confidence, f.occurrences) == ("warning", 1.0, n)
    assert like(
        f"{n} rebalances within {ANY} s (threshold 10/hour), {ANY} s spent rebalancing; dominant trigger "
        f"leader_rejoin ({top_n} of {n}, see R16/R22); driven by host {pod} ({pod_n} of {n} rebalances "
        f"started by its members); {len(busy)} of {len(heartbeats)} heartbeats answered "
        # the hosts the sentence does not name yet: all but the driver's
        "REBALANCE_IN_PROGRESS; hosts 10.1.0.11, 10.1.0.12, 10.1.0.13, 10.1.0.14, 10.1.0.15 and 2 more",
        f.summary,
    ), f.summary
    assert f.fix == (
        "remove the dominant trigger (leader_rejoin); then make rebalances cheap: group.instance.id (static "
        "membership), partition.assignment.strategy=cooperative-sticky, or group.protocol=consumer (KIP-848)"
    )
    assert f.metric("rebalances_in_hour") == n
    assert f.metric("heartbeats") == len(heartbeats)
    assert f.metric("heartbeats_rebalance_in_progress") == len(busy)
    assert f.metric("time_rebalancing_ms") == sum(rb.total_duration_ms or 0 for rb in rbs)
    assert f.rebalance_seqs == tuple(sorted(rb.rebalance_seq for rb in rbs))
    assert f.window_start_ms == start


def test_duplicate_instance_counts_the_fenced_requests_of_the_log() -> None:
    """R10: consumers 0 and 2 share the instance id ``…-0``: every request the broker answered
    FENCED_INSTANCE_ID (counted from the group's log) is an occurrence; 20 rows of evidence at most."""
    g = "inc-r10-duplicate-instance"
    f = finding("R10", g)
    fenced = [r for r in inputs_of()[g].requests if "FENCED_INSTANCE_ID" in r.errors]
    n = len(fenced)
    assert (f.severity, f.confidence, f.occurrences) == ("critical", 1.0, n)
    assert f.summary == (
        f"group.instance.id {g}-0 is used by 2 client connections ({client(g, 0)}, {client(g, 2)}); they "
        f"fence each other: {n} requests answered FENCED_INSTANCE_ID"
    )
    assert f.fix == (
        "give every replica a unique group.instance.id (e.g. the StatefulSet ordinal, not a hostname a "
        "Deployment reuses)"
    )
    cap = AuditSettings().evidence_cap
    assert f.metric("fenced_requests") == n and f.metric("connections") == 2
    assert f.metric("evidence_rows") == n and f.metric("evidence_omitted") == n - cap
    assert len(f.evidence) == cap
    assert f.client_ids == (f"consumer-{g}-1", f"consumer-{g}-3")


def test_commit_races_count_the_refused_commits_of_the_log() -> None:
    """R21: consumer 1 keeps committing while removed from the group: every OffsetCommit of the log with
    a partition error is a failed commit, counted once by its error; the partitions they refused (four a
    commit here) are counted apart, so the numbers add up: one error tally per commit, the commits the
    occurrences and the evidence."""
    g = R21
    f = finding("R21", g)
    failed = [r for r in inputs_of()[g].requests if r.api_name == "OFFSET_COMMIT" and r.commit_errors]
    tally = Counter(e for r in failed for e in r.commit_errors)
    assert list(tally) == ["UNKNOWN_MEMBER_ID"]
    n = len(failed)
    assert tally["UNKNOWN_MEMBER_ID"] > n  # more partitions than commits: the old text said "n … ×4n"
    assert (f.severity, f.confidence, f.occurrences) == ("warning", 1.0, n)
    assert f.summary == (
        f"{n} offset commits failed because the group was rebalancing (UNKNOWN_MEMBER_ID ×{n}; "
        f"{tally['UNKNOWN_MEMBER_ID']} partitions in all): the work behind them may be processed twice"
        + WHO[("R21", g)]
    )
    assert f.fix == (
        "commit synchronously in ConsumerRebalanceListener.onPartitionsRevoked and make processing "
        "idempotent; partition.assignment.strategy=cooperative-sticky revokes fewer partitions"
    )
    assert f.metric("failed_commits") == n and f.metric("evidence_rows") == n


def test_slow_heartbeats_window_is_the_members_heartbeats() -> None:
    """R06: the finding spans the member's heartbeats (its cadence is the evidence, the three widest gaps
    the rows shown): from its first heartbeat to its last."""
    f = finding("R06", R06)
    beats = [
        r.arrival_ms
        for r in inputs_of()[R06].requests
        if r.api_name == "HEARTBEAT" and r.client_id == f"consumer-{R06}-2"
    ]
    assert (f.window_start_ms, f.window_end_ms) == (beats[0], beats[-1])
