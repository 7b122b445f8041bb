"""Bulk validation of routine traffic (rebalance_replay.transforms.bulk) changes no output row.

Every group of the bundled sample, of the incident corpus and of random simulator traces (coarse broker
clocks, shuffled ties, every scenario the fidelity corpus has) is replayed twice by the pure replayer: rows
fed one by one as dicts (the full per-request path) and rows fed as Arrow columns with bulk validation on.
All four output tables must be identical, row for row and column for column, and so must the model's and
the tracker's saved state after every call — in one call per group and in many (the stateful path's
arrival buckets, rows landing late).

Self-consistency: both paths and the traces' "observed" answers come from the product's own model, so
these tests prove the bulk path equivalent to the per-request one, not either of them right about Kafka
(``tests/differential``, ``tests/realkafka`` test that).
"""

from __future__ import annotations

import gzip
import itertools
import random
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from rebalance_replay.transforms import bulk
from rebalance_replay.transforms.coordinator.config import CoordinatorConfig
from rebalance_replay.transforms.kafka_protocol import STATE_CHANGING_APIS, ApiKey
from rebalance_replay.transforms.replay import (
    OUTPUT_KINDS,
    REPLAY_SCHEMA,
    GroupReplayer,
    ReplayOutput,
    ReplaySettings,
)
from simulator.fidelity import coordinator_for, parse_rows, render_coarse, scenario_configs

ROOT = Path(__file__).resolve().parents[2]
Row = dict[str, Any]


def _log_files(folder: Path) -> dict[str, list[str]]:
    files: dict[str, list[str]] = {}
    for broker_dir in sorted(p for p in folder.iterdir() if p.is_dir()):
        lines: list[str] = []
        for f in sorted(broker_dir.iterdir(), reverse=True):  # rotated (older) files first
            opener: Any = gzip.open if f.suffix == ".gz" else open
            with opener(f, "rt", encoding="utf-8") as fh:
                lines.extend(fh.read().splitlines())
        files[broker_dir.name] = lines
    return files


@cache
def _corpus(name: str) -> list[Row]:
    return parse_rows(_log_files(ROOT / "samples" / name))


def _by_group(rows: Iterable[Row]) -> dict[str, list[Row]]:
    groups: dict[str, list[Row]] = {}
    for r in rows:
        if r.get("group_id"):
            groups.setdefault(str(r["group_id"]), []).append(r)
    return groups


def _key(row: Mapping[str, Any]) -> str:
    return repr(sorted(row.items()))


def _tables(outs: Sequence[ReplayOutput]) -> dict[str, list[str]]:
    tables: dict[str, list[str]] = {k: [] for k in OUTPUT_KINDS}
    for out in outs:
        for kind in OUTPUT_KINDS:
            rows = out.all_predictions() if kind == "predictions" else out.rows[kind]
            tables[kind].extend(_key(r) for r in rows)
    return {k: sorted(v) for k, v in tables.items()}


def _horizons(rows: Sequence[Row], calls: int, rnd: random.Random) -> list[int]:
    end = max(int(r["completion_ms"]) for r in rows) + 1
    start = min(int(r["arrival_ms"]) for r in rows)
    cuts = sorted(rnd.randrange(start, end) for _ in range(calls - 1))
    return [*cuts, end]


def replay_both(group_id: str, rows: Sequence[Row], settings: ReplaySettings, horizons: Sequence[int]) -> int:
    """Replay ``rows`` both ways, one call per horizon (rows are fed as they land: those arriving before
    the call's horizon, a few of them late); assert equal outputs and state. Returns how many requests
    the bulk path validated in bulk."""
    full, columnar = GroupReplayer(group_id, settings), GroupReplayer(group_id, settings)
    full_outs: list[ReplayOutput] = []
    bulk_outs: list[ReplayOutput] = []
    ordered = sorted(rows, key=lambda r: int(r["arrival_ms"]))
    fed = 0
    for h in horizons:
        landed = []
        while fed < len(ordered) and int(ordered[fed]["arrival_ms"]) < h:
            landed.append(ordered[fed])
            fed += 1
        full.feed(landed)
        if landed:
            columnar.feed_table(pa.Table.from_pylist(landed, schema=REPLAY_SCHEMA))
        full_outs.append(full.process(h))
        bulk_outs.append(columnar.process(h))
        assert columnar.model.to_bytes() == full.model.to_bytes()
        assert columnar.tracker.to_bytes() == full.tracker.to_bytes()
        assert columnar.replayed == full.replayed
        assert columnar.last_answer == full.last_answer
        assert columnar.has_pending_work == full.has_pending_work
        # the state a stateful call saves resumes the same way
        columnar = GroupReplayer.from_bytes(columnar.to_bytes(), settings)
    full_outs.append(full.finish())
    bulk_outs.append(columnar.finish())
    assert _tables(bulk_outs) == _tables(full_outs)
    return sum(t.num_rows for o in bulk_outs for t in o.prediction_tables)


