"""JSON-era (Kafka 2.8+) lines of ``kafka.request.logger``, hand-written from the format reference
(key order of RequestConvertToJson, per-version fields of request-log-format.md §3), parsed by
``parse_line``."""

from __future__ import annotations

import base64
from datetime import UTC, date, datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo

import pytest

from rebalance_replay.schemas.tables import REQUESTS
from rebalance_replay.transforms.consumer_protocol import decode_assignment, decode_subscription
from rebalance_replay.transforms.request_log import RECORD_COLUMNS, LineKind, LineOutcome, parse_line

BERLIN = ZoneInfo("Europe/Berlin")
SUB_T = "AAMAAAABAAF0/////wAAAAD///////8="  # v3 subscription to topic t (reference worked example)
ASG_T01 = "AAMAAAABAAF0AAAAAgAAAAAAAAAB/////w=="  # v3 assignment t:[0,1]

# shared tail of most lines (metrics after the bodies), written out once per line below
TAIL = (
    ',"connection":"10.0.0.5:9092-10.0.0.9:53422-12","totalTimeMs":0.412,"requestQueueTimeMs":0.05,'
    '"localTimeMs":0.2,"remoteTimeMs":0.0,"throttleTimeMs":0,"responseQueueTimeMs":0.06,"sendTimeMs":0.1,'
    '"securityProtocol":"PLAINTEXT","principal":"User:ANONYMOUS","listener":"PLAINTEXT",'
    '"clientInformation":{"softwareName":"apache-kafka-java",'
    '"softwareVersion":"3.6.1"}} (kafka.request.logger)'
)


def parse(line: str, tz: tzinfo = BERLIN) -> LineOutcome:
    return parse_line(line, tz)


def request(line: str, tz: tzinfo = BERLIN) -> dict[str, object]:
    out = parse(line, tz)
    assert out.kind is LineKind.REQUEST, out.reason
    assert out.record is not None
    assert list(out.record) == list(RECORD_COLUMNS)
    return out.record


def quarantined(line: str, tz: tzinfo = BERLIN) -> str:
    out = parse(line, tz)
    assert out.kind is LineKind.QUARANTINE, out
    assert out.reason is not None and "\n" not in out.reason
    return out.reason


# --------------------------------------------------------------------------------------------------
# The reference example, and everything generic about a line
# --------------------------------------------------------------------------------------------------

HEARTBEAT_V4 = (
    '[2024-05-01 10:00:03,456] DEBUG Completed request:{"isForwarded":false,'
    '"requestHeader":{"requestApiKey":12,'
    '"requestApiVersion":4,"correlationId":41,"clientId":"consumer-g1-1","requestApiKeyName":"HEARTBEAT"},'
    '"request":{"groupId":"g1","generationId":3,"memberId":"consumer-g1-1-6f1c","groupInstanceId":null},'
    '"response":{"throttleTimeMs":0,"errorCode":27},"connection":"10.0.0.5:9092-10.0.0.9:53422-12",'
    '"totalTimeMs":0.412,"requestQueueTimeMs":0.05,"localTimeMs":0.2,"remoteTimeMs":0.0,"throttleTimeMs":0,'
    '"responseQueueTimeMs":0.06,"sendTimeMs":0.1,"securityProtocol":"PLAINTEXT","principal":"User:ANONYMOUS",'
    '"listener":"PLAINTEXT","clientInformation":{"softwareName":"apache-kafka-java",'
    '"softwareVersion":"3.6.1"}}'
    " (kafka.request.logger)"
)


def test_reference_heartbeat_v4_every_column() -> None:
    r = request(HEARTBEAT_V4)
    completion = datetime(2024, 5, 1, 8, 0, 3, 456000, tzinfo=UTC)  # 10:00:03,456 CEST
    ms = int(completion.timestamp() * 1000)
    expected = dict.fromkeys(RECORD_COLUMNS)
    expected.update(
        log_era="json",
        log_level="DEBUG",
        api_key=12,
        api_name="HEARTBEAT",
        api_version=4,
        correlation_id=41,
        client_id="consumer-g1-1",
        is_forwarded=False,
        connection="10.0.0.5:9092-10.0.0.9:53422-12",
        listener_address="10.0.0.5:9092",
        client_address="10.0.0.9:53422",
        connection_index="12",
        security_protocol="PLAINTEXT",
        principal="User:ANONYMOUS",
        listener="PLAINTEXT",
        client_software_name="apache-kafka-java",
        client_software_version="3.6.1",
        completion_time=completion,
        completion_ms=ms,
        arrival_ms=ms,  # round(0.412) = 0
        total_time_ms=0.412,
        request_queue_time_ms=0.05,
        local_time_ms=0.2,
        remote_time_ms=0.0,
        throttle_time_ms=0,
        response_queue_time_ms=0.06,
        send_time_ms=0.1,
        group_id="g1",
        member_id="consumer-g1-1-6f1c",
        generation_id=3,
        error_code=27,
        error_name="REBALANCE_IN_PROGRESS",
        raw_request='{"groupId":"g1","generationId":3,"memberId":"consumer-g1-1-6f1c","groupInstanceId":null}',
        raw_response='{"throttleTimeMs":0,"errorCode":27}',
        log_date=date(2024, 5, 1),
    )
    assert r == expected
    assert r["completion_time"].tzinfo is not None  # type: ignore[union-attr]
    out = parse(HEARTBEAT_V4)
    assert out.api_name == "HEARTBEAT" and out.log_date == date(2024, 5, 1)


def test_record_keys_are_the_requests_table_minus_reader_columns() -> None:
    assert set(RECORD_COLUMNS) == set(REQUESTS.column_names) - {"source_file", "line_no", "broker_id"}


def test_timezone_conversion_and_utc_date() -> None:
    # 00:30 in Berlin (CEST, +02:00) is the previous UTC day
    line = HEARTBEAT_V4.replace("2024-05-01 10:00:03,456", "2024-05-01 00:30:00,001")
    r = request(line)
    assert r["completion_time"] == datetime(2024, 4, 30, 22, 30, 0, 1000, tzinfo=UTC)
    assert r["log_date"] == date(2024, 4, 30)
    # the same line read as a UTC broker
    r = request(line, UTC)
    assert r["completion_time"] == datetime(2024, 5, 1, 0, 30, 0, 1000, tzinfo=UTC)
    # a fixed-offset zone
    r = request(line, timezone(timedelta(hours=-5)))
    assert r["completion_time"] == datetime(2024, 5, 1, 5, 30, 0, 1000, tzinfo=UTC)


def test_arrival_is_completion_minus_rounded_total_time() -> None:
    line = HEARTBEAT_V4.replace('"totalTimeMs":0.412', '"totalTimeMs":3005.5')
    r = request(line)
    assert r["arrival_ms"] == r["completion_ms"] - 3006  # type: ignore[operator]
    line = HEARTBEAT_V4.replace('"totalTimeMs":0.412', '"totalTimeMs":1.2345678E7')
    r = request(line)
    assert r["total_time_ms"] == 12345678.0
    assert r["arrival_ms"] == r["completion_ms"] - 12345678  # type: ignore[operator]


def test_trailing_newline_is_ignored() -> None:
    assert request(HEARTBEAT_V4 + "\r\n") == request(HEARTBEAT_V4)


# --------------------------------------------------------------------------------------------------
# JoinGroup v0 … v9
# --------------------------------------------------------------------------------------------------


