"""The columnar parser of routine lines against ``parse_line``, line by line: every line it types must
give exactly the record ``parse_line`` gives (same columns, same values, same Python types), on the whole
corpus of ``tests/log_corpus.py`` (the suite's lines, the fuzzers' base and mutated lines, mutations aimed
at the columnar path), the bundled samples and a rendered simulator log, in UTC and in a zone with DST.
And it is not vacuous: the broker's own heartbeats and commits are typed, and a refused line does not
stop its neighbours from being typed."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from rebalance_replay.transforms.columnar_log import parse_routine_lines
from rebalance_replay.transforms.request_log import RECORD_COLUMNS, LineKind, parse_line
from simulator.mutations import base_lines, mutated_lines
from tests.log_corpus import aimed_lines, same_value, set_key, suite_lines

ROOT = Path(__file__).resolve().parents[2]
ZONES = ("UTC", "Europe/Berlin")


def _sample_lines() -> list[str]:
    out: list[str] = []
    for path in sorted((ROOT / "samples" / "logs").rglob("*")):
        if path.is_file():
            raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
            out.extend(raw.decode("utf-8", errors="replace").splitlines())
    return out


@pytest.fixture(scope="module")
def corpus() -> list[str]:
    base = base_lines()
    found = suite_lines()
    lines = [
        *base,
        *found,
        *(ln for s in (1, 2, 3) for ln in mutated_lines(base, 1500, s)),
        *aimed_lines(base + found),
        *_sample_lines(),
    ]
    return [ln for ln in lines if isinstance(ln, str)]


def _check(lines: list[str], zone: str, block: int = 4096) -> int:
    """Type ``lines`` in blocks; every typed line equals parse_line's record. Returns how many were typed."""
    tz = ZoneInfo(zone)
    typed = 0
    for start in range(0, len(lines), block):
        chunk = lines[start : start + block]
        rows = parse_routine_lines(chunk, tz)
        assert list(rows.positions) == sorted(set(rows.positions.tolist()))
        for pos, record in zip(rows.positions.tolist(), rows.records.to_pylist(), strict=True):
            expected = parse_line(chunk[pos], tz)
            assert expected.kind is LineKind.REQUEST, (chunk[pos], expected.reason)
            assert expected.record is not None
            for column in RECORD_COLUMNS:
                assert same_value(expected.record[column], record[column]), (
                    column,
                    expected.record[column],
                    record[column],
                    chunk[pos],
                )
        typed += len(rows.positions)
    return typed


@pytest.mark.parametrize("zone", ZONES)
def test_every_typed_line_of_the_corpus_is_what_parse_line_gives(corpus: list[str], zone: str) -> None:
    typed = _check(corpus, zone)
    assert typed > 1000  # not vacuous: the corpus holds thousands of routine lines
    assert typed < len(corpus) // 2  # and most of it is not routine, or is malformed


@pytest.mark.parametrize(
    # a second time zone parses every line of the corpus alone once more: the slow tier
    "zone",
    [z if k == 0 else pytest.param(z, marks=pytest.mark.slow) for k, z in enumerate(ZONES)],
)
def test_each_line_alone_gives_the_same_answer(corpus: list[str], zone: str) -> None:
    """Blocks of one line: no neighbour can help or hurt (the bisection's base case)."""
    routine = [ln for ln in corpus if '"requestApiKey":12,' in ln or '"requestApiKey":8,' in ln]
    assert _check(routine[:3000], zone, block=1) > 300


def test_the_brokers_own_routine_lines_are_all_typed() -> None:
    lines = [ln for ln in base_lines() if '"requestApiKey":12,' in ln or '"requestApiKey":8,' in ln]
    assert len(lines) > 50
    rows = parse_routine_lines(lines, ZoneInfo("UTC"))
    assert len(rows.positions) == len(lines)


def _commit_answer(partitions: list[tuple[str, int, int]]) -> str:
    """A broker's OffsetCommit line whose response carries ``partitions`` (topic, partition, errorCode) in
    that order."""
    oc = next(ln for ln in base_lines() if '"requestApiKey":8,' in ln)
    head, _, rest = oc.partition("Completed request:")
    body, tail = rest[: -len(" (kafka.request.logger)")], " (kafka.request.logger)"
    top = json.loads(body)
    topics: dict[str, list[dict[str, int]]] = {}
    for topic, partition, code in partitions:
        topics.setdefault(topic, []).append({"partitionIndex": partition, "errorCode": code})
    top["response"] = {
        "throttleTimeMs": 0,
        "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
    }
    return head + "Completed request:" + json.dumps(top, separators=(",", ":")) + tail


