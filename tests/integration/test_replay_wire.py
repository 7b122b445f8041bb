"""The replay feed as it crosses to the Python workers: the nested columns only JoinGroup, SyncGroup and
LeaveGroup rows fill are packed into one JSON string in the JVM (``jobs.replay_wire.pack``) and unpacked in
the worker (``unpack``) — the unpacked table must be the feed, value for value (binary metadata and
assignments included)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from rebalance_replay.jobs.delta import open_store
from rebalance_replay.jobs.replay_feed import _classic_rows
from rebalance_replay.jobs.replay_wire import FEED, PACKED, PACKED_COLUMNS, WIRE, pack, unpack
from rebalance_replay.schemas import REQUESTS
from tests.helpers import sample_warehouse

pytestmark = pytest.mark.spark


def test_pack_then_unpack_gives_back_the_feed(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql import functions as F

    wh = sample_warehouse(tmp_path / "wh")
    store = open_store(spark, str(wh), "auto")
    feed = (
        _classic_rows(store.read(REQUESTS))
        .withColumn("bucket_end_ms", F.lit(5).cast("long"))
        .withColumn("final", F.lit(True))
        .orderBy("source_file", "line_no")
    )
    original = feed.select(*FEED.column_names).toArrow()
    wire = pack(feed).toArrow()
    assert wire.column_names == list(WIRE.column_names)
    restored = unpack(wire)
    assert restored.schema == FEED.arrow_schema()
    for name in PACKED_COLUMNS:  # not vacuous: the sample fills every packed column somewhere
        assert original.column(name).null_count < original.num_rows, name
    assert wire.column(PACKED).null_count > original.num_rows // 2  # routine rows carry none
    expected = original.cast(FEED.arrow_schema())
    for name in FEED.column_names:
        assert restored.column(name).to_pylist() == expected.column(name).to_pylist(), name
    assert pa.Table.equals(restored, expected)