def test_join_group_v0_rebalance_timeout_is_session_timeout() -> None:
    line = (
        '[2021-06-01 12:00:00,000] DEBUG Completed request:{"isForwarded":false,"requestHeader":'
        '{"requestApiKey":11,"requestApiVersion":0,"correlationId":7,"clientId":"old-client",'
        '"requestApiKeyName":"JOIN_GROUP"},"request":{"groupId":"legacy","sessionTimeoutMs":30000,'
        '"memberId":"",'
        f'"protocolType":"consumer","protocols":[{{"name":"range","metadata":"{SUB_T}"}}]}},"response":'
        '{"errorCode":0,"generationId":1,"protocolName":"range","leader":"old-client-1-aa","memberId":'
        f'"old-client-1-aa","members":[{{"memberId":"old-client-1-aa","metadata":"{SUB_T}"}}]}}' + TAIL
    )
    r = request(line)
    assert r["api_name"] == "JOIN_GROUP" and r["api_version"] == 0
    assert r["session_timeout_ms"] == 30000
    assert r["rebalance_timeout_ms"] == 30000
    assert r["member_id"] == ""
    assert r["group_instance_id"] is None
    metadata = base64.b64decode(SUB_T)
    assert r["protocols"] == [{"name": "range", "metadata": metadata, "metadata_length": len(metadata)}]
    assert r["response_members"] == [
        {
            "member_id": "old-client-1-aa",
            "group_instance_id": None,
            "metadata": metadata,
            "metadata_length": 23,
        }
    ]
    assert decode_subscription(metadata).topics == ("t",)
    assert r["response_generation_id"] == 1 and r["response_leader"] == "old-client-1-aa"
    assert r["response_protocol_name"] == "range" and r["response_protocol_type"] is None
    assert r["error_code"] == 0 and r["error_name"] == "NONE"


def test_join_group_v1_deprecated_info_level_line() -> None:
    # KAFKA-18272 (3.9.1 / 4.0): deprecated versions are logged at INFO, with the 3.7+ header flag
    line = (
        '[2025-02-01 09:15:00,250] INFO Completed request:{"isForwarded":false,"requestHeader":'
        '{"requestApiKey":11,"requestApiVersion":1,"correlationId":2,"clientId":"librdkafka",'
        '"requestApiKeyName":"JOIN_GROUP","requestApiVersionDeprecated":true},"request":{"groupId":"g-old",'
        '"sessionTimeoutMs":10000,"rebalanceTimeoutMs":60000,"memberId":"","protocolType":"consumer",'
        '"protocols":[{"name":"range","metadata":""}]},"response":{"errorCode":0,"generationId":5,'
        '"protocolName":"range","leader":"librdkafka-1","memberId":"librdkafka-2","members":[]}' + TAIL
    )
    r = request(line)
    assert r["log_level"] == "INFO"
    assert r["api_version_deprecated"] is True
    assert r["rebalance_timeout_ms"] == 60000
    assert r["protocols"] == [{"name": "range", "metadata": b"", "metadata_length": 0}]
    assert r["response_members"] == []


def test_join_group_v4_member_id_required() -> None:
    line = (
        '[2024-05-01 10:00:00,001] DEBUG Completed request:{"isForwarded":false,"requestHeader":'
        '{"requestApiKey":11,"requestApiVersion":4,"correlationId":3,"clientId":"consumer-g1-1",'
        '"requestApiKeyName":"JOIN_GROUP"},"request":{"groupId":"g1","sessionTimeoutMs":10000,'
        '"rebalanceTimeoutMs":300000,"memberId":"","protocolType":"consumer","protocols":[{"name":"range",'
        f'"metadata":"{SUB_T}"}},{{"name":"cooperative-sticky","metadata":"{SUB_T}"}}]}},"response":'
        '{"throttleTimeMs":0,"errorCode":79,"generationId":-1,"protocolName":"","leader":"",'
        '"memberId":"consumer-g1-1-5d1a","members":[]}' + TAIL
    )
    r = request(line)
    assert r["error_code"] == 79 and r["error_name"] == "MEMBER_ID_REQUIRED"
    assert r["response_member_id"] == "consumer-g1-1-5d1a"
    assert r["response_generation_id"] == -1 and r["response_leader"] == ""
    assert [p["name"] for p in r["protocols"]] == ["range", "cooperative-sticky"]  # type: ignore[attr-defined]


def test_join_group_v5_static_member() -> None:
    line = (
        '[2024-05-01 10:00:01,000] DEBUG Completed request:{"isForwarded":false,"requestHeader":'
        '{"requestApiKey":11,"requestApiVersion":5,"correlationId":4,"clientId":"app-1",'
        '"requestApiKeyName":"JOIN_GROUP"},"request":{"groupId":"g1","sessionTimeoutMs":45000,'
        '"rebalanceTimeoutMs":300000,"memberId":"","groupInstanceId":"instance-1","protocolType":"consumer",'
        f'"protocols":[{{"name":"range","metadata":"{SUB_T}"}}]}},"response":{{"throttleTimeMs":0,'
        f'"errorCode":0,'
        '"generationId":8,"protocolName":"range","leader":"app-1-aaa","memberId":"app-1-aaa","members":'
        f'[{{"memberId":"app-1-aaa","groupInstanceId":"instance-1","metadata":"{SUB_T}"}},'
        f'{{"memberId":"app-2-bbb","groupInstanceId":null,"metadata":"{SUB_T}"}}]}}' + TAIL
    )
    r = request(line)
    assert r["group_instance_id"] == "instance-1"
    members = r["response_members"]
    assert isinstance(members, list)
    assert [(m["member_id"], m["group_instance_id"]) for m in members] == [
        ("app-1-aaa", "instance-1"),
        ("app-2-bbb", None),
    ]


def test_join_group_v6_flexible_version_same_json_shape() -> None:
    line = (
        '[2024-05-01 10:00:01,000] DEBUG Completed request:{"isForwarded":false,"requestHeader":'
        '{"requestApiKey":11,"requestApiVersion":6,"correlationId":4,"clientId":"app-1",'
        '"requestApiKeyName":"JOIN_GROUP"},"request":{"groupId":"g6","sessionTimeoutMs":45000,'
        '"rebalanceTimeoutMs":300000,"memberId":"app-1-x","groupInstanceId":null,"protocolType":"consumer",'
        f'"protocols":[{{"name":"range","metadata":"{SUB_T}"}}]}},"response":{{"throttleTimeMs":0,'
        f'"errorCode":0,'
        '"generationId":2,"protocolName":"range","leader":"app-2-y","memberId":"app-1-x","members":[]}' + TAIL
    )
    r = request(line)
    assert r["api_version"] == 6 and r["group_id"] == "g6" and r["member_id"] == "app-1-x"
    assert r["response_leader"] == "app-2-y" and r["response_members"] == []


def test_join_group_v7_protocol_type_in_response() -> None:
    line = (
        '[2024-05-01 10:00:01,000] DEBUG Completed request:{"isForwarded":false,"requestHeader":'
        '{"requestApiKey":11,"requestApiVersion":7,"correlationId":9,"clientId":"c",'
        '"requestApiKeyName":"JOIN_GROUP"},"request":{"groupId":"g7","sessionTimeoutMs":45000,'
        '"rebalanceTimeoutMs":300000,"memberId":"c-1","groupInstanceId":null,"protocolType":"consumer",'
        '"protocols":[{"name":"range","metadata":""}]},"response":{"throttleTimeMs":0,"errorCode":0,'
        '"generationId":3,"protocolType":"consumer","protocolName":null,"leader":"c-1","memberId":"c-1",'
        '"members":[]}' + TAIL
    )
    r = request(line)
    assert r["response_protocol_type"] == "consumer"
    assert r["response_protocol_name"] is None


