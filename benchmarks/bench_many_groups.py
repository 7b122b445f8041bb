"""One process replaying many small groups (``simulator.adversarial.many_groups``: 2–3 members each, a
join, syncs, heartbeats, commits, a leave) through ``GroupReplayer``, group by group as a Spark task does:
the replay's fixed cost per group, for comparing two trees with ``farm-bench`` (issue 30's "20k groups of 2").

    .venv/bin/python benchmarks/bench_many_groups.py --groups 1000

The groups' rows are generated and parsed once into ``benchmarks/.data/many-groups-<N>.pkl`` (reused by
later runs); each run prints groups, predictions and the replay's seconds (loading excluded). Two trees
side by side: run this checkout's copy with each tree as the working directory, whose code comes first on
the path:

    S="$PWD/benchmarks/bench_many_groups.py --groups 1000"
    farm-bench -n 5 --vs "sh -c 'cd OTHER_TREE && exec $PWD/.venv/bin/python $S'" \\
        -- sh -c "exec .venv/bin/python $S"
"""

from __future__ import annotations

import argparse
import os
import pickle
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, os.getcwd())  # the tree run from (compare two checkouts with one script)

DATA = Path(__file__).resolve().parent / ".data"


def groups_rows(n: int) -> dict[str, list[dict[str, Any]]]:
    """``n`` groups' parsed rows, by group id (generated once, then read from the cache)."""
    cache = DATA / f"many-groups-{n}.pkl"
    if cache.exists():
        rows: dict[str, list[dict[str, Any]]] = pickle.loads(cache.read_bytes())
        return rows
    from simulator.adversarial import by_broker, many_groups
    from simulator.fidelity import parse_rows

    out: dict[str, list[dict[str, Any]]] = {}
    for row in parse_rows(by_broker(many_groups(n))):
        if row.get("group_id"):
            out.setdefault(str(row["group_id"]), []).append(row)
    DATA.mkdir(exist_ok=True)
    cache.write_bytes(pickle.dumps(out))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--groups", type=int, default=1000)
    args = p.parse_args()
    from rebalance_replay.transforms.coordinator.config import CoordinatorConfig
    from rebalance_replay.transforms.replay import GroupReplayer, ReplaySettings

    groups = groups_rows(args.groups)
    settings = ReplaySettings(CoordinatorConfig(), broker_lag_ms=200, line_lag_ms=5)
    start = time.perf_counter()
    predictions = 0
    for group_id, rows in groups.items():
        replayer = GroupReplayer(group_id, settings)
        replayer.feed(rows)
        end = max(int(r["completion_ms"]) for r in rows if r.get("completion_ms") is not None)
        predictions += len(replayer.process(end + 1).rows.get("predictions", []))
        replayer.finish()
    seconds = time.perf_counter() - start
    print(f"{len(groups)} groups, {predictions} predictions, replay {seconds:.2f} s")


if __name__ == "__main__":
    main()
