"""A scheduled audit carries the sums behind its group fingerprints (``<warehouse>/_audit/fingerprints.json``,
:mod:`rebalance_replay.jobs.carry`): it sums only the rows each input table appended since the last run,
and the fingerprints it keeps equal the ones counted over the whole tables — after a second batch, and
after ``maintain`` compacted the files (no row changed: nothing to evaluate again)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rebalance_replay.jobs import audit as audit_job
from rebalance_replay.jobs.cli import main
from rebalance_replay.jobs.delta import open_store
from rebalance_replay.schemas import MEMBER_SESSIONS, PREDICTIONS, REBALANCES, REQUESTS, TRANSITIONS
from tests.integration.test_scheduled_audit import _log

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]


def _full_fingerprints(spark: Any, wh: Path) -> dict[str, str]:
    store = open_store(spark, str(wh), "delta-rs")
    frames = {
        t.name: store.read(t) for t in (REQUESTS, REBALANCES, MEMBER_SESSIONS, TRANSITIONS) if store.exists(t)
    }
    frames["disputes"] = audit_job.disputed(store.read(PREDICTIONS))
    return audit_job.group_fingerprints(frames)


def test_carried_fingerprints_equal_the_full_count(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    summed: list[tuple[str, int]] = []
    real = audit_job.group_sums

    def counting(frames: Any) -> dict[str, dict[str, list[int]]]:
        out = real(frames)
        summed.extend((kind, sum(n for n, _h in sums.values())) for kind, sums in out.items())
        return out

    monkeypatch.setattr(audit_job, "group_sums", counting)
    lines, _truths = _log()
    live = tmp_path / "live" / "broker-1"
    live.mkdir(parents=True)
    wh = tmp_path / "wh"
    common = ["--warehouse", str(wh), "--set", "report.great_expectations=false"]
    half = lines[len(lines) // 2][0]
    state = wh / "_audit" / "state.json"
    for cut in (half, lines[-1][0] + 1):
        (live / "kafka-request.log").write_text("".join(line + "\n" for t, line in lines if t < cut))
        assert main(["ingest", "--input", str(live.parent), *common]) == 0
        assert main(["replay", "--incremental", *common]) == 0
        summed.clear()
        assert main(["audit", *common]) == 0
        kept = {g: v["fp"] for g, v in json.loads(state.read_text())["groups"].items()}
        assert kept == _full_fingerprints(spark, wh)
    # the second audit summed the requests appended since the first, not the table
    requests = len(list(open_store(spark, str(wh), "delta-rs").read(REQUESTS).collect()))
    from_requests = [n for kind, n in summed if kind == "requests"]
    assert from_requests and 0 < from_requests[0] < requests, (summed, requests)
    carried = json.loads((wh / "_audit" / "fingerprints.json").read_text())["entries"]
    assert set(carried) >= {"fingerprint:requests", "fingerprint:disputes"}

    # a compaction changes no row: the fingerprints stand, nothing is evaluated again
    assert main(["maintain", *common]) == 0
    summed.clear()
    before = state.read_text()
    assert main(["audit", *common]) == 0
    assert [n for _kind, n in summed] == [0] * len(summed) and summed
    assert json.loads(state.read_text())["groups"] == json.loads(before)["groups"]
