"""What the log tells about the broker: its Kafka version, its coordinator, its clients and the
``group.*`` settings its answers reveal. Pure; the Spark prepass is :mod:`rebalance_replay.jobs.broker_facts`.

Evidence, strongest first:

* **server.log** lines read at ingest beside the request log (:func:`other_line_evidence`): the
  ``KafkaConfig values:`` dump (``group.max.size = 5``: the setting itself), ``Kafka version: 3.7.2``
  (``AppInfoParser``), and the group coordinator's logger names (Scala ``kafka.coordinator.group.*`` or
  Java ``org.apache.kafka.coordinator.group.*``).
* **API_VERSIONS** answers (:func:`api_versions_evidence`, read at ingest from the other-API lines, one a
  connection): the broker's highest (and lowest) version per API bound its release (:data:`FIRST_RELEASE`).
* the **requests** themselves: the log era (text up to 2.7, JSON from 2.8), the versions clients used
  (a broker answers no version it does not know), OffsetCommit's ``generationIdOrMemberEpoch`` key (3.6+),
  KIP-848 heartbeats answered (the Java coordinator), ``clientInformation`` (the clients' software).
* the **answers** (:func:`infer_settings`): ``group.max.size`` from GROUP_MAX_SIZE_REACHED (the largest
  generation of a refusing group, when no group anywhere was larger), the session-timeout bounds from
  INVALID_SESSION_TIMEOUT against the timeouts accepted, the initial rebalance delay from the first join
  phases of empty groups that only one member joined.

Each inferred value is an interval the broker's setting must lie in; a configured value inside it is
kept (the log agrees), one outside is *contradicted* and replaced by the interval's nearest end (or the
setting read from server.log), unless the run says to keep configured values (``replay.infer_broker``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rebalance_replay.transforms.kafka_version import KAFKA_LINES, Version, parse_kafka_version
from rebalance_replay.transforms.report.units import plural

INT_MAX = 2**31 - 1

# ---- versions -------------------------------------------------------------------------------------

#: (api key, version) → (earliest, latest) release line that may have introduced it. A broker
#: advertising or answering ``v`` is at least ``earliest``; one whose highest is ``v - 1`` is below
#: ``latest`` of ``v``. Read from the message specs of the releases at hand (2.7.2, 3.7.2, 4.1.1, 4.4.0:
#: ``HIGHEST_SUPPORTED_VERSION`` of the generated classes) and the KIPs that added the versions; where a
#: release between those is not certain, the pair spans the candidates, so a bound is never too tight.
FIRST_RELEASE: dict[tuple[int, int], tuple[Version, Version]] = {
    # JoinGroup (11): KIP-394 v4 2.2, KIP-345 v5 2.3, flexible v6 2.4, KIP-559 v7 2.5, KIP-800 v8, KIP-814 v9
    (11, 4): ((2, 2, 0), (2, 2, 0)),
    (11, 5): ((2, 3, 0), (2, 3, 0)),
    (11, 6): ((2, 4, 0), (2, 4, 0)),
    (11, 7): ((2, 5, 0), (2, 5, 0)),
    (11, 8): ((3, 1, 0), (3, 2, 0)),
    (11, 9): ((3, 2, 0), (3, 3, 0)),
    # SyncGroup (14), Heartbeat (12): v3 2.3, v4 2.4; SyncGroup v5 2.5
    (14, 3): ((2, 3, 0), (2, 3, 0)),
    (14, 4): ((2, 4, 0), (2, 4, 0)),
    (14, 5): ((2, 5, 0), (2, 5, 0)),
    (12, 3): ((2, 3, 0), (2, 3, 0)),
    (12, 4): ((2, 4, 0), (2, 4, 0)),
    # LeaveGroup (13): v3-4 2.4, KIP-800 v5
    (13, 3): ((2, 4, 0), (2, 4, 0)),
    (13, 5): ((3, 1, 0), (3, 2, 0)),
    # OffsetCommit (8): v7 2.3, v8 2.4, v9 (KIP-848) 3.6-3.7, v10 4.1
    (8, 7): ((2, 3, 0), (2, 3, 0)),
    (8, 8): ((2, 4, 0), (2, 4, 0)),
    (8, 9): ((3, 6, 0), (3, 7, 0)),
    (8, 10): ((4, 1, 0), (4, 1, 0)),
    # FindCoordinator (10): v3 2.4, KIP-699 v4 3.0, v5-6 by 4.0
    (10, 3): ((2, 4, 0), (2, 4, 0)),
    (10, 4): ((3, 0, 0), (3, 0, 0)),
    (10, 5): ((3, 8, 0), (4, 0, 0)),
    # ConsumerGroupHeartbeat (68): v0 3.5 (unstable) … 3.7, v1 4.0
    (68, 0): ((3, 5, 0), (3, 7, 0)),
    (68, 1): ((4, 0, 0), (4, 0, 0)),
}
#: KIP-896 (4.0) removed OffsetCommit v0-1: a lowest advertised version of 2 is a 4.0+ broker.
OFFSET_COMMIT_MIN_2: Version = (4, 0, 0)
#: the oldest and newest release the model can run as
OLDEST: Version = (2, 2, 0)
NEWEST: Version = (4, 99, 99)

_API_KEY_RE = re.compile(
    r'api_?[kK]ey"?\s*[:=]\s*(\d+)\s*,\s*"?min_?[vV]ersion"?\s*[:=]\s*(-?\d+)\s*,\s*"?max_?[vV]ersion"?\s*[:=]\s*(-?\d+)'
)
_API_KEY_WORD = re.compile(r"api_?[kK]ey")
_SOFTWARE_RE = re.compile(
    r'(?:"clientSoftwareName"\s*:\s*"([^"]*)"\s*,\s*"clientSoftwareVersion"\s*:\s*"([^"]*)"'
    r"|client_software_name=([^,]*),client_software_version=([^,}]*))"
)
_KAFKA_VERSION_RE = re.compile(r"Kafka version\s*:\s*([0-9][0-9A-Za-z.\-]*)")
_CONFIG_RE = re.compile(
    r"^\s+(group\.(?:max\.size|min\.session\.timeout\.ms|max\.session\.timeout\.ms|"
    r"initial\.rebalance\.delay\.ms|coordinator\.new\.enable|coordinator\.rebalance\.protocols))\s*=\s*(.*?)\s*$"
)
_SCALA_LOGGER = "(kafka.coordinator.group.Group"
_JAVA_LOGGER = "(org.apache.kafka.coordinator.group.Group"


def api_versions_evidence(line: str) -> dict[str, Any] | None:
    """An API_VERSIONS line's evidence: the broker's ``{api key: [min, max]}`` (both eras), None when
    the answer lists no API (an error answer). Group APIs only appear on a broker's data-plane listener,
    so a controller listener's answer (no JoinGroup) is kept only for the keys it lists."""
    cut = line.find("response")
    keys: dict[str, list[int]] = {}
    for m in _API_KEY_RE.finditer(line, max(cut, 0)):
        keys[m.group(1)] = [int(m.group(2)), int(m.group(3))]
    return {"api_versions": keys} if keys else None


