"""Parse ONE physical line of a Kafka broker request log (``kafka.request.logger``).

Pure Python, no Spark, no I/O: :func:`parse_line` is called on millions of lines by Spark Python
workers, so everything that can be precompiled is compiled at import time and each line is decoded
with at most one JSON decode.

Both line eras are read (see ``request-log-format.md``):

* **JSON** (Kafka 2.8+): ``Completed request:{"isForwarded":…,"requestHeader":{…},"request":{…},…}``
* **text** (Kafka ≤ 2.7): ``Completed request:RequestHeader(apiKey=…, …) -- {struct},response:{struct}
  from connection …;totalTime:…,…``. Bodies are Kafka ``Struct.toString`` dumps; they are tokenized
  with the message schemas below as a guide (known field names are the split points, so values may
  contain ``,``, ``=`` and ``}`` wherever the structure leaves no doubt), then converted into the same
  JSON shape, so one mapping serves both eras.

Outcome of a line: ``REQUEST`` (a kept group-API request, typed record), ``QUARANTINE`` (a kept-API
``Completed request`` line that cannot be read, with a reason naming the field), ``OTHER_API``
(a ``Completed request`` line of another API) or ``OTHER`` (any line without ``Completed request:``).
Most lines of a broker's request log are other APIs' JSON-era lines: :func:`other_api_line` tells them
(with ``parse_line``'s answer) from their head alone, a substring test and no JSON parse, so that ingest
parses only the rest.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta, tzinfo
from enum import StrEnum
from typing import Any

from rebalance_replay.schemas.core import show_value
from rebalance_replay.schemas.tables import REQUESTS
from rebalance_replay.transforms.kafka_protocol import KNOWN_API_NAMES, MAX_API_VERSION, ApiKey, Errors

__all__ = [
    "FLEXIBLE_FROM",
    "MESSAGE_SPECS",
    "PRETTY_API_NAMES",
    "RECORD_COLUMNS",
    "FieldSpec",
    "LineKind",
    "LineOutcome",
    "TextBytes",
    "TextField",
    "TextStruct",
    "other_api_line",
    "parse_line",
    "split_connection",
    "text_struct",
]

#: Keys of a REQUEST record, in table order (``REQUESTS`` minus what the reader adds).
RECORD_COLUMNS: tuple[str, ...] = tuple(
    c for c in REQUESTS.column_names if c not in ("source_file", "line_no", "broker_id")
)
_TEMPLATE: dict[str, object] = dict.fromkeys(RECORD_COLUMNS)


class LineKind(StrEnum):
    REQUEST = "request"
    QUARANTINE = "quarantine"
    OTHER_API = "other_api"
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class LineOutcome:
    """What one line is. ``record`` only for REQUEST, ``reason`` only for QUARANTINE.

    ``api_name`` is set for REQUEST and OTHER_API (and for QUARANTINE when the API could be told).
    ``log_date`` (extra) is the UTC date of the line timestamp when it could be read (every REQUEST,
    and QUARANTINE lines whose prefix parsed), for partitioning quarantine rows.
    """

    kind: LineKind
    record: dict[str, object] | None = None
    reason: str | None = None
    api_name: str | None = None
    log_date: date | None = None


_OTHER = LineOutcome(LineKind.OTHER)

PRETTY_API_NAMES: dict[ApiKey, str] = {
    ApiKey.JOIN_GROUP: "JoinGroup",
    ApiKey.SYNC_GROUP: "SyncGroup",
    ApiKey.HEARTBEAT: "Heartbeat",
    ApiKey.LEAVE_GROUP: "LeaveGroup",
    ApiKey.OFFSET_COMMIT: "OffsetCommit",
    ApiKey.FIND_COORDINATOR: "FindCoordinator",
    ApiKey.DESCRIBE_GROUPS: "DescribeGroups",
    ApiKey.CONSUMER_GROUP_HEARTBEAT: "ConsumerGroupHeartbeat",
}

#: First flexible version per API (text era 2.4+: ``_tagged_fields={}`` closes every struct).
FLEXIBLE_FROM: dict[ApiKey, int] = {
    ApiKey.JOIN_GROUP: 6,
    ApiKey.SYNC_GROUP: 4,
    ApiKey.HEARTBEAT: 4,
    ApiKey.LEAVE_GROUP: 4,
    ApiKey.OFFSET_COMMIT: 8,
    ApiKey.FIND_COORDINATOR: 3,
    ApiKey.DESCRIBE_GROUPS: 5,
    ApiKey.CONSUMER_GROUP_HEARTBEAT: 0,
}

# ---------------------------------------------------------------------------------------------------
# Message schemas (request-log-format.md §3): JSON keys in spec order, with the versions each field exists in.
# Used to tokenize text-era bodies (field order and names) and by ``log_render`` to write bodies.
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """One field of a request/response message.

    kind: ``int`` (int8/16/32), ``long`` (int64), ``str``, ``nstr`` (nullable), ``uuid``, ``bool``,
    ``bytes``, ``structs`` (array of struct), ``nstructs`` (nullable), ``strs`` / ``nstrs`` (array of
    string), ``ints`` (array of int32), ``nstruct`` (nullable struct).
    """

    key: str
    kind: str
    vmin: int = 0
    vmax: int | None = None
    fields: tuple[FieldSpec, ...] = ()

    def present(self, version: int) -> bool:
        return self.vmin <= version and (self.vmax is None or version <= self.vmax)


def _F(key: str, kind: str, vmin: int = 0, vmax: int | None = None) -> FieldSpec:
    return FieldSpec(key, kind, vmin, vmax)


def _A(
    key: str, *fields: FieldSpec, vmin: int = 0, vmax: int | None = None, kind: str = "structs"
) -> FieldSpec:
    """An array of structs (or another composite ``kind``) with its element fields."""
    return FieldSpec(key, kind, vmin, vmax, fields)


_TOPIC_PARTITIONS = (_F("topicId", "uuid"), _F("partitions", "ints"))
_I, _S, _N = "int", "str", "nstr"

# fmt: off
MESSAGE_SPECS: dict[tuple[ApiKey, str], tuple[FieldSpec, ...]] = {
    (ApiKey.JOIN_GROUP, "request"): (
        _F("groupId", _S), _F("sessionTimeoutMs", _I), _F("rebalanceTimeoutMs", _I, 1),
        _F("memberId", _S), _F("groupInstanceId", _N, 5), _F("protocolType", _S),
        _A("protocols", _F("name", _S), _F("metadata", "bytes")),
        _F("reason", _N, 8),
    ),
    (ApiKey.JOIN_GROUP, "response"): (
        _F("throttleTimeMs", _I, 2), _F("errorCode", _I), _F("generationId", _I),
        _F("protocolType", _N, 7), _F("protocolName", _N), _F("leader", _S),
        _F("skipAssignment", "bool", 9), _F("memberId", _S),
        _A("members", _F("memberId", _S), _F("groupInstanceId", _N, 5), _F("metadata", "bytes")),
    ),
    (ApiKey.SYNC_GROUP, "request"): (
        _F("groupId", _S), _F("generationId", _I), _F("memberId", _S),
        _F("groupInstanceId", _N, 3), _F("protocolType", _N, 5), _F("protocolName", _N, 5),
        _A("assignments", _F("memberId", _S), _F("assignment", "bytes")),
    ),
    (ApiKey.SYNC_GROUP, "response"): (
        _F("throttleTimeMs", _I, 1), _F("errorCode", _I), _F("protocolType", _N, 5),
        _F("protocolName", _N, 5), _F("assignment", "bytes"),
    ),
    (ApiKey.HEARTBEAT, "request"): (
        _F("groupId", _S), _F("generationId", _I), _F("memberId", _S), _F("groupInstanceId", _N, 3),
    ),
    (ApiKey.HEARTBEAT, "response"): (_F("throttleTimeMs", _I, 1), _F("errorCode", _I)),
    (ApiKey.LEAVE_GROUP, "request"): (
        _F("groupId", _S), _F("memberId", _S, 0, 2),
        _A("members", _F("memberId", _S), _F("groupInstanceId", _N), _F("reason", _N, 5), vmin=3),
    ),
    (ApiKey.LEAVE_GROUP, "response"): (
        _F("throttleTimeMs", _I, 1), _F("errorCode", _I),
        _A("members", _F("memberId", _S), _F("groupInstanceId", _N), _F("errorCode", _I), vmin=3),
    ),
    (ApiKey.OFFSET_COMMIT, "request"): (
        _F("groupId", _S),
        _F("generationId", _I, 1),  # JSON key `generationIdOrMemberEpoch` from Kafka 3.6
        _F("memberId", _S, 1), _F("groupInstanceId", _N, 7), _F("retentionTimeMs", "long", 2, 4),
        _A("topics",
           _F("name", _S, 0, 9), _F("topicId", "uuid", 10),
           _A("partitions",
              _F("partitionIndex", _I), _F("committedOffset", "long"), _F("committedLeaderEpoch", _I, 6),
              _F("commitTimestamp", "long", 1, 1), _F("committedMetadata", _N))),
    ),
    (ApiKey.OFFSET_COMMIT, "response"): (
        _F("throttleTimeMs", _I, 3),
        _A("topics",
           _F("name", _S, 0, 9), _F("topicId", "uuid", 10),
           _A("partitions", _F("partitionIndex", _I), _F("errorCode", _I))),
    ),
    (ApiKey.FIND_COORDINATOR, "request"): (
        _F("key", _S, 0, 3), _F("keyType", _I, 1), _F("coordinatorKeys", "strs", 4),
    ),
    (ApiKey.FIND_COORDINATOR, "response"): (
        _F("throttleTimeMs", _I, 1), _F("errorCode", _I, 0, 3), _F("errorMessage", _N, 1, 3),
        _F("nodeId", _I, 0, 3), _F("host", _S, 0, 3), _F("port", _I, 0, 3),
        _A("coordinators",
           _F("key", _S), _F("nodeId", _I), _F("host", _S), _F("port", _I), _F("errorCode", _I),
           _F("errorMessage", _N), vmin=4),
    ),
    (ApiKey.DESCRIBE_GROUPS, "request"): (
        _F("groups", "strs"), _F("includeAuthorizedOperations", "bool", 3),
    ),
    (ApiKey.DESCRIBE_GROUPS, "response"): (
        _F("throttleTimeMs", _I, 1),
        _A("groups",
           _F("errorCode", _I), _F("errorMessage", _N, 6), _F("groupId", _S), _F("groupState", _S),
           _F("protocolType", _S), _F("protocolData", _S),
           _A("members",
              _F("memberId", _S), _F("groupInstanceId", _N, 4), _F("clientId", _S), _F("clientHost", _S),
              _F("memberMetadata", "bytes"), _F("memberAssignment", "bytes")),
           _F("authorizedOperations", _I, 3)),
    ),
    (ApiKey.CONSUMER_GROUP_HEARTBEAT, "request"): (
        _F("groupId", _S), _F("memberId", _S), _F("memberEpoch", _I), _F("instanceId", _N),
        _F("rackId", _N), _F("rebalanceTimeoutMs", _I), _F("subscribedTopicNames", "nstrs"),
        _F("subscribedTopicRegex", _N, 1), _F("serverAssignor", _N),
        _A("topicPartitions", *_TOPIC_PARTITIONS, kind="nstructs"),
    ),
    (ApiKey.CONSUMER_GROUP_HEARTBEAT, "response"): (
        _F("throttleTimeMs", _I), _F("errorCode", _I), _F("errorMessage", _N), _F("memberId", _N),
        _F("memberEpoch", _I), _F("heartbeatIntervalMs", _I),
        _A("assignment", _A("topicPartitions", *_TOPIC_PARTITIONS), kind="nstruct"),
    ),
}
# fmt: on

#: Kafka 2.0–2.2 hand-written schema names (text era), per API and direction: JSON key → text name.
#: Keys not listed use the generated (2.3+) name, i.e. the snake_case of the JSON key.
HAND_NAMES: dict[tuple[ApiKey, str], dict[str, str]] = {
    (ApiKey.JOIN_GROUP, "request"): {
        "sessionTimeoutMs": "session_timeout",
        "rebalanceTimeoutMs": "rebalance_timeout",
        "protocols": "group_protocols",
        "name": "protocol_name",
        "metadata": "protocol_metadata",
    },
    (ApiKey.JOIN_GROUP, "response"): {
        "protocolName": "group_protocol",
        "leader": "leader_id",
        "metadata": "member_metadata",
    },
    (ApiKey.SYNC_GROUP, "request"): {"assignments": "group_assignment", "assignment": "member_assignment"},
    (ApiKey.SYNC_GROUP, "response"): {"assignment": "member_assignment"},
    (ApiKey.OFFSET_COMMIT, "request"): {
        "retentionTimeMs": "retention_time",
        "name": "topic",
        "partitionIndex": "partition",
        "committedOffset": "offset",
        "committedMetadata": "metadata",
        "commitTimestamp": "timestamp",
    },
    (ApiKey.OFFSET_COMMIT, "response"): {
        "topics": "responses",
        "name": "topic",
        "partitions": "partition_responses",
        "partitionIndex": "partition",
    },
    (ApiKey.FIND_COORDINATOR, "request"): {"key": "coordinator_key", "keyType": "coordinator_type"},
    (ApiKey.DESCRIBE_GROUPS, "request"): {"groups": "group_ids"},
    (ApiKey.DESCRIBE_GROUPS, "response"): {"groupState": "state", "protocolData": "protocol"},
}

#: 2.0–2.2 FindCoordinator response nests the coordinator: ``{error_code=0,coordinator={node_id=…}}``.
HAND_FIND_COORDINATOR_RESPONSE: tuple[FieldSpec, ...] = (
    _F("throttleTimeMs", "int", 1),
    _F("errorCode", "int"),
    _F("errorMessage", "nstr", 1),
    _A("coordinator", _F("nodeId", "int"), _F("host", "str"), _F("port", "int"), kind="struct"),
)

# ---------------------------------------------------------------------------------------------------
# Text-era struct schemas (derived from MESSAGE_SPECS)
# ---------------------------------------------------------------------------------------------------

_CAMEL_HUMP = re.compile(r"(?<=[a-z0-9])([A-Z])")


def snake_name(key: str) -> str:
    """Generated-message (2.3+) text name of a JSON key: ``sessionTimeoutMs`` → ``session_timeout_ms``."""
    return _CAMEL_HUMP.sub(r"_\1", key).lower()


_TOKEN_KIND = {
    "int": "int",
    "long": "int",
    "str": "str",
    "uuid": "str",
    "nstr": "nstr",
    "bool": "bool",
    "bytes": "bytes",
    "structs": "structs",
    "nstructs": "structs",
    "strs": "strs",
    "nstrs": "strs",
    "ints": "ints",
    "struct": "struct",
    "nstruct": "struct",
    "tags": "tags",
}


@dataclass(frozen=True, slots=True)
class TextField:
    name: str  # name in Struct.toString
    key: str  # JSON-era key it maps to
    kind: str  # token kind (see _TOKEN_KIND values)
    spec: FieldSpec | None  # None for `_tagged_fields`
    sub: TextStruct | None


class TextStruct:
    """Ordered fields of one text-era struct, with precompiled value terminators."""

    __slots__ = ("by_key", "fields", "foreign", "index", "later", "names")

    def __init__(self, fields: tuple[TextField, ...]) -> None:  # pragma: no mutate block (import time)
        self.fields = fields
        self.index = {f.name: i for i, f in enumerate(fields)}
        self.by_key = {f.key: f for f in fields}
        self.names = ", ".join(f.name for f in fields)
        #: for field i: ``name=`` of every later field (a scalar value ends at ``,`` + one of them)
        self.later = tuple(tuple(f.name + "=" for f in fields[i + 1 :]) for i in range(len(fields)))
        #: ``,name=`` of the other naming's fields (2.0–2.2 vs 2.3+) for the same struct: a value that
        #: contains one means this naming is the wrong one for the line.
        self.foreign: re.Pattern[str] | None = None

    def set_foreign(self, other: TextStruct) -> None:  # pragma: no mutate block (import time)
        names = sorted(set(other.index) - set(self.index))
        if names:
            self.foreign = re.compile(",(?:" + "|".join(re.escape(n) for n in names) + ")=")
        for f in self.fields:
            o = other.by_key.get(f.key)
            if f.sub is not None and o is not None and o.sub is not None:
                f.sub.set_foreign(o.sub)


_TAGS = TextField("_tagged_fields", "_tagged_fields", "tags", None, None)


def text_struct(
    specs: tuple[FieldSpec, ...], renames: Mapping[str, str] | None, tagged: bool
) -> TextStruct:  # pragma: no mutate block (import time: _build_text_specs)
    """Text-era struct for ``specs``: hand-written names when ``renames`` is given, else generated
    names; ``tagged`` adds the flexible-version ``_tagged_fields`` as the last field of every struct."""
    out = []
    for s in specs:
        name = renames.get(s.key, snake_name(s.key)) if renames is not None else snake_name(s.key)
        sub = text_struct(s.fields, renames, tagged) if s.fields else None
        out.append(TextField(name, s.key, _TOKEN_KIND[s.kind], s, sub))
    if tagged:
        out.append(_TAGS)
    return TextStruct(tuple(out))


def _build_text_specs() -> dict[tuple[ApiKey, str, str], TextStruct]:  # pragma: no mutate block (import time)
    res: dict[tuple[ApiKey, str, str], TextStruct] = {}
    for (api, direction), specs in MESSAGE_SPECS.items():
        if api is ApiKey.CONSUMER_GROUP_HEARTBEAT:
            continue  # JSON era only
        res[(api, direction, "gen")] = text_struct(specs, None, True)
        if api is ApiKey.FIND_COORDINATOR and direction == "response":
            res[(api, direction, "hand")] = text_struct(HAND_FIND_COORDINATOR_RESPONSE, {}, False)
        else:
            res[(api, direction, "hand")] = text_struct(specs, HAND_NAMES.get((api, direction), {}), False)
        res[(api, direction, "gen")].set_foreign(res[(api, direction, "hand")])
        res[(api, direction, "hand")].set_foreign(res[(api, direction, "gen")])
    return res


#: (api, "request"|"response", "gen"|"hand") → text struct schema.
TEXT_SPECS = _build_text_specs()

# ---------------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------------


class _Bad(Exception):
    """The line is a kept-API request that cannot be read; ``args[0]`` is the reason."""


class _FieldErr(Exception):
    """A body field is wrong. ``problem`` None means missing."""

    def __init__(self, path: str, problem: str | None) -> None:
        super().__init__(path, problem)
        self.path = path
        self.problem = problem

    def reason(self, ctx: str) -> str:
        if self.problem is None:
            return f"{ctx}: missing {self.path}"
        return f"{ctx}: field {self.path} {self.problem}"


class _TextMismatch(Exception):
    def __init__(self, pos: int, msg: str) -> None:
        super().__init__(pos, msg)
        self.pos = pos
        self.msg = msg


@dataclass(frozen=True, slots=True)
class TextBytes:
    """A text-era ByteBuffer (``java.nio.HeapByteBuffer[pos=0 lim=N cap=N]``): only the length survives."""

    length: int


# ---------------------------------------------------------------------------------------------------
# Typed getters over JSON-shaped dicts (JSON era, and text era after tokenizing)
# ---------------------------------------------------------------------------------------------------

_I32_MIN, _I32_MAX = -(2**31), 2**31 - 1
_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1


def _g_int(d: Mapping[str, Any], k: str) -> int | None:
    v = d.get(k)
    if v is None or (type(v) is int and _I32_MIN <= v <= _I32_MAX):
        return v
    raise _FieldErr(
        k, f"is not an int: {show_value(v)}" if type(v) is not int else f"{v} is out of int32 range"
    )


def _g_long(d: Mapping[str, Any], k: str) -> int | None:
    v = d.get(k)
    if v is None or (type(v) is int and _I64_MIN <= v <= _I64_MAX):
        return v
    raise _FieldErr(
        k, f"is not an int: {show_value(v)}" if type(v) is not int else f"{v} is out of int64 range"
    )


def _g_str(d: Mapping[str, Any], k: str) -> str | None:
    v = d.get(k)
    if v is None or type(v) is str:
        return v
    raise _FieldErr(k, f"is not a string: {show_value(v)}")


def _g_req_str(d: Mapping[str, Any], k: str) -> str:
    v = d.get(k)
    if type(v) is str:
        return v
    if v is None:
        raise _FieldErr(k, "is null" if k in d else None)
    raise _FieldErr(k, f"is not a string: {show_value(v)}")


def _g_bool(d: Mapping[str, Any], k: str) -> bool | None:
    v = d.get(k)
    if v is None or type(v) is bool:
        return v
    raise _FieldErr(k, f"is not a boolean: {show_value(v)}")


def _g_bytes(d: Mapping[str, Any], k: str) -> tuple[bytes | None, int | None]:
    v = d.get(k)
    if v is None:
        return None, None
    if type(v) is str:
        try:
            b = base64.b64decode(v, validate=True)
        except (binascii.Error, ValueError):
            raise _FieldErr(k, "is not valid base64") from None
        return b, len(b)
    if type(v) is TextBytes:
        return None, v.length
    raise _FieldErr(k, "is not a base64 string")


def _g_list(d: Mapping[str, Any], k: str) -> list[Any] | None:
    v = d.get(k)
    if v is None or type(v) is list:
        return v
    raise _FieldErr(k, f"is not an array: {show_value(v)}")


def _g_strs(d: Mapping[str, Any], k: str) -> list[str] | None:
    v = _g_list(d, k)
    if v is not None:
        for i, e in enumerate(v):
            if type(e) is not str:
                raise _FieldErr(f"{k}[{i}]", f"is not a string: {show_value(e)}")
    return v


def _each(d: Mapping[str, Any], k: str, fn: Callable[[Mapping[str, Any]], Any]) -> list[Any] | None:
    """Map ``fn`` over the array of objects ``d[k]``, prefixing field errors with the element path."""
    lst = _g_list(d, k)
    if lst is None:
        return None
    out = []
    for i, e in enumerate(lst):
        if type(e) is not dict:
            raise _FieldErr(f"{k}[{i}]", f"is not an object: {show_value(e)}")
        try:
            out.append(fn(e))
        except _FieldErr as x:
            raise _FieldErr(f"{k}[{i}].{x.path}", x.problem) from None
    return out


def _first_obj(d: Mapping[str, Any], k: str) -> Mapping[str, Any] | None:
    lst = _g_list(d, k)
    if not lst:
        return None
    e = lst[0]
    if type(e) is not dict:
        raise _FieldErr(f"{k}[0]", "is not an object")
    return e


def _sub(path: str, fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except _FieldErr as x:
        raise _FieldErr(f"{path}.{x.path}", x.problem) from None


# ---------------------------------------------------------------------------------------------------
# Per-API mapping: request / response body (JSON shape) → record columns
# ---------------------------------------------------------------------------------------------------

Body = Mapping[str, Any]
Rec = dict[str, object]


def _req_join_group(d: Body, v: int, r: Rec) -> None:
    r["group_id"] = _g_req_str(d, "groupId")
    session = _g_int(d, "sessionTimeoutMs")
    r["session_timeout_ms"] = session
    reb = _g_int(d, "rebalanceTimeoutMs")
    r["rebalance_timeout_ms"] = session if v == 0 and reb is None else reb
    r["member_id"] = _g_str(d, "memberId")
    r["group_instance_id"] = _g_str(d, "groupInstanceId")
    r["protocol_type"] = _g_str(d, "protocolType")

    def proto(e: Body) -> dict[str, object]:
        md, n = _g_bytes(e, "metadata")
        return {"name": _g_req_str(e, "name"), "metadata": md, "metadata_length": n}  # non-nullable in Kafka

    r["protocols"] = _each(d, "protocols", proto)
    r["reason"] = _g_str(d, "reason")


def _resp_join_group(d: Body, v: int, r: Rec) -> None:
    r["error_code"] = _g_int(d, "errorCode")
    r["response_generation_id"] = _g_int(d, "generationId")
    r["response_protocol_type"] = _g_str(d, "protocolType")
    r["response_protocol_name"] = _g_str(d, "protocolName")
    r["response_leader"] = _g_str(d, "leader")
    r["response_skip_assignment"] = _g_bool(d, "skipAssignment")
    r["response_member_id"] = _g_str(d, "memberId")

    def member(e: Body) -> dict[str, object]:
        md, n = _g_bytes(e, "metadata")
        return {
            "member_id": _g_str(e, "memberId"),
            "group_instance_id": _g_str(e, "groupInstanceId"),
            "metadata": md,
            "metadata_length": n,
        }

    r["response_members"] = _each(d, "members", member)


def _req_sync_group(d: Body, v: int, r: Rec) -> None:
    r["group_id"] = _g_req_str(d, "groupId")
    r["generation_id"] = _g_int(d, "generationId")
    r["member_id"] = _g_str(d, "memberId")
    r["group_instance_id"] = _g_str(d, "groupInstanceId")
    r["protocol_type"] = _g_str(d, "protocolType")
    r["protocol_name"] = _g_str(d, "protocolName")

    def assignment(e: Body) -> dict[str, object]:
        a, n = _g_bytes(e, "assignment")
        return {"member_id": _g_str(e, "memberId"), "assignment": a, "assignment_length": n}

    r["assignments"] = _each(d, "assignments", assignment)


def _resp_sync_group(d: Body, v: int, r: Rec) -> None:
    r["error_code"] = _g_int(d, "errorCode")
    r["response_protocol_type"] = _g_str(d, "protocolType")
    r["response_protocol_name"] = _g_str(d, "protocolName")
    r["response_assignment"], r["response_assignment_length"] = _g_bytes(d, "assignment")


def _req_heartbeat(d: Body, v: int, r: Rec) -> None:
    r["group_id"] = _g_req_str(d, "groupId")
    r["generation_id"] = _g_int(d, "generationId")
    r["member_id"] = _g_str(d, "memberId")
    r["group_instance_id"] = _g_str(d, "groupInstanceId")


def _resp_error_only(d: Body, v: int, r: Rec) -> None:
    r["error_code"] = _g_int(d, "errorCode")


def _req_leave_group(d: Body, v: int, r: Rec) -> None:
    r["group_id"] = _g_req_str(d, "groupId")
    if v <= 2:
        mid = _g_str(d, "memberId")
        r["member_id"] = mid
        r["leave_members"] = [{"member_id": mid, "group_instance_id": None, "reason": None}]
        return

    def member(e: Body) -> dict[str, object]:
        return {
            "member_id": _g_str(e, "memberId"),
            "group_instance_id": _g_str(e, "groupInstanceId"),
            "reason": _g_str(e, "reason"),
        }

    r["leave_members"] = _each(d, "members", member)


def _resp_leave_group(d: Body, v: int, r: Rec) -> None:
    r["error_code"] = _g_int(d, "errorCode")
    if v <= 2:
        return

    def member(e: Body) -> dict[str, object]:
        code = _g_int(e, "errorCode")
        return {
            "member_id": _g_str(e, "memberId"),
            "group_instance_id": _g_str(e, "groupInstanceId"),
            "error_code": code,
            "error_name": Errors.name_of(code),
        }

    r["response_leave_members"] = _each(d, "members", member)


def _topic_name(t: Body) -> str | None:
    name = _g_str(t, "name")
    return name if name is not None else _g_str(t, "topicId")


def _req_offset_commit(d: Body, v: int, r: Rec) -> None:
    r["group_id"] = _g_req_str(d, "groupId")
    key = "generationIdOrMemberEpoch" if "generationIdOrMemberEpoch" in d else "generationId"
    r["generation_id"] = _g_int(d, key)
    r["member_id"] = _g_str(d, "memberId")
    r["group_instance_id"] = _g_str(d, "groupInstanceId")
    out: list[dict[str, object]] = []

    def topic(t: Body) -> None:
        name = _topic_name(t)

        def part(p: Body) -> None:
            out.append(
                {
                    "topic": name,
                    "partition": _g_int(p, "partitionIndex"),
                    "committed_offset": _g_long(p, "committedOffset"),
                }
            )

        _each(t, "partitions", part)

    topics = _each(d, "topics", topic)
    r["commit_partitions"] = out if topics is not None else None


def _resp_offset_commit(d: Body, v: int, r: Rec) -> None:
    out: list[dict[str, object]] = []
    first_error = 0

    def topic(t: Body) -> None:
        name = _topic_name(t)

        def part(p: Body) -> None:
            nonlocal first_error
            code = _g_int(p, "errorCode")
            if code and not first_error:
                first_error = code
            out.append(
                {
                    "topic": name,
                    "partition": _g_int(p, "partitionIndex"),
                    "error_code": code,
                    "error_name": Errors.name_of(code),
                }
            )

        _each(t, "partitions", part)

    topics = _each(d, "topics", topic)
    r["response_commit_partitions"] = out if topics is not None else None
    r["error_code"] = first_error


def _req_find_coordinator(d: Body, v: int, r: Rec) -> None:
    if v <= 3:
        r["group_id"] = _g_req_str(d, "key")
        kt = _g_int(d, "keyType")
        r["key_type"] = 0 if v == 0 and kt is None else kt
        return
    keys = _g_strs(d, "coordinatorKeys")
    if keys is None:
        raise _FieldErr("coordinatorKeys", "is null" if "coordinatorKeys" in d else None)
    r["group_ids"] = keys
    r["group_id"] = keys[0] if keys else None
    r["key_type"] = _g_int(d, "keyType")


def _resp_find_coordinator(d: Body, v: int, r: Rec) -> None:
    if v <= 3:
        r["error_code"] = _g_int(d, "errorCode")
        r["response_coordinator_node_id"] = _g_int(d, "nodeId")
        return
    _each(d, "coordinators", lambda e: None)  # type-check elements
    first = _first_obj(d, "coordinators")
    if first is not None:
        r["error_code"] = _sub("coordinators[0]", lambda: _g_int(first, "errorCode"))
        r["response_coordinator_node_id"] = _sub("coordinators[0]", lambda: _g_int(first, "nodeId"))


def _req_describe_groups(d: Body, v: int, r: Rec) -> None:
    groups = _g_strs(d, "groups")
    if groups is None:
        raise _FieldErr("groups", "is null" if "groups" in d else None)
    r["group_ids"] = groups
    r["group_id"] = groups[0] if groups else None


def _resp_describe_groups(d: Body, v: int, r: Rec) -> None:
    _each(d, "groups", lambda e: None)
    first = _first_obj(d, "groups")
    if first is not None:
        r["error_code"] = _sub("groups[0]", lambda: _g_int(first, "errorCode"))
        r["response_group_state"] = _sub("groups[0]", lambda: _g_str(first, "groupState"))


def _req_cgh(d: Body, v: int, r: Rec) -> None:
    r["group_id"] = _g_req_str(d, "groupId")
    r["member_id"] = _g_str(d, "memberId")
    r["member_epoch"] = _g_int(d, "memberEpoch")
    r["group_instance_id"] = _g_str(d, "instanceId")
    r["rebalance_timeout_ms"] = _g_int(d, "rebalanceTimeoutMs")


def _resp_cgh(d: Body, v: int, r: Rec) -> None:
    r["error_code"] = _g_int(d, "errorCode")
    r["response_member_id"] = _g_str(d, "memberId")
    r["response_member_epoch"] = _g_int(d, "memberEpoch")


_Mapper = Callable[[Body, int, Rec], None]
_MAPPERS: dict[ApiKey, tuple[_Mapper, _Mapper]] = {
    ApiKey.JOIN_GROUP: (_req_join_group, _resp_join_group),
    ApiKey.SYNC_GROUP: (_req_sync_group, _resp_sync_group),
    ApiKey.HEARTBEAT: (_req_heartbeat, _resp_error_only),
    ApiKey.LEAVE_GROUP: (_req_leave_group, _resp_leave_group),
    ApiKey.OFFSET_COMMIT: (_req_offset_commit, _resp_offset_commit),
    ApiKey.FIND_COORDINATOR: (_req_find_coordinator, _resp_find_coordinator),
    ApiKey.DESCRIBE_GROUPS: (_req_describe_groups, _resp_describe_groups),
    ApiKey.CONSUMER_GROUP_HEARTBEAT: (_req_cgh, _resp_cgh),
}


def _map_bodies(api: ApiKey, v: int, req: Body | None, resp: Body | None, r: Rec) -> None:
    map_req, map_resp = _MAPPERS[api]
    pretty = PRETTY_API_NAMES[api]
    if req is not None:
        try:
            map_req(req, v, r)
        except _FieldErr as e:
            raise _Bad(e.reason(f"{pretty} v{v} request")) from None
    if resp is not None:
        try:
            map_resp(resp, v, r)
        except _FieldErr as e:
            raise _Bad(e.reason(f"{pretty} v{v} response")) from None
        r["error_name"] = Errors.name_of(r["error_code"])  # type: ignore[arg-type]


def map_response_body(api: ApiKey, version: int, body: Body) -> Rec:
    """Kafka's JSON for a response (as the JSON-era log and the coordinator oracle write it) → the typed
    ``requests`` row fields of that response (``error_code``, ``error_name``, ``response_*``).
    ``ValueError`` names the field when the body does not fit the API's schema."""
    r: Rec = {}
    try:
        _map_bodies(api, version, None, body, r)
    except _Bad as e:
        raise ValueError(str(e)) from None
    return r


