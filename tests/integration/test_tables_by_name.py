"""Tables by name (issue 27): a run with ``--database rr`` registers every table in Spark's catalog
(locally: the embedded Hive metastore under ``<warehouse>/_catalog``), and a later process — the ``sql``
command, a new session — reads them by name. Run as a user runs it: the CLI in processes of its own (the
catalog is a static setting of a session; the test session's is in-memory)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import read_table

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.deltaspark, pytest.mark.timeout(1200)]

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "samples" / "logs"


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    ivy = f"storage.delta_spark_ivy={ROOT / '.cache' / 'ivy'}"  # Delta's jars as the tests cache them
    return subprocess.run(
        [sys.executable, "-m", "rebalance_replay.jobs.cli", *args, "--set", ivy],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_sql_reads_the_tables_by_name_in_a_later_process(tmp_path: Path) -> None:
    wh = tmp_path / "wh"
    # without Great Expectations: its check of the tables is tested elsewhere, and costs this tier a minute
    no_gx = ("--set", "report.great_expectations=false")
    run = cli("run", "--input", str(SAMPLE), "--warehouse", str(wh), "--database", "rr", *no_gx, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "catalog: 8 table(s) by name in rr" in run.stderr, run.stderr[-3000:]

    query = "SELECT group_id, count(*) AS n FROM rr.rebalances GROUP BY group_id ORDER BY group_id"
    sql = cli("sql", "--warehouse", str(wh), "--database", "rr", query, cwd=tmp_path)
    assert sql.returncode == 0, sql.stderr[-3000:]
    lines = sql.stdout.strip().splitlines()
    by_group: dict[str, int] = {}
    for r in read_table(wh / "rebalances"):
        by_group[r["group_id"]] = by_group.get(r["group_id"], 0) + 1
    assert lines[0] == "group_id\tn"
    assert lines[1:] == [f"{g}\t{n}" for g, n in sorted(by_group.items())], sql.stdout
    # a name that is not there: one line, no stack trace
    bad = cli("sql", "--warehouse", str(wh), "--database", "rr", "SELECT * FROM rr.nope", cwd=tmp_path)
    assert bad.returncode != 0
    err = [line for line in bad.stderr.strip().splitlines() if "rebalance-replay" in line]
    assert len(err) == 1 and "nope" in err[0], bad.stderr[-3000:]
    # nor PySpark's own log of the error with the Java stack trace (JSON on stderr)
    assert "Traceback" not in bad.stderr and "stacktrace" not in bad.stderr, bad.stderr[-3000:]
