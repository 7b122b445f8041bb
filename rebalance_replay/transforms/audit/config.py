"""The audit's settings: one typed declaration per rule (on/off, severity, thresholds), with defaults.

Declared with :func:`rebalance_replay.transforms.declare.setting` like every other key
(``rebalance_replay.jobs.config`` nests
:class:`AuditSettings` as the ``audit:`` section), so ``rebalance_replay/conf/default.yaml``,
``docs/config.md``, parsing
and validation all come from these fields; ``--set audit.R01.max_rebalances_per_hour=6`` overrides one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from rebalance_replay.transforms.declare import section, setting

Severity = Literal["info", "warning", "critical"]
SEVERITIES: tuple[Severity, ...] = ("info", "warning", "critical")


@dataclass(frozen=True)
class RuleSettings:
    """What every rule has: on/off and the severity of a finding that crosses no escalation threshold."""

    enabled: bool = setting(True, "run this rule")
    severity: Severity = setting("warning", "severity of a finding below the rule's escalation thresholds")


@dataclass(frozen=True)
class R01Settings(RuleSettings):
    """R01 rebalance-storm."""

    max_rebalances_per_hour: int = setting(
        10, "more rebalances started within any 60-minute window than this is a storm", minimum=0
    )
    critical_rebalances_per_hour: int = setting(
        30, "rebalances within any 60-minute window from which the finding is critical", minimum=0
    )


@dataclass(frozen=True)
class R02Settings(RuleSettings):
    """R02 session-timeout-eviction."""

    severity: Severity = setting(
        "info",
        "severity of a finding below the escalation thresholds: one eviction is an event (a crash), "
        "repeated ones a misconfiguration",
    )
    warning_evictions: int = setting(2, "evictions in the group within the log → warning", minimum=0)
    critical_evictions: int = setting(
        5, "evictions in the group from which the finding is critical", minimum=0
    )


@dataclass(frozen=True)
class R03Settings(RuleSettings):
    """R03 max-poll-interval-exceeded."""

    critical_occurrences: int = setting(5, "occurrences from which the finding is critical", minimum=0)


@dataclass(frozen=True)
class R04Settings(RuleSettings):
    """R04 static-member-poll-timeout."""


@dataclass(frozen=True)
class R05Settings(RuleSettings):
    """R05 rebalance-held-by-slow-member."""

    min_join_phase_ms: int = setting(
        10_000, "a join phase at least this long is judged (with min_wait_share)", minimum=0
    )
    min_wait_share: float = setting(
        0.7, "share of the join phase the last member kept the others waiting", bounds=(0.0, 1.0)
    )
    critical_join_phase_ms: int = setting(
        120_000, "a join phase at least this long makes the finding critical", minimum=0
    )


@dataclass(frozen=True)
class R06Settings(RuleSettings):
    """R06 heartbeat-interval-near-session-timeout."""

    min_heartbeats: int = setting(5, "gaps needed per member before judging its cadence", minimum=0)
    max_median_share: float = setting(
        0.34, "a median heartbeat gap above session.timeout.ms × this is too close", bounds=(0.0, 1.0)
    )
    max_p99_share: float = setting(
        0.8, "a p99 heartbeat gap above session.timeout.ms × this is too close", bounds=(0.0, 1.0)
    )


@dataclass(frozen=True)
class R07Settings(RuleSettings):
    """R07 session-timeout-out-of-bounds."""

    severity: Severity = setting("critical", "severity of a finding below the rule's escalation thresholds")


@dataclass(frozen=True)
class R08Settings(RuleSettings):
    """R08 inconsistent-assignors."""

    severity: Severity = setting("critical", "severity of a finding below the rule's escalation thresholds")


@dataclass(frozen=True)
class R09Settings(RuleSettings):
    """R09 cooperative-follow-up-rounds."""

    max_follow_up_rounds: int = setting(
        1, "follow-up rounds after one trigger (the expected total is 2 rounds)", minimum=0
    )


@dataclass(frozen=True)
class R10Settings(RuleSettings):
    """R10 duplicate-group-instance-id."""

    severity: Severity = setting("critical", "severity of a finding below the rule's escalation thresholds")


@dataclass(frozen=True)
class R11Settings(RuleSettings):
    """R11 static-restart-slower-than-session-timeout."""


@dataclass(frozen=True)
class R12Settings(RuleSettings):
    """R12 static-session-timeout-too-large."""

    severity: Severity = setting("info", "severity of a finding below the rule's escalation thresholds")
    min_silence_ms: int = setting(30_000, "a static member silent this long without being evicted", minimum=0)
    warning_silence_ms: int = setting(
        120_000, "a static member silent this long makes the finding a warning", minimum=0
    )


@dataclass(frozen=True)
class R13Settings(RuleSettings):
    """R13 rolling-deploy-without-static-membership."""

    replace_window_ms: int = setting(
        120_000, "a LeaveGroup followed by a new dynamic member within this", minimum=0
    )
    min_replacements: int = setting(3, "pods replaced in one deploy", minimum=0)


@dataclass(frozen=True)
class R14Settings(RuleSettings):
    """R14 initial-rebalance-delay-churn."""

    min_cycles: int = setting(
        3, "Empty → PreparingRebalance cycles (the group formed from scratch) needed for a finding", minimum=0
    )


@dataclass(frozen=True)
class R15Settings(RuleSettings):
    """R15 double-join-leaked-member."""

    double_join_window_ms: int = setting(
        1_000, "a second JoinGroup (KIP-394 double join) within this is part of the same join", minimum=0
    )


@dataclass(frozen=True)
class R16Settings(RuleSettings):
    """R16 metadata-driven-rebalances."""

    severity: Severity = setting("info", "severity of a finding below the rule's escalation thresholds")
    warning_rebalances: int = setting(3, "metadata-driven rebalances in the group → warning", minimum=0)


@dataclass(frozen=True)
class R17Settings(RuleSettings):
    """R17 over-provisioned-group."""


@dataclass(frozen=True)
class R18Settings(RuleSettings):
    """R18 group-max-size-reached."""

    severity: Severity = setting("critical", "severity of a finding below the rule's escalation thresholds")


@dataclass(frozen=True)
class R19Settings(RuleSettings):
    """R19 sync-never-completes."""

    slow_sync_ms: int = setting(10_000, "a sync phase (the leader's SyncGroup) at least this long", minimum=0)


@dataclass(frozen=True)
class R20Settings(RuleSettings):
    """R20 coordinator-unavailable-or-moving."""


@dataclass(frozen=True)
class R21Settings(RuleSettings):
    """R21 commits-racing-rebalances."""

    severity: Severity = setting("info", "severity of a finding below the rule's escalation thresholds")
    warning_failed_commits: int = setting(
        5, "failed commits in the group from which the finding is a warning", minimum=0
    )


@dataclass(frozen=True)
class R22Settings(RuleSettings):
    """R22 periodic-probing-rebalances."""

    min_rebalances: int = setting(3, "rebalances needed before probing is suspected", minimum=0)
    probing_interval_ms: int = setting(600_000, "Kafka Streams' probing.rebalance.interval.ms", minimum=0)
    tolerance: float = setting(
        0.15, "intervals within ± this share of probing_interval_ms", bounds=(0.0, 1.0)
    )


@dataclass(frozen=True)
class R23Settings(RuleSettings):
    """R23 kip848-group."""

    severity: Severity = setting(
        "info",
        "severity of a finding below the escalation thresholds: a KIP-848 group is not wrong, only not "
        "a classic group (mixed → warning)",
    )


@dataclass(frozen=True)
class AuditSettings:
    """Audit: rules R01…R23 (the audit catalogue's patterns), each with enabled, severity and thresholds."""

    evidence_cap: int = setting(20, "evidence rows kept per finding (the rest are counted)", minimum=1)
    R01: R01Settings = section(R01Settings)
    R02: R02Settings = section(R02Settings)
    R03: R03Settings = section(R03Settings)
    R04: R04Settings = section(R04Settings)
    R05: R05Settings = section(R05Settings)
    R06: R06Settings = section(R06Settings)
    R07: R07Settings = section(R07Settings)
    R08: R08Settings = section(R08Settings)
    R09: R09Settings = section(R09Settings)
    R10: R10Settings = section(R10Settings)
    R11: R11Settings = section(R11Settings)
    R12: R12Settings = section(R12Settings)
    R13: R13Settings = section(R13Settings)
    R14: R14Settings = section(R14Settings)
    R15: R15Settings = section(R15Settings)
    R16: R16Settings = section(R16Settings)
    R17: R17Settings = section(R17Settings)
    R18: R18Settings = section(R18Settings)
    R19: R19Settings = section(R19Settings)
    R20: R20Settings = section(R20Settings)
    R21: R21Settings = section(R21Settings)
    R22: R22Settings = section(R22Settings)
    R23: R23Settings = section(R23Settings)

    @property
    def rules(self) -> dict[str, RuleSettings]:
        """Rule id → its settings, R01 first."""
        return {rule_id: getattr(self, rule_id) for rule_id in RULE_IDS}

    def rule(self, rule_id: str) -> RuleSettings:
        settings: RuleSettings = getattr(self, rule_id)
        return settings


RULE_IDS: tuple[str, ...] = (
    "R01",
    "R02",
    "R03",
    "R04",
    "R05",
    "R06",
    "R07",
    "R08",
    "R09",
    "R10",
    "R11",
    "R12",
    "R13",
    "R14",
    "R15",
    "R16",
    "R17",
    "R18",
    "R19",
    "R20",
    "R21",
    "R22",
    "R23",
)
