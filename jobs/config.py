"""Typed configuration: ``conf/default.yaml`` + ``--conf FILE`` + ``--set key=value``, validated at start-up.

Every problem (unknown key, wrong type, bad value) is a :class:`ConfigError` with a one-line message
naming the key, e.g. ``config: replay.mode must be one of track, predict (got 'tracking')``.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml

from transforms.audit.config import AuditConfigError, AuditSettings, parse_audit_settings
from transforms.coordinator.config import CoordinatorConfig

KAFKA_VERSIONS = (
    "2.2",
    "2.3",
    "2.4",
    "2.5",
    "2.6",
    "2.7",
    "2.8",
    "3.0",
    "3.1",
    "3.2",
    "3.3",
    "3.4",
    "3.5",
    "3.6",
    "3.7",
    "3.8",
    "3.9",
    "4.0",
)
ENGINES = ("auto", "delta-spark", "delta-rs")


class ConfigError(ValueError):
    """A one-line, user-facing configuration problem."""


@dataclass(frozen=True)
class StorageConfig:
    engine: str
    warehouse: str
    lock_wait_s: int


@dataclass(frozen=True)
class SparkConfig:
    master: str
    driver_memory: str
    shuffle_partitions: int
    extra: dict[str, str]


@dataclass(frozen=True)
class InputConfig:
    timezone: str
    broker_id_pattern: str
    file_patterns: tuple[str, ...]

    @property
    def tz(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)


@dataclass(frozen=True)
class KafkaConfig:
    version: str
    coordinator: str


@dataclass(frozen=True)
class BrokerConfig:
    group_min_session_timeout_ms: int
    group_max_session_timeout_ms: int | None
    group_initial_rebalance_delay_ms: int
    group_max_size: int


@dataclass(frozen=True)
class ReplayConfig:
    mode: str
    timer_rule: str
    warm_start: bool
    path: str
    late_tolerance_ms: int
    bucket_ms: int
    max_rows_per_call: int
    fast_path_min_groups: int
    cooperative_protocols: tuple[str, ...]
    follow_up_window_ms: int
    order_search_exhaustive_max: int
    order_search_max: int


@dataclass(frozen=True)
class ValidationConfig:
    min_agreement: float
    completion_tolerance_ms: int


@dataclass(frozen=True)
class ReportConfig:
    great_expectations: bool


REDACTABLE = ("principal", "client_address", "client_id")


@dataclass(frozen=True)
class OutputConfig:
    redact: tuple[str, ...]


@dataclass(frozen=True)
class Config:
    storage: StorageConfig
    spark: SparkConfig
    input: InputConfig
    kafka: KafkaConfig
    broker: BrokerConfig
    replay: ReplayConfig
    validation: ValidationConfig
    report: ReportConfig
    output: OutputConfig
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    audit: AuditSettings = field(default_factory=AuditSettings)

    def coordinator_config(self) -> CoordinatorConfig:
        """The coordinator model's configuration for this run."""
        kwargs: dict[str, Any] = {
            "kafka_version": self.kafka.version,
            "implementation": None if self.kafka.coordinator == "auto" else self.kafka.coordinator,
            "group_min_session_timeout_ms": self.broker.group_min_session_timeout_ms,
            "group_max_session_timeout_ms": self.broker.group_max_session_timeout_ms,
            "group_initial_rebalance_delay_ms": self.broker.group_initial_rebalance_delay_ms,
            "group_max_size": self.broker.group_max_size,
            "mode": self.replay.mode,
            "warm_start": self.replay.warm_start,
        }
        if self.replay.timer_rule != "auto":
            kwargs["timer_rule"] = self.replay.timer_rule
        return CoordinatorConfig(**kwargs)


def default_yaml() -> dict[str, Any]:
    text = resources.files("conf").joinpath("default.yaml").read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    assert isinstance(data, dict)
    return data


def _merge(base: dict[str, Any], override: Mapping[str, Any], prefix: str = "") -> None:
    for key, value in override.items():
        dotted = f"{prefix}{key}"
        if key not in base:
            raise ConfigError(
                f"config: unknown key {dotted!r} (known under {prefix or 'top level'}: "
                f"{', '.join(sorted(base))})"
            )
        if isinstance(base[key], dict):
            if not isinstance(value, Mapping):
                raise ConfigError(f"config: {dotted} must be a mapping, got {value!r}")
            if dotted == "spark.extra":  # free-form Spark settings
                base[key].update({str(k): v for k, v in value.items()})
            else:
                _merge(base[key], value, dotted + ".")
        else:
            base[key] = value


