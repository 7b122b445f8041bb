"""Real Kafka brokers on loopback, started from the release's Maven jars (no tarball, no scripts, no
Docker), with request logging on: ``kafka.request.logger`` at DEBUG into ``kafka-request.log`` and the
root logger into ``server.log``, both with the shipped pattern and hourly rolling.

- 2.7: one ZooKeeper (``ZooKeeperServerMain``) and 1 or 3 brokers in ZooKeeper mode.
- 3.7 and 4.x: 1 or 3 KRaft nodes, each ``broker,controller`` (combined), formatted with ``StorageTool``.

Every process is ours (PIDs recorded), every port a free loopback port, every node its own
``kafka.logs.dir``; :meth:`Cluster.stop` stops them with SIGTERM (a clean shutdown), SIGKILL after a
grace period. ``kill(node)`` is a crash (SIGKILL), ``shutdown(node)`` a controlled shutdown.
"""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from simulator.realkafka.jars import Release, fetch, java

#: log4j 1 / reload4j (2.7, 3.7): the shipped ``config/log4j.properties`` keys for these two files,
#: ``kafka.request.logger`` at DEBUG instead of WARN; the console appender left out (``server.log`` has
#: it all).
LOG4J1 = """\
log4j.rootLogger=INFO, kafkaAppender
log4j.appender.kafkaAppender=org.apache.log4j.DailyRollingFileAppender
log4j.appender.kafkaAppender.DatePattern='.'yyyy-MM-dd-HH
log4j.appender.kafkaAppender.File=${kafka.logs.dir}/server.log
log4j.appender.kafkaAppender.layout=org.apache.log4j.PatternLayout
log4j.appender.kafkaAppender.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.appender.requestAppender=org.apache.log4j.DailyRollingFileAppender
log4j.appender.requestAppender.DatePattern='.'yyyy-MM-dd-HH
log4j.appender.requestAppender.File=${kafka.logs.dir}/kafka-request.log
log4j.appender.requestAppender.layout=org.apache.log4j.PatternLayout
log4j.appender.requestAppender.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka=INFO
log4j.logger.org.apache.kafka=INFO
log4j.logger.org.apache.zookeeper=INFO
log4j.logger.kafka.request.logger=DEBUG, requestAppender
log4j.additivity.kafka.request.logger=false
log4j.logger.kafka.network.RequestChannel$=WARN, requestAppender
log4j.additivity.kafka.network.RequestChannel$=false
"""

#: log4j2 (4.x): the shipped ``config/log4j2.yaml`` for these two files, the request logger at DEBUG.
LOG4J2 = """\
Configuration:
  Properties:
    Property:
      - name: "kafka.logs.dir"
        value: "."
      - name: "logPattern"
        value: "[%d] %p %m (%c)%n"
  Appenders:
    RollingFile:
      - name: KafkaAppender
        fileName: "${sys:kafka.logs.dir}/server.log"
        filePattern: "${sys:kafka.logs.dir}/server.log.%d{yyyy-MM-dd-HH}"
        PatternLayout:
          pattern: "${logPattern}"
        TimeBasedTriggeringPolicy:
          modulate: true
          interval: 1
      - name: RequestAppender
        fileName: "${sys:kafka.logs.dir}/kafka-request.log"
        filePattern: "${sys:kafka.logs.dir}/kafka-request.log.%d{yyyy-MM-dd-HH}"
        PatternLayout:
          pattern: "${logPattern}"
        TimeBasedTriggeringPolicy:
          modulate: true
          interval: 1
  Loggers:
    Root:
      level: INFO
      AppenderRef:
        - ref: KafkaAppender
    Logger:
      - name: kafka
        level: INFO
      - name: org.apache.kafka
        level: INFO
      - name: kafka.request.logger
        level: DEBUG
        additivity: false
        AppenderRef:
          ref: RequestAppender
      - name: kafka.network.RequestChannel$
        level: WARN
        additivity: false
        AppenderRef:
          ref: RequestAppender
"""

#: What every broker of a test cluster gets besides its listeners and folders. Small topics make
#: ``__consumer_offsets`` quick to create; the group settings come from the scenario profile.
BASE_BROKER = {
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "num.partitions": "3",
    "auto.create.topics.enable": "false",
    "log.flush.interval.messages": "10000",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
}

STARTED = {
    True: "started (kafka.server.KafkaServer)",  # ZooKeeper mode (2.7)
    False: "Kafka Server started",  # KRaft (3.7, 4.x)
}


def _ephemeral_ports() -> tuple[int, int]:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def free_port() -> int:
    """A free loopback port *below* the kernel's ephemeral range: a port picked from that range can be
    taken by any client connection (a consumer's, ZooKeeper's) before the broker binds it."""
    low, _high = _ephemeral_ports()
    rng = random.Random()
    for _ in range(200):
        port = rng.randrange(max(1024, low - 12000), low - 1)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise ClusterError(f"no free loopback port below {low}")


