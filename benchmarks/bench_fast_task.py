"""One fast-path replay task without Spark: the ``mapInArrow`` function of ``jobs.replay_fast`` over many
small groups (``simulator.adversarial.many_groups``, the rows of ``bench_many_groups.py``), fed as a Spark
task is fed — the groups' rows sorted by group and replay order, in Arrow batches of 10,000 rows — and its
output batches drained. What a task pays a group beyond the model's replay (the hand-off into rows, the
output tables, the side rows) shows against ``bench_many_groups.py`` (the replay alone) on the same groups.

    .venv/bin/python benchmarks/bench_fast_task.py --groups 1000

The feed is built before the clock starts; the JVM's side (``pack``: the packed JSON column) is left out:
the function reads the feed's columns as they are (its ``unpack`` is timed separately on the same batches
and printed). Two trees side by side, as ``bench_many_groups.py``: run this checkout's copy with each tree
as the working directory.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.getcwd())  # the tree run from (compare two checkouts with one script)
sys.path.insert(1, str(Path(__file__).resolve().parent))

BATCH_ROWS = 10_000  # spark.sql.execution.arrow.maxRecordsPerBatch's default


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--groups", type=int, default=1000)
    args = p.parse_args()
    import pyarrow as pa
    import pyarrow.compute as pc
    from bench_many_groups import groups_rows

    from rebalance_replay.jobs import replay_fast
    from rebalance_replay.jobs.config import load_config
    from rebalance_replay.jobs.replay import settings_from
    from rebalance_replay.jobs.replay_wire import FEED
    from rebalance_replay.transforms.ordering import SORT_COLUMNS

    groups = groups_rows(args.groups)
    schema = FEED.arrow_schema()
    horizon = 1 + max(
        int(r["completion_ms"]) for rows in groups.values() for r in rows if r.get("completion_ms")
    )
    feed = pa.Table.from_pylist(
        [
            {**{f.name: r.get(f.name) for f in schema}, "bucket_end_ms": horizon, "final": True}
            for rows in groups.values()
            for r in rows
            if r.get("api_key") is not None
        ],
        schema=schema,
    )
    order = pc.sort_indices(feed, [("group_id", "ascending"), *((c, "ascending") for c in SORT_COLUMNS)])
    batches = feed.take(order).combine_chunks().to_batches(max_chunksize=BATCH_ROWS)
    settings = settings_from(load_config())  # the job's, from the default configuration
    replay_fast.unpack = lambda table: table  # type: ignore[assignment]  # the feed is already unpacked
    with tempfile.TemporaryDirectory() as side_dir:
        fn = replay_fast.fast_function(settings, side_dir)
        start = time.perf_counter()
        predictions = sum(b.num_rows for b in fn(iter(batches)))
        seconds = time.perf_counter() - start
    print(f"{len(groups)} groups, {feed.num_rows} rows, {predictions} predictions, task {seconds:.2f} s")


if __name__ == "__main__":
    main()