def _set_dotted(data: dict[str, Any], assignment: str) -> None:
    key, sep, raw_value = assignment.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"config: --set expects key=value, got {assignment!r}")
    value = yaml.safe_load(raw_value) if raw_value.strip() else ""
    section, _, rest = key.partition(".")
    if section not in data:
        raise ConfigError(f"config: unknown key {key!r} (sections: {', '.join(sorted(data))})")
    if not rest:
        raise ConfigError(f"config: --set {key}=… names a whole section; give a key inside it")
    if section == "broker":  # Kafka property names contain dots: keep them whole
        _merge(data["broker"], {rest: value}, "broker.")
        return
    if section == "spark" and rest.startswith("extra."):
        data["spark"]["extra"][rest[len("extra.") :]] = str(value)
        return
    parts = rest.split(".")
    nested: Any = value
    for part in reversed(parts):
        nested = {part: nested}
    _merge(data[section], nested, section + ".")


def _get(data: Mapping[str, Any], path: str) -> Any:
    """Value at a dotted path; under ``broker.`` the rest is one Kafka property name."""
    if path.startswith("broker."):
        return data["broker"][path[len("broker.") :]]
    cur: Any = data
    for part in path.split("."):
        cur = cur[part]
    return cur


def _int(data: Mapping[str, Any], path: str, *, minimum: int | None = None, optional: bool = False) -> Any:
    v = _get(data, path)
    if v is None and optional:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        if isinstance(v, str) and re.fullmatch(r"-?\d+", v.strip()):
            v = int(v)
        else:
            raise ConfigError(f"config: {path} must be an integer, got {v!r}")
    if minimum is not None and v < minimum:
        raise ConfigError(f"config: {path} must be ≥ {minimum}, got {v}")
    return v


def _choice(data: Mapping[str, Any], path: str, choices: Sequence[str]) -> str:
    v = _get(data, path)
    v = str(v) if isinstance(v, int | float) and not isinstance(v, bool) else v
    if v not in choices:
        raise ConfigError(f"config: {path} must be one of {', '.join(choices)} (got {v!r})")
    return str(v)


def _bool(data: Mapping[str, Any], path: str) -> bool:
    v = _get(data, path)
    if not isinstance(v, bool):
        raise ConfigError(f"config: {path} must be true or false, got {v!r}")
    return v


def _str(data: Mapping[str, Any], path: str) -> str:
    v = _get(data, path)
    if not isinstance(v, str) or not v:
        raise ConfigError(f"config: {path} must be a non-empty string, got {v!r}")
    return v


def _str_list(data: Mapping[str, Any], path: str) -> tuple[str, ...]:
    v = _get(data, path)
    if isinstance(v, str):
        v = [s.strip() for s in v.split(",") if s.strip()]
    if not isinstance(v, list) or not all(isinstance(s, str) for s in v):
        raise ConfigError(f"config: {path} must be a list of strings, got {v!r}")
    return tuple(v)


def _redact(data: Mapping[str, Any]) -> tuple[str, ...]:
    fields = _str_list(data, "output.redact")
    unknown = [f for f in fields if f not in REDACTABLE]
    if unknown:
        raise ConfigError(
            f"config: output.redact: {', '.join(unknown)} cannot be redacted "
            f"(choose from {', '.join(REDACTABLE)})"
        )
    return tuple(sorted(set(fields)))


def _kafka_version(data: Mapping[str, Any]) -> str:
    v = _get(data, "kafka.version")
    v = f"{v:.1f}" if isinstance(v, float) else str(v)
    m = re.fullmatch(r"(\d+)\.(\d+)(?:\.\d+)?", v.strip())
    if not m or f"{m.group(1)}.{m.group(2)}" not in KAFKA_VERSIONS:
        raise ConfigError(
            f"config: kafka.version must be one of {', '.join(KAFKA_VERSIONS)} "
            f"(patch levels allowed, e.g. 2.8.1), got {v!r}"
        )
    return v.strip()


