"""The rule registry: every rule's id (its number in the audit catalogue), kebab-case name, family,
check function and what it needs from the log; :func:`evaluate` runs the enabled ones on one group.

A rule is a pure function ``check(inputs, settings, cap) -> list[Finding]`` over one group's
:class:`~rebalance_replay.transforms.audit.model.GroupInputs`. ``support(inputs)`` returns why the log cannot
support
the rule for that group (e.g. no assignment bytes) or None; such a group is reported as *unsupported*
in the run summary instead of silently finding nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from rebalance_replay.transforms.audit.config import AuditSettings, RuleSettings
from rebalance_replay.transforms.audit.model import Finding, GroupInputs

Check = Callable[[GroupInputs, Any, int], list[Finding]]
Support = Callable[[GroupInputs], str | None]


def _always(_inputs: GroupInputs) -> str | None:
    return None


@dataclass(frozen=True)
class Rule:
    rule_id: str
    name: str
    family: str
    check: Check
    support: Support = _always


RULES: dict[str, Rule] = {}


def register(rule_id: str, name: str, *, support: Support = _always) -> Callable[[Check], Check]:
    """Register ``check`` as rule ``rule_id``: ``register(id, name)(check)`` after the check's definition
    (a plain call, not a decorator: mutmut leaves decorated functions alone, docs/mutation-testing.md)."""

    def wrap(check: Check) -> Check:
        if rule_id in RULES:
            raise ValueError(f"rule {rule_id} registered twice")
        family = check.__module__.rsplit(".", 1)[-1]
        RULES[rule_id] = Rule(rule_id, name, family, check, support)
        return check

    return wrap


@dataclass(frozen=True)
class GroupAudit:
    findings: tuple[Finding, ...]
    unsupported: tuple[tuple[str, str], ...]  # (rule id, reason)


def selected_rules(settings: AuditSettings, only: Iterable[str] | None = None) -> list[Rule]:
    """The enabled rules (of ``only`` when given), in id order."""
    wanted = None if only is None else set(only)
    out = []
    for rule_id in sorted(RULES):
        rs: RuleSettings = settings.rule(rule_id)
        if rs.enabled and (wanted is None or rule_id in wanted):
            out.append(RULES[rule_id])
    return out


def evaluate(inputs: GroupInputs, settings: AuditSettings, only: Iterable[str] | None = None) -> GroupAudit:
    """Run the selected rules on one group; findings sorted by rule id then window."""
    findings: list[Finding] = []
    unsupported: list[tuple[str, str]] = []
    for rule in selected_rules(settings, only):
        reason = rule.support(inputs)
        if reason is not None:
            unsupported.append((rule.rule_id, reason))
            continue
        findings.extend(rule.check(inputs, settings.rule(rule.rule_id), settings.evidence_cap))
    findings.sort(key=lambda f: (f.rule_id, f.window_start_ms, f.window_end_ms, f.member_ids))
    return GroupAudit(tuple(findings), tuple(unsupported))
