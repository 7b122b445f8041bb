"""The report pages' HTML (issue 28, pages a person can read): templates with autoescaping, durations in
one format, member ids short with the full id in the title, evidence as folder/name:line, band labels that
the page places, and the overview's timeline of every group. No browser: tests/browser draws them."""

from __future__ import annotations

import json
import re
import tomllib
from fnmatch import fnmatch
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from rebalance_replay.transforms.report import html, units
from rebalance_replay.transforms.report.html import (
    evidence_label,
    file_label,
    findings_table,
    fmt_window,
    group_html,
    json_script,
    overview_html,
    short_id,
    short_id_parts,
)
from rebalance_replay.transforms.report.model import TRIGGER_COLOURS, build_overview
from rebalance_replay.transforms.report.timeline import (
    LABEL_ROWS,
    SEVERITY_COLOURS,
    figure,
    overview_figure,
    plotly_text,
)
from tests.unit.test_report_model import T0, sample_page

ROOT = Path(__file__).resolve().parents[2]
LONG_ID = "consumer-g-1-3f2a8b7c-1234-5678-9abc-def09c1d0e2f"
EVIL = "<script>alert(1)</script>"


def _finding(**kw: Any) -> dict[str, Any]:
    f: dict[str, Any] = {
        "finding_key": "k1",
        "status": "new",
        "rule_id": "R02",
        "rule": "session-timeout-eviction",
        "severity": "critical",
        "summary": "a-1 evicted",
        "fix": "raise session.timeout.ms",
        "group_id": "g",
        "member_ids": ["a-1"],
        "window_start_ms": T0 + 8000,
        "window_end_ms": T0 + 9000,
        "evidence": [
            {
                "source_file": "/var/log/kafka/broker-2/kafka-request.log.2",
                "line_no": 1234,
                "api": "JOIN_GROUP",
            }
        ],
    }
    f.update(kw)
    return f


def test_short_ids_keep_the_start_and_the_last_8_characters() -> None:
    assert short_id(LONG_ID) == "consumer-g-1-3f2a…9c1d0e2f"
    assert short_id_parts(LONG_ID) == ("consumer-g-1-3f2a", "9c1d0e2f")
    assert short_id("a-1") == "a-1" and short_id_parts("a-1") == ("a-1", None)
    assert short_id("x" * 26) == "x" * 26 and short_id("x" * 27) == "x" * 17 + "…" + "x" * 8
    assert short_id(None) == "–"


def test_evidence_is_the_files_folder_and_name_with_its_line() -> None:
    assert file_label("/var/log/kafka/broker-2/kafka-request.log.2") == "broker-2/kafka-request.log.2"
    assert file_label(r"C:\logs\broker-1\kafka-request.log") == "broker-1/kafka-request.log"
    assert file_label("kafka-request.log") == "kafka-request.log" and file_label("b1/log") == "b1/log"
    assert evidence_label("/a/b/broker-1/kafka-request.log.2", 1234, "JOIN_GROUP") == (
        "broker-1/kafka-request.log.2:1234 JOIN_GROUP"
    )
    assert evidence_label("b1/log", 7) == "b1/log:7"


def test_times_and_durations_come_from_units() -> None:
    """html keeps the names other modules import (fmt_time, fmt_dur) and they are units'."""
    assert html.fmt_time is units.fmt_time and html.fmt_dur is units.fmt_dur
    assert fmt_window(T0, T0 + 30_000) == "2024-05-01 10:00:00.000Z → 10:00:30.000Z"
    assert fmt_window(T0, T0 + 86_400_000) == "2024-05-01 10:00:00.000Z → 2024-05-02 10:00:00.000Z"
    assert fmt_window(None, T0) == "– → 2024-05-01 10:00:00.000Z"


def test_json_in_a_script_cannot_close_it() -> None:
    data = {"text": f"x</script><!-- {EVIL}"}
    text = str(json_script(data))
    assert "<" not in text and json.loads(text) == data


def test_data_is_escaped_everywhere_on_the_pages() -> None:
    """A group id, a summary, a member id, a trigger, a file name with markup come out as text."""
    page = sample_page(findings=[_finding(summary=EVIL, group_id=EVIL, member_ids=[EVIL])])
    page.group_id = EVIL
    page.rebalances[0]["trigger_cause"] = EVIL
    page.sessions[0]["client_id"] = EVIL
    out = group_html(page, title=EVIL)
    assert "<script>alert" not in out and "&lt;script&gt;alert(1)&lt;/script&gt;" in out
    # the figure's JSON carries it as data, unable to close its script
    (data,) = re.findall(r'<script type="application/json" id="figure-data">(.*?)</script>', out, re.S)
    assert "</" not in data and "lanes" in json.loads(data)
    groups = [
        {"group_id": EVIL, "page": "p.html", "rebalance_ms": 5, "findings": 1, "worst_severity": "info"}
    ]
    ov = build_overview(
        {}, groups, [_finding(group_id=EVIL, summary=EVIL)], agreement=[], data_docs=None, title=EVIL
    )
    ov.timeline = [_row(EVIL, "p.html", trigger=EVIL)]  # type: ignore[attr-defined]
    out = overview_html(ov)
    assert "<script>alert" not in out and "&lt;script&gt;alert(1)&lt;/script&gt;" in out
    fig = overview_figure(ov)
    # what plotly draws is escaped (it reads tags in text); the lane titles are plain text (textContent)
    assert EVIL not in json.dumps([fig["data"], fig["layout"]]) and fig["lanes"]["titles"][0].startswith(EVIL)
    assert "&lt;script&gt;" in fig["layout"]["yaxis"]["ticktext"][0]


