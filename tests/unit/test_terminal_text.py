"""What the stages print (issue 28): each says what it did in this run and, labelled apart, the warehouse's
totals; a held-back horizon in UTC as people read it; plurals; no placeholder such as "batch -"; the
findings table counts each finding at its own severity (no Spark here)."""

from __future__ import annotations

import re
from typing import Any

from rebalance_replay.jobs.audit import AuditResult, rule_table
from rebalance_replay.jobs.cli import headline
from rebalance_replay.jobs.ingest import IngestCounts, IngestResult, format_counts_table, result_line
from rebalance_replay.jobs.replay_run import ReplayResult

#: what the terminal must never show: a count with the wrong plural, "(s)", a placeholder
BAD = re.compile(r"\b1 \w+s\b|\(s\)|batch -")
HORIZON = 1_717_401_730_236  # 2024-06-03 08:02:10.236 UTC


def _ingest(batch_id: int | None, *, seen: int = 3, read: int = 1, dups: int = 2) -> IngestResult:
    run = IngestCounts(10, 10) if batch_id is not None else IngestCounts()
    return IngestResult(batch_id, seen, read, dups, run, IngestCounts(30, 30), 1.25)


def test_ingest_says_what_this_run_did_and_the_copies_it_skipped() -> None:
    assert result_line(_ingest(4)) == (
        "ingest: this run: batch 4, read 1 of 3 files in 1.2 s; 2 duplicate copies skipped, each file is "
        "read once"
    )
    assert result_line(_ingest(None, seen=1, read=0, dups=0)) == (
        "ingest: this run: nothing new to ingest (1 file seen)"
    )
    one = result_line(_ingest(5, seen=2, read=1, dups=1))
    assert one.endswith("; 1 duplicate copy skipped, each file is read once") and not BAD.search(one)
    table = format_counts_table(_ingest(4)).splitlines()
    assert table[0].split() == ["this", "run", "warehouse", "total"]
    assert table[2].split() == ["requests", "10", "30"]


def _incremental(**kw: Any) -> ReplayResult:
    r = ReplayResult(
        "incremental",
        "stateful",
        HORIZON,
        43183,
        {"predictions": 21172, "transitions": 40, "rebalances": 1, "member_sessions": 12},
        groups=5,
        held_rows=22011,
        replayed_rows=21172,
        run=3,
        tolerance_ms=5000,
        totals={"predictions": 1234567, "transitions": 900, "rebalances": 88, "member_sessions": 300},
    )
    for k, v in kw.items():
        setattr(r, k, v)
    return r


def test_an_incremental_replay_says_what_it_held_back_until_when_in_utc() -> None:
    r = _incremental()
    assert r.this_run_line() == (
        "replay: this run: incremental run 3 over 5 groups, 43183 new requests, 21172 replayed → 21172 "
        "predictions, 40 transitions, 1 rebalance, 12 member sessions; 22011 requests held back for late "
        "arrivals: those arriving from 2024-06-03 08:02:10.236Z on wait for the next run "
        "(replay.late_tolerance_ms 5.0 s behind the newest completion; a run with --final replays them)"
    )
    assert r.warehouse_line() == (
        "replay: warehouse total: 1234567 predictions, 900 transitions, 88 rebalances, 300 member sessions"
    )
    final = _incremental(final=True, held_rows=0).this_run_line()
    assert final.endswith("; nothing held back: --final closed the horizon at 2024-06-03 08:02:10.236Z")
    none = _incremental(held_rows=0).this_run_line()
    assert none.endswith(
        "; nothing held back for late arrivals (horizon 2024-06-03 08:02:10.236Z, replay.late_tolerance_ms "
        "5.0 s behind the newest completion)"
    )


def test_the_summary_keeps_the_warehouse_totals_and_this_runs_counts_apart() -> None:
    """A run with nothing new must not turn the warehouse's rebalances into 0 (the report and the `run:`
    line read the top-level counts)."""
    s = _incremental(counts={}, new_rows=0, replayed_rows=0).as_summary()
    assert (s["predictions"], s["rebalances"]) == (1234567, 88)
    assert s["replay"]["this_run"]["rebalances"] == 0
    assert s["replay"]["held_rows"] == 22011
    batch = ReplayResult("batch", "fast", 5, 10, {"predictions": 9, "rebalances": 2}, groups=1)
    assert batch.as_summary()["rebalances"] == 2  # a batch replay's counts are the warehouse's


