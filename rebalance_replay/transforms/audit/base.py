"""Shared pieces of the rules: building a :class:`Finding` with its cost and member details, heartbeat
gaps, a member's requests."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from rebalance_replay.transforms.audit.config import SEVERITIES, RuleSettings
from rebalance_replay.transforms.audit.model import (
    Evidence,
    Finding,
    GroupInputs,
    Rebalance,
    Req,
    finite,
    sorted_unique,
)
from rebalance_replay.transforms.audit.registry import rule_of

HEARTBEAT = "HEARTBEAT"
JOIN_GROUP = "JOIN_GROUP"
SYNC_GROUP = "SYNC_GROUP"
LEAVE_GROUP = "LEAVE_GROUP"
OFFSET_COMMIT = "OFFSET_COMMIT"


def escalate(base: str, *steps: tuple[bool, str]) -> str:
    """``base`` raised to the highest severity among the steps whose condition holds."""
    level = SEVERITIES.index(base)
    for cond, sev in steps:
        if cond:
            level = max(level, SEVERITIES.index(sev))
    return SEVERITIES[level]


def time_rebalancing_ms(rebalances: Iterable[Rebalance]) -> int:
    """The rebalances' durations added up (one still open at the end of the log counts 0)."""
    return sum(rb.total_duration_ms or 0 for rb in rebalances)


def cost(inputs: GroupInputs, seqs: Iterable[int]) -> dict[str, float]:
    """Rebalance time caused (sum of the rebalances' durations) and members × seconds without an
    assignment (each rebalance's duration × the members it stopped; eager protocols revoke everything)."""
    total_ms = 0
    member_s = 0.0
    for seq in sorted(set(seqs)):
        rb = inputs.rebalance(seq)
        if rb is None or rb.total_duration_ms is None:
            continue
        total_ms += rb.total_duration_ms
        members = len(set(rb.members_before) | set(rb.members_after))
        member_s += members * rb.total_duration_ms / 1000
    return {"rebalance_time_caused_ms": float(total_ms), "member_seconds_without_assignment": member_s}


def member_requests(inputs: GroupInputs, member_id: str) -> list[Req]:
    return [r for r in inputs.requests if member_id in (r.member_id, r.response_member_id)]


#: Answers Kafka gives only to a member of the group: the member is validated before the generation
#: and the state (3.7.1 ``GroupCoordinator.validateHeartbeat`` / ``validateSyncGroup`` /
#: ``validateOffsetCommit`` and the known-member JoinGroup all call ``validateCurrentMember``:
#: UNKNOWN_MEMBER_ID for an id that is not a member), so a removed member is only ever told
#: UNKNOWN_MEMBER_ID (or FENCED_INSTANCE_ID) again.
MEMBER_ANSWERS = frozenset({"NONE", "REBALANCE_IN_PROGRESS", "ILLEGAL_GENERATION"})
#: Answers that end the question the other way: the member id is not (or no longer) the group's.
NOT_A_MEMBER_ANSWERS = frozenset({"UNKNOWN_MEMBER_ID", "FENCED_INSTANCE_ID"})


def answered_as_member(r: Req, member_id: str) -> bool | None:
    """Whether the broker's answer to ``r`` says ``member_id`` was a member of the group when it
    answered (None: the answer tells nothing — another member's request, a first JoinGroup, a
    generation-less commit any client may make, a LeaveGroup, a coordinator error)."""
    if r.member_id != member_id or r.api_name == LEAVE_GROUP:
        return None
    if r.api_name == OFFSET_COMMIT and (r.generation_id is None or r.generation_id < 0):
        return None
    if r.error_name in NOT_A_MEMBER_ANSWERS:
        return False
    if r.error_name in MEMBER_ANSWERS:
        return True
    return None


