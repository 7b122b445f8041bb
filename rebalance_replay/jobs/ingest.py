"""Ingest: broker request-log files → bronze Delta tables ``requests`` and ``quarantine``.

Flow: the driver discovers files and plans the slices not yet read (``ingest_files`` remembers how far
each file identity was read) and cuts large rotated uncompressed files into slices at line starts
(``input.max_slice_bytes``); Spark tasks read and parse the slices in parallel (``mapInArrow``), each
line becoming a request row, a quarantine row, or a count (other APIs, other loggers). Other APIs' JSON-era
lines, most of a broker's request log, are told by their head alone (``request_log.other_api_line``: a
substring test, no JSON parse) and counted by name; the routine JSON-era lines (heartbeats, offset commits)
are typed a block at a time by ``transforms.columnar_log``, every other line by ``parse_line``
(``input.columnar_json``; the rows are the same either way).

One pass: the tasks write the request rows' parquet files themselves (``DeltaStore.task_stage``: Arrow's
parquet writer in the Python worker, no row crossing to the JVM; an engine without it gets the rows as
Arrow batches for Spark's writer) and the driver commits the files of the task attempts Spark kept in the
``requests`` commit. Each task leaves its slices' quarantined lines and counts in a side file
(``_ingest/batch-N-side/slice-K.parquet``), which the driver then reads for the ``quarantine`` commit and
the progress rows (one a file: its slices' statistics merged). All commits carry one application
transaction id, so a retried or repeated ingest never adds a row twice (a batch whose requests are
committed but whose side files are gone reads its slices again for them). Accounting identity, checked
and reported: ``lines_read = requests + quarantined + other_api_lines + other_lines``, and the rows
committed to ``requests`` equal the request lines counted.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from rebalance_replay.jobs.bookkeeping import crash_point, write_json, write_parquet
from rebalance_replay.jobs.config import Config
from rebalance_replay.jobs.delta.task_files import TaskFileWriter
from rebalance_replay.jobs.log_files import (
    FileProgress,
    FileSlice,
    InputError,
    LogFile,
    SliceStats,
    decode_line,
    describe_file,
    discover_files,
    plan_slices,
    preceding_lines,
    read_slice,
    split_slice,
)
from rebalance_replay.jobs.spark_session import local_cores
from rebalance_replay.jobs.warehouse import open_warehouse, redaction_key
from rebalance_replay.schemas import INGEST_FILES, QUARANTINE, REQUESTS
from rebalance_replay.schemas.core import Column, TableDef, arrow_table
from rebalance_replay.transforms.broker_facts import (
    api_versions_answer,
    api_versions_evidence,
    merge_by_broker,
    merge_evidence,
    other_line_evidence,
)
from rebalance_replay.transforms.columnar_log import RoutineRows, parse_routine_lines
from rebalance_replay.transforms.redaction import Redactor
from rebalance_replay.transforms.report.units import plural
from rebalance_replay.transforms.request_log import (
    ClockGuard,
    LineKind,
    LineOutcome,
    other_api_line,
    parse_line,
)

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

    from rebalance_replay.jobs.delta import DeltaStore

APP_ID = "rebalance-replay/ingest"
BATCH_ROWS = 5000
#: lines typed together by the columnar parser (``input.columnar_json``)
BLOCK_LINES = 8192

# One Arrow schema for everything a task emits: a row kind, the request columns, the quarantine columns
# and the per-slice statistics. The driver splits it into the tables.
_QUARANTINE_EXTRA = (
    Column("quarantine_reason", "string"),
    Column("raw_line", "string"),
    Column("ingested_at", "timestamp"),
)
_STATS_COLUMNS = (
    Column("file_key", "string"),
    Column("slice_json", "string"),
    Column("lines_read", "bigint"),
    Column("end_line", "bigint"),
    Column("end_offset", "bigint"),
    Column("n_requests", "bigint"),
    Column("n_quarantined", "bigint"),
    Column("n_other_api", "bigint"),
    Column("n_other", "bigint"),
    Column("other_api_counts", "string"),
    Column("evidence", "string"),
    Column("error", "string"),
    Column("missing", "boolean"),
    Column("waiting_bytes", "bigint"),
)
TASK_OUTPUT = TableDef(
    name="_ingest_task_output",
    columns=(
        Column("row_kind", "string", False),
        *(Column(c.name, c.type, True, c.doc) for c in REQUESTS.columns),
        *_QUARANTINE_EXTRA,
        *_STATS_COLUMNS,
    ),
)
_TASK_SCHEMA = TASK_OUTPUT.arrow_schema()
_REQUEST_SCHEMA = REQUESTS.arrow_schema()


def counts_balance(
    lines_read: int, requests: int, quarantined: int, other_api_lines: int, other_lines: int
) -> bool:
    """The ingest accounting: every line read is exactly one of a request, a quarantined line, another
    API's line or another line (a plain function, so that mutation testing reaches it: mutmut leaves
    decorated functions such as properties alone)."""
    return lines_read == requests + quarantined + other_api_lines + other_lines


@dataclass
class IngestCounts:
    lines_read: int = 0
    requests: int = 0
    quarantined: int = 0
    other_api_lines: int = 0
    other_lines: int = 0
    other_api_by_name: dict[str, int] = field(default_factory=dict)
    #: the quarantined lines by the kind of their reason (this run's; not added up across runs)
    quarantine_reasons: dict[str, int] = field(default_factory=dict)

    def add(self, other: IngestCounts) -> None:
        self.lines_read += other.lines_read
        self.requests += other.requests
        self.quarantined += other.quarantined
        self.other_api_lines += other.other_api_lines
        self.other_lines += other.other_lines
        for k, v in other.other_api_by_name.items():
            self.other_api_by_name[k] = self.other_api_by_name.get(k, 0) + v

    @property
    def balanced(self) -> bool:
        return counts_balance(
            self.lines_read, self.requests, self.quarantined, self.other_api_lines, self.other_lines
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "lines_read": self.lines_read,
            "requests": self.requests,
            "quarantined": self.quarantined,
            "other_api_lines": self.other_api_lines,
            "other_lines": self.other_lines,
            "other_api_by_name": dict(sorted(self.other_api_by_name.items())),
            **(
                {"quarantine_reasons": dict(sorted(self.quarantine_reasons.items()))}
                if self.quarantine_reasons
                else {}
            ),
            "accounting_ok": self.balanced,
        }


@dataclass
class IngestResult:
    batch_id: int | None
    files_seen: int
    slices: int
    duplicate_files: int
    run: IngestCounts
    total: IngestCounts
    seconds: float
    #: the duplicate copies skipped: (the copy's path, the path read instead), at most
    #: :data:`NAMED_COPIES` of them (``duplicate_files`` counts them all)
    duplicate_copies: list[tuple[str, str]] = field(default_factory=list)
    #: live files whose incomplete last line was left for the next run: (path, bytes)
    incomplete_last_lines: list[tuple[str, int]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "batch_id": self.batch_id,
            "files_seen": self.files_seen,
            "slices_read": self.slices,
            "duplicate_files": self.duplicate_files,
            **(
                {"duplicate_copies": [{"path": p, "copy_of": c} for p, c in self.duplicate_copies]}
                if self.duplicate_copies
                else {}
            ),
            **(
                {
                    "incomplete_last_lines": {
                        "files": len(self.incomplete_last_lines),
                        "bytes": sum(n for _, n in self.incomplete_last_lines),
                        "paths": [p for p, _ in self.incomplete_last_lines[:NAMED_COPIES]],
                    }
                }
                if self.incomplete_last_lines
                else {}
            ),
            "this_run": self.run.as_dict(),
            "seconds": round(self.seconds, 2),
        }


#: how many duplicate copies (and files with an incomplete last line) a summary names
NAMED_COPIES = 20


# ----------------------------------------------------------------------------------------------------
# Executor side
# ----------------------------------------------------------------------------------------------------


def parse_slices(
    slices: Sequence[FileSlice],
    tz_name: str,
    ingested_at: datetime,
    redactor: Redactor | None = None,
    *,
    columnar: bool = False,
) -> Iterator[dict[str, Any] | pa.RecordBatch]:
    """Read and parse slices, yielding task-output rows (requests, quarantine, one stats row a slice);
    with a ``redactor``, identifying values are replaced before they leave the task.

    Other APIs' JSON-era lines are told by their head alone (:func:`other_api_line`: a substring test, no
    JSON parse) and only counted, never parsed. ``columnar`` (and no redactor): the routine JSON-era lines
    of each block of :data:`BLOCK_LINES` lines left to parse are typed together (:func:`parse_routine_lines`)
    and come as one record batch of task-output rows; every other line goes through ``parse_line`` as a row
    dict. The rows and counts are the same either way."""
    from zoneinfo import ZoneInfo

    tz = ZoneInfo(tz_name)
    redact = redactor if redactor else None
    ingest_date = ingested_at.date()
    for s in slices:
        stats = SliceStats()
        n_req = n_q = n_o = 0
        other_api: dict[str, int] = {}  # other APIs' lines by API name
        evidence: dict[str, Any] = {}  # what the other lines tell about the broker (broker_facts)
        clock = ClockGuard()
        before = preceding_lines(s)  # the same guard whether the file is read in one slice or several
        first = s.start_line - len(before)
        records = [
            (first + i, parse_line(line, tz).record) for i, line in enumerate(before) if _MARKER in line
        ]
        clock.stepped([(n, _int_or_none(r.get("completion_ms"))) for n, r in records if r is not None])
        # other APIs' lines (most of a request log) are counted as they are read, told by their head
        # alone: only the rest is parsed, a block of BLOCK_LINES of them at a time
        lines = read_slice(s, stats, skip=_other_api_counter(other_api, evidence))
        for block in _blocks(lines, BLOCK_LINES if columnar and redact is None else 1):
            typed: dict[int, int] = {}  # block index -> row of routine.records
            routine = None
            if len(block) > 1:
                routine = parse_routine_lines([line for _, line in block], tz)
                typed = {int(p): k for k, p in enumerate(routine.positions.tolist())}
            parsed = {i: parse_line(line, tz) for i, (_, line) in enumerate(block) if i not in typed}
            stepped = clock.stepped(_line_times(block, typed, routine, parsed))
            if routine is not None and typed:
                kept = [k for i, k in typed.items() if block[i][0] not in stepped]
                if kept:
                    n_req += len(kept)
                    records = routine.records if len(kept) == len(typed) else routine.records.take(kept)
                    line_nos = pa.array(
                        [block[i][0] for i in typed if block[i][0] not in stepped], pa.int64()
                    )
                    yield _typed_batch(records, s, line_nos)
            for i, (line_no, line) in enumerate(block):
                if i in typed and line_no not in stepped:
                    continue
                out = parse_line(line, tz) if i in typed else parsed[i]
                if out.kind is LineKind.REQUEST and line_no in stepped:
                    out = LineOutcome(LineKind.QUARANTINE, reason=stepped[line_no], log_date=out.log_date)
                if out.kind is LineKind.REQUEST:
                    n_req += 1
                    assert out.record is not None
                    row = dict(out.record)
                    row.update(row_kind="request", source_file=s.path, line_no=line_no, broker_id=s.broker_id)
                    yield row if redact is None else redact.request_row(row)
                elif out.kind is LineKind.QUARANTINE:
                    n_q += 1
                    q = {
                        "row_kind": "quarantine",
                        "source_file": s.path,
                        "line_no": line_no,
                        "broker_id": s.broker_id,
                        "quarantine_reason": out.reason or "unreadable",
                        "raw_line": line,
                        "ingested_at": ingested_at,
                        "log_date": out.log_date or ingest_date,
                    }
                    yield q if redact is None else redact.quarantine_row(q)
                elif out.kind is LineKind.OTHER_API:
                    _count_other_api(out.api_name or "UNKNOWN", line, other_api, evidence)
                else:
                    n_o += 1
                    merge_evidence(evidence, other_line_evidence(line))
        if stats.error is not None:
            # the rest of the file cannot be read (a gzip stream that breaks off): it is kept as one
            # quarantined line after the last one read, so the accounting still covers the whole file
            n_q += 1
            stats.lines_read += 1
            yield {
                "row_kind": "quarantine",
                "source_file": s.path,
                "line_no": stats.end_line + 1,
                "broker_id": s.broker_id,
                "quarantine_reason": stats.error,
                "raw_line": "",
                "ingested_at": ingested_at,
                "log_date": ingest_date,
            }
        yield {
            "row_kind": "stats",
            "file_key": s.file_key,
            "slice_json": json.dumps(s.to_dict()),
            "lines_read": stats.lines_read,
            "end_line": stats.end_line,
            "end_offset": stats.end_offset,
            "n_requests": n_req,
            "n_quarantined": n_q,
            "n_other_api": sum(other_api.values()),
            "n_other": n_o,
            "other_api_counts": json.dumps(other_api),
            "evidence": json.dumps(evidence, sort_keys=True) if evidence else None,
            "error": stats.error,
            "missing": stats.missing,
            "waiting_bytes": stats.waiting_bytes,
        }


def _line_times(
    block: Sequence[tuple[int, str]],
    typed: Mapping[int, int],
    routine: RoutineRows | None,
    parsed: Mapping[int, LineOutcome],
) -> list[tuple[int, int | None]]:
    """(line number, completion ms) of the block's request lines, in line order, for the clock guard."""
    times: list[tuple[int, int | None]] = []
    done = routine.records.column("completion_ms").to_pylist() if routine is not None and typed else []
    for i, (line_no, _) in enumerate(block):
        if i in typed:
            times.append((line_no, done[typed[i]]))
        elif parsed[i].kind is LineKind.REQUEST and parsed[i].record is not None:
            times.append((line_no, _int_or_none(parsed[i].record.get("completion_ms"))))  # type: ignore[union-attr]
    return times


