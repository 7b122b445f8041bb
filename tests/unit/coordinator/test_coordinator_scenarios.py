"""Kafka's coordinator unit tests (GroupCoordinatorTest.scala, GroupMetadataManagerTest.java) ported
behaviour for behaviour into scenarios of timed requests.

Kafka's tests use a mock timer: the scenarios keep their settings (session and rebalance timeout
500 ms, ``group.initial.rebalance.delay.ms`` 50, ``group.max.size`` 4, session bounds 10 ms-10 min,
strict firing) and state the times explicitly. Timers fire *at* their deadline, so answers given by a
timer complete at the deadline (the Scala MockTimer runs them at the advanced clock instead).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.coordinator.scenario import (
    Advance,
    C,
    Case,
    E,
    End,
    H,
    J,
    L,
    Load,
    S,
    Step,
    Unload,
    default_config,
    run_case,
)

KAFKA_TEST = {
    "group_min_session_timeout_ms": 10,
    "group_max_session_timeout_ms": 600_000,
    "group_initial_rebalance_delay_ms": 50,
    "group_max_size": 4,
    "timer_rule": "strict",
}


def cfg(version: str = "3.7", **kw: Any) -> Any:
    settings = dict(KAFKA_TEST)
    settings.update(kw)
    return default_config(kafka_version=version, **settings)


K = cfg()
JAVA = cfg("3.7", implementation="java")


def kj(at: int, member: str = "", **kw: Any) -> J:
    """JoinGroup with Kafka's test defaults (session/rebalance 500; v3 = requireKnownMemberId false)."""
    kw.setdefault("session", 500)
    kw.setdefault("rebalance", 500)
    kw.setdefault("v", 3)
    return J(at, member, **kw)


def dyn(at: int, alias: str, **kw: Any) -> list[Step]:
    """``dynamicJoinGroup``: JoinGroup v5 → MEMBER_ID_REQUIRED, then the join with the id."""
    kw.setdefault("session", 500)
    kw.setdefault("rebalance", 500)
    expect = kw.pop("expect", None)
    return [
        J(at, alias=alias, v=5, expect=E(error="MEMBER_ID_REQUIRED"), **kw),
        J(at, alias, v=5, expect=expect, **kw),
    ]


def one_stable(alias: str = "a", **kw: Any) -> list[Step]:
    """One dynamic member joins at 0 (completes at 50 after the initial delay), syncs at 51 → Stable g1."""
    return [
        kj(0, alias=alias, expect=E(error="NONE", gen=1, leader=alias, completion=50), **kw),
        S(51, alias, 1, assignments={alias: b"A"}, expect=E(error="NONE", assignment=b"A")),
    ]


def two_stable() -> list[Step]:
    """a and b join at 0/1: the first 50 ms window is extended once (b arrived), completion at 100."""
    return [
        kj(0, alias="a", expect=E(error="NONE", gen=1, leader="a", members={"a", "b"}, completion=100)),
        kj(1, alias="b", expect=E(error="NONE", gen=1, leader="a", members=set(), completion=100)),
        S(101, "a", 1, assignments={"a": b"A", "b": b"B"}, expect=E(error="NONE", assignment=b"A")),
        S(102, "b", 1, expect=E(error="NONE", assignment=b"B")),
    ]


SUPERSET = ("range", "roundrobin")


def two_static(session: int = 500, v: int = 5) -> list[Step]:
    """``staticMembersJoinAndRebalance``: leader (instance L) and follower (instance F), protocolSuperset."""
    common = {"session": session, "rebalance": 500, "protos": SUPERSET, "v": v}
    return [
        J(0, alias="l", instance="L", expect=E(error="NONE", gen=1, leader="l", completion=100), **common),
        J(0, alias="f", instance="F", expect=E(error="NONE", gen=1, leader="l", completion=100), **common),
        S(101, "l", 1, instance="L", assignments={"l": b"", "f": b""}, expect=E(error="NONE")),
        S(102, "f", 1, instance="F", expect=E(error="NONE")),
    ]


def three_joined() -> list[Step]:
    """``joinWithNMembers(3)``: a, b, c join at 0 → join completes at 100 (one window extension)."""
    return [
        kj(0, alias="a", expect=E(error="NONE", gen=1, completion=100)),
        kj(0, alias="b", expect=E(error="NONE", gen=1, completion=100)),
        kj(0, alias="c", expect=E(error="NONE", gen=1, completion=100)),
    ]


def pending_member_setup() -> list[Step]:
    """``setupGroupWithPendingMember``: a, b rejoining in PreparingRebalance plus a pending member p
    (session 100, so it expires at 156)."""
    return [
        *dyn(0, "a", expect=E(error="NONE", gen=1, completion=50)),
        S(51, "a", 1, assignments={"a": b""}),
        kj(52, alias="b", expect=E(error="NONE", gen=2, completion=53)),
        kj(53, "a", expect=E(error="NONE", gen=2, leader="a", completion=53)),
        S(54, "a", 2, assignments={"a": b""}, expect=E(error="NONE")),
        kj(55, "a"),
        J(56, alias="p", v=5, session=100, rebalance=500, expect=E(error="MEMBER_ID_REQUIRED")),
        kj(57, "b"),
    ]


