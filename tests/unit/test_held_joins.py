"""The broker's answers win: a join phase held past the clients' request timeouts, recorded from real
brokers (``tests/data/real-kafka/<release>/held``, scenario ``held-join``), replayed without Spark.

p0 (max.poll.interval.ms 60 s) is stalled in its poll loop when a new member p3 starts a rebalance, so
the join phase waits ~32 s for it. p1 and p3 (request.timeout.ms 30 s, the default) and p2
(request.timeout.ms 10 s: a client setting the log does not show) give up on their JoinGroups after
max(request.timeout.ms, 8 s + 5 s) and send them again. The brokers (2.7, 3.7 and 4.4 alike) log only
the JoinGroups they answered: the re-sent ones, answered NONE with the next generation — none for the first
ones (Kafka keeps the latest JoinGroup of a member). Before the fix the replay expired p2 six seconds
after its last heartbeat (it saw no JoinGroup holding it), predicted UNKNOWN_MEMBER_ID for the JoinGroup
the broker answered NONE, listed p2 as evicted in the rebalance (in track mode also as joined), ended
its session ``session_expiry`` and the audit reported a session-timeout eviction (R02) with confidence
1.0. The tests assert every JoinGroup/SyncGroup answer agrees, and that no rebalance, member session or
finding claims the removal of a member the broker later answered as a member — also with the fix taken
away (the audit's own check) and with the broker's settings unknown to the model.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import rebalance_replay.transforms.replay as replay_module
from rebalance_replay.transforms.audit import AuditSettings, evaluate
from rebalance_replay.transforms.audit.base import kept_by_broker
from rebalance_replay.transforms.audit.config import R02Settings
from rebalance_replay.transforms.audit.liveness import session_timeout_eviction
from rebalance_replay.transforms.audit.model import (
    BrokerBounds,
    Finding,
    GroupInputs,
    Rebalance,
    Req,
    Session,
    Transition,
)
from rebalance_replay.transforms.coordinator.config import CoordinatorConfig
from rebalance_replay.transforms.replay import GroupReplayer, ReplaySettings, unlogged_join_sent
from tests.helpers import audit_request
from tests.unit.test_real_kafka_replay import LAG_MS, MODES, broker_config, recording_rows

RELEASES = ("2.7", "3.7", "4.4")
GROUP = "held-join"
#: what ends a member's stay other than its own LeaveGroup or the next generation: a removal
REMOVALS = frozenset({"session_expiry", "rebalance_timeout_eviction", "pending_sync_expiry", "reconciled"})


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> Iterator[str]:
    yield request.param


def replayed(
    release: str, mode: str, config: CoordinatorConfig | None = None
) -> tuple[list[dict[str, Any]], GroupInputs]:
    """The group's predictions and what the audit reads (rebalances, member sessions, transitions), the
    model configured as the broker was (``config`` None) or with ``config``."""
    rows = [r for r in recording_rows(release, "held") if r.get("group_id") == GROUP]
    assert rows
    config = config or broker_config(release, "held", mode)
    replayer = GroupReplayer(GROUP, ReplaySettings(config, broker_lag_ms=LAG_MS))
    replayer.feed(rows)
    kinds: dict[str, list[dict[str, Any]]] = {}
    for out in (replayer.process(max(int(r["completion_ms"]) for r in rows) + 1), replayer.finish()):
        for kind, values in out.rows.items():
            kinds.setdefault(kind, []).extend(values)
    inputs = GroupInputs.build(
        GROUP,
        requests=[Req.from_row(r) for r in rows],
        rebalances=[Rebalance.from_row(r) for r in kinds.get("rebalances", [])],
        sessions=[Session.from_row(r) for r in kinds.get("member_sessions", [])],
        transitions=[Transition.from_row(r) for r in kinds.get("transitions", [])],
        broker=BrokerBounds(group_min_session_timeout_ms=4000, group_initial_rebalance_delay_ms=1000),
    )
    return kinds["predictions"], inputs


def answered_as_member_after(inputs: GroupInputs, member: str, t: int) -> Req | None:
    """The broker's JoinGroup/SyncGroup/Heartbeat answer to ``member`` after ``t`` that only a member of
    the group gets (written here independently of the product's helper)."""
    for r in inputs.requests:
        if (
            r.arrival_ms > t
            and r.member_id == member
            and r.api_name in ("JOIN_GROUP", "SYNC_GROUP", "HEARTBEAT")
            and r.error_name in ("NONE", "REBALANCE_IN_PROGRESS", "ILLEGAL_GENERATION")
        ):
            return r
    return None


def contradictions(inputs: GroupInputs, findings: list[Finding]) -> list[str]:
    """Every rebalance row, member session or finding that claims a member was removed although the
    broker later answered it as a member."""
    out = []
    for rb in inputs.rebalances:
        for m in rb.evicted:
            at = rb.join_completed_ms or rb.ended_ms or rb.started_ms
            if answered_as_member_after(inputs, m, rb.started_ms) is not None:
                out.append(f"rebalance {rb.rebalance_seq} evicts {m} (at {at})")
            if m in rb.joined:
                out.append(f"rebalance {rb.rebalance_seq} lists {m} as joined and evicted")
    for s in inputs.sessions:
        if s.end_reason in REMOVALS and answered_as_member_after(inputs, s.member_id, s.ended_ms or 0):
            out.append(f"session of {s.member_id} in generation {s.generation_id} ends {s.end_reason}")
    removal_rules = {"R02", "R04", "R05", "R11", "R19"}
    for f in findings:
        if f.rule_id in removal_rules and f.rule_id != "R05":
            for m in f.member_ids:
                if answered_as_member_after(inputs, m, f.window_start_ms) is not None:
                    out.append(f"{f.rule_id} names {m}: {f.summary}")
    return out


def disputed_evidence(predictions: list[dict[str, Any]], findings: list[Finding]) -> list[str]:
    """Evidence rows of findings whose prediction disagrees with the broker's answer."""
    disputed = {(p["source_file"], p["line_no"]) for p in predictions if p["scored"] and not p["matched"]}
    return [
        f"{f.rule_id}: {e.api} {e.source_file}:{e.line_no}"
        for f in findings
        for e in f.evidence
        if (e.source_file, e.line_no) in disputed
    ]


@pytest.mark.parametrize("release", RELEASES)
def test_held_joins_answered_as_the_broker_did(release: str, mode: str) -> None:
    """Every answer agrees with the broker — the re-sent JoinGroups and the SyncGroups after them
    included — and nothing the replay builds says a member the broker kept was removed."""
    predictions, inputs = replayed(release, mode)
    joins = [p for p in predictions if p["api"] in ("JOIN_GROUP", "SYNC_GROUP")]
    assert len(joins) >= 12 and all(p["scored"] for p in joins)
    assert [(p["line_no"], p["api"], p["mismatch_kinds"]) for p in predictions if not p["matched"]] == []
    findings = list(evaluate(inputs, AuditSettings()).findings)
    assert contradictions(inputs, findings) == []
    assert disputed_evidence(predictions, findings) == []
    assert not [f for f in findings if f.rule_id == "R02"]
    # the one rebalance the held join phase is: p3 joined, nobody was evicted, all four in the next generation
    held = [rb for rb in inputs.rebalances if (rb.join_phase_ms or 0) > 25_000]
    assert len(held) == 1 and held[0].trigger == "new_member"
    assert held[0].evicted == () and len(held[0].members_after) == 4
    # what the audit does report is true: p0 held the join phase (R05)
    (r05,) = [f for f in findings if f.rule_id == "R05"]
    p0 = {r.member_id for r in inputs.requests if r.rebalance_timeout_ms == 60_000 and r.member_id}
    assert set(r05.member_ids) == p0


@pytest.mark.parametrize("release", RELEASES)
def test_with_unknown_broker_settings_findings_follow_the_broker(release: str) -> None:
    """The model left at Kafka's defaults (initial rebalance delay 3 s, minimum session timeout 6 s;
    the brokers ran with 1 s and 4 s): the birth's answers are mispredicted (observed != predicted),
    yet in track mode (the product's default) no row or finding claims a removal the broker
    contradicts, and no finding's evidence is a disputed answer."""
    version = "4.0" if release.startswith("4") else release
    predictions, inputs = replayed(release, "track", CoordinatorConfig(kafka_version=version, mode="track"))
    assert [p for p in predictions if p["scored"] and not p["matched"]] != []  # the disputed predictions
    findings = list(evaluate(inputs, AuditSettings()).findings)
    assert contradictions(inputs, findings) == []
    assert disputed_evidence(predictions, findings) == []
    assert not [f for f in findings if f.rule_id == "R02"]


def default_timeout_only(
    arrival_ms: int, previous_ms: int, rebalance_timeout_ms: int, session_ms: int
) -> int | None:
    """The inference before the fix: only the default request.timeout.ms (30 s), one re-send."""
    first = arrival_ms - max(30_000, rebalance_timeout_ms + 5_000)
    return first if previous_ms <= first < previous_ms + session_ms else None


@pytest.mark.parametrize("release", RELEASES)
def test_without_the_fix_the_model_evicts_p2_but_no_finding_says_so(
    monkeypatch: pytest.MonkeyPatch, release: str, mode: str
) -> None:
    """The fix taken away (a re-sent JoinGroup inferred only for the default 30 s request timeout): p2,
    with request.timeout.ms 10 s, is expired by the model and its JoinGroup predicted UNKNOWN_MEMBER_ID.
    Its member session still ends ``session_expiry`` (written when the model removed it; in predict
    mode the rebalance row lists it evicted too: the model's view), but in track mode the rebalance row
    follows the broker, and the audit does in both: no finding reports p2's removal."""
    monkeypatch.setattr(replay_module, "unlogged_join_sent", default_timeout_only)
    predictions, inputs = replayed(release, mode)
    bad = [p for p in predictions if p["scored"] and not p["matched"]]
    assert any(p["api"] == "JOIN_GROUP" and p["predicted_error"] == "UNKNOWN_MEMBER_ID" for p in bad)
    assert contradictions(inputs, []) != []  # the model's removal: p2's member session (and rebalance)
    if mode == "track":  # the broker's answer re-added p2 within the rebalance: not evicted, not joined
        assert [c for c in contradictions(inputs, []) if c.startswith("rebalance")] == []
    findings = list(evaluate(inputs, AuditSettings()).findings)
    assert contradictions(inputs, findings) == contradictions(inputs, [])
    assert not [f for f in findings if f.rule_id == "R02"]
    r02_evidence = disputed_evidence(predictions, [f for f in findings if f.rule_id in ("R02", "R19")])
    assert r02_evidence == []
    # and without the audit's check, the false eviction comes back with confidence 1.0
    monkeypatch.setattr(
        "rebalance_replay.transforms.audit.liveness.kept_by_broker", lambda inputs, member, t: None
    )
    (r02,) = session_timeout_eviction(inputs, R02Settings(), 50)
    assert r02.confidence == 1.0 and "evicted" in r02.summary


def test_unlogged_join_sent() -> None:
    """When the held JoinGroup was sent, from the member's last answer ``P`` and the re-sent one's arrival
    ``R`` (session 6 s, rebalance timeout 8 s: the client's timeout is max(request.timeout.ms, 13 s))."""
    p = 100_000
    # the default request.timeout.ms: one re-send 30 s later
    assert unlogged_join_sent(p + 30_010, p, 8_000, 6_000) == p + 10
    # request.timeout.ms at most 13 s: two re-sends (held-join's p2)
    assert unlogged_join_sent(p + 26_330, p, 8_000, 6_000) == p + 330
    # a request timeout the log cannot tell (e.g. 20 s, one re-send): sent at its last answer
    assert unlogged_join_sent(p + 20_300, p, 8_000, 6_000) == p
    # no silence as long as the session timeout: the member needed no held JoinGroup
    assert unlogged_join_sent(p + 5_000, p, 8_000, 6_000) is None
    assert unlogged_join_sent(p + 40_000, p, 8_000, 0) is None  # nothing known of its session


def _req(t: int, member: str, api: str = "HEARTBEAT", error: str = "NONE", **kw: Any) -> Req:
    return audit_request(
        t,
        member_id=member,
        api_name=api,
        client_id=f"client-{member}",
        client_address=f"10.0.0.{len(member)}:5000",
        error_name=error,
        **kw,
    )


def _expired(member: str, ended: int) -> Session:
    return Session(member, 1, 0, "session_expiry", ended_ms=ended, session_timeout_ms=6_000)


def test_r02_leaves_out_evictions_the_broker_contradicts() -> None:
    """Two members the replay reports expired at 10 s: the broker later answered ``kept`` a JoinGroup
    NONE in generation 2 (a member), ``gone`` UNKNOWN_MEMBER_ID. R02 counts only ``gone`` and its summary
    names the dispute; with both answered as members there is no finding."""
    requests = [
        _req(3_000, "kept"),
        _req(3_500, "gone"),
        _req(20_000, "gone", "JOIN_GROUP", "UNKNOWN_MEMBER_ID"),
        _req(30_000, "kept", "JOIN_GROUP", "NONE", response_generation_id=2, generation_id=None),
        _req(31_000, "other"),
    ]
    inputs = GroupInputs.build(
        "g", requests=requests, sessions=[_expired("kept", 10_000), _expired("gone", 10_000)]
    )
    assert kept_by_broker(inputs, "kept", 10_000) == requests[3]
    assert kept_by_broker(inputs, "gone", 10_000) is None
    (f,) = session_timeout_eviction(inputs, R02Settings(), 50)
    assert f.member_ids == ("gone",) and f.occurrences == 1
    assert "disputed by the broker" in f.summary and "JOIN_GROUP NONE generation 2" in f.summary
    both = GroupInputs.build(
        "g",
        requests=[*requests[:2], requests[3], _req(20_000, "gone", "SYNC_GROUP", "REBALANCE_IN_PROGRESS")],
        sessions=[_expired("kept", 10_000), _expired("gone", 10_000)],
    )
    assert session_timeout_eviction(both, R02Settings(), 50) == []
    # a commit without a generation says nothing (any client may make one); a LeaveGroup neither
    neither = GroupInputs.build(
        "g",
        requests=[
            _req(20_000, "kept", "OFFSET_COMMIT", generation_id=-1),
            _req(21_000, "kept", "LEAVE_GROUP"),
        ],
        sessions=[_expired("kept", 10_000)],
    )
    assert kept_by_broker(neither, "kept", 10_000) is None
