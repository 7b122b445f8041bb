"""A forensics run: a window and/or some groups of the scheduled tables, replayed, validated, audited and
reported into ``<warehouse>/forensics/<name>/`` — its own tables, ``summary.json``, ``_audit`` state and
Great Expectations folder — so nothing it does touches the scheduled run's files.

The requests stay in the scheduled ``requests`` table: every stage of a forensics run reads them through
:func:`in_scope`, the one filter of a window (arrival times in ``[from, to)``) and groups.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rebalance_replay.schemas import REQUESTS
from rebalance_replay.transforms.report.model import Window

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame

    from rebalance_replay.jobs.delta import DeltaStore


def arrived_in(window: Window) -> Column:
    """True for a row (with ``arrival_ms``) that arrived in ``[from, to)``, either side open."""
    from pyspark.sql import functions as F

    lo, hi = window
    inside = F.lit(True)
    if lo is not None:
        inside = inside & (F.col("arrival_ms") >= F.lit(lo))
    if hi is not None:
        inside = inside & (F.col("arrival_ms") < F.lit(hi))
    return inside


def in_scope(df: DataFrame, window: Window, groups: tuple[str, ...] | list[str] = ()) -> DataFrame:
    """The rows of ``df`` (with ``arrival_ms`` and ``group_id``) that arrived in ``window``
    (:func:`arrived_in`) and belong to ``groups`` (all when empty)."""
    from pyspark.sql import functions as F

    if window != (None, None):
        df = df.filter(arrived_in(window))
    if groups:
        df = df.filter(F.col("group_id").isin(list(groups)))
    return df


@dataclass(frozen=True)
class Forensics:
    """A forensics run: ``store`` its output tables (in ``folder``), ``source`` the scheduled tables whose
    requests it covers."""

    name: str
    folder: str
    store: DeltaStore
    source: DeltaStore
    window: Window
    groups: tuple[str, ...]

    def requests(self) -> DataFrame:
        """The scheduled requests in this run's window and groups."""
        return in_scope(self.source.read(REQUESTS), self.window, self.groups)

    def describe(self) -> dict[str, Any]:
        """Its entry in its ``summary.json``."""
        return {
            "name": self.name,
            "from_ms": self.window[0],
            "to_ms": self.window[1],
            "groups": list(self.groups),
        }


def recorded_scope(folder: str | Path) -> tuple[Window, tuple[str, ...]] | None:
    """The window and groups a forensics run was replayed with (its ``summary.json``), or None when the
    folder holds no forensics replay."""
    path = Path(folder) / "summary.json"
    if not path.exists():
        return None
    try:
        entry = json.loads(path.read_text()).get("forensics")
    except json.JSONDecodeError:
        return None
    if not isinstance(entry, dict):
        return None
    window: Window = (entry.get("from_ms"), entry.get("to_ms"))
    return window, tuple(entry.get("groups") or ())