def kept_by_broker(inputs: GroupInputs, member_id: str, t: int) -> Req | None:
    """The broker's answer that contradicts a removal of ``member_id`` at ``t`` the replay reports
    (a session expiry, a rebalance-timeout eviction, a pending-sync expiry), or None.

    The member's first request arriving after ``t`` whose answer says whether it was a member
    (:func:`answered_as_member`): when the broker answered it as a member — a JoinGroup answered NONE
    with the next generation, a heartbeat, a commit — it was not removed, whatever the model
    predicted (a JoinGroup held past the client's request timeout and re-sent, a broker setting the
    log does not show). The broker's answers win: a finding must not report that removal."""
    for r in inputs.requests:
        if r.arrival_ms <= t:
            continue
        verdict = answered_as_member(r, member_id)
        if verdict is not None:
            return r if verdict else None
    return None


def disputed_note(inputs: GroupInputs, disputed: Sequence[tuple[str, Req]]) -> str:
    """``; not counted, the model's removal disputed by the broker, which answered as a member
    afterwards consumer-1 (10.0.4.7): JOIN_GROUP NONE generation 2 at 12:01:07.123 UTC`` for removals
    :func:`kept_by_broker` contradicts ("" for none), so a finding's summary names the dispute it left
    out. ``disputed``: (member id, the broker's answer)."""
    if not disputed:
        return ""
    parts = []
    for member, r in disputed:
        at = datetime.fromtimestamp(r.arrival_ms / 1000, UTC).strftime("%H:%M:%S.%f")[:-3]
        gen = f" generation {r.response_generation_id}" if r.response_generation_id is not None else ""
        parts.append(f"{who(inputs, member)}: {r.api_name} {r.error_name}{gen} at {at} UTC")
    return (
        "; not counted, the model's removal disputed by the broker, which answered as a member afterwards "
        + ", ".join(parts)
    )


@dataclass(frozen=True)
class MemberInfo:
    instance_ids: tuple[str, ...]
    client_ids: tuple[str, ...]
    hosts: tuple[str, ...]


def member_info(inputs: GroupInputs, members: Iterable[str]) -> MemberInfo:
    ms = set(members)
    reqs = [r for r in inputs.requests if r.member_id in ms or r.response_member_id in ms]
    sess = [s for s in inputs.sessions if s.member_id in ms]
    return MemberInfo(
        sorted_unique([r.group_instance_id for r in reqs] + [s.group_instance_id for s in sess]),
        sorted_unique([r.client_id for r in reqs] + [s.client_id for s in sess]),
        sorted_unique(
            [r.host for r in reqs] + [s.client_address.rsplit(":", 1)[0] for s in sess if s.client_address]
        ),
    )


