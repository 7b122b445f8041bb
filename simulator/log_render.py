"""Render request records back into real-format ``kafka.request.logger`` lines (the inverse of
:mod:`rebalance_replay.transforms.request_log`), to build the bundled sample log and test inputs.

A line is written the way the reference says a given Kafka release writes it:

* Kafka < 2.8 → text era: ``RequestHeader(…) -- {Struct.toString},response:{…} from connection …;
  totalTime:…``, hand-written schema names up to 2.2, generated snake_case names from 2.3,
  ``_tagged_fields={}`` closing every struct of a flexible version, ByteBuffers as
  ``java.nio.HeapByteBuffer[pos=0 lim=N cap=N]``, ``clientInformation`` from 2.5.
* Kafka ≥ 2.8 → JSON era: compact JSON with Kafka's key order, standard base64 bytes,
  ``Double.toString`` numbers (``0.0``, ``3005.123``, ``1.0E7``), OffsetCommit
  ``generationIdOrMemberEpoch`` from 3.6, ``requestApiVersionDeprecated`` from 3.7, ``""`` for a body
  that was not computed (``null`` from 4.1).

Body fields that are not record columns (response ``throttleTimeMs``, FindCoordinator host/port,
DescribeGroups member details, …) get fixed plausible defaults.

Round trip: for a record ``r`` with a consistent set of fields for its API version,
``parse_line(render_line(complete_record(r, …), …), tz).record == complete_record(r, …)``.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from decimal import Decimal
from typing import Any

from rebalance_replay.transforms.kafka_protocol import KNOWN_API_CODES, ApiKey, Errors
from rebalance_replay.transforms.kafka_version import parse_kafka_version
from rebalance_replay.transforms.request_log import (
    FLEXIBLE_FROM,
    MESSAGE_SPECS,
    RECORD_COLUMNS,
    TEXT_SPECS,
    FieldSpec,
    TextStruct,
    split_connection,
)

__all__ = [
    "LAYOUTS",
    "complete_record",
    "era_of",
    "format_timestamp",
    "java_double",
    "kafka_version_tuple",
    "max_text_era_version",
    "render_line",
    "render_other_api_line",
    "render_other_logger_line",
    "render_request_body",
    "render_response_body",
]

#: Line layouts: Apache's ``[%d] %p %m (%c)``, Strimzi's ``%d{ISO8601} %p %m (%c) [%t]`` and a dev
#: pattern with ``(%c:%L)``.
LAYOUTS = ("log4j", "strimzi", "dev")
_DEFAULT_THREAD = "data-plane-kafka-network-thread-0-ListenerName(PLAINTEXT)-PLAINTEXT-1"

#: API versions marked deprecated in the 3.7–3.9 message specs (``requestApiVersionDeprecated``).
DEPRECATED_VERSIONS: dict[ApiKey, frozenset[int]] = {
    ApiKey.JOIN_GROUP: frozenset({0, 1}),
    ApiKey.OFFSET_COMMIT: frozenset({0, 1}),
    ApiKey.FIND_COORDINATOR: frozenset({0}),
}

_J, _SG, _HB, _LG, _OC, _FC, _DG = (
    ApiKey.JOIN_GROUP,
    ApiKey.SYNC_GROUP,
    ApiKey.HEARTBEAT,
    ApiKey.LEAVE_GROUP,
    ApiKey.OFFSET_COMMIT,
    ApiKey.FIND_COORDINATOR,
    ApiKey.DESCRIBE_GROUPS,
)
#: Highest group-API version per text-era Kafka release (from the KIPs that added each version:
#: KIP-320/211 OffsetCommit v5-6 in 2.1, KIP-394 JoinGroup v4 in 2.2, KIP-345/430 in 2.3-2.4,
#: KIP-482 flexible versions in 2.4, KIP-559 in 2.5). Used to refuse impossible text-era lines.
TEXT_ERA_MAX_VERSIONS: tuple[tuple[tuple[int, int, int], dict[ApiKey, int]], ...] = (
    ((1, 0, 0), {_J: 2, _SG: 1, _HB: 1, _LG: 1, _OC: 3, _FC: 1, _DG: 1}),
    ((2, 0, 0), {_J: 3, _SG: 2, _HB: 2, _LG: 2, _OC: 4, _FC: 2, _DG: 2}),
    ((2, 1, 0), {_J: 3, _SG: 2, _HB: 2, _LG: 2, _OC: 6, _FC: 2, _DG: 2}),
    ((2, 2, 0), {_J: 4, _SG: 2, _HB: 2, _LG: 2, _OC: 6, _FC: 2, _DG: 2}),
    ((2, 3, 0), {_J: 5, _SG: 3, _HB: 3, _LG: 2, _OC: 7, _FC: 2, _DG: 3}),
    ((2, 4, 0), {_J: 6, _SG: 4, _HB: 4, _LG: 4, _OC: 8, _FC: 3, _DG: 5}),
    ((2, 5, 0), {_J: 7, _SG: 5, _HB: 4, _LG: 4, _OC: 8, _FC: 3, _DG: 5}),
)


def max_text_era_version(api: ApiKey, kafka_version: str) -> int | None:
    """Highest version of ``api`` a text-era (< 2.8) Kafka release speaks; None when it has none."""
    kv = kafka_version_tuple(kafka_version)
    best: int | None = None
    for release, table in TEXT_ERA_MAX_VERSIONS:
        if kv >= release:
            best = table.get(api)
    return best


_REQUEST_SIDE = (
    "group_id",
    "group_ids",
    "member_id",
    "group_instance_id",
    "generation_id",
    "member_epoch",
    "session_timeout_ms",
    "rebalance_timeout_ms",
    "protocol_type",
    "protocol_name",
    "protocols",
    "reason",
    "assignments",
    "leave_members",
    "commit_partitions",
    "key_type",
)
_RESPONSE_SIDE = (
    "error_code",
    "response_generation_id",
    "response_member_epoch",
    "response_leader",
    "response_member_id",
    "response_protocol_type",
    "response_protocol_name",
    "response_skip_assignment",
    "response_members",
    "response_assignment",
    "response_assignment_length",
    "response_leave_members",
    "response_commit_partitions",
    "response_coordinator_node_id",
    "response_group_state",
)

_COMMON_BODY = frozenset({"group_id", "error_code"})
#: Body columns each API fills (every other body column is null for it).
_API_COLUMNS: dict[ApiKey, frozenset[str]] = {
    ApiKey.JOIN_GROUP: _COMMON_BODY
    | {
        "member_id",
        "group_instance_id",
        "session_timeout_ms",
        "rebalance_timeout_ms",
        "protocol_type",
        "protocols",
        "reason",
        "response_generation_id",
        "response_protocol_type",
        "response_protocol_name",
        "response_leader",
        "response_skip_assignment",
        "response_member_id",
        "response_members",
    },
    ApiKey.SYNC_GROUP: _COMMON_BODY
    | {
        "generation_id",
        "member_id",
        "group_instance_id",
        "protocol_type",
        "protocol_name",
        "assignments",
        "response_protocol_type",
        "response_protocol_name",
        "response_assignment",
        "response_assignment_length",
    },
    ApiKey.HEARTBEAT: _COMMON_BODY | {"generation_id", "member_id", "group_instance_id"},
    ApiKey.LEAVE_GROUP: _COMMON_BODY | {"member_id", "leave_members", "response_leave_members"},
    ApiKey.OFFSET_COMMIT: _COMMON_BODY
    | {"generation_id", "member_id", "group_instance_id", "commit_partitions", "response_commit_partitions"},
    ApiKey.FIND_COORDINATOR: _COMMON_BODY | {"group_ids", "key_type", "response_coordinator_node_id"},
    ApiKey.DESCRIBE_GROUPS: _COMMON_BODY | {"group_ids", "response_group_state"},
    ApiKey.CONSUMER_GROUP_HEARTBEAT: _COMMON_BODY
    | {
        "member_id",
        "member_epoch",
        "group_instance_id",
        "rebalance_timeout_ms",
        "response_member_id",
        "response_member_epoch",
    },
}
_BODY_COLUMNS = frozenset(_REQUEST_SIDE + _RESPONSE_SIDE)
_ANY = 1 << 15
#: Body columns that exist only in some versions of an API: (first, last) version.
_VERSION_GATES: dict[ApiKey, dict[str, tuple[int, int]]] = {
    ApiKey.JOIN_GROUP: {
        "group_instance_id": (5, _ANY),
        "reason": (8, _ANY),
        "response_protocol_type": (7, _ANY),
        "response_skip_assignment": (9, _ANY),
    },
    ApiKey.SYNC_GROUP: {
        "group_instance_id": (3, _ANY),
        "protocol_type": (5, _ANY),
        "protocol_name": (5, _ANY),
        "response_protocol_type": (5, _ANY),
        "response_protocol_name": (5, _ANY),
    },
    ApiKey.HEARTBEAT: {"group_instance_id": (3, _ANY)},
    ApiKey.OFFSET_COMMIT: {
        "generation_id": (1, _ANY),
        "member_id": (1, _ANY),
        "group_instance_id": (7, _ANY),
    },
    ApiKey.FIND_COORDINATOR: {"key_type": (1, _ANY)},
}

# ---------------------------------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------------------------------


def kafka_version_tuple(version: str) -> tuple[int, int, int]:
    """``"2.4"`` → ``(2, 4, 0)`` (the line's first release: formats change at X.Y.0 releases);
    ``"3.9.1"`` → ``(3, 9, 1)``."""
    return parse_kafka_version(version, bare_patch=0)


def era_of(kafka_version: str) -> str:
    """``text`` for Kafka < 2.8, ``json`` from 2.8 (KIP-673)."""
    return "text" if kafka_version_tuple(kafka_version) < (2, 8, 0) else "json"


def java_double(x: float) -> str:
    """Java ``Double.toString``: plain for 1e-3 ≤ |x| < 1e7 (``0.0``, ``3005.123``), else ``1.0E7``."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    a = abs(x)
    if 1e-3 <= a < 1e7:
        return repr(float(x))  # Python's shortest repr is plain (with ".0") in this range
    _, digits, exp = Decimal(repr(float(a))).as_tuple()
    ds = list(digits)
    e = int(exp)
    while len(ds) > 1 and ds[-1] == 0:
        ds.pop()
        e += 1
    sci = len(ds) - 1 + e
    mant = str(ds[0]) + "." + ("".join(map(str, ds[1:])) or "0")
    return f"{'-' if x < 0 else ''}{mant}E{sci}"


def format_timestamp(utc: datetime, tz: tzinfo) -> str:
    """log4j ``%d`` (``yyyy-MM-dd HH:mm:ss,SSS``) of an instant in the broker zone ``tz``."""
    t = utc.astimezone(tz)
    return (
        f"{t.year:04d}-{t.month:02d}-{t.day:02d} {t.hour:02d}:{t.minute:02d}:{t.second:02d},"
        f"{t.microsecond // 1000:03d}"
    )


def _frame(body: str, ts: str, level: str, layout: str, thread: str, logger: str) -> str:
    if layout == "log4j":
        return f"[{ts}] {level} {body} ({logger})"
    if layout == "strimzi":
        return f"{ts} {level} {body} ({logger}) [{thread}]"
    if layout == "dev":
        return f"[{ts}] {level} {body} ({logger}:275)"
    raise ValueError(f"unknown layout {layout!r}; expected one of {LAYOUTS}")


@dataclass(frozen=True, slots=True)
class _Bytes:
    data: bytes | None
    length: int | None


def _getter(r: Mapping[str, Any]) -> Callable[[str], Any]:
    def g(key: str) -> Any:
        return r.get(key)

    return g


def _api_of(rec: Mapping[str, Any]) -> ApiKey:
    key = rec.get("api_key")
    name = rec.get("api_name")
    api = ApiKey.from_code(key) if key is not None else None
    if api is None and name is not None:
        api = ApiKey.from_name(name)
    if api is None:
        raise ValueError(f"record names no kept API (api_key={key!r}, api_name={name!r})")
    return api


# ---------------------------------------------------------------------------------------------------
# Record → message values (JSON-shaped, every key; filtered per version by _shape)
# ---------------------------------------------------------------------------------------------------


def _group_topics(
    parts: Sequence[Mapping[str, Any]] | None, make: Any, v: int
) -> list[dict[str, Any]] | None:
    if parts is None:
        return None
    topics: list[dict[str, Any]] = []
    for p in parts:
        if not topics or topics[-1]["name"] != p.get("topic"):
            topics.append({"name": p.get("topic"), "topicId": p.get("topic"), "partitions": []})
        topics[-1]["partitions"].append(make(p))
    return topics


def _host(node: int | None) -> tuple[str, int]:
    return (f"broker-{node}", 9092) if node is not None and node >= 0 else ("", -1)


def _request_values(api: ApiKey, v: int, r: Mapping[str, Any]) -> dict[str, Any]:
    g = _getter(r)
    if api is ApiKey.JOIN_GROUP:
        return {
            "groupId": g("group_id"),
            "sessionTimeoutMs": g("session_timeout_ms"),
            "rebalanceTimeoutMs": g("rebalance_timeout_ms"),
            "memberId": g("member_id"),
            "groupInstanceId": g("group_instance_id"),
            "protocolType": g("protocol_type"),
            "protocols": None
            if g("protocols") is None
            else [
                {"name": p.get("name"), "metadata": _Bytes(p.get("metadata"), p.get("metadata_length"))}
                for p in g("protocols")
            ],
            "reason": g("reason"),
        }
    if api is ApiKey.SYNC_GROUP:
        return {
            "groupId": g("group_id"),
            "generationId": g("generation_id"),
            "memberId": g("member_id"),
            "groupInstanceId": g("group_instance_id"),
            "protocolType": g("protocol_type"),
            "protocolName": g("protocol_name"),
            "assignments": None
            if g("assignments") is None
            else [
                {
                    "memberId": a.get("member_id"),
                    "assignment": _Bytes(a.get("assignment"), a.get("assignment_length")),
                }
                for a in g("assignments")
            ],
        }
    if api is ApiKey.HEARTBEAT:
        return {
            "groupId": g("group_id"),
            "generationId": g("generation_id"),
            "memberId": g("member_id"),
            "groupInstanceId": g("group_instance_id"),
        }
    if api is ApiKey.LEAVE_GROUP:
        members = g("leave_members")
        mid = g("member_id")
        if mid is None and v <= 2 and members:
            mid = members[0].get("member_id")
        return {
            "groupId": g("group_id"),
            "memberId": mid,
            "members": None
            if members is None
            else [
                {
                    "memberId": m.get("member_id"),
                    "groupInstanceId": m.get("group_instance_id"),
                    "reason": m.get("reason"),
                }
                for m in members
            ],
        }
    if api is ApiKey.OFFSET_COMMIT:
        return {
            "groupId": g("group_id"),
            "generationId": g("generation_id"),
            "memberId": g("member_id"),
            "groupInstanceId": g("group_instance_id"),
            "retentionTimeMs": -1,
            "topics": _group_topics(
                g("commit_partitions"),
                lambda p: {
                    "partitionIndex": p.get("partition"),
                    "committedOffset": p.get("committed_offset"),
                    "committedLeaderEpoch": -1,
                    "commitTimestamp": -1,
                    "committedMetadata": "",
                },
                v,
            ),
        }
    if api is ApiKey.FIND_COORDINATOR:
        keys = g("group_ids")
        if keys is None and v >= 4:
            keys = [g("group_id")] if g("group_id") is not None else []
        return {"key": g("group_id"), "keyType": g("key_type"), "coordinatorKeys": keys}
    if api is ApiKey.DESCRIBE_GROUPS:
        groups = g("group_ids")
        if groups is None:
            groups = [g("group_id")] if g("group_id") is not None else []
        return {"groups": groups, "includeAuthorizedOperations": False}
    if api is ApiKey.CONSUMER_GROUP_HEARTBEAT:
        return {
            "groupId": g("group_id"),
            "memberId": g("member_id"),
            "memberEpoch": g("member_epoch"),
            "instanceId": g("group_instance_id"),
            "rackId": None,
            "rebalanceTimeoutMs": g("rebalance_timeout_ms"),
            "subscribedTopicNames": None,
            "subscribedTopicRegex": None,
            "serverAssignor": None,
            "topicPartitions": None,
        }
    raise ValueError(f"no renderer for {api.name}")  # pragma: no cover


def _response_values(api: ApiKey, v: int, r: Mapping[str, Any]) -> dict[str, Any]:
    g = _getter(r)
    if api is ApiKey.JOIN_GROUP:
        return {
            "throttleTimeMs": 0,
            "errorCode": g("error_code"),
            "generationId": g("response_generation_id"),
            "protocolType": g("response_protocol_type"),
            "protocolName": g("response_protocol_name"),
            "leader": g("response_leader"),
            "skipAssignment": g("response_skip_assignment"),
            "memberId": g("response_member_id"),
            "members": None
            if g("response_members") is None
            else [
                {
                    "memberId": m.get("member_id"),
                    "groupInstanceId": m.get("group_instance_id"),
                    "metadata": _Bytes(m.get("metadata"), m.get("metadata_length")),
                }
                for m in g("response_members")
            ],
        }
    if api is ApiKey.SYNC_GROUP:
        return {
            "throttleTimeMs": 0,
            "errorCode": g("error_code"),
            "protocolType": g("response_protocol_type"),
            "protocolName": g("response_protocol_name"),
            "assignment": _Bytes(g("response_assignment"), g("response_assignment_length")),
        }
    if api is ApiKey.HEARTBEAT:
        return {"throttleTimeMs": 0, "errorCode": g("error_code")}
    if api is ApiKey.LEAVE_GROUP:
        members = g("response_leave_members")
        return {
            "throttleTimeMs": 0,
            "errorCode": g("error_code"),
            "members": []
            if members is None
            else [
                {
                    "memberId": m.get("member_id"),
                    "groupInstanceId": m.get("group_instance_id"),
                    "errorCode": m.get("error_code"),
                }
                for m in members
            ],
        }
    if api is ApiKey.OFFSET_COMMIT:
        return {
            "throttleTimeMs": 0,
            "topics": _group_topics(
                g("response_commit_partitions"),
                lambda p: {"partitionIndex": p.get("partition"), "errorCode": p.get("error_code")},
                v,
            ),
        }
    if api is ApiKey.FIND_COORDINATOR:
        node = g("response_coordinator_node_id")
        host, port = _host(node)
        keys = g("group_ids")
        if keys is None:
            keys = [g("group_id")] if g("group_id") is not None else []
        return {
            "throttleTimeMs": 0,
            "errorCode": g("error_code"),
            "errorMessage": None,
            "nodeId": node,
            "host": host,
            "port": port,
            "coordinators": [
                {
                    "key": k,
                    "nodeId": node,
                    "host": host,
                    "port": port,
                    "errorCode": g("error_code"),
                    "errorMessage": None,
                }
                for k in keys
            ],
        }
    if api is ApiKey.DESCRIBE_GROUPS:
        groups = g("group_ids")
        if groups is None:
            groups = [g("group_id")] if g("group_id") is not None else []
        return {
            "throttleTimeMs": 0,
            "groups": [
                {
                    "errorCode": g("error_code"),
                    "errorMessage": None,
                    "groupId": gid,
                    "groupState": g("response_group_state"),
                    "protocolType": "consumer",
                    "protocolData": "",
                    "members": [],
                    "authorizedOperations": -2147483648,
                }
                for gid in groups
            ],
        }
    if api is ApiKey.CONSUMER_GROUP_HEARTBEAT:
        return {
            "throttleTimeMs": 0,
            "errorCode": g("error_code"),
            "errorMessage": None,
            "memberId": g("response_member_id"),
            "memberEpoch": g("response_member_epoch"),
            "heartbeatIntervalMs": 5000,
            "assignment": None,
        }
    raise ValueError(f"no renderer for {api.name}")  # pragma: no cover


def _shape(specs: tuple[FieldSpec, ...], values: Mapping[str, Any], v: int) -> dict[str, Any]:
    """Keep the fields present in version ``v``, in spec order, recursing into structs."""
    out: dict[str, Any] = {}
    for s in specs:
        if not s.present(v):
            continue
        val = values.get(s.key)
        if s.fields and val is not None:
            if s.kind in ("struct", "nstruct"):
                val = _shape(s.fields, val, v)
            else:
                val = [_shape(s.fields, e, v) for e in val]
        out[s.key] = val
    return out


def _message(api: ApiKey, direction: str, v: int, r: Mapping[str, Any]) -> dict[str, Any]:
    values = _request_values(api, v, r) if direction == "request" else _response_values(api, v, r)
    return _shape(MESSAGE_SPECS[(api, direction)], values, v)


# ---------------------------------------------------------------------------------------------------
# Message → JSON / Struct.toString text
# ---------------------------------------------------------------------------------------------------


def _jsonable(x: Any) -> Any:
    if isinstance(x, _Bytes):
        return None if x.data is None else base64.b64encode(x.data).decode("ascii")
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_jsonable(v) for v in x]
    return x


