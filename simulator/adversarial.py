"""Adversarial sizes (issue 29 part 3): request logs whose shape, not whose length, strains the pipeline.

    .venv/bin/python -m simulator.adversarial storm|metadata|groups --out DIR [--size N]

Each shape is a Kafka 3.7 cluster's JSON-era ``kafka-request.log`` files (one per broker, every line in
completion order, as a broker writes them), made by the simulator's Java-like consumers against the
coordinator model (``simulator.clients``) and rendered by ``simulator.log_render``:

* :func:`storm` — a member-id-required storm: one group receives ``joiners`` JoinGroup v9 requests with
  no member id, each from a client connection of its own (a fleet of short-lived processes, one address
  each), each answered MEMBER_ID_REQUIRED with the member id the coordinator made for it; most never come
  back (the process is gone), ``returning`` of them join with it, stay a minute and crash. The group's
  own three consumers run beside them, and two ordinary groups on the other brokers.
* :func:`big_metadata` — one consumer whose subscription carries ``metadata_bytes`` of userData (an
  assignor's state, Kafka Streams' task lags), in an otherwise ordinary group of five with a late joiner
  and a graceful close: each of its JoinGroups, and each of the leader's JoinGroup answers, prints the
  whole subscription as base64 (the request logger never truncates); two ordinary groups beside it.
* :func:`many_groups` — ``groups`` groups of 1-3 consumers, all within one hour: each forms (join,
  sync), heartbeats and commits for 20-60 s and closes (LeaveGroup).

Used by ``benchmarks/bench_adversarial.py`` (full sizes) and the integration tests (small sizes).
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rebalance_replay.transforms.coordinator.config import CoordinatorConfig
from simulator.clients import ConsumerSpec, SimConfig, Simulation, simulate
from simulator.log_render import complete_record, render_line

KAFKA_VERSION = "3.7"
T0 = int(datetime(2024, 5, 1, 10, 0, 0, tzinfo=UTC).timestamp() * 1000)
S = 1_000
MIN = 60_000
BROKERS = (("broker-1", "10.0.0.1"), ("broker-2", "10.0.0.2"), ("broker-3", "10.0.0.3"))

#: one record of the log: (completion ms, broker id, line)
Line = tuple[int, str, str]


def _config(
    group: str, consumers: list[ConsumerSpec], until_ms: int, broker: int = 0, partitions: int = 12
) -> SimConfig:
    broker_id, host = BROKERS[broker % len(BROKERS)]
    return SimConfig(
        group_id=group,
        topics={f"{group}-events": partitions},
        consumers=consumers,
        until_ms=until_ms,
        kafka_version=KAFKA_VERSION,
        broker_id=broker_id,
        broker_host=host,
        coordinator=CoordinatorConfig(kafka_version=KAFKA_VERSION),
    )


def _lines(cfg: SimConfig, records: Iterable[dict[str, Any]]) -> Iterator[Line]:
    for rec in records:
        fields = {k: v for k, v in rec.items() if not k.startswith("_")}
        line = render_line(
            complete_record(fields, kafka_version=KAFKA_VERSION), kafka_version=KAFKA_VERSION, tz=UTC
        )
        yield rec["completion_ms"], cfg.broker_id, line


def _ordinary(group: str, start_ms: int, minutes: float, broker: int) -> Iterator[Line]:
    """A steady group of three beside the adversarial one."""
    consumers = [ConsumerSpec(str(i), start_ms + 400 * i) for i in range(3)]
    cfg = _config(group, consumers, start_ms + int(minutes * MIN), broker)
    return _lines(cfg, simulate(cfg))


class _Fleet(Simulation):
    """The consumers from index ``fleet_from`` on are the storm's fleet: each on an address of its own,
    each gone after its MEMBER_ID_REQUIRED answer unless it is one of ``returning``."""

    def __init__(self, cfg: SimConfig, fleet_from: int, returning: set[int], offset: int = 0) -> None:
        super().__init__(cfg)
        self.fleet_from = fleet_from
        self.returning = returning
        for c in self.clients[fleet_from:]:
            k = c.index - fleet_from + offset
            host = f"10.{64 + k // 62_500}.{k // 250 % 250}.{k % 250 + 2}"
            c.connection = f"{cfg.broker_host}:9092-{host}:{32_768 + k * 7 % 28_000}-{1_000 + k}"

    def _on_rejoin(self, c: Any) -> None:
        if c.index >= self.fleet_from and c.index not in self.returning and c.generation < 0:
            c.state = "dead"  # the process that asked is gone: nobody comes back with the member id
            c.epoch += 1
            return
        super()._on_rejoin(c)


def storm(
    joiners: int,
    *,
    group: str = "storm",
    spread_ms: int = 10 * MIN,
    returning: int = 20,
    fleet_offset: int = 0,
) -> Iterator[Line]:
    """A member-id-required storm on ``group`` (broker-1), two ordinary groups beside it; ``fleet_offset``:
    where the fleet's addresses start (two storms in one log: two fleets)."""
    start = T0
    consumers = [ConsumerSpec(str(i), start + 400 * i) for i in range(3)]
    first = start + 20 * S
    back = {3 + k * joiners // returning for k in range(returning)} if returning and joiners else set()
    for k in range(joiners):
        at = first + k * spread_ms // max(joiners, 1)
        index = 3 + k
        crash = at + MIN if index in back else None
        consumers.append(ConsumerSpec(f"f{k}", at, crash_ms=crash))
    until = first + spread_ms + 2 * MIN
    cfg = _config(group, consumers, until, broker=0)
    yield from _lines(cfg, _Fleet(cfg, 3, back, fleet_offset).run())
    yield from _ordinary(f"{group}-neighbour-a", start + 1_500, (until - start) / MIN, broker=1)
    yield from _ordinary(f"{group}-neighbour-b", start + 2_500, (until - start) / MIN, broker=2)


def big_metadata(metadata_bytes: int, *, group: str = "big-metadata", seed: int = 29) -> Iterator[Line]:
    """A group of five whose consumer 1 subscribes with ``metadata_bytes`` of userData (broker-1); a
    sixth joins after 3 minutes, consumer 4 closes after 6; two ordinary groups beside it."""
    rnd = random.Random(seed)
    blob = rnd.randbytes(metadata_bytes)
    start = T0
    consumers = [ConsumerSpec(str(i), start + 400 * i) for i in range(5)]
    consumers[1].user_data = blob
    consumers[4].close_ms = start + 6 * MIN
    consumers.append(ConsumerSpec("5", start + 3 * MIN))
    until = start + 9 * MIN
    cfg = _config(group, consumers, until, broker=0)
    yield from _lines(cfg, simulate(cfg))
    yield from _ordinary(f"{group}-neighbour-a", start + 1_500, 9, broker=1)
    yield from _ordinary(f"{group}-neighbour-b", start + 2_500, 9, broker=2)


def many_groups(groups: int, *, hour_ms: int = 60 * MIN, seed: int = 29) -> Iterator[Line]:
    """``groups`` groups of 1-3 consumers starting within ``hour_ms``, each living 20-60 s."""
    rnd = random.Random(seed)
    for g in range(groups):
        start = T0 + g * (hour_ms - MIN) // max(groups, 1)
        life = rnd.randint(20, 60) * S
        n = rnd.randint(1, 3)
        consumers = [
            ConsumerSpec(str(i), start + rnd.randint(0, 800), close_ms=start + life) for i in range(n)
        ]
        cfg = _config(f"app-{g:05d}", consumers, start + life + 5 * S, broker=g, partitions=6)
        yield from _lines(cfg, simulate(cfg))


def by_broker(lines: Iterable[Line]) -> dict[str, list[str]]:
    """Each broker's lines in the order it writes them (completion order; a group's own order within a
    millisecond)."""
    rows: dict[str, list[tuple[int, int, str]]] = {}
    for n, (ms, broker, line) in enumerate(lines):
        rows.setdefault(broker, []).append((ms, n, line))
    return {broker: [line for _, _, line in sorted(r)] for broker, r in sorted(rows.items())}


def write_logs(out: Path, lines: Iterable[Line]) -> dict[str, int]:
    """The lines as each broker writes them (``<out>/<broker>/kafka-request.log``); returns the number of
    lines per broker."""
    counts = {}
    for broker, written in by_broker(lines).items():
        (out / broker).mkdir(parents=True, exist_ok=True)
        with open(out / broker / "kafka-request.log", "w", encoding="utf-8") as f:
            for line in written:
                f.write(line + "\n")
        counts[broker] = len(written)
    return counts


#: shape → (its generator, called with the size; its full size)
SHAPES: dict[str, tuple[Callable[[int], Iterator[Line]], int]] = {
    "storm": (storm, 100_000),
    "metadata": (big_metadata, 1 << 20),
    "groups": (many_groups, 20_000),
}


def generate(shape: str, out: Path, size: int | None = None) -> dict[str, int]:
    """Write ``shape`` at ``size`` (its full size: 100,000 joiners, 1 MiB, 20,000 groups) under ``out``."""
    make, full = SHAPES[shape]
    return write_logs(out, make(full if size is None else size))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("shape", choices=sorted(SHAPES))
    p.add_argument("--out", required=True)
    p.add_argument("--size", type=int, default=None, help="joiners, metadata bytes or groups")
    args = p.parse_args()
    for broker, n in generate(args.shape, Path(args.out), args.size).items():
        print(f"{broker}: {n} lines")


if __name__ == "__main__":
    main()
