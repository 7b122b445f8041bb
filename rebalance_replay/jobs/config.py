"""Typed configuration, every key declared ONCE here: ``--conf FILE`` + ``--set key=value`` over the
declared defaults, validated at start-up.

Each key is a field of a section dataclass below: name, type (``Literal`` for choices), default,
validator (``minimum=``, ``bounds=``, ``check=``) and doc (see :mod:`rebalance_replay.jobs.settings`).
``rebalance_replay/conf/default.yaml`` and ``docs/config.md`` are generated from it: ``python -m
rebalance_replay.jobs.config``.
Every problem (unknown key, wrong type, bad value) is a :class:`ConfigError` with a one-line message
naming the key, e.g. ``config: replay.mode must be one of track, predict (got 'tracking')``.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml

from rebalance_replay.jobs.delta.base import EngineChoice
from rebalance_replay.jobs.errors import (
    ConfigError as ConfigError,  # declared with the other user-facing errors
)
from rebalance_replay.jobs.paths import absolute_location
from rebalance_replay.jobs.settings import build, defaults, render_markdown, render_yaml, section, setting
from rebalance_replay.transforms.audit.config import AuditSettings
from rebalance_replay.transforms.audit.registry import catalogue_markdown
from rebalance_replay.transforms.coordinator.config import CoordinatorConfig, Implementation, Mode, TimerRule
from rebalance_replay.transforms.kafka_version import KAFKA_LINES, parse_kafka_version

#: ``replay.path``: ``stateful`` (applyInPandasWithState streaming), ``fast`` (sorted mapInArrow), or
#: ``auto`` (the fast path above ``replay.fast_path_min_groups`` groups).
ReplayPath = Literal["auto", "stateful", "fast"]
#: Values ``output.redact`` can replace by keyed hashes.
REDACTABLE = ("principal", "client_address", "client_id")


# ---- validators beyond the type ------------------------------------------------------------------


def _timezone(path: str, tz: str) -> str:
    try:
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(
            f"config: {path} {tz!r} is not a known time zone (use an IANA name such as UTC or Europe/Berlin)"
        ) from None
    return tz


def _warehouse(path: str, location: str) -> str:
    if not location.strip():
        raise ConfigError(f"config: {path} must not be empty")
    return absolute_location(location)


def _database(path: str, name: str) -> str:
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?", name):
        raise ConfigError(
            f"config: {path} {name!r} is not a database name (letters, digits, _; catalog.database allowed)"
        )
    return name


def _broker_id_pattern(path: str, pattern: str) -> str:
    try:
        compiled = re.compile(pattern)
    except re.error as e:
        raise ConfigError(f"config: {path} is not a valid regex: {e}") from None
    if "broker_id" not in compiled.groupindex:
        raise ConfigError(f"config: {path} needs a named group (?P<broker_id>...)")
    return pattern


def _kafka_version(path: str, raw: Any) -> str:
    v = f"{raw:.1f}" if isinstance(raw, float) else str(raw)
    try:
        major, minor, _ = parse_kafka_version(v, strict=True)
    except ValueError:
        major = minor = -1
    if f"{major}.{minor}" not in KAFKA_LINES:
        raise ConfigError(
            f"config: {path} must be one of {', '.join(KAFKA_LINES)} "
            f"(patch levels allowed, e.g. 2.8.1), got {v!r}"
        )
    return v.strip()


def _redact(path: str, fields: tuple[str, ...]) -> tuple[str, ...]:
    unknown = [f for f in fields if f not in REDACTABLE]
    if unknown:
        raise ConfigError(
            f"config: {path}: {', '.join(unknown)} cannot be redacted (choose from {', '.join(REDACTABLE)})"
        )
    return tuple(sorted(set(fields)))


# ---- the declaration -----------------------------------------------------------------------------


@dataclass(frozen=True)
class StorageConfig:
    """Where and how the warehouse's Delta tables are kept."""

    engine: EngineChoice = setting(
        "auto",
        "auto: delta-spark when Delta's JVM classes are on the classpath (clusters, Databricks), else "
        "delta-rs (embedded default: Spark writes parquet, delta-rs commits the Delta log).",
    )
    warehouse: str = setting(
        "./warehouse",
        "The warehouse folder (or URI); --warehouse DIR overrides. A local path is made absolute against "
        "the driver's working folder before any executor sees it.",
        check=_warehouse,
    )
    delta_spark_package: str | None = setting(
        None,
        "Maven coordinate of Delta's jars for the delta-spark engine (a locally built session fetches them "
        "from Maven Central through spark.jars.packages); null: the Delta release for this pyspark "
        "(io.delta:delta-spark_4.2_2.13:4.4.0).",
    )
    delta_spark_ivy: str | None = setting(
        None,
        "Ivy cache folder for those jars (spark.jars.ivy); null: Spark's default (~/.ivy2.5.2).",
    )
    database: str | None = setting(
        None,
        "Register every table in the Spark catalog under this database (CREATE TABLE … USING delta "
        "LOCATION …), so SQL reads them by name: SELECT * FROM rr.findings. --database overrides; null: "
        "no registration. A locally built session keeps its catalog in <warehouse>/_catalog (Spark's "
        "embedded Hive metastore); on a cluster, the cluster's catalog (docs/delta.md).",
        check=_database,
    )
    lock_wait_s: int = setting(
        0,
        "One run writes a warehouse at a time (a lock file, <warehouse>/_lock). A second run fails at "
        "once with a message naming the first, or waits up to this many seconds for it to finish.",
        minimum=0,
    )