def test_ids_are_short_copyable_and_capped_in_a_findings_cell() -> None:
    ids = [f"{LONG_ID}-{i:02d}" for i in range(12)]
    out = findings_table([_finding(member_ids=ids)], link=False)
    shown = re.findall(r'<span class="mid" role="button" tabindex="0" data-copy="([^"]+)" title="\1">', out)
    assert shown == ids[:4]
    head, tail = short_id_parts(ids[0])
    assert f'<span class="h">{head}…</span><wbr>{tail}</span>' in out and tail == ids[0][-8:]
    more = re.search(r'<span class="more"[^>]*title="([^"]*)">\+8 more</span>', out)
    assert more is not None and more.group(1).split("\n") == ids


def test_evidence_shows_folder_name_and_line_with_the_full_path_in_its_title() -> None:
    f = _finding()
    page = sample_page(findings=[f])
    out = group_html(page, title="t")
    path = f["evidence"][0]["source_file"]
    assert f'<code title="{path}">broker-2/kafka-request.log.2:1234 JOIN_GROUP</code>' in out
    assert path not in re.sub(r'title="[^"]*"', "", out.split('id="findings"')[1].split('id="sessions"')[0])
    # the overview links it to its row on the group's page
    groups = [{"group_id": "g", "page": "g.html", "rebalance_ms": 5, "findings": 1}]
    ov = build_overview({}, groups, [f], agreement=[], data_docs=None, title="t")
    code = f'<code title="{path}">broker-2/kafka-request.log.2:1234 JOIN_GROUP</code>'
    assert f'<a href="g.html#ev-k1-0">{code}</a>' in overview_html(ov)


def test_more_than_three_evidence_rows_fold_under_more() -> None:
    ev = [{"source_file": "b/log", "line_no": i, "api": "HEARTBEAT"} for i in range(8)]
    out = findings_table(sample_page(findings=[_finding(evidence=ev)]).findings or [], link=False)
    assert out.count('<span id="ev-k1-') == 8 and "<details><summary>+5 more</summary>" in out
    assert out.index('id="ev-k1-2"') < out.index("<details>") < out.index('id="ev-k1-3"')


def test_every_duration_on_a_page_reads_in_one_format() -> None:
    page = sample_page()
    page.rebalances[0].update(total_duration_ms=100_370, join_phase_ms=210_000, sync_phase_ms=850)
    out = group_html(page, title="t")
    assert "1 min 40 s" in out and "3 min 30 s" in out and "850 ms" in out
    assert not re.search(r"\d\.\d\d s\b", out.split("figure-data")[0])  # no "100.37 s" beside "3.5 min"
    hovers = [t for trace in figure(page)["data"] for t in trace.get("text") or [] if t and "JoinGroup" in t]
    assert hovers and all(re.search(r"<br>(\d+ ms|\d+\.\d s|\d+ min \d\d s)", h) for h in hovers), hovers


def test_band_labels_are_horizontal_and_placed_by_the_page() -> None:
    """Hidden until the page's script finds them room (templates/timeline.js), hover = the band's."""
    page = sample_page()
    fig = figure(page)
    labels = fig["layout"]["annotations"]
    assert [a["text"] for a in labels] == ["gen 0→1 · group_created", "gen 1→? · session_expiry"]
    assert all(a["name"] == "band" and a["visible"] is False and a["textangle"] == 0 for a in labels)
    assert [a["hovertext"] for a in labels] == [plotly_text(b.hover) for b in page.bands]
    assert (
        fig["label_rows"] == LABEL_ROWS and fig["layout"]["margin"]["t"] >= LABEL_ROWS * fig["label_row_px"]
    )
    # a lane's name shows the lane's title, one item a line
    assert fig["lanes"]["titles"][1:] == [lane.title.replace("<br>", "\n") for lane in page.lanes]
    assert "plotly_afterplot" in group_html(page, title="t") and "plotly_relayout" in group_html(
        page, title="t"
    )


