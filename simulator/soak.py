"""Days of three brokers' request logs as log4j leaves them on disk hour after hour: the soak of issue 29
(part 5), run by ``benchmarks/bench_soak.py`` (48 hours) and ``tests/integration/test_soak.py`` (a few).

Each broker coordinates two groups (Kafka 3.7, JSON era): one of dynamic members that crash, close and
are replaced now and then, one of static members restarting within their session timeout; Fetch lines
of another API between them. :func:`folder_at` writes a broker folder as it is at the end of an hour:
``kafka-request.log`` holding that hour, each earlier hour rotated to ``kafka-request.log.<date-hour>``
(gzipped once two hours old, as an operator's cron compresses them).
"""

from __future__ import annotations

import bisect
import gzip
import json
import random
import shutil
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rebalance_replay.transforms.coordinator.config import CoordinatorConfig
from simulator.clients import ConsumerSpec, SimConfig
from simulator.log_render import render_other_api_line, rotated_file_name
from simulator.realkafka.agreement import read_table
from simulator.render import render_group_lines

KAFKA_VERSION = "3.7"
T0 = int(datetime(2024, 6, 1, tzinfo=UTC).timestamp() * 1000)
HOUR = 3_600_000
MIN = 60_000
BROKERS = ("broker-1", "broker-2", "broker-3")


@dataclass(frozen=True)
class SoakLogs:
    hours: int
    #: per broker, every line with its completion time, in completion order
    lines: dict[str, list[tuple[int, str]]]

    def count(self) -> int:
        return sum(len(v) for v in self.lines.values())


def _group(
    name: str, partitions: int, broker: str, host: str, until: int, consumers: list[ConsumerSpec]
) -> SimConfig:
    """A group coordinated by ``broker``, consuming its own topic ``name``."""
    return SimConfig(
        group_id=name,
        topics={name: partitions},
        kafka_version=KAFKA_VERSION,
        broker_id=broker,
        broker_host=host,
        coordinator=CoordinatorConfig(kafka_version=KAFKA_VERSION),
        until_ms=until,
        consumers=consumers,
    )


def _dynamic_group(broker: str, host: str, hours: int, rnd: random.Random) -> SimConfig:
    until = T0 + hours * HOUR
    consumers = [
        ConsumerSpec(str(i), T0 + 2_000 + 700 * i, heartbeat_interval_ms=10_000, commit_interval_ms=30_000)
        for i in range(3)
    ]
    n = len(consumers)
    for h in range(2, hours, 5):  # every five hours something happens to one of the members
        at = T0 + h * HOUR + rnd.randrange(5, 50) * MIN
        kind = rnd.choice(("crash", "close"))
        victim = consumers[rnd.randrange(len(consumers))]
        if victim.crash_ms is not None or victim.close_ms is not None or at >= until - 10 * MIN:
            continue
        if kind == "crash":
            victim.crash_ms = at
            victim.restart_ms = at + 90_000  # a new process once the pod is rescheduled
        else:
            victim.close_ms = at
            consumers.append(
                ConsumerSpec(str(n), at + 30_000, heartbeat_interval_ms=10_000, commit_interval_ms=30_000)
            )
            n += 1
    return _group(f"{broker}-orders", 6, broker, host, until, consumers)


def _static_group(broker: str, host: str, hours: int) -> SimConfig:
    until = T0 + hours * HOUR
    consumers = [
        ConsumerSpec(
            str(i),
            T0 + 5_000 + 900 * i,
            group_instance_id=f"{broker}-ledger-{i}",
            heartbeat_interval_ms=10_000,
            commit_interval_ms=30_000,
            # one restart within the session timeout every few hours: replaced without a rebalance
            crash_ms=T0 + (1 + 3 * i) * HOUR + 20 * MIN if (1 + 3 * i) < hours else None,
            restart_ms=T0 + (1 + 3 * i) * HOUR + 20 * MIN + 15_000 if (1 + 3 * i) < hours else None,
        )
        for i in range(2)
    ]
    return _group(f"{broker}-ledger", 4, broker, host, until, consumers)


