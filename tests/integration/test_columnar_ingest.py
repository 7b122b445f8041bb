"""Ingest with the columnar parser of routine lines (``input.columnar_json=true``, the default) against
ingest with ``parse_line`` for every line (``false``), and ingest through Spark's parquet writer instead
of the tasks' own files, on the corpus of ``tests/log_corpus.py`` plus the
bundled samples and the damaged files: all three must write the same ``requests``, ``quarantine`` and
``ingest_files`` rows, compared column by column after sorting (``ingested_at``, the wall clock of each
run, left out). The line-by-line equality is ``tests/unit/test_columnar_log.py``; this is the wiring:
blocks, line numbers, files, the side files of quarantined lines and counts."""

from __future__ import annotations

import gzip
import shutil
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from rebalance_replay.jobs.config import load_config
from rebalance_replay.jobs.delta import open_store
from rebalance_replay.jobs.ingest import BLOCK_LINES, ingest
from rebalance_replay.schemas import INGEST_FILES, QUARANTINE, REQUESTS
from simulator.mutations import base_lines, mutated_lines, write_bad_files
from tests.log_corpus import aimed_lines, same_value, suite_lines

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]


def _hours_on(line: str, hours: int) -> str:
    """``line`` with its log4j time ``hours`` later (lines without one as they are)."""
    stamp = "%Y-%m-%d %H:%M:%S"
    try:
        moved = datetime.strptime(line[1:20], stamp) + timedelta(hours=hours)
    except ValueError:
        return line
    return "[" + moved.strftime(stamp) + line[20:]


def _corpus(root: Path) -> Path:
    shutil.copytree(ROOT / "samples" / "logs", root / "logs" / "samples")
    base = base_lines()
    found = suite_lines()
    routine = [ln for ln in base if '"requestApiKey":12,' in ln or '"requestApiKey":8,' in ln]
    files = {
        "broker-t/kafka-request.log.2024-05-01-01": found,
        "broker-b/kafka-request.log.2024-05-01-02": base,
        "broker-m/kafka-request.log.2024-05-01-03": [
            ln for s in (1, 2, 3) for ln in mutated_lines(base, 1500, s)
        ],
        "broker-a/kafka-request.log.2024-05-01-04": list(aimed_lines(base + found)),
        # more than one block of routine lines, with bad lines among them; each repetition an hour on
        # from the last, as a broker's clock moves (a repetition at the same times is a clock stepped back)
        "broker-r/kafka-request.log.2024-05-01-05": [
            _hours_on(ln, i)
            for i in range(2 * BLOCK_LINES // len(routine) + 1)
            for ln in [*routine, found[i % len(found)]]
        ],
    }
    for name, lines in files.items():
        path = root / "logs" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        text = "\n".join(ln for ln in lines if isinstance(ln, str)) + "\n"
        path.write_bytes(text.encode("utf-8", errors="replace"))
    gz = root / "logs" / "broker-g" / "kafka-request.log.2024-05-01-06.gz"
    gz.parent.mkdir(parents=True)
    gz.write_bytes(gzip.compress(("\n".join(routine) + "\n").encode()))
    write_bad_files(root / "logs" / "bad", base, long_line_mb=1)
    return root / "logs"


def _rows(spark: Any, warehouse: Path, table: Any) -> list[dict[str, Any]]:
    store = open_store(spark, str(warehouse), "auto")
    rows = [r.asDict(recursive=True) for r in store.read(table).collect()]
    for r in rows:
        r.pop("ingested_at", None)
    key = ("source_file", "line_no") if table is not INGEST_FILES else ("source_file", "start_line")
    return sorted(rows, key=lambda r: tuple(r[k] for k in key))


def test_columnar_and_per_line_ingests_write_the_same_rows(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three ingests of the corpus: every line through ``parse_line``; the columnar parser (both with the
    tasks writing the ``requests`` files themselves, the delta-rs default); and the columnar parser
    with Spark's writer (what the delta-spark engine does, ``task_stage`` None)."""
    logs = _corpus(tmp_path / "corpus")
    warehouses = {}
    for name, columnar, task_files in (
        ("per_line", False, True),
        ("columnar", True, True),
        ("spark", True, False),
    ):
        wh = tmp_path / f"wh-{name}"
        overrides = (f"input.columnar_json={str(columnar).lower()}", "input.timezone=Europe/Berlin")
        config = load_config((), overrides, str(wh))
        store = open_store(spark, str(wh), "auto")
        if not task_files:
            monkeypatch.setattr(store, "task_stage", lambda table: None)
        result = ingest(spark, store, config, [str(logs)], log=lambda m: None)
        assert result.run.balanced
        assert not list((wh / "_ingest").glob("*-side"))  # the side files go with the batch
        assert not list((wh / REQUESTS.name).glob("_stage-*"))
        warehouses[name] = wh
    for table in (REQUESTS, QUARANTINE, INGEST_FILES):
        per_line = _rows(spark, warehouses["per_line"], table)
        for other in ("columnar", "spark"):
            other_rows = _rows(spark, warehouses[other], table)
            assert len(per_line) == len(other_rows), (table.name, other)
            for p, c in zip(per_line, other_rows, strict=True):
                for column in p:
                    where = (other, table.name, p["source_file"], p.get("line_no"), column)
                    assert same_value(p[column], c[column]), where
    assert len(_rows(spark, warehouses["per_line"], QUARANTINE)) > 1000  # the corpus is mostly bad lines
    assert len(_rows(spark, warehouses["per_line"], REQUESTS)) > 2 * BLOCK_LINES
