"""What the log tells about the brokers, gathered on Spark (the logic is
:mod:`rebalance_replay.transforms.broker_facts`): the Kafka version, the coordinator, the clients, and the
``group.*`` settings the answers reveal; the configuration the replay and the audit then use.

Cheap by construction: the evidence of the other-API and other-logger lines was kept at ingest
(``<warehouse>/_ingest/evidence.json``, per broker); here one aggregate over four small columns of
``requests`` (versions, eras, client software), the JoinGroup rows' few columns, and one OffsetCommit
request body. The outcome is kept in ``<warehouse>/_broker/facts.json`` for the requests version and
configuration it was made from, so ``audit`` after ``replay`` (or a rerun) reads it instead; the pass's
own observations (sums, maxima, the JoinGroup rows) are carried in ``<warehouse>/_broker/observed.json``
(:mod:`rebalance_replay.jobs.carry`), so a scheduled run reads only the requests appended since.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rebalance_replay.jobs.bookkeeping import write_json
from rebalance_replay.jobs.carry import Carry
from rebalance_replay.jobs.config import Config, build_config
from rebalance_replay.jobs.settings import defaults
from rebalance_replay.schemas import REQUESTS
from rebalance_replay.transforms import broker_facts as bf
from rebalance_replay.transforms.kafka_protocol import ApiKey
from rebalance_replay.transforms.kafka_version import parse_kafka_version
from rebalance_replay.transforms.report.units import plural

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

    from rebalance_replay.jobs.delta import DeltaStore

EVIDENCE_FILE = Path("_ingest") / "evidence.json"
FACTS_FILE = Path("_broker") / "facts.json"


def load_evidence(warehouse: str) -> dict[str, dict[str, Any]]:
    path = Path(warehouse) / EVIDENCE_FILE
    if not path.exists():
        return {}
    data: dict[str, dict[str, Any]] = json.loads(path.read_text())
    return data


def save_evidence(warehouse: str, new: Mapping[str, Mapping[str, Any]]) -> None:
    """Merge an ingest batch's evidence (per broker) into the warehouse's."""
    if not new:
        return
    current = load_evidence(warehouse)
    for broker, doc in new.items():
        bf.merge_evidence(current.setdefault(broker, {}), doc)
    write_json(Path(warehouse) / EVIDENCE_FILE, current, indent=1)


@dataclasses.dataclass(frozen=True)
class BrokerFacts:
    """The outcome: the configuration to run with and the ``broker`` section of ``summary.json``."""

    config: Config
    summary: dict[str, Any]

    def lines(self) -> list[str]:
        return summary_lines(self.summary)


def summary_lines(s: Mapping[str, Any]) -> list[str]:
    """The CLI lines: what was detected, and every contradiction."""
    kv, co = s.get("kafka_version") or {}, s.get("coordinator") or {}
    clients = ", ".join(
        f"{c['software']} {c['version']} ({c['requests']})" for c in (s.get("clients") or [])[:4]
    )
    out = [
        f"broker: Kafka {kv.get('value')} ({kv.get('source')}), {co.get('value')} coordinator "
        f"({co.get('source')})" + (f"; clients: {clients}" if clients else "")
    ]
    used = s.get("settings") or {}
    told = [
        f"{k}={v['value']}" for k, v in sorted(used.items()) if str(v.get("source", "")).startswith("log")
    ]
    if told:
        out.append(f"broker: from the log: {', '.join(told)}")
    for c in s.get("contradictions") or []:
        out.append(f"broker: CONTRADICTION: {c}")
    return out


def _fingerprint(config: Config, requests_version: int | None, evidence: Mapping[str, Any]) -> str:
    relevant = {k: config.raw.get(k) for k in ("kafka", "broker")}
    relevant["infer"] = config.replay.infer_broker
    doc = json.dumps([relevant, requests_version, evidence], sort_keys=True, default=str)
    return hashlib.sha1(doc.encode()).hexdigest()[:16]


def broker_facts(spark: SparkSession, store: DeltaStore, config: Config) -> BrokerFacts:
    """The facts for the warehouse's current ``requests`` (cached in ``_broker/facts.json``)."""
    warehouse = store.warehouse
    evidence = load_evidence(warehouse)
    version = store.version_as_of(REQUESTS)  # --as-of: facts of the version read
    key = _fingerprint(config, version, evidence)
    cache = Path(warehouse) / FACTS_FILE
    if cache.exists():
        try:
            doc = json.loads(cache.read_text())
        except json.JSONDecodeError:
            doc = {}
        if doc.get("fingerprint") == key:
            return BrokerFacts(_effective(config, doc["summary"]), doc["summary"])
    observed = _observe(spark, store) if version is not None else _Observed()
    summary = resolve(config, evidence, observed)
    write_json(cache, {"fingerprint": key, "summary": summary}, indent=1)
    return BrokerFacts(_effective(config, summary), summary)


