"""Times and durations as a person reads them, the same on every page, hover and terminal line."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any


def fmt_time(ms: Any) -> str:
    """``2024-05-01 10:00:00.123Z``; ``–`` when unknown."""
    if ms is None:
        return "–"
    return datetime.fromtimestamp(int(ms) / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def fmt_dur(ms: Any) -> str:
    """One scale for every duration: ``850 ms``, ``4.2 s``, ``1 min 40 s``, ``2 h 05 min``; ``–`` when
    unknown. Below a minute one decimal of a second (a rebalance of 100.37 s reads ``1 min 40 s``, next to
    ``3 min 30 s``, not ``3.5 min``)."""
    if ms is None:
        return "–"
    ms = int(ms)
    if ms < 0:
        return "-" + fmt_dur(-ms)
    if ms < 1000:
        return f"{ms} ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    seconds = round(ms / 1000)
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    minutes = round(seconds / 60)
    return f"{minutes // 60} h {minutes % 60:02d} min"


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 rebalance``, ``2 rebalances``, ``0 rebalances`` (``many``: an irregular plural)."""
    return f"{n} {word if n == 1 else (many or word + 's')}"
