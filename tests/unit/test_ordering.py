"""The replay order inside one instant (rebalance_replay.transforms.ordering): constraints first, then
observations,
then the stable key — a pure function, deterministic whatever order the lines came in."""

from __future__ import annotations

import itertools
import random
from collections.abc import Hashable, Sequence
from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from rebalance_replay.transforms.coordinator.config import CoordinatorConfig
from rebalance_replay.transforms.coordinator.model import GroupCoordinatorModel
from rebalance_replay.transforms.coordinator.types import ObservedResponse
from rebalance_replay.transforms.kafka_protocol import ApiKey
from rebalance_replay.transforms.ordering import (
    constrained_order,
    few_orders,
    linear_extensions,
    predecessors,
    search_budget,
    search_order,
    sort_key,
)
from rebalance_replay.transforms.replay import _TieTrial, lookahead_rows
from tests.unit.coordinator.scenario import H, J, S
from tests.unit.coordinator.test_fork import in_the_initial_delay
from tests.unit.coordinator.test_held_timers import joined

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


class _Target:
    """A :class:`~rebalance_replay.transforms.ordering.Trial` whose observations single out ``target``:
    placing a request where the target has another costs one lasting disagreement; the end state is the
    order itself unless ``ends`` names it (orders with the same end are the same for what follows)."""

    def __init__(self, target: list[int], ends: dict[tuple[int, ...], str] | None = None) -> None:
        self.target = target
        self.ends = ends
        self.runs: list[list[int]] = []
        self.tries = 0
        self.outcomes = 0

    def root(self) -> tuple[int, ...]:
        return ()

    def place(self, node: tuple[int, ...], i: int) -> tuple[tuple[int, ...], int, int]:
        self.tries += 1
        return (*node, i), int(self.target[len(node)] != i), 0

    def _end(self, order: tuple[int, ...]) -> Hashable:
        return order if self.ends is None else self.ends.get(order, "elsewhere")

    def close(self, node: tuple[int, ...]) -> tuple[int, Hashable]:
        return 0, self._end(node)

    def key(self, node: tuple[int, ...]) -> Hashable:
        return node

    def run(self, order: Sequence[int]) -> tuple[int, Hashable]:
        self.runs.append(list(order))
        return sum(a != b for a, b in zip(order, self.target, strict=True)), self._end(tuple(order))

    def run_unless(self, order: Sequence[int], end: Hashable) -> tuple[int, Hashable] | None:
        score, own_end = self.run(order)
        return None if own_end == end else (score, own_end)

    def outcome(self, order: Sequence[int]) -> object:
        self.outcomes += 1
        return [int(a != b) for a, b in zip(order, self.target, strict=True)], self._end(tuple(order))


@settings(max_examples=80, deadline=None)
@given(st.integers(min_value=2, max_value=12), st.randoms(use_true_random=False))
def test_search_finds_the_order_the_observations_need(n: int, rnd: random.Random) -> None:
    """Whatever single valid order the observations single out, found (a wrong choice is a disagreement
    that stays, as a coordinator's answer does), and not ambiguous."""
    before = _random_constraints(n, rnd)
    target = rnd.choice(list(itertools.islice(linear_extensions(before), 200)))
    trial = _Target(target)
    got = search_order(before, trial, exhaustive_max=5, search_max=64)
    assert _respects(got.order, before)
    assert got.order == target and not got.ambiguous
    assert got.score == (None if len(few_orders(before, 1) or ()) == 1 else 0)  # None: the only order


def test_search_is_pruned_by_the_answers_not_brute_force() -> None:
    """Fifty unconstrained requests: the order is found trying about n²/2 placements, not n!."""
    rnd = random.Random(3)
    target = list(range(50))
    rnd.shuffle(target)
    trial = _Target(target)
    got = search_order([set() for _ in range(50)], trial, exhaustive_max=6, search_max=64)
    assert got.order == target
    assert trial.tries <= 50 * 51 // 2 + 50


