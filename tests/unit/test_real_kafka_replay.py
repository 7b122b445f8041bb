"""The replay on groups recorded from real brokers (``tests/data/real-kafka``), without Spark: the three
places where a real broker's log first disagreed with the model, each replayed as the broker wrote it,
and each shown to disagree again when the mend is taken away.

- a 3.7 broker's session-expiry timer firing 4 ms after its deadline (``crash``);
- a 4.4 broker's Heartbeat and JoinGroup of one connection whose derived arrivals came out in the wrong
  order (``rdkafka-cooperative``);
- a 3.7 coordinator killed: the group answered by another broker with no NOT_COORDINATOR in between
  (``coordinator-moves``).

The expected answers are the real brokers' own (the log), not our model's.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rebalance_replay.transforms.coordinator.config import CoordinatorConfig
from rebalance_replay.transforms.ordering import connection_arrivals
from rebalance_replay.transforms.replay import GroupReplayer, ReplaySettings
from simulator.fidelity import parse_rows

CORPUS = Path(__file__).resolve().parents[1] / "data" / "real-kafka"
#: recordings the live real-Kafka tier found the replay disagreeing with (tests/realkafka/test_found.py)
FOUND = CORPUS.with_name("real-kafka-found")
LAG_MS = 200  # validation.broker_lag_ms's default


def recording_rows(release: str, profile: str, corpus: Path = CORPUS) -> list[dict[str, Any]]:
    rec = corpus / release / profile
    files: dict[str, list[str]] = {}
    for path in sorted(rec.glob("broker-*/kafka-request.log*.gz")):
        with gzip.open(path, "rt") as f:
            files.setdefault(path.parent.name, []).extend(f.read().splitlines())
    return parse_rows(files)


def broker_config(release: str, profile: str, mode: str, corpus: Path = CORPUS) -> CoordinatorConfig:
    """What the broker ran with, from the recording's manifest (the replay infers it from the log too)."""
    manifest = json.loads((corpus / release / profile / "manifest.json").read_text())
    settings = manifest["broker_settings"]
    version = "4.0" if release.startswith("4") else release
    return CoordinatorConfig(
        kafka_version=version,
        group_initial_rebalance_delay_ms=int(settings["group.initial.rebalance.delay.ms"]),
        group_min_session_timeout_ms=int(settings["group.min.session.timeout.ms"]),
        mode=mode,  # type: ignore[arg-type]
    )


def replay(
    release: str, profile: str, group: str, mode: str, corpus: Path = CORPUS, **settings: Any
) -> list[dict[str, Any]]:
    rows = [r for r in recording_rows(release, profile, corpus) if r.get("group_id") == group]
    assert rows, group
    config = broker_config(release, profile, mode, corpus)
    replayer = GroupReplayer(group, ReplaySettings(config, **settings))
    replayer.feed(rows)
    out = replayer.process(max(int(r["completion_ms"]) for r in rows) + 1)
    return list(out.rows["predictions"])


def disagreements(predictions: list[dict[str, Any]]) -> list[tuple[int, str, list[str]]]:
    return [
        (p["line_no"], p["api"], p["mismatch_kinds"]) for p in predictions if p["scored"] and not p["matched"]
    ]


MODES = ("track", "predict")


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> Iterator[str]:
    yield request.param


def test_a_late_session_expiry_timer(mode: str) -> None:
    """The crashed member's session ended at 07:15:57,206; the 3.7 broker's timer fired at ...,210
    (server.log: "Member ... has failed") and answered the other member's heartbeat of ...,209 NONE."""
    kept = replay("3.7", "single", "crash", mode, broker_lag_ms=LAG_MS)
    assert len(kept) == 28 and all(p["scored"] for p in kept)  # every JoinGroup ... OffsetCommit
    assert disagreements(kept) == []
    on_time = replay("3.7", "single", "crash", mode, broker_lag_ms=0)  # timers exactly at their deadline
    assert [(api, kinds) for _, api, kinds in disagreements(on_time)][:1] == [("HEARTBEAT", ["error"])]


