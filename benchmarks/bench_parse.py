"""Throughput of ``rebalance_replay.transforms.request_log.parse_line`` (lines/s, single core), per line kind.

Run: ``.venv/bin/python benchmarks/bench_parse.py [seconds-per-case]``. Not a test.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rebalance_replay.transforms.consumer_protocol import encode_assignment, encode_subscription
from rebalance_replay.transforms.request_log import LineKind, parse_line
from simulator.log_render import (
    complete_record,
    render_line,
    render_other_api_line,
    render_other_logger_line,
)

TZ = ZoneInfo("Europe/Berlin")
T0 = datetime(2024, 5, 1, 8, 0, 3, 456000, tzinfo=UTC)
BASE = {"completion_time": T0, "total_time_ms": 3005.123, "local_time_ms": 1.2, "remote_time_ms": 3000.0}

HEARTBEAT = {
    **BASE,
    "api_name": "HEARTBEAT",
    "api_version": 4,
    "group_id": "orders-consumer",
    "generation_id": 17,
    "member_id": "consumer-orders-consumer-1-6f1c2d3e-0b7a-4f0e-9a1b-2c3d4e5f6a7b",
    "error_code": 0,
}
JOIN_LEADER = {
    **BASE,
    "api_name": "JOIN_GROUP",
    "api_version": 7,
    "group_id": "orders-consumer",
    "session_timeout_ms": 45000,
    "rebalance_timeout_ms": 300000,
    "member_id": "consumer-1-aaaa",
    "protocol_type": "consumer",
    "protocols": [{"name": "range", "metadata": encode_subscription(["orders", "payments"])}],
    "error_code": 0,
    "response_generation_id": 18,
    "response_protocol_type": "consumer",
    "response_protocol_name": "range",
    "response_leader": "consumer-1-aaaa",
    "response_member_id": "consumer-1-aaaa",
    "response_members": [
        {"member_id": f"consumer-{i}-aaaa", "metadata": encode_subscription(["orders", "payments"])}
        for i in range(10)
    ],
}
SYNC_LEADER = {
    **BASE,
    "api_name": "SYNC_GROUP",
    "api_version": 5,
    "group_id": "orders-consumer",
    "generation_id": 18,
    "member_id": "consumer-1-aaaa",
    "protocol_type": "consumer",
    "protocol_name": "range",
    "assignments": [
        {
            "member_id": f"consumer-{i}-aaaa",
            "assignment": encode_assignment([("orders", [i]), ("payments", [i])]),
        }
        for i in range(10)
    ],
    "error_code": 0,
    "response_protocol_type": "consumer",
    "response_protocol_name": "range",
    "response_assignment": encode_assignment([("orders", [0]), ("payments", [0])]),
}
OFFSET_COMMIT = {
    **BASE,
    "api_name": "OFFSET_COMMIT",
    "api_version": 8,
    "group_id": "orders-consumer",
    "generation_id": 18,
    "member_id": "consumer-1-aaaa",
    "commit_partitions": [
        {"topic": "orders", "partition": p, "committed_offset": 10_000 + p} for p in range(12)
    ],
    "response_commit_partitions": [{"topic": "orders", "partition": p, "error_code": 0} for p in range(12)],
}


def _line(fields: dict[str, object], kafka_version: str) -> str:
    return render_line(
        complete_record(fields, kafka_version=kafka_version), kafka_version=kafka_version, tz=TZ
    )


def cases() -> dict[str, list[str]]:
    text_join = {**JOIN_LEADER, "api_version": 5}
    text_sync = {**SYNC_LEADER, "api_version": 3}
    return {
        "json heartbeat": [_line(HEARTBEAT, "3.6")],
        "json join (leader, 10 members)": [_line(JOIN_LEADER, "3.6")],
        "json sync (leader, 10 assignments)": [_line(SYNC_LEADER, "3.6")],
        "json offset commit (12 partitions)": [_line(OFFSET_COMMIT, "3.6")],
        "json FETCH (other API)": [
            render_other_api_line("FETCH", completion_time=T0, tz=TZ, kafka_version="3.6", api_version=13)
        ],
        "text heartbeat (2.4)": [_line(HEARTBEAT, "2.4")],
        "text join (2.3, leader)": [_line(text_join, "2.3")],
        "text sync (2.3, leader)": [_line(text_sync, "2.3")],
        "text offset commit (2.4)": [_line(OFFSET_COMMIT, "2.4")],
        "text FETCH (other API)": [
            render_other_api_line("FETCH", completion_time=T0, tz=TZ, kafka_version="2.4", api_version=11)
        ],
        "other logger": [render_other_logger_line("Processor 1 received request: ...", when=T0, tz=TZ)],
    }


def bench(lines: list[str], seconds: float, fn: Callable[[str], object], rounds: int = 5) -> float:
    """Best lines/s over ``rounds`` rounds, in process CPU time (robust to a busy machine)."""
    best = 0.0
    for _ in range(rounds):
        n = 0
        start = time.process_time()
        deadline = time.perf_counter() + seconds / rounds
        while time.perf_counter() < deadline:
            for line in lines:
                fn(line)
            n += len(lines)
        cpu = time.process_time() - start
        if cpu > 0:
            best = max(best, n / cpu)
    return best


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
    print(f"{'case':40} {'kind':10} {'bytes':>6} {'lines/s':>10}")
    for name, lines in cases().items():
        kind = parse_line(lines[0], TZ).kind
        assert kind is not LineKind.QUARANTINE, (name, parse_line(lines[0], TZ).reason)
        rate = bench(lines * 50, seconds, lambda s: parse_line(s, TZ))
        print(f"{name:40} {kind.value:10} {len(lines[0]):6d} {rate:10,.0f}")


if __name__ == "__main__":
    main()
