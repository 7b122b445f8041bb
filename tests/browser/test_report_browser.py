"""Report pages in a real headless Chromium with the network off (no Spark): a 1,000-member group over a
day renders, with one lane per member and one band per rebalance, no console error and no request
leaving file://. How fast it renders is measured by ``benchmarks/bench_report_render.py`` (against a
10-member page, side by side), not asserted here.

Pages a person can read (issue 28): at 1280 and 1920 px wide the overview, a group with long member ids,
absolute evidence paths and many findings, a rebalance storm (≈150 rebalances in 20 minutes) and the
1,000-member day never scroll sideways and never show two band labels on top of each other (also zoomed
in and out); a member id copies on click; a lane's name shows its ids; a group's row on the overview opens
its page. Screenshots go to tests/artifacts/ (ignored by git), named by page and width."""

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
from tests.browser.pages import write_report

pytestmark = [pytest.mark.browser, pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or "")]

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
T0 = 1_714_521_600_000  # 2024-05-01T00:00:00Z
DAY = 86_400_000

LANES_JS = "document.querySelectorAll('#timeline .yaxislayer-above g.ytick').length"
HEAT_ROWS_JS = "document.getElementById('timeline').data.find(t => t.type === 'heatmap').z.length"
BANDS_JS = "document.querySelectorAll('#timeline .layer-below .shapelayer path').length"
WIDTHS = (1280, 1920)
#: the visible band labels and how many pairs of them overlap (bounding rects, half a pixel of slack)
LABELS_JS = """() => {
  const boxes = [...document.querySelectorAll('#timeline .annotation')]
    .filter(a => getComputedStyle(a).display !== 'none' && getComputedStyle(a).visibility !== 'hidden')
    .map(a => a.getBoundingClientRect()).filter(r => r.width > 0 && r.height > 0);
  let overlaps = 0;
  for (let i = 0; i < boxes.length; i++)
    for (let j = i + 1; j < boxes.length; j++) {
      const a = boxes[i], b = boxes[j];
      const across = a.left < b.right - 0.5 && b.left < a.right - 0.5;
      if (across && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5) overlaps++;
    }
  return [boxes.length, overlaps];
}"""
SIDEWAYS_JS = "document.documentElement.scrollWidth - document.documentElement.clientWidth"
#: a point of lane ``lane``: in the lane names left of the plot, or (``x``: 0…1) across the plot
LANE_POINT_JS = """([lane, x]) => {
  const el = document.getElementById('timeline');
  el.scrollIntoView();
  const fl = el._fullLayout, box = el.getBoundingClientRect();
  const px = x === null ? fl.xaxis._offset / 2 : fl.xaxis._offset + fl.xaxis._length * x;
  return [box.left + px, box.top + fl.yaxis._offset + fl.yaxis.l2p(lane)];
}"""


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
    with offline_browser(width=WIDTHS[0]) as ctx:
        page = open_offline(ctx, path, load, wait_for="#timeline[data-labels]")
        # from navigation start to the plot drawn, as the browser measured it (reported, not asserted)
        in_page = int(page.evaluate("document.getElementById('timeline').dataset.rendered")) / 1000
        # 1,001 lanes (the group + 1,000 members): every 11th labelled, every member a heatmap row
        assert page.evaluate("document.getElementById('timeline').dataset.lanes") == "1001"
        assert page.evaluate(LANES_JS) == len(lane_ticks(1001)) == 91
        assert page.evaluate(HEAT_ROWS_JS) == 1000
        assert page.evaluate(BANDS_JS) == 24
        for width in WIDTHS:  # the page is 12,000 px of lanes and 1,000 sessions: the top as seen
            assert fits(page, "group-1000-members", width, full_page=False) > 0
    print(f"1,000-member day rendered in {in_page:.2f}s ({path.stat().st_size / 1e6:.1f} MB page)")
    assert load.blocked == [] and load.console_errors == [] and load.page_errors == []


def relabelled(page: Any, action: Any) -> None:
    """Run ``action`` (a resize, a zoom) and wait until the page has placed its band labels again."""
    page.evaluate("document.getElementById('timeline').removeAttribute('data-labels')")
    action()
    page.wait_for_selector("#timeline[data-labels]", state="attached", timeout=30_000)


def fits(page: Any, name: str, width: int, *, full_page: bool = True) -> int:
    """At ``width`` px: no sideways scroll, no two visible band labels overlapping; a screenshot. The
    number of visible labels."""
    if page.viewport_size["width"] != width:
        relabelled(page, lambda: page.set_viewport_size({"width": width, "height": 900}))
    assert page.evaluate(SIDEWAYS_JS) <= 0, f"{name} scrolls sideways at {width} px"
    shown, overlaps = page.evaluate(LABELS_JS)
    assert overlaps == 0, f"{name} at {width} px: {overlaps} pairs of band labels overlap"
    assert int(page.get_attribute("#timeline", "data-labels") or -1) == shown
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}-{width}.png"), full_page=full_page)
    return int(shown)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return write_report(tmp_path_factory.mktemp("report"))


