"""The report and forensics runs on the bundled sample, through the CLI as a user runs them:

* a forensics replay (``--from/--to``, ``--group``) writes ``WAREHOUSE/forensics/NAME`` with its own
  summary and leaves every scheduled table exactly as it was (rows and Delta versions);
* ``report`` renders the scheduled tables and a forensics run; the pages, and GX's Data Docs, open in
  headless Chromium with the network off: no request leaves file://, one lane per process (not per
  member id) and one band per rebalance, no console error, validation tables with rows. Screenshots:
  tests/artifacts/;
* ``report --group --from --to`` counts its numbers in the window and starts its pages' axes there.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rebalance_replay.jobs.cli import main
from tests.browser.offline_browser import PageLoad, offline_browser, open_offline, skip_reason
from tests.helpers import read_table

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "samples" / "logs"
ARTIFACTS = ROOT / "tests" / "artifacts"
SCHEDULED = ("requests", "predictions", "transitions", "rebalances", "member_sessions")
LANES_JS = "document.querySelectorAll('#timeline .yaxislayer-above g.ytick').length"
BANDS_JS = "document.querySelectorAll('#timeline .layer-below .shapelayer path').length"


@pytest.fixture(scope="module")
def sample_wh(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample through `rebalance-replay run` (ingest, replay, validate, report)."""
    wh = tmp_path_factory.mktemp("report") / "wh"
    assert main(["run", "--input", str(SAMPLE), "--warehouse", str(wh)]) == 0
    return wh


def _state(wh: Path) -> dict[str, tuple[int, int]]:
    from deltalake import DeltaTable

    return {t: (DeltaTable(str(wh / t)).version(), len(read_table(wh / t))) for t in SCHEDULED}


def test_run_ends_with_the_report(sample_wh: Path) -> None:
    summary = json.loads((sample_wh / "summary.json").read_text())
    index = Path(summary["report"]["index"])
    assert index == (sample_wh / "reports" / "index.html").resolve() and index.exists()
    # run audits before it reports: the report counts the audit's findings
    assert summary["report"]["groups"] == 3
    assert summary["report"]["findings"] == sum(summary["findings"].values())
    assert (sample_wh / "reports" / "assets" / "plotly.min.js").stat().st_size > 1_000_000
    pages = sorted((sample_wh / "reports").glob("group-*.html"))
    assert len(pages) == 3
    for page in pages:  # plotly.js is a file next to the pages, not inlined
        assert page.stat().st_size < 500_000 and '<script src="assets/plotly.min.js">' in page.read_text()
    assert "audit not run" not in index.read_text()


def _files(wh: Path) -> dict[str, bytes]:
    """Every file of the warehouse outside its forensics runs (and the lock a command takes)."""
    return {
        str(p.relative_to(wh)): p.read_bytes()
        for p in wh.rglob("*")
        if p.is_file() and p.relative_to(wh).parts[0] != "forensics" and not p.name.startswith(".lock")
    }


def test_forensics_run_leaves_the_scheduled_tables_untouched(sample_wh: Path) -> None:
    before = _state(sample_wh)
    files = _files(sample_wh)
    manifest = (sample_wh / "_replay" / "manifest.json").read_text()
    args = [
        "replay",
        "--warehouse",
        str(sample_wh),
        "--from",
        "2024-05-01T10:00Z",
        "--to",
        "2024-05-01T10:03Z",
    ]
    assert main(args) == 0
    assert main([*args[:3], "--group", "payments-ledger", "--name", "ledger"]) == 0
    assert _state(sample_wh) == before
    assert (sample_wh / "_replay" / "manifest.json").read_text() == manifest
    name = "20240501T100000Z-20240501T100300Z"
    run = sample_wh / "forensics" / name
    preds = read_table(run / "predictions")
    assert 0 < len(preds) < before["predictions"][1]
    assert all(1_714_557_600_000 <= p["arrival_ms"] < 1_714_557_780_000 for p in preds)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["predictions"] == len(preds) and summary["forensics"]["name"] == name
    # the forensics replay went on to validate, audit and report its window, in its own folder
    assert summary["agreement"] is not None and "audit" in summary and "findings" in summary
    assert (run / "findings" / "_delta_log").is_dir() and (run / "_audit" / "state.json").exists()
    index = Path(summary["report"]["index"])
    assert index.parent == (run / "reports").resolve() and "audit not run" not in index.read_text()
    ledger = read_table(sample_wh / "forensics" / "ledger" / "predictions")
    assert ledger and {p["group_id"] for p in ledger} == {"payments-ledger"}
    ledger_summary = json.loads((sample_wh / "forensics" / "ledger" / "summary.json").read_text())
    assert ledger_summary["forensics"]["groups"] == ["payments-ledger"] and "audit" in ledger_summary
    # validate, audit and report work on a forensics run by its name, in the run's own folder
    for command in ("validate", "audit", "report"):
        assert main([command, "--warehouse", str(sample_wh), "--name", "ledger"]) == 0
    assert len(list((sample_wh / "forensics" / "ledger" / "reports").glob("group-*.html"))) == 1
    findings = read_table(sample_wh / "forensics" / "ledger" / "findings")
    assert {f["group_id"] for f in findings} <= {"payments-ledger"}
    assert _state(sample_wh) == before
    assert _files(sample_wh) == files  # summary.json, _audit, gx, reports: not one byte changed
    assert main(["audit", "--warehouse", str(sample_wh), "--name", "no-such-run"]) == 2
    # a name that is not one path segment, and --name without a window, are usage errors
    assert main([*args[:3], "--group", "x", "--name", "../x"]) == 2
    assert main(["replay", "--warehouse", str(sample_wh), "--name", "x"]) == 2


