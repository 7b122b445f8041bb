"""Issue 29, part 2: a broker's clock stepped back inside one file. The broker writes a file in order, so
lines whose time falls more than ``CLOCK_STEP_BACK_MS`` behind an earlier line's were written after its
clock was set back: they are quarantined with the reason (counted in the accounting like every other
line) until the clock passes the latest time again, instead of being replayed in an order the log does
not show. Lines from a real 3.7 broker (``tests/data/real-kafka``), the step put in by hand."""

from __future__ import annotations

import gzip
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from rebalance_replay.jobs.ingest import parse_slices
from rebalance_replay.jobs.log_files import describe_file, plan_slices
from rebalance_replay.transforms.request_log import CLOCK_STEP_BACK_MS, ClockGuard

REAL = Path(__file__).resolve().parents[1] / "data" / "real-kafka" / "3.7" / "single" / "broker-1"
STAMP = "%Y-%m-%d %H:%M:%S,%f"


def shifted(line: str, ms: int) -> str:
    if not line.startswith("["):
        return line
    t = datetime.strptime(line[1:24], STAMP) + timedelta(milliseconds=ms)
    return "[" + t.strftime(STAMP)[:-3] + line[24:]


def line_ms(line: str) -> int | None:
    if not line.startswith("[") or "Completed request" not in line:
        return None
    t = datetime.strptime(line[1:24], STAMP).replace(tzinfo=UTC)
    return int(t.timestamp() * 1000)


def parse(tmp_path: Path, lines: list[str], columnar: bool) -> list[dict[str, Any]]:
    path = tmp_path / "broker-1" / "kafka-request.log.1"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    described = describe_file(str(path), r"(?P<broker_id>[^/]+)/[^/]+$")
    assert described is not None
    slices, _ = plan_slices([described], {})
    rows: list[dict[str, Any]] = []
    for item in parse_slices(slices, "UTC", datetime(2026, 1, 1, tzinfo=UTC), columnar=columnar):
        if isinstance(item, pa.RecordBatch):  # typed routine lines: request rows
            rows.extend({**r, "row_kind": "request"} for r in item.to_pylist())
        else:
            rows.append(item)
    return rows


@pytest.mark.parametrize("columnar", [False, True], ids=["rows", "columnar"])
def test_lines_after_a_clock_step_back_are_quarantined_until_it_catches_up(
    tmp_path: Path, columnar: bool
) -> None:
    with gzip.open(REAL / "kafka-request.log.gz", "rt") as f:
        lines = f.read().splitlines()[:2000]
    at, back_ms = 800, 20_000
    stepped = lines[:at] + [shifted(line, -back_ms) for line in lines[at:]]
    rows = parse(tmp_path, stepped, columnar)
    (stats,) = [r for r in rows if r["row_kind"] == "stats"]
    requests = {r["line_no"] for r in rows if r["row_kind"] == "request"}
    quarantined = {r["line_no"]: r["quarantine_reason"] for r in rows if r["row_kind"] == "quarantine"}
    # what the lines say, worked out here: the latest request time before the step, and every request
    # line after it whose time is more than a second behind that
    plain = {r["line_no"] for r in parse(tmp_path, lines, columnar) if r["row_kind"] == "request"}
    latest = max(t for n, line in enumerate(lines[:at], 1) if n in plain and (t := line_ms(line)) is not None)
    expected = {
        n
        for n, line in enumerate(stepped, 1)
        if n > at and n in plain and (t := line_ms(line)) is not None and t < latest - CLOCK_STEP_BACK_MS
    }
    assert len(expected) > 50 and max(plain) > max(expected)  # the step is inside, and the clock catches up
    assert set(quarantined) == expected
    assert requests == plain - expected  # nothing else changes
    assert all(
        reason.startswith("line time out of order: ") and "clock stepped back" in reason
        for reason in quarantined.values()
    )
    assert stats["lines_read"] == len(lines)
    assert stats["n_requests"] + stats["n_quarantined"] + stats["n_other_api"] + stats["n_other"] == len(
        lines
    )


