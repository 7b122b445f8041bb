"""The two storage engines give the same warehouse: the pipeline on the sample writes every table with
the same rows (sorted compare), the same schema and the same partitioning on delta-rs and on
delta-spark; a warehouse written by one engine is read and appended by the other (both ways, the
ingest's task-files path included); time travel, history, maintenance and tables by name on both.

``tests/artifacts/engine-equality.md`` receives the row-equality table (table × engine)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from rebalance_replay.jobs.cli import main
from rebalance_replay.schemas import ALL_TABLES
from tests.helpers import canonical, read_table

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.deltaspark, pytest.mark.timeout(1800)]

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "samples" / "logs"
ARTIFACTS = ROOT / "tests" / "artifacts"
#: columns that say when a run happened (the wall clock of the ingest, of the audit that first and last
#: saw a finding), not what it found
RUN_TIME_COLUMNS = ("ingested_at", "first_seen_ms", "last_seen_ms")
PIPELINE = ("ingest", "replay", "validate", "audit")
#: ``starts``' function: (kind, engine, where) → a copy of that start there
Start = Callable[[str, str, Path], Path]


def table_rows(wh: Path, name: str) -> list[str]:
    return canonical(read_table(wh / name), drop=RUN_TIME_COLUMNS)


def table_shape(wh: Path, name: str) -> tuple[list[tuple[str, str, bool]], list[str]]:
    """The table's schema (name, type, nullable) and partition columns, from its Delta log."""
    dt = DeltaTable(str(wh / name))
    fields = [(f.name, str(f.type), bool(f.nullable)) for f in dt.schema().fields]
    return fields, list(dt.metadata().partition_columns)


def engine_args(engine: str) -> list[str]:
    return ["--set", f"storage.engine={engine}"]


def run_pipeline(wh: Path, engine: str, inputs: list[Path] | None = None) -> Path:
    for stage in PIPELINE:
        args = [stage, "--warehouse", str(wh), *engine_args(engine)]
        if stage == "ingest":
            args[1:1] = ["--input", *[str(p) for p in (inputs or [SAMPLE])]]
        if stage == "validate":
            args += ["--set", "report.great_expectations=false"]
        assert main(args) == 0, f"{stage} on {engine}"
    return wh


@pytest.fixture(scope="module")
def warehouses(tmp_path_factory: pytest.TempPathFactory, spark: Any) -> dict[str, Path]:
    from tests.conftest import delta_spark_or_skip

    delta_spark_or_skip(spark)
    root = tmp_path_factory.mktemp("engines")
    return {e: run_pipeline(root / e, e) for e in ("delta-rs", "delta-spark")}


def test_every_table_has_the_same_rows_schema_and_partitioning(warehouses: dict[str, Path]) -> None:
    rs, sp = warehouses["delta-rs"], warehouses["delta-spark"]
    lines = [
        "| table | rows delta-rs | rows delta-spark | rows equal | schema equal | partitioning |",
        "|---|---:|---:|---|---|---|",
    ]
    problems = []
    for t in ALL_TABLES:
        a, b = table_rows(rs, t.name), table_rows(sp, t.name)
        shape_a, shape_b = table_shape(rs, t.name), table_shape(sp, t.name)
        lines.append(
            f"| {t.name} | {len(a)} | {len(b)} | {'yes' if a == b else 'NO'} | "
            f"{'yes' if shape_a[0] == shape_b[0] else 'NO'} | {','.join(shape_a[1]) or '-'} / "
            f"{','.join(shape_b[1]) or '-'} |"
        )
        if a != b:
            problems.append(f"{t.name}: rows differ")
        if shape_a != shape_b:
            problems.append(f"{t.name}: schema or partitioning differ: {shape_a} vs {shape_b}")
        assert a, f"{t.name} is empty: the comparison would prove nothing"
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "engine-equality.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert not problems, problems


