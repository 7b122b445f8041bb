"""Properties of the parser and renderer over generated input (hypothesis).

* Round trip: ``parse_line(render_line(r)) == r`` for generated records of every kept API, every
  version, both eras, Kafka 2.0 … 4.1, several broker zones and line layouts; and rendering the
  parsed record gives the same line back.
* Every REQUEST record matches the ``REQUESTS`` column types (Spark-ready python values).
* Corrupted lines (truncated, characters flipped / inserted / deleted, keys or fields dropped) never
  make ``parse_line`` raise; a line that still has a kept API's ``Completed request:`` header is
  REQUEST or QUARANTINE, never OTHER or OTHER_API.
"""

from __future__ import annotations

import re
import string
from datetime import UTC, date, datetime, tzinfo
from typing import Any
from zoneinfo import ZoneInfo

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from rebalance_replay.schemas.core import split_top_level
from rebalance_replay.schemas.tables import REQUESTS
from rebalance_replay.transforms.consumer_protocol import encode_assignment, encode_subscription
from rebalance_replay.transforms.kafka_protocol import MAX_API_VERSION, ApiKey, Errors
from rebalance_replay.transforms.request_log import LineKind, parse_line
from simulator.log_render import complete_record, era_of, max_text_era_version, render_line

KAFKA_VERSIONS = [
    "2.0",
    "2.1",
    "2.2",
    "2.3",
    "2.4",
    "2.5",
    "2.7",
    "2.8",
    "3.0",
    "3.5",
    "3.6",
    "3.7",
    "3.9.1",
    "4.0",
    "4.1",
]
ZONES: list[tzinfo] = [
    UTC,
    ZoneInfo("Europe/Berlin"),
    ZoneInfo("America/New_York"),
    ZoneInfo("Asia/Kolkata"),
    ZoneInfo("Australia/Lord_Howe"),
]
LAYOUTS = ["log4j", "strimzi", "dev"]
# Text-era values are unquoted: keep them on one line and away from the few truly ambiguous shapes
# (a value containing `},{` / `}]` or a later field name); commas, `=`, `}` and spaces stay in.
TEXT_ALPHABET = string.ascii_letters + string.digits + "-._ ,=}:/@"
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

i32 = st.integers(-(2**31), 2**31 - 1)
i64 = st.integers(-(2**63), 2**63 - 1)
errors = st.sampled_from([e.code for e in Errors]) | st.integers(-1, 130)
durations = st.integers(0, 20_000_000_000).map(lambda us: us / 1000)  # µs resolution, up to 2e7 ms
small_durations = st.integers(0, 5_000_000).map(lambda us: us / 1000)


def ids(era: str, min_size: int = 0, commas: bool = True) -> st.SearchStrategy[str]:
    if era == "json":
        return st.text(st.characters(blacklist_categories=("Cs",)), min_size=min_size, max_size=12)
    alphabet = TEXT_ALPHABET if commas else TEXT_ALPHABET.replace(",", "")
    return st.text(alphabet, min_size=min_size, max_size=12).filter(lambda s: s != "null" and s.strip() == s)


