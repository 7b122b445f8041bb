"""Ingest end to end on Spark: real-format lines of both eras from two brokers → Delta tables.

Checked through the CLI and read back with ``deltalake`` directly (no Spark) so the tables are real Delta.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from rebalance_replay.jobs.cli import main
from tests.helpers import canonical, read_table

pytestmark = pytest.mark.spark

JSON_JOIN = (
    '[2024-05-01 10:00:03,456] DEBUG Completed request:{"i'
    'sForwarded":false,"requestHeader":{"requestApiKey":11,'
    '"requestApiVersion":9,"correlationId":7,"clientId":"consumer-g1-1","requestApiKeyName":"JOIN_GROUP"},'
    '"request":{"groupId":"g1","sessionTimeoutMs":45000,"rebalanceTimeoutMs":300000,"memberId":"",'
    '"groupInstanceId":null,"protocolType":"consumer","protocols":[{"name":"range","metadata":'
    '"AAMAAAABAAF0/////wAAAAD///////8="}],"reason":""},"response":{"throttleTimeMs":0,"errorCode":79,'
    '"generationId":-1,"protocolType":null,"protocolName":null,"leader":"","skipAssignment":false,'
    '"memberId":"consumer-g1-1-6f1c2b1e-1d2f-4f4e-9a57-0b5a8c0f9d11","members":[]},'
    '"connection":"10.0.0.1:9092-10.0.0.9:53422-12","totalTimeMs":1.234,"requestQueueTimeMs":0.05,'
    '"localTimeMs":0.9,"remoteTimeMs":0.0,"throttleTimeMs":0,"responseQueueTimeMs":0.06,"sendTimeMs":0.1,'
    '"securityProtocol":"PLAINTEXT","principal":"User:ANONYMOUS","listener":"PLAINTEXT",'
    '"clientInformation":{"softwareName":"apache-kafka-jav'
    'a","softwareVersion":"3.7.1"}} (kafka.request.logger)'
)
JSON_HEARTBEAT = (
    '[2024-05-01 10:00:04,001] DEBUG Completed request:{"i'
    'sForwarded":false,"requestHeader":{"requestApiKey":12,'
    '"requestApiVersion":4,"correlationId":41,"clientId":"consumer-g1-1","requestApiKeyName":"HEARTBEAT"},'
    '"request":{"groupId":"g1","generationId":3,"memberId":"consumer-g1-1-6f1c","groupInstanceId":null},'
    '"response":{"throttleTimeMs":0,"errorCode":27},"connection":"10.0.0.1:9092-10.0.0.9:53422-12",'
    '"totalTimeMs":0.412,"requestQueueTimeMs":0.05,"localTimeMs":0.2,"remoteTimeMs":0.0,"throttleTimeMs":0,'
    '"responseQueueTimeMs":0.06,"sendTimeMs":0.1,"securityProtocol":"PLAINTEXT","principal":"User:ANONYMOUS",'
    '"listener":"PLAINTEXT","clientInformation":{"software'
    'Name":"apache-kafka-java","softwareVersion":"3.7.1"}}'
    " (kafka.request.logger)"
)
JSON_FETCH = (
    '[2024-05-01 10:00:04,100] DEBUG Completed request:{"i'
    'sForwarded":false,"requestHeader":{"requestApiKey":1,'
    '"requestApiVersion":16,"correlationId":9,"clientId":"consumer-g1-1","requestApiKeyName":"FETCH"},'
    '"request":{},"response":{},"connection":"10.0.0.1:9092-10.0.0.9:53422-12","totalTimeMs":500.1,'
    '"requestQueueTimeMs":0.05,"localTimeMs":0.2,"remoteTimeMs":499.0,"throttleTimeMs":0,'
    '"responseQueueTimeMs":0.06,"sendTimeMs":0.1,"securityProtocol":"PLAINTEXT","principal":"User:ANONYMOUS",'
    '"listener":"PLAINTEXT","clientInformation":{"software'
    'Name":"apache-kafka-java","softwareVersion":"3.7.1"}}'
    " (kafka.request.logger)"
)
JSON_BROKEN = '[2024-05-01 10:00:05,000] DEBUG Completed request:{"isForwarded":false,"requestHeader":{"requ'
OTHER_LOGGER = (
    "[2024-05-01 10:00:05,100] TRACE Processor 3 received request: x (kafka.network.RequestChannel$)"
)
TEXT_HEARTBEAT = (
    "[2020-11-02 08:15:00,250] DEBUG Completed request:RequestHeader(apiKey=HEARTBEAT, apiVersion=3, "
    "clientId=consumer-legacy-1, correlationId=120) -- {group_id=legacy,generation_id=5,"
    "member_id=consumer-legacy-1-3c1a,group_instance_id=null},response:{throttle_time_ms=0,error_code=0} "
    "from connection 10.0.0.2:9092-10.0.0.7:40112-3;totalTime:0.6,requestQueueTime:0.1,localTime:0.3,"
    "remoteTime:0.0,throttleTime:0,responseQueueTime:0.1,sendTime:0.1,securityProtocol:PLAINTEXT,"
    "principal:User:ANONYMOUS,listener:PLAINTEXT,clientInformation:ClientInformation(softwareName="
    "apache-kafka-java, softwareVersion=2.7.0) (kafka.request.logger)"
)


def _write(path: Path, lines: list[str], *, gz: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = "".join(line + "\n" for line in lines)
    if gz:
        with gzip.open(path, "wt") as f:
            f.write(data)
    else:
        path.write_text(data)


def _summary(wh: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((wh / "summary.json").read_text())
    return data


def _count(wh: Path, table: str) -> int:
    return len(read_table(wh / table))


def test_multi_broker_both_eras_idempotent_and_resumable(tmp_path: Path, spark: object) -> None:
    logs, wh = tmp_path / "logs", tmp_path / "wh"
    live1 = logs / "broker-1" / "kafka-request.log"
    _write(live1, [JSON_JOIN, JSON_HEARTBEAT, JSON_FETCH, JSON_BROKEN, OTHER_LOGGER])
    _write(logs / "broker-2" / "kafka-request.log.2020-11-02-08.gz", [TEXT_HEARTBEAT, OTHER_LOGGER], gz=True)

    assert main(["ingest", "--input", str(logs), "--warehouse", str(wh)]) == 0
    s = _summary(wh)
    assert (s["lines_read"], s["requests"], s["quarantined"], s["other_api_lines"], s["other_lines"]) == (
        7,
        3,
        1,
        1,
        2,
    )
    assert s["lines_read"] == s["requests"] + s["quarantined"] + s["other_api_lines"] + s["other_lines"]

    requests = read_table(wh / "requests")
    assert sorted((r["broker_id"], r["api_name"], r["line_no"]) for r in requests) == [
        ("broker-1", "HEARTBEAT", 2),
        ("broker-1", "JOIN_GROUP", 1),
        ("broker-2", "HEARTBEAT", 1),
    ]
    join = next(r for r in requests if r["api_name"] == "JOIN_GROUP")
    assert join["error_name"] == "MEMBER_ID_REQUIRED"
    assert join["arrival_ms"] == join["completion_ms"] - 1
    assert join["protocols"][0]["name"] == "range" and join["protocols"][0]["metadata_length"] == 23
    text = next(r for r in requests if r["broker_id"] == "broker-2")
    assert (text["log_era"], text["group_id"], text["generation_id"]) == ("text", "legacy", 5)
    assert text["client_software_version"] == "2.7.0"
    quarantine = read_table(wh / "quarantine")
    assert len(quarantine) == 1 and quarantine[0]["line_no"] == 4
    assert quarantine[0]["raw_line"] == JSON_BROKEN and quarantine[0]["reason"]
    # partitioned by date, one commit per table
    assert DeltaTable(str(wh / "requests")).metadata().partition_columns == ["log_date"]
    versions = {t: DeltaTable(str(wh / t)).version() for t in ("requests", "quarantine", "ingest_files")}

    # same files again: nothing added, no new commits
    assert main(["ingest", "--input", str(logs), "--warehouse", str(wh)]) == 0
    assert {t: DeltaTable(str(wh / t)).version() for t in versions} == versions
    assert _count(wh, "requests") == 3

    # the live file grows, then rotates and is gzipped beside a new live file: only new lines are read
    _write(live1, [JSON_JOIN, JSON_HEARTBEAT, JSON_FETCH, JSON_BROKEN, OTHER_LOGGER, JSON_HEARTBEAT])
    assert main(["ingest", "--input", str(logs), "--warehouse", str(wh)]) == 0
    assert _count(wh, "requests") == 4
    rotated = logs / "broker-1" / "kafka-request.log.2024-05-01-10.gz"
    with open(live1, "rb") as src, gzip.open(rotated, "wb") as dst:
        shutil.copyfileobj(src, dst)
        dst.write((JSON_HEARTBEAT + "\n").encode())
    _write(live1, [JSON_HEARTBEAT.replace("10:00:04,001", "11:00:00,001")])
    assert main(["ingest", "--input", str(logs), "--warehouse", str(wh)]) == 0
    s = _summary(wh)
    assert s["requests"] == 6 and _count(wh, "requests") == 6
    assert s["lines_read"] == 7 + 1 + 1 + 1
    assert s["accounting_ok"] is True


def test_errors_are_one_line(tmp_path: Path, spark: object, capsys: pytest.CaptureFixture[str]) -> None:
    wh = tmp_path / "wh"
    assert main(["ingest", "--input", str(tmp_path / "missing"), "--warehouse", str(wh)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"rebalance-replay: error: input: {tmp_path / 'missing'}: no such file or directory"]
    bad = tmp_path / "logs" / "broker-1" / "kafka-request.log.1.gz"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"\x1f\x8b\x08\x00not-deflate-data")
    assert main(["ingest", "--input", str(bad), "--warehouse", str(wh)]) == 2
    assert "unreadable gzip" in capsys.readouterr().err
    good = tmp_path / "logs" / "broker-1" / "kafka-request.log"
    _write(good, [JSON_HEARTBEAT])
    assert (
        main(["ingest", "--input", str(good), "--warehouse", str(wh), "--set", "input.timezone=Nowhere/X"])
        == 2
    )
    assert "is not a known time zone" in capsys.readouterr().err
    assert main(["ingest", "--warehouse", str(wh)]) == 2
    assert "--input" in capsys.readouterr().err


def test_timezone_shifts_completion(tmp_path: Path, spark: object) -> None:
    logs, wh = tmp_path / "logs", tmp_path / "wh"
    _write(logs / "broker-1" / "kafka-request.log", [JSON_HEARTBEAT])
    assert (
        main(
            ["ingest", "--input", str(logs), "--warehouse", str(wh), "--set", "input.timezone=Europe/Berlin"]
        )
        == 0
    )
    (row,) = read_table(wh / "requests")
    # 10:00:04.001 in Berlin (CEST, UTC+2) is 08:00:04.001 UTC
    assert row["completion_ms"] == 1714550404001


# ---- large files read as several slices (input.max_slice_bytes) ------------------------------------------

SPLIT = ["--set", f"input.max_slice_bytes={1 << 20}"]  # the smallest allowed: files of ~2.5 MB → 3 slices
CYCLE = [JSON_JOIN, JSON_HEARTBEAT, JSON_FETCH, JSON_BROKEN, OTHER_LOGGER, TEXT_HEARTBEAT, ""]
INCOMPLETE = "[2024-05-01 10:00:09,000] DEBUG Completed request:{"


def _cycle(n: int, eol: str = "\n", start: int = 0) -> bytes:
    return "".join(CYCLE[(start + i) % len(CYCLE)] + eol for i in range(n)).encode()


def _tables(wh: Path) -> dict[str, list[str]]:
    return {t: canonical(read_table(wh / t), drop=("ingested_at",)) for t in ("requests", "quarantine")}


def _files(wh: Path) -> list[dict[str, object]]:
    rows = [{k: v for k, v in r.items() if k != "ingested_at"} for r in read_table(wh / "ingest_files")]
    return sorted(rows, key=lambda r: (str(r["file_key"]), int(str(r["batch_id"]))))


def _ingest(logs: Path, wh: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, int]:
    """Run ingest; (file slices, Spark task slices) it read, from its log line (0, 0: nothing new)."""
    capsys.readouterr()
    assert main(["ingest", "--input", str(logs), "--warehouse", str(wh), *extra]) == 0
    m = re.search(r"reading (\d+) of \d+ files? in (\d+) task slice", capsys.readouterr().err)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def test_large_files_read_in_slices_give_the_same_tables(
    tmp_path: Path, spark: object, capsys: pytest.CaptureFixture[str]
) -> None:
    logs, whole, split = tmp_path / "logs", tmp_path / "whole", tmp_path / "split"
    rotated = logs / "broker-1" / "kafka-request.log.2024-05-01-09"
    live = logs / "broker-2" / "kafka-request.log"
    rotated.parent.mkdir(parents=True)
    live.parent.mkdir(parents=True)
    # CRLF lines in the middle, no newline at the end of the rotated file; the live one is still writing
    rotated.write_bytes(
        _cycle(2500) + _cycle(1000, "\r\n", 2500) + _cycle(2500, start=3500) + JSON_JOIN.encode()
    )
    live.write_bytes(_cycle(6000) + INCOMPLETE.encode())
    _write(logs / "broker-3" / "kafka-request.log.1.gz", [JSON_JOIN, JSON_HEARTBEAT] * 2000, gz=True)
    assert all(p.stat().st_size > 2 << 20 for p in (rotated, live))

    assert _ingest(logs, whole, capsys) == (3, 3)
    files, tasks = _ingest(logs, split, capsys, *SPLIT)
    assert files == 3 and tasks == 3 + 3 + 1  # the gzipped file is never cut
    assert _tables(split) == _tables(whole)
    assert len(_tables(whole)["requests"]) == 2573 + 2572 + 4000  # 3 of every 7 lines, 1 final JOIN
    assert _files(split) == _files(whole)  # one ingest_files row a file, the same counts and ends
    assert len(_files(split)) == 3
    (live_row,) = [r for r in _files(split) if r["source_file"] == str(live)]
    assert (live_row["start_line"], live_row["end_line"], live_row["lines_read"]) == (1, 6000, 6000)
    assert live_row["end_offset"] == len(_cycle(6000))
    keys = ("lines_read", "requests", "quarantined", "other_api_lines", "other_lines", "accounting_ok")
    assert {k: _summary(split)[k] for k in keys} == {k: _summary(whole)[k] for k in keys}
    assert _summary(split)["accounting_ok"] is True

    # the live file's last line completes and it grows: only the new lines are read, in slices again
    with open(live, "ab") as f:
        f.write(b'"x":1} (kafka.request.logger)\n' + _cycle(3000, start=6001))
    assert _ingest(logs, whole, capsys) == (1, 1)
    assert _ingest(logs, split, capsys, *SPLIT) == (1, 2)
    assert _tables(split) == _tables(whole)
    assert _files(split) == _files(whole)
    (_, grown) = [r for r in _files(split) if r["source_file"] == str(live)]
    assert (grown["batch_id"], grown["start_line"], grown["end_line"], grown["lines_read"]) == (
        2,
        6001,
        9001,
        3001,
    )
    assert grown["start_offset"] == live_row["end_offset"] and grown["end_offset"] == live.stat().st_size
    assert _summary(split)["accounting_ok"] is True

    # and again: nothing new, no commit
    versions = {t: DeltaTable(str(split / t)).version() for t in ("requests", "quarantine", "ingest_files")}
    assert _ingest(logs, split, capsys, *SPLIT) == (0, 0)
    assert {t: DeltaTable(str(split / t)).version() for t in versions} == versions


def test_interrupted_batch_of_slices_is_redone_from_its_plan(
    tmp_path: Path, spark: object, capsys: pytest.CaptureFixture[str]
) -> None:
    """The plan file of a batch that died keeps its slices (however input.max_slice_bytes is set now)."""
    from rebalance_replay.jobs.ingest import _plan_path
    from rebalance_replay.jobs.log_files import describe_file, plan_slices, split_slice

    logs, whole, resumed = tmp_path / "logs", tmp_path / "whole", tmp_path / "resumed"
    path = logs / "broker-1" / "kafka-request.log.1"
    path.parent.mkdir(parents=True)
    path.write_bytes(_cycle(6000))
    described = describe_file(str(path), r"(?P<broker_id>[^/]+)/[^/]+$")
    assert described is not None
    (planned,) = plan_slices([described], {})[0]
    pieces = split_slice(planned, 1 << 20)
    assert len(pieces) == 3
    plan = _plan_path(str(resumed), 1)
    plan.parent.mkdir(parents=True)
    plan.write_text(json.dumps({"batch_id": 1, "slices": [p.to_dict() for p in pieces]}))
    assert _ingest(logs, resumed, capsys) == (1, 3)
    assert not plan.exists()
    assert _ingest(logs, whole, capsys) == (1, 1)
    assert _tables(resumed) == _tables(whole)
    assert _files(resumed) == _files(whole) and len(_files(resumed)) == 1


def test_plan_frame_gives_each_slice_its_own_task(spark: Any) -> None:
    from rebalance_replay.jobs.ingest import _plan_frame
    from rebalance_replay.jobs.log_files import FileSlice

    def slices(n: int) -> list[FileSlice]:
        return [FileSlice(f"/f{i}", "b", f"b:{i}", False, False, 10, 0, 1, 0, 10) for i in range(n)]

    cap = spark.sparkContext.defaultParallelism * 4
    for n in (1, 2, 3, 5, cap):
        per_task = _plan_frame(spark, slices(n)).rdd.glom().map(len).collect()
        assert per_task == [1] * n
    per_task = _plan_frame(spark, slices(2 * cap + 3)).rdd.glom().map(len).collect()
    assert per_task == [3, 3, 3] + [2] * (cap - 3)


def test_three_gzipped_copies_are_read_once_and_reported(
    tmp_path: Path, spark: object, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 28: three gzipped copies of one rotation are one file read once; the CLI says it saw three
    files and skipped two duplicate copies (it once said "0 duplicate copies", and counted the task files
    written as the files seen); an interrupted batch, resumed from its plan, still counts them."""
    from rebalance_replay.jobs.ingest import _plan_path
    from rebalance_replay.jobs.log_files import describe_file, plan_slices

    logs, wh, resumed = tmp_path / "logs", tmp_path / "wh", tmp_path / "resumed"
    names = ("kafka-request.log.2024-05-01-10.gz", "copy-1.log.gz", "copy-2.log.gz")
    for name in names:
        _write(logs / "broker-1" / name, [JSON_JOIN, JSON_HEARTBEAT, OTHER_LOGGER], gz=True)
    capsys.readouterr()
    assert main(["ingest", "--input", str(logs), "--warehouse", str(wh)]) == 0
    out = capsys.readouterr().out
    assert "ingest: this run: batch 1, read 1 of 3 files in " in out
    assert "; 2 duplicate copies skipped, each file is read once" in out
    ingest = _summary(wh)["ingest"]
    assert (ingest["files_seen"], ingest["slices_read"], ingest["duplicate_files"]) == (3, 1, 2)  # type: ignore[index]
    assert _count(wh, "requests") == 2
    # again: nothing new, the copies still recognised
    assert main(["ingest", "--input", str(logs), "--warehouse", str(wh)]) == 0
    out = capsys.readouterr().out
    assert "ingest: this run: nothing new to ingest (3 files seen; 2 duplicate copies skipped" in out
    assert "batch -" not in out and "(s)" not in out
    # a batch that died after planning: the resumed one counts the copies too
    files = [
        f
        for f in (
            describe_file(str(p), r"(?P<broker_id>[^/]+)/[^/]+$")
            for p in sorted((logs / "broker-1").iterdir())
        )
        if f
    ]
    slices, _ = plan_slices(files, {})
    plan = _plan_path(str(resumed), 1)
    plan.parent.mkdir(parents=True)
    plan.write_text(json.dumps({"batch_id": 1, "slices": [s.to_dict() for s in slices]}))
    assert main(["ingest", "--input", str(logs), "--warehouse", str(resumed)]) == 0
    assert _summary(resumed)["ingest"]["duplicate_files"] == 2  # type: ignore[index]
    assert _count(resumed, "requests") == 2