def test_two_orders_that_explain_the_log_and_end_apart_are_ambiguous() -> None:
    # requests 0 and 1 may come in either order (both agree with every answer) but end in other states
    trial = _Target([0, 1, 2])
    trial.place = lambda node, i: ((*node, i), 0, 0)  # type: ignore[method-assign]
    trial.run = lambda order: (0, tuple(order))  # type: ignore[method-assign]
    got = search_order([set(), set(), {0, 1}], trial, exhaustive_max=5, search_max=64)
    assert got.order == [0, 1, 2] and got.ambiguous and got.alternative == [1, 0, 2]


def test_orders_that_end_in_the_same_state_are_not_ambiguous() -> None:
    trial = _Target([0, 1, 2], ends={})
    trial.run = lambda order: (0, "same")  # type: ignore[method-assign]
    got = search_order([set(), set(), set()], trial, exhaustive_max=5, search_max=64)
    assert got.order == [0, 1, 2] and not got.ambiguous


def test_search_keeps_the_constrained_order_when_it_already_agrees() -> None:
    trial = _Target([0, 1, 2], ends={})
    got = search_order([set(), set(), set()], trial, exhaustive_max=5, search_max=64)
    assert got.order == [0, 1, 2] and not got.ambiguous
    assert trial.runs[:2] == [[0, 1, 2], [2, 1, 0]]  # the constrained order, then the reversed one


def test_search_gives_up_above_its_bound() -> None:
    trial = _Target(list(range(9, -1, -1)))
    got = search_order([set() for _ in range(10)], trial, exhaustive_max=3, search_max=5)
    assert got.order == list(range(10)) and trial.tries == 0


def test_constrained_order_reversed_prefers_the_largest_index() -> None:
    assert constrained_order([set(), set(), {0}], reverse=True) == [1, 0, 2]
    assert search_budget(10, 3) == 3 + 6 + 6 + 100


class _Costs(_Target):
    """A trial whose state is the set of requests placed (orders of the same requests end alike), with
    costs given per placement (``place``: (prefix, request) → lasting disagreements) and per whole order
    beyond its own answers (``after``: order → the following requests' disagreements, the lookahead)."""

    def __init__(
        self, place: dict[tuple[tuple[int, ...], int], int], after: dict[tuple[int, ...], int]
    ) -> None:
        super().__init__([])
        self.costs = place
        self.after = after

    def place(self, node: tuple[int, ...], i: int) -> tuple[tuple[int, ...], int, int]:
        self.tries += 1
        return (*node, i), self.costs.get((node, i), 0), 0

    def close(self, node: tuple[int, ...]) -> tuple[int, Hashable]:
        return self.after.get(node, 0), frozenset(node)

    def key(self, node: tuple[int, ...]) -> Hashable:
        return frozenset(node)

    def run(self, order: Sequence[int]) -> tuple[int, Hashable]:
        self.runs.append(list(order))
        own = sum(self.costs.get((tuple(order[:k]), i), 0) for k, i in enumerate(order))
        return own + self.after.get(tuple(order), 0), frozenset(order)

    def outcome(self, order: Sequence[int]) -> object:
        # the lookahead's cost is what the end state leads to: part of the state, exactly
        own = [self.costs.get((tuple(order[:k]), i), 0) for k, i in enumerate(order)]
        return own, frozenset(order), self.after.get(tuple(order), 0)


def test_a_state_reached_again_with_fewer_disagreements_is_searched_on() -> None:
    """[0, 1, 2] and [0, 2, 1] end in the same state, but request 2 after 1 contradicts its answer (a
    heartbeat answered NONE after the LeaveGroup that removed its member): the search, which reaches the
    end state first through the disagreeing order, still finds the one that explains the log."""
    trial = _Costs({((0, 1), 2): 2}, {})
    got = search_order([set(), set(), set()], trial, exhaustive_max=5, search_max=64)
    assert got.order == [0, 2, 1] and got.score == 0


