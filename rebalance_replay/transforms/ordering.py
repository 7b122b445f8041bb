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
    observed ones — :func:`search_order` runs a bounded search (every order for small tie sets, a
    greedy search with look-ahead beyond) driven by a caller-supplied scorer (the replayer runs the
    coordinator model on a copy);
(d) **the stable key** (broker, connection, correlation id, file, line) for what is left.

All functions here are pure and deterministic; constraints that contradict each other (a cycle) are
broken by the stable key rather than failing.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from rebalance_replay.transforms.kafka_protocol import ApiKey

Row = Mapping[str, Any]

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


def connection_arrivals(codes: np.ndarray, correlations: np.ndarray, arrivals: np.ndarray) -> np.ndarray:
    """Arrival times with every request no earlier than the requests before it on its connection.

    A broker reads a connection's next request only after it answered the previous one (it mutes the
    channel meanwhile), so a connection's requests arrive in correlation-id order. The log gives an
    arrival as the line's millisecond less the rounded ``totalTimeMs``, which can put a request one ms
    before its predecessor (a real 4.4 broker: a Heartbeat at ...690 answered in 0.35 ms, then the same
    connection's JoinGroup at ...690 answered in 0.72 ms, whose arrival comes out ...689). Such an
    arrival is raised to its predecessor's, making the two a tie that (a) orders. ``codes``: one
    non-negative integer per connection (-1: unknown connection, no constraint); ``correlations``: the
    correlation ids (-1 where unknown, no constraint)."""
    arrivals = np.asarray(arrivals, dtype=np.int64)
    known = (codes >= 0) & (correlations >= 0)
    if known.sum() < 2:
        return arrivals
    idx = np.flatnonzero(known)
    c = codes[idx].astype(np.int64)
    order = idx[np.lexsort((correlations[idx], c))]
    a = arrivals[order]
    cs = np.unique(codes[order], return_inverse=True)[1].astype(np.int64)  # dense connection numbers
    # a running max per connection on the arrivals' ranks (small numbers: no overflow, whatever the times)
    values, ranks = np.unique(a, return_inverse=True)
    span = len(values)
    raised = values[np.maximum.accumulate(ranks + cs * span) - cs * span]
    if np.array_equal(raised, a):
        return arrivals
    out = arrivals.copy()
    out[order] = raised
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


def constrained_order(before: Sequence[set[int]]) -> list[int]:
    """A topological order of the constraint graph, smallest index (stable key) first whenever there is a
    choice; a cycle is broken by taking the smallest remaining index."""
    n = len(before)
    indegree = [len(b) for b in before]
    after: list[list[int]] = [[] for _ in range(n)]
    for i, b in enumerate(before):
        for j in b:
            after[j].append(i)
    ready = [i for i in range(n) if indegree[i] == 0]
    heapq.heapify(ready)
    done = [False] * n
    order: list[int] = []
    while len(order) < n:
        if not ready:  # a cycle: contradictory constraints, the stable key decides
            i = next(k for k in range(n) if not done[k])
            indegree[i] = 0
        else:
            i = heapq.heappop(ready)
            if done[i]:
                continue
        done[i] = True
        order.append(i)
        for k in after[i]:
            if not done[k]:
                indegree[k] -= 1
                if indegree[k] == 0:
                    heapq.heappush(ready, k)
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


def search_order(
    before: Sequence[set[int]],
    score: Callable[[Sequence[int]], int],
    *,
    exhaustive_max: int,
    search_max: int,
) -> list[int]:
    """(c): the order with the fewest disagreements ``score`` reports, the constrained order first.

    ``score(order)`` → number of predicted responses that disagree with the observed ones when the tie
    set is replayed in ``order``. Stops at the first order scoring 0. When the constraints allow at most
    ``exhaustive_max!`` orders (every tie set of up to ``exhaustive_max`` requests, and larger ones made
    of a few connections' chains) every order is tried; otherwise (up to ``search_max``) the search builds
    the order greedily, choosing at each position the first candidate whose best completion (the rest in
    constrained order) scores lowest. Larger tie sets keep the constrained order.
    """
    n = len(before)
    base = constrained_order(before)
    if n < 2:
        return base
    best, best_score = base, score(base)
    if best_score == 0 or n > search_max:
        return best
    # exhaustive whenever the constraints leave few orders (chains of one connection's requests leave
    # far fewer than n!): at most as many as a tie set of exhaustive_max unconstrained requests has
    limit = math.factorial(exhaustive_max)
    orders = list(itertools.islice(linear_extensions(before), limit + 1))
    if len(orders) <= limit:
        for order in orders:
            if order == base:
                continue
            s = score(order)
            if s < best_score:
                best, best_score = order, s
                if s == 0:
                    break
        return best
    prefix: list[int] = []
    while len(prefix) < n:
        placed = set(prefix)
        candidates = [i for i in range(n) if i not in placed and before[i] <= placed]
        if not candidates:  # a cycle: follow the constrained order
            candidates = [next(i for i in base if i not in placed)]
        choice, choice_score = candidates[0], -1
        for c in candidates:
            taken = placed | {c}
            rest = [
                i
                for i in constrained_order(
                    [b & set() if i in taken else b - taken for i, b in enumerate(before)]
                )
                if i not in taken
            ]
            order = [*prefix, c, *rest]
            s = score(order)
            if s < best_score:
                best, best_score = order, s
                if s == 0:
                    return best
            if choice_score < 0 or s < choice_score:
                choice, choice_score = c, s
        prefix.append(choice)
    return best