# ---------------------------------------------------------------------------------------------------
# Shared line pieces: prefix (timestamp, level), suffix, connection, times
# ---------------------------------------------------------------------------------------------------

_MARKER = "Completed request:"
_MARKER_LEN = len(_MARKER)
_SUFFIX_TOKEN = "(kafka.request.logger"
_SUFFIX_TAIL = re.compile(r"(?::\d+)?\)(?:[ \t]+\[.*\])?[ \t]*\Z")
_PREFIX = re.compile(
    r"\[?(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)[,.](\d{3})\]?[ \t]+([A-Za-z]+)[ \t]+\Z"
)
_LEVELS = frozenset({"DEBUG", "INFO"})
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_MS = timedelta(milliseconds=1)
_KEPT: dict[int, ApiKey] = {int(a): a for a in ApiKey}
_NAME: dict[ApiKey, str] = {a: a.name for a in ApiKey}
_CODE: dict[ApiKey, int] = {a: int(a) for a in ApiKey}
_KEPT_NAMES: dict[str, ApiKey] = {a.name: a for a in ApiKey}


def _body_end(line: str, start: int) -> int:
    """Index where the body ends (the space before the logger suffix), or -1 when there is none."""
    k = line.rfind(_SUFFIX_TOKEN)
    if k <= start or line[k - 1] != " " or not _SUFFIX_TAIL.match(line, k + len(_SUFFIX_TOKEN)):
        return -1
    return k - 1


