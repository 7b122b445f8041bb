"""Per-group work in sorted partitions (``jobs/group_runs.py``) and the audit's function over them, without
Spark: the stacked rows of every incident group (every rule's incident, parsed and replayed by the pure
code) are written as the Spark stack hands them over — request columns on every row, the other tables'
rows interleaved between the requests, each group's rows consecutive — cut into small batches so that
groups span batches, and read back: each group's inputs equal the ones they were written from, and the
function's output equals the rules' on each group alone."""

from __future__ import annotations

import base64
import dataclasses
import json
import random
from functools import cache
from typing import Any

import pyarrow as pa
import pytest

from rebalance_replay.jobs.audit import (
    AUDIT_OUTPUT,
    TABLE_COLUMNS,
    audit_function,
    group_output,
    inputs_of,
    stacked_rows,
)
from rebalance_replay.jobs.group_runs import key_runs
from rebalance_replay.schemas import REQUESTS
from rebalance_replay.transforms.audit import AuditSettings, GroupInputs
from rebalance_replay.transforms.audit.model import REQUEST_COLUMNS, Req
from simulator.incidents import group_inputs_of, incident_coordinator, log_files


def test_key_runs_cut_at_each_change_of_key() -> None:
    keys = pa.chunked_array([["a", "a"], ["b"], ["b", "c", "a"]])
    assert list(key_runs(keys)) == [("a", 0, 2), ("b", 2, 4), ("c", 4, 5), ("a", 5, 6)]
    assert list(key_runs(pa.array(["x"]))) == [("x", 0, 1)]
    assert list(key_runs(pa.array([], pa.string()))) == []


@cache
def _inputs() -> dict[str, GroupInputs]:
    files, _truths = log_files(7, inject=True)
    return group_inputs_of(files, incident_coordinator())


def _nested(r: Req) -> str | None:
    """``nested`` as the JVM writes it (``nested_request_column``): null when every part is empty."""
    parts = {
        "protocol_names": list(r.protocol_names),
        "leave_members": [
            {"member_id": m, "group_instance_id": i, "reason": why} for m, i, why in r.leave_members
        ],
        "commit_errors": list(r.commit_errors),
        "assignments": [
            {"member_id": m, "assignment": None if a is None else base64.b64encode(a).decode()}
            for m, a in r.assignments
        ],
    }
    return json.dumps(parts) if any(parts.values()) else None


def _stacked(inputs: dict[str, GroupInputs], seed: int) -> pa.Table:
    """Every group's rows, group after group, the kinds shuffled within each group."""
    kinds = {"rebalances": "rebalances", "member_sessions": "sessions", "transitions": "transitions"}
    rows: list[dict[str, Any]] = []
    rnd = random.Random(seed)
    for gid, gi in inputs.items():
        mine = [
            {
                "group_id": gid,
                "kind": "requests",
                **{c: getattr(r, c) for c in REQUEST_COLUMNS},
                "nested": _nested(r),
            }
            for r in gi.requests
        ]
        for kind, attr in kinds.items():
            for obj in getattr(gi, attr):
                payload = {c: v for c, v in dataclasses.asdict(obj).items() if c in TABLE_COLUMNS[kind]}
                mine.append({"group_id": gid, "kind": kind, "payload": json.dumps(payload)})
        rnd.shuffle(mine)
        rows += mine
    fields = [
        pa.field("group_id", pa.string()),
        pa.field("kind", pa.string()),
        *(REQUESTS.arrow_schema().field(c) for c in REQUEST_COLUMNS),
        pa.field("nested", pa.string()),
        pa.field("payload", pa.string()),
    ]
    return pa.Table.from_pylist(rows, schema=pa.schema(fields))


def test_stacked_rows_give_back_each_groups_inputs() -> None:
    inputs = _inputs()
    table = _stacked(inputs, seed=1)
    by: dict[str, list[tuple[str, Any]]] = {}
    for gid, kind, row in stacked_rows(table):
        by.setdefault(gid, []).append((kind, row))
    broker = next(iter(inputs.values())).broker
    assert sorted(by) == sorted(inputs)
    nested = 0
    for gid, gi in inputs.items():
        got = inputs_of(gid, by[gid], broker)
        assert got.group_id == gid
        assert got == gi, gid
        nested += sum(1 for r in gi.requests if _nested(r) is not None)
    assert nested, "some requests have nested columns"
    assert any(gi.rebalances for gi in inputs.values()) and any(gi.sessions for gi in inputs.values())


@pytest.mark.parametrize("batch_rows", [1, 7, 100_000])
def test_the_audit_function_gathers_groups_across_batches(batch_rows: int) -> None:
    inputs = _inputs()
    settings = AuditSettings()
    broker = next(iter(inputs.values())).broker
    table = _stacked(inputs, seed=2)
    fn = audit_function(settings, None, broker)
    got = pa.Table.from_batches(
        list(fn(iter(table.to_batches(max_chunksize=batch_rows)))), schema=AUDIT_OUTPUT.arrow_schema()
    ).to_pylist()
    want = [row for gi in inputs.values() for row in group_output(gi, settings, None)]
    assert sorted(map(json.dumps, got)) == sorted(map(json.dumps, want))
    assert {r["group_id"] for r in got} == set(inputs)  # each group's rows name it
    assert sum(r["kind"] == "finding" for r in got) >= 15
    assert sum(r["kind"] == "coverage" for r in got) == len(inputs)


def test_collector_paused_turns_the_collector_off_for_the_block_and_back_as_it_was() -> None:
    import gc

    from rebalance_replay.jobs.group_runs import collector_paused

    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ValueError), collector_paused():
        raise ValueError("a rule failed")
    assert gc.isenabled()  # on again after an error
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()  # left as it was: off
    finally:
        gc.enable()


def test_fewer_collections_paces_the_collector_inside_and_puts_it_back() -> None:
    import gc

    from rebalance_replay.jobs.group_runs import YOUNG_THRESHOLD, fewer_collections

    before = gc.get_threshold()
    assert before[0] != YOUNG_THRESHOLD
    with fewer_collections():
        assert gc.get_threshold() == (YOUNG_THRESHOLD, 20, 100)
    assert gc.get_threshold() == before
    try:
        with fewer_collections(1234):
            assert gc.get_threshold()[0] == 1234
            raise RuntimeError("a task that fails")
    except RuntimeError:
        pass
    assert gc.get_threshold() == before