def _dumps(x: Any) -> str:
    return json.dumps(x, separators=(",", ":"), ensure_ascii=False)


def _text_value(x: Any, sub: TextStruct | None, tagged: bool) -> str:
    if x is None:
        return "null"
    if x is True:
        return "true"
    if x is False:
        return "false"
    if isinstance(x, _Bytes):
        n = len(x.data) if x.data is not None else x.length
        return "null" if n is None else f"java.nio.HeapByteBuffer[pos=0 lim={n} cap={n}]"
    if isinstance(x, list):
        return "[" + ",".join(_text_value(e, sub, tagged) for e in x) + "]"
    if isinstance(x, dict):
        assert sub is not None
        return _text_struct(x, sub, tagged)
    return str(x)


def _text_struct(msg: Mapping[str, Any], spec: TextStruct, tagged: bool) -> str:
    parts = []
    for key, val in msg.items():
        f = spec.by_key[key]
        parts.append(f"{f.name}={_text_value(val, f.sub, tagged)}")
    if tagged:
        parts.append("_tagged_fields={}")
    return "{" + ",".join(parts) + "}"


def _body_text(api: ApiKey, direction: str, v: int, msg: dict[str, Any], kafka_version: str) -> str:
    kv = kafka_version_tuple(kafka_version)
    naming = "gen" if kv >= (2, 3, 0) or (api is ApiKey.LEAVE_GROUP and kv >= (2, 2, 0)) else "hand"
    if naming == "hand" and api is ApiKey.FIND_COORDINATOR and direction == "response":
        msg = dict(msg)
        msg["coordinator"] = {k: msg.pop(k) for k in ("nodeId", "host", "port")}
    tagged = v >= FLEXIBLE_FROM[api]
    return _text_struct(msg, TEXT_SPECS[(api, direction, naming)], tagged)


