"""The rule registry, the audit's single source: every rule's id (its number in the audit catalogue),
kebab-case name, settings class, family, check function and what it needs from the log; :func:`evaluate`
runs the enabled ones on one group.

A rule is a pure function ``check(inputs, settings, cap) -> list[Finding]`` over one group's
:class:`~rebalance_replay.transforms.audit.model.GroupInputs`, registered after its definition with
``register("R24", "kebab-name", R24Settings)(check)``. That one call gives everything else a rule has:
its ``audit.R24`` section of :class:`~rebalance_replay.transforms.audit.config.AuditSettings` (so its
config keys, ``rebalance_replay/conf/default.yaml`` and ``docs/config.md``), its place in
:func:`rule_ids`, the ``findings`` contract's :func:`rule_id_pattern`, the texts that name the rules
(:func:`rule_ids_text`: CLI help and errors) and ``docs/audit-rules.md`` (:func:`catalogue_markdown`);
``make_finding`` finds the rule from the settings the check was given (:func:`rule_of`).

``support(inputs)`` returns why the log cannot support the rule for that group (e.g. no assignment bytes)
or None; such a group is reported as *unsupported* in the run summary instead of silently finding nothing.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from rebalance_replay.transforms.audit.about import ABOUT
from rebalance_replay.transforms.audit.config import (
    AuditSettings,
    RuleSettings,
    declare_rule_section,
    drop_rule_section,
    ids_text,
)
from rebalance_replay.transforms.audit.model import Finding, GroupInputs

S = TypeVar("S", bound=RuleSettings)

#: a rule's check, typed with its own settings class
Check = Callable[[GroupInputs, S, int], list[Finding]]
Support = Callable[[GroupInputs], str | None]

RULE_ID = re.compile(r"R\d{2}")
RULE_NAME = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")


def _always(_inputs: GroupInputs) -> str | None:
    return None


@dataclass(frozen=True)
class Rule(Generic[S]):
    rule_id: str
    name: str
    family: str
    settings: type[S]
    check: Check[S]
    support: Support = _always


RULES: dict[str, Rule[Any]] = {}


def register(
    rule_id: str, name: str, settings: type[S], *, support: Support = _always
) -> Callable[[Check[S]], Check[S]]:  # pragma: no mutate block (import time: every rule module)
    """Register ``check`` as rule ``rule_id`` with its settings class (its ``audit.<rule_id>`` section):
    ``register(id, name, settings)(check)`` after the check's definition (a plain call, not a decorator:
    mutmut leaves decorated functions alone, docs/mutation-testing.md)."""

    def wrap(check: Check[S]) -> Check[S]:
        if not RULE_ID.fullmatch(rule_id):
            raise ValueError(f"rule id {rule_id!r} is not R followed by two digits")
        if not RULE_NAME.fullmatch(name):
            raise ValueError(f"rule {rule_id}: name {name!r} is not kebab-case")
        if rule_id in RULES:
            raise ValueError(f"rule {rule_id} registered twice")
        if not (isinstance(settings, type) and issubclass(settings, RuleSettings)):
            raise TypeError(f"rule {rule_id}: settings {settings!r} is not a RuleSettings class")
        if not dataclasses.is_dataclass(settings) or not settings.__dataclass_params__.frozen:  # type: ignore[attr-defined]
            raise TypeError(f"rule {rule_id}: settings {settings.__name__} is not a frozen dataclass")
        owner = [r.rule_id for r in RULES.values() if r.settings is settings]
        if owner:
            raise ValueError(f"rule {rule_id}: settings {settings.__name__} already belong to {owner[0]}")
        family = check.__module__.rsplit(".", 1)[-1]
        declare_rule_section(rule_id, settings, f"{rule_id} {name}.")
        RULES[rule_id] = Rule(rule_id, name, family, settings, check, support)
        return check

    return wrap


def unregister(rule_id: str) -> None:
    """Take rule ``rule_id`` out again, its ``audit`` section too (a test that registers a rule)."""
    del RULES[rule_id]
    drop_rule_section(rule_id)


def rule_ids() -> tuple[str, ...]:
    """Every registered rule id, in order (R01 first)."""
    return tuple(sorted(RULES))


def rule_ids_text() -> str:
    """The rule ids as texts name them: ``R01…R23`` when they run without a gap, else each one."""
    return ids_text(rule_ids())


def rule_id_pattern() -> str:
    """A regex matching exactly the registered rule ids (the ``findings`` contract's ``rule_id`` check)."""
    return "^(" + "|".join(re.escape(i) for i in rule_ids()) + ")$"


def rule_of(settings: RuleSettings) -> Rule[Any]:
    """The rule whose settings ``settings`` are (``make_finding`` names the finding's rule with it)."""
    for rule in RULES.values():
        if type(settings) is rule.settings:
            return rule
    raise LookupError(f"no rule is registered with settings {type(settings).__name__}")


def catalogue_markdown() -> str:
    """``docs/audit-rules.md``: every rule's id, name, family and default severity (generated, like
    ``docs/config.md``, by ``python -m rebalance_replay.jobs.config``)."""
    out = [
        "# Audit rules",
        "",
        "Generated from the rule registry (`rebalance_replay/transforms/audit/registry.py`: one "
        "`register(id, name, settings)(check)` per rule) by `python -m rebalance_replay.jobs.config`; "
        f"do not edit by hand. {len(RULES)} rules, {rule_ids_text()}; each rule's settings are the "
        "`audit.<id>.*` keys of [config.md](config.md).",
        "",
        "| id | name | family | default severity | settings |",
        "|---|---|---|---|---|",
    ]
    for rule_id in rule_ids():
        rule = RULES[rule_id]
        keys = ", ".join(f"`{f.name}`" for f in dataclasses.fields(rule.settings))
        link = f"[{rule_id}](#{rule_anchor(rule_id)})"
        out.append(f"| {link} | `{rule.name}` | {rule.family} | {rule.settings().severity} | {keys} |")
    for rule_id in rule_ids():
        out += ["", *rule_section(RULES[rule_id])]
    return "\n".join(out) + "\n"


def rule_anchor(rule_id: str) -> str:
    """The id of a rule's section, in ``docs/audit-rules.md`` and in a report's ``rules.html``."""
    rule = RULES.get(rule_id)
    return rule_id.lower() if rule is None else f"{rule_id.lower()}-{rule.name}"


def thresholds(rule: Rule[Any]) -> list[tuple[str, Any, str]]:
    """A rule's thresholds (its settings beyond ``enabled`` and ``severity``): name, default, meaning."""
    from rebalance_replay.transforms.declare import META

    defaults = rule.settings()
    return [
        (f.name, getattr(defaults, f.name), f.metadata[META].doc)
        for f in dataclasses.fields(rule.settings)
        if f.name not in ("enabled", "severity")
    ]


def rule_section(rule: Rule[Any]) -> list[str]:
    """A rule's section of ``docs/audit-rules.md``: the registry's facts (family, severity, every
    threshold with its default and meaning) and the hand-written :data:`about.ABOUT` text."""
    defaults = rule.settings()
    out = [
        f"## {rule.rule_id} {rule.name}",
        "",
        f"Family {rule.family}; default severity {defaults.severity}; settings `audit.{rule.rule_id}.*`:",
        "",
    ]
    out += [f"- `{name}` = {value}: {doc}" for name, value, doc in thresholds(rule)] or [
        "- no threshold beyond `enabled` and `severity`"
    ]
    about = ABOUT.get(rule.rule_id)
    if about is None:
        return [*out, "", "(Not described yet.)"]
    return [
        *out,
        "",
        f"**What it means.** {about.meaning}",
        "",
        f"**Evidence.** {about.evidence}",
        "",
        f"**The fix.** {about.fix}",
        "",
        f"**When it can be wrong.** {about.false_positives}",
        "",
        f"**Read.** {about.read}",
    ]


@dataclass(frozen=True)
class GroupAudit:
    findings: tuple[Finding, ...]
    unsupported: tuple[tuple[str, str], ...]  # (rule id, reason)


def selected_rules(settings: AuditSettings, only: Iterable[str] | None = None) -> list[Rule[Any]]:
    """The enabled rules (of ``only`` when given), in id order."""
    wanted = None if only is None else set(only)
    out = []
    for rule_id in rule_ids():
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
        found = rule.check(inputs, settings.rule(rule.rule_id), settings.evidence_cap)
        findings.extend(weigh_disputes(inputs, f) for f in found)
    findings.sort(key=lambda f: (f.rule_id, f.window_start_ms, f.window_end_ms, f.member_ids))
    return GroupAudit(tuple(findings), tuple(unsupported))


#: The share of a finding's confidence lost when every one of its evidence requests was mispredicted
#: (half of that when half were).
DISPUTED_CONFIDENCE_DROP = 0.5


def weigh_disputes(inputs: GroupInputs, finding: Finding) -> Finding:
    """The broker's answers win: a finding citing requests whose answers the replay predicted otherwise
    than the broker logged them rests on a view of the group the broker disputes. Its confidence drops
    with the share of such evidence and its summary names the disputed answers."""
    if not inputs.disputes or not finding.evidence:
        return finding
    index = {(d.source_file, d.line_no): d for d in inputs.disputes}
    hit = [index[k] for e in finding.evidence if (k := (e.source_file, e.line_no)) in index]
    if not hit:
        return finding
    confidence = round(
        finding.confidence * (1 - DISPUTED_CONFIDENCE_DROP * len(hit) / len(finding.evidence)), 2
    )
    named = ", ".join(d.text for d in hit[:3]) + (f" and {len(hit) - 3} more" if len(hit) > 3 else "")
    summary = (
        f"{finding.summary}; disputed (confidence {confidence:.2f}): the broker answered {len(hit)} of its "
        f"{len(finding.evidence)} evidence request(s) otherwise than the replay predicted ({named})"
    )
    return dataclasses.replace(finding, confidence=confidence, summary=summary)
