"""The broker facts' pass over ``requests`` carried from run to run (``<warehouse>/_broker/observed.json``):
a scheduled run reads only the requests appended since the last one and adds what they tell to what it
kept; the observation equals a pass over the whole table after every batch (versions, eras, clients,
KIP-848 answers, every JoinGroup row) and so does the ``broker`` summary made from it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rebalance_replay.jobs import broker_facts as facts_job
from rebalance_replay.jobs.cli import main
from rebalance_replay.jobs.config import load_config
from rebalance_replay.jobs.delta import open_store
from rebalance_replay.schemas import REQUESTS
from tests.integration.test_scheduled_audit import _log

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]


def test_carried_observation_equals_a_full_pass(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    read: list[int] = []
    real = facts_job._observe_rows

    def counting(req: Any) -> Any:
        read.append(req.count())
        return real(req)

    monkeypatch.setattr(facts_job, "_observe_rows", counting)
    lines, _truths = _log()
    live = tmp_path / "live" / "broker-1"
    live.mkdir(parents=True)
    wh = tmp_path / "wh"
    cuts = [lines[len(lines) // 3][0], lines[2 * len(lines) // 3][0], lines[-1][0] + 1]
    for k, cut in enumerate(cuts):
        (live / "kafka-request.log").write_text("".join(line + "\n" for t, line in lines if t < cut))
        assert main(["ingest", "--input", str(live.parent), "--warehouse", str(wh)]) == 0
        config = load_config((), [], str(wh))
        store = open_store(spark, str(wh), "delta-rs")
        read.clear()
        got = facts_job.broker_facts(spark, store, config)
        total = store.read(REQUESTS).count()
        if k:  # the rows appended since the last run, not the table
            assert read and 0 < read[0] < total, (read, total)
        full = real(store.read(REQUESTS))
        carried = facts_job._Observed.from_json(
            json.loads((wh / "_broker" / "observed.json").read_text())["entries"]["observed"]["tally"]
        )
        assert carried == full
        assert full.joins, "the log has JoinGroup rows"
        evidence = facts_job.load_evidence(str(wh))
        assert got.summary == facts_job.resolve(config, evidence, full)
