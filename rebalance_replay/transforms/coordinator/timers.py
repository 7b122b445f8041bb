"""Keyed timers, the way the Java coordinator holds them (``CoordinatorTimer``): one timer per key
(``join-<group>``, ``sync-<group>``, ``heartbeat-<group>-<member>``), arming a key again replaces its
timer, cancellation is explicit.

Ordering of due timers: deadline, then priority class (rebalance timers before session timers — the
order that reproduces Kafka's tests for equal deadlines, reference §16a), then arming order.

Implementation: a binary heap with lazy re-arming. Re-arming a key to a *later* deadline only updates
the timer (the heap entry stays at the old deadline and is re-pushed when it surfaces), so the common
case — a heartbeat pushing its member's session deadline forward — costs a dict lookup and no heap
operation. Arming to an earlier or equal deadline pushes a fresh entry; superseded entries are skipped
when popped. The firing order is exactly that of an eager queue (see ``pop_due``).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence
from typing import Final

#: Priority classes for equal deadlines.
REBALANCE_PRIORITY: Final = 0  # join-<group>, sync-<group>
SESSION_PRIORITY: Final = 1  # heartbeat-<group>-<member> (session, new-member and pending expiry)
BOOKKEEPING_PRIORITY: Final = 2  # offsets expiration, track-mode checks

TimerData = tuple[int | str, ...]


class Timer:
    """One armed timer. ``kind`` and ``data`` say what to do when it fires."""

    __slots__ = ("data", "deadline", "heap_deadline", "heap_order", "key", "kind", "order", "priority")

    def __init__(
        self, key: str, deadline: int, priority: int, order: int, kind: str, data: TimerData
    ) -> None:
        self.key = key
        self.deadline = deadline
        self.priority = priority
        self.order = order
        self.kind = kind
        self.data = data
        # the heap entry currently standing for this timer (deadline <= self.deadline)
        self.heap_deadline = deadline
        self.heap_order = order


def _postponable(timer: Timer | None, deadline: int, priority: int) -> bool:
    """Whether re-arming ``timer`` to ``deadline`` at ``priority`` is a lazy postponement: a live timer of
    that priority moved later than its heap entry."""
    return timer is not None and deadline > timer.heap_deadline and timer.priority == priority


class TimerQueue:
    __slots__ = ("_heap", "_next_order", "_timers")

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, int, str]] = []
        self._timers: dict[str, Timer] = {}
        self._next_order = 0

    def __len__(self) -> int:
        return len(self._timers)

    def __deepcopy__(self, memo: dict[int, object]) -> TimerQueue:
        """A copy for ``CoordinatorEngine.fork``: new ``Timer`` objects (they are re-armed in place), the
        heap's entries and the timers' data shared (immutable tuples). ``copy.deepcopy``'s generic walk
        took ~16 µs a timer; a member-id-required storm keeps thousands of pending members' timers armed
        and the replay forks the model for nearly every request of it."""
        new = TimerQueue.__new__(TimerQueue)
        memo[id(self)] = new
        timers: dict[str, Timer] = {}
        for key, t in self._timers.items():
            c = Timer.__new__(Timer)
            c.key, c.deadline, c.priority, c.order, c.kind, c.data = (
                t.key,
                t.deadline,
                t.priority,
                t.order,
                t.kind,
                t.data,
            )
            c.heap_deadline, c.heap_order = t.heap_deadline, t.heap_order
            timers[key] = c
        new._timers = timers
        new._heap = list(self._heap)
        new._next_order = self._next_order
        return new

    def get(self, key: str) -> Timer | None:
        return self._timers.get(key)

    def arm(self, key: str, deadline: int, priority: int, kind: str, data: TimerData = ()) -> None:
        """Arm ``key`` (replacing any timer under that key) to fire at ``deadline``."""
        order = self._next_order
        self._next_order = order + 1
        timer = self._timers.get(key)
        if timer is not None and timer.priority == priority and deadline > timer.heap_deadline:
            # lazy: the existing heap entry (earlier) will be re-pushed when it surfaces
            timer.deadline = deadline
            timer.order = order
            timer.kind = kind
            timer.data = data
            return
        timer = Timer(key, deadline, priority, order, kind, data)
        self._timers[key] = timer
        heapq.heappush(self._heap, (deadline, priority, order, key))
        if len(self._heap) > 4 * len(self._timers) + 64:
            self._compact()

    def may_be_due(self, t: int) -> bool:
        """Whether a timer may be due at ``t`` (cheap: the heap's head, which may be a stale entry)."""
        heap = self._heap
        return bool(heap) and heap[0][0] <= t

    def postpone(self, key: str, deadline: int, priority: int) -> bool:
        """Re-arm the live timer ``key`` of ``priority`` to a *later* ``deadline`` (same kind and data)
        without a heap operation, as :meth:`arm` would; False (nothing done) when that does not apply and
        :meth:`arm` is needed. The heartbeat fast path."""
        timer = self._timers.get(key)
        if not _postponable(timer, deadline, priority):
            return False
        assert timer is not None
        order = self._next_order
        self._next_order = order + 1
        timer.deadline = deadline
        timer.order = order
        return True

    def postpone_many(self, updates: Sequence[tuple[str, int, int, int]], priority: int, calls: int) -> bool:
        """What ``calls`` consecutive :meth:`postpone` calls of one ``priority`` would do, given per key its
        first and last call: ``updates`` = (key, first deadline, last deadline, index of the last call
        among the ``calls``). All or nothing: False (nothing changed) unless every first call would
        postpone a live timer (the last deadlines are later still). The bulk heartbeat path."""
        timers = self._timers
        if not all(_postponable(timers.get(key), first, priority) for key, first, _last, _index in updates):
            return False
        base = self._next_order
        for key, _first, last, index in updates:
            timer = timers[key]
            timer.deadline = last
            timer.order = base + index
        self._next_order = base + calls
        return True

    def live(self) -> Iterator[Timer]:
        """The live timers, in no particular order."""
        return iter(self._timers.values())

    def cancel(self, key: str) -> bool:
        return self._timers.pop(key, None) is not None

    def cancel_prefix(self, prefix: str) -> list[str]:
        keys = [k for k in self._timers if k.startswith(prefix)]
        for k in keys:
            del self._timers[k]
        return keys

    def peek_deadline(self) -> int | None:
        """Deadline of the earliest live timer (cleans superseded heap entries on the way)."""
        heap = self._heap
        timers = self._timers
        while heap:
            deadline, _prio, order, key = heap[0]
            timer = timers.get(key)
            if timer is None or timer.heap_order != order:
                heapq.heappop(heap)
                continue
            if timer.deadline != deadline:
                # lazily re-armed: move the entry to the real deadline
                heapq.heapreplace(heap, (timer.deadline, timer.priority, timer.order, key))
                timer.heap_deadline = timer.deadline
                timer.heap_order = timer.order
                continue
            return deadline
        return None

    def pop_due(self, now: int, inclusive: bool) -> Timer | None:
        """Remove and return the next timer with deadline < now (strict) or <= now (inclusive)."""
        deadline = self.peek_deadline()
        if deadline is None or deadline > now or (deadline == now and not inclusive):
            return None
        _d, _p, _o, key = heapq.heappop(self._heap)
        return self._timers.pop(key)

    def pop_key(self, key: str) -> Timer | None:
        """Remove and return the timer armed under ``key`` (its heap entries become stale)."""
        return self._timers.pop(key, None)

    def timers(self) -> list[Timer]:
        """Live timers in firing order (deadline, priority, arming order)."""
        return sorted(self._timers.values(), key=lambda t: (t.deadline, t.priority, t.order))

    @property
    def next_order(self) -> int:
        return self._next_order

    def restore(self, timers: list[Timer], next_order: int) -> None:
        self._timers.clear()
        self._timers.update((t.key, t) for t in timers)
        self._next_order = next_order
        self._compact()

    def _compact(self) -> None:
        """Rebuild the heap in place (callers may hold a reference to the heap list)."""
        for t in self._timers.values():
            t.heap_deadline = t.deadline
            t.heap_order = t.order
        self._heap[:] = [(t.deadline, t.priority, t.order, t.key) for t in self._timers.values()]
        heapq.heapify(self._heap)
