"""Issue 29 part 2, "clocks and files as they are" (with parts 1 and 3 mixed in: the test's docstring): one
``run`` over logs that hold every case at once — a broker clock stepped back inside one file, a coordinator
move onto a broker whose clock is 3 s behind, the same rotated file present twice under two names, a gzip
beside its uncompressed twin, a live file ending in half a line, an hour missing in the middle of a group's
log — ends with exit 0 and no traceback, keeps the accounting identity, accounts for every odd line in the
summary (quarantined with its reason, counted as a duplicate copy or as an incomplete last line, or an
unscored answer naming the log gap), and gives the groups the damage did not touch the answers of a clean
run of the same traffic.

The unit tests of each case: ``tests/unit/test_clock_steps.py`` (the stepped clock),
``tests/unit/test_real_kafka_replay.py`` (the skewed move on a real 3.7 recording; the log gap),
``tests/unit/test_log_files.py`` and ``tests/unit/test_ingest_accounting.py`` (copies, the half line)."""

from __future__ import annotations

import gzip
import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from rebalance_replay.jobs.cli import main
from simulator.clients import ConsumerSpec, SimConfig
from simulator.incidents import coordinator_move, healthy, incident_records
from simulator.log_render import complete_record, render_line
from tests.helpers import read_table, render_group_lines

pytestmark = [pytest.mark.spark, pytest.mark.slow]

T0 = int(datetime(2024, 6, 3, 12, 40, tzinfo=UTC).timestamp() * 1000)
S = 1000
MIN = 60 * S
HOUR_13 = int(datetime(2024, 6, 3, 13, 0, tzinfo=UTC).timestamp() * 1000)
HOUR_14 = HOUR_13 + 60 * MIN
SKEW_MS = -3000  # broker-2, the group's coordinator after the move, runs 3 s behind
STEP_AT, STEP_BACK_MS = T0 + 150 * S, 20_000  # broker-3's clock set back 20 s at 12:42:30


def _shifted(line: str, ms: int) -> str:
    """``line`` with its log4j time ``ms`` later (earlier when negative), as a broker whose clock is off
    by that much writes it; the timing fields are durations and do not change."""
    moved = datetime.strptime(line[1:24], "%Y-%m-%d %H:%M:%S,%f") + timedelta(milliseconds=ms)
    return "[" + moved.strftime("%Y-%m-%d %H:%M:%S,%f")[:-3] + line[24:]


