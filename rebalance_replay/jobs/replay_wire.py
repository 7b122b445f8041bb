"""The replay's wire format: what crosses between the driver and the Python workers, both ways.

In: the feed (:data:`FEED`: the replay columns, a bucket end, a final flag), packed for the hand-off
(:func:`pack` in the JVM, :func:`unpack` in the worker: :data:`WIRE`). Out: a call's ``predictions`` rows,
and everything else it emits — the small tables' rows and the group's status row, in one union schema
(:data:`UNION`) — as side files the driver reads back (:func:`_write_side`, :func:`_read_side`).
"""

from __future__ import annotations

import base64
import functools
import json
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rebalance_replay.jobs.bookkeeping import write_parquet
from rebalance_replay.schemas import MEMBER_SESSIONS, PREDICTIONS, REBALANCES, REQUESTS, TRANSITIONS
from rebalance_replay.schemas.core import Column, TableDef, arrow_table
from rebalance_replay.transforms.replay import (
    OUTPUT_KINDS,
    REPLAY_COLUMNS,
    GroupReplayer,
    ReplayOutput,
)

if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path

    from pyspark.sql import DataFrame

OUTPUT_TABLES: dict[str, TableDef] = {
    "predictions": PREDICTIONS,
    "transitions": TRANSITIONS,
    "rebalances": REBALANCES,
    "member_sessions": MEMBER_SESSIONS,
}


def _union_output() -> TableDef:
    """One schema for everything a replay task emits: the row kind, every output table's columns, and a
    per-group status (pending work, KIP-848, refused and why, rows held for a later call)."""
    cols: dict[str, Column] = {"kind": Column("kind", "string", False)}
    for t in OUTPUT_TABLES.values():
        for c in t.columns:
            prev = cols.get(c.name)
            if prev is not None and prev.type != c.type:
                raise TypeError(f"column {c.name} is {prev.type} in one output table and {c.type} in another")
            cols.setdefault(c.name, Column(c.name, c.type, True, c.doc))
    for c in (
        Column("pending", "boolean"),
        Column("kip848", "boolean"),
        Column("refused", "string"),
        Column("replayed", "bigint"),
        Column("late", "bigint"),
        Column("bulk", "bigint"),
        Column("predicted", "bigint"),
        Column("held", "bigint"),
    ):
        cols[c.name] = c
    return TableDef(name="_replay_output", columns=tuple(cols.values()))


UNION = _union_output()


#: What the stateful function and the fast path read: the replay columns, plus the feed's bucket end and
#: whether this is the last call of a batch replay.
FEED = TableDef(
    name="_replay_feed",
    columns=(
        *(Column(c, REQUESTS.column(c).type, True) for c in REPLAY_COLUMNS),
        Column("bucket_end_ms", "bigint"),
        Column("final", "boolean"),
    ),
)


#: The nested columns only JoinGroup, SyncGroup and LeaveGroup rows fill. They cross to the Python
#: workers as one JSON string (:data:`PACKED`, null on every other row): Spark's Arrow writer pays for a
#: nested column on every row, null or not — measured at 1M rows, these six cost four times the rest of
#: the hand-off together.
PACKED_COLUMNS = (
    "protocols",
    "assignments",
    "leave_members",
    "response_members",
    "response_assignment",
    "response_leave_members",
)
PACKED = "packed_json"
#: The feed as it crosses to the Python workers (and as the stateful feed files hold it): :data:`FEED`
#: with :data:`PACKED_COLUMNS` packed.
WIRE = TableDef(
    name="_replay_wire",
    columns=(
        *(c for c in FEED.columns if c.name not in PACKED_COLUMNS),
        Column(PACKED, "string", True, "the packed columns as one JSON object (Spark's to_json)"),
    ),
)
_FEED_SCHEMA = FEED.arrow_schema()
_WIRE_SCHEMA = WIRE.arrow_schema()


def pack(df: DataFrame) -> DataFrame:
    """The feed (:data:`FEED` columns) as it crosses to Python (:data:`WIRE`); :func:`unpack` undoes it."""
    from pyspark.sql import functions as F

    filled = functools.reduce(lambda a, b: a | b, [F.col(c).isNotNull() for c in PACKED_COLUMNS])
    return df.select(
        *[c for c in WIRE.column_names if c != PACKED],
        F.when(filled, F.to_json(F.struct(*PACKED_COLUMNS))).alias(PACKED),
    )