def test_report_of_one_group_and_window(sample_wh: Path, tmp_path: Path) -> None:
    out = tmp_path / "r"
    args = ["report", "--warehouse", str(sample_wh), "--group", "orders-processor", "--out", str(out)]
    assert main([*args, "--from", "2024-05-01T10:02Z", "--to", "2024-05-01T10:05Z"]) == 0
    (page,) = out.glob("group-*.html")
    assert "orders-processor" in page.read_text() and "window" in (out / "index.html").read_text()


def test_a_scoped_report_is_forensics_and_bad_scopes_are_refused_before_spark(
    sample_wh: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``report --group/--from/--to`` on the scheduled tables writes its pages and summary beside the
    forensics runs and leaves the scheduled run's summary.json and reports alone; a group the log never
    saw and a reversed window are one-line usage errors before Spark starts (exit 2)."""
    import rebalance_replay.jobs.cli as cli

    summary = (sample_wh / "summary.json").read_text()
    scheduled = sorted(p.name for p in (sample_wh / "reports").glob("*.html"))
    args = ["report", "--warehouse", str(sample_wh), "--group", "orders-processor"]
    capsys.readouterr()
    assert main([*args, "--from", "2024-05-01T10:02Z", "--to", "2024-05-01T10:05Z"]) == 0
    run = sample_wh / "forensics" / "20240501T100200Z-20240501T100500Z_orders-processor"
    # the command ends with what to do next: open the page it wrote
    assert f"next: open {(run / 'reports' / 'index.html').resolve()}" in capsys.readouterr().err
    assert len(list((run / "reports").glob("group-*.html"))) == 1
    assert json.loads((run / "summary.json").read_text())["report"]["groups"] == 1
    assert (sample_wh / "summary.json").read_text() == summary
    assert sorted(p.name for p in (sample_wh / "reports").glob("*.html")) == scheduled
    assert main(["validate", "--warehouse", str(sample_wh)]) == 0
    assert f"next: rebalance-replay audit --warehouse {sample_wh}" in capsys.readouterr().err

    def no_spark(config: object) -> None:
        raise AssertionError("Spark started before the arguments were checked")

    monkeypatch.setattr(cli, "_session", no_spark)
    capsys.readouterr()
    assert main(["report", "--warehouse", str(sample_wh), "--group", "orders-procesor"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--group orders-procesor: no such group" in err, err
    assert "did you mean" not in err or "orders-processor" in err
    reversed_window = ["--from", "2024-05-01T10:05Z", "--to", "2024-05-01T10:02Z"]
    assert main(["report", "--warehouse", str(sample_wh), *reversed_window]) == 2
    assert "--from must be before --to" in capsys.readouterr().err


def test_a_scoped_report_counts_its_numbers_in_the_window_and_starts_its_axis_there(
    sample_wh: Path, tmp_path: Path
) -> None:
    """Issue 28: ``report --group --from --to`` on the scheduled tables: the overview's numbers are the
    rows inside the window (not summary.json's, of the whole warehouse), labelled as the window's, and the
    group page's axis starts at the window's start although sessions began before it."""
    group, lo, hi = "orders-processor", 1_714_557_720_000, 1_714_557_900_000  # 10:02 → 10:05
    out = tmp_path / "r"
    window = ["--from", "2024-05-01T10:02Z", "--to", "2024-05-01T10:05Z"]
    assert main(["report", "--warehouse", str(sample_wh), "--group", group, *window, "--out", str(out)]) == 0
    meta = json.loads((out / "report.json").read_text())

    def rows(table: str) -> list[dict[str, Any]]:
        return [r for r in read_table(sample_wh / table) if r["group_id"] == group]

    requests = [r for r in rows("requests") if lo <= r["arrival_ms"] < hi]
    preds = [p for p in rows("predictions") if lo <= p["arrival_ms"] < hi]
    rebalances = [r for r in rows("rebalances") if r["started_ms"] < hi and (r["ended_ms"] or hi) >= lo]
    matched, scored = sum(p["matched"] for p in preds), sum(p["scored"] for p in preds)
    assert meta["numbers"] == {
        "requests in window": str(len(requests)),
        "predictions in window": str(len(preds)),
        "matched in window": str(matched),
        "rebalances in window": str(len(rebalances)),
        "agreement in window": f"{matched / scored:.2%}",
    }
    assert 0 < len(requests) < json.loads((sample_wh / "summary.json").read_text())["requests"]
    assert "requests in window" in (out / "index.html").read_text()
    began_before = [s for s in rows("member_sessions") if s["joined_ms"] < lo <= (s["ended_ms"] or hi)]
    assert began_before  # drawn from the window's start
    (page,) = meta["groups"]
    assert page["start_ms"] == meta["start_ms"] == lo < page["end_ms"] <= hi
    assert page["rebalances"] == len(rebalances)


@pytest.mark.browser
@pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or "")
def test_report_pages_render_offline(sample_wh: Path) -> None:
    reports = sample_wh / "reports"
    meta = {g["page"]: g for g in json.loads((reports / "report.json").read_text())["groups"]}
    sessions = read_table(sample_wh / "member_sessions")
    rebalances = read_table(sample_wh / "rebalances")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with offline_browser() as ctx:
        load = PageLoad()
        page = open_offline(ctx, reports / "index.html", load)
        assert page.locator("table.groups tbody tr").count() == 3
        page.screenshot(path=str(ARTIFACTS / "report-index.png"), full_page=True)
        for name, g in meta.items():
            page = open_offline(ctx, reports / name, load, wait_for="#timeline[data-rendered]")
            members = {s["member_id"] for s in sessions if s["group_id"] == g["group_id"]}
            # a lane per process: payments-ledger's static ledger-0 came back under a new member id
            assert g["members"] == len(members) >= g["processes"], name
            bands = [r for r in rebalances if r["group_id"] == g["group_id"]]
            assert page.evaluate(LANES_JS) == g["processes"] + 1, name  # + the group's own lane
            assert page.evaluate(BANDS_JS) == len(bands) > 0, name
            page.screenshot(path=str(ARTIFACTS / f"report-{g['group_id']}.png"), full_page=True)
        index = open_offline(ctx, reports / "index.html", load)
        docs = index.locator("a", has_text="Data Docs").get_attribute("href")
        assert docs and (reports / docs).resolve().exists()
    assert load.blocked == [], load.blocked
    assert load.console_errors == [] and load.page_errors == []


@pytest.mark.browser
@pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or "")
def test_data_docs_render_offline(sample_wh: Path) -> None:
    summary = json.loads((sample_wh / "summary.json").read_text())
    site = Path(summary["data_docs"]).parent
    pages = sorted(site.rglob("*.html"))
    validations = [p for p in pages if "validations" in p.parts]
    assert validations and (site / "index.html") in pages
    load = PageLoad()
    with offline_browser() as ctx:
        for p in pages:
            page = open_offline(ctx, p, load)
            rows = page.locator("table tbody tr").count()
            assert rows > 0, f"{p.relative_to(site)}: no table rows"
            if p in validations:
                assert page.locator("td .fa-check-circle, td .fa-times").count() > 0  # icons: Font Awesome
                page.screenshot(path=str(ARTIFACTS / f"datadocs-{p.stem}.png"))
        index = open_offline(ctx, site / "index.html", load)
        assert index.locator("table tbody tr.clickable-row").count() >= 2  # validation runs listed
        # Bootstrap's stylesheet is applied (local copy): the tabs are laid out as tabs
        assert index.evaluate("getComputedStyle(document.querySelector('.nav-tabs')).display") == "flex"
    assert load.blocked == [], load.blocked
    assert load.console_errors == [] and load.page_errors == []


def test_no_member_limit_draws_what_a_limit_no_group_reaches_draws(sample_wh: Path, tmp_path: Path) -> None:
    """``report.max_group_members=0`` means no limit (docs/config.md): every group gets its page, the same
    pages as under a limit no group reaches. It crashed the report ("A null type field may not be
    non-nullable": the JoinGroups' member ids not collected came back as an untyped empty array)."""
    pages: dict[str, dict[str, str]] = {}
    for limit in ("0", "1000"):
        out = tmp_path / limit
        args = ["report", "--warehouse", str(sample_wh), "--out", str(out)]
        assert main([*args, "--set", f"report.max_group_members={limit}"]) == 0
        pages[limit] = {p.name: p.read_text() for p in out.glob("group-*.html")}
    assert len(pages["0"]) == 3 and pages["0"] == pages["1000"]


@pytest.mark.browser  # its browser checks skip visibly when Chromium is missing
def test_findings_are_rendered_when_the_audit_wrote_them(sample_wh: Path, tmp_path: Path) -> None:
    """A `findings` table (issue 10's columns) → markers with summary and fix, the evidence as file:line,
    the overview's findings table linking to the group page; "audit not run" is gone."""
    from datetime import UTC, datetime

    import pyarrow as pa
    from deltalake import write_deltalake

    wh = tmp_path / "wh"
    import shutil

    # the audit's own findings are left out: this test writes the one finding it looks for
    shutil.copytree(sample_wh, wh, ignore=shutil.ignore_patterns("reports", "_lock", "findings", "_audit"))
    evicted = next(s for s in read_table(wh / "member_sessions") if s["end_reason"] == "session_expiry")
    evidence = pa.struct(
        [
            ("source_file", pa.string()),
            ("line_no", pa.int64()),
            ("api", pa.string()),
            ("arrival_ms", pa.int64()),
        ]
    )
    rows = pa.table(
        {
            "rule_id": ["R02"],
            "rule": ["session-timeout-eviction"],
            "severity": ["critical"],
            "confidence": [0.9],
            "group_id": [evicted["group_id"]],
            "member_ids": [[evicted["member_id"]]],
            "window_start_ms": [evicted["last_heartbeat_ms"]],
            "window_end_ms": [evicted["ended_ms"]],
            "occurrences": [1],
            "summary": ["member was evicted after 45 s without a heartbeat"],
            "evidence": pa.array(
                [
                    [
                        {
                            "source_file": "broker-1/kafka-request.log",
                            "line_no": 77,
                            "api": "HEARTBEAT",
                            "arrival_ms": evicted["last_heartbeat_ms"],
                        }
                    ]
                ],
                type=pa.list_(evidence),
            ),
            "fix": ["session.timeout.ms ≥ 60000"],
            "log_date": [datetime.fromtimestamp(evicted["ended_ms"] / 1000, UTC).date()],
        }
    )
    # as the audit lays the table out (partitioned by log_date): the store refuses another layout
    write_deltalake(str(wh / "findings"), rows, partition_by=["log_date"])
    assert main(["report", "--warehouse", str(wh)]) == 0
    index = (wh / "reports" / "index.html").read_text()
    assert "audit not run" not in index and "session-timeout-eviction" in index
    meta = {g["group_id"]: g for g in json.loads((wh / "reports" / "report.json").read_text())["groups"]}
    page_name = meta[evicted["group_id"]]["page"]
    assert f'href="{page_name}"' in index
    page = (wh / "reports" / page_name).read_text()
    assert "broker-1/kafka-request.log:77 HEARTBEAT" in page and "session.timeout.ms ≥ 60000" in page
    reason = skip_reason()
    if reason is not None:  # the page's checks above passed; its checks in a browser are skipped, visibly
        pytest.skip(f"the page in a browser: {reason}")
    load = PageLoad()
    with offline_browser() as ctx:
        p = open_offline(ctx, wh / "reports" / page_name, load, wait_for="#timeline[data-rendered]")
        names = p.evaluate("document.getElementById('timeline').data.map(t => t.name)")
        assert "finding" in names
        p.screenshot(path=str(ARTIFACTS / "report-with-findings.png"), full_page=True)
    assert load.blocked == [] and load.console_errors == [] and load.page_errors == []
