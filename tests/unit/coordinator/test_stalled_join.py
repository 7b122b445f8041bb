"""A join phase that completes again and again with no member rejoining (Kafka: "could not complete
rebalance because no members rejoined", re-armed every rebalance timeout) across a clock that jumps by
decades — a broker clock set back to the epoch, or a fuzzed line at 2099 — replays in bounded work: after
``STALLED_JOIN_REPEATS`` such expirations in a row the rest up to the next other timer are skipped, and
skipping changes nothing but how many of those identical expirations are reported (issue 29: the fuzzed
whole run hung, then crashed its Python worker, in this loop)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from rebalance_replay.transforms.coordinator import engine
from rebalance_replay.transforms.coordinator.config import CoordinatorConfig
from rebalance_replay.transforms.coordinator.types import EventKind, GroupState
from rebalance_replay.transforms.replay import GroupReplayer, ReplaySettings
from simulator.fidelity import parse_rows
from simulator.mutations import base_lines, mutated_lines
from tests.unit.coordinator.scenario import Advance, Case, E, J, L, S, default_config, run_case

pytestmark = pytest.mark.timeout(300)


def _fuzzed_groups() -> dict[str, list[dict[str, Any]]]:
    """The groups of the fuzzed log that stalled (seed 3 of the whole-run fuzz test)."""
    lines = base_lines()
    rows = parse_rows({"broker-1": mutated_lines(lines, 10_000, 3), "broker-2": lines})
    by_group: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if r.get("group_id") in ("fuzz-2.4", "fuzz-3.7"):
            by_group.setdefault(str(r["group_id"]), []).append(r)
    return by_group


def _replay(
    rows: list[dict[str, Any]], group: str, monkeypatch: pytest.MonkeyPatch
) -> tuple[dict[str, list[dict[str, Any]]], list[Any]]:
    """Every output row of the group's replay, by kind, and every event the model emitted."""
    events: list[Any] = []
    drain = engine.CoordinatorEngine.drain

    def recording(self: Any) -> Any:
        predictions, drained = drain(self)
        events.extend(drained)
        return predictions, drained

    monkeypatch.setattr(engine.CoordinatorEngine, "drain", recording)
    replayer = GroupReplayer(group, ReplaySettings(coordinator=CoordinatorConfig(mode="track")))
    replayer.feed(rows)
    end = max(int(r["completion_ms"]) for r in rows) + 1
    out: dict[str, list[dict[str, Any]]] = {}
    for o in (replayer.process(end), replayer.finish()):
        for kind, kind_rows in o.rows.items():
            out.setdefault(kind, []).extend(kind_rows)
    monkeypatch.setattr(engine.CoordinatorEngine, "drain", drain)
    return out, events


def _skips(events: list[Any]) -> list[str]:
    return [str(e.cause) for e in events if "expirations every" in str(getattr(e, "cause", ""))]


@pytest.fixture(scope="module")
def groups() -> dict[str, list[dict[str, Any]]]:
    found = _fuzzed_groups()
    assert sorted(found) == ["fuzz-2.4", "fuzz-3.7"]
    spans = {
        g: max(r["completion_ms"] for r in rows) - min(r["arrival_ms"] for r in rows)
        for g, rows in found.items()
    }
    assert all(span > 50 * 365 * 86_400_000 for span in spans.values()), spans  # decades between lines
    return found