def test_a_batch_replay_up_to_date_says_so_and_the_totals() -> None:
    r = ReplayResult("batch", "stateful", 5, 0, {"predictions": 9, "rebalances": 1}, up_to_date=True)
    assert r.this_run_line().startswith("replay: this run: nothing to replay")
    assert r.warehouse_line() == (
        "replay: warehouse total: 9 predictions, 0 transitions, 1 rebalance, 0 member sessions"
    )


def test_the_run_headline_labels_this_run_and_the_warehouse_totals() -> None:
    """After a run with no new data: this run did nothing, the warehouse still has its rebalances."""
    summary = {
        "requests": 14369,
        "quarantined": 0,
        "predictions": 14155,
        "agreement": 1.0,
        "rebalances": 109,
        "findings": {"R01": 1, "R02": 2},
        "ingest": {"batch_id": None, "this_run": {"requests": 0}},
        "replay": {"up_to_date": True, "new_rows": 0, "this_run": {"rebalances": 0}},
        "audit": {"status": {"new": 0}, "by_severity": {"critical": 1, "warning": 2}},
    }
    text = headline(summary)
    assert text.splitlines() == [
        "run: this run: nothing new to ingest; nothing new to replay; 0 new findings",
        "run: warehouse total: 14369 requests (0 quarantined), 14155 predictions (agreement 100.00%), "
        "109 rebalances, 3 open findings (1 critical, 2 warning)",
    ]
    assert "rebalances 0" not in text and not BAD.search(text)
    summary["replay"] = {
        "up_to_date": False,
        "new_rows": 300,
        "replayed_rows": 280,
        "held_rows": 20,
        "this_run": {"predictions": 270, "rebalances": 1},
    }
    assert "280 requests replayed → 270 predictions, 1 rebalance (20 held back for late arrivals)" in (
        headline(summary)
    )


def _finding(rule_id: str, severity: str, group: str, key: str, status: str = "ongoing") -> dict[str, Any]:
    return {
        "rule_id": rule_id,
        "rule": "rebalance-storm" if rule_id == "R01" else "session-timeout-eviction",
        "severity": severity,
        "group_id": group,
        "finding_key": key,
        "occurrences": 2,
        "metrics": {"rebalance_time_caused_ms": 1500.0},
        "summary": f"{rule_id} in {group}",
        "status": status,
    }


def test_the_findings_table_shows_each_findings_own_severity() -> None:
    """R02 is critical in one group and a warning in two: two rows, not one "critical" row of three."""
    findings = [
        _finding("R02", "critical", "a", "k1", "new"),
        _finding("R02", "warning", "b", "k2"),
        _finding("R02", "warning", "c", "k3"),
        _finding("R01", "warning", "a", "k4"),
    ]
    rows = rule_table(findings, new=findings[:1])
    assert [(t["rule_id"], t["severity"], t["groups"], t["new"], t["occurrences"]) for t in rows] == [
        ("R02", "critical", 1, 1, 2),
        ("R01", "warning", 1, 0, 2),
        ("R02", "warning", 2, 0, 4),
    ]


def test_the_audit_text_says_this_run_and_the_warehouse_total_and_the_horizon_in_utc() -> None:
    findings = [_finding("R02", "critical", "a", "k1", "new"), _finding("R02", "warning", "b", "k2")]
    result = AuditResult(
        groups=3,
        evaluated_groups=1,
        up_to_date=False,
        findings=findings,
        unsupported={"R17": {"groups": 1, "reasons": ["no leader SyncGroup"]}},
        rules=["R01", "R02"],
        health=[{"group_id": "a", "rebalances": 1, "rebalancing_s": 1.5, "top_findings": []}],
        horizon_ms=HORIZON,
    )
    lines = result.format_text().splitlines()
    assert lines[:2] == [
        "audit: this run: 1 of 3 groups evaluated, 2 rules: 1 new finding",
        "audit: warehouse total: 2 open findings (1 critical, 1 warning; 1 new, 1 ongoing), 0 resolved",
    ]
    assert "  group a: 1 rebalance, 1.5 s rebalancing; no findings" in lines
    assert "  R17: unsupported: no leader SyncGroup (1 group)" in lines
    assert lines[-1].startswith("  held back: requests arriving from 2024-06-03 08:02:10.236Z on")
    assert not BAD.search("\n".join(lines))
    # summary.json and the notifications keep ISO 8601
    assert result.as_summary()["audit"]["held_back"].startswith(
        "requests arriving from 2024-06-03T08:02:10.236Z on"
    )
    result.up_to_date = True
    assert result.format_text().splitlines()[0] == (
        "audit: this run: nothing new to audit, up to date (3 groups unchanged), 2 rules"
    )
