"""The scenario library: what real clients do to real brokers, one group per scenario.

Each scenario is a script over :class:`~simulator.realkafka.recording.Run`: start consumer processes
(Java ``kafka-clients`` or librdkafka) with configs, let them poll, stall, close, ``kill -9`` them,
restart them; kill or stop brokers. The run records the timeline as ground truth. Timeouts are small
(session 6 s, heartbeat 1.5 s, max poll interval 30 s unless the scenario says otherwise) so that the
whole library records in minutes; client ids are the clients' defaults.
"""

from __future__ import annotations

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
    p0 = r.java("p0")
    p1 = r.java("p1")
    r.assigned(p0)
    r.assigned(p1)
    r.sleep(4)
    r.kill(p1)
    r.sleep(14)  # session 6 s, then the rebalance
    r.close(p0)


def poll_timeout(r: Run) -> None:
    """Processing slower than max.poll.interval.ms: the client's heartbeat thread leaves the group,
    the next poll joins again."""
    p0 = r.java("p0", max_poll_interval_ms=6000)
    p1 = r.java("p1", max_poll_interval_ms=6000)
    r.assigned(p0)
    r.assigned(p1)
    r.sleep(3)
    r.stall(p1, 10000)
    r.sleep(16)
    r.close(p1)
    r.close(p0)


def static_restart_inside(r: Run) -> None:
    """Static members; one restarts within its session timeout: replaced without a rebalance."""
    p0 = r.java("p0", group_instance_id="static-inside-0")
    p1 = r.java("p1", group_instance_id="static-inside-1")
    r.assigned(p0)
    r.assigned(p1)
    r.sleep(3)
    r.kill(p1)
    r.sleep(1.5)
    p1b = r.java("p1", group_instance_id="static-inside-1")
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
    p0 = r.java("p0", metadata_max_age_ms=2000)
    p1 = r.java("p1", metadata_max_age_ms=2000)
    r.assigned(p0)
    r.assigned(p1)
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
    p0 = r.java("p0", commit="sync", processing_ms=150, partition_assignment_strategy=RANGE)
    p1 = r.java("p1", commit="sync", processing_ms=150, partition_assignment_strategy=RANGE)
    r.assigned(p0)
    r.assigned(p1)
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
    p0 = r.java("p0")
    p1 = r.java("p1")
    r.assigned(p0)
    r.assigned(p1)
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
    p0 = r.java("p0")
    p1 = r.java("p1")
    r.assigned(p0)
    r.assigned(p1)
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


SCENARIOS: list[Scenario] = [
    Scenario("birth", birth),
    Scenario("scale-up", scale_up),
    Scenario("scale-down", scale_down),
    Scenario("crash", crash),
    Scenario("poll-timeout", poll_timeout),
    Scenario("static-restart-inside", static_restart_inside),
    Scenario("static-restart-beyond", static_restart_beyond),
    Scenario("static-duplicate", static_duplicate),
    Scenario("rolling-restart", rolling_restart),
    Scenario("eager-range", eager_range),
    Scenario("cooperative", cooperative, releases=frozenset({"3.7", "4.4"})),
    Scenario("mixed-assignors", mixed_assignors, releases=frozenset({"3.7", "4.4"})),
    Scenario("partitions-added", partitions_added, partitions=2),
    Scenario("commit-race", commit_race, partitions=6),
    Scenario("invalid-session-timeout", invalid_session_timeout),
    Scenario("burst", burst, partitions=12),
    Scenario("older-client", older_client),
    Scenario("rdkafka-basic", rdkafka_basic),
    Scenario("rdkafka-cooperative", rdkafka_cooperative),
    Scenario("mixed-clients", mixed_clients),
    Scenario("kip848", kip848, releases=frozenset({"4.4"})),
    Scenario("max-size", max_size, profile="maxsize", partitions=6),
    Scenario("coordinator-moves", coordinator_moves, profile="three"),
    Scenario("coordinator-shutdown", coordinator_shutdown, profile="three"),
    Scenario("held-join", held_join, profile="held"),
]


def for_release(line: str, names: set[str] | None = None) -> list[Scenario]:
    return [
        s
        for s in SCENARIOS
        if (s.releases is None or line in s.releases) and (names is None or s.name in names)
    ]
