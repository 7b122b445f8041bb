"""Every audit rule against the incident generator's ground truth (pure: parse → replay → rules, no Spark).

Per rule: the log with the incident → the finding, with the right members (client ids) and a window that
overlaps the incident's; the same log without it → no finding. Over several seeds, precision and recall
per rule are printed (``pytest -s`` shows the report) and asserted: every rule's recall is 1.0, and no
warning or critical finding lands on a group whose ground truth does not name that rule (healthy control
groups included) at default thresholds.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

from rebalance_replay.transforms.audit import AuditSettings, Finding, GroupInputs, evaluate
from simulator.incidents import INCIDENTS, Truth, group_inputs_of, incident_coordinator, log_files

SEEDS = (7, 11, 23)
#: How far (seconds) a finding's window may reach outside its incident's: none, except R09, whose window
#: ends at the last follow-up round's SyncGroup answer (up to 0.2 s after the incident's 10 s).
SLACK_S: dict[str, int] = {"R09": 1}


@cache
def incident_inputs(seed: int, inject: bool = True) -> tuple[dict[str, GroupInputs], tuple[Truth, ...]]:
    """The incident logs of ``seed`` parsed and replayed, per group (computed once per process: the
    exact-finding tests of ``test_rule_findings_exact.py`` read the same inputs)."""
    files, truths = log_files(seed, inject=inject)
    return group_inputs_of(files, incident_coordinator()), tuple(truths)


@cache
def audited(seed: int, inject: bool = True) -> tuple[dict[str, list[Finding]], tuple[Truth, ...]]:
    inputs, truths = incident_inputs(seed, inject)
    return {g: list(evaluate(gi, AuditSettings()).findings) for g, gi in inputs.items()}, truths


def matches(f: Finding, t: Truth) -> bool:
    """The finding is the incident: same rule and group, its window inside the incident's (give or take
    the rule's slack, in seconds), and exactly the members the ground truth names (none for a
    group-level rule)."""
    slack_ms = SLACK_S.get(t.rule_id, 0) * 1000
    return (
        f.rule_id == t.rule_id
        and f.group_id == t.group_id
        and t.window_start_ms - slack_ms <= f.window_start_ms <= f.window_end_ms <= t.window_end_ms + slack_ms
        and set(f.client_ids) == set(t.clients)
    )


def test_every_rule_but_the_group_level_ones_names_its_members() -> None:
    _, truths = audited(7)
    unnamed = sorted({t.rule_id for t in truths if not t.clients})
    assert unnamed == ["R14", "R20"]  # short-lived groups, a coordinator move: nobody to name


@pytest.mark.parametrize("rule_id", sorted(INCIDENTS))
def test_incident_is_found_with_members_and_window(rule_id: str) -> None:
    findings, truths = audited(7)
    mine = [t for t in truths if t.rule_id == rule_id]
    assert mine, f"no incident for {rule_id}"
    for t in mine:
        got = [f for f in findings[t.group_id] if f.rule_id == rule_id]
        assert got, f"{rule_id}: no finding in {t.group_id}; got {[f.rule_id for f in findings[t.group_id]]}"
        assert any(matches(f, t) for f in got), (
            f"{rule_id}: finding does not match the truth {t}: "
            f"{[(f.client_ids, f.window_start_ms, f.window_end_ms) for f in got]}"
        )
        f = got[0]
        assert f.evidence and f.summary and f.fix
        assert 0 < f.confidence <= 1
        assert f.window_start_ms <= f.window_end_ms


@pytest.mark.parametrize("rule_id", sorted(INCIDENTS))
def test_same_log_without_the_incident_has_no_finding(rule_id: str) -> None:
    findings, truths = audited(7, inject=False)
    assert not truths
    group = next(t.group_id for t in audited(7)[1] if t.rule_id == rule_id)
    assert [f.rule_id for f in findings[group]] == []


@pytest.mark.slow  # three seeds of every incident (seed 7 alone is the fast tier's)
def test_precision_recall_report(capsys: pytest.CaptureFixture[str]) -> None:
    stats: dict[str, dict[str, int]] = {r: {"tp": 0, "fn": 0, "fp": 0} for r in sorted(INCIDENTS)}
    healthy_alerts: list[str] = []
    for seed in SEEDS:
        findings, truths = audited(seed)
        for t in truths:
            ok = any(matches(f, t) for f in findings.get(t.group_id, []))
            stats.setdefault(t.rule_id, {"tp": 0, "fn": 0, "fp": 0})["tp" if ok else "fn"] += 1
        expected = {(t.group_id, t.rule_id) for t in truths}
        for group, fs in findings.items():
            for f in fs:
                if f.severity == "info" or (group, f.rule_id) in expected:
                    continue
                stats.setdefault(f.rule_id, {"tp": 0, "fn": 0, "fp": 0})["fp"] += 1
                if group.startswith("healthy"):
                    healthy_alerts.append(f"seed {seed} {group} {f.rule_id} {f.severity}")
    lines = [f"audit rules over seeds {SEEDS}: rule  TP FN FP(warning/critical)  precision recall"]
    for r, s in sorted(stats.items()):
        p = s["tp"] / (s["tp"] + s["fp"]) if s["tp"] + s["fp"] else float("nan")
        rec = s["tp"] / (s["tp"] + s["fn"]) if s["tp"] + s["fn"] else float("nan")
        lines.append(f"  {r}  {s['tp']:>2} {s['fn']:>2} {s['fp']:>2}  {p:.2f} {rec:.2f}")
    with capsys.disabled():
        print("\n" + "\n".join(lines))
    assert not healthy_alerts, healthy_alerts
    assert {r: s["fn"] for r, s in stats.items() if s["fn"]} == {}, "recall below 1.0"
    assert {r: s["fp"] for r, s in stats.items() if s["fp"]} == {}, (
        "warning/critical findings without an incident"
    )


@pytest.mark.slow  # every incident audited twice more
def test_findings_are_deterministic() -> None:
    a, _ = audited(7)
    files, _ = log_files(7)
    inputs = group_inputs_of(files, incident_coordinator())
    again = {g: [f.to_json() for f in evaluate(gi, AuditSettings()).findings] for g, gi in inputs.items()}
    assert again == {g: [f.to_json() for f in fs] for g, fs in a.items()}


def test_rules_subset_and_switch_off() -> None:
    files, _ = log_files(7, rules=["R02", "R07"], healthy_groups=0)
    inputs = group_inputs_of(files, incident_coordinator())
    gi = inputs["inc-r02-crashes"]
    assert [f.rule_id for f in evaluate(gi, AuditSettings(), only=["R07"]).findings] == []
    assert [f.rule_id for f in evaluate(gi, AuditSettings(), only=["R02"]).findings] == ["R02"]
    from rebalance_replay.jobs.config import from_mapping

    off = from_mapping({"audit": {"R02": {"enabled": False}}}).audit
    assert evaluate(gi, off).findings == ()


def test_thresholds_change_severity() -> None:
    from rebalance_replay.jobs.config import from_mapping

    files, _ = log_files(7, rules=["R02"], healthy_groups=0)
    gi = group_inputs_of(files, incident_coordinator())["inc-r02-crashes"]
    assert [f.severity for f in evaluate(gi, AuditSettings()).findings] == ["warning"]
    strict = from_mapping({"audit": {"R02": {"critical_evictions": 2}}}).audit
    assert [f.severity for f in evaluate(gi, strict).findings] == ["critical"]
    lax = from_mapping({"audit": {"R02": {"warning_evictions": 3}}}).audit
    assert [f.severity for f in evaluate(gi, lax).findings] == ["info"]


def _row_shape(f: Finding) -> dict[str, Any]:
    return f.as_row()


def test_finding_rows_have_the_findings_columns() -> None:
    from rebalance_replay.schemas import FINDINGS

    files, _ = log_files(7)
    inputs = group_inputs_of(files, incident_coordinator())["inc-r02-crashes"]
    f = evaluate(inputs, AuditSettings()).findings[0]
    row = _row_shape(f)
    assert list(row) == FINDINGS.column_names
    # the cost is the caused rebalances' durations added up, each counted once
    caused = [inputs.rebalance(seq) for seq in sorted(set(row["rebalance_seqs"]))]
    durations = [rb.total_duration_ms for rb in caused if rb is not None and rb.total_duration_ms is not None]
    assert len(durations) == len(caused) and all(d > 0 for d in durations)
    assert row["metrics"]["rebalance_time_caused_ms"] == float(sum(durations))
    assert "member_seconds_without_assignment" in row["metrics"]
    assert row["rebalance_seqs"], "the evictions caused rebalances"
