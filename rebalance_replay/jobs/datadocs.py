"""Make a Great Expectations Data Docs site work offline (see
``rebalance_replay/transforms/report/datadocs.py``): copy
the assets from their PyPI packages (XStatic-jQuery, XStatic-Bootstrap 4, XStatic-Font-Awesome) into
``<site>/static/offline/`` and rewrite every page. Idempotent; run after each Data Docs update."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from rebalance_replay.transforms.report.datadocs import OFFLINE_DIR, offline_html, remote_urls


def _sources() -> dict[str, Path]:
    """Local asset path (under OFFLINE_DIR) → file or folder in an installed package."""
    import xstatic.pkg.bootstrap as bootstrap
    import xstatic.pkg.font_awesome as font_awesome
    import xstatic.pkg.jquery as jquery

    bs, fa, jq = Path(bootstrap.BASE_DIR), Path(font_awesome.BASE_DIR), Path(jquery.BASE_DIR)
    return {
        "jquery/jquery.min.js": jq / "jquery.min.js",
        "bootstrap/css/bootstrap.min.css": bs / "css" / "bootstrap.min.css",
        "bootstrap/js/bootstrap.bundle.min.js": bs / "js" / "bootstrap.bundle.min.js",
        "fontawesome/css/all.min.css": fa / "css" / "all.min.css",
        "fontawesome/webfonts": fa / "webfonts",  # all.min.css loads ../webfonts/*
        "LICENSES/font-awesome.txt": fa / "LICENSE.txt",
    }


def _files(path: Path) -> dict[str, int]:
    """A file's or folder's files (relative name → size)."""
    if path.is_file():
        return {"": path.stat().st_size}
    return {str(p.relative_to(path)): p.stat().st_size for p in path.rglob("*") if p.is_file()}


def _same(src: Path, dst: Path) -> bool:
    """The asset is in place whole (an earlier run's copy; one cut short by a kill is copied again)."""
    return dst.exists() and dst.is_dir() == src.is_dir() and _files(dst) == _files(src)


def make_offline(site: str | Path, log: Callable[[str], object] = print) -> list[str]:
    """Rewrite the Data Docs site under ``site`` (the folder of its index.html); returns the CDN pieces
    that were dropped (no local copy). Raises nothing for a missing site (returns [])."""
    root = Path(site)
    if not (root / "index.html").exists():
        return []
    target = root / OFFLINE_DIR
    for rel, src in _sources().items():
        dst = target / rel
        if _same(src, dst):
            continue
        # copied beside and renamed into place: a run killed while copying leaves no half asset behind
        dst.parent.mkdir(parents=True, exist_ok=True)
        tmp = dst.with_name(dst.name + ".tmp")
        if tmp.is_dir():  # an earlier run's, killed while copying
            shutil.rmtree(tmp)
        elif tmp.exists():
            tmp.unlink()
        if src.is_dir():
            shutil.copytree(src, tmp)
            shutil.rmtree(dst, ignore_errors=True)
        else:
            shutil.copyfile(src, tmp)
        os.replace(tmp, dst)
    dropped: set[str] = set()
    remaining = 0
    for page in root.rglob("*.html"):
        depth = len(page.relative_to(root).parts) - 1
        html = page.read_text(encoding="utf-8")
        new, gone = offline_html(html, "../" * depth)
        dropped.update(gone)
        remaining += len(remote_urls(new))
        if new != html:
            page.write_text(new, encoding="utf-8")
    if remaining:
        log(f"validate: Data Docs: {remaining} remote asset reference(s) left that have no local copy")
    return sorted(dropped)
