"""OffsetCommit validation of the Scala coordinator (``GroupCoordinator.doCommitOffsets``), in the order
each release checks: 2.2/2.3 refuse every commit in CompletingRebalance before looking at the member
(REBALANCE_IN_PROGRESS); 2.4+ check the member and its generation first (UNKNOWN_MEMBER_ID,
ILLEGAL_GENERATION), then the state (../shared/reference/kafka-coordinator-semantics.md, the version table:
"OffsetCommit in CompletingRebalance from non-member"). A mutation run found that no test told these apart:
the state check applied in every state (2.3) or before the member check (2.4+) passed everything."""

from __future__ import annotations

import pytest

from rebalance_replay.transforms.coordinator.config import CoordinatorConfig
from tests.unit.coordinator.scenario import C, Case, E, End, J, S, run_case


def config(version: str) -> CoordinatorConfig:
    return CoordinatorConfig(
        kafka_version=version, group_initial_rebalance_delay_ms=0, warm_start=False, mode="predict"
    )


@pytest.mark.parametrize(
    ("version", "from_a_stranger"),
    [("2.3", "REBALANCE_IN_PROGRESS"), ("2.4", "UNKNOWN_MEMBER_ID"), ("2.8", "UNKNOWN_MEMBER_ID")],
)
def test_a_commit_in_completing_rebalance(version: str, from_a_stranger: str) -> None:
    """a's join phase completes at once (no initial delay): CompletingRebalance, generation 1, until a
    syncs. A commit from a member the group does not have: refused for the state (2.3) or the member
    (2.4+); from a with its generation: REBALANCE_IN_PROGRESS everywhere."""
    run_case(
        Case(
            "doCommitOffsets in CompletingRebalance",
            [
                J(0, alias="a", v=3, expect=E(error="NONE", gen=1, completion=0)),
                C(1, "stranger", 1, expect=E(error=from_a_stranger)),
                C(2, "a", 1, expect=E(error="REBALANCE_IN_PROGRESS")),
            ],
            End(state="CompletingRebalance", generation=1),
            config=config(version),
        )
    )


@pytest.mark.parametrize("version", ["2.3", "2.4", "2.8"])
def test_a_commit_in_stable(version: str) -> None:
    """Stable, generation 1 (a synced): a commit from a member the group does not have is
    UNKNOWN_MEMBER_ID and one of a with another generation ILLEGAL_GENERATION, in 2.3 as in 2.4+ (the
    CompletingRebalance check comes first in 2.3, but only in that state)."""
    run_case(
        Case(
            "doCommitOffsets in Stable",
            [
                J(0, alias="a", v=3, expect=E(error="NONE", gen=1, completion=0)),
                S(1, "a", 1, assignments={"a": b"A"}, expect=E(error="NONE")),
                C(2, "stranger", 1, expect=E(error="UNKNOWN_MEMBER_ID")),
                C(3, "a", 5, expect=E(error="ILLEGAL_GENERATION")),
                C(4, "a", 1, expect=E(error="NONE")),
            ],
            End(state="Stable", generation=1),
            config=config(version),
        )
    )


@pytest.mark.parametrize("version", ["2.3", "2.8"])
def test_a_commit_naming_a_static_members_instance_with_another_member_id_is_fenced(version: str) -> None:
    """Static membership (2.3+): a commit whose group instance id belongs to another member id is
    FENCED_INSTANCE_ID (``doCommitOffsets``: ``group.isStaticMemberFenced`` before the member and generation
    checks), even from a member the group does not have; the static member's own commit is accepted."""
    run_case(
        Case(
            "doCommitOffsets, a fenced static member",
            [
                J(0, alias="a", v=5, instance="i-a", expect=E(error="NONE", gen=1, completion=0)),
                S(1, "a", 1, v=3, assignments={"a": b"A"}, expect=E(error="NONE")),
                C(2, "stranger", 1, instance="i-a", expect=E(error="FENCED_INSTANCE_ID")),
                C(3, "a", 1, instance="i-a", expect=E(error="NONE")),
            ],
            End(state="Stable", generation=1),
            config=config(version),
        )
    )
