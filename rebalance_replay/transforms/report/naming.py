"""Names of forensics runs (``<warehouse>/forensics/<name>``) and of report pages."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from datetime import UTC, datetime

_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
_VALID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def valid_name(name: str) -> bool:
    """A forensics run name is one path segment of letters, digits, ``.``, ``_``, ``-``."""
    return bool(_VALID.match(name)) and name not in (".", "..")


def _stamp(ms: int | None, open_side: str) -> str:
    if ms is None:
        return open_side
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y%m%dT%H%M%SZ")


def forensics_name(window: tuple[int | None, int | None], groups: Sequence[str]) -> str:
    """The default name of a forensics run: the window (``20240501T100000Z-20240501T110000Z``, ``start``
    / ``end`` for an open side) and, with ``--group``, the groups (up to two by name, else a count and
    a short hash). Deterministic: the same window and groups name the same run."""
    parts = []
    if window != (None, None):
        parts.append(f"{_stamp(window[0], 'start')}-{_stamp(window[1], 'end')}")
    uniq = sorted(set(groups))
    if uniq and len(uniq) <= 2:
        parts.extend(_SAFE.sub("_", g)[:40] for g in uniq)
    elif uniq:
        digest = hashlib.sha1("\n".join(uniq).encode()).hexdigest()[:8]
        parts.append(f"{len(uniq)}groups-{digest}")
    return "_".join(parts) or "all"


def page_file(group_id: str) -> str:
    """The file name of a group's page: readable, unique per group id (a hash tells apart ids that
    differ only in characters not allowed in file names)."""
    safe = _SAFE.sub("_", group_id)[:60].strip("._") or "group"
    digest = hashlib.sha1(group_id.encode()).hexdigest()[:8]
    return f"group-{safe}-{digest}.html"
