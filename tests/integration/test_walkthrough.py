"""Issue 28's acceptance: a new on-call engineer's five tasks on the bundled incident sample, through the
CLI as a user types it and the pages in headless Chromium with the network off.

1. *Which groups had trouble?* The overview lists the groups by findings severity; the worst ones are the
   incidents of the sample's ground truth, with their rules.
2. *The sequence for the worst one*: its page has a timeline with one lane per process (a pod that
   restarted keeps its lane across member ids), the rebalances in order, its findings.
3. *The recommended change*: each finding on the page carries its fix and links to its rule's section.
4. *A scheduled two-batch audit*: the live log (``kafka-request.log`` of each broker) is audited, the brokers
   write on, the next scheduled run audits the rest; each stage says what it did in this run and the
   warehouse in total, the second run's findings are new/ongoing, and no Spark warning reaches stderr.
5. *A 10-minute forensics window* on the storm group: one command replays, validates, audits and reports
   the window; the page's numbers are the window's own, its axis is the window, its findings are there,
   and the scheduled run's files are untouched.
"""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from rebalance_replay.jobs.cli import main
from tests.browser.offline_browser import PageLoad, offline_browser, open_offline, skip_reason
from tests.helpers import read_table

#: in the browser tier (a pytest process of its own, after the rest); task 4 needs no browser and runs even
#: where Chromium is missing (it is the check that no Spark warning reaches the terminal)
pytestmark = [pytest.mark.spark, pytest.mark.browser, pytest.mark.timeout(1500)]
needs_chromium = pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or "")

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "samples" / "incidents"
ARTIFACTS = ROOT / "tests" / "artifacts"
TRUTH = json.loads((SAMPLE / "ground_truth.json").read_text())
#: the sample is audited with the broker's group.max.size the incidents were written for (as `make demo`)
MAX_SIZE = ["--set", "broker.group.max.size=8"]
#: batch 1 is the log up to here; batch 2 the rest (what the brokers wrote until the next scheduled run)
CUT = "2024-06-03 08:05:00"
STORM = "inc-r01-storm"
WINDOW = ("2024-06-03T08:00:00Z", "2024-06-03T08:10:00Z")
#: The JVM's own notice for the Vector API module Spark's launcher always adds: not Spark's logging.
JVM_NOTICE = "WARNING: Using incubator modules: jdk.incubator.vector"
SPARK_NOISE = re.compile(r"\b(WARN|INFO|DEBUG)\b|log4j|Setting (default|Spark) log level|setLogLevel")


def _ms(text: str) -> int:
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC).timestamp() * 1000)


def _write_live_logs(inputs: Path, *, batch: int) -> None:
    """Each broker's live ``kafka-request.log``: batch 1 its lines before ``CUT``; batch 2 appends the
    rest, as the broker writes them."""
    for broker in sorted(SAMPLE.glob("broker-*")):
        (src,) = broker.glob("*.gz")
        lines = gzip.decompress(src.read_bytes()).decode().splitlines(keepends=True)
        early = [line for line in lines if line[1:20] < CUT]
        target = inputs / broker.name / "kafka-request.log"
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("a" if batch == 2 else "w") as f:
            f.writelines(early if batch == 1 else lines[len(early) :])