def _other_api_counter(counts: dict[str, int], evidence: dict[str, Any]) -> Callable[[bytes], bool]:
    """``read_slice``'s ``skip``: other APIs' JSON-era lines, told by their head alone
    (:func:`other_api_line`: a substring test on the bytes, no decoding, no JSON parse), counted into
    ``counts`` as ``parse_line`` would have them counted, and not read further."""

    answers: set[str] = set()  # the ApiVersions answers read (most lines of that API repeat one)

    def skip(raw: bytes) -> bool:
        out = other_api_line(raw)
        if out is None:
            return False
        name = out.api_name or "UNKNOWN"
        line = None
        if name == "API_VERSIONS":
            line = decode_line(raw)
            answer = api_versions_answer(line)
            if answer in answers:
                line = None  # its evidence is merged in already
            elif answer is not None:
                answers.add(answer)
        _count_other_api(name, line, counts, evidence)
        return True

    return skip


def _count_other_api(name: str, line: str | None, counts: dict[str, int], evidence: dict[str, Any]) -> None:
    """Count one other API's line by its API name; an ApiVersions answer's ``line`` (one a connection: the
    broker's versions per API) is read for evidence (None: not read)."""
    counts[name] = counts.get(name, 0) + 1
    if name == "API_VERSIONS" and line is not None:
        merge_evidence(evidence, api_versions_evidence(line))