@dataclasses.dataclass
class _Observed:
    """What one pass over ``requests`` tells (sums, maxima, the JoinGroup rows): the rows appended later
    add to it (:meth:`plus`), so a scheduled run reads only those (:data:`OBSERVED_FILE`)."""

    joins: list[bf.JoinRow] = dataclasses.field(default_factory=list)
    used_versions: dict[int, int] = dataclasses.field(default_factory=dict)
    eras: set[str] = dataclasses.field(default_factory=set)
    client_requests: dict[tuple[str, str], int] = dataclasses.field(default_factory=dict)
    kip848_answered: int = 0
    commit_key: str | None = None

    @property
    def clients(self) -> list[dict[str, Any]]:
        """The client software seen, most requests first."""
        return [
            {"software": n, "version": v, "requests": c}
            for (n, v), c in sorted(self.client_requests.items(), key=lambda kv: (-kv[1], kv[0]))
        ]

    def plus(self, other: _Observed) -> _Observed:
        """Both passes' observations as one pass over both row sets would make them."""
        used = dict(self.used_versions)
        for k, v in other.used_versions.items():
            used[k] = max(used.get(k, -1), v)
        clients = dict(self.client_requests)
        for key, n in other.client_requests.items():
            clients[key] = clients.get(key, 0) + n
        return _Observed(
            joins=_ordered_joins([*self.joins, *other.joins]),
            used_versions=used,
            eras=self.eras | other.eras,
            client_requests=clients,
            kip848_answered=self.kip848_answered + other.kip848_answered,
            commit_key=self.commit_key if self.commit_key is not None else other.commit_key,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "joins": [dataclasses.asdict(j) for j in self.joins],
            "used_versions": [[k, v] for k, v in sorted(self.used_versions.items())],
            "eras": sorted(self.eras),
            "client_requests": [[n, v, c] for (n, v), c in sorted(self.client_requests.items())],
            "kip848_answered": self.kip848_answered,
            "commit_key": self.commit_key,
        }

    @staticmethod
    def from_json(doc: Mapping[str, Any]) -> _Observed:
        return _Observed(
            joins=[bf.JoinRow(**j) for j in doc["joins"]],
            used_versions={int(k): int(v) for k, v in doc["used_versions"]},
            eras=set(doc["eras"]),
            client_requests={(str(n), str(v)): int(c) for n, v, c in doc["client_requests"]},
            kip848_answered=int(doc["kip848_answered"]),
            commit_key=doc["commit_key"],
        )


def _ordered_joins(joins: list[bf.JoinRow]) -> list[bf.JoinRow]:
    """The JoinGroup rows in one order whatever the files' (by group, arrival, completion, member)."""
    return sorted(joins, key=lambda j: (j.group_id, j.arrival_ms, j.completion_ms, j.member_id))


#: ``<warehouse>/_broker/observed.json``: :class:`_Observed` of ``requests`` as of a version, carried
OBSERVED_FILE = ("_broker", "observed.json")
OBSERVED_FORMAT = 1


