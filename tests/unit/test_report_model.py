"""The report's page model: what goes into each lane, band and marker (no browser, no Spark)."""

from __future__ import annotations

from typing import Any

from rebalance_replay.transforms.report.datadocs import offline_html, remote_urls
from rebalance_replay.transforms.report.html import AUDIT_NOT_RUN, group_html, overview_html
from rebalance_replay.transforms.report.model import (
    MAX_TICKS,
    TRIGGER_COLOURS,
    HeartbeatBin,
    api_agreement,
    build_group_page,
    build_overview,
    heartbeat_bin_ms,
)
from rebalance_replay.transforms.report.naming import forensics_name, page_file, valid_name
from rebalance_replay.transforms.report.timeline import figure

T0 = 1_714_557_600_000  # 2024-05-01T10:00:00Z


def pred(api: str, member: str | None, t: int, **kw: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "source_file": "b1/kafka-request.log",
        "line_no": t - T0,
        "group_id": "g",
        "api": api,
        "seq": t - T0,
        "member_id": member,
        "group_instance_id": None,
        "request_generation_id": 1,
        "arrival_ms": t,
        "observed_error": "NONE",
        "predicted_error": "NONE",
        "observed_generation_id": None,
        "predicted_generation_id": None,
        "observed_member_id": None,
        "predicted_member_id": None,
        "observed_completion_ms": t,
        "scored": True,
        "matched": True,
        "mismatch_kinds": None,
    }
    row.update(kw)
    return row


def session(member: str, gen: int, joined: int, ended: int | None, reason: str, **kw: Any) -> dict[str, Any]:
    row = {
        "group_id": "g",
        "member_id": member,
        "group_instance_id": None,
        "client_id": member.split("-")[0],
        "client_address": "10.0.0." + member[-1],
        "generation_id": gen,
        "joined_ms": joined,
        "last_heartbeat_ms": None,
        "heartbeats": 0,
        "commits": 0,
        "ended_ms": ended,
        "end_reason": reason,
        "is_leader": False,
    }
    row.update(kw)
    return row


def rebalance(
    seq: int, start: int, end: int | None, trigger: str, gen_from: int, gen_to: int | None
) -> dict[str, Any]:
    return {
        "group_id": "g",
        "rebalance_seq": seq,
        "generation_from": gen_from,
        "generation_to": gen_to,
        "started_ms": start,
        "join_completed_ms": None,
        "stable_ms": end,
        "ended_ms": end,
        "outcome": "stable" if end else "unfinished",
        "total_duration_ms": None if end is None else end - start,
        "join_phase_ms": None,
        "sync_phase_ms": None,
        "trigger": trigger,
        "trigger_cause": "because",
        "members_before": [],
        "members_after": ["a-1", "b-2"],
        "joined": ["a-1"],
        "left": [],
        "evicted": [],
        "partitions_moved": 3,
    }


def transition(seq: int, t: int, a: str, b: str, gen: int) -> dict[str, Any]:
    return {
        "group_id": "g",
        "seq": seq,
        "time_ms": t,
        "from_state": a,
        "to_state": b,
        "generation_id": gen,
        "cause": "c",
        "member_id": None,
    }


def sample_page(
    findings: list[dict[str, Any]] | None = None, bins: list[HeartbeatBin] | None = None, bin_ms: int = 1
) -> Any:
    preds = [
        pred(
            "JOIN_GROUP",
            "",
            T0 + 10,
            observed_member_id="a-1",
            observed_completion_ms=T0 + 3010,
            observed_generation_id=1,
        ),
        pred("JOIN_GROUP", "", T0 + 20, observed_member_id="b-2", observed_completion_ms=T0 + 3010),
        pred("SYNC_GROUP", "a-1", T0 + 3020, observed_completion_ms=T0 + 3030),
        pred("HEARTBEAT", "b-2", T0 + 9000, observed_error="REBALANCE_IN_PROGRESS"),
        pred(
            "HEARTBEAT",
            "a-1",
            T0 + 9500,
            matched=False,
            predicted_error="UNKNOWN_MEMBER_ID",
            mismatch_kinds=["error"],
        ),
        pred("LEAVE_GROUP", None, T0 + 20_000, group_instance_id="inst-b"),
    ]
    sessions = [
        session("a-1", 1, T0 + 10, T0 + 8000, "session_expiry"),
        session("b-2", 1, T0 + 20, T0 + 20_000, "left", group_instance_id="inst-b"),
    ]
    rebalances = [
        rebalance(1, T0 + 10, T0 + 3030, "group_created", 0, 1),
        rebalance(2, T0 + 8000, None, "session_expiry", 1, None),
    ]
    transitions = [
        transition(1, T0 + 10, "Empty", "PreparingRebalance", 0),
        transition(2, T0 + 3010, "PreparingRebalance", "CompletingRebalance", 1),
        transition(3, T0 + 3030, "CompletingRebalance", "Stable", 1),
    ]
    return build_group_page(
        "g",
        predictions=preds,
        heartbeat_bins=bins
        if bins is not None
        else [HeartbeatBin("a-1", T0 + 6000, 1), HeartbeatBin("b-2", T0 + 6001, 2)],
        bin_ms=bin_ms,
        transitions=transitions,
        rebalances=rebalances,
        sessions=sessions,
        findings=findings,
        agreement=api_agreement([{"api": "HEARTBEAT", "n": 4, "scored": 4, "matched": 3}]),
    )