def _request_present(r: Mapping[str, Any]) -> bool:
    return r.get("group_id") is not None or r.get("group_ids") is not None


def _response_present(r: Mapping[str, Any]) -> bool:
    return any(r.get(c) is not None for c in _RESPONSE_SIDE)


def _body_present(r: Mapping[str, Any], direction: str, kafka_version: str) -> bool:
    """Text-era lines always carry both bodies; in the JSON era a body is there when one of its
    columns is set or its raw text is (an empty DescribeGroups response has no typed column)."""
    if era_of(kafka_version) == "text":
        return True
    if direction == "request":
        return _request_present(r) or r.get("raw_request") is not None
    return _response_present(r) or r.get("raw_response") is not None


def _render_body(r: Mapping[str, Any], direction: str, kafka_version: str, force: bool = False) -> str | None:
    api = _api_of(r)
    v = int(r["api_version"])
    if not force and not _body_present(r, direction, kafka_version):
        return None
    msg = _message(api, direction, v, r)
    if era_of(kafka_version) == "text":
        return _body_text(api, direction, v, msg, kafka_version)
    if (
        api is ApiKey.OFFSET_COMMIT
        and direction == "request"
        and kafka_version_tuple(kafka_version) >= (3, 6, 0)
        and "generationId" in msg
    ):
        msg = {("generationIdOrMemberEpoch" if k == "generationId" else k): x for k, x in msg.items()}
    return _dumps(_jsonable(msg))


