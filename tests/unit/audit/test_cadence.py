"""A member's heartbeat cadence (``transforms/audit/cadence.py``): which gaps count, and the summary of
two consecutive spans of the log equal to the summary of both (what lets the audit carry it from run to
run instead of walking 30 days of heartbeats again)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rebalance_replay.transforms.audit import GroupInputs
from rebalance_replay.transforms.audit.base import quantile
from rebalance_replay.transforms.audit.cadence import TOP, Cadence, cadences, member_cadences, then
from rebalance_replay.transforms.audit.model import Req
from tests.helpers import audit_request


def _req(t: int, member: str = "m1", api: str = "HEARTBEAT", **kw: object) -> Req:
    fields: dict[str, object] = {"client_id": "c1", "generation_id": 3, "error_name": "NONE", **kw}
    return audit_request(t, member_id=member, api_name=api, **fields)


def test_only_one_members_heartbeats_of_one_generation_and_coordinator_make_gaps() -> None:
    """A member's cadence is its heartbeat.interval.ms: the gaps between its successful heartbeats only.
    Its JoinGroup, SyncGroup and commits come on the poll thread, not the heartbeat thread, and say
    nothing of the interval; a heartbeat of another generation (a rebalance) or another broker (the
    coordinator moved) restarts the count; a failed heartbeat ends no gap (and starts the next one)."""
    rows = [
        _req(0, api="JOIN_GROUP"),  # the JoinGroup before the first heartbeat
        _req(100, member=""),  # a heartbeat without a member id (a log that lost it): nobody's
        _req(1_000),
        _req(1_500, member="m2"),
        _req(2_000, api="OFFSET_COMMIT"),
        _req(4_000),
        _req(4_500, member="m2"),
        _req(7_000, error_name="REBALANCE_IN_PROGRESS"),  # answered with an error: no gap ends here
        _req(8_000, generation_id=None, error_name=None),  # no error logged: a gap would end, not this one
        _req(10_000, generation_id=4),  # the next generation: no gap across the rebalance
        _req(13_000, generation_id=4),
        _req(16_000, generation_id=4, broker_id="broker-2"),  # the coordinator moved
        _req(19_000, generation_id=4, broker_id="broker-2", error_name=None),
        _req(60_000, generation_id=4, broker_id="broker-2"),  # 41 s of silence
    ]
    inputs = GroupInputs.build("g", requests=rows)
    got = member_cadences(inputs, 30_000)
    assert set(got) == {"m1", "m2"}
    m1 = got["m1"]
    assert (m1.n, m1.counts) == (4, {3_000: 3, 41_000: 1})
    assert [(g, a.arrival_ms, b.arrival_ms) for g, a, b in m1.top] == [
        (41_000, 19_000, 60_000),
        (3_000, 1_000, 4_000),
        (3_000, 10_000, 13_000),
    ]
    assert m1.first is not None and (m1.first[1].arrival_ms, m1.first[2].arrival_ms) == (1_000, 4_000)
    assert m1.last is not None and m1.last[2].arrival_ms == 60_000
    assert [(g, a.arrival_ms) for g, a, _ in m1.long] == [(41_000, 19_000)]
    assert (m1.quantile(0.5), m1.quantile(0.99)) == (3_000.0, 41_000.0)
    assert (got["m2"].n, got["m2"].counts) == (1, {3_000: 1})
    assert member_cadences(inputs, 30_000) is got  # derived once per group: R06 and R12 both ask
    assert member_cadences(inputs) is got  # any floor will do
    lower = member_cadences(inputs, 2_000)  # a lower floor than kept: derived again
    assert lower is not got and len(lower["m1"].long) == 4


_heartbeat = st.tuples(
    st.integers(0, 3_000),  # ms after the previous request
    st.sampled_from(["m1", "m2", "", "HEARTBEAT"]),  # member ("HEARTBEAT": m1's commit, not a heartbeat)
    st.integers(1, 2),  # generation
    st.sampled_from(["broker-1", "broker-2"]),
    st.sampled_from(["NONE", None, "REBALANCE_IN_PROGRESS"]),
)


def _rows(spec: list[tuple[int, str, int, str, str | None]]) -> list[Req]:
    out, t = [], 0
    for i, (dt, member, generation, broker, error) in enumerate(spec):
        t += dt
        api = "OFFSET_COMMIT" if member == "HEARTBEAT" else "HEARTBEAT"
        out.append(
            _req(t, "m1" if member == "HEARTBEAT" else member, api)._replace(
                line_no=i, generation_id=generation, broker_id=broker, error_name=error
            )
        )
    return out


def _reference(rows: list[Req]) -> dict[str, list[tuple[int, Req, Req]]]:
    """Every gap, member by member: the definition, spelled out."""
    last: dict[str, Req] = {}
    out: dict[str, list[tuple[int, Req, Req]]] = {}
    for r in rows:
        if r.api_name != "HEARTBEAT" or not r.member_id:
            continue
        prev = last.get(r.member_id)
        same = prev is not None and (prev.generation_id, prev.broker_id) == (r.generation_id, r.broker_id)
        if prev is not None and same and r.error_name in (None, "NONE"):
            out.setdefault(r.member_id, []).append((r.arrival_ms - prev.arrival_ms, prev, r))
        last[r.member_id] = r
    return out


@given(st.lists(_heartbeat, max_size=60), st.integers(0, 60), st.integers(0, 3_000))
def test_a_cadence_is_every_gap_summed_and_two_spans_add_up(
    spec: list[tuple[int, str, int, str, str | None]], cut: int, floor: int
) -> None:
    rows = _rows(spec)
    whole = cadences(rows, floor)
    for member, gaps in _reference(rows).items():
        c = whole[member]
        values = [g for g, _, _ in gaps]
        assert c.n == len(gaps) and sum(c.counts.values()) == c.n
        assert (c.first, c.last) == (gaps[0], gaps[-1])
        assert c.top == sorted(gaps, key=lambda g: -g[0])[:TOP]
        assert c.long == [g for g in gaps if g[0] >= floor]
        for q in (0.0, 0.5, 0.99, 1.0):
            assert c.quantile(q) == quantile(values, q)
    assert all(c.n == 0 for m, c in whole.items() if m not in _reference(rows))
    assert then(cadences(rows[:cut], floor), cadences(rows[cut:], floor)) == whole


def test_cadences_of_different_floors_do_not_add() -> None:
    a, b = Cadence(_req(0), _req(0), 1_000), Cadence(_req(5), _req(5), 2_000)
    with pytest.raises(ValueError, match="different floors"):
        a.then(b)
