"""Kafka's own classic-group coordinator as a subprocess: ``../shared/kafka-oracle`` (see its README).

The oracle runs the ``GroupCoordinatorShard`` of Kafka 4.0's Java coordinator behind a JSON-lines pipe
with a mock clock. This module finds it, starts it, and speaks its protocol: one op in, the events it
produced (responses, timer firings) out, up to the op's ``done`` marker. Nothing here interprets the
answers; ``simulator.differential`` does.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

#: Where the oracle is looked for: ``$KAFKA_ORACLE_HOME`` when set, else ``../shared/kafka-oracle`` beside
#: the checkout (the workplace layout).
ENV_HOME = "KAFKA_ORACLE_HOME"
LAUNCHER = Path("bin") / "kafka-coordinator-oracle"


class OracleUnavailable(RuntimeError):
    """The oracle (or the Java it needs) is not on this machine; the message says which."""


class OracleError(RuntimeError):
    """The oracle process died or answered something that is not its protocol."""


def oracle_home() -> Path:
    """The oracle's directory, or :class:`OracleUnavailable` with a one-line reason."""
    env = os.environ.get(ENV_HOME)
    # a home named by the environment is the only one looked at: a wrong one is reported, not bypassed
    home = Path(env) if env else Path(__file__).resolve().parent.parent.parent / "shared" / "kafka-oracle"
    if not (home / LAUNCHER).is_file():
        hint = f"{ENV_HOME}={env} names no oracle" if env else f"set {ENV_HOME}"
        raise OracleUnavailable(f"no Kafka coordinator oracle at {home} ({hint})")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise OracleUnavailable("the Kafka coordinator oracle needs Java 17 on PATH (or JAVA_HOME)")
    return home


class KafkaOracle:
    """One oracle process. ``send(op)`` → the events the op produced, in order (``done`` excluded).

    Ops are numbered by the oracle from 0 after each ``reset``; :attr:`sent` is the number of the next.
    """

    def __init__(self, home: Path | None = None) -> None:
        home = home or oracle_home()
        self._proc = subprocess.Popen(
            [str(home / LAUNCHER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
        )
        self.sent = 0

    def send(self, op: dict[str, Any]) -> list[dict[str, Any]]:
        proc = self._proc
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(json.dumps(op, separators=(",", ":")) + "\n")
            proc.stdin.flush()
        except BrokenPipeError as exc:
            raise OracleError("the oracle process exited") from exc
        if op.get("op") == "reset":
            self.sent = 0
        else:
            self.sent += 1
        events: list[dict[str, Any]] = []
        while True:
            line = proc.stdout.readline()
            if not line:
                raise OracleError(f"the oracle process exited (status {proc.poll()}) while answering {op}")
            try:
                event = json.loads(line)
            except json.JSONDecodeError as exc:
                raise OracleError(f"the oracle printed a line that is not JSON: {line[:200]!r}") from exc
            if event.get("type") == "done":
                return events
            events.append(event)

    def reset(self, start_ms: int, config: dict[str, str], seed: int = 0) -> None:
        events = self.send({"op": "reset", "startMs": start_ms, "seed": seed, "config": config})
        errors = [e for e in events if e.get("type") == "error"]
        if errors:
            raise OracleError(f"the oracle refused the reset: {errors[0]}")

    def close(self) -> None:
        proc = self._proc
        if proc.poll() is None:
            assert proc.stdin is not None
            proc.stdin.close()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def __enter__(self) -> KafkaOracle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
