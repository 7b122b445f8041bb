"""The fast path's task function (``jobs.replay_fast.fast_function``) without Spark: however the sorted
feed is cut into batches, and whichever way a group's rows reach its replayer (as rows for a small call, as
columns for a large one), its output is each group's replay on its own — the output of
``GroupReplayer`` fed the group's rows and a final tick (what a stateful call does)."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from rebalance_replay.jobs import replay_fast
from rebalance_replay.jobs.replay_wire import FEED, _step, split_output
from rebalance_replay.transforms.coordinator.config import CoordinatorConfig
from rebalance_replay.transforms.ordering import SORT_COLUMNS
from rebalance_replay.transforms.replay import GroupReplayer, ReplaySettings
from simulator.adversarial import by_broker, many_groups
from simulator.fidelity import parse_rows

SCHEMA = FEED.arrow_schema()


@pytest.fixture(scope="module")
def feed() -> pa.Table:
    """Thirty small groups (and two made large: their rows repeated with later times are not needed —
    the size decides the path, ``bulk_min_rows``), sorted as the job sorts them."""
    rows = [
        r
        for r in parse_rows(by_broker(many_groups(30)))
        if r.get("group_id") and r.get("api_key") is not None
    ]
    horizon = 1 + max(int(r["completion_ms"]) for r in rows if r.get("completion_ms") is not None)
    table = pa.Table.from_pylist(
        [{**{f.name: r.get(f.name) for f in SCHEMA}, "bucket_end_ms": horizon, "final": True} for r in rows],
        schema=SCHEMA,
    )
    order = pc.sort_indices(table, [("group_id", "ascending"), *((c, "ascending") for c in SORT_COLUMNS)])
    return table.take(order).combine_chunks()


def _settings(bulk_min_rows: int) -> ReplaySettings:
    return ReplaySettings(CoordinatorConfig(), broker_lag_ms=200, line_lag_ms=5, bulk_min_rows=bulk_min_rows)


def _run(
    feed: pa.Table, batch_rows: int, bulk_min_rows: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The task's predictions (in the order it yields them) and its side rows (status rows' group order)."""
    monkeypatch.setattr(replay_fast, "unpack", lambda table: table)  # the feed is not packed here
    side = tmp_path / f"side-{batch_rows}-{bulk_min_rows}"
    side.mkdir()
    fn = replay_fast.fast_function(_settings(bulk_min_rows), str(side))
    thresholds = gc.get_threshold()
    out = list(fn(iter(feed.to_batches(max_chunksize=batch_rows))))
    assert gc.get_threshold() == thresholds  # the task paced the collector only while it ran
    predictions = pa.Table.from_batches(out).to_pylist() if out else []
    (part,) = side.glob("*.parquet")
    return predictions, pq.read_table(part).to_pylist()


def _each_group_alone(
    feed: pa.Table, bulk_min_rows: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    predictions: list[dict[str, Any]] = []
    side: list[dict[str, Any]] = []
    for group_id in sorted(set(feed.column("group_id").to_pylist())):
        rows = feed.filter(pc.equal(feed.column("group_id"), group_id))
        replayer = GroupReplayer(group_id, _settings(bulk_min_rows))
        got, rest = split_output(replayer, _step(replayer, rows))
        predictions += got.to_pylist()
        side += [r for kind in rest.values() for r in kind]
    return predictions, side


def _canon(rows: list[dict[str, Any]]) -> list[str]:
    return sorted(repr(sorted((k, v) for k, v in r.items() if v is not None)) for r in rows)


@pytest.mark.parametrize("bulk_min_rows", [0, 128, 10**9])
def test_the_task_gives_each_groups_own_replay_however_its_feed_is_cut(
    feed: pa.Table, bulk_min_rows: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Batches of 7 rows (a group across several batches), 100, and all at once; groups as rows (a
    threshold above every group), as columns (0), and as the default threshold decides."""
    alone, alone_side = _each_group_alone(feed, bulk_min_rows)
    assert len(alone) > 500
    for batch_rows in (7, 100, 100_000):
        predictions, side = _run(feed, batch_rows, bulk_min_rows, tmp_path, monkeypatch)
        assert predictions == alone  # the same rows, in the same order, whatever the batches
        status = [r for r in side if r["kind"] == "status"]
        assert [r["group_id"] for r in status] == sorted(set(feed.column("group_id").to_pylist()))
        assert sum(r["predicted"] for r in status) == len(predictions)
        others = [{k: v for k, v in r.items() if k != "kind"} for r in side if r["kind"] != "status"]
        expected = [r for r in alone_side if "pending" not in r]
        assert _canon(others) == _canon(expected)