def _cli(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI in a fresh process, as a user starts it (its own JVM and logging)."""
    return subprocess.run(
        [sys.executable, "-m", "rebalance_replay.jobs.cli", *args],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        cwd=tmp,
    )


def _numbers(page: Any) -> dict[str, str]:
    """The header numbers of a report page: label → value."""
    cells = page.eval_on_selector_all(
        ".numbers div",
        "els => els.map(e => [e.firstChild.textContent.trim(), e.querySelector('b').textContent])",
    )
    return {k: v for k, v in cells}


def _files(wh: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(wh)): p.read_bytes()
        for p in wh.rglob("*")
        if p.is_file() and p.relative_to(wh).parts[0] != "forensics" and not p.name.startswith(".lock")
    }


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Task 4 first (it builds the warehouse the others read): two scheduled runs over the live logs."""
    tmp = tmp_path_factory.mktemp("walkthrough")
    inputs, wh = tmp / "logs", tmp / "wh"
    scheduled = ["run", "--incremental", "--input", str(inputs), "--warehouse", str(wh), *MAX_SIZE]
    _write_live_logs(inputs, batch=1)
    # Great Expectations in the second run only (it validates the warehouse in total; CI time)
    first = _cli(tmp, *scheduled, "--set", "report.great_expectations=false")
    assert first.returncode == 0, first.stderr[-3000:]
    _write_live_logs(inputs, batch=2)
    second = _cli(tmp, *scheduled, "--final")
    assert second.returncode == 0, second.stderr[-3000:]
    return {"tmp": tmp, "wh": wh, "runs": (first, second)}


def test_task4_a_scheduled_two_batch_audit_speaks_plainly(audited: dict[str, Any]) -> None:
    first, second = audited["runs"]
    for done in (first, second):
        lines = [x for x in done.stderr.splitlines() if x.strip() and x != JVM_NOTICE]
        assert [x for x in lines if SPARK_NOISE.search(x)] == []  # not one line of Spark's logging
        assert lines[-1].startswith("next: open ") and lines[-1].endswith("(it works offline)")
        out = done.stdout + done.stderr
        assert not re.search(r"\b1 \w+s\b|\(s\)|batch -", out), out  # plurals; no placeholder
        assert re.search(r"\bthis run\b", out) and re.search(r"\bwarehouse\b", out)
    # the first run held back the last moments for late arrivals and said until when, in UTC
    assert re.search(r"held back.*\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}", first.stdout + first.stderr)
    summary = json.loads((audited["wh"] / "summary.json").read_text())
    assert summary["rebalances"] > 0 and "rebalances 0" not in second.stdout
    statuses = {f["status"] for f in read_table(audited["wh"] / "findings")}
    assert "new" in statuses and statuses <= {"new", "ongoing", "resolved"}


@needs_chromium
def test_tasks1_to_3_which_groups_the_sequence_and_the_fix(audited: dict[str, Any]) -> None:
    wh = audited["wh"]
    index = wh / "reports" / "index.html"
    truth_groups = {i["group_id"] for i in TRUTH["incidents"]}
    with offline_browser(width=1280) as context:
        load = PageLoad()
        page = open_offline(context, index, load, wait_for="#timeline[data-rendered]")
        # 1. which groups had trouble: the severity table, worst first, are the sample's incidents
        ranked = page.eval_on_selector_all(
            "table.severity tbody tr", "rows => rows.map(r => [...r.cells].map(c => c.textContent.trim()))"
        )
        troubled = [r[0] for r in ranked if r[1] in ("critical", "warning")]
        assert troubled and set(troubled) <= truth_groups
        worst = troubled[0]
        assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
        page.screenshot(path=str(ARTIFACTS / "walkthrough-overview-1280.png"), full_page=True)
        # 2. its sequence: open its page from the overview
        page.click(f"table.severity a:text-is('{worst}')")
        page.wait_for_selector("#timeline[data-rendered]")
        lanes = int(page.get_attribute("#timeline", "data-lanes") or 0)
        numbers = _numbers(page)
        assert 1 < lanes <= int(numbers["members"]) + 1  # the group lane and a lane per process
        assert page.eval_on_selector_all("table.rebalances tr[id^=rebalance-]", "rows => rows.length") >= 1
        # 3. the recommended change: every finding has its fix, and its rule links to its section
        fixes = page.eval_on_selector_all(
            "table.findings tbody tr[id^=finding-]", "rows => rows.map(r => r.cells[6].textContent.trim())"
        )
        assert fixes and all(f and f != "–" for f in fixes)
        page.screenshot(path=str(ARTIFACTS / "walkthrough-worst-1280.png"), full_page=True)
        assert not load.blocked and not load.console_errors and not load.page_errors


@needs_chromium
def test_task5_a_ten_minute_forensics_window(audited: dict[str, Any]) -> None:
    wh, tmp = audited["wh"], audited["tmp"]
    before = _files(wh)
    lo, hi = (_ms(t) for t in WINDOW)
    args = ["replay", "--warehouse", str(wh), "--group", STORM, "--from", WINDOW[0], "--to", WINDOW[1]]
    assert main([*args, *MAX_SIZE, "--name", "storm", "--set", "report.great_expectations=false"]) == 0
    run = wh / "forensics" / "storm"
    summary = json.loads((run / "summary.json").read_text())
    preds = read_table(run / "predictions")
    assert preds and all(lo <= p["arrival_ms"] < hi and p["group_id"] == STORM for p in preds)
    index = Path(summary["report"]["index"])
    (group_page,) = index.parent.glob("group-*.html")
    with offline_browser(width=1280) as context:
        load = PageLoad()
        page = open_offline(context, index, load)
        # the window's own numbers, not the warehouse's
        requests = [
            r for r in read_table(wh / "requests") if r["group_id"] == STORM and lo <= r["arrival_ms"] < hi
        ]
        numbers = _numbers(page)
        assert numbers["predictions in window"] == str(len(preds))
        assert numbers["requests in window"] == str(len(requests))
        page = open_offline(context, group_page, load, wait_for="#timeline[data-rendered]")
        x0, x1 = page.evaluate("document.getElementById('timeline').layout.xaxis.range")
        x0, x1 = (_ms(x.replace(" ", "T") + "Z") if isinstance(x, str) else int(x) for x in (x0, x1))
        assert lo - 60_000 <= x0 and x1 <= hi + 60_000  # the axis is the window
        rules = page.eval_on_selector_all(
            "table.findings tbody tr", "rows => rows.map(r => r.cells[2].textContent.trim())"
        )
        assert any(r.startswith("R01") for r in rules), rules  # the storm's finding is in the forensics page
        page.screenshot(path=str(ARTIFACTS / "walkthrough-forensics-1280.png"), full_page=True)
        assert not load.blocked and not load.console_errors and not load.page_errors
    assert _files(wh) == before  # the scheduled run's files: not one byte changed
    assert (tmp / "logs").is_dir()