def _prefix(line: str, marker: int, tz: tzinfo, check_level: bool = True) -> tuple[datetime, str]:
    """(completion time in UTC, level) from the text before ``Completed request:``."""
    m = _PREFIX.search(line, 0, marker)
    if m is None:
        raise _Bad("line prefix: no '[yyyy-MM-dd HH:mm:ss,SSS] LEVEL' timestamp before 'Completed request:'")
    level = m.group(8)
    try:
        local = datetime(
            int(m.group(1)),
            int(m.group(2)),
            int(m.group(3)),
            int(m.group(4)),
            int(m.group(5)),
            int(m.group(6)),
            int(m.group(7)) * 1000,
            tzinfo=tz,
        )
        utc = local.astimezone(UTC)
    except (ValueError, OverflowError):
        raise _Bad(f"timestamp '{line[m.start(1) : m.end(7)]}' is not a valid date") from None
    if check_level and level not in _LEVELS:
        raise _Bad(f"log level '{level}' is not DEBUG or INFO")
    return utc, level


def _prefix_date(line: str, marker: int, tz: tzinfo) -> date | None:
    try:
        return _prefix(line, marker, tz, check_level=False)[0].date()
    except _Bad:
        return None


def split_connection(conn: str | None) -> tuple[str | None, str | None, str | None]:
    """``local:port-remote:port-index`` (≤3.9) or ``…-processor-index`` (4.0+) →
    (listener_address, client_address, connection_index). IP literals contain no ``-``."""
    if conn is None:
        return None, None, None
    parts = conn.split("-")
    if len(parts) == 3:
        return parts[0], parts[1], parts[2]
    if len(parts) == 4:
        return parts[0], parts[1], parts[2] + "-" + parts[3]
    return None, None, None


