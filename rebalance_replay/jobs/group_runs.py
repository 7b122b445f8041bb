"""Per-group work without per-group overhead: a frame hash-partitioned by ``group_id`` and sorted by it
within each partition, handed to ``mapInArrow``; the function cuts each batch at the key boundaries
(:func:`key_runs`). Spark's grouped operators (``applyInArrow``) pay an Arrow stream and a Python call
per group, which is most of the cost when a cluster's thousands of quiet groups have a few dozen rows
each (benchmarks/README.md, issue 30 part 4)."""

from __future__ import annotations

import contextlib
import gc
import itertools
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame


def grouped_partitions(df: DataFrame, *order: str) -> DataFrame:
    """``df`` in twice the default parallelism of partitions by ``group_id``, each sorted by ``group_id``
    then ``order``: a group's rows are consecutive in one task."""
    n = max(1, df.sparkSession.sparkContext.defaultParallelism * 2)
    return df.repartition(n, "group_id").sortWithinPartitions("group_id", *order)


def key_runs(keys: pa.Array | pa.ChunkedArray) -> Iterator[tuple[Any, int, int]]:
    """(key, start, end) of each run of equal consecutive ``keys`` (a batch of a sorted partition has one
    run a key; the next batch may continue the last run)."""
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    if not len(keys):
        return
    codes = np.asarray(pc.dictionary_encode(keys).indices.to_numpy(zero_copy_only=False))
    cuts = [0, *(np.flatnonzero(np.diff(codes)) + 1).tolist(), len(keys)]
    for a, b in itertools.pairwise(cuts):
        yield keys[a].as_py(), a, b


#: allocations between two collections of the youngest generation in :func:`fewer_collections`
#: (CPython's default: 700)
YOUNG_THRESHOLD = 50_000


@contextlib.contextmanager
def fewer_collections(young: int = YOUNG_THRESHOLD) -> Iterator[None]:
    """Python's cyclic garbage collector run less often for a task that makes millions of short-lived
    objects (the replay: a few hundred a request, most freed at once by reference counting): by default it
    collects the youngest generation every 700 allocations, so every few requests, walking each young
    object still alive. Collected every ``young`` allocations (the older generations every 20 and 100 of
    those), a fast-path task of 1,000 quiet groups took ~20% less time (benchmarks/bench_fast_task.py);
    cycles are still freed, later. The process's thresholds are put back at the end. (Unlike
    :func:`collector_paused`, for work whose garbage does not all live on.)"""
    before = gc.get_threshold()
    gc.set_threshold(young, 20, 100)
    try:
        yield
    finally:
        gc.set_threshold(*before)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for a block that makes many small objects that all live on
    (a batch of a group's rows as Python objects): it would walk them again and again as they pile up —
    a third of the audit's time on a group of 1.4 million requests. On again at the end (as it was)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
