"""Great Expectations' Data Docs, made to work offline: no CDN, no tracking image (pure HTML rewriting;
``rebalance_replay/jobs/datadocs.py`` copies the assets and rewrites the files).

GX's pages load Bootstrap, jQuery, Popper, Font Awesome, bootstrap-table (+ filter-control),
bootstrap-datepicker, bootstrap-dark and Vega from public CDNs, and their logo from the vendor's S3 bucket
with the data context id in the query string (a tracking image). The rewrite points each asset that a
PyPI package carries at a local copy under ``static/offline/`` (``OFFLINE_ASSETS``) and removes the
others (``DROPPED``). bootstrap-table is not on PyPI: the tables GX fills with it (the index's
validation and suite lists) are written out as static HTML rows instead, so they are never empty.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from html import escape
from typing import Any

OFFLINE_DIR = "static/offline"
#: CDN URL pattern → local file under OFFLINE_DIR (copied from the named PyPI package by
#: rebalance_replay/jobs/datadocs.py)
_BOOTSTRAP4 = r"https://[a-z.]*bootstrapcdn\.com/bootstrap/4[0-9.]*"
_CDNJS = r"https://cdnjs\.cloudflare\.com/ajax/libs"
_JSDELIVR = r"https://cdn\.jsdelivr\.net/npm"
OFFLINE_ASSETS: dict[str, str] = {
    r"https://code\.jquery\.com/jquery-[0-9.]+(\.min)?\.js": "jquery/jquery.min.js",
    _BOOTSTRAP4 + r"/css/bootstrap(\.min)?\.css": "bootstrap/css/bootstrap.min.css",
    # the bundle carries Popper, which Bootstrap 4's dropdowns/tooltips need
    _BOOTSTRAP4 + r"/js/bootstrap(\.min)?\.js": "bootstrap/js/bootstrap.bundle.min.js",
    _CDNJS + r"/font-awesome/[0-9.]+/css/all(\.min)?\.css": "fontawesome/css/all.min.css",
}
#: CDN assets with no PyPI copy (or made unnecessary): their tags are removed
DROPPED: dict[str, str] = {
    _CDNJS + r"/popper\.js/[^\"']+": "Popper 1 (in Bootstrap's bundle instead)",
    r"https://unpkg\.com/bootstrap-table@[^\"']+": "bootstrap-table (not on PyPI: tables are static HTML)",
    _CDNJS + r"/bootstrap-datepicker/[^\"']+": "bootstrap-datepicker (table filters)",
    _JSDELIVR + r"/@forevolve/bootstrap-dark@[^\"']+": "bootstrap-dark (dark colour scheme)",
    _JSDELIVR + r"/vega[^\"']*": "Vega / Vega-Lite / vega-embed (expectation charts)",
}
TRACKING_HOST = "great-expectations-web-assets.s3"
LOCAL_LOGO = "static/images/logo-long.png"

_TAG = re.compile(
    r"<(script|link)\b[^>]*?(?:src|href)=[\"'](?P<url>https?://[^\"']+)[\"'][^>]*>(?:\s*</script>)?", re.I
)
_VENDOR_URL = re.compile(r"https://great-expectations-web-assets\.s3[^\"')\s]*")
_BT_CALL = re.compile(
    r"<script>\s*\$\('#(?P<id>[^']+)'\)\.bootstrapTable\(\s*Object\.assign\(\s*\{\s*"
    r"columns: (?P<cols>.*?),\s*\n"
    r"\s*data: (?P<data>.*?),\s*\n\s*toolbar: .*?</script>",
    re.S,
)


def _static_table(columns: list[dict[str, Any]], data: list[dict[str, Any]]) -> str:
    """GX's bootstrap-table data as static rows (cells are GX's own HTML)."""
    head = "".join(f"<th>{escape(str(c.get('title', c['field'])))}</th>" for c in columns)
    rows = []
    for r in data:
        href = r.get("_table_row_link_path")
        attrs = (
            f' class="clickable-row" data-href="{escape(str(href))}" style="cursor:pointer"' if href else ""
        )
        cells = "".join(f"<td>{r.get(c['field'], '')}</td>" for c in columns)
        rows.append(f"<tr{attrs}>{cells}</tr>")
    return f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody>"


def _filled(rows: str) -> Callable[[re.Match[str]], str]:
    def fill(t: re.Match[str]) -> str:
        return t.group(1).replace('data-toggle="table"', "") + rows + "</table>"

    return fill


def offline_html(html: str, prefix: str) -> tuple[str, list[str]]:
    """``html`` with CDN assets pointed at ``prefix`` + ``static/offline/…`` (``prefix`` is the path from
    the page to the site root, e.g. ``../../``), dropped assets removed, the vendor's images replaced by
    GX's local logo, and bootstrap-table tables made static. Returns the page and what was dropped."""
    dropped: list[str] = []

    def tag(m: re.Match[str]) -> str:
        url = m.group("url")
        for pattern, local in OFFLINE_ASSETS.items():
            if re.fullmatch(pattern, url):
                text = m.group(0).replace(url, f"{prefix}{OFFLINE_DIR}/{local}")
                return re.sub(r'\s(integrity|crossorigin)="[^"]*"', "", text)
        for pattern, what in DROPPED.items():
            if re.fullmatch(pattern, url):
                dropped.append(what)
                return ""
        return m.group(0)

    out = _TAG.sub(tag, html)
    out = _VENDOR_URL.sub(prefix + LOCAL_LOGO, out)

    def table(m: re.Match[str]) -> str:
        try:
            cols = ast.literal_eval(m.group("cols"))
            data = ast.literal_eval(m.group("data"))
        except (ValueError, SyntaxError):
            return m.group(0)
        return f'<template data-static-table="{escape(m.group("id"))}">{_static_table(cols, data)}</template>'

    out = _BT_CALL.sub(table, out)
    # move each static table's rows into its <table> (the <template> keeps the replacement local)
    for tmpl in re.finditer(r'<template data-static-table="([^"]+)">(.*?)</template>', out, re.S):
        table_id, rows = tmpl.group(1), tmpl.group(2)
        out = out.replace(tmpl.group(0), "")
        # its "Clear Filters" toolbar drives bootstrap-table's filter control, which is not there
        out = re.sub(rf'<div id="{re.escape(table_id)}-toolbar"[^>]*>.*?</div>', "", out, count=1, flags=re.S)
        out = re.sub(
            rf'(<table\s+id="{re.escape(table_id)}"[^>]*>)\s*</table>',
            _filled(rows),
            out,
            count=1,
        )
    if "clickable-row" in out and "rr-offline-rows" not in out:
        out = out.replace(
            "</body>",
            '<script id="rr-offline-rows">document.addEventListener("click",function(e){'
            'var r=e.target.closest("tr.clickable-row");'
            'if(r&&!e.target.closest("a")){window.location=r.getAttribute("data-href");}});'
            "</script></body>",
            1,
        )
    return out, sorted(set(dropped))


def remote_urls(html: str) -> list[str]:
    """Every http(s) URL the page would load by itself (tags' src/href of scripts, styles and images, CSS
    url()); plain links (<a href>) are not loads."""
    loads = re.findall(
        r"<(?:script|img|link|iframe|source)\b[^>]*?(?:src|href|srcset)=[\"'](https?://[^\"']+)", html, re.I
    )
    loads += re.findall(r"url\(['\"]?(https?://[^'\")]+)", html, re.I)
    return loads
