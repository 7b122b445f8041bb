"""The whole pipeline, stage by stage, side by side on ONE generated log, in ONE run.

    .venv/bin/python benchmarks/bench_pipeline.py [--lines 1000000] [--groups 200] [--members 5]
        [--mixed [N]] [--stages bare bare_filtered duckdb ingest model fast stateful validate run]
        [--repeat N] [--warm] [--before DIR] [--in-process] [--set KEY=VALUE ...]
        [--engines delta-rs delta-spark]

``--engines``: every stage that writes or reads the tables runs once per storage engine, side by side in
the same run (each engine its own warehouse, ``<data>/warehouse-<engine>``); rows are named
``ingest (delta-rs)``, ``ingest (delta-spark)``, ….

A heartbeat-dominated JSON-era log (the simulator's consumers heartbeat every 3 s and commit every 5 s;
the generator of ``bench_replay.py``) of about ``--lines`` lines over ``--groups`` groups is generated once
into ``benchmarks/.data/pipeline-l<lines>-g<groups>-m<members>/logs`` (reused by later runs).

``--mixed N`` (N = 9 when given without a value; 0 or absent: the log above): a log shaped like a
production ``kafka-request.log``, most of whose lines are other APIs': about ``--lines`` lines, one in
N + 1 a group line (the generator's, each broker file's merged in time order) and after each group line N
other-API lines (Kafka 3.7 JSON shapes as in ``tests/data/real-kafka/3.7``: Fetch from consumers and from
follower brokers — ``replicaState.replicaId`` ≥ 0 —, Produce, Metadata, ApiVersions; their times between
the group line's and the next one's; seeded, so the same every time), in
``benchmarks/.data/pipeline-l<lines>-g<groups>-m<members>-x<N>/logs``.

Then, in order:

- ``bare``: the baseline: ``spark.read.text`` + ``from_json`` (request header, request, response, timings)
  + a parquet write of the same files — what Spark itself costs;
- ``bare_filtered``: the baseline of a mixed log: ``spark.read.text`` → the API name (``regexp_extract`` of
  ``requestApiKeyName``) → only the group APIs' lines (the APIs the product keeps) → ``from_json`` (the
  bare pass's schema) → a parquet write;
- ``duckdb``: DuckDB (``threads=2``; a dev dependency) on the same files: read them as lines
  (``read_csv``, one column), keep the group APIs' lines by the same API name, parse their JSON
  (``json_transform``, the bare pass's schema) and write parquet;
- ``ingest_python`` / ``ingest_spark_writer``: the ingest with the routine lines through ``parse_line``
  too (``input.columnar_json=false``) / with the request rows handed to Spark's parquet writer (what the
  delta-spark engine does) instead of written by the tasks themselves: the befores, in the same run;
- ``ingest``: ``rebalance_replay.jobs.ingest.ingest`` into a fresh warehouse (``<data>/warehouse``);
- ``model``: the replay baseline: the same coordinator model (``GroupReplayer``), one Python process, the
  classic-group rows of that warehouse in memory (read before the clock starts), every request through
  the model one by one;
- ``model_columns``: the same process, each group's rows as an Arrow slice with bulk validation of routine
  traffic (``replay.bulk``) — what a Spark task does per group, without Spark (for reference: the ratios
  are against ``model``);
- ``fast`` / ``stateful``: ``rebalance_replay.jobs.replay.replay`` on that warehouse with ``path=fast`` /
``path=stateful``;
- ``validate``: ``rebalance_replay.jobs.validate.validate`` on it (after the stateful replay);
- ``audit``: ``rebalance_replay.jobs.audit.audit`` on it (every rule; no Great Expectations);
- ``run``: the whole CLI ``run`` (ingest → replay → validate …) into a second fresh warehouse, JVM start
  included.

Each stage runs in its own subprocess (``--stage NAME --data DIR``: callable on its own against the same
warehouse), timed inside the subprocess around the stage only (the JVM start is not counted, except for
``run``; a Spark stage's first job — Python workers, JIT — is, unless ``--warm``: then a trivial job with
Python workers runs in the stage's session before its clock starts); the parent samples the RSS of the
subprocess tree from ``/proc`` every 0.2 s: the driver JVM, the driver's Python, and the Python workers
(peak of the largest one, and of their sum). ``--in-process`` runs every stage in this process with one
SparkSession instead (no per-stage memory figures). ``--repeat N`` runs the stages N times, in rotation
(so that a busy spell on a shared machine falls on all of them), and shows each stage's median time, its
runs' times in the note. ``--before DIR``: each stage that runs the product's code (all but the baselines
``bare``, ``bare_filtered``, ``duckdb``) runs twice in each rotation, first with the code of the checkout
at DIR (e.g. ``git archive <commit> | tar -x -C DIR``, this script copied into ``DIR/benchmarks``, the
data dir linked), then with this one's: rows ``<stage> (before)`` and ``<stage>``, on the same log, under
the same load (a replay stage reads the warehouse the last ingest wrote).

Ratios, on every row: the stage's time ÷ the baseline's (``bare``; ``bare_filtered`` with ``--mixed``) and
÷ ``duckdb``'s (targets: ingest ≤ 1.5× bare; on the mixed log, ingest ≤ 2.5× duckdb); replay stages also
as events/s ÷ the single-process model's events/s (targets: fast ≥ 1.6, stateful ≥ 1.0).
Not a test: the numbers depend on the machine; results go into ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

STAGES = (
    "bare",
    "bare_filtered",
    "duckdb",
    "ingest_python",
    "ingest_spark_writer",
    "ingest",
    "model",
    "model_columns",
    "fast",
    "stateful",
    "validate",
    "audit",
    "run",
)
#: the baselines: no product code (``--before`` does not run them twice)
BASELINES = ("bare", "bare_filtered", "duckdb")
#: stages that neither write nor read a Delta table
ENGINE_FREE = ("bare", "bare_filtered", "duckdb", "model", "model_columns")
LINE_STAGES = ("bare", "bare_filtered", "duckdb", "ingest_python", "ingest_spark_writer", "ingest", "run")
# the bare pass's schema: what a hand-written Spark job over these logs would declare
BARE_SCHEMA = (
    "isForwarded boolean, "
    "requestHeader struct<requestApiKey:int,requestApiVersion:int,correlationId:int,clientId:string,"
    "requestApiKeyName:string>, "
    "request struct<groupId:string,generationId:int,generationIdOrMemberEpoch:int,memberId:string,"
    "groupInstanceId:string,topics:array<struct<name:string,partitions:array<struct<partitionIndex:int,"
    "committedOffset:bigint,committedLeaderEpoch:int,committedMetadata:string>>>>>, "
    "response struct<throttleTimeMs:int,errorCode:int,topics:array<struct<name:string,"
    "partitions:array<struct<partitionIndex:int,errorCode:int>>>>>, "
    "connection string, totalTimeMs double, requestQueueTimeMs double, localTimeMs double, "
    "remoteTimeMs double, throttleTimeMs bigint, responseQueueTimeMs double, sendTimeMs double, "
    "securityProtocol string, principal string, listener string, "
    "clientInformation struct<softwareName:string,softwareVersion:string>"
)


@dataclass
class StageResult:
    stage: str
    seconds: float
    units: int
    unit: str  # "lines" or "events"
    note: str = ""
    rss: dict[str, int] = field(default_factory=dict)  # bytes

    @property
    def rate(self) -> float:
        return self.units / self.seconds if self.seconds > 0 else float("nan")


# ----------------------------------------------------------------------------------------------------
# Data
# ----------------------------------------------------------------------------------------------------


def data_dir(lines: int, groups: int, members: int, mixed: int = 0) -> Path:
    suffix = f"-x{mixed}" if mixed else ""
    return ROOT / "benchmarks" / ".data" / f"pipeline-l{lines}-g{groups}-m{members}{suffix}"


def ensure_log(data: Path, lines: int, groups: int, members: int, mixed: int = 0) -> tuple[int, int]:
    """Generate the log once (``mixed``: with that many other-API lines per group line, see
    :func:`generate_mixed`); returns (its lines, its group lines)."""
    marker = data / "log-ok.json"
    if marker.exists():
        d = json.loads(marker.read_text())
        return int(d["lines"]), int(d.get("group_lines", d["lines"]))
    from benchmarks.bench_replay import generate

    shutil.rmtree(data, ignore_errors=True)
    t = time.perf_counter()
    if mixed:
        n, n_group = generate_mixed(data / "logs", lines, groups, members, mixed)
    else:
        n = n_group = generate(data / "logs", lines, groups, members)
    print(f"generated {n:,} lines ({n_group:,} group lines) in {time.perf_counter() - t:.1f}s", flush=True)
    data.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps({"lines": n, "group_lines": n_group, "mixed": mixed}))
    return n, n_group


# ----------------------------------------------------------------------------------------------------
# The mixed-API log (--mixed N): the group lines of the log above with N other-API lines per group line
# ----------------------------------------------------------------------------------------------------

#: the APIs the product keeps (``ApiKey``): what ``bare_filtered`` and ``duckdb`` keep of a mixed log
GROUP_API_NAMES = (
    "OFFSET_COMMIT",
    "FIND_COORDINATOR",
    "JOIN_GROUP",
    "HEARTBEAT",
    "LEAVE_GROUP",
    "SYNC_GROUP",
    "DESCRIBE_GROUPS",
    "CONSUMER_GROUP_HEARTBEAT",
)
#: the other-API lines of a mixed log, by share: what a broker's request log is mostly made of
MIXED_SHARES = (
    ("fetch_consumer", 0.38),
    ("fetch_follower", 0.30),
    ("produce", 0.24),
    ("metadata", 0.06),
    ("api_versions", 0.02),
)
MIXED_SEED = 30  # issue 30
_DATA_TOPICS = ("orders", "payments", "clicks", "inventory", "audit-events", "sessions", "shipments")
_CLIENT_INFO_JAVA = '{"softwareName":"apache-kafka-java","softwareVersion":"3.7.1"}'
_CLIENT_INFO_UNKNOWN = '{"softwareName":"unknown","softwareVersion":"unknown"}'
# the API_VERSIONS answer of a 3.7 broker's data-plane listener (a real one: tests/data/real-kafka/3.7)
_API_VERSIONS_KEYS = (
    (0, 0, 10), (1, 0, 16), (2, 0, 8), (3, 0, 12), (8, 0, 9), (9, 0, 9), (10, 0, 4), (11, 0, 9),
    (12, 0, 4), (13, 0, 5), (14, 0, 5), (15, 0, 5), (16, 0, 4), (17, 0, 1), (18, 0, 3), (19, 0, 7),
    (20, 0, 6), (21, 0, 2), (22, 0, 4), (23, 0, 4), (24, 0, 4), (25, 0, 3), (26, 0, 3), (27, 0, 1),
    (28, 0, 3), (29, 0, 3), (30, 0, 3), (31, 0, 3), (32, 0, 4), (33, 0, 2), (34, 0, 2), (35, 0, 4),
    (36, 0, 2), (37, 0, 3), (38, 0, 3), (39, 0, 2), (40, 0, 2), (41, 0, 3), (42, 0, 2), (43, 0, 2),
    (44, 0, 1), (45, 0, 0), (46, 0, 0), (47, 0, 0), (48, 0, 1), (49, 0, 1), (50, 0, 0), (51, 0, 0),
    (55, 0, 1), (57, 0, 1), (60, 0, 1), (61, 0, 0), (64, 0, 0), (65, 0, 0), (66, 0, 0), (68, 0, 0),
    (74, 0, 0),
)  # fmt: skip


class MixedLines:
    """Other-API ``Completed request`` lines in the JSON shapes a Kafka 3.7 broker writes (the shapes of
    the recordings in ``tests/data/real-kafka/3.7``: Fetch v16 from consumers and from follower brokers —
    ``replicaState.replicaId`` ≥ 0 —, Produce v9, Metadata v12, ApiVersions v3), seeded."""

    def __init__(self, broker: str, seed: int) -> None:
        import random

        self.rng = random.Random(f"{seed}:{broker}")
        self.broker = broker
        self.node = int(broker.rsplit("-", 1)[1])
        self.corr = 0
        rng = self.rng
        # topic ids are 22-character URL-safe base64 uuids
        alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
        self.topic_ids = {t: "".join(rng.choice(alphabet) for _ in range(22)) for t in _DATA_TOPICS}
        self.offsets: dict[tuple[str, int], int] = {}
        kinds, weights = zip(*MIXED_SHARES, strict=True)
        self.kinds, self.weights = list(kinds), list(weights)
        self.api_versions = ",".join(
            f'{{"apiKey":{k},"minVersion":{lo},"maxVersion":{hi}}}' for k, lo, hi in _API_VERSIONS_KEYS
        )
        self._ts_cache: tuple[int, str] = (-1, "")

    def _ts(self, ms: int) -> str:
        sec, milli = divmod(ms, 1000)
        if self._ts_cache[0] != sec:
            t = datetime.fromtimestamp(sec, tz=UTC)
            self._ts_cache = (sec, f"{t:%Y-%m-%d %H:%M:%S}")
        return f"{self._ts_cache[1]},{milli:03d}"

    def _timings(self, total: float, remote: float = 0.0) -> str:
        from simulator.log_render import java_double as jd

        rng = self.rng
        queue = round(rng.uniform(0.02, 0.4), 3)
        send = round(rng.uniform(0.05, 0.6), 3)
        resp_q = round(rng.uniform(0.02, 0.15), 3)
        local = round(max(total - remote - queue - send - resp_q, 0.05), 3)
        return (
            f'"totalTimeMs":{jd(total)},"requestQueueTimeMs":{jd(queue)},"localTimeMs":{jd(local)},'
            f'"remoteTimeMs":{jd(remote)},"throttleTimeMs":0,"responseQueueTimeMs":{jd(resp_q)},'
            f'"sendTimeMs":{jd(send)}'
        )

    def _line(
        self,
        ms: int,
        key: int,
        name: str,
        version: int,
        client: str,
        conn: str,
        req: str,
        resp: str,
        timings: str,
        info: str,
    ) -> str:
        self.corr += 1
        return (
            f"[{self._ts(ms)}] DEBUG Completed request:"
            f'{{"isForwarded":false,"requestHeader":{{"requestApiKey":{key},"requestApiVersion":{version},'
            f'"correlationId":{self.corr},"clientId":"{client}","requestApiKeyName":"{name}"}},'
            f'"request":{req},"response":{resp},"connection":"{conn}",{timings},'
            f'"securityProtocol":"PLAINTEXT","principal":"User:ANONYMOUS","listener":"PLAINTEXT",'
            f'"clientInformation":{info}}} (kafka.request.logger)'
        )

    def _conn(self, client_host: str) -> str:
        port = 40000 + self.rng.randrange(20000)
        return f"10.0.0.{self.node}:9092-{client_host}:{port}-{self.rng.randrange(1, 9)}"

    def _partitions(self, n: int) -> list[tuple[str, int]]:
        topics = self.rng.sample(_DATA_TOPICS, min(len(_DATA_TOPICS), max(1, (n + 5) // 6)))
        return sorted({(self.rng.choice(topics), self.rng.randrange(12)) for _ in range(n)})

    def _advance(self, tp: tuple[str, int]) -> tuple[int, int]:
        before = self.offsets.get(tp, self.rng.randrange(10_000_000))
        after = before + self.rng.randrange(0, 400)
        self.offsets[tp] = after
        return before, after

    def _fetch(self, ms: int, follower: bool) -> str:
        rng = self.rng
        # an incremental fetch session lists the partitions that changed (or none)
        n = rng.choice((0, 1, 1, 2, 2, 3, 4, 6, 8, 12, 16) if follower else (0, 0, 1, 1, 2, 3, 4, 6))
        parts = self._partitions(n) if n else []
        by_topic: dict[str, list[str]] = {}
        answers: dict[str, list[str]] = {}
        for topic, p in parts:
            before, after = self._advance((topic, p))
            by_topic.setdefault(topic, []).append(
                f'{{"partition":{p},"currentLeaderEpoch":{rng.randrange(3)},"fetchOffset":{before},'
                f'"lastFetchedEpoch":-1,"logStartOffset":{-1 if not follower else 0},'
                f'"partitionMaxBytes":1048576}}'
            )
            size = 0 if after == before else rng.randrange(200, 60_000)
            answers.setdefault(topic, []).append(
                f'{{"partitionIndex":{p},"errorCode":0,"highWatermark":{after},"lastStableOffset":{after},'
                f'"logStartOffset":0,"abortedTransactions":null,"preferredReadReplica":-1,'
                f'"recordsSizeInBytes":{size}}}'
            )
        topics = ",".join(
            f'{{"topicId":"{self.topic_ids[t]}","partitions":[{",".join(ps)}]}}' for t, ps in by_topic.items()
        )
        responses = ",".join(
            f'{{"topicId":"{self.topic_ids[t]}","partitions":[{",".join(ps)}]}}' for t, ps in answers.items()
        )
        session = rng.randrange(1, 2**31)
        epoch = rng.randrange(1, 5000)
        if follower:
            replica = rng.choice([b for b in (1, 2, 3) if b != self.node])
            head = f'"replicaState":{{"replicaId":{replica},"replicaEpoch":{rng.randrange(1, 40)}}},'
            client, conn, info = (
                f"broker-{replica}-fetcher-0",
                self._conn(f"10.0.0.{replica}"),
                _CLIENT_INFO_UNKNOWN,
            )
            max_bytes = 10485760
        else:
            head = ""
            client = f"consumer-{rng.choice(('etl', 'billing', 'search', 'alerts'))}-{rng.randrange(1, 40)}"
            conn, info, max_bytes = (
                self._conn(f"10.2.{rng.randrange(8)}.{rng.randrange(2, 250)}"),
                _CLIENT_INFO_JAVA,
                52428800,
            )
        req = (
            f'{{{head}"maxWaitMs":500,"minBytes":1,"maxBytes":{max_bytes},'
            f'"isolationLevel":{rng.choice((0, 1))},'
            f'"sessionId":{session},"sessionEpoch":{epoch},"topics":[{topics}],"forgottenTopicsData":[],'
            f'"rackId":""}}'
        )
        resp = f'{{"throttleTimeMs":0,"errorCode":0,"sessionId":{session},"responses":[{responses}]}}'
        remote = round(rng.uniform(0, 500.0), 3) if not parts or rng.random() < 0.5 else 0.0
        total = round(remote + rng.uniform(0.3, 6.0), 3)
        return self._line(ms, 1, "FETCH", 16, client, conn, req, resp, self._timings(total, remote), info)

    def _produce(self, ms: int) -> str:
        rng = self.rng
        parts = self._partitions(rng.choice((1, 1, 1, 2, 2, 3, 4)))
        data: dict[str, list[str]] = {}
        answers: dict[str, list[str]] = {}
        for topic, p in parts:
            before, _ = self._advance((topic, p))
            data.setdefault(topic, []).append(
                f'{{"index":{p},"recordsSizeInBytes":{rng.randrange(300, 16_000)}}}'
            )
            answers.setdefault(topic, []).append(
                f'{{"index":{p},"errorCode":0,"baseOffset":{before},"logAppendTimeMs":-1,"logStartOffset":0,'
                f'"recordErrors":[],"errorMessage":null}}'
            )
        req = (
            '{"transactionalId":null,"acks":-1,"timeoutMs":30000,"topicData":['
            + ",".join(f'{{"name":"{t}","partitionData":[{",".join(ps)}]}}' for t, ps in data.items())
            + "]}"
        )
        resp = (
            '{"responses":['
            + ",".join(f'{{"name":"{t}","partitionResponses":[{",".join(ps)}]}}' for t, ps in answers.items())
            + '],"throttleTimeMs":0}'
        )
        service = rng.choice(("orders-svc", "payments-svc", "tracker", "inventory-sync"))
        client = f"producer-{service}-{rng.randrange(1, 30)}"
        remote = round(rng.uniform(1.0, 12.0), 3)  # acks=-1: waiting for the followers
        total = round(remote + rng.uniform(0.3, 3.0), 3)
        conn = self._conn(f"10.3.{rng.randrange(8)}.{rng.randrange(2, 250)}")
        return self._line(
            ms, 0, "PRODUCE", 9, client, conn, req, resp, self._timings(total, remote), _CLIENT_INFO_JAVA
        )

    def _metadata(self, ms: int) -> str:
        rng = self.rng
        topics = rng.sample(_DATA_TOPICS, rng.randrange(1, 3))
        req = (
            '{"topics":['
            + ",".join(f'{{"topicId":"AAAAAAAAAAAAAAAAAAAAAA","name":"{t}"}}' for t in topics)
            + '],"allowAutoTopicCreation":true,"includeTopicAuthorizedOperations":false}'
        )
        brokers = ",".join(f'{{"nodeId":{b},"host":"broker-{b}","port":9092,"rack":null}}' for b in (1, 2, 3))
        answers = []
        for t in topics:
            parts = ",".join(
                f'{{"errorCode":0,"partitionIndex":{p},"leaderId":{1 + (p % 3)},"leaderEpoch":{p % 4},'
                f'"replicaNodes":[1,2,3],"isrNodes":[1,2,3],"offlineReplicas":[]}}'
                for p in range(12)
            )
            answers.append(
                f'{{"errorCode":0,"name":"{t}","topicId":"{self.topic_ids[t]}","isInternal":false,'
                f'"partitions":[{parts}],"topicAuthorizedOperations":-2147483648}}'
            )
        resp = (
            f'{{"throttleTimeMs":0,"brokers":[{brokers}],"clusterId":"9-8lbZO1QfSD2__WJ3H1mw",'
            f'"controllerId":1,"topics":[{",".join(answers)}]}}'
        )
        client = f"consumer-{rng.choice(('etl', 'billing', 'search', 'alerts'))}-{rng.randrange(1, 40)}"
        total = round(rng.uniform(0.5, 6.0), 3)
        conn = self._conn(f"10.2.{rng.randrange(8)}.{rng.randrange(2, 250)}")
        return self._line(
            ms, 3, "METADATA", 12, client, conn, req, resp, self._timings(total), _CLIENT_INFO_JAVA
        )

    def _api_versions(self, ms: int) -> str:
        rng = self.rng
        req = '{"clientSoftwareName":"apache-kafka-java","clientSoftwareVersion":"3.7.1"}'
        resp = (
            f'{{"errorCode":0,"apiKeys":[{self.api_versions}],"throttleTimeMs":0,"supportedFeatures":'
            '[{"name":"metadata.version","minVersion":1,"maxVersion":19}],"finalizedFeaturesEpoch":8,'
            '"finalizedFeatures":[{"name":"metadata.version","maxVersionLevel":19,"minVersionLevel":19}]}'
        )
        total = round(rng.uniform(0.5, 4.0), 3)
        conn = self._conn(f"10.2.{rng.randrange(8)}.{rng.randrange(2, 250)}")
        client = f"consumer-{rng.choice(('etl', 'billing', 'search', 'alerts'))}-{rng.randrange(1, 40)}"
        return self._line(
            ms, 18, "API_VERSIONS", 3, client, conn, req, resp, self._timings(total), _CLIENT_INFO_UNKNOWN
        )

    def line(self, ms: int) -> str:
        kind = self.rng.choices(self.kinds, self.weights)[0]
        if kind == "fetch_consumer":
            return self._fetch(ms, follower=False)
        if kind == "fetch_follower":
            return self._fetch(ms, follower=True)
        if kind == "produce":
            return self._produce(ms)
        if kind == "metadata":
            return self._metadata(ms)
        return self._api_versions(ms)


def generate_mixed(out: Path, lines: int, groups: int, members: int, mixed: int) -> tuple[int, int]:
    """A mixed-API log of about ``lines`` lines: the group lines of ``bench_replay.generate`` (about
    ``lines / (mixed + 1)`` of them, same groups and brokers), each broker file's merged in time order
    (each group's own order kept), and ``mixed`` other-API lines (:class:`MixedLines`) after each group
    line, their times spread between it and the next. Returns (lines, group lines)."""
    from benchmarks.bench_replay import broker_lines

    n = n_group = 0
    for broker, group_lines in broker_lines(lines / (mixed + 1), groups, members).items():
        merged = list(group_lines)
        other = MixedLines(broker, MIXED_SEED)
        (out / broker).mkdir(parents=True, exist_ok=True)
        with open(out / broker / "kafka-request.log", "w", encoding="utf-8") as f:
            for i, (ms, line) in enumerate(merged):
                f.write(line + "\n")
                nxt = merged[i + 1][0] if i + 1 < len(merged) else ms + 50
                times = sorted(other.rng.randint(ms, max(ms, nxt)) for _ in range(mixed))
                f.write("".join(other.line(t) + "\n" for t in times))
                n += 1 + mixed
                n_group += 1
    return n, n_group


def _engine(overrides: list[str]) -> str | None:
    """The ``storage.engine`` the overrides name (``--engines`` adds one per engine), if any."""
    named = [o.split("=", 1)[1] for o in overrides if o.startswith("storage.engine=")]
    return named[-1] if named else None


def _config(data: Path, warehouse: str, overrides: list[str]) -> Any:
    from rebalance_replay.jobs.config import load_config

    engine = _engine(overrides)
    suffix = f"-{engine}" if engine else ""  # one warehouse per engine, side by side
    return load_config([], overrides, str(data / f"{warehouse}{suffix}"))


def _spark(overrides: list[str] | None = None) -> Any:
    from rebalance_replay.jobs.spark_session import get_spark

    conf = {"spark.ui.showConsoleProgress": "false"}
    if _engine(overrides or []) == "delta-spark":
        from rebalance_replay.jobs.delta import delta_session_conf

        conf.update(delta_session_conf(ivy_dir=str(ROOT / ".cache" / "ivy")))
    return get_spark("bench-pipeline", conf=conf)


def _n_lines(data: Path) -> int:
    return int(json.loads((data / "log-ok.json").read_text())["lines"])


# ----------------------------------------------------------------------------------------------------
# Stages (each callable in-process; all share <data>/warehouse except bare and run)
# ----------------------------------------------------------------------------------------------------


def stage_bare(data: Path, overrides: list[str]) -> StageResult:
    from pyspark.sql import functions as F

    spark = _spark(overrides)
    out = data / "bare-out"
    shutil.rmtree(out, ignore_errors=True)
    t = time.perf_counter()
    text = spark.read.text(str(data / "logs"), recursiveFileLookup=True)
    body = F.regexp_extract("value", r"Completed request:(\{.*\}) \(kafka\.request\.logger\)$", 1)
    parsed = text.select(
        F.regexp_extract("value", r"^\[([^\]]+)\] (\w+) ", 1).alias("ts"),
        F.from_json(body, BARE_SCHEMA).alias("j"),
    ).select("ts", "j.*")
    parsed.write.parquet(str(out))
    secs = time.perf_counter() - t
    shutil.rmtree(out, ignore_errors=True)
    return StageResult("bare", secs, _n_lines(data), "lines", "read.text + from_json + parquet write")


_TS_RE = r"^\[([^\]]+)\] (\w+) "
_BODY_RE = r"Completed request:(\{.*\}) \(kafka\.request\.logger\)$"
_API_NAME_RE = r'"requestApiKeyName":"([A-Z_]+)"'


def _parquet_rows(out: Path) -> int:
    """Rows of a parquet file, or of the parquet files of a folder (read from their footers)."""
    import pyarrow.parquet as pq

    files = [out] if out.is_file() else list(out.rglob("*.parquet"))
    return sum(pq.read_metadata(f).num_rows for f in files)


def stage_bare_filtered(data: Path, overrides: list[str]) -> StageResult:
    """The bare pass that keeps only the group APIs' lines: ``spark.read.text`` → the API name
    (``regexp_extract``) → filter → ``from_json`` → parquet write (the baseline of a mixed log)."""
    from pyspark.sql import functions as F

    spark = _spark(overrides)
    out = data / "bare-filtered-out"
    shutil.rmtree(out, ignore_errors=True)
    t = time.perf_counter()
    text = spark.read.text(str(data / "logs"), recursiveFileLookup=True)
    kept = text.filter(F.regexp_extract("value", _API_NAME_RE, 1).isin(*GROUP_API_NAMES))
    parsed = kept.select(
        F.regexp_extract("value", _TS_RE, 1).alias("ts"),
        F.from_json(F.regexp_extract("value", _BODY_RE, 1), BARE_SCHEMA).alias("j"),
    ).select("ts", "j.*")
    parsed.write.parquet(str(out))
    secs = time.perf_counter() - t
    rows = _parquet_rows(out)
    shutil.rmtree(out, ignore_errors=True)
    note = f"read.text + API name + filter + from_json + parquet write; {rows:,} rows"
    return StageResult("bare_filtered", secs, _n_lines(data), "lines", note)


def _duckdb_type(ddl: str) -> Any:
    """A Spark DDL type (of :data:`BARE_SCHEMA`) as a DuckDB ``json_transform`` structure."""
    ddl = ddl.strip()
    scalars = {
        "boolean": "BOOLEAN",
        "int": "INTEGER",
        "bigint": "BIGINT",
        "double": "DOUBLE",
        "string": "VARCHAR",
    }
    if ddl in scalars:
        return scalars[ddl]
    if ddl.startswith("array<"):
        return [_duckdb_type(ddl[6:-1])]
    if ddl.startswith("struct<"):
        return _duckdb_struct(ddl[7:-1], ":")
    raise ValueError(f"no DuckDB type for {ddl!r}")


def _duckdb_struct(fields: str, sep: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    depth, start = 0, 0
    for i, c in enumerate(fields + ","):
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif c == "," and depth == 0:
            name, _, ddl = fields[start:i].strip().partition(sep)
            out[name.strip()] = _duckdb_type(ddl)
            start = i + 1
    return out


def stage_duckdb(data: Path, overrides: list[str]) -> StageResult:
    """DuckDB (threads=2) on the same files: read them as lines, keep the group APIs' lines (the API
    name by ``regexp_extract``), parse their JSON (``json_transform``, the bare pass's schema) and write
    parquet."""
    import duckdb

    out = data / "duckdb-out.parquet"
    out.unlink(missing_ok=True)
    files = sorted(str(f) for f in (data / "logs").rglob("*") if f.is_file())
    structure = json.dumps(_duckdb_struct(BARE_SCHEMA, " "))
    names = ", ".join(f"'{n}'" for n in GROUP_API_NAMES)
    con = duckdb.connect()
    con.execute("SET threads = 2")
    t = time.perf_counter()
    # one VARCHAR column a line: a delimiter no line holds, no quoting
    lines = (
        "read_csv(?, columns = {'line': 'VARCHAR'}, header = false, delim = '\x01', quote = '', "
        "escape = '', auto_detect = false, max_line_size = 16777216)"
    )
    con.execute(
        f"""
        COPY (
            SELECT ts, unnest(j) FROM (
                SELECT regexp_extract(line, '{_TS_RE}', 1) AS ts,
                       json_transform(regexp_extract(line, '{_BODY_RE}', 1), '{structure}') AS j
                FROM {lines}
                WHERE regexp_extract(line, '{_API_NAME_RE}', 1) IN ({names})
            )
        ) TO '{out}' (FORMAT parquet)
        """,
        [files],
    )
    secs = time.perf_counter() - t
    con.close()
    rows = _parquet_rows(out)
    out.unlink(missing_ok=True)
    note = f"threads=2: read_csv lines + API name + filter + json_transform + parquet write; {rows:,} rows"
    return StageResult("duckdb", secs, _n_lines(data), "lines", note)


def _ingest_stage(
    name: str, warehouse: str, data: Path, overrides: list[str], task_files: bool = True
) -> StageResult:
    from rebalance_replay.jobs.delta import open_store
    from rebalance_replay.jobs.ingest import ingest

    config = _config(data, warehouse, overrides)
    shutil.rmtree(config.storage.warehouse, ignore_errors=True)
    spark = _spark(overrides)
    store = open_store(spark, config.storage.warehouse, config.storage.engine)
    if not task_files:
        store.task_stage = lambda table: None  # type: ignore[method-assign]
    t = time.perf_counter()
    res = ingest(spark, store, config, [str(data / "logs")], log=lambda m: None)
    secs = time.perf_counter() - t
    how = "columnar routine lines" if config.input.columnar_json else "routine lines through parse_line"
    how += ", the tasks write the files" if task_files else ", Spark's parquet writer"
    note = f"{res.run.requests:,} requests, {res.run.quarantined} quarantined, {how}"
    return StageResult(name, secs, res.run.lines_read, "lines", note)


def stage_ingest(data: Path, overrides: list[str]) -> StageResult:
    return _ingest_stage("ingest", "warehouse", data, overrides)


def stage_ingest_python(data: Path, overrides: list[str]) -> StageResult:
    """The ingest with the routine lines through the per-line parser too (``input.columnar_json=false``),
    into a warehouse of its own that is removed afterwards: the before of the columnar parser, in the same
    invocation."""
    try:
        return _ingest_stage(
            "ingest_python", "warehouse-python", data, [*overrides, "input.columnar_json=false"]
        )
    finally:
        shutil.rmtree(data / "warehouse-python", ignore_errors=True)


def stage_ingest_spark_writer(data: Path, overrides: list[str]) -> StageResult:
    """The ingest with the request rows handed to Spark's parquet writer (``DeltaStore.task_stage`` None,
    what the delta-spark engine does) instead of written by the tasks themselves: the before of the task
    files, in the same invocation."""
    try:
        return _ingest_stage(
            "ingest_spark_writer", "warehouse-spark-writer", data, overrides, task_files=False
        )
    finally:
        shutil.rmtree(data / "warehouse-spark-writer", ignore_errors=True)


def _classic(spark: Any, config: Any) -> Any:
    from rebalance_replay.jobs.delta import open_store
    from rebalance_replay.jobs.replay import _classic_rows
    from rebalance_replay.schemas import REQUESTS

    store = open_store(spark, config.storage.warehouse, config.storage.engine)
    return _classic_rows(store.read(REQUESTS))


def stage_model(data: Path, overrides: list[str]) -> StageResult:
    from benchmarks.bench_replay import replay_in_process
    from rebalance_replay.jobs.replay import settings_from

    config = _config(data, "warehouse", overrides)
    spark = _spark(overrides)
    table = _classic(spark, config).toArrow()
    horizon = int(max(table.column("completion_ms").to_pylist())) + 1
    groups, secs = replay_in_process(table, settings_from(config), horizon)
    return StageResult("model", secs, table.num_rows, "events", f"{groups} groups, rows in memory")


def stage_model_columns(data: Path, overrides: list[str]) -> StageResult:
    from benchmarks.bench_replay import replay_in_process
    from rebalance_replay.jobs.replay import settings_from

    config = _config(data, "warehouse", overrides)
    spark = _spark(overrides)
    table = _classic(spark, config).toArrow()
    horizon = int(max(table.column("completion_ms").to_pylist())) + 1
    groups, secs = replay_in_process(table, settings_from(config), horizon, columns=True)
    note = f"{groups} groups, Arrow slices in memory, bulk validation (no Spark)"
    return StageResult("model_columns", secs, table.num_rows, "events", note)


def _replay_stage(name: str, path: str, data: Path, overrides: list[str]) -> StageResult:
    from rebalance_replay.jobs.delta import open_store
    from rebalance_replay.jobs.replay import ReplayDirs, replay

    config = _config(data, "warehouse", overrides)
    spark = _spark(overrides)
    store = open_store(spark, config.storage.warehouse, config.storage.engine)
    ReplayDirs(config.storage.warehouse).manifest.unlink(missing_ok=True)  # never "up to date"
    t = time.perf_counter()
    res = replay(spark, store, config, path=path, log=lambda m: None)
    secs = time.perf_counter() - t
    share = res.bulk_validated / res.new_rows if res.new_rows else 0.0
    note = f"{res.groups} groups, {res.path} path, {share:.1%} validated in bulk"
    return StageResult(name, secs, res.new_rows, "events", note)


def stage_fast(data: Path, overrides: list[str]) -> StageResult:
    return _replay_stage("fast", "fast", data, overrides)


def stage_stateful(data: Path, overrides: list[str]) -> StageResult:
    return _replay_stage("stateful", "stateful", data, overrides)


def _on_warehouse(data: Path, overrides: list[str]) -> tuple[Any, Any, Any, int]:
    """(config, spark, store, classic-group rows) of the shared warehouse, for a stage that reads it."""
    from rebalance_replay.jobs.delta import open_store

    config = _config(data, "warehouse", overrides)
    spark = _spark(overrides)
    store = open_store(spark, config.storage.warehouse, config.storage.engine)
    return config, spark, store, _classic(spark, config).count()


def stage_validate(data: Path, overrides: list[str]) -> StageResult:
    from rebalance_replay.jobs.validate import validate

    config, spark, store, n = _on_warehouse(data, overrides)
    t = time.perf_counter()
    res = validate(spark, store, config, log=lambda m: None)
    secs = time.perf_counter() - t
    agreement = res.agreement
    note = "agreement " + ("n/a" if agreement is None else f"{agreement:.4%}")
    return StageResult("validate", secs, n, "events", note)


def stage_audit(data: Path, overrides: list[str]) -> StageResult:
    from rebalance_replay.jobs.audit import _state_path, audit

    config, spark, store, n = _on_warehouse(data, [*overrides, "report.great_expectations=false"])
    _state_path(config.storage.warehouse).unlink(missing_ok=True)  # never "up to date": every group
    t = time.perf_counter()
    res = audit(spark, store, config, log=lambda m: None)
    secs = time.perf_counter() - t
    note = f"{res.evaluated_groups} groups, {len(res.findings)} findings"
    return StageResult("audit", secs, n, "events", note)


def cli_run_cmd(logs: Path, warehouse: Path, overrides: list[str]) -> list[str]:
    """The CLI's whole ``run`` over ``logs`` into ``warehouse``, each override a ``--set``."""
    cmd = [sys.executable, "-m", "rebalance_replay.jobs.cli", "run"]
    cmd += ["--input", str(logs), "--warehouse", str(warehouse)]
    for o in overrides:
        cmd += ["--set", o]
    return cmd