def test_join_group_v8_reason() -> None:
    line = (
        '[2024-05-01 10:00:01,000] DEBUG Completed request:{"isForwarded":false,"requestHeader":'
        '{"requestApiKey":11,"requestApiVersion":8,"correlationId":9,"clientId":"c",'
        '"requestApiKeyName":"JOIN_GROUP"},"request":{"groupId":"g8","sessionTimeoutMs":45000,'
        '"rebalanceTimeoutMs":300000,"memberId":"c-1","groupInstanceId":null,"protocolType":"consumer",'
        '"protocols":[{"name":"range","metadata":""}],'
        '"reason":"rebalance failed due to MemberIdRequiredException"},"response":{"throttleTimeMs":0,'
        '"errorCode":0,"generationId":3,"protocolType":"consumer","protocolName":"range","leader":"c-1",'
        '"memberId":"c-1","members":[]}' + TAIL
    )
    r = request(line)
    assert r["reason"] == "rebalance failed due to MemberIdRequiredException"
    assert r["response_skip_assignment"] is None


def test_join_group_v9_skip_assignment() -> None:
    line = (
        '[2024-05-01 10:00:01,000] DEBUG Completed request:{"isForwarded":false,"requestHeader":'
        '{"requestApiKey":11,"requestApiVersion":9,"correlationId":9,"clientId":"c",'
        '"requestApiKeyName":"JOIN_GROUP"},"request":{"groupId":"g9","sessionTimeoutMs":45000,'
        '"rebalanceTimeoutMs":300000,"memberId":"c-1","groupInstanceId":"i-1","protocolType":"consumer",'
        '"protocols":[{"name":"range","metadata":""}],"reason":null},"response":{"throttleTimeMs":0,'
        '"errorCode":0,"generationId":4,"protocolType":"consumer","protocolName":"range","leader":"c-1",'
        '"skipAssignment":true,"memberId":"c-1","members":[{"memberId":"c-1","groupInstanceId":"i-1",'
        '"metadata":""}]}' + TAIL
    )
    r = request(line)
    assert r["response_skip_assignment"] is True
    assert r["reason"] is None


# --------------------------------------------------------------------------------------------------
# SyncGroup v0, v3, v5
# --------------------------------------------------------------------------------------------------


def test_sync_group_v0_leader_assignments() -> None:
    line = (
        '[2024-05-01 10:00:04,000] DEBUG Completed request:{"isForwarded":false,"requestHeader":'
        '{"requestApiKey":14,"requestApiVersion":0,"correlationId":5,"clientId":"c",'
        '"requestApiKeyName":"SYNC_GROUP"},"request":{"groupId":"g1","generationId":1,"memberId":"c-1",'
        f'"assignments":[{{"memberId":"c-1","assignment":"{ASG_T01}"}},{{"memberId":"c-2",'
        f'"assignment":""}}]}},'
        f'"response":{{"errorCode":0,"assignment":"{ASG_T01}"}}' + TAIL
    )
    r = request(line)
    raw = base64.b64decode(ASG_T01)
    assert r["assignments"] == [
        {"member_id": "c-1", "assignment": raw, "assignment_length": len(raw)},
        {"member_id": "c-2", "assignment": b"", "assignment_length": 0},
    ]
    assert r["response_assignment"] == raw and r["response_assignment_length"] == len(raw)
    assert decode_assignment(raw).partitions == (("t", (0, 1)),)
    assert r["group_instance_id"] is None and r["protocol_name"] is None


def test_sync_group_v3_follower_static() -> None:
    line = (
        '[2024-05-01 10:00:04,000] DEBUG Completed request:{"isForwarded":false,"requestHeader":'
        '{"requestApiKey":14,"requestApiVersion":3,"correlationId":6,"clientId":"c",'
        '"requestApiKeyName":"SYNC_GROUP"},"request":{"groupId":"g1","generationId":2,"memberId":"c-2",'
        '"groupInstanceId":"i-2","assignments":[]},"response":{"throttleTimeMs":0,"errorCode":27,'
        '"assignment":""}' + TAIL
    )
    r = request(line)
    assert r["group_instance_id"] == "i-2" and r["assignments"] == []
    assert r["error_name"] == "REBALANCE_IN_PROGRESS"
    assert r["response_assignment"] == b"" and r["response_assignment_length"] == 0


def test_sync_group_v5_protocol_type_and_name() -> None:
    line = (
        '[2024-05-01 10:00:04,000] DEBUG Completed request:{"isForwarded":false,"requestHeader":'
        '{"requestApiKey":14,"requestApiVersion":5,"correlationId":6,"clientId":"c",'
        '"requestApiKeyName":"SYNC_GROUP"},"request":{"groupId":"g1","generationId":2,"memberId":"c-2",'
        '"groupInstanceId":null,"protocolType":"consumer","protocolName":"range","assignments":[]},'
        '"response":{"throttleTimeMs":0,"errorCode":0,"protocolType":"consumer","protocolName":"range",'
        f'"assignment":"{ASG_T01}"}}' + TAIL
    )
    r = request(line)
    assert (r["protocol_type"], r["protocol_name"]) == ("consumer", "range")
    assert (r["response_protocol_type"], r["response_protocol_name"]) == ("consumer", "range")


# --------------------------------------------------------------------------------------------------
# Heartbeat v0, v3 (v4 above)
# --------------------------------------------------------------------------------------------------


def test_heartbeat_v0() -> None:
    line = (
        '[2024-05-01 10:00:05,000] DEBUG Completed request:{"isForwarded":false,"requestHeader":'
        '{"requestApiKey":12,"requestApiVersion":0,"correlationId":11,"clientId":"c",'
        '"requestApiKeyName":"HEARTBEAT"},"request":{"groupId":"g1","generationId":1,"memberId":"c-1"},'
        '"response":{"errorCode":0}' + TAIL
    )
    r = request(line)
    assert (r["group_id"], r["generation_id"], r["member_id"]) == ("g1", 1, "c-1")
    assert r["error_code"] == 0 and r["group_instance_id"] is None


def test_heartbeat_v3_static_member_unknown() -> None:
    line = (
        '[2024-05-01 10:00:05,000] DEBUG Completed request:{"isForwarded":false,"requestHeader":'
        '{"requestApiKey":12,"requestApiVersion":3,"correlationId":11,"clientId":"c",'
        '"requestApiKeyName":"HEARTBEAT"},"request":{"groupId":"g1","generationId":1,"memberId":"c-1",'
        '"groupInstanceId":"i-1"},"response":{"throttleTimeMs":0,"errorCode":25}' + TAIL
    )
    r = request(line)
    assert r["group_instance_id"] == "i-1" and r["error_name"] == "UNKNOWN_MEMBER_ID"


