"""A scheduled ``validate`` counts only the rows appended since the last one and adds the tallies it kept
(``<warehouse>/_validate/state.json``): its summary — agreement, taxonomy, examples, every Great
Expectations count and example — equals a count of the whole tables from scratch after every run:
appends, a run with nothing new, a line landed twice (its key repeats one counted before: counted again
in full), an overwrite (not an append: counted again in full), a compaction (no row changes: carried)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from rebalance_replay.jobs.validate import ValidationResult, validate, validate_frames
from rebalance_replay.schemas import PREDICTIONS, REBALANCES, REQUESTS, TRANSITIONS
from tests.integration.test_validate import GOOD_REBALANCES, GOOD_TRANSITIONS, build_requests
from tests.integration.test_validate_passes import _random_rows

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]


def _comparable(res: ValidationResult) -> dict[str, Any]:
    s = res.as_summary()
    for key in ("validate_seconds", "data_docs", "gx"):
        s.pop(key)
    assert res.gx is not None
    s["gx"] = {"suites": res.gx.suites, "failures": [f.as_dict() for f in res.gx.failures]}
    return s


def _from_scratch(spark: Any, store: Any, tmp: Path) -> ValidationResult:
    shutil.rmtree(tmp, ignore_errors=True)
    return validate_frames(
        store.read(PREDICTIONS),
        requests=store.read(REQUESTS),
        rebalances=store.read(REBALANCES),
        transitions=store.read(TRANSITIONS),
        min_agreement=0.7,
        gx_root=tmp,
        log=lambda m: None,
    )


def test_carried_counts_equal_a_count_from_scratch(spark: Any, tmp_path: Path) -> None:
    from rebalance_replay.jobs.config import load_config
    from rebalance_replay.jobs.delta import open_store

    warehouse = tmp_path / "wh"
    config = load_config(overrides=["validation.min_agreement=0.7"], warehouse=str(warehouse))
    store = open_store(spark, str(warehouse), "delta-rs")
    preds = _random_rows(3)
    requests = build_requests(preds)[:-1]  # one request a prediction, same file and line
    store.append(spark.createDataFrame(GOOD_REBALANCES, REBALANCES.spark_schema()), REBALANCES)
    store.append(spark.createDataFrame(GOOD_TRANSITIONS, TRANSITIONS.spark_schema()), TRANSITIONS)

    def land(p: list[dict[str, Any]], r: list[dict[str, Any]]) -> None:
        store.append(spark.createDataFrame(p, PREDICTIONS.spark_schema()), PREDICTIONS)
        store.append(spark.createDataFrame(r, REQUESTS.spark_schema()), REQUESTS)

    def check(carried: tuple[str, ...]) -> ValidationResult:
        lines: list[str] = []
        res = validate(spark, store, config, log=lines.append)
        said = {
            part
            for part in ("agreement", "requests_contract", "outputs_contract")
            for line in lines
            if line.startswith((f"validate: {part}: counted", f"validate: GX {part}: counted"))
        }
        assert said == set(carried), lines
        assert _comparable(res) == _comparable(_from_scratch(spark, store, tmp_path / "scratch"))
        return res

    land(preds[:150], requests[:150])
    check(())  # the first run counts everything
    assert (warehouse / "_validate" / "state.json").is_file()
    land(preds[150:300], requests[150:300])
    res = check(("agreement", "requests_contract", "outputs_contract"))
    assert res.predictions == 300 and res.mismatch_kinds and res.examples
    # the live file again after a rotation: the same path and line numbers, an hour later
    later = [
        {**r, "completion_ms": r["completion_ms"] + 3_600_000, "arrival_ms": r["arrival_ms"] + 3_600_000}
        for r in requests[:20]
    ]
    land(preds[300:350], later)
    res = check(("agreement", "requests_contract", "outputs_contract"))
    assert res.gx_success is True
    # a line landed twice: its key was counted before, the contract is counted again in full and fails
    land(preds[350:380], [requests[5]])
    res = check(("agreement", "outputs_contract"))
    assert res.gx is not None
    assert [f.name for f in res.gx.failures] == [
        "expect_compound_columns_to_be_unique(source_file, line_no, completion_ms)"
    ]
    # an overwrite is not an append: counted in full
    store.overwrite(spark.createDataFrame(preds[:380], PREDICTIONS.spark_schema()), PREDICTIONS)
    check(())
    # the lines of another file: a new segment, carried
    mid = 380 + (len(preds) - 380) // 2
    rotated = [{**r, "source_file": r["source_file"] + ".2"} for r in requests]
    land(preds[380:mid], rotated[380:mid])
    check(("agreement", "outputs_contract", "requests_contract"))
    # `maintain` compacts the small files the runs left: no row changes, the carry goes on
    for table in (PREDICTIONS, REQUESTS):
        done = store.maintain(table, retention_hours=168, target_file_bytes=1 << 30, dry_run=False)
        assert done.compacted > 1, table.name
    land(preds[mid:], rotated[mid:])
    check(("agreement", "outputs_contract", "requests_contract"))