def api_versions_answer(line: str) -> str | None:
    """The part of a JSON-era API_VERSIONS line :func:`api_versions_evidence` finds its evidence in — from
    its answer to the ``"connection"`` field after it — when nothing past it names an API key; None when
    the line is not so shaped. Lines with equal parts have equal evidence: a broker gives every client
    the same answer, so ingest reads each distinct one once (the merge is idempotent)."""
    cut = line.find("response")
    if cut < 0:
        return None
    end = line.find(',"connection":', cut)
    if end < 0 or _API_KEY_WORD.search(line, end):
        return None
    return line[cut:end]


def other_line_evidence(line: str) -> dict[str, Any] | None:
    """A line of another logger (server.log beside the request log): the broker's Kafka version, its
    ``group.*`` settings from the ``KafkaConfig values:`` dump, its coordinator's logger. Cheap: one
    character test for most lines."""
    if line.startswith(("\t", " ")):
        m = _CONFIG_RE.match(line)
        return {"config": {m.group(1): m.group(2)}} if m else None
    if "Kafka version" in line:
        v = _KAFKA_VERSION_RE.search(line)
        return {"kafka_versions": [v.group(1)]} if v else None
    if _SCALA_LOGGER in line:
        return {"coordinator_loggers": ["scala"]}
    if _JAVA_LOGGER in line:
        return {"coordinator_loggers": ["java"]}
    return None