def test_a_late_initial_delay_timer_takes_a_parked_join(mode: str) -> None:
    """A 4.4 broker, initial rebalance delay 1 s: ``birth``'s JoinGroups arrived at 8,639 (the delay
    armed), 8,891 and 9,657 ms, the last 18 ms after the delay's first end. The broker's timer fired after
    that join, extended the delay once and answered all three at 10,694-10,707 ms, generation 1. On time,
    the timer extends at 9,639, the third join is new during the second delay, which is extended again:
    every answer of the birth comes a second late (and, in track mode, the first member is dropped)."""
    kept = replay("4.4", "single", "birth", mode, FOUND, broker_lag_ms=LAG_MS)
    assert len(kept) == 27 and all(p["scored"] for p in kept)
    assert disagreements(kept) == []
    joins = [p for p in kept if p["api"] == "JOIN_GROUP" and p["predicted_generation_id"] == 1]
    assert len(joins) == 3
    on_time = disagreements(replay("4.4", "single", "birth", mode, FOUND, broker_lag_ms=0))
    assert [(api, kinds) for _, api, kinds in on_time][:1] == [("JOIN_GROUP", ["completion_time"])]


@pytest.mark.xfail(
    strict=True,
    reason="open: the model fires a session timer at its deadline by the log; this broker had passed it "
    "a few ms earlier (stop 54's closing note). A mirror of the late-timer rule fixed this recording but "
    "broke the committed corpus in track mode; when a fix makes this pass, drop the marker",
)
def test_a_session_expired_before_the_deadline_its_last_heartbeats_line_gives(mode: str) -> None:
    """A 4.4 broker (recorded afresh by the real-Kafka tier, stop 54): ``crash``'s killed member sent its
    last heartbeat at 19:49:23,337 by its line (completed ,340 less totalTimeMs 2.7), so its 6 s session
    ends at 29,337 or later; the broker logged the member failed at 29,336 (server.log) and answered the
    other member's heartbeat, arrived at 29,334 (requestQueueTimeMs 1.9), REBALANCE_IN_PROGRESS. The model
    answers it NONE: line 297's one disagreement, in both modes."""
    kept = replay("4.4", "crash", "crash", mode, FOUND, broker_lag_ms=LAG_MS, line_lag_ms=5)
    assert len(kept) == 27 and all(p["scored"] for p in kept)
    assert disagreements(kept) == []


@pytest.mark.xfail(
    strict=True,
    reason="open: the model takes requests in arrival order; the broker takes them when a request handler "
    "dequeues them, arrival + requestQueueTimeMs (stop 54's closing note); when a fix makes this pass, drop "
    "the marker",
)
def test_two_static_joins_a_ms_apart_in_the_order_the_broker_handled_them(mode: str) -> None:
    """A 4.4 broker (recorded afresh by the real-Kafka tier, stop 54), group ``static-restart-inside``:
    static-inside-0's JoinGroup arrived at 20:40:32,305 by its line and waited 1.8 ms in the request queue;
    static-inside-1's arrived at ,306 and waited 0.1 ms. server.log: static-inside-1 joined first (,306,
    "joins group ... in Empty state"), static-inside-0 at ,307, so static-inside-1 led generation 1. The
    model, in arrival order, makes static-inside-0 the leader: both JoinGroups and a SyncGroup disagree."""
    kept = replay(
        "4.4", "static-order", "static-restart-inside", mode, FOUND, broker_lag_ms=LAG_MS, line_lag_ms=5
    )
    assert disagreements(kept) == []


def test_a_connections_requests_in_correlation_order(mode: str) -> None:
    """librdkafka sent a Heartbeat (correlation 11) then a JoinGroup (12) on one connection; the line
    times less the rounded totalTimeMs put the JoinGroup 1 ms first."""
    kept = replay("4.4", "single", "rdkafka-cooperative", mode, broker_lag_ms=LAG_MS)
    assert disagreements(kept) == []


