"""Seeded mutations of real-format request-log lines and files, for fuzz tests.

Mutations work at three levels:

* **values** (JSON era: any value of the parsed body — header, request, response, metrics — replaced by a
  boundary number for Kafka's int8/16/32/64 types, a value of the wrong type, a very long or unicode/NUL
  string, or its key deleted; text era: a number token replaced by a boundary number, a token replaced);
* **lines** (truncated, a chunk cut out, an impossible timestamp, bytes flipped, NUL inserted);
* **derived values** (what the product computes from a line, not what it says: a timing field huge,
  negative, NaN/Infinity or larger than the line's timestamp allows, so the arrival time — completion
  less ``totalTimeMs`` — falls before the epoch; a timestamp at the edges of the accepted range) — see
  :func:`mutate_timing`;
* **files** (a gzip stream corrupt half-way, one very long line, binary garbage, an empty file, a file
  that grows while it is read, a symlink loop in the input tree) — see :func:`write_bad_files`.

Every mutated line is still one physical line (no newline inside), so a file of N mutated lines has N
lines and the ingest accounting can be checked exactly.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import re
from collections.abc import Iterator, Sequence
from datetime import UTC
from pathlib import Path
from typing import Any

from simulator.clients import ConsumerSpec, SimConfig, simulate
from simulator.log_render import complete_record, java_double, render_line

T0 = 1_714_557_600_000  # 2024-05-01T10:00:00Z

#: Boundary values of Kafka's integer types and values of the wrong type.
BOUNDARY_NUMBERS: tuple[int | float, ...] = (
    -1,
    0,
    127,
    128,
    -129,
    32767,
    32768,
    -32769,
    2**31 - 1,
    2**31,
    -(2**31) - 1,
    2**63 - 1,
    2**63,
    -(2**63) - 1,
    10**30,
    1.5e308,
    -1.5e308,
    0.5,
    float("nan"),
)
WRONG_TYPES: tuple[Any, ...] = (None, "", "1", True, False, [], {}, [1, "a"], {"a": 1})
STRINGS: tuple[str, ...] = ("\u00e9\u4e2d\U0001f600", "\x00", "a\x00b", "x" * 5000, "\u202e", "\\", '"')
#: Timing values whose derived arrival time is impossible (or on the edge of possible).
TIMING_VALUES: tuple[float, ...] = (
    9.2e18,
    -9.2e18,
    -1.0,
    -0.001,
    1e300,
    float("nan"),
    float("inf"),
    float("-inf"),
    2.0**53,
    2_592_000_000.0,  # the longest request the product accepts (30 days): kept
    2_592_000_001.0,
    1_714_557_600_001.0,  # the line's own epoch milliseconds and more: arrival before 1970
)
TIMING_FIELDS: tuple[str, ...] = (
    "totalTimeMs",
    "requestQueueTimeMs",
    "localTimeMs",
    "remoteTimeMs",
    "responseQueueTimeMs",
    "sendTimeMs",
    "throttleTimeMs",
)
#: Timestamps at and beyond the edges of what the product accepts (1970-01-01..2100-01-01 UTC).
EDGE_TIMESTAMPS: tuple[str, ...] = (
    "0001-01-01 00:00:00,000",
    "1969-12-31 23:59:59,999",
    "1970-01-01 00:00:00,000",
    "1970-01-01 00:00:05,000",
    "2099-12-31 23:59:59,999",
    "2100-01-01 00:00:00,000",
    "9999-12-31 23:59:59,999",
)
_NUMBER_TOKEN = re.compile(r"(?<=[=:])-?\d+(?=[,)\]}])")


def base_lines(seed: int = 0) -> list[str]:
    """Ordinary lines of every kept API in both eras (JSON 3.7, text 2.4)."""
    lines: list[str] = []
    for version in ("3.7", "2.4"):
        cfg = SimConfig(
            group_id=f"fuzz-{version}",
            topics={"t": 4},
            consumers=[
                ConsumerSpec("a", T0, session_timeout_ms=10_000, close_ms=T0 + 40_000),
                ConsumerSpec("b", T0 + 5, group_instance_id="fuzz-b", session_timeout_ms=10_000),
                ConsumerSpec("c", T0 + 20_000, session_timeout_ms=10_000),
            ],
            until_ms=T0 + 60_000,
            kafka_version=version,
        )
        for rec in simulate(cfg):
            fields = {k: v for k, v in rec.items() if not k.startswith("_")}
            full = complete_record(fields, kafka_version=version)
            lines.append(render_line(full, kafka_version=version, tz=UTC))
    return lines


def _json_paths(obj: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield (*path, k)
            yield from _json_paths(v, (*path, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield (*path, i)
            yield from _json_paths(v, (*path, i))


def _replacement(rng: random.Random) -> Any:
    pool = rng.randrange(3)
    if pool == 0:
        return rng.choice(BOUNDARY_NUMBERS)
    if pool == 1:
        return rng.choice(WRONG_TYPES)
    return rng.choice(STRINGS)


def mutate_value(line: str, rng: random.Random) -> str:
    """One value of the line changed (or deleted) at JSON-value level; text-era lines get a token
    changed."""
    start = line.find("Completed request:")
    if start < 0:
        return line
    start += len("Completed request:")
    if line.startswith("{", start):
        try:
            body, end = json.JSONDecoder().raw_decode(line, start)
        except ValueError:
            return line
        paths = list(_json_paths(body))
        if not paths:
            return line
        path = rng.choice(paths)
        parent = body
        for key in path[:-1]:
            parent = parent[key]
        if isinstance(parent, dict) and rng.random() < 0.2:
            del parent[path[-1]]
        else:
            parent[path[-1]] = _replacement(rng)
        text = json.dumps(body, separators=(",", ":"), ensure_ascii=rng.random() < 0.5, allow_nan=True)
        return line[:start] + text + line[end:]
    tokens = list(_NUMBER_TOKEN.finditer(line))
    if not tokens:
        return line
    m = rng.choice(tokens)
    value = rng.choice(BOUNDARY_NUMBERS) if rng.random() < 0.7 else rng.choice(STRINGS)
    text = value if isinstance(value, str) else str(value)
    return line[: m.start()] + text.replace("\n", " ") + line[m.end() :]


def mutate_line(line: str, rng: random.Random) -> str:
    """The line damaged as a whole (truncated, cut, bad timestamp, flipped bytes, NUL)."""
    kind = rng.randrange(5)
    n = len(line)
    if kind == 0:
        return line[: rng.randrange(n)]
    if kind == 1:
        a = rng.randrange(n)
        return line[:a] + line[min(n, a + rng.randrange(1, 200)) :]
    if kind == 2:
        bad = rng.choice(("2024-13-45 99:99:99,999", "0000-00-00 00:00:00,000", "9999-12-31 23:59:60,000"))
        return line.replace(line[1:24], bad, 1) if line.startswith("[") else bad + line
    if kind == 3:
        chars = list(line)
        for _ in range(rng.randint(1, 5)):
            i = rng.randrange(n)
            chars[i] = chr(rng.randrange(1, 0x2FF) if rng.random() < 0.9 else 0xFFFD)
        return "".join(chars).replace("\n", " ").replace("\r", " ")
    i = rng.randrange(n)
    return line[:i] + "\x00" + line[i:]


_TEXT_TIMING = re.compile(
    r"(?<=[;,])(totalTime|requestQueueTime|localTime|remoteTime|responseQueueTime|sendTime):(-?[\d.]+)"
)


def mutate_timing(line: str, rng: random.Random) -> str:
    """A derived value made impossible: a timing field set to one of :data:`TIMING_VALUES`, or the
    line's timestamp to one of :data:`EDGE_TIMESTAMPS`."""
    if rng.random() < 0.3 and line.startswith("["):
        return "[" + rng.choice(EDGE_TIMESTAMPS) + line[24:]
    value = rng.choice(TIMING_VALUES)
    start = line.find("Completed request:") + len("Completed request:")
    if line.startswith("{", start):
        try:
            body, end = json.JSONDecoder().raw_decode(line, start)
        except ValueError:
            return line
        body[rng.choice(TIMING_FIELDS)] = value
        return line[:start] + json.dumps(body, separators=(",", ":"), allow_nan=True) + line[end:]
    fields = list(_TEXT_TIMING.finditer(line))
    if not fields:
        return line
    m = rng.choice(fields)
    return line[: m.start(2)] + java_double(value) + line[m.end(2) :]