# --------------------------------------------------------------------------------------------------
# LeaveGroup v0-2, v3+, v5
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "version,response", [(0, '{"errorCode":0}'), (2, '{"throttleTimeMs":0,"errorCode":25}')]
)
def test_leave_group_v0_2_single_member(version: int, response: str) -> None:
    line = (
        '[2024-05-01 10:00:06,000] DEBUG Completed request:{"isForwarded":false,"requestHeader":'
        f'{{"requestApiKey":13,"requestApiVersion":{version},"correlationId":12,"clientId":"c",'
        '"requestApiKeyName":"LEAVE_GROUP"},"request":{"groupId":"g1","memberId":"c-1"},'
        f'"response":{response}' + TAIL
    )
    r = request(line)
    assert r["member_id"] == "c-1"
    assert r["leave_members"] == [{"member_id": "c-1", "group_instance_id": None, "reason": None}]
    assert r["response_leave_members"] is None
    assert r["error_code"] == (0 if version == 0 else 25)


def test_leave_group_v3_batch_with_per_member_errors() -> None:
    line = (
        '[2024-05-01 10:00:06,000] DEBUG Completed request:{"isForwarded":false,"requestHeader":'
        '{"requestApiKey":13,"requestApiVersion":3,"correlationId":12,"clientId":"admin",'
        '"requestApiKeyName":"LEAVE_GROUP"},"request":{"groupId":"g1","members":[{"memberId":"c-1",'
        '"groupInstanceId":null},{"memberId":"","groupInstanceId":"i-2"}]},"response":{"throttleTimeMs":0,'
        '"errorCode":0,"members":[{"memberId":"c-1","groupInstanceId":null,"errorCode":0},'
        '{"memberId":"","groupInstanceId":"i-2","errorCode":25}]}' + TAIL
    )
    r = request(line)
    assert r["member_id"] is None
    assert r["leave_members"] == [
        {"member_id": "c-1", "group_instance_id": None, "reason": None},
        {"member_id": "", "group_instance_id": "i-2", "reason": None},
    ]
    assert r["response_leave_members"] == [
        {"member_id": "c-1", "group_instance_id": None, "error_code": 0, "error_name": "NONE"},
        {"member_id": "", "group_instance_id": "i-2", "error_code": 25, "error_name": "UNKNOWN_MEMBER_ID"},
    ]
    assert r["error_code"] == 0


def test_leave_group_v5_reason() -> None:
    line = (
        '[2024-05-01 10:00:06,000] DEBUG Completed request:{"isForwarded":false,"requestHeader":'
        '{"requestApiKey":13,"requestApiVersion":5,"correlationId":12,"clientId":"c",'
        '"requestApiKeyName":"LEAVE_GROUP"},"request":{"groupId":"g1","members":[{"memberId":"c-1",'
        '"groupInstanceId":null,"reason":"the consumer is being closed"}]},"response":{"throttleTimeMs":0,'
        '"errorCode":0,"members":[{"memberId":"c-1","groupInstanceId":null,"errorCode":0}]}' + TAIL
    )
    r = request(line)
    assert r["leave_members"] == [
        {"member_id": "c-1", "group_instance_id": None, "reason": "the consumer is being closed"}
    ]


# --------------------------------------------------------------------------------------------------
# OffsetCommit v2, v7, v8, v9 (generationIdOrMemberEpoch)
# --------------------------------------------------------------------------------------------------


def test_offset_commit_v2_retention_time() -> None:
    line = (
        '[2024-05-01 10:00:07,000] DEBUG Completed request:{"isForwarded":false,"requestHeader":'
        '{"requestApiKey":8,"requestApiVersion":2,"correlationId":13,"clientId":"c",'
        '"requestApiKeyName":"OFFSET_COMMIT"},"request":{"groupId":"g1","generationId":4,"memberId":"c-1",'
        '"retentionTimeMs":-1,"topics":[{"name":"t","partitions":[{"partitionIndex":0,"committedOffset":100,'
        '"committedMetadata":""}]}]},"response":{"topics":[{"name":"t","partitions":[{"partitionIndex":0,'
        '"errorCode":0}]}]}' + TAIL
    )
    r = request(line)
    assert r["generation_id"] == 4 and r["member_id"] == "c-1"
    assert r["commit_partitions"] == [{"topic": "t", "partition": 0, "committed_offset": 100}]
    assert r["response_commit_partitions"] == [
        {"topic": "t", "partition": 0, "error_code": 0, "error_name": "NONE"}
    ]
    assert r["error_code"] == 0 and r["error_name"] == "NONE"


def test_offset_commit_v7_first_partition_error_is_the_error() -> None:
    line = (
        '[2024-05-01 10:00:07,000] DEBUG Completed request:{"isForwarded":false,"requestHeader":'
        '{"requestApiKey":8,"requestApiVersion":7,"correlationId":13,"clientId":"c",'
        '"requestApiKeyName":"OFFSET_COMMIT"},"request":{"groupId":"g1","generationId":4,"memberId":"c-1",'
        '"groupInstanceId":"i-1","topics":[{"name":"t","partitions":[{"partitionIndex":0,'
        '"committedOffset":100,"committedLeaderEpoch":3,"committedMetadata":null},{"partitionIndex":1,'
        '"committedOffset":9007199254740993,"committedLeaderEpoch":-1,"committedMetadata":""}]},{"name":"u",'
        '"partitions":[{"partitionIndex":5,"committedOffset":0,"committedLeaderEpoch":-1,"committedMetadata":'
        '""}]}]},"response":{"throttleTimeMs":0,"topics":[{"name":"t","partitions":[{"partitionIndex":0,'
        '"errorCode":0},{"partitionIndex":1,"errorCode":22}]},{"name":"u","partitions":[{"partitionIndex":5,'
        '"errorCode":25}]}]}' + TAIL
    )
    r = request(line)
    assert r["group_instance_id"] == "i-1"
    assert r["commit_partitions"] == [
        {"topic": "t", "partition": 0, "committed_offset": 100},
        {"topic": "t", "partition": 1, "committed_offset": 9007199254740993},
        {"topic": "u", "partition": 5, "committed_offset": 0},
    ]
    assert r["response_commit_partitions"] == [
        {"topic": "t", "partition": 0, "error_code": 0, "error_name": "NONE"},
        {"topic": "t", "partition": 1, "error_code": 22, "error_name": "ILLEGAL_GENERATION"},
        {"topic": "u", "partition": 5, "error_code": 25, "error_name": "UNKNOWN_MEMBER_ID"},
    ]
    assert r["error_code"] == 22 and r["error_name"] == "ILLEGAL_GENERATION"


def test_offset_commit_v8_flexible() -> None:
    line = (
        '[2024-05-01 10:00:07,000] DEBUG Completed request:{"isForwarded":false,"requestHeader":'
        '{"requestApiKey":8,"requestApiVersion":8,"correlationId":13,"clientId":"c",'
        '"requestApiKeyName":"OFFSET_COMMIT"},"request":{"groupId":"g1","generationId":-1,"memberId":"",'
        '"groupInstanceId":null,"topics":[]},"response":{"throttleTimeMs":0,"topics":[]}' + TAIL
    )
    r = request(line)
    assert r["generation_id"] == -1 and r["member_id"] == ""
    assert r["commit_partitions"] == [] and r["response_commit_partitions"] == []
    assert r["error_code"] == 0


