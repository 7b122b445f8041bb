"""A real Spark standalone cluster on this machine, from the pyspark package alone (no download): one
master and N workers, each a separate JVM started with pyspark's ``bin/spark-class``, logs and PIDs in a
directory of their own, stopped cleanly.

    python -m rebalance_replay.jobs.standalone start --dir /tmp/rr-cluster      # prints the master URL
    python -m rebalance_replay.jobs.standalone stop --dir /tmp/rr-cluster

Used by ``make cluster-demo`` and the ``cluster`` tests. Executors run Python on the driver's interpreter
(``PYSPARK_PYTHON``), which is right on one machine; on a real cluster that is the cluster's business.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for(path: Path, text: str, timeout_s: float, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            raise RuntimeError(f"{path.name}: exited with {proc.returncode}; see {path}")
        time.sleep(0.2)
    raise TimeoutError(f"{path.name}: no '{text}' after {timeout_s:.0f}s; see {path}")


@dataclass
class StandaloneCluster:
    """``with StandaloneCluster(root) as c: ... c.master_url``; workers in ``c.workers`` (Popen)."""

    root: Path
    workers_n: int = 2
    cores: int = 1
    memory: str = "2g"
    master_url: str = ""
    master: subprocess.Popen[bytes] | None = None
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def _spawn(self, name: str, args: Sequence[str]) -> tuple[subprocess.Popen[bytes], Path]:
        log = self.root / f"{name}.log"
        env = {**os.environ, "SPARK_HOME": str(spark_home()), "PYSPARK_PYTHON": sys.executable}
        env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [str(spark_home() / "bin" / "spark-class"), *args],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        return proc, log

    def start(self, timeout_s: float = 120) -> StandaloneCluster:
        self.root.mkdir(parents=True, exist_ok=True)
        port = _free_port()
        self.master, log = self._spawn(
            "master",
            [
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                str(_free_port()),
            ],
        )
        _wait_for(log, "I have been elected leader", timeout_s, self.master)
        self.master_url = f"spark://127.0.0.1:{port}"
        for i in range(self.workers_n):
            work = self.root / f"worker-{i}"
            work.mkdir(exist_ok=True)
            proc, wlog = self._spawn(
                f"worker-{i}",
                [
                    "org.apache.spark.deploy.worker.Worker",
                    self.master_url,
                    "--host",
                    "127.0.0.1",
                    "--cores",
                    str(self.cores),
                    "--memory",
                    self.memory,
                    "--work-dir",
                    str(work),
                    "--webui-port",
                    str(_free_port()),
                ],
            )
            self.workers.append(proc)
            _wait_for(wlog, "Successfully registered with master", timeout_s, proc)
        self._save()
        return self

    def _save(self) -> None:
        pids = {"master": self.master.pid if self.master else None, "workers": [w.pid for w in self.workers]}
        (self.root / "cluster.json").write_text(json.dumps({"master_url": self.master_url, **pids}))

    def stop(self) -> None:
        for proc in [*self.workers, *([self.master] if self.master else [])]:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in [*self.workers, *([self.master] if self.master else [])]:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()

    def kill_worker(self, i: int) -> None:
        """Kill one worker JVM and its executors at once (``kill -9``)."""
        os.killpg(self.workers[i].pid, signal.SIGKILL)
        self.workers[i].wait()

    def __enter__(self) -> StandaloneCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def stop_recorded(root: Path) -> None:
    """Stop a cluster started by ``start`` in another process (from its ``cluster.json``)."""
    info = json.loads((root / "cluster.json").read_text())
    for pid in [*info["workers"], info["master"]]:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGTERM)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m rebalance_replay.jobs.standalone", description=__doc__.splitlines()[0]
    )
    ap.add_argument("action", choices=("start", "stop"))
    ap.add_argument("--dir", required=True, type=Path)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)
    if args.action == "stop":
        stop_recorded(args.dir)
        return 0
    cluster = StandaloneCluster(args.dir, workers_n=args.workers).start()
    print(cluster.master_url)
    return 0


if __name__ == "__main__":
    sys.exit(main())
