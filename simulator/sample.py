"""Regenerate the bundled sample logs (``samples/logs``) used by ``make demo``.

    .venv/bin/python -m simulator.sample [--out samples/logs]

A two-broker Kafka 3.7 cluster (JSON-era request logs) on 2024-05-01, coordinator of three groups:

* ``orders-processor`` (broker-1): three consumers start within a second (the initial rebalance delay
  stretches the first join), a fourth joins later (new-member rebalance), one closes (LeaveGroup with
  the client's reason), one crashes (session expiry after 45 s) and a replacement starts.
* ``payments-ledger`` (broker-2): two static members (group.instance.id); one restarts within its
  session timeout (static replacement, no rebalance) and one is stopped for longer than it (eviction).
* ``audit-trail`` (broker-2): a single consumer, steady.

Besides the group traffic the files hold what real request logs hold: Fetch/Produce/Metadata lines of
other APIs, TRACE lines of another logger, and two damaged lines (truncated by a log shipper) that
ingest quarantines. broker-1's log is rotated hourly: the older hour is gzipped.
"""

from __future__ import annotations

import argparse
import gzip
import random
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rebalance_replay.transforms.coordinator.config import CoordinatorConfig
from simulator.clients import ConsumerSpec, SimConfig, simulate
from simulator.log_render import (
    complete_record,
    render_line,
    render_other_api_line,
    render_other_logger_line,
)

KAFKA_VERSION = "3.7"
T0 = int(datetime(2024, 5, 1, 9, 58, 0, tzinfo=UTC).timestamp() * 1000)
MIN = 60_000


def scenarios() -> list[SimConfig]:
    coord = CoordinatorConfig(kafka_version=KAFKA_VERSION)
    orders = SimConfig(
        group_id="orders-processor",
        topics={"orders": 12},
        kafka_version=KAFKA_VERSION,
        broker_id="broker-1",
        broker_host="10.0.0.1",
        coordinator=coord,
        until_ms=T0 + 9 * MIN,
        consumers=[
            ConsumerSpec("1", T0 + 1_000),
            ConsumerSpec("2", T0 + 1_400),
            ConsumerSpec("3", T0 + 1_900, crash_ms=T0 + 4 * MIN),
            ConsumerSpec("4", T0 + 2 * MIN, close_ms=T0 + 6 * MIN),
            ConsumerSpec("5", T0 + 5 * MIN + 30_000),
        ],
    )
    payments = SimConfig(
        group_id="payments-ledger",
        topics={"payments": 6},
        kafka_version=KAFKA_VERSION,
        broker_id="broker-2",
        broker_host="10.0.0.2",
        coordinator=coord,
        until_ms=T0 + 9 * MIN,
        consumers=[
            ConsumerSpec(
                "a",
                T0 + 3_000,
                group_instance_id="ledger-0",
                session_timeout_ms=30_000,
                crash_ms=T0 + 3 * MIN,
                restart_ms=T0 + 3 * MIN + 12_000,
            ),
            ConsumerSpec(
                "b",
                T0 + 3_500,
                group_instance_id="ledger-1",
                session_timeout_ms=30_000,
                crash_ms=T0 + 5 * MIN,
            ),
        ],
    )
    audit = SimConfig(
        group_id="audit-trail",
        topics={"audit": 3},
        kafka_version=KAFKA_VERSION,
        broker_id="broker-2",
        broker_host="10.0.0.2",
        coordinator=coord,
        until_ms=T0 + 9 * MIN,
        consumers=[ConsumerSpec("x", T0 + 20_000)],
    )
    return [orders, payments, audit]


def _other_api_lines(
    broker_host: str, start_ms: int, end_ms: int, rnd: random.Random
) -> list[tuple[int, str]]:
    out = []
    t = start_ms
    while t < end_ms:
        t += rnd.randint(700, 2500)
        api = rnd.choice(["FETCH", "FETCH", "PRODUCE", "METADATA", "OFFSET_FETCH", "API_VERSIONS"])
        version = {"FETCH": 16, "PRODUCE": 10, "METADATA": 12, "OFFSET_FETCH": 9, "API_VERSIONS": 3}[api]
        when = datetime.fromtimestamp(t / 1000, UTC)
        line = render_other_api_line(
            api,
            completion_time=when,
            tz=UTC,
            kafka_version=KAFKA_VERSION,
            api_version=version,
            correlation_id=rnd.randint(1, 99999),
            client_id=f"producer-{rnd.randint(1, 3)}",
            connection=f"{broker_host}:9092-10.2.0.{rnd.randint(2, 40)}:{rnd.randint(40000, 60000)}-7",
            total_time_ms=round(rnd.uniform(0.2, 500.0), 3),
        )
        out.append((t, line))
        if rnd.random() < 0.05:
            out.append(
                (
                    t,
                    render_other_logger_line(
                        f"Processor 3 received request: RequestHeader(apiKey={api}, apiVersion={version})",
                        when=when,
                        tz=UTC,
                    ),
                )
            )
    return out


def generate(out: Path, seed: int = 7) -> dict[str, int]:
    rnd = random.Random(seed)
    by_broker: dict[str, list[tuple[int, str]]] = {}
    hosts: dict[str, str] = {}
    for cfg in scenarios():
        hosts[cfg.broker_id] = cfg.broker_host
        for rec in simulate(cfg):
            fields: dict[str, Any] = {k: v for k, v in rec.items() if not k.startswith("_")}
            line = render_line(
                complete_record(fields, kafka_version=KAFKA_VERSION), kafka_version=KAFKA_VERSION, tz=UTC
            )
            by_broker.setdefault(cfg.broker_id, []).append((rec["completion_ms"], line))
    for broker, host in hosts.items():
        by_broker[broker].extend(_other_api_lines(host, T0, T0 + 9 * MIN, rnd))
    # two lines damaged on the way (a log shipper cut them short): quarantined, never lost
    for broker in sorted(by_broker):
        lines = sorted(by_broker[broker], key=lambda x: x[0])
        for k in (len(lines) // 3, 2 * len(lines) // 3):
            t, line = lines[k]
            if "Completed request" in line and "HEARTBEAT" in line:
                lines[k] = (t, line[: len(line) // 2])
        by_broker[broker] = lines
    if out.exists():
        shutil.rmtree(out)
    counts = {}
    for broker, lines in sorted(by_broker.items()):
        d = out / broker
        d.mkdir(parents=True)
        hour_cut = T0 + 2 * MIN  # 10:00: the log rolls hourly
        older = [line for t, line in lines if t < hour_cut]
        newer = [line for t, line in lines if t >= hour_cut]
        if broker == "broker-1":
            data = "".join(line + "\n" for line in older).encode("utf-8")
            # mtime=0: the same sample bytes every time it is regenerated
            (d / "kafka-request.log.2024-05-01-09.gz").write_bytes(gzip.compress(data, mtime=0))
        else:
            (d / "kafka-request.log.2024-05-01-09").write_text("".join(line + "\n" for line in older))
        (d / "kafka-request.log").write_text("".join(line + "\n" for line in newer))
        counts[broker] = len(lines)
    return counts


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=str(Path(__file__).resolve().parent.parent / "samples" / "logs"))
    args = p.parse_args()
    counts = generate(Path(args.out))
    for broker, n in counts.items():
        print(f"{broker}: {n} lines")


if __name__ == "__main__":
    main()