#: the CLI ``run``'s stages in order; each prints ``<stage>: this run…`` when it is done
RUN_STAGES = ("ingest", "replay", "validate", "audit", "report")


@dataclass
class CliRun:
    code: int
    out: list[str]
    err: list[str]
    #: each stage's seconds (the time of its "<stage>: this run" line − the previous stage's; ingest's from
    #: the command's start, the JVM's start included); the stage the run ended in, up to its end
    seconds: dict[str, float]
    total: float
    #: the stage the run was in when it ended ("end" after the last)
    last: str


def run_cli_staged(
    cmd: list[str],
    sampler: RssSampler | None = None,
    on_stage: Callable[[str], None] = lambda s: None,
    root: Path = ROOT,
) -> CliRun:
    """Run the CLI ``cmd`` (a ``run``), timing each of :data:`RUN_STAGES` by when its ``<stage>: this run``
    line is printed (its end: under ``spark-submit`` its progress lines come on stdout before it);
    ``sampler`` samples the command's memory while it runs (its root set to the command's pid);
    ``on_stage`` is told each stage as it begins (the first when the command starts); ``root``: the
    checkout whose code runs (``--before``: another one)."""
    env = _env(root)
    env["PYTHONUNBUFFERED"] = "1"  # the stages' lines as they are printed
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    err: list[str] = []
    reader = threading.Thread(target=lambda: err.extend(proc.stderr or ()), daemon=True)
    reader.start()
    out: list[str] = []
    seconds: dict[str, float] = {}
    stage, start = RUN_STAGES[0], t0
    if sampler is not None:
        sampler.root = proc.pid
    with sampler if sampler is not None else contextlib.nullcontext():
        on_stage(stage)
        for line in proc.stdout or ():
            out.append(line)
            if stage not in RUN_STAGES:
                continue
            i = RUN_STAGES.index(stage)
            later = [s for s in RUN_STAGES[i + 1 :] if line.startswith(f"{s}:")]
            # a stage's end: its "<stage>: this run…" line (its progress lines come before it), or the
            # first line of a later stage (one that says nothing of this run)
            if line.startswith(f"{stage}: this run") or later:
                now = time.perf_counter()
                seconds[stage], start = now - start, now
                stage = RUN_STAGES[i + 1] if i + 1 < len(RUN_STAGES) else "end"
                on_stage(stage)
        code = proc.wait()
    reader.join()
    end = time.perf_counter()
    if stage in RUN_STAGES:  # the run ended in it
        seconds[stage] = end - start
    return CliRun(code, out, err, seconds, end - t0, stage)


