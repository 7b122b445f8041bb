"""One recording: a real cluster of one profile, the scenarios run against it, and what is kept.

A *profile* is a cluster shape with its broker settings (one broker with small group timeouts; one with
``group.max.size``; three brokers where the coordinator can move). Scenarios of one profile run against
the same cluster, a few at a time, each with its own group and topic, as the groups of a real cluster
live side by side in one broker log. Every scenario keeps its ground truth: what the harness did and
when (process starts with their configs, kills, stalls, closes, broker kills) and what the clients
reported (assignments, revocations, commits, errors), with wall-clock milliseconds.

What is kept of a recording (``<out>/<release>/<profile>/``): every broker's ``kafka-request.log``
(and its hourly rolls) and ``server.log``, gzipped; ``manifest.json`` (release, broker settings, client
versions, times, warm-up group); ``ground_truth.json`` (the scenarios).
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simulator.realkafka.clients import ClientProcess, JavaClient, RdkafkaClient
from simulator.realkafka.cluster import Cluster, ClusterError
from simulator.realkafka.jars import Release


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class Profile:
    """A cluster shape and its broker settings (recorded in the manifest)."""

    name: str
    brokers: int
    settings: dict[str, str]
    about: str


class Admin:
    """Topic set-up and coordinator look-ups through librdkafka's admin client (its requests are in the
    request log as other APIs, as an operator's tools' are)."""

    def __init__(self, bootstrap: str) -> None:
        from confluent_kafka.admin import AdminClient

        self.bootstrap = bootstrap
        self.client = AdminClient({"bootstrap.servers": bootstrap})

    def create_topic(self, name: str, partitions: int, replication: int = 1, attempts: int = 5) -> None:
        """Create ``name``; retried with a fresh client, since a cluster just started may drop the admin's
        connection (three KRaft brokers on a busy CI machine: "Broker handle destroyed without
        termination"), not have a controller yet, or never see the request (a 2.7 broker on a machine at
        load 10: no CreateTopics line in 60 s, the future timed out). A topic an earlier attempt did create
        counts."""
        from confluent_kafka import KafkaError, KafkaException
        from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

        for attempt in range(1, attempts + 1):
            try:
                topics = [NewTopic(name, partitions, replication)]
                for f in self.client.create_topics(topics, operation_timeout=30).values():
                    f.result(60)
                return
            except (KafkaException, TimeoutError) as e:
                err = e.args[0] if isinstance(e, KafkaException) and e.args else None
                if (
                    attempt > 1
                    and isinstance(err, KafkaError)
                    and err.code() == KafkaError.TOPIC_ALREADY_EXISTS
                ):
                    return
                if attempt == attempts:
                    raise
                time.sleep(2 * attempt)
                self.client = AdminClient({"bootstrap.servers": self.bootstrap})

    def add_partitions(self, name: str, total: int) -> None:
        from confluent_kafka.admin import NewPartitions  # type: ignore[attr-defined]

        for f in self.client.create_partitions([NewPartitions(name, total)]).values():
            f.result(60)

    def coordinator(self, group: str) -> int | None:
        futures = self.client.describe_consumer_groups([group], request_timeout=20)
        for f in futures.values():
            return int(f.result(30).coordinator.id)
        return None

    def produce(self, topic: str, count: int, partitions: int | None = None) -> None:
        from confluent_kafka import Producer

        p = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 20})
        for i in range(count):
            if partitions:
                p.produce(topic, b"m%d" % i, partition=i % partitions)
            else:
                p.produce(topic, b"m%d" % i)
            if i % 500 == 0:
                p.poll(0)
        p.flush(30)


@dataclass
class Scenario:
    """One scenario: a name (also its group id), what it shows, the profile it needs, and its script."""

    name: str
    run: Callable[[Run], None]
    profile: str = "single"
    releases: frozenset[str] | None = None  # None: every release
    partitions: int = 3
    expect: dict[str, Any] = field(default_factory=dict)
    #: The audit rules the scenario must raise, each with the processes whose members the finding must
    #: name (empty: a finding about the group). Any other finding must be info.
    rules: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: Rules whose findings are true of the scenario without being its point (they may be raised).
    also: frozenset[str] = frozenset()
    #: Ordinary behaviour: no warning or critical finding at all.
    control: bool = False

    @property
    def about(self) -> str:
        """What the scenario shows: its script's docstring."""
        return " ".join((self.run.__doc__ or "").split())


