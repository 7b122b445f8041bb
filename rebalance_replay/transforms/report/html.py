"""HTML of the report pages: self-contained (inline CSS, data and script; plotly.js is one file in the
report's ``assets/`` folder, referenced relatively), no request leaves the machine, printable.

The markup is in Jinja2 templates beside this module (``templates/``), rendered with autoescaping on: every
value from the data is escaped where it is written, and nothing from the data is marked safe. The figure
goes into the page as JSON in a ``<script type="application/json">`` (``<`` escaped, :func:`json_script`).
This module prepares what the templates show: durations and times in one format (:mod:`units`), member
ids short (:func:`short_id`, the full id in the title, a click copies it), requests as ``file:line API``
(:func:`evidence_label`, the full path in the title)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup, escape

from rebalance_replay.transforms.audit.about import ABOUT
from rebalance_replay.transforms.audit.registry import RULES, rule_anchor, rule_ids, thresholds
from rebalance_replay.transforms.report.model import SEVERITY_RANK, TRIGGER_COLOURS, GroupPage, Overview
from rebalance_replay.transforms.report.timeline import (
    SEVERITY_COLOURS,
    figure,
    overview_figure,
    overview_rows,
)
from rebalance_replay.transforms.report.units import fmt_dur, fmt_time

__all__ = [
    "AUDIT_NOT_RUN",
    "PLOTLY_ASSET",
    "evidence_label",
    "file_label",
    "findings_table",
    "fmt_dur",
    "fmt_time",
    "fmt_window",
    "group_html",
    "json_script",
    "overview_html",
    "short_id",
    "short_id_parts",
]

PLOTLY_ASSET = "assets/plotly.min.js"
#: every audit rule's section, in each report folder (a finding's rule links to its section)
RULES_PAGE = "rules.html"
TEMPLATES = Path(__file__).resolve().parent / "templates"
#: A member id longer than SHORT_ID_HEAD + 1 + SHORT_ID_TAIL characters is shown as its start, "…" and its
#: last SHORT_ID_TAIL characters (``consumer-g-1-3f2a…9c1d0e2f``): the end of a generated id tells ids apart
SHORT_ID_HEAD = 17
SHORT_ID_TAIL = 8
#: Ids shown in one cell (a finding's members, a rebalance's joined/left/evicted); the rest as "+N more"
IDS_SHOWN = 4
#: Evidence rows shown per finding, the first EVIDENCE_UNFOLDED of them unfolded
EVIDENCE_SHOWN = 8
EVIDENCE_UNFOLDED = 3

AUDIT_NOT_RUN = (
    '<p class="note">audit not run: this warehouse has no <code>findings</code> table '
    "(<code>rebalance-replay audit</code> writes it).</p>"
)


def short_id(value: Any, *, head: int = SHORT_ID_HEAD, tail: int = SHORT_ID_TAIL) -> str:
    """``consumer-g-1-3f2a…9c1d0e2f``: the start and the last ``tail`` characters of a long id, whole
    when it is no longer than that would be; ``–`` for none."""
    if value is None:
        return "–"
    text = str(value)
    return text if len(text) <= head + 1 + tail else f"{text[:head]}…{text[-tail:]}"


def short_id_parts(value: Any) -> tuple[str, str | None]:
    """:func:`short_id` as (start, end): the end None when the id is shown whole."""
    text = short_id(value)
    if text == str(value) or "…" not in text:
        return text, None
    head, _, tail = text.rpartition("…")
    return head, tail


def fmt_window(start_ms: Any, end_ms: Any) -> str:
    """``2024-06-03 08:01:52.500Z → 08:02:22.500Z``: the end's date only when it is another day."""
    a, b = fmt_time(start_ms), fmt_time(end_ms)
    day = a[:11]
    if len(day) == 11 and day.endswith(" ") and b.startswith(day):
        b = b[11:]
    return f"{a} → {b}"


