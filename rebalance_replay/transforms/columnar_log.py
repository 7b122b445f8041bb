"""Columnar parsing of the routine JSON-era lines: Heartbeats and OffsetCommits, written the way a broker
writes them, typed a block at a time with Arrow's JSON reader and compute kernels instead of one
``parse_line`` call a line.

Most lines of a request log are a group's members heartbeating and committing. This module takes a block
of lines (as read from one file) and returns, for the lines it can type with certainty, the ``requests``
columns ``parse_line`` would give them; every other line of the block (other APIs, the text era, anything
malformed, ambiguous or merely unusual) is left to ``parse_line``, which types it or quarantines it with
the field named. The contract, tested line by line against ``parse_line`` on the whole test corpus: a row
this module returns is exactly the record ``parse_line`` returns for that line.

A line is taken only when
- it has the broker's exact shape: ``[yyyy-MM-dd HH:mm:ss,SSS] DEBUG|INFO Completed request:{"isForwarded":
  …,"requestHeader":{"requestApiKey":12|8,`` … ``,"request":…,"response":…,"connection":…} (kafka.request
  .logger)`` with no backslash anywhere (so no string holds a quote or an escape, and the raw request and
  response bodies are the text between the top-level keys, as ``parse_line`` cuts them);
- its body parses against the API's schema with no field of another type, out of range, repeated or
  unknown (Arrow's reader refuses all of these; a block it refuses is split in halves until the lines
  it refuses are alone);
- nothing ``parse_line`` reads is null where a null would mean something else (a missing key, a null array
  element), the header names the API its key says, the version is one Kafka has, the timestamp is a real
  date in the broker's zone and ``totalTimeMs`` is a finite number.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from rebalance_replay.schemas.core import arrow_table, arrow_type
from rebalance_replay.schemas.tables import COMMIT_PARTITION, COMMIT_PARTITION_RESPONSE
from rebalance_replay.transforms.kafka_protocol import MAX_API_VERSION, ApiKey, Errors
from rebalance_replay.transforms.request_log import (
    EARLIEST_LINE_MS,
    LATEST_LINE_MS,
    MAX_TOTAL_TIME_MS,
    RECORD_COLUMNS,
    split_connection,
)

__all__ = ["ROUTINE_APIS", "RoutineRows", "parse_routine_lines"]

#: The APIs typed here: the routine traffic of a Stable group.
ROUTINE_APIS: tuple[ApiKey, ...] = (ApiKey.HEARTBEAT, ApiKey.OFFSET_COMMIT)

# The start of the broker's line, exactly (RE2 syntax); the line must also end with the logger suffix.
_HEAD = (
    r"^\[(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(?P<ms>\d{3})\] (?P<level>DEBUG|INFO) Completed request:"
    r'\{"isForwarded":(?:true|false),"requestHeader":\{"requestApiKey":(?P<key>12|8),'
)
_SUFFIX = " (kafka.request.logger)"
#: where the JSON body starts after ``[yyyy-MM-dd HH:mm:ss,SSS] LEVEL Completed request:``
_BODY_AT = {"DEBUG": 50, "INFO": 49}
# a key of the request object (a string followed by a colon can only be a key)
_GEN_OR_EPOCH_KEY = r'"generationIdOrMemberEpoch"\s*:'

_I32, _I64, _F64, _STR, _BOOL = pa.int32(), pa.int64(), pa.float64(), pa.string(), pa.bool_()


def _struct(*fields: tuple[str, pa.DataType]) -> pa.StructType:
    return pa.struct([pa.field(n, t) for n, t in fields])


_HEADER = _struct(
    ("requestApiKey", _I32),
    ("requestApiVersion", _I32),
    ("correlationId", _I32),
    ("clientId", _STR),
    ("requestApiKeyName", _STR),
    ("requestApiVersionDeprecated", _BOOL),
)
_REQUEST: dict[ApiKey, pa.StructType] = {
    ApiKey.HEARTBEAT: _struct(
        ("groupId", _STR), ("generationId", _I32), ("memberId", _STR), ("groupInstanceId", _STR)
    ),
    ApiKey.OFFSET_COMMIT: _struct(
        ("groupId", _STR),
        ("generationIdOrMemberEpoch", _I32),
        ("generationId", _I32),
        ("memberId", _STR),
        ("groupInstanceId", _STR),
        ("retentionTimeMs", _I64),
        (
            "topics",
            pa.list_(
                _struct(
                    ("name", _STR),
                    ("topicId", _STR),
                    (
                        "partitions",
                        pa.list_(
                            _struct(
                                ("partitionIndex", _I32),
                                ("committedOffset", _I64),
                                ("committedLeaderEpoch", _I32),
                                ("commitTimestamp", _I64),
                                ("committedMetadata", _STR),
                            )
                        ),
                    ),
                )
            ),
        ),
    ),
}
_RESPONSE: dict[ApiKey, pa.StructType] = {
    ApiKey.HEARTBEAT: _struct(("throttleTimeMs", _I32), ("errorCode", _I32)),
    ApiKey.OFFSET_COMMIT: _struct(
        ("throttleTimeMs", _I32),
        (
            "topics",
            pa.list_(
                _struct(
                    ("name", _STR),
                    ("topicId", _STR),
                    ("partitions", pa.list_(_struct(("partitionIndex", _I32), ("errorCode", _I32)))),
                )
            ),
        ),
    ),
}


def _body_schema(api: ApiKey) -> pa.Schema:  # pragma: no mutate block (import time: builds _SCHEMAS)
    return pa.schema(
        [
            ("isForwarded", _BOOL),
            ("requestHeader", _HEADER),
            ("request", _REQUEST[api]),
            ("response", _RESPONSE[api]),
            ("connection", _STR),
            ("totalTimeMs", _F64),
            ("requestQueueTimeMs", _F64),
            ("localTimeMs", _F64),
            ("remoteTimeMs", _F64),
            ("throttleTimeMs", _I64),
            ("responseQueueTimeMs", _F64),
            ("sendTimeMs", _F64),
            ("securityProtocol", _STR),
            ("principal", _STR),
            ("listener", _STR),
            ("clientInformation", _struct(("softwareName", _STR), ("softwareVersion", _STR))),
            ("temporaryMemoryBytes", _I64),
            ("messageConversionsTime", _F64),
        ]
    )


_SCHEMAS = {api: _body_schema(api) for api in ROUTINE_APIS}
_COMMIT_PARTITION = arrow_type(COMMIT_PARTITION)
_COMMIT_PARTITION_RESPONSE = arrow_type(COMMIT_PARTITION_RESPONSE)
_MS_PER_DAY = 86_400_000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class RoutineRows:
    """The typed lines of a block: ``positions`` (indices into the block, ascending) and ``records``, one
    row a position with the columns :data:`RECORD_COLUMNS` in their Arrow types."""

    positions: np.ndarray
    records: pa.Table


def parse_routine_lines(lines: Sequence[str], tz: tzinfo) -> RoutineRows:
    """Type the routine lines of a block (see the module docstring); ``tz``: the broker JVM's zone."""
    arr = pa.array(lines, _STR)
    head = pc.extract_regex(arr, _HEAD)
    ok = _np_bool(head.is_valid()) & _np_bool(pc.ends_with(arr, _SUFFIX))
    # no control character (Python's JSON refuses them raw in strings): printable ASCII is cheap to tell,
    # the few other lines are searched (a backslash is looked for with the raw bodies, in _sections)
    plain = _np_bool(pc.ascii_is_printable(arr))
    others = np.flatnonzero(ok & ~plain)
    if len(others):
        control = _np_bool(pc.match_substring_regex(arr.take(pa.array(others)), r"[\x00-\x1f\x7f]"))
        plain[others[~control]] = True
    ok &= plain
    keys = pc.struct_field(head, "key")
    levels = pc.struct_field(head, "level")
    parts: list[tuple[np.ndarray, dict[str, pa.Array]]] = []
    for api in ROUTINE_APIS:
        is_api = ok & _np_bool(pc.equal(keys, str(int(api))))
        for level, at in _BODY_AT.items():
            idx = np.flatnonzero(is_api & _np_bool(pc.equal(levels, level)))
            if not len(idx):
                continue
            taken = pa.array(idx)
            raw = arr.take(taken).cast(pa.binary())
            bodies = pc.binary_slice(raw, at, -len(_SUFFIX)).view(_STR)
            got, body = _read_bodies(bodies, _SCHEMAS[api])
            if not len(got):
                continue
            rows = idx[got]
            cols, keep = _columns(api, head.take(pa.array(rows)), body, [lines[i] for i in rows], tz)
            kept = np.flatnonzero(keep)
            if len(kept):
                take = pa.array(kept)
                parts.append((rows[kept], {k: v.take(take) for k, v in cols.items()}))
    if not parts:
        return RoutineRows(np.zeros(0, dtype=np.int64), _RECORD_SCHEMA.empty_table())
    positions = np.concatenate([p for p, _ in parts])
    order = np.argsort(positions, kind="stable")
    table = pa.concat_tables([_record_table(c) for _, c in parts]).take(pa.array(order))
    return RoutineRows(positions[order], table)