def _settings(coordinator: CoordinatorConfig | None = None) -> ReplaySettings:
    return ReplaySettings(coordinator=coordinator or CoordinatorConfig(kafka_version="3.7"))


def _heartbeats(rows: Iterable[Row]) -> int:
    return sum(1 for r in rows if r.get("api_key") == int(ApiKey.HEARTBEAT))


@pytest.mark.parametrize("calls", [1, 7])
def test_sample_logs_identical_and_mostly_bulk(calls: int) -> None:
    rows = _corpus("logs")
    groups = _by_group(rows)
    assert groups
    rnd = random.Random(calls)
    in_bulk = sum(
        replay_both(g, group_rows, _settings(), _horizons(group_rows, calls, rnd))
        for g, group_rows in sorted(groups.items())
    )
    heartbeats = _heartbeats(rows)
    assert heartbeats > 1000
    assert in_bulk >= 0.9 * heartbeats  # the steady sample: ≥ 90% of heartbeats never go one by one


@pytest.mark.parametrize("calls", [1, pytest.param(5, marks=pytest.mark.slow)])
def test_incident_logs_identical(calls: int) -> None:
    groups = _by_group(_corpus("incidents"))
    assert len(groups) >= 5
    rnd = random.Random(100 + calls)
    in_bulk = sum(
        replay_both(g, group_rows, _settings(), _horizons(group_rows, calls, rnd))
        for g, group_rows in sorted(groups.items())
    )
    assert in_bulk > 0


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(
    # the coarser clocks make bigger same-millisecond bursts: the slow tier (1-16 s each on two cores)
    "resolution_ms",
    [1, pytest.param(10, marks=pytest.mark.slow), pytest.param(1000, marks=pytest.mark.slow)],
)
def test_simulator_traces_identical(seed: int, resolution_ms: int) -> None:
    configs = scenario_configs(seed)
    rows = parse_rows(render_coarse(configs, resolution_ms, seed))
    rnd = random.Random(seed * 31 + resolution_ms)
    base = CoordinatorConfig(kafka_version="3.7")
    for cfg in configs:
        group_rows = [r for r in rows if r["group_id"] == cfg.group_id]
        if not group_rows:
            continue
        settings = _settings(coordinator_for(cfg, base))
        replay_both(cfg.group_id, group_rows, settings, _horizons(group_rows, rnd.choice([1, 3, 9]), rnd))


def test_bulk_off_feeds_rows_one_by_one() -> None:
    groups = _by_group(_corpus("logs"))
    g, rows = sorted(groups.items())[0]
    settings = ReplaySettings(coordinator=CoordinatorConfig(kafka_version="3.7"), bulk=False)
    r = GroupReplayer(g, settings)
    r.feed_table(pa.Table.from_pylist(rows, schema=REPLAY_SCHEMA))
    out = r.process(max(int(x["completion_ms"]) for x in rows) + 1)
    replayed = [x for x in rows if x["api_key"] in {int(a) for a in STATE_CHANGING_APIS}]
    assert not out.prediction_tables and len(out.rows["predictions"]) == len(replayed) > 100


def test_runs_are_cut_at_inferred_requests_and_short_runs_dropped() -> None:
    import numpy as np

    mask = np.array([True] * 10 + [False] + [True] * 20)
    assert bulk.runs(mask, (), min_run=8) == [(0, 10), (11, 31)]
    assert bulk.runs(mask, (15,), min_run=8) == [(0, 10), (15, 31)]
    assert bulk.runs(mask, (5, 20), min_run=3) == [(0, 5), (5, 10), (11, 20), (20, 31)]
    assert bulk.runs(np.zeros(4, dtype=bool)) == []