def test_without_connection_order_the_heartbeat_is_misplaced(monkeypatch: pytest.MonkeyPatch) -> None:
    import rebalance_replay.transforms.replay as replay_module

    monkeypatch.setattr(replay_module, "connection_ordered_rows", lambda rows, lower=True: rows)
    bad = disagreements(replay("4.4", "single", "rdkafka-cooperative", "predict", broker_lag_ms=LAG_MS))
    assert [(api, kinds) for _, api, kinds in bad] == [("HEARTBEAT", ["error"])]


def test_connection_arrivals_lowers_only_inversions() -> None:
    """An inverted pair on one connection: the earlier request's line was written late (an arrival is
    never early), so it moves back to its successor's arrival; other connections and unknown ones stay."""
    codes = np.array([0, 0, 1, 0, -1, 1, 2, 2, 2])
    correlations = np.array([11, 12, 5, 13, 7, 4, 1, 2, 3])
    arrivals = np.array([690, 689, 700, 695, 1, 699, 50, 40, 45])
    assert connection_arrivals(codes, correlations, arrivals).tolist() == [
        689,
        689,
        700,
        695,
        1,
        699,
        40,
        40,
        45,
    ]
    ordered = np.array([1, 2, 3])
    assert connection_arrivals(np.zeros(3, dtype=np.int64), ordered, ordered) is ordered  # nothing to raise


def test_a_coordinator_killed_without_not_coordinator(mode: str) -> None:
    """Broker 3 coordinated the group and was killed (SIGKILL); 12 s later the members' heartbeats
    were answered NONE by broker 1, which had loaded the group Stable from __consumer_offsets."""
    kept = replay("3.7", "three", "coordinator-moves", mode, broker_lag_ms=LAG_MS)
    brokers = {p["broker_id"] for p in kept}
    assert brokers == {"broker-1", "broker-3"}
    assert disagreements(kept) == []
    assert all(p["scored"] for p in kept)  # the new coordinator's state is the persisted one: no warm-up


def test_without_the_move_the_members_would_be_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    """The mend taken away (the broker change not seen): the model expires both members during the
    failover and answers their heartbeats on the new coordinator UNKNOWN_MEMBER_ID."""
    monkeypatch.setattr(GroupReplayer, "_serving", lambda self, broker, request: None)
    kept = replay("3.7", "three", "coordinator-moves", "predict", broker_lag_ms=LAG_MS)
    # the failover's silence then reads as a hole in the log: the answers after it are held back
    # (warm-up, the log-gap rule) instead of scored as they are with the move seen
    lost = [p["unscored_reason"] or "" for p in kept if not p["scored"]]
    assert len(disagreements(kept)) + len(lost) > 20
    assert any("log gap" in reason for reason in lost)


def test_fifty_consumers_joining_at_once_are_scored_from_the_groups_birth() -> None:
    """50 Java consumers of one process joined a new group within 90 ms (4.4). The leader's answer (50
    members) took the broker 32 ms to send, and members answered first sent SyncGroups meanwhile: the
    birth is proved from when the coordinator answered, not from the line's time."""
    kept = replay("4.4", "single", "burst", "predict", broker_lag_ms=LAG_MS)
    assert len(kept) > 300
    assert all(p["scored"] for p in kept)
    assert disagreements(kept) == []


@pytest.mark.slow  # replays the whole real corpus once more (30 s and more on two cores)
def test_without_the_leader_first_the_leader_is_wrong(monkeypatch: pytest.MonkeyPatch) -> None:
    """The leader's line written 14 ms late makes its JoinGroup look 14 ms later than joins the
    coordinator took after it (server.log: it was the first "Adding to the group now"): taken as
    logged, another member is predicted leader for all 50 answers."""
    import rebalance_replay.transforms.replay as replay_module

    monkeypatch.setattr(replay_module, "leader_first_arrivals_rows", lambda rows, lag: rows)
    bad = disagreements(replay("4.4", "single", "burst", "predict", broker_lag_ms=LAG_MS))
    assert sum("leader" in kinds for _, _, kinds in bad) == 50