def test_the_guard_tolerates_threads_interleaving_and_names_the_step() -> None:
    guard = ClockGuard()
    # a few ms back (two network threads' lines) and exactly the tolerance: kept
    first = [(1, 10_000), (2, 10_010), (3, 10_020), (4, 10_020 - CLOCK_STEP_BACK_MS), (5, None)]
    assert guard.stepped(first) == {}
    assert guard.latest_ms == 10_000  # the least of the last three agreeing lines
    out = guard.stepped([(6, 12_000), (7, 12_001), (8, 12_002), (9, 8_000), (10, 11_000), (11, 12_500)])
    assert list(out) == [9]  # 10 is within a second of the clock's 12,000
    assert out[9].startswith("line time out of order: 4.000 s behind the lines before it")


def test_one_line_with_a_wrong_time_is_not_the_clock() -> None:
    """A single line a year ahead of its neighbours (a corrupted digit) must not make every later line
    look stepped back: only what three consecutive lines agree on counts as the file's clock."""
    year = 365 * 86_400_000
    guard = ClockGuard()
    times = [(1, 10_000), (2, 10_100), (3, 10_200), (4, 10_300 + year), (5, 10_400), (6, 10_500), (7, 10_600)]
    assert guard.stepped(times) == {}
    assert guard.latest_ms == 10_400
    # two wrong lines in a row are not the clock either; a line a year *behind* is out of order
    assert guard.stepped([(8, 10_700 + year), (9, 10_800 + year), (10, 10_900), (11, 11_000 - year)]) == {
        11: guard.stepped([(12, 11_000 - year)])[12]
    }


def test_files_mixing_two_clocks_line_by_line_are_not_a_step() -> None:
    """Lines alternating between two far apart times (test files that mix a 2020 text-era line into
    2024 JSON lines) never agree three in a row on the later time: nothing is taken out."""
    a, b = 1_600_000_000_000, 1_714_000_000_000
    guard = ClockGuard()
    assert guard.stepped([(n, b if n % 3 else a) for n in range(1, 100)]) == {}


@pytest.mark.parametrize("zone", ["UTC", "Europe/Berlin"])
def test_a_step_is_found_the_same_when_the_file_is_read_in_pieces(tmp_path: Path, zone: str) -> None:
    """A large file is read in several slices (``split_slice``), each in a task of its own: each piece
    starts its guard from the lines just before it (``preceding_lines``, read in the file's zone like the
    piece itself: else a broker logging in local time would show a step of its offset at every cut), so
    the step is found as in one slice even when the piece boundary falls inside the stepped stretch."""
    from rebalance_replay.jobs.log_files import split_slice

    with gzip.open(REAL / "kafka-request.log.gz", "rt") as f:
        lines = f.read().splitlines()[:2000]
    stepped = lines[:800] + [shifted(line, -20_000) for line in lines[800:]]
    path = tmp_path / "broker-1" / "kafka-request.log.1"
    path.parent.mkdir(parents=True)
    path.write_text("".join(line + "\n" for line in stepped), encoding="utf-8")
    described = describe_file(str(path), r"(?P<broker_id>[^/]+)/[^/]+$")
    assert described is not None
    (whole,), _ = plan_slices([described], {})
    pieces = split_slice(whole, 40_000)
    assert len(pieces) > 10

    def quarantined(slices: list[Any]) -> dict[int, str]:
        at = datetime(2026, 1, 1, tzinfo=UTC)
        rows = [r for r in parse_slices(slices, zone, at) if isinstance(r, dict)]
        return {r["line_no"]: r["quarantine_reason"] for r in rows if r["row_kind"] == "quarantine"}

    one = quarantined([whole])
    assert len(one) > 50
    assert quarantined(pieces) == one