def test_each_commit_names_its_run(warehouses: dict[str, Path]) -> None:
    for wh in warehouses.values():
        summary = json.loads((wh / "summary.json").read_text())
        runs = {r["run_id"]: r for r in summary["runs"]}
        assert [r["command"] for r in summary["runs"]] == list(PIPELINE)
        for t in ALL_TABLES:
            history = DeltaTable(str(wh / t.name)).history()
            for commit in history:
                assert commit.get("userMetadata") in runs, (t.name, commit)
            # summary.json's versions of the table are those its runs' commits made
            last = max(int(c["version"]) for c in history)
            assert runs[history[0]["userMetadata"]]["versions"][t.name] == last


@pytest.fixture(scope="module")
def reference(warehouses: dict[str, Path]) -> Path:
    """The sample through the whole pipeline on one engine, delta-rs (its validate and audit leave the
    tables the engine-change test compares as the ingest and the batch replay wrote them)."""
    return warehouses["delta-rs"]


#: the warehouses the tests below start from, each built once a module and engine, then copied
_STARTS = {
    # broker-1's logs ingested and replayed (batch)
    "replayed": (("ingest", "--input", str(SAMPLE / "broker-1")), ("replay",)),
    # broker-1's logs, then broker-2's: two runs, two versions of ``requests`` (the Delta commits)
    "two ingests": (
        ("ingest", "--input", str(SAMPLE / "broker-1")),
        ("ingest", "--input", str(SAMPLE / "broker-2")),
    ),
}


@pytest.fixture(scope="module")
def starts(tmp_path_factory: pytest.TempPathFactory, spark: Any) -> Start:
    """``start(kind, engine, wh)``: a copy at ``wh`` of the ``kind`` warehouse (:data:`_STARTS`) that
    ``engine`` wrote; the commands run once a kind and engine (Delta's log names its files relatively, so a
    copied table is the table)."""
    built: dict[tuple[str, str], Path] = {}

    def start(kind: str, engine: str, wh: Path) -> Path:
        if (kind, engine) not in built:
            base = tmp_path_factory.mktemp("start") / "wh"
            for command in _STARTS[kind]:
                assert main([*command, "--warehouse", str(base), *engine_args(engine)]) == 0, command
            built[(kind, engine)] = base
        shutil.copytree(built[(kind, engine)], wh)
        return wh

    return start


@pytest.mark.parametrize("first,second", [("delta-spark", "delta-rs"), ("delta-rs", "delta-spark")])
def test_a_warehouse_changes_engine(first: str, second: str, reference: Path, tmp_path: Path) -> None:
    """One broker's logs ingested by one engine, the other broker's appended by the other (delta-rs
    appends through the tasks' own files), an incremental replay by the first and then one by the second
    after more rows: the same rows as the one-engine warehouse."""
    wh = tmp_path / "wh"
    logs = SAMPLE
    assert (
        main(["ingest", "--input", str(logs / "broker-1"), "--warehouse", str(wh), *engine_args(first)]) == 0
    )
    assert main(["replay", "--incremental", "--warehouse", str(wh), *engine_args(first)]) == 0
    assert (
        main(["ingest", "--input", str(logs / "broker-2"), "--warehouse", str(wh), *engine_args(second)]) == 0
    )
    assert main(["replay", "--incremental", "--warehouse", str(wh), *engine_args(second)]) == 0
    assert main(["replay", "--warehouse", str(wh), *engine_args(first)]) == 0  # batch: the whole story
    ref = reference
    for name in ("requests", "quarantine", "predictions", "transitions", "rebalances", "member_sessions"):
        assert table_rows(wh, name) == table_rows(ref, name), name
        assert table_shape(wh, name) == table_shape(ref, name), name
    engines = {
        str(c.get("engineInfo") or c.get("clientVersion") or "")
        for c in DeltaTable(str(wh / "requests")).history()
    }
    assert any("Delta-Lake" in e for e in engines) and any("delta-rs" in e for e in engines), engines


