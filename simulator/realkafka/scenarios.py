"""The scenario library: what real clients do to real brokers, one group per scenario.

Each scenario is a script over :class:`~simulator.realkafka.recording.Run`: start consumer processes
(Java ``kafka-clients`` or librdkafka) with configs, let them poll, stall, close, ``kill -9`` them,
restart them; kill or stop brokers. The run records the timeline as ground truth. Timeouts are small
(session 6 s, heartbeat 1.5 s, max poll interval 30 s unless the scenario says otherwise) so that the
whole library records in minutes; client ids are the clients' defaults.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from simulator.realkafka.clients import ClientProcess
from simulator.realkafka.recording import Profile, Run, Scenario

#: Broker settings per cluster profile. Not Kafka's defaults where a scenario needs to see the setting
#: at work (and the replay must infer it): the initial rebalance delay, the session-timeout bounds.
PROFILES: dict[str, Profile] = {
    "single": Profile(
        "single",
        1,
        {
            "group.initial.rebalance.delay.ms": "1000",
            "group.min.session.timeout.ms": "4000",
            "group.max.session.timeout.ms": "120000",
        },
        "one broker; initial rebalance delay 1 s, session timeout bounds 4 s .. 120 s",
    ),
    "maxsize": Profile(
        "maxsize",
        1,
        {
            "group.initial.rebalance.delay.ms": "1000",
            "group.min.session.timeout.ms": "4000",
            "group.max.size": "5",
        },
        "one broker with group.max.size=5",
    ),
    "three": Profile(
        "three",
        3,
        {
            "group.initial.rebalance.delay.ms": "1000",
            "group.min.session.timeout.ms": "4000",
            "offsets.topic.num.partitions": "3",
        },
        "three brokers, __consumer_offsets replicated 3 times: the coordinator can move",
    ),
    "audit": Profile(
        "audit",
        1,
        {
            "group.initial.rebalance.delay.ms": "1000",
            "group.min.session.timeout.ms": "4000",
            "group.max.session.timeout.ms": "120000",
        },
        "one broker (the single profile's settings): the audit rules' incidents made by real clients",
    ),
    "held": Profile(
        "held",
        1,
        {
            "group.initial.rebalance.delay.ms": "1000",
            "group.min.session.timeout.ms": "4000",
        },
        "one broker (the single profile's settings): a join phase held past the clients' request timeouts",
    ),
}

COOPERATIVE = "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"
RANGE = "org.apache.kafka.clients.consumer.RangeAssignor"


def _pair(r: Run, start: Callable[..., ClientProcess], **config: Any) -> tuple[ClientProcess, ClientProcess]:
    """Processes p0 and p1 started by ``start`` (``r.java`` or ``r.rdkafka``) with ``config``, both
    assigned: the two-member group most scenarios begin with."""
    p0 = start("p0", **config)
    p1 = start("p1", **config)
    r.assigned(p0)
    r.assigned(p1)
    return p0, p1


def birth(r: Run) -> None:
    """Three processes start within a few hundred ms: the group forms in one join phase, held open by
    the initial rebalance delay."""
    procs = [r.java(f"p{i}") for i in range(3)]
    for p in procs:
        r.assigned(p)
    r.sleep(5)
    for p in procs:
        r.close(p)


def scale_up(r: Run) -> None:
    """One member, then a second and a third, each joining a Stable group (a rebalance each)."""
    p0 = r.java("p0")
    r.assigned(p0)
    r.sleep(3)
    p1 = r.java("p1")
    r.assigned(p1)
    r.sleep(3)
    p2 = r.java("p2")
    r.assigned(p2)
    r.sleep(4)
    for p in (p2, p1, p0):
        r.close(p)


def scale_down(r: Run) -> None:
    """Three members leave one at a time with a clean close (LeaveGroup each)."""
    procs = [r.java(f"p{i}") for i in range(3)]
    for p in procs:
        r.assigned(p)
    r.sleep(4)
    r.close(procs[2])
    r.sleep(4)
    r.close(procs[1])
    r.sleep(4)
    r.close(procs[0])


def crash(r: Run) -> None:
    """A member's process is killed (no LeaveGroup): the coordinator expires its session."""
    p0, p1 = _pair(r, r.java)
    r.sleep(4)
    r.kill(p1)
    r.sleep(14)  # session 6 s, then the rebalance
    r.close(p0)


