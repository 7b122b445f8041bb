"""The audit on a group's inputs without most of their routine rows (``transforms/audit/routine.py``):
every rule finds the same as on all rows, byte for byte, on the incident library's groups (each rule's
incident and the healthy groups beside them, through the product's pure parse and replay)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rebalance_replay.transforms.audit import AuditSettings, evaluate
from rebalance_replay.transforms.audit.config import R12Settings
from rebalance_replay.transforms.audit.model import request_order
from rebalance_replay.transforms.audit.routine import (
    compact,
    is_routine,
    kept_disputes,
    kept_from_json,
    kept_to_json,
)
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


#: how long before a run's newest request its routine rows stay whole (the replay's late-arrival horizon: a
#: session row naming an earlier time may still come)
GUARD_MS = 120_000


def _kept(state: Any) -> Any:
    """``state`` as the next run reads it back (:func:`kept_to_json`), when it was compacted."""
    import dataclasses

    if state.routine is None:
        return state
    text = kept_to_json(state)
    assert json.loads(text)["group"] == state.group_id  # the state file names its group for a reader
    rows, summary = kept_from_json(text)
    assert rows == state.requests and summary == state.routine
    assert kept_disputes(json.loads(text)) == state.disputes
    return dataclasses.replace(state, requests=rows, routine=summary)


def _known(inputs: Any, cut: int) -> Any:
    """``inputs`` as an hourly run at ``cut`` knows them: the requests that arrived before, the sessions
    and rebalances over by then."""
    from rebalance_replay.transforms.audit import GroupInputs

    return GroupInputs.build(
        inputs.group_id,
        requests=[r for r in inputs.requests if r.arrival_ms < cut],
        rebalances=[rb for rb in inputs.rebalances if (rb.ended_ms or rb.started_ms) < cut],
        sessions=[s for s in inputs.sessions if s.ended_ms is not None and s.ended_ms < cut],
        transitions=[t for t in inputs.transitions if t.time_ms < cut],
        broker=inputs.broker,
        disputes=inputs.disputes,
    )


@pytest.mark.parametrize("seed", [7, 23])
def test_carried_run_after_run_the_rules_find_what_they_find_on_every_row(seed: int) -> None:
    """Scheduled runs: each compacts what the last one kept plus the rows that came since (the routine
    rows of the last :data:`GUARD_MS` kept whole); at every run the rules find exactly what they find on
    every row known then."""
    import dataclasses

    settings = AuditSettings()
    floor = settings.rule("R12").min_silence_ms  # type: ignore[attr-defined]
    files, _ = log_files(seed, inject=True)
    groups = group_inputs_of(files, incident_coordinator())
    rows = kept = 0
    for group, inputs in sorted(groups.items()):
        times = [r.arrival_ms for r in inputs.requests]
        cuts = [times[0] + k * (times[-1] - times[0]) // 12 for k in range(1, 13)] + [times[-1] + 1]
        state: Any = None
        seen = 0
        for cut in cuts:
            now = _known(inputs, cut)
            new = [r for r in now.requests if r.arrival_ms >= seen]
            carried = (
                now
                if state is None
                else dataclasses.replace(
                    now,
                    requests=tuple(sorted([*state.requests, *new], key=request_order)),
                    routine=state.routine,
                )
            )
            # the routine rows since a rebalance still going on stay whole too: its row comes at its end
            going_on = [
                rb.started_ms for rb in inputs.rebalances if rb.started_ms < cut <= (rb.ended_ms or cut)
            ]
            before = 0 if state is None or state.routine is None else state.routine.until
            state = _kept(compact(carried, floor, until=max(before, min([cut - GUARD_MS, *going_on]))))
            seen = cut
            full, part = evaluate(now, settings), evaluate(state, settings)
            assert [f.to_json() for f in part.findings] == [f.to_json() for f in full.findings], (group, cut)
            assert part.unsupported == full.unsupported, (group, cut)
        rows, kept = rows + len(inputs.requests), kept + len(state.requests)
    # the groups of the library last minutes: the last two minutes of each stay whole
    assert kept < rows * 0.7, (kept, rows)


def _carry(inputs: Any, runs: list[tuple[int, int, Any]]) -> Any:
    """``inputs`` compacted run after run: each (cut, until, what the run knows of the tables)."""
    import dataclasses

    state: Any = None
    seen = 0
    for cut, until, known in runs:
        new = [r for r in inputs.requests if seen <= r.arrival_ms < cut]
        seen = cut
        now = dataclasses.replace(known, requests=tuple(r for r in inputs.requests if r.arrival_ms < cut))
        carried = (
            now
            if state is None
            else dataclasses.replace(
                now, requests=tuple(sorted([*state.requests, *new], key=request_order)), routine=state.routine
            )
        )
        state = _kept(compact(carried, 30_000, until=until))
    return state


def test_a_storm_compacted_over_two_runs_counts_every_heartbeat_of_its_window() -> None:
    """Twelve rebalances in a minute (a storm, R01), heartbeats every 3 s around them; the first run
    leaves out the heartbeats before 280 s, the second those up to 780 s: the storm's finding counts the
    heartbeats of its window as it does on every row."""
    from rebalance_replay.transforms.audit import GroupInputs
    from rebalance_replay.transforms.audit.model import Rebalance
    from tests.helpers import audit_request

    beats = [
        audit_request(t, member_id="m1", client_id="c1", generation_id=1, error_name="NONE")
        for t in range(1_000, 900_000, 3_000)
    ]
    storm = [
        Rebalance(
            rebalance_seq=k,
            generation_from=k,
            generation_to=k + 1,
            started_ms=200_000 + 5_000 * k,
            ended_ms=201_000 + 5_000 * k,
            total_duration_ms=1_000,
            outcome="stable",
            trigger="member_left",
            trigger_member_id="m1",
        )
        for k in range(12)
    ]
    inputs = GroupInputs.build("g", requests=beats, rebalances=storm)
    first = GroupInputs.build("g", rebalances=storm)
    state = _carry(inputs, [(400_000, 280_000, first), (900_000, 780_000, inputs)])
    assert len(state.requests) < len(inputs.requests) / 4
    full = evaluate(inputs, AuditSettings(), only=["R01"]).findings
    assert len(full) == 1 and full[0].metric("heartbeats") == 19.0  # 202 ... 256 s
    assert evaluate(state, AuditSettings(), only=["R01"]).findings == full


def test_a_member_whose_expiry_the_next_run_learns_keeps_its_last_heartbeat() -> None:
    """m1 heartbeated until 249 s; its expiry (259 s) reaches the audit only with the next run (a replay
    running late): the first run left out m1's heartbeats before 280 s but its last one, which R02 shows."""
    from rebalance_replay.transforms.audit import GroupInputs
    from rebalance_replay.transforms.audit.model import Session
    from tests.helpers import audit_request

    def hb(t: int, member: str) -> Any:
        return audit_request(t, member_id=member, client_id=f"c-{member}", generation_id=1, error_name="NONE")

    rows = [hb(t, "m1") for t in range(0, 250_000, 3_000)] + [
        hb(t, "m2") for t in range(1_000, 600_000, 3_000)
    ]
    expiry = Session(
        "m1", 1, 0, "session_expiry", client_id="c-m1", ended_ms=259_000, session_timeout_ms=10_000
    )
    inputs = GroupInputs.build("g", requests=rows, sessions=[expiry])
    state = _carry(inputs, [(400_000, 280_000, GroupInputs.build("g")), (600_000, 480_000, inputs)])
    full = evaluate(inputs, AuditSettings(), only=["R02"]).findings
    assert len(full) == 1 and [e.arrival_ms for e in full[0].evidence][:1] == [249_000]
    assert evaluate(state, AuditSettings(), only=["R02"]).findings == full


