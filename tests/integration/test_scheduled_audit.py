"""Issue 26 acceptance: a scheduled audit over three consecutive batches of a live log (ingest →
``replay --incremental`` → ``audit --fail-on critical --format json`` with a webhook, through the
in-process CLI).

The log: ``inc-r02-crashes`` (two members crash a minute apart, each evicted 45 s later: R02) and
``inc-r07-bad-session-timeout`` (a consumer with session.timeout.ms=3000 is refused once, at ~47 s: R07,
critical). Batch 1 ends after the first eviction, batch 2 after the second, batch 3 is the rest of the
log (the crashes stopped: the fix). So:

* R02 is new (one eviction, info), then ongoing (two evictions, warning), then resolved;
* R07 is new (critical), then resolved (batch 2 covers later time of its group: no refused join again);
* ``--fail-on critical`` exits 3 exactly in batch 1 (a new critical finding), 0 otherwise, also on a
  rerun that changes nothing; ``--include-ongoing`` counts open ones;
* the webhook (fails its first attempt) receives each new finding exactly once;
* batch 3's replay is ``--final``: nothing is held back, the summary says so.
"""

from __future__ import annotations

import json
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest

from rebalance_replay.jobs.cli import main
from rebalance_replay.schemas import FINDINGS
from simulator.incidents import KAFKA_VERSION, S, incident_records, incidents
from simulator.log_render import complete_record, render_line
from tests.helpers import read_table
from tests.unit.test_notify import Hook

pytestmark = [pytest.mark.spark, pytest.mark.timeout(1500)]

R02_GROUP = "inc-r02-crashes"
R07_GROUP = "inc-r07-bad-session-timeout"


def _log() -> tuple[list[tuple[int, str]], dict[str, Any]]:
    """(completion ms, line) of both incidents, by completion; and the R02 ground truth."""
    lines = []
    truths = {}
    for inc in incidents(7, ["R02", "R07"], 0):
        truths.update({t.rule_id: t for t in inc.truths})
        for _broker, rec in incident_records(inc):
            line = render_line(
                complete_record(rec, kafka_version=KAFKA_VERSION), kafka_version=KAFKA_VERSION, tz=UTC
            )
            lines.append((int(rec["completion_ms"]), line))
    lines.sort(key=lambda x: x[0])
    return lines, truths


def scheduled_args(wh: Path) -> list[str]:
    """The options of these tests' scheduled runs: the warehouse, a late tolerance of 5 s, no GX."""
    return [
        "--warehouse",
        str(wh),
        "--set",
        "replay.late_tolerance_ms=5000",
        "--set",
        "report.great_expectations=false",
    ]


