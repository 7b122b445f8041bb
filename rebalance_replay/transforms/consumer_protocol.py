"""Decode (and encode) the ConsumerProtocol bytes carried by the group APIs (JSON-era logs only).

JoinGroup ``protocols[].metadata``, JoinGroup response ``members[].metadata`` and DescribeGroups
``memberMetadata`` hold a *Subscription*; SyncGroup ``assignments[].assignment``, the SyncGroup
response ``assignment`` and DescribeGroups ``memberAssignment`` hold an *Assignment*.

Layout (classic, non-flexible encoding, big-endian): ``int16`` schema version, then

* Subscription: ``topics`` (int32 count, int16-length UTF-8 strings); ``userData`` (int32 length,
  -1 = null); v1+ ``ownedPartitions`` (int32 count of ``{topic string, partitions int32[]}``);
  v2+ ``generationId`` int32; v3+ ``rackId`` (int16 length, -1 = null).
* Assignment: ``assignedPartitions`` (``[{topic, partitions int32[]}]``), ``userData``.

Versions above the highest known one (3) are read as version 3 with trailing bytes ignored, the way
Kafka reads newer versions; for known versions trailing bytes are an error.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "Assignment",
    "ConsumerProtocolError",
    "Subscription",
    "TopicPartitions",
    "decode_assignment",
    "decode_subscription",
    "encode_assignment",
    "encode_subscription",
    "try_decode_assignment",
    "try_decode_subscription",
]

#: Highest ConsumerProtocol schema version this module knows (same for Subscription and Assignment).
MAX_KNOWN_VERSION = 3

TopicPartitions = tuple[tuple[str, tuple[int, ...]], ...]


class ConsumerProtocolError(ValueError):
    """The bytes are not a valid ConsumerProtocol Subscription/Assignment."""


@dataclass(frozen=True, slots=True)
class Subscription:
    version: int
    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: TopicPartitions = ()
    generation_id: int = -1
    rack_id: str | None = None


@dataclass(frozen=True, slots=True)
class Assignment:
    version: int
    partitions: TopicPartitions
    user_data: bytes | None = None


_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


class _Reader:
    __slots__ = ("data", "pos", "what")

    def __init__(self, data: bytes, what: str) -> None:
        self.data = data
        self.pos = 0
        self.what = what

    def _need(self, n: int, field: str) -> None:
        if self.pos + n > len(self.data):
            raise ConsumerProtocolError(
                f"{self.what}: truncated at byte {self.pos} reading {field} "
                f"(need {n} bytes, {len(self.data) - self.pos} left)"
            )

    def i16(self, field: str) -> int:
        self._need(2, field)
        (v,) = _I16.unpack_from(self.data, self.pos)
        self.pos += 2
        return int(v)

    def i32(self, field: str) -> int:
        self._need(4, field)
        (v,) = _I32.unpack_from(self.data, self.pos)
        self.pos += 4
        return int(v)

    def string(self, field: str, nullable: bool = False) -> str | None:
        n = self.i16(field)
        if n < 0:
            if nullable and n == -1:
                return None
            raise ConsumerProtocolError(f"{self.what}: {field} has invalid length {n}")
        self._need(n, field)
        raw = self.data[self.pos : self.pos + n]
        self.pos += n
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ConsumerProtocolError(f"{self.what}: {field} is not valid UTF-8: {e}") from None

    def nbytes(self, field: str) -> bytes | None:
        n = self.i32(field)
        if n < 0:
            if n == -1:
                return None
            raise ConsumerProtocolError(f"{self.what}: {field} has invalid length {n}")
        self._need(n, field)
        raw = self.data[self.pos : self.pos + n]
        self.pos += n
        return bytes(raw)

    def count(self, field: str, min_item_size: int) -> int:
        n = self.i32(field)
        if n < 0:
            raise ConsumerProtocolError(f"{self.what}: {field} has invalid count {n}")
        if n * min_item_size > len(self.data) - self.pos:
            raise ConsumerProtocolError(f"{self.what}: {field} count {n} exceeds the remaining bytes")
        return n

    def topic_partitions(self, field: str) -> TopicPartitions:
        out = []
        for _ in range(self.count(field, 6)):
            topic = self.string(f"{field}.topic")
            assert topic is not None
            parts = tuple(
                self.i32(f"{field}.partitions") for _ in range(self.count(f"{field}.partitions", 4))
            )
            out.append((topic, parts))
        return tuple(out)

    def version(self) -> int:
        v = self.i16("version")
        if v < 0:
            raise ConsumerProtocolError(f"{self.what}: invalid version {v}")
        return v

    def finish(self, version: int) -> None:
        if self.pos != len(self.data) and version <= MAX_KNOWN_VERSION:
            raise ConsumerProtocolError(
                f"{self.what}: {len(self.data) - self.pos} unexpected trailing bytes after v{version} data"
            )


def _as_bytes(data: bytes | bytearray | memoryview) -> bytes:
    if isinstance(data, bytes):
        return data
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    raise ConsumerProtocolError(f"expected bytes, got {type(data).__name__}")


def decode_subscription(data: bytes) -> Subscription:
    """Decode ConsumerProtocolSubscription bytes; :class:`ConsumerProtocolError` when malformed."""
    r = _Reader(_as_bytes(data), "subscription")
    v = r.version()
    topics = []
    for _ in range(r.count("topics", 2)):
        t = r.string("topics")
        assert t is not None
        topics.append(t)
    user_data = r.nbytes("userData")
    owned: TopicPartitions = ()
    generation_id = -1
    rack_id = None
    if v >= 1:
        owned = r.topic_partitions("ownedPartitions")
    if v >= 2:
        generation_id = r.i32("generationId")
    if v >= 3:
        rack_id = r.string("rackId", nullable=True)
    r.finish(v)
    return Subscription(v, tuple(topics), user_data, owned, generation_id, rack_id)


def decode_assignment(data: bytes) -> Assignment:
    """Decode ConsumerProtocolAssignment bytes; :class:`ConsumerProtocolError` when malformed."""
    r = _Reader(_as_bytes(data), "assignment")
    v = r.version()
    parts = r.topic_partitions("assignedPartitions")
    user_data = r.nbytes("userData")
    r.finish(v)
    return Assignment(v, parts, user_data)


def try_decode_subscription(data: bytes | None) -> Subscription | None:
    """Like :func:`decode_subscription` but None for null or malformed bytes (for column functions)."""
    if data is None:
        return None
    try:
        return decode_subscription(data)
    except ConsumerProtocolError:
        return None


def try_decode_assignment(data: bytes | None) -> Assignment | None:
    """Like :func:`decode_assignment` but None for null or malformed bytes (for column functions)."""
    if data is None:
        return None
    try:
        return decode_assignment(data)
    except ConsumerProtocolError:
        return None


# ---------------------------------------------------------------------------------------------------
# Encoding (tests, sample generation)
# ---------------------------------------------------------------------------------------------------


def _w_string(out: bytearray, s: str | None) -> None:
    if s is None:
        out += _I16.pack(-1)
        return
    b = s.encode("utf-8")
    out += _I16.pack(len(b))
    out += b


def _w_bytes(out: bytearray, b: bytes | None) -> None:
    if b is None:
        out += _I32.pack(-1)
        return
    out += _I32.pack(len(b))
    out += b


def _w_topic_partitions(out: bytearray, tps: Iterable[tuple[str, Sequence[int]]]) -> None:
    items = list(tps)
    out += _I32.pack(len(items))
    for topic, parts in items:
        _w_string(out, topic)
        out += _I32.pack(len(parts))
        for p in parts:
            out += _I32.pack(p)


def _check_version(version: int) -> None:
    if not 0 <= version <= MAX_KNOWN_VERSION:
        raise ValueError(f"can only encode versions 0..{MAX_KNOWN_VERSION}, not {version}")


def encode_subscription(
    topics: Sequence[str],
    user_data: bytes | None = None,
    owned_partitions: Iterable[tuple[str, Sequence[int]]] = (),
    generation_id: int = -1,
    rack_id: str | None = None,
    *,
    version: int = MAX_KNOWN_VERSION,
) -> bytes:
    """Encode a Subscription; fields the ``version`` does not have are left out."""
    _check_version(version)
    out = bytearray(_I16.pack(version))
    out += _I32.pack(len(topics))
    for t in topics:
        _w_string(out, t)
    _w_bytes(out, user_data)
    if version >= 1:
        _w_topic_partitions(out, owned_partitions)
    if version >= 2:
        out += _I32.pack(generation_id)
    if version >= 3:
        _w_string(out, rack_id)
    return bytes(out)


def encode_assignment(
    partitions: Iterable[tuple[str, Sequence[int]]],
    user_data: bytes | None = None,
    *,
    version: int = MAX_KNOWN_VERSION,
) -> bytes:
    """Encode an Assignment (the layout is the same for every version 0..3)."""
    _check_version(version)
    out = bytearray(_I16.pack(version))
    _w_topic_partitions(out, partitions)
    _w_bytes(out, user_data)
    return bytes(out)