def _sections(lines: list[str]) -> tuple[pa.Array, pa.Array, np.ndarray]:
    """The raw request and response bodies as ``parse_line`` cuts them: from the first ``,"request":`` to
    the first ``,"response":`` after it, and on to the first ``,"connection":`` (with no backslash in the
    line, no string value can hold these keys); and which lines have all three and no backslash."""
    req: list[str | None] = []
    resp: list[str | None] = []
    found = np.ones(len(lines), dtype=bool)
    for n, line in enumerate(lines):
        # an escape: strings could hold anything, parse_line decides
        i = -1 if "\\" in line else line.find(',"request":')
        j = line.find(',"response":', i + 11) if i >= 0 else -1
        k = line.find(',"connection":', j + 12) if j >= 0 else -1
        if k < 0:
            found[n] = False
            req.append(None)
            resp.append(None)
        else:
            req.append(line[i + 11 : j])
            resp.append(line[j + 12 : k])
    return pa.array(req, _STR), pa.array(resp, _STR), found


# --------------------------------------------------------------------------------------------------
# JSON bodies
# --------------------------------------------------------------------------------------------------


def _read_bodies(bodies: pa.Array, schema: pa.Schema) -> tuple[np.ndarray, pa.StructArray]:
    """Parse ``bodies`` against ``schema``: (the indices that parsed, their rows as one struct array).
    A block Arrow refuses is split in halves until each refused line is alone (and left out)."""
    got: list[np.ndarray] = []
    rows: list[pa.RecordBatch] = []

    def attempt(lo: int, hi: int) -> None:
        chunk = bodies.slice(lo, hi - lo)
        table = _read_json(chunk, schema)
        if table is not None and table.num_rows == hi - lo:
            got.append(np.arange(lo, hi))
            rows.extend(table.to_batches())
        elif hi - lo > 1:
            mid = (lo + hi) // 2
            attempt(lo, mid)
            attempt(mid, hi)

    attempt(0, len(bodies))
    if not got:
        return np.zeros(0, dtype=np.int64), pa.array([], pa.struct(list(schema)))
    table = pa.Table.from_batches(rows, schema=schema).combine_chunks()
    columns = [c.chunk(0) if c.num_chunks else pa.array([], c.type) for c in table.columns]
    return np.concatenate(got), pa.StructArray.from_arrays(columns, fields=list(schema))