def generate(hours: int = 48, seed: int = 29) -> SoakLogs:
    rnd = random.Random(seed)
    configs = []
    hosts = {b: f"10.0.0.{i + 1}" for i, b in enumerate(BROKERS)}
    for broker in BROKERS:
        configs.append(_dynamic_group(broker, hosts[broker], hours, rnd))
        configs.append(_static_group(broker, hosts[broker], hours))
    rendered = render_group_lines(configs, KAFKA_VERSION)
    lines: dict[str, list[tuple[int, str]]] = {}
    for broker in BROKERS:
        own = [(c, line) for c, _, line in rendered.get(broker, [])]
        # a follower's Fetch every 20 s: the other APIs a request log is mostly made of
        for t in range(T0 + 10_000, T0 + hours * HOUR, 20_000):
            own.append((t, _fetch_line(hosts[broker], t, rnd)))
        own.sort(key=lambda x: x[0])
        lines[broker] = own
    return SoakLogs(hours, lines)


def _fetch_line(host: str, t: int, rnd: random.Random) -> str:
    return render_other_api_line(
        "FETCH",
        completion_time=datetime.fromtimestamp(t / 1000, UTC),
        tz=UTC,
        kafka_version=KAFKA_VERSION,
        api_version=16,
        correlation_id=rnd.randint(1, 99999),
        client_id="broker-follower",
        connection=f"{host}:9092-10.0.9.{rnd.randint(2, 9)}:{rnd.randint(40000, 60000)}-3",
        total_time_ms=round(rnd.uniform(0.2, 500.0), 3),
    )


def rotated_name(hour: int) -> str:
    return rotated_file_name(T0 + hour * HOUR)


def folder_at(logs: SoakLogs, out: Path, hour: int) -> int:
    """``out`` as the brokers leave it at the end of hour ``hour`` (0-based): the live file holds that
    hour, the earlier ones are rotated (gzipped from two hours back). Written in place, as log4j does:
    the live file renamed at the hour, a new one started. Returns the lines the hour added."""
    written = 0
    for broker, lines in logs.lines.items():
        d = out / broker
        d.mkdir(parents=True, exist_ok=True)
        live = d / "kafka-request.log"
        if hour > 0 and live.exists():
            live.rename(d / rotated_name(hour - 1))
        old = d / rotated_name(hour - 2)
        if hour > 1 and old.exists():
            with open(old, "rb") as fi, gzip.GzipFile(str(old) + ".gz", "wb", mtime=0) as fo:
                shutil.copyfileobj(fi, fo)
            old.unlink()
        # the lines are in completion order: the hour's are one slice
        start = T0 + hour * HOUR
        hour_lines = lines[bisect.bisect_left(lines, (start,)) : bisect.bisect_left(lines, (start + HOUR,))]
        live.write_text("".join(line + "\n" for _, line in hour_lines))
        written += len(hour_lines)
    return written


# ---- the soak: hourly scheduled runs, then one batch run ---------------------------------------------


#: the soak's settings: no Great Expectations (its fixed cost is issue 30's, not the warehouse's age)
SETTINGS = ("--set", "report.great_expectations=false")
#: tables compared with the batch run, and the columns that say when a run happened, not what it found
EQUAL = ("requests", "quarantine", "predictions", "transitions")
OPEN_AT_END = {"rebalances": ("outcome", "unfinished"), "member_sessions": ("end_reason", "open")}
RUN_TIME_COLUMNS = ("ingested_at",)