def test_lanes_one_per_member_in_order_of_first_appearance_with_client_and_host() -> None:
    page = sample_page()
    assert [lane.member_id for lane in page.lanes] == ["a-1", "b-2"]
    assert [lane.index for lane in page.lanes] == [1, 2]  # lane 0 is the group
    b = page.lanes[1]
    assert (b.group_instance_id, b.client_id, b.host) == ("inst-b", "b", "10.0.0.2")
    assert b.label == "inst-b · b-2 (b@10.0.0.2)"


def test_long_member_ids_are_shortened_in_the_label_only() -> None:
    long_id = "consumer-orders-processor-1-3fcc61fc-42c0-5070-8fd6-13a1198451a2"
    page = build_group_page(
        "g",
        predictions=[pred("JOIN_GROUP", long_id, T0)],
        heartbeat_bins=[],
        bin_ms=1,
        transitions=[],
        rebalances=[],
        sessions=[],
        findings=None,
    )
    lane = page.lanes[0]
    assert lane.member_id == long_id and len(lane.label) <= 30 and lane.label.endswith("198451a2")
    assert long_id in lane.title


def test_join_and_sync_are_spans_from_arrival_to_completion_on_the_member_given_the_id() -> None:
    page = sample_page()
    joins = [s for s in page.spans if s.api == "JOIN_GROUP"]
    assert [(s.lane, s.start_ms, s.end_ms) for s in joins] == [
        (1, T0 + 10, T0 + 3010),
        (2, T0 + 20, T0 + 3010),
    ]
    (sync,) = [s for s in page.spans if s.api == "SYNC_GROUP"]
    assert (sync.lane, sync.end_ms - sync.start_ms) == (1, 10)


def test_markers_leave_eviction_mismatch_transition_and_nonroutine_heartbeat() -> None:
    page = sample_page()
    kinds = sorted((m.kind, m.lane, m.time_ms - T0) for m in page.markers)
    assert ("leave", 2, 20_000) in kinds  # LeaveGroup v3+ by instance id → the static member's lane
    assert ("eviction", 1, 8000) in kinds  # session expiry
    assert ("mismatch", 1, 9500) in kinds
    assert ("heartbeat", 2, 9000) in kinds  # REBALANCE_IN_PROGRESS is drawn on its own
    assert [m for m in kinds if m[0] == "transition"] == [
        ("transition", 0, 10),
        ("transition", 0, 3010),
        ("transition", 0, 3030),
    ]
    # the session that ended with "left" is not an eviction
    assert not any(m.kind == "eviction" and m.lane == 2 for m in page.markers)
    assert len(page.mismatches) == 1 and "UNKNOWN_MEMBER_ID" in page.mismatches[0]["text"]


def test_bands_per_rebalance_coloured_by_trigger_with_generation_labels_open_ones_to_the_end() -> None:
    page = sample_page()
    assert [(b.label, b.trigger, b.colour, b.open) for b in page.bands] == [
        ("gen 0→1", "group_created", TRIGGER_COLOURS["group_created"], False),
        ("gen 1→?", "session_expiry", TRIGGER_COLOURS["session_expiry"], True),
    ]
    assert page.bands[1].end_ms == page.end_ms == T0 + 20_000
    assert page.stats["rebalance_ms"] == 3020 + 12_000