def poll_timeout(r: Run) -> None:
    """Processing slower than max.poll.interval.ms: the client's heartbeat thread leaves the group,
    the next poll joins again."""
    p0, p1 = _pair(r, r.java, max_poll_interval_ms=6000)
    r.sleep(3)
    r.stall(p1, 10000)
    r.sleep(16)
    r.close(p1)
    r.close(p0)


#: the control's session timeout: its restart (a JVM's start and first JoinGroup, 1.5-2 s on a quiet box)
#: must come inside it however loaded the box is; at 6 s a box running the test suite beside it took longer
#: and the broker evicted the member (R11, rightly, on a control that did not happen as designed)
RESTART_INSIDE: dict[str, Any] = {"session_timeout_ms": 20_000, "heartbeat_interval_ms": 2_000}


def static_restart_inside(r: Run) -> None:
    """Static members; one restarts within its session timeout: replaced without a rebalance."""
    p0 = r.java("p0", group_instance_id="static-inside-0", **RESTART_INSIDE)
    p1 = r.java("p1", group_instance_id="static-inside-1", **RESTART_INSIDE)
    r.assigned(p0)
    r.assigned(p1)
    r.sleep(3)
    r.kill(p1)
    r.sleep(1.5)
    p1b = r.java("p1", group_instance_id="static-inside-1", **RESTART_INSIDE)
    r.assigned(p1b)
    r.sleep(4)
    r.close(p1b)
    r.close(p0)


def static_restart_beyond(r: Run) -> None:
    """A static member down longer than its session timeout: evicted (a rebalance), and a rebalance
    again when it comes back."""
    p0 = r.java("p0", group_instance_id="static-beyond-0")
    p1 = r.java("p1", group_instance_id="static-beyond-1")
    r.assigned(p0)
    r.assigned(p1)
    r.sleep(3)
    r.kill(p1)
    r.sleep(12)
    p1b = r.java("p1", group_instance_id="static-beyond-1")
    r.assigned(p1b)
    r.sleep(4)
    r.close(p1b)
    r.close(p0)


def static_duplicate(r: Run) -> None:
    """Two processes configured with the same group.instance.id: the newer one takes the id, the older
    is fenced (FENCED_INSTANCE_ID)."""
    p0 = r.java("p0", group_instance_id="dup-0")
    p1 = r.java("p1", group_instance_id="dup-1")
    r.assigned(p0)
    r.assigned(p1)
    r.sleep(3)
    twin = r.java("twin", group_instance_id="dup-1")
    r.assigned(twin)
    r.sleep(6)
    r.close(twin)
    r.kill(p1)  # a fenced consumer is unusable; its process goes
    r.close(p0)


def rolling_restart(r: Run) -> None:
    """Three pods restarted one after another (close, start anew), every Java pod with the default
    client id ``consumer-<group>-1``."""
    pods = [r.java(f"pod{i}") for i in range(3)]
    for p in pods:
        r.assigned(p)
    r.sleep(3)
    for i in range(3):
        r.close(pods[i])
        pods[i] = r.java(f"pod{i}")
        r.assigned(pods[i])
        r.sleep(3)
    for p in pods:
        r.close(p)


def eager_range(r: Run) -> None:
    """The eager protocol (RangeAssignor only): every rebalance revokes everything first."""
    procs = []
    for i in range(3):
        procs.append(r.java(f"p{i}", partition_assignment_strategy=RANGE))
        r.assigned(procs[-1])
        r.sleep(2)
    r.sleep(2)
    r.close(procs[0])
    r.sleep(4)
    for p in procs[1:]:
        r.close(p)