def _json_lines(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def _brief(rows: list[dict[str, Any]]) -> list[tuple[str, str, str, str]]:
    return [(r["rule_id"], r["group_id"], r["severity"], r["status"]) for r in rows]


def test_three_scheduled_batches_new_ongoing_resolved_fail_on_and_webhook(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines, truths = _log()
    c1 = truths["R02"].window_start_ms + 3 * S  # the first crash
    c2 = truths["R02"].window_end_ms - 50 * S  # the second crash
    cuts = (c1 + 75 * S, c2 + 65 * S, lines[-1][0] + 1)  # after eviction 1, after eviction 2, the rest
    assert c1 + 75 * S < c2 + 45 * S  # batch 1 ends before the second eviction
    live = tmp_path / "live" / "broker-1"
    live.mkdir(parents=True)
    wh = tmp_path / "wh"
    hook = Hook(fail=1)  # the first POST is answered 500: retried
    common = [
        *scheduled_args(wh),
        "--set",
        f"audit.notify.url={hook.url}",
        "--set",
        "audit.notify.backoff_s=0",
    ]
    outputs: list[list[dict[str, Any]]] = []
    codes: list[int] = []
    summaries: list[dict[str, Any]] = []
    try:
        for k, cut in enumerate(cuts):
            (live / "kafka-request.log").write_text("".join(line + "\n" for t, line in lines if t < cut))
            assert main(["ingest", "--input", str(live.parent), *common]) == 0
            final = ["--final"] if k == 2 else []
            assert main(["replay", "--incremental", *final, *common]) == 0
            capsys.readouterr()
            codes.append(main(["audit", "--fail-on", "critical", "--format", "json", *common]))
            out = capsys.readouterr().out
            outputs.append(_json_lines(out))
            summaries.append(json.loads((wh / "summary.json").read_text()))
            if k == 0:
                # a rerun that changes nothing finds nothing new: --fail-on critical passes, while
                # --include-ongoing still sees the open critical finding
                assert main(["audit", "--fail-on", "critical", *common]) == 0
                assert main(["audit", "--fail-on", "critical", "--include-ongoing", *common]) == 3
                capsys.readouterr()
    finally:
        hook.close()

    assert codes == [3, 0, 0]
    assert _brief(outputs[0]) == [
        ("R07", R07_GROUP, "critical", "new"),
        ("R02", R02_GROUP, "info", "new"),
    ]
    assert _brief(outputs[1]) == [
        ("R02", R02_GROUP, "warning", "ongoing"),
        ("R07", R07_GROUP, "critical", "resolved"),
    ]
    assert _brief(outputs[2]) == [
        ("R07", R07_GROUP, "critical", "resolved"),
        ("R02", R02_GROUP, "warning", "resolved"),
    ]
    # one key per finding across the three runs; when they were seen, in how many runs
    key = {r["rule_id"]: r["finding_key"] for r in outputs[0]}
    for out in outputs:
        assert {r["rule_id"]: r["finding_key"] for r in out} == key
    first = {r["rule_id"]: r["first_seen_ms"] for r in outputs[0]}
    assert [
        [(r["rule_id"], r["first_seen_ms"] == first[r["rule_id"]], r["runs_seen"]) for r in out]
        for out in outputs
    ] == [
        [("R07", True, 1), ("R02", True, 1)],
        [("R02", True, 2), ("R07", True, 1)],
        [("R07", True, 1), ("R02", True, 2)],
    ]
    assert [r["metrics"]["evictions"] for out in outputs for r in out if r["rule_id"] == "R02"] == [
        1.0,
        2.0,
        2.0,
    ]
    # the table holds the same rows
    table = sorted((r["rule_id"], r["status"], r["finding_key"]) for r in read_table(wh / FINDINGS.name))
    assert table == sorted((r["rule_id"], r["status"], r["finding_key"]) for r in outputs[2])

    # the webhook: two attempts in run 1 (the first failed), each new finding received once, nothing after
    assert hook.attempts == 2
    assert [
        sorted((f["rule_id"], f["finding_key"], f["status"]) for f in p["findings"]) for p in hook.received
    ] == [[("R02", key["R02"], "new"), ("R07", key["R07"], "new")]]

    # summaries: counts of this run, what is held back (UTC), and the --final run holding nothing back
    assert [s["audit"]["status"] for s in summaries] == [
        {"new": 2, "ongoing": 0, "resolved": 0},
        {"new": 0, "ongoing": 1, "resolved": 1},
        {"new": 0, "ongoing": 0, "resolved": 2},
    ]
    assert [s["findings"] for s in summaries] == [{"R02": 1, "R07": 1}, {"R02": 1}, {}]
    # the first audit read every request; the next ones resumed each group from what the last one kept of
    # it (its routine rows summed) and read only the requests appended since: the same findings
    assert [(s["audit"]["evaluated_groups"], s["audit"]["resumed_groups"]) for s in summaries] == [
        (2, 0),
        (2, 2),
        (2, 2),
    ]
    assert summaries[0]["audit"]["fail_on"] == {
        "severity": "critical",
        "include_ongoing": False,
        "findings": 1,
        "exit_code": 3,
    }
    assert summaries[0]["audit"]["notify"]["deliveries"] == [
        {"target": f"webhook {hook.url}", "attempts": 2, "ok": True}
    ]
    assert "notify" not in summaries[1]["audit"]
    for s in summaries[:2]:
        held = s["replay"]["held_back"]
        assert (
            held.startswith("requests that arrived from 2024-06-03T08:") and "late_tolerance_ms=5000" in held
        )
        assert s["audit"]["held_back"].startswith(f"requests arriving from {s['audit']['horizon_utc']} on")
    assert summaries[2]["replay"]["held_back"].startswith(
        "nothing: --final closed the horizon at 2024-06-03T08:"
    )
    assert summaries[2]["audit"]["horizon_ms"] == lines[-1][0] + 1
    assert summaries[2]["audit"]["held_back"] == (
        f"nothing: the replay closed its horizon (--final) at {summaries[2]['audit']['horizon_utc']}"
    )
