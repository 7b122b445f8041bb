"""The report's counts of ``predictions`` and ``requests`` add: counted in two parts (the rows a table had,
then the rows it appended) they are what one count of all the rows gives (the Spark passes' rows are
made here the way ``jobs/report.py`` aggregates them)."""

from __future__ import annotations

import random
from collections import defaultdict
from typing import Any

import pytest

from rebalance_replay.transforms.report.inputs import ConnectionCounts, PredictionCounts
from rebalance_replay.transforms.report.model import MAX_TICKS, heartbeat_bin_ms

T0 = 1_717_200_000_000
HOUR = 3_600_000


def _rows(seed: int, n: int, span_ms: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        api = rng.choice(["HEARTBEAT"] * 8 + ["JOIN_GROUP", "SYNC_GROUP", "OFFSET_COMMIT"])
        scored = rng.random() < 0.9
        out.append(
            {
                "group_id": rng.choice(["g1", "g2", "g3"]),
                "api": api,
                "member_id": f"m{rng.randrange(6)}",
                "arrival_ms": T0 + rng.randrange(span_ms),
                "seq": i,
                "source_file": "b1/log",
                "line_no": i + 1,
                "scored": scored,
                "matched": scored and rng.random() < 0.95,
            }
        )
    return out


def _routine(r: dict[str, Any]) -> bool:
    return r["api"] == "HEARTBEAT" and not (r["scored"] and not r["matched"])


def _count(counts: PredictionCounts, rows: list[dict[str, Any]], limit: int) -> dict[str, str]:
    """What ``report`` does with one pass's rows: the counts, the refusals, the units, the events."""
    per: dict[tuple[str, str], dict[str, Any]] = {}
    members: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        a = per.setdefault(
            (r["group_id"], r["api"]),
            {"group_id": r["group_id"], "api": r["api"], "n": 0, "scored": 0, "matched": 0, "hb": []},
        )
        a["n"] += 1
        a["scored"] += r["scored"]
        a["matched"] += r["matched"]
        if _routine(r):
            a["hb"].append(r["arrival_ms"])
        if r["api"] == "JOIN_GROUP":
            members[r["group_id"]].add(r["member_id"])
    counts.add_counts(
        [
            {
                **a,
                "hb_n": len(a["hb"]),
                "hb_lo": min(a["hb"], default=None),
                "hb_hi": max(a["hb"], default=None),
            }
            for a in per.values()
        ],
        members,
    )
    refused = {g: str(n) for g, n in counts.refused(limit).items()}
    counts.drop_pages(refused)
    units = counts.next_units(counts.bin_ms(refused))
    kept = [r for r in rows if r["group_id"] not in refused]
    cells: dict[tuple[str, str, int], int] = defaultdict(int)
    for r in kept:
        if _routine(r) and r["group_id"] in units:
            u = units[r["group_id"]]
            cells[(r["group_id"], r["member_id"], r["arrival_ms"] // u * u)] += 1
    counts.add_units(
        [{"group_id": g, "member_id": m, "unit_start_ms": s, "count": n} for (g, m, s), n in cells.items()]
    )
    counts.add_events([r for r in kept if not _routine(r) and r["api"] != "OFFSET_COMMIT"])
    return refused


@pytest.mark.parametrize(
    ("n", "span_ms", "limit"),
    [(300, HOUR, 0), (3 * MAX_TICKS, 6 * HOUR, 0), (3 * MAX_TICKS, 400 * HOUR, 0), (400, HOUR, 5)],
)
def test_counts_of_two_parts_add_up_to_one_count_of_all(n: int, span_ms: int, limit: int) -> None:
    rows = _rows(n, n, span_ms)
    whole = PredictionCounts()
    refused = _count(whole, rows, limit)
    for cut in (1, n // 10, n // 2, n - 1):
        first = PredictionCounts()
        _count(first, rows[:cut], limit)
        kept = PredictionCounts.from_json(first.to_json())  # through the state file
        assert kept == first
        assert _count(kept, rows[cut:], limit) == refused
        assert kept.to_json() == whole.to_json(), cut
        bin_of = whole.bin_ms(refused)
        assert kept.heartbeat_bins(bin_of) == whole.heartbeat_bins(bin_of)
        assert sum(b.count for bins in whole.heartbeat_bins(bin_of).values() for b in bins) == sum(
            1 for r in rows if _routine(r) and r["group_id"] not in refused
        )


def test_the_spans_growing_coarsen_the_kept_units() -> None:
    """Ticks, then seconds, minutes and hours as the span grows: the counts kept in each unit add up into
    the next, and the bins drawn from them are the ones counted from the rows."""
    counts = PredictionCounts()
    units, start, n = [], T0, 0
    for end in (T0 + 600_000, T0 + HOUR, T0 + 30 * HOUR, T0 + 400 * HOUR):  # each part: MAX_TICKS rows
        step = (end - start) // MAX_TICKS
        part = [
            {"group_id": "g", "api": "HEARTBEAT", "member_id": "m", "arrival_ms": start + i * step,
             "seq": n + i, "source_file": "f", "line_no": n + i, "scored": True, "matched": True}
            for i in range(MAX_TICKS)
        ]  # fmt: skip
        _count(counts, part, 0)
        units.append(counts.units["g"])
        start, n = end, n + MAX_TICKS
    assert units == [1, 1000, 60_000, HOUR], units
    assert sum(counts.unit_counts["g"].values()) == n
    assert all(s % HOUR == 0 for _m, s in counts.unit_counts["g"])


def test_a_group_refused_later_keeps_no_page_inputs() -> None:
    counts = PredictionCounts()
    rows = _rows(1, 200, HOUR)
    _count(counts, [r for r in rows if r["member_id"] in ("m0", "m1")], 3)
    assert counts.events and counts.unit_counts
    refused = _count(counts, rows, 3)
    assert refused and all(g not in counts.events and g not in counts.unit_counts for g in refused)
    assert all(g in counts.heartbeats for g in refused)  # counted still: the overview's numbers


def test_connections_of_two_parts_add_up() -> None:
    conns = [("m1", "h:1", 10), ("m1", "h:1", 3), ("m2", None, 7), ("", "h:2", 1), ("m1", "h:9", 4)]
    rows = [
        {"group_id": "g", "member": m, "client_address": a, "client_id": "c"}
        | {"first_ms": f, "last_ms": f + 5, "inside": 2}
        for m, a, f in conns
    ]
    whole, part = ConnectionCounts(), ConnectionCounts()
    whole.add(rows)
    part.add(rows[:2])
    part = ConnectionCounts.from_json(part.to_json())
    part.add(rows[2:])
    assert part == whole
    assert whole.requests == {"g": 10}
    assert [
        (c.member_id, c.client_address, c.first_ms, c.last_ms) for c in whole.member_connections()["g"]
    ] == [
        ("m1", "h:1", 3, 15),
        ("m1", "h:9", 4, 9),
        ("m2", None, 7, 12),
    ]
    whole.add_requests({"big": 7})
    whole.drop_pages(["g"])
    assert whole.member_connections() == {} and whole.requests == {"g": 10, "big": 7}


def test_bin_width_follows_the_whole_count() -> None:
    counts = PredictionCounts()
    _count(counts, _rows(3, 3 * MAX_TICKS, 10 * HOUR), 0)
    n, lo, hi = counts.heartbeats["g1"]
    assert counts.bin_ms(set())["g1"] == heartbeat_bin_ms(n, hi - lo)
    assert "g1" not in counts.bin_ms({"g1"})
