"""Issue 26.5: the report shows new findings first, and a finding's evidence rows open at the right place
of its group's page (anchors: the finding's row, each evidence row, the rebalance under way)."""

from __future__ import annotations

from typing import Any

from rebalance_replay.transforms.report.html import group_html, overview_html
from rebalance_replay.transforms.report.model import build_overview
from tests.unit.test_report_model import T0, sample_page


def _finding(key: str, status: str, severity: str, at: int) -> dict[str, Any]:
    return {
        "finding_key": key,
        "status": status,
        "rule_id": "R02",
        "rule": "session-timeout-eviction",
        "severity": severity,
        "summary": f"{key} summary",
        "fix": "fix",
        "group_id": "g",
        "member_ids": ["a-1"],
        "window_start_ms": at,
        "window_end_ms": at,
        "evidence": [
            {"source_file": "b1/log", "line_no": 7, "api": "JOIN_GROUP", "arrival_ms": T0 + 2000},
            {"source_file": "b1/log", "line_no": 9, "api": "HEARTBEAT", "arrival_ms": T0 + 5000},
        ],
    }


FINDINGS = [
    _finding("00000000000000aa", "resolved", "critical", T0 + 1000),
    _finding("00000000000000bb", "ongoing", "critical", T0 + 2000),
    _finding("00000000000000cc", "new", "info", T0 + 3000),
]


def test_group_page_new_first_with_anchors_to_evidence_and_rebalances() -> None:
    page = sample_page(findings=FINDINGS)
    assert [(f["status"], f["anchor"]) for f in page.findings] == [
        ("new", "finding-00000000000000cc"),
        ("ongoing", "finding-00000000000000bb"),
        ("resolved", "finding-00000000000000aa"),
    ]
    items = page.findings[0]["evidence_items"]
    assert [(i["anchor"], i["rebalance_seq"]) for i in items] == [
        ("ev-00000000000000cc-0", 1),  # during rebalance 1 (T0+10 … T0+3030)
        ("ev-00000000000000cc-1", None),
    ]
    html = group_html(page, title="t")
    assert '<tr id="finding-00000000000000cc"><td>new</td>' in html
    assert '<tr id="rebalance-1">' in html
    assert (
        '<span id="ev-00000000000000cc-0"><code>b1/log:7 JOIN_GROUP</code> '
        '<a href="#rebalance-1">during rebalance #1</a></span>'
    ) in html
    assert '<span id="ev-00000000000000cc-1"><code>b1/log:9 HEARTBEAT</code></span>' in html
    assert html.index("00000000000000cc summary") < html.index("00000000000000aa summary")


def test_overview_links_each_evidence_row_to_its_place_on_the_group_page() -> None:
    groups = [{"group_id": "g", "page": "g.html", "rebalances": 1, "rebalance_ms": 5, "findings": 3}]
    ov = build_overview({}, groups, FINDINGS, agreement=[], data_docs=None, title="t")
    assert ov.findings is not None
    assert [f["status"] for f in ov.findings] == ["new", "ongoing", "resolved"]
    html = overview_html(ov)
    assert '<a href="g.html#finding-00000000000000cc">g</a>' in html
    assert '<a href="g.html#ev-00000000000000cc-1"><code>b1/log:9 HEARTBEAT</code></a>' in html


def test_findings_show_their_confidence_and_what_the_rule_means() -> None:
    """Each finding row has a confidence column, and its rule cell says on hover what the rule means and
    when it can be wrong (the rule's section of docs/audit-rules.md, ``audit.about.ABOUT``)."""
    from html import escape

    from rebalance_replay.transforms.audit.about import ABOUT
    from rebalance_replay.transforms.report.html import findings_table

    f = {**_finding("k1", "new", "warning", T0), "rule_id": "R13", "rule": "x", "confidence": 0.9}
    html = findings_table([f, {**f, "confidence": None, "rule_id": "R99"}], link=False)
    assert "<th>confidence</th>" in html and "<td>0.90</td>" in html and "<td>–</td>" in html
    assert f'title="{escape(ABOUT["R13"].meaning)}' in html
    assert escape(ABOUT["R13"].false_positives) in html
    assert "R99 x</td>" in html  # a rule without a description: its id and name only
