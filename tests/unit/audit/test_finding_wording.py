"""How findings name members and count things (issue 28): several members are never named by one client id
(every Java pod is ``consumer-<group>-1``: each is its process, host and port, with its member id
shortened); R08 says who offered which assignors and which one the group uses; R21's numbers add up."""

from __future__ import annotations

from rebalance_replay.transforms.audit import AuditSettings, GroupInputs, evaluate
from rebalance_replay.transforms.audit.base import member_names, short_member_id, who
from rebalance_replay.transforms.audit.model import Finding, Rebalance, Req, Session

CLIENT = "consumer-orders-1"
UUIDS = (
    "4b4a8bec-844e-597b-8db0-feb5a986466a",
    "9c880e21-0332-5c28-8dc8-48f414c07649",
    "0d1e2f30-aaaa-4bbb-8ccc-111122223333",
)
#: three pods of one Deployment on one node: one client id, one host, three ports
MEMBERS = tuple(f"{CLIENT}-{u}" for u in UUIDS)


def _req(api: str, t: int, port: int, member: str | None = None, **kw: object) -> Req:
    return Req(
        source_file="b1/kafka-request.log",
        line_no=t,
        broker_id="broker-1",
        api_name=api,
        api_version=9,
        arrival_ms=t,
        completion_ms=t + 1,
        client_id=str(kw.pop("client_id", CLIENT)),
        client_address=f"10.0.0.1:{port}",
        connection=f"10.0.9.9:9092-10.0.0.1:{port}-1",
        member_id=member,
        **kw,  # type: ignore[arg-type]
    )


def _rules(inputs: GroupInputs, *rules: str) -> list[Finding]:
    return list(evaluate(inputs, AuditSettings(), only=list(rules)).findings)


def test_a_member_id_is_shortened_to_its_uuids_first_block() -> None:
    assert short_member_id(MEMBERS[0]) == "4b4a8bec"
    assert short_member_id("m0") == "m0"
    assert short_member_id("a-member-id-without-any-uuid-at-all") == "a-member-id-wit…"


def test_members_sharing_a_client_id_are_named_by_process_and_member_id() -> None:
    """The client id names nobody when several processes use it; a client id of one process still does."""
    reqs = [_req("HEARTBEAT", 1000 + k, 40000 + k, m, generation_id=1) for k, m in enumerate(MEMBERS)]
    reqs.append(_req("HEARTBEAT", 2000, 41000, "solo-1", generation_id=1, client_id="billing-7"))
    inputs = GroupInputs.build("orders", requests=reqs)
    assert member_names(inputs, MEMBERS) == [
        "10.0.0.1:40000 (member 4b4a8bec)",
        "10.0.0.1:40001 (member 9c880e21)",
        "10.0.0.1:40002 (member 0d1e2f30)",
    ]
    assert who(inputs, "solo-1") == "billing-7 (10.0.0.1)"


def test_r02_names_three_evicted_pods_of_one_client_id_apart() -> None:
    """Three pods, all ``consumer-orders-1`` on one node, each evicted after 45 s of silence while a
    fourth keeps the group busy: three names, not one client id (that once read "member consumer-orders-1
    (10.0.0.1) was evicted 3 times")."""
    reqs: list[Req] = []
    sessions = []
    for k, m in enumerate(MEMBERS):
        last = 1000 * (k + 1)
        reqs.append(_req("HEARTBEAT", last, 40000 + k, m, generation_id=1, error_name="NONE"))
        sessions.append(
            Session(
                m,
                1,
                0,
                "session_expiry",
                client_id=CLIENT,
                client_address="10.0.0.1",
                ended_ms=last + 45_000,
                session_timeout_ms=45_000,
            )
        )
    reqs += [
        _req("HEARTBEAT", 3000 * k, 49000, "keeper", generation_id=1, error_name="NONE", client_id="keeper")
        for k in range(1, 20)
    ]
    (f,) = _rules(GroupInputs.build("orders", requests=reqs, sessions=sessions), "R02")
    assert f.summary.startswith(
        "members 10.0.0.1:40000 (member 4b4a8bec), 10.0.0.1:40001 (member 9c880e21), 10.0.0.1:40002 "
        "(member 0d1e2f30) were evicted 3 times after 45 s without a heartbeat"
    ), f.summary


def test_r06_names_each_slow_heartbeating_pod_and_says_members() -> None:
    """Two pods of one client id heartbeat every 20 s against 45 s: both named apart, in the plural."""
    reqs: list[Req] = []
    sessions = []
    for k, m in enumerate(MEMBERS[:2]):
        reqs += [
            _req("HEARTBEAT", 20_000 * i + k, 40000 + k, m, generation_id=1, error_name="NONE")
            for i in range(1, 9)
        ]
        sessions.append(Session(m, 1, 0, "left", client_id=CLIENT, session_timeout_ms=45_000))
    (f,) = _rules(GroupInputs.build("orders", requests=reqs, sessions=sessions), "R06")
    assert f.summary.startswith(
        "members 10.0.0.1:40000 (member 4b4a8bec), 10.0.0.1:40001 (member 9c880e21) heartbeat every 20 s "
        "(median; p99 up to 20 s) against a session timeout of 45 s: one or two late heartbeats evict a "
        "member"
    ), f.summary


