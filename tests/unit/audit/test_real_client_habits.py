"""Rules on inputs shaped like real clients' logs (what tests/data/real-kafka showed the rules had
missed or raised falsely): every Java pod is ``consumer-<group>-1``, processes differ by their end of the
connection; cooperative first rounds leave a member empty; a coordinator move stretches one heartbeat
gap; a fresh cluster answers a new group's first requests COORDINATOR_NOT_AVAILABLE; a Java static
member rejoins after a poll timeout on the same connection with a new member id."""

from __future__ import annotations

import struct

from rebalance_replay.transforms.audit import AuditSettings, GroupInputs, evaluate
from rebalance_replay.transforms.audit.model import Dispute, Finding, Rebalance, Req, Session, Transition
from rebalance_replay.transforms.audit.registry import weigh_disputes

CLIENT = "consumer-orders-1"  # every single-consumer Java pod


def _req(api: str, t: int, port: int, member: str | None = None, **kw: object) -> Req:
    return Req(
        source_file="b1/kafka-request.log",
        line_no=t,
        broker_id=str(kw.pop("broker_id", "broker-1")),
        api_name=api,
        api_version=9,
        arrival_ms=t,
        completion_ms=int(kw.pop("completion_ms", t + 1)),  # type: ignore[call-overload]
        client_id=CLIENT,
        client_address=f"10.0.0.1:{port}",
        connection=f"10.0.9.9:9092-10.0.0.1:{port}-1",
        member_id=member,
        **kw,  # type: ignore[arg-type]
    )


def _leave(t: int, port: int, member: str) -> Req:
    return Req.from_parts(
        {
            **_req("LEAVE_GROUP", t, port, error_name="NONE")._asdict(),
        },
        protocol_names=(),
        leave_members=[
            {"member_id": member, "group_instance_id": None, "reason": "the consumer is being closed"}
        ],
        commit_errors=(),
        assignments=(),
    )


def _pod_start(t: int, port: int, member: str) -> list[Req]:
    """A Java pod's first JoinGroup (MEMBER_ID_REQUIRED, KIP-394) and its rejoin with the id."""
    return [
        _req("JOIN_GROUP", t, port, error_name="MEMBER_ID_REQUIRED", response_member_id=member),
        _req("JOIN_GROUP", t + 5, port, member, error_name="NONE", response_member_id=member),
    ]


def _rules(inputs: GroupInputs, *rules: str) -> list[Finding]:
    return list(evaluate(inputs, AuditSettings(), only=list(rules)).findings)


def test_r13_sees_a_rolling_restart_whose_pods_share_one_client_id() -> None:
    """Three pods, all ``consumer-orders-1``, each stopped (LeaveGroup) and replaced by a new process: R13
    used to skip every successor whose client id had left before, and found nothing."""
    reqs: list[Req] = []
    for i in range(3):
        reqs += _pod_start(1000 + i, 40000 + i, f"old-{i}")
    for i in range(3):
        t = 10_000 + 5_000 * i
        reqs.append(_leave(t, 40000 + i, f"old-{i}"))
        reqs += _pod_start(t + 800, 50000 + i, f"new-{i}")
    found = _rules(GroupInputs.build("orders", requests=reqs), "R13")
    assert len(found) == 1
    assert dict(found[0].metrics)["pods_replaced"] == 3
    assert {"old-0", "old-1", "old-2", "new-0", "new-1", "new-2"} <= set(found[0].member_ids)


def test_r13_a_group_that_started_and_stopped_together_is_no_deploy() -> None:
    """Fifty consumers of one process (one connection each) start, then all close: no successor joins
    after any LeaveGroup."""
    reqs: list[Req] = []
    for i in range(50):
        reqs += _pod_start(1000 + i, 40000 + i, f"m{i}")
    reqs += [_leave(20_000 + i, 40000 + i, f"m{i}") for i in range(50)]
    assert _rules(GroupInputs.build("batch", requests=reqs), "R13") == []


def test_r13_a_process_rejoining_is_not_its_own_successor() -> None:
    """A process that leaves and joins again on its own connection (unsubscribe, subscribe) replaced
    nobody."""
    reqs: list[Req] = []
    for k in range(3):
        reqs.append(_leave(10_000 * (k + 1), 40000, f"m{k}"))
        reqs += _pod_start(10_000 * (k + 1) + 100, 40000, f"m{k + 1}")
    assert _rules(GroupInputs.build("g", requests=reqs), "R13") == []


def _assignment(partitions: list[int]) -> bytes:
    """A ConsumerProtocol assignment v0 of topic ``t`` (version, topics, partitions, user data)."""
    body = struct.pack(">hi", 0, 1) + struct.pack(">h", 1) + b"t" + struct.pack(">i", len(partitions))
    body += b"".join(struct.pack(">i", p) for p in partitions)
    return body + struct.pack(">i", -1)


