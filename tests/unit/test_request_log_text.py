"""Text-era (Kafka ≤ 2.7) lines: ``RequestHeader(…) -- {Struct.toString},response:{…} from connection
…;totalTime:…``, hand-written from the format reference (2.0–2.2 hand-written schema names, 2.3–2.7
generated snake_case names, ``_tagged_fields={}`` on flexible versions, ByteBuffer placeholders)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo

import pytest

from rebalance_replay.transforms.request_log import RECORD_COLUMNS, LineKind, LineOutcome, parse_line

BB26 = "java.nio.HeapByteBuffer[pos=0 lim=26 cap=26]"
BB30 = "java.nio.HeapByteBuffer[pos=0 lim=30 cap=30]"
METRICS = (
    ";totalTime:3005.123,requestQueueTime:0.1,localTime:2.0,remoteTime:3000.0,throttleTime:0,"
    "responseQueueTime:0.5,sendTime:2.523,securityProtocol:PLAINTEXT,principal:User:ANONYMOUS,"
    "listener:PLAINTEXT"
)
CLIENT_INFO = ",clientInformation:ClientInformation(softwareName=apache-kafka-java, softwareVersion=2.5.0)"
SUFFIX = " (kafka.request.logger)"


def request(line: str, tz: ZoneInfo | None = None) -> dict[str, object]:
    out = parse_line(line, tz or UTC)
    assert out.kind is LineKind.REQUEST, out.reason
    assert out.record is not None and list(out.record) == list(RECORD_COLUMNS)
    return out.record


def quarantined(line: str) -> str:
    out = parse_line(line, UTC)
    assert out.kind is LineKind.QUARANTINE, out
    assert out.reason is not None
    return out.reason


# --------------------------------------------------------------------------------------------------
# Kafka 2.0 – 2.2: hand-written schema names
# --------------------------------------------------------------------------------------------------

JOIN_V2_KAFKA_20 = (
    "[2019-03-01 10:00:00,100] DEBUG Completed request:RequestHeader(apiKey=JOIN_GROUP, apiVersion=2, "
    "clientId=consumer-1, correlationId=3) -- {group_id=g1,session_timeout=10000,rebalance_timeout=300000,"
    "member_id=,protocol_type=consumer,group_protocols=[{protocol_name=range,protocol_metadata="
    "java.nio.HeapByteBuffer[pos=0 lim=26 cap=26]},{protocol_name=roundrobin,protocol_metadata="
    "java.nio.HeapByteBuffer[pos=0 lim=26 cap=26]}]},response:{throttle_time_ms=0,error_code=0,"
    "generation_id=1,group_protocol=range,leader_id=consumer-1-a1,member_id=consumer-1-a1,members=["
    "{member_id=consumer-1-a1,member_metadata=java.nio.HeapByteBuffer[pos=0 lim=26 cap=26]}]} from "
    "connection "
    "127.0.0.1:9092-127.0.0.1:51264-1;totalTime:3005.123,requestQueueTime:0.1,localTime:2.0,"
    "remoteTime:3000.0,"
    "throttleTime:0,responseQueueTime:0.5,sendTime:2.523,securityProtocol:PLAINTEXT,principal:User:ANONYMOUS,"
    "listener:PLAINTEXT (kafka.request.logger)"
)


def test_join_group_v2_kafka_2_0_every_column() -> None:
    r = request(JOIN_V2_KAFKA_20, ZoneInfo("Europe/Berlin"))
    completion = datetime(2019, 3, 1, 9, 0, 0, 100000, tzinfo=UTC)  # CET = UTC+1
    ms = int(completion.timestamp() * 1000)
    expected = dict.fromkeys(RECORD_COLUMNS)
    expected.update(
        log_era="text",
        log_level="DEBUG",
        api_key=11,
        api_name="JOIN_GROUP",
        api_version=2,
        correlation_id=3,
        client_id="consumer-1",
        connection="127.0.0.1:9092-127.0.0.1:51264-1",
        listener_address="127.0.0.1:9092",
        client_address="127.0.0.1:51264",
        connection_index="1",
        security_protocol="PLAINTEXT",
        principal="User:ANONYMOUS",
        listener="PLAINTEXT",
        completion_time=completion,
        completion_ms=ms,
        arrival_ms=ms - 3005,
        total_time_ms=3005.123,
        request_queue_time_ms=0.1,
        local_time_ms=2.0,
        remote_time_ms=3000.0,
        throttle_time_ms=0,
        response_queue_time_ms=0.5,
        send_time_ms=2.523,
        group_id="g1",
        member_id="",
        session_timeout_ms=10000,
        rebalance_timeout_ms=300000,
        protocol_type="consumer",
        protocols=[
            {"name": "range", "metadata": None, "metadata_length": 26},
            {"name": "roundrobin", "metadata": None, "metadata_length": 26},
        ],
        error_code=0,
        error_name="NONE",
        response_generation_id=1,
        response_leader="consumer-1-a1",
        response_member_id="consumer-1-a1",
        response_protocol_name="range",
        response_members=[
            {"member_id": "consumer-1-a1", "group_instance_id": None, "metadata": None, "metadata_length": 26}
        ],
        raw_request=(
            "{group_id=g1,session_timeout=10000,rebalance_timeout=300000,member_id=,protocol_type=consumer,"
            f"group_protocols=[{{protocol_name=range,protocol_metadata={BB26}}},{{protocol_name=roundrobin,"
            f"protocol_metadata={BB26}}}]}}"
        ),
        raw_response=(
            "{throttle_time_ms=0,error_code=0,generation_id=1,group_protocol=range,leader_id=consumer-1-a1,"
            f"member_id=consumer-1-a1,members=[{{member_id=consumer-1-a1,member_metadata={BB26}}}]}}"
        ),
        log_date=date(2019, 3, 1),
    )
    assert r == expected


def test_join_group_v0_hand_written_rebalance_is_session() -> None:
    line = (
        "[2019-03-01 10:00:00,100] DEBUG Completed request:RequestHeader(apiKey=JOIN_GROUP, apiVersion=0, "
        "clientId=old, correlationId=1) -- {group_id=g0,session_timeout=30000,member_id=,"
        "protocol_type=consumer,"
        f"group_protocols=[{{protocol_name=range,protocol_metadata={BB26}}}]}},response:{{error_code=0,"
        "generation_id=1,group_protocol=range,leader_id=old-1,member_id=old-1,members=[]} from connection "
        "127.0.0.1:9092-127.0.0.1:51264-1" + METRICS + SUFFIX
    )
    r = request(line)
    assert r["session_timeout_ms"] == r["rebalance_timeout_ms"] == 30000
    assert r["response_members"] == []


def test_sync_group_v1_hand_written() -> None:
    line = (
        "[2019-03-01 10:00:03,200] DEBUG Completed request:RequestHeader(apiKey=SYNC_GROUP, apiVersion=1, "
        "clientId=consumer-1, correlationId=4) -- {group_id=g1,generation_id=1,member_id=consumer-1-a1,"
        f"group_assignment=[{{member_id=consumer-1-a1,member_assignment={BB30}}},{{member_id=consumer-2-b2,"
        f"member_assignment={BB30}}}]}},response:{{throttle_time_ms=0,error_code=0,member_assignment={BB30}}}"
        " from connection 127.0.0.1:9092-127.0.0.1:51264-1" + METRICS + SUFFIX
    )
    r = request(line)
    assert r["assignments"] == [
        {"member_id": "consumer-1-a1", "assignment": None, "assignment_length": 30},
        {"member_id": "consumer-2-b2", "assignment": None, "assignment_length": 30},
    ]
    assert r["response_assignment"] is None and r["response_assignment_length"] == 30


def test_heartbeat_v1_hand_written() -> None:
    line = (
        "[2019-03-01 10:00:06,000] DEBUG Completed request:RequestHeader(apiKey=HEARTBEAT, apiVersion=1, "
        "clientId=consumer-1, correlationId=5) -- {group_id=g1,generation_id=1,member_id=consumer-1-a1},"
        "response:{throttle_time_ms=0,error_code=27} from connection 127.0.0.1:9092-127.0.0.1:51264-1"
        + METRICS
        + SUFFIX
    )
    r = request(line)
    assert (r["group_id"], r["generation_id"], r["member_id"]) == ("g1", 1, "consumer-1-a1")
    assert r["error_name"] == "REBALANCE_IN_PROGRESS"


def test_leave_group_v1_hand_written() -> None:
    line = (
        "[2019-03-01 10:00:06,000] DEBUG Completed request:RequestHeader(apiKey=LEAVE_GROUP, apiVersion=1, "
        "clientId=consumer-1, correlationId=6) -- {group_id=g1,member_id=consumer-1-a1},response:"
        "{throttle_time_ms=0,error_code=0} from connection 127.0.0.1:9092-127.0.0.1:51264-1"
        + METRICS
        + SUFFIX
    )
    r = request(line)
    assert r["leave_members"] == [{"member_id": "consumer-1-a1", "group_instance_id": None, "reason": None}]
    assert r["member_id"] == "consumer-1-a1" and r["error_code"] == 0


def test_offset_commit_v2_hand_written() -> None:
    line = (
        "[2019-03-01 10:00:07,000] DEBUG Completed request:RequestHeader(apiKey=OFFSET_COMMIT, apiVersion=2, "
        "clientId=consumer-1, correlationId=7) -- {group_id=g1,generation_id=1,member_id=consumer-1-a1,"
        "retention_time=-1,topics=[{topic=t,partitions=[{partition=0,offset=100,metadata=},{partition=1,"
        "offset=200,metadata=}]}]},response:{responses=[{topic=t,partition_responses=[{partition=0,"
        "error_code=0},{partition=1,error_code=22}]}]} from connection 127.0.0.1:9092-127.0.0.1:51264-1"
        + METRICS
        + SUFFIX
    )
    r = request(line)
    assert r["commit_partitions"] == [
        {"topic": "t", "partition": 0, "committed_offset": 100},
        {"topic": "t", "partition": 1, "committed_offset": 200},
    ]
    assert r["response_commit_partitions"] == [
        {"topic": "t", "partition": 0, "error_code": 0, "error_name": "NONE"},
        {"topic": "t", "partition": 1, "error_code": 22, "error_name": "ILLEGAL_GENERATION"},
    ]
    assert r["error_code"] == 22


def test_offset_commit_v1_hand_written_timestamp() -> None:
    line = (
        "[2019-03-01 10:00:07,000] DEBUG Completed request:RequestHeader(apiKey=OFFSET_COMMIT, apiVersion=1, "
        "clientId=consumer-1, correlationId=7) -- {group_id=g1,generation_id=1,member_id=m,topics=[{topic=t,"
        "partitions=[{partition=0,offset=5,timestamp=-1,metadata=some,meta}]}]},"
        "response:{responses=[{topic=t,"
        "partition_responses=[{partition=0,error_code=0}]}]} from connection 127.0.0.1:9092-127.0.0.1:51264-1"
        + METRICS
        + SUFFIX
    )
    r = request(line)
    assert r["commit_partitions"] == [{"topic": "t", "partition": 0, "committed_offset": 5}]


def test_find_coordinator_v1_hand_written_nested_coordinator() -> None:
    line = (
        "[2019-03-01 10:00:00,000] DEBUG Completed request:RequestHeader(apiKey=FIND_COORDINATOR, "
        "apiVersion=1, "
        "clientId=consumer-1, correlationId=0) -- {coordinator_key=g1,coordinator_type=0},response:"
        "{throttle_time_ms=0,error_code=0,error_message=null,coordinator={node_id=1,host=broker-1,port=9092}}"
        " from connection 127.0.0.1:9092-127.0.0.1:51264-1" + METRICS + SUFFIX
    )
    r = request(line)
    assert (r["group_id"], r["key_type"]) == ("g1", 0)
    assert r["response_coordinator_node_id"] == 1 and r["error_code"] == 0


def test_describe_groups_v1_hand_written() -> None:
    line = (
        "[2019-03-01 10:00:00,000] DEBUG Completed request:RequestHeader(apiKey=DESCRIBE_GROUPS, "
        "apiVersion=1, "
        "clientId=admin-1, correlationId=2) -- {group_ids=[g1,g2]},response:{throttle_time_ms=0,groups=["
        "{error_code=0,group_id=g1,state=Stable,protocol_type=consumer,protocol=range,"
        "members=[{member_id=c-1,"
        f"client_id=c,client_host=/127.0.0.1,member_metadata={BB26},member_assignment={BB30}}}]}},"
        "{error_code=0,group_id=g2,state=Dead,protocol_type=,protocol=,members=[]}]} from connection "
        "127.0.0.1:9092-127.0.0.1:51264-1" + METRICS + SUFFIX
    )
    r = request(line)
    assert r["group_ids"] == ["g1", "g2"] and r["group_id"] == "g1"
    assert r["response_group_state"] == "Stable"


# --------------------------------------------------------------------------------------------------
# Kafka 2.3 – 2.7: generated names; 2.4+ flexible versions; 2.5+ clientInformation
# --------------------------------------------------------------------------------------------------


def test_join_group_v5_kafka_2_3_no_client_information() -> None:
    line = (
        "[2019-09-01 10:00:00,000] DEBUG Completed request:RequestHeader(apiKey=JOIN_GROUP, apiVersion=5, "
        "clientId=consumer-1, correlationId=3) -- {group_id=g1,session_timeout_ms=10000,"
        "rebalance_timeout_ms=300000,member_id=,group_instance_id=instance-1,protocol_type=consumer,"
        f"protocols=[{{name=range,metadata={BB26}}}]}},response:{{throttle_time_ms=0,error_code=0,"
        "generation_id=3,protocol_name=range,leader=consumer-1-a,member_id=consumer-1-a,members=[{member_id="
        f"consumer-1-a,group_instance_id=instance-1,metadata={BB26}}},{{member_id=consumer-2-b,"
        f"group_instance_id=null,metadata={BB26}}}]}} from connection 127.0.0.1:9092-127.0.0.1:51264-1"
        + METRICS
        + SUFFIX
    )
    r = request(line)
    assert r["group_instance_id"] == "instance-1"
    assert r["client_software_name"] is None and r["client_software_version"] is None
    assert r["response_members"] == [
        {
            "member_id": "consumer-1-a",
            "group_instance_id": "instance-1",
            "metadata": None,
            "metadata_length": 26,
        },
        {"member_id": "consumer-2-b", "group_instance_id": None, "metadata": None, "metadata_length": 26},
    ]


def test_join_group_v6_kafka_2_4_tagged_fields_member_id_required() -> None:
    line = (
        "[2020-01-01 10:00:00,000] DEBUG Completed request:RequestHeader(apiKey=JOIN_GROUP, apiVersion=6, "
        "clientId=consumer-1, correlationId=3) -- {group_id=g1,session_timeout_ms=10000,"
        "rebalance_timeout_ms=300000,member_id=,group_instance_id=null,protocol_type=consumer,protocols="
        f"[{{name=range,metadata={BB26},_tagged_fields={{}}}}],_tagged_fields={{}}}},"
        f"response:{{throttle_time_ms=0,"
        "error_code=79,generation_id=-1,protocol_name=,leader=,member_id=consumer-1-5d1a,members=[],"
        "_tagged_fields={}} from connection 127.0.0.1:9092-127.0.0.1:51264-1" + METRICS + SUFFIX
    )
    r = request(line)
    assert r["protocols"] == [{"name": "range", "metadata": None, "metadata_length": 26}]
    assert r["error_name"] == "MEMBER_ID_REQUIRED" and r["response_member_id"] == "consumer-1-5d1a"
    assert r["response_protocol_name"] == "" and r["response_leader"] == ""


def test_join_group_v7_kafka_2_5_client_information_protocol_type() -> None:
    line = (
        "[2020-06-01 10:00:00,000] DEBUG Completed request:RequestHeader(apiKey=JOIN_GROUP, apiVersion=7, "
        "clientId=consumer-1, correlationId=3) -- {group_id=g1,session_timeout_ms=10000,"
        "rebalance_timeout_ms=300000,member_id=consumer-1-x,group_instance_id=null,protocol_type=consumer,"
        f"protocols=[{{name=range,metadata={BB26},_tagged_fields={{}}}}],_tagged_fields={{}}}},response:"
        "{throttle_time_ms=0,error_code=0,generation_id=4,protocol_type=consumer,protocol_name=range,"
        "leader=consumer-1-x,member_id=consumer-1-x,members=[],_tagged_fields={}} from connection "
        "127.0.0.1:9092-127.0.0.1:51264-1" + METRICS + CLIENT_INFO + SUFFIX
    )
    r = request(line)
    assert (r["client_software_name"], r["client_software_version"]) == ("apache-kafka-java", "2.5.0")
    assert r["response_protocol_type"] == "consumer"


def test_sync_group_v3_kafka_2_3_static() -> None:
    line = (
        "[2019-09-01 10:00:03,000] DEBUG Completed request:RequestHeader(apiKey=SYNC_GROUP, apiVersion=3, "
        "clientId=consumer-2, correlationId=4) -- {group_id=g1,generation_id=3,member_id=consumer-2-b,"
        "group_instance_id=instance-2,assignments=[]},response:{throttle_time_ms=0,error_code=0,assignment="
        f"{BB30}}} from connection 127.0.0.1:9092-127.0.0.1:51265-2" + METRICS + SUFFIX
    )
    r = request(line)
    assert r["group_instance_id"] == "instance-2" and r["assignments"] == []
    assert r["response_assignment_length"] == 30


def test_sync_group_v5_kafka_2_5_flexible_protocol_fields() -> None:
    line = (
        "[2020-06-01 10:00:03,000] DEBUG Completed request:RequestHeader(apiKey=SYNC_GROUP, apiVersion=5, "
        "clientId=consumer-1, correlationId=4) -- {group_id=g1,generation_id=4,member_id=consumer-1-x,"
        "group_instance_id=null,protocol_type=consumer,protocol_name=range,assignments=[{member_id="
        f"consumer-1-x,assignment={BB30},_tagged_fields={{}}}}],_tagged_fields={{}}}},response:"
        f"{{throttle_time_ms=0,error_code=0,protocol_type=consumer,protocol_name=range,assignment={BB30},"
        "_tagged_fields={}} from connection 127.0.0.1:9092-127.0.0.1:51264-1" + METRICS + CLIENT_INFO + SUFFIX
    )
    r = request(line)
    assert r["assignments"] == [{"member_id": "consumer-1-x", "assignment": None, "assignment_length": 30}]
    assert (r["protocol_type"], r["protocol_name"]) == ("consumer", "range")
    assert (r["response_protocol_type"], r["response_protocol_name"]) == ("consumer", "range")


@pytest.mark.parametrize(
    "version,request_body,response_body",
    [
        (
            3,
            "{group_id=g1,generation_id=4,member_id=m-1,group_instance_id=i-1}",
            "{throttle_time_ms=0,error_code=0}",
        ),
        (
            4,
            "{group_id=g1,generation_id=4,member_id=m-1,group_instance_id=null,_tagged_fields={}}",
            "{throttle_time_ms=0,error_code=0,_tagged_fields={}}",
        ),
    ],
)
def test_heartbeat_v3_v4_generated(version: int, request_body: str, response_body: str) -> None:
    line = (
        "[2020-06-01 10:00:05,000] DEBUG Completed request:RequestHeader(apiKey=HEARTBEAT, "
        f"apiVersion={version}, "
        f"clientId=consumer-1, correlationId=9) -- {request_body},response:{response_body} from connection "
        "127.0.0.1:9092-127.0.0.1:51264-1" + METRICS + SUFFIX
    )
    r = request(line)
    assert r["group_instance_id"] == ("i-1" if version == 3 else None)
    assert r["raw_request"] == request_body and r["raw_response"] == response_body


def test_leave_group_v3_kafka_2_4_batch() -> None:
    line = (
        "[2020-01-01 10:00:06,000] DEBUG Completed request:RequestHeader(apiKey=LEAVE_GROUP, apiVersion=3, "
        "clientId=admin-1, correlationId=6) -- {group_id=g1,members=[{member_id=,group_instance_id=i-1},"
        "{member_id=consumer-2-b,group_instance_id=null}]},response:{throttle_time_ms=0,error_code=0,"
        "members=["
        "{member_id=,group_instance_id=i-1,error_code=0},{member_id=consumer-2-b,group_instance_id=null,"
        "error_code=25}]} from connection 127.0.0.1:9092-127.0.0.1:51264-1" + METRICS + SUFFIX
    )
    r = request(line)
    assert r["leave_members"] == [
        {"member_id": "", "group_instance_id": "i-1", "reason": None},
        {"member_id": "consumer-2-b", "group_instance_id": None, "reason": None},
    ]
    assert r["response_leave_members"] == [
        {"member_id": "", "group_instance_id": "i-1", "error_code": 0, "error_name": "NONE"},
        {
            "member_id": "consumer-2-b",
            "group_instance_id": None,
            "error_code": 25,
            "error_name": "UNKNOWN_MEMBER_ID",
        },
    ]


def test_leave_group_v4_flexible() -> None:
    line = (
        "[2020-06-01 10:00:06,000] DEBUG Completed request:RequestHeader(apiKey=LEAVE_GROUP, apiVersion=4, "
        "clientId=consumer-1, correlationId=6) -- {group_id=g1,members=[{member_id=consumer-1-x,"
        "group_instance_id=null,_tagged_fields={}}],_tagged_fields={}},response:{throttle_time_ms=0,"
        "error_code=0,"
        "members=[{member_id=consumer-1-x,group_instance_id=null,error_code=0,_tagged_fields={}}],"
        "_tagged_fields={}} from connection 127.0.0.1:9092-127.0.0.1:51264-1" + METRICS + CLIENT_INFO + SUFFIX
    )
    r = request(line)
    assert r["leave_members"] == [{"member_id": "consumer-1-x", "group_instance_id": None, "reason": None}]


def test_offset_commit_v7_kafka_2_3() -> None:
    line = (
        "[2019-09-01 10:00:07,000] DEBUG Completed request:RequestHeader(apiKey=OFFSET_COMMIT, apiVersion=7, "
        "clientId=consumer-1, correlationId=7) -- {group_id=g1,generation_id=5,member_id=m-1,"
        "group_instance_id=null,topics=[{name=t,partitions=[{partition_index=0,committed_offset=10,"
        "committed_leader_epoch=-1,committed_metadata=}]},{name=u,partitions=[{partition_index=3,"
        "committed_offset=-1,committed_leader_epoch=2,committed_metadata=null}]}]},"
        "response:{throttle_time_ms=0,"
        "topics=[{name=t,partitions=[{partition_index=0,error_code=0}]},{name=u,"
        "partitions=[{partition_index=3,"
        "error_code=12}]}]} from connection 127.0.0.1:9092-127.0.0.1:51264-1" + METRICS + SUFFIX
    )
    r = request(line)
    assert r["commit_partitions"] == [
        {"topic": "t", "partition": 0, "committed_offset": 10},
        {"topic": "u", "partition": 3, "committed_offset": -1},
    ]
    assert r["error_code"] == 12 and r["error_name"] == "OFFSET_METADATA_TOO_LARGE"


def test_offset_commit_v8_kafka_2_4_flexible() -> None:
    line = (
        "[2020-01-01 10:00:07,000] DEBUG Completed request:RequestHeader(apiKey=OFFSET_COMMIT, apiVersion=8, "
        "clientId=consumer-1, correlationId=7) -- {group_id=g1,generation_id=5,member_id=m-1,"
        "group_instance_id=null,topics=[{name=t,partitions=[{partition_index=0,committed_offset=10,"
        "committed_leader_epoch=-1,committed_metadata=,_tagged_fields={}}],_tagged_fields={}}],"
        "_tagged_fields={}},response:{throttle_time_ms=0,topics=[{name=t,partitions=[{partition_index=0,"
        "error_code=0,_tagged_fields={}}],_tagged_fields={}}],_tagged_fields={}} from connection "
        "127.0.0.1:9092-127.0.0.1:51264-1" + METRICS + SUFFIX
    )
    r = request(line)
    assert r["commit_partitions"] == [{"topic": "t", "partition": 0, "committed_offset": 10}]
    assert r["error_code"] == 0


@pytest.mark.parametrize(
    "version,request_body,response_body",
    [
        (
            2,
            "{key=g1,key_type=0}",
            "{throttle_time_ms=0,error_code=0,error_message=NONE,node_id=1,host=broker-1,port=9092}",
        ),
        (
            3,
            "{key=g1,key_type=0,_tagged_fields={}}",
            "{throttle_time_ms=0,error_code=0,error_message=NONE,node_id=1,host=broker-1,port=9092,"
            "_tagged_fields={}}",
        ),
    ],
)
def test_find_coordinator_v2_v3_generated(version: int, request_body: str, response_body: str) -> None:
    line = (
        f"[2020-01-01 10:00:00,000] DEBUG Completed request:RequestHeader(apiKey=FIND_COORDINATOR, "
        f"apiVersion={version}, clientId=consumer-1, correlationId=0) -- {request_body},"
        f"response:{response_body}"
        " from connection 127.0.0.1:9092-127.0.0.1:51264-1" + METRICS + SUFFIX
    )
    r = request(line)
    assert (r["group_id"], r["key_type"], r["response_coordinator_node_id"]) == ("g1", 0, 1)


def test_describe_groups_v3_and_v5_generated() -> None:
    v3 = (
        "[2019-09-01 10:00:00,000] DEBUG Completed request:RequestHeader(apiKey=DESCRIBE_GROUPS, "
        "apiVersion=3, "
        "clientId=admin-1, correlationId=2) -- {groups=[g1],include_authorized_operations=true},response:"
        "{throttle_time_ms=0,groups=[{error_code=0,group_id=g1,group_state=CompletingRebalance,"
        "protocol_type=consumer,protocol_data=range,members=[],authorized_operations=264}]} from connection "
        "127.0.0.1:9092-127.0.0.1:51264-1" + METRICS + SUFFIX
    )
    r = request(v3)
    assert r["group_ids"] == ["g1"] and r["response_group_state"] == "CompletingRebalance"
    v5 = (
        "[2020-06-01 10:00:00,000] DEBUG Completed request:RequestHeader(apiKey=DESCRIBE_GROUPS, "
        "apiVersion=5, "
        "clientId=admin-1, correlationId=2) -- {groups=[g1,g2],include_authorized_operations=false,"
        "_tagged_fields={}},response:{throttle_time_ms=0,groups=[{error_code=0,group_id=g1,"
        "group_state=Stable,"
        "protocol_type=consumer,protocol_data=range,members=[{member_id=c-1,group_instance_id=null,"
        "client_id=c,"
        f"client_host=/127.0.0.1,member_metadata={BB26},member_assignment={BB30},_tagged_fields={{}}}}],"
        "authorized_operations=-2147483648,_tagged_fields={}},{error_code=0,group_id=g2,group_state=Dead,"
        "protocol_type=,protocol_data=,members=[],authorized_operations=-2147483648,_tagged_fields={}}],"
        "_tagged_fields={}} from connection 127.0.0.1:9092-127.0.0.1:51264-1" + METRICS + CLIENT_INFO + SUFFIX
    )
    r = request(v5)
    assert r["group_ids"] == ["g1", "g2"] and r["response_group_state"] == "Stable"


# --------------------------------------------------------------------------------------------------
# Hazards: commas/equals/braces in values, principals, connection forms, extras, layouts
# --------------------------------------------------------------------------------------------------


def test_values_with_commas_equals_and_braces() -> None:
    line = (
        "[2020-06-01 10:00:05,000] DEBUG Completed request:RequestHeader(apiKey=HEARTBEAT, apiVersion=2, "
        "clientId=my, client=x, correlationId=9) -- {group_id=team,orders=v2}{x},generation_id=4,"
        "member_id=my, client=x-1}},response:{throttle_time_ms=0,error_code=0} from connection "
        "127.0.0.1:9092-127.0.0.1:51264-1" + METRICS + SUFFIX
    )
    r = request(line)
    assert r["client_id"] == "my, client=x"
    assert r["group_id"] == "team,orders=v2}{x}"
    assert r["member_id"] == "my, client=x-1}"


def test_brace_in_last_field_of_array_element() -> None:
    line = (
        "[2020-01-01 10:00:06,000] DEBUG Completed request:RequestHeader(apiKey=LEAVE_GROUP, apiVersion=3, "
        "clientId=admin-1, correlationId=6) -- {group_id=g1,members=[{member_id=a,group_instance_id=i}1},"
        "{member_id=b,group_instance_id=j}}]},response:{throttle_time_ms=0,error_code=0,members=[]} from "
        "connection 127.0.0.1:9092-127.0.0.1:51264-1" + METRICS + SUFFIX
    )
    r = request(line)
    assert r["leave_members"] == [
        {"member_id": "a", "group_instance_id": "i}1", "reason": None},
        {"member_id": "b", "group_instance_id": "j}", "reason": None},
    ]


def test_ssl_principal_with_commas_ipv6_and_extras() -> None:
    line = (
        "[2020-06-01 10:00:05,000] DEBUG Completed request:RequestHeader(apiKey=HEARTBEAT, apiVersion=3, "
        "clientId=null, correlationId=9) -- {group_id=g1,generation_id=4,member_id=m-1,"
        "group_instance_id=null},"
        "response:{throttle_time_ms=0,error_code=0} from connection "
        "0:0:0:0:0:0:0:1:9093-0:0:0:0:0:0:0:1:51244-7;totalTime:1.0E7,requestQueueTime:0.001,"
        "localTime:1.5,remoteTime:0.0,throttleTime:120,responseQueueTime:0.2,sendTime:0.3,"
        "securityProtocol:SSL,"
        "principal:User:CN=app.example.com,OU=Payments,O=Example,C=DE,listener:SSL,clientInformation:"
        "ClientInformation(softwareName=apache-kafka-java, softwareVersion=2.6.0),temporaryMemoryBytes:512,"
        "messageConversionsTime:0.25" + SUFFIX
    )
    r = request(line)
    assert r["client_id"] is None
    assert r["principal"] == "User:CN=app.example.com,OU=Payments,O=Example,C=DE"
    assert (r["listener_address"], r["client_address"], r["connection_index"]) == (
        "0:0:0:0:0:0:0:1:9093",
        "0:0:0:0:0:0:0:1:51244",
        "7",
    )
    assert r["total_time_ms"] == 1.0e7 and r["request_queue_time_ms"] == 0.001
    assert r["throttle_time_ms"] == 120
    assert r["client_software_version"] == "2.6.0"
    assert r["temporary_memory_bytes"] == 512 and r["message_conversions_time_ms"] == 0.25


def test_strimzi_prefix_on_text_line() -> None:
    line = (
        JOIN_V2_KAFKA_20.replace("[2019-03-01 10:00:00,100]", "2019-03-01 10:00:00,100")
        + " [kafka-network-thread-0]"
    )
    assert request(line) == request(JOIN_V2_KAFKA_20)


def test_other_api_text_lines() -> None:
    fetch = (
        "[2019-03-01 10:00:00,000] DEBUG Completed request:RequestHeader(apiKey=FETCH, apiVersion=10, "
        "clientId=consumer-1, correlationId=88) -- {replica_id=-1,max_wait_time=500,min_bytes=1,"
        "max_bytes=52428800,isolation_level=0,session_id=0,session_epoch=-1,topics=[],"
        "forgotten_topics_data=[]},"
        "response:{throttle_time_ms=0,error_code=0,session_id=0,responses=[]} from connection "
        "127.0.0.1:9092-127.0.0.1:51264-1" + METRICS + SUFFIX
    )
    assert parse_line(fetch, UTC) == LineOutcome(LineKind.OTHER_API, api_name="FETCH")
    produce_truncated = (
        "[2019-03-01 10:00:00,000] DEBUG Completed request:RequestHeader(apiKey=PRODUCE, apiVersion=7, "
        "clientId=producer-1, correlationId=1) -- {acks=-1,timeout=30000,numPartitions=1"
    )
    assert parse_line(produce_truncated, UTC) == LineOutcome(LineKind.OTHER_API, api_name="PRODUCE")
    cut = "[2019-03-01 10:00:00,000] DEBUG Completed request:RequestHeader(apiKey=FETCH, apiVer"
    assert parse_line(cut, UTC) == LineOutcome(LineKind.OTHER_API, api_name="FETCH")
    cut = "[2019-03-01 10:00:00,000] DEBUG Completed request:RequestHeader(apiKey=HEART"
    out = parse_line(cut, UTC)
    assert out.kind is LineKind.QUARANTINE and out.log_date == date(2019, 3, 1)


# --------------------------------------------------------------------------------------------------
# Quarantine
# --------------------------------------------------------------------------------------------------


def test_quarantine_bad_int_names_the_text_field() -> None:
    line = JOIN_V2_KAFKA_20.replace("session_timeout=10000", "session_timeout=ten")
    reason = quarantined(line)
    assert "session_timeout" in reason and "'ten' is not an int" in reason


def test_quarantine_bad_bytebuffer() -> None:
    line = JOIN_V2_KAFKA_20.replace(f"member_metadata={BB26}", "member_metadata=[B@1a2b3c")
    assert "member_metadata" in quarantined(line)


def test_quarantine_unknown_field_lists_expected_names() -> None:
    line = JOIN_V2_KAFKA_20.replace("generation_id=1,", "generation=1,")
    reason = quarantined(line)
    assert reason.startswith("response body does not match Kafka's Struct format at char ")
    assert "error_code" in reason and "generation=1" in reason


def test_quarantine_missing_response_marker() -> None:
    line = JOIN_V2_KAFKA_20.replace(",response:", ",resp:")
    assert quarantined(line) == "text-era body: missing ',response:' marker"


def test_quarantine_missing_metric_field_and_bad_number() -> None:
    line = JOIN_V2_KAFKA_20.replace(",listener:PLAINTEXT", "")
    assert quarantined(line) == "text-era field listener is missing"
    line = JOIN_V2_KAFKA_20.replace("totalTime:3005.123", "totalTime:abc")
    assert quarantined(line) == "text-era field totalTime 'abc' is not a number"
    line = JOIN_V2_KAFKA_20.replace(" from connection ", " to connection ")
    assert quarantined(line) == "text-era body: missing ' from connection ' marker"


EXTRAS = ",temporaryMemoryBytes:512,messageConversionsTime:0.25"


@pytest.mark.parametrize(
    ("logged", "bad", "kind"),
    [
        ("requestQueueTime:0.1", "requestQueueTime:x", "a number"),
        ("localTime:2.0", "localTime:x", "a number"),
        ("remoteTime:3000.0", "remoteTime:x", "a number"),
        ("throttleTime:0", "throttleTime:x", "an int"),
        ("responseQueueTime:0.5", "responseQueueTime:x", "a number"),
        ("sendTime:2.523", "sendTime:x", "a number"),
        ("temporaryMemoryBytes:512", "temporaryMemoryBytes:x", "an int"),
        ("messageConversionsTime:0.25", "messageConversionsTime:x", "a number"),
    ],
)
def test_a_bad_metric_is_named_as_the_log_names_it(logged: str, bad: str, kind: str) -> None:
    """Each metric of the ``;totalTime:…`` tail that is not a number is named in the quarantine reason as
    the broker's request logger writes it (``remoteTime``, not a column name or another spelling)."""
    line = JOIN_V2_KAFKA_20.replace(" (kafka.request.logger)", EXTRAS + SUFFIX)
    assert request(line)["message_conversions_time_ms"] == 0.25  # the tail is read as it is
    name = logged.split(":")[0]
    assert quarantined(line.replace(logged, bad)) == f"text-era field {name} 'x' is not {kind}"


