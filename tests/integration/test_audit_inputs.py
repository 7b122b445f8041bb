"""The audit's Spark hand-off (typed Arrow columns, nested request columns reduced in the JVM) gives the
rules exactly what :meth:`Req.from_row` & co. make of the full table rows: on an incident log with every
rule's incident, each group's :class:`GroupInputs` is equal, and so is every finding row and every
unsupported rule of ``audit`` (against the pure rules evaluated on the table rows read without Spark)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rebalance_replay.jobs.audit import audit, broker_bounds, group_inputs, stacked_inputs
from rebalance_replay.jobs.cli import main
from rebalance_replay.jobs.config import load_config
from rebalance_replay.jobs.delta import open_store
from rebalance_replay.schemas import MEMBER_SESSIONS, REBALANCES, REQUESTS, TRANSITIONS
from rebalance_replay.transforms.audit import GroupInputs, evaluate
from rebalance_replay.transforms.audit.model import Rebalance, Req, Session, Transition
from simulator.incidents import generate
from tests.helpers import read_table

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]

NO_GX = ["report.great_expectations=false"]


@pytest.fixture(scope="module")
def audited_warehouse(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("audit-inputs")
    generate(root / "logs", seed=11, healthy_groups=1)  # every rule's incident
    wh = root / "warehouse"
    args = ["--input", str(root / "logs"), "--warehouse", str(wh), "--set", NO_GX[0]]
    assert main(["ingest", *args]) == 0
    assert main(["replay", "--warehouse", str(wh), "--set", NO_GX[0]]) == 0
    return wh


def _reference(wh: Path, config: Any) -> dict[str, GroupInputs]:
    """Every group's inputs from the full table rows (delta-rs, no Spark) through ``from_row``."""
    by: dict[str, dict[str, list[Any]]] = {}
    for table, make in (
        (REQUESTS, Req.from_row),
        (REBALANCES, Rebalance.from_row),
        (MEMBER_SESSIONS, Session.from_row),
        (TRANSITIONS, Transition.from_row),
    ):
        for row in read_table(wh / table.name):
            if row["group_id"] is not None:
                by.setdefault(row["group_id"], {}).setdefault(table.name, []).append(make(row))
    broker = broker_bounds(config)
    return {
        g: GroupInputs.build(
            g,
            requests=k.get(REQUESTS.name, []),
            rebalances=k.get(REBALANCES.name, []),
            sessions=k.get(MEMBER_SESSIONS.name, []),
            transitions=k.get(TRANSITIONS.name, []),
            broker=broker,
        )
        for g, k in by.items()
    }


def test_group_inputs_equal_the_full_rows(spark: Any, audited_warehouse: Path) -> None:
    wh = audited_warehouse
    config = load_config((), NO_GX, str(wh))
    store = open_store(spark, str(wh), "auto")
    frames = {
        "requests": store.read(REQUESTS),
        "rebalances": store.read(REBALANCES),
        "member_sessions": store.read(MEMBER_SESSIONS),
        "transitions": store.read(TRANSITIONS),
    }
    table = stacked_inputs(frames).toArrow()
    expected = _reference(wh, config)
    got = {}
    for g in sorted(expected):
        import pyarrow.compute as pc

        got[g] = group_inputs(g, table.filter(pc.equal(table.column("group_id"), g)), broker_bounds(config))
    assert sorted(got) == sorted(expected)
    nested = {"protocol_names": 0, "leave_members": 0, "commit_errors": 0, "assignments": 0}
    for g, gi in expected.items():
        assert got[g] == gi, g
        for r in gi.requests:
            for k in nested:
                nested[k] += bool(getattr(r, k))
    assert all(nested.values()), f"the log exercises every nested request column: {nested}"


def test_findings_equal_the_rules_on_the_full_rows(spark: Any, audited_warehouse: Path) -> None:
    wh = audited_warehouse
    config = load_config((), NO_GX, str(wh))
    store = open_store(spark, str(wh), "auto")
    res = audit(spark, store, config, log=lambda m: None)
    # the rules read the brokers' settings the replay ran with: what the log tells, the config otherwise
    from rebalance_replay.jobs.broker_facts import broker_facts

    effective = broker_facts(spark, store, config).config
    want: list[dict[str, Any]] = []
    unsupported: dict[str, list[tuple[str, str]]] = {}
    for g, gi in sorted(_reference(wh, effective).items()):
        result = evaluate(gi, config.audit)
        want += [f.as_row() for f in result.findings]
        for rule_id, reason in result.unsupported:
            unsupported.setdefault(rule_id, []).append((g, reason))
    assert len({f["rule_id"] for f in want}) >= 15, "the incidents raise most rules"

    from rebalance_replay.transforms.audit.lifecycle import LIFECYCLE_COLUMNS

    def canon(rows: list[dict[str, Any]]) -> list[str]:
        """The rows as the rules give them: without the scheduled audit's lifecycle columns (keys,
        statuses and run times, which ``evaluate`` alone does not know)."""
        return sorted(
            json.dumps(
                {
                    **{k: v for k, v in r.items() if k not in LIFECYCLE_COLUMNS},
                    "metrics": dict(sorted(r["metrics"].items())),
                },
                sort_keys=True,
            )
            for r in rows
        )

    assert canon(res.findings) == canon(want)
    assert {k: v["groups"] for k, v in res.unsupported.items()} == {k: len(v) for k, v in unsupported.items()}
    for k, v in res.unsupported.items():
        assert v["reasons"] == list(dict.fromkeys(reason for _g, reason in unsupported[k]))
