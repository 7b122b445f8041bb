"""Self-consistency, not fidelity: the simulator's corpus (answered by the product's own coordinator
model) through the product as a user runs it: lines rendered with a 10 ms clock and shuffled ties,
written as broker files, `rebalance-replay run` with the default configuration (plus the broker's
group.max.size where the scenario sets it). A semantic bug of the model sits on both sides and cannot
show here; agreement with Kafka is tested in ``tests/differential`` and ``tests/realkafka``."""

from __future__ import annotations

from pathlib import Path

import pytest

from rebalance_replay.jobs.cli import main
from simulator.fidelity import render_coarse, scenario_configs
from tests.helpers import read_table

pytestmark = pytest.mark.spark


def test_coarse_clock_logs_through_run_agree(tmp_path: Path, spark: object) -> None:
    configs = scenario_configs(0)
    groups = {
        "default": [c for c in configs if c.coordinator.group_max_size == 2**31 - 1],
        "capped": [c for c in configs if c.coordinator.group_max_size != 2**31 - 1],
    }
    scored = matched = total = 0
    wrong: list[tuple[str, str]] = []
    for name, cfgs in groups.items():
        logs, wh = tmp_path / name / "logs", tmp_path / name / "wh"
        for broker, lines in render_coarse(cfgs, 10, 0).items():
            (logs / broker).mkdir(parents=True)
            (logs / broker / "kafka-request.log").write_text("\n".join(lines) + "\n")
        extra = (
            []
            if name == "default"
            else ["--set", f"broker.group.max.size={cfgs[0].coordinator.group_max_size}"]
        )
        assert main(["ingest", "--input", str(logs), "--warehouse", str(wh), *extra]) == 0
        assert main(["replay", "--warehouse", str(wh), *extra]) == 0
        predictions = read_table(wh / "predictions")
        total += len(predictions)
        scored += sum(p["scored"] for p in predictions)
        matched += sum(p["matched"] for p in predictions)
        wrong += [(p["group_id"], p["api"]) for p in predictions if not p["matched"]]
    assert total > 1_000 and scored == total
    # every answer agrees. Until stop 33 exactly three answers of s0-held disagreed: a member's rejoin and
    # its session's deadline fall in one 10 ms step of the coarse clock, which hid that the rejoin came
    # first; since stop 34's replay ordering (a connection's requests kept in order by lowering a late
    # line, then the leader mends, then a clamp; and the held-join inference) the rejoin is replayed first
    assert (scored - matched, sorted(set(wrong))) == (0, []), (matched, scored, wrong)