def stage_run(data: Path, overrides: list[str]) -> StageResult:
    engine = _engine(overrides)
    wh = data / ("warehouse-run" + (f"-{engine}" if engine else ""))
    shutil.rmtree(wh, ignore_errors=True)
    cmd = cli_run_cmd(data / "logs", wh, overrides)
    if engine == "delta-spark":
        cmd += ["--set", f"storage.delta_spark_ivy={ROOT / '.cache' / 'ivy'}"]
    run = run_cli_staged(cmd)
    if run.code != 0:
        raise RuntimeError(f"run failed ({run.code}): {''.join(run.err)[-2000:]}")
    head = next((ln for ln in run.out if ln.startswith("run: ")), "").rstrip()
    shares = " · ".join(f"{s} {v / run.total:.0%}" for s, v in run.seconds.items())
    return StageResult(
        "run", run.total, _n_lines(data), "lines", f"CLI, JVM start included; {shares}; {head[5:80]}"
    )


#: the stages ``--warm`` warms up (a SparkSession's stages; ``run`` starts its own JVM)
WARMED = tuple(s for s in STAGES if s not in ("duckdb", "run"))


def warm_up(overrides: list[str]) -> None:
    """A SparkSession's first job with Python workers (``mapInArrow``): what every Spark stage's first
    job pays once per session — the Python workers' start, the JVM's Arrow and code generation warming —
    done before the clock starts (``--warm``)."""

    def same(batches: Any) -> Any:
        yield from batches

    _spark(overrides).range(0, 4, 1, 2).mapInArrow(same, "id long").collect()