def _read_json(chunk: pa.Array, schema: pa.Schema) -> pa.Table | None:
    joined = pc.binary_join_element_wise(chunk, pa.scalar(""), "\n")
    _, offsets_buf, data = joined.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int32)[joined.offset : joined.offset + len(joined) + 1]
    start, end = int(offsets[0]), int(offsets[-1])
    buf = data[start:end] if data is not None else pa.py_buffer(b"")
    try:
        return pj.read_json(
            pa.BufferReader(buf),
            read_options=pj.ReadOptions(use_threads=False, block_size=max(1 << 20, end - start + 1)),
            parse_options=pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="error"),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


# --------------------------------------------------------------------------------------------------
# Columns
# --------------------------------------------------------------------------------------------------


def _f(arr: pa.Array, *path: str) -> pa.Array:
    for name in path:
        arr = pc.struct_field(arr, name)
    return arr


def _np_bool(arr: pa.Array) -> np.ndarray:
    return np.asarray(arr.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)


def _by_value(arr: pa.Array, fn: Callable[[Any], Any], out_type: pa.DataType) -> pa.Array:
    """``fn`` applied to each distinct value of ``arr`` once (connections, error codes, seconds repeat)."""
    enc = pc.dictionary_encode(arr)
    mapped = pa.array([fn(v) for v in enc.dictionary.to_pylist()], out_type)
    return mapped.take(enc.indices)


def _utc_second(local: str, tz: tzinfo) -> int | None:
    """Epoch second of a ``yyyy-MM-dd HH:mm:ss`` wall time in ``tz`` (fold 0, as ``parse_line``), or None
    when it is not a real date."""
    try:
        dt = datetime(
            int(local[0:4]),
            int(local[5:7]),
            int(local[8:10]),
            int(local[11:13]),
            int(local[14:16]),
            int(local[17:19]),
            tzinfo=tz,
        ).astimezone(UTC)
    except (ValueError, OverflowError):
        return None
    return (dt - _EPOCH) // timedelta(seconds=1)


def _connection_parts(conn: pa.Array) -> tuple[pa.Array, pa.Array, pa.Array]:
    """(listener address, client address, connection index) of each connection, split once per distinct
    connection by ``split_connection``."""
    enc = pc.dictionary_encode(conn)
    split = [split_connection(c) for c in enc.dictionary.to_pylist()]
    parts = [pa.array([p[i] for p in split], _STR).take(enc.indices) for i in range(3)]
    return parts[0], parts[1], parts[2]


