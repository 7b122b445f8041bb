"""Hypothesis: whatever a log file holds — valid lines of both eras, corrupted ones, other loggers, junk —
ingest's read-and-parse step accounts for every line exactly once:
``lines_read = requests + quarantined + other_api_lines + other_lines``, and every quarantined row keeps
its raw line and a reason. Runs the executor-side code of ingest (no Spark needed)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rebalance_replay.jobs.ingest import (
    IngestCounts,
    IngestResult,
    format_counts_table,
    ingest_summary,
    merge_slice_stats,
    parse_slices,
)
from rebalance_replay.jobs.log_files import FileSlice, describe_file, plan_slices, split_slice
from tests.integration.test_ingest import JSON_FETCH, JSON_HEARTBEAT, JSON_JOIN, OTHER_LOGGER, TEXT_HEARTBEAT

VALID = [JSON_JOIN, JSON_HEARTBEAT, JSON_FETCH, TEXT_HEARTBEAT, OTHER_LOGGER]


@st.composite
def corrupted(draw: st.DrawFn) -> str:
    line = draw(st.sampled_from(VALID))
    op = draw(st.sampled_from(["truncate", "flip", "insert", "delete", "keep"]))
    if op == "keep" or not line:
        return line
    i = draw(st.integers(0, len(line) - 1))
    if op == "truncate":
        return line[:i]
    if op == "flip":
        return (
            line[:i]
            + draw(st.characters(blacklist_categories=["Cs"], blacklist_characters="\n\r"))
            + line[i + 1 :]
        )
    if op == "insert":
        return (
            line[:i] + draw(st.text(max_size=5).filter(lambda t: "\n" not in t and "\r" not in t)) + line[i:]
        )
    return line[:i] + line[i + 5 :]


lines_strategy = st.lists(
    st.one_of(corrupted(), st.text(max_size=80).filter(lambda t: "\n" not in t and "\r" not in t)),
    min_size=1,
    max_size=40,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=lines_strategy)
def test_every_line_is_accounted_for(tmp_path: Path, lines: list[str]) -> None:
    path = tmp_path / "broker-1" / "kafka-request.log.1"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8", errors="surrogatepass")
    described = describe_file(str(path), r"(?P<broker_id>[^/]+)/[^/]+$")
    if described is None:
        return
    slices, _ = plan_slices([described], {})
    rows = list(parse_slices(slices, "UTC", datetime(2026, 1, 1, tzinfo=UTC)))
    (stats,) = [r for r in rows if r["row_kind"] == "stats"]
    requests = [r for r in rows if r["row_kind"] == "request"]
    quarantined = [r for r in rows if r["row_kind"] == "quarantine"]
    assert stats["lines_read"] == len(lines)
    assert stats["n_requests"] == len(requests) and stats["n_quarantined"] == len(quarantined)
    assert stats["lines_read"] == (
        stats["n_requests"] + stats["n_quarantined"] + stats["n_other_api"] + stats["n_other"]
    )
    assert sum(json.loads(stats["other_api_counts"]).values()) == stats["n_other_api"]
    # each line number appears once among the rows that keep a line
    kept = [r["line_no"] for r in requests + quarantined]
    assert len(kept) == len(set(kept)) and all(1 <= n <= len(lines) for n in kept)
    for q in quarantined:
        assert q["quarantine_reason"] and q["raw_line"] == lines[q["line_no"] - 1]
    # a kept-API line with a "Completed request" marker never silently becomes an "other" line
    for n, line in enumerate(lines, 1):
        if line in (JSON_JOIN, JSON_HEARTBEAT, TEXT_HEARTBEAT):
            assert n in kept


AT = datetime(2026, 1, 1, tzinfo=UTC)


def _kept_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    kept = [r for r in rows if r["row_kind"] != "stats"]
    return sorted(kept, key=lambda r: (r["row_kind"], r["line_no"]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=lines_strategy, max_bytes=st.integers(1, 3000), crlf=st.booleans(), newline_at_end=st.booleans())
def test_split_slices_merge_to_what_one_slice_reads(
    tmp_path: Path, lines: list[str], max_bytes: int, crlf: bool, newline_at_end: bool
) -> None:
    path = tmp_path / "broker-1" / "kafka-request.log.1"
    path.parent.mkdir(parents=True, exist_ok=True)
    eol = "\r\n" if crlf else "\n"
    text = eol.join(lines) + (eol if newline_at_end else "")
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    described = describe_file(str(path), r"(?P<broker_id>[^/]+)/[^/]+$")
    if described is None:
        return
    (whole,) = plan_slices([described], {})[0]
    pieces = split_slice(whole, max_bytes)
    one = list(parse_slices([whole], "UTC", AT))
    split = list(parse_slices(pieces, "UTC", AT))
    assert _kept_rows(split) == _kept_rows(one)
    (read_one,) = merge_slice_stats([r for r in one if r["row_kind"] == "stats"])
    (read,) = merge_slice_stats([r for r in split if r["row_kind"] == "stats"])
    assert read.first == pieces[0] and (read.first.start_line, read.first.start_offset) == (1, 0)
    assert (read.end_line, read.end_offset, read.counts) == (
        read_one.end_line,
        read_one.end_offset,
        read_one.counts,
    )
    assert read.counts.balanced and read.counts.lines_read == read_one.counts.lines_read
    assert read.problems == [] and read.errors == []


def test_a_slice_that_stops_short_is_named_and_every_slice_counts(tmp_path: Path) -> None:
    """Every slice's rows are committed in one pass, so every slice counts; a slice that read nothing or
    stopped short before a later slice read lines leaves a gap, which the merge names."""
    path = tmp_path / "broker-1" / "kafka-request.log.1"
    pieces = _pieces(path)
    assert len(pieces) >= 4
    stats = stats_of

    first = stats(pieces[:1])
    later = stats(pieces[2:])
    path.rename(path.with_suffix(".moved"))
    missing = stats(pieces[1:2])
    assert missing[0]["missing"]
    # the second slice found no file, the ones after it had read theirs: a gap, named
    (read,) = merge_slice_stats(later + missing + first)  # in any order
    assert read.counts.lines_read == first[0]["lines_read"] + sum(r["lines_read"] for r in later)
    assert (read.end_line, read.end_offset) == (later[-1]["end_line"], later[-1]["end_offset"])
    assert read.problems == [
        f"lines {pieces[1].start_line}-{pieces[2].start_line - 1} were not read (the file changed or "
        "vanished while it was read)"
    ]
    # the file vanished after the first slice, before the rest: no gap, the rest is read next run
    gone = stats(pieces[2:])
    (read,) = merge_slice_stats([*first, *missing, *gone])
    assert read.problems == [] and read.counts.lines_read == first[0]["lines_read"]
    assert read.end_offset == pieces[1].start_offset
    # a read error: its quarantined rest-of-file line (end_line + 1) counts, the gap starts after it
    errored = dict(missing[0], missing=False, error="input: x: unreadable file after line 3 (boom)")
    errored.update(
        lines_read=1, n_quarantined=1, end_line=pieces[1].start_line - 1, end_offset=pieces[1].start_offset
    )
    (read,) = merge_slice_stats([*first, errored, *later])
    assert read.errors == [errored["error"]]
    assert read.problems == [
        f"lines {pieces[1].start_line + 1}-{pieces[2].start_line - 1} were not read (the file changed or "
        "vanished while it was read)"
    ]
    assert read.counts.balanced


def test_a_slice_of_a_file_replaced_under_its_name_reads_nothing(tmp_path: Path) -> None:
    """The live file rotated between planning and reading: a slice opens the new file under the old
    name; its first line is not the identity's, so it reads nothing and the identity is read next run."""
    path = tmp_path / "broker-1" / "kafka-request.log"
    pieces = _pieces(path)
    assert len(pieces) >= 2
    path.rename(path.with_name("kafka-request.log.2024-05-01-10"))
    path.write_text("".join(line + "\n" for line in reversed(VALID * 9)))  # a new live file, larger
    (r,) = stats_of(pieces[1:2])
    assert r["missing"] and r["lines_read"] == 0


