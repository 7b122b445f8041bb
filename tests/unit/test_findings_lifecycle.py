"""Findings across runs (rebalance_replay.transforms.audit.lifecycle): the key, the statuses over three
scheduled runs, and the warehouse migration that adds the lifecycle columns to an old ``findings``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rebalance_replay.transforms.audit.lifecycle import (
    AuditRun,
    failing,
    finding_key,
    merge,
    ordered,
    subject_of,
    with_keys,
)

RULES = frozenset({"R02", "R07", "R10"})


def _f(
    rule: str, group: str, start: int, end: int, n: int, sev: str = "warning", **kw: Any
) -> dict[str, Any]:
    return {
        "rule_id": rule,
        "rule": rule.lower(),
        "severity": sev,
        "group_id": group,
        "member_ids": kw.get("members", ["m-1"]),
        "group_instance_ids": kw.get("instances", []),
        "window_start_ms": start,
        "window_end_ms": end,
        "occurrences": n,
        "summary": f"{rule} in {group}",
    }


def _run(now: int, groups: set[str], coverage: dict[str, int], before: dict[str, int]) -> AuditRun:
    return AuditRun(
        now_ms=now,
        evaluated=frozenset(groups),
        rules=RULES,
        coverage=coverage,
        previous_coverage=before,
    )


def _status(rows: list[dict[str, Any]]) -> list[tuple[str, str, str, int, int, int]]:
    return [
        (r["rule_id"], r["group_id"], r["status"], r["first_seen_ms"], r["last_seen_ms"], r["runs_seen"])
        for r in rows
    ]


def test_key_is_rule_group_subject_and_ignores_what_grows() -> None:
    a = with_keys([_f("R02", "g", 100, 200, 1, members=["m-1"])])[0]
    b = with_keys([_f("R02", "g", 100, 900, 3, sev="critical", members=["m-1", "m-7", "m-9"])])[0]
    assert a["subject"] == b["subject"] == "group"
    assert a["finding_key"] == b["finding_key"] == finding_key("R02", "g", "group")
    assert len(a["finding_key"]) == 16 and int(a["finding_key"], 16) >= 0
    assert finding_key("R02", "g", "group") != finding_key("R02", "h", "group")
    assert finding_key("R02", "g", "group") != finding_key("R07", "g", "group")
    # R10 reports one finding per group.instance.id: that is its subject
    r10 = with_keys(
        [_f("R10", "g", 1, 2, 1, instances=["app-1"]), _f("R10", "g", 5, 6, 1, instances=["app-2"])]
    )
    assert [r["subject"] for r in r10] == ["instance:app-1", "instance:app-2"]
    assert subject_of(_f("R10", "g", 1, 2, 1)) == "group"
    # two findings with one subject (no rule does that today) still get distinct keys
    twice = with_keys([_f("R02", "g", 50, 60, 1), _f("R02", "g", 10, 20, 1)])
    assert [r["subject"] for r in twice] == ["group", "group#2"]
    assert twice[0]["window_start_ms"] == 10


def test_three_scheduled_runs_new_then_ongoing_then_resolved() -> None:
    # run 1 covers the log up to 1000: an eviction at 500 (R02) and a refused join at 300 (R07)
    run1 = merge(
        [],
        [_f("R02", "crashes", 400, 500, 1, sev="info"), _f("R07", "bad", 300, 300, 2, sev="critical")],
        _run(10_000, {"crashes", "bad"}, {"crashes": 1000, "bad": 1000}, {}),
    )
    assert _status(run1) == [
        ("R07", "bad", "new", 10_000, 10_000, 1),
        ("R02", "crashes", "new", 10_000, 10_000, 1),
    ]
    # run 2 covers up to 2000: a second eviction at 1500 (the window grows), R07 no longer occurs
    run2 = merge(
        run1,
        [_f("R02", "crashes", 400, 1500, 2), _f("R07", "bad", 300, 300, 2, sev="critical")],
        _run(20_000, {"crashes", "bad"}, {"crashes": 2000, "bad": 2000}, {"crashes": 1000, "bad": 1000}),
    )
    assert _status(run2) == [
        ("R02", "crashes", "ongoing", 10_000, 20_000, 2),
        ("R07", "bad", "resolved", 10_000, 10_000, 1),
    ]
    assert [r["finding_key"] for r in run2] == [run1[1]["finding_key"], run1[0]["finding_key"]]
    # run 3 covers up to 3000 after the fix: no new eviction
    run3 = merge(
        run2,
        [_f("R02", "crashes", 400, 1500, 2), _f("R07", "bad", 300, 300, 2, sev="critical")],
        _run(30_000, {"crashes", "bad"}, {"crashes": 3000, "bad": 3000}, {"crashes": 2000, "bad": 2000}),
    )
    assert _status(run3) == [  # worst severity first
        ("R07", "bad", "resolved", 10_000, 10_000, 1),
        ("R02", "crashes", "resolved", 10_000, 20_000, 2),
    ]
    assert failing(run1, "critical", include_ongoing=False) == [run1[0]]
    assert failing(run2, "warning", include_ongoing=False) == []
    assert [r["rule_id"] for r in failing(run2, "warning", include_ongoing=True)] == ["R02"]
    assert failing(run3, "info", include_ongoing=True) == []


def test_no_later_time_covered_keeps_it_open_and_an_old_finding_occurring_again_is_new() -> None:
    run1 = merge([], [_f("R02", "g", 10, 20, 1)], _run(1, {"g"}, {"g": 100}, {}))
    # a late row inside the covered time: re-evaluated, nothing grew, nothing later covered → ongoing
    run2 = merge(run1, [_f("R02", "g", 10, 20, 1)], _run(2, {"g"}, {"g": 100}, {"g": 100}))
    assert _status(run2) == [("R02", "g", "ongoing", 1, 2, 2)]
    # no longer found at all → resolved
    run3 = merge(run2, [], _run(3, {"g"}, {"g": 200}, {"g": 100}))
    assert _status(run3) == [("R02", "g", "resolved", 1, 2, 2)]
    # it occurs again: new again (first_seen_ms keeps the first time), and it stays resolved until then
    run4 = merge(run3, [], _run(4, {"g"}, {"g": 300}, {"g": 200}))
    assert _status(run4) == [("R02", "g", "resolved", 1, 2, 2)]
    run5 = merge(run4, [_f("R02", "g", 10, 350, 2)], _run(5, {"g"}, {"g": 400}, {"g": 300}))
    assert _status(run5) == [("R02", "g", "new", 1, 5, 3)]


def test_groups_without_new_rows_carry_their_findings_and_other_rules_removed_groups_drop() -> None:
    run1 = merge(
        [],
        [_f("R02", "a", 1, 2, 1), _f("R07", "b", 1, 2, 1), _f("R02", "gone", 1, 2, 1)],
        _run(1, {"a", "b", "gone"}, {}, {}),
    )
    run2 = merge(
        run1,
        [],
        AuditRun(now_ms=2, evaluated=frozenset(), rules=frozenset({"R02"}), removed=frozenset({"gone"})),
    )
    assert _status(run2) == [("R02", "a", "ongoing", 1, 2, 2)]


def test_rows_written_before_the_lifecycle_columns_count_as_seen_before() -> None:
    old = [{**_f("R02", "g", 10, 20, 1), "finding_key": None, "status": None}]
    run = merge(old, [_f("R02", "g", 10, 20, 1)], _run(5, {"g"}, {"g": 20}, {}))
    assert _status(run) == [("R02", "g", "ongoing", 5, 5, 2)]
    assert (
        ordered([{**run[0], "status": "resolved"}, _f("R07", "h", 1, 1, 1) | {"status": "new"}])[0]["rule_id"]
        == "R07"
    )


def test_an_old_warehouse_gains_the_lifecycle_columns(tmp_path: Path) -> None:
    """Layout 2 → 3: the findings table of an older version is migrated in place, its rows kept."""
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    from rebalance_replay.jobs.warehouse import META_FILE, SCHEMA_VERSION, open_warehouse
    from rebalance_replay.schemas import FINDINGS
    from rebalance_replay.transforms.audit.lifecycle import LIFECYCLE_COLUMNS

    assert SCHEMA_VERSION == 3
    wh = tmp_path / "wh"
    (wh / "requests" / "_delta_log").mkdir(parents=True)
    (wh / META_FILE).write_text(json.dumps({"schema_version": 2, "redact": []}))
    full = FINDINGS.arrow_schema()
    old_schema = pa.schema([f for f in full if f.name not in LIFECYCLE_COLUMNS])
    row: dict[str, Any] = {f.name: None for f in old_schema}
    row.update(
        rule_id="R02",
        rule="session-timeout-eviction",
        severity="warning",
        confidence=1.0,
        group_id="g",
        window_start_ms=1,
        window_end_ms=2,
        occurrences=1,
        summary="s",
        evidence=[],
        fix="f",
        log_date=__import__("datetime").date(2024, 5, 1),
    )
    write_deltalake(
        str(wh / "findings"), pa.Table.from_pylist([row], schema=old_schema), partition_by=["log_date"]
    )
    said: list[str] = []
    open_warehouse(str(wh), (), said.append)
    dt = DeltaTable(str(wh / "findings"))
    assert [f.name for f in dt.schema().fields][-len(LIFECYCLE_COLUMNS) :] == list(LIFECYCLE_COLUMNS)
    rows = dt.to_pyarrow_table().to_pylist()
    assert [(r["rule_id"], r["status"], r["finding_key"]) for r in rows] == [("R02", None, None)]
    assert said == [
        f"warehouse: migrated {wh} from layout 2 to 3: findings gained {', '.join(LIFECYCLE_COLUMNS)}"
    ]
    assert json.loads((wh / META_FILE).read_text())["schema_version"] == 3
    from rebalance_replay.jobs.delta.features import schema_problems

    assert schema_problems(dt, FINDINGS) == []


@pytest.mark.parametrize("threshold,expected", [("info", 2), ("warning", 1), ("critical", 0)])
def test_failing_counts_severity_at_or_above(threshold: str, expected: int) -> None:
    rows = [
        _f("R02", "g", 1, 2, 1, sev="warning") | {"status": "new"},
        _f("R06", "g", 1, 2, 1, sev="info") | {"status": "new"},
    ]
    assert len(failing(rows, threshold, include_ongoing=False)) == expected


def test_summary_names_the_hosts_and_instances_it_does_not_name_yet() -> None:
    from rebalance_replay.transforms.audit.base import MemberInfo, who_clause

    info = MemberInfo(("app-1",), ("c-1",), ("10.1.0.1", "10.1.0.10"))
    assert who_clause("3 rebalances", info) == "; instance app-1, hosts 10.1.0.1, 10.1.0.10"
    # 10.1.0.1 is not named by 10.1.0.10, nor app-1 by app-10
    assert who_clause("app-10 on 10.1.0.10", info) == "; instance app-1, host 10.1.0.1"
    assert who_clause("c-1 [app-1] (10.1.0.1), c-1 (10.1.0.10)", info) == ""
    many = MemberInfo((), (), tuple(f"h{i}" for i in range(8)))
    assert who_clause("x", many) == "; hosts h0, h1, h2, h3, h4 and 3 more"