@dataclass(frozen=True)
class MaintainConfig:
    """``rebalance-replay maintain``: keeping the Delta tables tidy."""

    retention_hours: int = setting(
        168,
        "VACUUM deletes data files no version younger than this needs (Delta's default: 7 days). A "
        "shorter retention is raised to what a reader still needs: the oldest version the incremental "
        "feed has not consumed, and the versions an --as-of reader would ask for within it.",
        minimum=0,
    )
    target_file_mb: int = setting(
        128,
        "Compaction rewrites a partition's files smaller than this into files of about this size.",
        minimum=1,
    )


@dataclass(frozen=True)
class SparkConfig:
    """The local Spark session (ignored when a session already exists: spark-submit, Databricks)."""

    master: str = setting("local[*]", "Spark master of a local session.")
    driver_memory: str = setting("6g", "spark.driver.memory of a local session.")
    shuffle_partitions: int = setting(8, "spark.sql.shuffle.partitions.", minimum=1)
    extra: dict[str, str] = setting({}, "Any further spark.* settings for a local session.")


@dataclass(frozen=True)
class InputConfig:
    """Finding and reading the broker request-log files."""

    timezone: str = setting("UTC", "The broker JVM's zone of the log timestamps.", check=_timezone)
    broker_id_pattern: str = setting(
        "(?P<broker_id>[^/]+)/[^/]+$",
        "Regex applied to the file path (with / separators); group broker_id names the broker. Default: "
        "the parent directory name, e.g. logs/broker-1/kafka-request.log -> broker-1.",
        check=_broker_id_pattern,
    )
    file_patterns: tuple[str, ...] = setting(
        ("kafka-request.log", "*.log", "*.log.*"),
        "File names taken from directories (fnmatch): the live files (kafka-request.log, server.log, ...) "
        "and their rotations (server.log.2024-05-01-10, kafka-request.log.1), gzipped or not.",
    )
    columnar_json: bool = setting(
        True,
        "Type the routine JSON-era lines (Heartbeat, OffsetCommit as the broker writes them) a block at a "
        "time with Arrow instead of one parse_line call a line; every other line still goes through "
        "parse_line. The rows are the same either way (false: every line through parse_line).",
    )
    max_slice_bytes: int = setting(
        128 << 20,
        "A rotated uncompressed file larger than this is read by several Spark tasks, in slices of about "
        "this many bytes cut at line starts (a gzipped file, or the live file still being written: one "
        "task).",
        minimum=1 << 20,
    )

    @property
    def tz(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)


@dataclass(frozen=True)
class KafkaConfig:
    """The Kafka release whose coordinator behaviour is modelled."""

    version: str = setting(
        "3.7",
        f"{KAFKA_LINES[0]} ... {KAFKA_LINES[-1]}, patch levels allowed (2.8.1); a bare X.Y is the line's "
        "last patch.",
        parse=_kafka_version,
    )
    coordinator: Literal["auto", Implementation] = setting(
        "auto", "auto (Kafka's default for the version: java from 4.0) | scala | java."
    )