#: The longest a broker can take over one request, in ms: Kafka measures ``totalTimeMs`` on a monotonic
#: clock from the request's arrival to its response, and the longest wait is a JoinGroup parked for the
#: largest rebalance timeout (an int32 of ms, ~24.9 days) plus its queues. A larger (or negative) value is
#: no time the broker measured, and the arrival time computed from it would be nonsense: quarantined.
MAX_TOTAL_TIME_MS = 30 * 86_400_000
#: Line times the product accepts, in epoch ms: from the epoch (Kafka's times are epoch millis, and the
#: arrival time, completion less ``totalTimeMs``, may not fall before it) to 2100-01-01 UTC, so every
#: deadline and window computed from a time (plus at most an int32 of ms) is a date Python and Spark hold.
EARLIEST_LINE_MS = 0
LATEST_LINE_MS = 4_102_444_800_000


def _utc_text(utc: datetime) -> str:
    """``utc`` to the second, the year in four digits (``%Y`` drops the zeros of year 1)."""
    return f"{utc.year:04d}-{utc:%m-%d %H:%M:%S} UTC"


def _set_times(r: Rec, utc: datetime, total: float, field: str) -> None:
    """The line's times from its completion time and its total time (``field`` names it in the line):
    both range-checked here, where the arrival time is computed, so no later stage sees an impossible one."""
    if not 0 <= total <= MAX_TOTAL_TIME_MS:
        raise _Bad(f"field {field} out of range: {total!r} ms (a request takes 0..{MAX_TOTAL_TIME_MS} ms)")
    ms = (utc - _EPOCH) // _ONE_MS
    arrival = ms - math.floor(total + 0.5)  # round half up, like Spark's round()
    if ms >= LATEST_LINE_MS:
        raise _Bad(f"line time out of range: {_utc_text(utc)} is after 2100-01-01")
    if arrival < EARLIEST_LINE_MS:
        raise _Bad(f"arrival time out of range: {_utc_text(utc)} less {field} is before 1970-01-01")
    r["completion_time"] = utc
    r["completion_ms"] = ms
    r["arrival_ms"] = arrival
    r["log_date"] = utc.date()


