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
