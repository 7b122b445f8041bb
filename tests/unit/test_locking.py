"""One writer per warehouse, and bad usage stopped before any JVM starts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from rebalance_replay.jobs.cli import main

ROOT = Path(__file__).resolve().parents[2]
HOLD = (
    "import sys, time\n"
    "from rebalance_replay.jobs.locking import warehouse_lock\n"
    "with warehouse_lock(sys.argv[1], 'rebalance-replay run'):\n"
    "    print('held', flush=True)\n"
    "    time.sleep(float(sys.argv[2]))\n"
)


def _holder(wh: Path, seconds: float) -> subprocess.Popen[str]:
    p = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(wh), str(seconds)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        text=True,
    )
    assert p.stdout is not None and p.stdout.readline().strip() == "held"
    return p


@pytest.mark.timeout(60)  # a hang guard, not a measure: a run that waited would wait for the holder forever
def test_a_second_run_fails_fast_naming_the_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The second run does not wait for the lock: the holder keeps it until it is killed, which happens
    only after ``main`` returned — a blocking lock would never return."""
    wh = tmp_path / "wh"
    holder = _holder(wh, 600)
    try:
        assert main(["ingest", "--input", str(tmp_path / "missing"), "--warehouse", str(wh)]) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1
        assert f"is being written by 'rebalance-replay run' (pid {holder.pid}" in err[0]
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    # killed (kill -9): the operating system released the lock, the next run gets it at once
    assert main(["ingest", "--input", str(tmp_path / "missing"), "--warehouse", str(wh)]) == 2
    assert "no such file or directory" in capsys.readouterr().err


def test_a_second_run_can_wait_for_the_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wh = tmp_path / "wh"
    holder = _holder(wh, 2)
    args = ["ingest", "--input", str(tmp_path / "missing"), "--warehouse", str(wh)]
    assert main([*args, "--set", "storage.lock_wait_s=30"]) == 2  # waited, then ran (and found no input)
    assert "no such file or directory" in capsys.readouterr().err
    holder.wait()


def test_bad_usage_fails_before_spark_starts(tmp_path: Path) -> None:
    """Paths, options, time zone, config values: a one-line error and no JVM (no Spark output at all)."""
    cases = [
        ["ingest", "--input", str(tmp_path / "no" / "such"), "--warehouse", str(tmp_path / "wh")],
        [
            "run",
            "--input",
            str(tmp_path),
            "--warehouse",
            str(tmp_path / "wh"),
            "--set",
            "input.timezone=Mars/X",
        ],
        ["replay", "--warehouse", str(tmp_path / "wh"), "--from", "2024-01-02", "--to", "2024-01-01"],
        ["run", "--input", str(tmp_path), "--warehouse", str(tmp_path / "wh"), "--set", "replay.mode=guess"],
    ]
    for args in cases:
        p = subprocess.run(
            [sys.executable, "-m", "rebalance_replay.jobs.cli", *args],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            timeout=60,
        )
        lines = p.stderr.strip().splitlines()
        assert p.returncode == 2 and len(lines) == 1 and lines[0].startswith("rebalance-replay: error:"), (
            args,
            p.stderr,
        )
        assert "Spark" not in p.stderr and "WARN" not in p.stderr
