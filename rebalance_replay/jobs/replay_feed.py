"""The stateful path's feed: the rows to replay as parquet files, one per arrival-time bucket (oldest
first, consumed one bucket per micro-batch), or all of them in one micro-batch when every group fits one
call; then a file of ticks (groups to call again without new rows)."""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from rebalance_replay.jobs.replay_wire import _WIRE_SCHEMA, pack
from rebalance_replay.transforms.kafka_protocol import STATE_CHANGING_APIS, ApiKey
from rebalance_replay.transforms.replay import REPLAY_COLUMNS

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession


def _classic_rows(df: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    keep = [int(a) for a in STATE_CHANGING_APIS] + [int(ApiKey.CONSUMER_GROUP_HEARTBEAT)]
    return df.filter(F.col("group_id").isNotNull() & F.col("api_key").isin(keep)).select(*REPLAY_COLUMNS)


def bucket_ms_for(bucket_ms: int, busiest: int, max_rows_per_call: int) -> int:
    """The bucket size for a run: ``bucket_ms`` halved until the busiest group's busiest bucket (``busiest``
    rows at ``bucket_ms``) fits ``max_rows_per_call`` (assuming a steady rate), never under one second."""
    while busiest > max_rows_per_call and bucket_ms > 1000:
        bucket_ms = max(1000, bucket_ms // 2)
        busiest = (busiest + 1) // 2
    return bucket_ms


def _bounded_bucket_ms(
    rows: DataFrame, bucket_ms: int, max_rows_per_call: int, rows_bound: int | None = None
) -> int:
    """Shrink the bucket so one stateful call (one group, one bucket) holds at most ``max_rows_per_call``
    rows: a 1,000-member group over a day is replayed in small time slices, never in one frame.
    ``rows_bound``: an upper bound, known to the caller, on any group's rows (no job when it fits)."""
    from pyspark.sql import functions as F

    if rows_bound is not None and rows_bound <= max_rows_per_call:
        return bucket_ms

    busiest = (
        rows.groupBy("group_id", F.floor(F.col("arrival_ms") / F.lit(bucket_ms)).alias("b"))
        .count()
        .agg(F.max("count"))
        .collect()[0][0]
    )
    return bucket_ms_for(bucket_ms, int(busiest or 0), max_rows_per_call)


def _write_feed(
    spark: SparkSession,
    rows: DataFrame,
    ticks: list[tuple[str, bool]],
    feed_dir: Path,
    run_id: int,
    horizon_ms: int,
    bucket_ms: int,
    max_rows_per_call: int,
    rows_bound: int | None = None,
) -> int:
    """Write the run's feed: one parquet file per arrival bucket (mtime ascending), then a file of ticks.
    Returns the number of files written. ``rows_bound``: see :func:`_bounded_bucket_ms`."""
    from pyspark.sql import functions as F

    stage = feed_dir.parent / f"_stage-{uuid.uuid4().hex}"
    bucket_ms = _bounded_bucket_ms(rows, bucket_ms, max_rows_per_call, rows_bound)
    bucket = F.floor(F.col("arrival_ms") / F.lit(bucket_ms)).cast("long")
    end = F.least((bucket + 1) * F.lit(bucket_ms), F.lit(horizon_ms))
    shaped = pack(rows.withColumn("bucket_end_ms", end).withColumn("final", F.lit(False))).withColumn(
        "_bucket", bucket
    )
    shaped.repartition("_bucket").write.partitionBy("_bucket").parquet(str(stage))
    feed_dir.mkdir(parents=True, exist_ok=True)
    base_mtime = 1_000_000_000 + run_id * 100_000  # consumed oldest first: runs, then buckets, in order
    written = 0
    try:
        buckets = sorted((int(p.name.split("=", 1)[1]), p) for p in stage.glob("_bucket=*"))
        for i, (b, folder) in enumerate(buckets):
            for j, f in enumerate(sorted(folder.glob("*.parquet"))):
                target = feed_dir / f"run{run_id:06d}-b{b:012d}-{j:03d}.parquet"
                shutil.move(str(f), target)
                os.utime(target, (base_mtime + i, base_mtime + i))
                written += 1
        if ticks:
            import pyarrow.parquet as pq

            tick_rows = [{"group_id": g, "bucket_end_ms": horizon_ms, "final": final} for g, final in ticks]
            target = feed_dir / f"run{run_id:06d}-ticks.parquet"
            pq.write_table(pa.Table.from_pylist(tick_rows, schema=_WIRE_SCHEMA), target)
            os.utime(target, (base_mtime + 99_999, base_mtime + 99_999))
            written += 1
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return written


def _write_whole_feed(rows: DataFrame, feed_dir: Path, horizon_ms: int) -> int:
    """A batch replay's feed when every group's rows fit one stateful call: all rows, each group's
    final call (replay to the horizon, then close), in one micro-batch. Returns the number of files."""
    from pyspark.sql import functions as F

    feed = rows.withColumn("bucket_end_ms", F.lit(horizon_ms).cast("long")).withColumn("final", F.lit(True))
    pack(feed).write.parquet(str(feed_dir))
    return len(list(feed_dir.glob("*.parquet")))