def render_request_body(record: Mapping[str, Any], *, kafka_version: str) -> str | None:
    """The request body as Kafka ``kafka_version`` logs it (JSON text or Struct.toString), or None
    when the record carries no request (a not-computed body)."""
    return _render_body(record, "request", kafka_version)


def render_response_body(record: Mapping[str, Any], *, kafka_version: str) -> str | None:
    """The response body as logged, or None when the record carries no response fields."""
    return _render_body(record, "response", kafka_version)


# ---------------------------------------------------------------------------------------------------
# Whole lines
# ---------------------------------------------------------------------------------------------------


def _completion_time(r: Mapping[str, Any]) -> datetime:
    t = r.get("completion_time")
    if t is None:
        ms = r.get("completion_ms")
        if ms is None:
            raise ValueError("record needs completion_time or completion_ms")
        return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=int(ms))
    if not isinstance(t, datetime) or t.tzinfo is None:
        raise ValueError("completion_time must be a tz-aware datetime")
    return t


def _text_metrics(r: Mapping[str, Any], kafka_version: str) -> str:
    g = _getter(r)
    s = (
        f";totalTime:{java_double(g('total_time_ms'))},requestQueueTime:{java_double(g('request_queue_time_ms'))}"
        f",localTime:{java_double(g('local_time_ms'))},remoteTime:{java_double(g('remote_time_ms'))}"
        f",throttleTime:{g('throttle_time_ms')},responseQueueTime:{java_double(g('response_queue_time_ms'))}"
        f",sendTime:{java_double(g('send_time_ms'))},securityProtocol:{g('security_protocol')}"
        f",principal:{g('principal')},listener:{g('listener')}"
    )
    if kafka_version_tuple(kafka_version) >= (2, 5, 0):
        name = g("client_software_name") or "unknown"
        version = g("client_software_version") or "unknown"
        s += f",clientInformation:ClientInformation(softwareName={name}, softwareVersion={version})"
    tmb = g("temporary_memory_bytes")
    if tmb is not None and tmb > 0:
        s += f",temporaryMemoryBytes:{tmb}"
    mct = g("message_conversions_time_ms")
    if mct is not None and mct > 0:
        s += f",messageConversionsTime:{java_double(mct)}"
    return s