def test_the_routine_rows_kept_are_the_anchors_and_no_more() -> None:
    """Each anchor of the module docstring, on a group made by hand: m1 joins at 0 and heartbeats every
    second (its coordinator moves to broker-2 at 21 s; it commits once at 5.5 s; the replay expires it at
    30 s); m2 heartbeats every second from 0.5 s and a LeaveGroup names it at 10.5 s."""
    from rebalance_replay.transforms.audit import GroupInputs
    from rebalance_replay.transforms.audit.model import Session
    from tests.helpers import audit_request

    def m1(t: int, api: str = "HEARTBEAT", broker: str = "broker-1") -> Any:
        return audit_request(
            t, api_name=api, member_id="m1", client_id="c1", client_address="10.0.0.1:5000", broker_id=broker
        )._replace(generation_id=1, error_name="NONE")

    def m2(t: int, api: str = "HEARTBEAT") -> Any:
        return audit_request(
            t, api_name=api, member_id="m2", client_id="c2", client_address="10.0.0.2:5000"
        )._replace(generation_id=1, error_name="NONE")

    rows = [m1(0, "JOIN_GROUP"), m1(5_500, "OFFSET_COMMIT")]
    rows += [m1(t) for t in range(1_000, 21_000, 1_000)] + [
        m1(t, broker="broker-2") for t in (21_000, 22_000, 23_000)
    ]
    rows += [m2(t) for t in range(500, 16_000, 1_000)]
    rows.append(m2(10_500, "LEAVE_GROUP")._replace(leave_members=(("m2", None, None),)))
    expiry = Session("m1", 1, 0, "session_expiry", client_id="c1", ended_ms=30_000, session_timeout_ms=10_000)
    inputs = GroupInputs.build("g", requests=rows, sessions=[expiry])
    kept = compact(inputs, 30_000).requests
    assert [(r.member_id, r.api_name[0], r.arrival_ms) for r in kept] == [
        ("m1", "J", 0),  # not routine; the first of broker-1's run
        ("m2", "H", 500),  # m2's first heartbeat (its identity's first row)
        ("m1", "H", 1_000),  # m1's first heartbeat
        ("m1", "O", 5_500),  # m1's first commit
        ("m2", "H", 10_500),  # m2's last routine row at or before the LeaveGroup naming it
        ("m2", "L", 10_500),  # not routine
        ("m2", "H", 11_500),  # m2's first three after it (the first answered as a member among them)
        ("m2", "H", 12_500),
        ("m2", "H", 13_500),
        ("m2", "H", 15_500),  # m2's last
        ("m1", "H", 20_000),  # the last of broker-1's run
        ("m1", "H", 21_000),  # the first of broker-2's
        ("m1", "H", 23_000),  # the last of broker-2's, m1's last (and before its expiry), the group's last
    ]
    # from ``until`` on, every row stays (a later run leaves them out once it knows what may ask)
    later = compact(inputs, 30_000, until=14_500).requests
    assert {r for r in rows if r.arrival_ms >= 14_500} <= set(later)
    assert m1(13_000) not in later and m1(14_000) in later  # m1's last before it: its last to leave out