def build_config(data: dict[str, Any]) -> Config:
    tz = _str(data, "input.timezone")
    try:
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(
            f"config: input.timezone {tz!r} is not a known time zone "
            "(use an IANA name such as UTC or Europe/Berlin)"
        ) from None
    pattern = _str(data, "input.broker_id_pattern")
    try:
        compiled = re.compile(pattern)
    except re.error as e:
        raise ConfigError(f"config: input.broker_id_pattern is not a valid regex: {e}") from None
    if "broker_id" not in compiled.groupindex:
        raise ConfigError("config: input.broker_id_pattern needs a named group (?P<broker_id>...)")
    min_agreement = _get(data, "validation.min_agreement")
    if (
        isinstance(min_agreement, bool)
        or not isinstance(min_agreement, int | float)
        or not 0 <= min_agreement <= 1
    ):
        raise ConfigError(
            f"config: validation.min_agreement must be a number in [0, 1], got {min_agreement!r}"
        )
    extra = _get(data, "spark.extra")
    if not isinstance(extra, dict):
        raise ConfigError(f"config: spark.extra must be a mapping, got {extra!r}")
    min_sto = _int(data, "broker.group.min.session.timeout.ms", minimum=0)
    max_sto = _int(data, "broker.group.max.session.timeout.ms", minimum=0, optional=True)
    if max_sto is not None and max_sto < min_sto:
        raise ConfigError(
            "config: broker.group.max.session.timeout.ms must be ≥ group.min.session.timeout.ms"
        )
    return Config(
        storage=StorageConfig(
            engine=_choice(data, "storage.engine", ENGINES),
            warehouse=_str(data, "storage.warehouse"),
            lock_wait_s=_int(data, "storage.lock_wait_s", minimum=0),
        ),
        spark=SparkConfig(
            master=_str(data, "spark.master"),
            driver_memory=_str(data, "spark.driver_memory"),
            shuffle_partitions=_int(data, "spark.shuffle_partitions", minimum=1),
            extra={str(k): str(v) for k, v in extra.items()},
        ),
        input=InputConfig(
            timezone=tz, broker_id_pattern=pattern, file_patterns=_str_list(data, "input.file_patterns")
        ),
        kafka=KafkaConfig(
            version=_kafka_version(data),
            coordinator=_choice(data, "kafka.coordinator", ("auto", "scala", "java")),
        ),
        broker=BrokerConfig(
            group_min_session_timeout_ms=min_sto,
            group_max_session_timeout_ms=max_sto,
            group_initial_rebalance_delay_ms=_int(data, "broker.group.initial.rebalance.delay.ms", minimum=0),
            group_max_size=_int(data, "broker.group.max.size", minimum=1),
        ),
        replay=ReplayConfig(
            mode=_choice(data, "replay.mode", ("track", "predict")),
            timer_rule=_choice(data, "replay.timer_rule", ("auto", "strict", "inclusive")),
            warm_start=_bool(data, "replay.warm_start"),
            path=_choice(data, "replay.path", ("auto", "stateful", "fast")),
            late_tolerance_ms=_int(data, "replay.late_tolerance_ms", minimum=0),
            bucket_ms=_int(data, "replay.bucket_ms", minimum=1000),
            max_rows_per_call=_int(data, "replay.max_rows_per_call", minimum=1000),
            fast_path_min_groups=_int(data, "replay.fast_path_min_groups", minimum=0),
            cooperative_protocols=_str_list(data, "replay.cooperative_protocols"),
            follow_up_window_ms=_int(data, "replay.follow_up_window_ms", minimum=0),
            order_search_exhaustive_max=_int(data, "replay.order_search_exhaustive_max", minimum=1),
            order_search_max=_int(data, "replay.order_search_max", minimum=1),
        ),
        validation=ValidationConfig(
            min_agreement=float(min_agreement),
            completion_tolerance_ms=_int(data, "validation.completion_tolerance_ms", minimum=0),
        ),
        report=ReportConfig(great_expectations=_bool(data, "report.great_expectations")),
        output=OutputConfig(redact=_redact(data)),
        raw=copy.deepcopy(data),
        audit=_audit(data),
    )


def _audit(data: Mapping[str, Any]) -> AuditSettings:
    try:
        return parse_audit_settings(data.get("audit"))
    except AuditConfigError as e:
        raise ConfigError(str(e)) from None


def load_config(
    conf_files: Sequence[str | Path] = (), overrides: Sequence[str] = (), warehouse: str | None = None
) -> Config:
    """Defaults, then each ``--conf`` file in order, then each ``--set``, then ``--warehouse``."""
    data = default_yaml()
    for f in conf_files:
        path = Path(f)
        if not path.is_file():
            raise ConfigError(f"config: --conf file {str(path)!r} does not exist")
        try:
            loaded = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            where = f" line {mark.line + 1}" if mark is not None else ""
            raise ConfigError(f"config: {path}{where}: not valid YAML ({getattr(e, 'problem', e)})") from None
        if not isinstance(loaded, dict):
            raise ConfigError(f"config: {path} must hold a mapping at the top level")
        _merge(data, loaded)
    for assignment in overrides:
        _set_dotted(data, assignment)
    if warehouse:
        data["storage"]["warehouse"] = warehouse
    return build_config(data)