def _json_metrics(r: Mapping[str, Any]) -> str:
    g = _getter(r)
    parts = [
        ',"connection":' + _dumps(g("connection")),
        ',"totalTimeMs":' + java_double(g("total_time_ms")),
        ',"requestQueueTimeMs":' + java_double(g("request_queue_time_ms")),
        ',"localTimeMs":' + java_double(g("local_time_ms")),
        ',"remoteTimeMs":' + java_double(g("remote_time_ms")),
        ',"throttleTimeMs":' + str(g("throttle_time_ms")),
        ',"responseQueueTimeMs":' + java_double(g("response_queue_time_ms")),
        ',"sendTimeMs":' + java_double(g("send_time_ms")),
        ',"securityProtocol":' + _dumps(g("security_protocol")),
        ',"principal":' + _dumps(g("principal")),
        ',"listener":' + _dumps(g("listener")),
        ',"clientInformation":'
        + _dumps(
            {
                "softwareName": g("client_software_name") or "unknown",
                "softwareVersion": g("client_software_version") or "unknown",
            }
        ),
    ]
    tmb = g("temporary_memory_bytes")
    if tmb is not None and tmb > 0:
        parts.append(f',"temporaryMemoryBytes":{tmb}')
    mct = g("message_conversions_time_ms")
    if mct is not None and mct > 0:
        parts.append(',"messageConversionsTime":' + java_double(mct))
    return "".join(parts)