def _make_old(path: Path, drop: str) -> None:
    """The table as an older release wrote it: without the nullable column ``drop`` (a newer release
    added it)."""
    import pyarrow.fs as pafs
    from deltalake import write_deltalake

    dt = DeltaTable(str(path))
    fs = pafs.SubTreeFileSystem(str(path), pafs.LocalFileSystem())
    old = dt.to_pyarrow_table(filesystem=fs).drop_columns([drop])
    parts = list(dt.metadata().partition_columns)
    write_deltalake(str(path), old, mode="overwrite", schema_mode="overwrite", partition_by=parts or None)
    assert drop not in [f.name for f in DeltaTable(str(path)).schema().fields]


def test_an_old_warehouse_takes_a_new_column(engine: str, starts: Start, tmp_path: Path) -> None:
    """Old warehouse → new code: ``requests`` and ``rebalances`` lack a nullable column this release
    declares; the next ingest (an append: the tasks' own files on delta-rs) and replay (an overwrite) add
    it, the older rows read it as null, and a breaking change is refused in one line."""
    wh = starts("replayed", engine, tmp_path / "wh")
    args = ["--warehouse", str(wh), *engine_args(engine)]
    _make_old(wh / "requests", "raw_response")
    _make_old(wh / "rebalances", "trigger_cause")
    before = {r["line_no"] for r in read_table(wh / "requests")}

    assert main(["ingest", "--input", str(SAMPLE / "broker-2"), *args]) == 0
    assert main(["replay", *args]) == 0
    requests = read_table(wh / "requests")
    assert {r["raw_response"] is None for r in requests if "broker-1" in r["source_file"]} == {True}
    assert any(r["raw_response"] for r in requests if "broker-2" in r["source_file"])
    assert before <= {r["line_no"] for r in requests}
    assert "trigger_cause" in [f.name for f in DeltaTable(str(wh / "rebalances")).schema().fields]
    assert any(r["trigger_cause"] is not None for r in read_table(wh / "rebalances"))