def _pieces(path: Path) -> list[FileSlice]:
    """A file of valid lines at ``path``, planned and split into slices of about 2,000 bytes."""
    path.parent.mkdir(parents=True)
    path.write_text("".join(line + "\n" for line in VALID * 8))
    described = describe_file(str(path), r"(?P<broker_id>[^/]+)/[^/]+$")
    assert described is not None
    (whole,) = plan_slices([described], {})[0]
    return split_slice(whole, 2000)


def stats_of(slices: list[FileSlice]) -> list[dict[str, Any]]:
    return [r for r in parse_slices(slices, "UTC", AT) if r["row_kind"] == "stats"]


@pytest.mark.parametrize(
    ("counts", "balanced"),
    [
        (IngestCounts(lines_read=10, requests=6, quarantined=2, other_api_lines=1, other_lines=1), True),
        (IngestCounts(lines_read=0), True),
        # a line lost: read but counted nowhere
        (IngestCounts(lines_read=10, requests=6, quarantined=2, other_api_lines=1, other_lines=0), False),
        # a line counted twice: more outcomes than lines read
        (IngestCounts(lines_read=10, requests=7, quarantined=2, other_api_lines=1, other_lines=1), False),
        (IngestCounts(lines_read=0, quarantined=1), False),
    ],
)
def test_the_accounting_reports_an_unbalanced_count(counts: IngestCounts, balanced: bool) -> None:
    """Both directions: a balanced count says ok, a count that loses or double-counts a line says
    MISMATCH, in the summary (``accounting_ok``) and in the table the CLI prints."""
    assert counts.balanced is balanced
    assert counts.as_dict()["accounting_ok"] is balanced
    fine = IngestCounts(lines_read=3, requests=3)
    for run, total in ((counts, fine), (fine, counts)):
        result = IngestResult(
            batch_id=1, files_seen=1, slices=1, duplicate_files=0, run=run, total=total, seconds=0.0
        )
        last = format_counts_table(result).splitlines()[-1]
        assert last.endswith(": ok" if balanced else ": MISMATCH"), last