def file_label(path: Any) -> str:
    """A log file as a person tells it apart: its folder and name (``broker-1/kafka-request.log.2``), not
    the absolute path (brokers' files are often named alike, so the name alone is not enough)."""
    if path is None:
        return "–"
    parts = [p for p in re.split(r"[\\/]+", str(path)) if p]
    return "/".join(parts[-2:]) if parts else str(path)


def evidence_label(source_file: Any, line_no: Any, api: Any = None) -> str:
    """``broker-1/kafka-request.log.2:1234 JOIN_GROUP``."""
    where = f"{file_label(source_file)}:{'–' if line_no is None else line_no}"
    return f"{where} {api}" if api else where


def _request(source_file: Any, line_no: Any, api: Any = None) -> dict[str, Any]:
    """A request cell: its label, and the full path as its title when the label does not show it all."""
    text = evidence_label(source_file, line_no, api)
    full = "" if source_file is None else str(source_file)
    return {"text": text, "title": full if full and file_label(full) != full else None}


def json_script(data: Any) -> Markup:
    """``data`` as JSON that can sit in a ``<script type="application/json">``: every ``<`` written
    ``\\u003c`` (no ``</script>``, no ``<!--``, no tag at all), still the same JSON."""
    text = json.dumps(data, separators=(",", ":"), allow_nan=False)
    return Markup(text.replace("<", "\\u003c"))


def _dash(value: Any) -> Any:
    return "–" if value is None else value


def _confidence(value: Any) -> str:
    """``0.90``; ``–`` when unknown."""
    return "–" if value is None else f"{float(value):.2f}"


def _percent(value: Any) -> str:
    return "n/a" if value is None else f"{float(value):.2%}"


def _code_spans(text: Any) -> Markup:
    """Text with its Markdown code spans (`x`) as ``<code>`` (escaped first, so nothing else is markup)."""
    return Markup(re.sub(r"`([^`]+)`", r"<code>\1</code>", str(escape(str(text)))))


def rule_href(rule_id: Any) -> str:
    """A rule's section in the report's ``rules.html`` (the page :func:`rules_html` writes)."""
    return f"{RULES_PAGE}#{rule_anchor(str(rule_id))}"


def _about(rule_id: Any) -> str | None:
    """What a rule means and when it can be wrong (its section in docs/audit-rules.md), or None."""
    about = ABOUT.get(str(rule_id))
    return None if about is None else f"{about.meaning} When it can be wrong: {about.false_positives}"


_ENV = Environment(
    loader=FileSystemLoader(TEMPLATES),
    autoescape=True,
    trim_blocks=True,
    lstrip_blocks=True,
    undefined=StrictUndefined,
    keep_trailing_newline=True,
)
_ENV.filters.update(
    time=fmt_time,
    dur=fmt_dur,
    short_id=short_id,
    short_id_parts=short_id_parts,
    window=fmt_window,
    dash=_dash,
    confidence=_confidence,
    percent=_percent,
    json_script=json_script,
    code_spans=_code_spans,
)
_ENV.globals.update(
    about=_about,
    rule_href=rule_href,
    NL="\n",
    IDS_SHOWN=IDS_SHOWN,
    EVIDENCE_UNFOLDED=EVIDENCE_UNFOLDED,
    audit_not_run=Markup(AUDIT_NOT_RUN),
    plotly_asset=PLOTLY_ASSET,
)


def _evidence_view(f: Mapping[str, Any], *, link: bool) -> list[dict[str, Any]]:
    """A finding's evidence rows as the table shows them: ``href`` (overview: its row on the group's page),
    or ``anchor`` and ``seq`` (group page: the row's id, the rebalance under way)."""
    raw = list(f.get("evidence") or [])
    out = []
    for i, item in enumerate(list(f.get("evidence_items") or [])[:EVIDENCE_SHOWN]):
        e = raw[i] if i < len(raw) and isinstance(raw[i], Mapping) else None
        view = (
            _request(e.get("source_file"), e.get("line_no"), e.get("api"))
            if e is not None
            else {"text": str(item.get("text", "")), "title": None}
        )
        if link:
            page = f.get("page")
            view["href"] = f"{page}#{item['anchor']}" if page else None
            view["anchor"] = None
        else:
            view["href"] = None
            view["anchor"] = item.get("anchor")
        view["seq"] = item.get("rebalance_seq")
        out.append(view)
    return out


