"""The audit's settings: one typed declaration per rule (thresholds, severity, on/off), with defaults.

``conf/default.yaml`` mirrors these defaults under ``audit:`` (a unit test keeps the two equal), and
``--set audit.R01.max_rebalances_per_hour=6`` overrides one value. :func:`parse_audit_settings` checks
every key and type and raises :class:`AuditConfigError` with a one-line message naming the key.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

SEVERITIES = ("info", "warning", "critical")


class AuditConfigError(ValueError):
    """A bad ``audit.*`` setting (one line, naming the key)."""


@dataclass(frozen=True)
class RuleSettings:
    """What every rule has: on/off and the severity of a finding that crosses no escalation threshold."""

    enabled: bool = True
    severity: str = "warning"


@dataclass(frozen=True)
class R01Settings(RuleSettings):
    max_rebalances_per_hour: int = 10  # rebalances started within any 60-minute window
    critical_rebalances_per_hour: int = 30


@dataclass(frozen=True)
class R02Settings(RuleSettings):
    severity: str = "info"  # one eviction is an event (a crash); repeated ones are a misconfiguration
    warning_evictions: int = 2  # evictions in the group within the log → warning
    critical_evictions: int = 5


@dataclass(frozen=True)
class R03Settings(RuleSettings):
    critical_occurrences: int = 5


@dataclass(frozen=True)
class R04Settings(RuleSettings):
    pass


@dataclass(frozen=True)
class R05Settings(RuleSettings):
    min_join_phase_ms: int = 10_000  # a join phase at least this long …
    min_wait_share: float = 0.7  # … in which the last member joined this late (share of the phase)
    critical_join_phase_ms: int = 120_000


@dataclass(frozen=True)
class R06Settings(RuleSettings):
    min_heartbeats: int = 5  # gaps needed per member before judging its cadence
    max_median_share: float = 0.34  # median heartbeat gap above sto × this …
    max_p99_share: float = 0.8  # … or p99 gap above sto × this


@dataclass(frozen=True)
class R07Settings(RuleSettings):
    severity: str = "critical"


@dataclass(frozen=True)
class R08Settings(RuleSettings):
    severity: str = "critical"


@dataclass(frozen=True)
class R09Settings(RuleSettings):
    max_follow_up_rounds: int = 1  # follow-up rounds after one trigger (the expected total is 2 rounds)


@dataclass(frozen=True)
class R10Settings(RuleSettings):
    severity: str = "critical"


@dataclass(frozen=True)
class R11Settings(RuleSettings):
    pass


@dataclass(frozen=True)
class R12Settings(RuleSettings):
    severity: str = "info"
    min_silence_ms: int = 30_000  # a static member silent this long without being evicted
    warning_silence_ms: int = 120_000


@dataclass(frozen=True)
class R13Settings(RuleSettings):
    replace_window_ms: int = 120_000  # a LeaveGroup followed by a new dynamic member within this
    min_replacements: int = 3  # pods replaced in one deploy


@dataclass(frozen=True)
class R14Settings(RuleSettings):
    min_cycles: int = 3  # Empty → PreparingRebalance cycles (groups formed from scratch)


@dataclass(frozen=True)
class R15Settings(RuleSettings):
    double_join_window_ms: int = 1_000


@dataclass(frozen=True)
class R16Settings(RuleSettings):
    severity: str = "info"
    warning_rebalances: int = 3  # metadata-driven rebalances in the group → warning


@dataclass(frozen=True)
class R17Settings(RuleSettings):
    pass


@dataclass(frozen=True)
class R18Settings(RuleSettings):
    severity: str = "critical"


@dataclass(frozen=True)
class R19Settings(RuleSettings):
    slow_sync_ms: int = 10_000  # a sync phase (leader's SyncGroup) at least this long


@dataclass(frozen=True)
class R20Settings(RuleSettings):
    pass


@dataclass(frozen=True)
class R21Settings(RuleSettings):
    severity: str = "info"
    warning_failed_commits: int = 5


@dataclass(frozen=True)
class R22Settings(RuleSettings):
    min_rebalances: int = 3
    probing_interval_ms: int = 600_000  # probing.rebalance.interval.ms
    tolerance: float = 0.15  # intervals within ± this share of probing_interval_ms


@dataclass(frozen=True)
class R23Settings(RuleSettings):
    severity: str = "info"  # a KIP-848 group is not wrong, only not a classic group; mixed → warning


RULE_SETTINGS: dict[str, type[RuleSettings]] = {
    f"R{n:02d}": cls
    for n, cls in enumerate(
        (
            R01Settings,
            R02Settings,
            R03Settings,
            R04Settings,
            R05Settings,
            R06Settings,
            R07Settings,
            R08Settings,
            R09Settings,
            R10Settings,
            R11Settings,
            R12Settings,
            R13Settings,
            R14Settings,
            R15Settings,
            R16Settings,
            R17Settings,
            R18Settings,
            R19Settings,
            R20Settings,
            R21Settings,
            R22Settings,
            R23Settings,
        ),
        start=1,
    )
}


@dataclass(frozen=True)
class AuditSettings:
    """The whole ``audit:`` section."""

    evidence_cap: int = 20  # evidence rows kept per finding (the rest are counted)
    rules: dict[str, RuleSettings] = field(default_factory=lambda: {k: c() for k, c in RULE_SETTINGS.items()})

    def rule(self, rule_id: str) -> RuleSettings:
        return self.rules[rule_id]


def _typed(path: str, value: Any, default: Any) -> Any:
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise AuditConfigError(f"config: {path} must be true or false, got {value!r}")
        return value
    if isinstance(default, int):
        if isinstance(value, bool) or not isinstance(value, int):
            raise AuditConfigError(f"config: {path} must be an integer, got {value!r}")
        if value < 0:
            raise AuditConfigError(f"config: {path} must be ≥ 0, got {value}")
        return value
    if isinstance(default, float):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise AuditConfigError(f"config: {path} must be a number, got {value!r}")
        if value < 0:
            raise AuditConfigError(f"config: {path} must be ≥ 0, got {value}")
        return float(value)
    if not isinstance(value, str):
        raise AuditConfigError(f"config: {path} must be a string, got {value!r}")
    return value


def parse_rule_settings(rule_id: str, data: Mapping[str, Any] | None) -> RuleSettings:
    cls = RULE_SETTINGS[rule_id]
    defaults = cls()
    known = {f.name: getattr(defaults, f.name) for f in dataclasses.fields(cls)}
    values: dict[str, Any] = {}
    for key, value in (data or {}).items():
        path = f"audit.{rule_id}.{key}"
        if key not in known:
            raise AuditConfigError(f"config: unknown key {path!r} (known: {', '.join(sorted(known))})")
        values[key] = _typed(path, value, known[key])
    out = cls(**values)
    if out.severity not in SEVERITIES:
        raise AuditConfigError(
            f"config: audit.{rule_id}.severity must be one of {', '.join(SEVERITIES)} (got {out.severity!r})"
        )
    return out


def parse_audit_settings(data: Mapping[str, Any] | None) -> AuditSettings:
    """The typed ``audit:`` section (``None``: every default)."""
    data = dict(data or {})
    cap = _typed("audit.evidence_cap", data.pop("evidence_cap", 20), 20)
    if cap < 1:
        raise AuditConfigError(f"config: audit.evidence_cap must be ≥ 1, got {cap}")
    rules: dict[str, RuleSettings] = {}
    for rule_id in RULE_SETTINGS:
        section = data.pop(rule_id, None)
        if section is not None and not isinstance(section, Mapping):
            raise AuditConfigError(f"config: audit.{rule_id} must be a mapping, got {section!r}")
        rules[rule_id] = parse_rule_settings(rule_id, section)
    if data:
        raise AuditConfigError(
            f"config: unknown key(s) {', '.join(f'audit.{k}' for k in sorted(data))} "
            "(known: evidence_cap, R01…R23)"
        )
    return AuditSettings(evidence_cap=cap, rules=rules)


def defaults_as_yaml_data() -> dict[str, Any]:
    """The defaults in the shape of ``conf/default.yaml``'s ``audit:`` section."""
    out: dict[str, Any] = {"evidence_cap": AuditSettings().evidence_cap}
    for rule_id, cls in RULE_SETTINGS.items():
        out[rule_id] = dataclasses.asdict(cls())
    return out
