"""Turning runtime failures into one-line messages a person can act on."""

from __future__ import annotations

#: Exceptions whose message is already a one-line, user-facing explanation.
USER_FACING = frozenset(
    {
        "JavaMissingError",
        "TableFeatureError",
        "ConfigError",
        "InputError",
        "MissingTableError",
        "HistoryUnavailableError",
        "WarehouseBusyError",
        "WarehouseVersionError",
    }
)


class MissingTableError(RuntimeError):
    """A stage needs a table an earlier stage writes (e.g. validate before replay)."""


class WarehouseBusyError(RuntimeError):
    """Another run holds the warehouse's write lock."""


class WarehouseVersionError(RuntimeError):
    """The warehouse was written by another version or with another redaction setting."""


def is_user_facing(e: BaseException) -> bool:
    return type(e).__name__ in USER_FACING


def user_message(e: BaseException) -> str:
    """One line for an exception: our own errors as they are, Spark/JVM errors reduced to their gist."""
    name = type(e).__name__
    text = str(e).strip()
    if name in USER_FACING:
        return text.splitlines()[0] if text else name
    first = ""
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("at ", "JVM stacktrace", "Traceback", "File ")):
            first = line
            break
    if len(first) > 300:
        first = first[:297] + "..."
    return f"{name}: {first}" if first else name
