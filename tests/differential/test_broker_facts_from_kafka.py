"""A broker with ``group.max.size=5``, answered by Kafka's own coordinator and written as its request
log, run with the default broker settings: the replay infers the limit from the GROUP_MAX_SIZE_REACHED
answers and predicts every refusal; the summary and the audit quote 5, not the default limit."""

from __future__ import annotations

import base64
import json
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest

from rebalance_replay.jobs.cli import main
from rebalance_replay.transforms.broker_facts import JoinRow, infer_settings
from rebalance_replay.transforms.kafka_protocol import ApiKey
from simulator import differential as d
from simulator.log_render import complete_record, render_line
from simulator.oracle import KafkaOracle
from tests.helpers import read_table

MAX_SIZE = 5
CLIENTS = 7
_META = base64.b64encode(b"\x00\x01\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff").decode()


def _join(at: int, client: str, member: str) -> d.Op:
    fields: dict[str, Any] = {
        "member_id": member,
        "session_timeout_ms": 10_000,
        "rebalance_timeout_ms": 30_000,
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": [["range", _META]],
    }
    return d.Op(at, ApiKey.JOIN_GROUP, 5, client, fields)


def max_size_sequence(
    oracle: KafkaOracle,
) -> tuple[d.Sequence, dict[int, d.Answer], dict[int, dict[str, Any]]]:
    """Seven consumers join a group whose broker allows five (KIP-394: a first join for an id, then the
    join with it); the five admitted sync and heartbeat, the two refused retry later and are refused
    again."""
    settings = d.Settings(max_size=MAX_SIZE)
    ops = [_join(10 * i, f"consumer-{i}", "") for i in range(CLIENTS)]
    ops += [_join(10 * i + 5, f"consumer-{i}", f"${{{i}}}") for i in range(CLIENTS)]
    seq = d.Sequence(1, settings, tuple(ops), 10_000)
    answers = d.run_oracle(oracle, seq)
    admitted = [
        i for i in range(CLIENTS, 2 * CLIENTS) if answers.get(i) is not None and answers[i].error == "NONE"
    ]
    assert len(admitted) == MAX_SIZE, answers
    leader = next(i for i in admitted if answers[i].leader == answers[i].member_id)
    gen = answers[leader].generation_id
    more: list[d.Op] = []
    t = 10_000
    for i in admitted:  # the leader's SyncGroup carries the assignments
        assignments = (
            [[f"${{{j}}}", base64.b64encode(bytes([k])).decode()] for k, j in enumerate(admitted)]
            if i == leader
            else []
        )
        fields = {"member_id": f"${{{i}}}", "generation_id": gen, "assignments": assignments}
        fields["group_instance_id"] = None
        more.append(d.Op(t, ApiKey.SYNC_GROUP, 3, f"consumer-{i - CLIENTS}", fields))
        t += 3
    for round_ in range(3):
        for i in admitted:
            t += 2
            fields = {"member_id": f"${{{i}}}", "generation_id": gen, "group_instance_id": None}
            more.append(d.Op(t + 1_000 * round_, ApiKey.HEARTBEAT, 3, f"consumer-{i - CLIENTS}", fields))
    refused = [i for i in range(CLIENTS, 2 * CLIENTS) if i not in admitted]
    for i in refused:  # the refused retry with a fresh first join: refused at once (the group is full)
        more.append(_join(t + 1_000 * 3 + i, f"consumer-{i - CLIENTS}", ""))
    more.sort(key=lambda op: op.at_ms)
    full = d.Sequence(1, settings, (*ops, *more), 16_000)
    bodies: dict[int, dict[str, Any]] = {}
    return full, d.run_oracle(oracle, full, bodies), bodies


def _write_log(oracle: KafkaOracle, root: Path) -> list[dict[str, Any]]:
    seq, answers, bodies = max_size_sequence(oracle)
    records = d.log_records(seq, answers, bodies, group_id="capped")
    lines = sorted(
        (
            int(r["completion_ms"]),
            render_line(complete_record(r, kafka_version="4.0"), kafka_version="4.0", tz=UTC),
        )
        for r in records
    )
    (root / "broker-1").mkdir(parents=True)
    (root / "broker-1" / "kafka-request.log").write_text("".join(line + "\n" for _, line in lines))
    return records


@pytest.mark.differential
def test_kafkas_max_size_answers_bound_the_setting(oracle: KafkaOracle) -> None:
    """The pure inference on Kafka's answers (no Spark): exactly the broker's limit."""
    seq, answers, bodies = max_size_sequence(oracle)
    rows = [complete_record(r, kafka_version="4.0") for r in d.log_records(seq, answers, bodies, "capped")]
    refused = [
        r for r in rows if r["api_name"] == "JOIN_GROUP" and r["error_name"] == "GROUP_MAX_SIZE_REACHED"
    ]
    assert refused  # Kafka refused the sixth and seventh member
    joins = [
        JoinRow.from_row({**r, "n_members": len(r.get("response_members") or [])})
        for r in rows
        if r["api_name"] == "JOIN_GROUP"
    ]
    inferred = infer_settings(joins)["group.max.size"]
    assert (inferred.low, inferred.high, inferred.best) == (MAX_SIZE, MAX_SIZE, MAX_SIZE)
    assert not inferred.allows(2**31 - 1)  # the default limit is contradicted


@pytest.mark.differential
@pytest.mark.spark
def test_max_size_log_with_default_settings_agrees_and_quotes_the_limit(
    oracle: KafkaOracle, spark: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logs, wh = tmp_path / "logs", tmp_path / "wh"
    _write_log(oracle, logs)
    # the broker settings at their defaults (group.max.size unbounded); the version is the oracle's
    assert main(["run", "--input", str(logs), "--warehouse", str(wh), "--set", "kafka.version=4.0"]) == 0
    out = capsys.readouterr().out
    summary = json.loads((wh / "summary.json").read_text())
    joins = [p for p in read_table(wh / "predictions") if p["api"] == "JOIN_GROUP"]
    scored = [p for p in joins if p["scored"]]
    refused = [p for p in scored if p["observed_error"] == "GROUP_MAX_SIZE_REACHED"]
    # every refusal the limit explains is predicted (with the default limit the model admits them all)
    assert len(refused) == 4 and all(p["matched"] for p in refused), refused
    used = summary["broker"]["settings"]["group.max.size"]
    assert used["value"] == MAX_SIZE and used["source"].startswith("log")
    assert any("group.max.size" in c and "2147483647" in c for c in summary["broker"]["contradictions"])
    assert "broker: CONTRADICTION: group.max.size" in out
    r18 = [f for f in read_table(wh / "findings") if f["rule_id"] == "R18"]
    assert r18 and "group.max.size=5," in r18[0]["summary"], r18
    assert "2147483647" not in r18[0]["summary"]
