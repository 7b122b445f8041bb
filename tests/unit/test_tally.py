"""The tallies ``validate`` carries from run to run add up as counts of the union of their rows, and
refuse to add when a uniqueness key could occur in both (pure; the Spark side and its equality with a
count from scratch: tests/integration/test_validate_carry.py)."""

from __future__ import annotations

from rebalance_replay.transforms.tally import (
    EXAMPLES_PER_KIND,
    MAX_EXAMPLES,
    PARTIAL_UNEXPECTED,
    AgreementTally,
    ContractTally,
    SegmentCounts,
)


def _example(line: int, kind: str, source: str = "f.log") -> dict[str, object]:
    return {"ref": f"{source}:{line}", "source_file": source, "line_no": line, "api": "HEARTBEAT",
            "group_id": "g", "field": kind, "observed": "x", "predicted": "y"}  # fmt: skip


def test_agreement_tallies_add_cells_kinds_and_keep_the_first_examples() -> None:
    a = AgreementTally(
        {("HEARTBEAT", "NONE", "g", None): [3, 3, 2]},
        {("HEARTBEAT", "error"): 1},
        {"error": [_example(5, "error"), _example(9, "error")]},
    )
    b = AgreementTally(
        {("HEARTBEAT", "NONE", "g", None): [2, 1, 1], ("JOIN_GROUP", "(none)", "h", "warm_up"): [1, 0, 0]},
        {("HEARTBEAT", "error"): 2, ("HEARTBEAT", "leader"): 1},
        {"error": [_example(1, "error"), _example(7, "error")], "leader": [_example(2, "leader")]},
    )
    both = a.plus(b)
    assert both.cells == {
        ("HEARTBEAT", "NONE", "g", None): [5, 4, 3],
        ("JOIN_GROUP", "(none)", "h", "warm_up"): [1, 0, 0],
    }
    assert both.kinds == {("HEARTBEAT", "error"): 3, ("HEARTBEAT", "leader"): 1}
    assert [e["line_no"] for e in both.examples["error"]] == [1, 5, 7][:EXAMPLES_PER_KIND]
    assert [(e["line_no"], e["field"]) for e in both.first_examples()] == [
        (1, "error"),
        (2, "leader"),
        (5, "error"),
        (7, "error"),
    ]
    assert a.cells == {("HEARTBEAT", "NONE", "g", None): [3, 3, 2]}  # the operands are left as they were
    assert AgreementTally.from_json(both.to_json()) == both
    many = AgreementTally(examples={k: [_example(i, k) for i in range(3)] for k in "abcdefgh"})
    assert len(many.first_examples()) == MAX_EXAMPLES


def _segment(rows: int, broken: int, low: int | None, high: int | None, agreed: float = 0.0) -> SegmentCounts:
    return SegmentCounts(rows, {"dup": broken, "bad": broken}, {"mean": [agreed, float(rows)]}, low, high)


def test_contract_tallies_add_when_the_appended_rows_lie_above_the_kept_ones() -> None:
    kept = ContractTally({("predictions", "g"): _segment(10, 0, 0, 9, 10.0)}, {"bad": [1, 2]})
    later = ContractTally(
        {("predictions", "g"): _segment(5, 2, 10, 14, 4.0), ("predictions", "h"): _segment(3, 0, 0, 2, 3.0)},
        {"bad": [3, 4, 5, 6]},
    )
    both = kept.plus(later)
    assert both is not None
    assert both.rows() == 18 and both.count("dup") == 2 and both.count("bad") == 2
    assert both.mean("mean") == 17.0 / 18
    assert both.segments[("predictions", "g")].low == 0 and both.segments[("predictions", "g")].high == 14
    assert both.examples["bad"] == [1, 2, 3, 4, 5][:PARTIAL_UNEXPECTED]
    assert ContractTally.from_json(both.to_json()) == both
    # a key of the kept rows could come again: count the whole table
    again = ContractTally({("predictions", "g"): _segment(1, 0, 9, 9)})
    assert kept.plus(again) is None
    # ... unless the segment's key is null (never a duplicate)
    nulls = ContractTally({("predictions", None): _segment(1, 0, 0, 5)})
    assert nulls.plus(ContractTally({("predictions", None): _segment(1, 0, 0, 5)})) is not None
    assert ContractTally().mean("mean") is None


def test_of_table_keeps_one_tables_segments_and_their_examples() -> None:
    t = ContractTally(
        {("predictions", "g"): _segment(4, 1, 0, 3), ("rebalances", None): SegmentCounts(2, {"neg": 1}, {})},
        {"dup": ["g/1"], "neg": [-5]},
    )
    kept = t.of_table("predictions")
    assert list(kept.segments) == [("predictions", "g")]
    assert kept.examples == {"dup": ["g/1"]}


def test_tallies_add_what_only_one_side_has() -> None:
    a = SegmentCounts(2, {"dup": 1}, {"mean": [1.0, 2.0]}, None, None)
    b = SegmentCounts(3, {"bad": 2}, {"other": [3.0, 3.0]}, 4, 9)
    both = a.plus(b)
    assert both == SegmentCounts(5, {"dup": 1, "bad": 2}, {"mean": [1.0, 2.0], "other": [3.0, 3.0]}, 4, 9)
    assert b.plus(a) == both
    assert a.plus(a).low is None and a.plus(a).high is None
    # a new segment before a shared one; examples on one side only
    kept = ContractTally({("t", "g"): _segment(2, 1, 0, 1)}, {"dup": ["x"]})
    more = ContractTally(
        {("t", "new"): _segment(1, 0, 0, 0), ("t", "g"): _segment(1, 1, 5, 5)}, {"bad": ["y"]}
    )
    added = kept.plus(more)
    assert added is not None
    assert added.rows() == 4 and added.segments[("t", "g")].rows == 3 and added.count("dup") == 2
    assert added.examples == {"dup": ["x"], "bad": ["y"]}
    assert more.plus(kept) is None  # the kept rows (0 … 1) do not lie above the added ones (5)
    # counts and means of a check that some segments do not have
    mixed = ContractTally(
        {("t", "a"): SegmentCounts(1, {}, {}), ("t", "b"): SegmentCounts(2, {"dup": 2}, {"m": [1.0, 2.0]})}
    )
    assert mixed.count("dup") == 2 and mixed.count("none") == 0
    assert mixed.mean("m") == 0.5
    ag = AgreementTally(examples={"error": [_example(3, "error")]}).plus(AgreementTally())
    assert ag.examples == {"error": [_example(3, "error")]}


def test_the_kept_state_is_written_in_one_order() -> None:
    t = ContractTally(
        {
            ("t", "b"): _segment(1, 0, 0, 0),
            ("t", None): _segment(1, 0, 0, 0),
            ("t", "a"): _segment(1, 0, 0, 0),
        }
    )
    assert [s["key"] for s in t.to_json()["segments"]] == [["t", "a"], ["t", "b"], ["t", None]]
    cells = {("HEARTBEAT", "NONE", g, None): [1, 1, 1] for g in ("b", None, "a")}
    a = AgreementTally(cells)
    assert [c[2] for c in a.to_json()["cells"]] == ["a", "b", None]
