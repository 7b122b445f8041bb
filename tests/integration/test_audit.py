"""rebalance_replay.jobs.audit end to end on a small incident log (ingest → replay → audit through the
in-process CLI):
the findings table holds the incidents' findings, summary.json counts them, a rerun changes nothing
(same Delta version, byte-identical rows), and a scheduled run split in three gives the batch findings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rebalance_replay.jobs.cli import main
from rebalance_replay.schemas import FINDINGS
from simulator.incidents import generate
from tests.helpers import read_table

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]

NO_GX = ("--set", "report.great_expectations=false")


def _findings(wh: Path) -> list[str]:
    """The findings rows, without their lifecycle columns (a scheduled audit's statuses and run times are
    its own: tests/integration/test_scheduled_audit.py)."""
    from rebalance_replay.transforms.audit.lifecycle import LIFECYCLE_COLUMNS

    rows = read_table(wh / FINDINGS.name)
    return sorted(
        json.dumps({k: v for k, v in r.items() if k not in LIFECYCLE_COLUMNS}, sort_keys=True, default=str)
        for r in rows
    )


def _version(wh: Path) -> int:
    from deltalake import DeltaTable

    return int(DeltaTable(str(wh / FINDINGS.name)).version())


@pytest.fixture(scope="module")
def incident_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("incidents") / "logs"
    generate(out, seed=7, rules=["R02", "R07"], healthy_groups=1)
    return out


def test_run_finds_the_incidents_and_a_rerun_changes_nothing(
    spark: Any, incident_logs: Path, warehouse: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--input", str(incident_logs), "--warehouse", str(warehouse)]) == 0
    out = capsys.readouterr().out
    assert "R02 session-timeout-eviction" in out and "R07 session-timeout-out-of-bounds" in out
    rows = read_table(warehouse / FINDINGS.name)
    got = sorted((r["rule_id"], r["group_id"], r["severity"]) for r in rows)
    assert got == [
        ("R02", "inc-r02-crashes", "warning"),
        ("R07", "inc-r07-bad-session-timeout", "critical"),
    ]
    r02 = next(r for r in rows if r["rule_id"] == "R02")
    assert sorted(r02["client_ids"]) == ["consumer-inc-r02-crashes-2", "consumer-inc-r02-crashes-3"]
    assert r02["evidence"] and r02["evidence"][0]["api"] in ("HEARTBEAT", "OFFSET_COMMIT", "JOIN_GROUP")
    # the cost is the caused rebalances' durations (the rebalances table's) added up
    durations = {
        r["rebalance_seq"]: r["total_duration_ms"]
        for r in read_table(warehouse / "rebalances")
        if r["group_id"] == "inc-r02-crashes"
    }
    caused = sorted(set(r02["rebalance_seqs"]))
    assert caused and all(durations[seq] and durations[seq] > 0 for seq in caused)
    assert dict(r02["metrics"])["rebalance_time_caused_ms"] == float(sum(durations[seq] for seq in caused))
    summary = json.loads((warehouse / "summary.json").read_text())
    assert summary["findings"] == {"R02": 1, "R07": 1}
    assert summary["audit"]["gx"]["success"] is True
    before, version = _findings(warehouse), _version(warehouse)

    assert main(["audit", "--warehouse", str(warehouse)]) == 0
    assert "up to date" in capsys.readouterr().out
    assert _version(warehouse) == version and _findings(warehouse) == before

    # a subset of rules re-evaluates every group and keeps only those rules' findings
    assert main(["audit", "--warehouse", str(warehouse), "--rules", "R07", *NO_GX]) == 0
    assert [json.loads(r)["rule_id"] for r in _findings(warehouse)] == ["R07"]


@pytest.mark.slow
def test_scheduled_run_in_three_parts_equals_one_batch_run(
    spark: Any, incident_logs: Path, tmp_path: Path
) -> None:
    import gzip

    lines: list[str] = []
    for f in sorted(incident_logs.glob("broker-1/*.gz")):
        lines += gzip.decompress(f.read_bytes()).decode().splitlines(keepends=True)
    live = tmp_path / "live" / "broker-1"
    live.mkdir(parents=True)
    sched = tmp_path / "scheduled"
    args = ["--set", "replay.late_tolerance_ms=0", *NO_GX]
    for k, cut in enumerate((len(lines) // 3, 2 * len(lines) // 3, len(lines))):
        (live / "kafka-request.log").write_text("".join(lines[:cut]))  # the live log grows
        assert main(["ingest", "--input", str(live.parent), "--warehouse", str(sched), *args]) == 0
        assert main(["replay", "--incremental", "--warehouse", str(sched), *args]) == 0
        assert main(["audit", "--warehouse", str(sched), *args]) == 0, f"part {k + 1}"
    batch = tmp_path / "batch"
    assert main(["run", "--input", str(live.parent), "--warehouse", str(batch), *args]) == 0
    assert _findings(batch), "the incidents are found"
    assert _findings(sched) == _findings(batch)
