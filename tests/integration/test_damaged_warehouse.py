"""A damaged warehouse (issue 29): a data file gone, the newest Delta log entry cut short, a checkpoint copied
from another warehouse, the lock of a killed run, and ``kill -9`` during the audit, the report and the Great
Expectations step of validate. Each damage is one line naming the table, the file or version, and the
command that repairs it; the repair (``--repair``) or the rerun ends with the tables of a clean run and
nothing else lost. One sample warehouse per module, copied per test."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rebalance_replay.jobs.bookkeeping import CRASH_ENV
from rebalance_replay.jobs.cli import main
from tests.helpers import canonical, read_table, sample_warehouse

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "samples" / "logs"
BRONZE = ("requests", "quarantine")
OUTPUTS = ("predictions", "transitions", "rebalances", "member_sessions")
NO_GX = ("--set", "report.great_expectations=false")
#: when a finding was seen: the run's clock, not the data
SEEN = ("first_seen_ms", "last_seen_ms")

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _tables(
    wh: Path, names: tuple[str, ...], drop: tuple[str, ...] = ("ingested_at",)
) -> dict[str, list[str]]:
    return {t: canonical(read_table(wh / t), drop=drop) for t in names}


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("_lock"))
    return dst


def _cli(args: list[str], **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "rebalance_replay.jobs.cli", *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its JVM in its group: ended with it below
    )


def _killed(args: list[str], point: str) -> None:
    """Run the CLI in its own process, killed at ``point`` (``os._exit``: like kill -9, no cleanup)."""
    p = _cli(args, **{CRASH_ENV: point})
    try:
        _out, err = p.communicate(timeout=600)
    finally:
        _end(p)
    assert p.returncode == 137, (point, p.returncode, err[-2000:])


def _end(p: subprocess.Popen[str]) -> None:
    """End what ``p`` started (its JVM), by its process group: nothing else."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(p.pid, signal.SIGKILL)
    p.wait()


def _error(capsys: pytest.CaptureFixture[str]) -> str:
    """The command's one line on stderr (nothing else is printed before it fails)."""
    lines = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("storage:")]
    assert len(lines) == 1, lines
    return lines[0]


def _newest_commit(table: Path) -> Path:
    return sorted((table / "_delta_log").glob("*.json"))[-1]


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory, spark: object) -> Path:
    """The sample ingested and replayed (batch)."""
    return sample_warehouse(tmp_path_factory.mktemp("replayed") / "wh")