@pytest.mark.parametrize(
    ("partitions", "first"),
    [
        ([("t", 0, 0), ("u", 1, 22), ("v", 2, 25)], "ILLEGAL_GENERATION"),
        ([("v", 2, 25), ("u", 1, 22), ("t", 0, 0)], "UNKNOWN_MEMBER_ID"),
        ([("t", 3, 27), ("t", 1, 0), ("t", 0, 22)], "REBALANCE_IN_PROGRESS"),
        ([("t", 0, 0), ("t", 1, 0)], "NONE"),
    ],
)
def test_a_commit_answer_with_several_partition_errors_takes_the_first(
    partitions: list[tuple[str, int, int]], first: str
) -> None:
    """An OffsetCommit response has no top-level error: the row's ``error_code`` is its first non-zero
    partition error in response order (what the client's commit handler acts on first), in both parsers;
    every partition's own error is kept, in order."""
    line = _commit_answer(partitions)
    utc = ZoneInfo("UTC")
    expected = parse_line(line, utc).record
    assert expected is not None
    rows = parse_routine_lines([line], utc)
    assert rows.positions.tolist() == [0]
    (record,) = rows.records.to_pylist()
    for parsed in (expected, record):
        assert parsed["error_name"] == first
        assert [
            (p["topic"], p["partition"], p["error_code"]) for p in parsed["response_commit_partitions"]
        ] == (partitions)


def test_a_refused_line_leaves_its_neighbours_typed() -> None:
    good = [ln for ln in base_lines() if '"requestApiKey":12,' in ln][:64]
    bad = set_key(good[0], "generationId", '"3"')  # a string where Kafka writes an int32
    lines = [*good[:10], bad, *good[10:]]
    rows = parse_routine_lines(lines, ZoneInfo("UTC"))
    assert 10 not in rows.positions.tolist()
    assert len(rows.positions) == len(good)
    assert parse_line(bad, ZoneInfo("UTC")).kind is LineKind.QUARANTINE


def test_random_numbers_in_every_routine_field() -> None:
    """Values drawn at random, field by field against the Kafka schema type (and past it): numbers of
    every size and form, in the timing fields and the int32/int64 fields."""
    rng = random.Random(13)
    base = [ln for ln in base_lines() if '"requestApiKey":12,' in ln or '"requestApiKey":8,' in ln]
    fields = {
        "totalTimeMs": "float",
        "requestQueueTimeMs": "float",
        "localTimeMs": "float",
        "sendTimeMs": "float",
        "generationId": "int",
        "correlationId": "int",
        "errorCode": "int",
        "partitionIndex": "int",
        "committedOffset": "int",
        "throttleTimeMs": "int",
    }
    lines = []
    for _ in range(3000):
        line = rng.choice(base)
        key, kind = rng.choice(list(fields.items()))
        if f'"{key}":' not in line:
            continue
        if kind == "float":
            value = rng.choice(
                [
                    repr(rng.uniform(0, 10 ** rng.randint(0, 18))),
                    f"{rng.uniform(0, 1000):.{rng.randint(0, 17)}f}",
                    f"{rng.uniform(0, 10):.{rng.randint(1, 9)}f}E{rng.randint(-30, 30)}",
                    str(rng.randint(-(2**63), 2**63)),
                    f"{rng.randint(0, 10**6)}.5",
                ]
            )
        else:
            bound = 2 ** rng.choice([15, 32, 64])
            value = str(rng.randint(-bound, bound))
        lines.append(set_key(line, key, value))
    for zone in ZONES:
        assert _check(lines, zone) > 1000


@pytest.mark.parametrize("raw", ["\t", "\x01", "\x7f", "\\u0041", "é", "中"])
def test_characters_inside_a_string(raw: str) -> None:
    """A raw control character (Python's JSON refuses it), an escape (the raw bodies could not be cut by
    text) or a non-ASCII character in a member id: typed exactly as parse_line types it, or not at all."""
    line = next(ln for ln in base_lines() if '"requestApiKey":12,' in ln and '"memberId":"' in ln)
    changed = line.replace('"memberId":"', '"memberId":"x' + raw, 1)
    rows = parse_routine_lines([changed], ZoneInfo("UTC"))
    expected = parse_line(changed, ZoneInfo("UTC"))
    if raw in ("\t", "\x01", "\x7f", "\\u0041"):
        assert not len(rows.positions)
    else:
        assert rows.positions.tolist() == [0]
        assert expected.record is not None
        assert rows.records.to_pylist()[0]["member_id"] == expected.record["member_id"]
