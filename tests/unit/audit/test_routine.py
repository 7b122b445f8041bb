"""The audit on a group's inputs without most of their routine rows (``transforms/audit/routine.py``):
every rule finds the same as on all rows, byte for byte, on the incident library's groups (each rule's
incident and the healthy groups beside them, through the product's pure parse and replay)."""

from __future__ import annotations

from typing import Any

import pytest

from rebalance_replay.transforms.audit import AuditSettings, evaluate
from rebalance_replay.transforms.audit.config import R12Settings
from rebalance_replay.transforms.audit.routine import compact, is_routine
from simulator.incidents import group_inputs_of, incident_coordinator, log_files


def _coverage(inputs: Any) -> int | None:
    return max((r.arrival_ms for r in inputs.requests), default=None)


@pytest.mark.parametrize(("seed", "inject"), [(7, True), (7, False), (11, True), (23, True)])
def test_the_rules_find_the_same_without_the_routine_rows(seed: int, inject: bool) -> None:
    settings = AuditSettings()
    floor = settings.rule("R12").min_silence_ms  # type: ignore[attr-defined]
    files, _ = log_files(seed, inject=inject)
    rows = kept = 0
    for group, inputs in sorted(group_inputs_of(files, incident_coordinator()).items()):
        small = compact(inputs, floor)
        rows, kept = rows + len(inputs.requests), kept + len(small.requests)
        assert set(small.requests) <= set(inputs.requests)
        full, part = evaluate(inputs, settings), evaluate(small, settings)
        assert [f.to_json() for f in part.findings] == [f.to_json() for f in full.findings], group
        assert part.unsupported == full.unsupported, group
        assert _coverage(small) == _coverage(inputs), group
    assert kept < rows / 4, (kept, rows)  # most rows are routine and left out


def test_routine_means_answered_none() -> None:
    from tests.helpers import audit_request

    assert is_routine(audit_request(1, error_name="NONE"))
    assert is_routine(audit_request(1, api_name="OFFSET_COMMIT", error_name="NONE"))
    assert not is_routine(audit_request(1, error_name=None))  # nothing logged: a rule may read it
    assert not is_routine(audit_request(1, error_name="REBALANCE_IN_PROGRESS"))
    assert not is_routine(audit_request(1, api_name="OFFSET_COMMIT", error_name="NONE", commit_errors=("X",)))
    assert not is_routine(audit_request(1, api_name="JOIN_GROUP", error_name="NONE"))
    assert R12Settings().min_silence_ms > 0


def test_a_member_seen_from_another_address_only_in_routine_rows_is_still_named_so() -> None:
    """A member's heartbeats came from a second address for a while (a NAT's new port, a proxy), far from
    any time a rule asks about: the finding on its expiry names both hosts, compacted or not."""
    from rebalance_replay.transforms.audit import GroupInputs
    from rebalance_replay.transforms.audit.model import Session
    from tests.helpers import audit_request

    def hb(t: int, address: str) -> Any:
        return audit_request(
            t, member_id="m1", client_id="c1", client_address=address, generation_id=1, error_name="NONE"
        )

    join = audit_request(
        0, api_name="JOIN_GROUP", member_id="m1", client_id="c1", client_address="10.0.0.1:5000"
    )._replace(error_name="NONE", response_member_id="m1", session_timeout_ms=10_000, generation_id=-1)
    rows = [join, *(hb(t, "10.0.0.1:5000") for t in range(3_000, 30_000, 3_000))]
    rows += [hb(t, "10.0.0.2:6000") for t in range(30_000, 60_000, 3_000)]
    rows += [hb(t, "10.0.0.1:5000") for t in range(60_000, 90_000, 3_000)]
    other = [
        audit_request(t, member_id="m2", client_id="c2", client_address="10.0.0.3:7000", error_name="NONE")
        for t in range(1_000, 120_000, 3_000)
    ]
    expiry = Session("m1", 1, 0, "session_expiry", client_id="c1", ended_ms=97_000, session_timeout_ms=10_000)
    inputs = GroupInputs.build("g", requests=[*rows, *other], sessions=[expiry])
    settings = AuditSettings()
    full = evaluate(inputs, settings, only=["R02"]).findings
    assert len(full) == 1 and full[0].client_hosts == ("10.0.0.1", "10.0.0.2")
    small = compact(inputs, 30_000)
    assert len(small.requests) < len(inputs.requests) / 2
    assert evaluate(small, settings, only=["R02"]).findings == full


def test_the_brokers_later_answer_to_an_expired_member_is_kept_past_three_commits() -> None:
    """The replay expired m1 at 40 s; after it, m1 committed three times without a generation (a commit any
    client may make: it says nothing of membership) and then heartbeated, answered NONE: the broker still
    had it, so R02 does not call it evicted. That heartbeat is the fourth row after the expiry."""
    from rebalance_replay.transforms.audit import GroupInputs
    from rebalance_replay.transforms.audit.model import Session
    from tests.helpers import audit_request

    def m1(t: int, api: str = "HEARTBEAT", generation: int = 1) -> Any:
        return audit_request(
            t, api_name=api, member_id="m1", client_id="c1", generation_id=generation, error_name="NONE"
        )

    rows = [m1(t) for t in range(3_000, 30_000, 3_000)]
    rows += [m1(t, "OFFSET_COMMIT", -1) for t in (41_000, 42_000, 43_000)] + [m1(44_000)]
    rows += [m1(t) for t in range(47_000, 90_000, 3_000)]
    other = [
        audit_request(t, member_id="m2", client_id="c2", error_name="NONE")
        for t in range(1_000, 95_000, 3_000)
    ]
    expiry = Session("m1", 1, 0, "session_expiry", client_id="c1", ended_ms=40_000, session_timeout_ms=10_000)
    inputs = GroupInputs.build("g", requests=[*rows, *other], sessions=[expiry])
    settings = AuditSettings()
    assert evaluate(inputs, settings, only=["R02"]).findings == ()  # the broker's answer wins
    assert evaluate(compact(inputs, 30_000), settings, only=["R02"]).findings == ()
