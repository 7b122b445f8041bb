"""One process replaying an ingested warehouse's classic-group rows (Arrow slices, bulk validation):
the replay's pure cost on a given log, for comparing two trees with ``farm-bench``.

    .venv/bin/python benchmarks/bench_replay_sample.py --warehouse warehouse-incidents [--set K=V ...]

The rows are read once with Spark into ``benchmarks/.data/<warehouse name>-classic.parquet`` (reused by
later runs, so a timed run starts no JVM); each run prints groups, rows and the replay's seconds. Two trees
side by side: run the script (this checkout's copy, by absolute path) with each tree as the working
directory, whose code comes first on the path:

    S="$PWD/benchmarks/bench_replay_sample.py --warehouse $PWD/warehouse-incidents"
    X="--set broker.group.max.size=8"  # what the demo ran the incident sample with
    farm-bench -n 9 --vs "sh -c 'cd OTHER_TREE && exec $PWD/.venv/bin/python $S $X'" \\
        -- sh -c "exec .venv/bin/python $S $X"
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, os.getcwd())  # the tree run from (compare two checkouts with one script)

DATA = Path(__file__).resolve().parent / ".data"


def classic_rows(warehouse: Path) -> Path:
    """The warehouse's classic-group ``requests`` rows as a parquet file (made once, with Spark)."""
    out = DATA / f"{warehouse.resolve().name}-classic.parquet"
    if not out.exists():
        import pyarrow.parquet as pq

        from benchmarks.bench_pipeline import _classic, _spark
        from rebalance_replay.jobs.config import load_config

        DATA.mkdir(parents=True, exist_ok=True)
        table = _classic(_spark(), load_config(warehouse=str(warehouse))).toArrow()
        pq.write_table(table, out)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--warehouse", type=Path, required=True)
    p.add_argument("--set", action="append", default=[], dest="overrides")
    args = p.parse_args(argv)
    import pyarrow.parquet as pq

    from benchmarks.bench_replay import replay_in_process
    from rebalance_replay.jobs.config import load_config
    from rebalance_replay.jobs.replay import settings_from

    table = pq.read_table(classic_rows(args.warehouse))
    horizon = int(max(table.column("completion_ms").to_pylist())) + 1
    settings = settings_from(load_config(overrides=args.overrides))
    groups, secs = replay_in_process(table, settings, horizon, columns=True)
    print(f"{groups} groups, {table.num_rows} rows, replay {secs:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