def _done(line: str) -> int:
    """A line's log4j time (its completion), in ms."""
    return int(datetime.strptime(line[1:24], "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=UTC).timestamp() * 1000)


def traffic() -> dict[str, list[str]]:
    """Per broker, the lines as the brokers' (correct) clocks would write them, in completion order:
    ``moving`` (broker-1, then broker-2 from about 12:42), ``steady`` (broker-1), ``stepped``
    (broker-3) and ``gap`` (broker-4, 12:55-14:05)."""
    rnd = random.Random(29)
    by_broker: dict[str, list[tuple[int, str]]] = {}
    for inc in (coordinator_move("moving", T0, rnd), healthy("steady", T0 + 7 * S, rnd)):
        for broker, rec in incident_records(inc):
            line = render_line(complete_record(rec, kafka_version="3.7"), kafka_version="3.7", tz=UTC)
            by_broker.setdefault(broker, []).append((int(rec["completion_ms"]), line))
    stepped = SimConfig(
        group_id="stepped",
        topics={"stepped-events": 6},
        consumers=[ConsumerSpec(str(i), T0 + 2 * S + i * 300) for i in range(3)],
        until_ms=T0 + 5 * MIN,
        broker_id="broker-3",
        broker_host="10.0.0.3",
    )
    gap = SimConfig(
        group_id="gap",
        topics={"gap-events": 4},
        consumers=[ConsumerSpec(str(i), HOUR_13 - 5 * MIN + i * 300) for i in range(2)],
        until_ms=HOUR_14 + 5 * MIN,
        broker_id="broker-4",
        broker_host="10.0.0.4",
    )
    for broker, lines in render_group_lines([stepped, gap]).items():
        by_broker.setdefault(broker, []).extend((done, line) for done, _, line in lines)
    return {b: [line for _, line in sorted(v, key=lambda x: x[0])] for b, v in sorted(by_broker.items())}


def _write(path: Path, lines: list[str], tail: str = "", *, gz: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = ("".join(line + "\n" for line in lines) + tail).encode()
    path.write_bytes(gzip.compress(data, mtime=0) if gz else data)


def write_logs(root: Path, lines: dict[str, list[str]], *, damaged: bool) -> dict[str, Any]:
    """The brokers' files under ``root``; ``damaged``: with the six cases (returns what they are)."""
    b1 = lines["broker-1"]
    cut = next(i for i, x in enumerate(b1) if _done(x) > T0 + 150 * S)  # broker-1 rotated at 12:42:30
    rotated, live = b1[:cut], b1[cut:-1]  # the last line: still being written (damaged), not yet (clean)
    half = b1[-1][: len(b1[-1]) // 2]
    _write(root / "broker-1" / "kafka-request.log.2024-06-03-12", rotated)
    _write(root / "broker-1" / "kafka-request.log", live, half if damaged else "")
    b2 = [_shifted(x, SKEW_MS) for x in lines["broker-2"]] if damaged else lines["broker-2"]
    _write(root / "broker-2" / "kafka-request.log.2024-06-03-12", b2)
    b3 = [_shifted(x, -STEP_BACK_MS) if _done(x) >= STEP_AT else x for x in lines["broker-3"]]
    _write(root / "broker-3" / "kafka-request.log.2024-06-03-12", b3 if damaged else lines["broker-3"])
    hours: dict[int, list[str]] = {}
    for x in lines["broker-4"]:
        hours.setdefault(datetime.fromtimestamp(_done(x) / 1000, UTC).hour, []).append(x)
    assert sorted(hours) == [12, 13, 14]
    for hour, hl in hours.items():
        if not (damaged and hour == 13):  # the hour never shipped
            _write(root / "broker-4" / f"kafka-request.log.2024-06-03-{hour}", hl)
    if not damaged:
        return {}
    # a gzip beside its uncompressed twin; the same rotated file under a second name
    _write(root / "broker-1" / "kafka-request.log.2024-06-03-12.gz", rotated, gz=True)
    _write(root / "broker-4" / "kafka-request.log.2024-06-03-14.1", hours[14])
    # the stepped lines: a request line more than 1 s behind the file's clock (the least of the last
    # three lines' times before the step) until the stepped clock passes it (docs/request-log-format.md)
    first_stepped = next(i for i, x in enumerate(lines["broker-3"]) if _done(x) >= STEP_AT)
    before = [_done(x) for x in b3[:first_stepped]]
    clock = min(before[-3:])
    stepped = [i + 1 for i, x in enumerate(b3) if i >= first_stepped and _done(x) < clock - 1000]
    return {
        "lines_read": len(b1) - 1 + len(b2) + len(b3) + len(hours[12]) + len(hours[14]),
        "half": half,
        "stepped_lines": stepped,
        "missing_hour": len(hours[13]),
    }


def _answers(wh: Path, logs: Path, group: str, *, times: bool = True) -> list[tuple[Any, ...]]:
    """A group's predictions, source files relative to the logs folder (``times=False``: without the
    columns in ms, which a skewed clock moves)."""
    rows = []
    for p in read_table(wh / "predictions"):
        if p["group_id"] != group:
            continue
        p = dict(p, source_file=str(Path(p["source_file"]).relative_to(logs)))
        rows.append(
            tuple(
                (k, json.dumps(v, sort_keys=True, default=str))
                for k, v in sorted(p.items())
                if times or not k.endswith("_ms")
            )
        )
    return sorted(rows)


def test_a_run_over_every_case_at_once(
    tmp_path: Path, spark: object, capsys: pytest.CaptureFixture[str]
) -> None:
    """The clocks and files above, with issue 29's other cases in the same ``run`` ("any mix"): impossible
    derived values and damaged lines (part 1, ``simulator/mutations.py``) from broker-8, and a storm that
    outgrows ``replay.max_group_members`` (part 3) on brokers 10-12; Great Expectations on."""
    from simulator import adversarial
    from simulator.mutations import base_lines, mutated_lines

    lines = traffic()
    assert sorted(lines) == ["broker-1", "broker-2", "broker-3", "broker-4"]
    clean_logs, clean_wh = tmp_path / "clean-logs", tmp_path / "clean-wh"
    write_logs(clean_logs, lines, damaged=False)
    assert main(["ingest", "--input", str(clean_logs), "--warehouse", str(clean_wh)]) == 0
    assert main(["replay", "--warehouse", str(clean_wh)]) == 0
    logs, wh = tmp_path / "logs", tmp_path / "wh"
    case = write_logs(logs, lines, damaged=True)
    fuzzed = mutated_lines(base_lines(), 2_000, 29)
    _write(logs / "broker-8" / "kafka-request.log.2024-05-01-10", fuzzed)
    storm = adversarial.by_broker(adversarial.storm(60, group="storm-dense", spread_ms=6_000, returning=0))
    for n, (_, written) in enumerate(sorted(storm.items())):
        _write(logs / f"broker-{10 + n}" / "kafka-request.log.2024-05-01-10", written)
    capsys.readouterr()

    limit = "replay.max_group_members=50"
    assert main(["run", "--input", str(logs), "--warehouse", str(wh), "--set", limit]) == 0
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    summary = json.loads((wh / "summary.json").read_text())

    # the accounting identity, this run and the warehouse's
    this_run = summary["ingest"]["this_run"]
    for counts in (summary, this_run):
        assert counts["accounting_ok"] is True
        assert counts["lines_read"] == (
            counts["requests"] + counts["quarantined"] + counts["other_api_lines"] + counts["other_lines"]
        )
    storm_lines = sum(len(v) for v in storm.values())
    assert this_run["lines_read"] == case["lines_read"] + len(fuzzed) + storm_lines

    # every quarantined line has its reason: the fuzzed lines a reader cannot trust, and the stepped
    # clock's lines (and only they) from broker-3
    quarantine = read_table(wh / "quarantine")
    assert len(quarantine) == summary["quarantined"] and all(q["reason"] for q in quarantine)
    assert sum(this_run["quarantine_reasons"].values()) == this_run["quarantined"]
    by_broker: dict[str, list[Any]] = {}
    for q in quarantine:
        by_broker.setdefault(Path(q["source_file"]).parent.name, []).append(q)
    assert sorted(by_broker) == ["broker-3", "broker-8"]
    assert len(by_broker["broker-8"]) > 200

    # a broker clock stepped back: the stepped lines, and only they, quarantined with the reason
    assert case["stepped_lines"], "the step must leave lines behind the file's clock"
    stepped_q = by_broker["broker-3"]
    assert sorted(q["line_no"] for q in stepped_q) == case["stepped_lines"]
    assert all(q["reason"].startswith("line time out of order: ") for q in stepped_q)
    assert "quarantined lines by reason" in err
    stepped = [p for p in read_table(wh / "predictions") if p["group_id"] == "stepped"]
    assert len(stepped) == sum(
        1 for p in read_table(clean_wh / "predictions") if p["group_id"] == "stepped"
    ) - len(case["stepped_lines"])
    assert stepped and all(
        p["matched"] for p in stepped if p["scored"]
    )  # the rest replays as the broker said

    # the gzip twin and the rotated file under a second name: read once, each named
    assert summary["ingest"]["duplicate_files"] == 2
    copies = {Path(c["path"]).name: Path(c["copy_of"]).name for c in summary["ingest"]["duplicate_copies"]}
    assert copies == {
        "kafka-request.log.2024-06-03-12.gz": "kafka-request.log.2024-06-03-12",
        "kafka-request.log.2024-06-03-14.1": "kafka-request.log.2024-06-03-14",
    }

    # the live file's half line: not read, counted as waiting for the next run
    waiting = summary["ingest"]["incomplete_last_lines"]
    assert waiting["files"] == 1 and waiting["bytes"] == len(case["half"].encode())
    assert [Path(p).relative_to(logs) for p in waiting["paths"]] == [Path("broker-1/kafka-request.log")]

    # the hour missing: the gap group's answers after it are unscored naming the log gap, none is
    # counted against the model
    assert case["missing_hour"] > 100
    # (the fuzzed lines' groups have log gaps of their own: a timestamp moved by days)
    gap_reasons = {
        k: n for k, n in summary["unscored_reasons"].items() if "log gap" in k and "consumer-gap-" in k
    }
    assert gap_reasons, summary["unscored_reasons"]
    assert all(k.startswith("warm-up: log gap: no request of the group in the log for ") for k in gap_reasons)
    gap = [p for p in read_table(wh / "predictions") if p["group_id"] == "gap"]
    assert not [p for p in gap if p["scored"] and not p["matched"]]
    assert sum(1 for p in gap if "log gap" in (p["unscored_reason"] or "")) == sum(gap_reasons.values())

    # the groups the damage did not touch: the clean run's answers; the skewed move: the same answers,
    # its times moved by the skew
    assert _answers(wh, logs, "steady") == _answers(clean_wh, clean_logs, "steady")
    moving = _answers(wh, logs, "moving", times=False)
    assert moving and moving == _answers(clean_wh, clean_logs, "moving", times=False)
    moved = [p for p in read_table(wh / "predictions") if p["group_id"] == "moving"]
    assert {p["broker_id"] for p in moved} == {"broker-1", "broker-2"}
    assert not [p for p in moved if p["scored"] and not p["matched"]]

    # the storm: refused in one line from the member that outgrew the limit on, replayed up to it
    assert {(r["group"], r["stage"]) for r in summary["refused_groups"]} == {("storm-dense", "replay")}
    said = "replay: refused group storm-dense: 51 members at once"
    assert any(x.startswith(said) for x in out.splitlines())
    assert any(p["group_id"] == "storm-dense" for p in read_table(wh / "predictions"))

    # Great Expectations ran on the tables; the requests contract holds (what breaks it is quarantined)
    gx = summary["gx"]
    assert gx["error"] is None and sorted(gx["suites"]) == ["outputs_contract", "requests_contract"]
    assert gx["suites"]["requests_contract"] == {"evaluated": 6, "failed": [], "success": True}
