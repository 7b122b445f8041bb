"""Fuzzing the parser the way bad input really arrives: values out of range or of the wrong type for
their Kafka schema type, deleted keys, damaged lines and damaged files. Nothing may raise, every line is
accounted for, every bad line is quarantined with a reason naming the field, and every accepted row
converts to the table's Arrow schema (the conversion that used to crash a whole Spark task)."""

from __future__ import annotations

import zlib
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from rebalance_replay.jobs.config import load_config
from rebalance_replay.jobs.ingest import TASK_OUTPUT, parse_slices
from rebalance_replay.jobs.log_files import describe_file, plan_slices
from rebalance_replay.schemas.core import value_check
from rebalance_replay.schemas.tables import REQUESTS
from rebalance_replay.transforms.columnar_log import parse_routine_lines
from rebalance_replay.transforms.request_log import LineKind, parse_line
from simulator.mutations import BOUNDARY_NUMBERS, base_lines, mutated_lines, write_bad_files

SCHEMA = TASK_OUTPUT.arrow_schema()
NOW = datetime(2024, 5, 2, tzinfo=UTC)


@pytest.fixture(scope="module")
def lines() -> list[str]:
    return base_lines()


def _ingest_file(path: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    config = load_config((), (), str(path.parent / "wh"))
    described = describe_file(str(path), config.input.broker_id_pattern)
    if described is None:
        return [], {"lines_read": 0, "n_requests": 0, "n_quarantined": 0, "n_other_api": 0, "n_other": 0}
    slices, _ = plan_slices([described], {})
    rows = list(parse_slices(slices, "UTC", NOW))
    stats = next(r for r in rows if r["row_kind"] == "stats")
    return [r for r in rows if r["row_kind"] != "stats"], stats


def _check(rows: list[dict[str, Any]], stats: dict[str, Any]) -> Counter[str]:
    pa.RecordBatch.from_pylist(rows, schema=SCHEMA)  # never fails on what the parser accepted
    assert stats["lines_read"] == (
        stats["n_requests"] + stats["n_quarantined"] + stats["n_other_api"] + stats["n_other"]
    )
    quarantined = [r for r in rows if r["row_kind"] == "quarantine"]
    assert len(quarantined) == stats["n_quarantined"]
    assert all(r["quarantine_reason"] for r in quarantined)
    return Counter(r["quarantine_reason"].split(":")[0] for r in quarantined)


def _fuzz(lines: list[str], count: int, seed: int, tmp_path: Path) -> None:
    bad = mutated_lines(lines, count, seed)
    for line in bad:
        parse_line(line, UTC)  # never raises (parse_line's contract)
    path = tmp_path / "broker-1" / "kafka-request.log.2024-05-01-10"
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(bad) + "\n", encoding="utf-8")
    rows, stats = _ingest_file(path)
    assert stats["lines_read"] == count
    reasons = _check(rows, stats)
    assert stats["n_quarantined"] > count // 10, reasons


def test_fuzz_lines_fast(lines: list[str], tmp_path: Path) -> None:
    _fuzz(lines, 1_000, 1, tmp_path)


@pytest.mark.slow
def test_fuzz_lines_many(lines: list[str], tmp_path: Path) -> None:
    _fuzz(lines, 10_000, 2, tmp_path)


def test_out_of_range_values_name_the_field_and_value(lines: list[str]) -> None:
    line = next(x for x in lines if '"correlationId":' in x and "HEARTBEAT" in x)
    for bad, reason in (
        ('"correlationId":2147483648', "correlationId 2147483648 is out of int32 range"),
        ('"totalTimeMs":-9223372036854775809', "field totalTimeMs out of range: -9.223372036854776e+18 ms"),
        ('"generationId":9223372036854775807', "generationId 9223372036854775807 is out of int32 range"),
        ('"generationId":"1"', 'generationId is not an int: "1"'),
    ):
        key = bad.split(":")[0]
        import re

        mutated = re.sub(re.escape(key) + r":(-?[0-9.]+|\"[^\"]*\")", bad, line, count=1)
        out = parse_line(mutated, UTC)
        assert out.kind is LineKind.QUARANTINE and reason in (out.reason or ""), (bad, out.reason)