def _columns(
    api: ApiKey, m: pa.StructArray, body: pa.StructArray, lines: list[str], tz: tzinfo
) -> tuple[dict[str, pa.Array], np.ndarray]:
    """The record columns of one API's parsed lines, and which of them are certain (the rest fall back)."""
    n = len(m)
    hdr = _f(body, "requestHeader")
    req = _f(body, "request")
    resp = _f(body, "response")
    total = _f(body, "totalTimeMs")
    version = _f(hdr, "requestApiVersion")
    raw_request, raw_response, found = _sections(lines)
    keep = (
        found
        & _np_bool(hdr.is_valid())
        & _np_bool(req.is_valid())
        & _np_bool(resp.is_valid())
        & _np_bool(pc.equal(_f(hdr, "requestApiKeyName"), api.name))
        & _np_bool(pc.and_(pc.greater_equal(version, 0), pc.less_equal(version, MAX_API_VERSION[api])))
        & _np_bool(_f(hdr, "correlationId").is_valid())
        & _np_bool(_f(hdr, "clientId").is_valid())  # a null clientId might be a missing one
        & _np_bool(_f(req, "groupId").is_valid())
        # null, NaN and ±inf compare false; out of range falls back to parse_line, which says why
        & _np_bool(pc.and_(pc.greater_equal(total, 0.0), pc.less_equal(total, float(MAX_TOTAL_TIME_MS))))
    )
    # completion time: the wall-clock second through the zone once per distinct second, then the millis
    seconds = _by_value(pc.struct_field(m, "ts"), lambda s: _utc_second(s, tz), _I64)
    keep &= _np_bool(seconds.is_valid())
    completion_ms = pc.add(pc.multiply(seconds.fill_null(0), 1000), pc.cast(_f(m, "ms"), _I64))
    arrival_ms = pc.subtract(
        completion_ms, pc.cast(pc.floor(pc.add(total.fill_null(0.0), 0.5)), _I64, safe=False)
    )
    keep &= _np_bool(
        pc.and_(pc.greater_equal(arrival_ms, EARLIEST_LINE_MS), pc.less(completion_ms, LATEST_LINE_MS))
    )
    conn = _f(body, "connection")
    listener_address, client_address, connection_index = _connection_parts(conn)
    info = _f(body, "clientInformation")
    cols: dict[str, pa.Array] = {
        "log_era": pa.repeat("json", n) if n else pa.array([], _STR),
        "log_level": _f(m, "level"),
        "api_key": pa.array(np.full(n, int(api), dtype=np.int32)),
        "api_name": pa.array([api.name] * n, _STR),
        "api_version": version,
        "api_version_deprecated": _f(hdr, "requestApiVersionDeprecated"),
        "correlation_id": _f(hdr, "correlationId"),
        "client_id": _f(hdr, "clientId"),
        "is_forwarded": _f(body, "isForwarded"),
        "connection": conn,
        "listener_address": listener_address,
        "client_address": client_address,
        "connection_index": connection_index,
        "security_protocol": _f(body, "securityProtocol"),
        "principal": _f(body, "principal"),
        "listener": _f(body, "listener"),
        "client_software_name": _f(info, "softwareName"),
        "client_software_version": _f(info, "softwareVersion"),
        "completion_time": pc.cast(pc.multiply(completion_ms, 1000), _I64).cast(pa.timestamp("us", tz="UTC")),
        "completion_ms": completion_ms,
        "arrival_ms": arrival_ms,
        "total_time_ms": total,
        "request_queue_time_ms": _f(body, "requestQueueTimeMs"),
        "local_time_ms": _f(body, "localTimeMs"),
        "remote_time_ms": _f(body, "remoteTimeMs"),
        "throttle_time_ms": _f(body, "throttleTimeMs"),
        "response_queue_time_ms": _f(body, "responseQueueTimeMs"),
        "send_time_ms": _f(body, "sendTimeMs"),
        "temporary_memory_bytes": _f(body, "temporaryMemoryBytes"),
        "message_conversions_time_ms": _f(body, "messageConversionsTime"),
        "group_id": _f(req, "groupId"),
        "member_id": _f(req, "memberId"),
        "group_instance_id": _f(req, "groupInstanceId"),
        "raw_request": raw_request,
        "raw_response": raw_response,
        "log_date": pc.cast(pc.floor(pc.divide(pc.cast(completion_ms, _F64), float(_MS_PER_DAY))), _I32).cast(
            pa.date32()
        ),
    }
    if api is ApiKey.HEARTBEAT:
        code = _f(resp, "errorCode")
        cols["generation_id"] = _f(req, "generationId")
    else:
        has_key = pc.match_substring_regex(raw_request, _GEN_OR_EPOCH_KEY)
        cols["generation_id"] = pc.if_else(
            has_key, _f(req, "generationIdOrMemberEpoch"), _f(req, "generationId")
        )
        commits, ok_req = _partitions(_f(req, "topics"), ("partitionIndex", "committedOffset"))
        answers, ok_resp = _partitions(_f(resp, "topics"), ("partitionIndex", "errorCode"))
        keep &= ok_req & ok_resp
        cols["commit_partitions"] = _commit_partitions(commits)
        cols["response_commit_partitions"], code = _response_partitions(answers)
    cols["error_code"] = code
    cols["error_name"] = _by_value(code, Errors.name_of, _STR)
    return cols, keep


