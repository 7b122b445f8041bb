"""Data files a Spark task writes itself: a table's rows as Arrow record batches → snappy parquet files in
hive-style partition folders under a staging folder, for :meth:`DeltaStore.commit_task_files`.

A Python task that already holds its rows as Arrow (the ingest's ``mapInArrow`` parser) writes them here
with Arrow's C++ parquet writer instead of handing them to the JVM, which would convert every row and
write it again with Spark's row-at-a-time parquet writer (measured: two thirds of the ingest's time). The
files are what Spark writes for the table: its columns in order and types, the partition columns in the
folder names only (``log_date=2024-05-01/part-<uuid>.snappy.parquet``), microsecond UTC timestamps,
statistics in the footers; a NOT NULL column holding a null fails the task as Spark's write would.

Each task attempt writes files of its own (uuid names) and reports them; the driver commits only the
files of the attempts Spark kept, so a failed or speculative attempt's files are never committed (they go
with the staging folder).
"""

from __future__ import annotations

import contextlib
import os
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rebalance_replay.jobs.delta.partitions import hive_folder
from rebalance_replay.schemas.core import TableDef

if TYPE_CHECKING:  # pragma: no cover - typing only
    import pyarrow as pa
    import pyarrow.parquet as pq

#: a partition's buffered rows are written as one row group when they reach this many bytes (in memory)
ROW_GROUP_BYTES = 32 << 20


def not_null_message(table: TableDef, column: str) -> str:
    """The error of a write that meets a null in a NOT NULL column (both write paths say it)."""
    return f"NOT NULL column {table.name}.{column} is null"


@dataclass
class _Open:
    writer: pq.ParquetWriter
    rel_path: str
    rows: int = 0
    pending: list[pa.RecordBatch] = field(default_factory=list)
    pending_bytes: int = 0


class TaskFileWriter:
    """Writes record batches of ``table`` (its Arrow schema) into ``stage``: one file per partition value
    per writer, row groups of about :data:`ROW_GROUP_BYTES`. :meth:`close` returns the files written
    (paths relative to ``stage``, with their row counts)."""

    def __init__(self, stage: str, table: TableDef) -> None:
        import pyarrow as pa

        self.stage = stage
        self.table = table
        self.schema = table.arrow_schema()
        self.data_schema = pa.schema([f for f in self.schema if f.name not in table.partition_by])
        self._not_null = [f.name for f in self.schema if not f.nullable]
        self._open: dict[tuple[Any, ...], _Open] = {}

    def write(self, batch: pa.RecordBatch) -> None:
        if not batch.num_rows:
            return
        for name in self._not_null:
            if batch.column(name).null_count:
                raise ValueError(not_null_message(self.table, name))
        if not batch.schema.equals(self.schema):
            batch = batch.cast(self.schema)
        for values, part in self._split(batch):
            self._append(values, part)

    def _split(self, batch: pa.RecordBatch) -> list[tuple[tuple[Any, ...], pa.RecordBatch]]:
        """The batch's rows by partition value (a tuple of the partition columns' Python values), each
        without the partition columns."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        data = pa.RecordBatch.from_arrays(
            [batch.column(f.name) for f in self.data_schema], schema=self.data_schema
        )
        if not self.table.partition_by:
            return [((), data)]
        codes = np.zeros(batch.num_rows, dtype=np.int64)
        for name in self.table.partition_by:
            enc = pc.dictionary_encode(batch.column(name), null_encoding="encode")
            codes = codes * len(enc.dictionary) + np.asarray(
                enc.indices.to_numpy(zero_copy_only=False), dtype=np.int64
            )
        distinct, first = np.unique(codes, return_index=True)
        out = []
        for code, row in zip(distinct.tolist(), first.tolist(), strict=True):
            values = tuple(batch.column(name)[row].as_py() for name in self.table.partition_by)
            rows = data if len(distinct) == 1 else data.filter(pa.array(codes == code))
            out.append((values, rows))
        return out

    def _append(self, values: tuple[Any, ...], rows: pa.RecordBatch) -> None:
        f = self._open.get(values)
        if f is None:
            f = self._open[values] = self._new_file(values)
        f.pending.append(rows)
        f.pending_bytes += rows.nbytes
        f.rows += rows.num_rows
        if f.pending_bytes >= ROW_GROUP_BYTES:
            self._flush(f)

    def _new_file(self, values: tuple[Any, ...]) -> _Open:
        import pyarrow.parquet as pq

        folder = hive_folder(self.table, dict(zip(self.table.partition_by, values, strict=True)))
        rel_path = f"{folder}/" if folder else ""
        rel_path += f"part-{uuid.uuid4().hex}.snappy.parquet"
        path = os.path.join(self.stage, rel_path)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        writer = pq.ParquetWriter(
            path, self.data_schema, compression="snappy", coerce_timestamps="us", write_statistics=True
        )
        return _Open(writer, rel_path)

    @staticmethod
    def _flush(f: _Open) -> None:
        import pyarrow as pa

        if f.pending:
            table = pa.Table.from_batches(f.pending)
            f.writer.write_table(table, row_group_size=max(1, table.num_rows))
            f.pending, f.pending_bytes = [], 0

    def close(self) -> list[tuple[str, int]]:
        """Finish every file: ``(path relative to the stage, rows)`` of each."""
        written = []
        for f in self._open.values():
            self._flush(f)
            f.writer.close()
            written.append((f.rel_path, f.rows))
        self._open.clear()
        return written

    def abort(self) -> None:
        """Close the files without finishing them (a failed task: they are never reported)."""
        for f in self._open.values():
            with contextlib.suppress(Exception):  # a half-written file goes with the stage anyway
                f.writer.close()
        self._open.clear()
