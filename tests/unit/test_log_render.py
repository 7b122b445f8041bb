"""The renderer writes lines exactly as Kafka does: hand-written reference lines are parsed, rendered
back and compared byte for byte; version-dependent details are checked one by one."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo

import pytest

from rebalance_replay.transforms.consumer_protocol import encode_assignment, encode_subscription
from rebalance_replay.transforms.kafka_protocol import ApiKey
from rebalance_replay.transforms.request_log import LineKind, LineOutcome, parse_line
from simulator.log_render import (
    complete_record,
    era_of,
    format_timestamp,
    java_double,
    kafka_version_tuple,
    max_text_era_version,
    render_line,
    render_other_api_line,
    render_other_logger_line,
    render_request_body,
    render_response_body,
)

BERLIN = ZoneInfo("Europe/Berlin")
T0 = datetime(2024, 5, 1, 8, 0, 3, 456000, tzinfo=UTC)

HEARTBEAT_V4 = (
    '[2024-05-01 10:00:03,456] DEBUG Completed request:{"isForwarded":false,"requestHeader":'
    '{"requestApiKey":12,"requestApiVersion":4,"correlationId":41,"clientId":"consumer-g1-1",'
    '"requestApiKeyName":"HEARTBEAT"},"request":{"groupId":"g1","generationId":3,"memberId":'
    '"consumer-g1-1-6f1c","groupInstanceId":null},"response":{"throttleTimeMs":0,"errorCode":27},'
    '"connection":"10.0.0.5:9092-10.0.0.9:53422-12","totalTimeMs":0.412,"requestQueueTimeMs":0.05,'
    '"localTimeMs":0.2,"remoteTimeMs":0.0,"throttleTimeMs":0,"responseQueueTimeMs":0.06,"sendTimeMs":0.1,'
    '"securityProtocol":"PLAINTEXT","principal":"User:ANONYMOUS","listener":"PLAINTEXT","clientInformation":'
    '{"softwareName":"apache-kafka-java","softwareVersion":"3.6.1"}} (kafka.request.logger)'
)

JOIN_V6_KAFKA_24 = (
    "[2020-01-01 10:00:00,000] DEBUG Completed request:RequestHeader(apiKey=JOIN_GROUP, apiVersion=6, "
    "clientId=consumer-1, correlationId=3) -- {group_id=g1,session_timeout_ms=10000,"
    "rebalance_timeout_ms=300000,"
    "member_id=,group_instance_id=null,protocol_type=consumer,protocols=[{name=range,metadata="
    "java.nio.HeapByteBuffer[pos=0 lim=26 cap=26],_tagged_fields={}}],_tagged_fields={}},response:"
    "{throttle_time_ms=0,error_code=79,generation_id=-1,protocol_name=,leader=,member_id=consumer-1-5d1a,"
    "members=[],_tagged_fields={}} from connection 127.0.0.1:9092-127.0.0.1:51264-1;totalTime:3005.123,"
    "requestQueueTime:0.1,localTime:2.0,remoteTime:3000.0,throttleTime:0,responseQueueTime:0.5,"
    "sendTime:2.523,"
    "securityProtocol:PLAINTEXT,principal:User:ANONYMOUS,listener:PLAINTEXT (kafka.request.logger)"
)

JOIN_V2_KAFKA_20 = (
    "[2019-03-01 10:00:00,100] DEBUG Completed request:RequestHeader(apiKey=JOIN_GROUP, apiVersion=2, "
    "clientId=consumer-1, correlationId=3) -- {group_id=g1,session_timeout=10000,rebalance_timeout=300000,"
    "member_id=,protocol_type=consumer,group_protocols=[{protocol_name=range,protocol_metadata="
    "java.nio.HeapByteBuffer[pos=0 lim=26 cap=26]}]},response:{throttle_time_ms=0,error_code=0,"
    "generation_id=1,group_protocol=range,leader_id=consumer-1-a1,member_id=consumer-1-a1,members=["
    "{member_id=consumer-1-a1,member_metadata=java.nio.HeapByteBuffer[pos=0 lim=26 cap=26]}]} from "
    "connection "
    "127.0.0.1:9092-127.0.0.1:51264-1;totalTime:3005.123,requestQueueTime:0.1,localTime:2.0,"
    "remoteTime:3000.0,"
    "throttleTime:0,responseQueueTime:0.5,sendTime:2.523,securityProtocol:PLAINTEXT,principal:User:ANONYMOUS,"
    "listener:PLAINTEXT (kafka.request.logger)"
)

FIND_COORDINATOR_V1_KAFKA_20 = (
    "[2019-03-01 10:00:00,000] DEBUG Completed request:RequestHeader(apiKey=FIND_COORDINATOR, apiVersion=1, "
    "clientId=consumer-1, correlationId=0) -- {coordinator_key=g1,coordinator_type=0},response:"
    "{throttle_time_ms=0,error_code=0,error_message=null,coordinator={node_id=1,host=broker-1,port=9092}}"
    " from connection 127.0.0.1:9092-127.0.0.1:51264-1;totalTime:0.5,requestQueueTime:0.1,localTime:0.2,"
    "remoteTime:0.0,throttleTime:0,responseQueueTime:0.1,sendTime:0.1,securityProtocol:PLAINTEXT,"
    "principal:User:ANONYMOUS,listener:PLAINTEXT,clientInformation:ClientInformation(softwareName=unknown, "
    "softwareVersion=unknown) (kafka.request.logger)"
)


def parsed(line: str, tz: ZoneInfo | None = None) -> dict[str, object]:
    out = parse_line(line, tz or UTC)
    assert out.kind is LineKind.REQUEST, out.reason
    assert out.record is not None
    return out.record


@pytest.mark.parametrize(
    "line,kafka_version,tz",
    [
        (HEARTBEAT_V4, "3.6", BERLIN),
        (JOIN_V6_KAFKA_24, "2.4", UTC),
        (JOIN_V2_KAFKA_20, "2.0", UTC),
    ],
)
def test_render_reproduces_hand_written_lines(line: str, kafka_version: str, tz: ZoneInfo) -> None:
    record = parsed(line, tz)  # type: ignore[arg-type]
    assert render_line(record, kafka_version=kafka_version, tz=tz) == line
    assert complete_record(record, kafka_version=kafka_version) == record


def test_hand_written_find_coordinator_nests_the_coordinator() -> None:
    record = parsed(FIND_COORDINATOR_V1_KAFKA_20)
    # clientInformation only exists from 2.5, so this line cannot be 2.0; it renders identically as 2.2
    # except for that part.
    rendered = render_line(record, kafka_version="2.2", tz=UTC)
    assert "coordinator={node_id=1,host=broker-1,port=9092}" in rendered
    assert "clientInformation" not in rendered
    assert render_line(record, kafka_version="2.5", tz=UTC) == FIND_COORDINATOR_V1_KAFKA_20.replace(
        "{coordinator_key=g1,coordinator_type=0}", "{key=g1,key_type=0}"
    ).replace(
        "error_message=null,coordinator={node_id=1,host=broker-1,port=9092}",
        "error_message=null,node_id=1,host=broker-1,port=9092",
    )


def test_java_double() -> None:
    cases = [
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (0.412, "0.412"),
        (0.001, "0.001"),
        (12.0, "12.0"),
        (3005.123, "3005.123"),
        (9999999.999, "9999999.999"),
        (1e7, "1.0E7"),
        (12345678.0, "1.2345678E7"),
        (1.5e10, "1.5E10"),
        (0.0001, "1.0E-4"),
        (-2.5e-5, "-2.5E-5"),
        (float("nan"), "NaN"),
        (float("inf"), "Infinity"),
    ]
    for x, s in cases:
        assert java_double(x) == s, x
        if s not in ("NaN", "Infinity"):
            assert float(s) == x


def test_format_timestamp_in_broker_zone() -> None:
    assert format_timestamp(T0, BERLIN) == "2024-05-01 10:00:03,456"
    assert (
        format_timestamp(datetime(2024, 1, 1, 8, 0, 0, 7000, tzinfo=UTC), BERLIN) == "2024-01-01 09:00:00,007"
    )
    assert format_timestamp(T0, UTC) == "2024-05-01 08:00:03,456"


def test_versions_and_eras() -> None:
    assert kafka_version_tuple("2.4") == (2, 4, 0) and kafka_version_tuple("3.9.1") == (3, 9, 1)
    assert era_of("2.7") == "text" and era_of("2.7.2") == "text" and era_of("2.8") == "json"
    assert max_text_era_version(ApiKey.JOIN_GROUP, "2.0") == 3
    assert max_text_era_version(ApiKey.JOIN_GROUP, "2.4") == 6
    assert max_text_era_version(ApiKey.CONSUMER_GROUP_HEARTBEAT, "2.7") is None


def _offset_commit(kafka_version: str, **extra: object) -> dict[str, object]:
    return complete_record(
        {
            "api_name": "OFFSET_COMMIT",
            "api_version": 9,
            "completion_time": T0,
            "total_time_ms": 1.0,
            "group_id": "g1",
            "generation_id": 7,
            "member_id": "m",
            "commit_partitions": [{"topic": "t", "partition": 0, "committed_offset": 5}],
            "response_commit_partitions": [{"topic": "t", "partition": 0, "error_code": 0}],
            **extra,
        },
        kafka_version=kafka_version,
    )


def test_offset_commit_generation_key_renamed_from_3_6() -> None:
    old = render_request_body(_offset_commit("3.5"), kafka_version="3.5")
    new = render_request_body(_offset_commit("3.6"), kafka_version="3.6")
    assert old is not None and new is not None
    assert '"generationId":7' in old and "generationIdOrMemberEpoch" not in old
    assert '"generationIdOrMemberEpoch":7' in new
    assert json.loads(new) == {
        "groupId": "g1",
        "generationIdOrMemberEpoch": 7,
        "memberId": "m",
        "groupInstanceId": None,
        "topics": [
            {
                "name": "t",
                "partitions": [
                    {
                        "partitionIndex": 0,
                        "committedOffset": 5,
                        "committedLeaderEpoch": -1,
                        "committedMetadata": "",
                    }
                ],
            }
        ],
    }
    for kv in ("3.5", "3.6"):
        r = _offset_commit(kv)
        assert parsed(render_line(r, kafka_version=kv, tz=UTC)) == r


def test_deprecated_versions_header_flag_and_info_level() -> None:
    base = {
        "api_name": "JOIN_GROUP",
        "api_version": 1,
        "completion_time": T0,
        "total_time_ms": 2.0,
        "group_id": "g",
        "session_timeout_ms": 10000,
        "rebalance_timeout_ms": 60000,
        "member_id": "",
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": encode_subscription(["t"])}],
        "error_code": 0,
        "response_generation_id": 1,
        "response_protocol_name": "range",
        "response_leader": "a",
        "response_member_id": "a",
        "response_members": [],
    }
    r36 = complete_record(base, kafka_version="3.6")
    assert r36["api_version_deprecated"] is None and r36["log_level"] == "DEBUG"
    assert "requestApiVersionDeprecated" not in render_line(r36, kafka_version="3.6", tz=UTC)
    r37 = complete_record(base, kafka_version="3.7")
    assert r37["api_version_deprecated"] is True and r37["log_level"] == "DEBUG"
    line = render_line(r37, kafka_version="3.7", tz=UTC)
    assert '"requestApiKeyName":"JOIN_GROUP","requestApiVersionDeprecated":true}' in line
    r391 = complete_record(base, kafka_version="3.9.1")
    line = render_line(r391, kafka_version="3.9.1", tz=UTC)
    assert line.startswith("[2024-05-01 08:00:03,456] INFO Completed request:")
    assert parsed(line) == r391


def test_placeholders_and_connection_by_version() -> None:
    base = {"api_name": "HEARTBEAT", "api_version": 4, "completion_time": T0, "total_time_ms": 1.0}
    r39 = complete_record(base, kafka_version="3.9")
    line = render_line(r39, kafka_version="3.9", tz=UTC)
    assert '"request":"","response":""' in line and '"connection":"10.0.0.1:9092-10.0.0.2:50000-1"' in line
    assert parsed(line) == r39
    r41 = complete_record(base, kafka_version="4.1")
    line = render_line(r41, kafka_version="4.1", tz=UTC)
    assert (
        '"request":null,"response":null' in line and '"connection":"10.0.0.1:9092-10.0.0.2:50000-0-1"' in line
    )
    assert r41["connection_index"] == "0-1"
    assert parsed(line) == r41


def test_client_information_in_text_era_only_from_2_5() -> None:
    base = {
        "api_name": "HEARTBEAT",
        "api_version": 2,
        "completion_time": T0,
        "total_time_ms": 1.0,
        "group_id": "g",
        "generation_id": 1,
        "member_id": "m",
        "error_code": 0,
        "client_software_name": "apache-kafka-java",
        "client_software_version": "2.5.1",
    }
    r24 = complete_record(base, kafka_version="2.4")
    assert r24["client_software_name"] is None
    assert "clientInformation" not in render_line(r24, kafka_version="2.4", tz=UTC)
    r25 = complete_record(base, kafka_version="2.5")
    line = render_line(r25, kafka_version="2.5", tz=UTC)
    assert line.endswith(
        ",listener:PLAINTEXT,clientInformation:ClientInformation(softwareName=apache-kafka-java, "
        "softwareVersion=2.5.1) (kafka.request.logger)"
    )
    assert parsed(line) == r25


def test_text_era_bytes_become_lengths_and_json_bytes_are_base64() -> None:
    asg = encode_assignment([("t", [0, 1])])
    base = {
        "api_name": "SYNC_GROUP",
        "api_version": 3,
        "completion_time": T0,
        "total_time_ms": 1.0,
        "group_id": "g",
        "generation_id": 1,
        "member_id": "m",
        "assignments": [{"member_id": "m", "assignment": asg}],
        "error_code": 0,
        "response_assignment": asg,
    }
    text = complete_record(base, kafka_version="2.3")
    assert text["assignments"] == [{"member_id": "m", "assignment": None, "assignment_length": len(asg)}]
    assert text["response_assignment"] is None and text["response_assignment_length"] == len(asg)
    assert text["raw_response"] == (
        f"{{throttle_time_ms=0,error_code=0,assignment=java.nio.HeapByteBuffer[pos=0 lim={len(asg)} "
        f"cap={len(asg)}]}}"
    )
    js = complete_record(base, kafka_version="3.0")
    assert js["response_assignment"] == asg and js["response_assignment_length"] == len(asg)
    assert render_response_body(js, kafka_version="3.0") == (
        '{"throttleTimeMs":0,"errorCode":0,"assignment":"AAMAAAABAAF0AAAAAgAAAAAAAAAB/////w=="}'
    )


def test_flexible_text_versions_close_every_struct_with_tagged_fields() -> None:
    r = complete_record(
        {
            "api_name": "OFFSET_COMMIT",
            "api_version": 8,
            "completion_time": T0,
            "total_time_ms": 1.0,
            "group_id": "g",
            "generation_id": 1,
            "member_id": "m",
            "commit_partitions": [{"topic": "t", "partition": 0, "committed_offset": 5}],
            "response_commit_partitions": [{"topic": "t", "partition": 0, "error_code": 0}],
        },
        kafka_version="2.4",
    )
    assert r["raw_request"] == (
        "{group_id=g,generation_id=1,member_id=m,group_instance_id=null,topics=[{name=t,partitions=["
        "{partition_index=0,committed_offset=5,committed_leader_epoch=-1,committed_metadata=,"
        "_tagged_fields={}}],"
        "_tagged_fields={}}],_tagged_fields={}}"
    )
    assert r["raw_response"] == (
        "{throttle_time_ms=0,topics=[{name=t,partitions=[{partition_index=0,error_code=0,_tagged_fields={}}],"
        "_tagged_fields={}}],_tagged_fields={}}"
    )


@pytest.mark.parametrize("layout", ["log4j", "strimzi", "dev"])
def test_layouts(layout: str) -> None:
    record = parsed(HEARTBEAT_V4, BERLIN)
    line = render_line(record, kafka_version="3.6", tz=BERLIN, layout=layout, thread="kafka-network-thread-1")
    if layout == "strimzi":
        assert line.startswith("2024-05-01 10:00:03,456 DEBUG Completed request:{")
        assert line.endswith(" (kafka.request.logger) [kafka-network-thread-1]")
    elif layout == "dev":
        assert line.endswith(" (kafka.request.logger:275)")
    assert parsed(line, BERLIN) == record


def test_other_api_and_other_logger_lines() -> None:
    for kv in ("2.0", "2.7", "3.6", "4.0"):
        line = render_other_api_line("FETCH", completion_time=T0, tz=UTC, kafka_version=kv, api_version=11)
        assert parse_line(line, UTC) == LineOutcome(LineKind.OTHER_API, api_name="FETCH")
        line = render_other_api_line("PRODUCE", completion_time=T0, tz=UTC, kafka_version=kv, api_version=8)
        assert parse_line(line, UTC) == LineOutcome(LineKind.OTHER_API, api_name="PRODUCE")
    line = render_other_api_line("METADATA", completion_time=T0, tz=UTC, kafka_version="3.6", api_version=12)
    assert '"requestApiKey":3,"requestApiVersion":12' in line
    line = render_other_logger_line(
        "Processor 3 received request: RequestHeader(apiKey=FETCH, apiVersion=11, clientId=c, "
        "correlationId=1)",
        when=T0,
        tz=UTC,
    )
    assert line.startswith("[2024-05-01 08:00:03,456] TRACE Processor 3 received request")
    assert line.endswith("(kafka.network.RequestChannel$)")
    assert parse_line(line, UTC) == LineOutcome(LineKind.OTHER)
    with pytest.raises(ValueError):
        render_other_api_line("NOPE", completion_time=T0, tz=UTC, kafka_version="3.6")


def test_complete_record_derives_fields() -> None:
    r = complete_record(
        {
            "api_name": "LEAVE_GROUP",
            "api_version": 1,
            "completion_time": datetime(2024, 5, 1, 23, 59, 59, 999999, tzinfo=UTC),
            "total_time_ms": 2.5,
            "group_id": "g",
            "member_id": "m",
            "error_code": 25,
            "connection": "[::1]:9092-x",
        },
        kafka_version="3.0",
    )
    assert r["completion_time"] == datetime(2024, 5, 1, 23, 59, 59, 999000, tzinfo=UTC)
    assert r["completion_ms"] == 1714607999999 and r["arrival_ms"] == 1714607999999 - 3
    assert r["log_date"] == date(2024, 5, 1)
    assert r["leave_members"] == [{"member_id": "m", "group_instance_id": None, "reason": None}]
    assert r["error_name"] == "UNKNOWN_MEMBER_ID"
    assert r["listener_address"] is None  # not a 3/4-part connection id
    assert r["log_era"] == "json" and r["is_forwarded"] is False and r["client_software_name"] == "unknown"
    # fields an API does not have are dropped
    r = complete_record(
        {
            "api_key": 12,
            "api_version": 0,
            "completion_ms": 0,
            "total_time_ms": 0.0,
            "group_id": "g",
            "reason": "x",
        },
        kafka_version="2.8",
    )
    assert r["reason"] is None and r["api_name"] == "HEARTBEAT"


def test_renderer_refuses_impossible_input() -> None:
    ok = {"api_name": "JOIN_GROUP", "api_version": 6, "completion_time": T0, "total_time_ms": 1.0}
    with pytest.raises(ValueError, match="not record columns"):
        complete_record({**ok, "bogus": 1}, kafka_version="2.4")
    with pytest.raises(ValueError, match="api_version"):
        complete_record({**ok, "api_version": None}, kafka_version="2.4")
    with pytest.raises(ValueError, match="no kept API"):
        complete_record({**ok, "api_name": "FETCH"}, kafka_version="2.4")
    r = complete_record({**ok, "group_id": "g", "error_code": 0}, kafka_version="2.4")
    with pytest.raises(ValueError, match="has no JOIN_GROUP v6"):
        render_line(r, kafka_version="2.3", tz=UTC)
    with pytest.raises(ValueError, match="era"):
        render_line(r, kafka_version="2.4", tz=UTC, era="json")
    with pytest.raises(ValueError, match="layout"):
        render_line(r, kafka_version="2.4", tz=UTC, layout="syslog")
