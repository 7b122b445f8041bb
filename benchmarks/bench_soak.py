"""The soak of issue 29 (part 5): days of hourly-rotated logs on three brokers, audited by an hourly
``run --incremental`` (the last one ``--final``), as a scheduler runs it.

After every run: the ingest's accounting identity (this run and the warehouse total) and every line the
brokers wrote so far read exactly once. At the end: the tables equal one batch ``run`` over every file,
row for row (predictions, transitions, requests, quarantine equal; rebalances and member sessions equal
but for the rows batch adds for what is still open at the end of the log). Prints each run's time: does a
run grow with the warehouse's age?

    .venv/bin/python benchmarks/bench_soak.py --hours 48 [--work /tmp/soak]

Great Expectations is off (``report.great_expectations=false``: its cost is issue 30's); the report is on.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from simulator.soak import generate, run_soak  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hours", type=int, default=48)
    p.add_argument("--work", type=Path, default=Path("/tmp/rebalance-replay-soak"))
    args = p.parse_args(argv)
    t = time.monotonic()
    logs = generate(args.hours)
    took = time.monotonic() - t
    print(f"soak: {logs.count()} lines over {args.hours} h on 3 brokers, generated in {took:.0f} s")
    res = run_soak(logs, args.work)
    s = res.seconds
    print("| runs | first | median | last | last 6 / first 6 (medians) | max |")
    print("|---:|---:|---:|---:|---:|---:|")
    head, tail = statistics.median(s[:6]), statistics.median(s[-7:-1] or s[-1:])
    row = [
        f"{len(s)}",
        f"{s[0]:.1f} s",
        f"{statistics.median(s):.1f} s",
        f"{s[-1]:.1f} s",
        f"{tail / head:.2f}",
    ]
    print("| " + " | ".join([*row, f"{max(s):.1f} s"]) + " |")
    print("per run (s): " + " ".join(f"{x:.1f}" for x in s))
    for problem in res.problems:
        print(f"PROBLEM: {problem}")
    print("soak: ok" if not res.problems else f"soak: {len(res.problems)} problem(s)")
    return 0 if not res.problems else 1


if __name__ == "__main__":
    sys.exit(main())
