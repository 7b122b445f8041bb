"""What a warehouse records about itself (``<warehouse>/_warehouse.json``): the layout version it was
written with, the redaction setting it was created with, and (when redacting) its secret key.

A warehouse written by an older rebalance-replay is migrated in place when the product knows how (each
step says what it does), or the run stops and says exactly what to do. One written by a newer version is
refused (this version cannot know what changed).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rebalance_replay.jobs.bookkeeping import write_json
from rebalance_replay.jobs.errors import WarehouseVersionError

#: The warehouse layout this version writes. History:
#: 1 — (no ``_warehouse.json``) the first releases;
#: 2 — replay state format 2 (clock resolution, member order, unlogged JoinGroups), requests checked
#:     against their column types, warehouse lock and redaction setting recorded;
#: 3 — ``findings`` gains its lifecycle columns (finding_key, subject, status, first_seen_ms,
#:     last_seen_ms, runs_seen): added to an existing table, null in its rows until the next audit.
SCHEMA_VERSION = 3
META_FILE = "_warehouse.json"
KEY_FILE = "_redaction_key"
PRODUCT_VERSION = "0.2.0"


def _v1_to_v2(root: Path, say: Callable[[str], None]) -> None:
    """Replay state format changed: drop the replay bookkeeping so the next replay recomputes every
    output table from ``requests`` (bronze tables are unchanged)."""
    replay = root / "_replay"
    if replay.exists():
        shutil.rmtree(replay)
        say(f"warehouse: migrated {root} from layout 1 to 2: replay state reset, outputs are recomputed")


def _v2_to_v3(root: Path, say: Callable[[str], None]) -> None:
    """``findings`` gains nullable lifecycle columns: added in place (a schema-only Delta commit, the rows
    are kept); the next audit gives the old findings their keys and counts them as seen before
    (ongoing, or resolved), so an upgrade pages nobody again."""
    from deltalake import DeltaTable, Field, Schema

    from rebalance_replay.schemas import FINDINGS

    path = root / FINDINGS.name
    if not DeltaTable.is_deltatable(str(path)):
        return
    dt = DeltaTable(str(path))
    have = {f.name for f in dt.schema().fields}
    want = Schema.from_arrow(FINDINGS.arrow_schema())
    missing = [f for f in want.fields if f.name not in have]
    if missing:
        dt.alter.add_columns([Field(f.name, f.type, nullable=True) for f in missing])
        say(
            f"warehouse: migrated {root} from layout 2 to 3: findings gained "
            f"{', '.join(f.name for f in missing)}"
        )


MIGRATIONS: dict[int, Callable[[Path, Callable[[str], None]], None]] = {1: _v1_to_v2, 2: _v2_to_v3}


def _has_tables(root: Path) -> bool:
    return (root / "requests" / "_delta_log").exists()


def open_warehouse(warehouse: str, redact: tuple[str, ...], say: Callable[[str], None]) -> bytes | None:
    """Check (and create or migrate) the warehouse's record; returns the redaction key when redacting.

    Raises :class:`WarehouseVersionError` with what to do when the warehouse cannot be used as it is.
    """
    root = Path(warehouse)
    meta_path = root / META_FILE
    meta: dict[str, Any]
    if meta_path.exists():
        meta = json.loads(meta_path.read_text())
    elif _has_tables(root):
        meta = {"schema_version": 1, "redact": []}
    else:
        meta = {"schema_version": SCHEMA_VERSION, "redact": list(redact), "created": _now()}
    version = int(meta.get("schema_version", 1))
    if version > SCHEMA_VERSION:
        raise WarehouseVersionError(
            f"warehouse {warehouse} has layout {version}, written by a newer rebalance-replay "
            f"({meta.get('product_version', '?')}); this version ({PRODUCT_VERSION}) writes layout "
            f"{SCHEMA_VERSION}: upgrade rebalance-replay, or use another --warehouse"
        )
    while version < SCHEMA_VERSION:
        step = MIGRATIONS.get(version)
        if step is None:
            raise WarehouseVersionError(
                f"warehouse {warehouse} has layout {version}, which this version cannot migrate: re-ingest "
                f"the logs into a new --warehouse"
            )
        step(root, say)
        version += 1
    if sorted(meta.get("redact", [])) != sorted(redact):
        raise WarehouseVersionError(
            f"warehouse {warehouse} was created with "
            f"output.redact={','.join(meta.get('redact', [])) or '[]'}; "
            f"it cannot change: run with the same setting, or use a new --warehouse"
        )
    meta.update(schema_version=SCHEMA_VERSION, product_version=PRODUCT_VERSION)
    root.mkdir(parents=True, exist_ok=True)
    write_json(meta_path, meta, indent=1)
    if not redact:
        return None
    key_path = root / KEY_FILE
    if not key_path.exists():
        fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32))
    return bytes.fromhex(key_path.read_text().strip())


def redaction_key(warehouse: str) -> bytes | None:
    """The warehouse's redaction key (created by :func:`open_warehouse`), or None."""
    path = Path(warehouse) / KEY_FILE
    return bytes.fromhex(path.read_text().strip()) if path.exists() else None


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