def delayed_line(line: str, ms: int) -> str:
    """``line`` as the broker would have written it ``ms`` later (its log4j time; the timing fields,
    taken before the line is written, unchanged)."""
    from datetime import datetime, timedelta

    stamp = line[1:24]  # [2026-11-27 07:21:41,861]
    moved = datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f") + timedelta(milliseconds=ms)
    return "[" + moved.strftime("%Y-%m-%d %H:%M:%S,%f")[:-3] + line[24:]


def birth_with_late_leader_sync(ms: int) -> list[dict[str, Any]]:
    """The 3.7 birth recording with the leader's SyncGroup line (the one with assignments) written
    ``ms`` late, as a loaded broker did in CI (it answered the other members first)."""
    path = next((CORPUS / "3.7" / "single").glob("broker-*/kafka-request.log*.gz"))
    with gzip.open(path, "rt") as f:
        lines = f.read().splitlines()
    leader = [
        i
        for i, line in enumerate(lines)
        if '"groupId":"birth"' in line and '"SYNC_GROUP"' in line and '"assignments":[{' in line
    ]
    assert len(leader) == 1
    lines[leader[0]] = delayed_line(lines[leader[0]], ms)
    return [r for r in parse_rows({path.parent.name: lines}) if r.get("group_id") == "birth"]


def replay_rows(rows: list[dict[str, Any]], mode: str, columns: bool = False) -> list[dict[str, Any]]:
    """The group's rows fed as rows (:meth:`GroupReplayer.feed`) or as Arrow columns (``feed_table``,
    the Spark paths' way)."""
    replayer = GroupReplayer(
        "birth", ReplaySettings(broker_config("3.7", "single", mode), broker_lag_ms=LAG_MS)
    )
    if columns:
        import pyarrow as pa

        from rebalance_replay.transforms.replay import REPLAY_COLUMNS, REPLAY_SCHEMA

        replayer.feed_table(
            pa.Table.from_pylist([{c: r.get(c) for c in REPLAY_COLUMNS} for r in rows], REPLAY_SCHEMA)
        )
    else:
        replayer.feed(rows)
    return list(replayer.process(max(int(r["completion_ms"]) for r in rows) + 1).rows["predictions"])


@pytest.mark.parametrize("columns", [False, True], ids=["rows", "columns"])
def test_a_leader_sync_line_written_late(mode: str, columns: bool) -> None:
    """A real 3.7 broker in CI wrote the leader's SyncGroup line late enough that its arrival (line
    time less totalTimeMs) came out after a follower's NONE answer, which Kafka only sends once the
    leader's SyncGroup is handled: the model held the follower's SyncGroup past its answer and
    predicted NO_RESPONSE. Here the recorded birth, its leader's line 30 ms late: every answer agrees."""
    kept = replay_rows(birth_with_late_leader_sync(30), mode, columns)
    # JoinGroup ... OffsetCommit; fed as columns, the Stable generation's routine heartbeats and commits
    # are validated in bulk (no prediction rows)
    assert len(kept) == (14 if columns else 27) and all(p["scored"] for p in kept)
    assert disagreements(kept) == []


@pytest.mark.parametrize("columns", [False, True], ids=["rows", "columns"])
def test_without_the_leader_sync_mend_the_follower_is_unanswered(
    monkeypatch: pytest.MonkeyPatch, columns: bool
) -> None:
    import rebalance_replay.transforms.replay as replay_module

    monkeypatch.setattr(replay_module, "_leader_sync_shift", lambda columns, arrivals, lag: arrivals)
    bad = disagreements(replay_rows(birth_with_late_leader_sync(30), "track", columns))
    # CI's failure exactly: "SYNC_GROUP error,protocol_name observed NONE predicted NO_RESPONSE"
    assert [(api, kinds) for _, api, kinds in bad] == [("SYNC_GROUP", ["error", "protocol_name"])]


