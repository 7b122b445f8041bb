"""How long a group's report page takes to render in headless Chromium (network off), as a ratio against a
small page loaded side by side in the same browser: a 1,000-member group over a day (28.8 M heartbeats
drawn as density, 24 rebalances; ``tests/browser``'s page) against a 10-member one.

    .venv/bin/python benchmarks/bench_report_render.py [--loads 5] [--members 1000]

Each load is a fresh tab; the time is the page's own (navigation start → the plot drawn, the
``data-rendered`` mark the page sets). Pages alternate big, small, big, … so a noisy machine slows both;
prints each page's median and the ratio of medians. (The report issue's target: the big page under 5 s
on an idle 2-core machine.)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.browser.offline_browser import PageLoad, offline_browser, open_offline, skip_reason  # noqa: E402
from tests.browser.test_report_browser import write_group_page  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--loads", type=int, default=5)
    p.add_argument("--members", type=int, default=1000)
    args = p.parse_args(argv)
    reason = skip_reason()
    if reason is not None:
        print(f"bench_report_render: {reason}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        pages = {n: write_group_page(Path(tmp) / "report", n) for n in (args.members, 10)}
        times: dict[int, list[float]] = {n: [] for n in pages}
        with offline_browser() as ctx:
            for _ in range(args.loads):
                for n, path in pages.items():
                    page = open_offline(ctx, path, PageLoad(), wait_for="#timeline[data-rendered]")
                    times[n].append(
                        int(page.evaluate("document.getElementById('timeline').dataset.rendered")) / 1000
                    )
                    page.close()
    big, small = (statistics.median(times[n]) for n in pages)
    for n, ts in times.items():
        loads = ", ".join(f"{t:.2f}" for t in ts)
        print(f"{n:>5} members: median {statistics.median(ts):.2f} s (loads: {loads})")
    print(f"ratio {args.members}/10 members: {big / small:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