@dataclass(frozen=True)
class BrokerConfig:
    """Broker settings, under Kafka's own property names: --set broker.group.initial.rebalance.delay.ms=0"""

    group_min_session_timeout_ms: int = setting(
        6000, "Smallest session timeout a member may ask for.", name="group.min.session.timeout.ms", minimum=0
    )
    group_max_session_timeout_ms: int | None = setting(
        None,
        "Largest session timeout; null: the version's default (300000 up to 2.2, 1800000 from 2.3).",
        name="group.max.session.timeout.ms",
        minimum=0,
    )
    group_initial_rebalance_delay_ms: int = setting(
        3000,
        "Delay of the first rebalance of an empty group.",
        name="group.initial.rebalance.delay.ms",
        minimum=0,
    )
    group_max_size: int = setting(
        2147483647, "Most members a group may have.", name="group.max.size", minimum=1
    )

    def __post_init__(self) -> None:
        mx = self.group_max_session_timeout_ms
        if mx is not None and mx < self.group_min_session_timeout_ms:
            raise ConfigError(
                "config: broker.group.max.session.timeout.ms must be ≥ group.min.session.timeout.ms"
            )


@dataclass(frozen=True)
class ReplayConfig:
    """Replaying each group's requests through the coordinator model."""

    mode: Mode = setting("track", "track (reconcile with observed responses) | predict (pure model).")
    timer_rule: Literal["auto", TimerRule] = setting(
        "auto", "auto (the real broker) | strict (Scala tests) | inclusive (Java tests)."
    )
    warm_start: bool = setting(
        True,
        "Groups may already run when the logs start: the model starts unconfident and infers the "
        "members it has not seen join.",
    )
    path: ReplayPath = setting(
        "auto", "auto | stateful (applyInPandasWithState streaming) | fast (sorted mapInArrow)."
    )
    late_tolerance_ms: int = setting(
        600000,
        "Rows may land late (rotated files from other brokers, long-parked JoinGroups complete minutes "
        "after they arrive). Incremental runs only finalise events older than the newest completion time "
        "minus this.",
        minimum=0,
    )
    bucket_ms: int = setting(
        3600000,
        "Each run's new rows are replayed in arrival-time buckets of this size, one micro-batch each, so "
        "a large group never has to fit in memory at once (a batch stateful replay whose every group "
        "fits max_rows_per_call goes in one micro-batch).",
        minimum=1000,
    )
    max_rows_per_call: int = setting(
        200000,
        "...halved per run until no group has more than this many rows in one bucket (one stateful call).",
        minimum=1000,
    )
    fast_path_min_groups: int = setting(
        2000, "path=auto uses the fast path above this many groups.", minimum=0
    )
    max_group_members: int = setting(
        5000,
        "A group with more members at once than this (members that joined and, KIP-394, joiners given a "
        "member id that have not come back with it) is refused: its requests from then on are not "
        "replayed, the run says so in one line (summary.json refused_groups) and goes on with the other "
        "groups. A member-id-required storm of thousands of joiners a second would otherwise hold a Python "
        "worker for hours: the replay's cost per request grows with the group. 0: no limit.",
        minimum=0,
    )
    bulk: bool = setting(
        True,
        "Bulk validation of routine traffic: runs of heartbeats and offset commits answered NONE are "
        "validated as columns, taken by the model at once when it can show each would be accepted (a "
        "known member of the Stable generation, no timer firing in between), one by one otherwise. The "
        "output is the same either way; false sends every request through the model one by one.",
    )
    bulk_min_rows: int = setting(
        128,
        "...only for a call (a group's rows in one micro-batch or fast-path group) of at least this many "
        "rows: below it, taking the rows one by one costs less than setting up columns (a quiet group of "
        "a few dozen requests: ~4.6 ms against ~8 ms of CPU; benchmarks/README.md). The output is the "
        "same either way.",
        minimum=0,
    )
    cooperative_protocols: tuple[str, ...] = setting(
        ("cooperative-sticky",),
        "Assignment protocols under which a member's rejoin soon after a rebalance is a cooperative "
        "follow-up (the second rebalance of an incremental reassignment).",
    )
    follow_up_window_ms: int = setting(
        10000,
        "A cooperative member's rejoin within this long of the previous rebalance's Stable time marks "
        "the new rebalance as a cooperative follow-up.",
        minimum=0,
    )
    order_search_exhaustive_max: int = setting(
        6,
        "Requests logged in the same instant are ordered by connection, causality and, among the orders "
        "still possible, the one that agrees with the observed answers (the stable order when it does), "
        "found by a best-first search that the answers prune, each whole order also scored on the group's "
        "requests that follow (replay.order_search_lookahead_max); its budget is every prefix of every "
        "order of this many requests (6 -> 1956 placements) plus n² for a tie set of n. An order the log "
        "leaves open is reported ambiguous.",
        minimum=1,
    )
    order_search_max: int = setting(
        64, "No order search above this many tied requests (then the stable key decides).", minimum=1
    )
    order_search_lookahead_max: int = setting(
        64,
        "An order of requests logged in the same instant is also scored on at most this many of the "
        "group's following requests: those up to when the last answer of the tie set, and of the next "
        "JoinGroups, SyncGroups and LeaveGroups, was logged (an order that explains the instant's answers "
        "but not the later ones loses). 0: the instant's own answers only.",
        minimum=0,
    )
    infer_broker: bool = setting(
        True,
        "What the log tells about the broker is used: its Kafka version and coordinator (API_VERSIONS "
        "answers, the log era and request versions, server.log beside the request log) and the group.* "
        "settings its answers reveal (group.max.size from GROUP_MAX_SIZE_REACHED, the session-timeout "
        "bounds from INVALID_SESSION_TIMEOUT, the initial rebalance delay from first join phases). A "
        "configured value the log allows is kept; one the log contradicts, configured or default, is "
        "replaced by the log's and reported (summary.json broker.contradictions, a CLI line). false: "
        "the configured values are used as given; contradictions are still reported.",
    )