def _quarantine(reason: str, api: str | None, log_date: date | None) -> LineOutcome:
    if len(reason) > 500:
        reason = reason[:497] + "..."
    return LineOutcome(LineKind.QUARANTINE, None, reason.replace("\n", " ").replace("\r", " "), api, log_date)


# ---------------------------------------------------------------------------------------------------
# JSON era
# ---------------------------------------------------------------------------------------------------

_DECODER = json.JSONDecoder()
_JSON_HEAD = re.compile(r'\{"isForwarded":(?:true|false),"requestHeader":\{"requestApiKey":(-?\d+),')
_LOOSE_KEY = re.compile(r'"requestApiKey"\s*:\s*(-?\d+)')
_LOOSE_NAME = re.compile(r'"requestApiKeyName"\s*:\s*"([A-Za-z0-9_]+)"')
_COMPACT = (",", ":")


def _other_api_name(key: int, line: str, b: int) -> str:
    name = KNOWN_API_NAMES.get(key)
    if name is None:
        m = _LOOSE_NAME.search(line, b, b + 1000)
        name = m.group(1) if m else f"UNKNOWN_API_{key}"
    return name


_MARKER_BYTES = _MARKER.encode()
_JSON_HEAD_BYTES = re.compile(_JSON_HEAD.pattern.encode())
#: the outcome of another API's line by its key as the broker writes it (no sign, no leading zero)
_OTHER_API_OUTCOMES: dict[bytes, LineOutcome] = {
    str(key).encode(): LineOutcome(LineKind.OTHER_API, api_name=name)
    for key, name in KNOWN_API_NAMES.items()
    if key not in _KEPT
}


def other_api_line(raw: bytes) -> LineOutcome | None:
    """What :func:`parse_line` says of a line that is another API's JSON-era ``Completed request`` line
    (Fetch, Produce, Metadata, …: most of a broker's request log), told from the line's head alone —
    the API key right after ``Completed request:{"isForwarded":…,"requestHeader":{"requestApiKey":`` —
    without decoding the line, parsing its JSON, reading its timestamp or looking at the rest of it:
    ``parse_line`` counts such a line as the API of that key whatever follows (broken JSON included).
    ``raw``: the line's bytes as read (the head is ASCII: a byte that does not decode, replaced by
    ``parse_line``'s reading, cannot be part of it). None when the head does not tell: a kept API's line,
    a key Kafka does not name (or written with a sign or leading zeros), the text era, another shape, any
    other line — those go through ``parse_line``."""
    marker = raw.find(_MARKER_BYTES)
    if marker < 0:
        return None
    m = _JSON_HEAD_BYTES.match(raw, marker + _MARKER_LEN)
    return None if m is None else _OTHER_API_OUTCOMES.get(m.group(1))


def _loose_api(line: str, b: int) -> tuple[int | None, str | None]:
    """Identify the API of a JSON line that did not decode (api key, name)."""
    m = _LOOSE_KEY.search(line, b, b + 1000)
    if m:
        key = int(m.group(1))
        return key, _other_api_name(key, line, b)
    m = _LOOSE_NAME.search(line, b, b + 1000)
    if m:
        name = m.group(1)
        api = _KEPT_NAMES.get(name)
        return (int(api) if api is not None else None), name
    return None, None