def unpack(table: pa.Table) -> pa.Table:
    """A :data:`WIRE` table as the :data:`FEED` table it was packed from."""
    packed = table.column(PACKED).combine_chunks()
    n = table.num_rows
    at = np.flatnonzero(np.asarray(packed.is_valid().to_numpy(zero_copy_only=False), dtype=bool))
    restored: dict[str, pa.Array] = {}
    if len(at):
        objects = [json.loads(s) for s in packed.take(pa.array(at)).to_pylist()]
        where = np.full(n, -1, dtype=np.int64)
        where[at] = np.arange(len(at))
        scatter = pa.array(where, mask=where < 0)
        for name in PACKED_COLUMNS:
            kind = _FEED_SCHEMA.field(name).type
            values = pa.array([_from_json_value(o.get(name), kind) for o in objects], kind)
            restored[name] = values.take(scatter)
    columns = [
        restored.get(f.name, pa.nulls(n, f.type)) if f.name in PACKED_COLUMNS else table.column(f.name)
        for f in _FEED_SCHEMA
    ]
    return pa.Table.from_arrays(columns, schema=_FEED_SCHEMA)


def _from_json_value(value: Any, kind: pa.DataType) -> Any:
    """A value of Spark's ``to_json`` back as the Python value of Arrow type ``kind`` (binary comes as
    base64; a null struct field is left out)."""
    if value is None:
        return None
    if pa.types.is_binary(kind):
        return base64.b64decode(value)
    if pa.types.is_list(kind):
        return [_from_json_value(v, kind.value_type) for v in value]
    if pa.types.is_struct(kind):
        return {f.name: _from_json_value(value.get(f.name), f.type) for f in kind}
    return value


_UNION_SCHEMA = UNION.arrow_schema()


def _as_union(table: pa.Table, kind: str) -> pa.Table:
    """One output table's rows (any subset of the union's columns) in the union's shape."""
    return _shaped(table, _UNION_SCHEMA, {"kind": pa.repeat(pa.scalar(kind), table.num_rows)})


def _shaped(table: pa.Table, schema: pa.Schema, given: Mapping[str, pa.Array] | None = None) -> pa.Table:
    """``table`` (any subset of ``schema``'s columns) in ``schema``: the rest from ``given``, else null."""
    columns = {name: table.column(name) for name in table.column_names}
    return arrow_table(schema, table.num_rows, {**columns, **(given or {})})


#: A call's output other than its ``predictions`` rows: rows by kind (the small tables' and the group's
#: one ``status`` row), kept as dicts until :func:`side_table` makes them columns (many calls at once).
SideBatch = dict[str, list[dict[str, Any]]]

_PREDICTIONS_SCHEMA = PREDICTIONS.arrow_schema()
_KIND_SCHEMAS = {kind: t.arrow_schema() for kind, t in OUTPUT_TABLES.items()}


class PredictionRows:
    """Calls' ``predictions`` rows as they come (the tables of bulk-validated runs, rows as dicts), made one
    table by :meth:`take`, in the order the calls gave them: a table of its own for each quiet group's call
    cost ~0.3 ms (more than a third of its replay) and crossed to the JVM as a batch of its own."""

    #: rows made a table at once (``Table.from_pylist`` costs 7 µs a row for 31 rows, ~3 for 300–1,000,
    #: 9 for 12,000)
    ROWS_A_TABLE = 512

    def __init__(self) -> None:
        self.parts: list[pa.Table] = []
        self.rows: list[dict[str, Any]] = []
        #: rows held (not taken yet)
        self.count = 0

    def add(self, out: ReplayOutput) -> int:
        """Keep one call's ``predictions`` rows; how many it gave."""
        if out.prediction_tables:
            self._flush()
            self.parts.extend(_shaped(t, _PREDICTIONS_SCHEMA) for t in out.prediction_tables)
        rows = out.rows["predictions"]
        self.rows.extend(rows)
        if len(self.rows) >= self.ROWS_A_TABLE:
            self._flush()
        n: int = sum(t.num_rows for t in out.prediction_tables) + len(rows)
        self.count += n
        return n

    def _flush(self) -> None:
        if self.rows:
            self.parts.append(pa.Table.from_pylist(self.rows, schema=_PREDICTIONS_SCHEMA))
            self.rows = []

    def take(self) -> pa.Table:
        """The rows held, as one table in ``predictions``' schema (one chunk); none held afterwards."""
        self._flush()
        parts, self.parts, self.count = self.parts, [], 0
        if not parts:
            return _PREDICTIONS_SCHEMA.empty_table()
        return parts[0] if len(parts) == 1 else pa.concat_tables(parts).combine_chunks()


def split_output(replayer: GroupReplayer, out: ReplayOutput) -> tuple[pa.Table, SideBatch]:
    """One call's output as (its ``predictions`` rows, in that table's schema; everything else — the
    small tables' rows and the group's status row — as rows by kind, for :func:`side_table`)."""
    rows = PredictionRows()
    rows.add(out)
    predictions = rows.take()
    return predictions, side_batch(replayer, out, predictions.num_rows)