def _row(group: str, page: str, *, trigger: str = "member_left", n: int = 1) -> dict[str, Any]:
    return {
        "group_id": group,
        "page": page,
        "rebalances": [
            {
                "seq": k + 1,
                "start_ms": T0 + k * 60_000,
                "end_ms": T0 + k * 60_000 + 100_370,
                "trigger": trigger,
                "generation_to": k + 1,
            }
            for k in range(n)
        ],
        "findings": [
            {
                "time_ms": T0 + 5000,
                "severity": "warning",
                "rule_id": "R13",
                "summary": "s",
                "anchor": "finding-x",
            }
        ],
    }


def test_the_overview_timeline_has_a_row_per_group_in_rebalancing_order() -> None:
    ov = SimpleNamespace(
        by_rebalancing=[{"group_id": "busy"}, {"group_id": "calm"}],
        timeline=[_row("calm", "c.html", n=0), _row("busy", "b.html", n=3)],
        start_ms=T0 - 1000,
        end_ms=T0 + 600_000,
    )
    fig = overview_figure(ov)
    assert fig["layout"]["yaxis"]["ticktext"] == ["busy", "calm"]
    assert fig["lanes"]["links"] == ["b.html", "c.html"] and fig["lanes"]["titles"][0].startswith(
        "busy\n3 rebalances"
    )
    (bars,) = [t for t in fig["data"] if t["name"] == "member_left"]
    assert bars["line"]["color"] == TRIGGER_COLOURS["member_left"] and set(bars["y"]) - {None} == {0}
    assert "b.html#rebalance-3" in bars["customdata"]
    assert (
        "rebalance #1" in bars["text"][0]
        and "1 min 40 s" in bars["text"][0]
        and "member_left" in bars["text"][0]
    )
    (marks,) = [t for t in fig["data"] if t["name"] == "warning finding"]
    assert marks["marker"]["color"] == SEVERITY_COLOURS["warning"] and marks["customdata"] == [
        "b.html#finding-x",
        "c.html#finding-x",
    ]
    x0, x1 = fig["layout"]["xaxis"]["range"]
    assert x0 < T0 - 1000 and x1 > T0 + 600_000
    # no group, no figure
    assert overview_figure(SimpleNamespace(by_rebalancing=[], timeline=[])) == {}
    empty = build_overview({}, [], None, agreement=[], data_docs=None, title="t")
    assert 'id="timeline"' not in overview_html(empty) and "plotly.min.js" not in overview_html(empty)


def test_the_overview_page_draws_its_timeline_and_keeps_its_tables() -> None:
    groups = [
        {
            "group_id": "g",
            "page": "g.html",
            "rebalance_ms": 100_370,
            "rebalances": 1,
            "findings": 1,
            "worst_severity": "warning",
        }
    ]
    ov = build_overview({}, groups, [], agreement=[], data_docs=None, title="t")
    ov.timeline = [_row("g", "g.html")]  # type: ignore[attr-defined]
    out = overview_html(ov)
    assert '<script src="assets/plotly.min.js"></script>' in out and 'data-lanes="1"' in out
    assert '<table class="severity">' in out and '<a href="g.html">g</a>' in out and "1 min 40 s" in out


def test_the_templates_ship_with_the_package() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert any(d.startswith("jinja2") for d in config["project"]["dependencies"])
    patterns = config["tool"]["setuptools"]["package-data"]["rebalance_replay.transforms.report"]
    files = sorted(p.relative_to(html.TEMPLATES.parent).as_posix() for p in html.TEMPLATES.iterdir())
    assert files and all(any(fnmatch(f, p) for p in patterns) for f in files), files


def test_each_findings_rule_links_to_its_section_of_the_rules_page() -> None:
    """The report's rules.html has a section per registered rule (anchor as in docs/audit-rules.md), with
    its thresholds and hand-written text; a finding's rule links to its section."""
    from rebalance_replay.transforms.audit.registry import RULES, rule_anchor

    page = html.rules_html()
    anchors = re.findall(r'<section id="([^"]+)" class="rule-section">', page)
    assert anchors == [rule_anchor(r) for r in sorted(RULES)] and len(anchors) == len(RULES)
    assert "<code>max_rebalances_per_hour</code> = 10" in page  # R01's threshold, with its default
    assert "`" not in re.sub(r"<script>.*?</script>", "", page, flags=re.S)  # code spans are <code>
    out = findings_table([_finding()], link=False)
    (href,) = re.findall(r'<a class="rule" href="([^"]+)"', out)
    assert href == "rules.html#r02-session-timeout-eviction" and f'id="{href.split("#")[1]}"' in page
    docs = (ROOT / "docs" / "audit-rules.md").read_text()
    assert f"## R02 {RULES['R02'].name}" in docs and f"(#{rule_anchor('R02')})" in docs
