"""The replay order inside one instant (rebalance_replay.transforms.ordering): constraints first, then
observations,
then the stable key — a pure function, deterministic whatever order the lines came in."""

from __future__ import annotations

import itertools
import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from rebalance_replay.transforms.kafka_protocol import ApiKey
from rebalance_replay.transforms.ordering import (
    constrained_order,
    linear_extensions,
    predecessors,
    search_order,
    sort_key,
)

JOIN, SYNC, HB = int(ApiKey.JOIN_GROUP), int(ApiKey.SYNC_GROUP), int(ApiKey.HEARTBEAT)


def _row(api: int, conn: str, corr: int, **kw: Any) -> dict[str, Any]:
    return {
        "arrival_ms": 1000,
        "api_key": api,
        "broker_id": "b1",
        "connection": conn,
        "correlation_id": corr,
        "source_file": "f",
        "line_no": corr * 100 + int(conn[-1]),
        **kw,
    }


def _burst(members: int) -> list[dict[str, Any]]:
    """A rebalance inside one instant: every member heartbeats (told to rejoin), rejoins (the last
    JoinGroup completes the join phase, all answered generation 2) and syncs with generation 2."""
    rows = []
    for m in range(members):
        conn = f"c{m}"
        mid = f"m{m}"
        rows += [
            _row(HB, conn, 1, member_id=mid, generation_id=1, error_name="REBALANCE_IN_PROGRESS"),
            _row(JOIN, conn, 2, member_id=mid, error_name="NONE", response_generation_id=2),
            _row(SYNC, conn, 3, member_id=mid, generation_id=2, error_name="NONE"),
        ]
    return rows


def _valid(tie: list[dict[str, Any]], order: list[int]) -> bool:
    pos = {i: k for k, i in enumerate(order)}
    return all(pos[j] < pos[i] for i, before in enumerate(predecessors(tie)) for j in before)


def test_connection_order_and_generation_causality() -> None:
    tie = sorted(_burst(4), key=sort_key)
    order = constrained_order(predecessors(tie))
    replayed = [tie[i] for i in order]
    assert sorted(order) == list(range(len(tie)))
    # every SyncGroup of generation 2 comes after every JoinGroup answered with generation 2
    last_join = max(k for k, r in enumerate(replayed) if r["api_key"] == JOIN)
    first_sync = min(k for k, r in enumerate(replayed) if r["api_key"] == SYNC)
    assert last_join < first_sync
    # one connection's requests in correlation order
    for conn in {r["connection"] for r in tie}:
        corr = [r["correlation_id"] for r in replayed if r["connection"] == conn]
        assert corr == sorted(corr)


def test_member_id_handed_out_comes_first() -> None:
    tie = sorted(
        [
            _row(JOIN, "c1", 7, member_id="new-1", error_name="NONE", response_generation_id=3),
            _row(JOIN, "c2", 1, member_id="", error_name="MEMBER_ID_REQUIRED", response_member_id="new-1"),
        ],
        key=sort_key,
    )
    order = constrained_order(predecessors(tie))
    assert [tie[i]["correlation_id"] for i in order] == [1, 7]


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=1, max_value=5), st.randoms(use_true_random=False))
def test_order_does_not_depend_on_the_order_of_the_lines(members: int, rnd: random.Random) -> None:
    rows = _burst(members)
    shuffled = list(rows)
    rnd.shuffle(shuffled)
    a = sorted(rows, key=sort_key)
    b = sorted(shuffled, key=sort_key)
    oa = [a[i] for i in constrained_order(predecessors(a))]
    ob = [b[i] for i in constrained_order(predecessors(b))]
    assert oa == ob
    assert _valid(a, constrained_order(predecessors(a)))


def test_a_cycle_is_broken_by_the_stable_key() -> None:
    # 0 and 1 each claim to come after the other: the free request first, then the smallest index
    assert constrained_order([{1}, {0}, set()]) == [2, 0, 1]
    assert constrained_order([{1}, {0}]) == [0, 1]


def test_linear_extensions_are_exactly_the_valid_orders() -> None:
    before = [set(), {0}, set(), {2}]
    got = list(linear_extensions(before))
    want = [
        list(p)
        for p in itertools.permutations(range(4))
        if p.index(0) < p.index(1) and p.index(2) < p.index(3)
    ]
    assert sorted(got) == sorted(want)
    assert got[0] == constrained_order(before)


def _random_constraints(n: int, rnd: random.Random) -> list[set[int]]:
    before: list[set[int]] = [set() for _ in range(n)]
    for i in range(1, n):
        if rnd.random() < 0.3:
            before[i].add(rnd.randrange(i))
    return before


def _respects(order: list[int], before: list[set[int]]) -> bool:
    return all(order.index(j) < order.index(i) for i in range(len(before)) for j in before[i])


@settings(max_examples=80, deadline=None)
@given(st.integers(min_value=2, max_value=5), st.randoms(use_true_random=False))
def test_exhaustive_search_finds_the_order_the_observations_need(n: int, rnd: random.Random) -> None:
    """Small tie sets: whatever single valid order the observations single out (any scorer), found."""
    before = _random_constraints(n, rnd)
    target = rnd.choice(list(linear_extensions(before)))

    def score(order: list[int]) -> int:  # disagreements: requests whose place differs from the truth
        return sum(1 for a, b in zip(order, target, strict=True) if a != b)

    got = search_order(before, score, exhaustive_max=5, search_max=64)
    assert _respects(got, before)
    assert got == target


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=6, max_value=12), st.randoms(use_true_random=False))
def test_greedy_search_finds_the_order_when_wrong_choices_cost_what_follows(
    n: int, rnd: random.Random
) -> None:
    """Larger tie sets: the greedy search with look-ahead finds the order when a wrong choice makes the
    answers from there on disagree (how a coordinator's answers behave: a wrong order changes the state)."""
    before = _random_constraints(n, rnd)
    target = rnd.choice(list(itertools.islice(linear_extensions(before), 200)))

    def score(order: list[int]) -> int:
        agree = next((k for k, (a, b) in enumerate(zip(order, target, strict=True)) if a != b), n)
        return n - agree

    got = search_order(before, score, exhaustive_max=5, search_max=64)
    assert _respects(got, before)
    assert got == target


def test_search_keeps_the_constrained_order_when_it_already_agrees() -> None:
    calls: list[list[int]] = []

    def score(order: list[int]) -> int:
        calls.append(list(order))
        return 0

    before = [set(), set(), set()]
    assert search_order(before, score, exhaustive_max=5, search_max=64) == [0, 1, 2]
    assert calls == [[0, 1, 2]]


def test_search_gives_up_above_its_bound() -> None:
    before: list[set[int]] = [set() for _ in range(10)]
    assert search_order(before, lambda order: 1, exhaustive_max=3, search_max=5) == list(range(10))