def test_a_stalled_join_phase_across_decades_replays_and_says_what_it_skipped(
    groups: dict[str, list[dict[str, Any]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    for group, rows in groups.items():
        out, events = _replay(rows, group, monkeypatch)
        assert out["predictions"] and out["transitions"], group
        skips = _skips(events)
        assert skips and all("(nothing changes)" in s for s in skips), group


def test_skipping_changes_no_output_row(
    groups: dict[str, list[dict[str, Any]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same replay skipping after 4 or after 32 stalled expirations in a row: every output row equal
    (the expirations are model events, not rows); only the events reporting the skips differ."""
    for group, rows in groups.items():
        late, late_events = _replay(rows, group, monkeypatch)
        monkeypatch.setattr(engine, "STALLED_JOIN_REPEATS", 4)
        early, early_events = _replay(rows, group, monkeypatch)
        monkeypatch.setattr(engine, "STALLED_JOIN_REPEATS", 32)
        assert early == late, group
        assert len(early_events) < len(late_events), group  # more skipped, fewer expirations emitted
        assert len(_skips(early_events)) >= len(_skips(late_events)), group


def test_hour_by_hour_replay_of_the_fuzzed_groups_fits_every_table(
    groups: dict[str, list[dict[str, Any]]],
) -> None:
    """The same groups replayed as the stateful Spark path replays them — one call per hour bucket, the
    replayer's state through bytes between calls — give rows every output table's Arrow schema takes:
    a fuzzed generation of 2147483647 adopted in track mode is followed by Java's wrapped -2147483648
    (``next_generation``), not by an int32 overflow that failed the whole run's Python worker."""
    import pyarrow as pa

    from rebalance_replay.jobs.config import load_config
    from rebalance_replay.jobs.replay import settings_from
    from rebalance_replay.jobs.replay_wire import OUTPUT_TABLES

    config = load_config((), (), "unused-warehouse")
    settings, bucket = settings_from(config), config.replay.bucket_ms
    written = 0
    for group, rows in groups.items():
        by_bucket: dict[int, list[dict[str, Any]]] = {}
        for r in sorted(rows, key=lambda r: r["arrival_ms"]):
            by_bucket.setdefault(r["arrival_ms"] // bucket, []).append(r)
        replayer = GroupReplayer(group, settings)
        for i, b in enumerate(sorted(by_bucket)):
            replayer = GroupReplayer.from_bytes(replayer.to_bytes(), settings)
            replayer.feed(by_bucket[b])
            outs = [replayer.process((b + 1) * bucket)]
            if i == len(by_bucket) - 1:
                outs.append(replayer.finish())
            for out in outs:
                for kind, kind_rows in out.rows.items():
                    pa.Table.from_pylist(kind_rows, schema=OUTPUT_TABLES[kind].arrow_schema())
                    written += len(kind_rows)
    assert written > 1_000


def test_the_skip_stops_before_another_timer_inside_the_stall() -> None:
    """A stall with another timer inside it: the absent static leader's session (§8.2). Kafka fires the
    join phase's timer every rebalance timeout while the leader is a member (§5.4: only absent static
    members left, the timer re-armed at the same generation) and the leader's session expiry ends the
    stall (§5.5: its removal completes the join phase at once, §5.4: no members, so the next generation is
    Empty). The skip may only stand in for expirations before the session expiry, never past it.

    By hand: L joins at 0 (session 100000, rebalance 1000), the initial delay ends the join at 50, its
    SyncGroup at 51 is the last refresh of its session: expiry at 51 + 100000 = 100051. O's JoinGroup at 61
    starts the rebalance (join timer at 61 + 1000), O leaves at 70; the timer then expires at 1061, 2061,
    …, 99061 — 99 times — and at 100051 L is removed and the group is Empty in generation 2."""
    config = default_config(
        kafka_version="3.7",
        group_min_session_timeout_ms=10,
        group_max_session_timeout_ms=600_000,
        group_initial_rebalance_delay_ms=50,
        timer_rule="strict",
    )
    timeouts = {"session": 100_000, "rebalance": 1000, "v": 5}
    steps = [
        J(0, alias="l", instance="L", expect=E(error="NONE", gen=1, completion=50), **timeouts),
        S(51, "l", 1, instance="L", assignments={"l": b""}, expect=E(error="NONE")),
        J(60, alias="o", expect=E(error="MEMBER_ID_REQUIRED"), **timeouts),
        J(61, "o", **timeouts),
        L(70, "o"),
        Advance(10_000_000),
    ]
    result = run_case(Case("stall ended by a session expiry", steps, config=config))
    assert engine.STALLED_JOIN_REPEATS < 99  # so that the stall is skipped in part
    stalled = "could not complete rebalance because no members rejoined"
    fired = [e.time_ms for e in result.events if e.cause and e.cause.endswith(stalled)]
    skips = [e for e in result.events if "expirations every" in str(e.cause)]
    assert fired[:3] == [1061, 2061, 3061] and all(t < 100_051 for t in fired)
    assert skips, "the stall was not skipped"
    skipped = 0
    for e in skips:
        m = re.search(r": (\d+) more expirations every 1000 ms until (\d+) skipped", str(e.cause))
        assert m, e.cause
        n, until = m.groups()
        skipped += int(n)
        assert int(until) < 100_051, e.cause
    assert len(fired) + skipped == 99
    removed = [e for e in result.events if e.kind is EventKind.MEMBER_REMOVED]
    assert [(e.time_ms, e.member_id) for e in removed][-1] == (100_051, result.ids["l"])
    empty = [e for e in result.events if e.kind is EventKind.TRANSITION and e.state is GroupState.EMPTY]
    assert [(e.time_ms, e.generation_id) for e in empty][-1] == (100_051, 2)