def side_batch(replayer: GroupReplayer, out: ReplayOutput, predicted: int) -> SideBatch:
    """One call's output but its ``predictions`` rows (``predicted`` of them): the small tables' rows and
    the group's status row, by kind, for :func:`side_table`."""
    side: SideBatch = {
        kind: out.rows[kind] for kind in OUTPUT_KINDS if kind != "predictions" and out.rows[kind]
    }
    side["status"] = [
        {
            "group_id": replayer.group_id,
            "pending": replayer.has_pending_work,
            "kip848": replayer.kip848,
            "refused": replayer.refused,
            "replayed": out.replayed,
            "late": out.late,
            "bulk": sum(t.num_rows for t in out.prediction_tables),
            "predicted": predicted,
            # rows fed but not replayed yet (arrived at or after the call's horizon): the next run's
            "held": len(replayer.buffer) + sum(t.num_rows for t in replayer.pending),
        }
    ]
    return side


def side_table(batches: Sequence[SideBatch]) -> pa.Table:
    """Calls' side rows (:func:`split_output`) as one table in the union schema: each kind's rows made
    columns once for all the calls (a call's own tables of the union's ~100 columns cost more than the
    replay of a quiet group)."""
    parts = []
    for kind in (*OUTPUT_KINDS, "status"):
        rows = [r for b in batches for r in b.get(kind, ())]
        if rows:
            schema = _KIND_SCHEMAS.get(kind)
            parts.append(_as_union(pa.Table.from_pylist(rows, schema=schema), kind))
    return pa.concat_tables(parts) if parts else _UNION_SCHEMA.empty_table()


def _step(replayer: GroupReplayer, rows: pa.Table) -> ReplayOutput:
    """Feed one call's rows (ticks included) and replay up to their bucket end; a final tick also
    closes open rows."""
    until = pc.min(rows.column("bucket_end_ms")).as_py()
    return step_to(replayer, rows, int(until), pc.any(pc.fill_null(rows.column("final"), False)).as_py())


def step_to(replayer: GroupReplayer, rows: pa.Table | None, until: int, final: bool) -> ReplayOutput:
    """Feed one call's rows (if any) and replay up to ``until``; ``final`` also closes open rows."""
    if rows is not None:
        replayer.feed_table(rows)
    out = replayer.process(until)
    if final:
        fin = replayer.finish()
        for kind in OUTPUT_KINDS:
            out.extend(kind, fin.rows[kind])
    return out


class SideRows:
    """Side rows kept in memory: calls' rows by kind (:meth:`add_batch`) made columns every :attr:`EVERY`
    calls, tables read back (:meth:`add`, union schema) compacted every :attr:`EVERY` into one. Kept as
    they come, 20,000 one-member groups held ~240 KB each in small tables of the union's ~100 columns
    (4.8 GB for a fast-path task or a micro-batch's side files), compacted what their rows take (~7 KB)."""

    EVERY = 256

    def __init__(self) -> None:
        self.blocks: list[pa.Table] = []
        self.recent: list[pa.Table] = []
        self.batches: list[SideBatch] = []

    def add(self, table: pa.Table) -> None:
        self.recent.append(table)
        if len(self.recent) >= self.EVERY:
            self.blocks.append(pa.concat_tables(self.recent).combine_chunks())
            self.recent = []

    def add_batch(self, batch: SideBatch) -> None:
        self.batches.append(batch)
        if len(self.batches) >= self.EVERY:
            self.blocks.append(side_table(self.batches))
            self.batches = []

    def tables(self) -> list[pa.Table]:
        pending = [side_table(self.batches)] if self.batches else []
        return [*self.blocks, *self.recent, *pending]


def _write_side(side_dir: str, name: str, tables: Sequence[pa.Table]) -> None:
    """One task's small output rows (union schema) as ``<side_dir>/<name>.parquet``, written whole."""
    table = pa.concat_tables(tables) if tables else _UNION_SCHEMA.empty_table()
    write_parquet(os.path.join(side_dir, f"{name}.parquet"), table)


def _read_side(side_dir: Path) -> pa.Table:
    """The side files of one micro-batch (or one fast replay): one call a group is kept — a task that ran
    again (a retry, a speculative copy) left a second, identical file."""
    import pyarrow.parquet as pq

    files = sorted(side_dir.glob("*.parquet")) if side_dir.exists() else []
    keep = SideRows()  # a stateful micro-batch has a file a group: 20,000 groups, 20,000 small tables
    seen: set[tuple[str, ...]] = set()
    for f in files:
        table = pq.read_table(f, schema=_UNION_SCHEMA)
        groups = tuple(sorted(set(table.column("group_id").to_pylist()) - {None}))
        if groups in seen:
            continue
        seen.add(groups)
        keep.add(table)
    tables = keep.tables()
    return pa.concat_tables(tables) if tables else _UNION_SCHEMA.empty_table()


def _predicted(status: Sequence[Mapping[str, Any]]) -> int:
    """The ``predictions`` rows the calls emitted, from their status rows (for a write that was skipped
    as already committed: nothing is computed twice to count them)."""
    return sum(s["predicted"] or 0 for s in status)


def _status_rows(small: pa.Table) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = (
        small.filter(pc.equal(small.column("kind"), "status"))
        .select(["group_id", "pending", "kip848", "refused", "replayed", "late", "bulk", "predicted", "held"])
        .to_pylist()
    )
    return rows