def _observe(spark: SparkSession, store: DeltaStore) -> _Observed:
    """:class:`_Observed` of the ``requests`` the store reads; a scheduled run on a local warehouse adds
    the rows appended since the last one to what it kept (:mod:`rebalance_replay.jobs.carry`)."""
    carry = Carry.scheduled(store, store.warehouse, OBSERVED_FILE, OBSERVED_FORMAT, [REQUESTS])
    if carry is None:
        return _observe_rows(store.read(REQUESTS))
    got = carry.added("observed", REQUESTS, OBSERVED_FORMAT)
    if got is None:
        observed = _observe_rows(store.read(REQUESTS))
    else:
        kept, rows = got
        observed = _Observed.from_json(kept)
        if rows is not None:
            observed = observed.plus(_observe_rows(rows))
    carry.keep("observed", REQUESTS, OBSERVED_FORMAT, observed.to_json())
    carry.save()
    return observed


def _observe_rows(req: DataFrame) -> _Observed:
    from pyspark.sql import functions as F

    out = _Observed()
    stats = (
        req.groupBy("api_key", "log_era", "client_software_name", "client_software_version")
        .agg(
            F.max("api_version").alias("v"),
            F.count(F.lit(1)).alias("n"),
            F.sum(F.when(F.col("error_code") == 0, 1).otherwise(0)).alias("ok"),
        )
        .collect()
    )
    for r in stats:
        out.eras.add(r["log_era"])
        if r["ok"]:  # answered: the broker knows this version
            key = int(r["api_key"])
            out.used_versions[key] = max(out.used_versions.get(key, -1), int(r["v"]))
        if int(r["api_key"]) == ApiKey.CONSUMER_GROUP_HEARTBEAT:
            out.kip848_answered += int(r["ok"] or 0)
        name, ver = r["client_software_name"], r["client_software_version"]
        if name and name != "unknown":
            client = (name, ver or "")
            out.client_requests[client] = out.client_requests.get(client, 0) + int(r["n"])
    if "json" in out.eras:
        first = (
            req.filter((F.col("api_key") == int(ApiKey.OFFSET_COMMIT)) & (F.col("log_era") == "json"))
            .select("raw_request")
            .limit(1)
            .collect()
        )
        out.commit_key = bf.commit_key_of(first[0]["raw_request"]) if first else None
    joins = req.filter(F.col("api_key") == int(ApiKey.JOIN_GROUP)).select(
        "group_id",
        "arrival_ms",
        "completion_ms",
        "member_id",
        "error_name",
        "session_timeout_ms",
        "rebalance_timeout_ms",
        "response_generation_id",
        F.coalesce(F.size("response_members"), F.lit(0)).alias("n_members"),
    )
    out.joins = _ordered_joins(
        [bf.JoinRow.from_row(r.asDict()) for r in joins.filter(F.col("group_id").isNotNull()).collect()]
    )
    return out


