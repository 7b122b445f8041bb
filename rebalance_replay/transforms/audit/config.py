"""The audit's settings: one typed declaration per rule (on/off, severity, thresholds), with defaults.

Declared with :func:`rebalance_replay.transforms.declare.setting` like every other key
(``rebalance_replay.jobs.config`` nests :class:`AuditSettings` as the ``audit:`` section), so
``rebalance_replay/conf/default.yaml``, ``docs/config.md``, parsing and validation all come from these
fields; ``--set audit.R01.max_rebalances_per_hour=6`` overrides one. A rule's settings class becomes its
``audit.<id>`` section when the rule is registered (``registry.register`` calls
:func:`declare_rule_section`): no list of rules here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

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


def _url(_path: str, v: Any) -> str:
    """``audit.notify.url``: may be empty (no webhook); its scheme is checked when it is used."""
    return "" if v is None else str(v).strip()


@dataclass(frozen=True)
class NotifySettings:
    """Where an audit run sends its new findings (never ongoing or resolved ones; nothing when there are
    none): an HTTP webhook and/or a command. A delivery that still fails after its retries is one line on
    stderr and exit code 4; the run's tables and summary are written first."""

    url: str = setting(
        "",
        'http:// or https:// webhook: one POST per run, a JSON object {"source", "warehouse", "findings": '
        "[new findings]}; empty: none",
        parse=_url,
    )
    command: tuple[str, ...] = setting(
        (),
        "a program and its arguments (run without a shell), given the new findings as JSON lines on "
        "stdin; e.g. --set audit.notify.command=/usr/local/bin/page-oncall,--team,kafka; empty: none",
    )
    retries: int = setting(2, "attempts after a failed first one (each waits backoff_s, doubling)", minimum=0)
    backoff_s: float = setting(
        1.0, "seconds before the first retry (doubled for each further one)", bounds=(0, 600)
    )
    timeout_s: float = setting(10.0, "seconds an attempt may take", bounds=(0.1, 3600))


@dataclass(frozen=True)
class AuditSettings:
    """Audit: the rules' settings (this text is replaced once the rules are registered)."""

    evidence_cap: int = setting(20, "evidence rows kept per finding (the rest are counted)", minimum=1)
    notify: NotifySettings = section(NotifySettings)
    # one section per registered rule, ``R01: R01Settings``, … : added by ``register`` (registry.py)

    @property
    def rules(self) -> dict[str, RuleSettings]:
        """Rule id → its settings, R01 first."""
        return {rule_id: getattr(self, rule_id) for rule_id in sorted(_RULE_SECTIONS)}

    def rule(self, rule_id: str) -> RuleSettings:
        settings: RuleSettings = getattr(self, rule_id)
        return settings


#: AuditSettings' own fields (the rule sections come from the registry)
_BASE_FIELDS = dict(AuditSettings.__dataclass_fields__)
#: rule id → (its settings class, its section's doc): the sections ``register`` declared
_RULE_SECTIONS: dict[str, tuple[type[RuleSettings], str]] = {}
#: what ``dataclass`` writes into a class: removed before :class:`AuditSettings` is derived again
_DERIVED = (
    "__init__",
    "__repr__",
    "__eq__",
    "__hash__",
    "__setattr__",
    "__delattr__",
    "__match_args__",
    "__dataclass_fields__",
    "__dataclass_params__",
)


def ids_text(ids: Sequence[str]) -> str:
    """Rule ids as texts name them: ``R01…R23`` when they run without a gap, else each one."""
    numbers = [int(i[1:]) for i in ids]
    if len(ids) > 2 and numbers == list(range(numbers[0], numbers[0] + len(ids))):
        return f"{ids[0]}…{ids[-1]}"
    return ", ".join(ids)


def declare_rule_section(rule_id: str, settings: type[RuleSettings], doc: str) -> None:
    """Give :class:`AuditSettings` the section ``rule_id: settings`` (the config keys ``audit.<rule_id>.*``,
    documented as ``doc``). Called by ``registry.register``, once per rule."""
    if rule_id in _RULE_SECTIONS or rule_id in _BASE_FIELDS:
        raise ValueError(f"audit.{rule_id} is declared twice")
    _RULE_SECTIONS[rule_id] = (settings, doc)
    _derive()


def drop_rule_section(rule_id: str) -> None:
    """Take the section ``rule_id`` out of :class:`AuditSettings` again (``registry.unregister``)."""
    del _RULE_SECTIONS[rule_id]
    if hasattr(AuditSettings, rule_id):
        delattr(AuditSettings, rule_id)
    _derive()


def _derive() -> None:
    """:class:`AuditSettings` as a frozen dataclass of its own fields and one section per declared rule,
    in id order: the same class object (``Config.audit`` and pickled settings keep referring to it), its
    fields, ``__init__``, doc and annotations derived again from ``_BASE_FIELDS`` and ``_RULE_SECTIONS``."""
    cls = AuditSettings
    for name in _DERIVED:
        if name in cls.__dict__:
            delattr(cls, name)
    annotations: dict[str, Any] = {name: cls.__annotations__[name] for name in _BASE_FIELDS}
    for name, f in _BASE_FIELDS.items():
        setattr(cls, name, f)
    for rule_id in sorted(_RULE_SECTIONS):
        settings, doc = _RULE_SECTIONS[rule_id]
        annotations[rule_id] = settings
        setattr(cls, rule_id, section(settings, doc))
    cls.__annotations__ = annotations
    cls.__doc__ = (
        f"Audit: rules {ids_text(sorted(_RULE_SECTIONS))} (the audit catalogue's patterns), each with "
        "enabled, severity and thresholds."
    )
    dataclass(frozen=True)(cls)
