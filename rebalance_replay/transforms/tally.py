"""Counts that add up across scheduled runs: what ``validate`` measured over a table's rows, kept so the
next run measures only the rows appended since and adds them (issue 30: an hourly run's cost in
proportion to its hour, not to the warehouse).

Pure Python, no Spark; ``rebalance_replay.jobs.validate`` and ``rebalance_replay.jobs.expectations``
measure the tallies with Spark and keep them in ``<warehouse>/_validate/state.json``.

* :class:`AgreementTally`: the agreement counts of some predictions — per (API, observed error, group,
  unscored reason) cell, per (API, mismatch kind), and per kind its first example rows in
  ``(source_file, line_no)`` order. Two tallies of disjoint rows add up to the tally of their union.
* :class:`ContractTally`: a Great Expectations contract's measures of some rows, per *segment* (the
  frame's ``table`` and some of the uniqueness key's columns: a log file, a group): rows, rows breaking
  each check, the sums a mean needs, and the lowest and highest value of one more of the key's columns
  (its *bound*: a line's completion time, a prediction's ``seq``). Two tallies add up only when no key
  can occur in both: in every segment they share, the added rows' lowest bound lies above the kept rows'
  highest (the next hour of a file, later requests of a group). Otherwise :meth:`ContractTally.plus`
  says None and the caller measures the whole table again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: example rows kept per mismatch kind, and in all (the validate summary's ``mismatch_examples``)
EXAMPLES_PER_KIND = 3
MAX_EXAMPLES = 20
#: example values kept per broken expectation
PARTIAL_UNEXPECTED = 5

Cell = tuple[str, str, str | None, str | None]  # (api, observed error or "(none)", group id, unscored reason)


def _example_order(row: Mapping[str, Any]) -> tuple[Any, ...]:
    return (row["source_file"], row["line_no"])


@dataclass
class AgreementTally:
    """The agreement counts of a set of predictions (see the module docstring)."""

    cells: dict[Cell, list[int]] = field(default_factory=dict)  # cell -> [rows, scored, matched]
    kinds: dict[tuple[str, str], int] = field(default_factory=dict)  # (api, kind) -> mismatched rows
    #: kind -> its first EXAMPLES_PER_KIND rows in (source_file, line_no) order, each {ref, source_file,
    #: line_no, api, group_id, field, observed, predicted}
    examples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def plus(self, other: AgreementTally) -> AgreementTally:
        """The tally of both sets of rows (they must be disjoint)."""
        cells = {k: list(v) for k, v in self.cells.items()}
        for cell, v in other.cells.items():
            have = cells.setdefault(cell, [0, 0, 0])
            for i, x in enumerate(v):
                have[i] += x
        kinds = dict(self.kinds)
        for kind_key, n in other.kinds.items():
            kinds[kind_key] = kinds.get(kind_key, 0) + n
        examples: dict[str, list[dict[str, Any]]] = {}
        for kind in sorted({*self.examples, *other.examples}):
            rows = [*self.examples.get(kind, []), *other.examples.get(kind, [])]
            examples[kind] = sorted(rows, key=_example_order)[:EXAMPLES_PER_KIND]
        return AgreementTally(cells, kinds, examples)

    def first_examples(self) -> list[dict[str, Any]]:
        """The summary's examples: every kind's first rows, in (source_file, line_no, field) order."""
        rows = [r for kind in self.examples.values() for r in kind]
        rows.sort(key=lambda r: (*_example_order(r), r["field"]))
        return rows[:MAX_EXAMPLES]

    def to_json(self) -> dict[str, Any]:
        return {
            "cells": [[*k, *v] for k, v in sorted(self.cells.items(), key=lambda kv: repr(kv[0]))],
            "kinds": [[*k, n] for k, n in sorted(self.kinds.items())],
            "examples": self.examples,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AgreementTally:
        cells: dict[Cell, list[int]] = {
            (c[0], c[1], c[2], c[3]): [int(c[4]), int(c[5]), int(c[6])] for c in data["cells"]
        }
        kinds = {(k[0], k[1]): int(k[2]) for k in data["kinds"]}
        return cls(cells, kinds, {k: list(v) for k, v in data["examples"].items()})


Segment = tuple[str | None, ...]  # the frame's table (or None) and the uniqueness key's leading columns


@dataclass
class SegmentCounts:
    """One segment's measures: rows, rows breaking each counted check (row checks and the uniqueness
    check), per mean check [sum, values], and the uniqueness check's bound column's lowest and highest."""

    rows: int
    counts: dict[str, int]
    sums: dict[str, list[float]]
    low: Any = None
    high: Any = None

    def plus(self, other: SegmentCounts) -> SegmentCounts:
        lows = [v for v in (self.low, other.low) if v is not None]
        highs = [v for v in (self.high, other.high) if v is not None]
        return SegmentCounts(
            self.rows + other.rows,
            {k: self.counts.get(k, 0) + other.counts.get(k, 0) for k in {*self.counts, *other.counts}},
            {k: _added(self.sums.get(k), other.sums.get(k)) for k in {*self.sums, *other.sums}},
            min(lows) if lows else None,
            max(highs) if highs else None,
        )


def _added(a: list[float] | None, b: list[float] | None) -> list[float]:
    """Two [sum, values] pairs of a mean added up (None: nothing measured)."""
    (a_sum, a_n), (b_sum, b_n) = a or (0.0, 0.0), b or (0.0, 0.0)
    return [a_sum + b_sum, a_n + b_n]


@dataclass
class ContractTally:
    """A contract's measures of some rows, by segment (see the module docstring), with up to
    :data:`PARTIAL_UNEXPECTED` example values of each broken check."""

    segments: dict[Segment, SegmentCounts] = field(default_factory=dict)
    examples: dict[str, list[Any]] = field(default_factory=dict)

    def plus(self, other: ContractTally) -> ContractTally | None:
        """The tally of both sets of rows; None when a uniqueness key could occur in both (a shared
        segment whose added rows do not all lie above the kept ones): count the whole table again."""
        segments = dict(self.segments)
        for key, counts in other.segments.items():
            have = segments.get(key)
            if have is None:
                segments[key] = counts
                continue
            leading_null = any(v is None for v in key[1:])  # rows with a null key column are never duplicates
            if (
                not leading_null
                and counts.low is not None
                and have.high is not None
                and counts.low <= have.high
            ):
                return None
            segments[key] = have.plus(counts)
        examples = {
            k: [*self.examples.get(k, []), *other.examples.get(k, [])][:PARTIAL_UNEXPECTED]
            for k in {*self.examples, *other.examples}
        }
        return ContractTally(segments, examples)

    def of_table(self, table: str | None) -> ContractTally:
        """The segments of rows from ``table`` (the frame's ``table`` column; None: a frame without one),
        with the examples of the checks those rows break (the others' come from the other tables)."""
        segments = {k: v for k, v in self.segments.items() if k[0] == table}
        broken = {k for s in segments.values() for k, n in s.counts.items() if n}
        return ContractTally(segments, {k: v for k, v in self.examples.items() if k in broken})

    def rows(self) -> int:
        return sum(s.rows for s in self.segments.values())

    def count(self, key: str) -> int:
        return sum(s.counts.get(key, 0) for s in self.segments.values())

    def mean(self, key: str) -> float | None:
        total, n = 0.0, 0.0
        for s in self.segments.values():
            total, n = _added([total, n], s.sums.get(key))
        return total / n if n else None

    def to_json(self) -> dict[str, Any]:
        return {
            "segments": [
                {
                    "key": list(k),
                    "rows": s.rows,
                    "counts": s.counts,
                    "sums": s.sums,
                    "low": s.low,
                    "high": s.high,
                }
                for k, s in sorted(self.segments.items(), key=lambda kv: repr(kv[0]))
            ],
            "examples": self.examples,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ContractTally:
        segments = {
            tuple(s["key"]): SegmentCounts(
                int(s["rows"]),
                {k: int(v) for k, v in s["counts"].items()},
                {k: [float(v[0]), float(v[1])] for k, v in s["sums"].items()},
                s["low"],
                s["high"],
            )
            for s in data["segments"]
        }
        return cls(segments, {k: list(v) for k, v in data["examples"].items()})