def _json_header(
    key: int, name: str, v: int, corr: int, client: str | None, deprecated: bool, kafka_version: str
) -> str:
    hdr: dict[str, Any] = {
        "requestApiKey": key,
        "requestApiVersion": v,
        "correlationId": corr,
        "clientId": client,
        "requestApiKeyName": name,
    }
    if deprecated and kafka_version_tuple(kafka_version) >= (3, 7, 0):
        hdr["requestApiVersionDeprecated"] = True
    return _dumps(hdr)


def _placeholder(kafka_version: str) -> str:
    return "null" if kafka_version_tuple(kafka_version) >= (4, 1, 0) else '""'


def render_line(
    record: Mapping[str, Any],
    *,
    kafka_version: str,
    tz: tzinfo,
    era: str | None = None,
    layout: str = "log4j",
    thread: str = _DEFAULT_THREAD,
) -> str:
    """One ``Completed request`` line for a kept-API ``record`` (keys as the parser's record; run it
    through :func:`complete_record` first for derived fields and defaults).

    ``kafka_version`` picks the era (``era`` may be given too, and must agree), the body field names,
    header extras and placeholders; ``tz`` is the broker zone the timestamp is written in.
    """
    actual_era = era_of(kafka_version)
    if era is not None and era != actual_era:
        raise ValueError(f"era {era!r} does not match Kafka {kafka_version} ({actual_era})")
    r = record
    api = _api_of(r)
    v = int(r["api_version"])
    ts = format_timestamp(_completion_time(r), tz)
    level = r.get("log_level") or "DEBUG"
    req = render_request_body(r, kafka_version=kafka_version)
    resp = render_response_body(r, kafka_version=kafka_version)
    if actual_era == "text":
        top = max_text_era_version(api, kafka_version)
        if top is None or v > top:
            raise ValueError(f"Kafka {kafka_version} has no {api.name} v{v} (text era max: {top})")
        client = r.get("client_id")
        body = (
            f"Completed request:RequestHeader(apiKey={api.name}, apiVersion={v}, "
            f"clientId={'null' if client is None else client}, correlationId={r.get('correlation_id')}) -- "
            f"{req},response:{resp} from connection {r.get('connection')}{_text_metrics(r, kafka_version)}"
        )
    else:
        fwd = r.get("is_forwarded")
        hdr = _json_header(
            int(api),
            api.name,
            v,
            r["correlation_id"],
            r.get("client_id"),
            bool(r.get("api_version_deprecated")),
            kafka_version,
        )
        ph = _placeholder(kafka_version)
        body = (
            f'Completed request:{{"isForwarded":{"true" if fwd else "false"},"requestHeader":{hdr}'
            f',"request":{ph if req is None else req},"response":{ph if resp is None else resp}'
            f"{_json_metrics(r)}}}"
        )
    return _frame(body, ts, str(level), layout, thread, "kafka.request.logger")


_OTHER_BODIES: dict[str, tuple[dict[str, Any], dict[str, Any], str, str]] = {
    "FETCH": (
        {
            "replicaId": -1,
            "maxWaitMs": 500,
            "minBytes": 1,
            "maxBytes": 52428800,
            "isolationLevel": 0,
            "sessionId": 0,
            "sessionEpoch": -1,
            "topics": [],
            "forgottenTopicsData": [],
            "rackId": "",
        },
        {"throttleTimeMs": 0, "errorCode": 0, "sessionId": 0, "responses": []},
        "{replica_id=-1,max_wait_time=500,min_bytes=1,max_bytes=52428800,isolation_level=0,topics=[]}",
        "{throttle_time_ms=0,error_code=0,session_id=0,responses=[]}",
    ),
    "METADATA": (
        {"topics": [], "allowAutoTopicCreation": True},
        {"throttleTimeMs": 0, "brokers": [], "clusterId": "c1", "controllerId": 1, "topics": []},
        "{topics=[],allow_auto_topic_creation=true}",
        "{throttle_time_ms=0,brokers=[],cluster_id=c1,controller_id=1,topic_metadata=[]}",
    ),
}