_UUID_TAIL = re.compile(r"([0-9a-f]{8})-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)


def short_member_id(member_id: str) -> str:
    """A member id short enough for a sentence and long enough to tell members apart: the first block of
    its UUID (a Java or librdkafka id is the client or instance id, a dash and a UUID:
    ``consumer-orders-1-4b4a8bec-844e-…`` → ``4b4a8bec``), else the id, cut to 16 characters."""
    m = _UUID_TAIL.search(member_id)
    if m:
        return m.group(1)
    return member_id if len(member_id) <= 16 else member_id[:15] + "…"


def shared_client_ids(inputs: GroupInputs) -> frozenset[str]:
    """The client ids several processes of the group use (every single-consumer Java pod is
    ``consumer-<group>-1``; a restarted process comes back under its old one): such an id names nobody."""
    processes: dict[str, set[str]] = {}
    for r in inputs.requests:
        if r.client_id:
            processes.setdefault(r.client_id, set()).add(r.process)
    return frozenset(c for c, ps in processes.items() if len(ps) > 1)


def process_of(inputs: GroupInputs, member: str) -> str | None:
    """The process (``Req.process``: the client's host and port) that first spoke as ``member``; else the
    host its session names (``member_sessions.client_address`` is the JoinGroup's client host)."""
    for r in inputs.requests:
        if member in (r.member_id, r.response_member_id) and r.process:
            return r.process
    return next(
        (s.client_address for s in inputs.sessions if s.member_id == member and s.client_address), None
    )


def who(inputs: GroupInputs, member: str, shared: frozenset[str] | None = None) -> str:
    """A member as a person finds it: ``consumer-3 (10.0.4.7)`` (its client id, ``[instance]`` when static,
    and host) when that client id is its process's alone; else — the client id is one several processes
    use (:func:`shared_client_ids`, ``shared`` when the caller has them) — its instance id or its process
    (host and port), with the member id shortened: ``instance app-1 (member 4b4a8bec)``,
    ``10.0.4.7:50001 (member 9c880e21)``. Two members are never named alike by a shared client id."""
    info = member_info(inputs, [member])
    shared = shared_client_ids(inputs) if shared is None else shared
    if info.client_ids and info.client_ids[0] in shared:
        where = f"instance {info.instance_ids[0]}" if info.instance_ids else process_of(inputs, member)
        return f"{where or info.client_ids[0]} (member {short_member_id(member)})"
    name = info.client_ids[0] if info.client_ids else member
    if info.instance_ids:
        name += f" [{info.instance_ids[0]}]"
    return f"{name} ({info.hosts[0]})" if info.hosts else name


def member_names(inputs: GroupInputs, members: Iterable[str]) -> list[str]:
    """:func:`who` of each member, sorted, each name once (a process that rejoined under a new member id
    with a client id of its own is one name)."""
    shared = shared_client_ids(inputs)
    return sorted({who(inputs, m, shared) for m in members})


def client_names(inputs: GroupInputs, rows: Iterable[Req]) -> list[str]:
    """The clients that sent ``rows`` (requests without a member id too: a refused first JoinGroup), each
    once: ``consumer-3 (10.0.4.7)``, or its process (host and port) when several processes use that client
    id (:func:`shared_client_ids`)."""
    shared = shared_client_ids(inputs)
    names = set()
    for r in rows:
        if r.client_id in shared:
            names.add(r.process)
        else:
            names.add(f"{r.client_id} ({r.host})" if r.host else str(r.client_id))
    return sorted(names)


def pod_of(inputs: GroupInputs, member: str) -> str:
    """Where a member runs, as an operator names it: ``instance app-1`` (static), else ``host 10.0.4.7``,
    else its client id (several members of one pod share it)."""
    info = member_info(inputs, [member])
    if info.instance_ids:
        return f"instance {info.instance_ids[0]}"
    if info.hosts:
        return f"host {info.hosts[0]}"
    return info.client_ids[0] if info.client_ids else member


def _names(kind: str, names: Sequence[str], limit: int = 5) -> str:
    shown = ", ".join(names[:limit]) + (f" and {len(names) - limit} more" if len(names) > limit else "")
    return f"{kind}{'s' if len(names) > 1 else ''} {shown}"


def who_clause(summary: str, info: MemberInfo) -> str:
    """``; instance app-1, hosts 10.0.4.7, 10.0.4.8``: the static instances and client hosts a finding
    is about, as the log shows them, that its summary does not already name ("" when it names them all),
    so a person can tell which machines to look at from the sentence alone."""

    def named(x: str) -> bool:
        return re.search(rf"(?<![\w.-]){re.escape(x)}(?![\w.-])", summary) is not None

    parts = []
    instances = [i for i in info.instance_ids if not named(i)]
    hosts = [h for h in info.hosts if not named(h)]
    if instances:
        parts.append(_names("instance", instances))
    if hosts:
        parts.append(_names("host", hosts))
    return f"; {', '.join(parts)}" if parts else ""


def make_finding(
    inputs: GroupInputs,
    st: RuleSettings,
    cap: int,
    *,
    severity: str,
    confidence: float,
    members: Iterable[str],
    evidence: Sequence[Req],
    occurrences: int,
    summary: str,
    fix: str,
    metrics: Mapping[str, float] | None = None,
    rebalance_seqs: Iterable[int] = (),
    window: tuple[int, int] | None = None,
    confidence_note: str | None = None,
    caused: bool = True,
) -> Finding:
    """A finding of the rule whose settings ``st`` are (the registry knows which: ``rule_of``).
    ``rebalance_seqs``: the rebalances the finding is about; their cost counts as the finding's
    (``rebalance_time_caused_ms``, ``member_seconds_without_assignment``) unless ``caused`` is False: the
    finding suffered them without causing them (a commit refused because a rebalance was running)."""
    rule = rule_of(st)
    rows = sorted(set(evidence), key=lambda r: (r.arrival_ms, r.source_file, r.line_no))
    if window is None:
        if not rows:
            raise ValueError(f"{rule.rule_id}: a finding needs evidence or a window")
        window = (rows[0].arrival_ms, rows[-1].arrival_ms)
    seqs = tuple(sorted(set(rebalance_seqs)))
    m = dict(metrics or {})
    m.update(cost(inputs, seqs if caused else ()))
    m["evidence_rows"] = float(len(rows))
    m["evidence_omitted"] = float(max(0, len(rows) - cap))
    member_ids = tuple(sorted(set(members)))
    info = member_info(inputs, member_ids)
    anonymous = [r for r in rows if not r.member_id and not r.response_member_id]  # refused first joins
    if anonymous:
        info = MemberInfo(
            sorted_unique([*info.instance_ids, *(r.group_instance_id for r in anonymous)]),
            sorted_unique([*info.client_ids, *(r.client_id for r in anonymous)]),
            sorted_unique([*info.hosts, *(r.host for r in anonymous)]),
        )
    summary += who_clause(summary, info)
    if confidence < 1 and confidence_note:
        summary = f"{summary} (confidence {confidence:.2f}: {confidence_note})"
    return Finding(
        rule_id=rule.rule_id,
        rule=rule.name,
        severity=severity,
        confidence=round(confidence, 3),
        group_id=inputs.group_id,
        member_ids=member_ids,
        group_instance_ids=info.instance_ids,
        client_ids=info.client_ids,
        client_hosts=info.hosts,
        window_start_ms=window[0],
        window_end_ms=window[1],
        occurrences=occurrences,
        summary=summary,
        evidence=tuple(Evidence.of(r) for r in rows[:cap]),
        metrics=tuple(sorted((k, finite(v)) for k, v in m.items())),
        fix=fix,
        rebalance_seqs=seqs,
    )


def needs_version(api: str, version: int, what: str) -> Callable[[GroupInputs], str | None]:
    """A support check: the group's ``api`` requests must reach ``version`` (e.g. JoinGroup v8+ reasons)."""

    def support(inputs: GroupInputs) -> str | None:
        seen = [r.api_version for r in inputs.requests if r.api_name == api]
        if not seen or max(seen) >= version:
            return None
        return f"{what} need {api} v{version}+ (the log has up to v{max(seen)})"

    return support


def rebalance_window(rbs: Sequence[Rebalance]) -> tuple[int, int]:
    """From the first rebalance's start to the last one's end."""
    return rbs[0].started_ms, max(rb.ended_ms or rb.started_ms for rb in rbs)


def quantile(values: Sequence[float], q: float) -> float:
    """Nearest-rank quantile (deterministic, no interpolation)."""
    s = sorted(values)
    return float(s[nearest_rank(len(s), q)])


def nearest_rank(n: int, q: float) -> int:
    """The index of the nearest-rank ``q`` quantile among ``n`` sorted values."""
    return max(0, min(n - 1, math.ceil(q * n) - 1))


def session_timeout_of(inputs: GroupInputs, member: str) -> int | None:
    for s in reversed(inputs.sessions):
        if s.member_id == member and s.session_timeout_ms:
            return s.session_timeout_ms
    for r in reversed(inputs.requests):
        if (
            r.api_name == JOIN_GROUP
            and member in (r.member_id, r.response_member_id)
            and r.session_timeout_ms
        ):
            return r.session_timeout_ms
    return None


def rebalances_caused_by(inputs: GroupInputs, members: Iterable[str], triggers: Iterable[str]) -> list[int]:
    ms, ts = set(members), set(triggers)
    return [
        rb.rebalance_seq
        for rb in inputs.rebalances
        if rb.trigger in ts and (rb.trigger_member_id in ms or ms & set(rb.evicted) or ms & set(rb.left))
    ]