def _rebalance(seq: int, start: int, protocol: str) -> Rebalance:
    return Rebalance(
        rebalance_seq=seq,
        generation_from=seq,
        generation_to=seq + 1,
        started_ms=start,
        ended_ms=start + 100,
        total_duration_ms=100,
        outcome="stable",
        trigger="new_member",
        protocol_name=protocol,
    )


def _join_offering(t: int, port: int, member: str, protocols: tuple[str, ...], error: str = "NONE") -> Req:
    return Req.from_parts(
        _req("JOIN_GROUP", t, port, member, error_name=error, response_member_id=member)._asdict(),
        protocol_names=protocols,
        leave_members=(),
        commit_errors=(),
        assignments=(),
    )


def test_r08_says_who_offered_what_and_which_assignor_the_group_uses() -> None:
    """One member offers only cooperative-sticky; the group runs range: the finding must not read as if the
    group used both."""
    reqs = [
        _join_offering(1000, 40000, MEMBERS[0], ("range",)),
        _join_offering(1001, 40001, MEMBERS[1], ("range",)),
        _join_offering(5000, 40002, "", ("cooperative-sticky",), "INCONSISTENT_GROUP_PROTOCOL"),
    ]
    inputs = GroupInputs.build("orders", requests=reqs, rebalances=[_rebalance(1, 1000, "range")])
    (f,) = _rules(inputs, "R08")
    assert f.severity == "critical"
    assert f.summary == (
        "10.0.0.1:40002 offered only cooperative-sticky; the group uses range: 1 JoinGroup refused with "
        "INCONSISTENT_GROUP_PROTOCOL"
    )


def test_r08_an_upgrade_half_done_names_the_list_and_the_others() -> None:
    """KIP-429's first bounce: one member lists cooperative-sticky then range (accepted: range is common),
    the others only range; the group still uses range."""
    reqs = [
        _join_offering(1000, 40000, MEMBERS[0], ("range",)),
        _join_offering(1001, 40001, MEMBERS[1], ("range",)),
        _join_offering(1002, 40002, MEMBERS[2], ("cooperative-sticky", "range")),
    ]
    inputs = GroupInputs.build("orders", requests=reqs, rebalances=[_rebalance(1, 1000, "range")])
    (f,) = _rules(inputs, "R08")
    assert f.severity == "warning"
    assert f.summary == (
        "10.0.0.1:40002 offered cooperative-sticky, range; the group uses range and its other members offer "
        "only range: 1 JoinGroup accepted with a different assignor list"
    )


def _commit(t: int, errors: tuple[str, ...]) -> Req:
    return Req.from_parts(
        _req("OFFSET_COMMIT", t, 40000, MEMBERS[0], generation_id=3, error_name=errors[0])._asdict(),
        protocol_names=(),
        leave_members=(),
        commit_errors=errors,
        assignments=(),
    )


def test_r21_counts_commits_once_and_partitions_apart() -> None:
    """Three commits of four partitions each, refused while the group rebalanced, and the member's rejoin
    naming the failed commit: 3 failed commits (each once, by its error), 12 partitions, the rejoin as
    evidence — never "3 offset commits … ×12"."""
    rip = ("REBALANCE_IN_PROGRESS",) * 4
    reqs = [
        _commit(1000, rip),
        _commit(2000, rip),
        _commit(3000, ("ILLEGAL_GENERATION",) * 4),
        _req(
            "JOIN_GROUP",
            4000,
            40000,
            MEMBERS[0],
            error_name="NONE",
            reason="offset commit failed since group is already rebalancing",
        ),
    ]
    (f,) = _rules(GroupInputs.build("orders", requests=reqs), "R21")
    assert f.occurrences == 3 and f.metric("failed_commits") == 3
    assert f.metric("evidence_rows") == 4
    assert f.summary == (
        "3 offset commits failed because the group was rebalancing (ILLEGAL_GENERATION ×1, "
        'REBALANCE_IN_PROGRESS ×2; 12 partitions in all; 1 JoinGroup rejoined with the reason "offset '
        'commit failed"): the work behind them may be processed twice; host 10.0.0.1'
    )


def test_r21_a_rejoin_alone_tells_of_a_commit_the_log_does_not_have() -> None:
    reqs = [
        _req("JOIN_GROUP", 4000, 40000, MEMBERS[0], error_name="NONE", reason="offset commit failed since …")
    ]
    (f,) = _rules(GroupInputs.build("orders", requests=reqs), "R21")
    assert f.summary.startswith(
        "1 offset commit failed because the group was rebalancing (told by 1 JoinGroup with the reason "
        '"offset commit failed"; the refused commits are not in the log)'
    ), f.summary