@dataclass(frozen=True)
class ValidationConfig:
    """Predicted against observed responses."""

    min_agreement: float = setting(
        0.99, "Share of predictions that must agree with the observed responses.", bounds=(0, 1)
    )
    completion_tolerance_ms: int = setting(
        5, "Predicted and observed completion times this close (ms) still agree (log rounding).", minimum=0
    )
    broker_lag_ms: int = setting(
        200,
        "A JoinGroup/SyncGroup answer may leave the broker's coordinator up to this much later (ms) than the "
        "model's instant and still agree (the broker's own processing: appends, timer threads, GC); never "
        "earlier beyond completion_tolerance_ms and line_lag_ms. A coordinator timer due up to this much "
        "before a request may also be taken as firing after it, or after the next few, when only that "
        "explains the broker's answers (a late timer thread).",
        minimum=0,
    )
    line_lag_ms: int = setting(
        5,
        "A request's arrival is its line's time less totalTimeMs, and the request logger writes a line a "
        "little after the request ended (under load, behind the other lines of a burst of answers: 6 ms seen "
        "on a loaded 4.4 broker): a JoinGroup/SyncGroup answer may come up to this much (ms) earlier than a "
        "model instant anchored on such an arrival, beyond completion_tolerance_ms, and still agree.",
        minimum=0,
    )


@dataclass(frozen=True)
class ReportConfig:
    """Reports."""

    great_expectations: bool = setting(True, "Run the Great Expectations checkpoints and write Data Docs.")
    gx_keep_results: int = setting(
        72,
        "Great Expectations keeps the results of this many last checks of each suite, and their Data Docs "
        "pages; older ones are deleted before the Data Docs are built (a page is ~180 KB: 30 days of "
        "hourly runs kept ~390 MB, and an index listing 2,160 checks). 0: keep every one.",
        minimum=0,
    )
    max_group_members: int = setting(
        2000,
        "A group whose page would draw more member ids than this (each a lane, or a span on one: a "
        "member-id-required storm gives every joiner an id) gets no page: the overview and the run say "
        "why in one line (summary.json refused_groups), its rows stay in the tables and every other group "
        "gets its page. 0: no limit.",
        minimum=0,
    )
    overview_max_groups: int = setting(
        500,
        "The overview's timeline and group tables show at most this many groups (those with the most time "
        "rebalancing; the worst findings); every group still has its page and report.json lists them all. "
        "0: every group.",
        minimum=0,
    )