DESCRIBE_V3_BAD_BOOL = (
    "[2019-09-01 10:00:00,000] DEBUG Completed request:RequestHeader(apiKey=DESCRIBE_GROUPS, apiVersion=3, "
    "clientId=admin-1, correlationId=2) -- {groups=[g1],include_authorized_operations=yes},response:"
    "{throttle_time_ms=0,groups=[{error_code=0,group_id=g1,group_state=Stable,protocol_type=consumer,"
    "protocol_data=range,members=[],authorized_operations=264}]} from connection "
    "127.0.0.1:9092-127.0.0.1:51264-1" + METRICS + SUFFIX
)


def test_a_boolean_field_that_is_neither_true_nor_false_is_named_with_its_position() -> None:
    """Struct.toString writes a boolean as ``true`` or ``false``; anything else refuses the line, naming the
    field, its value and where the value starts in the line (0-based: the character after the ``=``)."""
    field = "include_authorized_operations="
    at = DESCRIBE_V3_BAD_BOOL.index(field + "yes") + len(field)
    # counted by hand: the timestamp and a space (26), 'DEBUG Completed request:' (24), the header up to
    # 'clientId' (52), the rest of it and ' -- {' (39), 'groups=[g1],' (12), the field name and '=' (30)
    assert at == 26 + 24 + 52 + 39 + 12 + 30 == 183
    assert quarantined(DESCRIBE_V3_BAD_BOOL) == (
        "request body does not match Kafka's Struct format at char 183: "
        "field include_authorized_operations value 'yes' is not a boolean"
    )
    assert request(DESCRIBE_V3_BAD_BOOL.replace("=yes}", "=true}"))["group_ids"] == ["g1"]


