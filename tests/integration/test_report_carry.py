"""The report's reading of ``predictions`` and ``requests`` carried from run to run
(``<warehouse>/_report/carry.json``): a scheduled report reads only the rows appended since the last one
and adds them to what it kept. After every batch its pages are the same bytes as those of a report that
read everything, and what it keeps is what that report keeps.

The batches cut two incident groups' log by time; the heartbeat thresholds are made small (exact ticks
up to 30 a group, 4 bins a span) so that the groups go from exact ticks to bins of seconds, then of
minutes, across the batches (the counts kept per second added up into minutes). The last batch lowers
``report.max_group_members`` below one group's member ids: what was kept was counted with another setting,
so that report reads everything again, and the group gets no page."""

from __future__ import annotations

import filecmp
import functools
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from rebalance_replay.jobs import report as report_job
from rebalance_replay.jobs.cli import main
from rebalance_replay.jobs.config import load_config
from rebalance_replay.jobs.delta import open_store
from rebalance_replay.schemas import PREDICTIONS, REQUESTS
from rebalance_replay.transforms.report import inputs
from rebalance_replay.transforms.report.model import heartbeat_bin_ms
from tests.integration.test_scheduled_audit import _log, scheduled_args

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]

#: ``report.max_group_members``: the last batch's refuses ``inc-r02-crashes`` (4 member ids)
MAX_MEMBERS = (100, 100, 100, 3)


def _same_tree(a: Path, b: Path) -> list[str]:
    """The files that differ between two report folders (or are in one only)."""
    cmp = filecmp.dircmp(a, b)
    out = [*cmp.left_only, *cmp.right_only, *cmp.funny_files]
    _, mismatch, errors = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
    return out + mismatch + errors


def test_a_carried_report_draws_what_a_full_one_draws(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(inputs, "heartbeat_bin_ms", functools.partial(heartbeat_bin_ms, max_ticks=30, bins=2))
    read: dict[str, list[int]] = {"predictions": [], "requests": []}
    count_predictions, count_connections = report_job.count_predictions, report_job.count_connections

    def counting_predictions(df: Any, *a: Any, **kw: Any) -> None:
        read["predictions"].append(df.count())
        count_predictions(df, *a, **kw)

    def counting_connections(df: Any, *a: Any, **kw: Any) -> None:
        read["requests"].append(df.count())
        count_connections(df, *a, **kw)

    monkeypatch.setattr(report_job, "count_predictions", counting_predictions)
    monkeypatch.setattr(report_job, "count_connections", counting_connections)
    lines, _truths = _log()
    live = tmp_path / "live" / "broker-1"
    live.mkdir(parents=True)
    wh = tmp_path / "wh"
    common = scheduled_args(wh)
    carry_file = wh.joinpath(*report_job.CARRY_FILE)
    n = len(lines)
    cuts = [lines[n // 8][0], lines[n // 3][0], lines[2 * n // 3][0], lines[-1][0] + 1]
    units: list[dict[str, int]] = []
    refused: list[list[str]] = []
    for k, cut in enumerate(cuts):
        (live / "kafka-request.log").write_text("".join(line + "\n" for t, line in lines if t < cut))
        assert main(["ingest", "--input", str(live.parent), *common]) == 0
        final = ["--final"] if k == len(cuts) - 1 else []
        assert main(["replay", "--incremental", *final, *common]) == 0
        assert main(["audit", *common]) == 0
        config = load_config(
            (), ["report.great_expectations=false", f"report.max_group_members={MAX_MEMBERS[k]}"], str(wh)
        )
        store = open_store(spark, str(wh), "delta-rs")
        for seen in read.values():
            seen.clear()
        carried = report_job.report(
            spark, store, config, out_dir=str(tmp_path / f"carried-{k}"), log=lambda _: None
        )
        kept = json.loads(carry_file.read_text())
        if k and MAX_MEMBERS[k] == MAX_MEMBERS[k - 1]:  # the rows appended since the last report
            assert 0 < read["predictions"][0] < store.read(PREDICTIONS).count(), read
            assert 0 < read["requests"][0] < store.read(REQUESTS).count(), read
        elif k:  # counted with another setting: all of them again
            assert read["predictions"] == [store.read(PREDICTIONS).count()], read
        shutil.move(carry_file, tmp_path / "kept.json")
        full = report_job.report(
            spark, store, config, out_dir=str(tmp_path / f"full-{k}"), log=lambda _: None
        )
        got = json.loads(carry_file.read_text())
        shutil.move(tmp_path / "kept.json", carry_file)
        assert (carried.pages, carried.groups, carried.refused) == (full.pages, full.groups, full.refused)
        assert _same_tree(tmp_path / f"carried-{k}", tmp_path / f"full-{k}") == []
        assert got == kept  # a full reading keeps what the carried one kept
        predictions = kept["entries"]["report:predictions"]["tally"]
        units.append(predictions["units"])
        refused.append(sorted(carried.refused))
    # what the batches went through: exact ticks, bins counted per second, then per minute
    assert units[:3] == [
        {"inc-r02-crashes": 1, "inc-r07-bad-session-timeout": 1},
        {"inc-r02-crashes": 1000, "inc-r07-bad-session-timeout": 1000},
        {"inc-r02-crashes": 60_000, "inc-r07-bad-session-timeout": 60_000},
    ], units
    assert units[3] == {"inc-r07-bad-session-timeout": 60_000}, units
    assert refused == [[], [], [], ["inc-r02-crashes"]], refused
    # a kept state damaged by hand (its table's version still right) is read again in full, not trusted
    damaged = json.loads(carry_file.read_text())
    damaged["entries"]["report:predictions"]["tally"] = {"agreement": "?"}
    carry_file.write_text(json.dumps(damaged))
    report_job.report(spark, store, config, out_dir=str(tmp_path / "damaged"), log=lambda _: None)
    assert _same_tree(tmp_path / "damaged", tmp_path / f"full-{len(cuts) - 1}") == []
    assert read["predictions"][-1] == store.read(PREDICTIONS).count()
