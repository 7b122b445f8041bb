"""The terminal speaks plainly (issue 28): `--verbose` lets Spark's warnings through. That a `run` in a
fresh process prints nothing of Spark's logging is task 4 of ``test_walkthrough.py`` (two scheduled runs
of the incident sample, each in its own JVM)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from rebalance_replay.jobs.cli import main

pytestmark = [pytest.mark.spark, pytest.mark.slow]

RECORDING = Path(__file__).resolve().parent.parent / "data" / "real-kafka" / "3.7" / "held"


def test_verbose_lets_sparks_warnings_through(tmp_path: Path, spark: object) -> None:
    """The same code path with --verbose: Spark's own WARN lines reach stderr again (the quiet default
    is a level, not lost output). The recording is ingested in this process; the replay (where Spark
    warns) runs in a fresh one, as a user's command does (a whole `run` there took 64 s, stop 52)."""
    wh = tmp_path / "wh"
    assert main(["ingest", "--input", str(RECORDING), "--warehouse", str(wh)]) == 0
    done = subprocess.run(
        [sys.executable, "-m", "rebalance_replay.jobs.cli", "replay", "--warehouse", str(wh), "--verbose"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert re.search(r"\bWARN\b", done.stderr), done.stderr[-2000:]