def test_a_slice_that_read_fewer_bytes_than_planned_leaves_a_named_gap(tmp_path: Path) -> None:
    """No error, file present, but the slice ended before its planned end (the file shrank while it was
    read): a later slice that read lines leaves a gap after the short slice's last line, named."""
    path = tmp_path / "broker-1" / "kafka-request.log.1"
    pieces = _pieces(path)
    first, (second,), later = stats_of(pieces[:1]), stats_of(pieces[1:2]), stats_of(pieces[2:])
    assert not second["missing"] and not second["error"] and pieces[1].end_offset is not None
    assert pieces[2].start_line > pieces[1].start_line + 1
    (read,) = merge_slice_stats([*first, second, *later])
    assert read.problems == []
    short = dict(second, end_line=pieces[1].start_line, end_offset=pieces[1].end_offset - 1)
    (read,) = merge_slice_stats([*first, short, *later])
    assert read.problems == [
        f"lines {pieces[1].start_line + 1}-{pieces[2].start_line - 1} were not read (the file changed or "
        "vanished while it was read)"
    ]
    assert read.errors == []


def test_the_summary_holds_the_warehouse_totals_and_this_runs_counts() -> None:
    run = IngestCounts(4, 2, 1, 1, 0, {"FETCH": 1})
    total = IngestCounts(9, 5, 1, 2, 1, {"METADATA": 1, "FETCH": 1})
    result = IngestResult(
        batch_id=7, files_seen=3, slices=4, duplicate_files=1, run=run, total=total, seconds=1.234
    )
    assert total.as_dict() == {
        "lines_read": 9,
        "requests": 5,
        "quarantined": 1,
        "other_api_lines": 2,
        "other_lines": 1,
        "other_api_by_name": {"FETCH": 1, "METADATA": 1},
        "accounting_ok": True,
    }
    assert list(total.as_dict()["other_api_by_name"]) == ["FETCH", "METADATA"]
    assert ingest_summary(result) == {
        **total.as_dict(),
        "ingest": {
            "batch_id": 7,
            "files_seen": 3,
            "slices_read": 4,
            "duplicate_files": 1,
            "this_run": run.as_dict(),
            "seconds": 1.23,
        },
    }
    run.add(total)
    assert run == IngestCounts(13, 7, 2, 3, 1, {"FETCH": 2, "METADATA": 1})