def commit_race_with_a_late_commit_line(ms: int) -> list[dict[str, Any]]:
    """The 2.7 commit-race recording with line 1783 written ``ms`` late: the OffsetCommit that the
    member completing generation 2's join phase sent just before its JoinGroup (1784), on the same
    connection."""
    rec = CORPUS / "2.7" / "single"
    files: dict[str, list[str]] = {}
    for path in sorted(rec.glob("broker-*/kafka-request.log*.gz")):
        with gzip.open(path, "rt") as f:
            files.setdefault(path.parent.name, []).extend(f.read().splitlines())
    (lines,) = files.values()
    assert "OFFSET_COMMIT" in lines[1782]
    lines[1782] = delayed_line(lines[1782], ms)
    return [r for r in parse_rows(files) if r.get("group_id") == "commit-race"]


def replay_group(rows: list[dict[str, Any]], release: str, mode: str) -> list[dict[str, Any]]:
    group = str(rows[0]["group_id"])
    replayer = GroupReplayer(
        group, ReplaySettings(broker_config(release, "single", mode), broker_lag_ms=LAG_MS)
    )
    replayer.feed(rows)
    return list(replayer.process(max(int(r["completion_ms"]) for r in rows) + 1).rows["predictions"])


def test_a_late_line_is_not_carried_onto_its_connections_next_request(mode: str) -> None:
    """A real 2.7 member's OffsetCommit line written 20 ms late comes out after the same connection's
    next request, its JoinGroup — the one that completed generation 2's join phase. The commit's arrival
    moves back to the join's (a line is never early), and the phase completes when the broker said."""
    kept = replay_group(commit_race_with_a_late_commit_line(20), "2.7", mode)
    assert disagreements(kept) == []


def test_raising_the_next_request_instead_delays_the_join_phase(monkeypatch: pytest.MonkeyPatch) -> None:
    """The mend the other way round (the JoinGroup raised to the late commit's arrival, as before):
    the phase completes 16 ms after the broker's answers."""
    import rebalance_replay.transforms.replay as replay_module

    original = replay_module.connection_ordered_rows
    monkeypatch.setattr(
        replay_module, "connection_ordered_rows", lambda rows, lower=True: original(rows, lower=False)
    )
    bad = disagreements(replay_group(commit_race_with_a_late_commit_line(20), "2.7", "predict"))
    assert [(api, kinds) for _, api, kinds in bad][:1] == [("JOIN_GROUP", ["completion_time"])]


def with_a_hole(release: str, group: str, after_s: float, hole_s: float) -> list[dict[str, Any]]:
    """A real group's rows with ``hole_s`` seconds of its log missing, ``after_s`` after its first line
    (a rotated file lost, an hour not shipped)."""
    rows = sorted(
        (r for r in recording_rows(release, "single") if r.get("group_id") == group),
        key=lambda r: int(r["completion_ms"]),
    )
    start = int(rows[0]["completion_ms"]) + after_s * 1000
    return [r for r in rows if not start <= int(r["completion_ms"]) < start + hole_s * 1000]


@pytest.mark.parametrize("release", ["2.7", "3.7", "4.4"])
@pytest.mark.parametrize("group", ["crash", "scale-up", "rolling-restart"])
def test_a_hole_in_the_log_is_not_blamed_on_the_coordinator(release: str, group: str) -> None:
    """Issue 29: 10 s of a real group's log missing. The model lets its members' sessions expire in the
    silence, then the broker answers them as members: the log lost lines (Kafka never accepts a member it
    expired), so the model goes back to warm-up naming the gap, and nothing is counted against it."""
    rows = with_a_hole(release, group, 6, 10)
    replayer = GroupReplayer(
        group, ReplaySettings(broker_config(release, "single", "predict"), broker_lag_ms=LAG_MS)
    )
    replayer.feed(rows)
    kept = list(replayer.process(max(int(r["completion_ms"]) for r in rows) + 1).rows["predictions"])
    assert disagreements(kept) == []
    gaps = [
        p["unscored_reason"] for p in kept if not p["scored"] and "log gap" in (p["unscored_reason"] or "")
    ]
    assert gaps and gaps[0].startswith("warm-up: log gap: no request of the group in the log for ")


