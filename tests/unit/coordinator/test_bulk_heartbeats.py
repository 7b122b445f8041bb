"""The bulk validation of routine traffic (``CoordinatorEngine.bulk_heartbeats``) steps aside when another
member's session timer falls due inside a run of heartbeats and commits: that member must be expired in
the middle of the run, exactly as the per-request path expires it (the run's rows fed as columns, the bulk
path, against the same rows fed one by one as dicts). ``tests/unit/test_bulk_validation.py`` compares both
paths on whole corpora; this one is the mutation suite's, with Kafka's answers written by hand.

The log (Kafka 3.7, ``group.initial.rebalance.delay.ms`` 3000, rebalance timeout 60 s), times in ms from T0:

* 1000/1005: A and B (JoinGroup v9) get MEMBER_ID_REQUIRED; they join with their ids at 1001 (session 30 s)
  and 1006 (session 6 s). The group leaves Empty at 1001: the initial delay fires at 4001, B was added
  meanwhile, so it re-arms for 3000 ms and the join phase completes at 7001 (§5.2): generation 1, leader A.
* 7005: B's SyncGroup is parked (CompletingRebalance); 7010: the leader's SyncGroup answers both and
  re-arms their sessions (§6): A's deadline 7010 + 30000 = 37010, B's 7010 + 6000 = 13010. B then crashes.
* 8000-13500: A heartbeats every second and commits every two, all answered NONE: one run of ten routine
  requests, from 8000 to 13500 (A's deadline, 37010, is beyond it).
* 13010, inside the run: B's session passes without a heartbeat, B is removed and the Stable group starts
  a rebalance (§8.2, §5.5, §5.1): PreparingRebalance, still generation 1. A's commit at 13500 carries
  generation 1 and is accepted in PreparingRebalance (§10: NONE, session refreshed); A's heartbeat at 14000
  is answered REBALANCE_IN_PROGRESS (§8.1).
* 14050: A rejoins; it is the only member, so the join phase completes at once (§5.3, §5.4): generation 2,
  leader A, members [A]; its SyncGroup at 14060 makes the group Stable.
* 15000-22000: eight heartbeats of generation 2, a run with no other timer inside: validated in bulk.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from rebalance_replay.transforms.coordinator.config import CoordinatorConfig
from rebalance_replay.transforms.kafka_protocol import ApiKey
from rebalance_replay.transforms.replay import (
    OUTPUT_KINDS,
    REPLAY_COLUMNS,
    REPLAY_SCHEMA,
    GroupReplayer,
    ReplayOutput,
    ReplaySettings,
)

GROUP = "orders"
T0 = 1_700_000_000_000
A = "consumer-orders-1-6f1c1c3e-0b2a-4a59-9d51-2f7a1c0e8a01"
B = "consumer-orders-2-a3d0b7f4-51c2-4c67-8e0b-9b1f4d2c6e02"
SESSION_MS = {A: 30_000, B: 6_000}
CLIENT = {A: 1, B: 2}
#: ConsumerProtocol subscription v3 to topic "orders", and range assignments of its two partitions
METADATA = b"\x00\x03\x00\x00\x00\x01\x00\x06orders\xff\xff\xff\xff\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff"
ASSIGN_A = b"\x00\x03\x00\x00\x00\x01\x00\x06orders\x00\x00\x00\x01\x00\x00\x00\x00\xff\xff\xff\xff"
ASSIGN_B = b"\x00\x03\x00\x00\x00\x01\x00\x06orders\x00\x00\x00\x01\x00\x00\x00\x01\xff\xff\xff\xff"
ASSIGN_A2 = (
    b"\x00\x03\x00\x00\x00\x01\x00\x06orders\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x01\xff\xff\xff\xff"
)
B_EXPIRES = 13_010  # B's session deadline (module docstring)
RUN = range(8_000, 13_501)  # the run of A's routine requests around it


def _row(
    at: int, api: ApiKey, version: int, who: str, member: str, error: str, done: int | None = None, **f: Any
) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(REPLAY_COLUMNS)
    n = CLIENT[who]
    row.update(
        source_file="broker-1/kafka-request.log",
        broker_id="broker-1",
        api_key=int(api),
        api_version=version,
        group_id=GROUP,
        client_id=f"consumer-orders-{n}",
        connection=f"10.0.0.1:9092-10.1.0.{n}:5000{n}-0",
        client_address=f"10.1.0.{n}:5000{n}",
        arrival_ms=T0 + at,
        completion_ms=T0 + (at if done is None else done),
        member_id=member,
        error_name=error,
        response_queue_time_ms=0.04,
        send_time_ms=0.2,
        **f,
    )
    return row


def _join(
    at: int, who: str, member: str, error: str, done: int | None, reason: str, **response: Any
) -> dict[str, Any]:
    return _row(
        at,
        ApiKey.JOIN_GROUP,
        9,
        who,
        member,
        error,
        done,
        session_timeout_ms=SESSION_MS[who],
        rebalance_timeout_ms=60_000,
        protocol_type="consumer",
        protocols=[{"name": "range", "metadata": METADATA, "metadata_length": len(METADATA)}],
        reason=reason,
        response_skip_assignment=False,
        **response,
    )


def _joined(generation: int, member: str, members: tuple[str, ...]) -> dict[str, Any]:
    return {
        "response_generation_id": generation,
        "response_leader": A,
        "response_member_id": member,
        "response_protocol_type": "consumer",
        "response_protocol_name": "range",
        "response_members": [
            {
                "member_id": m,
                "group_instance_id": None,
                "metadata": METADATA,
                "metadata_length": len(METADATA),
            }
            for m in members
        ],
    }


def _sync(
    at: int, who: str, generation: int, done: int, assignments: list[Any], answer: bytes
) -> dict[str, Any]:
    return _row(
        at,
        ApiKey.SYNC_GROUP,
        5,
        who,
        who,
        "NONE",
        done,
        generation_id=generation,
        protocol_type="consumer",
        protocol_name="range",
        assignments=assignments,
        response_protocol_type="consumer",
        response_protocol_name="range",
        response_assignment=answer,
    )


def _heartbeat(at: int, generation: int, error: str = "NONE") -> dict[str, Any]:
    return _row(at, ApiKey.HEARTBEAT, 4, A, A, error, generation_id=generation)


def _commit(at: int, generation: int, offset: int) -> dict[str, Any]:
    return _row(
        at,
        ApiKey.OFFSET_COMMIT,
        8,
        A,
        A,
        "NONE",
        generation_id=generation,
        commit_partitions=[{"topic": "orders", "partition": 0, "committed_offset": offset}],
        response_commit_partitions=[
            {"topic": "orders", "partition": 0, "error_code": 0, "error_name": "NONE"}
        ],
    )


def log_rows() -> list[dict[str, Any]]:
    """The module docstring's log: rows in line order (completion), correlation ids per client in order."""
    first = "rebalance failed due to MemberIdRequiredException"
    required = {"response_generation_id": -1, "response_leader": "", "response_members": []}
    rows = [
        _join(1000, A, "", "MEMBER_ID_REQUIRED", None, "", response_member_id=A, **required),
        _join(1001, A, A, "NONE", 7001, first, **_joined(1, A, (A, B))),
        _join(1005, B, "", "MEMBER_ID_REQUIRED", None, "", response_member_id=B, **required),
        _join(1006, B, B, "NONE", 7001, first, **_joined(1, B, ())),
        _sync(7005, B, 1, 7010, [], ASSIGN_B),
        _sync(
            7010,
            A,
            1,
            7010,
            [{"member_id": A, "assignment": ASSIGN_A}, {"member_id": B, "assignment": ASSIGN_B}],
            ASSIGN_A,
        ),
        *(_heartbeat(t, 1) for t in range(8000, 13_001, 1000)),
        *(_commit(t, 1, t // 10) for t in (8500, 10_500, 12_500, 13_500)),
        _heartbeat(14_000, 1, "REBALANCE_IN_PROGRESS"),
        _join(14_050, A, A, "NONE", None, "group is already rebalancing", **_joined(2, A, (A,))),
        _sync(14_060, A, 2, 14_060, [{"member_id": A, "assignment": ASSIGN_A2}], ASSIGN_A2),
        *(_heartbeat(t, 2) for t in range(15_000, 22_001, 1000)),
    ]
    sent: dict[str, int] = {}
    for r in sorted(rows, key=lambda r: r["arrival_ms"]):
        sent[r["client_id"]] = sent.get(r["client_id"], 0) + 1
        r["correlation_id"] = sent[r["client_id"]]
    rows.sort(key=lambda r: r["completion_ms"])
    for no, r in enumerate(rows, 1):
        r["line_no"] = no
    return rows


def _replay(rows: list[dict[str, Any]], columns: bool) -> tuple[list[ReplayOutput], GroupReplayer]:
    replayer = GroupReplayer(GROUP, ReplaySettings(coordinator=CoordinatorConfig(kafka_version="3.7")))
    if columns:
        replayer.feed_table(pa.Table.from_pylist(rows, schema=REPLAY_SCHEMA))
    else:
        replayer.feed(rows)
    end = max(int(r["completion_ms"]) for r in rows) + 1
    return [replayer.process(end), replayer.finish()], replayer


def _tables(outs: list[ReplayOutput]) -> dict[str, list[dict[str, Any]]]:
    """Every output table's rows (the bulk-validated predictions included), in a canonical order."""
    return {
        kind: sorted(
            (r for o in outs for r in (o.all_predictions() if kind == "predictions" else o.rows[kind])),
            key=lambda r: repr(sorted(r.items())),
        )
        for kind in OUTPUT_KINDS
    }


def test_another_members_session_expiring_inside_a_heartbeat_run_is_expired_as_one_by_one() -> None:
    rows = log_rows()
    one_by_one, full = _replay(rows, columns=False)
    in_bulk, columnar = _replay(rows, columns=True)
    expected = _tables(one_by_one)
    assert _tables(in_bulk) == expected
    assert columnar.model.to_bytes() == full.model.to_bytes()
    assert columnar.tracker.to_bytes() == full.tracker.to_bytes()

    # only generation 2's eight heartbeats went in bulk: the run with B's expiry inside went one by one
    bulk_rows = [r for o in in_bulk for t in o.prediction_tables for r in t.to_pylist()]
    assert sorted(r["arrival_ms"] - T0 for r in bulk_rows) == list(range(15_000, 22_001, 1000))

    predictions = expected["predictions"]
    assert len(predictions) == len(rows) and all(p["scored"] and p["matched"] for p in predictions)
    by_arrival = {(p["api"], p["arrival_ms"] - T0): p for p in predictions}
    for (api, at), p in by_arrival.items():
        if at in RUN:  # A's routine requests: NONE, Stable until B's expiry, PreparingRebalance after it
            assert p["predicted_error"] == "NONE" and p["generation_after"] == 1, (api, at)
            state = "Stable" if at < B_EXPIRES else "PreparingRebalance"
            assert (p["state_before"], p["state_after"]) == (state, state), (api, at)
    assert by_arrival[("OFFSET_COMMIT", 13_500)]["state_before"] == "PreparingRebalance"
    assert by_arrival[("HEARTBEAT", 14_000)]["predicted_error"] == "REBALANCE_IN_PROGRESS"
    joined = by_arrival[("JOIN_GROUP", 14_050)]
    assert (joined["predicted_generation_id"], joined["predicted_leader"], joined["predicted_members"]) == (
        2,
        A,
        [A],
    )

    expiry = [t for t in expected["transitions"] if t["time_ms"] - T0 == B_EXPIRES]
    assert [(t["from_state"], t["to_state"], t["generation_id"], t["member_id"]) for t in expiry] == [
        ("Stable", "PreparingRebalance", 1, B)
    ]
    assert expiry[0]["cause"] == f"removing member {B} on heartbeat expiration"
    # the expiry comes before A's commit at 13500 in the group's replay order, after its heartbeat at 13000
    seqs = {(p["api"], p["arrival_ms"] - T0): p["seq"] for p in predictions}
    assert seqs[("HEARTBEAT", 13_000)] < expiry[0]["seq"] <= seqs[("OFFSET_COMMIT", 13_500)]

    [rebalance] = [r for r in expected["rebalances"] if r["generation_to"] == 2]
    assert (rebalance["trigger"], rebalance["trigger_member_id"], rebalance["evicted"]) == (
        "session_expiry",
        B,
        [B],
    )
    assert (rebalance["started_ms"] - T0, rebalance["generation_from"], rebalance["generation_to"]) == (
        B_EXPIRES,
        1,
        2,
    )
    assert rebalance["members_after"] == [A]
    ended = {(s["member_id"], s["generation_id"]): s for s in expected["member_sessions"]}
    assert (ended[(B, 1)]["end_reason"], ended[(B, 1)]["ended_ms"] - T0) == ("session_expiry", B_EXPIRES)


def test_the_hot_path_switched_off_takes_nothing_in_bulk(monkeypatch: Any) -> None:
    """With the hot path off (the tests' switch to compare both paths), no run is taken in bulk: every
    request goes through ``handle``, and the tables are those of the one-by-one replay."""
    from rebalance_replay.transforms.coordinator.engine import CoordinatorEngine

    rows = log_rows()
    one_by_one, _ = _replay(rows, columns=False)
    monkeypatch.setattr(CoordinatorEngine, "_fast_path", False)
    in_columns, _ = _replay(rows, columns=True)
    assert [r for o in in_columns for t in o.prediction_tables for r in t.to_pylist()] == []
    assert _tables(in_columns) == _tables(one_by_one)


def test_a_pending_silent_move_is_not_taken_in_bulk() -> None:
    """Another broker answering the group normally (``moved_silently``) is handled with the group's next
    request — the group unloaded and loaded from what the old coordinator persisted (§16): a heartbeat
    run must not be taken past it in bulk. The same run is taken in bulk without the move."""
    from rebalance_replay.transforms import bulk

    rows = log_rows()
    before = [r for r in rows if r["arrival_ms"] - T0 < 15_000]
    run_rows = [r for r in rows if r["arrival_ms"] - T0 >= 15_000]
    assert len(run_rows) == 8 and all(r["api_key"] == int(ApiKey.HEARTBEAT) for r in run_rows)
    table = pa.Table.from_pylist(run_rows, schema=REPLAY_SCHEMA)

    def bulk_taken(move: bool) -> int | None:
        replayer = GroupReplayer(GROUP, ReplaySettings(coordinator=CoordinatorConfig(kafka_version="3.7")))
        replayer.feed(before)
        replayer.process(T0 + 15_000)
        if move:
            replayer.model.moved_silently("its requests are answered by broker-2 now, by broker-1 before")
        return replayer.model.bulk_heartbeats(bulk.summarize(table, 0, table.num_rows).model)

    assert bulk_taken(move=False) is not None
    assert bulk_taken(move=True) is None
