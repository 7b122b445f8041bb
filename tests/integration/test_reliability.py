"""Crash safety: a run killed at any of its dangerous points (data files written but not committed,
committed but not yet recorded) and run again gives exactly the tables of a clean run; a scheduled
audit whose checkpoint is lost or damaged says so and rebuilds from the tables."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rebalance_replay.jobs.bookkeeping import CRASH_ENV
from rebalance_replay.jobs.cli import main
from tests.helpers import canonical, read_table, sample_warehouse

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "samples" / "logs"
BRONZE = ("requests", "quarantine")
OUTPUTS = ("predictions", "transitions", "rebalances", "member_sessions")
VOLATILE = ("ingested_at",)

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _tables(wh: Path, names: tuple[str, ...]) -> dict[str, list[str]]:
    return {t: canonical(read_table(wh / t), drop=VOLATILE) for t in names}


def _killed(args: list[str], point: str) -> None:
    """Run the CLI in its own process, killed at ``point`` (like kill -9: no cleanup)."""
    p = subprocess.run(
        [sys.executable, "-m", "rebalance_replay.jobs.cli", *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), CRASH_ENV: point},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 137, (point, p.returncode, p.stderr[-2000:])


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory, spark: object) -> Path:
    return sample_warehouse(tmp_path_factory.mktemp("clean") / "wh")


@pytest.mark.parametrize("point", ["commit:requests", "ingest:before_progress"])
def test_ingest_killed_and_rerun_equals_a_clean_run(point: str, clean: Path, tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    args = ["ingest", "--input", str(SAMPLE), "--warehouse", str(wh)]
    _killed(args, point)
    assert main(args) == 0
    assert _tables(wh, BRONZE) == _tables(clean, BRONZE)
    assert not list((wh / "requests").glob("_stage-*"))  # the killed batch's task files are gone
    assert main(args) == 0  # and a third run adds nothing
    assert _tables(wh, BRONZE) == _tables(clean, BRONZE)


@pytest.mark.parametrize("point", ["commit:predictions", "replay:before_manifest"])
def test_replay_killed_and_rerun_equals_a_clean_run(point: str, clean: Path, tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    assert main(["ingest", "--input", str(SAMPLE), "--warehouse", str(wh)]) == 0
    _killed(["replay", "--warehouse", str(wh)], point)
    assert main(["replay", "--warehouse", str(wh)]) == 0
    assert _tables(wh, OUTPUTS) == _tables(clean, OUTPUTS)


@pytest.mark.parametrize("point", ["commit:predictions", "commit:transitions"])
def test_incremental_replay_killed_and_rerun_equals_a_clean_run(point: str, tmp_path: Path) -> None:
    """A scheduled audit's second run killed before or after a micro-batch's predictions are committed:
    the rerun replays that micro-batch from the checkpoint (its predictions commit skipped when already
    made, the calls run again for the other tables' rows) and ends where an uninterrupted audit ends."""
    fresh, wh = tmp_path / "fresh", tmp_path / "wh"
    for w in (fresh, wh):
        assert main(["ingest", "--input", str(SAMPLE / "broker-1"), "--warehouse", str(w)]) == 0
        assert main(["replay", "--warehouse", str(w), "--incremental"]) == 0
        assert main(["ingest", "--input", str(SAMPLE / "broker-2"), "--warehouse", str(w)]) == 0
    # --final: the sample's 9 minutes lie within replay.late_tolerance_ms of its newest answer, so without it
    # every request is held back for late arrivals and the tables compared would be empty
    assert main(["replay", "--warehouse", str(fresh), "--incremental", "--final"]) == 0
    _killed(["replay", "--warehouse", str(wh), "--incremental", "--final"], point)
    assert main(["replay", "--warehouse", str(wh), "--incremental", "--final"]) == 0
    _assert_equal_and_not_empty(wh, fresh)


def _assert_equal_and_not_empty(wh: Path, fresh: Path) -> None:
    tables = _tables(wh, OUTPUTS)
    assert all(tables[t] for t in ("predictions", "transitions", "rebalances")), "nothing to compare"
    assert tables == _tables(fresh, OUTPUTS)


def test_lost_or_damaged_checkpoint_is_rebuilt_from_the_tables(
    tmp_path: Path, spark: object, capsys: pytest.CaptureFixture[str]
) -> None:
    fresh, wh = tmp_path / "fresh", tmp_path / "wh"
    for w in (fresh, wh):
        assert main(["ingest", "--input", str(SAMPLE), "--warehouse", str(w)]) == 0
    # a minute's tolerance: the sample's 9 minutes lie within the default 10 of its newest answer, so every
    # request would be held back for late arrivals and the tables compared would be empty
    replay = ["replay", "--warehouse", str(wh), "--incremental", "--set", "replay.late_tolerance_ms=60000"]
    assert main([*replay[:2], str(fresh), *replay[3:]]) == 0
    assert main(replay) == 0
    checkpoint = wh / "_replay" / "incremental" / "checkpoint"
    assert checkpoint.exists(), sorted(p.name for p in (wh / "_replay").rglob("*"))[:20]
    capsys.readouterr()
    # damaged: the offsets log holds garbage
    for f in (checkpoint / "offsets").iterdir():
        if f.is_file():
            f.write_bytes(b"\x00garbage")
    assert main(replay) == 0
    assert "cannot be read" in capsys.readouterr().err
    _assert_equal_and_not_empty(wh, fresh)  # rebuilt from the tables: no row twice
    # lost: deleted
    shutil.rmtree(checkpoint)
    assert main(replay) == 0
    assert "is missing; rebuilding" in capsys.readouterr().err
    _assert_equal_and_not_empty(wh, fresh)


@pytest.mark.parametrize("damage", ["damaged", "missing"])
def test_a_rebuild_after_a_final_run_keeps_the_rows_it_made_final(
    damage: str, tmp_path: Path, spark: object, capsys: pytest.CaptureFixture[str]
) -> None:
    """A scheduled audit closed with --final, then its checkpoint damaged or lost: the next (ordinary) run
    rebuilds from the tables up to the final run's horizon, not the late-arrival tolerance behind the newest
    answer, which would hold the log's last 10 minutes (all of the sample) back again and leave the tables
    without the rows they had."""
    wh = tmp_path / "wh"
    assert main(["ingest", "--input", str(SAMPLE), "--warehouse", str(wh)]) == 0
    assert main(["replay", "--warehouse", str(wh), "--incremental", "--final"]) == 0
    closed = _tables(wh, OUTPUTS)
    assert all(closed[t] for t in ("predictions", "transitions", "rebalances"))
    checkpoint = wh / "_replay" / "incremental" / "checkpoint"
    if damage == "missing":
        shutil.rmtree(checkpoint)
    else:
        for f in (checkpoint / "offsets").iterdir():
            if f.is_file():
                f.write_bytes(b"\x00garbage")
    capsys.readouterr()
    assert main(["replay", "--warehouse", str(wh), "--incremental"]) == 0
    assert "rebuilding the scheduled audit" in capsys.readouterr().err
    assert _tables(wh, OUTPUTS) == closed


def test_fuzzed_logs_run_end_to_end(tmp_path: Path, spark: object) -> None:
    """10,000 mutated lines of both eras and every API, plus damaged files (a gzip corrupt half-way, a
    50 MB line, binary garbage, an empty file, a symlink loop): the whole run finishes, every line is
    accounted for, every bad line is quarantined with a reason, and a rerun adds nothing."""
    import json

    from simulator.mutations import base_lines, mutated_lines, write_bad_files

    lines = base_lines()
    logs, wh = tmp_path / "logs", tmp_path / "wh"
    (logs / "broker-1").mkdir(parents=True)
    bad = mutated_lines(lines, 10_000, 3)
    (logs / "broker-1" / "kafka-request.log.2024-05-01-10").write_text("\n".join(bad) + "\n")
    (logs / "broker-2").mkdir()
    (logs / "broker-2" / "kafka-request.log.2024-05-01-10").write_text("\n".join(lines) + "\n")
    write_bad_files(logs, lines[:50])
    assert main(["run", "--input", str(logs), "--warehouse", str(wh)]) == 0
    summary = json.loads((wh / "summary.json").read_text())
    assert summary["accounting_ok"] is True
    quarantine = read_table(wh / "quarantine")
    assert len(quarantine) == summary["quarantined"] > 1_000
    assert all(q["reason"] for q in quarantine)
    versions = {t: len(list((wh / t / "_delta_log").glob("*.json"))) for t in ("requests", "quarantine")}
    assert main(["ingest", "--input", str(logs), "--warehouse", str(wh)]) == 0
    assert {t: len(list((wh / t / "_delta_log").glob("*.json"))) for t in versions} == versions