def test_offset_commit_v9_generation_id_or_member_epoch() -> None:
    line = (
        '[2024-05-01 10:00:07,000] DEBUG Completed request:{"isForwarded":false,"requestHeader":'
        '{"requestApiKey":8,"requestApiVersion":9,"correlationId":13,"clientId":"c",'
        '"requestApiKeyName":"OFFSET_COMMIT"},"request":{"groupId":"g1","generationIdOrMemberEpoch":17,'
        '"memberId":"c-1","groupInstanceId":null,"topics":[{"name":"t","partitions":[{"partitionIndex":0,'
        '"committedOffset":42,"committedLeaderEpoch":0,"committedMetadata":""}]}]},"response":'
        '{"throttleTimeMs":0,"topics":[{"name":"t","partitions":[{"partitionIndex":0,"errorCode":113}]}]}'
        + TAIL
    )
    r = request(line)
    assert r["generation_id"] == 17
    assert r["error_code"] == 113 and r["error_name"] == "STALE_MEMBER_EPOCH"


# --------------------------------------------------------------------------------------------------
# FindCoordinator v0-3 and v4+
# --------------------------------------------------------------------------------------------------


def test_find_coordinator_v0_key_only() -> None:
    line = (
        '[2024-05-01 10:00:00,000] DEBUG Completed request:{"isForwarded":false,"requestHeader":'
        '{"requestApiKey":10,"requestApiVersion":0,"correlationId":1,"clientId":"c",'
        '"requestApiKeyName":"FIND_COORDINATOR"},"request":{"key":"g1"},"response":{"errorCode":0,'
        '"nodeId":2,"host":"broker-2","port":9092}' + TAIL
    )
    r = request(line)
    assert r["group_id"] == "g1" and r["group_ids"] is None
    assert r["key_type"] == 0  # v0 only knows groups
    assert r["response_coordinator_node_id"] == 2 and r["error_code"] == 0


def test_find_coordinator_v3_transaction_key_is_kept() -> None:
    line = (
        '[2024-05-01 10:00:00,000] DEBUG Completed request:{"isForwarded":false,"requestHeader":'
        '{"requestApiKey":10,"requestApiVersion":3,"correlationId":1,"clientId":"producer-1",'
        '"requestApiKeyName":"FIND_COORDINATOR"},"request":{"key":"txn-1","keyType":1},"response":'
        '{"throttleTimeMs":0,"errorCode":15,"errorMessage":"The coordinator is not available.","nodeId":-1,'
        '"host":"","port":-1}' + TAIL
    )
    r = request(line)
    assert (r["group_id"], r["key_type"]) == ("txn-1", 1)
    assert r["error_name"] == "COORDINATOR_NOT_AVAILABLE" and r["response_coordinator_node_id"] == -1


def test_find_coordinator_v4_batched_keys() -> None:
    line = (
        '[2024-05-01 10:00:00,000] DEBUG Completed request:{"isForwarded":false,"requestHeader":'
        '{"requestApiKey":10,"requestApiVersion":4,"correlationId":1,"clientId":"admin",'
        '"requestApiKeyName":"FIND_COORDINATOR"},"request":{"keyType":0,"coordinatorKeys":["g1","g2"]},'
        '"response":{"throttleTimeMs":0,"coordinators":[{"key":"g1","nodeId":1,"host":"broker-1","port":9092,'
        '"errorCode":0,"errorMessage":null},{"key":"g2","nodeId":3,"host":"broker-3","port":9092,'
        '"errorCode":0,"errorMessage":null}]}' + TAIL
    )
    r = request(line)
    assert r["group_id"] == "g1" and r["group_ids"] == ["g1", "g2"]
    assert r["key_type"] == 0
    assert r["response_coordinator_node_id"] == 1 and r["error_code"] == 0


# --------------------------------------------------------------------------------------------------
# DescribeGroups, ConsumerGroupHeartbeat
# --------------------------------------------------------------------------------------------------


def test_describe_groups_v5() -> None:
    line = (
        '[2024-05-01 10:00:00,000] DEBUG Completed request:{"isForwarded":false,"requestHeader":'
        '{"requestApiKey":15,"requestApiVersion":5,"correlationId":1,"clientId":"adminclient-1",'
        '"requestApiKeyName":"DESCRIBE_GROUPS"},"request":{"groups":["g1","g2"],'
        '"includeAuthorizedOperations":false},"response":{"throttleTimeMs":0,"groups":[{"errorCode":0,'
        '"groupId":"g1","groupState":"Stable","protocolType":"consumer","protocolData":"range","members":'
        '[{"memberId":"c-1","groupInstanceId":null,"clientId":"c","clientHost":"/10.0.0.9",'
        f'"memberMetadata":"{SUB_T}","memberAssignment":"{ASG_T01}"}}],"authorizedOperations":-2147483648}},'
        '{"errorCode":0,"groupId":"g2","groupState":"Dead","protocolType":"","protocolData":"","members":[],'
        '"authorizedOperations":-2147483648}]}' + TAIL
    )
    r = request(line)
    assert r["group_id"] == "g1" and r["group_ids"] == ["g1", "g2"]
    assert r["response_group_state"] == "Stable" and r["error_code"] == 0


def test_describe_groups_v0() -> None:
    line = (
        '[2024-05-01 10:00:00,000] DEBUG Completed request:{"isForwarded":false,"requestHeader":'
        '{"requestApiKey":15,"requestApiVersion":0,"correlationId":1,"clientId":"adminclient-1",'
        '"requestApiKeyName":"DESCRIBE_GROUPS"},"request":{"groups":["g1"]},"response":{"groups":'
        '[{"errorCode":16,"groupId":"g1","groupState":"","protocolType":"","protocolData":"","members":[]}]}'
        + TAIL
    )
    r = request(line)
    assert r["group_ids"] == ["g1"] and r["error_name"] == "NOT_COORDINATOR"


def test_consumer_group_heartbeat_v0() -> None:
    line = (
        '[2025-03-20 14:00:00,000] DEBUG Completed request:{"isForwarded":false,"requestHeader":'
        '{"requestApiKey":68,"requestApiVersion":0,"correlationId":21,"clientId":"consumer-g848-1",'
        '"requestApiKeyName":"CONSUMER_GROUP_HEARTBEAT"},"request":{"groupId":"g848","memberId":'
        '"Xk2lGj8tQ4qk7d0aZ1b2cA","memberEpoch":0,"instanceId":null,"rackId":null,'
        '"rebalanceTimeoutMs":300000,'
        '"subscribedTopicNames":["t"],"serverAssignor":null,"topicPartitions":[]},"response":'
        '{"throttleTimeMs":0,"errorCode":0,"errorMessage":null,"memberId":"Xk2lGj8tQ4qk7d0aZ1b2cA",'
        '"memberEpoch":5,"heartbeatIntervalMs":5000,"assignment":{"topicPartitions":[{"topicId":'
        '"r3IRhpJiTnOM9i0B4tRT5g","partitions":[0,1,2]}]}}' + TAIL
    )
    r = request(line)
    assert r["api_name"] == "CONSUMER_GROUP_HEARTBEAT"
    assert (r["group_id"], r["member_id"], r["member_epoch"]) == ("g848", "Xk2lGj8tQ4qk7d0aZ1b2cA", 0)
    assert r["rebalance_timeout_ms"] == 300000 and r["group_instance_id"] is None
    assert (r["response_member_id"], r["response_member_epoch"]) == ("Xk2lGj8tQ4qk7d0aZ1b2cA", 5)


# --------------------------------------------------------------------------------------------------
# Line variants: 4.0 connection, IPv6, principals, empty bodies, prefixes/suffixes, extras
# --------------------------------------------------------------------------------------------------


def test_kafka_4_connection_has_processor_and_index() -> None:
    line = HEARTBEAT_V4.replace("10.0.0.5:9092-10.0.0.9:53422-12", "172.80.0.11:9092-172.80.0.43:52486-0-4")
    r = request(line)
    assert r["listener_address"] == "172.80.0.11:9092"
    assert r["client_address"] == "172.80.0.43:52486"
    assert r["connection_index"] == "0-4"


