"""Issue 29 part 3, adversarial sizes, the pure side: a group that outgrows ``replay.max_group_members`` is
refused with a one-line reason and its state shrinks to nothing; a group within it is replayed whole; the
model's fork does not walk its timers one object at a time (a member-id-required storm keeps thousands
armed, and the replay forks the model for nearly every request of it).

The logs are ``simulator.adversarial``'s: JSON-era lines a broker writes, parsed as ingest parses them."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from rebalance_replay.transforms.coordinator.config import CoordinatorConfig
from rebalance_replay.transforms.coordinator.timers import SESSION_PRIORITY, TimerQueue
from rebalance_replay.transforms.kafka_protocol import STATE_CHANGING_APIS
from rebalance_replay.transforms.replay import GroupReplayer, ReplaySettings
from simulator.adversarial import KAFKA_VERSION, by_broker, storm
from simulator.fidelity import parse_rows


def _storm_rows(joiners: int) -> list[dict[str, Any]]:
    """The storm group's rows: its three consumers and ``joiners`` member-id-required joiners within 6 s
    (none comes back), as ingest reads them."""
    files = by_broker(storm(joiners, spread_ms=6_000, returning=0))
    return [r for r in parse_rows(files) if r["group_id"] == "storm"]


def _replay(rows: list[dict[str, Any]], limit: int) -> tuple[GroupReplayer, list[dict[str, Any]]]:
    settings = ReplaySettings(
        coordinator=CoordinatorConfig(kafka_version=KAFKA_VERSION), max_group_members=limit
    )
    replayer = GroupReplayer("storm", settings)
    replayer.feed(rows)
    end = max(int(r["completion_ms"]) for r in rows) + 1
    out = replayer.process(end)
    out.extend("predictions", replayer.finish().rows["predictions"])
    return replayer, out.all_predictions()


def _replayable(rows: list[dict[str, Any]]) -> int:
    return sum(1 for r in rows if int(r["api_key"]) in STATE_CHANGING_APIS)


@pytest.fixture(scope="module")
def storm_60() -> list[dict[str, Any]]:
    return _storm_rows(60)


def test_a_group_that_outgrows_max_group_members_is_refused_in_one_line(
    storm_60: list[dict[str, Any]],
) -> None:
    replayer, predictions = _replay(storm_60, limit=50)
    reason = replayer.refused
    assert reason is not None
    assert "\n" not in reason
    assert "more than replay.max_group_members 50" in reason
    assert reason.startswith("51 members at once at 2024-05-01 10:00:")
    assert "(3 joined, 48 given a member id and not back)" in reason
    # replayed up to the request that made it 51, nothing after
    assert 0 < replayer.replayed < _replayable(storm_60)
    assert len(predictions) <= replayer.replayed
    # its state is dropped: a few bytes, no timers, nothing pending; later rows and calls add nothing
    assert not replayer.has_pending_work
    assert len(replayer.to_bytes()) < 2_000
    again = GroupReplayer.from_bytes(replayer.to_bytes(), replayer.settings)
    assert again.refused == reason
    again.feed(storm_60)
    out = again.process(max(int(r["completion_ms"]) for r in storm_60) + 60_000)
    assert out.count() == 0 and again.finish().count() == 0


def test_a_group_within_max_group_members_is_replayed_whole(storm_60: list[dict[str, Any]]) -> None:
    for limit in (63, 0):  # 3 members and 60 joiners at most at once; 0: no limit
        replayer, predictions = _replay(storm_60, limit=limit)
        assert replayer.refused is None
        assert replayer.replayed == _replayable(storm_60)
        assert len(predictions) == replayer.replayed
        assert all(p["matched"] for p in predictions if p["scored"])


def test_a_copy_of_the_timers_is_independent_and_made_without_walking_them() -> None:
    timers = TimerQueue()
    for i in range(2_000):
        timers.arm(f"heartbeat-g-m{i}", 45_000 + i, SESSION_PRIORITY, "heartbeat", ("g", f"m{i}"))
    memo: dict[int, object] = {}
    twin = copy.deepcopy(timers, memo)
    assert len(memo) <= 2  # the queue (and deepcopy's keep-alive list): not ~3 objects a timer
    assert [(t.key, t.deadline, t.order) for t in twin.timers()] == [
        (t.key, t.deadline, t.order) for t in timers.timers()
    ]
    # re-arming, postponing and firing the copy leaves the original as it was
    twin.postpone("heartbeat-g-m0", 90_000, SESSION_PRIORITY)
    twin.arm("heartbeat-g-m1", 1_000, SESSION_PRIORITY, "heartbeat", ("g", "m1"))
    fired = twin.pop_due(50_000, inclusive=True)
    assert fired is not None and fired.key == "heartbeat-g-m1"
    assert timers.get("heartbeat-g-m0").deadline == 45_000  # type: ignore[union-attr]
    assert timers.pop_due(45_000, inclusive=True).key == "heartbeat-g-m0"  # type: ignore[union-attr]
    assert len(timers) == 1_999 and len(twin) == 1_999


@pytest.mark.parametrize(
    ("client_id", "instance_id"),
    [("consumer-storm-7", None), ("a.b*c+(d)", None), ("line\nbreak", None), (None, "pod-0"), (None, None)],
)
def test_the_generated_member_id_format_is_checked_as_the_pattern_says(
    client_id: str | None, instance_id: str | None
) -> None:
    """has_generated_format (no pattern compiled per client id) answers as generated_member_id_pattern."""
    from rebalance_replay.transforms.coordinator.types import GroupRequest
    from rebalance_replay.transforms.kafka_protocol import ApiKey
    from rebalance_replay.transforms.validation import generated_member_id_pattern, has_generated_format

    req = GroupRequest(
        api=ApiKey.JOIN_GROUP,
        api_version=9,
        group_id="g",
        arrival_ms=0,
        client_id=client_id,
        group_instance_id=instance_id,
    )
    uuid = "9c68408f-4b4f-55f2-bb2c-9940504b49a9"
    prefixes = ["consumer-storm-7", "a.b*c+(d)", "line\nbreak", "pod-0", "", "other", "consumer-storm-77"]
    candidates = [f"{p}-{u}" for p in prefixes for u in (uuid, uuid.upper(), uuid[:-1], uuid + "0", "x")]
    candidates += [uuid, f"-{uuid}", f"consumer-storm-7{uuid}"]
    pattern = generated_member_id_pattern(req)
    for member_id in candidates:
        assert has_generated_format(req, member_id) == (pattern.fullmatch(member_id) is not None), member_id


def test_side_rows_of_thousands_of_small_groups_are_kept_compact(tmp_path: Path) -> None:
    """A fast-path task (or a stateful micro-batch's side files, read back on the driver) holds the side
    rows of every group it replayed: 20,000 one-member groups in an hour grew a Python worker past 2 GB
    while they were kept one small union-schema table a group. Kept compacted, they take about what their
    rows take."""
    import pyarrow as pa

    from rebalance_replay.jobs.replay_wire import _read_side, _write_side, side_table, split_output
    from rebalance_replay.transforms.replay import ReplayOutput

    settings = ReplaySettings(coordinator=CoordinatorConfig(kafka_version=KAFKA_VERSION))
    for i in range(600):  # a status row each, as a group whose call emitted no small-table rows
        _, rest = split_output(GroupReplayer(f"app-{i:05d}", settings), ReplayOutput())
        _write_side(str(tmp_path), f"call-{i:05d}", [side_table([rest])])
    before = pa.total_allocated_bytes()
    side = _read_side(tmp_path)
    held = pa.total_allocated_bytes() - before
    assert side.num_rows == 600
    assert sorted(side.column("group_id").to_pylist()) == [f"app-{i:05d}" for i in range(600)]
    assert side.column("group_id").num_chunks <= 600 // 256 + 256  # compacted blocks, then the last ones
    assert held < 4 * 1024 * 600, held  # ~2 KB a group (12 KB each, kept as read)


def test_the_terminal_names_at_most_fifty_groups_the_worst_first() -> None:
    """20,000 groups in an hour printed 20,000 'group …' lines; the terminal keeps the 50 with the worst
    finding, then the most rebalancing (in name order), and says where the rest are."""
    from rebalance_replay.jobs.audit import AuditResult

    health = [
        {"group_id": f"app-{i:05d}", "rebalances": 1, "rebalancing_s": float(i), "top_findings": []}
        for i in range(20_000)
    ]
    health[7]["top_findings"] = ["R02 session-timeout-eviction (critical)"]
    result = AuditResult(
        groups=20_000, evaluated_groups=20_000, up_to_date=False, findings=[], unsupported={}, rules=["R02"]
    )
    result.health = health
    lines = result.format_text().splitlines()
    named = [ln.split(":")[0].removeprefix("  group ") for ln in lines if ln.startswith("  group ")]
    assert named == ["app-00007", *(f"app-{i:05d}" for i in range(19_951, 20_000))]
    assert "  … 19950 more groups (summary.json audit.health; the report)" in lines
    assert len(lines) < 60
    assert len(result.as_summary()["audit"]["health"]) == 20_000


def test_the_overview_of_twenty_thousand_groups_shows_the_worst_and_stays_small() -> None:
    """20,000 groups made an 18 MB overview with a 20,000-row timeline; with report.overview_max_groups the
    timeline and the tables show the groups that rebalanced longest (and the worst findings) and say so."""
    from rebalance_replay.transforms.report.html import overview_html
    from rebalance_replay.transforms.report.model import build_overview

    t0 = 1_714_557_600_000
    groups, timeline = [], []
    for i in range(20_000):
        g, start = f"app-{i:05d}", t0 + 180 * i
        groups.append(
            {
                "group_id": g,
                "page": f"group-{g}.html",
                "rebalances": 1,
                "rebalance_ms": 3_000 + i,
                "members": 2,
                "findings": 0,
                "worst_severity": "warning" if i == 5 else None,
                "start_ms": start,
                "end_ms": start + 40_000,
            }
        )
        timeline.append(
            {
                "group_id": g,
                "page": f"group-{g}.html",
                "rebalances": [
                    {"seq": 1, "start_ms": start, "end_ms": start + 3_000, "trigger": "x", "generation_to": 1}
                ],
                "findings": [],
            }
        )
    ov = build_overview(
        {}, groups, [], agreement=[], data_docs=None, title="t", timeline=timeline, max_groups=500
    )
    assert (ov.groups_total, ov.groups_shown) == (20_000, 500)
    assert [g["group_id"] for g in ov.by_rebalancing] == [f"app-{i:05d}" for i in range(19_999, 19_499, -1)]
    assert ov.by_severity[0]["group_id"] == "app-00005" and len(ov.by_severity) == 500
    assert {t["group_id"] for t in ov.timeline} == {g["group_id"] for g in ov.by_rebalancing}
    html = overview_html(ov)
    assert len(html) < 1_000_000
    assert (
        "20000 groups: the timeline and the tables below show the 500 with the most time rebalancing" in html
    )
    every = build_overview({}, groups[:3], [], agreement=[], data_docs=None, title="t", timeline=timeline[:3])
    assert (every.groups_total, every.groups_shown, len(every.timeline)) == (3, 3, 3)
    assert "the timeline and the tables below show" not in overview_html(every)


def test_side_rows_kept_as_rows_are_the_calls_own_tables() -> None:
    """A fast-path task keeps each call's side rows (the small tables' rows, the status row) as rows and
    makes them columns once every ``SideRows.EVERY`` calls: the same rows, column for column, as each
    call's own union-schema table (what a stateful call writes)."""
    import pyarrow as pa

    from rebalance_replay.jobs.replay_wire import SideRows, side_table, split_output
    from simulator.adversarial import many_groups

    settings = ReplaySettings(coordinator=CoordinatorConfig(kafka_version=KAFKA_VERSION))
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in parse_rows(by_broker(many_groups(SideRows.EVERY + 7))):  # one compaction and a remainder
        groups.setdefault(str(r["group_id"]), []).append(r)
    kept, own = SideRows(), []
    for group_id, rows in sorted(groups.items()):
        replayer = GroupReplayer(group_id, settings)
        replayer.feed(rows)
        out = replayer.process(max(int(r["completion_ms"]) for r in rows) + 1)
        fin = replayer.finish()
        for kind in ("transitions", "rebalances", "member_sessions"):
            out.extend(kind, fin.rows[kind])
        _, rest = split_output(replayer, out)
        kept.add_batch(rest)
        own.append(side_table([rest]))
    together = pa.concat_tables(kept.tables())
    assert len(kept.tables()) == 2

    def canon(t: pa.Table) -> list[str]:
        return sorted(repr(sorted(r.items())) for r in t.to_pylist())

    expected = pa.concat_tables(own)
    assert together.schema == expected.schema
    assert canon(together) == canon(expected)
    kinds = set(expected.column("kind").to_pylist())
    assert {"status", "transitions", "rebalances", "member_sessions"} <= kinds, kinds
    status = [r for r in together.to_pylist() if r["kind"] == "status"]
    assert sorted(r["group_id"] for r in status) == sorted(groups)
