"""Report pages in a real headless Chromium with the network off (no Spark): a 1,000-member group over a
day renders, with one lane per member and one band per rebalance, no console error and no request
leaving file://. Screenshots go to tests/artifacts/ (ignored by git). How fast it renders is measured by
``benchmarks/bench_report_render.py`` (against a 10-member page, side by side), not asserted here."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from rebalance_replay.jobs.report import write_plotly_asset
from rebalance_replay.transforms.report.html import group_html
from rebalance_replay.transforms.report.model import HeartbeatBin, build_group_page, heartbeat_bin_ms
from rebalance_replay.transforms.report.timeline import lane_ticks
from tests.browser.offline_browser import PageLoad, offline_browser, open_offline, skip_reason

pytestmark = [pytest.mark.browser, pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or "")]

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
T0 = 1_714_521_600_000  # 2024-05-01T00:00:00Z
DAY = 86_400_000

LANES_JS = "document.querySelectorAll('#timeline .yaxislayer-above g.ytick').length"
HEAT_ROWS_JS = "document.getElementById('timeline').data.find(t => t.type === 'heatmap').z.length"
BANDS_JS = "document.querySelectorAll('#timeline .layer-below .shapelayer path').length"


def big_group(members: int = 1000, rebalances: int = 24) -> Any:
    """A 1,000-member group over a day: heartbeats every 3 s (28.8 M, binned as the Spark side does),
    a rebalance every hour with every member joining and syncing, one eviction and a few mismatches."""
    rnd = random.Random(7)
    ids = [f"consumer-{i}-{rnd.getrandbits(64):016x}" for i in range(members)]
    total = members * (DAY // 3000)
    bin_ms = heartbeat_bin_ms(total, DAY)
    bins = [HeartbeatBin(m, T0 + b * bin_ms, bin_ms // 3000) for m in ids for b in range(DAY // bin_ms)]
    preds: list[dict[str, Any]] = []
    rebs: list[dict[str, Any]] = []
    for r in range(rebalances):
        start = T0 + r * 3_600_000 + 1000
        for i, m in enumerate(ids):
            base = {
                "source_file": "b/kafka-request.log",
                "line_no": r * 10_000 + i,
                "group_id": "big",
                "seq": 0,
                "member_id": m,
                "group_instance_id": None,
                "request_generation_id": r,
                "observed_error": "NONE",
                "predicted_error": "NONE",
                "observed_generation_id": r + 1,
                "predicted_generation_id": r + 1,
                "observed_member_id": m,
                "predicted_member_id": m,
                "scored": True,
                "matched": not (r == 3 and i < 5),
                "mismatch_kinds": ["error"],
            }
            preds.append(
                {**base, "api": "JOIN_GROUP", "arrival_ms": start + i, "observed_completion_ms": start + 3000}
            )
            preds.append(
                {
                    **base,
                    "api": "SYNC_GROUP",
                    "arrival_ms": start + 3001 + i % 50,
                    "observed_completion_ms": start + 3100,
                }
            )
        rebs.append(
            {
                "group_id": "big",
                "rebalance_seq": r + 1,
                "generation_from": r,
                "generation_to": r + 1,
                "started_ms": start,
                "ended_ms": start + 3100,
                "outcome": "stable",
                "total_duration_ms": 3100,
                "join_phase_ms": 3000,
                "sync_phase_ms": 100,
                "trigger": "new_member" if r % 2 else "session_expiry",
                "members_before": ids,
                "members_after": ids,
                "joined": [],
                "left": [],
                "evicted": [],
            }
        )
    sessions = [
        {
            "group_id": "big",
            "member_id": m,
            "group_instance_id": None,
            "client_id": f"c{i}",
            "client_address": f"10.1.{i // 250}.{i % 250}",
            "generation_id": 1,
            "joined_ms": T0 + 1000 + i,
            "last_heartbeat_ms": None,
            "heartbeats": 0,
            "commits": 0,
            "ended_ms": T0 + DAY // 2 if i == 0 else None,
            "end_reason": "session_expiry" if i == 0 else "open",
            "is_leader": i == 0,
        }
        for i, m in enumerate(ids)
    ]
    return build_group_page(
        "big",
        predictions=preds,
        heartbeat_bins=bins,
        bin_ms=bin_ms,
        transitions=[],
        rebalances=rebs,
        sessions=sessions,
        findings=None,
    )


def write_group_page(out: Path, members: int) -> Path:
    """The page of a ``members``-member group over a day (``big_group``), with its plotly asset."""
    page_model = big_group(members)
    write_plotly_asset(out)
    path = out / f"group-{members}.html"
    path.write_text(group_html(page_model, title=f"{members:,} members over a day"), encoding="utf-8")
    return path


def test_big_group_renders_offline(tmp_path: Path) -> None:
    assert big_group().density is not None  # 28.8 M heartbeats are drawn as density
    path = write_group_page(tmp_path / "report", 1000)
    load = PageLoad()
    with offline_browser() as ctx:
        page = open_offline(ctx, path, load, wait_for="#timeline[data-rendered]")
        # from navigation start to the plot drawn, as the browser measured it (reported, not asserted)
        in_page = int(page.evaluate("document.getElementById('timeline').dataset.rendered")) / 1000
        # 1,001 lanes (the group + 1,000 members): every 11th labelled, every member a heatmap row
        assert page.evaluate("document.getElementById('timeline').dataset.lanes") == "1001"
        assert page.evaluate(LANES_JS) == len(lane_ticks(1001)) == 91
        assert page.evaluate(HEAT_ROWS_JS) == 1000
        assert page.evaluate(BANDS_JS) == 24
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "big-group.png"))
    print(f"1,000-member day rendered in {in_page:.2f}s ({path.stat().st_size / 1e6:.1f} MB page)")
    assert load.blocked == [] and load.console_errors == [] and load.page_errors == []