def render_other_api_line(
    api_name: str,
    *,
    completion_time: datetime,
    tz: tzinfo,
    kafka_version: str,
    api_version: int = 0,
    correlation_id: int = 1,
    client_id: str | None = "consumer-1",
    connection: str = "10.0.0.1:9092-10.0.0.2:50000-1",
    total_time_ms: float = 0.5,
    request_body: Mapping[str, Any] | str | None = None,
    response_body: Mapping[str, Any] | str | None = None,
    layout: str = "log4j",
    level: str = "DEBUG",
) -> str:
    """A ``Completed request`` line of another API (e.g. FETCH), in the era of ``kafka_version``.

    Bodies default to small plausible ones; pass a dict (JSON era) or a string (either era) to set them.
    """
    key = KNOWN_API_CODES.get(api_name)
    if key is None:
        raise ValueError(f"unknown API name {api_name!r}")
    ts = format_timestamp(completion_time, tz)
    defaults = _OTHER_BODIES.get(api_name, ({}, {}, "{}", "{}"))
    td = java_double(total_time_ms)
    half = java_double(total_time_ms / 2)
    if era_of(kafka_version) == "text":
        req = request_body if isinstance(request_body, str) else defaults[2]
        resp = response_body if isinstance(response_body, str) else defaults[3]
        info = (
            ",clientInformation:ClientInformation(softwareName=apache-kafka-java, softwareVersion=2.5.0)"
            if kafka_version_tuple(kafka_version) >= (2, 5, 0)
            else ""
        )
        body = (
            f"Completed request:RequestHeader(apiKey={api_name}, apiVersion={api_version}, "
            f"clientId={client_id}, correlationId={correlation_id}) -- {req},response:{resp} "
            f"from connection {connection};totalTime:{td},requestQueueTime:0.0,localTime:{half},"
            f"remoteTime:{half},throttleTime:0,responseQueueTime:0.0,sendTime:0.0,"
            f"securityProtocol:PLAINTEXT,principal:User:ANONYMOUS,listener:PLAINTEXT{info}"
        )
    else:
        jreq = request_body if isinstance(request_body, str) else _dumps(request_body or defaults[0])
        jresp = response_body if isinstance(response_body, str) else _dumps(response_body or defaults[1])
        hdr = _json_header(key, api_name, api_version, correlation_id, client_id, False, kafka_version)
        body = (
            f'Completed request:{{"isForwarded":false,"requestHeader":{hdr},"request":{jreq},'
            f'"response":{jresp},"connection":{_dumps(connection)},"totalTimeMs":{td},'
            f'"requestQueueTimeMs":0.0,"localTimeMs":{half},"remoteTimeMs":{half},"throttleTimeMs":0,'
            f'"responseQueueTimeMs":0.0,"sendTimeMs":0.0,"securityProtocol":"PLAINTEXT",'
            f'"principal":"User:ANONYMOUS","listener":"PLAINTEXT","clientInformation":'
            f'{{"softwareName":"apache-kafka-java","softwareVersion":"3.6.1"}}}}'
        )
    return _frame(body, ts, level, layout, _DEFAULT_THREAD, "kafka.request.logger")


def render_other_logger_line(
    message: str,
    *,
    when: datetime,
    tz: tzinfo,
    level: str = "TRACE",
    logger: str = "kafka.network.RequestChannel$",
    layout: str = "log4j",
) -> str:
    """A line of another logger sharing ``kafka-request.log`` (default: a RequestChannel TRACE line)."""
    return _frame(message, format_timestamp(when, tz), level, layout, _DEFAULT_THREAD, logger)


# ---------------------------------------------------------------------------------------------------
# complete_record: defaults and derived fields, so render → parse gives the record back
# ---------------------------------------------------------------------------------------------------


def _with_names(items: Any, code_key: str = "error_code") -> Any:
    if items is None:
        return None
    return [{**dict(i), "error_name": Errors.name_of(i.get(code_key))} for i in items]


def _bytes_items(items: Any, data_key: str, len_key: str, era: str) -> Any:
    if items is None:
        return None
    out = []
    for i in items:
        d = dict(i)
        data = d.get(data_key)
        if data is not None:
            d[len_key] = len(data)
        elif era == "json":
            d[len_key] = None
        if era == "text":
            d[data_key] = None
        out.append(d)
    return out


