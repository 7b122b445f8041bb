"""Headless Chromium (the distribution's package) driven by Playwright, with every request that is not
``file://`` aborted and counted: the pages must work with no network.

The browser tests are their own tier (marker ``browser``, ``make test-browser``; ``make test`` runs them in
a pytest process of their own, after the rest, xdist off): a Chromium shares its pytest process only with
the few tests of its tier, never with the whole suite's Spark session, its workers and caches, and each
test starts its own Chromium (a crash cannot carry over to the next test). A renderer that crashes
anyway fails its test as :class:`BrowserCrashed`, naming the page, instead of a bare
``TargetClosedError`` from whatever call came next."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: the browser binary itself first: Debian's /usr/bin/chromium is a shell wrapper that sources
#: /etc/chromium.d (its /dev/shm check fails when /dev/shm is mounted twice) and adds flags of its own
#: (GPU rasterization, extensions) that a headless test does not want
CHROMIUM_CANDIDATES = ("/usr/lib/chromium/chromium", "/usr/bin/chromium", "/usr/bin/chromium-browser")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",  # shared memory in /tmp: a small or crowded /dev/shm crashes renderers
]


def chromium_path() -> str | None:
    for p in CHROMIUM_CANDIDATES:
        if Path(p).exists():
            return p
    return shutil.which("chromium")


def skip_reason() -> str | None:
    """Why the browser tests cannot run here (one line), or None."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright for Python is not installed (pip install -e '.[dev]')"
    if chromium_path() is None:
        return "no Chromium at /usr/lib/chromium/chromium (apt-get install -y chromium; .ci/run installs it)"
    return None


@dataclass
class PageLoad:
    blocked: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)


class BrowserCrashed(AssertionError):
    """Chromium (a renderer, or the browser) went away under a test: out of memory, killed."""


@contextmanager
def offline_browser(width: int = 1400, height: int = 900) -> Iterator[Any]:
    """A fresh Chromium (new user-data-dir) whose contexts abort every non-file:// request, its pages
    ``width`` × ``height`` CSS px. A crashed renderer or browser fails the test as :class:`BrowserCrashed`,
    naming the page."""
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import sync_playwright

    crashes: list[str] = []
    profile = tempfile.mkdtemp(prefix="rr-chromium-")
    try:
        with sync_playwright() as pw:
            context = pw.chromium.launch_persistent_context(
                profile,
                executable_path=chromium_path(),
                args=CHROMIUM_ARGS,
                headless=True,
                offline=True,
                viewport={"width": width, "height": height},
            )
            context.on(
                "page", lambda page: page.on("crash", lambda p: crashes.append(f"renderer of {p.url}"))
            )
            context.on("close", lambda _c: crashes.append("browser") if not closing else None)
            closing = False
            try:
                yield context
            except PlaywrightError as e:
                if crashes:
                    raise BrowserCrashed(f"Chromium crashed ({'; '.join(crashes)}): {e}") from e
                raise
            finally:
                closing = True
                context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def open_offline(context: Any, path: Path, load: PageLoad, *, wait_for: str | None = None) -> Any:
    """Open ``path`` in a new tab, aborting and recording every request that is not file://."""
    page = context.new_page()

    def route(r: Any) -> None:
        url = r.request.url
        if url.startswith("file://") or url.startswith("data:") or url.startswith("blob:"):
            r.continue_()
        else:
            load.blocked.append(url)
            r.abort()

    page.route("**/*", route)
    page.on("console", lambda m: load.console_errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: load.page_errors.append(str(e)))
    page.goto(path.resolve().as_uri(), wait_until="load")
    if wait_for:
        page.wait_for_selector(wait_for, state="attached", timeout=30_000)
    return page