def _num(d: Mapping[str, Any], k: str) -> float | None:
    v = d.get(k)
    if v is None:
        return None
    t = type(v)
    if t is float:
        return v  # type: ignore[no-any-return]
    if t is int:
        return float(v)
    raise _Bad(f"field {k} is not a number: {show_value(v)}")


def _top_long(d: Mapping[str, Any], k: str) -> int | None:
    v = d.get(k)
    if v is None or type(v) is int:
        return v
    raise _Bad(f"field {k} is not an int: {show_value(v)}")


def _top_str(d: Mapping[str, Any], k: str) -> str | None:
    v = d.get(k)
    if v is None or type(v) is str:
        return v
    raise _Bad(f"field {k} is not a string: {show_value(v)}")


def _dumps(obj: object) -> str:
    return json.dumps(obj, separators=_COMPACT, ensure_ascii=False)


def _raw_section(line: str, b: int, end: int, key: str, nxt: str) -> str | None:
    """The exact text of ``"key":<value>`` up to ``,"nxt":`` (Kafka's compact key order)."""
    i = line.find(f',"{key}":', b, end)
    if i < 0:
        return None
    i += len(key) + 4
    j = line.find(f',"{nxt}":', i, end)
    return line[i:j] if j >= 0 else None


def _parse_json(line: str, marker: int, b: int, tz: tzinfo) -> LineOutcome:
    hm = _JSON_HEAD.match(line, b)
    api: ApiKey | None = None
    if hm is not None:
        key = int(hm.group(1))
        api = _KEPT.get(key)
        if api is None:
            return LineOutcome(LineKind.OTHER_API, api_name=_other_api_name(key, line, b))
    try:
        return _parse_json_kept(line, marker, b, tz, api, hm is not None)
    except _Bad as e:
        name = api.name if api is not None else None
        if api is None:
            key2, name = _loose_api(line, b)
            if key2 is not None and key2 not in _KEPT and name is not None:
                return LineOutcome(LineKind.OTHER_API, api_name=name)
            if key2 is None and name is not None and name not in _KEPT_NAMES:
                return LineOutcome(LineKind.OTHER_API, api_name=name)
        return _quarantine(str(e.args[0]), name, _prefix_date(line, marker, tz))


def _parse_json_kept(
    line: str, marker: int, b: int, tz: tzinfo, api: ApiKey | None, canonical: bool
) -> LineOutcome:
    """A kept-API JSON line. ``canonical``: the line starts the way Kafka writes it (its key order), so
    the raw bodies can be cut out of the line as logged instead of being re-serialised."""
    end = _body_end(line, b)
    if end < 0:
        raise _Bad("truncated line: no ' (kafka.request.logger)' suffix after the JSON body")
    try:
        top, j = _DECODER.raw_decode(line, b)
    except json.JSONDecodeError as e:
        raise _Bad(f"bad JSON in request body at char {e.pos}: {e.msg}") from None
    except RecursionError:
        raise _Bad("bad JSON in request body: nested too deeply") from None
    if j != end and line[j:end].strip():
        raise _Bad(f"bad JSON in request body at char {j}: extra data after the object")
    if type(top) is not dict:
        raise _Bad("request body is not a JSON object")
    hdr = top.get("requestHeader")
    if hdr is None:
        raise _Bad("missing requestHeader")
    if type(hdr) is not dict:
        raise _Bad("requestHeader is not an object")
    key = hdr.get("requestApiKey")
    if key is None:
        raise _Bad("missing requestHeader.requestApiKey")
    if type(key) is not int:
        raise _Bad("requestHeader.requestApiKey is not an int")
    if api is None:
        api = _KEPT.get(key)
        if api is None:
            name = hdr.get("requestApiKeyName")
            if type(name) is not str:
                name = _other_api_name(key, line, b)
            return LineOutcome(LineKind.OTHER_API, api_name=name)
    utc, level = _prefix(line, marker, tz)
    for k in ("requestApiVersion", "correlationId", "clientId", "requestApiKeyName"):
        if k not in hdr:
            raise _Bad(f"missing requestHeader.{k}")
    v = hdr["requestApiVersion"]
    if type(v) is not int:
        raise _Bad("requestHeader.requestApiVersion is not an int")
    if not 0 <= v <= MAX_API_VERSION[api]:
        raise _Bad(
            f"requestHeader.requestApiVersion {v} is out of range 0..{MAX_API_VERSION[api]} for {api.name}"
        )
    corr = hdr["correlationId"]
    if type(corr) is not int:
        raise _Bad(f"requestHeader.correlationId is not an int: {show_value(corr)}")
    if not _I32_MIN <= corr <= _I32_MAX:
        raise _Bad(f"requestHeader.correlationId {corr} is out of int32 range")
    client = hdr["clientId"]
    if client is not None and type(client) is not str:
        raise _Bad("requestHeader.clientId is not a string")
    kname = hdr["requestApiKeyName"]
    if kname != _NAME[api]:
        raise _Bad(f"requestHeader.requestApiKeyName {kname!r} does not match requestApiKey {key}")
    dep = hdr.get("requestApiVersionDeprecated")
    if dep is not None and type(dep) is not bool:
        raise _Bad("requestHeader.requestApiVersionDeprecated is not a boolean")
    fwd = top.get("isForwarded")
    if fwd is not None and type(fwd) is not bool:
        raise _Bad("field isForwarded is not a boolean")

    r = _TEMPLATE.copy()
    r["log_era"] = "json"
    r["log_level"] = level
    r["api_key"] = _CODE[api]
    r["api_name"] = _NAME[api]
    r["api_version"] = v
    r["api_version_deprecated"] = dep
    r["correlation_id"] = corr
    r["client_id"] = client
    r["is_forwarded"] = fwd

    conn = _top_str(top, "connection")
    r["connection"] = conn
    r["listener_address"], r["client_address"], r["connection_index"] = split_connection(conn)
    total = _num(top, "totalTimeMs")
    if total is None:
        raise _Bad("missing totalTimeMs")
    if not math.isfinite(total):
        raise _Bad("field totalTimeMs is not finite")
    r["total_time_ms"] = total
    r["request_queue_time_ms"] = _num(top, "requestQueueTimeMs")
    r["local_time_ms"] = _num(top, "localTimeMs")
    r["remote_time_ms"] = _num(top, "remoteTimeMs")
    r["throttle_time_ms"] = _top_long(top, "throttleTimeMs")
    r["response_queue_time_ms"] = _num(top, "responseQueueTimeMs")
    r["send_time_ms"] = _num(top, "sendTimeMs")
    r["security_protocol"] = _top_str(top, "securityProtocol")
    r["principal"] = _top_str(top, "principal")
    r["listener"] = _top_str(top, "listener")
    ci = top.get("clientInformation")
    if ci is not None:
        if type(ci) is not dict:
            raise _Bad("field clientInformation is not an object")
        r["client_software_name"] = _top_str(ci, "softwareName")
        r["client_software_version"] = _top_str(ci, "softwareVersion")
    r["temporary_memory_bytes"] = _top_long(top, "temporaryMemoryBytes")
    r["message_conversions_time_ms"] = _num(top, "messageConversionsTime")
    _set_times(r, utc, total, "totalTimeMs")

    if "response" not in top:
        raise _Bad("missing response (a Completed request line always logs it)")
    req = top.get("request")
    resp = top.get("response")
    if req == "":
        req = None
    elif req is not None and type(req) is not dict:
        raise _Bad("field request is not an object")
    if resp == "":
        resp = None
    elif resp is not None and type(resp) is not dict:
        raise _Bad("field response is not an object")
    _map_bodies(api, v, req, resp, r)
    if req is not None:
        raw = _raw_section(line, b, end, "request", "response") if canonical else None
        r["raw_request"] = (
            raw if raw is not None else json.dumps(req, separators=_COMPACT, ensure_ascii=False)
        )
    if resp is not None:
        raw = _raw_section(line, b, end, "response", "connection") if canonical else None
        r["raw_response"] = raw if raw is not None else _dumps(resp)
    return LineOutcome(LineKind.REQUEST, r, None, _NAME[api], r["log_date"])  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------------
# Text era
# ---------------------------------------------------------------------------------------------------

