"""Adding an audit rule is one check function with its ``register(id, name, settings)(check)`` call and one
settings class (+ its incident in the simulator, one entry of ``INCIDENTS``): this test registers a dummy
24th rule that way, edits nothing else, and shows every place that names the rules picks it up — the rule
ids, the ``audit.R24`` section and its config keys, the generated ``default.yaml`` / ``docs/config.md`` /
``docs/audit-rules.md``, the ``findings`` contract's GX pattern, the CLI's help and errors, the audit
job's error, the finding's rule name, the catalogue checks the other tests run and the incident pipeline.

Before issue 25 the same rule needed edits in 13 files (+ 3 regenerated): see docs/architecture.md,
"Adding an audit rule".
"""

from __future__ import annotations

import argparse
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from rebalance_replay.jobs.errors import ConfigError
from rebalance_replay.transforms.audit import RULES, AuditSettings, GroupInputs, evaluate, rule_ids
from rebalance_replay.transforms.audit.base import LEAVE_GROUP, make_finding
from rebalance_replay.transforms.audit.config import RuleSettings
from rebalance_replay.transforms.audit.model import Finding, Req
from rebalance_replay.transforms.audit.registry import register, unregister
from rebalance_replay.transforms.declare import setting
from simulator.incidents import INCIDENTS, Incident, Truth, healthy

MIN = 60_000


@dataclass(frozen=True)
class DummySettings(RuleSettings):
    min_leaves: int = setting(1, "LeaveGroups in the group from which it is flagged", minimum=0)


def members_who_left(inputs: GroupInputs, st: DummySettings, cap: int) -> list[Finding]:
    rows = [r for r in inputs.requests if r.api_name == LEAVE_GROUP]
    if not rows or len(rows) < st.min_leaves:
        return []
    return [
        make_finding(
            inputs,
            st,
            cap,
            severity=st.severity,
            confidence=1.0,
            members=[r.member_id for r in rows if r.member_id],
            evidence=rows,
            occurrences=len(rows),
            summary=f"{len(rows)} LeaveGroup(s)",
            fix="nothing: a dummy rule",
        )
    ]


def dummy_leaver(g: str, t: int, rnd: random.Random, on: bool = True) -> Incident:
    """The simulator's healthy group (one member closes gracefully), named as the dummy rule's incident."""
    inc = healthy(g, t, rnd, on)
    return Incident(g, [Truth("R24", g, t, t + 10 * MIN)] if on else [], inc.config, inc.records)


