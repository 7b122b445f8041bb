"""Real consumer processes, each a separate OS process so that a crash is a real crash.

- :class:`JavaClient`: ``ScenarioClient`` (``java/ScenarioClient.java``) on a ``kafka-clients`` classpath
  of a chosen version: the Java consumer, one or more per process.
- :class:`RdkafkaClient`: ``simulator/realkafka/rdclient.py`` under this Python, i.e. librdkafka through
  the ``confluent-kafka`` wheel.

Both speak the same script (JSON ops on standard input: start, processing, stall, commit, rebalance,
close) and report the same events (JSON lines on standard output), which a reader thread stamps and keeps.
``kill()`` is SIGKILL: no LeaveGroup, no commit, nothing flushed.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from simulator.realkafka.jars import CACHE, Release, client_classes, fetch, java

HERE = Path(__file__).resolve().parent

#: The client JVM's logging: WARN and above into a file beside the recording (never the request log).
CLIENT_LOG4J1 = """\
log4j.rootLogger=WARN, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File=${client.log}
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
"""
CLIENT_LOG4J2 = """\
Configuration:
  Appenders:
    File:
      name: FILE
      fileName: "${sys:client.log}"
      PatternLayout:
        pattern: "[%d] %p %m (%c)%n"
  Loggers:
    Root:
      level: WARN
      AppenderRef:
        ref: FILE
"""


class ClientProcess:
    """One client process: the script goes in, stamped events come out."""

    kind = "?"

    def __init__(
        self, name: str, argv: list[str], log_dir: Path, env: Mapping[str, str] | None = None
    ) -> None:
        self.name = name
        self.events: list[dict[str, Any]] = []
        self.started_ms = int(time.time() * 1000)
        log_dir.mkdir(parents=True, exist_ok=True)
        self._stderr = open(log_dir / f"{name}.stderr", "ab")  # noqa: SIM115 - closed in _reap
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            start_new_session=True,
            env={**os.environ, **(env or {})},
        )
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, name=f"read-{name}", daemon=True)
        self._reader.start()
        self.killed_ms: int | None = None

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            try:
                event = json.loads(raw)
            except ValueError:
                event = {
                    "t": int(time.time() * 1000),
                    "event": "output",
                    "text": raw.decode(errors="replace"),
                }
            with self._lock:
                self.events.append(event)

    def send(self, op: Mapping[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(op) + "\n").encode())
        self.proc.stdin.flush()

    def start(
        self,
        config: Mapping[str, Any],
        topics: Sequence[str],
        *,
        consumers: int = 1,
        commit: str = "auto",
        processing_ms: int = 0,
        poll_ms: int = 100,
        assign_delay_ms: int = 0,
    ) -> None:
        op: dict[str, Any] = {
            "op": "start",
            "config": dict(config),
            "topics": list(topics),
            "consumers": consumers,
            "commit": commit,
            "processing_ms": processing_ms,
            "poll_ms": poll_ms,
        }
        if assign_delay_ms:
            op["assign_delay_ms"] = assign_delay_ms  # the Java client's SlowRangeAssignor
        self.send(op)

    def wait_for(self, event: str, count: int = 1, timeout_s: float = 60.0) -> bool:
        """Until ``count`` events named ``event`` have come (False when the time ran out)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self._lock:
                if sum(1 for e in self.events if e.get("event") == event) >= count:
                    return True
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        with self._lock:
            return sum(1 for e in self.events if e.get("event") == event) >= count

    def close(self, timeout_s: float = 45.0) -> None:
        """Close every consumer (LeaveGroup) and let the process exit."""
        if self.proc.poll() is None:
            try:
                self.send({"op": "close"})
                self.proc.wait(timeout_s)
            except (BrokenPipeError, subprocess.TimeoutExpired):
                self.kill()
        self._reap()

    def kill(self) -> None:
        """A crash: SIGKILL."""
        if self.proc.poll() is None:
            self.killed_ms = int(time.time() * 1000)
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self._reap()

    def _reap(self) -> None:
        self._reader.join(timeout=5)
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                self.proc.stdin.close()
        self._stderr.close()

    def snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.events)


class JavaClient(ClientProcess):
    """The Java consumer of ``kafka-clients`` ``version`` (default: the release's own)."""

    kind = "java"

    def __init__(
        self, name: str, rel: Release, log_dir: Path, version: str | None = None, heap_mb: int = 192
    ) -> None:
        self.version = version or rel.version
        lib = fetch(rel, "kafka-clients", self.version)
        classes = client_classes(rel)
        if rel.log4j2:
            cfg = CACHE / "client-log4j2.yaml"
            cfg.write_text(CLIENT_LOG4J2)
            log_flag = f"-Dlog4j2.configurationFile={cfg}"
        else:
            cfg = CACHE / "client-log4j.properties"
            cfg.write_text(CLIENT_LOG4J1)
            log_flag = f"-Dlog4j.configuration=file:{cfg}"
        argv = [
            java(),
            f"-Xmx{heap_mb}m",
            "-XX:TieredStopAtLevel=1",
            "-XX:+UseSerialGC",
            f"-Dclient.log={log_dir / (name + '.client.log')}",
            log_flag,
            "-cp",
            f"{lib}/*:{classes}",
            "ScenarioClient",
        ]
        super().__init__(name, argv, log_dir)


class RdkafkaClient(ClientProcess):
    """librdkafka through ``confluent-kafka`` (``rdclient.py``), in a Python process of its own."""

    kind = "librdkafka"

    def __init__(self, name: str, log_dir: Path) -> None:
        try:
            import confluent_kafka
        except ImportError as e:  # pragma: no cover - the dev extra installs it
            raise RuntimeError("the librdkafka client needs confluent-kafka (pip install -e '.[dev]')") from e
        self.version = f"{confluent_kafka.__version__}-rdkafka-{confluent_kafka.libversion()[0]}"
        repo = HERE.parent.parent
        argv = [sys.executable, "-m", "simulator.realkafka.rdclient"]
        super().__init__(name, argv, log_dir, env={"PYTHONPATH": str(repo)})