_TEXT_HEAD = re.compile(r"RequestHeader\(apiKey=([A-Za-z0-9_]+),")
_TEXT_HEADER = re.compile(
    r"RequestHeader\(apiKey=([A-Za-z0-9_]+), apiVersion=(-?\d+), clientId=(.*?), correlationId=(-?\d+)\) -- ",
    re.S,
)
_FROM_CONN = " from connection "
_TEXT_METRICS = re.compile(
    r";totalTime:([^,]*),requestQueueTime:([^,]*),localTime:([^,]*),remoteTime:([^,]*),"
    r"throttleTime:([^,]*),responseQueueTime:([^,]*),sendTime:([^,]*),securityProtocol:([^,]*),"
    r"principal:(.*),listener:([^,]*)"
    r"(?:,clientInformation:ClientInformation\(softwareName=(.*), softwareVersion=(.*)\))?"
    r"(?:,temporaryMemoryBytes:([^,]*))?(?:,messageConversionsTime:([^,]*))?\Z",
    re.S,
)
_TEXT_METRIC_NAMES = (
    "totalTime",
    "requestQueueTime",
    "localTime",
    "remoteTime",
    "throttleTime",
    "responseQueueTime",
    "sendTime",
    "securityProtocol",
    "principal",
    "listener",
)
_TEXT_INT = re.compile(r"-?\d+\Z")
_TEXT_FLOAT = re.compile(r"-?(?:\d+\.?\d*(?:E-?\d+)?|NaN|Infinity)\Z")
_BYTEBUFFER = re.compile(r"java\.nio\.[A-Za-z]+\[pos=(\d+) lim=(\d+) cap=(\d+)\]\Z")
_ARRAY_ELEM_END = re.compile(r"[,\]]")
_DELIM = re.compile(r"[,}]")


def _text_float(name: str, s: str) -> float:
    if not _TEXT_FLOAT.match(s):
        raise _Bad(f"text-era field {name} {s!r} is not a number")
    return float(s)


def _text_long(name: str, s: str) -> int:
    if not _TEXT_INT.match(s):
        raise _Bad(f"text-era field {name} {s!r} is not an int")
    return int(s)


def _close_ok(s: str, p: int, end: int, ctx: int) -> bool:
    """Is the ``}`` at ``p`` a plausible end of the struct being read? ctx 0: top level (must end the
    text), 1: array element (``,{`` or ``]`` follows), 2: struct-valued field (``,`` or ``}``)."""
    if ctx == 0:
        return p + 1 == end
    if ctx == 1:
        return s.startswith(",{", p + 1) or s.startswith("]", p + 1)
    return p + 1 < end and s[p + 1] in ",}"


def _t_scalar(kind: str, raw: str, name: str, pos: int) -> object:
    if kind == "str":
        return raw
    if kind == "nstr":
        return None if raw == "null" else raw
    if kind == "int":
        if not _TEXT_INT.match(raw):
            raise _TextMismatch(pos, f"field {name} value {raw!r} is not an int")
        return int(raw)
    if kind == "bytes":
        if raw == "null":
            return None
        m = _BYTEBUFFER.match(raw)
        if m is None:
            raise _TextMismatch(pos, f"field {name} value {raw!r} is not a java.nio ByteBuffer")
        return TextBytes(int(m.group(2)) - int(m.group(1)))
    if kind == "bool":
        if raw == "true":
            return True
        if raw == "false":
            return False
        raise _TextMismatch(pos, f"field {name} value {raw!r} is not a boolean")
    raise _TextMismatch(pos, f"field {name}: unsupported kind {kind}")


def _t_struct(s: str, i: int, end: int, spec: TextStruct, ctx: int) -> tuple[dict[str, object], int]:
    if i >= end or s[i] != "{":
        raise _TextMismatch(i, "expected '{'")
    i += 1
    out: dict[str, object] = {}
    if i < end and s[i] == "}" and _close_ok(s, i, end, ctx):
        return out, i + 1
    idx = 0
    fields = spec.fields
    while True:
        eq = s.find("=", i, end)
        j = spec.index.get(s[i:eq]) if eq >= 0 else None
        if j is None or j < idx:
            after = f" after field {fields[idx - 1].name}" if idx else ""
            raise _TextMismatch(i, f"expected a field name{after} (one of {spec.names})")
        f = fields[j]
        idx = j + 1
        i = eq + 1
        kind = f.kind
        value: object
        if kind in ("structs", "strs", "ints"):
            if s.startswith("null", i) and i + 4 < end and s[i + 4] in ",}":
                value, i = None, i + 4
            else:
                value, i = _t_array(s, i, end, f)
        elif kind == "struct":
            if s.startswith("null", i) and i + 4 < end and s[i + 4] in ",}":
                value, i = None, i + 4
            else:
                assert f.sub is not None
                value, i = _t_struct(s, i, end, f.sub, 2)
        elif kind == "tags":
            i = _skip_braces(s, i, end)
            value = None
        else:
            p = -1
            later = spec.later[j]
            q = i
            while True:
                m = _DELIM.search(s, q, end)
                if m is None:
                    break
                q = m.start()
                if s[q] == ",":
                    if later and s.startswith(later, q + 1):
                        p = q
                        break
                elif _close_ok(s, q, end, ctx):
                    p = q
                    break
                q += 1
            if p < 0:
                raise _TextMismatch(i, f"value of field {f.name} is not terminated")
            if spec.foreign is not None:
                fm = spec.foreign.search(s, i, p)
                if fm is not None:
                    raise _TextMismatch(fm.start() + 1, f"unexpected field {fm.group()[1:-1]} after {f.name}")
            raw = s[i:p]
            if kind == "str":
                value = raw
            elif kind == "int" and _TEXT_INT.match(raw):
                value = int(raw)
            else:
                value = _t_scalar(kind, raw, f.name, i)
            i = p
        if kind != "tags":
            out[f.key] = value
        if i < end:
            c = s[i]
            if c == ",":
                i += 1
                continue
            if c == "}" and _close_ok(s, i, end, ctx):
                return out, i + 1
        raise _TextMismatch(i, f"expected ',' or '}}' after field {f.name}")


def _skip_braces(s: str, i: int, end: int) -> int:
    if i >= end or s[i] != "{":
        raise _TextMismatch(i, "expected '{' for _tagged_fields")
    depth = 0
    for k in range(i, end):
        c = s[k]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return k + 1
    raise _TextMismatch(i, "unterminated _tagged_fields")


def _t_array(s: str, i: int, end: int, f: TextField) -> tuple[list[object], int]:
    if i >= end or s[i] != "[":
        raise _TextMismatch(i, f"expected '[' for array field {f.name}")
    i += 1
    out: list[object] = []
    if i < end and s[i] == "]":
        return out, i + 1
    while True:
        if f.kind == "structs":
            assert f.sub is not None
            v, i = _t_struct(s, i, end, f.sub, 1)
            out.append(v)
        else:
            p = -1
            for m in _ARRAY_ELEM_END.finditer(s, i, end):
                q = m.start()
                if s[q] == "," or q + 1 >= end or s[q + 1] in ",}":
                    p = q
                    break
            if p < 0:
                raise _TextMismatch(i, f"array field {f.name} is not terminated")
            raw = s[i:p]
            out.append(_t_scalar("int" if f.kind == "ints" else "str", raw, f.name, i))
            i = p
        if i < end:
            c = s[i]
            if c == ",":
                i += 1
                continue
            if c == "]":
                return out, i + 1
        raise _TextMismatch(i, f"expected ',' or ']' in array field {f.name}")


def _t_body(s: str, i: int, end: int, spec: TextStruct) -> dict[str, object]:
    out, j = _t_struct(s, i, end, spec, 0)
    if j != end:
        raise _TextMismatch(j, "extra text after the struct")
    return out


def _text_bodies(
    line: str, i: int, end: int, api: ApiKey
) -> tuple[dict[str, object], dict[str, object], int]:
    """Split ``{req},response:{resp}`` in ``line[i:end]`` and tokenize both; returns the position of
    ``,response:``. Tries the 2.3+ generated names first, then the 2.0–2.2 hand-written ones."""
    best: _TextMismatch | None = None
    best_dir = "request"
    p = line.find(",response:", i, end)
    if p < 0:
        raise _Bad("text-era body: missing ',response:' marker")
    while p >= 0:
        for naming in ("gen", "hand"):
            direction = "request"
            try:
                req = _t_body(line, i, p, TEXT_SPECS[(api, "request", naming)])
                direction = "response"
                resp = _t_body(line, p + 10, end, TEXT_SPECS[(api, "response", naming)])
            except _TextMismatch as e:
                if best is None or e.pos > best.pos:
                    best, best_dir = e, direction
                continue
            if naming == "hand" and api is ApiKey.FIND_COORDINATOR:
                coord = resp.pop("coordinator", None)
                if isinstance(coord, dict):
                    resp.update(coord)
            return req, resp, p
        p = line.find(",response:", p + 1, end)
    assert best is not None
    raise _Bad(f"{best_dir} body does not match Kafka's Struct format at char {best.pos}: {best.msg}")