@dataclass(frozen=True)
class OutputConfig:
    """What is written."""

    redact: tuple[str, ...] = setting(
        (),
        "Values replaced by keyed hashes (stable within a warehouse, so joins still work) in every table, "
        f"report and summary, before anything is written: any of {', '.join(REDACTABLE)}. Fixed when a "
        "warehouse is created. --set output.redact=principal,client_address,client_id",
        check=_redact,
    )


@dataclass(frozen=True)
class Config:
    storage: StorageConfig = section(StorageConfig)
    spark: SparkConfig = section(SparkConfig)
    maintain: MaintainConfig = section(MaintainConfig)
    input: InputConfig = section(InputConfig)
    kafka: KafkaConfig = section(KafkaConfig)
    broker: BrokerConfig = section(BrokerConfig)
    replay: ReplayConfig = section(ReplayConfig)
    validation: ValidationConfig = section(ValidationConfig)
    report: ReportConfig = section(ReportConfig)
    output: OutputConfig = section(OutputConfig)
    audit: AuditSettings = section(AuditSettings)
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

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


# ---- loading -------------------------------------------------------------------------------------


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


def build_config(data: dict[str, Any]) -> Config:
    """The typed configuration of YAML-shaped ``data`` (every key present), validated."""
    config: Config = build(Config, data)
    return Config(**{**{f: getattr(config, f) for f in _SECTIONS}, "raw": copy.deepcopy(data)})


_SECTIONS = tuple(defaults(Config))


def load_config(
    conf_files: Sequence[str | Path] = (), overrides: Sequence[str] = (), warehouse: str | None = None
) -> Config:
    """Defaults, then each ``--conf`` file in order, then each ``--set``, then ``--warehouse``."""
    data = defaults(Config)
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


def from_mapping(loaded: Mapping[str, Any]) -> Config:
    """The defaults overlaid with ``loaded`` (shaped as the YAML file), every key validated."""
    data = defaults(Config)
    _merge(data, dict(loaded))
    return build_config(data)


# ---- generated files -----------------------------------------------------------------------------

YAML_HEADER = """rebalance-replay defaults. Override with --conf FILE (same shape, any subset) and
--set key=value. Broker settings use Kafka's own property names:
--set broker.group.initial.rebalance.delay.ms=0
Generated from rebalance_replay/jobs/config.py (python -m rebalance_replay.jobs.config);
do not edit by hand."""

DOC_INTRO = (
    "Generated from the declaration in `rebalance_replay/jobs/config.py` (`python -m "
    "rebalance_replay.jobs.config`); do not edit by hand. "
    "Defaults are in `rebalance_replay/conf/default.yaml`; override with `--conf FILE` (same shape, any "
    "subset) and "
    "`--set key=value` (e.g. `--set broker.group.initial.rebalance.delay.ms=0`)."
)


def default_yaml_text() -> str:
    """``rebalance_replay/conf/default.yaml``."""
    return render_yaml(Config, YAML_HEADER)


def config_markdown() -> str:
    """``docs/config.md``."""
    return render_markdown(Config, "Configuration", DOC_INTRO)


def write_generated(root: Path) -> list[Path]:
    """Regenerate ``rebalance_replay/conf/default.yaml``, ``docs/config.md`` and ``docs/audit-rules.md``
    (the rule registry's catalogue) under the checkout ``root``."""
    out = []
    for rel, text in (
        ("rebalance_replay/conf/default.yaml", default_yaml_text()),
        ("docs/config.md", config_markdown()),
        ("docs/audit-rules.md", catalogue_markdown()),
    ):
        path = root / rel
        path.write_text(text, encoding="utf-8")
        out.append(path)
    return out


if __name__ == "__main__":  # pragma: no cover
    for written in write_generated(Path(__file__).resolve().parents[2]):
        print(f"wrote {written}")