def test_a_breaking_change_is_refused_in_one_line(
    engine: str, starts: Start, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import pyarrow as pa
    from deltalake import write_deltalake

    wh = starts("replayed", engine, tmp_path / "wh")
    args = ["--warehouse", str(wh), *engine_args(engine)]
    path = wh / "rebalances"
    dt = DeltaTable(str(path))
    t = dt.to_pyarrow_table()
    i = t.schema.get_field_index("generation_to")  # int in this release: string in the "old" table
    t = t.set_column(i, pa.field("generation_to", pa.string()), t.column(i).cast(pa.string()))
    parts = list(dt.metadata().partition_columns)
    write_deltalake(str(path), t, mode="overwrite", schema_mode="overwrite", partition_by=parts or None)
    assert main(["ingest", "--input", str(SAMPLE / "broker-2"), *args]) == 0  # the replay has work to do
    capsys.readouterr()
    assert main(["replay", *args]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0], err
    assert "breaking schema change" in err[0] and "MIGRATIONS" in err[0] and "generation_to" in err[0], err


def test_history_and_time_travel(
    engine: str, spark: Any, starts: Start, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rebalance_replay.jobs.delta import open_store
    from rebalance_replay.schemas import REQUESTS

    wh = starts("two ingests", engine, tmp_path / "wh")
    args = ["--warehouse", str(wh), *engine_args(engine)]
    commits = list(DeltaTable(str(wh / "requests")).history())
    runs = json.loads((wh / "summary.json").read_text())["runs"]
    assert [r["command"] for r in runs] == ["ingest", "ingest"]
    assert {c.get("userMetadata") for c in commits} == {r["run_id"] for r in runs}
    # the commit as the product's history shows it (its time is the one --as-of compares with: Delta's
    # commit time, which delta-spark takes from the commit file, a little after the commitInfo's)
    first_ingest = max(
        (c for c in open_store(spark, str(wh), engine).history(REQUESTS) if c.run_id == runs[0]["run_id"]),
        key=lambda c: c.version,
    )
    assert runs[0]["versions"]["requests"] == first_ingest.version

    # history: each version of each table with the run (and command) that wrote it
    capsys.readouterr()
    assert main(["history", *args]) == 0
    out = capsys.readouterr().out
    for r in runs:
        assert f"{r['run_id']} (ingest)" in out, out

    # the requests as they were after the first ingest: a forensics replay sees broker-1 only
    at = first_ingest.timestamp_ms + 1  # epoch ms of that commit; ISO on the command line
    from datetime import UTC, datetime

    iso = datetime.fromtimestamp(at / 1000, UTC).isoformat(timespec="milliseconds")
    then = [*args, "--from", "2024-05-01T00:00Z", "--to", "2024-05-02T00:00Z", "--name", "then"]
    assert main(["replay", *then, "--as-of", iso]) == 0
    sources = {r["source_file"] for r in read_table(wh / "forensics" / "then" / "predictions")}
    assert sources and all("broker-1" in s for s in sources), sources
    assert main(["replay", *then[:-1], "now"]) == 0
    now = {r["source_file"] for r in read_table(wh / "forensics" / "now" / "predictions")}
    assert any("broker-2" in s for s in now)

    # the report says which versions it shows
    assert main(["replay", *args]) == 0
    out_dir = tmp_path / "report-then"
    assert main(["report", *args, "--as-of", iso, "--out", str(out_dir)]) == 0
    title = json.loads((out_dir / "report.json").read_text())["title"]
    assert "as of " in title and "predictions (not yet written)" in title, title
    latest = DeltaTable(str(wh / "predictions")).version()
    assert main(["report", *args, "--as-of", str(latest), "--out", str(tmp_path / "report-v")]) == 0
    title = json.loads((tmp_path / "report-v" / "report.json").read_text())["title"]
    assert f"as of version {latest} (predictions v{latest}" in title, title
    # a version the table does not have: one line naming the versions it has
    capsys.readouterr()
    assert main(["report", *args, "--as-of", "999", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--as-of 999: table 'predictions' has versions" in err[0], err


def test_maintain(engine: str, starts: Start, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from rebalance_replay.jobs.locking import warehouse_lock

    wh = starts("two ingests", engine, tmp_path / "wh")
    args = ["--warehouse", str(wh), *engine_args(engine)]
    before = {t.name: table_rows(wh, t.name) for t in ALL_TABLES if (wh / t.name).exists()}
    files_before = len(DeltaTable(str(wh / "requests")).file_uris())
    version_before = DeltaTable(str(wh / "requests")).version()

    capsys.readouterr()
    assert main(["maintain", *args, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "dry run: nothing changed" in out and "requests" in out and "would: compact" in out, out
    assert DeltaTable(str(wh / "requests")).version() == version_before

    # while a run holds the warehouse: refused in one line naming it
    with warehouse_lock(str(wh), "rebalance-replay ingest"):
        capsys.readouterr()
        assert main(["maintain", *args]) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "is being written by" in err[0] and "ingest" in err[0], err

    assert main(["maintain", *args, "--set", "maintain.retention_hours=0"]) == 0
    dt = DeltaTable(str(wh / "requests"))
    assert len(dt.file_uris()) < files_before  # compacted
    assert {t: table_rows(wh, t) for t in before} == before  # the same rows
    log = wh / "requests" / "_delta_log"
    assert list(log.glob("*.checkpoint*.parquet")), "no checkpoint"
    on_disk = {str(p) for p in (wh / "requests").rglob("*.parquet") if "_delta_log" not in str(p)}
    live = {u.removeprefix("file://") for u in dt.file_uris()}
    assert on_disk == live  # retention 0: VACUUM removed the compacted files
    # the next append and an incremental replay still work on the maintained table
    assert main(["replay", "--incremental", *args]) == 0
