"""Config: defaults load and validate; --conf/--set override; unknown keys and bad values are one-liners."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from rebalance_replay.jobs.config import ConfigError, load_config
from rebalance_replay.jobs.settings import build, defaults, keys, render_yaml, section, setting


def test_defaults_load() -> None:
    c = load_config()
    assert c.storage.engine == "auto"
    assert c.input.timezone == "UTC"
    assert c.kafka.version == "3.7"
    assert c.broker.group_initial_rebalance_delay_ms == 3000
    assert c.broker.group_max_session_timeout_ms is None
    assert c.replay.mode == "track"


def test_set_overrides_broker_property_with_dots() -> None:
    c = load_config(
        overrides=[
            "broker.group.initial.rebalance.delay.ms=0",
            "broker.group.max.size=5",
            "kafka.version=2.7",
            "input.timezone=Europe/Berlin",
        ]
    )
    assert c.broker.group_initial_rebalance_delay_ms == 0
    assert c.broker.group_max_size == 5
    assert c.kafka.version == "2.7"
    assert c.input.tz.key == "Europe/Berlin"
    cc = c.coordinator_config()
    assert cc.group_initial_rebalance_delay_ms == 0
    assert cc.kafka_version == "2.7"


def test_conf_file_merges_subset(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text(
        "broker:\n  group.max.size: 3\nreplay:\n  mode: predict\nspark:\n  extra:\n    spark.x: '1'\n"
    )
    c = load_config([f])
    assert c.broker.group_max_size == 3
    assert c.broker.group_initial_rebalance_delay_ms == 3000  # untouched keys keep defaults
    assert c.replay.mode == "predict"
    assert c.spark.extra == {"spark.x": "1"}


def test_warehouse_flag_wins() -> None:
    assert load_config(overrides=["storage.warehouse=/a"], warehouse="/b").storage.warehouse == "/b"


@pytest.mark.parametrize(
    ("override", "fragment"),
    [
        ("replay.nope=1", "unknown key 'replay.nope'"),
        ("nosection.x=1", "unknown key 'nosection.x'"),
        ("broker.group.max.sizes=1", "unknown key 'broker.group.max.sizes'"),
        ("replay.mode=tracking", "replay.mode must be one of track, predict"),
        ("broker.group.max.size=abc", "broker.group.max.size must be an integer"),
        ("broker.group.max.size=0", "broker.group.max.size must be ≥ 1"),
        ("input.timezone=Mars/Olympus", "input.timezone 'Mars/Olympus' is not a known time zone"),
        ("kafka.version=1.1", "kafka.version must be one of"),
        ("storage.engine=parquet", "storage.engine must be one of auto, delta-spark, delta-rs"),
        ("validation.min_agreement=2", "validation.min_agreement must be a number in [0, 1]"),
        ("replay.warm_start=maybe", "replay.warm_start must be true or false"),
        ("input.broker_id_pattern=([a-z]+)", "needs a named group"),
        ("justakey", "--set expects key=value"),
        ("replay=1", "names a whole section"),
    ],
)
def test_bad_overrides_are_one_line_errors(override: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as e:
        load_config(overrides=[override])
    msg = str(e.value)
    assert fragment in msg
    assert "\n" not in msg


def test_missing_and_bad_conf_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_config([tmp_path / "nope.yaml"])
    bad = tmp_path / "bad.yaml"
    bad.write_text("replay: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config([bad])
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text("replay:\n  speed: 3\n")
    with pytest.raises(ConfigError, match=r"unknown key 'replay\.speed'"):
        load_config([unknown])


def test_kafka_patch_version_accepted() -> None:
    assert load_config(overrides=["kafka.version=2.8.1"]).kafka.version == "2.8.1"


def test_bucket_shrinks_until_the_busiest_group_fits() -> None:
    from rebalance_replay.jobs.replay_feed import bucket_ms_for

    hour = 3_600_000
    assert bucket_ms_for(hour, 150_000, 200_000) == hour
    # a 1,000-member group heartbeating every 3 s: ~1.2M requests an hour → three halvings
    assert bucket_ms_for(hour, 1_200_000, 200_000) == hour // 8
    assert bucket_ms_for(hour, 10**12, 200_000) == 1000  # never under a second


# ---------------------------------------------------------------- declared once
# (rebalance_replay/jobs/config.py)
ROOT = Path(__file__).resolve().parents[2]


def test_default_yaml_is_the_declaration() -> None:
    import yaml

    from rebalance_replay.jobs.config import Config, default_yaml_text

    text = (ROOT / "rebalance_replay" / "conf" / "default.yaml").read_text(encoding="utf-8")
    assert text == default_yaml_text(), "run: python -m rebalance_replay.jobs.config"
    assert yaml.safe_load(text) == defaults(Config)


def test_config_docs_are_the_declaration() -> None:
    from rebalance_replay.jobs.config import Config, config_markdown

    docs = (ROOT / "docs" / "config.md").read_text(encoding="utf-8")
    assert docs == config_markdown(), "run: python -m rebalance_replay.jobs.config"
    for key in keys(Config):
        assert key.spec.doc, f"{key.path} has no doc"
        assert f"| `{key.path}` |" in docs


def test_every_key_can_be_set_to_its_default_from_the_command_line() -> None:
    import yaml

    from rebalance_replay.jobs.config import Config

    default = load_config()
    for key in keys(Config):
        if key.path == "spark.extra":
            continue  # spark.extra.<name>=value sets one entry (below)
        raw = key.default if not isinstance(key.default, tuple) else list(key.default)
        text = yaml.safe_dump(raw, default_flow_style=True).removesuffix("\n...\n").strip()
        c = load_config(overrides=[f"{key.path}={text}"])
        assert c == default, key.path
    assert load_config(overrides=["spark.extra.spark.x=1"]).spark.extra == {"spark.x": "1"}


def test_literal_choices_come_from_one_declaration() -> None:
    from typing import get_args

    from rebalance_replay.jobs.cli import build_parser
    from rebalance_replay.jobs.config import ReplayPath

    with pytest.raises(ConfigError, match=r"replay\.path must be one of auto, stateful, fast"):
        load_config(overrides=["replay.path=slow"])
    with pytest.raises(ConfigError, match=r"kafka\.coordinator must be one of auto, scala, java"):
        load_config(overrides=["kafka.coordinator=go"])
    with pytest.raises(ConfigError, match=r"replay\.timer_rule must be one of auto, strict, inclusive"):
        load_config(overrides=["replay.timer_rule=loose"])
    args = build_parser().parse_args(["replay", "--path", "fast"])
    assert args.path == "fast" and get_args(ReplayPath) == ("auto", "stateful", "fast")


@dataclass(frozen=True)
class RuleR01:
    """R01: rebalance storms."""

    max_rebalances_per_hour: int = setting(12, "More rebalances an hour than this is a storm.", minimum=1)


@dataclass(frozen=True)
class Audit:
    """Audit thresholds, one section per rule."""

    R01: RuleR01 = section(RuleR01)


@dataclass(frozen=True)
class WithAudit:
    audit: Audit = section(Audit)


def test_nested_sections_per_rule() -> None:
    """How a per-rule section (e.g. audit.R01.max_rebalances_per_hour) is declared and validated."""
    assert [k.path for k in keys(WithAudit)] == ["audit.R01.max_rebalances_per_hour"]
    data = defaults(WithAudit)
    assert data == {"audit": {"R01": {"max_rebalances_per_hour": 12}}}
    assert build(WithAudit, data).audit.R01.max_rebalances_per_hour == 12
    with pytest.raises(ConfigError, match=r"audit\.R01\.max_rebalances_per_hour must be ≥ 1, got 0"):
        build(WithAudit, {"audit": {"R01": {"max_rebalances_per_hour": 0}}})
    assert "  R01:\n    # More rebalances an hour than this is a storm.\n    max_rebalances_per_hour: 12" in (
        render_yaml(WithAudit, "header")
    )


def test_a_relative_warehouse_is_made_absolute_on_the_driver(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Executors resolve relative paths in their own working folders: the driver fixes them first."""
    monkeypatch.chdir(tmp_path)
    assert load_config(warehouse="wh").storage.warehouse == str(tmp_path / "wh")
    assert load_config().storage.warehouse == str(tmp_path / "warehouse")
    for uri in ("s3://bucket/wh", "abfss://c@a.dfs.core.windows.net/wh", "dbfs:/wh", "file:///x/wh"):
        assert load_config(warehouse=uri).storage.warehouse == uri


def test_database_names_are_checked() -> None:
    assert load_config(overrides=["storage.database=main.rr"]).storage.database == "main.rr"
    with pytest.raises(ConfigError, match=r"storage\.database 'rr; DROP' is not a database name"):
        load_config(overrides=["storage.database=rr; DROP"])


def test_as_of_is_a_version_or_a_time() -> None:
    from rebalance_replay.jobs.cli import build_parser

    parse = build_parser().parse_args
    assert parse(["report", "--as-of", "3"]).as_of == 3
    assert parse(["report", "--as-of", "2024-05-01T10:00Z"]).as_of == ("ms", 1714557600000)