def _one_slice(path: Path) -> list[dict[str, Any]]:
    described = describe_file(str(path), r"(?P<broker_id>[^/]+)/[^/]+$")
    assert described is not None
    slices, _ = plan_slices([described], {})
    return list(parse_slices(slices, "UTC", AT))


def test_a_quarantined_line_keeps_its_file_line_broker_and_date(tmp_path: Path) -> None:
    path = tmp_path / "broker-7" / "kafka-request.log.1"
    path.parent.mkdir()
    broken = JSON_JOIN[: len(JSON_JOIN) // 2]  # a request line cut short: quarantined
    path.write_text(f"{JSON_HEARTBEAT}\n{broken}\n")
    (q,) = [r for r in _one_slice(path) if r["row_kind"] == "quarantine"]
    assert set(q) == {
        "row_kind",
        "source_file",
        "line_no",
        "broker_id",
        "quarantine_reason",
        "raw_line",
        "ingested_at",
        "log_date",
    }
    assert (q["source_file"], q["line_no"], q["broker_id"], q["raw_line"]) == (
        str(path),
        2,
        "broker-7",
        broken,
    )
    assert q["quarantine_reason"] and q["ingested_at"] == AT


def test_a_gzip_that_breaks_off_counts_its_unreadable_rest_as_one_quarantined_line(tmp_path: Path) -> None:
    """The rest of a broken gzip stream is one quarantined line after the last line read: lines_read
    counts it, so the accounting balances and covers the whole file."""
    import gzip

    path = tmp_path / "broker-1" / "kafka-request.log.2024-05-01-10.gz"
    path.parent.mkdir()
    whole = gzip.compress("".join(line + "\n" for line in VALID * 200).encode())
    path.write_bytes(whole[: len(whole) // 2])
    rows = _one_slice(path)
    (stats,) = [r for r in rows if r["row_kind"] == "stats"]
    assert stats["error"]
    rest = [r for r in rows if r["row_kind"] == "quarantine" and r["raw_line"] == ""]
    assert rest == [
        {
            "row_kind": "quarantine",
            "source_file": str(path),
            "line_no": stats["end_line"] + 1,
            "broker_id": "broker-1",
            "quarantine_reason": stats["error"],
            "raw_line": "",
            "ingested_at": AT,
            "log_date": AT.date(),
        }
    ]
    assert stats["lines_read"] == stats["end_line"] + 1 > 1
    assert stats["lines_read"] == (
        stats["n_requests"] + stats["n_quarantined"] + stats["n_other_api"] + stats["n_other"]
    )


def test_an_api_versions_line_gives_the_brokers_versions_as_evidence(tmp_path: Path) -> None:
    """A real broker's ApiVersions answer (Kafka 3.7.2): the stats row carries its version ranges."""
    real = Path(__file__).parent / "data" / "broker_facts" / "kafka-3.7.2.log"
    line = next(x for x in real.read_text().splitlines() if '"requestApiKeyName":"API_VERSIONS"' in x)
    path = tmp_path / "broker-1" / "kafka-request.log.1"
    path.parent.mkdir()
    path.write_text(line + "\n")
    (stats,) = [r for r in _one_slice(path) if r["row_kind"] == "stats"]
    assert stats["n_other_api"] == 1 and json.loads(stats["other_api_counts"]) == {"API_VERSIONS": 1}
    evidence = json.loads(stats["evidence"])
    # JoinGroup (key 11) is answered up to v9 by Kafka 3.7
    assert evidence["api_versions"]["11"] == [0, 9]


def test_the_summary_names_the_quarantined_lines_kinds() -> None:
    """This run's quarantined lines by the kind of their reason (issue 29: a stepped clock is told apart
    from unreadable lines), sorted by kind; absent when the run quarantined nothing."""
    run = IngestCounts(5, 1, 3, 0, 1, quarantine_reasons={"line time out of order": 2, "bad JSON": 1})
    assert run.as_dict() == {
        "lines_read": 5,
        "requests": 1,
        "quarantined": 3,
        "other_api_lines": 0,
        "other_lines": 1,
        "other_api_by_name": {},
        "quarantine_reasons": {"bad JSON": 1, "line time out of order": 2},
        "accounting_ok": True,
    }
    assert list(run.as_dict()["quarantine_reasons"]) == ["bad JSON", "line time out of order"]
    assert "quarantine_reasons" not in IngestCounts(1, 1).as_dict()


def test_a_live_files_incomplete_last_line_is_counted_as_waiting(tmp_path: Path) -> None:
    """Issue 29: a live file ending in half a line. The half line is neither read nor lost: the slice's
    statistics give its bytes, the merge keeps them for the file, and the run's summary counts and names
    the files whose last line waits for the next ingest (which reads it whole)."""
    path = tmp_path / "broker-1" / "kafka-request.log"
    path.parent.mkdir()
    half = JSON_JOIN[: len(JSON_JOIN) // 2]
    path.write_text(f"{JSON_HEARTBEAT}\n{half}")
    rows = _one_slice(path)
    (stats,) = [r for r in rows if r["row_kind"] == "stats"]
    assert (stats["lines_read"], stats["n_requests"], stats["n_quarantined"]) == (1, 1, 0)
    assert stats["waiting_bytes"] == len(half.encode())
    (read,) = merge_slice_stats([stats])
    assert read.waiting_bytes == len(half.encode()) and read.counts.balanced
    result = IngestResult(
        batch_id=1,
        files_seen=2,
        slices=1,
        duplicate_files=1,
        run=read.counts,
        total=read.counts,
        seconds=0.0,
        duplicate_copies=[("b/kafka-request.log.1.gz", "b/kafka-request.log.1")],
        incomplete_last_lines=[(str(path), read.waiting_bytes)],
    )
    summary = result.as_dict()
    assert summary["incomplete_last_lines"] == {
        "files": 1,
        "bytes": len(half.encode()),
        "paths": [str(path)],
    }
    assert summary["duplicate_copies"] == [
        {"path": "b/kafka-request.log.1.gz", "copy_of": "b/kafka-request.log.1"}
    ]
    # the line completed: the next read takes it whole, nothing waits
    path.write_text(f"{JSON_HEARTBEAT}\n{JSON_JOIN}\n")
    (stats,) = [r for r in _one_slice(path) if r["row_kind"] == "stats"]
    assert (stats["lines_read"], stats["waiting_bytes"]) == (2, 0)


# --- parse_slices over a real broker's routine lines (the columnar path, redaction) -------------------------
#: Kafka 3.7.2's own lines (tests/data/real-kafka, recording "single"): group "birth"
REAL_LOG = (
    Path(__file__).parents[1] / "data" / "real-kafka" / "3.7" / "single" / "broker-1" / "kafka-request.log.gz"
)
REDACT_KEY = b"\x07" * 32


def _birth_lines() -> list[str]:
    """A leader's SyncGroup, then the first two Heartbeats and the first two OffsetCommits of the group's
    members, as the broker wrote them (JSON era, one line each)."""
    import gzip

    with gzip.open(REAL_LOG, "rt", encoding="utf-8") as f:
        birth = [x for x in f.read().splitlines() if '"groupId":"birth"' in x]
    sync = [x for x in birth if '"requestApiKey":14,' in x and '"assignments":[{' in x]
    heartbeats = [x for x in birth if '"requestApiKey":12,' in x][:2]
    commits = [x for x in birth if '"requestApiKey":8,' in x][:2]
    assert len(sync) == 1 and [x[:25] for x in heartbeats + commits] == [
        "[2026-11-27 07:21:43,337]",
        "[2026-11-27 07:21:43,341]",
        "[2026-11-27 07:21:46,895]",
        "[2026-11-27 07:21:46,899]",
    ]
    return [sync[0], *heartbeats, *commits]


def _read(path: Path, columnar: bool, redactor: Any = None) -> tuple[list[dict[str, Any]], list[Any]]:
    """parse_slices over the file in one slice: its rows as dicts, and the record batches it yielded."""
    import pyarrow as pa

    described = describe_file(str(path), r"(?P<broker_id>[^/]+)/[^/]+$")
    assert described is not None
    slices, _ = plan_slices([described], {})
    out = list(parse_slices(slices, "UTC", AT, redactor, columnar=columnar))
    batches = [o for o in out if isinstance(o, pa.RecordBatch)]
    rows = [o for o in out if not isinstance(o, pa.RecordBatch)]
    return rows, batches


def _ms(text: str) -> int:
    """A line time (UTC) as epoch ms."""
    return int(datetime.strptime(text + "000", "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=UTC).timestamp() * 1000)


M1 = "8c44b6ba-ce4b-4fba-b28a-14b0a4338b81"  # the member ids' UUIDs (Kafka: clientId-UUID)
M2 = "5109e5f7-df35-411d-a56c-86f0ee1334fb"
#: per routine line (2-5): api, version, member UUID, client port and connection index, completion, total time
ROUTINE = [
    (12, 4, M1, "49048-5", "2026-11-27 07:21:43,337", 10),  # totalTimeMs 10.052
    (12, 4, M2, "49030-4", "2026-11-27 07:21:43,341", 1),  # 0.787
    (8, 9, M1, "49048-5", "2026-11-27 07:21:46,895", 21),  # 20.605
    (8, 9, M2, "49030-4", "2026-11-27 07:21:46,899", 33),  # 33.231
]
COMMITTED = {M1: ("birth-topic", 2, 60), M2: ("birth-topic", 0, 78)}


@pytest.mark.parametrize("columnar", [False, True], ids=["rows", "columnar"])
def test_a_real_brokers_routine_lines_give_the_same_rows_either_way(tmp_path: Path, columnar: bool) -> None:
    """``columnar_json``: the block's Heartbeats and OffsetCommits come typed together, one record batch
    with their file, line numbers and broker; the SyncGroup goes through parse_line. Every row is what
    the line says (and what the row-by-row path gives)."""
    path = tmp_path / "broker-3" / "kafka-request.log.1"
    path.parent.mkdir()
    path.write_text("\n".join(_birth_lines()) + "\n")
    rows, batches = _read(path, columnar)
    one_by_one, none = _read(path, columnar=False)
    assert none == []
    if columnar:
        (batch,) = batches
        assert batch.num_rows == 4
        requests = [r for r in rows if r["row_kind"] == "request"] + [
            {"row_kind": "request", **r} for r in batch.to_pylist()
        ]
    else:
        assert batches == []
        requests = [r for r in rows if r["row_kind"] == "request"]
    by_line = {r["line_no"]: r for r in requests}
    assert sorted(by_line) == [1, 2, 3, 4, 5]
    assert by_line == {r["line_no"]: r for r in one_by_one if r["row_kind"] == "request"}
    assert [r for r in rows if r["row_kind"] != "request"] == [
        r for r in one_by_one if r["row_kind"] != "request"
    ]
    (stats,) = [r for r in rows if r["row_kind"] == "stats"]
    assert (stats["lines_read"], stats["n_requests"], stats["n_quarantined"]) == (5, 5, 0)
    # group lines alone tell nothing of the broker (its versions come from ApiVersions answers): no evidence
    assert (stats["n_other_api"], stats["n_other"], stats["evidence"]) == (0, 0, None)
    assert by_line[1]["api_name"] == "SYNC_GROUP"
    for no, (api, version, uuid, client, done, total) in enumerate(ROUTINE, 2):
        r = by_line[no]
        port, index = client.split("-")
        assert (r["source_file"], r["broker_id"], r["log_era"]) == (str(path), "broker-3", "json")
        assert (r["api_key"], r["api_version"], r["group_id"], r["generation_id"]) == (
            api,
            version,
            "birth",
            1,
        )
        assert (r["client_id"], r["member_id"], r["group_instance_id"]) == (
            "consumer-birth-1",
            f"consumer-birth-1-{uuid}",
            None,
        )
        assert (r["error_code"], r["error_name"]) == (0, "NONE")
        assert (r["completion_ms"], r["arrival_ms"]) == (_ms(done), _ms(done) - total)
        assert (r["connection"], r["client_address"], r["connection_index"]) == (
            f"127.0.0.1:33149-127.0.0.1:{port}-{index}",
            f"127.0.0.1:{port}",
            index,
        )
        assert r["principal"] == "User:ANONYMOUS"
        if api == 8:
            topic, partition, offset = COMMITTED[uuid]
            assert r["commit_partitions"] == [
                {"topic": topic, "partition": partition, "committed_offset": offset}
            ]
            assert r["response_commit_partitions"] == [
                {"topic": topic, "partition": partition, "error_code": 0, "error_name": "NONE"}
            ]
        else:
            assert r["commit_partitions"] is None and r["response_commit_partitions"] is None


def _token(value: str) -> str:
    """output.redact's token, as redaction's docstring defines it: HMAC-SHA256 under the key, 16 hex digits
    after an ``h``."""
    import hashlib
    import hmac

    return "h" + hmac.new(REDACT_KEY, value.encode(), hashlib.sha256).hexdigest()[:16]


@pytest.mark.parametrize("columnar", [False, True], ids=["rows", "columnar"])
def test_parse_slices_redacts_before_any_row_leaves_the_task(tmp_path: Path, columnar: bool) -> None:
    """``output.redact=principal,client_address,client_id`` (ingest builds the Redactor from the
    warehouse's key): every request row carries tokens for the principal, the client host (in
    ``client_address`` and ``connection``; ports kept), the client id and the client-id prefix of every
    member id (columns, assignment arrays, raw bodies); a quarantined line's raw text is replaced. The
    columnar path is not taken (it could not redact), so every row comes as a dict."""
    from rebalance_replay.transforms.redaction import REDACTED_LINE, Redactor

    lines = _birth_lines()
    path = tmp_path / "broker-1" / "kafka-request.log.1"
    path.parent.mkdir()
    broken = lines[1][: len(lines[1]) // 2]  # a Heartbeat cut short: quarantined
    path.write_text("\n".join([*lines, broken]) + "\n")
    plain, _ = _read(path, columnar=False)
    redactor = Redactor(REDACT_KEY, ("principal", "client_address", "client_id"))
    rows, batches = _read(path, columnar, redactor)
    assert batches == []
    assert len(rows) == len(plain) == 7  # five requests, the quarantined line, the stats
    client, host = _token("consumer-birth-1"), _token("127.0.0.1")
    redacted = {
        "principal",
        "client_address",
        "connection",
        "client_id",
        "member_id",
        "assignments",
        "raw_request",
        "raw_response",
    }
    for r, p in zip(rows, plain, strict=True):
        assert r["row_kind"] == p["row_kind"]
        if r["row_kind"] == "quarantine":
            assert (r["line_no"], r["raw_line"]) == (6, REDACTED_LINE) and p["raw_line"] == broken
            continue
        if r["row_kind"] != "request":
            assert r == p
            continue
        # nothing else changes
        assert {k: v for k, v in r.items() if k not in redacted} == {
            k: v for k, v in p.items() if k not in redacted
        }
        port = p["client_address"].rpartition(":")[2]
        assert (r["principal"], r["client_id"], r["client_address"]) == (
            _token("User:ANONYMOUS"),
            client,
            f"{host}:{port}",
        )
        assert r["connection"] == p["connection"].replace(f"127.0.0.1:{port}", f"{host}:{port}")
        assert r["member_id"] == p["member_id"].replace("consumer-birth-1-", f"{client}-")
        assert r["member_id"].endswith((M1, M2, "852f8af8-ce41-4d41-af51-2ab7bb439893"))
        for raw in ("raw_request", "raw_response"):
            assert r[raw] == p[raw].replace("consumer-birth-1-", f"{client}-")
        assert "consumer-birth-1" not in json.dumps(r, default=str)
        assert "User:ANONYMOUS" not in json.dumps(r, default=str)
        assert f"127.0.0.1:{port}" not in json.dumps(r, default=str)
    (sync,) = [r for r in rows if r.get("api_name") == "SYNC_GROUP"]
    assert [a["member_id"].split("-", 1)[0] for a in sync["assignments"]] == [client] * 3
