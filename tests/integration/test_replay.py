"""Replay on Spark, end to end on real-format logs: the stateful path, the fast path and the scheduled
incremental audit agree row for row; rebalance stories come out right; bad logs are caught or absorbed."""

from __future__ import annotations

import bisect
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from rebalance_replay.jobs.cli import main
from rebalance_replay.transforms.report.naming import forensics_name
from simulator.clients import ConsumerSpec, SimConfig
from tests.helpers import canonical, quiet_times, read_table, render_group_lines, write_lines

pytestmark = [pytest.mark.spark, pytest.mark.slow]

T0 = int(datetime(2024, 6, 3, 12, 0, tzinfo=UTC).timestamp() * 1000)
S = 1000
OUTPUTS = ("predictions", "transitions", "rebalances", "member_sessions")


def story_configs() -> list[SimConfig]:
    """Two groups whose lives cover the common rebalance triggers."""
    dyn = SimConfig(
        group_id="shop-orders",
        topics={"orders": 8},
        until_ms=T0 + 170 * S,
        broker_id="broker-1",
        broker_host="10.0.0.1",
        consumers=[
            ConsumerSpec("1", T0 + 1 * S, session_timeout_ms=10_000),
            ConsumerSpec("2", T0 + 1 * S + 300, session_timeout_ms=10_000, close_ms=T0 + 90 * S),
            ConsumerSpec("3", T0 + 2 * S, session_timeout_ms=10_000, crash_ms=T0 + 120 * S),
            ConsumerSpec("4", T0 + 60 * S, session_timeout_ms=10_000),
        ],
    )
    static = SimConfig(
        group_id="ledger",
        topics={"ledger": 4},
        until_ms=T0 + 170 * S,
        broker_id="broker-2",
        broker_host="10.0.0.2",
        consumers=[
            ConsumerSpec(
                "a",
                T0 + 5 * S,
                group_instance_id="ledger-0",
                session_timeout_ms=20_000,
                crash_ms=T0 + 50 * S,
                restart_ms=T0 + 55 * S,
            ),
            ConsumerSpec(
                "b",
                T0 + 5 * S + 200,
                group_instance_id="ledger-1",
                session_timeout_ms=20_000,
                crash_ms=T0 + 100 * S,
            ),
        ],
    )
    return [dyn, static]


@pytest.fixture(scope="module")
def story() -> dict[str, list[tuple[int, int, str]]]:
    return render_group_lines(story_configs())


def _write_all(root: Path, story: dict[str, list[tuple[int, int, str]]]) -> Path:
    for broker, lines in story.items():
        write_lines(root, broker, [line for _, _, line in lines])
    return root


def _cli(*args: str) -> None:
    assert main(list(args)) == 0


def _tables(wh: Path) -> dict[str, list[str]]:
    return {t: canonical(read_table(wh / t)) for t in OUTPUTS}


