"""Finding and reading broker request-log files: discovery, broker ids, file identity and resumable slices.

No Spark here: the ingest job plans :class:`FileSlice` s on the driver (a large uncompressed file cut into
several at line starts by :func:`split_slice`) and reads them in Spark tasks with :func:`read_slice`.
A file's identity is its broker plus a hash of its first line, so the live ``kafka-request.log``, its
hourly rotation ``kafka-request.log.2024-05-01-13`` and a gzipped copy of that are recognised as one file
that is read once, resuming where the last ingest stopped.
"""

from __future__ import annotations

import fnmatch
import gzip
import hashlib
import os
import re
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from rebalance_replay.jobs.errors import (
    InputError as InputError,  # declared with the other user-facing errors
)

GZIP_MAGIC = b"\x1f\x8b"
#: a log4j line's end: its logger's dotted name in parentheses (``(kafka.request.logger)``,
#: ``(kafka.coordinator.group.GroupCoordinator)``), as the broker's layout writes it last
_COMPLETE_TAIL = re.compile(rb"\((?:[A-Za-z_$][\w$]*\.)+[A-Za-z_$][\w$]*(?::\d+)?\)(?: \[[^\]]*\])?\s*$")
READ_BLOCK = 1 << 20
SPLIT_BLOCK = 8 << 20  # split_slice's read size: it only counts newlines


@dataclass(frozen=True)
class LogFile:
    path: str
    broker_id: str
    compressed: bool
    size: int
    mtime_ms: int
    file_key: str  # broker id + sha1 of the first line
    live: bool  # a live file's name (kafka-request.log, server.log, ...: no rotation suffix): being written


@dataclass(frozen=True)
class FileSlice:
    """The part of a file one ingest batch reads: from ``start_offset`` (uncompressed bytes, the start of
    line ``start_line``) to ``end_offset`` (None: to the end of the file)."""

    path: str
    broker_id: str
    file_key: str
    compressed: bool
    live: bool
    file_size: int
    file_mtime_ms: int
    start_line: int
    start_offset: int
    end_offset: int | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> FileSlice:
        return cls(**d)


def is_gzip(path: str) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == GZIP_MAGIC


def open_log(path: str, compressed: bool) -> Any:
    return gzip.open(path, "rb") if compressed else open(path, "rb")


def discover_files(inputs: Sequence[str], patterns: Sequence[str]) -> list[str]:
    """Files named on the command line, and files matching ``patterns`` below directories (recursive).

    Raises :class:`InputError` for a path that does not exist or a directory with no log file.
    """
    found: list[str] = []
    for raw in inputs:
        p = Path(raw)
        if not p.exists():
            raise InputError(f"input: {raw}: no such file or directory")
        if p.is_file():
            found.append(os.path.abspath(p))
            continue
        matches = sorted(
            os.path.abspath(f)
            for f in p.rglob("*")
            if f.is_file() and any(fnmatch.fnmatch(f.name, pat) for pat in patterns)
        )
        if not matches:
            raise InputError(f"input: {raw}: directory holds no file matching {', '.join(patterns)}")
        found.extend(matches)
    seen: set[str] = set()
    unique = []
    for f in found:
        key = os.path.realpath(f)
        if key not in seen:
            seen.add(key)
            unique.append(f)
    return unique


def broker_id_for(path: str, pattern: str) -> str:
    posix = Path(os.path.abspath(path)).as_posix()
    m = re.search(pattern, posix)
    if not m or not m.group("broker_id"):
        raise InputError(f"input: {path}: cannot derive a broker id with input.broker_id_pattern {pattern!r}")
    return m.group("broker_id")


def describe_file(path: str, broker_pattern: str) -> LogFile | None:
    """Identity of a log file, or None for an empty file. Raises :class:`InputError` if unreadable."""
    broker_id = broker_id_for(path, broker_pattern)
    try:
        st = os.stat(path)
        compressed = is_gzip(path)
        with open_log(path, compressed) as f:
            first = f.readline()
    except (OSError, EOFError, zlib.error) as e:
        kind = "unreadable gzip" if path.endswith(".gz") or "gzip" in str(e).lower() else "unreadable file"
        raise InputError(f"input: {path}: {kind} ({e})") from None
    if not first:
        return None
    digest = first_line_digest(first)
    return LogFile(
        path=path,
        broker_id=broker_id,
        compressed=compressed,
        size=st.st_size,
        mtime_ms=int(st.st_mtime * 1000),
        file_key=f"{broker_id}:{digest}",
        live=is_live_name(path),
    )


def is_live_name(path: str) -> bool:
    """A file the broker is still writing, by its name: ``kafka-request.log``, ``server.log`` and any other
    ``*.log`` (log4j's live files); a rotation (``.2024-05-01-13``, ``.1``) or a ``.gz`` is finished."""
    return Path(path).name.endswith(".log")