def test_a_compacted_group_that_moves_to_kip_848_keeps_its_summary_up_to_date() -> None:
    """A classic group compacted by an earlier run, then upgraded online to the consumer protocol
    (KIP-848): the new rows are kept whole from then on, and the heartbeats that came between the runs
    still count in each member's cadence and the rules' findings, as on all rows."""
    import dataclasses

    from rebalance_replay.transforms.audit import GroupInputs
    from rebalance_replay.transforms.audit.cadence import member_cadences
    from tests.helpers import audit_request

    def beat(t: int) -> Any:
        return audit_request(t, member_id="m1", client_id="c1", error_name="NONE")

    before = [beat(t) for t in range(3_000, 60_000, 3_000)]
    # the member goes quiet 40 s, heartbeats again, then the group moves to the consumer protocol
    after = [beat(t) for t in (100_000, 103_000, 106_000)]
    after.append(
        audit_request(
            107_000, api_name="CONSUMER_GROUP_HEARTBEAT", api_version=0, member_id="m2", error_name="NONE"
        )
    )
    settings = AuditSettings()
    floor = settings.rule("R12").min_silence_ms  # type: ignore[attr-defined]
    first = compact(GroupInputs.build("g", requests=before), floor)
    assert first.routine is not None and len(first.requests) < len(before)
    everything = GroupInputs.build("g", requests=[*before, *after])
    resumed = dataclasses.replace(
        everything,
        requests=tuple(sorted([*first.requests, *after], key=request_order)),
        routine=first.routine,
    )
    again = compact(resumed, floor)
    assert again.routine is not None and set(after) <= set(again.requests)
    assert again.routine.through == request_order(after[-1])
    assert member_cadences(again) == member_cadences(everything)
    full, part = evaluate(everything, settings), evaluate(again, settings)
    assert [f.to_json() for f in part.findings] == [f.to_json() for f in full.findings]
    # R23 counts every classic request of the group, those the compaction left out too
    (r23,) = [f for f in part.findings if f.rule_id == "R23"]
    assert dict(r23.metrics)["classic_requests"] == len(before) + 3
    assert dict(r23.metrics)["consumer_group_heartbeats"] == 1
    # read back by the next run, the same
    rows, summary = kept_from_json(kept_to_json(again))
    assert rows == again.requests and summary == again.routine


