"""One error base class: user-facing errors carry their exit code and one-line message; the CLI
matches them by isinstance and never shows a stack trace for them."""

from __future__ import annotations

from pathlib import Path

import pytest

from rebalance_replay.jobs import errors
from rebalance_replay.jobs.cli import main
from rebalance_replay.jobs.errors import EXIT_RUNTIME, EXIT_USAGE, UserError, is_user_facing, user_message

USAGE = (errors.UsageError, errors.ConfigError, errors.InputError)
RUNTIME = (
    errors.MissingTableError,
    errors.WarehouseBusyError,
    errors.WarehouseVersionError,
    errors.HistoryUnavailableError,
    errors.DamagedTableError,
)


@pytest.mark.parametrize("cls", USAGE + RUNTIME, ids=lambda c: c.__name__)
def test_user_errors_carry_exit_code_and_first_line(cls: type[UserError]) -> None:
    e = cls("first line\nsecond line")
    assert is_user_facing(e)
    assert e.exit_code == (EXIT_USAGE if cls in USAGE else EXIT_RUNTIME)
    assert e.message == user_message(e) == "first line"


def test_special_constructors_and_kept_builtin_bases() -> None:
    feature = errors.TableFeatureError("t", "/w/t", ["deletionVectors"], "delta-rs", "read")
    assert isinstance(feature, RuntimeError) and is_user_facing(feature)
    assert "deletionVectors" in feature.message and "\n" not in feature.message
    java = errors.JavaMissingError("JAVA_HOME=/nope")
    assert java.message.startswith(errors.JAVA_MISSING_MESSAGE) and java.exit_code == EXIT_RUNTIME
    assert isinstance(errors.ConfigError("x"), ValueError) and isinstance(errors.InputError("x"), ValueError)


def test_a_class_named_like_a_user_error_is_not_one() -> None:
    ConfigError = type("ConfigError", (RuntimeError,), {})  # same name, not our class: not trusted
    e = ConfigError("at org.apache.Foo\nboom")
    assert not is_user_facing(e)
    assert user_message(e) == "ConfigError: boom"  # reduced like any foreign error (JVM frame dropped)
    assert user_message(RuntimeError("\n  at x.y\nreal cause\n")) == "RuntimeError: real cause"


def test_cli_bad_set_is_one_line_naming_the_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["replay", "--warehouse", str(tmp_path / "wh"), "--set", "replay.bucket_ms=5", "--debug"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == EXIT_USAGE
    assert err == ["rebalance-replay: error: config: replay.bucket_ms must be ≥ 1000, got 5"]


def test_cli_runtime_user_error_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import rebalance_replay.jobs.cli as cli

    def missing(args: object, config: object) -> int:
        raise errors.MissingTableError("validate: table 'predictions' does not exist: run replay first")

    monkeypatch.setitem(cli.COMMANDS, "validate", missing)
    code = main(["validate", "--warehouse", str(tmp_path / "wh")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == EXIT_RUNTIME
    assert err[-1] == (
        "rebalance-replay: error: validate: table 'predictions' does not exist: run replay first"
    )
    assert not any("Traceback" in line for line in err)