def _summary(wh: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((wh / "summary.json").read_text())
    return data


def test_batch_paths_agree_and_tell_the_story(
    tmp_path: Path, spark: object, story: dict[str, list[tuple[int, int, str]]]
) -> None:
    logs = _write_all(tmp_path / "logs", story)
    wh_stateful, wh_fast = tmp_path / "wh-stateful", tmp_path / "wh-fast"
    for wh, path in ((wh_stateful, "stateful"), (wh_fast, "fast")):
        _cli("ingest", "--input", str(logs), "--warehouse", str(wh))
        _cli("replay", "--warehouse", str(wh), "--path", path)
    stateful, fast = _tables(wh_stateful), _tables(wh_fast)
    for t in OUTPUTS:
        assert stateful[t] == fast[t], f"{t}: stateful and fast paths differ"

    predictions = read_table(wh_stateful / "predictions")
    scored = [p for p in predictions if p["scored"]]
    assert scored and all(p["matched"] for p in scored), [p for p in scored if not p["matched"]][:3]
    assert len(predictions) == sum(
        1 for lines in story.values() for _, _, line in lines if "FIND_COORDINATOR" not in line
    )

    rebalances = sorted(
        read_table(wh_stateful / "rebalances"), key=lambda r: (r["group_id"], r["rebalance_seq"])
    )
    shop = [r for r in rebalances if r["group_id"] == "shop-orders"]
    assert [r["trigger"] for r in shop] == ["group_created", "new_member", "member_left", "session_expiry"]
    assert all(r["outcome"] == "stable" for r in shop)
    assert [r["generation_to"] for r in shop] == [1, 2, 3, 4]
    created, joined, left, expired = shop
    assert len(created["members_after"]) == 3 and created["join_phase_ms"] >= 3000  # initial delay
    assert len(joined["joined"]) == 1 and len(joined["members_after"]) == 4
    assert left["trigger_client_reason"] == "the consumer is being closed" and len(left["left"]) == 1
    assert len(expired["evicted"]) == 1 and len(expired["members_after"]) == 2
    assert all(r["partitions_assigned"] == 8 for r in shop)
    assert joined["partitions_moved"] is not None and joined["partitions_moved"] > 0
    ledger = [r for r in rebalances if r["group_id"] == "ledger"]
    # a static member back within its session timeout is replaced without a rebalance; one gone for longer
    # is evicted by session expiry
    assert [r["trigger"] for r in ledger] == ["group_created", "session_expiry"]
    # ledger-0 (the leader) restarted with a new member id between the two rebalances, without a third one
    first_leader, second_leader = ledger[0]["leader"], ledger[1]["leader"]
    assert first_leader.startswith("ledger-0-") and second_leader.startswith("ledger-0-")
    assert first_leader != second_leader and ledger[1]["generation_from"] == 1


def test_bulk_validation_changes_no_row(
    tmp_path: Path, spark: object, story: dict[str, list[tuple[int, int, str]]]
) -> None:
    """``replay.bulk`` on (the default) and off give the same four tables, on both paths."""
    logs = _write_all(tmp_path / "logs", story)
    tables = {}
    for name, path, bulk in (
        ("fast-off", "fast", "false"),
        ("fast-on", "fast", "true"),
        ("st-on", "stateful", "true"),
    ):
        wh = tmp_path / name
        _cli("ingest", "--input", str(logs), "--warehouse", str(wh))
        _cli("replay", "--warehouse", str(wh), "--path", path, "--set", f"replay.bulk={bulk}")
        tables[name] = _tables(wh)
        replayed = _summary(wh)["replay"]
        routine = sum(1 for p in read_table(wh / "predictions") if p["api"] in ("HEARTBEAT", "OFFSET_COMMIT"))
        if bulk == "true":  # the routine traffic is validated in bulk, the rest one by one
            assert 0.9 * routine <= replayed["bulk_validated"] <= routine, (name, replayed)
        else:
            assert replayed["bulk_validated"] == 0
    for t in OUTPUTS:
        assert tables["fast-on"][t] == tables["fast-off"][t], f"{t}: bulk validation changed rows"
        assert tables["st-on"][t] == tables["fast-off"][t], f"{t}: stateful with bulk differs"
    assert len(tables["fast-on"]["predictions"]) > 500


def test_incremental_chunks_equal_fresh_and_batch(
    tmp_path: Path, spark: object, story: dict[str, list[tuple[int, int, str]]]
) -> None:
    inc = ("--set", "replay.late_tolerance_ms=0", "--set", "replay.bucket_ms=30000")
    # the same logs landed in three chunks, one scheduled run after each
    chunked, logs = tmp_path / "wh-chunked", tmp_path / "logs-chunked"
    bounds = [-1, *quiet_times(story, 3), 2**62]
    for k in range(3):
        for broker, lines in story.items():
            chunk = [line for c, _, line in lines if bounds[k] < c <= bounds[k + 1]]
            write_lines(logs, broker, chunk, append=k > 0)
        _cli("ingest", "--input", str(logs), "--warehouse", str(chunked))
        _cli("replay", "--incremental", "--warehouse", str(chunked), *inc)
    assert _summary(chunked)["replay"]["late_rows"] == 0
    # one fresh-checkpoint run over everything
    fresh, all_logs = tmp_path / "wh-fresh", logs  # after the third chunk the files are complete
    _cli("ingest", "--input", str(all_logs), "--warehouse", str(fresh))
    _cli("replay", "--incremental", "--warehouse", str(fresh), *inc)
    a, b = _tables(chunked), _tables(fresh)
    for t in OUTPUTS:
        assert a[t] == b[t], f"{t}: three scheduled runs differ from one fresh run"
    # the batch replay (fast path) of the same logs: same predictions and transitions, and the same closed
    # rebalances/sessions; batch adds the rows still open at the end of the log
    batch = tmp_path / "wh-batch"
    _cli("ingest", "--input", str(all_logs), "--warehouse", str(batch))
    _cli("replay", "--warehouse", str(batch), "--path", "fast")
    c = _tables(batch)
    assert c["predictions"] == a["predictions"] and c["transitions"] == a["transitions"]
    open_rebalances = [r for r in read_table(batch / "rebalances") if r["outcome"] == "unfinished"]
    assert len(c["rebalances"]) == len(a["rebalances"]) + len(open_rebalances)
    assert set(a["rebalances"]) <= set(c["rebalances"])
    open_sessions = [r for r in read_table(batch / "member_sessions") if r["end_reason"] == "open"]
    assert open_sessions and set(a["member_sessions"]) <= set(c["member_sessions"])
    assert len(c["member_sessions"]) == len(a["member_sessions"]) + len(open_sessions)


def test_stateful_feed_chunking_does_not_change_the_output(
    tmp_path: Path, spark: Any, story: dict[str, list[tuple[int, int, str]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch stateful replay whose groups all fit ``replay.max_rows_per_call`` feeds everything in ONE
    micro-batch; with a group over that bound it goes bucket by bucket: same tables, row for row."""
    from rebalance_replay.jobs import replay as rp
    from rebalance_replay.jobs.config import load_config
    from rebalance_replay.jobs.delta import open_store

    real = rp._replay_stateful_batch

    def over_the_bound(*args: Any, **kwargs: Any) -> Any:  # as if a group had more rows than one call takes
        return real(*args, **{**kwargs, "busiest_group": 10**9})

    logs = _write_all(tmp_path / "logs", story)
    messages: dict[str, list[str]] = {}
    for name in ("whole", "bucketed"):
        wh = tmp_path / f"wh-{name}"
        _cli("ingest", "--input", str(logs), "--warehouse", str(wh))
        config = load_config([], ["replay.bucket_ms=60000"], str(wh))
        store = open_store(spark, str(wh), config.storage.engine)
        if name == "bucketed":
            monkeypatch.setattr(rp, "_replay_stateful_batch", over_the_bound)
        said = messages[name] = []
        res = rp.replay(spark, store, config, path="stateful", log=said.append)
        assert res.counts == {t: len(read_table(wh / t)) for t in OUTPUTS}
        assert res.groups == 2 and res.counts["predictions"] == res.new_rows
    batches = {k: [m for m in v if m.startswith("replay: micro-batch")] for k, v in messages.items()}
    assert batches["whole"] == ["replay: micro-batch 1/1 done"]
    assert len(batches["bucketed"]) >= 3
    whole, bucketed = _tables(tmp_path / "wh-whole"), _tables(tmp_path / "wh-bucketed")
    for t in OUTPUTS:
        assert whole[t] == bucketed[t], f"{t}: one micro-batch and per-bucket micro-batches differ"


def test_stateful_query_takes_one_shuffle_partition_per_local_core(
    tmp_path: Path, spark: Any, story: dict[str, list[tuple[int, int, str]]]
) -> None:
    """On a local master the stateful query's checkpoint gets one partition (state store) per core,
    whatever the session says, and the session's own setting is left as it was."""
    wh = tmp_path / "wh"
    _cli("ingest", "--input", str(_write_all(tmp_path / "logs", story)), "--warehouse", str(wh))
    key = "spark.sql.shuffle.partitions"
    before = spark.conf.get(key)
    spark.conf.set(key, "5")
    try:
        _cli("replay", "--incremental", "--warehouse", str(wh))
        assert spark.conf.get(key) == "5"
    finally:
        spark.conf.set(key, before)
    checkpoint = wh / "_replay" / "incremental" / "checkpoint"
    offsets = json.loads((checkpoint / "offsets" / "0").read_text().splitlines()[1])
    cores = spark.sparkContext.defaultParallelism
    assert offsets["conf"][key] == str(cores)
    assert sorted(p.name for p in (checkpoint / "state" / "0").iterdir() if p.name.isdigit()) == [
        str(i) for i in range(cores)
    ]


def test_rerun_changes_nothing(
    tmp_path: Path, spark: object, story: dict[str, list[tuple[int, int, str]]]
) -> None:
    logs, wh = _write_all(tmp_path / "logs", story), tmp_path / "wh"
    _cli("run", "--input", str(logs), "--warehouse", str(wh))
    first = _summary(wh)
    for key in (
        "lines_read",
        "requests",
        "quarantined",
        "other_api_lines",
        "predictions",
        "matched",
        "agreement",
        "rebalances",
        "findings",
    ):
        assert key in first, key
    assert first["agreement"] == 1.0 and first["rebalances"] == 6
    tables = {t: (read_table(wh / t), _delta_version(wh / t)) for t in ("requests", *OUTPUTS)}
    _cli("run", "--input", str(logs), "--warehouse", str(wh))
    again = _summary(wh)
    for t, (rows, version) in tables.items():
        assert _delta_version(wh / t) == version, f"{t} got a new commit"
        assert canonical(read_table(wh / t)) == canonical(rows)
    for key in ("lines_read", "requests", "predictions", "matched", "agreement", "rebalances"):
        assert again[key] == first[key]


def _delta_version(path: Path) -> int:
    from deltalake import DeltaTable

    return int(DeltaTable(str(path)).version())


def _edit(lines: list[str], needle: str, old: str, new: str) -> list[str]:
    for i, line in enumerate(lines):
        if needle in line:
            lines[i] = line.replace(old, new, 1)
            return lines
    raise AssertionError(f"no line with {needle}")


def test_wrong_observed_response_is_a_mismatch(
    tmp_path: Path, spark: object, story: dict[str, list[tuple[int, int, str]]]
) -> None:
    lines = [line for _, _, line in story["broker-1"]]
    # a heartbeat in the middle of a stable period answered with REBALANCE_IN_PROGRESS: wrong
    idx = next(
        i
        for i, line in enumerate(lines)
        if i > len(lines) // 5 and '"HEARTBEAT"' in line and '"errorCode":0}' in line
    )
    lines[idx] = lines[idx].replace('"errorCode":0}', '"errorCode":27}', 1)
    logs, wh = tmp_path / "logs", tmp_path / "wh"
    write_lines(logs, "broker-1", lines)
    _cli("ingest", "--input", str(logs), "--warehouse", str(wh))
    _cli("replay", "--warehouse", str(wh))
    _cli("validate", "--warehouse", str(wh))
    bad = sorted(
        (p for p in read_table(wh / "predictions") if p["scored"] and not p["matched"]),
        key=lambda p: p["line_no"],
    )
    # the edited line is the mismatch; track mode believes the broker for that member's next heartbeat,
    # which the broker answers NONE again, and then it is back in step
    assert (
        bad[0]["line_no"],
        bad[0]["mismatch_kinds"],
        bad[0]["observed_error"],
        bad[0]["predicted_error"],
    ) == (idx + 1, ["error"], "REBALANCE_IN_PROGRESS", "NONE")
    assert len(bad) <= 2 and all(p["mismatch_kinds"] == ["error"] for p in bad)
    s = _summary(wh)
    assert s["matched"] == s["scored"] - len(bad) and s["mismatch_kinds"] == {"error": len(bad)}


def test_deleted_line_is_absorbed_by_track_mode(
    tmp_path: Path, spark: object, story: dict[str, list[tuple[int, int, str]]]
) -> None:
    lines = [line for _, _, line in story["broker-1"]]
    # lose the JoinGroup of the member that joins at +60 s (its MEMBER_ID_REQUIRED round trip survives)
    idx = next(
        i
        for i, line in enumerate(lines)
        if '"JOIN_GROUP"' in line and "consumer-shop-orders-4" in line and '"errorCode":0' in line
    )
    del lines[idx]
    results = {}
    for mode in ("track", "predict"):
        logs, wh = tmp_path / f"logs-{mode}", tmp_path / f"wh-{mode}"
        write_lines(logs, "broker-1", lines)
        _cli("ingest", "--input", str(logs), "--warehouse", str(wh))
        _cli("replay", "--warehouse", str(wh), "--set", f"replay.mode={mode}")
        preds = read_table(wh / "predictions")
        results[mode] = sum(1 for p in preds if p["scored"] and not p["matched"])
    # track mode reconciles with the broker and recovers within a few requests; the pure model cascades
    assert results["track"] <= 10, results
    assert results["predict"] > results["track"], results


def test_kip848_groups_are_reported_not_replayed(
    tmp_path: Path, spark: object, story: dict[str, list[tuple[int, int, str]]]
) -> None:
    from simulator.log_render import complete_record, render_line

    cgh = complete_record(
        {
            "api_name": "CONSUMER_GROUP_HEARTBEAT",
            "api_version": 0,
            "completion_ms": T0 + 5 * S,
            "total_time_ms": 1.2,
            "group_id": "new-protocol",
            "member_id": "",
            "member_epoch": 0,
            "rebalance_timeout_ms": 300000,
            "error_code": 0,
            "response_member_id": "Aa1Bb2Cc3Dd4Ee5Ff6Gg7H",
            "response_member_epoch": 1,
        },
        kafka_version="3.7",
    )
    # written where the broker writes it: among the lines completed at about its time (a broker writes
    # its request log in completion order; a line 165 s behind the file's clock is a stepped clock, which
    # ingest quarantines: tests/unit/test_clock_steps.py)
    at = bisect.bisect_right([done for done, _, _ in story["broker-1"]], cgh["completion_ms"])
    lines = [line for _, _, line in story["broker-1"]]
    lines.insert(at, render_line(cgh, kafka_version="3.7", tz=UTC))
    logs, wh = tmp_path / "logs", tmp_path / "wh"
    write_lines(logs, "broker-1", lines)
    _cli("ingest", "--input", str(logs), "--warehouse", str(wh))
    _cli("replay", "--warehouse", str(wh))
    assert _summary(wh)["replay"]["kip848_groups"] == ["new-protocol"]
    assert not [p for p in read_table(wh / "predictions") if p["group_id"] == "new-protocol"]


def test_time_window_forensics(
    tmp_path: Path, spark: object, story: dict[str, list[tuple[int, int, str]]]
) -> None:
    logs, wh = _write_all(tmp_path / "logs", story), tmp_path / "wh"
    _cli("ingest", "--input", str(logs), "--warehouse", str(wh))
    start, end = T0 + 80 * S, T0 + 140 * S
    _cli("replay", "--warehouse", str(wh), "--from", "2024-06-03T12:01:20Z", "--to", str(end))
    # a forensics run: its own folder, the scheduled tables are not written (issue 12)
    run = wh / "forensics" / forensics_name((start, end), ())
    assert not (wh / "predictions").exists()
    predictions = read_table(run / "predictions")
    assert predictions and all(start <= p["arrival_ms"] < end for p in predictions)
    # the window opens on live groups: the model warms up from what it sees, then scores; the heartbeat
    # that reveals the expiry of a ledger member never seen joining (session timeout unknown) is not
    # scored — that member had been silent for longer than the smallest session timeout — so nothing
    # scored disagrees
    warm = [p for p in predictions if not p["scored"] and (p["unscored_reason"] or "").startswith("warm-up")]
    scored = [p for p in predictions if p["scored"]]
    bad = [(p["group_id"], p["api"], p["observed_error"]) for p in scored if not p["matched"]]
    assert warm and len(scored) > 100 and bad == []
    assert any(
        p["group_id"] == "ledger" and p["observed_error"] == "REBALANCE_IN_PROGRESS" and not p["scored"]
        for p in warm
    )
    shop = [r for r in read_table(run / "rebalances") if r["group_id"] == "shop-orders"]
    assert [r["trigger"] for r in shop] == ["member_left", "session_expiry"]
    assert main(["replay", "--warehouse", str(wh), "--incremental", "--from", str(start)]) == 2
    assert main(["replay", "--warehouse", str(wh), "--from", "yesterday"]) == 2


def test_more_rebalance_stories(tmp_path: Path, spark: object) -> None:
    """Leader rejoin (metadata change) with a slow member evicted at the rebalance timeout, and a member
    that never sends SyncGroup removed by the pending-sync timeout."""
    slow = dict(session_timeout_ms=30_000, rebalance_timeout_ms=10_000)
    cfg = SimConfig(
        group_id="metrics-rollup",
        topics={"metrics": 6},
        until_ms=T0 + 170 * S,
        broker_id="broker-3",
        broker_host="10.0.0.3",
        consumers=[
            ConsumerSpec("a", T0 + 1 * S, refresh_ms=T0 + 40 * S, **slow),
            ConsumerSpec("b", T0 + 1 * S + 200, slow_rejoin_ms=15_000, close_ms=T0 + 80 * S, **slow),
            ConsumerSpec("c", T0 + 1 * S + 400, hang_sync_after_ms=T0 + 90 * S, **slow),
            ConsumerSpec("d", T0 + 100 * S, **slow),
        ],
    )
    logs, wh = _write_all(tmp_path / "logs", render_group_lines([cfg])), tmp_path / "wh"
    _cli("ingest", "--input", str(logs), "--warehouse", str(wh))
    _cli("replay", "--warehouse", str(wh))
    rebalances = sorted(read_table(wh / "rebalances"), key=lambda r: r["rebalance_seq"])
    story = [(r["trigger"], [m.split("-")[3] for m in r["evicted"]]) for r in rebalances]
    # member ids are consumer-metrics-rollup-<n>-<uuid>: n = 1 (a), 2 (b), 3 (c), 4 (d)
    assert story == [
        ("group_created", []),
        ("leader_rejoin", ["2"]),  # b did not rejoin within the 10 s rebalance timeout
        ("new_member", []),  # b again, with a new member id
        ("member_left", []),
        ("new_member", []),  # d
        ("pending_sync_expiry", ["3"]),  # c got its JoinGroup answer and never sent SyncGroup
    ]
    assert rebalances[1]["trigger_client_reason"] == "cached metadata has changed"
    assert rebalances[1]["join_phase_ms"] == 10_000
    scored = [p for p in read_table(wh / "predictions") if p["scored"]]
    assert scored and all(p["matched"] for p in scored)