def nullable(s: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.none() | s


def payloads() -> st.SearchStrategy[bytes]:
    return (
        st.binary(max_size=24)
        | st.lists(st.text(string.ascii_lowercase, min_size=1, max_size=5), max_size=3).map(
            encode_subscription
        )
        | st.lists(st.tuples(st.just("t"), st.lists(st.integers(0, 9), max_size=3)), max_size=2).map(
            encode_assignment
        )
    )


@st.composite
def body_fields(draw: st.DrawFn, api: ApiKey, era: str) -> dict[str, Any]:
    s = ids(era)
    ns = nullable(s)
    f: dict[str, Any] = {"group_id": draw(s), "error_code": draw(errors)}
    if api is ApiKey.JOIN_GROUP:
        f.update(
            session_timeout_ms=draw(i32),
            rebalance_timeout_ms=draw(i32),
            member_id=draw(s),
            group_instance_id=draw(ns),
            protocol_type=draw(s),
            protocols=draw(st.lists(st.fixed_dictionaries({"name": s, "metadata": payloads()}), max_size=3)),
            reason=draw(ns),
            response_generation_id=draw(i32),
            response_protocol_type=draw(ns),
            response_protocol_name=draw(ns),
            response_leader=draw(s),
            response_skip_assignment=draw(st.booleans()),
            response_member_id=draw(s),
            response_members=draw(
                st.lists(
                    st.fixed_dictionaries({"member_id": s, "group_instance_id": ns, "metadata": payloads()}),
                    max_size=3,
                )
            ),
        )
    elif api is ApiKey.SYNC_GROUP:
        f.update(
            generation_id=draw(i32),
            member_id=draw(s),
            group_instance_id=draw(ns),
            protocol_type=draw(ns),
            protocol_name=draw(ns),
            assignments=draw(
                st.lists(st.fixed_dictionaries({"member_id": s, "assignment": payloads()}), max_size=3)
            ),
            response_protocol_type=draw(ns),
            response_protocol_name=draw(ns),
            response_assignment=draw(payloads()),
        )
    elif api is ApiKey.HEARTBEAT:
        f.update(generation_id=draw(i32), member_id=draw(s), group_instance_id=draw(ns))
    elif api is ApiKey.LEAVE_GROUP:
        f.update(
            member_id=draw(s),
            leave_members=draw(
                st.lists(
                    st.fixed_dictionaries({"member_id": s, "group_instance_id": ns, "reason": ns}), max_size=3
                )
            ),
            response_leave_members=draw(
                st.lists(
                    st.fixed_dictionaries({"member_id": s, "group_instance_id": ns, "error_code": errors}),
                    max_size=3,
                )
            ),
        )
    elif api is ApiKey.OFFSET_COMMIT:
        topic = ids(era, min_size=1)
        f.update(
            generation_id=draw(i32),
            member_id=draw(s),
            group_instance_id=draw(ns),
            commit_partitions=draw(
                st.lists(
                    st.fixed_dictionaries({"topic": topic, "partition": i32, "committed_offset": i64}),
                    max_size=4,
                )
            ),
            response_commit_partitions=draw(
                st.lists(
                    st.fixed_dictionaries({"topic": topic, "partition": i32, "error_code": errors}),
                    max_size=4,
                )
            ),
        )
    elif api is ApiKey.FIND_COORDINATOR:
        f.update(
            group_ids=draw(st.lists(s, min_size=1, max_size=3)),
            key_type=draw(st.sampled_from([0, 1])),
            response_coordinator_node_id=draw(i32),
        )
    elif api is ApiKey.DESCRIBE_GROUPS:
        f.update(
            group_ids=draw(st.lists(ids(era, min_size=1, commas=False), max_size=3)),
            response_group_state=draw(st.sampled_from(["Stable", "Empty", "Dead", "PreparingRebalance"])),
        )
    elif api is ApiKey.CONSUMER_GROUP_HEARTBEAT:
        f.update(
            member_id=draw(s),
            member_epoch=draw(i32),
            group_instance_id=draw(ns),
            rebalance_timeout_ms=draw(i32),
            response_member_id=draw(ns),
            response_member_epoch=draw(i32),
        )
    return f


@st.composite
def records(draw: st.DrawFn) -> tuple[str, tzinfo, str, dict[str, object]]:
    kv = draw(st.sampled_from(KAFKA_VERSIONS))
    era = era_of(kv)
    if era == "json":
        api = draw(st.sampled_from(list(ApiKey)))
        top = MAX_API_VERSION[api]
    else:
        api = draw(st.sampled_from([a for a in ApiKey if max_text_era_version(a, kv) is not None]))
        top = max_text_era_version(api, kv) or 0
    version = draw(st.integers(0, top))
    tz = draw(st.sampled_from(ZONES))
    s = ids(era)
    four = kv >= "4.0"
    ipv4 = st.tuples(*[st.integers(0, 255)] * 4).map(lambda t: ".".join(map(str, t)))
    ipv6 = st.just("0:0:0:0:0:0:0:1") | st.just("fe80:0:0:0:1:2:3:4")
    host = ipv4 | ipv6
    port = st.integers(1, 65535)
    index = st.integers(0, 10**6).map(str)
    if four:
        index = st.tuples(st.integers(0, 8), st.integers(0, 10**6)).map(lambda t: f"{t[0]}-{t[1]}")
    fields: dict[str, Any] = {
        "api_key": int(api),
        "api_version": version,
        "log_level": draw(st.sampled_from(["DEBUG", "INFO"])),
        "correlation_id": draw(i32),
        "client_id": draw(nullable(s) if era == "json" else s),
        "connection": f"{draw(host)}:{draw(port)}-{draw(host)}:{draw(port)}-{draw(index)}",
        "security_protocol": draw(st.sampled_from(["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"])),
        "principal": draw(
            st.sampled_from(
                ["User:ANONYMOUS", "User:alice", "User:CN=app.example.com,OU=Pay,O=Ex\\, Inc,C=DE"]
            )
        ),
        "listener": draw(st.sampled_from(["PLAINTEXT", "SSL", "EXTERNAL", "INTERNAL_SASL"])),
        "client_software_name": draw(st.sampled_from(["apache-kafka-java", "librdkafka", "unknown"])),
        "client_software_version": draw(st.sampled_from(["2.5.0", "3.6.1", "unknown"])),
        "completion_time": draw(
            st.datetimes(datetime(2016, 1, 1), datetime(2035, 12, 31), timezones=st.just(UTC))
        ),
        "total_time_ms": draw(durations),
        "request_queue_time_ms": draw(small_durations),
        "local_time_ms": draw(small_durations),
        "remote_time_ms": draw(durations),
        "throttle_time_ms": draw(st.integers(0, 10_000)),
        "response_queue_time_ms": draw(small_durations),
        "send_time_ms": draw(small_durations),
        "temporary_memory_bytes": draw(nullable(st.integers(1, 10**9))),
        "message_conversions_time_ms": draw(nullable(small_durations)),
    }
    if era == "json":
        fields["is_forwarded"] = draw(st.booleans())
        fields["api_version_deprecated"] = draw(st.sampled_from([None, True]))
    fields.update(draw(body_fields(api, era)))
    if era == "json":  # bodies that were not computed ("" / null)
        drop = draw(st.sampled_from(["none"] * 8 + ["request", "response", "both"]))
        if drop in ("request", "both"):
            fields["group_id"] = None
            fields.pop("group_ids", None)
        if drop in ("response", "both"):
            for k in list(fields):
                if k == "error_code" or k.startswith("response_"):
                    fields[k] = None
    record = complete_record(fields, kafka_version=kv)
    local = record["completion_time"].astimezone(tz)  # type: ignore[union-attr]
    assume(local.fold == 0)  # the second of two identical local times cannot be told from the first
    layout = draw(st.sampled_from(LAYOUTS))
    return kv, tz, layout, record


# --------------------------------------------------------------------------------------------------
# Schema conformance of records
# --------------------------------------------------------------------------------------------------


def _check_value(typ: str, v: object, where: str) -> None:
    if v is None:
        return
    if typ == "string":
        assert type(v) is str, where
    elif typ == "int":
        assert type(v) is int and -(2**31) <= v < 2**31, where
    elif typ == "bigint":
        assert type(v) is int and -(2**63) <= v < 2**63, where
    elif typ == "double":
        assert type(v) is float, where
    elif typ == "boolean":
        assert type(v) is bool, where
    elif typ == "binary":
        assert type(v) is bytes, where
    elif typ == "timestamp":
        assert isinstance(v, datetime) and v.utcoffset() is not None and v.utcoffset().total_seconds() == 0, (
            where
        )
    elif typ == "date":
        assert type(v) is date, where
    elif typ.startswith("array<"):
        assert type(v) is list, where
        for i, e in enumerate(v):
            _check_value(typ[6:-1], e, f"{where}[{i}]")
    elif typ.startswith("struct<"):
        assert type(v) is dict, where
        fields = [p.split(":", 1) for p in split_top_level(typ[7:-1])]
        assert list(v) == [n for n, _ in fields], where
        for n, t in fields:
            _check_value(t, v[n], f"{where}.{n}")
    else:  # pragma: no cover
        raise AssertionError(f"unknown type {typ}")


def assert_matches_schema(record: dict[str, object]) -> None:
    for col in REQUESTS.columns:
        if col.name in ("source_file", "line_no", "broker_id"):
            continue
        v = record[col.name]
        if not col.nullable:
            assert v is not None, col.name
        _check_value(col.type, v, col.name)


# --------------------------------------------------------------------------------------------------
# Round trip
# --------------------------------------------------------------------------------------------------


@SETTINGS
@given(records())
def test_render_then_parse_gives_the_record_back(case: tuple[str, tzinfo, str, dict[str, object]]) -> None:
    kv, tz, layout, record = case
    line = render_line(record, kafka_version=kv, tz=tz, layout=layout)
    assert "\n" not in line
    out = parse_line(line, tz)
    assert out.kind is LineKind.REQUEST, (out.reason, line)
    assert out.record == record, line
    assert out.api_name == record["api_name"] and out.log_date == record["log_date"]
    assert_matches_schema(out.record)
    assert render_line(out.record, kafka_version=kv, tz=tz, layout=layout) == line


# --------------------------------------------------------------------------------------------------
# Corruption
# --------------------------------------------------------------------------------------------------

_JSON_PAIR = re.compile(r'"\w+":(?:"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:E-?\d+)?|true|false|null),?')
_TEXT_PAIR = re.compile(r"\b[a-z_]+=[^,{}\[\]]*,?")
_KINDS = set(LineKind)


def _header_end(line: str) -> int:
    """End of the part that names the API (after it, corruption cannot turn a kept API into another)."""
    k = line.find('"requestApiKeyName":')
    if k >= 0:
        return line.index("}", k) + 1
    return line.index(") -- ") + 5


@st.composite
def corrupted(draw: st.DrawFn) -> tuple[str, tzinfo, bool]:
    kv, tz, layout, record = draw(records())
    line = render_line(record, kafka_version=kv, tz=tz, layout=layout)
    marker = line.index("Completed request:")
    header_end = _header_end(line)
    op = draw(st.sampled_from(["truncate", "flip", "insert", "delete", "drop", "drop", "multi"]))
    touched: list[int] = []

    def pos() -> int:
        p = draw(st.integers(0, len(line) - 1))
        touched.append(p)
        return p

    ch = st.characters(blacklist_categories=("Cs",)) | st.sampled_from(list('{}[],:="\\ ()'))
    if op == "truncate":
        p = pos()
        line = line[:p]
    elif op == "flip":
        p = pos()
        line = line[:p] + draw(ch) + line[p + 1 :]
    elif op == "insert":
        p = pos()
        line = line[:p] + draw(ch) + line[p:]
    elif op == "delete":
        p = pos()
        line = line[:p] + line[p + 1 :]
    elif op == "drop":
        pairs = list((_JSON_PAIR if '"requestHeader"' in line else _TEXT_PAIR).finditer(line, marker))
        if pairs:
            m = draw(st.sampled_from(pairs))
            touched.append(m.start())
            line = line[: m.start()] + line[m.end() :]
    else:
        for _ in range(draw(st.integers(2, 6))):
            p = draw(st.integers(0, max(0, len(line) - 1)))
            touched.append(p)
            line = line[:p] + draw(ch) + line[p + 1 :]
    # the kept API is still identifiable when the marker and the header were not touched
    header_intact = (all(p < marker or p >= header_end for p in touched) and op != "drop") or (
        op == "drop" and all(p >= header_end for p in touched)
    )
    return line, tz, header_intact


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corrupted())
def test_corrupted_lines_never_raise_and_never_vanish(case: tuple[str, tzinfo, bool]) -> None:
    line, tz, header_intact = case
    out = parse_line(line, tz)
    assert out.kind in _KINDS
    if out.kind is LineKind.QUARANTINE:
        assert out.reason and "\n" not in out.reason and "\r" not in out.reason
        assert not out.reason.startswith("unexpected parse error"), out.reason
    if out.kind is LineKind.REQUEST:
        assert out.record is not None
        assert_matches_schema(out.record)
    if "Completed request:" in line:
        assert out.kind is not LineKind.OTHER
        if header_intact:
            assert out.kind in (LineKind.REQUEST, LineKind.QUARANTINE), (out, line)
    else:
        assert out.kind is LineKind.OTHER


@settings(max_examples=300, deadline=None)
@given(
    prefix=st.sampled_from(
        ["[2024-05-01 10:00:00,000] DEBUG ", "", "garbage ", "2024-05-01 10:00:00,000 INFO "]
    ),
    body=st.text(max_size=80),
    suffix=st.sampled_from([" (kafka.request.logger)", "", " (kafka.request.logger:1) [t]", ")"]),
    start=st.sampled_from(
        ["", "{", "RequestHeader(", '{"isForwarded":false,"requestHeader":{"requestApiKey":1']
    ),
)
def test_arbitrary_request_bodies_never_raise(prefix: str, body: str, suffix: str, start: str) -> None:
    line = f"{prefix}Completed request:{start}{body}{suffix}"
    out = parse_line(line, UTC)
    assert out.kind in (LineKind.REQUEST, LineKind.QUARANTINE, LineKind.OTHER_API)
    if out.kind is LineKind.QUARANTINE:
        assert not (out.reason or "").startswith("unexpected parse error"), out.reason