def complete_record(fields: Mapping[str, Any], *, kafka_version: str) -> dict[str, object]:
    """A full parser-shaped record from ``fields`` (at least api_key or api_name, api_version,
    completion_time or completion_ms, total_time_ms and the body fields of the API version).

    Fills era, header/metrics defaults (PLAINTEXT, ``User:ANONYMOUS``, ``unknown`` client software,
    0.0 timings), the connection parts, completion_ms / arrival_ms / log_date, error names, byte
    lengths (text era: bytes dropped, lengths kept), the version rules the parser applies (JoinGroup
    v0 rebalance timeout = session timeout, LeaveGroup v0-2 single leave member, FindCoordinator v0
    key type 0, first key / group as group_id, OffsetCommit first partition error) and raw_request /
    raw_response as they will be logged.
    """
    unknown = set(fields) - set(RECORD_COLUMNS)
    if unknown:
        raise ValueError(f"not record columns: {sorted(unknown)}")
    r: dict[str, Any] = dict.fromkeys(RECORD_COLUMNS)
    r.update(fields)
    req_body = _body_present(r, "request", kafka_version)
    resp_body = _body_present(r, "response", kafka_version)
    era = era_of(kafka_version)
    kv = kafka_version_tuple(kafka_version)
    api = _api_of(r)
    v = r.get("api_version")
    if v is None:
        raise ValueError("record needs api_version")
    r["api_key"], r["api_name"], r["log_era"] = int(api), api.name, era

    deprecated = v in DEPRECATED_VERSIONS.get(api, frozenset())
    if era == "json":
        if r["api_version_deprecated"] is None and deprecated and kv >= (3, 7, 0):
            r["api_version_deprecated"] = True
        if not r["api_version_deprecated"] or kv < (3, 7, 0):
            r["api_version_deprecated"] = None
        if r["is_forwarded"] is None:
            r["is_forwarded"] = False
    else:
        r["api_version_deprecated"] = None
        r["is_forwarded"] = None
    if r["log_level"] is None:
        r["log_level"] = "INFO" if deprecated and kv >= (3, 9, 1) else "DEBUG"
    if r["correlation_id"] is None:
        r["correlation_id"] = 1

    if r["connection"] is None:
        la = r["listener_address"] or "10.0.0.1:9092"
        ca = r["client_address"] or "10.0.0.2:50000"
        idx = r["connection_index"] or ("0-1" if kv >= (4, 0, 0) else "1")
        if kv >= (4, 0, 0) and "-" not in idx:
            idx = "0-" + idx
        r["connection"] = f"{la}-{ca}-{idx}"
    r["listener_address"], r["client_address"], r["connection_index"] = split_connection(r["connection"])
    for col, default in (("security_protocol", "PLAINTEXT"), ("principal", "User:ANONYMOUS")):
        if r[col] is None:
            r[col] = default
    if r["listener"] is None:
        r["listener"] = r["security_protocol"]
    if era == "json" or kv >= (2, 5, 0):
        r["client_software_name"] = r["client_software_name"] or "unknown"
        r["client_software_version"] = r["client_software_version"] or "unknown"
    else:
        r["client_software_name"] = r["client_software_version"] = None

    if r["total_time_ms"] is None:
        raise ValueError("record needs total_time_ms")
    for col in (
        "request_queue_time_ms",
        "local_time_ms",
        "remote_time_ms",
        "response_queue_time_ms",
        "send_time_ms",
    ):
        if r[col] is None:
            r[col] = 0.0
    for col in (
        "total_time_ms",
        "request_queue_time_ms",
        "local_time_ms",
        "remote_time_ms",
        "response_queue_time_ms",
        "send_time_ms",
    ):
        r[col] = float(r[col])
    if r["throttle_time_ms"] is None:
        r["throttle_time_ms"] = 0
    if r["temporary_memory_bytes"] is not None and r["temporary_memory_bytes"] <= 0:
        r["temporary_memory_bytes"] = None
    if r["message_conversions_time_ms"] is not None:
        r["message_conversions_time_ms"] = float(r["message_conversions_time_ms"])
        if r["message_conversions_time_ms"] <= 0:
            r["message_conversions_time_ms"] = None
    t = _completion_time(r).astimezone(UTC)
    t = t.replace(microsecond=t.microsecond // 1000 * 1000)
    ms = (t - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)
    r["completion_time"], r["completion_ms"], r["log_date"] = t, ms, t.date()
    r["arrival_ms"] = ms - math.floor(r["total_time_ms"] + 0.5)

    # body rules the parser applies
    for col in _BODY_COLUMNS - _API_COLUMNS[api]:
        r[col] = None
    for col, (lo, hi) in _VERSION_GATES.get(api, {}).items():
        if not lo <= v <= hi:
            r[col] = None
    if api is ApiKey.JOIN_GROUP and v < 5 and r["response_members"] is not None:
        r["response_members"] = [{**m, "group_instance_id": None} for m in r["response_members"]]
    if api is ApiKey.LEAVE_GROUP and v < 5 and r["leave_members"] is not None:
        r["leave_members"] = [{**m, "reason": None} for m in r["leave_members"]]
    if api in (ApiKey.DESCRIBE_GROUPS, ApiKey.FIND_COORDINATOR) and r["group_ids"] is not None:
        r["group_id"] = r["group_ids"][0] if r["group_ids"] else None
    req_present = req_body
    if api is ApiKey.JOIN_GROUP and v == 0 and req_present:
        r["rebalance_timeout_ms"] = r["session_timeout_ms"]
    if api is ApiKey.LEAVE_GROUP:
        if v <= 2:
            if r["member_id"] is None and r["leave_members"]:
                r["member_id"] = r["leave_members"][0].get("member_id")
            if req_present:
                r["leave_members"] = [
                    {"member_id": r["member_id"], "group_instance_id": None, "reason": None}
                ]
            r["response_leave_members"] = None
        else:
            r["member_id"] = None
    if api is ApiKey.FIND_COORDINATOR:
        if v <= 3:
            r["group_ids"] = None
            if v == 0 and req_present:
                r["key_type"] = 0
        elif r["group_ids"] is None and r["group_id"] is not None:
            r["group_ids"] = [r["group_id"]]
    if api is ApiKey.DESCRIBE_GROUPS and r["group_ids"] is None and r["group_id"] is not None:
        r["group_ids"] = [r["group_id"]]
    if not req_body:
        for col in _REQUEST_SIDE:
            r[col] = None
    resp_present = resp_body
    if api is ApiKey.OFFSET_COMMIT and resp_present:
        parts = r["response_commit_partitions"] or []
        r["error_code"] = next((p["error_code"] for p in parts if p["error_code"]), 0)
    if (
        resp_present
        and not r["group_ids"]
        and (api is ApiKey.DESCRIBE_GROUPS or (api is ApiKey.FIND_COORDINATOR and v >= 4))
    ):
        # no key / group asked → no coordinator / group in the response to take the error from
        for col in ("error_code", "response_coordinator_node_id", "response_group_state"):
            r[col] = None

    r["protocols"] = _bytes_items(r["protocols"], "metadata", "metadata_length", era)
    r["response_members"] = _bytes_items(r["response_members"], "metadata", "metadata_length", era)
    r["assignments"] = _bytes_items(r["assignments"], "assignment", "assignment_length", era)
    if r["response_assignment"] is not None:
        r["response_assignment_length"] = len(r["response_assignment"])
    elif era == "json":
        r["response_assignment_length"] = None
    if era == "text":
        r["response_assignment"] = None
    r["response_leave_members"] = _with_names(r["response_leave_members"])
    r["response_commit_partitions"] = _with_names(r["response_commit_partitions"])
    r["error_name"] = Errors.name_of(r["error_code"]) if resp_present else None

    # raw bodies exactly as render_line writes them (placeholders when a body is absent)
    r["raw_request"] = _render_body(r, "request", kafka_version, force=True) if req_body else None
    r["raw_response"] = _render_body(r, "response", kafka_version, force=True) if resp_body else None
    return r


def rotated_file_name(ms: int) -> str:
    """The name a broker's hourly ``DailyRollingFileAppender`` (Kafka's log4j.properties:
    ``DatePattern='.'yyyy-MM-dd-HH``) gives ``kafka-request.log`` when it rotates out the hour holding
    ``ms`` (epoch ms, UTC)."""
    return "kafka-request.log." + datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d-%H")
