"""Bulk validation of routine traffic: the columnar half of a group's replay.

Most of any log is heartbeats of the members of a Stable generation, answered NONE. The replayer
(:class:`~rebalance_replay.transforms.replay.GroupReplayer`) takes a group's rows as Arrow columns, and
this module finds, without looking at one row in Python:

* the *candidates* — Heartbeats and OffsetCommits answered NONE by a member id, not arriving in the
  same millisecond as any other kind of request (:func:`candidates`), and the *runs* they form:
  consecutive candidates in replay order (:func:`runs`);
* what the coordinator model needs to take a run at once (a
  :class:`~rebalance_replay.transforms.coordinator.types.HeartbeatRun`: per member its first and last
  arrival, longest gap, position of its last heartbeat), what the rebalance tracker needs
  (:class:`~rebalance_replay.transforms.rebalances.TrackedHeartbeats`), and each member's last answer
  time (for the replayer's unlogged-JoinGroup inference) — :func:`summarize`;
* the run's ``predictions`` rows, as columns (:func:`liveness_predictions`).

Whether a run *is* routine is the model's call (``bulk_heartbeats``: Stable, known members, the group's
generation, no timer firing inside the run); when it cannot say yes, the run's rows go through the model
one by one like any other, so the output never depends on this module's guesses — only its speed does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rebalance_replay.schemas import PREDICTIONS
from rebalance_replay.schemas.core import arrow_table
from rebalance_replay.transforms.coordinator.types import (
    EventKind,
    GroupState,
    HeartbeatRun,
    ModelEvent,
    RunMember,
)
from rebalance_replay.transforms.kafka_protocol import ApiKey
from rebalance_replay.transforms.ordering import SORT_COLUMNS, STABLE_COLUMNS
from rebalance_replay.transforms.rebalances import TrackedHeartbeats
from rebalance_replay.transforms.validation import NOTHING_TO_COMPARE

#: runs shorter than this go through the model row by row (a summary costs more than a few rows)
MIN_RUN = 8

_HEARTBEAT = int(ApiKey.HEARTBEAT)
_OFFSET_COMMIT = int(ApiKey.OFFSET_COMMIT)
_PREDICTIONS_SCHEMA = PREDICTIONS.arrow_schema()
_MS_PER_DAY = 86_400_000


def sort_rows(table: pa.Table) -> pa.Table:
    """``table`` in replay order: :func:`~rebalance_replay.transforms.ordering.sort_key` (arrival, then
    the stable key with a missing value as ``""``), as columns."""
    keys: dict[str, pa.ChunkedArray] = {"arrival_ms": table.column("arrival_ms")}
    for c in STABLE_COLUMNS:
        col = table.column(c)
        keys[c] = pc.fill_null(col, "") if pa.types.is_string(col.type) else col
    order = pc.sort_indices(pa.table(keys), sort_keys=[(c, "ascending", "at_start") for c in SORT_COLUMNS])
    return table.take(order)


def _numpy(col: pa.ChunkedArray | pa.Array, fill: Any) -> np.ndarray:
    return np.asarray(pc.fill_null(col, fill).to_numpy(zero_copy_only=False))


def candidates(table: pa.Table, horizon_ms: int | None, other_arrivals: Sequence[int] = ()) -> np.ndarray:
    """Which rows (sorted, see :func:`sort_rows`) may be validated in bulk: Heartbeats answered NONE and
    OffsetCommits answered NONE for every partition, that carry a member id, arrived at or after
    ``horizon_ms`` (earlier ones are late) and share their arrival millisecond with no other request (nor
    with ``other_arrivals``, the replayer's inferred JoinGroups): a tie that is not all heartbeats and
    commits is ordered by search, one request at a time."""
    api = _numpy(table.column("api_key"), -1)
    error = table.column("error_name")
    member = table.column("member_id")
    partitions = table.column("response_commit_partitions").combine_chunks()
    failed = _numpy(
        pc.not_equal(pc.fill_null(pc.list_flatten(partitions).field("error_name"), "NONE"), "NONE"), True
    )
    bad_commit = np.bincount(
        np.asarray(pc.list_parent_indices(partitions).to_numpy(zero_copy_only=False))[failed],
        minlength=table.num_rows,
    ).astype(bool)
    mask = (
        ((api == _HEARTBEAT) & _numpy(pc.equal(error, "NONE"), False))
        | (
            (api == _OFFSET_COMMIT)
            & _numpy(pc.equal(pc.fill_null(error, "NONE"), "NONE"), False)
            & ~bad_commit
        )
    ) & _numpy(pc.greater(pc.utf8_length(member), 0), False)
    arrival = _numpy(table.column("arrival_ms"), 0)
    if horizon_ms is not None:
        mask &= arrival >= horizon_ms
    others = arrival[~mask]
    if len(other_arrivals):
        others = np.concatenate([others, np.asarray(other_arrivals, dtype=others.dtype)])
    if len(others):
        mask &= ~np.isin(arrival, others)
    result: np.ndarray = mask
    return result


def runs(mask: np.ndarray, breaks: Sequence[int] = (), min_run: int = MIN_RUN) -> list[tuple[int, int]]:
    """Maximal ``[start, end)`` ranges of consecutive candidates, none containing both ``p - 1`` and ``p``
    for a ``p`` in ``breaks`` (where an inferred request goes), at least ``min_run`` long."""
    if not mask.any():
        return []
    edges = np.diff(np.concatenate([[0], mask.astype(np.int8), [0]]))
    starts = np.flatnonzero(edges == 1).tolist()
    ends = np.flatnonzero(edges == -1).tolist()
    cuts = sorted(set(breaks))
    found: list[tuple[int, int]] = []
    for a, b in zip(starts, ends, strict=True):
        for p in cuts:
            if a < p < b:
                found.append((a, p))
                a = p
        found.append((a, b))
    return [(a, b) for a, b in found if b - a >= min_run]


@dataclass(frozen=True)
class RunSummary:
    """What the model, the tracker and the replayer need of one run (see the module docstring)."""

    start: int  # the run is rows [start, end) of the sorted table
    end: int
    model: HeartbeatRun
    #: per member, in the order of ``model.members``: the position of its first request in the run
    first_positions: tuple[int, ...]
    first_commit: tuple[bool, ...]  # whether its first request in the run is an OffsetCommit
    heartbeats: tuple[int, ...]  # its Heartbeats in the run
    commits: tuple[int, ...]  # and OffsetCommits
    last_heartbeat_ms: tuple[int | None, ...]
    first_refs: tuple[tuple[str, int], ...]
    clients: tuple[tuple[str, int, str | None, str | None], ...]  # (member, position, id, address)
    #: (member id, its last answer time in the run): stand-ins for the run's rows in the replayer's
    #: answer bookkeeping (``member_id``, ``completion_ms`` as a row would carry them)
    last_answers: tuple[tuple[str, int], ...]


def summarize(table: pa.Table, start: int, end: int) -> RunSummary:
    """The summary of rows ``[start, end)`` of ``table`` (a run of :func:`runs`)."""
    run = table.slice(start, end - start)
    n = run.num_rows
    arrival = _numpy(run.column("arrival_ms"), 0).astype(np.int64)
    encoded = pc.dictionary_encode(run.column("member_id")).combine_chunks()
    names: list[str] = encoded.dictionary.to_pylist()
    codes = np.asarray(encoded.indices.to_numpy(zero_copy_only=False))
    order = np.argsort(codes, kind="stable")
    sorted_codes = codes[order]
    starts = np.concatenate([[0], np.flatnonzero(np.diff(sorted_codes)) + 1])
    ends = np.concatenate([starts[1:], [n]])
    times = arrival[order]
    gaps = np.zeros(n, dtype=np.int64)
    gaps[1:] = np.diff(times)
    gaps[starts] = 0
    max_gaps = np.maximum.reduceat(gaps, starts)
    firsts = order[starts]
    lasts = order[ends - 1]
    by_first = np.argsort(firsts, kind="stable")
    is_commit = _numpy(run.column("api_key"), 0) == _OFFSET_COMMIT
    commit_counts = np.add.reduceat(is_commit[order].astype(np.int64), starts)
    # each member's last heartbeat: the latest arrival among its heartbeats (-1: none)
    hb_times = np.where(is_commit[order], -1, times)
    last_hb = np.maximum.reduceat(hb_times, starts)
    source = run.column("source_file")
    line = run.column("line_no")
    members: list[RunMember] = []
    first_refs: list[tuple[str, int]] = []
    for k in by_first:
        members.append(
            RunMember(
                member_id=names[sorted_codes[starts[k]]],
                first_ms=int(times[starts[k]]),
                last_ms=int(times[ends[k] - 1]),
                last_index=int(lasts[k]),
                max_gap_ms=int(max_gaps[k]),
            )
        )
        first_refs.append((source[int(firsts[k])].as_py(), int(line[int(firsts[k])].as_py())))
    generations = tuple(pc.unique(run.column("generation_id")).to_pylist())
    static = run.filter(pc.is_valid(run.column("group_instance_id")))
    instances = tuple(
        sorted(
            (r["group_instance_id"], r["member_id"])
            for r in static.group_by(["group_instance_id", "member_id"], use_threads=False)
            .aggregate([])
            .to_pylist()
        )
    )
    positioned = pa.table(
        {
            "member_id": run.column("member_id"),
            "client_id": run.column("client_id"),
            "client_address": run.column("client_address"),
            "pos": pa.array(np.arange(n, dtype=np.int64)),
        }
    )
    clients = tuple(
        sorted(
            (
                (r["member_id"], int(r["pos_min"]), r["client_id"], r["client_address"])
                for r in positioned.group_by(["member_id", "client_id", "client_address"], use_threads=False)
                .aggregate([("pos", "min")])
                .to_pylist()
            ),
            key=lambda c: c[1],
        )
    )
    completion = run.column("completion_ms")
    valid = _numpy(pc.is_valid(completion), False)
    last_answers: list[tuple[str, int]] = []
    if valid.any():
        done = _numpy(completion, 0).astype(np.int64)
        positions = np.flatnonzero(valid)[::-1]
        _, first_of_reversed = np.unique(codes[positions], return_index=True)
        for p in sorted(int(positions[i]) for i in first_of_reversed):
            last_answers.append((names[codes[p]], int(done[p])))
    return RunSummary(
        start=start,
        end=end,
        model=HeartbeatRun(
            size=n,
            first_ms=int(arrival[0]),
            last_ms=int(arrival[-1]),
            last_ref=(source[n - 1].as_py(), int(line[n - 1].as_py())),
            last_commit_ms=int(arrival[is_commit][-1]) if is_commit.any() else None,
            generations=generations,
            instances=instances,
            members=tuple(members),
            max_gap_ms=int(np.diff(arrival).max()) if n > 1 else 0,
        ),
        first_positions=tuple(int(firsts[k]) for k in by_first),
        first_commit=tuple(bool(is_commit[firsts[k]]) for k in by_first),
        heartbeats=tuple(int(ends[k] - starts[k] - commit_counts[k]) for k in by_first),
        commits=tuple(int(commit_counts[k]) for k in by_first),
        last_heartbeat_ms=tuple(None if last_hb[k] < 0 else int(last_hb[k]) for k in by_first),
        first_refs=tuple(first_refs),
        clients=clients,
        last_answers=tuple(last_answers),
    )


def tracked(
    summary: RunSummary,
    base_seq: int,
    generation: int,
    events: bool,
    host: Callable[[str | None], str | None],
) -> TrackedHeartbeats:
    """The run as the rebalance tracker takes it, once the model gave its first request ``base_seq``.
    ``events``: whether the model emits liveness events; ``host``: client address → host."""
    run = summary.model
    firsts = (
        tuple(
            ModelEvent(
                seq=base_seq + pos,
                time_ms=m.first_ms,
                kind=EventKind.OFFSET_COMMIT if commit else EventKind.HEARTBEAT,
                generation_id=generation,
                state=GroupState.STABLE,
                member_id=m.member_id,
                ref=ref,
            )
            for m, pos, ref, commit in zip(
                run.members, summary.first_positions, summary.first_refs, summary.first_commit, strict=True
            )
        )
        if events
        else ()
    )
    return TrackedHeartbeats(
        clients=tuple(
            (member, base_seq + pos, client_id, host(address))
            for member, pos, client_id, address in summary.clients
        ),
        client_last_seqs=tuple((m.member_id, base_seq + m.last_index) for m in run.members),
        firsts=firsts,
        more=tuple(
            (m.member_id, hb - (0 if commit else 1), last_hb, commits - (1 if commit else 0))
            for m, hb, commits, commit, last_hb in zip(
                run.members,
                summary.heartbeats,
                summary.commits,
                summary.first_commit,
                summary.last_heartbeat_ms,
                strict=True,
            )
        )
        if events
        else (),
        last_seq=base_seq + run.size - 1,
    )


def _constant(value: Any, n: int, type_: pa.DataType) -> pa.Array:
    return pa.repeat(pa.scalar(value, type=type_), n)


def _partition_errors(partitions: pa.Array, error: pa.Array | None, keep: np.ndarray) -> pa.Array:
    """:func:`~rebalance_replay.transforms.validation.partition_errors` as columns: each row's
    (topic, partition, error) as sorted ``topic-partition=ERROR`` strings; ``error`` None: every partition
    NONE (the model's answer). Rows where ``keep`` is false, or without partitions, are null."""
    flat = pc.list_flatten(partitions)
    parents = pc.list_parent_indices(partitions)
    errors = _constant("NONE", len(flat), pa.string()) if error is None else pc.fill_null(error, "NONE")
    text = pc.binary_join_element_wise(
        pc.fill_null(flat.field("topic"), ""),
        pc.fill_null(flat.field("partition"), 0).cast(pa.string()),
        "-",
    )
    text = pc.binary_join_element_wise(text, errors, "=")
    order = pc.sort_indices(
        pa.table({"p": parents, "t": text}), sort_keys=[("p", "ascending"), ("t", "ascending")]
    )
    lengths = np.asarray(pc.fill_null(pc.list_value_length(partitions), 0).to_numpy(zero_copy_only=False))
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    valid = keep & _numpy(pc.is_valid(partitions), False)
    return pa.ListArray.from_arrays(pa.array(offsets), text.take(order), mask=pa.array(~valid))


def liveness_predictions(table: pa.Table, summary: RunSummary, base_seq: int, generation: int) -> pa.Table:
    """The ``predictions`` rows of a run the model took in bulk: what
    :func:`~rebalance_replay.transforms.validation.prediction_row` makes of an accepted Heartbeat or
    OffsetCommit (predicted NONE — for every partition the commit asked for — at its arrival, Stable before
    and after, the group's generation; compared with the observed error and partition errors), as
    columns."""
    run = table.slice(summary.start, summary.end - summary.start)
    n = run.num_rows
    arrival = run.column("arrival_ms").cast(pa.int64())
    days = pa.array((_numpy(arrival, 0) // _MS_PER_DAY).astype(np.int32))
    commit = _numpy(run.column("api_key"), 0) == _OFFSET_COMMIT
    observed = run.column("response_commit_partitions").combine_chunks()
    observed_errors = _partition_errors(observed, pc.list_flatten(observed).field("error_name"), commit)
    asked = run.column("commit_partitions").combine_chunks()
    # the model answers every partition asked for (none asked: an empty list, not null)
    asked = (
        pa.ListArray.from_arrays(asked.offsets, asked.values, mask=pa.array(np.zeros(n, dtype=bool)))
        if asked.null_count
        else asked
    )
    predicted_errors = _partition_errors(asked, None, commit)
    error = run.column("error_name")
    compared_error = _numpy(pc.is_valid(error), False)
    compared_partitions = _numpy(pc.is_valid(observed_errors), False)
    same = _numpy(
        pc.equal(pc.binary_join(observed_errors, "\n"), pc.binary_join(predicted_errors, "\n")), False
    )
    bad = compared_partitions & ~same
    scored = compared_error | compared_partitions
    mismatch_lengths = (scored & bad).astype(np.int32)
    columns: dict[str, Any] = {
        "source_file": run.column("source_file"),
        "line_no": run.column("line_no"),
        "broker_id": run.column("broker_id"),
        "group_id": run.column("group_id"),
        "api": pa.array(np.where(commit, ApiKey.OFFSET_COMMIT.name, ApiKey.HEARTBEAT.name), type=pa.string()),
        "api_version": run.column("api_version"),
        "seq": pa.array(np.arange(base_seq, base_seq + n, dtype=np.int64)),
        "member_id": run.column("member_id"),
        "group_instance_id": run.column("group_instance_id"),
        "request_generation_id": run.column("generation_id"),
        "arrival_ms": arrival,
        "observed_error": error,
        "predicted_error": _constant("NONE", n, pa.string()),
        "observed_member_errors": observed_errors,
        "predicted_member_errors": predicted_errors,
        "observed_completion_ms": pc.coalesce(run.column("completion_ms"), arrival),
        "predicted_completion_ms": arrival,
        "scored": pa.array(scored),
        "unscored_reason": pc.if_else(pa.array(scored), pa.scalar(None, pa.string()), NOTHING_TO_COMPARE),
        "matched": pa.array(scored & ~bad),
        "mismatch_kinds": pa.ListArray.from_arrays(
            pa.array(np.concatenate([[0], np.cumsum(mismatch_lengths)]).astype(np.int32)),
            pa.array(["member_errors"] * int(mismatch_lengths.sum()), type=pa.string()),
        ),
        "state_before": _constant(GroupState.STABLE.value, n, pa.string()),
        "state_after": _constant(GroupState.STABLE.value, n, pa.string()),
        "generation_before": _constant(generation, n, pa.int32()),
        "generation_after": _constant(generation, n, pa.int32()),
        "reconciled": _constant(False, n, pa.bool_()),
        "log_date": days.cast(pa.date32()),
    }
    return arrow_table(_PREDICTIONS_SCHEMA, n, columns)