def test_an_order_contradicted_by_the_requests_that_follow_loses_to_the_stable_order() -> None:
    """Request 0 first disagrees with one answer of the tie (score 2); request 1 first explains the tie
    but the requests after it disagree three times (the lookahead, in ``close``/``run``): the stable
    order is kept."""
    trial = _Costs({((), 0): 2}, {(1, 0): 6})
    got = search_order([set(), set()], trial, exhaustive_max=5, search_max=64)
    assert got.order == [0, 1] and got.score == 2 and not got.ambiguous


def _timed(api: ApiKey, arrival: int, done: int | None) -> dict[str, Any]:
    return {"api_key": int(api), "arrival_ms": arrival, "completion_ms": done}


def test_lookahead_rows_reach_the_last_answer_of_the_tie_and_of_the_next_join() -> None:
    tie = [_timed(ApiKey.HEARTBEAT, 100, 100), _timed(ApiKey.LEAVE_GROUP, 100, 100)]
    following = [
        _timed(ApiKey.HEARTBEAT, 101, 101),  # before the next membership request: taken
        _timed(ApiKey.JOIN_GROUP, 102, 200),  # the next one: its answer at 200 extends the horizon
        _timed(ApiKey.HEARTBEAT, 150, 150),
        _timed(ApiKey.SYNC_GROUP, 201, 201),  # after every answer: shows nothing was left out
        _timed(ApiKey.HEARTBEAT, 300, 300),
    ]
    taken, until = lookahead_rows(tie, following)
    assert taken == following[:3] and until == 201
    # the rows ready end before the horizon: the timers run no further than the last row taken
    taken, until = lookahead_rows(tie, following[:3])
    assert taken == following[:3] and until == 150
    assert lookahead_rows(tie, []) == ([], None)


def test_few_orders_lists_the_orders_only_when_there_are_few() -> None:
    assert few_orders([set(), {0}, {1}], 2) == [[0, 1, 2]]
    assert few_orders([set(), set()], 2) == [[0, 1], [1, 0]]
    assert few_orders([set(), set(), {0, 1}], 2) == [[0, 1, 2], [1, 0, 2]]
    assert few_orders([set(), set(), set()], 2) is None  # six
    assert few_orders([{1}, {0}], 2) is None  # a cycle: no order respects it
    assert few_orders([set() for _ in range(60)], 2) is None  # and at once


def test_the_only_order_the_log_allows_is_not_scored() -> None:
    """One connection's two requests: nothing to choose, so neither the order nor what follows it is run
    (the lookahead would only score the order the search must keep)."""
    trial = _Target([1, 0])
    got = search_order([set(), {0}], trial, exhaustive_max=5, search_max=64)
    assert got.order == [0, 1] and got.score is None and not got.ambiguous
    assert trial.runs == [] and trial.tries == 0 and trial.outcomes == 0


def test_two_orders_with_one_outcome_are_not_scored_further() -> None:
    """Two orders that give the same answers and leave the same state (two followers' SyncGroups): the
    constrained order, not ambiguous, and no lookahead run; when the outcomes differ, the search as
    before."""
    same = _Costs({}, {})
    got = search_order([set(), set()], same, exhaustive_max=5, search_max=64)
    assert got.order == [0, 1] and got.score is None and not got.ambiguous and same.runs == []
    apart = _Costs({}, {(0, 1): 2})  # the same answers, but what follows contradicts the first order
    apart.key = lambda node: node  # type: ignore[method-assign]  # (so the two end states differ)
    got = search_order([set(), set()], apart, exhaustive_max=5, search_max=64)
    assert got.order == [1, 0] and got.score == 0 and apart.runs[0] == [0, 1]


