"""The file layer of ingest: discovery, broker ids, identity across rotation/gzip, resumable slices."""

from __future__ import annotations

import gzip
import itertools
import os
from dataclasses import replace
from pathlib import Path

import pytest

from rebalance_replay.jobs import log_files
from rebalance_replay.jobs.log_files import (
    FileProgress,
    InputError,
    SliceStats,
    broker_id_for,
    describe_file,
    discover_files,
    plan_slices,
    read_slice,
    split_slice,
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


def test_the_default_patterns_take_every_file_a_broker_rotates(tmp_path: Path) -> None:
    """A broker folder after an hour boundary as log4j leaves it: ``server.log`` rotates as the request log
    does, and a rotated ``server.log`` was once left out (its lines missing from the count, the coordinator's
    own story of that hour unread). Every live ``*.log`` is still being written (its half line waits)."""
    from rebalance_replay.jobs.config import InputConfig

    b = tmp_path / "broker-1"
    b.mkdir()
    names = [
        "kafka-request.log",
        "kafka-request.log.2024-05-01-09",
        "kafka-request.log.2024-05-01-08.gz",
        "server.log",
        "server.log.2024-05-01-09",
        "server.log.2024-05-01-08.gz",
        "controller.log.2024-05-01-09",
    ]
    for n in names:
        (b / n).write_text("x\n")
    (b / "notes.txt").write_text("x\n")
    found = discover_files([str(tmp_path)], InputConfig().file_patterns)
    assert sorted(Path(f).name for f in found) == sorted(names)
    live = {n: describe_file(str(b / n), PATTERN) for n in names}
    assert {n for n, f in live.items() if f is not None and f.live} == {"kafka-request.log", "server.log"}


def test_a_live_server_log_leaves_its_half_line_and_takes_a_complete_one(tmp_path: Path) -> None:
    p = tmp_path / "b1" / "server.log"
    p.parent.mkdir()
    done = (
        "[2024-05-01 10:00:00,000] INFO [GroupCoordinator 1]: Stabilized group g generation 1 "
        "(kafka.coordinator.group.GroupCoordinator)"
    )
    p.write_text(done + "\n" + done[:40])
    assert [line for _, line in _read_all(p)] == [done]
    p.write_text(done + "\n" + done)  # complete, only the newline not yet written
    assert [line for _, line in _read_all(p)] == [done, done]


def test_broker_id_from_parent_dir(tmp_path: Path) -> None:
    assert broker_id_for(str(tmp_path / "broker-7" / "kafka-request.log"), PATTERN) == "broker-7"
    with pytest.raises(InputError, match="cannot derive a broker id"):
        broker_id_for("kafka-request.log", r"(?P<broker_id>broker-\d+)/")


def test_partial_last_line_of_live_file_waits(tmp_path: Path) -> None:
    d = tmp_path / "b1"
    d.mkdir()
    p = d / "kafka-request.log"
    half = "[2024-05-01 10:00:09,000] DEBUG Completed req"
    p.write_text(_lines(3) + half)
    got = _read_all(p)
    assert [n for n, _ in got] == [1, 2, 3]
    # the half line is not lost: the slice says how much of it waits for the next ingest (issue 29)
    f = describe_file(str(p), PATTERN)
    assert f is not None
    stats = SliceStats()
    assert len(list(read_slice(plan_slices([f], {})[0][0], stats))) == 3
    assert stats.waiting_bytes == len(half) and stats.end_offset == len(_lines(3))
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
    # the same rotated file under a second name (copied, or shipped twice): its identity is the same
    (d / "kafka-request.log.2024-05-01-10.copy").write_text(_lines(4))
    files = [describe_file(str(p), PATTERN) for p in sorted(d.iterdir())]
    copies: list[tuple[str, str]] = []
    slices, dups = plan_slices([f for f in files if f], {}, copies)
    assert dups == 2 and len(slices) == 1 and not slices[0].compressed
    # each skipped copy is named with the file read instead (the ingest prints and summarises them)
    assert sorted(Path(c).name for c, _ in copies) == [
        "kafka-request.log.2024-05-01-10.copy",
        "kafka-request.log.2024-05-01-10.gz",
    ]
    assert {chosen for _, chosen in copies} == {slices[0].path}


def test_three_gzipped_copies_are_one_file_and_two_duplicates(tmp_path: Path) -> None:
    """Issue 28: three gzipped copies of one rotation (different names, same content) are one file, read
    once; the other two are the duplicate copies the CLI reports — with the uncompressed rotation beside
    them, three."""
    d = tmp_path / "b1"
    d.mkdir()
    for name in ("kafka-request.log.2024-05-01-10.gz", "copy-1.log.gz", "copy-2.log.gz"):
        with gzip.open(d / name, "wt") as g:
            g.write(_lines(4))
    files = [f for f in (describe_file(str(p), PATTERN) for p in sorted(d.iterdir())) if f]
    slices, dups = plan_slices(files, {})
    assert (len(files), len(slices), dups) == (3, 1, 2)
    (d / "kafka-request.log.2024-05-01-10").write_text(_lines(4))
    files = [f for f in (describe_file(str(p), PATTERN) for p in sorted(d.iterdir())) if f]
    slices, dups = plan_slices(files, {})
    assert (len(files), len(slices), dups) == (4, 1, 3) and not slices[0].compressed
    # read before: nothing to read, the copies are still counted
    stats = SliceStats()
    list(read_slice(slices[0], stats))
    chosen = next(f for f in files if f.path == slices[0].path)
    done = {
        chosen.file_key: FileProgress(
            stats.end_line, stats.end_offset, chosen.path, chosen.size, chosen.mtime_ms
        )
    }
    assert plan_slices(files, done) == ([], 3)


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


# ---- split_slice: one slice cut into pieces at line starts ----------------------------------------------


def _reference(data: bytes) -> list[tuple[int, str]]:
    """The lines of a complete (rotated) file, numbered, read line by line without read_slice."""
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    return [(n, raw.removesuffix(b"\r").decode("utf-8", errors="replace")) for n, raw in enumerate(lines, 1)]


def _slice_of(path: Path, progress: dict[str, FileProgress] | None = None) -> log_files.FileSlice:
    f = describe_file(str(path), PATTERN)
    assert f is not None
    (s,) = plan_slices([f], progress or {})[0]
    return s


def _check_pieces(s: log_files.FileSlice, pieces: list[log_files.FileSlice], data: bytes) -> None:
    """The pieces tile the slice, each starts at a line start with its exact line number."""
    assert pieces[0].start_offset == s.start_offset and pieces[0].start_line == s.start_line
    assert pieces[-1].end_offset == s.end_offset
    for a, b in itertools.pairwise(pieces):
        assert a.end_offset == b.start_offset
    for p in pieces:
        assert replace(p, start_line=0, start_offset=0, end_offset=0) == replace(
            s, start_line=0, start_offset=0, end_offset=0
        )
        assert p.end_offset is not None and p.start_offset < p.end_offset
        assert p.start_offset == 0 or data[p.start_offset - 1 : p.start_offset] == b"\n"
        assert p.start_line == 1 + data[: p.start_offset].count(b"\n")


def _read_pieces(pieces: list[log_files.FileSlice]) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    for p in pieces:
        out.extend(read_slice(p, SliceStats()))
    return out


@pytest.mark.parametrize("block", [1, 3, 64, log_files.SPLIT_BLOCK])
def test_split_pieces_tile_the_file_with_exact_line_numbers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    monkeypatch.setattr(log_files, "SPLIT_BLOCK", block)
    p = tmp_path / "b1" / "kafka-request.log.1"
    p.parent.mkdir()
    # CRLF lines, empty lines, a line far longer than the pieces, invalid UTF-8, no newline at the end
    data = (
        _lines(7).encode()
        + b"crlf one\r\ncrlf two\r\n\n\n"
        + b"x" * 300
        + b"\n"
        + b"b\xff\n"
        + _lines(5, start=7).encode()
        + b"last line without newline"
    )
    p.write_bytes(data)
    s = _slice_of(p)
    expected = _reference(data)
    assert _read_pieces([s]) == expected
    for max_bytes in (1, 2, 5, 17, 64, 100, 299, 300, 301, 512, len(data) - 1):
        pieces = split_slice(s, max_bytes)
        _check_pieces(s, pieces, data)
        assert len(pieces) > 1
        # about equal pieces of at most about max_bytes: only a cut moved past a long line overshoots
        assert all(q.end_offset - q.start_offset <= max_bytes + 301 for q in pieces if q.end_offset)
        assert _read_pieces(pieces) == expected
    assert split_slice(s, len(data)) == [s]
    # a piece ends where a line ends (no empty piece when a cut falls on the end of the file)
    p.write_bytes(b"aaaa\nbbbb\ncccc\n")
    s = _slice_of(p)
    for max_bytes in range(1, 16):
        pieces = split_slice(s, max_bytes)
        _check_pieces(s, pieces, p.read_bytes())
        assert _read_pieces(pieces) == [(1, "aaaa"), (2, "bbbb"), (3, "cccc")]
    assert [(q.start_line, q.start_offset, q.end_offset) for q in split_slice(s, 5)] == [
        (1, 0, 5),
        (2, 5, 10),
        (3, 10, 15),
    ]
    # the pieces are about equal: 15 bytes with max 14 is two pieces, not 14 + 1
    assert [(q.start_offset, q.end_offset) for q in split_slice(s, 14)] == [(0, 10), (10, 15)]


def test_split_no_newline_after_a_cut_point_means_no_cut(tmp_path: Path) -> None:
    p = tmp_path / "b1" / "kafka-request.log.1"
    p.parent.mkdir()
    p.write_bytes(b"aaaa\n" + b"b" * 100)
    s = _slice_of(p)
    assert split_slice(s, 10) == [s]
    p.write_bytes(b"a" * 50 + b"\n" + b"b" * 50)
    s = _slice_of(p)
    pieces = split_slice(s, 10)
    assert [(q.start_line, q.start_offset, q.end_offset) for q in pieces] == [(1, 0, 51), (2, 51, 101)]
    assert _read_pieces(pieces) == [(1, "a" * 50), (2, "b" * 50)]


def test_split_live_file_leaves_its_incomplete_last_line(tmp_path: Path) -> None:
    p = tmp_path / "b1" / "kafka-request.log"
    p.parent.mkdir()
    data = _lines(40).encode() + b"[2024-05-01 10:00:09,000] DEBUG Completed req"
    p.write_bytes(data)
    s = _slice_of(p)
    assert s.live
    pieces = split_slice(s, 1000)
    _check_pieces(s, pieces, data)
    assert len(pieces) >= 3
    assert _read_pieces(pieces) == _read_pieces([s]) == _reference(data)[:40]
    stats = SliceStats()
    list(read_slice(pieces[-1], stats))
    assert (stats.end_line, stats.end_offset) == (40, len(_lines(40)))


def test_split_resumed_slice_starts_where_the_last_ingest_stopped(tmp_path: Path) -> None:
    p = tmp_path / "b1" / "kafka-request.log"
    p.parent.mkdir()
    p.write_text(_lines(10))
    s = _slice_of(p)
    stats = SliceStats()
    list(read_slice(s, stats))
    f = describe_file(str(p), PATTERN)
    assert f is not None
    progress = {f.file_key: FileProgress(stats.end_line, stats.end_offset, str(p), f.size, f.mtime_ms)}
    with open(p, "a") as out:
        out.write(_lines(30, start=10) + "crlf\r\n")
    data = p.read_bytes()
    tail = _slice_of(p, progress)
    assert (tail.start_line, tail.start_offset) == (11, len(_lines(10)))
    pieces = split_slice(tail, 700)
    assert len(pieces) >= 3
    _check_pieces(tail, pieces, data)
    assert _read_pieces(pieces) == _reference(data)[10:]
    assert _read_pieces(pieces)[-1] == (41, "crlf")


def test_split_leaves_gzip_and_unreadable_slices_whole(tmp_path: Path) -> None:
    d = tmp_path / "b1"
    d.mkdir()
    gz = d / "kafka-request.log.1.gz"
    with gzip.open(gz, "wt") as g:
        g.write(_lines(200))
    s = _slice_of(gz)
    assert s.compressed and split_slice(s, 1) == [s]
    p = d / "kafka-request.log.2"
    p.write_text(_lines(50))
    s = _slice_of(p)
    p.unlink()
    assert split_slice(s, 100) == [s]