@pytest.mark.parametrize(
    ("total", "outcome"),
    [
        ("9.2e18", "field totalTimeMs out of range: 9.2e+18 ms (a request takes 0..2592000000 ms)"),
        ("-9.2e18", "field totalTimeMs out of range: -9.2e+18 ms (a request takes 0..2592000000 ms)"),
        ("-0.001", "field totalTimeMs out of range: -0.001 ms (a request takes 0..2592000000 ms)"),
        ("2592000001", "field totalTimeMs out of range: 2592000001.0 ms (a request takes 0..2592000000 ms)"),
        ("NaN", "field totalTimeMs is not finite"),
        ("Infinity", "field totalTimeMs is not finite"),
        (
            "1714557600001.5",
            "field totalTimeMs out of range: 1714557600001.5 ms (a request takes 0..2592000000 ms)",
        ),
        ("2592000000", 1_714_557_600_000 - 2_592_000_000),  # 30 days: the longest accepted
        ("0", 1_714_557_600_000),
        ("-0.0", 1_714_557_600_000),
        ("0.5", 1_714_557_600_000 - 1),  # rounded half up, like Spark's round()
    ],
)
def test_impossible_derived_times_are_quarantined_naming_the_field(
    lines: list[str], total: str, outcome: str | int
) -> None:
    """The arrival time is computed (completion less totalTimeMs) and range-checked where it is computed:
    in the line parser and in the columnar parser (whose rows outside the range fall back to it), so an
    absurd value never reaches the replay's dates."""
    import re

    line = next(x for x in lines if '"requestApiKeyName":"HEARTBEAT"' in x)
    line = "[2024-05-01 10:00:00,000]" + line[line.index("]") + 1 :]
    mutated = re.sub(r'"totalTimeMs":[^,]+', '"totalTimeMs":' + total, line, count=1)
    out = parse_line(mutated, UTC)
    typed = parse_routine_lines([mutated], UTC)  # the columnar parser: what it cannot type falls back
    if isinstance(outcome, str):
        assert out.kind is LineKind.QUARANTINE and out.reason == outcome
        assert typed.positions.tolist() == []
    else:
        assert out.kind is LineKind.REQUEST and out.record is not None
        assert out.record["arrival_ms"] == outcome
        assert typed.positions.tolist() == [0]
        assert typed.records.column("arrival_ms").to_pylist() == [outcome]


@pytest.mark.parametrize(
    ("stamp", "total", "reason"),
    [
        (
            "0001-01-01 00:00:00,000",
            "1",
            "arrival time out of range: 0001-01-01 00:00:00 UTC less totalTimeMs is before 1970-01-01",
        ),
        (
            "1970-01-01 00:00:00,000",
            "0.6",
            "arrival time out of range: 1970-01-01 00:00:00 UTC less totalTimeMs is before 1970-01-01",
        ),
        ("1970-01-01 00:00:05,000", "5000", None),
        ("2099-12-31 23:59:59,999", "1", None),
        (
            "2100-01-01 00:00:00,000",
            "1",
            "line time out of range: 2100-01-01 00:00:00 UTC is after 2100-01-01",
        ),
        (
            "9999-12-31 23:59:59,999",
            "1",
            "line time out of range: 9999-12-31 23:59:59 UTC is after 2100-01-01",
        ),
    ],
)
def test_line_times_outside_the_accepted_range_are_quarantined(
    lines: list[str], stamp: str, total: str, reason: str | None
) -> None:
    """Both eras: a JSON line and a text (≤2.7) line with the same time and total."""
    import re

    for era_marker in ('"requestApiKeyName":"HEARTBEAT"', "RequestHeader(apiKey=HEARTBEAT"):
        line = next(x for x in lines if era_marker in x)
        line = "[" + stamp + line[line.index("]") :]
        if line.count("totalTimeMs"):
            line = re.sub(r'"totalTimeMs":[^,]+', '"totalTimeMs":' + total, line, count=1)
        else:
            line = re.sub(r"totalTime:[^,]+", "totalTime:" + total, line, count=1)
            reason = reason and reason.replace("totalTimeMs", "totalTime")
        out = parse_line(line, UTC)
        typed = parse_routine_lines([line], UTC).positions.tolist()  # text lines are never typed there
        if reason is None:
            assert out.kind is LineKind.REQUEST, out.reason
            assert typed == ([0] if line.count("totalTimeMs") else [])
        else:
            assert (out.kind, out.reason) == (LineKind.QUARANTINE, reason)
            assert typed == []