def cooperative(r: Run) -> None:
    """CooperativeStickyAssignor only: incremental rebalances, a second round when partitions move."""
    procs = []
    for i in range(3):
        procs.append(r.java(f"p{i}", partition_assignment_strategy=COOPERATIVE))
        r.assigned(procs[-1])
        r.sleep(3)
    r.close(procs[1])
    r.sleep(5)
    for p in (procs[0], procs[2]):
        r.close(p)


def mixed_assignors(r: Run) -> None:
    """An upgrade from eager to cooperative: members with [cooperative, range] and [range] agree on range;
    once every member offers cooperative first, the group switches."""
    a = r.java("a", partition_assignment_strategy=f"{COOPERATIVE},{RANGE}")
    b = r.java("b", partition_assignment_strategy=RANGE)
    r.assigned(a)
    r.assigned(b)
    r.sleep(3)
    r.close(b)
    b2 = r.java("b", partition_assignment_strategy=f"{COOPERATIVE},{RANGE}")
    r.assigned(b2)
    r.sleep(5)
    r.close(a)
    r.close(b2)


def partitions_added(r: Run) -> None:
    """The topic gains partitions: the leader's metadata refresh sees them and the group rebalances."""
    p0, p1 = _pair(r, r.java, metadata_max_age_ms=2000)
    r.sleep(3)
    r.rec.admin.add_partitions(r.topic, 6)
    r.act("add partitions", topic=r.topic, total=6)
    r.sleep(10)
    r.close(p1)
    r.close(p0)


def commit_race(r: Run) -> None:
    """Members committing after every poll while records flow; a new member joins and another leaves:
    commits race the rebalance (REBALANCE_IN_PROGRESS / ILLEGAL_GENERATION answers)."""
    r.produce_while_running(200)
    p0, p1 = _pair(r, r.java, commit="sync", processing_ms=150, partition_assignment_strategy=RANGE)
    r.sleep(3)
    p2 = r.java("p2", commit="sync", processing_ms=150, partition_assignment_strategy=RANGE)
    r.assigned(p2)
    r.sleep(3)
    r.close(p0)
    r.sleep(4)
    r.close(p2)
    r.close(p1)


def invalid_session_timeout(r: Run) -> None:
    """Session timeouts outside the broker's bounds (4 s .. 120 s): INVALID_SESSION_TIMEOUT."""
    ok = r.java("ok")
    r.assigned(ok)
    low = r.java("low", session_timeout_ms=2000, heartbeat_interval_ms=500)
    r.sleep(4)
    r.kill(low)
    high = r.java("high", session_timeout_ms=200000)
    r.sleep(4)
    r.kill(high)
    r.close(ok)


def burst(r: Run) -> None:
    """Fifty consumers of one process start together: fifty JoinGroups within a few milliseconds."""
    p = r.java("fifty", consumers=50)
    r.assigned(p, count=50, timeout_s=90)
    r.sleep(5)
    r.close(p)


def older_client(r: Run) -> None:
    """The previous release line's Java client against this broker: join, scale, leave, crash."""
    old = r.rec.rel.older_client
    p0 = r.java("p0", version=old)
    r.assigned(p0)
    r.sleep(2)
    p1 = r.java("p1", version=old)
    r.assigned(p1)
    p2 = r.java("p2", version=old)
    r.assigned(p2)
    r.sleep(3)
    r.close(p2)
    r.sleep(3)
    r.kill(p1)
    r.sleep(12)
    r.close(p0)


def rdkafka_basic(r: Run) -> None:
    """librdkafka consumers: the group forms, one closes, one crashes."""
    procs = [r.rdkafka(f"p{i}") for i in range(3)]
    for p in procs:
        r.assigned(p)
    r.sleep(4)
    r.close(procs[2])
    r.sleep(4)
    r.kill(procs[1])
    r.sleep(12)
    r.close(procs[0])


