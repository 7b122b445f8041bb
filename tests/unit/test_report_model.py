"""The report's page model: what goes into each lane, band and marker (no browser, no Spark)."""

from __future__ import annotations

from typing import Any

from rebalance_replay.transforms.report.datadocs import offline_html, remote_urls
from rebalance_replay.transforms.report.html import AUDIT_NOT_RUN, group_html, overview_html
from rebalance_replay.transforms.report.model import (
    MAX_TICKS,
    TRIGGER_COLOURS,
    HeartbeatBin,
    MemberConnection,
    api_agreement,
    build_group_page,
    build_overview,
    group_timeline,
    heartbeat_bin_ms,
    heartbeat_unit_ms,
    scoped_summary,
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


def test_lanes_one_per_process_in_order_of_first_appearance_with_client_and_host() -> None:
    page = sample_page()
    assert [lane.member_ids for lane in page.lanes] == [("a-1",), ("b-2",)]
    assert [lane.index for lane in page.lanes] == [1, 2]  # lane 0 is the group
    a, b = page.lanes
    assert (b.group_instance_id, b.client_id, b.host) == ("inst-b", "b", "10.0.0.2")
    assert (a.label, b.label) == ("a@10.0.0.1", "inst-b")  # static: its instance id
    assert b.title.split("<br>") == [
        "host 10.0.0.2",
        "client id b",
        "instance id inst-b",
        "member id b-2 joined 2024-05-01 10:00:00.020Z",
    ]
    assert (page.stats["members"], page.stats["processes"]) == (2, 2)


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
    # about 300 bins, each rounded up to a whole second, minute or hour by its width
    assert heartbeat_bin_ms(MAX_TICKS + 1, 86_400_000) == 300_000  # a day: 288 bins of 5 minutes
    assert heartbeat_bin_ms(MAX_TICKS + 1, 3_600_000) == 12_000  # an hour: 300 bins of 12 s
    assert heartbeat_bin_ms(MAX_TICKS + 1, 300 * 60_000) == 60_000
    assert heartbeat_bin_ms(MAX_TICKS + 1, 300 * 60_000 + 300) == 120_000  # a minute is the unit above it
    assert heartbeat_bin_ms(MAX_TICKS + 1, 30 * 86_400_000) == 3 * 3_600_000  # 30 days: 240 bins of 3 hours
    assert heartbeat_bin_ms(MAX_TICKS + 1, 10) == 1000


def test_a_heartbeat_unit_divides_every_wider_bin() -> None:
    """The counts a scheduled report keeps per unit add up into the bins of any longer span."""
    spans = [0, 1, 999, 60_000, 3_600_000, 18_000_299, 18_000_301, 86_400_000, 10**9, 10**10, 3 * 10**10]
    widths = [heartbeat_bin_ms(MAX_TICKS + 1, s) for s in spans]
    assert widths == sorted(widths)
    assert [heartbeat_unit_ms(w) for w in widths] == sorted(heartbeat_unit_ms(w) for w in widths)
    for i, w in enumerate(widths):
        unit = heartbeat_unit_ms(w)
        assert w % unit == 0
        assert all(later % unit == 0 for later in widths[i:]), (w, unit)
    assert heartbeat_unit_ms(1) == 1 and heartbeat_unit_ms(12_000) == 1000
    assert heartbeat_unit_ms(120_000) == 60_000 and heartbeat_unit_ms(3 * 3_600_000) == 3_600_000
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


# --- lanes are processes (issue 28) ----------------------------------------------------------------


def pod(
    member: str,
    port: int,
    joined: int,
    last: int,
    *,
    host: str = "10.0.0.5",
    client: str = "consumer-g-1",
    reason: str = "session_expiry",
    instance: str | None = None,
) -> tuple[dict[str, Any], list[HeartbeatBin], MemberConnection]:
    """A member that joined at ``joined`` from ``host:port`` and heartbeat every 3 s until ``last``; the
    coordinator ends its session 45 s later (a crash: after the restarted pod's new member joined).
    member_sessions has the host alone (as the replay writes it); ``requests`` the host and port."""
    row = session(member, 1, joined, last + 45_000, reason, client_id=client, client_address=host)
    row.update(last_heartbeat_ms=last, group_instance_id=instance)
    beats = [HeartbeatBin(member, t, 1) for t in range(joined + 3000, last + 1, 3000)]
    return row, beats, MemberConnection(member, f"{host}:{port}", client, joined, last)


def pods_page(*pods: tuple[dict[str, Any], list[HeartbeatBin], MemberConnection], **kw: Any) -> Any:
    return build_group_page(
        "g",
        predictions=[],
        heartbeat_bins=[b for _, beats, _ in pods for b in beats],
        bin_ms=1,
        transitions=[],
        rebalances=[],
        sessions=[row for row, _, _ in pods],
        findings=None,
        connections=[c for _, _, c in pods],
        **kw,
    )


def test_a_crash_looping_pod_is_one_lane_with_every_member_id() -> None:
    """Restarted 4 times: same host, a new port each time, the default client id; each old member is
    expired by the coordinator only after the new one joined, but sent nothing after it crashed."""
    restarts = [
        pod(f"consumer-g-1-{i}", 40_000 + i, T0 + i * 20_000, T0 + i * 20_000 + 9000) for i in range(5)
    ]
    page = pods_page(*restarts)
    (lane,) = page.lanes
    assert lane.member_ids == tuple(f"consumer-g-1-{i}" for i in range(5))
    assert lane.label == "consumer-g-1@10.0.0.5 ×5 member ids"
    assert (
        lane.title.count("member id consumer-g-1-") == 5 and "joined 2024-05-01 10:01:20.000Z" in lane.title
    )
    assert (page.stats["members"], page.stats["processes"]) == (5, 1)
    assert {m.lane for m in page.markers if m.kind == "eviction"} == {1} and set(page.ticks) == {1}


def test_concurrent_members_with_one_client_id_on_one_host_are_two_lanes() -> None:
    """Real-broker recordings: every client on 127.0.0.1 (a port each), every Java pod ``consumer-g-1``."""
    a = pod("m-a", 50_001, T0, T0 + 60_000, host="127.0.0.1")
    b = pod("m-b", 50_002, T0 + 5000, T0 + 60_000, host="127.0.0.1")
    c = pod("m-c", 50_003, T0 + 61_000, T0 + 90_000, host="127.0.0.1")  # after both: one of them restarted
    page = pods_page(a, b, c)
    assert [lane.member_ids for lane in page.lanes] == [("m-a", "m-c"), ("m-b",)]
    # the labels tell the two apart by the port of their connection
    assert [lane.label for lane in page.lanes] == [
        "consumer-g-1@127.0.0.1:50001 ×2 member ids",
        "consumer-g-1@127.0.0.1:50002",
    ]
    assert (page.stats["members"], page.stats["processes"]) == (3, 2)


def test_host_and_port_from_the_sessions_alone_also_tell_processes_apart() -> None:
    """Without the requests' connections, a session's client_address that names a port is used."""
    rows = []
    for member, port, joined, last in (("m-a", 1, T0, T0 + 60_000), ("m-b", 2, T0 + 5000, T0 + 60_000)):
        row, _, _ = pod(member, port, joined, last, host="127.0.0.1")
        rows.append({**row, "client_address": f"127.0.0.1:{port}"})
    page = build_group_page("g", predictions=[], heartbeat_bins=[], bin_ms=1, transitions=[], rebalances=[],
                            sessions=rows, findings=None)  # fmt: skip
    assert [lane.member_ids for lane in page.lanes] == [("m-a",), ("m-b",)]
    assert [lane.host for lane in page.lanes] == ["127.0.0.1", "127.0.0.1"]


def test_a_static_member_with_new_member_ids_is_one_lane() -> None:
    first = pod("s-1", 40_001, T0, T0 + 9000, instance="app-0", client="c")
    second = pod("s-2", 40_002, T0 + 20_000, T0 + 29_000, instance="app-0", client="c", host="10.0.0.6")
    other = pod("s-3", 40_003, T0 + 1000, T0 + 29_000, instance="app-1", client="c")
    leave = pred("LEAVE_GROUP", None, T0 + 29_500, group_instance_id="app-0")  # v3+: by instance id
    page = build_group_page(
        "g",
        predictions=[leave],
        heartbeat_bins=[],
        bin_ms=1,
        transitions=[],
        rebalances=[],
        sessions=[first[0], second[0], other[0]],
        findings=None,
        connections=[first[2], second[2], other[2]],
    )
    assert [(lane.label, lane.member_ids) for lane in page.lanes] == [
        ("app-0 ×2 member ids", ("s-1", "s-2")),
        ("app-1", ("s-3",)),
    ]
    assert [(m.kind, m.lane) for m in page.markers if m.kind == "leave"] == [("leave", 1)]


def test_a_member_id_rejoining_from_the_same_host_and_port_stays_in_its_lane() -> None:
    """A member removed after a poll timeout comes back under its id (a session of its own), then under a
    new one, on the same connection: its lane, not that of another pod of the host with the same client
    id that stopped later."""
    x = pod("m-x", 50_001, T0, T0 + 10_000, host="127.0.0.1", reason="rebalance_timeout_eviction")
    again = pod("m-x", 50_001, T0 + 30_000, T0 + 40_000, host="127.0.0.1", reason="left")
    z = pod("m-z", 50_002, T0 + 1000, T0 + 45_000, host="127.0.0.1")
    y = pod("m-y", 50_001, T0 + 50_000, T0 + 60_000, host="127.0.0.1")
    page = pods_page(x, again, z, y)
    assert [lane.member_ids for lane in page.lanes] == [("m-x", "m-y"), ("m-z",)]
    assert (page.stats["members"], page.stats["processes"]) == (3, 2)
    assert sorted(m.lane for m in page.markers if m.kind == "eviction") == [1, 1, 2]


def test_members_only_in_predictions_get_a_lane_each() -> None:
    preds = [pred("SYNC_GROUP", "p-1", T0), pred("SYNC_GROUP", "p-2", T0 + 1000)]
    page = build_group_page("g", predictions=preds, heartbeat_bins=[], bin_ms=1, transitions=[],
                            rebalances=[], sessions=[], findings=None)  # fmt: skip
    assert [(lane.member_ids, lane.label) for lane in page.lanes] == [(("p-1",), "p-1"), (("p-2",), "p-2")]
    assert [s.lane for s in page.spans] == [1, 2]


# --- window scoping, hover durations, overview timeline ---------------------------------------------


def base_predictions() -> list[dict[str, Any]]:
    return [
        pred("JOIN_GROUP", "", T0 + 10, observed_member_id="a-1", observed_completion_ms=T0 + 3010),
        pred("HEARTBEAT", "b-2", T0 + 9000, observed_error="REBALANCE_IN_PROGRESS"),
        pred("JOIN_GROUP", "b-2", T0 + 14_000, observed_completion_ms=T0 + 19_000),  # parked past the end
        pred("LEAVE_GROUP", None, T0 + 20_000, group_instance_id="inst-b"),
    ]


def sample_page_in(window: tuple[int | None, int | None]) -> Any:
    """The sample's rows the Spark side keeps for ``window`` (a row overlapping it stays), as one page."""
    lo, hi = window
    base = sample_page()

    def inside(start: int, end: int | None) -> bool:
        return (hi is None or start < hi) and (lo is None or end is None or end >= lo)

    return build_group_page(
        "g",
        predictions=[p for p in base_predictions() if inside(p["arrival_ms"], p["arrival_ms"])],
        heartbeat_bins=[HeartbeatBin("a-1", T0 + 6000, 1)] if inside(T0 + 6000, T0 + 6000) else [],
        bin_ms=1,
        transitions=[],
        rebalances=[r for r in base.rebalances if inside(r["started_ms"], r["ended_ms"])],
        sessions=[x for x in base.sessions if inside(x["joined_ms"], x["ended_ms"])],
        findings=None,
        window=window,
    )


def test_a_window_clips_the_axis_and_what_began_before_it() -> None:
    """``report --from --to``: the sessions and the rebalance that began before the window start the axis
    at the window's start, the rebalance's band too; what lies outside is not drawn; the time rebalancing
    counts inside the window."""
    lo, hi = T0 + 2000, T0 + 15_000
    page = sample_page_in((lo, hi))
    assert (page.start_ms, page.end_ms) == (lo, hi)
    assert [(b.start_ms, b.end_ms, b.open) for b in page.bands] == [
        (lo, T0 + 3030, False),
        (T0 + 8000, hi, True),
    ]
    assert page.stats["rebalance_ms"] == (T0 + 3030 - lo) + (hi - (T0 + 8000))
    assert all(lo <= m.time_ms <= hi for m in page.markers)
    assert ("eviction", T0 + 8000) in [(m.kind, m.time_ms) for m in page.markers]
    assert (page.stats["start_ms"], page.stats["end_ms"]) == (lo, hi)
    whole = sample_page()
    assert (whole.start_ms, whole.end_ms) == (T0 + 10, T0 + 20_000)


def test_spans_parked_past_the_window_end_at_its_edge() -> None:
    page = sample_page_in((T0 + 5000, T0 + 15_000))
    assert [(s.lane, s.start_ms, s.end_ms) for s in page.spans] == [(2, T0 + 14_000, T0 + 15_000)]


def test_band_hover_durations_in_human_units() -> None:
    page = sample_page()
    assert "total 3.0 s" in page.bands[0].hover and "total –" in page.bands[1].hover


def test_overview_timeline_per_group_in_rebalancing_order_with_open_findings() -> None:
    f = {
        "finding_key": "00000000000000aa",
        "status": "new",
        "rule_id": "R02",
        "rule": "session-timeout-eviction",
        "severity": "critical",
        "summary": "a-1 evicted",
        "fix": "fix",
        "group_id": "g",
        "member_ids": ["a-1"],
        "window_start_ms": T0 + 8000,
    }
    page = sample_page(findings=[f, {**f, "finding_key": "00000000000000bb", "status": "resolved"}])
    row = group_timeline(page, "group-g.html")
    assert row == {
        "group_id": "g",
        "page": "group-g.html",
        "rebalances": [
            {"seq": 1, "start_ms": T0 + 10, "end_ms": T0 + 3030, "trigger": "group_created",
             "generation_to": 1},
            # still open: to the group's last time
            {"seq": 2, "start_ms": T0 + 8000, "end_ms": T0 + 20_000, "trigger": "session_expiry",
             "generation_to": None},
        ],
        "findings": [
            {"time_ms": T0 + 8000, "severity": "critical", "rule_id": "R02", "summary": "a-1 evicted",
             "anchor": "finding-00000000000000aa"},
        ],
    }  # fmt: skip
    calm = {"group_id": "calm", "page": "c.html", "rebalances": [], "findings": []}
    groups = [
        {"group_id": "calm", "page": "c.html", "rebalance_ms": 0, "start_ms": T0 - 5, "end_ms": T0 + 100},
        {"group_id": "g", "page": "group-g.html", **page.stats},
    ]
    ov = build_overview({}, groups, None, agreement=[], data_docs=None, title="t", timeline=[calm, row])
    assert [t["group_id"] for t in ov.timeline] == ["g", "calm"]  # like by_rebalancing
    assert (ov.start_ms, ov.end_ms) == (T0 - 5, T0 + 20_000)
    empty = build_overview({}, [], None, agreement=[], data_docs=None, title="t")  # the defaults
    assert (empty.timeline, empty.start_ms, empty.end_ms) == ([], None, None)


def test_scoped_numbers_are_counted_from_the_scoped_rows_and_labelled() -> None:
    rows = [
        {"group_id": "g", "api": "HEARTBEAT", "n": 10, "scored": 8, "matched": 6},
        {"group_id": "h", "api": "JOIN_GROUP", "n": 5, "scored": 2, "matched": 2},
    ]
    numbers = scoped_summary(40, rows, 3)
    assert numbers == {"requests": 40, "predictions": 15, "matched": 8, "rebalances": 3, "agreement": 0.8}
    ov = build_overview(numbers, [], None, agreement=[], data_docs=None, title="t", scope="in window")
    assert ov.numbers == [
        ("requests in window", "40"),
        ("predictions in window", "15"),
        ("matched in window", "8"),
        ("rebalances in window", "3"),
        ("agreement in window", "80.00%"),
    ]
    assert scoped_summary(0, [], 0)["agreement"] is None
