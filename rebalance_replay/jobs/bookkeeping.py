"""The small files the jobs keep beside the tables (summary, replay manifest and state, ingest plans,
incremental progress as JSON; the tasks' side files as parquet), written atomically so a crash never
leaves half a file behind."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa


def write_json(path: Path, data: Any, *, indent: int | None = None) -> None:
    """Write ``data`` as JSON to ``path`` through a temporary file and an atomic rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=indent, sort_keys=True, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def write_parquet(path: str, table: pa.Table) -> None:
    """Write ``table`` as a parquet file at ``path`` through a temporary file and an atomic rename (a task
    that runs again replaces it whole; a reader never sees half a file)."""
    import pyarrow.parquet as pq

    os.makedirs(os.path.dirname(path), exist_ok=True)
    pq.write_table(table, path + ".tmp")
    os.replace(path + ".tmp", path)


#: Environment variable naming a crash point (tests only): the process dies there as if killed.
CRASH_ENV = "REBALANCE_REPLAY_CRASH_AT"


def crash_point(name: str) -> None:
    """A named point where the crash-safety tests kill the process (``os._exit``, like ``kill -9``: no
    cleanup, no finally blocks). Does nothing unless ``REBALANCE_REPLAY_CRASH_AT`` names this point."""
    if os.environ.get(CRASH_ENV) == name:
        os._exit(137)


def utc(ms: int) -> str:
    """``2024-05-01T10:00:00.123Z``: an epoch-ms instant as people read it, in UTC."""
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
