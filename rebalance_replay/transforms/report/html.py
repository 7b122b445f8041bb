"""HTML of the report pages: self-contained (inline CSS, data and script; plotly.js is one file in the
report's ``assets/`` folder, referenced relatively), no request leaves the machine, printable."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from html import escape
from typing import Any

from rebalance_replay.transforms.audit.about import ABOUT
from rebalance_replay.transforms.report.model import GroupPage, Overview
from rebalance_replay.transforms.report.timeline import figure

PLOTLY_ASSET = "assets/plotly.min.js"

CSS = """
:root { --fg:#222; --muted:#666; --line:#ddd; --accent:#0b5394; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif;
       color: var(--fg); margin: 0 auto; padding: 16px 24px 48px; max-width: 1600px; }
h1 { font-size: 22px; margin: 4px 0 2px; } h2 { font-size: 17px; margin: 28px 0 8px;
  border-bottom: 1px solid var(--line); padding-bottom: 4px; }
.sub { color: var(--muted); margin: 0 0 12px; }
nav a { margin-right: 14px; color: var(--accent); }
table { border-collapse: collapse; width: 100%; margin: 6px 0 12px; font-size: 13px; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f6f6f6; position: sticky; top: 0; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.numbers { display: flex; flex-wrap: wrap; gap: 10px; margin: 10px 0; }
.numbers div { border: 1px solid var(--line); border-radius: 6px; padding: 6px 12px; min-width: 120px; }
.numbers b { display: block; font-size: 18px; }
.sev-critical { color: #b00020; font-weight: 600; } .sev-warning { color: #b36b00; font-weight: 600; }
.sev-info { color: #555; }
.mismatch { background: #fff0f0; }
.note { background: #f7f7f2; border-left: 3px solid #c9c39a; padding: 6px 10px; margin: 8px 0; }
#timeline { width: 100%; border: 1px solid var(--line); border-radius: 6px; }
.legend-bands span { display: inline-block; margin-right: 12px; font-size: 12px; }
.legend-bands i { display: inline-block; width: 12px; height: 12px; margin-right: 4px; vertical-align: -2px;
  opacity: .6; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; }
@media print {
  body { max-width: none; padding: 0; font-size: 11px; }
  nav, .modebar { display: none !important; }
  h2 { break-after: avoid; } tr { break-inside: avoid; }
  #timeline { border: none; }
  th { position: static; }
}
"""


def fmt_time(ms: Any) -> str:
    if ms is None:
        return "–"
    return datetime.fromtimestamp(int(ms) / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def fmt_dur(ms: Any) -> str:
    if ms is None:
        return "–"
    ms = int(ms)
    if ms < 1000:
        return f"{ms} ms"
    if ms < 120_000:
        return f"{ms / 1000:.2f} s"
    return f"{ms / 60_000:.1f} min"


def _cell(v: Any, cls: str = "") -> str:
    return f'<td class="{cls}">{v}</td>' if cls else f"<td>{v}</td>"


def _e(v: Any) -> str:
    return "–" if v is None else escape(str(v))


def _list(v: Any) -> str:
    items = list(v or [])
    return ", ".join(escape(str(x)) for x in items) if items else "–"


def table(
    headers: Sequence[str],
    rows: Iterable[Sequence[str]],
    *,
    cls: str = "",
    num: Sequence[int] = (),
    row_ids: Sequence[str | None] = (),
) -> str:
    """An HTML table; cells are already HTML (escape before); ``row_ids``: the rows' ids (anchors)."""
    head = "".join(
        f'<th class="num">{escape(h)}</th>' if i in num else f"<th>{escape(h)}</th>"
        for i, h in enumerate(headers)
    )
    body = []
    for k, r in enumerate(rows):
        cells = "".join(_cell(c, "num" if i in num else "") for i, c in enumerate(r))
        rid = row_ids[k] if k < len(row_ids) else None
        body.append(f'<tr id="{escape(rid)}">{cells}</tr>' if rid else f"<tr>{cells}</tr>")
    if not body:
        body.append(f'<tr><td colspan="{len(headers)}">none</td></tr>')
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def _page(title: str, body: str, *, script: str = "", plotly: bool = False) -> str:
    head_script = f'<script src="{PLOTLY_ASSET}"></script>' if plotly else ""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        # no Content-Security-Policy: browsers disagree on what 'self' is for file:// pages (Firefox would
        # block assets/plotly.min.js); the pages load nothing remote (tested with the network off)
        f"<title>{escape(title)}</title><style>{CSS}</style>{head_script}</head><body>{body}{script}</body></html>\n"
    )


def _json_script(element_id: str, data: Any) -> str:
    text = json.dumps(data, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    return f'<script type="application/json" id="{element_id}">{text}</script>'


def _sev(s: Any) -> str:
    return f'<span class="sev-{escape(str(s))}">{_e(s)}</span>'


def _evidence(f: Mapping[str, Any], *, link: bool) -> str:
    """The evidence rows: on the overview each opens its row on the group's page; on the group's page
    each row is an anchor and opens the rebalance under way when it arrived."""
    out = []
    for item in f.get("evidence_items", [])[:8]:
        code = f"<code>{escape(item['text'])}</code>"
        if link and f.get("page"):
            out.append(f'<a href="{escape(str(f["page"]))}#{escape(item["anchor"])}">{code}</a>')
        elif not link:
            seq = item.get("rebalance_seq")
            during = f' <a href="#rebalance-{seq}">during rebalance #{seq}</a>' if seq is not None else ""
            out.append(f'<span id="{escape(item["anchor"])}">{code}{during}</span>')
        else:
            out.append(code)
    return "<br>".join(out)


def _rule(f: Mapping[str, Any]) -> str:
    """The rule's id and name; hovering shows what it means and when it can be wrong (the text of its
    section in docs/audit-rules.md)."""
    text = f"{_e(f.get('rule_id'))} {_e(f.get('rule'))}"
    about = ABOUT.get(str(f.get("rule_id")))
    if about is None:
        return text
    tip = f"{about.meaning} When it can be wrong: {about.false_positives}"
    return f'<abbr class="rule" title="{escape(tip)}">{text}</abbr>'


def _confidence(value: Any) -> str:
    """``0.90``; ``–`` when unknown."""
    return "–" if value is None else f"{float(value):.2f}"


def findings_table(findings: Sequence[Mapping[str, Any]], *, link: bool) -> str:
    """The findings, new first (their order); on the overview the group opens the finding's row on the
    group's page, on the group's page each row is its anchor (``finding-<finding_key>``)."""
    rows = []
    for f in findings:
        group = _e(f.get("group_id"))
        if link and f.get("page"):
            group = (
                f'<a href="{escape(str(f["page"]))}#{escape(str(f.get("anchor") or "findings"))}">{group}</a>'
            )
        evidence = _evidence(f, link=link)
        rows.append(
            [
                _e(f.get("status") or "ongoing"),
                _sev(f.get("severity")),
                _rule(f),
                _confidence(f.get("confidence")),
                group,
                _e(f.get("summary")),
                _e(f.get("fix")),
                f"{fmt_time(f.get('window_start_ms'))} → {fmt_time(f.get('window_end_ms'))}",
                _list(f.get("member_ids")),
                evidence or "–",
            ]
        )
    return table(
        [
            "status",
            "severity",
            "rule",
            "confidence",
            "group",
            "summary",
            "fix",
            "window",
            "members",
            "evidence (file:line)",
        ],
        rows,
        cls="findings",
        row_ids=[None if link else f.get("anchor") for f in findings],
    )


AUDIT_NOT_RUN = (
    '<p class="note">audit not run: this warehouse has no <code>findings</code> table '
    "(<code>rebalance-replay audit</code> writes it).</p>"
)


def group_html(page: GroupPage, *, title: str, index_href: str = "index.html") -> str:
    fig = figure(page)
    s = page.stats
    numbers = "".join(
        f"<div>{escape(k)}<b>{escape(v)}</b></div>"
        for k, v in [
            ("members", str(s["members"])),
            ("rebalances", str(s["rebalances"])),
            ("time rebalancing", fmt_dur(s["rebalance_ms"])),
            ("heartbeats", str(page.heartbeats)),
            ("predicted ≠ observed", str(s["mismatches"])),
            ("findings", "audit not run" if s["findings"] is None else str(s["findings"])),
        ]
    )
    triggers = sorted({(b.trigger, b.colour) for b in page.bands})
    band_legend = "".join(f'<span><i style="background:{c}"></i>{escape(t)}</span>' for t, c in triggers)
    density_note = (
        f'<p class="sub">{page.heartbeats} heartbeats drawn as density per {page.density.bin_ms // 1000} s '
        "(every heartbeat that did not answer NONE, and every mismatch, is drawn on its own).</p>"
        if page.density is not None
        else ""
    )
    reb_rows = [
        [
            str(r["rebalance_seq"]),
            f"{r['generation_from']} → {_e(r.get('generation_to'))}",
            escape(str(r.get("trigger")))
            + (f"<br><small>{_e(r.get('trigger_cause'))}</small>" if r.get("trigger_cause") else ""),
            fmt_time(r.get("started_ms")),
            fmt_dur(r.get("join_phase_ms")),
            fmt_dur(r.get("sync_phase_ms")),
            fmt_dur(r.get("total_duration_ms")),
            _e(r.get("outcome")),
            f"{len(r.get('members_before') or [])} → {len(r.get('members_after') or [])}",
            _list(r.get("joined")),
            _list(r.get("left")),
            _list(r.get("evicted")),
            _e(r.get("partitions_moved")),
        ]
        for r in page.rebalances
    ]
    sess_rows = [
        [
            f"<span class=mono>{_e(x['member_id'])}</span>",
            _e(x.get("group_instance_id")),
            _e(x.get("client_id")),
            _e(x.get("client_address")),
            str(x["generation_id"]),
            fmt_time(x.get("joined_ms")),
            fmt_time(x.get("last_heartbeat_ms")),
            str(x.get("heartbeats")),
            str(x.get("commits")),
            fmt_time(x.get("ended_ms")),
            _e(x.get("end_reason")) + (" (leader)" if x.get("is_leader") else ""),
        ]
        for x in page.sessions
    ]
    agr_rows = [
        [
            escape(str(a["api"])),
            str(a["predictions"]),
            str(a["scored"]),
            str(a["matched"]),
            "n/a" if a["agreement"] is None else f"{a['agreement']:.2%}",
        ]
        for a in page.agreement
    ]
    mis_rows = [
        [
            f"<code>{_e(m.get('source_file'))}:{_e(m.get('line_no'))}</code>",
            _e(m.get("api")),
            fmt_time(m.get("arrival_ms")),
            _list(m.get("mismatch_kinds")),
            f"{_e(m.get('observed_error'))} / {_e(m.get('predicted_error'))}",
            f"{_e(m.get('observed_generation_id'))} / {_e(m.get('predicted_generation_id'))}",
        ]
        for m in page.mismatches
    ]
    findings = AUDIT_NOT_RUN if page.findings is None else findings_table(page.findings, link=False)
    body = f"""
<nav><a href="{
        escape(index_href)
    }">← overview</a><a href="#rebalances">rebalances</a><a href="#findings">findings</a>
<a href="#sessions">member sessions</a><a href="#agreement">agreement</a></nav>
<h1>group <span class="mono">{escape(page.group_id)}</span></h1>
<p class="sub">{escape(title)} · {fmt_time(page.start_ms)} → {fmt_time(page.end_ms)}</p>
<div class="numbers">{numbers}</div>
<h2>Timeline</h2>
<p class="sub">Drag to zoom, double-click to reset, hover for details. Bands: rebalances by trigger
(dotted: still open at the end of the log). <span class="legend-bands">{band_legend}</span></p>
{density_note}
<div id="timeline" data-lanes="{len(page.lanes) + 1}" data-bands="{len(page.bands)}"></div>
<h2 id="rebalances">Rebalances</h2>
{
        table(
            [
                "#",
                "generation",
                "trigger",
                "started",
                "join phase",
                "sync phase",
                "total",
                "outcome",
                "members",
                "joined",
                "left",
                "evicted",
                "partitions moved",
            ],
            reb_rows,
            num=(0, 4, 5, 6, 12),
            row_ids=[f"rebalance-{r['rebalance_seq']}" for r in page.rebalances],
        )
    }
<h2 id="findings">Findings</h2>
{findings}
<h2 id="sessions">Member sessions</h2>
{
        table(
            [
                "member id",
                "instance id",
                "client id",
                "host",
                "generation",
                "joined",
                "last heartbeat",
                "heartbeats",
                "commits",
                "ended",
                "how it ended",
            ],
            sess_rows,
            num=(4, 7, 8),
        )
    }
<h2 id="agreement">Agreement (predicted vs observed)</h2>
{table(["API", "predictions", "scored", "matched", "agreement"], agr_rows, num=(1, 2, 3, 4))}
<h3>Mismatch examples</h3>
{
        table(
            [
                "request (file:line)",
                "API",
                "arrival",
                "fields",
                "error observed / predicted",
                "generation observed / predicted",
            ],
            mis_rows,
            cls="mismatch",
        )
    }
"""
    script = _json_script("figure-data", fig) + (
        "<script>(function(){var f=JSON.parse(document.getElementById('figure-data').textContent);"
        "var el=document.getElementById('timeline');var t0=performance.now();"
        "Plotly.newPlot(el,f.data,f.layout,{responsive:true,displaylogo:false,scrollZoom:true})"
        ".then(function(){el.setAttribute('data-plot-ms',String(Math.round(performance.now()-t0)));"
        "el.setAttribute('data-rendered',String(Math.round(performance.now())));});"
        "window.addEventListener('beforeprint',function(){Plotly.relayout(el,{width:1000});});"
        "window.addEventListener('afterprint',function(){Plotly.relayout(el,{width:null});});})();</script>"
    )
    return _page(f"{page.group_id} — rebalance-replay", body, script=script, plotly=True)


def overview_html(ov: Overview) -> str:
    numbers = "".join(f"<div>{escape(k)}<b>{escape(v)}</b></div>" for k, v in ov.numbers)

    def group_link(g: Mapping[str, Any]) -> str:
        return f'<a href="{escape(str(g["page"]))}">{escape(str(g["group_id"]))}</a>'

    reb_rows = [
        [
            group_link(g),
            fmt_dur(g.get("rebalance_ms")),
            str(g.get("rebalances")),
            str(g.get("members")),
            _e(g.get("mismatches")),
        ]
        for g in ov.by_rebalancing
    ]
    sev_rows = [
        [
            group_link(g),
            _sev(g.get("worst_severity")) if g.get("worst_severity") else "–",
            "audit not run" if g.get("findings") is None else str(g.get("findings")),
        ]
        for g in ov.by_severity
    ]
    docs = (
        f'<p><a href="{escape(ov.data_docs)}">Great Expectations Data Docs</a> '
        "(validation results, offline)</p>"
        if ov.data_docs
        else '<p class="note">no Data Docs for this run (validate with Great Expectations writes them).</p>'
    )
    findings = AUDIT_NOT_RUN if ov.findings is None else findings_table(ov.findings, link=True)
    body = f"""
<h1>rebalance-replay report</h1>
<p class="sub">{escape(ov.title)}</p>
<div class="numbers">{numbers}</div>
<h2>Agreement per API</h2>
{table(["API", "agreement"], [[escape(a), escape(v)] for a, v in ov.agreement_by_api])}
<h2>Groups by time spent rebalancing</h2>
{
        table(
            ["group", "time rebalancing", "rebalances", "members", "predicted ≠ observed"],
            reb_rows,
            cls="groups",
            num=(1, 2, 3, 4),
        )
    }
<h2>Groups by findings severity</h2>
{table(["group", "worst severity", "findings"], sev_rows, num=(2,))}
<h2>Findings</h2>
{findings}
<h2>Data Docs</h2>
{docs}
"""
    return _page("rebalance-replay report", body)
