"""A small warehouse on the delta-spark engine: the bundled sample's two brokers ingested one after the
other, replayed (batch) and listed (``history``), in one process with a local session and Delta's jars (from
``.cache/ivy``, as the tests cache them). What a cluster user with a small daily batch pays in fixed costs a
command on this engine: Delta reading each table's log into a snapshot, its commits.

    .venv/bin/python benchmarks/bench_delta_spark_small.py
    .venv/bin/python benchmarks/bench_delta_spark_small.py --snapshot-partitions 50   # Delta's default

``--snapshot-partitions N`` sets the session's ``spark.databricks.delta.snapshotPartitions`` (the engine then
keeps it); without it the engine sizes it (``jobs.delta.spark.size_snapshots``). Times whole commands
against a baseline with ``farm-bench``, a pair at a time. Prints each command's seconds.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.getcwd())  # the tree run from (compare two checkouts with one script)

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "samples" / "logs"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--snapshot-partitions", type=int, default=None)
    p.add_argument("--shuffle-partitions", type=int, default=8, help="the session's (the CLI's default: 8)")
    args = p.parse_args()
    from rebalance_replay.jobs.cli import main as cli
    from rebalance_replay.jobs.delta.spark import SNAPSHOT_PARTITIONS, delta_session_conf
    from rebalance_replay.jobs.spark_session import get_spark

    conf = {
        **delta_session_conf(ivy_dir=str(ROOT / ".cache" / "ivy")),
        "spark.sql.shuffle.partitions": str(args.shuffle_partitions),
    }
    if args.snapshot_partitions is not None:
        conf[SNAPSHOT_PARTITIONS] = str(args.snapshot_partitions)
    spark = get_spark("bench-delta-spark-small", conf=conf)
    work = Path(tempfile.mkdtemp(prefix="bench-delta-spark-"))
    wh = ["--warehouse", str(work / "wh"), "--set", "storage.engine=delta-spark"]
    commands = (
        ["ingest", "--input", str(SAMPLE / "broker-1")],
        ["ingest", "--input", str(SAMPLE / "broker-2")],
        ["replay"],
        ["history"],
    )
    try:
        for command in commands:
            started = time.monotonic()
            if cli([*command, *wh]) != 0:
                raise SystemExit(f"{command[0]} failed")
            print(f"{command[0]}: {time.monotonic() - started:.1f} s", file=sys.stderr)
        print(f"snapshot partitions: {spark.conf.get(SNAPSHOT_PARTITIONS)}", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        spark.stop()


if __name__ == "__main__":
    main()