def mutated_lines(lines: Sequence[str], count: int, seed: int) -> list[str]:
    """``count`` lines: each a base line mutated at value level (1 in 2), line level (1 in 4) or
    derived-value level (1 in 4)."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        line = rng.choice(lines)
        pick = rng.random()
        if pick < 1 / 2:
            out.append(mutate_value(line, rng))
        elif pick < 3 / 4:
            out.append(mutate_line(line, rng))
        else:
            out.append(mutate_timing(line, rng))
    return [line.replace("\n", " ").replace("\r", " ") for line in out]


def write_bad_files(root: Path, lines: Sequence[str], *, long_line_mb: int = 50) -> dict[str, int]:
    """File-level damage under ``root/broker-9/``: returns file name → physical lines it holds (what the
    ingest must account for; the rest of a corrupt gzip counts as one line)."""
    d = root / "broker-9"
    d.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {}
    # a gzip stream that breaks off half-way: the lines before the break, then the unreadable rest
    data = gzip.compress(("\n".join(lines) + "\n").encode(), mtime=0)
    (d / "kafka-request.log.2024-05-01-08.gz").write_bytes(data[: len(data) // 2])
    counts["kafka-request.log.2024-05-01-08.gz"] = -1  # unknown until read: at least one
    # one very long line between ordinary ones
    long_line = lines[0][:200] + "x" * (long_line_mb * 1024 * 1024) + lines[0][200:]
    (d / "kafka-request.log.2024-05-01-07").write_text("\n".join([lines[1], long_line, lines[2]]) + "\n")
    counts["kafka-request.log.2024-05-01-07"] = 3
    # binary garbage with a log file's name
    garbage = bytes(random.Random(5).randrange(256) for _ in range(64 * 1024)).replace(b"\x1f\x8b", b"..")
    (d / "kafka-request.log.2024-05-01-06").write_bytes(garbage)
    counts["kafka-request.log.2024-05-01-06"] = garbage.count(b"\n") + (0 if garbage.endswith(b"\n") else 1)
    # an empty file
    (d / "kafka-request.log.2024-05-01-05").write_bytes(b"")
    counts["kafka-request.log.2024-05-01-05"] = 0
    # a symlink loop inside the input tree
    loop = d / "loop"
    if not loop.exists() and not loop.is_symlink():
        os.symlink(d, loop)
    return counts
