"""A damaged warehouse (issue 29) without Spark: the Delta log read as it is (an entry cut short, a data file
gone), the one-line messages, the repairs on small delta-rs tables, a checkpoint that belongs elsewhere,
and the Data Docs assets a killed run cut short."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from deltalake.transaction import CommitProperties, Transaction

from rebalance_replay.jobs import damage
from rebalance_replay.jobs.cli import main
from rebalance_replay.jobs.damage import (
    INGEST_APP_ID,
    commit_problem,
    damaged_tables,
    guard,
    ingest_batch,
    message,
    readable_actions,
    sources_in,
)
from rebalance_replay.jobs.errors import DamagedTableError, UsageError
from rebalance_replay.jobs.ingest import batch_floor, raise_batch_floor
from rebalance_replay.jobs.replay_run import ReplayDirs, checkpoint_query_id, foreign_checkpoint
from rebalance_replay.schemas import ALL_TABLES, PREDICTIONS, REQUESTS

A = "/logs/broker-1/kafka-request.log"
B = "/logs/broker-2/kafka-request.log"


def _bronze(wh: Path, name: str, rows: list[tuple[str, int]], batch: int) -> None:
    """Rows (source_file, line_no) appended to a small table as ingest batch ``batch`` commits them."""
    table = pa.table({"source_file": [r[0] for r in rows], "line_no": [r[1] for r in rows]})
    props = CommitProperties(app_transactions=[Transaction(INGEST_APP_ID, batch)])
    write_deltalake(str(wh / name), table, mode="append", commit_properties=props)


def _derived(wh: Path, name: str, n: int) -> None:
    write_deltalake(str(wh / name), pa.table({"group_id": [f"g{i}" for i in range(n)]}), mode="append")


def _data_files(table: Path) -> list[Path]:
    return sorted(table.glob("*.parquet"))


def _newest_commit(table: Path) -> Path:
    return sorted((table / "_delta_log").glob("*.json"))[-1]


# ---- the log's entries ---------------------------------------------------------------------------


def test_an_entry_empty_cut_mid_line_or_garbled_is_named() -> None:
    good = b'{"commitInfo":{"timestamp":1}}\n{"add":{"path":"a.parquet"}}'
    assert commit_problem(good) is None
    assert commit_problem(b"") == "is empty"
    assert commit_problem(good[: len(good) // 2 + 10]) == "is cut mid-line"
    assert commit_problem(b'{"x":1}\n\x00garbage\n{"y":2}') == "has a line that is not JSON (line 2)"
    assert commit_problem(b"[1, 2]") == "has a line that is not a Delta action (line 1)"


def test_an_entry_tells_its_ingest_batch_by_its_transaction() -> None:
    data = b'{"txn":{"appId":"rebalance-replay/ingest","version":7}}\n{"add":{"path":"a"}}\n{"add":'
    assert [list(a) for a in readable_actions(data)] == [["txn"], ["add"]]
    assert ingest_batch(readable_actions(data)) == 7
    assert ingest_batch([{"txn": {"appId": "rebalance-replay/replay/x", "version": 3}}]) is None


def test_a_data_files_statistics_name_the_source_files_it_held() -> None:
    known = [A, A + ".1", B]
    assert sources_in(A, A, known) == [A]
    assert sources_in(A, A + ".1", known) == [A, A + ".1"]
    assert sources_in(None, None, known) == known  # no statistics: every source
    assert sources_in("/x", "/x", known) == ["/x"]  # not recorded (ingest_files damaged too)


# ---- damage found, and the message -----------------------------------------------------------------


def test_a_missing_bronze_data_file_names_its_table_version_rows_source_lines_and_the_repair(
    tmp_path: Path,
) -> None:
    wh = tmp_path / "wh"
    _bronze(wh, "requests", [(A, 1), (A, 2), (A, 9)], 1)
    _bronze(wh, "ingest_files", [(A, 9)], 1)
    _bronze(wh, "requests", [(B, 4), (B, 5)], 2)
    _bronze(wh, "ingest_files", [(B, 5)], 2)
    lost = _data_files(wh / "requests")[0]
    lost.unlink()
    (found,) = damaged_tables(str(wh), ALL_TABLES, files_of=ALL_TABLES)
    assert found.table == REQUESTS and found.repairable and len(found.lost) == 1
    text = message(found, str(wh))
    assert "\n" not in text
    assert text.startswith(f"table 'requests' is damaged: its data file {lost.name} (added in version ")
    assert f"is missing from {wh / 'requests'}" in text
    source, lines, rows = (A, "lines 1-9", "3 rows") if found.sources == (A,) else (B, "lines 4-5", "2 rows")
    assert f"its rows came from {source} {lines}" in text and rows in text
    assert text.endswith(f"rebalance-replay ingest --warehouse {wh} --repair --input {source}")


def test_a_cut_newest_entry_of_a_derived_table_names_its_version_and_the_replay_that_rebuilds_it(
    tmp_path: Path,
) -> None:
    wh = tmp_path / "wh"
    _derived(wh, "predictions", 2)
    _derived(wh, "predictions", 3)
    newest = _newest_commit(wh / "predictions")
    newest.write_bytes(newest.read_bytes()[:-7])
    (found,) = damaged_tables(str(wh), ALL_TABLES, files_of=ALL_TABLES)
    assert found.table == PREDICTIONS and found.bad is not None and found.bad.version == 1
    assert message(found, str(wh)) == (
        f"table 'predictions' is damaged: its newest Delta log entry, version 1 ({newest}), is cut mid-line; "
        f"the replay rebuilds it from requests: rebalance-replay replay --warehouse {wh} --repair"
    )


def test_a_cut_entry_with_later_ones_moves_a_derived_table_aside_and_has_no_bronze_repair(
    tmp_path: Path,
) -> None:
    bronze, derived = tmp_path / "bronze", tmp_path / "derived"
    for n in (1, 2, 3):
        _bronze(bronze, "requests", [(A, n)], n)
        _derived(derived, "findings", n)
    for table in (bronze / "requests", derived / "findings"):
        sorted((table / "_delta_log").glob("*.json"))[1].write_bytes(b"")
    (requests,) = damaged_tables(str(bronze), ALL_TABLES, files_of=ALL_TABLES)
    (findings,) = damaged_tables(str(derived), ALL_TABLES, files_of=ALL_TABLES)
    text = message(findings, str(derived))
    assert "version 1" in text and "is empty and later versions follow it" in text
    assert text.endswith(f"rebalance-replay audit --warehouse {derived} --repair")
    assert message(requests, str(bronze)).endswith(
        f"; no safe repair: restore {bronze / 'requests'} from a backup"
    )
    with pytest.raises(DamagedTableError, match=r"'requests'.*no safe repair"):
        guard(str(bronze), "ingest", repair_them=True, inputs=lambda: [A], run_id=None, say=lambda _m: None)
    said: list[str] = []
    guard(str(derived), "audit", repair_them=True, inputs=None, run_id=None, say=said.append)
    assert said[0].startswith(
        f"repair: findings: moved the table to {derived / damage.DAMAGED_DIR}/findings-"
    )
    assert not (derived / "findings").exists()  # the audit makes it again


def test_a_command_reads_only_its_own_tables_and_repairs_only_those_it_writes(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    _derived(wh, "predictions", 2)
    _derived(wh, "findings", 1)
    _data_files(wh / "findings")[0].unlink()
    say: list[str] = []
    guard(str(wh), "replay", repair_them=False, inputs=None, run_id=None, say=say.append)  # not its table
    with pytest.raises(
        DamagedTableError, match=r"'findings'.*rebalance-replay audit --warehouse .* --repair$"
    ):
        guard(str(wh), "report", repair_them=False, inputs=None, run_id=None, say=say.append)
    with pytest.raises(DamagedTableError, match="rebalance-replay audit"):  # replay does not write findings
        guard(str(wh), "validate", repair_them=True, inputs=None, run_id=None, say=say.append)


def test_the_command_line_says_it_in_one_line_before_spark_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wh = tmp_path / "wh"
    _derived(wh, "transitions", 2)
    _newest_commit(wh / "transitions").write_bytes(b"")
    assert main(["history", "--warehouse", str(wh)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"rebalance-replay: error: table 'transitions' is damaged: its newest Delta log entry, version 0 "
        f"({_newest_commit(wh / 'transitions')}), is empty; the replay rebuilds it from requests: "
        f"rebalance-replay replay --warehouse {wh} --repair"
    ]


# ---- repairs -----------------------------------------------------------------------------------------


def test_a_missing_derived_file_leaves_the_log_and_the_replay_state_is_reset(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    _derived(wh, "predictions", 2)
    _derived(wh, "predictions", 3)
    dirs = ReplayDirs(str(wh))
    dirs.save_manifest(dirs.load_manifest())
    (dirs.incremental / "checkpoint").mkdir(parents=True)
    _data_files(wh / "predictions")[0].unlink()
    lines: list[str] = []
    guard(str(wh), "replay", repair_them=True, inputs=None, run_id="r-1", say=lines.append)
    assert lines[0] == "repair: predictions: removed 1 missing data file from its Delta log (FSCK)"
    assert not dirs.manifest.exists() and not dirs.incremental.exists()
    dt = DeltaTable(str(wh / "predictions"))
    assert dt.to_pyarrow_table().num_rows in (2, 3)  # the other file's rows are all still there
    assert dt.history(1)[0]["userMetadata"] == "r-1"
    assert damaged_tables(str(wh), ALL_TABLES, files_of=ALL_TABLES) == []


def test_a_cut_newest_entry_is_moved_aside_and_the_table_is_its_version_before(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    _derived(wh, "rebalances", 2)
    _derived(wh, "rebalances", 3)
    cut = _newest_commit(wh / "rebalances")
    data = cut.read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    lines: list[str] = []
    guard(str(wh), "replay", repair_them=True, inputs=None, run_id=None, say=lines.append)
    assert lines[0].startswith("repair: rebalances: moved the unreadable version 1 to ")
    (aside,) = (wh / damage.DAMAGED_DIR).iterdir()
    assert (aside / "_delta_log" / cut.name).read_bytes() == data[: len(data) // 2]  # kept, not deleted
    assert DeltaTable(str(wh / "rebalances")).version() == 0
    assert DeltaTable(str(wh / "rebalances")).to_pyarrow_table().num_rows == 2


def test_a_bronze_repair_needs_the_source_files_and_forgets_their_rows_and_progress(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    _bronze(wh, "requests", [(A, 1), (A, 2)], 1)
    _bronze(wh, "quarantine", [(A, 3)], 1)
    _bronze(wh, "ingest_files", [(A, 3)], 1)
    _bronze(wh, "requests", [(B, 1)], 2)
    _bronze(wh, "quarantine", [(B, 2)], 2)
    _bronze(wh, "ingest_files", [(B, 2)], 2)
    for f in _data_files(wh / "quarantine"):
        if pq_sources(f) == [B]:
            f.unlink()
    say: list[str] = []
    with pytest.raises(UsageError, match=f"come from {B}, which --input does not name"):
        guard(str(wh), "ingest", repair_them=True, inputs=lambda: [A], run_id=None, say=say.append)
    assert DeltaTable(str(wh / "requests")).to_pyarrow_table().num_rows == 3  # nothing changed
    guard(str(wh), "ingest", repair_them=True, inputs=lambda: [A, B], run_id=None, say=say.append)
    for name in ("requests", "quarantine", "ingest_files"):
        rows = DeltaTable(str(wh / name)).to_pyarrow_table().column("source_file").to_pylist()
        assert set(rows) == {A}, name  # B's rows and progress forgotten: the ingest reads B again whole
    assert batch_floor(str(wh)) == 2  # and its next batch is 3, above every committed one


def pq_sources(path: Path) -> list[str]:
    import pyarrow.parquet as pq

    return sorted(set(pq.read_table(path).column("source_file").to_pylist()))


def test_a_cut_newest_bronze_entry_rolls_its_ingest_batch_back_in_the_three_tables(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    for batch, source in ((1, A), (2, B)):
        for name in ("requests", "quarantine", "ingest_files"):
            _bronze(wh, name, [(source, batch)], batch)
    _newest_commit(wh / "ingest_files").write_bytes(b"")  # emptied: its batch is told by the other tables
    (found,) = damaged_tables(str(wh), ALL_TABLES, files_of=ALL_TABLES)
    assert found.bad is not None and found.bad.batch == 2 and found.sources == (B,)
    assert "(ingest batch 2), is empty; roll that ingest batch back" in message(found, str(wh))
    say: list[str] = []
    guard(str(wh), "ingest", repair_them=True, inputs=lambda: [A, B], run_id=None, say=say.append)
    assert "rolled ingest batch 2 back (requests v1, quarantine v1, ingest_files v1 moved to" in say[0]
    for name in ("requests", "quarantine", "ingest_files"):
        dt = DeltaTable(str(wh / name))
        assert dt.version() == 0 and dt.transaction_version(INGEST_APP_ID) == 1, name


def test_the_batch_floor_only_rises(tmp_path: Path) -> None:
    assert batch_floor(str(tmp_path)) == 0
    raise_batch_floor(str(tmp_path), 4)
    raise_batch_floor(str(tmp_path), 2)
    assert batch_floor(str(tmp_path)) == 4


# ---- a checkpoint from another warehouse -------------------------------------------------------------


def test_a_scheduled_audits_state_from_elsewhere_is_told_apart() -> None:
    mine = {"requests_table_id": "r1", "predictions_table_id": "p1", "query_id": "q1"}
    assert foreign_checkpoint(mine, mine) is None
    assert foreign_checkpoint({}, mine) is None  # an older state: nothing recorded to hold against it
    other = foreign_checkpoint({**mine, "requests_table_id": "r2"}, mine)
    assert other == (
        "belongs to another warehouse (its requests table id r2, this warehouse's r1): it was copied from "
        "elsewhere"
    )
    assert "another streaming query (q1; this audit's is q2)" in str(
        foreign_checkpoint({**mine, "query_id": "q2"}, mine)
    )
    gone = foreign_checkpoint(mine, {**mine, "predictions_table_id": None})
    assert gone == "was kept with a predictions table that is no longer in this warehouse"


def test_a_checkpoints_query_id_is_read_from_its_metadata(tmp_path: Path) -> None:
    assert checkpoint_query_id(tmp_path) is None
    (tmp_path / "metadata").write_text(json.dumps({"id": "5f1c"}) + "\n")
    assert checkpoint_query_id(tmp_path) == "5f1c"


# ---- Data Docs assets ----------------------------------------------------------------------------------


def test_an_offline_asset_a_killed_run_cut_short_is_copied_again(tmp_path: Path) -> None:
    from rebalance_replay.jobs.datadocs import _sources, make_offline
    from rebalance_replay.transforms.report.datadocs import OFFLINE_DIR

    (tmp_path / "index.html").write_text("<html></html>")
    make_offline(tmp_path, log=lambda _m: None)
    target = tmp_path / OFFLINE_DIR
    jquery = target / "jquery" / "jquery.min.js"
    jquery.write_bytes(jquery.read_bytes()[:100])  # as a kill -9 while copying leaves it
    fonts = sorted((target / "fontawesome" / "webfonts").iterdir())
    fonts[-1].unlink()
    make_offline(tmp_path, log=lambda _m: None)
    for rel, src in _sources().items():
        dst = target / rel
        if src.is_dir():
            assert sorted(p.name for p in dst.iterdir()) == sorted(p.name for p in src.iterdir()), rel
        else:
            assert dst.read_bytes() == src.read_bytes(), rel
    assert not list(target.rglob("*.tmp"))


def test_great_expectations_files_a_killed_run_cut_short_are_set_aside_and_made_again(tmp_path: Path) -> None:
    """GX writes its project file and stores in place: a run killed while it wrote leaves one cut short,
    and GX then refuses to load the context on every later run ('not a valid yml file')."""
    import os

    os.environ["GX_ANALYTICS_ENABLED"] = "false"
    import great_expectations as gx

    from rebalance_replay.jobs.expectations import set_aside_unreadable

    ctx = gx.get_context(mode="file", project_root_dir=str(tmp_path))
    ctx.suites.add(gx.ExpectationSuite(name="requests_contract"))
    project, suite = tmp_path / "gx" / "great_expectations.yml", tmp_path / "gx" / "expectations"
    (suite_file,) = suite.glob("*.json")
    for f in (project, suite_file):
        f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
    with pytest.raises(Exception, match="yml"):
        gx.get_context(mode="file", project_root_dir=str(tmp_path))
    said: list[str] = []
    moved = set_aside_unreadable(tmp_path, said.append)
    assert sorted(moved) == ["expectations/requests_contract.json", "great_expectations.yml"]
    assert len(said) == 1 and "could not be read (cut short by a run that was killed" in said[0]
    assert (tmp_path / "_damaged").is_dir()
    again = gx.get_context(mode="file", project_root_dir=str(tmp_path))  # made again, loads
    assert [s.name for s in again.suites.all()] == []
    assert set_aside_unreadable(tmp_path, said.append) == []  # a sound folder is left as it is
