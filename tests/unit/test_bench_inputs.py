"""The benchmarks' generated logs are written as a broker writes its file: in time order. A file written
group after group steps its clock back at every group, and ingest quarantines such lines (issue 29's clock
guard): a benchmark on it measured the quarantine, not the pipeline (stop 40 found 92% of a 20,000-group
log quarantined)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.bench_replay import broker_lines, generate, line_ms
from rebalance_replay.transforms.request_log import ClockGuard


def test_each_broker_file_is_in_time_order_and_nothing_is_a_clock_step(tmp_path: Path) -> None:
    n = generate(tmp_path, 3000, 9, 2)
    assert n > 2500
    for broker in ("broker-1", "broker-2", "broker-3"):
        times = [line_ms(line) for line in (tmp_path / broker / "kafka-request.log").read_text().splitlines()]
        assert times == sorted(times) and len(set(times)) > 100, broker
        assert ClockGuard().stepped(list(enumerate(times, 1))) == {}, broker
    # every group's lines, each group's own order kept
    merged = [line for lines in broker_lines(3000, 9, 2).values() for _, line in lines]
    groups = {line.split('"clientId":"consumer-')[1][:11] for line in merged}
    assert len(merged) == n and groups == {f"bench-{g:05d}" for g in range(9)}
