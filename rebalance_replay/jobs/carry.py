"""Counts carried from one scheduled run to the next: a *tally* of a Delta table as of a version, kept in a
JSON state file with the table's Delta id and version, and the rows the table appended since
(``DeltaStore.appended_since``), so a run counts only those and adds them to the tally. ``validate`` keeps
its agreement and contract tallies this way (``<warehouse>/_validate/state.json``), ``audit`` its group
fingerprints (``<warehouse>/_audit/fingerprints.json``), the broker facts their pass over ``requests``
(``<warehouse>/_broker/observed.json``), the report what it reads of ``predictions`` and ``requests``
(``<warehouse>/_report/carry.json``). Each opens its state with :meth:`Carry.scheduled`.

A tally is counted again in full when its table was made again (another Delta id), when a commit since
removed rows (an overwrite, a delete) or left the log, when what it counts changed (its *fingerprint*:
what the caller declares it counts with, the state's format), or when the engine cannot list appended
rows. A compaction (``maintain``) changes no rows: the carry goes on, unless it folded rows appended since
into other files.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rebalance_replay.jobs.bookkeeping import write_json
from rebalance_replay.jobs.paths import is_uri
from rebalance_replay.schemas.core import TableDef

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

    from rebalance_replay.jobs.delta import DeltaStore


@dataclass
class Carry:
    """The tallies the last scheduled run left in ``path`` (format ``fmt``), each of one table as of a
    version, and the rows that table gained since."""

    store: DeltaStore
    path: Path
    fmt: int
    entries: dict[str, dict[str, Any]]
    now: dict[str, tuple[str | None, int | None]]
    kept: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    _added: dict[tuple[str, int], DataFrame | None] = dataclasses.field(default_factory=dict)

    @classmethod
    def open(cls, store: DeltaStore, path: Path, fmt: int, tables: Iterable[TableDef]) -> Carry:
        """The state in ``path`` (none when missing, unreadable or of another format), with the current
        Delta id and version of each of ``tables`` (the versions this run reads)."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            entries = data["entries"] if data.get("format") == fmt else {}
        except (OSError, ValueError, KeyError, TypeError):
            entries = {}
        now = {t.name: (store.table_id(t), store.version(t)) for t in tables}
        return cls(store, path, fmt, entries, now)

    @classmethod
    def scheduled(
        cls, store: DeltaStore, root: str, file: tuple[str, ...], fmt: int, tables: Iterable[TableDef]
    ) -> Carry | None:
        """:meth:`open` the state ``root/<file>`` of a scheduled run; None (count in full) when ``store``
        reads the tables as of an earlier version (``--as-of``) or ``root`` is a URI (no local state)."""
        if store.as_of is not None or is_uri(root):
            return None
        return cls.open(store, Path(root).joinpath(*file), fmt, tables)

    def added(
        self, name: str, table: TableDef, fingerprint: Any
    ) -> tuple[dict[str, Any], DataFrame | None] | None:
        """The tally kept as ``name`` and the rows ``table`` appended since it was counted (None: no row);
        None when it must be counted again in full."""
        entry = self.entries.get(name)
        table_id, version = self.now[table.name]
        if (
            entry is None
            or version is None
            or entry.get("table") != table.name
            or entry.get("id") != table_id
            or entry.get("fingerprint") != _normalized(fingerprint)
        ):
            return None
        since = int(entry["version"])
        if since == version:
            return entry["tally"], None
        if (table.name, since) not in self._added:
            self._added[(table.name, since)] = self.store.appended_since(table, since, version)
        rows = self._added[(table.name, since)]
        return None if rows is None else (entry["tally"], rows)

    def keep(self, name: str, table: TableDef, fingerprint: Any, tally: Any) -> None:
        """Keep ``tally`` as ``name``: the count of ``table`` as of the version this run read."""
        table_id, version = self.now[table.name]
        if version is not None:
            self.kept[name] = {
                "table": table.name,
                "id": table_id,
                "version": version,
                "fingerprint": _normalized(fingerprint),
                "tally": tally,
            }

    def save(self) -> None:
        """Write the tallies kept this run (and the ones it did not use, as they were)."""
        if self.kept:
            write_json(self.path, {"format": self.fmt, "entries": {**self.entries, **self.kept}})


def _normalized(value: Any) -> Any:
    return json.loads(json.dumps(value, sort_keys=True, default=str))


def carried_text(rows: DataFrame | None) -> str:
    """How a carried tally was brought up to date (``rows``: what :meth:`Carry.added` gave), for the log."""
    if rows is None:
        return "the table has not changed since the last run: its counts stand"
    return "counted the rows appended since the last run and added them to its counts"
