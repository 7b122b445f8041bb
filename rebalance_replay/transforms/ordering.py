"""Replay order within the log's resolution: which of the requests stamped with the same millisecond
(or the same tick of a coarser clock) the coordinator handled first.

A request log orders lines by completion, and its timestamps have millisecond resolution at best, so
the requests of one group that arrived in the same instant (a *tie set*) come in no usable order. The
replay order respects, in this priority:

(a) **connections**: one connection's requests in correlation-id order (a broker processes a
    connection's requests one at a time, in order);
(b) **causality**: a request carrying a member id comes after the request whose response handed that
    id out (a KIP-394 ``MEMBER_ID_REQUIRED`` answer, a first JoinGroup); a member's request carrying
    generation G comes after every JoinGroup answered with G (a generation exists once its join phase
    completed, which is after all of its JoinGroups arrived; a request with no member id knows no
    generation, whatever it carries, and a static member's JoinGroup answered at once — a restart
    replacing it in a Stable group — creates none);
(c) **observations**: among the orders still possible, one whose predicted responses agree with the
    observed ones — the constrained order when it explains them, else :func:`search_order` runs a
    bounded best-first search, request by request, driven by a caller-supplied :class:`Trial` (the
    replayer runs copies of the coordinator model and scores a whole order on the group's following
    requests too), pruned by the answers that reveal position; when another order explains the log as
    well but leads to another state, the choice is marked ambiguous;
(d) **the stable key** (broker, connection, correlation id, file, line) for what is left.

All functions here are pure and deterministic; constraints that contradict each other (a cycle) are
broken by the stable key rather than failing.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Collection, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import numpy as np

from rebalance_replay.transforms.kafka_protocol import ApiKey

Row = Mapping[str, Any]
Node = TypeVar("Node")

#: The deterministic tie-break of last resort, after arrival time.
STABLE_COLUMNS = ("broker_id", "connection", "correlation_id", "source_file", "line_no")
#: What a Spark path sorts a partition by before handing rows to a replayer.
SORT_COLUMNS = ("arrival_ms", *STABLE_COLUMNS)

_JOIN = int(ApiKey.JOIN_GROUP)
_GENERATION_CARRIERS = frozenset({int(ApiKey.SYNC_GROUP), int(ApiKey.HEARTBEAT), int(ApiKey.OFFSET_COMMIT)})
_ROUTINE = frozenset({int(ApiKey.HEARTBEAT), int(ApiKey.OFFSET_COMMIT)})


def stable_key(row: Row) -> tuple[Any, ...]:
    return tuple("" if row.get(c) is None else row.get(c) for c in STABLE_COLUMNS)


def sort_key(row: Row) -> tuple[Any, ...]:
    """Arrival, then the stable key: the order before constraints are applied."""
    return (row["arrival_ms"], *stable_key(row))


def connection_arrivals(
    codes: np.ndarray, correlations: np.ndarray, arrivals: np.ndarray, *, lower: bool = True
) -> np.ndarray:
    """Arrival times with every request no later than the requests after it on its connection.

    A broker reads a connection's next request only after it answered the previous one (it mutes the
    channel meanwhile), so a connection's requests arrive in correlation-id order. The log gives an
    arrival as the line's time less ``totalTimeMs``, and the line's time is when the broker *wrote* the
    line, after its timing ended (``RequestChannel.updateRequestMetrics`` builds the JSON first): an
    arrival is never early (but for the millisecond's rounding), and late by however long the writing
    took — tens of ms on a loaded broker. So where a connection's requests come out inverted, the earlier
    request's line was written late: its arrival is lowered to its successor's, making the two a tie
    that (a) orders. (Raising the successor instead carried one late line's delay onto the next
    request: a loaded broker's late OffsetCommit line made the member's next JoinGroup, which completed
    a join phase, 16 ms late, and the phase with it.) The rounding case is the same tie: a real 4.4
    broker's Heartbeat at ...690 answered in 0.35 ms, then the same connection's JoinGroup at ...690
    answered in 0.72 ms, whose arrival comes out ...689. ``codes``: one non-negative integer per
    connection (-1: unknown connection, no constraint); ``correlations``: the correlation ids (-1 where
    unknown, no constraint).

    ``lower=False`` raises a later request to its predecessor's arrival instead: what the replay does
    after its causal mends (which move a line's arrival back from what it says), so that no mend puts a
    request before the one its connection sent first."""
    arrivals = np.asarray(arrivals, dtype=np.int64)
    known = (codes >= 0) & (correlations >= 0)
    if known.sum() < 2:
        return arrivals
    idx = np.flatnonzero(known)
    c = codes[idx].astype(np.int64)
    order = idx[np.lexsort((correlations[idx], c))]
    a = arrivals[order]
    cs = np.unique(codes[order], return_inverse=True)[1].astype(np.int64)  # dense connection numbers
    # a running min per connection from its last request back, on the arrivals' ranks (small numbers:
    # no overflow, whatever the times); read backwards, the connections come in decreasing number, so
    # the offset keeps each connection's minimum from leaking into the one read after it
    values, ranks = np.unique(a, return_inverse=True)
    span = len(values)
    keyed = ranks + cs * span
    if lower:
        moved = values[np.minimum.accumulate(keyed[::-1])[::-1] - cs * span]
    else:  # a running max per connection, forwards (connections in increasing number: no leak either)
        moved = values[np.maximum.accumulate(keyed) - cs * span]
    if np.array_equal(moved, a):
        return arrivals
    out = arrivals.copy()
    out[order] = moved
    return out


def tie_sets(rows: Sequence[Row]) -> Iterator[list[Row]]:
    """Runs of rows with the same arrival time (``rows`` sorted by :func:`sort_key`)."""
    for _, run in itertools.groupby(rows, key=lambda r: r["arrival_ms"]):
        yield list(run)


def is_routine(tie: Sequence[Row]) -> bool:
    """Only heartbeats and commits: they commute (each is about its own member), nothing to order."""
    return all(int(r["api_key"]) in _ROUTINE for r in tie)


def _static_fast_rejoin(row: Row) -> bool:
    """A static member's JoinGroup answered at once: most likely a restart replacing the member in a
    Stable group, answered with the generation that already exists (it creates none)."""
    done, arrival = row.get("completion_ms"), row.get("arrival_ms")
    return (
        bool(row.get("group_instance_id"))
        and not row.get("member_id")  # a new process: it does not know its member id yet
        and done is not None
        and arrival is not None
        and done <= arrival
    )


def predecessors(tie: Sequence[Row], members: Collection[str] | None = None) -> list[set[int]]:
    """For each row of a tie set (in stable order), the indexes that must come before it: (a) + (b).
    ``members``: the group's member ids before the tie, when known — the generation rule then applies
    only to requests of members (the group's, or ones the tie's JoinGroups answered), not strangers."""
    n = len(tie)
    before: list[set[int]] = [set() for _ in range(n)]
    by_connection: dict[tuple[Any, Any], list[int]] = {}
    handed_out: dict[str, list[int]] = {}  # member id → JoinGroups whose response gave it
    generation_of: dict[int, list[int]] = {}  # generation → JoinGroups answered with it
    for i, r in enumerate(tie):
        conn = r.get("connection")
        if conn:
            by_connection.setdefault((r.get("broker_id"), conn), []).append(i)
        if int(r["api_key"]) == _JOIN:
            given = r.get("response_member_id")
            if given and given != r.get("member_id"):
                handed_out.setdefault(given, []).append(i)
            gen = r.get("response_generation_id")
            if r.get("error_name") == "NONE" and gen is not None and gen >= 0 and not _static_fast_rejoin(r):
                generation_of.setdefault(int(gen), []).append(i)
    answered = {r.get("response_member_id") for r in tie if int(r["api_key"]) == _JOIN}
    for requests in by_connection.values():
        ordered = sorted(requests, key=lambda i: (tie[i].get("correlation_id") or 0, i))
        for a, b in itertools.pairwise(ordered):
            before[b].add(a)
    for i, r in enumerate(tie):
        member = r.get("member_id")
        if member:
            before[i].update(j for j in handed_out.get(member, ()) if j != i)
        gen = r.get("generation_id")
        if (
            int(r["api_key"]) in _GENERATION_CARRIERS
            and gen is not None
            and gen >= 0
            and member
            and (members is None or member in members or member in answered)
        ):
            before[i].update(j for j in generation_of.get(int(gen), ()) if j != i)
    return before


def _graph(before: Sequence[set[int]]) -> tuple[list[int], list[list[int]]]:
    """The constraint graph as a topological sort walks it: each request's count of requests that must
    come before it, and the requests that must come after each one."""
    indegree = [len(b) for b in before]
    after: list[list[int]] = [[] for _ in before]
    for i, b in enumerate(before):
        for j in b:
            after[j].append(i)
    return indegree, after


def constrained_order(before: Sequence[set[int]], *, reverse: bool = False) -> list[int]:
    """A topological order of the constraint graph, smallest index (stable key) first whenever there is a
    choice (``reverse``: the largest); a cycle is broken by taking the smallest remaining index."""
    n = len(before)
    sign = -1 if reverse else 1
    indegree, after = _graph(before)
    ready = [sign * i for i in range(n) if indegree[i] == 0]
    heapq.heapify(ready)
    done = [False] * n
    order: list[int] = []
    while len(order) < n:
        if not ready:  # a cycle: contradictory constraints, the stable key decides
            i = next(k for k in range(n) if not done[k])
            indegree[i] = 0
        else:
            i = sign * heapq.heappop(ready)
            if done[i]:
                continue
        done[i] = True
        order.append(i)
        for k in after[i]:
            if not done[k]:
                indegree[k] -= 1
                if indegree[k] == 0:
                    heapq.heappush(ready, sign * k)
    return order


def linear_extensions(before: Sequence[set[int]]) -> Iterator[list[int]]:
    """Every order respecting ``before``, lexicographically by index (the first is the constrained
    order when the graph has no cycle)."""
    n = len(before)
    placed = [False] * n
    order: list[int] = []

    def rec() -> Iterator[list[int]]:
        if len(order) == n:
            yield list(order)
            return
        for i in range(n):
            if not placed[i] and all(placed[j] for j in before[i]):
                placed[i] = True
                order.append(i)
                yield from rec()
                order.pop()
                placed[i] = False

    yield from rec()


class Trial(Protocol[Node]):
    """How :func:`search_order` tries orders of a tie set (the replayer runs copies of the coordinator
    model): a *node* is the state after some of the tie's requests (a prefix of an order)."""

    def root(self) -> Node:
        """The state before the tie."""
        ...

    def place(self, node: Node, i: int) -> tuple[Node, int, int]:
        """Request ``i`` after ``node`` (``node`` unchanged): the new node, the disagreements that last
        whatever follows (answers given), and the provisional ones of the new node (requests held although
        the broker answered them at once, a leader the log contradicts: a later request may still explain
        them away)."""
        ...

    def close(self, node: Node) -> tuple[int, Hashable]:
        """At the end of the tie: the disagreements the state shows (the provisional ones made final) and
        the state's fingerprint (what later answers depend on). ``node`` is used up (a closed order is
        never extended: the trial may run what follows the tie on it instead of on a copy)."""
        ...

    def key(self, node: Node) -> Hashable:
        """The fingerprint of ``node``'s state: two prefixes of the same requests with the same fingerprint
        have the same futures, so only one of them is searched further."""
        ...

    def run(self, order: Sequence[int]) -> tuple[int, Hashable]:
        """A whole order at once: its disagreements and the end state's fingerprint."""
        ...

    def run_unless(self, order: Sequence[int], end: Hashable) -> tuple[int, Hashable] | None:
        """As :meth:`run`, or None when the order ends in ``end`` (a fingerprint :meth:`close` gave): then
        its disagreements are not needed — nothing it leads to differs — and what follows the tie need not
        be scored."""
        ...

    def outcome(self, order: Sequence[int]) -> object:
        """What a whole order leaves behind, compared with ``==``: its answers to the tie's requests, the
        disagreements its end state shows and that state exactly (not only its fingerprint) as far as
        what the trial scores after the tie can tell. Orders with equal outcomes score the same on what
        follows the tie, and lead to the same fingerprint."""
        ...


@dataclass(frozen=True)
class Choice:
    """The order :func:`search_order` chose, its disagreements, and — when the log does not single it
    out — another order that explains the log as well (no disagreement) but leads to another state."""

    order: list[int]
    #: None: not scored (the log allows no other order, or every other one leaves the same outcome)
    score: int | None
    alternative: list[int] | None = None

    @property
    def ambiguous(self) -> bool:
        return self.alternative is not None


def few_orders(before: Sequence[set[int]], limit: int) -> list[list[int]] | None:
    """Every order respecting ``before`` (the constrained order first) when there are at most ``limit``
    of them; None when there are more, or when the constraints contradict each other (a cycle)."""
    n = len(before)
    indegree, after = _graph(before)
    ready = [i for i in range(n) if indegree[i] == 0]
    seen = 0
    while ready:
        i = ready.pop()
        seen += 1
        for k in after[i]:
            indegree[k] -= 1
            if indegree[k] == 0:
                ready.append(k)
    if seen < n:
        return None  # a cycle: linear_extensions would search every prefix in vain
    # no cycle: every prefix linear_extensions builds completes, so taking limit + 1 costs little
    orders = list(itertools.islice(linear_extensions(before), limit + 1))
    return orders if len(orders) <= limit else None


def search_budget(n: int, exhaustive_max: int) -> int:
    """Requests tried (one each: a copy of the model handles one request) by one search of a tie set of
    ``n``: every prefix of every order of ``exhaustive_max`` requests, and ``n²`` more."""
    every_prefix = sum(math.perm(exhaustive_max, k) for k in range(1, exhaustive_max + 1))
    return every_prefix + n * n


def search_order(
    before: Sequence[set[int]],
    trial: Trial[Node],
    *,
    exhaustive_max: int,
    search_max: int,
    first: Collection[int] = (),
) -> Choice:
    """(c): an order with no disagreement when one exists (else the fewest found), and whether the log
    leaves it ambiguous.

    The constrained order is tried first, at once, and kept when it explains the log (the trial scores a
    whole order on the tie's answers and on the requests that follow it: an order that explains the instant
    but not what comes next does not explain the log). When it disagrees, a best-first search builds orders
    request by request on copies of the model: a prefix whose answers disagree is set aside (an answer, once
    given, does not change), a prefix with provisional disagreements waits behind those without, the deepest
    prefix goes first, and prefixes that reach the same state with the same requests are searched once (the
    one with fewer disagreements). A found order replaces the constrained one only when it scores better.
    The answers that reveal position therefore prune the search: a join refused with GROUP_MAX_SIZE_REACHED
    cannot come before the group is full, the leader is the first member to join a join phase, a heartbeat
    answered REBALANCE_IN_PROGRESS comes after the join that began the rebalance. At most
    :func:`search_budget` requests are tried per search; none above ``search_max``. ``first``: requests
    tried first at each step (the replayer's: those refused at once, which change nothing where they fit —
    placed early, they keep every other choice open).

    Ambiguity, looked for only where it is cheap: the constrained order with the stable key reversed,
    and — when the first search had to run — the same search preferring the opposite choices, look for
    a second explaining order; when one ends in another state, the choice says so. (The reversed order of
    an unsearched tie is scored only when it ends elsewhere: :meth:`Trial.run_unless`.)

    Nothing is scored when the constraints allow one order, or two whose outcomes
    (:meth:`Trial.outcome`, without what follows the tie) are equal: the constrained order is kept, not
    ambiguous, as the search would (two followers' SyncGroups in one instant, two members leaving).
    """
    n = len(before)
    base = constrained_order(before)
    if n < 2:
        return Choice(base, 0)
    few = few_orders(before, 2)
    if few is not None and (len(few) == 1 or trial.outcome(few[0]) == trial.outcome(few[1])):
        # the log allows one order, or two that leave the same outcome: whatever follows scores them the
        # same, so the search would keep the constrained order and find nothing ambiguous
        return Choice(base, None)
    score, end = trial.run(base)
    if n > search_max:
        return Choice(base, score)
    budget = search_budget(n, exhaustive_max)
    order = base
    searched = score > 0
    if searched:
        found = _best_first(before, trial, budget, _preference(n, first, reverse=False))
        if found is None or found[1] >= score:
            return Choice(base, score)
        order, score, end = found
        if score > 0:
            return Choice(order, score)
    # another explaining order, only where it is cheap: the reversed stable order, and a second search
    # only when the first one had to run (a stable order that explains the log costs one more run)
    reverse = constrained_order(before, reverse=True)
    other: tuple[list[int], int, Hashable] | None
    if searched:
        other_score, other_end = trial.run(reverse)
        other = (reverse, other_score, other_end)
        if other_score > 0:
            other = _best_first(before, trial, budget, _preference(n, first, reverse=True))
    else:  # the reversed order's score matters only when it ends elsewhere
        ran = trial.run_unless(reverse, end)
        other = None if ran is None else (reverse, *ran)
    if other is not None and other[1] == 0 and other[2] != end:
        return Choice(order, 0, other[0])
    return Choice(order, 0)


def _preference(n: int, first: Collection[int], *, reverse: bool) -> list[int]:
    """The order candidates are tried in: ``first``, then the rest, each by index (``reverse``: largest
    first)."""
    ahead = sorted(first, reverse=reverse)
    rest = [i for i in sorted(range(n), reverse=reverse) if i not in set(ahead)]
    return [*ahead, *rest]


def _best_first(
    before: Sequence[set[int]], trial: Trial[Node], budget: int, preference: Sequence[int]
) -> tuple[list[int], int, Hashable] | None:
    """The search of :func:`search_order`: (order, disagreements, end fingerprint) of the first order
    without disagreement, else of the best complete order found within ``budget`` tries, else None.
    Candidates at each step in ``preference`` order."""
    n = len(before)
    full = (1 << n) - 1
    masks = [sum(1 << j for j in b) for b in before]
    # a node: state, order so far (as a tuple), placed requests (bit mask), next candidate to try
    nodes: list[tuple[Node, tuple[int, ...], int]] = [(trial.root(), (), 0)]
    cursors = [0]
    ready: list[list[int] | None] = [None]
    heap: list[tuple[int, int, int, int]] = [(0, 0, 0, 0)]  # (lasting, provisional, -depth, node)
    seen: dict[tuple[int, Hashable], int] = {}
    best: tuple[list[int], int, Hashable] | None = None
    tries = 0
    while heap and tries < budget:
        lasting, _, depth, k = heap[0]
        state, prefix, placed = nodes[k]
        candidates = ready[k]
        if candidates is None:
            candidates = [i for i in preference if not placed >> i & 1 and masks[i] & placed == masks[i]]
            if not candidates:  # a cycle: contradictory constraints, the first unplaced request
                candidates = [next(i for i in preference if not placed >> i & 1)]
            ready[k] = candidates
        c = candidates[cursors[k]]
        cursors[k] += 1
        if cursors[k] == len(candidates):
            heapq.heappop(heap)
        tries += 1
        child, cost, pending = trial.place(state, c)
        now = placed | 1 << c
        # the same requests leading to the same state: searched further only when they got there with
        # fewer disagreements (an answer given differently leaves the same state behind)
        key = (now, trial.key(child))
        cost_so_far = lasting + cost
        if seen.get(key, cost_so_far + 1) <= cost_so_far:
            continue
        seen[key] = cost_so_far
        order = (*prefix, c)
        if now == full:
            extra, end = trial.close(child)
            total = lasting + cost + extra
            if best is None or total < best[1]:
                best = (list(order), total, end)
                if total == 0:
                    return best
            continue
        nodes.append((child, order, now))
        cursors.append(0)
        ready.append(None)
        heapq.heappush(heap, (lasting + cost, pending, depth - 1, len(nodes) - 1))
    return best