STAGE_FUNCS: dict[str, Callable[[Path, list[str]], StageResult]] = {
    "bare": stage_bare,
    "bare_filtered": stage_bare_filtered,
    "duckdb": stage_duckdb,
    "ingest_python": stage_ingest_python,
    "ingest_spark_writer": stage_ingest_spark_writer,
    "ingest": stage_ingest,
    "model": stage_model,
    "model_columns": stage_model_columns,
    "fast": stage_fast,
    "stateful": stage_stateful,
    "validate": stage_validate,
    "audit": stage_audit,
    "run": stage_run,
}


# ----------------------------------------------------------------------------------------------------
# Subprocesses and memory
# ----------------------------------------------------------------------------------------------------


def _env(root: Path = ROOT) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(root) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("GX_ANALYTICS_ENABLED", "false")
    return env


def _proc_table() -> dict[int, tuple[int, str, int]]:
    """pid → (ppid, command line, RSS bytes), for every readable process."""
    out: dict[int, tuple[int, str, int]] = {}
    page = os.sysconf("SC_PAGE_SIZE")
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{d}/statm") as f:
                rss = int(f.read().split()[1]) * page
        except (OSError, ValueError, IndexError):
            continue
        ppid = int(stat[stat.rfind(")") + 2 :].split()[1])
        out[int(d)] = (ppid, cmd, rss)
    return out