def rdkafka_cooperative(r: Run) -> None:
    """librdkafka with cooperative-sticky and static membership; a static member restarts."""
    p0 = r.rdkafka("p0", partition_assignment_strategy="cooperative-sticky", group_instance_id="rd-0")
    p1 = r.rdkafka("p1", partition_assignment_strategy="cooperative-sticky", group_instance_id="rd-1")
    r.assigned(p0)
    r.assigned(p1)
    r.sleep(3)
    p2 = r.rdkafka("p2", partition_assignment_strategy="cooperative-sticky")
    r.assigned(p2)
    r.sleep(3)
    r.kill(p1)
    r.sleep(1.5)
    p1b = r.rdkafka("p1", partition_assignment_strategy="cooperative-sticky", group_instance_id="rd-1")
    r.assigned(p1b)
    r.sleep(4)
    for p in (p2, p1b, p0):
        r.close(p)


def mixed_clients(r: Run) -> None:
    """A Java and a librdkafka consumer in one group (both offer range)."""
    j = r.java("java", partition_assignment_strategy=RANGE)
    r.assigned(j)
    k = r.rdkafka("rdkafka", partition_assignment_strategy="range")
    r.assigned(k)
    r.sleep(4)
    r.close(j)
    r.sleep(4)
    r.close(k)


def kip848(r: Run) -> None:
    """A KIP-848 consumer group (group.protocol=consumer): ConsumerGroupHeartbeat, no JoinGroup."""
    p0 = r.java("p0", group_protocol="consumer", session_timeout_ms=None, heartbeat_interval_ms=None)
    r.assigned(p0)
    p1 = r.java("p1", group_protocol="consumer", session_timeout_ms=None, heartbeat_interval_ms=None)
    r.assigned(p1)
    r.sleep(5)
    r.close(p1)
    r.sleep(3)
    r.close(p0)


def max_size(r: Run) -> None:
    """Seven consumers against group.max.size=5: five start together, then two more are refused
    (GROUP_MAX_SIZE_REACHED)."""
    first = r.java("five", consumers=5)
    r.assigned(first, count=5)
    r.sleep(3)
    extra = r.java("extra", consumers=2)
    r.sleep(6)
    r.kill(extra)
    r.close(first)


def coordinator_moves(r: Run) -> None:
    """The broker coordinating the group is killed (SIGKILL): clients find the new coordinator, the group
    is loaded there and rebalances; the broker comes back."""
    p0, p1 = _pair(r, r.java)
    r.sleep(4)
    node = r.rec.admin.coordinator(r.group)
    r.act("coordinator", broker=node)
    if node is None:
        raise RuntimeError("no coordinator found")
    r.rec.cluster.kill(node)
    r.act("kill -9 broker", broker=node)
    r.sleep(25)
    r.rec.cluster.restart(node)
    r.act("broker restarted", broker=node)
    r.sleep(6)
    r.close(p1)
    r.close(p0)


def coordinator_shutdown(r: Run) -> None:
    """The coordinator broker is stopped cleanly (SIGTERM: controlled shutdown moves leadership)."""
    p0, p1 = _pair(r, r.java)
    r.sleep(4)
    node = r.rec.admin.coordinator(r.group)
    r.act("coordinator", broker=node)
    if node is None:
        raise RuntimeError("no coordinator found")
    r.rec.cluster.shutdown(node)
    r.act("broker stopped", broker=node)
    r.sleep(12)
    r.close(p1)
    r.close(p0)
    r.rec.cluster.restart(node)
    r.act("broker restarted", broker=node)