def test_the_connection_marker_is_the_bodys_not_the_client_ids() -> None:
    """A client id is any string: one holding " from connection " is still the header's. Without the
    body's marker the line is refused, not read from the client id on; with it, the client id stays whole."""
    odd = JOIN_V2_KAFKA_20.replace("clientId=consumer-1,", "clientId=etl from connection pool,")
    assert request(odd)["client_id"] == "etl from connection pool"
    assert request(odd)["connection"] == "127.0.0.1:9092-127.0.0.1:51264-1"
    line = odd.replace("]} from connection 127", "]} to connection 127")
    assert quarantined(line) == "text-era body: missing ' from connection ' marker"


def test_quarantine_version_out_of_range_and_truncation() -> None:
    line = JOIN_V2_KAFKA_20.replace("apiVersion=2", "apiVersion=12")
    assert quarantined(line) == "RequestHeader apiVersion 12 is out of range 0..9 for JOIN_GROUP"
    assert quarantined(JOIN_V2_KAFKA_20[:250]).startswith("truncated line")


def test_quarantine_missing_group_id() -> None:
    line = (
        "[2019-03-01 10:00:06,000] DEBUG Completed request:RequestHeader(apiKey=HEARTBEAT, apiVersion=1, "
        "clientId=consumer-1, correlationId=5) -- {generation_id=1,member_id=consumer-1-a1},"
        "response:{throttle_time_ms=0,error_code=27} from connection 127.0.0.1:9092-127.0.0.1:51264-1"
        + METRICS
        + SUFFIX
    )
    assert quarantined(line) == "Heartbeat v1 request: missing groupId"


def test_quarantine_bad_text_header() -> None:
    line = JOIN_V2_KAFKA_20.replace(", correlationId=3)", ", correlation=3)")
    assert "RequestHeader" in quarantined(line)
