"""The group timeline as a Plotly figure (plain JSON-able dicts, drawn by plotly.js in the page).

Layout: lane 0 (top) is the group — state transitions, group-wide findings; lanes 1… are members. The
x axis is time (epoch ms, shown as dates), the y axis the lanes (reversed, so lane 0 is on top).
Rebalances are shapes *below* the traces (one per rebalance, coloured by trigger) with their generation
label; heartbeats are ticks (or a density heatmap); JoinGroup/SyncGroup are line segments from arrival
to completion; events are markers with hover text.
"""

from __future__ import annotations

from typing import Any

from rebalance_replay.transforms.report.model import GroupPage, Marker

MARKER_STYLE: dict[str, dict[str, Any]] = {
    "transition": {"symbol": "diamond", "color": "#444444", "size": 9, "name": "state transition"},
    "leave": {"symbol": "triangle-left", "color": "#E69F00", "size": 12, "name": "LeaveGroup"},
    "eviction": {"symbol": "x-thin-open", "color": "#D55E00", "size": 14, "name": "eviction", "width": 3},
    "heartbeat": {"symbol": "circle-open", "color": "#8C564B", "size": 7, "name": "heartbeat (not NONE)"},
    "mismatch": {
        "symbol": "square-open",
        "color": "#FF0000",
        "size": 14,
        "name": "predicted ≠ observed",
        "width": 3,
    },
    "finding": {"symbol": "star", "color": "#9467BD", "size": 15, "name": "finding"},
}
SPAN_STYLE = {"JOIN_GROUP": ("#1F77B4", "JoinGroup"), "SYNC_GROUP": ("#2CA02C", "SyncGroup")}
LANE_PX = 36
#: Above this many JoinGroup (or SyncGroup) spans on a page they are drawn without hover text.
MAX_HOVER_SPANS = 3000
#: Up to this many lanes each has its label; above, every k-th lane (the hover names every member).
MAX_LABELLED_LANES = 100
BIG_LANE_PX = 12