def first_line_digest(first: bytes) -> str:
    """The part of a file's identity that its first line gives (``file_key`` = broker id + this)."""
    return hashlib.sha1(first.rstrip(b"\r\n")).hexdigest()[:20]


@dataclass
class SliceStats:
    lines_read: int = 0
    end_line: int = 0  # last complete line read
    end_offset: int = 0
    error: str | None = None  # e.g. a gzip stream that breaks off mid-file
    missing: bool = False  # the file was not there when the slice was read
    #: a live file's incomplete last line (a line the broker is still writing), in bytes: left for the
    #: next ingest, which reads it whole (0: none)
    waiting_bytes: int = 0


#: How much of a file before a slice's start :func:`preceding_lines` reads (1,500 lines or so). A piece
#: of a split file that starts more than this after a clock step its broker has not yet caught up with
#: starts its clock guard afresh (the step's later lines are then kept, as a file read from there would).
PRECEDING_BYTES = 1 << 20


def preceding_lines(s: FileSlice) -> list[str]:
    """The complete lines just before the slice's start (at most :data:`PRECEDING_BYTES`), so that what a
    slice checks against the lines before it (the clock guard) is the same whether the file is read in
    one slice or in several (:func:`split_slice`, or one ingest resuming where the last stopped). Empty
    for a slice from the file's start and for a compressed file (reaching the offset means inflating
    everything before it)."""
    if s.start_offset <= 0 or s.compressed:
        return []
    begin = max(0, s.start_offset - PRECEDING_BYTES)
    try:
        with open(s.path, "rb") as f:
            f.seek(begin)
            data = f.read(s.start_offset - begin)
    except OSError:
        return []
    lines = data.split(b"\n")
    lines.pop()  # the slice starts at a line start: what follows the last newline is empty
    if begin > 0 and lines:
        lines.pop(0)  # cut mid-line
    return [decode_line(raw) for raw in lines]


def read_slice(
    s: FileSlice, stats: SliceStats, skip: Callable[[bytes], bool] | None = None
) -> Iterator[tuple[int, str]]:
    """Yield ``(line_no, line)`` for every complete line of the slice, filling ``stats`` as it goes.

    A last line without a newline is taken only when it cannot still be growing: the file is gzipped or
    rotated, or the line already ends with the logger suffix. Otherwise it is left for the next ingest.
    ``skip``: lines it takes (it is given each line's bytes, as read) are read and counted but neither
    decoded nor yielded — ingest counts other APIs' lines, most of a request log, this way.
    """
    stats.end_line = s.start_line - 1
    stats.end_offset = s.start_offset
    before = line_no = s.start_line - 1
    offset = s.start_offset
    limit = s.end_offset
    try:
        f = open_log(s.path, s.compressed)
    except FileNotFoundError:
        stats.missing = True  # rotated away since it was planned (read next run), or not visible here
        return
    except (OSError, EOFError, zlib.error) as e:
        stats.error = f"input: {s.path}: unreadable {'gzip' if s.compressed else 'file'} ({e})"
        return
    try:
        with f:
            if not s.compressed and first_line_digest(f.readline()) != s.file_key.rsplit(":", 1)[-1]:
                # another file under this name (the live file rotated since the slice was planned): this
                # identity is read again where it now lives, next run
                stats.missing = True
                return
            if s.compressed:
                _skip(f, offset)
            else:
                f.seek(offset)
            # read1: on a gzip stream that breaks off, the data before the break comes back first
            read = f.read1 if s.compressed else f.read
            pending = b""
            while True:
                want = READ_BLOCK if limit is None else min(READ_BLOCK, limit - offset - len(pending))
                block = read(want) if want > 0 else b""
                if not block:
                    break
                data = pending + block
                lines = data.split(b"\n")
                pending = lines.pop()
                for raw in lines:
                    line_no += 1
                    offset += len(raw) + 1
                    if skip is not None and skip(raw):
                        continue
                    stats.lines_read, stats.end_line, stats.end_offset = line_no - before, line_no, offset
                    yield line_no, decode_line(raw)
                stats.lines_read, stats.end_line, stats.end_offset = line_no - before, line_no, offset
            if pending and (s.compressed or not s.live or _COMPLETE_TAIL.search(pending)):
                line_no += 1
                offset += len(pending)
                stats.lines_read, stats.end_line, stats.end_offset = line_no - before, line_no, offset
                if skip is None or not skip(pending):
                    yield line_no, decode_line(pending)
            elif pending:
                stats.waiting_bytes = len(pending)
    except (OSError, EOFError, zlib.error) as e:
        stats.error = (
            f"input: {s.path}: unreadable {'gzip' if s.compressed else 'file'} after line "
            f"{stats.end_line} ({e})"
        )