def held_join(r: Run) -> None:
    """A join phase held open by a slow member: p0 (max.poll.interval.ms 60 s, so the group's rebalance
    timeout is 60 s) is stalled in its poll loop for 35 s when a new member p3 starts a rebalance. The
    others (max.poll.interval.ms 8 s) rejoin at once and wait; a Java client gives up on a JoinGroup after
    max(request.timeout.ms, rebalance timeout + 5 s) — p2 with request.timeout.ms 10 s after 13 s, p1 and p3
    with the default 30 s after 30 s — disconnects and sends its JoinGroup again (same member id). Kafka
    keeps only the latest JoinGroup of a member (``GroupMetadata.updateMember`` replaces the callback):
    the first ones are never answered. The broker answers the re-sent ones NONE when p0 rejoins."""
    p0 = r.java("p0", max_poll_interval_ms=60000)
    r.assigned(p0)  # born with one member: its first join phase shows the initial rebalance delay
    p1 = r.java("p1", max_poll_interval_ms=8000)
    p2 = r.java("p2", max_poll_interval_ms=8000, request_timeout_ms=10000)
    for p in (p1, p2):
        r.assigned(p)
    r.sleep(3)
    r.stall(p0, 35000)
    r.sleep(1)
    p3 = r.java("p3", max_poll_interval_ms=8000)
    r.assigned(p3, timeout_s=90)
    r.sleep(5)
    for p in (p3, p2, p1, p0):
        r.close(p)


#: range and cooperative-sticky assignments after a pause (java/ScenarioClient)
SLOW_RANGE = "ScenarioClient$SlowRangeAssignor"
SLOW_COOPERATIVE = "ScenarioClient$SlowCooperativeAssignor"


def crash_loop(r: Run) -> None:
    """A pod in a crash loop: p1 starts, gets its partitions and is killed (kill -9, no LeaveGroup), six
    times over, beside a healthy p0. Each start and each session expiry is a rebalance: a storm driven by
    one pod, and repeated evictions."""
    p0 = r.java("p0")
    r.assigned(p0)
    for _ in range(6):
        p1 = r.java("p1")
        r.assigned(p1)
        r.sleep(1)
        r.kill(p1)
        r.sleep(8)  # session 6 s: the eviction's rebalance before the next start
    r.close(p0)


def static_poll_timeout(r: Run) -> None:
    """A static member's poll loop stalls past max.poll.interval.ms (6 s): a static member sends no
    LeaveGroup, so the group notices only when its session (6 s) expires; the process then polls again
    and rejoins with its instance id."""
    p0 = r.java("p0", group_instance_id="stalled-0", max_poll_interval_ms=6000)
    p1 = r.java("p1", group_instance_id="stalled-1", max_poll_interval_ms=6000)
    r.assigned(p0)
    r.assigned(p1)
    r.sleep(3)
    r.stall(p1, 16000)
    r.sleep(24)
    r.close(p1)
    r.close(p0)


def slow_heartbeat(r: Run) -> None:
    """heartbeat.interval.ms 3 s against session.timeout.ms 6 s: two late heartbeats evict a member (the
    client's rule of thumb is a third of the session timeout)."""
    p0, p1 = _pair(r, r.java, heartbeat_interval_ms=3000)
    r.sleep(25)
    r.close(p1)
    r.close(p0)


def static_frozen(r: Run) -> None:
    """A static member with session.timeout.ms 60 s whose process is frozen (SIGSTOP) for 35 s, as a long
    GC pause or a paused VM does: the group waits without a rebalance while its partitions stand idle."""
    cfg: dict[str, Any] = {
        "session_timeout_ms": 60000,
        "heartbeat_interval_ms": 3000,
        "max_poll_interval_ms": 120000,
    }
    p0 = r.java("p0", group_instance_id="frozen-0", **cfg)
    p1 = r.java("p1", group_instance_id="frozen-1", **cfg)
    r.assigned(p0)
    r.assigned(p1)
    r.sleep(4)
    r.freeze(p1, 35)
    r.sleep(5)
    r.close(p1)
    r.close(p0)


