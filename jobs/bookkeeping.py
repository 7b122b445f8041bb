"""The small JSON files the jobs keep beside the tables (summary, replay manifest and state, ingest plans,
incremental progress), written atomically so a crash never leaves half a file behind."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def write_json(path: Path, data: Any, *, indent: int | None = None) -> None:
    """Write ``data`` as JSON to ``path`` through a temporary file and an atomic rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=indent, sort_keys=True, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)
