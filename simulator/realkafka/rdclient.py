"""librdkafka as a scenario client: ``python -m simulator.realkafka.rdclient``, the same script and events
as ``java/ScenarioClient.java`` (see that file), through the ``confluent-kafka`` wheel.

One process, one or more consumers, each polled by its own thread. Test tooling, not installed.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any

_OUT = threading.Lock()


def emit(consumer: int, event: str, **extra: Any) -> None:
    line = json.dumps({"t": int(time.time() * 1000), "consumer": consumer, "event": event, **extra})
    with _OUT:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


class Worker:
    def __init__(
        self,
        index: int,
        config: dict[str, Any],
        topics: list[str],
        commit: str,
        poll_ms: int,
        processing_ms: int,
    ) -> None:
        from confluent_kafka import Consumer

        cfg = dict(config)
        if commit != "auto":
            cfg.setdefault("enable.auto.commit", False)
        self.index = index
        self.consumer = Consumer(cfg)
        self.topics = topics
        self.commit = commit
        self.poll_s = poll_ms / 1000
        self.processing_ms = processing_ms
        self.stall_ms = 0
        self.commit_now = False
        self.closing = False
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.run, name=f"consumer-{index}", daemon=True)

    def _names(self, parts: list[Any]) -> list[str]:
        return sorted(f"{p.topic}-{p.partition}" for p in parts)

    def _member(self) -> dict[str, Any]:
        """The member id the coordinator gave this consumer (as the Java client's events carry it)."""
        try:
            return {"member_id": self.consumer.memberid() or None}
        except Exception:
            return {}

    def run(self) -> None:
        c = self.consumer

        def on_assign(_c: Any, parts: list[Any]) -> None:
            emit(self.index, "assigned", partitions=self._names(parts), **self._member())

        def on_revoke(_c: Any, parts: list[Any]) -> None:
            emit(self.index, "revoked", partitions=self._names(parts), **self._member())

        def on_lost(_c: Any, parts: list[Any]) -> None:
            emit(self.index, "lost", partitions=self._names(parts), **self._member())

        c.subscribe(self.topics, on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
        emit(self.index, "ready", topics=self.topics)
        try:
            while not self.closing:
                if self.stall_ms:
                    ms, self.stall_ms = self.stall_ms, 0
                    emit(self.index, "stall_start", ms=ms)
                    time.sleep(ms / 1000)
                    emit(self.index, "stall_end", ms=ms)
                msg = c.poll(self.poll_s)
                err = None if msg is None else msg.error()
                got = msg is not None and err is None
                if err is not None:
                    emit(self.index, "poll_error", error=str(err), fatal=err.fatal())
                    if err.fatal():  # the application's loop stops; the process idles until closed
                        while not self.closing:
                            time.sleep(0.05)
                        break
                if self.processing_ms:
                    time.sleep(self.processing_ms / 1000)
                if self.commit_now or (self.commit == "sync" and got):
                    self.commit_now = False
                    try:
                        c.commit(asynchronous=False)
                        emit(self.index, "committed")
                    except Exception as e:
                        emit(self.index, "commit_failed", error=str(e))
                elif self.commit == "async" and got:
                    c.commit(asynchronous=True)
            emit(self.index, "closing")
            c.close()
            emit(self.index, "closed")
        finally:
            self.done.set()


def main() -> None:
    workers: list[Worker] = []
    for raw in sys.stdin:
        raw = raw.strip()
        if not raw:
            continue
        op = json.loads(raw)
        name = op["op"]
        targets = workers if op.get("consumer") is None else [workers[int(op["consumer"])]]
        if name == "start":
            batch = []
            for i in range(int(op.get("consumers", 1))):
                index = len(workers) + i
                config = {
                    k: (v.replace("{i}", str(index)) if isinstance(v, str) else v)
                    for k, v in op["config"].items()
                }
                batch.append(
                    Worker(
                        index,
                        config,
                        list(op["topics"]),
                        op.get("commit", "auto"),
                        int(op.get("poll_ms", 100)),
                        int(op.get("processing_ms", 0)),
                    )
                )
            workers.extend(batch)
            for w in batch:
                w.thread.start()
        elif name == "processing":
            for w in workers:
                w.processing_ms = int(op["ms"])
            emit(-1, "processing", ms=op["ms"])
        elif name == "stall":
            for w in targets:
                w.stall_ms = int(op["ms"])
        elif name == "commit":
            for w in targets:
                w.commit_now = True
        elif name == "rebalance":
            emit(-1, "bad_op", op=name)  # librdkafka has no enforceRebalance
        elif name == "close":
            for w in targets:
                w.closing = True
            for w in targets:
                w.done.wait(60)
            if len(targets) == len(workers):
                emit(-1, "exit")
                return
        else:
            emit(-1, "bad_op", op=name)
    for w in workers:
        w.closing = True
    for w in workers:
        w.done.wait(60)
    emit(-1, "exit")


if __name__ == "__main__":
    main()