class ClusterError(RuntimeError):
    """A broker did not start, or stopped when it should not have; the message names its log."""


@dataclass
class Node:
    node_id: int
    port: int
    controller_port: int
    logs_dir: Path  # kafka.logs.dir: kafka-request.log, server.log, stdout.log
    data_dir: Path
    props: Path
    proc: subprocess.Popen[bytes] | None = None
    start_offset: int = 0  # where in server.log the current start's lines begin

    @property
    def name(self) -> str:
        return f"broker-{self.node_id}"


@dataclass
class Cluster:
    """``brokers`` real brokers of ``rel`` under ``workdir`` with ``settings`` (broker properties)."""

    rel: Release
    workdir: Path
    brokers: int = 1
    settings: Mapping[str, str] = field(default_factory=dict)
    heap_mb: int = 384
    nodes: list[Node] = field(default_factory=list)
    zk_proc: subprocess.Popen[bytes] | None = None
    zk_port: int = 0
    lib: Path | None = None

    # ---------------------------------------------------------------- set-up

    def _jvm(self, logs_dir: Path, main: str, *args: str) -> list[str]:
        assert self.lib is not None
        if self.rel.log4j2:
            cfg = self.workdir / "log4j2.yaml"
            log_flag = f"-Dlog4j2.configurationFile={cfg}"
        else:
            cfg = self.workdir / "log4j.properties"
            log_flag = f"-Dlog4j.configuration=file:{cfg}"
        return [
            java(),
            f"-Xmx{self.heap_mb}m",
            f"-Xms{min(self.heap_mb, 128)}m",
            "-XX:+UseG1GC",
            "-XX:TieredStopAtLevel=1",
            "-Djava.awt.headless=true",
            f"-Dkafka.logs.dir={logs_dir}",
            log_flag,
            "-cp",
            f"{self.lib}/*",
            main,
            *args,
        ]

    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{n.port}" for n in self.nodes if n.proc is not None)

    def all_bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{n.port}" for n in self.nodes)

    def prepare(self) -> None:
        self.lib = fetch(self.rel, "kafka_2.13")
        self.workdir.mkdir(parents=True, exist_ok=True)
        (self.workdir / "log4j.properties").write_text(LOG4J1)
        (self.workdir / "log4j2.yaml").write_text(LOG4J2)
        ids = range(1, self.brokers + 1)
        ports = {i: (free_port(), free_port()) for i in ids}
        voters = ",".join(f"{i}@127.0.0.1:{ports[i][1]}" for i in ids)
        rf = "3" if self.brokers >= 3 else "1"
        if self.rel.zookeeper:
            self.zk_port = free_port()
        for i in ids:
            port, cport = ports[i]
            base = self.workdir / f"broker-{i}"
            node = Node(i, port, cport, base / "logs", base / "data", base / "server.properties")
            node.logs_dir.mkdir(parents=True, exist_ok=True)
            props: dict[str, str] = dict(BASE_BROKER)
            props["offsets.topic.replication.factor"] = rf
            props["log.dirs"] = str(node.data_dir)
            if self.rel.zookeeper:
                props.update(
                    {
                        "broker.id": str(i),
                        "listeners": f"PLAINTEXT://127.0.0.1:{port}",
                        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
                        "zookeeper.connect": f"127.0.0.1:{self.zk_port}/kafka",
                        "zookeeper.connection.timeout.ms": "18000",
                    }
                )
                props.pop("share.coordinator.state.topic.replication.factor")
                props.pop("share.coordinator.state.topic.min.isr")
            else:
                props.update(
                    {
                        "process.roles": "broker,controller",
                        "node.id": str(i),
                        "controller.quorum.voters": voters,
                        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{cport}",
                        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
                        "controller.listener.names": "CONTROLLER",
                        "inter.broker.listener.name": "PLAINTEXT",
                        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                    }
                )
                if not self.rel.log4j2:  # 3.x has no share coordinator
                    props.pop("share.coordinator.state.topic.replication.factor")
                    props.pop("share.coordinator.state.topic.min.isr")
            props.update(self.settings)
            node.props.write_text("".join(f"{k}={v}\n" for k, v in sorted(props.items())))
            self.nodes.append(node)
        if not self.rel.zookeeper:
            cluster_id = _kraft_cluster_id()
            for node in self.nodes:
                cmd = self._jvm(node.logs_dir / "format", "kafka.tools.StorageTool")
                cmd += ["format", "-t", cluster_id, "-c", str(node.props)]
                proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
                if proc.returncode != 0:
                    raise ClusterError(
                        f"StorageTool format failed for {node.name}: {proc.stdout}{proc.stderr}"
                    )

    # ---------------------------------------------------------------- processes

    def start(self, timeout_s: float = 120.0) -> None:
        """Start ZooKeeper (2.7) and every node, and wait until each says it has started."""
        if not self.nodes:
            self.prepare()
        if self.rel.zookeeper:
            self._start_zookeeper()
        for node in self.nodes:
            self._spawn(node)
        for node in self.nodes:
            self._await_started(node, timeout_s)

    def _start_zookeeper(self) -> None:
        zk_dir = self.workdir / "zookeeper"
        (zk_dir / "data").mkdir(parents=True, exist_ok=True)
        cfg = zk_dir / "zookeeper.properties"
        cfg.write_text(
            f"dataDir={zk_dir / 'data'}\nclientPort={self.zk_port}\nclientPortAddress=127.0.0.1\n"
            "maxClientCnxns=0\nadmin.enableServer=false\n4lw.commands.whitelist=ruok\n"
        )
        out = open(zk_dir / "stdout.log", "ab")  # noqa: SIM115 - the child process keeps it
        self.zk_proc = subprocess.Popen(
            self._jvm(zk_dir, "org.apache.zookeeper.server.ZooKeeperServerMain", str(cfg)),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.zk_port), timeout=1) as s:
                    s.sendall(b"ruok")
                    if s.recv(4) == b"imok":
                        return
            except OSError:
                pass
            if self.zk_proc.poll() is not None:
                raise ClusterError(f"ZooKeeper exited: see {zk_dir / 'stdout.log'}")
            time.sleep(0.3)
        raise ClusterError(f"ZooKeeper did not answer on port {self.zk_port} within 60 s")

    def _spawn(self, node: Node) -> None:
        out = open(node.logs_dir / "stdout.log", "ab")  # noqa: SIM115 - the child process keeps it
        node.proc = subprocess.Popen(
            self._jvm(node.logs_dir, "kafka.Kafka", str(node.props)),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )

    def _await_started(self, node: Node, timeout_s: float) -> None:
        marker = STARTED[self.rel.zookeeper]
        server_log = node.logs_dir / "server.log"
        start_size = node.start_offset
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if server_log.is_file():
                with open(server_log, "rb") as f:
                    f.seek(start_size)
                    if marker.encode() in f.read():
                        return
            assert node.proc is not None
            if node.proc.poll() is not None:
                raise ClusterError(
                    f"{node.name} exited with {node.proc.returncode}: see {node.logs_dir}/stdout.log"
                )
            time.sleep(0.25)
        raise ClusterError(f"{node.name} did not start within {timeout_s:.0f} s: see {server_log}")

    def restart(self, node_id: int, timeout_s: float = 120.0) -> None:
        node = self.node(node_id)
        server_log = node.logs_dir / "server.log"
        node.start_offset = server_log.stat().st_size if server_log.is_file() else 0
        self._spawn(node)
        self._await_started(node, timeout_s)

    def node(self, node_id: int) -> Node:
        for n in self.nodes:
            if n.node_id == node_id:
                return n
        raise KeyError(node_id)

    def kill(self, node_id: int) -> None:
        """A crash: SIGKILL, nothing flushed, no controlled shutdown."""
        node = self.node(node_id)
        if node.proc is not None and node.proc.poll() is None:
            os.kill(node.proc.pid, signal.SIGKILL)
            node.proc.wait()
        node.proc = None

    def shutdown(self, node_id: int, timeout_s: float = 60.0) -> None:
        """A clean stop: SIGTERM runs Kafka's shutdown hook (controlled shutdown moves leadership first)."""
        node = self.node(node_id)
        if node.proc is not None and node.proc.poll() is None:
            os.kill(node.proc.pid, signal.SIGTERM)
            try:
                node.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                os.kill(node.proc.pid, signal.SIGKILL)
                node.proc.wait()
        node.proc = None

    def stop(self) -> None:
        """Every node cleanly (in parallel: a KRaft quorum must stay up while its members shut down),
        then ZooKeeper."""
        live = [n for n in self.nodes if n.proc is not None and n.proc.poll() is None]
        for n in live:
            assert n.proc is not None
            os.kill(n.proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 60
        for n in live:
            assert n.proc is not None
            try:
                n.proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.kill(n.proc.pid, signal.SIGKILL)
                n.proc.wait()
            n.proc = None
        if self.zk_proc is not None and self.zk_proc.poll() is None:
            self.zk_proc.terminate()
            try:
                self.zk_proc.wait(20)
            except subprocess.TimeoutExpired:
                self.zk_proc.kill()
                self.zk_proc.wait()
        self.zk_proc = None

    def __enter__(self) -> Cluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _kraft_cluster_id() -> str:
    """What ``StorageTool random-uuid`` prints: Kafka's ``Uuid`` in URL-safe base64 without padding, never
    starting with '-'."""
    import base64

    while True:
        raw = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not raw.startswith("-"):
            return raw