def test_fuzzed_derived_values_never_pass_an_impossible_time(lines: list[str], tmp_path: Path) -> None:
    """Every line :func:`mutate_timing` makes is either quarantined or carries times in range."""
    import random

    from simulator.mutations import mutate_timing

    rng = random.Random(29)
    bad = [mutate_timing(rng.choice(lines), rng) for _ in range(2_000)]
    path = tmp_path / "broker-1" / "kafka-request.log.2024-05-01-10"
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(bad) + "\n", encoding="utf-8")
    rows, stats = _ingest_file(path)
    reasons = _check(rows, stats)
    requests = [r for r in rows if r["row_kind"] == "request"]
    typed = parse_routine_lines(bad, UTC).records
    assert typed.num_rows > 100
    requests += typed.select(["arrival_ms", "completion_ms", "total_time_ms"]).to_pylist()
    assert requests and all(0 <= r["arrival_ms"] <= r["completion_ms"] < 4_102_444_800_000 for r in requests)
    assert all(0 <= r["total_time_ms"] <= 2_592_000_000 for r in requests)
    assert {"arrival time out of range", "line time out of range", "field totalTimeMs out of range"} <= set(
        reasons
    )
    assert {"field totalTime out of range", "text-era field totalTime is not finite"} <= set(reasons)


def test_a_completed_join_group_without_its_response_is_quarantined(lines: list[str]) -> None:
    line = next(x for x in lines if '"requestApiKeyName":"JOIN_GROUP"' in x)
    start = line.index(',"response":')
    end = line.index(',"connection":')
    out = parse_line(line[:start] + line[end:], UTC)
    assert out.kind is LineKind.QUARANTINE and out.reason and "missing response" in out.reason


def _boundary_values(column_type: str) -> list[Any]:
    if column_type in ("int", "bigint", "double"):
        return [*BOUNDARY_NUMBERS, float("inf"), True, "1", None]
    if column_type == "string":
        return ["", "\x00", "x" * 10_000, 1, None]
    if column_type == "boolean":
        return [True, False, 0, 1, "true", None]
    return []


def test_every_boundary_value_of_every_typed_column_converts_or_is_refused(lines: list[str]) -> None:
    """The conform check and the real Arrow conversion agree, value by value and column by column: a
    value the check accepts always converts, one it refuses would have failed the conversion (or is a
    silent coercion we do not allow, like a bool in an int column)."""
    record = dict(parse_line(lines[0], UTC).record or {})
    record.update(row_kind="request", source_file="f", line_no=1, broker_id="b")
    tried = 0
    for column in REQUESTS.columns:
        check = value_check(column.type)
        for value in _boundary_values(column.type):
            row = {**record, column.name: value}
            problem = check(value)
            try:
                pa.RecordBatch.from_pylist([row], schema=SCHEMA)
                converts = True
            except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError):
                converts = False
            tried += 1
            if problem is None:
                assert converts, (column.name, value)
            elif converts:  # refused although Arrow would coerce it: only type strictness allows that
                assert not (type(value) is int and column.type in ("int", "bigint")), (column.name, value)
    assert tried > 200


def _readable_gzip_lines(path: Path) -> int:
    """The whole lines a gzip stream broken off half-way still gives (what precedes the break)."""
    data = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(path.read_bytes())
    return data.count(b"\n")


def test_damaged_files_are_accounted_for(lines: list[str], tmp_path: Path) -> None:
    counts = write_bad_files(tmp_path, lines[:40], long_line_mb=1)
    d = tmp_path / "broker-9"
    for name, expected in counts.items():
        rows, stats = _ingest_file(d / name)
        _check(rows, stats)
        if expected >= 0:
            assert stats["lines_read"] == expected, name
        else:  # the corrupt gzip: the lines before the break, and the rest as one quarantined line
            tail = [
                r
                for r in rows
                if r["row_kind"] == "quarantine" and "unreadable gzip" in r["quarantine_reason"]
            ]
            assert len(tail) == 1
            assert stats["lines_read"] == _readable_gzip_lines(d / name) + 1


def test_a_file_growing_or_rotated_while_it_is_read_loses_nothing(lines: list[str], tmp_path: Path) -> None:
    config = load_config((), (), str(tmp_path / "wh"))
    live = tmp_path / "broker-1" / "kafka-request.log"
    live.parent.mkdir(parents=True)
    live.write_text("\n".join(lines[:10]) + "\n")
    described = describe_file(str(live), config.input.broker_id_pattern)
    assert described is not None
    slices, _ = plan_slices([described], {})
    with live.open("a") as f:  # grows after planning: this run reads what was planned
        f.write("\n".join(lines[10:15]) + "\n")
    rows = list(parse_slices(slices, "UTC", NOW))
    stats = next(r for r in rows if r["row_kind"] == "stats")
    assert stats["lines_read"] == 10 and stats["end_line"] == 10
    # rotated away after planning: nothing read, nothing quarantined, no progress (read next run)
    rotated = live.with_name("kafka-request.log.2024-05-01-10")
    live.rename(rotated)
    rows = list(parse_slices(slices, "UTC", NOW))
    stats = next(r for r in rows if r["row_kind"] == "stats")
    assert stats["lines_read"] == 0 and not stats["error"] and stats["missing"] and len(rows) == 1