def resolve(config: Config, evidence: Mapping[str, Mapping[str, Any]], observed: _Observed) -> dict[str, Any]:
    """The ``broker`` section of ``summary.json``: what the log tells, what is used, what contradicts."""
    adopt = config.replay.infer_broker
    merged: dict[str, Any] = {}
    for doc in evidence.values():
        bf.merge_evidence(merged, doc)
    contradictions: list[str] = []

    # -- Kafka version
    bounds = bf.version_bounds(
        merged.get("api_versions"), observed.used_versions, observed.eras, observed.commit_key
    )
    exact = _single(merged.get("kafka_versions"))
    configured_version = config.kafka.version
    detected = bf.pick_version(configured_version, bounds, exact)
    default_version = defaults(Config)["kafka"]["version"]
    note = " (the default)" if configured_version == default_version else ""
    if exact is not None:
        source = f"log: server.log says Kafka version {exact}"
    elif bounds.reasons and bounds.consistent:
        source = f"log: {bounds.text()}, {plural(len(bounds.reasons), 'clue')}"
    else:
        source = "config"
    same_line = parse_kafka_version(detected)[:2] == parse_kafka_version(configured_version)[:2]
    if not same_line:
        contradictions.append(
            f"kafka.version: configured {configured_version}{note}, the log says {detected} ({source[5:]})"
        )
    elif source.startswith("log") and exact is None:
        source = f"config, the log agrees: {bounds.text()}, {plural(len(bounds.reasons), 'clue')}"
    version_used = detected if adopt or same_line else configured_version
    if not bounds.consistent:
        source = f"config (the log's version evidence disagrees with itself: {'; '.join(bounds.reasons)})"
        version_used = configured_version

    # -- coordinator
    told: set[str] = set(merged.get("coordinator_loggers") or [])
    cfg = merged.get("config") or {}
    if str(cfg.get("group.coordinator.new.enable", "")).lower() == "true" or "consumer" in str(
        cfg.get("group.coordinator.rebalance.protocols", "")
    ):
        told.add("java")
    if observed.kip848_answered:
        told.add("java")
    by_version = "java" if parse_kafka_version(version_used) >= (4, 0, 0) else "scala"
    if len(told) == 1:
        coordinator = next(iter(told))
        why = (
            "server.log's coordinator loggers"
            if merged.get("coordinator_loggers")
            else "KIP-848 heartbeats answered"
            if observed.kip848_answered
            else "server.log's KafkaConfig"
        )
        co_source = f"log: {why}"
    else:
        coordinator = by_version
        co_source = f"Kafka {version_used}'s default"
    if config.kafka.coordinator != "auto":
        if len(told) == 1 and config.kafka.coordinator != coordinator:
            contradictions.append(
                f"kafka.coordinator: configured {config.kafka.coordinator}, the log shows the {coordinator} "
                f"coordinator ({co_source[5:]})"
            )
            if not adopt:
                coordinator, co_source = config.kafka.coordinator, "config (contradicted by the log)"
        else:
            coordinator, co_source = config.kafka.coordinator, "config"

    # -- group.* settings
    inferred = bf.infer_settings(observed.joins)
    configured_settings = {
        "group.max.size": config.broker.group_max_size,
        "group.min.session.timeout.ms": config.broker.group_min_session_timeout_ms,
        "group.max.session.timeout.ms": config.broker.group_max_session_timeout_ms
        or (300_000 if parse_kafka_version(version_used) < (2, 3, 0) else 1_800_000),
        "group.initial.rebalance.delay.ms": config.broker.group_initial_rebalance_delay_ms,
    }
    product_defaults = defaults(Config)["broker"]
    settings: dict[str, Any] = {}
    for name, configured in configured_settings.items():
        raw = cfg.get(name)
        server_log = int(raw) if raw is not None and str(raw).strip().lstrip("-").isdigit() else None
        given = (config.raw.get("broker") or {}).get(name, product_defaults.get(name))
        if given is None:
            note = " (the version's default)"
        elif given == product_defaults.get(name):
            note = " (the default)"
        else:
            note = ""
        s = bf.decide(
            name, configured, inferred.get(name), server_log=server_log, adopt=adopt, default_note=note
        )
        settings[name] = {
            "value": s.used,
            "configured": configured,
            "source": s.source,
            **({"inferred": inferred[name].as_dict()} if name in inferred else {}),
        }
        if s.contradiction:
            contradictions.append(s.contradiction)
    return {
        "kafka_version": {
            "value": version_used,
            "configured": configured_version,
            "source": source,
            "bounds": bounds.text() if bounds.reasons else None,
            "clues": bounds.reasons,
        },
        "coordinator": {"value": coordinator, "configured": config.kafka.coordinator, "source": co_source},
        "clients": observed.clients,
        "settings": settings,
        "contradictions": contradictions,
        "adopted": adopt,
    }


def _single(values: Any) -> str | None:
    vals = sorted(set(values or []))
    return vals[0] if len(vals) == 1 else None


def _effective(config: Config, summary: Mapping[str, Any]) -> Config:
    """``config`` with the version, coordinator and ``group.*`` settings the summary says to use."""
    data = json.loads(json.dumps(config.raw)) if config.raw else None
    if data is None:
        return config
    data["kafka"]["version"] = summary["kafka_version"]["value"]
    coordinator = summary["coordinator"]["value"]
    data["kafka"]["coordinator"] = coordinator
    for name, s in summary["settings"].items():
        data["broker"][name] = s["value"]
    try:
        return build_config(data)
    except Exception:  # a value the configuration cannot hold (e.g. a 4.1 line): keep the configured
        data["kafka"]["version"] = config.kafka.version
        return build_config(data)