class RssSampler:
    """Peak RSS of a process tree: the root (driver Python), its JVM, and the Python workers."""

    def __init__(self, root: int, interval: float = 0.2) -> None:
        self.root = root
        self.interval = interval
        self.peak: dict[str, int] = {"driver_python": 0, "driver_jvm": 0, "worker_max": 0, "workers_sum": 0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def sample(self) -> None:
        table = _proc_table()
        children: dict[int, list[int]] = {}
        for pid, (ppid, _, _) in table.items():
            children.setdefault(ppid, []).append(pid)
        tree, todo = [], [self.root]
        while todo:
            pid = todo.pop()
            tree.append(pid)
            todo.extend(children.get(pid, []))
        jvm = workers_sum = worker_max = 0
        driver = table[self.root][2] if self.root in table else 0
        for pid in tree:
            if pid == self.root or pid not in table:
                continue
            _, cmd, rss = table[pid]
            if "java" in cmd.split(" ", 1)[0]:
                jvm += rss
            elif "python" in cmd:
                if "pyspark" in cmd or "daemon" in cmd or "worker" in cmd:
                    workers_sum += rss
                    worker_max = max(worker_max, rss)
                else:  # a CLI subprocess (stage `run`) is a driver Python too
                    driver = max(driver, rss)
        for k, v in (
            ("driver_python", driver),
            ("driver_jvm", jvm),
            ("worker_max", worker_max),
            ("workers_sum", workers_sum),
        ):
            self.peak[k] = max(self.peak[k], v)


def run_subprocess(
    stage: str, data: Path, overrides: list[str], warm: bool = False, root: Path = ROOT
) -> StageResult:
    """One stage in a subprocess, with the code of the checkout at ``root`` (``--before``: another one)."""
    cmd = [
        sys.executable,
        str(root / "benchmarks" / "bench_pipeline.py"),
        "--stage",
        stage,
        "--data",
        str(data),
    ]
    if warm:
        cmd.append("--warm")
    for o in overrides:
        cmd += ["--set", o]
    proc = subprocess.Popen(
        cmd, cwd=root, env=_env(root), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    with RssSampler(proc.pid) as sampler:
        stdout, stderr = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"stage {stage} failed ({proc.returncode}):\n{stderr[-3000:]}")
    line = [ln for ln in stdout.splitlines() if ln.startswith("RESULT ")][-1]
    d = json.loads(line[len("RESULT ") :])
    return StageResult(d["stage"], d["seconds"], d["units"], d["unit"], d["note"], dict(sampler.peak))


# ----------------------------------------------------------------------------------------------------
# Report
# ----------------------------------------------------------------------------------------------------


def _mb(b: int | None) -> str:
    return "-" if not b else f"{b / 2**20:,.0f}"


def format_table(results: list[StageResult], mixed: int = 0, groups: int = 0) -> str:
    """The results as a markdown table. Every row: its time ÷ the baseline's (``bare``; on a mixed log
    ``bare_filtered``, the Spark pass that also drops the other APIs' lines) and ÷ ``duckdb``'s, and its
    time a group (``groups``: the log's); replay stages also their events/s ÷ the single-process model's."""
    by = {r.stage: r for r in results}
    base_name = "bare_filtered" if mixed else "bare"
    base, duck, model = by.get(base_name), by.get("duckdb"), by.get("model")
    head = (
        f"| stage | seconds | ms a group | lines/s or events/s | × {base_name} time | × duckdb time | "
        "× model ev/s | driver JVM MB | driver Py MB | worker max MB | workers sum MB | note |"
    )
    rows = [head, "|" + "---|" * 12]
    for r in results:
        vs_base = f"{r.seconds / base.seconds:.2f}×" if base else "-"
        vs_duck = f"{r.seconds / duck.seconds:.2f}×" if duck else "-"
        vs_model = "-"
        if r.unit == "events" and model and r.stage.split(" ")[0] not in ("validate", "audit"):
            vs_model = f"{r.rate / model.rate:.2f}×"
        per_group = f"{r.seconds / groups * 1000:,.2f}" if groups else "-"
        mem = " | ".join(
            _mb(r.rss.get(k)) for k in ("driver_jvm", "driver_python", "worker_max", "workers_sum")
        )
        rows.append(
            f"| {r.stage} | {r.seconds:.1f} | {per_group} | {r.rate:,.0f} {r.unit}/s | {vs_base} | {vs_duck} "
            f"| {vs_model} "
            f"| {mem} | {r.note} |"
        )
    return "\n".join(rows)


def machine() -> str:
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            mem = f"{int(f.readline().split()[1]) / 2**20:.0f} GB RAM"
    except OSError:
        pass
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "")
    except OSError:
        pass
    load = os.getloadavg()[0]
    import pyspark

    return (
        f"{os.cpu_count()} cores ({cpu}), {mem}, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}, pyspark {pyspark.__version__}, load avg {load:.1f} at start"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lines", type=int, default=1_000_000)
    p.add_argument("--groups", type=int, default=200)
    p.add_argument("--members", type=int, default=5)
    p.add_argument(
        "--mixed",
        type=int,
        nargs="?",
        const=9,
        default=0,
        metavar="N",
        help="N other-API lines (Fetch, Produce, Metadata, ApiVersions) per group line (default 9)",
    )
    p.add_argument("--stages", nargs="+", choices=STAGES, default=list(STAGES))
    p.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="N",
        help="run the stages N times, in rotation; the table shows each stage's median time",
    )
    p.add_argument(
        "--warm",
        action="store_true",
        help="before each Spark stage's clock starts, one trivial job with Python workers (not counted)",
    )
    p.add_argument(
        "--before",
        type=Path,
        metavar="DIR",
        help="also run the product's stages with the code of the checkout at DIR (e.g. an older commit's "
        "`git archive`, this script copied in), each right before this checkout's: rows '<stage> (before)'",
    )
    p.add_argument("--in-process", action="store_true", help="all stages in this process, one SparkSession")
    p.add_argument("--set", action="append", default=[], dest="overrides", metavar="KEY=VALUE")
    p.add_argument(
        "--engines",
        nargs="+",
        choices=("delta-rs", "delta-spark"),
        default=None,
        help="run the storage stages once per engine, side by side (each its own warehouse)",
    )
    p.add_argument("--stage", choices=STAGES, help=argparse.SUPPRESS)  # subprocess mode
    p.add_argument("--data", help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.stage:  # one stage, in this process, against <data>
        if args.warm and args.stage in WARMED:
            warm_up(args.overrides)
        res = STAGE_FUNCS[args.stage](Path(args.data), args.overrides)
        payload = {
            "stage": res.stage,
            "seconds": res.seconds,
            "units": res.units,
            "unit": res.unit,
            "note": res.note,
        }
        print("RESULT " + json.dumps(payload), flush=True)
        return 0

    data = data_dir(args.lines, args.groups, args.members, args.mixed)
    n, n_group = ensure_log(data, args.lines, args.groups, args.members, args.mixed)
    kind = (
        f", {n_group:,} of them group lines ({args.mixed} other-API lines a group line)" if args.mixed else ""
    )
    print(
        f"log: {n:,} lines{kind}, {args.groups} groups × {args.members} members in {data / 'logs'}",
        flush=True,
    )
    print(f"machine: {machine()}", flush=True)
    results = []
    if args.before is not None and args.in_process:
        p.error("--before runs stages in subprocesses: not with --in-process")
    plan: list[tuple[str, str | None, Path | None]] = []
    for engine in args.engines or [None]:
        for stage in [s for s in STAGES if s in args.stages]:
            if engine is not None and engine != args.engines[0] and stage in ENGINE_FREE:
                continue  # no table written or read: the same for both engines
            if args.before is not None and stage not in BASELINES:
                plan.append((stage, engine, args.before.resolve()))
            plan.append((stage, engine, None))
    for _ in range(args.repeat):
        for stage, engine, tree in plan:
            overrides = args.overrides + ([f"storage.engine={engine}"] if engine else [])
            t = time.perf_counter()
            if args.in_process:
                if args.warm and stage in WARMED:
                    warm_up(overrides)
                res = STAGE_FUNCS[stage](data, overrides)
            else:
                res = run_subprocess(stage, data, overrides, args.warm, tree or ROOT)
            tags = [engine] if engine is not None and stage not in ENGINE_FREE else []
            tags += ["before"] if tree is not None else []
            if tags:
                res.stage = f"{stage} ({', '.join(tags)})"
            results.append(res)
            wall = time.perf_counter() - t
            print(
                f"  {res.stage}: {res.seconds:.1f}s ({res.rate:,.0f} {res.unit}/s), wall {wall:.0f}s",
                flush=True,
            )
    print()
    if args.warm:
        print("warm: each Spark stage's session ran one trivial Python job before its clock started")
    if args.repeat > 1:
        print(f"median of {args.repeat} runs per stage (run in rotation)")
    print(format_table(medians(results), args.mixed, args.groups))
    return 0


def medians(results: list[StageResult]) -> list[StageResult]:
    """One row a stage, in first-run order: its median time (each run's time in the note when it ran more
    than once), the peak of each memory figure over its runs, the last run's note."""
    import statistics

    by: dict[str, list[StageResult]] = {}
    for r in results:
        by.setdefault(r.stage, []).append(r)
    out = []
    for stage, runs in by.items():
        last = runs[-1]
        note = last.note
        if len(runs) > 1:
            note += "; runs: " + " / ".join(f"{r.seconds:.1f}" for r in runs) + " s"
        rss = {k: max(r.rss.get(k, 0) for r in runs) for k in last.rss}
        secs = statistics.median(r.seconds for r in runs)
        out.append(StageResult(stage, secs, last.units, last.unit, note, rss))
    return out


if __name__ == "__main__":
    sys.exit(main())
