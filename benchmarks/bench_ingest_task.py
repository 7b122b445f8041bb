"""One ingest task without Spark: ``jobs.ingest.parse_slices`` (read a file slice, tell other APIs' lines
by their head, parse the rest, type the routine lines in blocks) over the first ``--lines`` lines of one
broker file of ``bench_pipeline.py``'s mixed log (``--mixed``: 9 other-API lines a group line), as an
ingest task reads them, with the job's settings (columnar routine lines). Prints lines, requests and the
task's seconds (process CPU and wall; building the input excluded).

    .venv/bin/python benchmarks/bench_pipeline.py --lines 1000000 --mixed --stages duckdb   # the log, once
    .venv/bin/python benchmarks/bench_ingest_task.py --lines 200000

The lines are copied once into ``benchmarks/.data/ingest-task-<lines>/broker-1/kafka-request.log.1``. Two
trees side by side, as ``bench_many_groups.py``: run this checkout's copy with each tree as the working
directory (its code first on the path).
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, os.getcwd())  # the tree run from (compare two checkouts with one script)

DATA = Path(__file__).resolve().parent / ".data"
MIXED = DATA / "pipeline-l1000000-g200-m5-x9" / "logs"


def input_file(lines: int) -> Path:
    """The first ``lines`` lines of the mixed log's first broker file (copied once)."""
    out = DATA / f"ingest-task-{lines}" / "broker-1" / "kafka-request.log.1"
    if out.exists():
        return out
    sources = sorted(p for p in MIXED.rglob("*") if p.is_file())
    if not sources:
        raise SystemExit(f"no mixed log under {MIXED}: run bench_pipeline.py --lines 1000000 --mixed first")
    out.parent.mkdir(parents=True, exist_ok=True)
    with sources[0].open("rb") as f:
        head = list(itertools.islice(f, lines))
    out.with_suffix(".tmp").write_bytes(b"".join(head))
    out.with_suffix(".tmp").rename(out)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lines", type=int, default=200_000)
    args = p.parse_args()
    import pyarrow as pa

    from rebalance_replay.jobs.ingest import parse_slices
    from rebalance_replay.jobs.log_files import describe_file, plan_slices

    path = input_file(args.lines)
    described = describe_file(str(path), r"(?P<broker_id>[^/]+)/[^/]+$")
    assert described is not None
    slices, _ = plan_slices([described], {})
    cpu, wall = time.process_time(), time.perf_counter()
    requests = other = 0
    for row in parse_slices(slices, "UTC", datetime(2026, 12, 7, tzinfo=UTC), columnar=True):
        if isinstance(row, pa.RecordBatch):
            requests += row.num_rows
        elif row["row_kind"] == "request":
            requests += 1
        else:
            other += 1
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    print(f"{args.lines} lines, {requests} requests, {other} other rows: cpu {cpu:.2f} s, wall {wall:.2f} s")


if __name__ == "__main__":
    main()