def _skip(f: Any, n: int) -> None:
    while n > 0:
        chunk = f.read(min(n, READ_BLOCK))
        if not chunk:
            raise EOFError(f"file is shorter than the {n} bytes already ingested")
        n -= len(chunk)


def decode_line(raw: bytes) -> str:
    """A line's bytes as read → its text (a CRLF file's ``\\r`` dropped, bytes that do not decode
    replaced)."""
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    return raw.decode("utf-8", errors="replace")


@dataclass(frozen=True)
class FileProgress:
    """What earlier batches read of one file identity."""

    end_line: int
    end_offset: int
    last_path: str
    last_size: int
    last_mtime_ms: int


def plan_slices(
    files: Sequence[LogFile],
    progress: dict[str, FileProgress],
    copies: list[tuple[str, str]] | None = None,
) -> tuple[list[FileSlice], int]:
    """The slices still to read, and the number of duplicate files skipped (another path of the same
    identity, e.g. both ``kafka-request.log.2024-05-01-13`` and its ``.gz``, or a rotated file copied
    under a second name, in one run). ``copies``, when given, receives each skipped copy's path and the
    path read instead."""
    by_key: dict[str, list[LogFile]] = {}
    for f in files:
        by_key.setdefault(f.file_key, []).append(f)
    slices: list[FileSlice] = []
    duplicates = 0
    for key in sorted(by_key):
        # the most complete copy: uncompressed first (its size is exact), then the larger
        candidates = sorted(by_key[key], key=lambda f: (f.compressed, -f.size, f.path))
        chosen = candidates[0]
        duplicates += len(candidates) - 1
        if copies is not None:
            copies.extend((other.path, chosen.path) for other in candidates[1:])
        done = progress.get(key)
        if done is not None:
            unchanged = (
                done.last_path == chosen.path
                and done.last_size == chosen.size
                and done.last_mtime_ms == chosen.mtime_ms
            )
            if unchanged or (not chosen.compressed and chosen.size <= done.end_offset):
                continue
        slices.append(
            FileSlice(
                path=chosen.path,
                broker_id=chosen.broker_id,
                file_key=key,
                compressed=chosen.compressed,
                live=chosen.live,
                file_size=chosen.size,
                file_mtime_ms=chosen.mtime_ms,
                start_line=(done.end_line + 1) if done else 1,
                start_offset=done.end_offset if done else 0,
                end_offset=None if chosen.compressed else chosen.size,
            )
        )
    return slices, duplicates


def split_slice(s: FileSlice, max_bytes: int) -> list[FileSlice]:
    """``s`` cut into pieces of about equal size, at most about ``max_bytes``, that Spark tasks read in
    parallel.

    Each cut is moved forward to just after the next newline, so every piece starts at a line start, and
    the newlines before it are counted so the piece's ``start_line`` is exact. Every piece but the last
    ends at its cut; the last keeps ``s.end_offset`` (a live file's incomplete last line is still left
    for the next ingest). Together the pieces read exactly the lines ``s`` reads. A gzipped slice, one
    of at most ``max_bytes``, or a file that cannot be opened here (its task reports it), stays whole.
    """
    if s.compressed or s.end_offset is None or s.end_offset - s.start_offset <= max_bytes:
        return [s]
    end = s.end_offset
    n = -(-(end - s.start_offset) // max_bytes)
    step = -(-(end - s.start_offset) // n)  # n pieces of about equal size: the last is no small remainder
    pieces: list[FileSlice] = []
    start, line = s.start_offset, s.start_line  # the piece being cut
    newlines = 0  # newlines from start to pos
    pos = start  # file offset of the next block
    try:
        with open(s.path, "rb") as f:
            f.seek(pos)
            while end - start > step:
                block = f.read(min(SPLIT_BLOCK, end - pos))
                if not block:  # shorter than planned: the rest stays one piece
                    break
                at = 0  # the newlines before block[at] are counted
                while end - start > step:
                    i = block.find(b"\n", max(at, start + step - 1 - pos))
                    if i < 0 or pos + i + 1 >= end:  # no line ends in the rest of the block
                        newlines += block.count(b"\n", at)
                        break
                    newlines += block.count(b"\n", at, i + 1)
                    at = i + 1
                    pieces.append(replace(s, start_line=line, start_offset=start, end_offset=pos + at))
                    start, line, newlines = pos + at, line + newlines, 0
                pos += len(block)
    except OSError:  # its task reports it
        return [s]
    pieces.append(replace(s, start_line=line, start_offset=start))
    return pieces
