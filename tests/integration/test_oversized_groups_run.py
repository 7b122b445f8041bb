"""Issue 29 part 3, "adversarial sizes", at small sizes through the limits: one ``run`` over two
member-id-required storms and four ordinary groups ends with exit 0 and no traceback, keeps the accounting
identity, refuses each oversized group with a one-line reason — named on the terminal, in summary.json
``refused_groups`` and on the report's overview — and replays and draws every other group whole.

* ``storm-dense``: 60 joiners within 6 s, none back: 51 members at once outgrow
  ``replay.max_group_members=50``: the replay refuses it from then on (the requests before are replayed).
* ``storm-spread``: 60 joiners over 4 minutes (about a dozen at once: replayed whole), 63 member ids on
  its page, more than ``report.max_group_members=60``: no page.

The full sizes (100,000 joiners, a 1 MB protocol metadata, 20,000 groups in an hour) are measured by
``benchmarks/bench_adversarial.py`` (benchmarks/README.md); the pure side:
tests/unit/test_adversarial_sizes.py.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from rebalance_replay.jobs.cli import main
from rebalance_replay.transforms.kafka_protocol import STATE_CHANGING_APIS
from simulator.adversarial import storm, write_logs
from tests.helpers import read_table

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ORDINARY = sorted(f"storm-{s}-neighbour-{n}" for s in ("dense", "spread") for n in ("a", "b"))


def test_a_run_refuses_each_oversized_group_in_one_line_and_goes_on_with_the_rest(
    tmp_path: Path, spark: object, capsys: pytest.CaptureFixture[str]
) -> None:
    logs, wh = tmp_path / "logs", tmp_path / "wh"
    write_logs(
        logs,
        itertools.chain(
            storm(60, group="storm-dense", spread_ms=6_000, returning=0),
            storm(60, group="storm-spread", spread_ms=240_000, returning=0, fleet_offset=1_000),
        ),
    )
    capsys.readouterr()
    limits = ["replay.max_group_members=50", "report.max_group_members=60", "report.great_expectations=false"]
    args = ["run", "--input", str(logs), "--warehouse", str(wh)]
    assert main([*args, *(x for limit in limits for x in ("--set", limit))]) == 0
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    summary = json.loads((wh / "summary.json").read_text())

    # the accounting identity, this run and the warehouse's
    for counts in (summary, summary["ingest"]["this_run"]):
        assert counts["accounting_ok"] is True
        assert counts["lines_read"] == (
            counts["requests"] + counts["quarantined"] + counts["other_api_lines"] + counts["other_lines"]
        )
    assert summary["quarantined"] == 0

    # each refused group: its stage, one line of why, on the terminal and in summary.json
    refused = {(r["group"], r["stage"]): r["reason"] for r in summary["refused_groups"]}
    assert sorted(refused) == [("storm-dense", "replay"), ("storm-spread", "report")]
    dense, spread = refused["storm-dense", "replay"], refused["storm-spread", "report"]
    assert dense.startswith("51 members at once at 2024-05-01 10:00:")
    assert dense.endswith("more than replay.max_group_members 50: not replayed from then on")
    assert (
        spread == "63 member ids, more than report.max_group_members 60: no page (its rows are in the tables)"
    )
    for (group, stage), reason in refused.items():
        assert "\n" not in reason
        assert f"{stage}: refused group {group}: {reason}" in out.splitlines()
    assert "run: this run: " in out and "2 groups refused (storm-dense, storm-spread" in out

    # every other group replayed whole and agreeing; the dense storm up to its refusal
    requests = read_table(wh / "requests")
    predictions = read_table(wh / "predictions")
    replayable: dict[str, int] = {}
    for r in requests:
        if int(r["api_key"]) in STATE_CHANGING_APIS:
            replayable[r["group_id"]] = replayable.get(r["group_id"], 0) + 1
    predicted: dict[str, int] = {}
    for p in predictions:
        predicted[p["group_id"]] = predicted.get(p["group_id"], 0) + 1
        assert not p["scored"] or p["matched"], p
    for group in [*ORDINARY, "storm-spread"]:
        assert predicted[group] == replayable[group], group
    assert 0 < predicted["storm-dense"] < replayable["storm-dense"]

    # the report: a page for every group but the refused one, which the overview names with why
    reports = wh / "reports"
    pages = {p.name.rsplit("-", 1)[0].removeprefix("group-") for p in reports.glob("group-*.html")}
    assert pages == {*ORDINARY, "storm-dense"}
    overview = (reports / "index.html").read_text()
    assert "Refused groups" in overview
    assert "no page (its rows are in the tables)" in overview
    assert "not replayed from then on" in overview