CASES: list[Case] = [
    # ---------------------------------------------------------------------------------------- join
    Case(
        "testJoinGroupUnknownConsumerNewGroup",
        [kj(0, "memberId", expect=E(error="UNKNOWN_MEMBER_ID", member="memberId", gen=-1, completion=0))],
        End(exists=False),
        config=K,
    ),
    Case(
        "testJoinGroupSessionTimeoutTooSmall",
        [kj(0, session=9, expect=E(error="INVALID_SESSION_TIMEOUT", completion=0))],
        End(exists=False),
        config=K,
    ),
    Case(
        "testJoinGroupSessionTimeoutTooLarge",
        [kj(0, session=600_001, expect=E(error="INVALID_SESSION_TIMEOUT"))],
        End(exists=False),
        config=K,
    ),
    Case(
        "testJoinGroupSessionTimeoutTooLarge",
        [J(0, session=300_001, v=4, expect=E(error="INVALID_SESSION_TIMEOUT"))],
        End(exists=False),
        config=default_config(kafka_version="2.2"),
        name="2.2 group.max.session.timeout.ms default is 300000",
    ),
    Case(
        "testJoinGroupSessionTimeoutTooLarge",
        [J(0, session=300_001, v=5, expect=E(error="MEMBER_ID_REQUIRED"))],
        config=default_config(kafka_version="2.3"),
        name="2.3 group.max.session.timeout.ms default is 1800000",
    ),
    Case(
        "testInvalidGroupId",
        [kj(0, group="", expect=E(error="INVALID_GROUP_ID"))],
        End(exists=False),
        config=K,
    ),
    Case(
        "testValidJoinGroup",
        [
            kj(
                0,
                alias="a",
                expect=E(error="NONE", gen=1, leader="a", member="a", members={"a"}, completion=50),
            )
        ],
        End(state="CompletingRebalance", generation=1, members={"a"}, leader="a", protocol="range"),
        config=K,
        until=51,
    ),
    Case(
        "testJoinGroupInconsistentProtocolType",
        [
            kj(0, alias="a"),
            kj(1, protocol_type="connect", expect=E(error="INCONSISTENT_GROUP_PROTOCOL", member="")),
        ],
        End(state="CompletingRebalance", members={"a"}),
        config=K,
        until=51,
    ),
    Case(
        "testJoinGroupWithEmptyProtocolType",
        [kj(0, protocol_type="", expect=E(error="INCONSISTENT_GROUP_PROTOCOL", member="", completion=0))],
        End(state="Empty", generation=0, members=set()),
        config=K,
    ),
    Case(
        "testJoinGroupWithEmptyGroupProtocol",
        [kj(0, protos=(), expect=E(error="INCONSISTENT_GROUP_PROTOCOL", member=""))],
        End(state="Empty", generation=0),
        config=K,
    ),
    Case(
        "testJoinGroupInconsistentGroupProtocol",
        [
            kj(0, alias="a"),
            kj(1, protos=("roundrobin",), expect=E(error="INCONSISTENT_GROUP_PROTOCOL", member="")),
        ],
        End(state="CompletingRebalance", members={"a"}),
        config=K,
        until=51,
    ),
    Case(
        "testJoinGroupUnknownConsumerExistingGroup",
        [
            kj(0, alias="a"),
            kj(1, "memberId", expect=E(error="UNKNOWN_MEMBER_ID", member="memberId", completion=1)),
        ],
        config=K,
    ),
    Case(
        "testJoinGroupUnknownConsumerNewDeadGroup",
        [
            kj(0, alias="a", expect=E(error="NOT_COORDINATOR", completion=10)),
            Unload(10),
            kj(20, expect=E(error="COORDINATOR_NOT_AVAILABLE", member="")),
            kj(21, "a", expect=E(error="COORDINATOR_NOT_AVAILABLE", member="a")),
        ],
        End(state="Dead"),
        config=K,
    ),
    Case(
        "testJoinGroupUnknownConsumerNewDeadGroup",
        [kj(0, alias="a"), Unload(10), kj(20, expect=E(error="UNKNOWN_MEMBER_ID", member=""))],
        config=cfg("2.2"),
        name="2.2: Dead group answers UNKNOWN_MEMBER_ID",
    ),
    Case(
        "testJoinGroupFromUnchangedFollowerDoesNotRebalance",
        [
            *two_stable(),
            kj(200, "b", expect=E(error="NONE", gen=1, leader="a", members=set(), completion=200)),
        ],
        End(state="Stable", generation=1, members={"a", "b"}),
        config=K,
    ),
    Case(
        "testJoinGroupFromUnchangedLeaderShouldRebalance",
        [
            *one_stable(),
            kj(100, "a", expect=E(error="NONE", gen=2, leader="a", members={"a"}, completion=100)),
        ],
        End(state="CompletingRebalance", generation=2),
        config=K,
        events=[("transition", "Leader ")],
    ),
    Case(
        "testGenerationIdIncrementsOnRebalance",
        [
            *one_stable(),
            kj(100, "a", expect=E(error="NONE", gen=2)),
            S(101, "a", 2, assignments={"a": b"x"}, expect=E(error="NONE", assignment=b"x")),
        ],
        End(state="Stable", generation=2),
        config=K,
    ),
    Case(
        "testJoinGroupCompletionWhenPendingMemberJoins",
        [
            *pending_member_setup(),
            J(
                58,
                "p",
                v=5,
                session=100,
                rebalance=500,
                expect=E(error="NONE", gen=3, leader="a", completion=58),
            ),
        ],
        End(state="CompletingRebalance", generation=3, members={"a", "b", "p"}, pending=set()),
        config=K,
    ),
    Case(
        "testJoinGroupCompletionWhenPendingMemberTimesOut",
        pending_member_setup(),
        End(state="CompletingRebalance", generation=3, members={"a", "b"}, pending=set()),
        config=K,
        until=200,
        events=[("pending_member_removed", "has been removed after session timeout expiration")],
    ),
    Case(
        "testPendingMembersLeavesGroup",
        [*pending_member_setup(), L(58, "p", expect=E(error="NONE", member_errors={"p": "NONE"}))],
        End(state="CompletingRebalance", generation=3, members={"a", "b"}, pending=set()),
        config=K,
    ),
    Case(
        "testPendingMemberBatchLeaveGroup",
        [
            *pending_member_setup(),
            L(58, "p", "unknown", expect=E(member_errors={"p": "NONE", "unknown": "UNKNOWN_MEMBER_ID"})),
        ],
        End(state="CompletingRebalance", generation=3),
        config=K,
    ),
    Case(
        "testSecondMemberPartiallyJoinAndTimeout",
        [
            *dyn(0, "a", expect=E(error="NONE", gen=1, completion=50)),
            S(51, "a", 1, assignments={"a": b""}),
            J(151, alias="p", v=5, session=500, rebalance=500, expect=E(error="MEMBER_ID_REQUIRED")),
            H(451, "a", 1, expect=E(error="NONE")),
        ],
        End(state="Stable", generation=1, members={"a"}, pending=set()),
        config=K,
        until=751,
    ),
    Case(
        "testNewMemberTimeoutCompletion",
        [
            kj(0, alias="a", session=305_000, expect=E(error="NONE", gen=1, completion=50)),
            S(51, "a", 1, assignments={"a": b""}, expect=E(error="NONE")),
        ],
        End(state="Stable", members={"a"}),
        config=K,
        until=300_151,
        name="testNewMemberTimeoutCompletion (new-member timeout no longer applies after the join)",
    ),
    Case(
        "testNewMemberTimeoutCompletion",
        [
            kj(0, alias="a", session=305_000, expect=E(error="NONE", gen=1, completion=50)),
            S(51, "a", 1, assignments={"a": b""}, expect=E(error="NONE")),
        ],
        End(state="Empty", generation=2, members=set()),
        config=K,
        until=305_152,
        name="testNewMemberTimeoutCompletion (the session timeout does)",
    ),
    Case(
        "testNewMemberJoinExpiration",
        [
            *dyn(0, "a", session=305_000, rebalance=600_000, expect=E(error="NONE", gen=1, completion=50)),
            kj(
                100,
                alias="b",
                session=305_000,
                rebalance=600_000,
                expect=E(error="UNKNOWN_MEMBER_ID", member="", completion=300_100),
            ),
        ],
        End(state="PreparingRebalance", generation=1, members={"a"}),
        config=K,
        until=300_101,
        events=[("member_removed", "on heartbeat expiration")],
    ),
    Case(
        "testSessionTimeoutDuringRebalance",
        [
            *dyn(0, "a", session=1000, rebalance=2000, expect=E(error="NONE", gen=1, completion=50)),
            S(51, "a", 1, assignments={"a": b""}),
            kj(52, alias="b", expect=E(error="NONE", gen=2, leader="b", completion=1552)),
            H(552, "a", 1, expect=E(error="REBALANCE_IN_PROGRESS")),
            H(1652, "a", 1, expect=E(error="UNKNOWN_MEMBER_ID")),
        ],
        End(state="CompletingRebalance", generation=2, members={"b"}, leader="b"),
        config=K,
    ),
    Case(
        "testHeartbeatDuringRebalanceCausesRebalanceInProgress",
        [*one_stable(), kj(100, alias="b"), H(101, "a", 1, expect=E(error="REBALANCE_IN_PROGRESS"))],
        End(state="PreparingRebalance", generation=1),
        config=K,
    ),
    Case(
        "testLeaderFailureInSyncGroup",
        [
            *dyn(0, "a", expect=E(error="NONE", gen=1, completion=50)),
            S(51, "a", 1, assignments={"a": b""}),
            kj(52, alias="b", expect=E(error="NONE", gen=2, leader="a", completion=53)),
            kj(53, "a", expect=E(error="NONE", gen=2, leader="a", completion=53)),
            S(54, "b", 2, expect=E(error="REBALANCE_IN_PROGRESS", completion=553)),
        ],
        End(state="PreparingRebalance", generation=2, members={"b"}),
        config=K,
        until=654,
    ),
    Case(
        "testJoinGroupShouldReceiveErrorIfGroupOverMaxSize",
        [
            kj(0, alias="a", rebalance=100, expect=E(error="NONE", gen=1, completion=100)),
            kj(0, alias="b", rebalance=100, expect=E(error="NONE", completion=100)),
            kj(50, alias="c", rebalance=100, expect=E(error="NONE", completion=100)),
            kj(100, alias="d", rebalance=100, expect=E(error="NONE", completion=100)),
            kj(150, rebalance=100, expect=E(error="GROUP_MAX_SIZE_REACHED", member="", completion=150)),
        ],
        End(state="CompletingRebalance", generation=1, members={"a", "b", "c", "d"}),
        config=K,
    ),
    Case(
        "testDynamicMembersJoinGroupWithMaxSizeAndRequiredKnownMember",
        [
            *[
                J(0, alias=x, v=5, session=500, rebalance=500, expect=E(error="MEMBER_ID_REQUIRED"))
                for x in "abcde"
            ],
            *[
                J(1, x, v=5, session=500, rebalance=500, expect=E(error="NONE", gen=1, completion=101))
                for x in "abcd"
            ],
            J(1, "e", v=5, session=500, rebalance=500, expect=E(error="GROUP_MAX_SIZE_REACHED", member="")),
            *[J(200, x, v=5, session=500, rebalance=500, expect=E(error="NONE", gen=1)) for x in "abcd"],
            J(200, "e", v=5, session=500, rebalance=500, expect=E(error="GROUP_MAX_SIZE_REACHED")),
        ],
        End(state="CompletingRebalance", members={"a", "b", "c", "d"}, pending=set()),
        config=K,
    ),
    Case(
        "testDynamicMembersJoinGroupWithMaxSizeAndRequiredKnownMember",
        [
            *[
                J(0, alias=x, v=5, session=500, rebalance=500, expect=E(error="MEMBER_ID_REQUIRED"))
                for x in "abcde"
            ],
            *[
                J(1, x, v=5, session=500, rebalance=500, expect=E(error="NONE", gen=1, completion=101))
                for x in "abcde"
            ],
        ],
        End(state="CompletingRebalance", members={"a", "b", "c", "d", "e"}),
        config=cfg("2.5"),
        until=200,
        name="2.5 max-size rule: pending ids rejoining are not counted",
    ),
    Case(
        "testDynamicMembersCanReJoinGroupWithMaxSizeWhileRebalancing",
        [
            *[
                J(0, alias=x, v=5, session=500, rebalance=500, expect=E(error="MEMBER_ID_REQUIRED"))
                for x in "abcde"
            ],
            *[J(1, x, v=5, session=500, rebalance=500, expect=E(unanswered=True)) for x in "abcd"],
            J(1, "e", v=5, session=500, rebalance=500, expect=E(error="GROUP_MAX_SIZE_REACHED")),
            *[
                J(2, x, v=5, session=500, rebalance=500, expect=E(error="NONE", gen=1, completion=101))
                for x in "abcd"
            ],
            J(2, "e", v=5, session=500, rebalance=500, expect=E(error="GROUP_MAX_SIZE_REACHED")),
        ],
        End(state="CompletingRebalance", members={"a", "b", "c", "d"}),
        config=K,
        until=200,
        name="testDynamicMembersCanReJoinGroupWithMaxSizeWhileRebalancing (re-sent joins supersede)",
    ),
    Case(
        "testLastJoiningMembersAreKickedOutWhenReJoiningGroupWithMaxSize",
        [
            *[kj(0, alias=x, session=600_000, expect=E(error="NONE", gen=1, completion=100)) for x in "abcd"],
            S(101, "a", 1, assignments={}),
            kj(102, "a", session=600_000),
            Advance(103),
        ],
        End(state="PreparingRebalance", generation=1, members={"a", "b", "c", "d"}),
        config=K,
        name="max size: members rejoin while the group is full",
    ),
    Case(
        "testStaticMembersJoinGroupWithMaxSize",
        [
            *[
                J(
                    0,
                    alias=x,
                    instance=x.upper(),
                    v=5,
                    session=500,
                    rebalance=500,
                    expect=E(error="NONE", gen=1),
                )
                for x in "abcd"
            ],
            J(
                0,
                alias="e",
                instance="E",
                v=5,
                session=500,
                rebalance=500,
                expect=E(error="GROUP_MAX_SIZE_REACHED"),
            ),
        ],
        End(state="CompletingRebalance", members={"a", "b", "c", "d"}),
        config=K,
        until=200,
    ),
    Case(
        "testRebalanceCompletesBeforeMemberJoins",
        [
            J(
                0,
                alias="l",
                instance="L",
                v=5,
                session=1000,
                rebalance=1200,
                expect=E(error="NONE", gen=1, completion=50),
            ),
            S(51, "l", 1, instance="L", assignments={"l": b""}),
            kj(52, alias="o", expect=E(error="NONE", gen=2, leader="o", completion=1252)),
            H(552, "l", 1, expect=E(error="REBALANCE_IN_PROGRESS")),
            H(1052, "l", 1, expect=E(error="REBALANCE_IN_PROGRESS")),
            S(1553, "o", 2, assignments={"o": b""}, expect=E(error="NONE")),
            H(1554, "l", 1, expect=E(error="ILLEGAL_GENERATION")),
        ],
        End(state="Stable", generation=2, members={"l", "o"}, leader="o"),
        config=K,
    ),
    # ---------------------------------------------------------------------------- initial delay §5.2
    Case(
        "shouldDelayInitialRebalanceByGroupInitialRebalanceDelayOnEmptyGroup",
        [
            *dyn(0, "a", expect=E(error="NONE", completion=50)),
            H(49, "a", 0, expect=E(error="REBALANCE_IN_PROGRESS")),
        ],
        config=K,
        until=60,
    ),
    Case(
        "shouldResetRebalanceDelayWhenNewMemberJoinsGroupInInitialRebalance",
        [
            kj(0, alias="a", rebalance=150, expect=E(error="NONE", completion=150)),
            kj(49, alias="b", rebalance=150, expect=E(error="NONE", completion=150)),
            kj(99, alias="c", rebalance=150, expect=E(error="NONE", completion=150)),
        ],
        End(state="CompletingRebalance", members={"a", "b", "c"}),
        config=K,
        until=200,
        name="§5.2 R=150: 50 (r100), then 50 (r50), then 50 (r0)",
    ),
    Case(
        "shouldDelayRebalanceUptoRebalanceTimeout",
        [
            kj(0, alias="a", rebalance=100, expect=E(error="NONE", completion=100)),
            kj(40, alias="b", rebalance=100, expect=E(error="NONE", completion=100)),
            kj(90, alias="c", rebalance=100, expect=E(error="NONE", completion=100)),
        ],
        config=K,
        until=200,
        name="§5.2 R=100: 50 (r50) then 50 (r0), done although members keep arriving",
    ),
    Case(
        "shouldDelayRebalanceUptoRebalanceTimeout",
        [kj(0, alias="a", expect=E(error="NONE", completion=500))]
        + [kj(40 + 50 * i, alias=f"m{i}", expect=E(error="NONE", completion=500)) for i in range(10)],
        config=cfg(group_max_size=100),
        until=600,
        name="§5.2 R=500: each arrival buys another 50 ms, up to R",
    ),
    Case(
        "shouldDelayInitialRebalanceByGroupInitialRebalanceDelayOnEmptyGroup",
        [kj(0, alias="a", expect=E(error="NONE", gen=1, completion=0))],
        End(state="CompletingRebalance", generation=1),
        config=cfg(group_initial_rebalance_delay_ms=0),
        name="§5.2 D=0: the first JoinGroup is answered at once",
    ),
    Case(
        "shouldResetRebalanceDelayWhenNewMemberJoinsGroupInInitialRebalance",
        [
            *one_stable(),
            L(60, "a", expect=E(error="NONE")),
            kj(100, alias="b", expect=E(error="NONE", gen=3, completion=150)),
            kj(110, alias="c", expect=E(error="NONE", gen=3, completion=150)),
        ],
        End(state="CompletingRebalance", generation=3),
        config=K,
        until=300,
        name="Scala: no initial-delay extension for a group re-formed after Empty (generation > 0)",
    ),
    Case(
        "testNewMemberJoinExpiration",
        [
            *one_stable(),
            L(60, "a", expect=E(error="NONE")),
            kj(100, alias="b", expect=E(error="NONE", gen=3, completion=200)),
            kj(110, alias="c", expect=E(error="NONE", gen=3, completion=200)),
        ],
        End(state="CompletingRebalance", generation=3),
        config=JAVA,
        until=300,
        name="Java §15.1: the extension flag is set after Empty at any generation",
    ),
    Case(
        "testJoinGroupCompletionWhenPendingMemberTimesOut",
        [
            kj(0, alias="a", rebalance=5000, expect=E(error="NONE", completion=50)),
            J(1, alias="p", v=5, session=20, rebalance=5000, expect=E(error="MEMBER_ID_REQUIRED")),
        ],
        config=K,
        until=60,
        name="Scala: a pending member expiring during the initial delay does not end it",
    ),
    Case(
        "testJoinGroupCompletionWhenPendingMemberTimesOut",
        [
            kj(0, alias="a", rebalance=5000, expect=E(error="NONE", completion=21)),
            J(1, alias="p", v=5, session=20, rebalance=5000, expect=E(error="MEMBER_ID_REQUIRED")),
        ],
        config=JAVA,
        until=60,
        name="Java §15.2: a removal during the initial delay completes the join when all joined",
    ),
    # ------------------------------------------------------------------------------------------ sync
    Case(
        "testSyncGroupEmptyAssignment",
        [kj(0, alias="a"), S(51, "a", 1, assignments={}, expect=E(error="NONE", assignment=b""))],
        End(state="Stable"),
        config=K,
    ),
    Case(
        "testSyncGroupFromUnknownGroup",
        [S(0, "m", 1, expect=E(error="UNKNOWN_MEMBER_ID"))],
        End(exists=False),
        config=K,
    ),
    Case(
        "testSyncGroupFromUnknownMember",
        [kj(0, alias="a"), S(51, "unknown", 1, expect=E(error="UNKNOWN_MEMBER_ID"))],
        End(state="CompletingRebalance"),
        config=K,
    ),
    Case(
        "testSyncGroupFromIllegalGeneration",
        [kj(0, alias="a"), S(51, "a", 2, expect=E(error="ILLEGAL_GENERATION"))],
        End(state="CompletingRebalance"),
        config=K,
    ),
    Case(
        "testSyncGroupReturnsAnErrorWhenProtocolTypeIsInconsistent",
        [
            kj(0, alias="a"),
            S(
                51,
                "a",
                1,
                v=5,
                protocol_type="connect",
                protocol_name="range",
                expect=E(error="INCONSISTENT_GROUP_PROTOCOL"),
            ),
        ],
        config=K,
    ),
    Case(
        "testSyncGroupReturnsAnErrorWhenProtocolNameIsInconsistent",
        [
            kj(0, alias="a"),
            S(
                51,
                "a",
                1,
                v=5,
                protocol_type="consumer",
                protocol_name="roundrobin",
                expect=E(error="INCONSISTENT_GROUP_PROTOCOL"),
            ),
        ],
        config=K,
    ),
    Case(
        "testSyncGroupSucceedWhenProtocolTypeAndNameAreNotProvided",
        [
            kj(0, alias="a"),
            S(51, "a", 1, v=4, assignments={"a": b"x"}, expect=E(error="NONE", assignment=b"x")),
        ],
        End(state="Stable"),
        config=K,
    ),
    Case(
        "testSyncGroupSucceedWhenProtocolTypeAndNameAreConsistent",
        [
            kj(0, alias="a"),
            S(
                51,
                "a",
                1,
                v=5,
                protocol_type="consumer",
                protocol_name="range",
                assignments={"a": b"x"},
                expect=E(error="NONE", protocol="range"),
            ),
        ],
        End(state="Stable"),
        config=K,
    ),
    Case(
        "testSyncGroupProtocolTypeAndNameWith",
        [
            kj(0, alias="a"),
            S(51, "a", 1, v=5, protocol_name="range", expect=E(error="INCONSISTENT_GROUP_PROTOCOL")),
        ],
        End(state="CompletingRebalance"),
        config=K,
        name="KafkaApis: SyncGroup v5 with a null protocolType is INCONSISTENT_GROUP_PROTOCOL",
    ),
    Case(
        "testSyncDeadGroup",
        [
            kj(0, alias="a"),
            S(51, "a", 1),
            Unload(60),
            S(61, "a", 1, expect=E(error="COORDINATOR_NOT_AVAILABLE")),
        ],
        config=K,
    ),
    Case(
        "testSyncGroupFollowerAfterLeader",
        [
            kj(0, alias="a", expect=E(error="NONE", completion=100)),
            kj(1, alias="b", expect=E(error="NONE", completion=100)),
            S(
                101,
                "a",
                1,
                assignments={"a": b"A", "b": b"B"},
                expect=E(error="NONE", assignment=b"A", completion=101),
            ),
            S(110, "b", 1, expect=E(error="NONE", assignment=b"B", completion=110)),
        ],
        End(state="Stable"),
        config=K,
    ),
    Case(
        "testSyncGroupLeaderAfterFollower",
        [
            kj(0, alias="a"),
            kj(1, alias="b"),
            S(101, "b", 1, expect=E(error="NONE", assignment=b"B", completion=110)),
            S(
                110,
                "a",
                1,
                assignments={"a": b"A", "b": b"B"},
                expect=E(error="NONE", assignment=b"A", completion=110),
            ),
        ],
        End(state="Stable"),
        config=K,
        events=[("sync_completed", "")],
    ),
    Case(
        "testRebalanceTimesOutWhenSyncRequestIsNotReceived",
        [
            *three_joined(),
            *[H(350, x, 1, expect=E(error="NONE")) for x in "abc"],
            Advance(601),
            *[H(602, x, 1, expect=E(error="UNKNOWN_MEMBER_ID")) for x in "abc"],
        ],
        End(state="Empty", generation=2, members=set()),
        config=K,
        events=[("transition", "on pending sync request expiration")],
    ),
    Case(
        "testRebalanceTimesOutWhenSyncRequestIsNotReceivedFromFollowers",
        [
            *three_joined(),
            *[H(350, x, 1, expect=E(error="NONE")) for x in "abc"],
            S(350, "a", 1, assignments={}, expect=E(error="NONE", completion=350)),
            Advance(601),
            H(602, "a", 1, expect=E(error="REBALANCE_IN_PROGRESS")),
            H(602, "b", 1, expect=E(error="UNKNOWN_MEMBER_ID")),
            H(602, "c", 1, expect=E(error="UNKNOWN_MEMBER_ID")),
        ],
        End(state="PreparingRebalance", generation=1, members={"a"}),
        config=K,
    ),
    Case(
        "testRebalanceTimesOutWhenSyncRequestIsNotReceivedFromLeaders",
        [
            *three_joined(),
            *[H(350, x, 1, expect=E(error="NONE")) for x in "abc"],
            S(350, "b", 1, expect=E(error="REBALANCE_IN_PROGRESS", completion=600)),
            S(350, "c", 1, expect=E(error="REBALANCE_IN_PROGRESS", completion=600)),
            Advance(601),
            H(602, "a", 1, expect=E(error="UNKNOWN_MEMBER_ID")),
            H(602, "b", 1, expect=E(error="REBALANCE_IN_PROGRESS")),
        ],
        End(state="PreparingRebalance", generation=1, members={"b", "c"}),
        config=K,
    ),
    Case(
        "testRebalanceDoesNotTimeOutWhenAllSyncAreReceived",
        [
            *three_joined(),
            S(350, "a", 1, assignments={}),
            S(350, "b", 1),
            S(350, "c", 1),
            Advance(601),
            *[H(602, x, 1, expect=E(error="NONE")) for x in "abc"],
        ],
        End(state="Stable", generation=1, members={"a", "b", "c"}),
        config=K,
    ),
    Case(
        "testRebalanceTimesOutWhenSyncRequestIsNotReceived",
        [
            *three_joined(),
            *[H(350, x, 1) for x in "abc"],
            Advance(601),
            H(602, "a", 1, expect=E(error="NONE")),
        ],
        End(state="CompletingRebalance", generation=1),
        config=cfg("2.8.0"),
        name="2.8.0: no pending-sync timeout (KAFKA-12890 is 2.8.1+)",
    ),
    Case(
        "testRebalanceTimesOutWhenSyncRequestIsNotReceived",
        [
            *three_joined(),
            *[H(350, x, 1) for x in "abc"],
            Advance(601),
            H(602, "a", 1, expect=E(error="UNKNOWN_MEMBER_ID")),
        ],
        End(state="Empty", generation=2),
        config=cfg("2.8"),
        name="2.8 (= 2.8.x): the pending-sync timeout of 2.8.1",
    ),
    # ------------------------------------------------------------------------------------- heartbeat
    Case("testHeartbeatUnknownGroup", [H(0, "m", 1, expect=E(error="UNKNOWN_MEMBER_ID"))], config=K),
    Case(
        "testHeartbeatDeadGroup",
        [*one_stable(), Unload(60), H(61, "a", 1, expect=E(error="COORDINATOR_NOT_AVAILABLE"))],
        config=K,
    ),
    Case(
        "testHeartbeatDeadGroup",
        [*one_stable(), Unload(60), H(61, "a", 1, expect=E(error="UNKNOWN_MEMBER_ID"))],
        config=cfg("2.2"),
        name="2.2: Dead group heartbeat is UNKNOWN_MEMBER_ID",
    ),
    Case(
        "testHeartbeatEmptyGroup",
        [*one_stable(), L(60, "a"), H(61, "a", 2, expect=E(error="UNKNOWN_MEMBER_ID"))],
        End(state="Empty", generation=2),
        config=K,
    ),
    Case(
        "testHeartbeatUnknownConsumerExistingGroup",
        [*one_stable(), H(60, "other", 1, expect=E(error="UNKNOWN_MEMBER_ID"))],
        config=K,
    ),
    Case(
        "testHeartbeatRebalanceInProgress",
        [kj(0, alias="a"), H(51, "a", 1, expect=E(error="NONE"))],
        config=K,
    ),
    Case(
        "testHeartbeatRebalanceInProgress",
        [
            kj(0, alias="a"),
            H(51, "a", 1, expect=E(error="REBALANCE_IN_PROGRESS")),
            H(52, "a", 7, expect=E(error="ILLEGAL_GENERATION")),
        ],
        config=cfg("2.5"),
        name="2.3-2.6.0: heartbeat in CompletingRebalance is REBALANCE_IN_PROGRESS after the checks",
    ),
    Case(
        "testHeartbeatRebalanceInProgress",
        [kj(0, alias="a"), H(51, "a", 7, expect=E(error="REBALANCE_IN_PROGRESS"))],
        config=cfg("2.2"),
        name="2.2: heartbeat in CompletingRebalance is REBALANCE_IN_PROGRESS without a generation check",
    ),
    Case(
        "testHeartbeatIllegalGeneration",
        [*one_stable(), H(60, "a", 2, expect=E(error="ILLEGAL_GENERATION"))],
        config=K,
    ),
    Case(
        "testValidHeartbeat", [*one_stable(), H(60, "a", 1, expect=E(error="NONE", completion=60))], config=K
    ),
    Case(
        "testSessionTimeout",
        [*one_stable(), Advance(552), H(600, "a", 1, expect=E(error="UNKNOWN_MEMBER_ID"))],
        End(state="Empty", generation=2, members=set()),
        config=K,
        events=[("member_removed", "removing member"), ("transition", "on heartbeat expiration")],
    ),
    Case(
        "testSessionTimeout",
        [*one_stable(), H(551, "a", 1, expect=E(error="NONE"))],
        End(state="Stable", members={"a"}),
        config=K,
        name="strict timer rule: a heartbeat exactly at the deadline is in time",
    ),
    Case(
        "testSessionTimeout",
        [*one_stable(), H(551, "a", 1, expect=E(error="UNKNOWN_MEMBER_ID"))],
        End(state="Empty"),
        config=cfg(timer_rule="inclusive"),
        name="inclusive timer rule (the broker's): the session expired at its deadline",
    ),
    Case(
        "testHeartbeatMaintainsSession",
        [*one_stable(), H(400, "a", 1), H(800, "a", 1, expect=E(error="NONE"))],
        End(state="Stable", members={"a"}),
        config=K,
        until=1200,
    ),
    Case(
        "testCommitMaintainsSession",
        [*one_stable(), C(400, "a", 1, expect=E(error="NONE"))],
        End(state="Stable", members={"a"}),
        config=K,
        until=800,
    ),
    Case(
        "testSyncGroupLeaderAfterFollower",
        [*one_stable(), S(400, "a", 1, expect=E(error="NONE", assignment=b"A"))],
        End(state="Stable", members={"a"}),
        config=K,
        until=700,
        name="Scala: SyncGroup in Stable re-arms the session",
    ),
    Case(
        "testSyncGroupLeaderAfterFollower",
        [*one_stable(), S(400, "a", 1, expect=E(error="NONE", assignment=b"A"))],
        End(state="Empty", members=set()),
        config=JAVA,
        until=700,
        name="Java §15.3: SyncGroup in Stable does not re-arm the session",
    ),
    # ----------------------------------------------------------------------------------------- leave
    Case("testLeaveGroupUnknownGroup", [L(0, "m", v=2, expect=E(error="UNKNOWN_MEMBER_ID"))], config=K),
    Case(
        "testStaticMembersUnknownGroupBatchLeaveGroup",
        [
            L(
                0,
                ("m", "L"),
                ("n", "F"),
                expect=E(error="NONE", member_errors={"m": "UNKNOWN_MEMBER_ID", "n": "UNKNOWN_MEMBER_ID"}),
            )
        ],
        config=K,
    ),
    Case(
        "testLeaveGroupUnknownConsumerExistingGroup",
        [*one_stable(), L(60, "other", v=1, expect=E(error="UNKNOWN_MEMBER_ID"))],
        End(state="Stable"),
        config=K,
    ),
    Case(
        "testSingleLeaveDeadGroup",
        [*one_stable(), Unload(60), L(61, "a", v=2, expect=E(error="COORDINATOR_NOT_AVAILABLE"))],
        config=K,
    ),
    Case(
        "testBatchLeaveDeadGroup",
        [
            *one_stable(),
            Unload(60),
            L(61, "a", v=3, expect=E(error="COORDINATOR_NOT_AVAILABLE", member_errors={})),
        ],
        config=K,
    ),
    Case(
        "testValidLeaveGroup",
        [*one_stable(), L(60, "a", v=0, reason=None, expect=E(error="NONE"))],
        End(state="Empty", generation=2, members=set(), leader=None),
        config=K,
        events=[("member_removed", "Removing member")],
    ),
    Case(
        "testValidLeaveGroup",
        [*one_stable(), L(60, "a", v=5, reason="the consumer is being closed", expect=E(error="NONE"))],
        End(state="Empty", generation=2),
        config=K,
        events=[("transition", "on LeaveGroup; client reason: the consumer is being closed")],
        name="3.2+ LeaveGroup cause carries the client reason",
    ),
    Case(
        "testValidLeaveGroup",
        [*one_stable(), L(60, "a", v=2, expect=E(error="NONE"))],
        End(state="Empty", generation=2),
        config=cfg("2.8"),
        events=[("transition", "removing member")],
        name="2.8 LeaveGroup cause wording",
    ),
    Case(
        "testLeaveGroupWithFencedInstanceId",
        [
            *two_static(),
            L(200, ("wrong-id", "L"), expect=E(member_errors={"wrong-id": "FENCED_INSTANCE_ID"})),
        ],
        End(state="Stable", members={"l", "f"}),
        config=K,
    ),
    Case(
        "testLeaveGroupStaticMemberWithUnknownMemberId",
        [*two_static(), L(200, ("", "L"), expect=E(member_errors={"": "NONE"}))],
        End(state="PreparingRebalance", members={"f"}),
        config=K,
    ),
    Case(
        "testStaticMembersValidBatchLeaveGroup",
        [*two_static(), L(200, ("l", "L"), ("f", "F"), expect=E(member_errors={"l": "NONE", "f": "NONE"}))],
        End(state="Empty", generation=2, members=set(), static={}),
        config=K,
    ),
    Case(
        "testStaticMembersFencedInstanceBatchLeaveGroup",
        [
            *two_static(),
            L(
                200,
                ("l", "L"),
                ("invalid", "F"),
                expect=E(member_errors={"l": "NONE", "invalid": "FENCED_INSTANCE_ID"}),
            ),
        ],
        End(state="PreparingRebalance", members={"f"}),
        config=K,
    ),
    Case(
        "testStaticMembersUnknownInstanceBatchLeaveGroup",
        [
            *two_static(),
            L(
                200,
                ("l", "unknown-instance"),
                ("f", "F"),
                expect=E(member_errors={"l": "UNKNOWN_MEMBER_ID", "f": "NONE"}),
            ),
        ],
        End(state="PreparingRebalance", members={"l"}),
        config=K,
    ),
    Case(
        "testStaticMembersUnknownInstanceBatchLeaveGroup",
        [
            *two_static(),
            L(200, ("l", "unknown-instance"), ("f", "F"), expect=E(member_errors={"l": "NONE", "f": "NONE"})),
        ],
        End(state="Empty", members=set()),
        config=cfg("2.8"),
        name="2.4-2.8: an unknown instance id with a valid member id may leave",
    ),
    # ---------------------------------------------------------------------------------------- commit
    Case(
        "testCommitOffsetFromUnknownGroup",
        [C(0, "m", 1, expect=E(error="ILLEGAL_GENERATION"))],
        End(exists=False),
        config=K,
    ),
    Case(
        "testCommitOffsetFromUnknownGroup",
        [C(0, "m", 1, v=9, expect=E(error="GROUP_ID_NOT_FOUND"))],
        config=cfg("4.0"),
        name="Java (4.0): OffsetCommit v9+ on an unknown group is GROUP_ID_NOT_FOUND",
    ),
    Case(
        "testCommitOffsetWithDefaultGeneration",
        [C(0, "", -1, expect=E(error="NONE"))],
        End(state="Empty", generation=0),
        config=K,
    ),
    Case(
        "testCommitOffsetsAfterGroupIsEmpty",
        [*one_stable(), L(60, "a"), C(61, "", -1, expect=E(error="NONE"))],
        End(state="Empty", generation=2),
        config=K,
    ),
    Case(
        "testManualCommitOffsetShouldNotValidateMemberIdAndInstanceId",
        [*one_stable(), L(60, "a"), C(61, "a", -1, instance="I", expect=E(error="NONE"))],
        config=K,
    ),
    Case(
        "testManualCommitOffsetShouldNotValidateMemberIdAndInstanceId",
        [*one_stable(), L(60, "a"), C(61, "a", -1, expect=E(error="UNKNOWN_MEMBER_ID"))],
        config=cfg("3.2"),
        name="3.0-3.3.0: generation -1 commit with a member id on an Empty group is rejected",
    ),
    Case(
        "testCommitOffsetInCompletingRebalance",
        [kj(0, alias="a"), C(51, "a", 1, expect=E(error="REBALANCE_IN_PROGRESS"))],
        config=K,
    ),
    Case(
        "testCommitOffsetInCompletingRebalanceFromUnknownMemberId",
        [kj(0, alias="a"), C(51, "other", 1, expect=E(error="UNKNOWN_MEMBER_ID"))],
        config=K,
    ),
    Case(
        "testCommitOffsetInCompletingRebalanceFromUnknownMemberId",
        [kj(0, alias="a"), C(51, "other", 1, expect=E(error="REBALANCE_IN_PROGRESS"))],
        config=cfg("2.3"),
        name="2.2-2.3: CompletingRebalance is checked before membership (KAFKA-8487)",
    ),
    Case(
        "testCommitOffsetInCompletingRebalanceFromIllegalGeneration",
        [kj(0, alias="a"), C(51, "a", 2, expect=E(error="ILLEGAL_GENERATION"))],
        config=K,
    ),
    Case(
        "testOffsetCommitDeadGroup",
        [*one_stable(), Unload(60), C(61, "a", 1, expect=E(error="COORDINATOR_NOT_AVAILABLE"))],
        config=K,
    ),
    Case(
        "testOffsetCommitDeadGroup",
        [*one_stable(), Unload(60), C(61, "a", 1, expect=E(error="UNKNOWN_MEMBER_ID"))],
        config=cfg("2.2"),
        name="2.2: Dead group commit is UNKNOWN_MEMBER_ID",
    ),
    # ---------------------------------------------------------------------------------------- static
    Case(
        "staticMemberJoinAsFirstMember",
        [
            J(
                0,
                alias="s",
                instance="I",
                v=5,
                session=500,
                rebalance=500,
                expect=E(error="NONE", gen=1, completion=50),
            )
        ],
        End(state="CompletingRebalance", static={"I": "s"}),
        config=K,
        until=60,
    ),
    Case(
        "staticMemberReJoinWithExplicitUnknownMemberId",
        [
            J(
                0,
                alias="s",
                instance="I",
                v=5,
                session=500,
                rebalance=500,
                expect=E(error="NONE", completion=50),
            ),
            J(60, "unknown_member", instance="I", v=5, expect=E(error="FENCED_INSTANCE_ID")),
        ],
        config=K,
    ),
    Case(
        "staticMemberRejoinWithLeaderIdAndUnknownMemberId",
        [
            *two_static(),
            J(
                200,
                alias="l2",
                instance="L",
                v=9,
                protos=SUPERSET,
                session=500,
                rebalance=500,
                expect=E(error="NONE", gen=1, leader="l2", members={"l2", "f"}, skip=True, completion=200),
            ),
            J(201, "l", instance="L", v=9, protos=SUPERSET, expect=E(error="FENCED_INSTANCE_ID")),
            S(202, "l", 1, instance="L", expect=E(error="FENCED_INSTANCE_ID")),
            S(203, "l", 1, expect=E(error="UNKNOWN_MEMBER_ID")),
        ],
        End(state="Stable", generation=1, members={"l2", "f"}, leader="l2", static={"L": "l2", "F": "f"}),
        config=K,
        name="staticMemberRejoinWithLeaderIdAndUnknownMemberId (v9: skipAssignment)",
    ),
    Case(
        "staticMemberRejoinWithLeaderIdAndUnknownMemberId",
        [
            *two_static(),
            J(
                200,
                alias="l2",
                instance="L",
                v=8,
                protos=SUPERSET,
                session=500,
                rebalance=500,
                expect=E(error="NONE", gen=1, leader="l", members=set(), completion=200),
            ),
        ],
        End(state="Stable", generation=1, leader="l2"),
        config=K,
        name="staticMemberRejoinWithLeaderIdAndUnknownMemberId (v8: old leader id returned)",
    ),
    Case(
        "staticMemberRejoinWithLeaderIdAndKnownMemberId",
        [
            *two_static(session=250),
            J(
                103,
                "l",
                instance="L",
                v=5,
                protos=SUPERSET,
                session=250,
                rebalance=500,
                expect=E(error="NONE", gen=2, leader="l", members={"l"}, completion=352),
            ),
        ],
        End(state="CompletingRebalance", generation=2, members={"l"}, static={"L": "l"}),
        config=K,
        until=400,
    ),
    Case(
        "staticMemberRejoinWithFollowerIdAndChangeOfProtocol",
        [
            *two_static(session=1000),
            J(
                103,
                "f",
                instance="F",
                v=5,
                protos=("roundrobin",),
                session=1000,
                rebalance=500,
                expect=E(
                    error="NONE", gen=2, leader="f", members={"l", "f"}, protocol="roundrobin", completion=603
                ),
            ),
        ],
        End(
            state="CompletingRebalance",
            generation=2,
            leader="f",
            protocol="roundrobin",
            static={"L": "l", "F": "f"},
        ),
        config=K,
        until=700,
    ),
    Case(
        "staticMemberRejoinWithUnknownMemberIdAndChangeOfProtocolWithSelectedProtocolChanged",
        [
            *two_static(session=1000),
            J(
                103,
                alias="f2",
                instance="F",
                v=5,
                protos=("roundrobin",),
                session=1000,
                rebalance=500,
                expect=E(error="NONE", gen=2, leader="f2", protocol="roundrobin", completion=603),
            ),
        ],
        End(state="CompletingRebalance", generation=2, leader="f2", static={"L": "l", "F": "f2"}),
        config=K,
        until=700,
    ),
    Case(
        "staticMemberRejoinWithUnknownMemberIdAndChangeOfProtocolWhileSelectProtocolUnchanged",
        [
            *two_static(),
            J(
                103,
                alias="f2",
                instance="F",
                v=9,
                protos=("range",),
                session=500,
                rebalance=500,
                expect=E(error="NONE", gen=1, leader="l", members=set(), skip=False, completion=103),
            ),
        ],
        End(state="Stable", generation=1, static={"L": "l", "F": "f2"}),
        config=K,
    ),
    Case(
        "staticMemberRejoinWithUnknownMemberIdAndChangeOfProtocolWhileSelectProtocolUnchanged",
        [
            *two_static(),
            J(
                103,
                alias="f2",
                instance="F",
                v=5,
                protos=("roundrobin",),
                session=500,
                rebalance=500,
                expect=E(error="NONE", gen=1, leader="l", completion=103),
            ),
        ],
        End(state="Stable", generation=1),
        config=cfg("2.6.0"),
        name="2.3-2.6.0: static rejoin in Stable answered at once even if the selected protocol would change",
    ),
    Case(
        "staticMemberRejoinAsFollowerWithUnknownMemberId",
        [
            *two_static(),
            J(
                103,
                alias="f2",
                instance="F",
                v=5,
                protos=SUPERSET,
                session=500,
                rebalance=500,
                expect=E(error="NONE", gen=1, leader="l", members=set(), completion=103),
            ),
            H(104, "f2", 1, instance="F", expect=E(error="NONE")),
            H(105, "f", 1, instance="F", expect=E(error="FENCED_INSTANCE_ID")),
        ],
        End(state="Stable", generation=1, members={"l", "f2"}),
        config=K,
    ),
    Case(
        "staticMemberRejoinAsFollowerWithKnownMemberIdAndNoProtocolChange",
        [
            *two_static(),
            J(
                103,
                "f",
                instance="F",
                v=5,
                protos=SUPERSET,
                session=500,
                rebalance=500,
                expect=E(error="NONE", gen=1, leader="l", members=set(), completion=103),
            ),
        ],
        End(state="Stable", generation=1, members={"l", "f"}),
        config=K,
    ),
    Case(
        "staticMemberRejoinAsFollowerWithMismatchedMemberId",
        [
            *two_static(),
            J(103, "l", instance="F", v=5, protos=SUPERSET, expect=E(error="FENCED_INSTANCE_ID")),
        ],
        End(state="Stable"),
        config=K,
    ),
    Case(
        "staticMemberSyncAsLeaderWithInvalidMemberId",
        [*two_static(), S(103, "invalid", 1, instance="L", expect=E(error="FENCED_INSTANCE_ID"))],
        config=K,
    ),
    Case(
        "staticMemberHeartbeatLeaderWithInvalidMemberId",
        [
            *two_static(),
            H(103, "invalid", 1, instance="L", expect=E(error="FENCED_INSTANCE_ID")),
            H(104, "l", 1, instance="L", expect=E(error="NONE")),
        ],
        config=K,
    ),
    Case(
        "staticMemberCommitOffsetWithInvalidMemberId",
        [*two_static(), C(103, "invalid", 1, instance="L", expect=E(error="FENCED_INSTANCE_ID"))],
        config=K,
    ),
    Case(
        "staticMemberJoinWithUnknownInstanceIdAndKnownMemberId",
        [
            *two_static(),
            J(
                103,
                "l",
                instance="unknown_instance",
                v=5,
                protos=SUPERSET,
                expect=E(error="UNKNOWN_MEMBER_ID"),
            ),
        ],
        config=K,
    ),
    Case(
        "staticMemberHeartbeatLeaderWithInvalidMemberId",
        [*two_static(), H(103, "l", 1, instance="unknown", expect=E(error="NONE"))],
        config=cfg("2.8"),
        name="2.3-2.8: heartbeat with an unmapped instance id but a valid member id is accepted",
    ),
    Case(
        "staticMemberHeartbeatLeaderWithInvalidMemberId",
        [*two_static(), H(103, "l", 1, instance="unknown", expect=E(error="UNKNOWN_MEMBER_ID"))],
        config=K,
        name="3.0+: heartbeat with an unmapped instance id is UNKNOWN_MEMBER_ID",
    ),
    Case(
        "staticMemberFenceDuplicateRejoinedFollower",
        [
            *two_static(),
            kj(200, alias="n"),
            J(
                202,
                "f",
                instance="F",
                v=5,
                protos=SUPERSET,
                expect=E(error="FENCED_INSTANCE_ID", gen=-1, completion=203),
            ),
            J(203, alias="f2", instance="F", v=5, protos=SUPERSET, expect=E(completion=None)),
        ],
        End(state="PreparingRebalance"),
        config=K,
        events=[("static_member_replaced", "Replacing previously mapped member")],
    ),
    Case(
        "staticMemberFenceDuplicateSyncingFollowerAfterMemberIdChanged",
        [
            *two_static(),
            J(
                200,
                "l",
                instance="L",
                v=5,
                protos=SUPERSET,
                session=500,
                rebalance=500,
                expect=E(error="NONE", gen=2, completion=202),
            ),
            J(
                202,
                "f",
                instance="F",
                v=5,
                protos=SUPERSET,
                session=500,
                rebalance=500,
                expect=E(error="NONE", gen=2, leader="l", completion=202),
            ),
            S(
                203,
                "f",
                2,
                instance="F",
                v=5,
                protocol_type="consumer",
                protocol_name="range",
                expect=E(error="FENCED_INSTANCE_ID", completion=203),
            ),
            J(
                203,
                alias="f2",
                instance="F",
                v=5,
                protos=SUPERSET,
                session=500,
                rebalance=500,
                expect=E(error="NONE", gen=3, leader="f2", members={"f2"}, completion=702),
            ),
        ],
        End(state="CompletingRebalance", generation=3, members={"f2"}, leader="f2"),
        config=K,
        until=800,
    ),
    Case(
        "testStaticMemberFollowerFailToRejoinBeforeRebalanceTimeout",
        [
            *two_static(session=5000),
            J(
                200,
                "l",
                instance="L",
                v=5,
                protos=SUPERSET,
                session=5000,
                rebalance=500,
                expect=E(error="NONE", gen=2, leader="l", members={"l", "f"}, completion=700),
            ),
        ],
        End(state="CompletingRebalance", generation=2, members={"l", "f"}),
        config=K,
        until=701,
    ),
    Case(
        "testStaticMemberLeaderFailToRejoinBeforeRebalanceTimeout",
        [
            *two_static(session=5000),
            J(
                200,
                "f",
                instance="F",
                v=5,
                protos=("range",),
                session=5000,
                rebalance=500,
                expect=E(error="NONE", gen=2, leader="f", members={"l", "f"}, completion=700),
            ),
        ],
        End(state="CompletingRebalance", generation=2, leader="f"),
        config=K,
        until=701,
    ),
    Case(
        "staticMemberRejoinWithLeaderIdAndUnknownMemberId",
        [
            *two_static(),
            kj(200, alias="n", expect=E(error="NONE", gen=2, completion=602)),
            J(
                201,
                alias="l2",
                instance="L",
                v=5,
                protos=SUPERSET,
                expect=E(error="NONE", gen=2, completion=602),
            ),
        ],
        End(state="CompletingRebalance", generation=2, members={"l2", "n"}),
        config=K,
        until=800,
        name="static rejoin while PreparingRebalance waits for the join phase",
    ),
    Case(
        "staticMemberRejoinWithLeaderIdAndUnknownMemberId",
        [
            J(0, alias="l", instance="L", v=5, session=5000, expect=E(error="NONE", gen=1, completion=100)),
            J(0, alias="f", instance="F", v=5, session=5000, expect=E(error="NONE", gen=1, completion=100)),
            J(
                101,
                alias="f2",
                instance="F",
                v=5,
                session=5000,
                expect=E(error="NONE", gen=2, completion=101),
            ),
            J(101, "l", instance="L", v=5, session=5000, expect=E(error="NONE", gen=2, completion=101)),
        ],
        End(state="CompletingRebalance", generation=2),
        config=K,
        name="2.5+: static rejoin in CompletingRebalance forces a rebalance (KAFKA-9801)",
    ),
    Case(
        "staticMemberRejoinWithLeaderIdAndUnknownMemberId",
        [
            J(0, alias="l", instance="L", v=5, session=5000, expect=E(error="NONE", gen=1, completion=100)),
            J(0, alias="f", instance="F", v=5, session=5000, expect=E(error="NONE", gen=1, completion=100)),
            J(
                101,
                alias="f2",
                instance="F",
                v=5,
                session=5000,
                expect=E(error="NONE", gen=1, leader="l", completion=101),
            ),
        ],
        End(state="CompletingRebalance", generation=1, members={"l", "f2"}),
        config=cfg("2.4"),
        name="2.3-2.4: static rejoin in CompletingRebalance answered at once, no rebalance",
    ),
    Case(
        "staticMemberJoinAsFirstMember",
        [J(0, instance="I", v=4, expect=E(error="UNSUPPORTED_VERSION"))],
        config=cfg("2.2"),
        name="2.2: group.instance.id is not supported",
    ),
    Case(
        "testLeaderFailToRejoinBeforeFinalRebalanceTimeoutWithLongSessionTimeout",
        [
            *two_static(session=1000),
            kj(
                103,
                alias="d",
                session=1000,
                protos=SUPERSET,
                expect=E(error="NONE", gen=2, leader="d", members={"l", "f", "d"}, completion=603),
            ),
            L(604, "f", v=1, expect=E(error="NONE")),
            Advance(1105),
        ],
        End(state="PreparingRebalance", generation=2, members={"l"}, leader="l"),
        config=K,
        until=1105,
        events=[("timer_expired", "could not complete rebalance because no members rejoined")],
        name="groupStuckInRebalanceTimeoutDueToNonjoinedStaticMember",
    ),
    Case(
        "testLeaderFailToRejoinBeforeFinalRebalanceTimeoutWithLongSessionTimeout",
        [
            *two_static(session=1000),
            kj(103, alias="d", session=1000, protos=SUPERSET),
            L(604, "f", v=1),
        ],
        End(state="Empty", generation=3, members=set(), leader=None),
        config=K,
        until=1700,
    ),
    Case(
        "testLeaderRejoinBeforeFinalRebalanceTimeoutWithLongSessionTimeout",
        [
            *two_static(session=1000),
            kj(103, alias="d", session=1000, protos=SUPERSET),
            L(604, "f", v=1),
            J(
                1200,
                alias="l2",
                instance="L",
                v=5,
                session=1000,
                rebalance=500,
                expect=E(error="NONE", gen=3, leader="l2", members={"l2"}, completion=1200),
            ),
        ],
        End(state="CompletingRebalance", generation=3, members={"l2"}, leader="l2"),
        config=K,
    ),
    Case(
        "testNewMemberFailureAfterJoinGroupCompletion",
        [
            *dyn(0, "a", expect=E(error="NONE", gen=1, completion=50)),
            S(51, "a", 1, assignments={"a": b""}),
            kj(52, alias="b", expect=E(error="NONE", gen=2, completion=53)),
            kj(53, "a", expect=E(error="NONE", gen=2, completion=53)),
        ],
        End(state="Empty", members=set()),
        config=K,
        until=554,
    ),
    Case(
        "testNewMemberFailureAfterSyncGroupCompletion",
        [
            *dyn(0, "a", expect=E(error="NONE", gen=1, completion=50)),
            S(51, "a", 1, assignments={"a": b""}),
            kj(52, alias="b", expect=E(error="NONE", gen=2, completion=53)),
            kj(53, "a", expect=E(error="NONE", gen=2, completion=53)),
            S(54, "b", 2, expect=E(error="NONE", completion=55)),
            S(55, "a", 2, assignments={"a": b"", "b": b""}, expect=E(error="NONE", completion=55)),
        ],
        End(state="Empty", generation=3, members=set()),
        config=K,
        until=556,
    ),
    # ------------------------------------------------------------------------------- Java wording
    Case(
        "testLeaveGroupWithFencedInstanceId",
        [*two_static(), L(200, ("", "L"), ("f", "F"), expect=E(member_errors={"": "NONE", "f": "NONE"}))],
        End(state="Empty", generation=2, members=set()),
        config=JAVA,
        events=[("transition", "explicit `LeaveGroup` request for (, ")],
        name="Java §15.4: a LeaveGroup batch is applied first, one transition at the end",
    ),
    Case(
        "testRebalanceTimesOutWhenSyncRequestIsNotReceived",
        [*three_joined(), Advance(601)],
        End(state="Empty", generation=2),
        # Kafka's test timer (MockCoordinatorTimer, a PriorityQueue) pops the pending-sync timer before
        # the equal-deadline session timers; a broker fires them in arming order (sessions first)
        config=cfg("3.7", implementation="java", timer_tie_order="rebalance_first"),
        events=[("transition", "Removing ["), ("transition", "on pending sync request expiration")],
        name="Java: pending-sync cause lists the members Java-style",
    ),
    Case(
        "testSessionTimeout",
        [*one_stable(), Advance(552)],
        End(state="Empty", generation=2),
        config=JAVA,
        events=[("member_removed", "on heartbeat expiration.")],
        name="Java: heartbeat expiration cause",
    ),
    Case(
        "testDynamicMembersJoinGroupWithMaxSizeAndRequiredKnownMember",
        [
            *[kj(0, alias=x, expect=E(error="NONE", gen=1, completion=100)) for x in "ab"],
            S(101, "a", 1, assignments={}),
            kj(102, alias="c"),
            kj(103, "a"),
            kj(104, "b", expect=E(error="NONE", gen=2, completion=104)),
        ],
        End(state="CompletingRebalance", generation=2, members={"a", "b", "c"}),
        config=cfg("3.7", implementation="java", group_max_size=3),
        name="Java coordinator: ordinary rebalance under a max size",
    ),
    # --------------------------------------------------------------------------------- superseding
    Case(
        "testDynamicMembersCanReJoinGroupWithMaxSizeWhileRebalancing",
        [
            *two_stable(),
            kj(200, alias="c"),
            kj(201, "a", expect=E(unanswered=True)),
            kj(202, "a", expect=E(error="NONE", gen=2, completion=203)),
            kj(203, "b", expect=E(error="NONE", gen=2, completion=203)),
        ],
        End(state="CompletingRebalance", generation=2, members={"a", "b", "c"}),
        config=K,
        name="a JoinGroup re-sent while parked supersedes the first, which is never answered",
    ),
    # -------------------------------------------------------------------------------- timeouts update
    Case(
        "staticMemberRejoinWithUpdatedSessionAndRebalanceTimeoutsAndPersistChange",
        [*one_stable(), kj(60, "a", session=2000), S(61, "a", 2, assignments={}), Advance(1000)],
        End(state="Stable", members={"a"}),
        config=K,
        name="3.3.2/3.4+: a rejoin updates the session timeout (KAFKA-14009)",
    ),
    Case(
        "staticMemberRejoinWithUpdatedSessionAndRebalanceTimeoutsAndPersistChange",
        [*one_stable(), kj(60, "a", session=2000), S(61, "a", 2, assignments={}), Advance(1000)],
        End(state="Empty", members=set()),
        config=cfg("3.3.0"),
        name="before 3.3.2: the first join's session timeout sticks",
    ),
    # ---------------------------------------------------------------------------- group lifecycle §11
    Case(
        "testDeleteEmptyGroup",
        [
            *one_stable(),
            L(60, "a"),
            Advance(1100),
            kj(1200, alias="b", expect=E(error="NONE", gen=1, completion=1250)),
        ],
        End(state="CompletingRebalance", generation=1),
        config=cfg(offsets_retention_check_interval_ms=1000),
        until=1300,
        name="§11: an Empty group without offsets is deleted; a new join starts at generation 0",
    ),
    Case(
        "testDeleteEmptyGroupWithStoredOffsets",
        [
            *one_stable(),
            C(55, "a", 1),
            L(60, "a"),
            Advance(1100),
            kj(1200, alias="b", expect=E(error="NONE", gen=3)),
        ],
        config=cfg(offsets_retention_check_interval_ms=1000),
        until=1300,
        name="§11: an Empty group with offsets stays until they expire",
    ),
    # -------------------------------------------------------------------------------- coordinator load
    Case(
        "testRequestHandlingWhileLoadingInProgress",
        [*one_stable(), Unload(60), Load(70), H(71, "a", 1, expect=E(error="NONE"))],
        End(state="Stable", generation=1, members={"a"}),
        config=K,
        name="§16: a reloaded group is Stable with its persisted members",
    ),
    Case(
        "testRequestHandlingWhileLoadingInProgress",
        [
            kj(0, alias="a"),
            kj(1, alias="b"),
            S(101, "a", 1, assignments={}),
            kj(150, "a"),
            Unload(160),
            Load(170),
            H(171, "b", 1, expect=E(error="NONE")),
        ],
        End(state="Stable", generation=1, members={"a", "b"}),
        config=K,
        name="§16: the in-memory rebalance is lost on a coordinator move",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_kafka_scenario(case: Case) -> None:
    run_case(case)


def test_every_case_is_collected_once() -> None:
    """The 147 written cases, each under its own id (a case lost in an edit, or two sharing an id, shows)."""
    assert len(CASES) == 147
    assert len({c.id for c in CASES}) == len(CASES)