def short_lived(r: Run) -> None:
    """A consumer run as a short job, four times: each run finds the group Empty, waits the initial
    rebalance delay, reads, and leaves."""
    for _ in range(4):
        p = r.java("job")
        r.assigned(p)
        r.sleep(1)
        r.close(p)
        r.sleep(1)


def _slow_leader_group(r: Run, session_timeout_ms: int, cooperative: bool) -> None:
    r.produce_while_running(100)
    timeouts: dict[str, Any] = {
        "session_timeout_ms": session_timeout_ms,
        "heartbeat_interval_ms": session_timeout_ms // 10,
    }
    java, rd_strategy = (SLOW_COOPERATIVE, "cooperative-sticky") if cooperative else (SLOW_RANGE, "range")
    leader = r.java("leader", partition_assignment_strategy=java, assign_delay_ms=12000, **timeouts)
    r.assigned(leader, timeout_s=60)
    rd = [
        r.rdkafka(
            f"rd{i}", partition_assignment_strategy=rd_strategy, auto_commit_interval_ms=1000, **timeouts
        )
        for i in range(2)
    ]
    for p in rd:
        r.assigned(p, timeout_s=60)
    r.sleep(20)  # cooperative: the second round (another 12 s) gives the newcomers their partitions
    rd.append(
        r.rdkafka("rd2", partition_assignment_strategy=rd_strategy, auto_commit_interval_ms=1000, **timeouts)
    )
    r.assigned(rd[2], timeout_s=60)  # rd0 and rd1 commit while the leader assigns
    r.sleep(15)
    r.close(rd[2])
    r.sleep(16)
    r.close(rd[1])
    r.close(rd[0])
    r.close(leader)


def slow_assignor(r: Run) -> None:
    """The group's leader (Java, a cooperative-sticky assignor that takes 12 s; session.timeout.ms 30 s)
    and two librdkafka members committing every second while records flow: every sync phase lasts 12 s,
    and the commits the members (keeping their partitions: cooperative) send meanwhile are refused
    (REBALANCE_IN_PROGRESS)."""
    _slow_leader_group(r, 30000, cooperative=True)


def assignor_past_session(r: Run) -> None:
    """The same slow leader (range: eager) with session.timeout.ms 6 s: the Java client's heartbeat
    thread waits for the coordinator lock the assigning poll thread holds, so the leader goes silent for
    12 s and is evicted before it sends its assignment, rebalance after rebalance."""
    _slow_leader_group(r, 6000, cooperative=False)


def frozen_consumer(r: Run) -> None:
    """A Java consumer committing after every batch (commit sync, 200 ms of processing) is frozen
    (SIGSTOP) for 10 s, twice, against a session of 6 s: it is evicted, and when it runs again its poll
    thread commits before its heartbeat thread learns so: the commit carries the generation it lost
    (UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION), the work behind it may be processed twice."""
    r.produce_while_running(100)
    p0, p1 = _pair(r, r.java, commit="sync", processing_ms=200)
    for _ in range(2):
        r.sleep(4)
        r.freeze(p1, 10)
        r.sleep(8)
    r.close(p1)
    r.close(p0)


def rdkafka_crash(r: Run) -> None:
    """Two librdkafka consumers; one is killed (kill -9): its session expires."""
    p0, p1 = _pair(r, r.rdkafka)
    r.sleep(4)
    r.kill(p1)
    r.sleep(12)
    r.close(p0)


def static_rolling_deploy(r: Run) -> None:
    """A rolling deploy done right: three static members (group.instance.id per pod, session.timeout.ms
    30 s), each pod stopped and started again within its session: no rebalance, no finding."""
    cfg: dict[str, Any] = {"session_timeout_ms": 30000, "heartbeat_interval_ms": 3000}
    pods = [r.java(f"pod{i}", group_instance_id=f"pod-{i}", **cfg) for i in range(3)]
    for p in pods:
        r.assigned(p)
    r.sleep(3)
    for i in range(3):
        r.close(pods[i])
        pods[i] = r.java(f"pod{i}", group_instance_id=f"pod-{i}", **cfg)
        r.assigned(pods[i])
        r.sleep(3)
    for p in pods:
        r.close(p)


