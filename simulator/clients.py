"""A small discrete-event simulation of Java consumers talking to a group coordinator.

The coordinator is the project's own model run in ``predict`` mode, standing in for the broker; the
consumers follow the Java client's classic protocol (FindCoordinator, JoinGroup with the
MEMBER_ID_REQUIRED round trip, SyncGroup with a range assignment from the leader, heartbeats, offset
commits, LeaveGroup on close, rejoin on REBALANCE_IN_PROGRESS / UNKNOWN_MEMBER_ID). Every request and
its response becomes a bronze-shaped record that ``simulator.log_render`` turns into a real-format
``kafka-request.log`` line.

Used to make the bundled sample (``simulator/sample.py``), Spark test inputs and benchmark logs. It is
not an oracle for the model: the model's own unit tests carry Kafka's expectations.
"""

from __future__ import annotations

import heapq
import itertools
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from rebalance_replay.transforms.consumer_protocol import encode_assignment, encode_subscription
from rebalance_replay.transforms.coordinator.config import CoordinatorConfig
from rebalance_replay.transforms.coordinator.model import GroupCoordinatorModel
from rebalance_replay.transforms.coordinator.types import (
    GroupRequest,
    GroupState,
    LeaveMember,
    PredictedResponse,
    Prediction,
    Protocol,
)
from rebalance_replay.transforms.kafka_protocol import ApiKey, Errors

#: Request versions a Java client of each era sends (the highest both sides support).
API_VERSIONS: dict[str, dict[ApiKey, int]] = {
    "2.4": {
        ApiKey.JOIN_GROUP: 6,
        ApiKey.SYNC_GROUP: 4,
        ApiKey.HEARTBEAT: 4,
        ApiKey.LEAVE_GROUP: 4,
        ApiKey.OFFSET_COMMIT: 8,
        ApiKey.FIND_COORDINATOR: 3,
    },
    "2.7": {
        ApiKey.JOIN_GROUP: 7,
        ApiKey.SYNC_GROUP: 5,
        ApiKey.HEARTBEAT: 4,
        ApiKey.LEAVE_GROUP: 4,
        ApiKey.OFFSET_COMMIT: 8,
        ApiKey.FIND_COORDINATOR: 3,
    },
    "3.7": {
        ApiKey.JOIN_GROUP: 9,
        ApiKey.SYNC_GROUP: 5,
        ApiKey.HEARTBEAT: 4,
        ApiKey.LEAVE_GROUP: 5,
        ApiKey.OFFSET_COMMIT: 8,
        ApiKey.FIND_COORDINATOR: 4,
    },
}


#: The Java client's ``request.timeout.ms`` default and the lapse added to the rebalance timeout for
#: JoinGroup (``AbstractCoordinator.JOIN_GROUP_TIMEOUT_LAPSE``).
REQUEST_TIMEOUT_MS = 30_000
JOIN_GROUP_TIMEOUT_LAPSE_MS = 5_000

#: Actions that belong to the process's life, not to one membership: never made stale by a rejoin.
LIFECYCLE = frozenset(
    {"start", "close", "crash", "restart", "refresh", "stall", "resume", "poll_timeout", "poll_return"}
)


@dataclass
class ConsumerSpec:
    """One consumer process and what happens to it."""

    name: str  # client id suffix
    start_ms: int
    group_instance_id: str | None = None
    session_timeout_ms: int = 45_000
    rebalance_timeout_ms: int = 300_000
    heartbeat_interval_ms: int = 3_000
    commit_interval_ms: int = 5_000
    assignor: str = "range"
    close_ms: int | None = None  # graceful close: LeaveGroup (dynamic members only)
    crash_ms: int | None = None  # stops sending anything
    restart_ms: int | None = (
        None  # after a crash: a new process with the same spec (static: same instance id)
    )
    slow_rejoin_ms: int = 0  # extra delay before rejoining a rebalance (a slow poll loop)
    refresh_ms: int | None = None  # rejoins while stable then (its topic metadata changed)
    hang_sync_after_ms: int | None = None  # the first join answered after this never sends SyncGroup
    # incidents (simulator.incidents)
    stall_ms: int | None = None  # the process stops sending (GC, blocked poll loop) for stall_for_ms …
    stall_for_ms: int = 0  # … then heartbeats again on the same connection with its old member id
    poll_timeout_ms: int | None = None  # poll() overdue: LeaveGroup "consumer poll timeout has expired."
    poll_return_ms: int = 5_000  # … poll() returns this much later: a commit with the old id, then a rejoin
    double_join: bool = False  # KIP-394 double join: the first MEMBER_ID_REQUIRED answer is lost
    refresh_every_ms: int | None = None  # rejoins while stable at this cadence (refresh_reason)
    refresh_reason: str = "cached metadata has changed"
    refresh_at: tuple[int, ...] = ()  # rejoins while stable at these times (refresh_reason)
    commit_during_rebalance: bool = False  # commits go on (old generation) while it rejoins
    user_data: bytes | None = None  # the subscription's userData (an assignor's state: Streams' task lags)