def _stable_group() -> GroupReplayer:
    """A steady group of three replayed up to its first Stable generation, heartbeats still to come."""
    from simulator.clients import steady_group

    rows = parse_rows(render_coarse([steady_group("bulk-g", 3, 2, start_ms=1_700_000_000_000)], 1, 0))
    r = GroupReplayer("bulk-g", _settings())
    r.feed(rows)
    synced = max(int(x["completion_ms"]) for x in rows if x["api_key"] == int(ApiKey.SYNC_GROUP))
    r.process(synced + 1)
    assert r.model.state is not None and r.model.state.value == "Stable"
    return r


def _run(r: GroupReplayer, start: int, gap: int, beats: int, **changes: Any) -> Any:
    from dataclasses import replace

    from rebalance_replay.transforms.coordinator.types import HeartbeatRun, RunMember

    group = r.model.group
    assert group is not None
    members = tuple(
        RunMember(m, start + i, start + i + gap * (beats - 1), len(group.members) * (beats - 1) + i, gap)
        for i, m in enumerate(sorted(group.members))
    )
    run = HeartbeatRun(
        size=len(members) * beats,
        first_ms=start,
        last_ms=max(m.last_ms for m in members),
        last_ref=("f", 10**6),
        last_commit_ms=None,
        generations=(group.generation_id,),
        instances=(),
        members=members,
    )
    return replace(run, **changes)


def test_the_model_takes_a_run_only_when_every_request_would_be_accepted() -> None:
    r = _stable_group()
    group = r.model.group
    assert group is not None
    session = min(m.session_timeout_ms for m in group.members.values())
    from rebalance_replay.transforms.coordinator.types import RunMember

    start = (r.model.now_ms or 0) + 1000
    before = r.model.to_bytes()
    refused = [
        _run(r, start, 3000, 5, generations=(group.generation_id + 1,)),  # another generation
        _run(r, start, 3000, 5, generations=(group.generation_id, None)),
        _run(r, start, session, 2),  # a gap of a whole session timeout: the member expires in between
        _run(r, start, 3000, 5, instances=(("i-0", sorted(group.members)[0]),)),  # not that static member
        _run(r, start, 3000, 1, members=(RunMember("stranger", start, start, 0, 0),), size=1),  # no member
    ]
    for run in refused:
        assert r.model.bulk_heartbeats(run) is None
        assert r.model.to_bytes() == before  # nothing changed
    seq = r.model.book.seq
    assert r.model.bulk_heartbeats(_run(r, start, 3000, 5)) == seq
    assert r.model.book.seq == seq + 15 and r.model.now_ms == start + 2 + 3000 * 4
    # a member silent past its deadline: its session timer fires inside a later run
    late = (r.model.now_ms or 0) + session + 1
    assert r.model.bulk_heartbeats(_run(r, late, 3000, 3)) is None


def test_small_calls_go_one_by_one_with_the_same_output() -> None:
    """``bulk_min_rows``: a call of fewer rows is fed one by one (setting up columns costs more than the
    replay of a quiet group's few dozen requests), a call of that many or more as columns; calls of both
    kinds in one group's life (rows buffered by a small call, then a large one) give the same output and
    state as the per-request path."""
    groups = _by_group(_corpus("logs"))
    g, rows = max(groups.items(), key=lambda kv: len(kv[1]))
    threshold = 200
    ordered = sorted(rows, key=lambda x: int(x["arrival_ms"]))
    # calls of ~50 rows and of ~600 in turn (a horizon is an arrival time: ties keep a call together)
    cuts, at = [], 0
    for size in itertools.cycle((50, 600)):
        at += size
        if at >= len(ordered):
            break
        cuts.append(int(ordered[at]["arrival_ms"]))
    horizons = [*sorted(set(cuts)), max(int(x["completion_ms"]) for x in rows) + 1]
    assert len(horizons) >= 5
    settings = ReplaySettings(coordinator=CoordinatorConfig(kafka_version="3.7"), bulk_min_rows=threshold)
    assert replay_both(g, rows, settings, horizons) > 0

    r = GroupReplayer(g, settings)
    r.feed_table(pa.Table.from_pylist(ordered[: threshold - 1], schema=REPLAY_SCHEMA))
    assert not r.pending and len(r.buffer) > 0  # below the threshold: rows
    r = GroupReplayer(g, settings)
    r.feed_table(pa.Table.from_pylist(ordered[:threshold], schema=REPLAY_SCHEMA))
    assert r.pending and not r.buffer  # at the threshold: columns