def test_a_group_page_reads_at_1280_and_1920(report: dict[str, Path]) -> None:
    """Long member ids shown short (the whole id in the title, copied on click), absolute evidence paths as
    folder/name:line, 30 findings: no sideways scroll at either width; a lane's name shows its ids."""
    load = PageLoad()
    with offline_browser(width=WIDTHS[0]) as ctx:
        page = open_offline(ctx, report["normal"], load, wait_for="#timeline[data-labels]")
        for width in WIDTHS:
            assert fits(page, "group-long-ids", width) == 6  # every label fits: six rebalances an hour
        mid = page.locator("#sessions + table .mid").first
        full = mid.get_attribute("data-copy") or ""
        assert len(full) > 60 and mid.get_attribute("title") == full
        assert mid.inner_text() == f"{full[:17]}…{full[-8:]}"
        assert page.locator("table.findings .more").first.inner_text() == "+8 more"  # 12 members, 4 shown
        code = page.locator("table.findings code").first
        assert code.inner_text().startswith("broker-1/kafka-request.log.2024-06-03-08.gz:")
        assert (code.get_attribute("title") or "").startswith("/var/lib/kafka/request-logs/")
        mid.click()
        page.wait_for_selector("#sessions + table .mid.copied", timeout=5_000)
        ctx.grant_permissions(["clipboard-read", "clipboard-write"])
        assert page.evaluate("navigator.clipboard.readText()") == full
        page.mouse.move(*page.evaluate(LANE_POINT_JS, [1, None]))
        tip = page.locator("#rr-tip")
        assert tip.is_visible() and full in tip.inner_text()  # the first lane's title: its member id
    assert load.blocked == [] and load.console_errors == [] and load.page_errors == []


def test_a_rebalance_storm_never_overlaps_its_labels(report: dict[str, Path]) -> None:
    """150 rebalances in 20 minutes: only the labels that fit are shown, at either width and zoomed in or
    out; every band keeps its hover."""
    load = PageLoad()
    with offline_browser(width=WIDTHS[0]) as ctx:
        page = open_offline(ctx, report["storm"], load, wait_for="#timeline[data-labels]")
        assert page.evaluate(BANDS_JS) == 150
        shown = [fits(page, "group-storm", width) for width in WIDTHS]
        assert 0 < shown[0] <= shown[1] < 150
        el = "document.getElementById('timeline')"
        x0, x1 = page.evaluate(f"{el}._fullLayout.xaxis.range.map(x => {el}._fullLayout.xaxis.d2l(x))")
        mid = (x0 + x1) / 2
        relabelled(
            page, lambda: page.evaluate(f"Plotly.relayout({el}, {{'xaxis.range': [{mid}, {mid + 120_000}]}})")
        )
        zoomed = fits(page, "group-storm-zoomed", WIDTHS[1], full_page=False)
        assert zoomed >= 8  # two minutes: 15 rebalances, most labelled
        relabelled(
            page,
            lambda: page.evaluate(
                f"Plotly.relayout({el}, {{'xaxis.range': [{x0 - 3_600_000}, {x1 + 3_600_000}]}})"
            ),
        )
        assert 0 < fits(page, "group-storm-zoomed-out", WIDTHS[1], full_page=False) < shown[1]
        hovers = page.evaluate(f"{el}.data.find(t => t.name === 'rebalance').text.length")
        assert hovers == 150
    assert load.blocked == [] and load.console_errors == [] and load.page_errors == []


def test_the_overview_timeline_opens_a_groups_page(report: dict[str, Path]) -> None:
    """One row per group (most time rebalancing first), no sideways scroll; a click on a group's name or
    on its row opens its page."""
    load = PageLoad()
    with offline_browser(width=WIDTHS[0]) as ctx:
        page = open_offline(ctx, report["overview"], load, wait_for="#timeline[data-labels]")
        assert page.evaluate(LANES_JS) == 8  # storm, normal, six quiet groups
        for width in WIDTHS:
            fits(page, "overview", width)
        page.mouse.move(*page.evaluate(LANE_POINT_JS, [1, None]))
        assert page.locator("#rr-tip").inner_text().startswith("payments-ledger-settlement-eu\n6 rebalances")
        page.mouse.click(*page.evaluate(LANE_POINT_JS, [1, None]))
        page.wait_for_url("**/group-normal.html", timeout=10_000)
        page.go_back()
        page.wait_for_selector("#timeline[data-labels]", state="attached", timeout=30_000)
        page.mouse.click(*page.evaluate(LANE_POINT_JS, [2, 0.5]))  # a quiet group's empty row
        page.wait_for_url("**/group-quiet-0.html", timeout=10_000)
    assert load.blocked == [] and load.console_errors == [] and load.page_errors == []