def test_ipv6_connection() -> None:
    line = HEARTBEAT_V4.replace(
        "10.0.0.5:9092-10.0.0.9:53422-12", "0:0:0:0:0:0:0:1:9092-0:0:0:0:0:0:0:1:51244-3"
    )
    r = request(line)
    assert r["listener_address"] == "0:0:0:0:0:0:0:1:9092"
    assert r["client_address"] == "0:0:0:0:0:0:0:1:51244"
    assert r["connection_index"] == "3"


def test_unparseable_connection_keeps_the_string() -> None:
    r = request(HEARTBEAT_V4.replace("10.0.0.5:9092-10.0.0.9:53422-12", "weird"))
    assert r["connection"] == "weird" and r["listener_address"] is None and r["connection_index"] is None


def test_ssl_principal_with_commas_and_forwarded() -> None:
    line = (
        '[2024-05-01 10:00:03,456] DEBUG Completed request:{"isForwarded":true,'
        '"requestHeader":{"requestApiKey":12,'
        '"requestApiVersion":4,"correlationId":41,"clientId":"c","requestApiKeyName":"HEARTBEAT"},"request":'
        '{"groupId":"g1","generationId":3,"memberId":"m","groupInstanceId":null},'
        '"response":{"throttleTimeMs":0,'
        '"errorCode":0},"connection":"10.0.0.5:9093-10.0.0.9:53422-12","totalTimeMs":1.0,'
        '"requestQueueTimeMs":'
        '0.1,"localTimeMs":0.5,"remoteTimeMs":0.0,"throttleTimeMs":250,"responseQueueTimeMs":0.2,'
        '"sendTimeMs":0.2,'
        '"securityProtocol":"SSL","principal":"User:CN=app.example.com,OU=Payments,O=Example\\\\, Inc,C=DE",'
        '"listener":"EXTERNAL","clientInformation":{"softwareName":"unknown","softwareVersion":"unknown"}}'
        " (kafka.request.logger)"
    )
    r = request(line)
    assert r["principal"] == "User:CN=app.example.com,OU=Payments,O=Example\\, Inc,C=DE"
    assert (r["security_protocol"], r["listener"]) == ("SSL", "EXTERNAL")
    assert r["is_forwarded"] is True and r["throttle_time_ms"] == 250
    assert r["client_software_name"] == "unknown"


@pytest.mark.parametrize("placeholder", ['""', "null"])
def test_not_computed_bodies_are_still_requests(placeholder: str) -> None:
    line = (
        '[2024-05-01 10:00:03,456] DEBUG Completed request:{"isForwarded":false,'
        '"requestHeader":{"requestApiKey":11,'
        '"requestApiVersion":7,"correlationId":41,"clientId":"c","requestApiKeyName":"JOIN_GROUP"},'
        f'"request":{placeholder},"response":{placeholder}' + TAIL
    )
    r = request(line)
    assert r["api_name"] == "JOIN_GROUP" and r["group_id"] is None
    assert r["raw_request"] is None and r["raw_response"] is None
    assert r["error_code"] is None and r["error_name"] is None and r["protocols"] is None


def test_request_present_response_not_computed() -> None:
    line = HEARTBEAT_V4.replace('"response":{"throttleTimeMs":0,"errorCode":27}', '"response":""')
    r = request(line)
    assert r["group_id"] == "g1" and r["error_code"] is None and r["raw_response"] is None


def test_temporary_memory_and_message_conversions() -> None:
    line = HEARTBEAT_V4.replace(
        '"softwareVersion":"3.6.1"}}',
        '"softwareVersion":"3.6.1"},"temporaryMemoryBytes":2048,"messageConversionsTime":0.75}',
    )
    r = request(line)
    assert r["temporary_memory_bytes"] == 2048 and r["message_conversions_time_ms"] == 0.75


def test_strimzi_layout_iso_prefix_without_brackets_and_thread_suffix() -> None:
    line = (
        '2024-05-01 10:00:03,456 DEBUG Completed request:{"isForwarded":false,'
        '"requestHeader":{"requestApiKey":12,'
        '"requestApiVersion":4,"correlationId":41,"clientId":"consumer-g1-1",'
        '"requestApiKeyName":"HEARTBEAT"},'
        '"request":{"groupId":"g1","generationId":3,"memberId":"consumer-g1-1-6f1c","groupInstanceId":null},'
        '"response":{"throttleTimeMs":0,"errorCode":27},"connection":"10.0.0.5:9092-10.0.0.9:53422-12",'
        '"totalTimeMs":0.412,"requestQueueTimeMs":0.05,"localTimeMs":0.2,"remoteTimeMs":0.0,'
        '"throttleTimeMs":0,'
        '"responseQueueTimeMs":0.06,"sendTimeMs":0.1,"securityProtocol":"PLAINTEXT",'
        '"principal":"User:ANONYMOUS",'
        '"listener":"PLAINTEXT","clientInformation":{"softwareName":"apache-kafka-java",'
        '"softwareVersion":"3.6.1"}}'
        " (kafka.request.logger) [data-plane-kafka-network-thread-0-ListenerName(REPLICATION-9091)-SSL-2]"
    )
    assert request(line) == request(HEARTBEAT_V4)


def test_log4j2_iso8601_t_separator() -> None:
    line = HEARTBEAT_V4.replace("[2024-05-01 10:00:03,456]", "2024-05-01T10:00:03,456")
    assert request(line) == request(HEARTBEAT_V4)


def test_dev_pattern_with_line_number() -> None:
    line = HEARTBEAT_V4.replace("(kafka.request.logger)", "(kafka.request.logger:275)")
    assert request(line) == request(HEARTBEAT_V4)


def test_reserialized_json_with_spaces_is_read() -> None:
    # a log shipper re-serialised the JSON with spaces: slow path, raw bodies re-serialised compactly
    line = (
        '[2024-05-01 10:00:03,456] DEBUG Completed request:{"isForwarded": false, "requestHeader": '
        '{"requestApiKey": 12, "requestApiVersion": 4, "correlationId": 41, "clientId": "c", '
        '"requestApiKeyName": "HEARTBEAT"}, "request": {"groupId": "g1", "generationId": 3, "memberId": "m", '
        '"groupInstanceId": null}, "response": {"throttleTimeMs": 0, "errorCode": 0}, "connection": '
        '"10.0.0.5:9092-10.0.0.9:53422-12", "totalTimeMs": 0.4} (kafka.request.logger)'
    )
    r = request(line)
    assert r["raw_request"] == '{"groupId":"g1","generationId":3,"memberId":"m","groupInstanceId":null}'
    assert r["local_time_ms"] is None and r["principal"] is None