@pytest.fixture(scope="module")
def audited(replayed: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same, audited once (a clean audit)."""
    wh = _copy(replayed, tmp_path_factory.mktemp("audited") / "wh")
    assert main(["audit", "--warehouse", str(wh), *NO_GX]) == 0
    return wh


def test_damaged_derived_tables_are_named_and_rebuilt_from_requests(
    audited: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A predictions data file deleted, the newest transitions log entry cut mid-line, a findings data file
    deleted: every command that reads them says so in one line; ``replay --repair`` rebuilds the replay's
    four tables, ``audit --repair`` the findings; nothing else lost."""
    wh = _copy(audited, tmp_path / "wh")
    lost = sorted((wh / "predictions").rglob("*.parquet"))[0]
    rows = pq.read_metadata(lost).num_rows
    lost.unlink()
    cut = _newest_commit(wh / "transitions")
    cut.write_bytes(cut.read_bytes()[: cut.stat().st_size // 2])
    sorted((wh / "findings").rglob("*.parquet"))[0].unlink()
    capsys.readouterr()

    assert main(["audit", "--warehouse", str(wh), *NO_GX]) == 1
    rel = lost.relative_to(wh / "predictions")
    assert _error(capsys) == (
        f"rebalance-replay: error: table 'predictions' is damaged: its data file {rel} (added in version 0, "
        f"{rows} rows) is missing from {wh / 'predictions'}; the replay rebuilds it from requests: "
        f"rebalance-replay replay --warehouse {wh} --repair (also damaged: transitions, findings)"
    )
    assert main(["replay", "--warehouse", str(wh)]) == 1  # a batch replay does not call it up to date
    assert "table 'predictions' is damaged" in _error(capsys)
    assert main(["history", "--warehouse", str(wh)]) == 1  # the log is read: the cut entry is named
    assert _error(capsys) == (
        f"rebalance-replay: error: table 'transitions' is damaged: its newest Delta log entry, version 0 "
        f"({cut}), is cut mid-line; the replay rebuilds it from requests: rebalance-replay replay "
        f"--warehouse {wh} --repair"
    )

    assert main(["replay", "--warehouse", str(wh), "--repair"]) == 0
    err = capsys.readouterr().err
    assert "repair: predictions: removed 1 missing data file from its Delta log (FSCK)" in err
    assert f"repair: transitions: moved the unreadable version 0 to {wh / '_damaged'}" in err
    assert _tables(wh, OUTPUTS) == _tables(audited, OUTPUTS)
    assert (wh / "_damaged").is_dir()

    assert main(["validate", "--warehouse", str(wh), *NO_GX]) == 1  # findings: the audit repairs them
    assert _error(capsys).endswith(
        f"the audit finds its findings again: rebalance-replay audit --warehouse {wh} --repair"
    )
    assert main(["audit", "--warehouse", str(wh), "--repair", *NO_GX]) == 0
    lifecycle = ("status", "runs_seen", *SEEN)  # the surviving finding has been seen twice now
    assert _tables(wh, ("findings",), drop=lifecycle) == _tables(audited, ("findings",), drop=lifecycle)


def test_a_lost_requests_file_names_its_source_lines_and_is_read_again(
    replayed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wh = _copy(replayed, tmp_path / "wh")
    lost = sorted((wh / "requests").rglob("*.parquet"))[0]
    held = pq.read_table(lost, columns=["source_file", "line_no"])
    (source,) = set(held.column("source_file").to_pylist())
    lines = held.column("line_no").to_pylist()
    lost.unlink()
    capsys.readouterr()

    assert main(["replay", "--warehouse", str(wh)]) == 1  # not "up to date" on rows that are gone
    rel = lost.relative_to(wh / "requests")
    assert _error(capsys) == (
        f"rebalance-replay: error: table 'requests' is damaged: its data file {rel} (added in version 0, "
        f"{len(lines)} rows) is missing from {wh / 'requests'} (its rows came from {source} lines "
        f"{min(lines)}-{max(lines)}); forget those source files' rows and read them again: rebalance-replay "
        f"ingest --warehouse {wh} --repair --input {source}"
    )
    other = next(d for d in SAMPLE.iterdir() if d.is_dir() and not source.startswith(str(d)))
    assert main(["ingest", "--warehouse", str(wh), "--repair", "--input", str(other)]) == 2
    assert f"the rows to read again come from {source}, which --input does not name" in _error(capsys)
    assert main(["ingest", "--warehouse", str(wh), "--repair", "--input", str(SAMPLE)]) == 0
    err = capsys.readouterr().err
    assert "repair: requests: removed 1 missing data file from its Delta log (FSCK)" in err
    assert "ingest: batch 2: reading 1 of 4 files" in err  # that file only, whole
    assert _tables(wh, BRONZE) == _tables(replayed, BRONZE)
    progress = ("batch_id", "ingested_at")
    assert _tables(wh, ("ingest_files",), progress) == _tables(replayed, ("ingest_files",), progress)
    assert not (wh / "_replay" / "manifest.json").exists()  # the next replay rebuilds the outputs


def test_a_checkpoint_copied_from_another_warehouse_is_not_replayed_onto_this_one(
    replayed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Another warehouse's ``_replay`` (its scheduled audit's state and checkpoint, over the whole sample)
    copied into a warehouse that has only broker-1's requests; broker-2's land: the scheduled audit says
    the checkpoint is not this warehouse's and rebuilds from its tables (the other's state would replay
    broker-2's requests a second time)."""
    other = _copy(replayed, tmp_path / "other")
    assert main(["replay", "--warehouse", str(other), "--incremental"]) == 0
    wh = tmp_path / "wh"
    assert main(["ingest", "--input", str(SAMPLE / "broker-1"), "--warehouse", str(wh)]) == 0
    # first the batch replay's manifest of the other warehouse (its requests version 0 too, same
    # configuration): this warehouse's requests were never replayed, it is not "up to date"
    (wh / "_replay").mkdir()
    shutil.copy(replayed / "_replay" / "manifest.json", wh / "_replay" / "manifest.json")
    capsys.readouterr()
    assert main(["replay", "--warehouse", str(wh)]) == 0
    assert "was written for another requests table (" in capsys.readouterr().err
    assert read_table(wh / "predictions")
    shutil.copytree(other / "_replay", wh / "_replay", dirs_exist_ok=True)
    assert main(["ingest", "--input", str(SAMPLE / "broker-2"), "--warehouse", str(wh)]) == 0
    capsys.readouterr()
    assert main(["replay", "--warehouse", str(wh), "--incremental"]) == 0
    err = capsys.readouterr().err
    assert (
        f"replay: the incremental checkpoint {wh / '_replay' / 'incremental'} belongs to another warehouse "
        "(its requests table id " in err
    )
    assert "rebuilding the scheduled audit from this warehouse's tables" in err
    assert _tables(wh, OUTPUTS) == _tables(other, OUTPUTS)


def test_the_lock_of_a_killed_run_does_not_stop_the_next_one(
    replayed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run holding the warehouse lock is named by the next one; killed (SIGKILL) it leaves its lock file
    behind, naming it, and the next command runs at once (the kernel released the lock)."""
    wh = _copy(replayed, tmp_path / "wh")
    p = _cli(["replay", "--warehouse", str(wh), *NO_GX])
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if json.loads((wh / "_lock").read_text() or "{}").get("pid") == p.pid:
                    break
            except (OSError, ValueError):  # not there yet, or being written
                pass
            time.sleep(0.05)
        capsys.readouterr()
        assert main(["history", "--warehouse", str(wh)]) == 1
        assert _error(capsys).startswith(
            f"rebalance-replay: error: warehouse {wh} is being written by 'rebalance-replay replay' "
            f"(pid {p.pid} on {socket.gethostname()}, started "
        )
        p.send_signal(signal.SIGKILL)
        p.wait()
    finally:
        _end(p)
    assert json.loads((wh / "_lock").read_text())["pid"] == p.pid  # left behind by the killed run
    assert main(["history", "--warehouse", str(wh)]) == 0


def test_audit_killed_and_rerun_equals_a_clean_audit(audited: Path, replayed: Path, tmp_path: Path) -> None:
    """Killed after committing its findings but before recording its state, then killed again in its
    Great Expectations step: the third run's findings are the clean audit's (new, seen once: not counted
    as seen twice), and the findings suite has run on them."""
    wh = _copy(replayed, tmp_path / "wh")
    args = ["audit", "--warehouse", str(wh)]
    _killed(args, "audit:before_state")
    _killed(args, "gx:findings_contract")
    assert main(args) == 0
    assert _tables(wh, ("findings",), SEEN) == _tables(audited, ("findings",), SEEN)
    assert {f["status"] for f in read_table(wh / "findings")} == {"new"}
    gx = json.loads((wh / "summary.json").read_text())["audit"]["gx"]
    assert gx is not None and gx["success"] and list(gx["suites"]) == ["findings_contract"]


def test_report_killed_and_rerun_writes_the_files_of_a_clean_report(audited: Path, tmp_path: Path) -> None:
    wh = _copy(audited, tmp_path / "wh")
    args = ["report", "--warehouse", str(wh), *NO_GX]
    assert main(args) == 0
    reports = wh / "reports"
    clean = {p.relative_to(reports): p.read_bytes() for p in reports.rglob("*") if p.is_file()}
    shutil.rmtree(reports)
    _killed(args, "report:before_index")
    assert not (reports / "index.html").exists()
    assert main(args) == 0
    assert {p.relative_to(reports): p.read_bytes() for p in reports.rglob("*") if p.is_file()} == clean


def test_validate_killed_in_its_gx_step_and_rerun_checks_like_a_clean_run(
    audited: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Killed after the first Great Expectations suite, its project file cut short (GX writes it in place,
    as a kill while it wrote would leave it): the rerun sets the unreadable file aside and checks the three
    suites as a clean run does."""
    wh = _copy(audited, tmp_path / "wh")
    args = ["validate", "--warehouse", str(wh)]
    _killed(args, "gx:requests_contract")
    project = wh / "gx" / "great_expectations.yml"
    project.write_bytes(project.read_bytes()[: project.stat().st_size // 2])
    capsys.readouterr()
    assert main(args) == 0
    assert "great_expectations.yml); moved to" in capsys.readouterr().err
    summary = json.loads((wh / "summary.json").read_text())
    assert summary["gx_success"] is True, summary["gx"]
    assert {k: v["evaluated"] for k, v in summary["gx"]["suites"].items()} == {
        "requests_contract": 6,
        "outputs_contract": 7,
        "findings_contract": 5,
    }
    assert Path(summary["data_docs"]).exists()
