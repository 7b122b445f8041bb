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
from rebalance_replay.transforms.audit.routine import KEPT_FORMAT
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


def _brief_findings(wh: Path) -> list[tuple[Any, ...]]:
    from tests.helpers import read_table

    return sorted(
        (r["rule_id"], r["group_id"], r["finding_key"], r["severity"], r["status"], json.dumps(r["metrics"]))
        for r in read_table(wh / "findings")
    )


def test_a_damaged_kept_state_is_read_again_from_all_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A group's kept audit state that cannot be read (a damaged ``fingerprints.json`` entry) costs that
    group a full read, named in one line of the log, never a stack trace; its findings are the same."""
    import shutil

    lines, _truths = _log()
    live = tmp_path / "live" / "broker-1"
    live.mkdir(parents=True)
    wh, intact = tmp_path / "wh", tmp_path / "intact"
    half = lines[len(lines) // 2][0]
    for cut in (half, lines[-1][0] + 1):
        (live / "kafka-request.log").write_text("".join(line + "\n" for t, line in lines if t < cut))
        common = ["--warehouse", str(wh), "--set", "report.great_expectations=false"]
        assert main(["ingest", "--input", str(live.parent), *common]) == 0
        assert main(["replay", "--incremental", *common]) == 0
        if cut == half:
            assert main(["audit", *common]) == 0
    shutil.copytree(wh, intact)
    carried = wh / "_audit" / "fingerprints.json"
    data = json.loads(carried.read_text())
    docs = data["entries"]["kept"]["tally"]
    assert len(docs) == 2
    damaged = sorted(docs)[0]
    docs[damaged] = docs[damaged][: len(docs[damaged]) // 2]  # cut short, as a torn write leaves it
    carried.write_text(json.dumps(data))
    capsys.readouterr()
    assert main(["audit", "--warehouse", str(wh), "--set", "report.great_expectations=false"]) == 0
    out = capsys.readouterr()
    named = [line for line in (out.out + out.err).splitlines() if "cannot be read" in line]
    assert named == [
        f"audit: group {damaged}: the kept state in _audit/fingerprints.json cannot be read "
        f"(JSONDecodeError: {named[0].split('JSONDecodeError: ')[1]}"
    ], out
    assert "Traceback" not in out.out + out.err
    summary = json.loads((wh / "summary.json").read_text())["audit"]
    assert (summary["evaluated_groups"], summary["resumed_groups"]) == (2, 1)
    assert main(["audit", "--warehouse", str(intact), "--set", "report.great_expectations=false"]) == 0
    assert json.loads((intact / "summary.json").read_text())["audit"]["resumed_groups"] == 2
    assert _brief_findings(wh) == _brief_findings(intact)
    # the group evaluated in full is kept again: the next audit may resume it
    assert (
        json.loads(json.loads(carried.read_text())["entries"]["kept"]["tally"][damaged])["format"]
        == KEPT_FORMAT
    )


def test_a_resumed_group_keeps_its_disputes_and_reads_only_the_predictions_since(tmp_path: Path) -> None:
    """A heartbeat of the first batch answered REBALANCE_IN_PROGRESS where the replay predicts NONE: a
    dispute. The second audit resumes the group from its kept state, which holds that dispute, and reads
    only the predictions appended since: the state it keeps then holds the group's disputes of the whole
    ``predictions`` table, each once."""
    from rebalance_replay.transforms.audit.routine import kept_disputes
    from tests.helpers import read_table
    from tests.integration.test_scheduled_audit import R02_GROUP, scheduled_args

    lines, _truths = _log()
    half = lines[len(lines) // 2][0]
    beats = [
        k
        for k, (t, line) in enumerate(lines)
        if t < half and f'"groupId":"{R02_GROUP}"' in line and '"requestApiKeyName":"HEARTBEAT"' in line
    ]
    k = beats[len(beats) // 2]
    assert '"response":{"throttleTimeMs":0,"errorCode":0}' in lines[k][1]
    lines[k] = (lines[k][0], lines[k][1].replace('"errorCode":0}', '"errorCode":27}'))
    live = tmp_path / "live" / "broker-1"
    live.mkdir(parents=True)
    wh = tmp_path / "wh"
    common = scheduled_args(wh)
    resumed = []
    for cut in (half, lines[-1][0] + 1):
        (live / "kafka-request.log").write_text("".join(line + "\n" for t, line in lines if t < cut))
        assert main(["ingest", "--input", str(live.parent), *common]) == 0
        assert main(["replay", "--incremental", *common]) == 0
        assert main(["audit", *common]) == 0
        resumed.append(json.loads((wh / "summary.json").read_text())["audit"]["resumed_groups"])
    assert resumed == [0, 2]
    disputed = sorted(
        (r["source_file"], r["line_no"], r["api"])
        for r in read_table(wh / PREDICTIONS.name)
        if r["group_id"] == R02_GROUP and r["scored"] and not r["matched"]
    )
    assert disputed and ("HEARTBEAT" in {api for _f, _n, api in disputed})
    docs = json.loads((wh / "_audit" / "fingerprints.json").read_text())["entries"]["kept"]["tally"]
    kept = [(d.source_file, d.line_no, d.api) for d in kept_disputes(json.loads(docs[R02_GROUP]))]
    assert kept == disputed
