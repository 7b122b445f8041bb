"""One writer per warehouse: an advisory lock on ``<warehouse>/_lock`` held for a whole command.

The lock is an ``flock`` on an open file, so the operating system releases it when the process ends in
any way (``kill -9`` included): a crashed run never leaves a stale lock. The file names the holder (pid,
host, command, start time) for the message a second run prints.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from rebalance_replay.jobs.errors import WarehouseBusyError

LOCK_FILE = "_lock"


def _holder(path: Path) -> str:
    try:
        info = json.loads(path.read_text() or "{}")
    except (OSError, ValueError):
        return "another run"
    if not info:
        return "another run"
    return (
        f"'{info.get('command', '?')}' (pid {info.get('pid', '?')} on {info.get('host', '?')}, "
        f"started {info.get('started', '?')})"
    )


@contextmanager
def warehouse_lock(warehouse: str, command: str, wait_s: int = 0) -> Iterator[None]:
    """Hold the warehouse's write lock for the duration of the block; if another process holds it, wait
    up to ``wait_s`` seconds, then raise :class:`WarehouseBusyError` naming that process."""
    root = Path(warehouse)
    root.mkdir(parents=True, exist_ok=True)
    path = root / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise WarehouseBusyError(
                        f"warehouse {warehouse} is being written by {_holder(path)}; wait for it to finish "
                        "(or set storage.lock_wait_s to wait)"
                    ) from None
                time.sleep(0.5)
        info = {
            "command": command,
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
