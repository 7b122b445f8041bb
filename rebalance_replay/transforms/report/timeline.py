"""The group timeline as a Plotly figure (plain JSON-able dicts, drawn by plotly.js in the page).

Layout: lane 0 (top) is the group — state transitions, group-wide findings; lanes 1… are members. The
x axis is time (epoch ms, shown as dates), the y axis the lanes (reversed, so lane 0 is on top).
Rebalances are shapes *below* the traces (one per rebalance, coloured by trigger) with their generation
label; heartbeats are ticks (or a density heatmap); JoinGroup/SyncGroup are line segments from arrival
to completion; events are markers with hover text.

Band labels are horizontal and start hidden: the page's script shows those that fit, left to right in up to
``LABEL_ROWS`` rows, after every draw, zoom or resize (templates/timeline.js), so no two ever overlap; each
band's hover says the same. A lane's name shows its title (every id of the process) on hover.

:func:`overview_figure` is the overview's timeline: one row per group, its rebalances and open findings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from rebalance_replay.transforms.report.model import SEVERITY_RANK, TRIGGER_COLOURS, GroupPage, Marker
from rebalance_replay.transforms.report.units import fmt_dur, fmt_time, plural

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
#: Rows of band labels above the plot, and their pitch (px)
LABEL_ROWS = 2
LABEL_ROW_PX = 16
LABEL_FONT_PX = 10
#: room above the plot for the rows of band labels, below it for the time axis and the legend
TOP_MARGIN = LABEL_ROWS * LABEL_ROW_PX + 24
BOTTOM_MARGIN = 110


def plotly_text(text: str) -> str:
    """A hover text of the page model for plotly, which reads tags and entities in text: the data in it
    escaped (shown as written), its line breaks (``<br>``) kept."""
    return escape(text, quote=False).replace("&lt;br&gt;", "<br>")


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


def segment_trace(name: str, colour: str, data: dict[str, Any], *, width: int, tick: int) -> dict[str, Any]:
    """A trace of segments (``data``: x, y, text with None between segments), each drawn as a line of
    ``width`` px ending in ``tick`` px ticks, hover text its own."""
    return {
        "type": "scatter",
        "mode": "lines+markers",
        "name": name,
        **data,
        "hovertemplate": "%{text}<extra></extra>",
        "line": {"color": colour, "width": width},
        "marker": {"symbol": "line-ns", "size": tick, "color": colour, "line": {"width": 2, "color": colour}},
        "connectgaps": False,
    }


def _segments(spans: list[Any]) -> tuple[list[Any], list[Any], list[Any]]:
    xs: list[Any] = []
    ys: list[Any] = []
    texts: list[Any] = []
    for s in spans:
        hover = (
            f"{SPAN_STYLE[s.api][1]} {escape(str(s.where))}<br>→ {escape(str(s.error))}"
            + (f", generation {s.generation}" if s.generation is not None else "")
            + f"<br>{fmt_dur(s.end_ms - s.start_ms)}"
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
        data = {"x": xs, "y": ys, "text": texts}
        traces.append(segment_trace(f"{name} (arrival → completion)", colour, data, width=6, tick=10))
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
                "text": [plotly_text(m.text) for m in ms],
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
                "text": [plotly_text(b.hover) for b in page.bands],
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
        band_label(b.start_ms, escape(f"{b.label} · {b.trigger}"), plotly_text(b.hover)) for b in page.bands
    ]
    lane_px = BIG_LANE_PX if big else LANE_PX
    height = TOP_MARGIN + BOTTOM_MARGIN + max(260, 40 + n_lanes * lane_px)
    span = max(page.end_ms - page.start_ms, 1)
    pad = max(span // 50, 500)
    layout = {
        "height": height,
        "margin": {"l": left_margin, "r": 10, "t": TOP_MARGIN, "b": BOTTOM_MARGIN},
        "hovermode": "closest",
        "dragmode": "zoom",
        "showlegend": True,
        # below the time axis (its labels take ~45 px)
        "legend": {
            "orientation": "h",
            "y": -50 / (height - TOP_MARGIN - BOTTOM_MARGIN),
            "yanchor": "top",
            "x": 0,
        },
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
            # plotly reads tags and entities in text: a label is escaped, shown as written
            "ticktext": [
                escape(labels[i] if i == 0 or not sparse else f"{i}: {labels[i]}") for i in tickvals
            ],
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
    titles = ["the group: state transitions, group-wide findings"] + [
        lane_title(lane.title) for lane in page.lanes
    ]
    return {**_page_script(titles), "data": traces, "layout": layout}


def band_label(x: int, text: str, hover: str) -> dict[str, Any]:
    """A rebalance band's label: horizontal, above the plot at the band's start, hidden until the page's
    script finds it room (``name`` "band"); hovering it shows the band's hover."""
    return {
        "name": "band",
        "visible": False,
        "x": x,
        "xref": "x",
        "y": 1,
        "yref": "paper",
        "yanchor": "bottom",
        "xanchor": "left",
        "text": text,
        "hovertext": hover,
        "showarrow": False,
        "textangle": 0,
        "borderpad": 0,
        "borderwidth": 0,
        "font": {"size": LABEL_FONT_PX, "color": "#333"},
    }