_MARKER = "Completed request"


def _int_or_none(v: object) -> int | None:
    return None if v is None else int(v)  # type: ignore[call-overload]


def _blocks(lines: Iterator[tuple[int, str]], size: int) -> Iterator[list[tuple[int, str]]]:
    block: list[tuple[int, str]] = []
    for item in lines:
        block.append(item)
        if len(block) >= size:
            yield block
            block = []
    if block:
        yield block


def _typed_batch(records: pa.Table, s: FileSlice, line_nos: pa.Array) -> pa.RecordBatch:
    """Columnar-typed request records → ``requests`` rows."""
    n = records.num_rows
    given = {
        "source_file": pa.array([s.path] * n, pa.string()),
        "line_no": line_nos,
        "broker_id": pa.array([s.broker_id] * n, pa.string()),
    }
    columns = {name: records.column(name) for name in records.column_names}
    return arrow_table(_REQUEST_SCHEMA, n, {**columns, **given}).combine_chunks().to_batches()[0]


#: what a task yields when it writes the request rows itself: one row a data file
TASK_FILES = TableDef(
    name="_ingest_task_files",
    columns=(Column("file", "string", False, "relative to the stage"), Column("rows", "bigint", False)),
)


def _arrow_task(
    tz_name: str,
    ingested_at: datetime,
    redact: tuple[str, ...] = (),
    key_hex: str | None = None,
    columnar: bool = False,
    side_dir: str = "",
    stage: str | None = None,
) -> Any:
    """The ``mapInArrow`` function of the plan frame (``slice``, ``slice_no``). It writes each slice's
    other rows (quarantine, stats) to ``<side_dir>/slice-<slice_no>.parquet`` (the same name on a retry,
    written whole, then renamed), and the request rows
    - with a ``stage`` (see ``DeltaStore.task_stage``): into parquet files there, yielding one
      :data:`TASK_FILES` row a file;
    - without: as record batches in the ``requests`` columns, for Spark to write."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        planned = [
            (int(n), FileSlice.from_dict(json.loads(s)))
            for b in batches
            for s, n in zip(b.column("slice").to_pylist(), b.column("slice_no").to_pylist(), strict=True)
        ]
        redactor = Redactor(bytes.fromhex(key_hex), redact) if redact and key_hex else None
        requests = _request_batches(planned, tz_name, ingested_at, redactor, columnar, side_dir)
        if stage is None:
            yield from requests
            return
        writer = TaskFileWriter(stage, REQUESTS)
        try:
            for batch in requests:
                writer.write(batch)
            written = writer.close()
        except BaseException:
            writer.abort()
            raise
        files = [{"file": f, "rows": n} for f, n in written]
        yield pa.RecordBatch.from_pylist(files, schema=TASK_FILES.arrow_schema())

    return run


def _request_batches(
    planned: Sequence[tuple[int, FileSlice]],
    tz_name: str,
    ingested_at: datetime,
    redactor: Redactor | None,
    columnar: bool,
    side_dir: str,
) -> Iterator[pa.RecordBatch]:
    """The request rows of the planned slices as record batches; each slice's other rows go to its side
    file (see :func:`_arrow_task`)."""
    for slice_no, s in planned:
        buf: list[dict[str, Any]] = []
        side: list[dict[str, Any]] = []
        for row in parse_slices([s], tz_name, ingested_at, redactor, columnar=columnar):
            if isinstance(row, pa.RecordBatch):
                yield row
            elif row["row_kind"] == "request":
                buf.append(row)
                if len(buf) >= BATCH_ROWS:
                    yield pa.RecordBatch.from_pylist(buf, schema=_REQUEST_SCHEMA)
                    buf = []
            else:
                side.append(row)
        if buf:
            yield pa.RecordBatch.from_pylist(buf, schema=_REQUEST_SCHEMA)
        target = os.path.join(side_dir, f"slice-{slice_no:06d}.parquet")
        write_parquet(target, pa.Table.from_pylist(side, schema=_TASK_SCHEMA))


# ----------------------------------------------------------------------------------------------------
# Driver side
# ----------------------------------------------------------------------------------------------------


def _progress(spark: SparkSession, store: DeltaStore) -> tuple[dict[str, FileProgress], int, IngestCounts]:
    """How far each file identity was read, the last committed batch id, and the running totals."""
    if not store.exists(INGEST_FILES):
        return {}, 0, IngestCounts()
    df = store.read(INGEST_FILES)
    rows = df.collect()
    progress: dict[str, FileProgress] = {}
    total = IngestCounts()
    last_batch = 0
    for r in sorted(rows, key=lambda r: (r["batch_id"], r["end_line"])):
        last_batch = max(last_batch, r["batch_id"])
        prev = progress.get(r["file_key"])
        if prev is None or r["end_line"] >= prev.end_line:
            progress[r["file_key"]] = FileProgress(
                r["end_line"], r["end_offset"], r["source_file"], r["file_size"], r["file_mtime_ms"]
            )
        total.add(
            IngestCounts(
                r["lines_read"], r["requests"], r["quarantined"], r["other_api_lines"], r["other_lines"]
            )
        )
    return progress, last_batch, total


@dataclass
class FileRead:
    """The statistics rows of the slices of one file merged: its one ``ingest_files`` row of the batch."""

    first: FileSlice  # the slice that starts where the file was left
    end_line: int  # last line read (``first.start_line - 1``: none)
    end_offset: int
    counts: IngestCounts
    errors: list[str] = field(default_factory=list)
    # lines a slice did not read although a slice after it did (the file changed or vanished while it
    # was read): said in the run's output, since the progress moves past them
    problems: list[str] = field(default_factory=list)
    #: a live file's incomplete last line, in bytes (0: none): not read, not counted, left for the next
    #: ingest (the broker is still writing it); said in the run's output and counted in its summary
    waiting_bytes: int = 0


def merge_slice_stats(rows: Sequence[Mapping[str, Any]]) -> list[FileRead]:
    """Merge the tasks' statistics rows (see :func:`parse_slices`) by file identity, slices in file order:
    the counts add up (every slice's rows are committed); the end is that of the last slice that read a
    line. A slice that stopped short of its end (missing file, read error, fewer bytes than planned)
    before a slice that read lines leaves a gap, named in ``problems``. (A slice checks the file's
    identity when it opens it, so a live file rotated while it was read makes its later slices read
    nothing: they are read next run where the file now lives, no gap.)"""
    by_key: dict[str, list[tuple[FileSlice, Mapping[str, Any]]]] = {}
    for r in rows:
        s = FileSlice.from_dict(json.loads(r["slice_json"]))
        by_key.setdefault(s.file_key, []).append((s, r))
    merged = []
    for key in sorted(by_key):
        pieces = sorted(by_key[key], key=lambda p: p[0].start_offset)
        first = pieces[0][0]
        read = FileRead(first, first.start_line - 1, first.start_offset, IngestCounts())
        stopped: int | None = None  # the last line read before a slice that stopped short
        for s, r in pieces:
            read.counts.add(
                IngestCounts(
                    r["lines_read"],
                    r["n_requests"],
                    r["n_quarantined"],
                    r["n_other_api"],
                    r["n_other"],
                    json.loads(r["other_api_counts"]),
                )
            )
            if r["error"]:
                read.errors.append(r["error"])
            if r["lines_read"]:
                if stopped is not None and s.start_line > stopped + 1:
                    read.problems.append(
                        f"lines {stopped + 1}-{s.start_line - 1} were not read (the file changed or vanished "
                        "while it was read)"
                    )
                stopped = None
                read.end_line, read.end_offset = r["end_line"], r["end_offset"]
            short = s.end_offset is not None and r["end_offset"] < s.end_offset
            if (r["missing"] or r["error"] or short) and stopped is None:
                stopped = r["end_line"] + (1 if r["error"] else 0)  # (an error's rest-of-file line)
        read.waiting_bytes = int(pieces[-1][1].get("waiting_bytes") or 0)  # only the last piece ends a file
        merged.append(read)
    return merged


def _plan_frame(spark: SparkSession, slices: Sequence[FileSlice]) -> DataFrame:
    """One row per slice, one slice per partition (a Spark task each) up to 4 × the default parallelism;
    more slices are dealt round-robin (partition sizes differ by one at most)."""
    n = max(1, min(len(slices), spark.sparkContext.defaultParallelism * 4))
    rows = [(json.dumps(s.to_dict()), i) for i, s in enumerate(slices)]
    # one list per partition: parallelize splits a list of n items into n partitions of one
    dealt = spark.sparkContext.parallelize([rows[i::n] for i in range(n)], n).flatMap(lambda part: part)
    return spark.createDataFrame(dealt, "slice string, slice_no int")


def _plan_path(warehouse: str, batch_id: int) -> Path:
    return Path(warehouse) / "_ingest" / f"batch-{batch_id:08d}.json"


def _floor_path(warehouse: str) -> Path:
    return Path(warehouse) / "_ingest" / "batch-floor.json"


def raise_batch_floor(warehouse: str, batch_id: int) -> None:
    """Keep the next batch ids above ``batch_id`` although the progress rows of that batch go (a repair
    that forgets source files deletes them): a new batch never takes the id of a committed one, whose
    application transaction would make the new batch's commits look done."""
    if batch_id > batch_floor(warehouse):
        write_json(_floor_path(warehouse), {"batch_id": batch_id})


def batch_floor(warehouse: str) -> int:
    """The batch id the next batch must be above (0: none recorded)."""
    try:
        return int(json.loads(_floor_path(warehouse).read_text())["batch_id"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0


def _side_dir(warehouse: str, batch_id: int) -> Path:
    """Where a batch's tasks leave their quarantined lines and per-slice counts (one file a slice)."""
    return Path(warehouse) / "_ingest" / f"batch-{batch_id:08d}-side"


def _side_stats(side_dir: Path) -> list[dict[str, Any]]:
    """The per-slice statistics rows of a batch's side files (small: one a slice), read on the driver."""
    import pyarrow.parquet as pq

    files = sorted(side_dir.glob("slice-*.parquet"))
    columns = [c.name for c in _STATS_COLUMNS]
    tables = [pq.read_table(f, columns=["row_kind", *columns]) for f in files]
    rows: list[dict[str, Any]] = []
    for t in tables:
        rows.extend(r for r in t.to_pylist() if r["row_kind"] == "stats")
    return rows


def _check_executors_can_open(plan_df: DataFrame) -> None:
    """Fail before reading anything when an executor cannot open a file the driver can (a path that is
    not on storage every node shares)."""

    def probe(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            paths = [json.loads(x)["path"] for x in b.column("slice").to_pylist()]
            yield pa.RecordBatch.from_pylist(
                [{"path": p} for p in paths if not os.path.exists(p)],
                schema=pa.schema([("path", pa.string())]),
            )

    for r in plan_df.mapInArrow(probe, "path string").collect():
        if os.path.exists(r["path"]):
            raise InputError(
                f"input: {r['path']}: the Spark executors cannot open it although the driver can: "
                "give a path every executor can read (shared storage such as /dbfs or NFS)"
            )


def _key_hex(config: Config) -> str | None:
    if not config.output.redact:
        return None
    key = redaction_key(config.storage.warehouse)
    if key is None:  # jobs called without the CLI: create the warehouse record (and key) now
        key = open_warehouse(config.storage.warehouse, config.output.redact, lambda msg: None)
    return None if key is None else key.hex()


def resolve_inputs(config: Config, inputs: Sequence[str]) -> list[LogFile]:
    """The log files named by ``inputs`` (files or directories), identified — no Spark needed, so bad
    paths and unreadable files are reported before any JVM starts. Empty files are skipped."""
    files = []
    for path in discover_files(inputs, config.input.file_patterns):
        described = describe_file(path, config.input.broker_id_pattern)
        if described is not None:
            files.append(described)
    return files


def ingest(
    spark: SparkSession,
    store: DeltaStore,
    config: Config,
    inputs: Sequence[str] | Sequence[LogFile],
    *,
    log: Any = None,
) -> IngestResult:
    """Land the given files/directories (or files already resolved by :func:`resolve_inputs`) into the
    bronze tables. Idempotent; see module docstring."""
    from pyspark.sql import functions as F

    say = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    started = time.monotonic()
    warehouse = config.storage.warehouse
    files = [f for f in inputs if isinstance(f, LogFile)]
    if len(files) != len(inputs):
        files = resolve_inputs(config, [str(f) for f in inputs])
    progress, last_batch, total = _progress(spark, store)
    batch_id = max(last_batch, batch_floor(warehouse)) + 1
    plan_file = _plan_path(warehouse, batch_id)
    copies: list[tuple[str, str]] = []
    if plan_file.exists():  # an earlier attempt of this batch died before recording its progress: redo it
        plan = json.loads(plan_file.read_text())
        slices = [FileSlice.from_dict(d) for d in plan["slices"]]
        if plan.get("stage"):  # its tasks' files: committed ones were moved out, the rest is garbage
            shutil.rmtree(plan["stage"], ignore_errors=True)
        duplicates = plan_slices(files, progress)[1]  # the copies skipped, as the first attempt counted
        say(f"ingest: resuming batch {batch_id} ({plural(len(slices), 'slice')}) from an interrupted run")
    else:
        planned, duplicates = plan_slices(files, progress, copies)
        for path, chosen in copies[:NAMED_COPIES]:
            say(f"ingest: {path} is a copy of {chosen} (the same broker's file, same first line): read once")
        if len(copies) > NAMED_COPIES:
            more = plural(len(copies) - NAMED_COPIES, "more duplicate copy", "more duplicate copies")
            say(f"ingest: and {more}, read once")
        del copies[NAMED_COPIES:]
        slices = [p for s in planned for p in split_slice(s, config.input.max_slice_bytes)]
    n_files = len({s.file_key for s in slices})
    run = IngestCounts()
    if not slices:
        say(f"ingest: {plural(len(files), 'file')}, nothing new to read")
        return IngestResult(None, len(files), 0, duplicates, run, total, time.monotonic() - started, copies)
    plan = {"batch_id": batch_id, "slices": [s.to_dict() for s in slices]}
    write_json(plan_file, plan, indent=1)
    mb = sum(s.file_size if s.end_offset is None else s.end_offset - s.start_offset for s in slices) / 1e6
    say(
        f"ingest: batch {batch_id}: reading {n_files} of {plural(len(files), 'file')} in "
        f"{plural(len(slices), 'task slice')}, ~{mb:.1f} MB"
    )

    ingested_at = datetime.now(UTC).replace(microsecond=0)
    side_dir = _side_dir(warehouse, batch_id)
    plan_df = _plan_frame(spark, slices)
    if local_cores(spark) is None:  # on a cluster: can every executor open the files?
        _check_executors_can_open(plan_df)
    committed = store.transaction_version(REQUESTS, APP_ID)
    done = committed is not None and committed >= batch_id
    if not done:
        shutil.rmtree(side_dir, ignore_errors=True)  # the rest of an attempt that never committed
    # one pass: the request rows go straight into the table (written by the tasks themselves when the
    # store takes their files); the tasks leave the quarantined lines and each slice's counts in side
    # files (read below), so nothing is cached or parsed twice
    stage = None if done else store.task_stage(REQUESTS)
    if stage is not None:  # a rerun after a kill removes it (the batch's stage is nobody else's)
        write_json(plan_file, {**plan, "stage": stage}, indent=1)
    task = functools.partial(
        _arrow_task,
        config.input.timezone,
        ingested_at,
        config.output.redact,
        _key_hex(config),
        config.input.columnar_json,
        str(side_dir),
    )
    requests_df = plan_df.mapInArrow(task(None), REQUESTS.spark_schema())
    written: int | None = None
    if stage is not None:
        try:
            task_files = plan_df.mapInArrow(task(stage), TASK_FILES.spark_schema()).collect()
        except BaseException:
            shutil.rmtree(stage, ignore_errors=True)
            raise
        written = store.commit_task_files(
            REQUESTS, stage, [r["file"] for r in task_files], app_id=APP_ID, txn_version=batch_id
        )
    elif not done:
        written = store.write(
            _select(requests_df, REQUESTS), REQUESTS, "append", app_id=APP_ID, txn_version=batch_id
        )
    if written is None and len(list(side_dir.glob("slice-*.parquet"))) < len(slices):
        requests_df.count()  # committed by an attempt whose side files are gone: read the slices again
    stats_rows = _side_stats(side_dir)
    reads = merge_slice_stats(stats_rows)
    from rebalance_replay.jobs.broker_facts import save_evidence

    save_evidence(  # idempotent: a batch read again merges the same evidence
        warehouse,
        merge_by_broker(
            (json.loads(r["slice_json"])["broker_id"], json.loads(r["evidence"]))
            for r in stats_rows
            if r.get("evidence")
        ),
    )
    waiting: list[tuple[str, int]] = []
    for fr in reads:
        run.add(fr.counts)
        for error in fr.errors:
            say(f"ingest: quarantined the unreadable rest of a file: {error}")
        for problem in fr.problems:
            say(f"ingest: {fr.first.path}: {problem}")
        if fr.waiting_bytes:
            waiting.append((fr.first.path, fr.waiting_bytes))
            say(
                f"ingest: {fr.first.path}: its last line is incomplete ({fr.waiting_bytes} bytes, the broker "
                "is still writing it): left for the next run"
            )
    if written is not None and written != run.requests:
        raise RuntimeError(f"ingest: {run.requests} request lines parsed but {written} rows written")
    say(
        f"ingest: parsed {plural(run.lines_read, 'line')}: {plural(run.requests, 'request')}, "
        f"{run.quarantined} quarantined, {run.other_api_lines} other-API, {run.other_lines} other"
    )
    quarantine_df = (
        _select(
            spark.read.schema(TASK_OUTPUT.spark_schema())
            .parquet(str(side_dir))
            .filter(F.col("row_kind") == "quarantine")
            .drop("reason")
            .withColumnRenamed("quarantine_reason", "reason"),
            QUARANTINE,
        )
        if run.quarantined
        else store.empty(QUARANTINE)  # the usual case: no Spark job to find none
    )
    if run.quarantined:
        # what the quarantined lines were, by the reason's kind (the text before its first colon)
        kinds = quarantine_df.groupBy(F.substring_index("reason", ":", 1).alias("kind")).count().collect()
        run.quarantine_reasons = {str(r["kind"]): int(r["count"]) for r in kinds}
        say(
            "ingest: quarantined lines by reason: "
            + "; ".join(f"{n} {k}" for k, n in sorted(run.quarantine_reasons.items(), key=lambda kv: -kv[1]))
        )
    store.append(quarantine_df, QUARANTINE, app_id=APP_ID, txn_version=batch_id)
    crash_point("ingest:before_progress")  # bronze committed, progress not yet recorded
    progress_rows = []
    for fr in reads:
        s, c = fr.first, fr.counts
        if c.lines_read == 0:
            continue
        progress_rows.append(
            (
                batch_id,
                s.file_key,
                s.path,
                s.broker_id,
                s.compressed,
                s.file_size,
                s.file_mtime_ms,
                s.start_line,
                fr.end_line,
                s.start_offset,
                fr.end_offset,
                c.lines_read,
                c.requests,
                c.quarantined,
                c.other_api_lines,
                c.other_lines,
                ingested_at,
            )
        )
    progress_df = spark.createDataFrame(progress_rows, INGEST_FILES.spark_schema())
    store.append(progress_df, INGEST_FILES, app_id=APP_ID, txn_version=batch_id)
    shutil.rmtree(side_dir, ignore_errors=True)
    plan_file.unlink(missing_ok=True)
    total.add(run)
    return IngestResult(
        batch_id, len(files), n_files, duplicates, run, total, time.monotonic() - started, copies, waiting
    )


def _select(df: DataFrame, table: TableDef) -> DataFrame:
    from pyspark.sql import functions as F

    schema = table.spark_schema()
    return df.select([F.col(f.name).cast(f.dataType).alias(f.name) for f in schema.fields])


def ingest_summary(result: IngestResult) -> dict[str, Any]:
    """The ingest keys of ``summary.json``: warehouse totals, plus this run's counts."""
    return {**result.total.as_dict(), "ingest": result.as_dict()}


def result_line(result: IngestResult) -> str:
    """What this run of ingest did, in one line: the batch it wrote (or that there was nothing new), the
    files it saw and read, the duplicate copies it skipped (another path of a file it reads once: the same
    rotation gzipped and not, a copy)."""
    seen = plural(result.files_seen, "file")
    dups = plural(result.duplicate_files, "duplicate copy", "duplicate copies")
    skipped = f"; {dups} skipped, each file is read once" if result.duplicate_files else ""
    if result.batch_id is None:
        return f"ingest: this run: nothing new to ingest ({seen} seen{skipped})"
    return (
        f"ingest: this run: batch {result.batch_id}, read {result.slices} of {seen} in "
        f"{result.seconds:.1f} s{skipped}"
    )


def format_counts_table(result: IngestResult) -> str:
    """Lines by kind, this run's next to the warehouse's totals."""
    rows = [("", "this run", "warehouse total")]
    for key in ("lines_read", "requests", "quarantined", "other_api_lines", "other_lines"):
        rows.append((key, str(getattr(result.run, key)), str(getattr(result.total, key))))
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    w2 = max(len(r[2]) for r in rows)
    lines = [f"  {a:<{w0}}  {b:>{w1}}  {c:>{w2}}" for a, b, c in rows]
    ok = "ok" if result.run.balanced and result.total.balanced else "MISMATCH"
    lines.append(f"  accounting (lines = requests + quarantined + other_api + other): {ok}")
    return "\n".join(lines)


__all__ = [
    "APP_ID",
    "IngestCounts",
    "IngestResult",
    "InputError",
    "counts_balance",
    "format_counts_table",
    "ingest",
    "ingest_summary",
    "parse_slices",
    "result_line",
]