def lane_ticks(n_lanes: int) -> list[int]:
    """The lanes that get a y-axis label: all of them up to MAX_LABELLED_LANES, else every k-th."""
    step = 1 if n_lanes <= MAX_LABELLED_LANES else -(-n_lanes // MAX_LABELLED_LANES)
    return list(range(0, n_lanes, step))


def merge_spans(spans: list[Any], gap_ms: int) -> list[tuple[int, int, int]]:
    """Per lane, spans (any API) merged where they overlap or are at most ``gap_ms`` apart:
    ``(start_ms, end_ms, lane)``, by lane then time."""
    out: list[tuple[int, int, int]] = []
    for s in sorted(spans, key=lambda s: (s.lane, s.start_ms)):
        if out and out[-1][2] == s.lane and s.start_ms <= out[-1][1] + gap_ms:
            a, b, lane = out[-1]
            out[-1] = (a, max(b, s.end_ms), lane)
        else:
            out.append((s.start_ms, s.end_ms, s.lane))
    return out


def _segments(spans: list[Any]) -> tuple[list[Any], list[Any], list[Any]]:
    xs: list[Any] = []
    ys: list[Any] = []
    texts: list[Any] = []
    for s in spans:
        hover = (
            f"{SPAN_STYLE[s.api][1]} {s.where}<br>→ {s.error}"
            + (f", generation {s.generation}" if s.generation is not None else "")
            + f"<br>{(s.end_ms - s.start_ms) / 1000:.3f} s"
            + ("<br><b>predicted ≠ observed</b>" if s.mismatch else "")
        )
        xs += [s.start_ms, s.end_ms, None]
        ys += [s.lane, s.lane, None]
        texts += [hover, hover, None]
    return xs, ys, texts


def figure(page: GroupPage) -> dict[str, Any]:
    """The Plotly figure (``{"data": [...], "layout": {...}}``) of one group page."""
    n_lanes = len(page.lanes) + 1
    big = n_lanes > 60
    labels = ["group (state, findings)"] + [lane.label for lane in page.lanes]
    # plotly measures every tick label (seconds for a thousand): big groups label every k-th lane
    sparse = n_lanes > MAX_LABELLED_LANES
    tickvals = lane_ticks(n_lanes)
    font_px = 9 if big else 11
    longest = max(len(labels[i]) + (len(str(i)) + 2 if sparse else 0) for i in tickvals)
    left_margin = min(560, 20 + int(longest * font_px * 0.62))
    traces: list[dict[str, Any]] = []

    if page.density is not None:
        d = page.density
        lanes = sorted(d.counts)
        traces.append(
            {
                "type": "heatmap",
                "name": f"heartbeats per {d.bin_ms // 1000} s",
                "x": [d.start_ms + i * d.bin_ms + d.bin_ms // 2 for i in range(d.bins)],
                "y": lanes,
                "z": [[c if c else None for c in d.counts[lane]] for lane in lanes],
                "colorscale": [[0, "#dddddd"], [1, "#333333"]],
                "showscale": True,
                "colorbar": {"title": {"text": f"heartbeats / {d.bin_ms // 1000} s"}, "len": 0.5},
                "hovertemplate": "lane %{y}: %{z} heartbeats<extra></extra>",
                "opacity": 0.75,  # the rebalance bands below show through
                "xgap": 0,
                "ygap": 1,
            }
        )
    elif page.ticks:
        xs = [t for lane in sorted(page.ticks) for t in page.ticks[lane]]
        ys = [lane for lane in sorted(page.ticks) for _ in page.ticks[lane]]
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": "heartbeat",
                "x": xs,
                "y": ys,
                "marker": {"symbol": "line-ns-open", "size": 8, "color": "#999999", "line": {"width": 1}},
                "hoverinfo": "x",
            }
        )
    if len(page.spans) > MAX_HOVER_SPANS:
        # big groups: each lane's JoinGroup/SyncGroup spans merged where less than a pixel apart at the
        # full view, one light path without hover (every request is in the tables and the findings)
        merged = merge_spans(page.spans, max(1, (page.end_ms - page.start_ms) // 2000))
        traces.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": f"JoinGroup → SyncGroup ({len(page.spans)} requests, merged)",
                "x": [x for a, b, _ in merged for x in (a, b, None)],
                "y": [y for _, _, lane in merged for y in (lane, lane, None)],
                "hoverinfo": "skip",
                "line": {"color": SPAN_STYLE["JOIN_GROUP"][0], "width": 4},
                "connectgaps": False,
            }
        )
    for api, (colour, name) in SPAN_STYLE.items():
        spans = [s for s in page.spans if s.api == api]
        if not spans or len(page.spans) > MAX_HOVER_SPANS:
            continue
        xs, ys, texts = _segments(spans)
        trace: dict[str, Any] = {
            "type": "scatter",
            "mode": "lines+markers",
            "name": f"{name} (arrival → completion)",
            "x": xs,
            "y": ys,
            "text": texts,
            "hovertemplate": "%{text}<extra></extra>",
            "line": {"color": colour, "width": 6},
            "marker": {
                "symbol": "line-ns",
                "size": 10,
                "color": colour,
                "line": {"width": 2, "color": colour},
            },
            "connectgaps": False,
        }
        traces.append(trace)
    by_kind: dict[str, list[Marker]] = {}
    for m in page.markers:
        by_kind.setdefault(m.kind, []).append(m)
    for kind, style in MARKER_STYLE.items():
        ms = by_kind.get(kind)
        if not ms:
            continue
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": style["name"],
                "x": [m.time_ms for m in ms],
                "y": [m.lane for m in ms],
                "text": [m.text for m in ms],
                "hovertemplate": "%{text}<extra></extra>",
                "marker": {
                    "symbol": style["symbol"],
                    "size": style["size"],
                    "color": style["color"],
                    "line": {"width": style.get("width", 1), "color": style["color"]},
                },
            }
        )
    # one invisible point per band so its hover (trigger, durations) shows at the band's label
    if page.bands:
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": "rebalance",
                "x": [(b.start_ms + b.end_ms) // 2 for b in page.bands],
                "y": [0 for _ in page.bands],
                "text": [b.hover for b in page.bands],
                "hovertemplate": "%{text}<extra></extra>",
                "marker": {"size": 18, "opacity": 0},
                "showlegend": False,
            }
        )
    shapes = [
        {
            "type": "rect",
            "layer": "below",
            "xref": "x",
            "yref": "paper",
            "x0": b.start_ms,
            "x1": max(b.end_ms, b.start_ms + 1),
            "y0": 0,
            "y1": 1,
            "fillcolor": b.colour,
            "opacity": 0.25,
            "line": {"width": 1, "color": b.colour, "dash": "dot" if b.open else "solid"},
        }
        for b in page.bands
    ]
    annotations = [
        {
            "x": b.start_ms,
            "xref": "x",
            "y": 1,
            "yref": "paper",
            "yanchor": "bottom",
            "xanchor": "left",
            "text": f"{b.label} · {b.trigger}",
            "showarrow": False,
            "textangle": -30,
            "font": {"size": 10, "color": "#333"},
        }
        for b in page.bands
    ]
    lane_px = BIG_LANE_PX if big else LANE_PX
    height = max(480, 260 + n_lanes * lane_px)
    span = max(page.end_ms - page.start_ms, 1)
    pad = max(span // 50, 500)
    layout = {
        "height": height,
        "margin": {"l": left_margin, "r": 10, "t": 110, "b": 110},
        "hovermode": "closest",
        "dragmode": "zoom",
        "showlegend": True,
        # below the time axis (its labels take ~45 px)
        "legend": {"orientation": "h", "y": -50 / (height - 220), "yanchor": "top", "x": 0},
        "xaxis": {
            "type": "date",
            "range": [page.start_ms - pad, page.end_ms + pad],
            "title": {"text": "time (UTC)"},
            "showgrid": True,
            "gridcolor": "#eeeeee",
        },
        "yaxis": {
            "tickmode": "array",
            "tickvals": tickvals,
            "ticktext": [labels[i] if i == 0 or not sparse else f"{i}: {labels[i]}" for i in tickvals],
            "range": [n_lanes - 0.5, -0.5],
            # no automargin: it redraws every trace once the labels are measured (seconds on big pages)
            "automargin": False,
            "showgrid": True,
            "gridcolor": "#f3f3f3",
            "zeroline": False,
            "tickfont": {"size": font_px},
            "fixedrange": False,
        },
        "shapes": shapes,
        "annotations": annotations,
        "plot_bgcolor": "#ffffff",
        "paper_bgcolor": "#ffffff",
    }
    return {"data": traces, "layout": layout}
