"""Kafka version strings, parsed in ONE place.

A bare ``"X.Y"`` names a release line, which spans ``X.Y.0`` … the line's last patch. Which end a
caller needs is its choice, made explicit with ``bare_patch``:

* the coordinator model takes the **last patch** (:data:`LATEST_PATCH`, the default): production
  clusters run it, and patch-level backports (2.6.1, 2.8.1, 3.3.1, 3.3.2) change behaviour, so
  ``"2.8"`` has 2.8.1's pending-sync timeout and ``"2.8.0"`` does not;
* the log renderer compares against the ``X.Y.0`` releases where a log format or API version
  appeared, so for it the first release and the last patch give the same answers; it asks for
  ``bare_patch=0`` (``"2.4"`` → ``(2, 4, 0)``).
"""

from __future__ import annotations

import re

Version = tuple[int, int, int]

#: Patch number used for a bare ``"X.Y"`` version by default: the newest patch of that line.
LATEST_PATCH = 99

#: The release lines the configuration accepts (``kafka.version``; patch levels allowed).
KAFKA_LINES = (
    "2.2",
    "2.3",
    "2.4",
    "2.5",
    "2.6",
    "2.7",
    "2.8",
    "3.0",
    "3.1",
    "3.2",
    "3.3",
    "3.4",
    "3.5",
    "3.6",
    "3.7",
    "3.8",
    "3.9",
    "4.0",
)

_VERSION_RE = re.compile(r"^\s*(\d+)\.(\d+)(?:\.(\d+))?")


def parse_kafka_version(text: str, *, bare_patch: int = LATEST_PATCH, strict: bool = False) -> Version:
    """``"3.7"`` → ``(3, 7, bare_patch)``; ``"3.3.1"`` → ``(3, 3, 1)``; a suffix (``-SNAPSHOT``) is
    ignored unless ``strict``. ValueError when ``text`` is not a version."""
    m = _VERSION_RE.match(text)
    if not m or (strict and text[m.end() :].strip()):
        raise ValueError(f"not a Kafka version: {text!r}")
    patch = int(m.group(3)) if m.group(3) is not None else bare_patch
    return int(m.group(1)), int(m.group(2)), patch