def _parse_text(line: str, marker: int, b: int, tz: tzinfo) -> LineOutcome:
    hm = _TEXT_HEAD.match(line, b)
    if hm is None:
        reason = "text-era header: 'RequestHeader(apiKey=…,' not readable"
        return _quarantine(reason, None, _prefix_date(line, marker, tz))
    api = _KEPT_NAMES.get(hm.group(1))
    if api is None:
        return LineOutcome(LineKind.OTHER_API, api_name=hm.group(1))
    try:
        return _parse_text_kept(line, marker, b, tz, api)
    except _Bad as e:
        return _quarantine(str(e.args[0]), api.name, _prefix_date(line, marker, tz))


def _parse_text_kept(line: str, marker: int, b: int, tz: tzinfo, api: ApiKey) -> LineOutcome:
    end = _body_end(line, b)
    if end < 0:
        raise _Bad("truncated line: no ' (kafka.request.logger)' suffix")
    utc, level = _prefix(line, marker, tz)
    h = _TEXT_HEADER.match(line, b, end)
    if h is None:
        raise _Bad(
            "text-era header: RequestHeader(apiKey, apiVersion, clientId, correlationId) -- not readable"
        )
    v = int(h.group(2))
    if not 0 <= v <= MAX_API_VERSION[api]:
        raise _Bad(f"RequestHeader apiVersion {v} is out of range 0..{MAX_API_VERSION[api]} for {api.name}")
    # metrics tail: the last ' from connection ' whose rest parses (fall back to the first one)
    k = line.rfind(_FROM_CONN, h.end(), end)
    if k < 0:
        raise _Bad("text-era body: missing ' from connection ' marker")
    semi = line.find(";totalTime:", k, end)
    mm = _TEXT_METRICS.match(line, semi, end) if semi >= 0 else None
    if mm is None:
        k2 = line.find(_FROM_CONN, h.end(), end)
        semi = line.find(";totalTime:", k2, end)
        if k2 != k and semi >= 0:
            mm = _TEXT_METRICS.match(line, semi, end)
            k = k2
    if mm is None:
        tail = line[k:end]
        for name in _TEXT_METRIC_NAMES:
            if f"{name}:" not in tail:
                raise _Bad(f"text-era field {name} is missing")
        raise _Bad("text-era metrics after ' from connection ' do not match totalTime:…,listener:…")
    conn = line[k + len(_FROM_CONN) : semi]
    req, resp, p = _text_bodies(line, h.end(), k, api)

    r = _TEMPLATE.copy()
    r["log_era"] = "text"
    r["log_level"] = level
    r["api_key"] = _CODE[api]
    r["api_name"] = _NAME[api]
    r["api_version"] = v
    client = h.group(3)
    r["client_id"] = None if client == "null" else client
    r["correlation_id"] = int(h.group(4))
    r["connection"] = conn
    r["listener_address"], r["client_address"], r["connection_index"] = split_connection(conn)
    g = mm.group
    total = _text_float("totalTime", g(1))
    if not math.isfinite(total):
        raise _Bad("text-era field totalTime is not finite")
    r["total_time_ms"] = total
    r["request_queue_time_ms"] = _text_float("requestQueueTime", g(2))
    r["local_time_ms"] = _text_float("localTime", g(3))
    r["remote_time_ms"] = _text_float("remoteTime", g(4))
    r["throttle_time_ms"] = _text_long("throttleTime", g(5))
    r["response_queue_time_ms"] = _text_float("responseQueueTime", g(6))
    r["send_time_ms"] = _text_float("sendTime", g(7))
    r["security_protocol"] = g(8)
    r["principal"] = g(9)
    r["listener"] = g(10)
    r["client_software_name"] = g(11)
    r["client_software_version"] = g(12)
    if g(13) is not None:
        r["temporary_memory_bytes"] = _text_long("temporaryMemoryBytes", g(13))
    if g(14) is not None:
        r["message_conversions_time_ms"] = _text_float("messageConversionsTime", g(14))
    _set_times(r, utc, total, "totalTime")
    _map_bodies(api, v, req, resp, r)
    r["raw_request"] = line[h.end() : p]
    r["raw_response"] = line[p + 10 : k]
    return LineOutcome(LineKind.REQUEST, r, None, _NAME[api], r["log_date"])  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------------------


def _conformed(outcome: LineOutcome) -> LineOutcome:
    """The last check of a readable line: every value fits its ``requests`` column (Kafka's int32/int64
    fields, derived times), so writing the row can never fail; otherwise the line is quarantined with the
    column and the value."""
    if outcome.kind is not LineKind.REQUEST or outcome.record is None:
        return outcome
    problem = REQUESTS.conform(outcome.record)
    if problem is None:
        return outcome
    return _quarantine(f"value out of range or of the wrong type: {problem}", outcome.api_name, None)


def parse_line(line: str, tz: tzinfo) -> LineOutcome:
    """Classify and parse one physical log line; never raises.

    ``tz`` is the broker JVM's zone: the line timestamp is local time there and is converted to UTC.
    """
    try:
        marker = line.find(_MARKER)
        if marker < 0:
            return _OTHER
        if line.endswith(("\n", "\r")):
            line = line.rstrip("\r\n")
        b = marker + _MARKER_LEN
        if line.startswith("{", b):
            return _conformed(_parse_json(line, marker, b, tz))
        if line.startswith("RequestHeader(", b):
            return _conformed(_parse_text(line, marker, b, tz))
        return _quarantine(
            "request body after 'Completed request:' is neither a JSON object nor RequestHeader(…)",
            None,
            _prefix_date(line, marker, tz),
        )
    except Exception as e:  # never raise out of parse_line
        return _quarantine(f"unexpected parse error: {type(e).__name__}: {e}", None, None)


#: How far back a line's time may go behind the file's latest before it is a clock step, in ms. A broker
#: writes one file in order, but several network threads take their lines' times before they take the
#: appender's lock, so times interleave by a few ms (more under a GC pause that stops them all alike); a
#: second back is the broker's clock set back (NTP stepping it, an operator, a VM resumed).
CLOCK_STEP_BACK_MS = 1_000
#: How many consecutive request lines must agree before their time counts as the file's clock: one line
#: with a corrupted time (a flipped digit: a year ahead) must not make every later line look stepped back.
CLOCK_CONFIRM_LINES = 3


@dataclass
class ClockGuard:
    """The latest time of one file read in order, as its clock showed it, and the lines written after
    the clock stepped back. The file's latest time is the latest time that :data:`CLOCK_CONFIRM_LINES`
    consecutive request lines all reached (the least of them): a single line ahead of its neighbours is
    a wrong line, not the clock. A line more than :data:`CLOCK_STEP_BACK_MS` behind it was written after
    the broker's clock stepped back; such lines (until the clock passes that time again) are named, so
    that ingest quarantines them with the reason: their order against the lines before the step is
    unknown, and replaying them by their times would put them in an order the log does not show."""

    latest_ms: int | None = None
    recent: list[int] = field(default_factory=list)

    def stepped(self, times: Sequence[tuple[int, int | None]]) -> dict[int, str]:
        """``times``: (line number, completion ms) in line order (None: no time). Returns the stepped
        lines with their reasons."""
        out: dict[int, str] = {}
        for line_no, ms in times:
            if ms is None:
                continue
            if self.latest_ms is not None and ms < self.latest_ms - CLOCK_STEP_BACK_MS:
                back = (self.latest_ms - ms) / 1000
                out[line_no] = (
                    f"line time out of order: {back:.3f} s behind the lines before it "
                    "(the broker's clock stepped back; kept out of the replay until it passes that time)"
                )
                continue
            recent = self.recent
            recent.append(ms)
            if len(recent) > CLOCK_CONFIRM_LINES:
                del recent[0]
            if len(recent) == CLOCK_CONFIRM_LINES:
                agreed = min(recent)
                if self.latest_ms is None or agreed > self.latest_ms:
                    self.latest_ms = agreed
        return out
