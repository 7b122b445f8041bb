"""User-facing errors: ONE base class carrying the exit code, and the one-line message of any failure.

Every problem a person can act on (bad usage, config, input, a missing table, a busy warehouse, a Delta
feature the engine cannot honour, no Java) is a :class:`UserError`; the command line prints its
message as it is and exits with its ``exit_code``. Anything else is a bug or an environment failure:
it is reduced to one line by :func:`user_message` (the traceback only with ``--debug``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

EXIT_RUNTIME = 1  #: the run failed
EXIT_USAGE = 2  #: bad usage, configuration or input: nothing ran
EXIT_FINDINGS = 3  #: audit/run --fail-on: a new (--include-ongoing: open) finding at that severity or worse
EXIT_NOTIFY = 4  #: the audit ran, but sending its new findings (audit.notify.*) failed after the retries

JAVA_MISSING_MESSAGE = "Java 17 is required to run Spark: install a JDK and set JAVA_HOME"


class UserError(Exception):
    """A failure whose message is already a one-line explanation a person can act on."""

    exit_code: ClassVar[int] = EXIT_RUNTIME

    @property
    def message(self) -> str:
        """The first line of the message (the class name when it has none)."""
        text = str(self).strip()
        return text.splitlines()[0] if text else type(self).__name__


class UsageError(UserError):
    """Bad command-line usage."""

    exit_code = EXIT_USAGE


class ConfigError(UserError, ValueError):
    """A configuration problem (unknown key, wrong type, bad value), naming the key."""

    exit_code = EXIT_USAGE


class InputError(UserError, ValueError):
    """A problem with the input files, naming the file."""

    exit_code = EXIT_USAGE


class MissingTableError(UserError, RuntimeError):
    """A stage needs a table an earlier stage writes (e.g. validate before replay)."""


class WarehouseBusyError(UserError, RuntimeError):
    """Another run holds the warehouse's write lock."""


class WarehouseVersionError(UserError, RuntimeError):
    """The warehouse was written by another version or with another redaction setting."""


class DamagedTableError(UserError, RuntimeError):
    """A table's Delta log or data files are not what the log says (a data file deleted, a log entry cut
    short): the message names the table, the file or version, and the command that repairs it."""


class JavaMissingError(UserError, RuntimeError):
    """No Java runtime to start Spark's JVM with."""

    def __init__(self, detail: str = "") -> None:
        super().__init__(JAVA_MISSING_MESSAGE + (f" ({detail})" if detail else ""))


class TableFeatureError(UserError, RuntimeError):
    """The table uses a Delta table feature this engine cannot honour."""

    def __init__(self, table: str, path: str, features: Sequence[str], engine: str, action: str) -> None:
        self.table = table
        self.path = path
        self.features = tuple(features)
        self.engine = engine
        super().__init__(
            f"Delta table {table!r} at {path} uses table feature(s) {', '.join(self.features)} that the "
            f"{engine} engine cannot honour when it {action}s; use the delta-spark engine (Delta jars on the "
            f"Spark classpath) for this table"
        )


class SchemaEvolutionError(UserError, ValueError):
    """A table's schema differs from this version's TableDef in a way no write may fix by itself (a type
    changed, a partition column, a NOT NULL column): the message names the migration."""


class StorageError(UserError, RuntimeError):
    """The storage engine cannot run as configured (e.g. the delta-spark engine without Delta's jars)."""


class HistoryUnavailableError(UserError, RuntimeError):
    """The commits needed for an incremental read are no longer in the Delta log (cleaned up):
    read the whole table instead."""


def is_user_facing(e: BaseException) -> bool:
    return isinstance(e, UserError)


def user_message(e: BaseException) -> str:
    """One line for an exception: our own errors as they are, Spark/JVM errors reduced to their gist."""
    if isinstance(e, UserError):
        return e.message
    name = type(e).__name__
    text = str(e).strip()
    first = ""
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("at ", "JVM stacktrace", "Traceback", "File ")):
            first = line
            break
    if len(first) > 300:
        first = first[:297] + "..."
    return f"{name}: {first}" if first else name