def _two_joins_in_one_instant(leader_logged: bool) -> _TieTrial:
    """Two members with their ids (KIP-394) join a new group at 100 ms, in one instant; the join phase
    ends at 6,100 (the initial delay, extended once: b came after a). The log's answers name b leader
    (``leader_logged``), or were logged without leader and member list."""
    model = GroupCoordinatorModel(
        "g", CoordinatorConfig(kafka_version="3.7", group_initial_rebalance_delay_ms=3000)
    )
    a, b = joined(model, 0), joined(model, 5)
    model.drain()
    leader, members = (b, (a, b)) if leader_logged else (None, None)
    observed = ObservedResponse(error="NONE", generation_id=1, leader=leader, completion_ms=6100)
    tie = [
        replace(J(100, m).request({}), observed=replace(observed, member_id=m, members=ms), ref=("f", i))
        for i, (m, ms) in enumerate(((a, None if members is None else ()), (b, members)))
    ]
    return _TieTrial(model, tie, 0, (), 6101)


def test_two_joins_answered_later_are_ordered_by_their_answers() -> None:
    """Neither JoinGroup is answered in the instant: each order leaves the same answers so far, but
    another leader. The answers logged later name the second (in stable order) leader: the reversed
    order, found by the search."""
    trial = _two_joins_in_one_instant(leader_logged=True)
    assert trial.outcome([0, 1]) != trial.outcome([1, 0])
    got = search_order([set(), set()], trial, exhaustive_max=5, search_max=64)
    assert got.order == [1, 0] and got.score == 0 and not got.ambiguous


def test_two_joins_whose_answers_do_not_tell_are_ambiguous() -> None:
    """The same, the answers logged without leader and member list: both orders explain the log and make
    another leader, so the choice is ambiguous — their outcomes differ by the state alone (red when
    ``outcome`` compares the answers and the disagreements only)."""
    trial = _two_joins_in_one_instant(leader_logged=False)
    assert trial.outcome([0, 1]) != trial.outcome([1, 0])
    got = search_order([set(), set()], trial, exhaustive_max=5, search_max=64)
    assert got.order == [0, 1] and got.score == 0 and got.alternative == [1, 0]


def _two_heartbeats_in_one_instant(lookahead_until: int) -> tuple[_TieTrial, list[list[int]]]:
    """a and b, Stable since 10,000 ms, send a heartbeat each at 11,000, in one instant: each re-arms its
    member's session timer (due 21,000) — in the order they came, the order the two timers would fire
    in. The lookahead runs the timers to ``lookahead_until``. Returns the trial and the orders it ran
    whole (``run``: with the lookahead)."""
    model, a, b = in_the_initial_delay()
    ids = {a: a, b: b}
    model.handle(J(2000, b).request(ids))
    model.advance_to(10_000)  # one join phase, a leads: both await their SyncGroup
    model.handle(S(10_000, a, assignments={}).request(ids))
    model.handle(S(10_000, b).request(ids))
    model.drain()
    answered = ObservedResponse(error="NONE", completion_ms=11_000)
    tie = [replace(H(11_000, m).request(ids), observed=answered, ref=("f", i)) for i, m in enumerate((a, b))]
    trial = _TieTrial(model, tie, 0, (), lookahead_until)
    ran: list[list[int]] = []
    run = trial.run
    trial.run = lambda order: ran.append(list(order)) or run(order)  # type: ignore[method-assign]
    return trial, ran


def test_two_heartbeats_are_one_outcome_while_their_timers_cannot_fire() -> None:
    """Up to the lookahead's end, before the session timers are due, the two orders answer alike and leave
    the same state but for the order their timers would fire in: one outcome, no lookahead run. When the
    lookahead runs past their deadline, that order is part of the outcome, and the orders are scored as
    before (the constrained one kept: nothing after tells them apart)."""
    near, ran = _two_heartbeats_in_one_instant(20_999)
    assert near.outcome([0, 1]) == near.outcome([1, 0])
    got = search_order([set(), set()], near, exhaustive_max=5, search_max=64)
    assert got.order == [0, 1] and got.score is None and not got.ambiguous and ran == []
    far, ran = _two_heartbeats_in_one_instant(21_001)
    assert far.outcome([0, 1]) != far.outcome([1, 0])
    got = search_order([set(), set()], far, exhaustive_max=5, search_max=64)
    assert got.order == [0, 1] and not got.ambiguous and ran[0] == [0, 1]
