"""ConsumerProtocol Subscription / Assignment bytes: the reference's worked examples, round trips and
malformed input."""

from __future__ import annotations

import base64
import contextlib
import struct
from datetime import UTC

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rebalance_replay.transforms.consumer_protocol import (
    Assignment,
    ConsumerProtocolError,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
    try_decode_assignment,
    try_decode_subscription,
)
from rebalance_replay.transforms.request_log import LineKind, parse_line

SUB_EXAMPLE = "AAMAAAABAAF0/////wAAAAD///////8="
ASG_EXAMPLE = "AAMAAAABAAF0AAAAAgAAAAAAAAAB/////w=="


def test_reference_subscription_example() -> None:
    sub = decode_subscription(base64.b64decode(SUB_EXAMPLE))
    assert sub == Subscription(
        version=3, topics=("t",), user_data=None, owned_partitions=(), generation_id=-1, rack_id=None
    )
    assert base64.b64encode(encode_subscription(["t"])).decode() == SUB_EXAMPLE


def test_reference_assignment_example() -> None:
    asg = decode_assignment(base64.b64decode(ASG_EXAMPLE))
    assert asg == Assignment(version=3, partitions=(("t", (0, 1)),), user_data=None)
    assert base64.b64encode(encode_assignment([("t", [0, 1])])).decode() == ASG_EXAMPLE


def test_older_subscription_versions_leave_fields_out() -> None:
    v0 = encode_subscription(["a", "b"], user_data=b"\x01\x02", version=0)
    assert v0 == b"\x00\x00" + b"\x00\x00\x00\x02" + b"\x00\x01a\x00\x01b" + b"\x00\x00\x00\x02\x01\x02"
    assert decode_subscription(v0) == Subscription(0, ("a", "b"), b"\x01\x02")
    v1 = encode_subscription(["a"], owned_partitions=[("a", [3])], generation_id=7, version=1)
    assert decode_subscription(v1) == Subscription(1, ("a",), None, (("a", (3,)),), -1, None)
    v2 = encode_subscription(["a"], generation_id=7, rack_id="r1", version=2)
    assert decode_subscription(v2).generation_id == 7 and decode_subscription(v2).rack_id is None
    v3 = encode_subscription(["a"], generation_id=7, rack_id="rack-ä", version=3)
    assert decode_subscription(v3) == Subscription(3, ("a",), None, (), 7, "rack-ä")


def test_newer_versions_ignore_trailing_fields() -> None:
    data = struct.pack(">h", 4) + encode_subscription(["t"])[2:] + b"future-field"
    assert decode_subscription(data).topics == ("t",)
    data = struct.pack(">h", 5) + encode_assignment([("t", [1])])[2:] + b"\x00"
    assert decode_assignment(data).partitions == (("t", (1,)),)


@pytest.mark.parametrize(
    "data,match",
    [
        (b"", "truncated at byte 0 reading version"),
        (b"\x00", "truncated"),
        (b"\xff\xff", "invalid version -1"),
        (b"\x00\x03\x00\x00\x00\x01\x00\x05ab", "truncated at byte 8 reading topics"),
        (b"\x00\x00\x7f\xff\xff\xff", "topics count 2147483647 exceeds the remaining bytes"),
        (b"\x00\x00\xff\xff\xff\xfe", "topics has invalid count -2"),
        (b"\x00\x00\x00\x00\x00\x01\xff\xfe", "topics has invalid length -2"),
        (b"\x00\x00\x00\x00\x00\x01\xff\xff", "topics has invalid length -1"),
        (b"\x00\x00\x00\x00\x00\x01\x00\x01\xff\xff\xff\xff\xff", "not valid UTF-8"),
        (b"\x00\x00\x00\x00\x00\x00\xff\xff\xff\xfe", "userData has invalid length -2"),
        (base64.b64decode(SUB_EXAMPLE) + b"x", "1 unexpected trailing bytes after v3 data"),
    ],
)
def test_malformed_subscriptions(data: bytes, match: str) -> None:
    with pytest.raises(ConsumerProtocolError, match=match):
        decode_subscription(data)
    assert try_decode_subscription(data) is None


