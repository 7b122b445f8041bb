"""The terminal speaks plainly (issue 28): a whole `run` in a fresh process (its own JVM, as a user
starts it) prints the product's lines on stderr and nothing of Spark's logging — no WARN line, no
start-up notices — and ends with what to do next; `--verbose` lets Spark's warnings through."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]

RECORDING = Path(__file__).resolve().parent.parent / "data" / "real-kafka" / "3.7" / "held"
#: The JVM's own notice for the Vector API module Spark's launcher always adds: not Spark's logging.
JVM_NOTICE = "WARNING: Using incubator modules: jdk.incubator.vector"
SPARK_NOISE = re.compile(r"\b(WARN|INFO|DEBUG)\b|log4j|Setting (default|Spark) log level|setLogLevel")


def _run(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "rebalance_replay.jobs.cli", "run", "--input", str(RECORDING)]
    return subprocess.run(
        [*cmd, "--warehouse", str(tmp_path / "wh"), *extra],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=tmp_path,
    )


def test_a_run_prints_no_spark_logging(tmp_path: Path) -> None:
    done = _run(tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [line for line in done.stderr.splitlines() if line.strip() and line != JVM_NOTICE]
    noise = [line for line in lines if SPARK_NOISE.search(line)]
    assert noise == [], noise
    assert all(re.match(r"(storage|ingest|replay|validate|audit|next): ", line) for line in lines), lines
    assert lines[-1].startswith("next: open ") and lines[-1].endswith("in a browser (it works offline)")


def test_verbose_lets_sparks_warnings_through(tmp_path: Path) -> None:
    """The same code path with --verbose: Spark's own WARN lines reach stderr again (the quiet default
    is a level, not lost output)."""
    done = _run(tmp_path, "--verbose")
    assert done.returncode == 0, done.stderr[-2000:]
    assert re.search(r"\bWARN\b", done.stderr), done.stderr[-2000:]
