"""Paths as the driver sees them, fixed before anything reaches an executor.

Executors run in their own working folders (a standalone worker's ``work/app-…/N``, a YARN container):
a relative path handed to a task lands there, not where the driver looks. Every folder the product
writes or reads (warehouse, checkpoints, side files, Great Expectations, reports) is derived from the
warehouse, which the configuration makes absolute on the driver (``storage.warehouse``); the inputs are
made absolute when they are discovered, ``--out`` when it is parsed.
"""

from __future__ import annotations

import os
import re

_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:")


def is_uri(location: str) -> bool:
    """``s3://…``, ``abfss://…``, ``dbfs:/…``, ``file:/…`` (a one-letter scheme is a Windows drive)."""
    return bool(_URI.match(location))


def absolute_location(location: str) -> str:
    """A local path made absolute against the driver's working folder (``~`` expanded); a URI is kept."""
    if is_uri(location):
        return location
    return os.path.abspath(os.path.expanduser(location))