def test_the_kept_state_holds_the_groups_disputes() -> None:
    """The next run reads only the predictions appended since: the kept state holds the group's disputes
    (the predictions the broker contradicted), each field as it was."""
    from rebalance_replay.transforms.audit import GroupInputs
    from rebalance_replay.transforms.audit.model import Dispute
    from tests.helpers import audit_request

    disputes = [
        Dispute("b1/kafka-request.log", 9_000, "HEARTBEAT", (), "REBALANCE_IN_PROGRESS", "NONE"),
        Dispute("b1/kafka-request.log", 3_000, "SYNC_GROUP", ("assignment",), "NONE", "NONE"),
    ]
    rows = [
        audit_request(t, member_id="m1", client_id="c1", error_name="NONE") for t in range(0, 60_000, 3_000)
    ]
    inputs = compact(GroupInputs.build("g", requests=rows, disputes=disputes), 30_000)
    assert inputs.routine is not None
    kept = kept_disputes(json.loads(kept_to_json(inputs)))
    assert kept == inputs.disputes and len(kept) == 2
    assert kept[0].mismatch_kinds == ("assignment",) and kept[1].observed_error == "REBALANCE_IN_PROGRESS"


def test_a_kept_dispute_missing_a_field_is_refused() -> None:
    """A kept state whose dispute lost a field (a damaged state file) is refused, never read with the
    fields shifted: the audit then evaluates the group from all its rows (``jobs.audit._resumable``)."""
    from rebalance_replay.transforms.audit.model import DISPUTE_COLUMNS

    whole = ["b1/kafka-request.log", 9_000, "HEARTBEAT", [], "REBALANCE_IN_PROGRESS", "NONE"]
    assert len(whole) == len(DISPUTE_COLUMNS)
    assert kept_disputes({"disputes": [whole]})[0].observed_error == "REBALANCE_IN_PROGRESS"
    with pytest.raises(ValueError):
        kept_disputes({"disputes": [whole[:-1]]})


def test_compacting_again_from_another_floor_is_refused() -> None:
    """Cadences kept from one R12 floor cannot be resumed with a lower one (the gaps between would be
    lost): refused, naming both."""
    import dataclasses

    from rebalance_replay.transforms.audit import GroupInputs
    from tests.helpers import audit_request

    rows = [
        audit_request(t, member_id="m1", client_id="c1", error_name="NONE") for t in range(0, 60_000, 3_000)
    ]
    first = compact(GroupInputs.build("g", requests=rows), 30_000)
    with pytest.raises(ValueError, match="cadences were kept from 30000 ms, not 20000 ms"):
        compact(dataclasses.replace(first, routine=first.routine), 20_000)