def merge_evidence(into: dict[str, Any], more: Mapping[str, Any] | None) -> dict[str, Any]:
    """Merge evidence documents (commutative and idempotent: a slice read twice changes nothing):
    API versions by key (lowest min, highest max), lists as sorted sets, settings by name (last wins)."""
    if not more:
        return into
    for key, value in more.items():
        if key == "api_versions":
            mine = into.setdefault(key, {})
            for api, (lo, hi) in value.items():
                old = mine.get(api)
                mine[api] = [lo, hi] if old is None else [min(old[0], lo), max(old[1], hi)]
        elif key == "config":
            into.setdefault(key, {}).update(value)
        else:
            into[key] = sorted(set(into.get(key, [])) | set(value))
    return into


def merge_by_broker(docs: Iterable[tuple[str, Mapping[str, Any] | None]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for broker, doc in docs:
        if doc:
            merge_evidence(out.setdefault(broker, {}), doc)
    return out


def _line(v: Version) -> str:
    return f"{v[0]}.{v[1]}"


@dataclass
class VersionBounds:
    """The releases the evidence allows: ``[low, high]`` with the reasons."""

    low: Version = OLDEST
    high: Version = NEWEST
    reasons: list[str] = field(default_factory=list)
    #: the release line ``high`` is just below
    before: Version | None = None

    def at_least(self, v: Version, why: str) -> None:
        if v > self.low:
            self.low = v
        self.reasons.append(f"{why} → ≥ {_line(v)}")

    def below(self, v: Version, why: str) -> None:
        """Older than release line ``v`` (its patch levels excluded)."""
        top = (v[0], v[1] - 1, 99) if v[1] > 0 else (v[0] - 1, 99, 99)
        if top < self.high:
            self.high, self.before = top, v
        self.reasons.append(f"{why} → < {_line(v)}")

    @property
    def consistent(self) -> bool:
        return self.low <= self.high

    def text(self) -> str:
        if self.before is None or self.high >= NEWEST:
            return f"≥ {_line(self.low)}"
        if self.high[:2] == self.low[:2]:
            return _line(self.low)
        return f"≥ {_line(self.low)} and < {_line(self.before)}"


_API_NAMES = {8: "OffsetCommit", 10: "FindCoordinator", 11: "JoinGroup", 12: "Heartbeat", 13: "LeaveGroup"}
_API_NAMES.update({14: "SyncGroup", 68: "ConsumerGroupHeartbeat"})


def version_bounds(
    api_versions: Mapping[str, Sequence[int]] | None = None,
    used_versions: Mapping[int, int] | None = None,
    eras: Iterable[str] = (),
    commit_key: str | None = None,
) -> VersionBounds:
    """The release range the evidence allows. ``api_versions``: the broker's advertised ``{key: [min,
    max]}``; ``used_versions``: the highest version of each kept API in the requests (answered, so the
    broker knows it); ``eras``: the log eras seen; ``commit_key``: ``generationIdOrMemberEpoch`` or
    ``generationId``, the key of a JSON OffsetCommit request."""
    b = VersionBounds()
    eras = set(eras)
    if eras == {"text"}:
        b.below((2, 8, 0), "text-era log lines")
    elif eras == {"json"}:
        b.at_least((2, 8, 0), "JSON log lines")
    if commit_key == "generationIdOrMemberEpoch":
        b.at_least((3, 6, 0), "OffsetCommit logs generationIdOrMemberEpoch")
    elif commit_key == "generationId":
        b.below((3, 6, 0), "OffsetCommit logs generationId")
    for key, top in sorted((used_versions or {}).items()):
        span = FIRST_RELEASE.get((key, top))
        if span is not None:
            b.at_least(span[0], f"{_API_NAMES.get(key, key)} v{top} answered")
    for raw_key, (lo, hi) in sorted((api_versions or {}).items(), key=lambda kv: int(kv[0])):
        key = int(raw_key)
        name = _API_NAMES.get(key)
        if name is None:
            continue
        span = FIRST_RELEASE.get((key, hi))
        if span is not None:
            b.at_least(span[0], f"API_VERSIONS: {name} up to v{hi}")
        nxt = FIRST_RELEASE.get((key, hi + 1))
        if nxt is not None:
            b.below(nxt[1], f"API_VERSIONS: {name} up to v{hi}")
        if key == 8 and lo >= 2:
            b.at_least(OFFSET_COMMIT_MIN_2, f"API_VERSIONS: {name} from v{lo}")
        elif key == 8 and lo < 2:
            b.below(OFFSET_COMMIT_MIN_2, f"API_VERSIONS: {name} from v{lo}")
    return b


def pick_version(configured: str, bounds: VersionBounds, exact: str | None = None) -> str:
    """The release line to run as: ``exact`` (server.log's ``Kafka version``) when it is modelled, else
    the configured one when the evidence allows it, else the allowed line nearest to it."""
    if exact is not None:
        try:
            v = parse_kafka_version(exact)
        except ValueError:
            v = None
        if v is not None and OLDEST <= v <= NEWEST:
            return f"{v[0]}.{v[1]}.{v[2]}"
    cv = parse_kafka_version(configured)
    if not bounds.consistent or bounds.low <= cv <= bounds.high:
        return configured
    lines = [parse_kafka_version(x) for x in KAFKA_LINES]
    allowed = [x for x in lines if bounds.low <= x <= bounds.high or _line(x) == _line(bounds.low)]
    if not allowed:  # newer than every line the configuration names (4.1+): the newest modelled line
        return _line(bounds.low) if bounds.low[0] == 4 else configured
    return _line(min(allowed, key=lambda x: (abs(x[0] * 100 + x[1] - cv[0] * 100 - cv[1]), x)))


# ---- settings from the answers -------------------------------------------------------------------


@dataclass(frozen=True)
class JoinRow:
    """What :func:`infer_settings` reads of one JoinGroup line."""

    group_id: str
    arrival_ms: int
    completion_ms: int
    member_id: str
    error_name: str | None
    session_timeout_ms: int | None = None
    rebalance_timeout_ms: int | None = None
    response_generation_id: int | None = None
    #: members in the answer (the leader's answer lists the generation's members; others: 0)
    n_members: int = 0

    @staticmethod
    def from_row(row: Mapping[str, Any]) -> JoinRow:
        return JoinRow(
            group_id=str(row["group_id"]),
            arrival_ms=int(row["arrival_ms"]),
            completion_ms=int(row["completion_ms"]),
            member_id=str(row.get("member_id") or ""),
            error_name=row.get("error_name"),
            session_timeout_ms=row.get("session_timeout_ms"),
            rebalance_timeout_ms=row.get("rebalance_timeout_ms"),
            response_generation_id=row.get("response_generation_id"),
            n_members=int(row.get("n_members") or 0),
        )


#: JoinGroup answers given after the session-timeout check passed (§4.2: it comes first, after the
#: coordinator's own checks)
PASSED_SESSION_CHECK = frozenset(
    {
        "NONE",
        "MEMBER_ID_REQUIRED",
        "UNKNOWN_MEMBER_ID",
        "GROUP_MAX_SIZE_REACHED",
        "FENCED_INSTANCE_ID",
        "INCONSISTENT_GROUP_PROTOCOL",
    }
)
#: a first join phase's length is the delay plus the broker's own work: this much over it still agrees
DELAY_SLACK_MS = 100
#: inferred delays are rounded down to this step (configured delays are round numbers; the broker's work
#: only adds time)
DELAY_STEP_MS = 50


@dataclass(frozen=True)
class Inferred:
    """A setting the answers bound: the broker's value lies in ``[low, high]`` (``high`` None: open)."""

    name: str
    low: int
    high: int | None
    evidence: str
    #: the value to use when the configured one lies outside the bounds
    best: int

    def allows(self, value: int) -> bool:
        return self.low <= value and (self.high is None or value <= self.high)

    def as_dict(self) -> dict[str, Any]:
        return {"low": self.low, "high": self.high, "value": self.best, "evidence": self.evidence}


def infer_settings(joins: Iterable[JoinRow]) -> dict[str, Inferred]:
    """The ``group.*`` settings the JoinGroup answers of a cluster bound (broker-wide settings: every
    group of every broker counts), by Kafka property name. Conservative: a setting is bounded only by
    answers that can only be explained by it."""
    by_group: dict[str, list[JoinRow]] = {}
    for j in joins:
        by_group.setdefault(j.group_id, []).append(j)
    out: dict[str, Inferred] = {}
    size = _max_size(by_group)
    if size is not None:
        out["group.max.size"] = size
    out.update(_session_bounds([j for rows in by_group.values() for j in rows]))
    delay = _initial_delay(by_group)
    if delay is not None:
        out["group.initial.rebalance.delay.ms"] = delay
    # a bound no broker can have comes from damaged lines (a negative session timeout "accepted"): the
    # setting is left to the configuration rather than fed to it
    return {name: i for name, i in out.items() if _plausible(i)}


#: the values a broker can have per setting (Kafka's own config checks: ``atLeast``)
_LOWEST = {
    "group.min.session.timeout.ms": 0,
    "group.max.session.timeout.ms": 1,
    "group.max.size": 1,
    "group.initial.rebalance.delay.ms": 0,
}
_INT_MAX = 2**31 - 1


def _plausible(i: Inferred) -> bool:
    lowest = _LOWEST.get(i.name, 0)
    high = i.high if i.high is not None else i.best
    return lowest <= i.low <= high <= _INT_MAX and i.low <= i.best <= high


def _max_size(by_group: Mapping[str, list[JoinRow]]) -> Inferred | None:
    """A group never forms a generation larger than ``group.max.size`` (2.6+: §4.2), and a join is
    refused with GROUP_MAX_SIZE_REACHED only when the group has that many members: the largest
    generation of a refusing group is the setting, if no group anywhere formed a larger one."""
    peak = 0  # largest generation of any group (a leader's answer lists its members)
    refusing: dict[str, int] = {}
    refusals = 0
    for g, rows in by_group.items():
        gpeak = max((j.n_members for j in rows if j.error_name == "NONE"), default=0)
        peak = max(peak, gpeak)
        n = sum(1 for j in rows if j.error_name == "GROUP_MAX_SIZE_REACHED")
        if n:
            refusals += n
            refusing[g] = gpeak
    if not refusing:
        if peak:
            return Inferred(
                "group.max.size", peak, None, f"a generation of {plural(peak, 'member')} formed", INT_MAX
            )
        return None
    at = max(refusing.values())
    if at == 0 or at < peak:
        return None  # the refusing groups' size is not in the log, or a larger group formed elsewhere
    groups = sorted(refusing)
    shown = ", ".join(groups[:3]) + (f" (+{len(groups) - 3})" if len(groups) > 3 else "")
    return Inferred(
        "group.max.size",
        at,
        at,
        f"{plural(refusals, 'JoinGroup')} answered GROUP_MAX_SIZE_REACHED in "
        f"{'group' if len(groups) == 1 else 'groups'} {shown} whose largest generation had "
        f"{plural(at, 'member')}; no group formed a larger one",
        at,
    )


def _session_bounds(joins: Sequence[JoinRow]) -> dict[str, Inferred]:
    accepted = [
        j.session_timeout_ms
        for j in joins
        if j.error_name in PASSED_SESSION_CHECK
        and j.session_timeout_ms is not None
        and j.session_timeout_ms > 0
    ]
    refused = [
        j.session_timeout_ms
        for j in joins
        if j.error_name == "INVALID_SESSION_TIMEOUT" and j.session_timeout_ms is not None
    ]
    if not accepted and not refused:
        return {}
    a_lo = min(accepted) if accepted else None
    a_hi = max(accepted) if accepted else None
    below = [s for s in refused if a_lo is None or s < a_lo]
    above = [s for s in refused if a_hi is not None and s > a_hi]
    out: dict[str, Inferred] = {}
    # min: refused r < accepted a  ⇒  max(r) < min ≤ min(a)
    lo = max(max(below) + 1, 0) if below and a_lo is not None else 0
    if a_lo is not None:
        why = f"session timeout {a_lo} ms accepted" + (
            f", {max(below)} ms refused with INVALID_SESSION_TIMEOUT" if below and a_lo is not None else ""
        )
        out["group.min.session.timeout.ms"] = Inferred("group.min.session.timeout.ms", lo, a_lo, why, a_lo)
    # max: accepted a < refused r  ⇒  max(a) ≤ max < min(r)
    if a_hi is not None:
        hi = min(above) - 1 if above else None
        why = f"session timeout {a_hi} ms accepted" + (
            f", {min(above)} ms refused with INVALID_SESSION_TIMEOUT" if above else ""
        )
        out["group.max.session.timeout.ms"] = Inferred(
            "group.max.session.timeout.ms", a_hi, hi, why, hi if hi is not None else a_hi
        )
    return out


def _initial_delay(by_group: Mapping[str, list[JoinRow]]) -> Inferred | None:
    """First join phases (generation 1, so the group was new) that one member joined alone: the phase
    lasts the delay (§5.2, extended only when another member joins) plus the broker's own work, so the
    delay lies in ``[phase − slack, phase]``. The shortest such phase bounds it."""
    phases: list[tuple[int, str]] = []
    for g, rows in by_group.items():
        done = [j for j in rows if j.error_name == "NONE" and j.response_generation_id == 1]
        if not done:
            continue
        ended = min(j.completion_ms for j in done)
        members = {j.member_id for j in done if j.member_id}
        # every member-carrying join that arrived up to the end of that phase (a KIP-394 first join
        # with no member id only gets an id: it does not start or extend the phase)
        joined = [j for j in rows if j.member_id and j.arrival_ms <= ended]
        if len(members) != 1 or len({j.member_id for j in joined}) != 1:
            continue
        first = min(j.arrival_ms for j in joined)
        timeout = min((j.rebalance_timeout_ms or INT_MAX for j in joined), default=INT_MAX)
        length = ended - first
        if length >= timeout:
            continue  # capped by the rebalance timeout: says nothing about the delay
        phases.append((length, g))
    if not phases:
        return None
    shortest, group = min(phases)
    low = max(0, shortest - DELAY_SLACK_MS)
    best = max(low, shortest // DELAY_STEP_MS * DELAY_STEP_MS) if shortest >= DELAY_STEP_MS else 0
    best = min(best, shortest)
    return Inferred(
        "group.initial.rebalance.delay.ms",
        low,
        shortest,
        f"{plural(len(phases), 'new group')} joined by one member: the shortest first join phase lasted "
        f"{shortest} ms (group {group})",
        best,
    )


# ---- the decision ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Setting:
    """One setting's outcome: the value used, where it came from, and a contradiction if any."""

    name: str
    configured: int | None
    used: int | None
    source: str
    inferred: Inferred | None = None
    contradiction: str | None = None


def decide(
    name: str,
    configured: int | None,
    inferred: Inferred | None,
    *,
    server_log: int | None = None,
    adopt: bool = True,
    default_note: str = "",
) -> Setting:
    """The value of one setting for the replay: server.log's value when it was read, else the configured
    value when the answers allow it, else (``adopt``) the inferred one; a configured value the log
    contradicts is reported either way. ``default_note`` follows the value in that report when nobody
    configured it (`` (the default)``): the log then corrects the product's assumption, not the user."""
    shown = f"{configured}{default_note}" if configured is not None else "the version's default"
    if server_log is not None:
        contra = None
        if configured is not None and configured != server_log:
            contra = f"{name}: configured {shown}, the broker's server.log says {server_log}"
        used = server_log if adopt or configured is None else configured
        return Setting(name, configured, used, "log: server.log KafkaConfig", inferred, contra)
    if inferred is None:
        return Setting(name, configured, configured, "config", None, None)
    check = configured if configured is not None else None
    if check is None or inferred.allows(check):
        return Setting(name, configured, configured, "config (the log agrees)", inferred, None)
    bound = f"[{inferred.low}, {inferred.high}]" if inferred.high is not None else f"≥ {inferred.low}"
    contra = f"{name}: configured {shown}, but the log's answers need {bound} ({inferred.evidence})"
    if adopt:
        return Setting(name, configured, inferred.best, f"log: {inferred.evidence}", inferred, contra)
    return Setting(name, configured, configured, "config (contradicted by the log)", inferred, contra)


def commit_key_of(raw_request: str | None) -> str | None:
    """Which key a JSON OffsetCommit request names its generation with (``None`` for the text era)."""
    if not raw_request or not raw_request.startswith("{"):
        return None
    if '"generationIdOrMemberEpoch"' in raw_request:
        return "generationIdOrMemberEpoch"
    if '"generationId"' in raw_request:
        return "generationId"
    return None


def dumps(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, sort_keys=True, separators=(",", ":"))