@dataclass
class SimConfig:
    group_id: str
    topics: dict[str, int]  # topic → partitions
    consumers: list[ConsumerSpec]
    until_ms: int
    kafka_version: str = "3.7"
    broker_id: str = "broker-1"
    broker_host: str = "10.0.0.1"
    coordinator: CoordinatorConfig = field(default_factory=CoordinatorConfig)
    client_software_version: str = "3.7.1"


@dataclass
class _Client:
    spec: ConsumerSpec
    index: int
    client_id: str
    connection: str
    member_id: str = ""
    generation: int = -1
    assignment: tuple[tuple[str, tuple[int, ...]], ...] = ()
    state: str = "idle"  # idle, joining, syncing, stable, dead
    correlation: int = 0
    rejoin_reason: str = ""
    epoch: int = 0  # bumps on crash/restart: stale scheduled actions are ignored
    reconnects: int = 0
    restarts: int = 0
    double_joined: bool = False
    stale_member_id: str = ""  # the member id it had before a poll timeout
    stale_generation: int = -1


class Simulation:
    """Runs one group; ``records()`` yields bronze-shaped records in completion order."""

    def __init__(self, cfg: SimConfig) -> None:
        self.cfg = cfg
        self.versions = API_VERSIONS[cfg.kafka_version if cfg.kafka_version in API_VERSIONS else "3.7"]
        coord = replace(cfg.coordinator, mode="predict", warm_start=False, kafka_version=cfg.kafka_version)
        self.model = GroupCoordinatorModel(cfg.group_id, coord)
        self.queue: list[tuple[int, int, str, int, int]] = []  # (time, order, action, client, epoch)
        self.order = itertools.count()
        self.clients = [
            _Client(
                spec=s,
                index=i,
                client_id=f"consumer-{cfg.group_id}-{i + 1}",
                connection=f"{cfg.broker_host}:9092-10.1.{i // 250}.{i % 250 + 10}:{50000 + i}-{i}",
            )
            for i, s in enumerate(cfg.consumers)
        ]
        self.inflight: dict[tuple[str, int], tuple[_Client, GroupRequest, int]] = {}
        self.out: list[dict[str, Any]] = []
        self.sync_plan: dict[int, Prediction] = {}
        self.line = itertools.count(1)
        self.now = 0
        self._user_data = any(s.user_data is not None for s in cfg.consumers)

    # -- scheduling -----------------------------------------------------------------------------------
    def at(self, t: int, action: str, c: _Client) -> None:
        heapq.heappush(self.queue, (t, next(self.order), action, c.index, c.epoch))

    def run(self) -> list[dict[str, Any]]:
        self.now = min(c.spec.start_ms for c in self.clients)
        for c in self.clients:
            self.at(c.spec.start_ms, "start", c)
            if c.spec.close_ms is not None:
                self.at(c.spec.close_ms, "close", c)
            if c.spec.crash_ms is not None:
                self.at(c.spec.crash_ms, "crash", c)
            if c.spec.refresh_ms is not None:
                self.at(c.spec.refresh_ms, "refresh", c)
            if c.spec.refresh_every_ms:
                for t in range(
                    c.spec.start_ms + c.spec.refresh_every_ms, self.cfg.until_ms, c.spec.refresh_every_ms
                ):
                    self.at(t, "refresh", c)
            for t in c.spec.refresh_at:
                self.at(t, "refresh", c)
            if c.spec.stall_ms is not None:
                self.at(c.spec.stall_ms, "stall", c)
                self.at(c.spec.stall_ms + c.spec.stall_for_ms, "resume", c)
            if c.spec.poll_timeout_ms is not None:
                self.at(c.spec.poll_timeout_ms, "poll_timeout", c)
                self.at(c.spec.poll_timeout_ms + c.spec.poll_return_ms, "poll_return", c)
        step = 100  # the coordinator's timers run between client actions in small steps
        while self.now < self.cfg.until_ms:
            t = self.queue[0][0] if self.queue else self.cfg.until_ms + step
            if t > self.now + step or t > self.cfg.until_ms:
                self._advance(min(self.now + step, self.cfg.until_ms))
                continue
            self._advance(t)
            _, _, action, idx, epoch = heapq.heappop(self.queue)
            c = self.clients[idx]
            if epoch != c.epoch and action not in LIFECYCLE:  # a stale heartbeat/commit/rejoin/sync
                continue
            name, _, arg = action.partition(":")
            if arg:
                getattr(self, f"_on_{name}")(c, int(arg))
            else:
                getattr(self, f"_on_{action}")(c)
        self._advance(self.cfg.until_ms)
        return sorted(self.out, key=lambda r: (r["completion_ms"], r["_order"]))

    def _advance(self, t: int) -> None:
        if t > self.now:
            self.model.advance_to(t)
            self.now = t
        self._drain()

    def _drain(self) -> None:
        predictions, _events = self.model.drain()
        for p in predictions:
            self._respond(p)

    # -- requests -------------------------------------------------------------------------------------
    def _send(self, c: _Client, api: ApiKey, **fields: Any) -> None:
        c.correlation += 1
        if api is ApiKey.FIND_COORDINATOR:  # answered by any broker, outside the group coordinator
            req = GroupRequest(
                api=api,
                api_version=self.versions[api],
                group_id=self.cfg.group_id,
                arrival_ms=self.now,
                client_id=c.client_id,
                ref=(c.client_id, c.correlation),
            )
            answer = Prediction(
                seq=-1,
                request=req,
                response=PredictedResponse(error=Errors.NONE, completion_ms=self.now),
                state_before=GroupState.EMPTY,
                generation_before=0,
                state_after=GroupState.EMPTY,
                generation_after=0,
            )
            self.out.append(self._record(c, req, answer, self.now + 1))
            return
        req = GroupRequest(
            api=api,
            api_version=self.versions[api],
            group_id=self.cfg.group_id,
            arrival_ms=self.now,
            client_id=c.client_id,
            client_host=c.connection.split("-")[1].rsplit(":", 1)[0],
            ref=(c.client_id, c.correlation),
            **fields,
        )
        self.inflight[(c.client_id, c.correlation)] = (c, req, c.correlation)
        self.model.handle(req)
        self._drain()

    def _join(self, c: _Client) -> None:
        c.state = "joining"
        # the Java client's JoinGroup request timeout: max(request.timeout.ms, rebalance timeout + 5 s)
        timeout = max(REQUEST_TIMEOUT_MS, c.spec.rebalance_timeout_ms + JOIN_GROUP_TIMEOUT_LAPSE_MS)
        self.at(self.now + timeout, f"join_timeout:{c.correlation + 1}", c)
        topics = sorted(self.cfg.topics)
        owned = c.assignment if c.spec.assignor == "cooperative-sticky" else ()
        meta = encode_subscription(
            topics, user_data=c.spec.user_data, owned_partitions=owned, generation_id=c.generation
        )
        self._send(
            c,
            ApiKey.JOIN_GROUP,
            member_id=c.member_id,
            group_instance_id=c.spec.group_instance_id,
            session_timeout_ms=c.spec.session_timeout_ms,
            rebalance_timeout_ms=c.spec.rebalance_timeout_ms,
            protocol_type="consumer",
            protocols=(Protocol(c.spec.assignor, meta, len(meta)),),
            reason=c.rejoin_reason if self.versions[ApiKey.JOIN_GROUP] >= 8 else None,
        )

    def _on_join_timeout(self, c: _Client, correlation: int) -> None:
        """The JoinGroup is still unanswered at the client's request timeout: the client drops the
        connection and sends it again on a new one. The broker never answers the first (no log line)."""
        if c.state != "joining" or (c.client_id, correlation) not in self.inflight:
            return
        del self.inflight[(c.client_id, correlation)]
        c.reconnects += 1
        c.connection = c.connection.rsplit("-", 1)[0] + f"-{c.index + 1000 * c.reconnects}"
        self._join(c)

    def _on_start(self, c: _Client) -> None:
        c.state = "joining"
        c.member_id, c.generation, c.assignment, c.rejoin_reason = "", -1, (), ""
        self._send(c, ApiKey.FIND_COORDINATOR)
        self._join(c)

    def _on_restart(self, c: _Client) -> None:
        """A new process in the crashed one's place (same spec, client id and host): its connections have
        new ephemeral ports, which is how a broker's log tells it from the process before."""
        c.epoch += 1
        c.restarts += 1
        broker, client, index = c.connection.split("-")
        host = client.rsplit(":", 1)[0]
        c.connection = f"{broker}-{host}:{50000 + c.index + 5000 * c.restarts}-{index}"
        self._on_start(c)

    def _on_crash(self, c: _Client) -> None:
        c.state = "dead"
        c.epoch += 1
        if c.spec.restart_ms is not None:
            heapq.heappush(self.queue, (c.spec.restart_ms, next(self.order), "restart", c.index, c.epoch))

    def _on_close(self, c: _Client) -> None:
        if c.state == "dead":
            return
        if c.spec.group_instance_id is None and c.member_id:
            if self.versions[ApiKey.LEAVE_GROUP] >= 3:
                reason = "the consumer is being closed" if self.versions[ApiKey.LEAVE_GROUP] >= 5 else None
                self._send(c, ApiKey.LEAVE_GROUP, leave_members=(LeaveMember(c.member_id, None, reason),))
            else:
                self._send(
                    c, ApiKey.LEAVE_GROUP, member_id=c.member_id, leave_members=(LeaveMember(c.member_id),)
                )
        c.state = "dead"
        c.epoch += 1

    def _on_heartbeat(self, c: _Client) -> None:
        if c.state == "stable":
            self._send(
                c,
                ApiKey.HEARTBEAT,
                member_id=c.member_id,
                generation_id=c.generation,
                group_instance_id=c.spec.group_instance_id,
            )
            self.at(self.now + c.spec.heartbeat_interval_ms, "heartbeat", c)

    def _on_commit(self, c: _Client) -> None:
        racing = c.spec.commit_during_rebalance and c.state == "joining" and c.generation >= 0
        if (c.state == "stable" or racing) and c.assignment:
            parts = tuple((t, p) for t, ps in c.assignment for p in ps)
            self._send(
                c,
                ApiKey.OFFSET_COMMIT,
                member_id=c.member_id,
                generation_id=c.generation,
                group_instance_id=c.spec.group_instance_id,
                commit_partitions=parts,
            )
        if c.state == "stable" or racing:
            self.at(self.now + c.spec.commit_interval_ms, "commit", c)

    def _on_rejoin(self, c: _Client) -> None:
        if c.state != "dead":
            self._join(c)

    def _on_refresh(self, c: _Client) -> None:
        if c.state == "stable":  # the Java client rejoins when its subscribed topics' metadata changes
            c.epoch += 1
            c.rejoin_reason = c.spec.refresh_reason
            self._join(c)

    def _on_stall(self, c: _Client) -> None:
        if c.state == "stable":
            c.state = "stalled"  # sends nothing: scheduled heartbeats and commits see a new epoch
            c.epoch += 1

    def _on_resume(self, c: _Client) -> None:
        if c.state == "stalled":  # back on the same connection, with the member id it had
            c.state = "stable"
            self._on_heartbeat(c)
            self.at(self.now + c.spec.commit_interval_ms, "commit", c)

    def _on_poll_timeout(self, c: _Client) -> None:
        """The heartbeat thread sees poll() overdue: it leaves the group with the client's reason and
        forgets its member id (AbstractCoordinator.maybeLeaveGroup)."""
        if c.state != "stable" or c.spec.group_instance_id is not None:
            return
        self._send(
            c,
            ApiKey.LEAVE_GROUP,
            leave_members=(LeaveMember(c.member_id, None, "consumer poll timeout has expired."),),
        )
        c.stale_member_id, c.stale_generation = c.member_id, c.generation
        c.member_id, c.generation, c.state = "", -1, "polling"
        c.epoch += 1

    def _on_poll_return(self, c: _Client) -> None:
        """poll() returns: the application commits what it processed (with the old member id: refused),
        then the consumer rejoins with an empty member id."""
        if c.state != "polling":
            return
        if c.assignment:
            self._send(
                c,
                ApiKey.OFFSET_COMMIT,
                member_id=c.stale_member_id,
                generation_id=c.stale_generation,
                commit_partitions=tuple((t, p) for t, ps in c.assignment for p in ps),
            )
        c.assignment = ()
        c.rejoin_reason = ""
        self._join(c)

    # -- responses ------------------------------------------------------------------------------------
    def _respond(self, p: Prediction) -> None:
        key = p.request.ref
        assert key is not None
        entry = self.inflight.pop((key[0], key[1]), None)
        if entry is None:
            return
        c, req, _ = entry
        done = p.response.completion_ms if p.response.completion_ms is not None else self.now
        self.out.append(self._record(c, req, p, done + 1))
        if p.response.completion_ms is None or c.state == "dead":
            return
        err = p.response.error
        t = done + 2
        if req.api is ApiKey.JOIN_GROUP:
            if err == "MEMBER_ID_REQUIRED" and c.spec.double_join and not c.double_joined:
                c.double_joined = True  # the answer is lost to a race: it joins again with no member id
                self.at(t, "rejoin", c)
            elif err == "MEMBER_ID_REQUIRED":
                c.member_id = p.response.member_id or ""
                c.rejoin_reason = "rebalance failed due to MemberIdRequiredException"
                self.at(t, "rejoin", c)
            elif err == "NONE" and c.spec.hang_sync_after_ms is not None and t >= c.spec.hang_sync_after_ms:
                c.state = "dead"  # stuck before SyncGroup (e.g. a blocked rebalance listener): silent
                c.epoch += 1
            elif err == "NONE":
                c.member_id = p.response.member_id or c.member_id
                c.generation = p.response.generation_id if p.response.generation_id is not None else -1
                c.state = "syncing"
                c.rejoin_reason = ""
                self.sync_plan[c.index] = p  # the client answers after a network round trip
                self.at(t, "sync", c)
            elif err in ("GROUP_MAX_SIZE_REACHED", "INCONSISTENT_GROUP_PROTOCOL", "INVALID_SESSION_TIMEOUT"):
                c.state = "dead"  # fatal for the Java consumer: poll() throws, the application stops
                c.epoch += 1
            elif err in ("UNKNOWN_MEMBER_ID", "FENCED_INSTANCE_ID", "ILLEGAL_GENERATION"):
                c.member_id, c.generation = "", -1
                c.rejoin_reason = f"rebalance failed due to {err}"
                self.at(t + 100, "rejoin", c)
            else:
                self.at(t + 100, "rejoin", c)
        elif req.api is ApiKey.SYNC_GROUP:
            if err == "NONE":
                c.state = "stable"
                c.assignment = _decode_assignment(p.response.assignment)
                self.at(t + c.spec.heartbeat_interval_ms, "heartbeat", c)
                self.at(t + c.spec.commit_interval_ms, "commit", c)
            else:
                self._lost(c, err, t)
        elif req.api in (ApiKey.HEARTBEAT, ApiKey.OFFSET_COMMIT):
            if req.api is ApiKey.OFFSET_COMMIT and p.response.partition_errors:
                errs = [e for _, _, e in p.response.partition_errors if e != "NONE"]
                err = errs[0] if errs else Errors.NONE
            if err != "NONE" and c.state == "stable":
                self._lost(c, err, t)

    def _lost(self, c: _Client, err: str, t: int) -> None:
        c.state = "joining"
        c.epoch += 1
        if err in ("UNKNOWN_MEMBER_ID", "FENCED_INSTANCE_ID", "ILLEGAL_GENERATION"):
            c.member_id, c.generation = ("" if err != "ILLEGAL_GENERATION" else c.member_id), -1
        c.rejoin_reason = (
            "group is already rebalancing"
            if err == "REBALANCE_IN_PROGRESS"
            else f"rebalance failed due to {err}"
        )
        self.at(t + (c.spec.slow_rejoin_ms if err == "REBALANCE_IN_PROGRESS" else 0), "rejoin", c)
        if c.spec.commit_during_rebalance:  # the application's commits do not wait for the rejoin
            self.at(t + c.spec.commit_interval_ms, "commit", c)

    def _on_sync(self, c: _Client) -> None:
        p = self.sync_plan.pop(c.index)
        assignments: tuple[tuple[str, bytes | None], ...] = ()
        if p.response.leader == c.member_id and p.response.members and not p.response.skip_assignment:
            assignments = self._assign(p.response.members)
        self._send_sync(c, assignments, p)

    def _send_sync(
        self, c: _Client, assignments: tuple[tuple[str, bytes | None], ...], p: Prediction
    ) -> None:
        v5 = self.versions[ApiKey.SYNC_GROUP] >= 5
        self._send(
            c,
            ApiKey.SYNC_GROUP,
            member_id=c.member_id,
            generation_id=c.generation,
            group_instance_id=c.spec.group_instance_id,
            protocol_type="consumer" if v5 else None,
            protocol_name=(p.response.protocol_name if v5 else None),
            assignments=assignments,
        )

    def _assign(self, members: tuple[str, ...]) -> tuple[tuple[str, bytes | None], ...]:
        """Kafka's RangeAssignor: per topic, partitions split in member-id order."""
        ordered = sorted(members)
        per_member: dict[str, list[tuple[str, int]]] = {m: [] for m in ordered}
        for topic, n in sorted(self.cfg.topics.items()):
            base, extra = divmod(n, len(ordered))
            start = 0
            for i, m in enumerate(ordered):
                count = base + (1 if i < extra else 0)
                per_member[m].extend((topic, p) for p in range(start, start + count))
                start += count
        out = []
        for m in ordered:
            grouped: dict[str, list[int]] = {}
            for topic, part in per_member[m]:
                grouped.setdefault(topic, []).append(part)
            out.append((m, encode_assignment(tuple((t, tuple(ps)) for t, ps in sorted(grouped.items())))))
        return tuple(out)

    # -- records --------------------------------------------------------------------------------------
    def _record(self, c: _Client, req: GroupRequest, p: Prediction, completion_ms: int) -> dict[str, Any]:
        r = p.response
        total = float(completion_ms - req.arrival_ms) + 0.123
        remote = max(0.0, total - 0.6)
        rec: dict[str, Any] = {
            "_order": next(self.line),
            "log_level": "DEBUG",
            "api_key": int(req.api),
            "api_name": req.api.name,
            "api_version": req.api_version,
            "correlation_id": req.ref[1] if req.ref else 0,
            "client_id": c.client_id,
            "connection": c.connection,
            "security_protocol": "PLAINTEXT",
            "principal": "User:ANONYMOUS",
            "listener": "PLAINTEXT",
            "client_software_name": "apache-kafka-java",
            "client_software_version": self.cfg.client_software_version,
            "completion_ms": completion_ms,
            "total_time_ms": round(total, 3),
            "request_queue_time_ms": 0.05,
            "local_time_ms": 0.31,
            "remote_time_ms": round(remote, 3),
            "throttle_time_ms": 0,
            "response_queue_time_ms": 0.04,
            "send_time_ms": round(total - remote - 0.4, 3) if total - remote > 0.4 else 0.05,
            **request_fields(req, committed_offset=1000 + self.now // 100),
            "error_name": r.error if r.error in Errors.__members__ else "NONE",
        }
        rec["error_code"] = Errors[rec["error_name"]].code
        if req.api is ApiKey.FIND_COORDINATOR:
            node = int("".join(ch for ch in self.cfg.broker_id if ch.isdigit()) or 1)
            rec.update(key_type=0, group_ids=[req.group_id], response_coordinator_node_id=node)
        if req.api is ApiKey.JOIN_GROUP:
            rec.update(
                response_generation_id=r.generation_id if r.generation_id is not None else -1,
                response_leader=r.leader or "",
                response_member_id=r.member_id or "",
                response_protocol_type=r.protocol_type,
                response_protocol_name=r.protocol_name,
                response_skip_assignment=bool(r.skip_assignment),
                response_members=[
                    {
                        "member_id": m,
                        "group_instance_id": self._instance_of(m),
                        "metadata": self._metadata_of(m),
                        "metadata_length": None,
                    }
                    for m in (r.members or ())
                ],
            )
            for m in rec["response_members"]:
                m["metadata_length"] = len(m["metadata"] or b"")
        if req.api is ApiKey.SYNC_GROUP:
            rec.update(
                response_protocol_type="consumer" if req.api_version >= 5 else None,
                response_protocol_name=r.protocol_name if req.api_version >= 5 else None,
                response_assignment=r.assignment or b"",
                response_assignment_length=len(r.assignment or b""),
            )
        if req.api is ApiKey.LEAVE_GROUP:
            rec["response_leave_members"] = [
                {"member_id": m, "group_instance_id": None, "error_code": Errors[e].code, "error_name": e}
                for m, e in (r.member_errors or ())
            ]
        if req.api is ApiKey.OFFSET_COMMIT:
            rec["response_commit_partitions"] = [
                {"topic": t, "partition": q, "error_code": Errors[e].code, "error_name": e}
                for t, q, e in (r.partition_errors or ())
            ]
        return rec

    def _instance_of(self, member_id: str) -> str | None:
        group = self.model.group
        member = None if group is None else group.members.get(member_id)
        return None if member is None else member.group_instance_id

    def _metadata_of(self, member_id: str) -> bytes:
        user_data = None
        if self._user_data:  # a consumer with userData: the leader's answer carries that member's
            user_data = next((c.spec.user_data for c in self.clients if c.member_id == member_id), None)
        return encode_subscription(sorted(self.cfg.topics), user_data=user_data)


def request_fields(req: GroupRequest, *, committed_offset: int) -> dict[str, Any]:
    """The request half of a bronze-shaped record (what ``simulator.log_render`` renders as the
    request body): the typed fields of ``req`` under their ``requests`` column names."""
    return {
        "group_id": req.group_id,
        "member_id": req.member_id,
        "group_instance_id": req.group_instance_id,
        "generation_id": req.generation_id,
        "session_timeout_ms": req.session_timeout_ms,
        "rebalance_timeout_ms": req.rebalance_timeout_ms,
        "protocol_type": req.protocol_type,
        "protocol_name": req.protocol_name,
        "reason": req.reason,
        "protocols": [
            {"name": x.name, "metadata": x.metadata, "metadata_length": x.metadata_length}
            for x in req.protocols
        ]
        if req.api is ApiKey.JOIN_GROUP
        else None,
        "assignments": [
            {"member_id": m, "assignment": a, "assignment_length": len(a or b"")} for m, a in req.assignments
        ]
        if req.api is ApiKey.SYNC_GROUP
        else None,
        "leave_members": [
            {"member_id": m.member_id, "group_instance_id": m.group_instance_id, "reason": m.reason}
            for m in req.leave_members
        ]
        if req.api is ApiKey.LEAVE_GROUP
        else None,
        "commit_partitions": [
            {"topic": t, "partition": q, "committed_offset": committed_offset}
            for t, q in req.commit_partitions
        ]
        if req.api is ApiKey.OFFSET_COMMIT
        else None,
    }


def _decode_assignment(data: bytes | None) -> tuple[tuple[str, tuple[int, ...]], ...]:
    from rebalance_replay.transforms.consumer_protocol import try_decode_assignment

    if not data:
        return ()
    a = try_decode_assignment(data)
    return a.partitions if a is not None else ()


def simulate(cfg: SimConfig) -> list[dict[str, Any]]:
    """Bronze-shaped records of one group's traffic, in completion order."""
    return Simulation(cfg).run()


def member_uuid(seed: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, seed))


def steady_group(
    group_id: str,
    members: int,
    minutes: float,
    *,
    start_ms: int,
    kafka_version: str = "3.7",
    broker_id: str = "broker-1",
) -> SimConfig:
    """A group of ``members`` dynamic consumers that start together and then heartbeat for ``minutes``."""
    specs = [ConsumerSpec(name=str(i), start_ms=start_ms + 37 * i) for i in range(members)]
    return SimConfig(
        group_id=group_id,
        topics={f"{group_id}-events": max(members, 6)},
        consumers=specs,
        until_ms=start_ms + int(minutes * 60_000),
        kafka_version=kafka_version,
        broker_id=broker_id,
    )


def iter_records(configs: list[SimConfig]) -> Iterator[tuple[SimConfig, dict[str, Any]]]:
    for cfg in configs:
        for rec in simulate(cfg):
            yield cfg, rec