def lane_title(title: str) -> str:
    """A lane's title as the page's tooltip shows it (plain text, one item a line)."""
    return title.replace("<br>", "\n")


def _page_script(titles: Sequence[str], links: Sequence[str] = ()) -> dict[str, Any]:
    """What the page's script reads besides the figure: each lane's title (and link), the label rows."""
    lanes: dict[str, Any] = {"titles": list(titles)}
    if links:
        lanes["links"] = list(links)
    return {"lanes": lanes, "label_rows": LABEL_ROWS, "label_row_px": LABEL_ROW_PX}


#: Finding markers on the overview, by severity (the pages' severity colours)
SEVERITY_COLOURS = {"critical": "#b00020", "warning": "#b36b00", "info": "#555555"}
OVERVIEW_ROW_PX = 30
#: Group names longer than this are shortened in the middle on the overview's axis (whole in the hover)
OVERVIEW_NAME_CHARS = 40


def _shorten(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[: chars - 9] + "…" + text[-8:]


def overview_rows(ov: Any) -> list[Mapping[str, Any]]:
    """The overview timeline's groups (``Overview.timeline``), in the order of ``by_rebalancing`` (the
    group spending the most time rebalancing first), any other after them by id."""
    rows = list(getattr(ov, "timeline", None) or [])
    rank = {str(g["group_id"]): i for i, g in enumerate(getattr(ov, "by_rebalancing", None) or [])}
    return sorted(rows, key=lambda g: (rank.get(str(g["group_id"]), len(rank)), str(g["group_id"])))


def _overview_span(ov: Any, rows: Sequence[Mapping[str, Any]]) -> tuple[int, int] | None:
    times = [int(t) for g in rows for r in g.get("rebalances") or [] for t in (r["start_ms"], r["end_ms"])]
    times += [int(f["time_ms"]) for g in rows for f in g.get("findings") or []]
    lo = getattr(ov, "start_ms", None)
    hi = getattr(ov, "end_ms", None)
    lo = min(times) if lo is None and times else lo
    hi = max(times) if hi is None and times else hi
    if lo is None or hi is None:
        return None
    return int(lo), max(int(hi), int(lo))


def overview_figure(ov: Any) -> dict[str, Any]:
    """The overview's timeline of every group (``{}`` when there is none): one row per group, its rebalances
    as bars coloured by trigger (a tick at each end, so a short one still shows), its open findings as
    markers coloured by severity just above; hovers name the group, the rebalance, its trigger and
    duration, the time. A click on a rebalance or finding opens its row on the group's page, on a group's
    name or row the page (the page's script, links in ``lanes``)."""
    rows = overview_rows(ov)
    if not rows:
        return {}
    n = len(rows)
    traces: list[dict[str, Any]] = []
    segments: dict[str, dict[str, list[Any]]] = {}
    marks: dict[str, dict[str, list[Any]]] = {}
    for y, g in enumerate(rows):
        group, page = escape(str(g["group_id"])), str(g.get("page") or "")
        for r in g.get("rebalances") or []:
            trigger = str(r.get("trigger") or "unknown")
            start, end = int(r["start_ms"]), max(int(r["end_ms"]), int(r["start_ms"]))
            gen = r.get("generation_to")
            hover = (
                f"<b>{group}</b><br>rebalance #{r['seq']}"
                + ("" if gen is None else f" (to generation {gen})")
                + f"<br>trigger: {escape(trigger)}<br>duration: {fmt_dur(end - start)}"
                + f"<br>{fmt_time(start)} → {fmt_time(end)}"
            )
            href = f"{page}#rebalance-{r['seq']}" if page else None
            seg = segments.setdefault(trigger, {"x": [], "y": [], "text": [], "customdata": []})
            seg["x"] += [start, end, None]
            seg["y"] += [y, y, None]
            seg["text"] += [hover, hover, None]
            seg["customdata"] += [href, href, None]
        for f in g.get("findings") or []:
            severity = str(f.get("severity") or "info")
            hover = (
                f"<b>{group}</b><br>{escape(str(f.get('rule_id') or ''))} [{escape(severity)}]: "
                f"{escape(str(f.get('summary') or ''))}<br>{fmt_time(f.get('time_ms'))}"
            )
            mark = marks.setdefault(severity, {"x": [], "y": [], "text": [], "customdata": []})
            mark["x"].append(int(f["time_ms"]))
            mark["y"].append(y - 0.3)
            mark["text"].append(hover)
            mark["customdata"].append(f"{page}#{f.get('anchor') or 'findings'}" if page else None)
    for trigger, seg in sorted(segments.items()):
        colour = TRIGGER_COLOURS.get(trigger, TRIGGER_COLOURS["unknown"])
        traces.append({**segment_trace(escape(trigger), colour, seg, width=12, tick=16), "opacity": 0.85})
    for severity in sorted(marks, key=lambda s: -SEVERITY_RANK.get(s, 0)):
        colour = SEVERITY_COLOURS.get(severity, SEVERITY_COLOURS["info"])
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": f"{severity} finding",
                **marks[severity],
                "hovertemplate": "%{text}<extra></extra>",
                "marker": {
                    "symbol": "diamond",
                    "size": 10,
                    "color": colour,
                    "line": {"width": 1, "color": "#fff"},
                },
            }
        )
    names = [_shorten(str(g["group_id"]), OVERVIEW_NAME_CHARS) for g in rows]
    longest = max(len(x) for x in names)
    plot_px = n * OVERVIEW_ROW_PX + 10
    xaxis: dict[str, Any] = {
        "type": "date",
        "title": {"text": "time (UTC)"},
        "showgrid": True,
        "gridcolor": "#eee",
    }
    span = _overview_span(ov, rows)
    if span is not None:
        pad = max((span[1] - span[0]) // 50, 500)
        xaxis["range"] = [span[0] - pad, span[1] + pad]
    layout = {
        "height": 20 + 60 + plot_px,
        "margin": {"l": min(360, 24 + int(longest * 11 * 0.62)), "r": 10, "t": 20, "b": 60},
        "hovermode": "closest",
        "dragmode": "zoom",
        "showlegend": False,  # the page says what the colours mean, above the plot
        "xaxis": xaxis,
        "yaxis": {
            "tickmode": "array",
            "tickvals": list(range(n)),
            "ticktext": [escape(x) for x in names],
            "range": [n - 0.5, -0.5],
            "automargin": False,
            "showgrid": False,
            "zeroline": False,
            "fixedrange": True,
            "tickfont": {"size": 11},
        },
        # every other row shaded, so a row reads across
        "shapes": [
            {
                "type": "rect",
                "layer": "below",
                "xref": "paper",
                "yref": "y",
                "x0": 0,
                "x1": 1,
                "y0": y - 0.5,
                "y1": y + 0.5,
                "fillcolor": "#f4f6f9",
                "line": {"width": 0},
            }
            for y in range(0, n, 2)
        ],
        "plot_bgcolor": "#ffffff",
        "paper_bgcolor": "#ffffff",
    }
    titles = [
        f"{g['group_id']}\n{plural(len(g.get('rebalances') or []), 'rebalance')}, "
        f"{plural(len(g.get('findings') or []), 'open finding')}"
        for g in rows
    ]
    return {
        **_page_script(titles, [str(g.get("page") or "") for g in rows]),
        "scroll_zoom": False,
        "data": traces,
        "layout": layout,
    }