def test_findings_none_means_audit_not_run_and_markers_carry_summary_and_fix() -> None:
    page = sample_page()
    assert page.findings is None and page.stats["findings"] is None
    assert AUDIT_NOT_RUN in group_html(page, title="t")
    f = {
        "rule_id": "R02",
        "rule": "session-timeout-eviction",
        "severity": "critical",
        "summary": "a-1 evicted",
        "fix": "session.timeout.ms ≥ 60000",
        "group_id": "g",
        "member_ids": ["a-1"],
        "window_start_ms": T0 + 8000,
        "window_end_ms": T0 + 9000,
        "evidence": [{"source_file": "b1/log", "line_no": 7, "api": "HEARTBEAT"}],
    }
    page = sample_page(findings=[f])
    (marker,) = [m for m in page.markers if m.kind == "finding"]
    assert (marker.lane, marker.time_ms, marker.severity) == (1, T0 + 8000, "critical")
    assert "a-1 evicted" in marker.text and "session.timeout.ms ≥ 60000" in marker.text
    assert page.findings is not None and page.findings[0]["evidence_text"] == ["b1/log:7 HEARTBEAT"]
    html = group_html(page, title="t")
    assert "b1/log:7 HEARTBEAT" in html and AUDIT_NOT_RUN not in html


def test_heartbeats_ticks_when_few_density_when_many() -> None:
    assert heartbeat_bin_ms(MAX_TICKS, 10**9) == 1
    assert heartbeat_bin_ms(MAX_TICKS + 1, 86_400_000) == 288_000  # a day in 300 whole-second bins
    page = sample_page()
    assert page.density is None and page.ticks == {1: [T0 + 6000], 2: [T0 + 6001, T0 + 6001]}
    bins = [HeartbeatBin("a-1", T0, 10), HeartbeatBin("a-1", T0 + 2000, 5), HeartbeatBin("b-2", T0 + 1000, 7)]
    page = sample_page(bins=bins, bin_ms=1000)
    assert page.ticks == {} and page.density is not None
    assert page.density.counts == {1: [10, 0, 5], 2: [0, 7, 0]} and page.heartbeats == 22
    heat = [t for t in figure(page)["data"] if t["type"] == "heatmap"]
    assert len(heat) == 1 and heat[0]["y"] == [1, 2]


def test_figure_has_one_tick_per_lane_and_one_shape_per_band() -> None:
    page = sample_page()
    fig = figure(page)
    assert len(fig["layout"]["yaxis"]["tickvals"]) == len(page.lanes) + 1
    assert len(fig["layout"]["shapes"]) == len(page.bands) == 2
    assert all(s["layer"] == "below" for s in fig["layout"]["shapes"])
    names = {t["name"] for t in fig["data"]}
    assert {"heartbeat", "LeaveGroup", "eviction", "predicted ≠ observed", "state transition"} <= names


def test_group_html_is_self_contained() -> None:
    html = group_html(sample_page(), title="t")
    assert remote_urls(html) == []
    assert (
        '<script src="assets/plotly.min.js">' in html
        and 'data-lanes="3"' in html
        and 'data-bands="2"' in html
    )
    assert "<\\/" not in html or "</script>" in html


def test_overview_ranks_groups_and_links_findings() -> None:
    groups = [
        {"group_id": "calm", "page": "p1.html", "rebalance_ms": 10, "findings": 0, "worst_severity": None},
        {
            "group_id": "busy",
            "page": "p2.html",
            "rebalance_ms": 9000,
            "findings": 1,
            "worst_severity": "info",
        },
        {
            "group_id": "bad",
            "page": "p3.html",
            "rebalance_ms": 50,
            "findings": 2,
            "worst_severity": "critical",
        },
    ]
    findings = [
        {"group_id": "bad", "severity": "critical", "rule_id": "R02", "rule": "x", "summary": "s", "fix": "f"}
    ]
    ov = build_overview(
        {"requests": 5, "agreement": 0.5},
        groups,
        findings,
        agreement=api_agreement([{"api": "HEARTBEAT", "n": 2, "scored": 2, "matched": 1}]),
        data_docs="../gx/index.html",
        title="t",
    )
    assert [g["group_id"] for g in ov.by_rebalancing] == ["busy", "bad", "calm"]
    assert [g["group_id"] for g in ov.by_severity] == ["bad", "busy", "calm"]
    assert ov.findings is not None and ov.findings[0]["page"] == "p3.html"
    assert ("agreement", "50.00%") in ov.numbers and ov.agreement_by_api == [
        ("HEARTBEAT", "50.00% (1/2 scored)")
    ]
    html = overview_html(ov)
    assert '<a href="p3.html">bad</a>' in html and 'href="../gx/index.html"' in html
    ov = build_overview({}, groups, None, agreement=[], data_docs=None, title="t")
    assert AUDIT_NOT_RUN in overview_html(ov)


