"""A corpus of request-log lines for comparing parsers line by line: every ``Completed request`` line the
test suite spells out, and mutations aimed at the routine lines (heartbeats, offset commits) — what the
columnar parser (``transforms.columnar_log``) must refuse or type exactly as ``parse_line`` does.
Used by ``tests/unit/test_columnar_log.py`` (line by line) and ``tests/integration/test_columnar_ingest.py``
(whole ingests)."""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
#: files whose string constants are not log lines to take (this one builds lines from others)
SKIP_FILES = frozenset({"log_corpus.py"})


def suite_lines() -> list[str]:
    """Every string constant in the test suite that holds a ``Completed request:`` line."""
    out: list[str] = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        if path.name in SKIP_FILES:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and "Completed request:" in node.value
            ):
                out.extend(line for line in node.value.split("\n") if line)
    return out


def set_key(line: str, key: str, value: str, count: int = 1) -> str:
    """Replace the JSON value of the first ``count`` occurrences of ``"key":`` (scalar values only)."""
    return re.sub(
        rf'"{key}":(?:"(?:[^"\\]|\\.)*"|[^,}}\]]*)', lambda m: f'"{key}":{value}', line, count=count
    )


def aimed_lines(lines: list[str]) -> Iterator[str]:
    """Mutations of routine lines (heartbeats, offset commits) aimed at exactly what the columnar parser
    (``transforms.columnar_log``) must refuse or type the same way as ``parse_line``."""
    natives = [ln for ln in lines if ('"requestApiKey":12,' in ln or '"requestApiKey":8,' in ln)]
    assert natives, "the corpus has no heartbeat / offset commit lines"
    hb = next(ln for ln in natives if '"HEARTBEAT"' in ln)
    oc = next(ln for ln in natives if '"OFFSET_COMMIT"' in ln)
    for base in (hb, oc):
        yield base
        for key, values in {
            "generationId": ["1.0", '"3"', "2147483648", "-2147483649", "null", "true", "{}", "[]"],
            "groupId": ["5", "null", "{}", '""', '"g\\u00e9"', '"g\\/x"', '"gé中😀"', '"a\\"b"', '"\\\\"'],
            "memberId": ["null", '""', "7", '"m\\nx"'],
            "groupInstanceId": ['"static-1"', "1"],
            "errorCode": ["27", "27.0", '"27"', "-32769", "2147483648", "null", "79", "9999"],
            "correlationId": ["2147483648", "-1", '"1"', "null"],
            "clientId": ["null", "5", '""'],
            "requestApiVersion": ["99", "-1", "1", "0", "null"],
            "requestApiKeyName": ['"JOIN_GROUP"', "null"],
            "totalTimeMs": [
                "NaN",
                "Infinity",
                "-Infinity",
                "1e300",
                "5",
                '"1"',
                "null",
                "0.5",
                "1.5",
                "2.5",
                "1.0E7",
            ],
            "requestQueueTimeMs": ["NaN", "1", "null", "1.0E-5"],
            "throttleTimeMs": ["9223372036854775808", "1.5", "-1", "null"],
            "isForwarded": ['"no"', "true", "null"],
            "connection": ['"a-b"', '"a:1-b:2-3-4"', '"a-b-c-d-e"', "null", "5", '""'],
            "securityProtocol": ["null", "1"],
            "principal": ['"User:CN=a,OU=b"'],
            "softwareName": ["null", "[]"],
            "committedOffset": ["9223372036854775808", "-1", "1.5", "null"],
            "partitionIndex": ["2147483648", "null", '"0"'],
            "name": ["null", "5"],
        }.items():
            for v in values:
                if f'"{key}":' in base:
                    yield set_key(base, key, v)
                    yield set_key(base, key, v, count=0)
        b = base.index("Completed request:") + len("Completed request:")
        head, body, tail = base[:b], base[b : -len(" (kafka.request.logger)")], " (kafka.request.logger)"
        top = json.loads(body)
        # structure: missing / null / empty / reordered / extra / repeated members, whitespace
        for k in list(top):
            yield head + json.dumps({x: y for x, y in top.items() if x != k}, separators=(",", ":")) + tail
            yield head + json.dumps({**top, k: None}, separators=(",", ":")) + tail
        for k in ("request", "response"):
            yield head + json.dumps({**top, k: ""}, separators=(",", ":")) + tail
            yield head + json.dumps({**top, k: {}}, separators=(",", ":")) + tail
            yield head + json.dumps({**top, k: []}, separators=(",", ":")) + tail
            yield head + json.dumps({**top, k: {**top[k], "extra": 1}}, separators=(",", ":")) + tail
            first = {x: (None if i == 0 else y) for i, (x, y) in enumerate(top[k].items())}
            yield head + json.dumps({**top, k: first}, separators=(",", ":")) + tail
        yield head + json.dumps(dict(reversed(list(top.items()))), separators=(",", ":")) + tail
        yield head + json.dumps(top) + tail  # default separators: whitespace
        yield (
            head
            + json.dumps(top, separators=(",", ":"), ensure_ascii=True).replace("User", "\\u0055ser")
            + tail
        )
        yield head + body.replace('"request":', '"request":{"groupId":"dup"},"request":', 1) + tail
        yield head + body + tail + "\r"
        yield head + body + tail + " "
        yield head + body + " (kafka.request.logger:275)"
        yield head + body + tail + " [thread-1]"
        yield head + body + "  " + tail[1:]
        yield head + body + " " + tail
        yield head + body
        yield head + body[:-1] + tail
        yield head + body + "}" + tail
        hdr = top["requestHeader"]
        for extra in ({"requestApiVersionDeprecated": True}, {"requestApiVersionDeprecated": "yes"}):
            yield head + json.dumps({**top, "requestHeader": {**hdr, **extra}}, separators=(",", ":")) + tail
        for extra2 in (
            {"temporaryMemoryBytes": 5, "messageConversionsTime": 0.5},
            {"temporaryMemoryBytes": 0.5},
        ):
            yield head + json.dumps({**top, **extra2}, separators=(",", ":")) + tail
        # prefix: levels, dates, shapes, DST gap and overlap (in Europe/Berlin)
        for prefix in (
            "[2024-05-01 10:00:03,456] INFO ",
            "[2024-05-01 10:00:03,456] WARN ",
            "[2024-05-01 10:00:03,456] TRACE ",
            "[2024-02-30 10:00:03,456] DEBUG ",
            "[2024-02-29 23:59:59,999] DEBUG ",
            "[1899-12-31 23:59:59,999] DEBUG ",
            "[1900-01-01 00:00:00,000] DEBUG ",
            "[1969-12-31 23:59:59,999] DEBUG ",
            "[2099-12-31 23:59:59,999] DEBUG ",
            "[2024-13-01 10:00:03,456] DEBUG ",
            "[2024-05-01 24:00:03,456] DEBUG ",
            "[2024-05-01 10:60:03,456] DEBUG ",
            "[2024-05-01 10:00:60,456] DEBUG ",
            "[2024-05-01T10:00:03.456] DEBUG ",
            "2024-05-01 10:00:03,456 DEBUG ",
            "[2024-05-01 10:00:03,456]  DEBUG ",
            "[2024-03-31 02:30:00,000] DEBUG ",
            "[2024-03-31 01:59:59,999] DEBUG ",
            "[2024-03-31 03:00:00,000] DEBUG ",
            "[2024-10-27 02:30:00,000] DEBUG ",
            "[2024-10-27 01:59:59,999] DEBUG ",
            "[2024-10-27 03:00:00,000] DEBUG ",
            "x [2024-05-01 10:00:03,456] DEBUG ",
        ):
            yield prefix + "Completed request:" + body + tail
    # offset commits: topics and partitions of every shape
    b = oc.index("Completed request:") + len("Completed request:")
    head, body, tail = oc[:b], oc[b : -len(" (kafka.request.logger)")], " (kafka.request.logger)"
    top = json.loads(body)
    req, resp = top["request"], top["response"]
    variants: list[tuple[dict[str, Any], dict[str, Any]]] = [
        ({**req, "topics": None}, resp),
        ({**req, "topics": []}, {**resp, "topics": []}),
        ({**req, "topics": [None]}, resp),
        ({**req, "topics": [{"name": "t", "partitions": None}, {"name": "u", "partitions": []}]}, resp),
        ({**req, "topics": [{"name": "t", "partitions": [None]}]}, resp),
        (
            {**req, "topics": [{"name": None, "partitions": [{"partitionIndex": 0, "committedOffset": 5}]}]},
            resp,
        ),
        (
            {**req, "topics": [{"topicId": "r3IRhpJiTnOM9i0B4tRT5g", "partitions": [{"partitionIndex": 1}]}]},
            {"throttleTimeMs": 0, "topics": [{"topicId": "r3IRhpJiTnOM9i0B4tRT5g", "partitions": []}]},
        ),
        (req, {**resp, "topics": None}),
        (
            req,
            {
                "throttleTimeMs": 0,
                "topics": [
                    {"name": "t", "partitions": [{"partitionIndex": 0, "errorCode": 0}]},
                    {"name": "u", "partitions": [{"partitionIndex": 1, "errorCode": None}]},
                    {"name": "v", "partitions": [{"partitionIndex": 2, "errorCode": 22}]},
                    {"name": "w", "partitions": [{"partitionIndex": 3, "errorCode": 25}, None]},
                ],
            },
        ),
        (
            req,
            {
                "throttleTimeMs": 0,
                "topics": [{"name": "t", "partitions": [{"partitionIndex": 0, "errorCode": 9999}]}],
            },
        ),
        # two different partition errors: the row's error_code is the first non-zero one (22), not the last
        (
            req,
            {
                "throttleTimeMs": 0,
                "topics": [
                    {"name": "t", "partitions": [{"partitionIndex": 0, "errorCode": 0}]},
                    {"name": "u", "partitions": [{"partitionIndex": 1, "errorCode": 22}]},
                    {"name": "v", "partitions": [{"partitionIndex": 2, "errorCode": 25}]},
                ],
            },
        ),
        # the same within one topic, the later error first in partition number
        (
            req,
            {
                "throttleTimeMs": 0,
                "topics": [
                    {
                        "name": "t",
                        "partitions": [
                            {"partitionIndex": 3, "errorCode": 27},
                            {"partitionIndex": 1, "errorCode": 0},
                            {"partitionIndex": 0, "errorCode": 22},
                        ],
                    }
                ],
            },
        ),
    ]
    gen = req.get("generationIdOrMemberEpoch", req.get("generationId"))
    variants.append(({"groupId": req["groupId"], "generationId": gen, **req}, resp))
    variants.append(({"groupId": req["groupId"], "generationIdOrMemberEpoch": None, "generationId": 4}, resp))
    variants.append(({"groupId": req["groupId"], "generationIdOrMemberEpoch": 4}, resp))
    variants.append(({"groupId": req["groupId"], "generationId": 4}, resp))
    for r1, r2 in variants:
        for ver in (top["requestHeader"]["requestApiVersion"], 6, 9, 10):
            hdr = {**top["requestHeader"], "requestApiVersion": ver}
            yield (
                head
                + json.dumps(
                    {**top, "requestHeader": hdr, "request": r1, "response": r2}, separators=(",", ":")
                )
                + tail
            )


def same_value(a: Any, b: Any) -> bool:
    """Equal values of the same Python type, NaN equal to NaN, lists and dicts compared member by member."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    return bool(a == b and type(a) is type(b))
