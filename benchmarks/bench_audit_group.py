"""Issue 30: the audit's Python side on one group with a long history — what a task of the audit's
``mapInArrow`` does with a group's rows (``jobs.audit.audit_function``): the stacked Arrow rows made into
:class:`Req` tuples and the other tables' rows (``stacked_rows``), the group's inputs sorted
(``inputs_of``) and every rule run (``group_output``). No Spark in the timed part.

    .venv/bin/python benchmarks/bench_audit_group.py --extract     # once, from bench_history.py's data
    .venv/bin/python benchmarks/bench_audit_group.py [--repeat 3]

``--extract`` reads the stacked rows of group ``bench-00000`` from the old warehouse ``bench_history.py``
builds (``benchmarks/.data/history-h720-g2-m1/warehouse-old.base``: 719 hours of a consumer heartbeating
every 3 s and committing every 5 s, 1.38M requests) and keeps them as
``benchmarks/.data/audit-group/stacked.parquet``. A timed run prints the seconds of each phase (median of
``--repeat``) and the findings' digest: the same digest before and after a change shows the same output.
To compare code, time this script against itself run with an earlier checkout's package first on
``PYTHONPATH`` (``git archive`` of the earlier commit), side by side in one invocation.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / ".data"
HISTORY = DATA / "history-h720-g2-m1" / "warehouse-old.base"
STACKED = DATA / "audit-group" / "stacked.parquet"
GROUP = "bench-00000"


def extract() -> None:
    from pyspark.sql import functions as F

    from rebalance_replay.jobs.audit import disputed, grouped_partitions, stacked_inputs
    from rebalance_replay.jobs.delta import open_store
    from rebalance_replay.jobs.spark_session import get_spark
    from rebalance_replay.schemas import MEMBER_SESSIONS, PREDICTIONS, REBALANCES, REQUESTS, TRANSITIONS

    if not HISTORY.exists():
        sys.exit(f"no {HISTORY}: run benchmarks/bench_history.py first (it builds the 30-day warehouse)")
    spark = get_spark(conf={"spark.driver.memory": "6g", "spark.driver.maxResultSize": "4g"})
    store = open_store(spark, str(HISTORY))
    frames = {
        "requests": store.read(REQUESTS),
        "rebalances": store.read(REBALANCES),
        "member_sessions": store.read(MEMBER_SESSIONS),
        "transitions": store.read(TRANSITIONS),
        "disputes": disputed(store.read(PREDICTIONS)),
    }
    stacked = grouped_partitions(stacked_inputs(frames).where(F.col("group_id") == GROUP))
    import pyarrow.parquet as pq

    STACKED.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(stacked.toArrow(), STACKED)
    print(f"kept {STACKED}")


def timed(repeat: int) -> None:
    import pyarrow.parquet as pq

    from rebalance_replay.jobs.audit import group_output, inputs_of, stacked_rows
    from rebalance_replay.jobs.group_runs import collector_paused
    from rebalance_replay.transforms.audit import AuditSettings, BrokerBounds

    table = pq.read_table(STACKED)
    phases: dict[str, list[float]] = {"rows": [], "inputs": [], "rules": [], "total": []}
    digest = ""
    for _ in range(repeat):
        with collector_paused():
            t0 = time.perf_counter()
            rows = [(kind, row) for _g, kind, row in stacked_rows(table)]
            t1 = time.perf_counter()
            inputs = inputs_of(GROUP, rows, BrokerBounds())
            t2 = time.perf_counter()
            out = group_output(inputs, AuditSettings(), None)
            t3 = time.perf_counter()
        for k, v in zip(phases, (t1 - t0, t2 - t1, t3 - t2, t3 - t0), strict=True):
            phases[k].append(v)
        digest = hashlib.sha256("\n".join(sorted(r["payload"] for r in out)).encode()).hexdigest()[:16]
        del rows, inputs, out
    print(
        f"{table.num_rows} rows: "
        + "  ".join(f"{k} {statistics.median(v):.2f} s" for k, v in phases.items())
        + f"  findings digest {digest}"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--extract", action="store_true")
    p.add_argument("--repeat", type=int, default=1)
    a = p.parse_args()
    if a.extract:
        extract()
    else:
        timed(a.repeat)


if __name__ == "__main__":
    main()