def test_without_the_log_gap_rule_the_hole_is_counted_as_mispredictions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from rebalance_replay.transforms.coordinator.engine import CoordinatorEngine

    monkeypatch.setattr(CoordinatorEngine, "_log_gap", lambda self, call, predicted: None)
    rows = with_a_hole("3.7", "rolling-restart", 8, 10)
    replayer = GroupReplayer(
        "rolling-restart", ReplaySettings(broker_config("3.7", "single", "predict"), broker_lag_ms=LAG_MS)
    )
    replayer.feed(rows)
    kept = list(replayer.process(max(int(r["completion_ms"]) for r in rows) + 1).rows["predictions"])
    assert len(disagreements(kept)) > 10


@pytest.mark.parametrize("skew_ms", [-3000, 3000])
@pytest.mark.parametrize("broker", ["broker-1", "broker-3"])
def test_a_coordinator_move_between_skewed_clocks(broker: str, skew_ms: int) -> None:
    """Issue 29: the two brokers of a real 3.7 coordinator move (broker 3 killed, broker 1 took over)
    with one broker's clock 3 s ahead or behind: the requests of the two coordinators are replayed per
    coordinator (each broker's answers decide its own state), so the skew changes no answer. (Written
    for 8cc3807, dropped by accident with the late-line corpus test in dfc9298.)"""
    rec = CORPUS / "3.7" / "three"
    files: dict[str, list[str]] = {}
    for path in sorted(rec.glob("broker-*/kafka-request.log*.gz")):
        with gzip.open(path, "rt") as f:
            lines = f.read().splitlines()
        skewed = path.parent.name == broker
        files.setdefault(path.parent.name, []).extend(
            delayed_line(x, skew_ms) if skewed else x for x in lines
        )
    rows = [
        r for r in parse_rows(files) if r.get("group_id") in ("coordinator-moves", "coordinator-shutdown")
    ]
    for group in ("coordinator-moves", "coordinator-shutdown"):
        group_rows = [r for r in rows if r["group_id"] == group]
        replayer = GroupReplayer(
            group, ReplaySettings(broker_config("3.7", "three", "predict"), broker_lag_ms=LAG_MS)
        )
        replayer.feed(group_rows)
        kept = list(
            replayer.process(max(int(r["completion_ms"]) for r in group_rows) + 1).rows["predictions"]
        )
        assert {p["broker_id"] for p in kept} == {"broker-1", "broker-3"}
        assert sum(p["scored"] for p in kept) >= 10
        assert disagreements(kept) == []


def test_the_real_log_mends_survive_fuzzed_lines() -> None:
    """What the mends compute from a line (answer times from the timing fields, connection orders,
    the leader's arrival) on 10,000 mutated lines: NaN and absurd timing fields, wild arrivals."""
    from rebalance_replay.transforms.kafka_protocol import STATE_CHANGING_APIS
    from simulator.mutations import base_lines, mutated_lines

    lines = base_lines()
    rows = parse_rows({"broker-1": mutated_lines(lines, 10_000, 3), "broker-2": lines})
    by_group: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if r.get("group_id") and r["api_key"] in STATE_CHANGING_APIS:
            by_group.setdefault(str(r["group_id"]), []).append(r)
    settings = ReplaySettings(CoordinatorConfig(), broker_lag_ms=LAG_MS)
    replayed = 0
    for group, group_rows in by_group.items():
        replayer = GroupReplayer(group, settings)
        replayer.feed(group_rows)
        replayed += len(
            replayer.process(max(int(r["completion_ms"]) for r in group_rows) + 1).rows["predictions"]
        )
    assert replayed > 1_000