SCENARIOS: list[Scenario] = [
    Scenario("birth", birth, control=True),
    Scenario("scale-up", scale_up, control=True),
    Scenario("scale-down", scale_down, control=True),
    Scenario("crash", crash, rules={"R02": ("p1",)}),
    Scenario("poll-timeout", poll_timeout, rules={"R03": ("p1",)}),
    Scenario("static-restart-inside", static_restart_inside, control=True),
    Scenario("static-restart-beyond", static_restart_beyond, rules={"R11": ("p1",)}),
    Scenario("static-duplicate", static_duplicate, rules={"R10": ()}),
    Scenario("rolling-restart", rolling_restart, rules={"R13": ("pod0", "pod1", "pod2")}),
    Scenario("eager-range", eager_range, control=True),
    Scenario("cooperative", cooperative, releases=frozenset({"3.7", "4.4"}), control=True),
    Scenario("mixed-assignors", mixed_assignors, releases=frozenset({"3.7", "4.4"}), rules={"R08": ("b",)}),
    Scenario("partitions-added", partitions_added, partitions=2, rules={"R16": ()}),
    Scenario("commit-race", commit_race, partitions=6, control=True),
    Scenario("invalid-session-timeout", invalid_session_timeout, rules={"R07": ()}),
    Scenario("burst", burst, partitions=12, rules={"R17": ("fifty",)}),
    Scenario("older-client", older_client, rules={"R02": ("p1",)}),
    # recorded before rdclient reported member ids: the group only (rdkafka-crash names the member)
    Scenario("rdkafka-basic", rdkafka_basic, rules={"R02": ()}),
    Scenario("rdkafka-cooperative", rdkafka_cooperative),
    Scenario("mixed-clients", mixed_clients, control=True),
    Scenario("kip848", kip848, releases=frozenset({"4.4"}), rules={"R23": ()}),
    Scenario("max-size", max_size, profile="maxsize", partitions=6, rules={"R18": ()}),
    Scenario("coordinator-moves", coordinator_moves, profile="three", rules={"R20": ()}),
    Scenario("coordinator-shutdown", coordinator_shutdown, profile="three", rules={"R20": ()}),
    Scenario("held-join", held_join, profile="held", rules={"R05": ("p0",), "R17": ()}),
    Scenario("crash-loop", crash_loop, profile="audit", rules={"R01": ("p1",), "R02": ("p1",)}),
    Scenario("static-poll-timeout", static_poll_timeout, profile="audit", rules={"R04": ("p1",)}),
    Scenario("slow-heartbeat", slow_heartbeat, profile="audit", rules={"R06": ("p0", "p1")}),
    Scenario("static-frozen", static_frozen, profile="audit", rules={"R12": ("p1",)}),
    Scenario("short-lived", short_lived, profile="audit", rules={"R14": ()}),
    Scenario(
        "slow-assignor",
        slow_assignor,
        profile="audit",
        partitions=6,
        rules={"R19": ("leader",)},
    ),
    Scenario(
        "assignor-past-session",
        assignor_past_session,
        profile="audit",
        partitions=6,
        rules={"R02": ("leader",)},
        also=frozenset({"R01", "R14"}),
    ),
    Scenario("frozen-consumer", frozen_consumer, profile="audit", rules={"R21": ("p1",), "R02": ("p1",)}),
    Scenario("rdkafka-crash", rdkafka_crash, profile="audit", rules={"R02": ("p1",)}),
    Scenario("static-rolling-deploy", static_rolling_deploy, profile="audit", control=True),
]


def for_release(line: str, names: set[str] | None = None) -> list[Scenario]:
    return [
        s
        for s in SCENARIOS
        if (s.releases is None or line in s.releases) and (names is None or s.name in names)
    ]