def test_sorted_key_reserialization_does_not_confuse_raw_bodies() -> None:
    # compact but with sorted keys: "requestHeader" sorts between "request" and "response"
    line = (
        '[2024-05-01 10:00:03,456] DEBUG Completed request:{"clientInformation":{"softwareName":"x",'
        '"softwareVersion":"1"},"connection":"10.0.0.5:9092-10.0.0.9:53422-12","isForwarded":false,'
        '"listener":"PLAINTEXT","localTimeMs":0.2,"principal":"User:ANONYMOUS","remoteTimeMs":0.0,'
        '"request":{"generationId":3,"groupId":"g1","groupInstanceId":null,"memberId":"m"},"requestHeader":'
        '{"clientId":"c","correlationId":41,"requestApiKey":12,"requestApiKeyName":"HEARTBEAT",'
        '"requestApiVersion":4},"requestQueueTimeMs":0.05,"response":{"errorCode":0,"throttleTimeMs":0},'
        '"responseQueueTimeMs":0.06,"securityProtocol":"PLAINTEXT","sendTimeMs":0.1,"throttleTimeMs":0,'
        '"totalTimeMs":0.412} (kafka.request.logger)'
    )
    r = request(line)
    assert r["raw_request"] == '{"generationId":3,"groupId":"g1","groupInstanceId":null,"memberId":"m"}'
    assert r["raw_response"] == '{"errorCode":0,"throttleTimeMs":0}'
    assert (r["group_id"], r["error_code"], r["client_software_name"]) == ("g1", 0, "x")


# --------------------------------------------------------------------------------------------------
# Other APIs, other loggers
# --------------------------------------------------------------------------------------------------


def test_fetch_line_is_other_api() -> None:
    line = (
        '[2024-05-01 10:00:03,456] DEBUG Completed request:{"isForwarded":false,'
        '"requestHeader":{"requestApiKey":1,'
        '"requestApiVersion":13,"correlationId":8841,"clientId":"consumer-g1-1","requestApiKeyName":"FETCH"},'
        '"request":{"replicaId":-1,"maxWaitMs":500,"minBytes":1,"maxBytes":52428800,"isolationLevel":0,'
        '"sessionId":0,"sessionEpoch":-1,"topics":[{"topicId":"r3IRhpJiTnOM9i0B4tRT5g","partitions":[]}],'
        '"forgottenTopicsData":[],"rackId":""},"response":{"throttleTimeMs":0,"errorCode":0,"sessionId":0,'
        '"responses":[{"topicId":"r3IRhpJiTnOM9i0B4tRT5g","partitions":[{"partitionIndex":0,"errorCode":0,'
        '"highWatermark":10,"recordsSizeInBytes":115}]}]},"connection":"10.0.0.5:9092-10.0.0.9:53422-12",'
        '"totalTimeMs":501.2,"requestQueueTimeMs":0.1,"localTimeMs":0.3,"remoteTimeMs":500.5,'
        '"throttleTimeMs":0,'
        '"responseQueueTimeMs":0.1,"sendTimeMs":0.2,"securityProtocol":"PLAINTEXT",'
        '"principal":"User:ANONYMOUS",'
        '"listener":"PLAINTEXT","clientInformation":{"softwareName":"apache-kafka-java",'
        '"softwareVersion":"3.6.1"},'
        '"temporaryMemoryBytes":1024,"messageConversionsTime":0.5} (kafka.request.logger)'
    )
    out = parse(line)
    assert out == LineOutcome(LineKind.OTHER_API, None, None, "FETCH")


def test_other_api_even_when_broken() -> None:
    # never quarantined: truncated, bad timestamp, unknown key
    truncated = (
        '[2024-05-01 10:00:03,456] DEBUG Completed request:{"isForwarded":false,'
        '"requestHeader":{"requestApiKey":0,'
    )
    assert parse(truncated).kind is LineKind.OTHER_API and parse(truncated).api_name == "PRODUCE"
    bad_ts = HEARTBEAT_V4.replace('"requestApiKey":12', '"requestApiKey":3').replace(
        "2024-05-01", "2024-99-01"
    )
    assert parse(bad_ts).kind is LineKind.OTHER_API and parse(bad_ts).api_name == "METADATA"
    future = (
        '[2024-05-01 10:00:03,456] DEBUG Completed request:{"isForwarded":false,'
        '"requestHeader":{"requestApiKey":'
        '999,"requestApiVersion":0,"correlationId":1,"clientId":"c","requestApiKeyName":"SOME_FUTURE_API"},'
        '"request":{},"response":{}} (kafka.request.logger)'
    )
    assert parse(future) == LineOutcome(LineKind.OTHER_API, api_name="SOME_FUTURE_API")


@pytest.mark.parametrize(
    "line",
    [
        "",
        "   ",
        "[2024-05-01 10:00:03,456] WARN Attempting to send response via channel for which there is no open "
        "connection, connection id 10.0.0.5:9092-10.0.0.9:53422-12 (kafka.network.Processor)",
        "[2024-05-01 10:00:03,456] TRACE Processor 3 received request: RequestHeader(apiKey=HEARTBEAT, "
        "apiVersion=4, clientId=c, correlationId=41) -- {group_id=g1} (kafka.network.RequestChannel$)",
        "[2024-05-01 10:00:03,456] WARN something about (kafka.request.logger) (kafka.request.logger)",
        "java.lang.IllegalStateException: boom",
        "\tat kafka.network.Processor.run(SocketServer.scala:1050)",
    ],
)
def test_lines_without_completed_request_are_other(line: str) -> None:
    assert parse(line) == LineOutcome(LineKind.OTHER)


# --------------------------------------------------------------------------------------------------
# Quarantine: every reason names the field
# --------------------------------------------------------------------------------------------------


def test_quarantine_bad_json() -> None:
    line = HEARTBEAT_V4.replace('"generationId":3,', '"generationId":3,,')
    reason = quarantined(line)
    assert reason.startswith("bad JSON in request body at char ")
    assert parse(line).api_name == "HEARTBEAT"


def test_quarantine_truncated_line() -> None:
    line = HEARTBEAT_V4[:300]
    assert "truncated line" in quarantined(line) and "(kafka.request.logger)" in quarantined(line)


@pytest.mark.parametrize("key", ["requestApiVersion", "correlationId", "clientId", "requestApiKeyName"])
def test_quarantine_missing_header_key(key: str) -> None:
    import re

    line = (
        re.sub(rf'"{key}":("[^"]*"|\d+),?', "", HEARTBEAT_V4, count=1).replace(',"}', '"}').replace(",}", "}")
    )
    assert quarantined(line) == f"missing requestHeader.{key}"


def test_quarantine_missing_request_header() -> None:
    line = (
        '[2024-05-01 10:00:03,456] DEBUG Completed request:{"isForwarded":false,"request":{"groupId":"g1",'
        '"requestApiKey":12},"response":{}} (kafka.request.logger)'
    )
    out = parse(line)
    # the API is told loosely (requestApiKey 12 → a kept API), so this is quarantined, not other
    assert out.kind is LineKind.QUARANTINE and out.reason == "missing requestHeader"


def test_quarantine_version_out_of_range() -> None:
    line = HEARTBEAT_V4.replace('"requestApiVersion":4', '"requestApiVersion":9')
    assert quarantined(line) == "requestHeader.requestApiVersion 9 is out of range 0..4 for HEARTBEAT"


def test_quarantine_api_name_mismatch() -> None:
    line = HEARTBEAT_V4.replace('"requestApiKeyName":"HEARTBEAT"', '"requestApiKeyName":"JOIN_GROUP"')
    assert "requestApiKeyName" in quarantined(line)


