"""What each audit rule means to the person reading its finding: the hand-written part of
``docs/audit-rules.md`` (the registry gives the id, name, family, severity and thresholds).

One :class:`About` per rule id: what the finding means, the evidence it cites, the usual fix, how it can
be wrong (false-positive modes, several learnt on real brokers' logs: ``tests/data/real-kafka``), and
what to read in Kafka's documentation. A rule without one is still listed, with its generated part.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class About:
    meaning: str
    evidence: str
    fix: str
    false_positives: str
    read: str


ABOUT: dict[str, About] = {
    "R01": About(
        "The group started more rebalances within an hour than the threshold: every rebalance stops "
        "consumption (eager) or moves partitions (cooperative), so a storm is lag.",
        "The request that started each rebalance of the busiest hour; heartbeats answered "
        "REBALANCE_IN_PROGRESS; the pod (instance or host) that started most of them.",
        "Remove the dominant trigger (its own rule says how); make rebalances cheap with static membership, "
        "cooperative-sticky or KIP-848.",
        "A planned deploy of a large group counts too; raise `max_rebalances_per_hour` for groups that "
        "scale often.",
        "KIP-345 (static membership), KIP-429 (cooperative rebalancing), KIP-848.",
    ),
    "R02": About(
        "A member stopped heartbeating and the coordinator expired its session (no LeaveGroup): a crash, a "
        "kill -9, a frozen process or a network partition.",
        "The member's last heartbeat and what it sent after (nothing, or an UNKNOWN_MEMBER_ID answer).",
        "Find why the process died or froze (GC pauses, OOM kills, node loss); one eviction is an event, "
        "repeated ones a problem.",
        "An eviction the replay predicts but the broker contradicts (it answered the member as a member "
        "afterwards) is not reported; a member evicted while the log was cut is.",
        "Consumer configs session.timeout.ms and heartbeat.interval.ms.",
    ),
    "R03": About(
        "The client left the group because its poll loop did not call poll() within max.poll.interval.ms.",
        "The LeaveGroup with the reason 'consumer poll timeout has expired' and the rejoin after it.",
        "Process less per poll (max.poll.records) or raise max.poll.interval.ms; move slow work off the "
        "poll thread.",
        "Needs the client's LeaveGroup reason (LeaveGroup v5, Kafka 3.2 clients and brokers): older logs "
        "cannot show it.",
        "KIP-62 (the background heartbeat thread and max.poll.interval.ms).",
    ),
    "R04": About(
        "A static member's poll loop stalled past its session: it sends no LeaveGroup, so the group waited "
        "a whole session.timeout.ms before rebalancing.",
        "The member's last heartbeat, the expiry, and the same process (same connection) speaking again.",
        "As R03; and keep session.timeout.ms for static members as short as the restart time allows.",
        "A whole JVM frozen (GC, a paused VM) looks the same: the log cannot tell a stalled poll loop from "
        "a stalled heartbeat thread.",
        "KIP-345.",
    ),
    "R05": About(
        "A join phase lasted long because one member rejoined late: everyone else waited without partitions.",
        "The join phase's JoinGroups and the late member's, with the group's rebalance timeout.",
        "Find what delays that member's rejoin (a slow onPartitionsRevoked, a long poll loop); "
        "cooperative-sticky lets the others keep working.",
        "The last member to rejoin is blamed; its own client-side delay is not in the log (confidence "
        "below 1). A member that left without a LeaveGroup holds the phase until the rebalance timeout.",
        "Consumer config max.poll.interval.ms (the rebalance timeout of a Java consumer).",
    ),
    "R06": About(
        "Heartbeats arrive too seldom for the session timeout: one or two late heartbeats evict the member.",
        "The longest gaps between a member's heartbeats within one generation at one coordinator.",
        "heartbeat.interval.ms at most a third of session.timeout.ms.",
        "heartbeat.interval.ms is inferred from the cadence (classic JoinGroup does not carry it); gaps "
        "across a coordinator move are left out.",
        "Consumer configs heartbeat.interval.ms, session.timeout.ms.",
    ),
    "R07": About(
        "The client asked for a session timeout outside the broker's bounds: the JoinGroup is refused "
        "and the consumer cannot join at all.",
        "The JoinGroups answered INVALID_SESSION_TIMEOUT, with the asked value and the bounds.",
        "Set session.timeout.ms within group.min/max.session.timeout.ms, or change the broker bounds.",
        "None known: the broker's answer is the evidence.",
        "Broker configs group.min.session.timeout.ms and group.max.session.timeout.ms.",
    ),
    "R08": About(
        "Members offer assignors the others do not: the group keeps the one all share (or refuses the "
        "member with INCONSISTENT_GROUP_PROTOCOL).",
        "The JoinGroups and their protocol lists; the summary names who offered which assignors and the "
        "one the group's rebalances chose.",
        "One partition.assignment.strategy list for every member; during an upgrade to cooperative the "
        "mixed state is expected until the second rolling bounce.",
        "A rolling upgrade in progress raises it (warning, not critical, when nothing was refused).",
        "KIP-429's upgrade path.",
    ),
    "R09": About(
        "A cooperative rebalance took more follow-up rounds than KIP-429 needs (two in all after one "
        "trigger).",
        "The rebalances of the rounds.",
        "Upgrade clients and assignors (KAFKA-8767) and use cooperative-sticky everywhere.",
        "No real client in our corpus triggers it: it marks a client or assignor bug.",
        "KIP-429.",
    ),
    "R10": About(
        "Two processes use the same group.instance.id: they fence each other (FENCED_INSTANCE_ID) and "
        "neither works for long.",
        "The requests answered FENCED_INSTANCE_ID and the connections sending them.",
        "Give every process its own group.instance.id (e.g. the StatefulSet ordinal).",
        "A restart whose old process lingers for a moment is one fenced request, not a duplicate.",
        "KIP-345.",
    ),
    "R11": About(
        "A static member came back (a new process) later than its session timeout: it was evicted, costing "
        "two rebalances instead of none.",
        "The last heartbeat, the expiry and the new process's JoinGroup with the same instance id.",
        "Raise session.timeout.ms above the restart time, or restart faster.",
        "The restart time is measured from the last heartbeat, not from the process stop.",
        "KIP-345.",
    ),
    "R12": About(
        "A static member was silent a long time without being evicted: a long session timeout lets a "
        "dead member keep its partitions idle.",
        "The silent gap between two heartbeats of one static member.",
        "Balance restart tolerance against failover: session.timeout.ms just above the restart time.",
        "A planned pause (a frozen VM that came back) is the case it exists for.",
        "KIP-345.",
    ),
    "R13": About(
        "Dynamic members were replaced one after another (a LeaveGroup, then a new process joining): a "
        "rolling deploy without static membership, two rebalances per pod.",
        "Each pod's LeaveGroup and its successor's first JoinGroup.",
        "group.instance.id per pod with session.timeout.ms above the restart time, plus cooperative-sticky, "
        "or KIP-848.",
        "Pods are told apart by their connection, never by client id (every Java pod is "
        "`consumer-<group>-1`); pairs are made by time.",
        "KIP-345, KIP-848.",
    ),
    "R14": About(
        "The group emptied and formed again and again: each first join waits "
        "group.initial.rebalance.delay.ms.",
        "The Empty → PreparingRebalance transitions.",
        "Keep consumers running, or lower group.initial.rebalance.delay.ms for short-lived consumers.",
        "A batch job that runs a few times a day is what it describes; raise `min_cycles` if that is by "
        "design.",
        "Broker config group.initial.rebalance.delay.ms (KIP-134).",
    ),
    "R15": About(
        "A client joined twice without a member id within moments: the first member id leaks and holds "
        "the group until its session expires.",
        "The two MEMBER_ID_REQUIRED answers to one process.",
        "Upgrade the client; check the network between it and the broker.",
        "No real client in our corpus triggers it: it needs the first answer lost on the wire.",
        "KIP-394.",
    ),
    "R16": About(
        "Rebalances with unchanged membership started by members rejoining because their topic metadata "
        "changed (partitions added, a regex subscription matching a new topic).",
        "The JoinGroups with the reason 'cached metadata has changed'.",
        "Stable topic layouts; for regex subscriptions, fewer matching topic changes.",
        "Needs the JoinGroup reason (v8, Kafka 3.2).",
        "Consumer config metadata.max.age.ms.",
    ),
    "R17": About(
        "More members than the partitions the group is given: the extra members consume nothing but "
        "rebalance with the rest.",
        "The leader's SyncGroup assignments.",
        "At most as many members as partitions, or more partitions.",
        "A cooperative first round leaves a member empty for a moment: not counted. Needs assignment "
        "bytes (not in 2.7's text log).",
        "Consumer partition assignment.",
    ),
    "R18": About(
        "JoinGroups refused with GROUP_MAX_SIZE_REACHED: the group is at group.max.size.",
        "The refused JoinGroups.",
        "Raise group.max.size or shrink the group.",
        "None known: the broker's answer is the evidence.",
        "Broker config group.max.size (KIP-389).",
    ),
    "R19": About(
        "The sync phase was slow (the leader sent its assignment late) or never completed (a member got "
        "its JoinGroup answer and never sent SyncGroup).",
        "The leader's SyncGroup per slow rebalance; the JoinGroup of a member removed waiting for sync.",
        "Check the leader's assignor (a custom one that calls out), its rebalance listener and its health.",
        "A slow sync phase may be the leader's network, not its assignor (confidence 0.8). A Java leader "
        "whose assignor takes longer than session.timeout.ms is evicted instead (R02).",
        "Consumer partition assignment; max.poll.interval.ms.",
    ),
    "R20": About(
        "The group's coordinator moved between brokers or answered coordinator errors.",
        "The requests answered NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE / COORDINATOR_LOAD_IN_PROGRESS "
        "and the first request at the new coordinator.",
        "Check broker restarts and health; replicate __consumer_offsets 3 times; stagger broker restarts.",
        "A new group's first requests on a fresh cluster are answered COORDINATOR_NOT_AVAILABLE while its "
        "offsets partition is created: reported as info.",
        "Broker configs offsets.topic.replication.factor, offsets.topic.num.partitions.",
    ),
    "R21": About(
        "Offset commits were refused because the group was rebalancing or the member had lost its "
        "generation: the work behind them may be processed twice.",
        "The refused OffsetCommits (each counted once, by its error; the partitions refused counted apart), "
        "the JoinGroups whose reason says a commit failed, and the rebalances they raced (their time is not "
        "charged to the commits).",
        "Commit in onPartitionsRevoked; make processing idempotent; find why the member lost its "
        "generation (often a frozen process, R02).",
        "A few refused commits around a deploy are normal (info below `warning_failed_commits`).",
        "Consumer ConsumerRebalanceListener, enable.auto.commit.",
    ),
    "R22": About(
        "Rebalances with unchanged membership at a steady cadence near Kafka Streams' probing interval.",
        "The rebalances and their spacing.",
        "Expected for Streams warm-up tasks; tune probing.rebalance.interval.ms or acceptable.recovery.lag.",
        "No plain consumer triggers it; a periodic job that restarts on a schedule can look alike.",
        "KIP-441.",
    ),
    "R23": About(
        "The group uses the KIP-848 consumer protocol (ConsumerGroupHeartbeat): the classic replay does not "
        "model it; a mixed group is a warning.",
        "The ConsumerGroupHeartbeat requests and any classic ones.",
        "Finish the migration (group.protocol=consumer everywhere) or stay classic.",
        "None known.",
        "KIP-848.",
    ),
}