def test_malformed_assignments() -> None:
    good = base64.b64decode(ASG_EXAMPLE)
    for cut in range(len(good)):
        with pytest.raises(ConsumerProtocolError):
            decode_assignment(good[:cut])
        assert try_decode_assignment(good[:cut]) is None
    assert isinstance(ConsumerProtocolError("x"), ValueError)
    with pytest.raises(ConsumerProtocolError, match="expected bytes"):
        decode_assignment("AAM=")  # type: ignore[arg-type]


def test_try_decode_null_and_bytearray() -> None:
    assert try_decode_subscription(None) is None and try_decode_assignment(None) is None
    assert try_decode_assignment(bytearray(base64.b64decode(ASG_EXAMPLE))) is not None  # type: ignore[arg-type]


def test_encode_rejects_unknown_versions() -> None:
    with pytest.raises(ValueError):
        encode_subscription(["t"], version=4)
    with pytest.raises(ValueError):
        encode_assignment([], version=-1)


def test_decoding_bytes_from_a_parsed_json_line() -> None:
    line = (
        '[2024-05-01 10:00:04,000] DEBUG Completed request:{"isForwarded":false,"requestHeader":'
        '{"requestApiKey":14,"requestApiVersion":5,"correlationId":6,"clientId":"c",'
        '"requestApiKeyName":"SYNC_GROUP"},"request":{"groupId":"g1","generationId":2,"memberId":"c-1",'
        '"groupInstanceId":null,"protocolType":"consumer","protocolName":"range","assignments":[{"memberId":'
        f'"c-1","assignment":"{ASG_EXAMPLE}"}}]}},"response":{{"throttleTimeMs":0,"errorCode":0,'
        f'"protocolType":"consumer","protocolName":"range","assignment":"{ASG_EXAMPLE}"}},"connection":'
        '"10.0.0.5:9092-10.0.0.9:53422-12","totalTimeMs":1.0,"requestQueueTimeMs":0.0,"localTimeMs":1.0,'
        '"remoteTimeMs":0.0,"throttleTimeMs":0,"responseQueueTimeMs":0.0,"sendTimeMs":0.0,'
        '"securityProtocol":"PLAINTEXT","principal":"User:ANONYMOUS","listener":"PLAINTEXT",'
        '"clientInformation":{"softwareName":"apache-kafka-java","softwareVersion":"3.6.1"}}'
        " (kafka.request.logger)"
    )
    out = parse_line(line, UTC)
    assert out.kind is LineKind.REQUEST and out.record is not None
    raw = out.record["response_assignment"]
    assert isinstance(raw, bytes)
    assert decode_assignment(raw).partitions == (("t", (0, 1)),)


_topic = st.text(min_size=0, max_size=12)
_tps = st.lists(st.tuples(_topic, st.lists(st.integers(-(2**31), 2**31 - 1), max_size=5)), max_size=4)
_user = st.none() | st.binary(max_size=20)


@settings(max_examples=120, deadline=None)
@given(
    version=st.integers(0, 3),
    topics=st.lists(_topic, max_size=5),
    user_data=_user,
    owned=_tps,
    generation=st.integers(-(2**31), 2**31 - 1),
    rack=st.none() | _topic,
)
def test_subscription_round_trip(
    version: int,
    topics: list[str],
    user_data: bytes | None,
    owned: list[tuple[str, list[int]]],
    generation: int,
    rack: str | None,
) -> None:
    data = encode_subscription(topics, user_data, owned, generation, rack, version=version)
    sub = decode_subscription(data)
    assert sub.version == version and sub.topics == tuple(topics) and sub.user_data == user_data
    assert sub.owned_partitions == (tuple((t, tuple(p)) for t, p in owned) if version >= 1 else ())
    assert sub.generation_id == (generation if version >= 2 else -1)
    assert sub.rack_id == (rack if version >= 3 else None)


@settings(max_examples=120, deadline=None)
@given(version=st.integers(0, 3), parts=_tps, user_data=_user)
def test_assignment_round_trip(
    version: int, parts: list[tuple[str, list[int]]], user_data: bytes | None
) -> None:
    asg = decode_assignment(encode_assignment(parts, user_data, version=version))
    assert asg == Assignment(version, tuple((t, tuple(p)) for t, p in parts), user_data)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64))
def test_arbitrary_bytes_never_raise_anything_but_the_protocol_error(data: bytes) -> None:
    for decode in (decode_subscription, decode_assignment):
        with contextlib.suppress(ConsumerProtocolError):
            decode(data)