def _partitions(topics: pa.Array, fields: tuple[str, str]) -> tuple[pa.ListArray, np.ndarray]:
    """Each row's partitions across its topics, in order, as a list of (topic, field0, field1) structs;
    and which rows are certain (no null topic or partition element: ``parse_line`` quarantines those)."""
    n = len(topics)
    flat_topics = pc.list_flatten(topics)
    topic_row = np.asarray(pc.list_parent_indices(topics).to_numpy(), dtype=np.int64)
    bad = np.zeros(n, dtype=bool)
    if flat_topics.null_count:
        bad[topic_row[~_np_bool(flat_topics.is_valid())]] = True
    name = pc.coalesce(_f(flat_topics, "name"), _f(flat_topics, "topicId"))
    parts = _f(flat_topics, "partitions")
    flat_parts = pc.list_flatten(parts)
    part_topic = np.asarray(pc.list_parent_indices(parts).to_numpy(), dtype=np.int64)
    if flat_parts.null_count:
        bad[topic_row[part_topic[~_np_bool(flat_parts.is_valid())]]] = True
    part_row = topic_row[part_topic]
    counts = np.bincount(part_row, minlength=n)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    values = pa.StructArray.from_arrays(
        [name.take(pa.array(part_topic)), _f(flat_parts, fields[0]), _f(flat_parts, fields[1])],
        names=["topic", *fields],
    )
    lists = pa.ListArray.from_arrays(pa.array(offsets), values, mask=pc.invert(topics.is_valid()))
    return lists, ~bad


def _commit_partitions(lists: pa.ListArray) -> pa.Array:
    flat = lists.values
    values = pa.StructArray.from_arrays(
        [_f(flat, "topic"), _f(flat, "partitionIndex"), _f(flat, "committedOffset")],
        fields=list(_COMMIT_PARTITION),
    )
    return pa.ListArray.from_arrays(lists.offsets, values, mask=pc.invert(lists.is_valid()))


def _response_partitions(lists: pa.ListArray) -> tuple[pa.Array, pa.Array]:
    """(``response_commit_partitions``, the row's error code: its first non-zero partition error, else 0)."""
    flat = lists.values
    codes = _f(flat, "errorCode")
    values = pa.StructArray.from_arrays(
        [_f(flat, "topic"), _f(flat, "partitionIndex"), codes, _by_value(codes, Errors.name_of, _STR)],
        fields=list(_COMMIT_PARTITION_RESPONSE),
    )
    out = pa.ListArray.from_arrays(lists.offsets, values, mask=pc.invert(lists.is_valid()))
    n = len(lists)
    code = np.zeros(n, dtype=np.int32)
    code_np = np.asarray(codes.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int32)
    nonzero = np.flatnonzero(code_np)
    if len(nonzero):
        offsets = np.asarray(lists.offsets.to_numpy(), dtype=np.int64)
        rows = np.searchsorted(offsets, nonzero, side="right") - 1
        first_rows, first_at = np.unique(rows, return_index=True)
        code[first_rows] = code_np[nonzero[first_at]]
    return out, pa.array(code, _I32)


# --------------------------------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------------------------------


def _record_schema() -> pa.Schema:
    from rebalance_replay.schemas.tables import REQUESTS

    types = {f.name: f.type for f in REQUESTS.arrow_schema()}
    return pa.schema([pa.field(c, types[c]) for c in RECORD_COLUMNS])


_RECORD_SCHEMA = _record_schema()


def _record_table(cols: dict[str, pa.Array]) -> pa.Table:
    return arrow_table(_RECORD_SCHEMA, len(next(iter(cols.values()))), cols)
