"""The terminal speaks plainly (issue 28): `--verbose` lets Spark's warnings through. That a `run` in a
fresh process prints nothing of Spark's logging is task 4 of ``test_walkthrough.py`` (two scheduled runs
of the incident sample, each in its own JVM)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]

RECORDING = Path(__file__).resolve().parent.parent / "data" / "real-kafka" / "3.7" / "held"


def _run(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "rebalance_replay.jobs.cli", "run", "--input", str(RECORDING)]
    cmd += ["--set", "report.great_expectations=false"]  # Spark warns in the replay; GX adds only time
    return subprocess.run(
        [*cmd, "--warehouse", str(tmp_path / "wh"), *extra],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=tmp_path,
    )


def test_verbose_lets_sparks_warnings_through(tmp_path: Path) -> None:
    """The same code path with --verbose: Spark's own WARN lines reach stderr again (the quiet default
    is a level, not lost output)."""
    done = _run(tmp_path, "--verbose")
    assert done.returncode == 0, done.stderr[-2000:]
    assert re.search(r"\bWARN\b", done.stderr), done.stderr[-2000:]
