"""Issue 29 part 5, the soak, short: three brokers' logs rotated hourly as log4j leaves them, audited by an
hourly ``run --incremental`` (the last ``--final``). After every run the ingest's accounting identity holds
and every line written so far was read exactly once; at the end the tables equal one batch ``run`` over
the same files, row for row (``simulator.soak``; the 48-hour soak is ``benchmarks/bench_soak.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.soak import generate, run_soak

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(1500)]


def test_hourly_scheduled_runs_equal_one_batch_run(tmp_path: Path, spark: object) -> None:
    logs = generate(hours=2)
    res = run_soak(logs, tmp_path)
    assert res.problems == []
    assert len(res.seconds) == 2 and res.lines_written == logs.count()