def _same_file(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``source_file`` is the name a file had when it was read: the hourly run read a line in the live
    ``kafka-request.log``, the batch in its rotation ``kafka-request.log.<hour>(.gz)``: compared by broker
    folder (the line number and every other column are compared as they are)."""
    return [
        {**r, "source_file": Path(r["source_file"]).parent.name} if r.get("source_file") else r for r in rows
    ]


@dataclass
class SoakResult:
    seconds: list[float] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    lines_written: int = 0


def _summary(wh: Path) -> dict[str, Any]:
    return dict(json.loads((wh / "summary.json").read_text()))


def _identity(summary: dict[str, Any]) -> list[str]:
    """The accounting identity on this run's counts and the warehouse total."""
    ing = summary.get("ingest") or {}
    out = []
    for name, counts in (("this run", ing.get("this_run") or {}), ("warehouse total", summary)):
        parts = sum(
            int(counts.get(k, 0)) for k in ("requests", "quarantined", "other_api_lines", "other_lines")
        )
        if parts != counts.get("lines_read"):
            out.append(f"{name}: lines_read {counts.get('lines_read')} != the parts' {parts}")
    return out


def canonical(rows: Iterable[dict[str, Any]], drop: tuple[str, ...] = ()) -> list[str]:
    return sorted(
        json.dumps({k: v for k, v in r.items() if k not in drop}, sort_keys=True, default=str) for r in rows
    )


def run_soak(logs: SoakLogs, work: Path, say: Callable[[str], None] = print) -> SoakResult:
    """Every hour: the folder as the brokers leave it, then ``run --incremental`` (``--final`` the last);
    then one batch ``run`` over the same files. Returns each run's time and every problem found."""
    from rebalance_replay.jobs.cli import main as cli

    inputs, wh = work / "logs", work / "incremental"
    for p in (inputs, wh):
        shutil.rmtree(p, ignore_errors=True)
    res = SoakResult()
    for hour in range(logs.hours):
        res.lines_written += folder_at(logs, inputs, hour)
        final = ["--final"] if hour == logs.hours - 1 else []
        t = time.monotonic()
        rc = cli(["run", "--input", str(inputs), "--warehouse", str(wh), "--incremental", *final, *SETTINGS])
        res.seconds.append(time.monotonic() - t)
        summary = _summary(wh)
        problems = [f"hour {hour}: {p}" for p in _identity(summary)]
        if rc != 0:
            problems.append(f"hour {hour}: run exited {rc}")
        if summary.get("lines_read") != res.lines_written:
            problems.append(
                f"hour {hour}: {summary.get('lines_read')} lines read, {res.lines_written} written"
            )
        res.problems += problems
        say(f"soak: hour {hour + 1}/{logs.hours}: {res.seconds[-1]:.1f} s, {summary.get('lines_read')} lines")
    batch = work / "batch"
    shutil.rmtree(batch, ignore_errors=True)
    if cli(["run", "--input", str(inputs), "--warehouse", str(batch), *SETTINGS]) != 0:
        res.problems.append("the batch run failed")
    else:
        res.problems += compare_with_batch(wh, batch)
    return res


def compare_with_batch(incremental: Path, batch: Path) -> list[str]:
    """Row for row: the incremental warehouse against one batch run over everything."""
    out = []
    for t in EQUAL:
        a = canonical(_same_file(read_table(incremental / t)), drop=RUN_TIME_COLUMNS)
        b = canonical(_same_file(read_table(batch / t)), drop=RUN_TIME_COLUMNS)
        if a != b:
            out.append(f"{t}: {len(a)} incremental rows, {len(b)} batch rows, {len(set(a) ^ set(b))} differ")
        elif not a and t != "quarantine":
            out.append(f"{t}: empty")
    for t, (column, still_open) in OPEN_AT_END.items():
        a = canonical(_same_file(read_table(incremental / t)))
        b = canonical(_same_file([r for r in read_table(batch / t) if r[column] != still_open]))
        if a != b:
            out.append(
                f"{t}: {len(a)} incremental rows, {len(b)} closed batch rows, {len(set(a) ^ set(b))} differ"
            )
    return out