def test_a_loaded_37_birth_with_an_initial_delay_timer_late_past_two_joins(mode: str) -> None:
    """Recorded by ``make test-realkafka`` on 2026-12-06 while the whole test suite ran beside it (Kafka
    3.7.2, one broker, initial rebalance delay 1 s): ``birth``'s three Java consumers rejoin with their
    member ids at 22,782 (the delay armed), 23,193 and 23,823 ms; the third had been given its id at
    23,820, 38 ms after the delay's first end. The broker answered all three at 24,842-24,855 ms,
    generation 1: one extension, so its timer fired after the third join, late past two requests. On time
    (or late past the MEMBER_ID_REQUIRED join only), the third join is new during the first extension,
    which is extended again: the birth is predicted a second late (in track mode, the second member's
    JoinGroup unanswered)."""
    kept = replay("3.7", "single", "birth", mode, FOUND, broker_lag_ms=LAG_MS)
    assert len(kept) == 27 and all(p["scored"] for p in kept)
    assert disagreements(kept) == []
    joins = [p for p in kept if p["api"] == "JOIN_GROUP" and p["predicted_generation_id"] == 1]
    assert [p["predicted_completion_ms"] % 100_000 for p in joins] == [84_823] * 3


def test_without_the_held_timer_the_loaded_37_birth_is_a_second_late(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mend taken away (the timer late past one request at most): what stop 46's run reported."""
    monkeypatch.setattr(GroupReplayer, "_held_trial", lambda self, held, request: None)
    bad = disagreements(replay("3.7", "single", "birth", mode, FOUND, broker_lag_ms=LAG_MS))
    if mode == "track":
        assert [(line, api) for line, api, _ in bad] == [(95, "JOIN_GROUP")]
    else:
        assert sorted((line, api, kinds) for line, api, kinds in bad if api == "JOIN_GROUP") == [
            (line, "JOIN_GROUP", ["completion_time"]) for line in (95, 96, 97)
        ]


def test_a_held_timer_is_taken_only_when_it_explains_the_answer_that_showed_it() -> None:
    """The loaded 3.7 birth with the third member's JoinGroup (line 97) answered 100 ms after it arrived,
    a second before any join phase of the group could end: neither the model (its timer on time) nor the
    copy with the timer held past the two joins explains that answer, though the copy explains the other
    two members' (line 95 and 96, answered at 24,842-24,855 ms). The replay keeps the model with the timer
    on time — it does not rewrite a timer's history to fit a line it cannot explain — so the birth comes a
    second late, as without the held timer. (Taking the copy because it disagrees less passed every other
    test: the rule is that the copy must explain the answer that showed the late timer.)"""
    rows = [dict(r) for r in recording_rows("3.7", "single", FOUND) if r.get("group_id") == "birth"]
    (third,) = [r for r in rows if r["line_no"] == 97]
    third["completion_ms"] = int(third["arrival_ms"]) + 100
    replayer = GroupReplayer(
        "birth", ReplaySettings(broker_config("3.7", "single", "predict", FOUND), broker_lag_ms=LAG_MS)
    )
    replayer.feed(rows)
    kept = list(replayer.process(max(int(r["completion_ms"]) for r in rows) + 1).rows["predictions"])
    bad = disagreements(kept)
    assert sorted((line, kinds) for line, api, kinds in bad if api == "JOIN_GROUP") == [
        (line, ["completion_time"]) for line in (95, 96, 97)
    ]
    start = min(int(r["arrival_ms"]) for r in rows)
    joined = {
        p["line_no"]: p["predicted_completion_ms"] - start for p in kept if p["line_no"] in (95, 96, 97)
    }
    assert joined == {95: 3183, 96: 3183, 97: 3183}  # the second extension's end, not 2,224