def test_forensics_names() -> None:
    assert forensics_name((T0, T0 + 3_600_000), ()) == "20240501T100000Z-20240501T110000Z"
    assert forensics_name((None, T0), ["orders"]) == "start-20240501T100000Z_orders"
    assert forensics_name((None, None), ["a", "b", "c"]).startswith("3groups-")
    assert valid_name("incident-42") and not valid_name("../x") and not valid_name("a/b")
    assert page_file("a/b") != page_file("a_b") and page_file("a/b").endswith(".html")


GX_PAGE = """<html><head>
<link rel="stylesheet" href="https://maxcdn.bootstrapcdn.com/bootstrap/4.3.1/css/bootstrap.min.css"/>
<link rel="stylesheet" href="https://unpkg.com/bootstrap-table@1.19.1/dist/bootstrap-table.min.css">
<script src="https://code.jquery.com/jquery-3.7.1.min.js"></script>
<script src="https://cdn.jsdelivr.net/npm/vega@5"></script>
<style>.x { background: url("https://great-expectations-web-assets.s3.amazonaws.com/x.png") }</style>
</head><body>
<img src="https://great-expectations-web-assets.s3.us-east-2.amazonaws.com/logo-long.png?d=1&dataContextId=abc">
<div id="t1-toolbar" class="ml-1"><button onclick="clearTableFilters('t1')">Clear Filters</button></div>
<table
  id="t1"
  class="table-sm"
  data-toggle="table"
>
</table>
<script>
  $('#t1').bootstrapTable(
    Object.assign(
      {
        columns: [{'field': 'name', 'title': 'Suite'}],
        data: [{'name': '<a href="x.html">x</a>', '_table_row_link_path': 'x.html'}, {'name': 'y'}],
        toolbar: '#t1-toolbar'
      },
      {'search': 'true'}
    )
  );
</script>
<a href="https://greatexpectations.io">a link is not a load</a>
</body></html>"""


def test_data_docs_rewrite_points_at_local_assets_and_makes_tables_static() -> None:
    assert len(remote_urls(GX_PAGE)) == 6
    html, dropped = offline_html(GX_PAGE, "../")
    assert remote_urls(html) == []
    assert 'href="../static/offline/bootstrap/css/bootstrap.min.css"' in html
    assert 'src="../static/offline/jquery/jquery.min.js"' in html
    assert "dataContextId" not in html and "../static/images/logo-long.png" in html
    assert "bootstrapTable(" not in html and "Clear Filters" not in html
    assert '<tr class="clickable-row" data-href="x.html"' in html and "<td>y</td>" in html
    assert any("bootstrap-table" in d for d in dropped) and any("Vega" in d for d in dropped)
    assert offline_html(html, "../")[0] == html  # idempotent


def test_leave_group_without_member_id_goes_to_the_members_whose_session_it_ended() -> None:
    leave = pred("LEAVE_GROUP", None, T0 + 500, observed_completion_ms=T0 + 500)
    sessions = [
        session("a-1", 1, T0, T0 + 500, "left"),
        session("b-2", 1, T0, None, "open"),
        session("c-3", 1, T0, T0 + 400, "left"),  # left earlier, not by this request
    ]
    page = build_group_page("g", predictions=[leave], heartbeat_bins=[], bin_ms=1, transitions=[],
                            rebalances=[], sessions=sessions, findings=None)  # fmt: skip
    assert [(m.kind, m.lane) for m in page.markers] == [("leave", 1)]
    unknown = pred("LEAVE_GROUP", None, T0 + 900)
    page = build_group_page("g", predictions=[unknown], heartbeat_bins=[], bin_ms=1, transitions=[],
                            rebalances=[], sessions=sessions, findings=None)  # fmt: skip
    assert [(m.kind, m.lane) for m in page.markers] == [("leave", 0)]  # on the group lane
