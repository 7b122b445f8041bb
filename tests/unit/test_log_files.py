"""The file layer of ingest: discovery, broker ids, identity across rotation/gzip, resumable slices."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

from rebalance_replay.jobs.log_files import (
    FileProgress,
    InputError,
    SliceStats,
    broker_id_for,
    describe_file,
    discover_files,
    plan_slices,
    read_slice,
)

PATTERN = r"(?P<broker_id>[^/]+)/[^/]+$"
PATTERNS = ("kafka-request.log", "kafka-request.log.*")
L = "[2024-05-01 10:00:0{i},000] DEBUG Completed request:{{}} (kafka.request.logger)\n"


def _lines(n: int, start: int = 0) -> str:
    return "".join(L.format(i=i % 10).replace("{}", f'{{"n":{start + i}}}') for i in range(n))


def _read_all(path: Path, progress: dict[str, FileProgress] | None = None) -> list[tuple[int, str]]:
    f = describe_file(str(path), PATTERN)
    assert f is not None
    slices, _ = plan_slices([f], progress or {})
    out: list[tuple[int, str]] = []
    for s in slices:
        out.extend(read_slice(s, SliceStats()))
    return out


def test_discover_recursive_and_missing(tmp_path: Path) -> None:
    (tmp_path / "b1").mkdir()
    (tmp_path / "b2").mkdir()
    (tmp_path / "b1" / "kafka-request.log").write_text(_lines(2))
    (tmp_path / "b2" / "kafka-request.log.2024-05-01-13").write_text(_lines(2))
    (tmp_path / "b2" / "server.log").write_text("x\n")
    found = discover_files([str(tmp_path)], PATTERNS)
    assert [Path(f).name for f in found] == ["kafka-request.log", "kafka-request.log.2024-05-01-13"]
    with pytest.raises(InputError, match="no such file or directory"):
        discover_files([str(tmp_path / "missing")], PATTERNS)
    with pytest.raises(InputError, match="holds no file matching"):
        discover_files([str(tmp_path / "b1")], ("nothing*",))


def test_broker_id_from_parent_dir(tmp_path: Path) -> None:
    assert broker_id_for(str(tmp_path / "broker-7" / "kafka-request.log"), PATTERN) == "broker-7"
    with pytest.raises(InputError, match="cannot derive a broker id"):
        broker_id_for("kafka-request.log", r"(?P<broker_id>broker-\d+)/")


def test_partial_last_line_of_live_file_waits(tmp_path: Path) -> None:
    d = tmp_path / "b1"
    d.mkdir()
    p = d / "kafka-request.log"
    p.write_text(_lines(3) + "[2024-05-01 10:00:09,000] DEBUG Completed req")
    got = _read_all(p)
    assert [n for n, _ in got] == [1, 2, 3]
    # a complete last line without newline is taken
    p.write_text(_lines(3) + L.format(i=9).rstrip("\n"))
    assert [n for n, _ in _read_all(p)] == [1, 2, 3, 4]


def test_growth_resumes_and_rotation_is_recognised(tmp_path: Path) -> None:
    d = tmp_path / "b1"
    d.mkdir()
    live = d / "kafka-request.log"
    live.write_text(_lines(3))
    f1 = describe_file(str(live), PATTERN)
    assert f1 is not None
    slices, _ = plan_slices([f1], {})
    stats = SliceStats()
    first = list(read_slice(slices[0], stats))
    assert len(first) == 3 and stats.end_line == 3
    progress = {f1.file_key: FileProgress(stats.end_line, stats.end_offset, str(live), f1.size, f1.mtime_ms)}
    # nothing new: no slice
    assert plan_slices([f1], progress)[0] == []
    # the file grows, then is rotated and gzipped: same identity, only the tail is read
    rotated = d / "kafka-request.log.2024-05-01-10.gz"
    with gzip.open(rotated, "wt") as g:
        g.write(_lines(3) + _lines(2, start=3))
    os.remove(live)
    f2 = describe_file(str(rotated), PATTERN)
    assert f2 is not None and f2.file_key == f1.file_key and f2.compressed
    slices, _ = plan_slices([f2], progress)
    tail = list(read_slice(slices[0], SliceStats()))
    assert [n for n, _ in tail] == [4, 5]
    assert '"n":3' in tail[0][1]


def test_duplicate_copies_read_once(tmp_path: Path) -> None:
    d = tmp_path / "b1"
    d.mkdir()
    plain = d / "kafka-request.log.2024-05-01-10"
    plain.write_text(_lines(4))
    with gzip.open(d / "kafka-request.log.2024-05-01-10.gz", "wt") as g:
        g.write(_lines(4))
    files = [describe_file(str(p), PATTERN) for p in sorted(d.iterdir())]
    slices, dups = plan_slices([f for f in files if f], {})
    assert dups == 1 and len(slices) == 1 and not slices[0].compressed


def test_unreadable_gzip_is_input_error(tmp_path: Path) -> None:
    d = tmp_path / "b1"
    d.mkdir()
    bad = d / "kafka-request.log.1.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00garbage-not-deflate")
    with pytest.raises(InputError, match="unreadable gzip"):
        describe_file(str(bad), PATTERN)


def test_truncated_gzip_reports_error_after_good_lines(tmp_path: Path) -> None:
    d = tmp_path / "b1"
    d.mkdir()
    p = d / "kafka-request.log.1.gz"
    data = gzip.compress(_lines(2000).encode())
    p.write_bytes(data[: len(data) // 2])
    f = describe_file(str(p), PATTERN)
    assert f is not None
    slices, _ = plan_slices([f], {})
    stats = SliceStats()
    got = list(read_slice(slices[0], stats))
    assert stats.error and "unreadable gzip after line" in stats.error
    assert len(got) == stats.end_line > 0


def test_empty_file_is_skipped(tmp_path: Path) -> None:
    d = tmp_path / "b1"
    d.mkdir()
    (d / "kafka-request.log").write_text("")
    assert describe_file(str(d / "kafka-request.log"), PATTERN) is None


def test_crlf_and_invalid_utf8(tmp_path: Path) -> None:
    d = tmp_path / "b1"
    d.mkdir()
    p = d / "kafka-request.log.1"
    p.write_bytes(b"a\r\nb\xff\n")
    assert [line for _, line in _read_all(p)] == ["a", "b\ufffd"]