def test_quarantine_wrong_type_names_the_field() -> None:
    line = (
        '[2024-05-01 10:00:01,000] DEBUG Completed request:{"isForwarded":false,"requestHeader":'
        '{"requestApiKey":11,"requestApiVersion":5,"correlationId":4,"clientId":"app-1",'
        '"requestApiKeyName":"JOIN_GROUP"},"request":{"groupId":"g1","sessionTimeoutMs":45000,'
        '"rebalanceTimeoutMs":300000,"memberId":"","groupInstanceId":null,"protocolType":"consumer",'
        '"protocols":[]},"response":{"throttleTimeMs":0,"errorCode":0,"generationId":8,'
        '"protocolName":"range",'
        '"leader":"a","memberId":"a","members":[]}' + TAIL
    )
    assert request(line)["error_code"] == 0
    assert quarantined(line.replace('"errorCode":0', '"errorCode":"0"')) == (
        'JoinGroup v5 response: field errorCode is not an int: "0"'
    )
    assert quarantined(line.replace('"sessionTimeoutMs":45000', '"sessionTimeoutMs":4.5e4')) == (
        "JoinGroup v5 request: field sessionTimeoutMs is not an int: 45000.0"
    )
    assert quarantined(line.replace('"sessionTimeoutMs":45000', '"sessionTimeoutMs":true')) == (
        "JoinGroup v5 request: field sessionTimeoutMs is not an int: True"
    )
    assert quarantined(line.replace('"groupId":"g1",', "")) == "JoinGroup v5 request: missing groupId"
    assert (
        quarantined(line.replace('"groupId":"g1"', '"groupId":null'))
        == "JoinGroup v5 request: field groupId is null"
    )
    assert (
        quarantined(line.replace('"groupId":"g1"', '"groupId":7'))
        == "JoinGroup v5 request: field groupId is not a string: 7"
    )
    assert quarantined(line.replace('"protocols":[]', '"protocols":{}')) == (
        "JoinGroup v5 request: field protocols is not an array: {}"
    )
    assert quarantined(line.replace('"protocols":[]', '"protocols":[{"name":"range","metadata":"!!!"}]')) == (
        "JoinGroup v5 request: field protocols[0].metadata is not valid base64"
    )
    assert quarantined(line.replace('"protocols":[]', '"protocols":[1]')) == (
        "JoinGroup v5 request: field protocols[0] is not an object: 1"
    )
    assert quarantined(line.replace('"generationId":8', '"generationId":2147483648')) == (
        "JoinGroup v5 response: field generationId 2147483648 is out of int32 range"
    )


def test_quarantine_nested_offset_commit_field() -> None:
    line = (
        '[2024-05-01 10:00:07,000] DEBUG Completed request:{"isForwarded":false,"requestHeader":'
        '{"requestApiKey":8,"requestApiVersion":8,"correlationId":13,"clientId":"c",'
        '"requestApiKeyName":"OFFSET_COMMIT"},"request":{"groupId":"g1","generationId":4,"memberId":"c-1",'
        '"groupInstanceId":null,"topics":[{"name":"t","partitions":[{"partitionIndex":0,"committedOffset":1,'
        '"committedLeaderEpoch":-1,"committedMetadata":""},{"partitionIndex":1,"committedOffset":"2",'
        '"committedLeaderEpoch":-1,"committedMetadata":""}]}]},"response":{"throttleTimeMs":0,"topics":[]}'
        + TAIL
    )
    assert quarantined(line) == (
        'OffsetCommit v8 request: field topics[0].partitions[1].committedOffset is not an int: "2"'
    )


def test_quarantine_group_apis_need_their_group_field() -> None:
    fc = (
        '[2024-05-01 10:00:00,000] DEBUG Completed request:{"isForwarded":false,"requestHeader":'
        '{"requestApiKey":10,"requestApiVersion":4,"correlationId":1,"clientId":"admin",'
        '"requestApiKeyName":"FIND_COORDINATOR"},"request":{"keyType":0},"response":""' + TAIL
    )
    assert quarantined(fc) == "FindCoordinator v4 request: missing coordinatorKeys"
    dg = (
        '[2024-05-01 10:00:00,000] DEBUG Completed request:{"isForwarded":false,"requestHeader":'
        '{"requestApiKey":15,"requestApiVersion":5,"correlationId":1,"clientId":"admin",'
        '"requestApiKeyName":"DESCRIBE_GROUPS"},"request":{"groups":["g1",2]},"response":""' + TAIL
    )
    assert quarantined(dg) == "DescribeGroups v5 request: field groups[1] is not a string: 2"
    assert quarantined(dg.replace('["g1",2]', "null")) == "DescribeGroups v5 request: field groups is null"
    assert quarantined(dg.replace('{"groups":["g1",2]}', "{}")) == "DescribeGroups v5 request: missing groups"


def test_quarantine_bad_timestamp_names_it() -> None:
    line = HEARTBEAT_V4.replace("2024-05-01 10:00:03,456", "2024-13-01 10:00:03,456")
    assert quarantined(line) == "timestamp '2024-13-01 10:00:03,456' is not a valid date"


def test_quarantine_missing_prefix_and_bad_level() -> None:
    no_ts = HEARTBEAT_V4.replace("[2024-05-01 10:00:03,456] ", "")
    assert "timestamp" in quarantined(no_ts)
    warn = HEARTBEAT_V4.replace("] DEBUG ", "] WARN ")
    assert quarantined(warn) == "log level 'WARN' is not DEBUG or INFO"
    out = parse(warn)
    assert out.log_date == date(2024, 5, 1) and out.api_name == "HEARTBEAT"


def test_quarantine_metrics() -> None:
    assert quarantined(HEARTBEAT_V4.replace('"totalTimeMs":0.412,', "")) == "missing totalTimeMs"
    assert quarantined(HEARTBEAT_V4.replace('"totalTimeMs":0.412', '"totalTimeMs":"0.4"')) == (
        'field totalTimeMs is not a number: "0.4"'
    )
    assert quarantined(HEARTBEAT_V4.replace('"localTimeMs":0.2', '"localTimeMs":null,"x":[')).startswith(
        "bad JSON"
    )
    assert quarantined(HEARTBEAT_V4.replace('"throttleTimeMs":0,"resp', '"throttleTimeMs":0.5,"resp')) == (
        "field throttleTimeMs is not an int: 0.5"
    )
    assert quarantined(HEARTBEAT_V4.replace('"connection":"10.0.0.5', '"connection":5,"c":"')) == (
        "field connection is not a string: 5"
    )


def test_quarantine_request_not_an_object() -> None:
    line = HEARTBEAT_V4.replace(
        '"request":{"groupId":"g1","generationId":3,"memberId":"consumer-g1-1-6f1c","groupInstanceId":null}',
        '"request":[1,2]',
    )
    assert quarantined(line) == "field request is not an object"


def test_quarantine_neither_json_nor_text() -> None:
    line = "[2024-05-01 10:00:03,456] DEBUG Completed request:garbage (kafka.request.logger)"
    assert "neither a JSON object nor RequestHeader" in quarantined(line)


def test_unexpected_errors_become_quarantine() -> None:
    class Broken(tzinfo):
        def utcoffset(self, dt: datetime | None) -> timedelta:
            raise RuntimeError("zone database exploded")

        def dst(self, dt: datetime | None) -> timedelta:
            return timedelta(0)

    out = parse(HEARTBEAT_V4, Broken())
    assert out.kind is LineKind.QUARANTINE
    assert out.reason == "unexpected parse error: RuntimeError: zone database exploded"


def test_non_string_input_never_raises() -> None:
    out = parse_line(None, UTC)  # type: ignore[arg-type]
    assert out.kind is LineKind.QUARANTINE and out.reason is not None
    assert out.reason.startswith("unexpected parse error: AttributeError")