@pytest.fixture
def r24(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The dummy rule registered as the next id (R24 today) with its incident; both gone afterwards."""
    rule_id = f"R{int(rule_ids()[-1][1:]) + 1:02d}"
    assert rule_id == "R24"
    register(rule_id, "members-who-left", DummySettings)(members_who_left)
    monkeypatch.setitem(INCIDENTS, rule_id, dummy_leaver)
    try:
        yield rule_id
    finally:
        unregister(rule_id)


def _leave(t: int, member: str) -> Req:
    return Req(
        "b1/kafka-request.log", t, "broker-1", LEAVE_GROUP, 5, t, t + 1, client_id="c1", member_id=member
    )


def test_the_rule_ids_and_the_catalogue_checks(r24: str) -> None:
    from tests.unit.audit.test_rules_pure import check_catalogue

    assert rule_ids()[-1] == r24 and len(RULES) == 24
    assert RULES[r24].family == "test_adding_a_rule" and RULES[r24].settings is DummySettings
    check_catalogue()  # numbered without a gap, kebab-case, own settings section, an incident each


def test_its_settings_section_and_config_keys(r24: str) -> None:
    from rebalance_replay.jobs.config import Config, load_config
    from rebalance_replay.jobs.settings import keys

    assert AuditSettings().rule(r24) == DummySettings()
    assert list(AuditSettings().rules)[-1] == r24
    assert {k.path for k in keys(Config)} >= {f"audit.{r24}.enabled", f"audit.{r24}.min_leaves"}
    config = load_config(overrides=[f"audit.{r24}.min_leaves=3", f"audit.{r24}.severity=critical"])
    assert config.audit.rule(r24) == DummySettings(severity="critical", min_leaves=3)
    with pytest.raises(ConfigError, match=rf"audit\.{r24}\.min_leaves must be ≥ 0"):
        load_config(overrides=[f"audit.{r24}.min_leaves=-1"])


def test_the_generated_files(r24: str) -> None:
    from rebalance_replay.jobs.config import config_markdown, default_yaml_text
    from rebalance_replay.schemas.tables import tables_markdown
    from rebalance_replay.transforms.audit.registry import catalogue_markdown

    yaml_text = default_yaml_text()
    assert "# Audit: rules R01…R24 (the audit catalogue's patterns)" in yaml_text
    assert f"  # {r24} members-who-left.\n  {r24}:\n" in yaml_text
    assert "    min_leaves: 1\n" in yaml_text
    docs = config_markdown()
    assert "Audit: rules R01…R24" in docs and f"| `audit.{r24}.min_leaves` | integer ≥ 0 | `1` |" in docs
    catalogue = catalogue_markdown()
    link = f"[{r24}](#{r24.lower()}-members-who-left)"
    assert f"| {link} | `members-who-left` | test_adding_a_rule | warning |" in catalogue
    # its section: the registry's part, and a place for the hand-written one (about.ABOUT)
    assert f"## {r24} members-who-left" in catalogue and "(Not described yet.)" in catalogue
    assert "R23" not in tables_markdown()  # the findings table's doc names no last rule: nothing to edit


def test_the_findings_contract_accepts_it(r24: str) -> None:
    from rebalance_replay.jobs.expectations import FINDINGS_SUITE, _checks
    from rebalance_replay.transforms.audit import rule_id_pattern

    checks = _checks(FINDINGS_SUITE, 0.99)  # declared without Spark: conditions are built when measured
    (check,) = [c for c in checks if c.expectation == "expect_column_values_to_match_regex"]
    assert check.description == "rule_id is R01…R24" and check.pattern == rule_id_pattern()
    assert all(re.fullmatch(check.pattern, i) for i in ("R01", "R09", "R10", "R23", r24))
    assert not any(re.fullmatch(check.pattern, i) for i in ("R00", "R25", "R2", "r24", "R240"))


def test_the_cli_and_the_audit_job(r24: str) -> None:
    from rebalance_replay.jobs.audit import audit
    from rebalance_replay.jobs.cli import _rule_ids, build_parser
    from rebalance_replay.jobs.config import load_config

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    audit_help = sub.choices["audit"].format_help()
    assert "rules R01…R24" in audit_help and "of R01…R24" in audit_help
    assert _rule_ids("r24,R2") == ("R02", r24)
    with pytest.raises(argparse.ArgumentTypeError, match=r"unknown rule 'R25' \(rules are R01…R24\)"):
        _rule_ids("R25")

    class Store:
        def exists(self, _table: object) -> bool:
            return True

    with pytest.raises(ValueError, match=r"unknown rule id\(s\) R25 \(rules are R01…R24\)"):
        audit(None, Store(), load_config(), rules=["R25"])  # type: ignore[arg-type]


def test_evaluate_runs_it_and_the_finding_names_it(r24: str) -> None:
    gi = GroupInputs.build("g", requests=[_leave(1000, "m1"), _leave(2000, "m2")])
    (f,) = evaluate(gi, AuditSettings(), only=[r24]).findings
    assert (f.rule_id, f.rule, f.occurrences, f.member_ids) == (r24, "members-who-left", 2, ("m1", "m2"))
    off = AuditSettings().rules | {r24: DummySettings(enabled=False)}
    assert all(f.rule_id != r24 for f in evaluate(gi, AuditSettings(**off)).findings)


def test_its_incident_is_found(r24: str) -> None:
    from simulator.incidents import group_inputs_of, incident_coordinator, log_files

    files, truths = log_files(7, rules=[r24], healthy_groups=0)
    (truth,) = truths
    assert truth.group_id == "inc-r24-dummy-leaver"  # named after the incident function
    inputs = group_inputs_of(files, incident_coordinator())
    (f,) = [f for f in evaluate(inputs[truth.group_id], AuditSettings()).findings if f.rule_id == r24]
    assert truth.window_start_ms <= f.window_start_ms <= f.window_end_ms <= truth.window_end_ms


def test_registering_needs_a_fresh_id_a_kebab_name_and_own_settings() -> None:
    with pytest.raises(ValueError, match="registered twice"):
        register("R01", "again", DummySettings)(members_who_left)
    with pytest.raises(ValueError, match="not R followed by two digits"):
        register("R7", "short", DummySettings)(members_who_left)
    with pytest.raises(ValueError, match="not kebab-case"):
        register("R98", "Members_Who_Left", DummySettings)(members_who_left)
    with pytest.raises(ValueError, match="already belong to R01"):
        register("R98", "storm-again", type(AuditSettings().rule("R01")))(members_who_left)
    with pytest.raises(TypeError, match="not a RuleSettings class"):
        register("R98", "no-settings", dict)(members_who_left)  # type: ignore[type-var]
    assert "R98" not in RULES and not hasattr(AuditSettings(), "R98")