class Run:
    """A scenario's handle while it runs: its group and topic, the clients it starts, its timeline."""

    def __init__(self, rec: Recording, scenario: Scenario) -> None:
        self.rec = rec
        self.scenario = scenario
        self.group = scenario.name
        self.topic = f"{scenario.name}-topic"
        self.actions: list[dict[str, Any]] = []
        self.clients: dict[str, ClientProcess] = {}
        self.client_info: dict[str, dict[str, Any]] = {}
        self.error: str | None = None
        self._stop_producing = threading.Event()

    # ---------------------------------------------------------------- timeline

    def act(self, action: str, **details: Any) -> None:
        self.actions.append({"t": now_ms(), "action": action, **details})

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    # ---------------------------------------------------------------- clients

    def config(self, **overrides: Any) -> dict[str, Any]:
        """A consumer's configs for this scenario (the Java client and librdkafka share these names): fast
        timeouts, everything else the client's default (client.id is left to the client: every Java
        process is ``consumer-<group>-1``, every librdkafka one ``rdkafka``); a None override unsets."""
        cfg: dict[str, Any] = {
            "bootstrap.servers": self.rec.cluster.all_bootstrap(),
            "group.id": self.group,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 1500,
            "max.poll.interval.ms": 30000,
        }
        cfg.update({k.replace("_", "."): v for k, v in overrides.items()})
        return {k: v for k, v in cfg.items() if v is not None}

    def java(
        self,
        name: str,
        *,
        consumers: int = 1,
        commit: str = "auto",
        processing_ms: int = 0,
        version: str | None = None,
        assign_delay_ms: int = 0,
        **config: Any,
    ) -> ClientProcess:
        """Start a Java consumer process (``consumers`` consumers in it) and record it;
        ``assign_delay_ms``: its assignor (``SLOW_RANGE``) waits this long when the process leads."""
        client = JavaClient(f"{self.group}.{name}", self.rec.rel, self.rec.client_logs, version=version)
        cfg = self.config(**config)
        client.start(
            cfg,
            [self.topic],
            consumers=consumers,
            commit=commit,
            processing_ms=processing_ms,
            assign_delay_ms=assign_delay_ms,
        )
        self._started(name, client, cfg, consumers, commit, processing_ms)
        if assign_delay_ms:
            self.client_info[list(self.clients)[-1]]["assign_delay_ms"] = assign_delay_ms
        return client

    def rdkafka(
        self, name: str, *, consumers: int = 1, commit: str = "auto", processing_ms: int = 0, **config: Any
    ) -> ClientProcess:
        """Start a librdkafka consumer process and record it (librdkafka's own config names)."""
        client = RdkafkaClient(f"{self.group}.{name}", self.rec.client_logs)
        cfg = self.config(**config)
        client.start(cfg, [self.topic], consumers=consumers, commit=commit, processing_ms=processing_ms)
        self._started(name, client, cfg, consumers, commit, processing_ms)
        return client

    def _started(
        self,
        name: str,
        client: ClientProcess,
        cfg: Mapping[str, Any],
        consumers: int,
        commit: str,
        processing_ms: int,
    ) -> None:
        key = name
        n = 2
        while key in self.clients:
            key = f"{name}#{n}"
            n += 1
        self.clients[key] = client
        info = {
            "process": key,
            "kind": client.kind,
            "client_version": getattr(client, "version", None),
            "pid": client.pid,
            "consumers": consumers,
            "commit": commit,
            "processing_ms": processing_ms,
            "config": {k: v for k, v in cfg.items() if k != "bootstrap.servers"},
        }
        self.client_info[key] = info
        self.act("start", process=key, kind=client.kind, pid=client.pid, consumers=consumers)

    def kill(self, client: ClientProcess) -> None:
        key = self._key(client)
        client.kill()
        self.act("kill -9", process=key, pid=client.pid)

    def close(self, client: ClientProcess) -> None:
        key = self._key(client)
        self.act("close", process=key)
        client.close()
        self.act("closed", process=key)

    def freeze(self, client: ClientProcess, seconds: float) -> None:
        """The whole process stopped (SIGSTOP) for ``seconds``, then resumed (SIGCONT): a long GC pause or a
        frozen VM; no thread of the client runs meanwhile, the heartbeat thread included."""
        key = self._key(client)
        os.kill(client.pid, signal.SIGSTOP)
        self.act("SIGSTOP", process=key, seconds=seconds)
        time.sleep(seconds)
        os.kill(client.pid, signal.SIGCONT)
        self.act("SIGCONT", process=key)

    def stall(self, client: ClientProcess, ms: int, consumer: int | None = None) -> None:
        op: dict[str, Any] = {"op": "stall", "ms": ms}
        if consumer is not None:
            op["consumer"] = consumer
        client.send(op)
        self.act("stall", process=self._key(client), ms=ms, consumer=consumer)

    def assigned(self, client: ClientProcess, count: int = 1, timeout_s: float = 60.0) -> None:
        """Wait until the process's consumers have had ``count`` assignments (not recorded: a wait)."""
        if not client.wait_for("assigned", count, timeout_s):
            self.act("timeout waiting for assignment", process=self._key(client), count=count)

    def _key(self, client: ClientProcess) -> str:
        for k, c in self.clients.items():
            if c is client:
                return k
        return client.name

    def produce_while_running(self, per_second: int = 50) -> None:
        """A producer filling the topic until the scenario ends (consumers have data to commit)."""
        admin = self.rec.admin

        def loop() -> None:
            from confluent_kafka import Producer

            p = Producer({"bootstrap.servers": admin.bootstrap, "linger.ms": 50})
            i = 0
            while not self._stop_producing.is_set():
                for _ in range(per_second // 10):
                    p.produce(self.topic, b"r%d" % i)
                    i += 1
                p.poll(0)
                time.sleep(0.1)
            p.flush(10)

        threading.Thread(target=loop, name=f"produce-{self.group}", daemon=True).start()
        self.act("producing", per_second=per_second)

    def finish(self) -> None:
        self._stop_producing.set()
        for client in self.clients.values():
            if client.proc.poll() is None:
                client.close()

    def truth(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario.name,
            "group": self.group,
            "topic": self.topic,
            "about": self.scenario.about,
            "profile": self.scenario.profile,
            "expect": self.scenario.expect,
            "processes": list(self.client_info.values()),
            "actions": self.actions,
            "events": {k: c.snapshot() for k, c in self.clients.items()},
            "error": self.error,
        }


class Recording:
    """A cluster of one profile, running scenarios and keeping the logs."""

    def __init__(self, rel: Release, profile: Profile, workdir: Path) -> None:
        self.rel = rel
        self.profile = profile
        self.workdir = workdir
        self.cluster = Cluster(rel, workdir / "cluster", brokers=profile.brokers, settings=profile.settings)
        self.client_logs = workdir / "clients"
        self.admin: Admin
        self.runs: list[Run] = []
        self.started_ms = 0
        self.warmup_group = "__warmup"
        self.lock = threading.Lock()

    def start(self) -> None:
        shutil.rmtree(self.workdir, ignore_errors=True)
        self.workdir.mkdir(parents=True)
        self.started_ms = now_ms()
        for attempt in range(1, 4):  # a port taken between choosing and binding it: new ports, again
            try:
                self.cluster.start()
                break
            except ClusterError:
                self.cluster.stop()
                if attempt == 3:
                    raise
                self.cluster = Cluster(
                    self.rel,
                    self.workdir / f"cluster-{attempt + 1}",
                    brokers=self.profile.brokers,
                    settings=self.profile.settings,
                )
        self.admin = Admin(self.cluster.bootstrap())
        # __consumer_offsets is created by the first FindCoordinator: a throwaway group first, so the
        # scenarios do not begin with COORDINATOR_NOT_AVAILABLE retries (its lines stay in the log)
        warm = Run(self, Scenario(self.warmup_group, lambda r: None))
        self.admin.create_topic(warm.topic, 1, replication=min(3, self.profile.brokers))
        c = warm.java("w")
        warm.assigned(c, timeout_s=90)
        warm.close(c)

    def run_all(self, scenarios: Sequence[Scenario], parallel: int = 3) -> None:
        """Scenarios ``parallel`` at a time, each in a thread of its own."""
        pending = list(scenarios)
        active: list[threading.Thread] = []
        while pending or active:
            active = [t for t in active if t.is_alive()]
            while pending and len(active) < parallel:
                sc = pending.pop(0)
                t = threading.Thread(target=self._run_one, args=(sc,), name=sc.name, daemon=True)
                t.start()
                active.append(t)
                time.sleep(1.0)  # staggered: their first joins do not all land in one moment
            time.sleep(0.2)

    def _run_one(self, sc: Scenario) -> None:
        run = Run(self, sc)
        with self.lock:
            self.runs.append(run)
        try:
            self.admin.create_topic(run.topic, sc.partitions, replication=min(3, self.profile.brokers))
            self.admin.produce(run.topic, 200)
            run.act("topic", name=run.topic, partitions=sc.partitions)
            sc.run(run)
        except Exception:
            run.error = traceback.format_exc(limit=5)
        finally:
            run.finish()

    def stop(self) -> None:
        """Every client process still running is killed, then the cluster stops."""
        for run in self.runs:
            for client in run.clients.values():
                if client.proc.poll() is None:
                    client.kill()
        self.cluster.stop()

    def save(self, out: Path) -> Path:
        """Keep the logs (gzipped), the manifest and the ground truth under ``out/<release>/<profile>``."""
        dest = out / self.rel.line / self.profile.name
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        files: list[dict[str, Any]] = []
        for node in self.cluster.nodes:
            bdir = dest / node.name
            bdir.mkdir()
            logs = sorted(node.logs_dir.glob("kafka-request.log*")) + sorted(
                node.logs_dir.glob("server.log*")
            )
            for src in logs:
                target = bdir / (src.name + ".gz")
                with open(src, "rb") as fi, gzip.GzipFile(target, "wb", mtime=0) as fo:
                    shutil.copyfileobj(fi, fo)
                with open(src, "rb") as f:
                    lines = sum(1 for _ in f)
                files.append({"file": f"{node.name}/{target.name}", "lines": lines})
        manifest = {
            "release": self.rel.line,
            "kafka_version": self.rel.version,
            "profile": self.profile.name,
            "about": self.profile.about,
            "brokers": self.profile.brokers,
            "mode": "zookeeper" if self.rel.zookeeper else "kraft",
            "broker_settings": self.profile.settings,
            "clients": sorted(
                {(i["kind"], i["client_version"]) for r in self.runs for i in r.client_info.values()}
            ),
            "warmup_group": self.warmup_group,
            "started_ms": self.started_ms,
            "ended_ms": now_ms(),
            "scenarios": [r.scenario.name for r in self.runs],
            "failed": [r.scenario.name for r in self.runs if r.error],
            "files": files,
        }
        (dest / "manifest.json").write_text(json.dumps(manifest, indent=1, default=list) + "\n")
        truth = {
            "release": self.rel.line,
            "profile": self.profile.name,
            "scenarios": [r.truth() for r in self.runs],
        }
        (dest / "ground_truth.json").write_text(json.dumps(truth, indent=None, separators=(",", ":")) + "\n")
        return dest