def _findings_view(findings: Sequence[Mapping[str, Any]], *, link: bool) -> list[dict[str, Any]]:
    return [{**f, "evidence_view": _evidence_view(f, link=link)} for f in findings]


def findings_table(findings: Sequence[Mapping[str, Any]], *, link: bool) -> str:
    """The findings, new first (their order); on the overview the group opens the finding's row on the
    group's page, on the group's page each row is its anchor (``finding-<finding_key>``)."""
    macros = _ENV.get_template("_macros.html").module
    return str(macros.findings_table(_findings_view(findings, link=link), link))  # type: ignore[attr-defined]


def group_html(page: GroupPage, *, title: str, index_href: str = "index.html") -> str:
    s = page.stats
    numbers = [
        ("members", str(s["members"])),
        ("rebalances", str(s["rebalances"])),
        ("time rebalancing", fmt_dur(s["rebalance_ms"])),
        ("heartbeats", str(page.heartbeats)),
        ("predicted ≠ observed", str(s["mismatches"])),
        ("findings", "audit not run" if s["findings"] is None else str(s["findings"])),
    ]
    mismatches = [
        {
            "row": m,
            "request": _request(m.get("source_file"), m.get("line_no")),
            "member": m.get("member_id") or m.get("observed_member_id") or m.get("predicted_member_id"),
        }
        for m in page.mismatches
    ]
    return _ENV.get_template("group.html").render(
        page_title=f"{page.group_id} — rebalance-replay",
        page=page,
        title=title,
        index_href=index_href,
        numbers=numbers,
        triggers=sorted({(b.trigger, b.colour) for b in page.bands}),
        findings=None if page.findings is None else _findings_view(page.findings, link=False),
        mismatches=mismatches,
        figure=figure(page),
    )


def rules_html() -> str:
    """``rules.html``: every audit rule's section (the registry's facts and the hand-written text), the
    page a finding's rule links to; the same content as ``docs/audit-rules.md``."""
    rules = []
    for rule_id in rule_ids():
        rule = RULES[rule_id]
        rules.append(
            {
                "id": rule_id,
                "anchor": rule_anchor(rule_id),
                "name": rule.name,
                "family": rule.family,
                "severity": rule.settings().severity,
                "thresholds": thresholds(rule),
                "about": ABOUT.get(rule_id),
            }
        )
    return _ENV.get_template("rules.html").render(
        page_title="Audit rules — rebalance-replay", rules=rules, figure=None
    )


def overview_html(ov: Overview) -> str:
    rows = overview_rows(ov)
    triggers = sorted({str(r.get("trigger") or "unknown") for g in rows for r in g.get("rebalances") or []})
    severities = {str(f.get("severity") or "info") for g in rows for f in g.get("findings") or []}
    return _ENV.get_template("overview.html").render(
        page_title="rebalance-replay report",
        ov=ov,
        findings=None if ov.findings is None else _findings_view(ov.findings, link=True),
        figure=overview_figure(ov) or None,  # no group, no figure
        bands=sum(len(g.get("rebalances") or []) for g in rows),
        triggers=[(t, TRIGGER_COLOURS.get(t, TRIGGER_COLOURS["unknown"])) for t in triggers],
        severities=[
            (s, SEVERITY_COLOURS.get(s, SEVERITY_COLOURS["info"]))
            for s in sorted(severities, key=lambda s: -SEVERITY_RANK.get(s, 0))
        ],
    )