def _leader_sync(t: int, assignments: dict[str, list[int]]) -> Req:
    return Req.from_parts(
        _req("SYNC_GROUP", t, 40000, "m0", generation_id=t, error_name="NONE")._asdict(),
        protocol_names=(),
        leave_members=(),
        commit_errors=(),
        assignments=[{"member_id": m, "assignment": _assignment(ps)} for m, ps in assignments.items()],
    )


def test_r17_a_cooperative_first_round_is_not_an_over_provisioned_group() -> None:
    """Three members, three partitions: the cooperative first round revokes the partition that moves, so
    one member gets nothing for a moment; the group is not too big."""
    syncs = [
        _leader_sync(1000, {"m0": [0, 1, 2]}),
        _leader_sync(2000, {"m0": [0, 1], "m1": [2]}),
        _leader_sync(3000, {"m0": [0], "m1": [2], "m2": []}),  # partition 1 revoked, not yet given
        _leader_sync(3500, {"m0": [0], "m1": [2], "m2": [1]}),
    ]
    assert _rules(GroupInputs.build("g", requests=syncs), "R17") == []
    four = [*syncs, _leader_sync(5000, {"m0": [0], "m1": [2], "m2": [1], "m3": []})]
    found = _rules(GroupInputs.build("g", requests=four), "R17")
    assert [f.member_ids for f in found] == [("m3",)]


def test_r06_a_coordinator_move_is_not_the_heartbeat_cadence() -> None:
    """Heartbeats every 1.5 s against 6 s, and one 13 s gap while the coordinator broker was killed and
    the group moved: the cadence is fine."""
    session = Session("m0", 1, 0, "left", session_timeout_ms=6000)
    hbs = [_req("HEARTBEAT", 1500 * k, 40000, "m0", generation_id=1, error_name="NONE") for k in range(1, 8)]
    after = [
        _req(
            "HEARTBEAT",
            10_500 + 13_000 + 1500 * k,
            40001,
            "m0",
            generation_id=1,
            error_name="NONE",
            broker_id="broker-2",
        )
        for k in range(8)
    ]
    inputs = GroupInputs.build("g", requests=[*hbs, *after], sessions=[session])
    assert _rules(inputs, "R06") == []
    slow = [_req("HEARTBEAT", 3000 * k, 40000, "m0", generation_id=1, error_name="NONE") for k in range(1, 9)]
    assert len(_rules(GroupInputs.build("g", requests=slow, sessions=[session]), "R06")) == 1


def test_r20_a_new_groups_wait_for_a_fresh_coordinator_is_info() -> None:
    """COORDINATOR_NOT_AVAILABLE before the group's first member joined (its __consumer_offsets partition
    being created) is a start; the same answer to a member of a running group is a warning."""
    start = [
        _req("JOIN_GROUP", 1000, 40000, error_name="COORDINATOR_NOT_AVAILABLE"),
        *_pod_start(2000, 40000, "m0"),
    ]
    (f,) = _rules(GroupInputs.build("g", requests=start), "R20")
    assert f.severity == "info"
    assert "not ready for the group's first members" in f.summary
    later = [
        *start,
        _req("HEARTBEAT", 9000, 40000, "m0", generation_id=1, error_name="COORDINATOR_NOT_AVAILABLE"),
    ]
    (g,) = _rules(GroupInputs.build("g", requests=later), "R20")
    assert g.severity == "warning"


def test_r04_a_static_member_rejoining_on_its_own_connection_stalled() -> None:
    """A Java static member whose poll loop stalled: evicted, it rejoins with its instance id and no member
    id (the client forgot it) on the connection it always used — the same process, so R04 (a stall), not
    R11 (a slow restart). From another connection it is a restart."""

    def inputs(port: int) -> GroupInputs:
        hb = [_req("HEARTBEAT", 1000 * k, 40000, "s-1", generation_id=1, error_name="NONE") for k in (1, 2)]
        hb = [Req(**{**h._asdict(), "group_instance_id": "pod-1"}) for h in hb]
        session = Session(
            "s-1", 1, 0, "session_expiry", group_instance_id="pod-1", ended_ms=8000, session_timeout_ms=6000
        )
        rejoin = _req(
            "JOIN_GROUP",
            15_000,
            port,
            "",
            group_instance_id="pod-1",
            error_name="NONE",
            response_member_id="s-2",
        )
        return GroupInputs.build(
            "g",
            requests=[*hb, rejoin],
            sessions=[session],
            transitions=[Transition(1, 8000, "Stable", "PreparingRebalance", 1, "s-1")],
        )

    assert [f.rule_id for f in _rules(inputs(40000), "R04", "R11")] == ["R04"]
    assert [f.rule_id for f in _rules(inputs(41000), "R04", "R11")] == ["R11"]


def test_a_finding_resting_on_disputed_predictions_says_so() -> None:
    """The broker's answers win: a finding citing requests the replay predicted otherwise than the broker
    answered loses confidence with their share, and its summary names the disputed answers."""
    reqs = [_req("JOIN_GROUP", 1000, 40000, error_name="INVALID_SESSION_TIMEOUT", session_timeout_ms=1000)]
    reqs.append(
        _req("JOIN_GROUP", 2000, 40000, error_name="INVALID_SESSION_TIMEOUT", session_timeout_ms=1000)
    )
    plain = GroupInputs.build("g", requests=reqs)
    (f,) = _rules(plain, "R07")
    assert weigh_disputes(plain, f) is f
    disputed = GroupInputs.build(
        "g",
        requests=reqs,
        disputes=[
            Dispute("b1/kafka-request.log", 2000, "JOIN_GROUP", ("error",), "INVALID_SESSION_TIMEOUT", "NONE")
        ],
    )
    (d,) = _rules(disputed, "R07")
    assert d.confidence == round(f.confidence * 0.75, 2)
    assert "disputed (confidence 0.75)" in d.summary
    assert "JOIN_GROUP kafka-request.log:2000 answered INVALID_SESSION_TIMEOUT, predicted NONE" in d.summary


def test_a_process_is_its_end_of_the_connection() -> None:
    """``Req.process``: the client's end of the connection, else the connection, else the client id."""
    r = _req("HEARTBEAT", 1, 40000)
    assert r.process == "10.0.0.1:40000"
    bare = Req("f", 1, "broker-1", "HEARTBEAT", 4, 1, 2, client_id="c", connection="a-b-1")
    assert bare.process == "a-b-1"
    assert Req("f", 1, "broker-1", "HEARTBEAT", 4, 1, 2, client_id="c").process == "c"


def test_r19_names_the_leader_whose_assignment_came_late() -> None:
    """A leader whose assignor takes 12 s every rebalance (tests/data/real-kafka/*/audit, slow-assignor):
    R19 names it — the member whose SyncGroup carried the assignments, by its process and member id (every
    pod is ``consumer-orders-1``) — and says how long every member waited; a quick sync phase is not
    counted."""
    rbs = [
        Rebalance(1, 1, 1000, "stable", "new_member", 2, 2000, 14_000, 14_000, 13_000, 1000, 12_000),
        Rebalance(2, 2, 20_000, "stable", "member_left", 3, 21_000, 21_500, 21_500, 1500, 1000, 500),
    ]
    follower = _req("SYNC_GROUP", 2001, 40001, "m1", generation_id=2, error_name="NONE")
    leader = _leader_sync(13_990, {"m0": [0, 1], "m1": [2]})
    inputs = GroupInputs.build("g", requests=[follower, leader], rebalances=rbs)
    (f,) = _rules(inputs, "R19")
    assert f.member_ids == ("m0",)
    assert f.summary == (
        "1 of 2 sync phases took 12 s: the leader 10.0.0.1:40000 (member m0) sent its assignment that "
        "long after the join phase, while every member waited (slow leader assignment) (confidence 0.80: "
        "a slow sync phase may be the leader's network, not its assignor)"
    )
    assert [(e.api, e.line_no) for e in f.evidence] == [("SYNC_GROUP", 13_990)]


def test_an_eviction_the_broker_disputes_is_named_and_not_counted() -> None:
    """Two dynamic members (one client id, two processes) whose sessions the replay reports expired at 8 s
    (6 s after their last heartbeats). One of them heartbeats at 9 s and the broker answers NONE: to Kafka
    it was still a member, so R02 counts one eviction, not two, and its summary names the disputed one,
    with the broker's answer and when (found by mutation testing, stop 55: the note's member lookup
    dropped passed every test)."""
    members = (("d-1", 40000), ("d-2", 40001))
    hb = [
        _req("HEARTBEAT", t, port, m, generation_id=1, error_name="NONE")
        for m, port in members
        for t in (1000, 2000)
    ]
    kept = _req("HEARTBEAT", 9000, 40001, "d-2", generation_id=1, error_name="NONE")
    sessions = [
        Session(
            m,
            1,
            0,
            "session_expiry",
            client_address=f"10.0.0.1:{port}",
            ended_ms=8000,
            session_timeout_ms=6000,
        )
        for m, port in members
    ]
    inputs = GroupInputs.build(
        "g",
        requests=sorted([*hb, kept], key=lambda r: r.arrival_ms),
        sessions=sessions,
        transitions=[Transition(1, 8000, "Stable", "PreparingRebalance", 1, "d-1")],
    )
    (f,) = _rules(inputs, "R02")
    assert f.summary == (
        "member 10.0.0.1:40000 (member d-1) was evicted 1 time after 6 s without a heartbeat "
        "(session.timeout.ms 6 s, no LeaveGroup); not counted, the model's removal disputed by the broker, "
        "which answered as a member afterwards 10.0.0.1:40001 (member d-2): "
        "HEARTBEAT NONE at 00:00:09.000 UTC"
    )
