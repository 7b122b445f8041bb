"""rebalance_replay.jobs.validate on small, hand-built tables: exact agreement numbers and taxonomy, and the
Great
Expectations checkpoints (passing, and failing with the broken expectation named)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql.types import StructField, StructType

from rebalance_replay.jobs.validate import (
    OUTPUTS_SUITE,
    REQUESTS_SUITE,
    MissingTableError,
    ValidationResult,
    validate,
    validate_frames,
)
from rebalance_replay.schemas import PREDICTIONS, REBALANCES, REQUESTS, TRANSITIONS
from rebalance_replay.transforms.kafka_protocol import ApiKey

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]

T0 = 1_772_409_600_000  # 2026-03-02T00:00:00Z
DAY = date(2026, 3, 2)
FILE = "logs/b1/kafka-request.log"
VERSIONS = {"JOIN_GROUP": 7, "SYNC_GROUP": 5, "HEARTBEAT": 4, "LEAVE_GROUP": 4, "OFFSET_COMMIT": 8}


# --------------------------------------------------------------------------------------------------
# Hand-built tables
# --------------------------------------------------------------------------------------------------


class Rows:
    """Predictions rows with every column, line numbers counted up in one file."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def add(
        self,
        group: str,
        api: str,
        *,
        kinds: tuple[str, ...] = (),
        scored: bool = True,
        reason: str | None = None,
        observed_error: str | None = "NONE",
        predicted_error: str | None = None,
        **over: Any,
    ) -> dict[str, Any]:
        seq = sum(1 for r in self.rows if r["group_id"] == group)
        arrival = T0 + 1000 * len(self.rows)
        r: dict[str, Any] = dict.fromkeys(PREDICTIONS.column_names)
        r.update(
            source_file=FILE,
            line_no=len(self.rows) + 1,
            broker_id="b1",
            group_id=group,
            api=api,
            api_version=VERSIONS[api],
            seq=seq,
            member_id="m1",
            arrival_ms=arrival,
            observed_error=observed_error,
            predicted_error=predicted_error if predicted_error is not None else observed_error,
            observed_completion_ms=arrival + 2,
            predicted_completion_ms=arrival + 2,
            scored=scored,
            unscored_reason=reason,
            matched=scored and not kinds,
            mismatch_kinds=list(kinds) if scored else [],
            reconciled=False,
            log_date=DAY,
        )
        r.update(over)
        self.rows.append(r)
        return r


def build_predictions() -> list[dict[str, Any]]:
    """28 predictions, 25 scored, 19 matched (see the expected numbers in the tests)."""
    p = Rows()
    # g-a: 12 scored, 4 mismatched
    for _ in range(4):
        p.add("g-a", "JOIN_GROUP", observed_generation_id=1, predicted_generation_id=1)
    p.add(
        "g-a",
        "JOIN_GROUP",
        kinds=("generation", "leader"),
        observed_generation_id=3,
        predicted_generation_id=2,
        observed_leader="m1",
        predicted_leader="m2",
    )
    p.add(
        "g-a",
        "JOIN_GROUP",
        kinds=("member_id_format",),
        observed_member_id="c-0f8fad5b-d9cb-469f-a165-70867728950e",
        predicted_member_id="bogus",
    )
    for _ in range(4):
        p.add("g-a", "SYNC_GROUP")
    for _ in range(2):
        p.add(
            "g-a",
            "HEARTBEAT",
            kinds=("error",),
            observed_error="REBALANCE_IN_PROGRESS",
            predicted_error="NONE",
        )
    # g-b: 10 scored, 2 mismatched
    for _ in range(6):
        p.add("g-b", "HEARTBEAT")
    late = p.add("g-b", "HEARTBEAT", kinds=("completion_time",))
    late["predicted_completion_ms"] = late["observed_completion_ms"] + 3000
    p.add(
        "g-b",
        "OFFSET_COMMIT",
        observed_error=None,
        observed_member_errors=["orders-0=NONE"],
        predicted_member_errors=["orders-0=NONE"],
    )
    p.add(
        "g-b",
        "OFFSET_COMMIT",
        kinds=("member_errors",),
        observed_error=None,
        observed_member_errors=["orders-0=ILLEGAL_GENERATION", "orders-1=ILLEGAL_GENERATION"],
        predicted_member_errors=["orders-0=NONE", "orders-1=NONE"],
    )
    p.add("g-b", "LEAVE_GROUP")
    # g-c: 6 rows, 3 unscored
    p.add("g-c", "HEARTBEAT", scored=False, reason="warm_up")
    p.add("g-c", "HEARTBEAT", scored=False, reason="warm_up", predicted_error="UNKNOWN_MEMBER_ID")
    p.add(
        "g-c",
        "JOIN_GROUP",
        scored=False,
        reason="external_error",
        observed_error="NOT_COORDINATOR",
        predicted_error="NONE",
    )
    for _ in range(3):
        p.add("g-c", "HEARTBEAT")
    return p.rows


def build_requests(predictions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One requests row per prediction (same source_file:line_no), plus a FindCoordinator without group."""
    rows = []
    for pr in predictions:
        api = ApiKey[pr["api"]]
        rows.append(
            request_row(
                pr["line_no"],
                api,
                pr["api_version"],
                pr["arrival_ms"],
                pr["observed_completion_ms"],
                pr["group_id"],
            )
        )
    rows.append(request_row(len(rows) + 1, ApiKey.FIND_COORDINATOR, 3, T0, T0 + 1, None))
    return rows


def request_row(
    line_no: int, api: ApiKey, version: int, arrival: int, completion: int, group: str | None
) -> dict[str, Any]:
    r: dict[str, Any] = dict.fromkeys(REQUESTS.column_names)
    r.update(
        source_file=FILE,
        line_no=line_no,
        broker_id="b1",
        log_era="json",
        log_level="DEBUG",
        api_key=int(api),
        api_name=api.name,
        api_version=version,
        completion_time=datetime.fromtimestamp(completion / 1000, tz=UTC),
        completion_ms=completion,
        arrival_ms=arrival,
        group_id=group,
        log_date=DAY,
    )
    return r


def rebalance_row(
    group: str,
    seq: int,
    gen_from: int,
    gen_to: int | None,
    total: int | None = 100,
    join: int | None = 60,
    sync: int | None = 40,
) -> dict[str, Any]:
    r: dict[str, Any] = dict.fromkeys(REBALANCES.column_names)
    r.update(
        group_id=group,
        rebalance_seq=seq,
        generation_from=gen_from,
        generation_to=gen_to,
        started_ms=T0,
        outcome="stable",
        total_duration_ms=total,
        join_phase_ms=join,
        sync_phase_ms=sync,
        trigger="new_member",
        cooperative_follow_up=False,
        log_date=DAY,
    )
    return r


def transition_row(group: str, seq: int, generation: int, time_ms: int = T0) -> dict[str, Any]:
    r: dict[str, Any] = dict.fromkeys(TRANSITIONS.column_names)
    r.update(
        group_id=group,
        seq=seq,
        time_ms=time_ms,
        from_state="Stable",
        to_state="PreparingRebalance",
        generation_id=generation,
        cause="test",
        log_date=DAY,
    )
    return r


GOOD_REBALANCES = [
    rebalance_row("g-a", 0, 0, 1),
    rebalance_row("g-a", 1, 1, 3),
    rebalance_row("g-b", 0, 0, None, None, None, None),
]
GOOD_TRANSITIONS = [
    transition_row("g-a", 0, 0),
    transition_row("g-a", 1, 1),
    transition_row("g-a", 5, 1),
    transition_row("g-a", 9, 3),
    transition_row("g-b", 0, 7),
    transition_row("g-b", 0, 8),
]


@pytest.fixture(scope="module")
def frames(spark: Any) -> Iterator[dict[str, Any]]:
    preds = build_predictions()
    yield {
        "predictions": spark.createDataFrame(preds, PREDICTIONS.spark_schema()),
        "requests": spark.createDataFrame(build_requests(preds), REQUESTS.spark_schema()),
        "rebalances": spark.createDataFrame(GOOD_REBALANCES, REBALANCES.spark_schema()),
        "transitions": spark.createDataFrame(GOOD_TRANSITIONS, TRANSITIONS.spark_schema()),
    }


def _quiet(_: str) -> None:
    pass


def run(
    frames: dict[str, Any], gx_root: Path | None, min_agreement: float = 0.75, **over: Any
) -> ValidationResult:
    kw = {k: frames[k] for k in ("requests", "rebalances", "transitions")}
    kw.update(over)
    return validate_frames(
        frames["predictions"], min_agreement=min_agreement, gx_root=gx_root, log=_quiet, **kw
    )


# --------------------------------------------------------------------------------------------------
# Agreement numbers
# --------------------------------------------------------------------------------------------------


def test_agreement_numbers_exact(frames: dict[str, Any]) -> None:
    res = run(frames, None)
    s = res.as_summary()
    assert (s["predictions"], s["scored"], s["matched"]) == (28, 25, 19)
    assert s["unscored"] == 3
    assert s["mismatched"] == 6
    assert s["agreement"] == pytest.approx(19 / 25)
    assert s["agreement_ok"] is True  # 0.76 ≥ 0.75
    assert s["agreement_by_api"] == {
        "HEARTBEAT": pytest.approx(9 / 12),
        "JOIN_GROUP": pytest.approx(4 / 6),
        "LEAVE_GROUP": 1.0,
        "OFFSET_COMMIT": 0.5,
        "SYNC_GROUP": 1.0,
    }
    assert s["by_api"]["HEARTBEAT"] == {
        "predictions": 14,
        "scored": 12,
        "matched": 9,
        "mismatched": 3,
        "agreement": pytest.approx(0.75),
    }
    assert s["by_api"]["JOIN_GROUP"]["predictions"] == 7
    by_err = s["agreement_by_observed_error"]
    assert by_err["REBALANCE_IN_PROGRESS"] == {
        "predictions": 2,
        "scored": 2,
        "matched": 0,
        "mismatched": 2,
        "agreement": 0.0,
    }
    assert by_err["NOT_COORDINATOR"]["agreement"] is None  # nothing scored
    assert by_err["(none)"]["scored"] == 2
    assert by_err["(none)"]["matched"] == 1
    assert (by_err["NONE"]["predictions"], by_err["NONE"]["scored"], by_err["NONE"]["matched"]) == (
        23,
        21,
        18,
    )
    assert [(g["group_id"], g["mismatched"]) for g in s["top_mismatch_groups"]] == [
        ("g-a", 4),
        ("g-b", 2),
        ("g-c", 0),
    ]
    assert s["mismatch_kinds"] == {
        "error": 2,
        "generation": 1,
        "leader": 1,
        "member_id_format": 1,
        "completion_time": 1,
        "member_errors": 1,
    }
    assert next(iter(s["mismatch_kinds"])) == "error"  # most frequent first
    assert s["mismatch_kinds_by_api"] == {
        "HEARTBEAT": {"error": 2, "completion_time": 1},
        "JOIN_GROUP": {"generation": 1, "leader": 1, "member_id_format": 1},
        "OFFSET_COMMIT": {"member_errors": 1},
    }
    assert s["unscored_reasons"] == {"warm_up": 2, "external_error": 1}
    assert s["gx_success"] is None and s["data_docs"] is None  # GX skipped
    assert s["validated_tables"] == {"predictions": 28, "requests": 29, "rebalances": 3, "transitions": 6}


def test_mismatch_examples_name_row_field_and_values(frames: dict[str, Any]) -> None:
    ex = run(frames, None).examples
    assert len(ex) == 7  # one per (row, kind) here: fewer than the per-kind cap
    by_field = {(e["field"], e["ref"]): e for e in ex}
    gen = by_field[("generation", f"{FILE}:5")]
    assert (gen["api"], gen["group_id"], gen["observed"], gen["predicted"]) == ("JOIN_GROUP", "g-a", "3", "2")
    assert (
        by_field[("leader", f"{FILE}:5")]["observed"],
        by_field[("leader", f"{FILE}:5")]["predicted"],
    ) == ("m1", "m2")
    fmt = by_field[("member_id_format", f"{FILE}:6")]
    assert fmt["predicted"] == "bogus"
    err = by_field[("error", f"{FILE}:11")]
    assert (err["observed"], err["predicted"]) == ("REBALANCE_IN_PROGRESS", "NONE")
    late = by_field[("completion_time", f"{FILE}:19")]
    assert int(late["predicted"]) - int(late["observed"]) == 3000
    me = by_field[("member_errors", f"{FILE}:21")]
    assert me["observed"] == "[orders-0=ILLEGAL_GENERATION, orders-1=ILLEGAL_GENERATION]"
    assert me["predicted"] == "[orders-0=NONE, orders-1=NONE]"
    assert [e["ref"] for e in ex] == sorted((e["ref"] for e in ex), key=lambda r: int(r.rsplit(":", 1)[1]))


def test_nothing_scored_gives_null_agreement(spark: Any) -> None:
    p = Rows()
    p.add("g", "HEARTBEAT", scored=False, reason="warm_up")
    df = spark.createDataFrame(p.rows, PREDICTIONS.spark_schema())
    res = validate_frames(df, min_agreement=0.99, gx_root=None, log=_quiet)
    s = res.as_summary()
    assert (s["predictions"], s["scored"], s["matched"]) == (1, 0, 0)
    assert s["agreement"] is None
    assert s["agreement_ok"] is None
    assert s["agreement_by_api"] == {"HEARTBEAT": None}
    assert "agreement n/a" in res.format_text()


# --------------------------------------------------------------------------------------------------
# Great Expectations
# --------------------------------------------------------------------------------------------------


def test_gx_passes_writes_data_docs_and_reruns_in_the_same_context(
    frames: dict[str, Any], tmp_path: Path
) -> None:
    started = time.monotonic()
    res = run(frames, tmp_path, min_agreement=0.75)
    first_seconds = time.monotonic() - started
    s = res.as_summary()
    assert s["gx_success"] is True, res.format_text()
    assert res.gx is not None
    assert res.gx.suites[REQUESTS_SUITE] == {"success": True, "evaluated": 6, "failed": []}
    assert res.gx.suites[OUTPUTS_SUITE] == {"success": True, "evaluated": 7, "failed": []}
    docs = Path(s["data_docs"])
    assert docs.name == "index.html" and docs.is_file()
    assert docs.is_relative_to(tmp_path / "gx")
    html = docs.read_text()
    assert REQUESTS_SUITE in html and OUTPUTS_SUITE in html
    print(f"\nGX (both checkpoints) {res.gx.seconds:.1f}s; validate_frames {first_seconds:.1f}s")

    # same warehouse, stricter threshold: the suite is updated in place, and now the agreement fails
    res2 = run(frames, tmp_path, min_agreement=0.99)
    assert res2.gx is not None
    assert res2.gx_success is False
    assert res2.gx.suites[REQUESTS_SUITE]["success"] is True
    assert res2.gx.suites[OUTPUTS_SUITE]["failed"] == ["expect_column_mean_to_be_between(scored_matched)"]
    (failure,) = res2.gx.failures
    assert failure.observed_value == pytest.approx(0.76)
    assert "0.99" in (failure.description or "")
    text = res2.format_text()
    assert "outputs_contract FAILED" in text and "scored_matched" in text
    print(f"GX rerun {res2.gx.seconds:.1f}s")


def test_gx_keeps_the_last_results_of_each_suite_and_the_index_lists_only_them(
    frames: dict[str, Any], tmp_path: Path
) -> None:
    """``report.gx_keep_results``: an hourly audit checks 24 times a day; each check's results and Data Docs
    page (~180 KB) would stay forever, and the index list every one. The last ``keep`` of each suite stay,
    the index names exactly them."""
    base = tmp_path / "gx" / "uncommitted"

    def kept(suite: str) -> list[str]:
        return sorted(p.name for p in (base / "validations" / suite).glob("*/*"))

    runs: dict[str, list[str]] = {REQUESTS_SUITE: [], OUTPUTS_SUITE: []}
    for agreement in (0.75, 0.5, 0.25):  # a change each time: each is checked anew
        res = run(frames, tmp_path, min_agreement=agreement, gx_keep_results=2)
        assert res.gx is not None and res.gx.error is None
        for suite in runs:
            runs[suite] = sorted({*runs[suite], *kept(suite)})
    index = (base / "data_docs" / "local_site" / "index.html").read_text()
    for suite, seen in runs.items():
        assert len(seen) == 3, seen  # each check made a result
        assert kept(suite) == seen[1:]  # the oldest is gone, the last two stay
        pages = sorted(
            p.name for p in (base / "data_docs" / "local_site" / "validations" / suite).glob("*/*")
        )
        assert pages == seen[1:]
        assert seen[0] not in index and all(ts in index for ts in seen[1:]), suite


def test_gx_broken_requests_table_is_reported_by_name(
    spark: Any, frames: dict[str, Any], tmp_path: Path
) -> None:
    rows = build_requests(build_predictions())
    rows[0]["arrival_ms"] = rows[0]["completion_ms"] + 50  # arrival after completion
    rows[1]["api_version"] = 12  # JoinGroup v12 does not exist
    rows[12]["api_version"] = -1
    rows[13]["group_id"] = None  # a HEARTBEAT without group
    rows[14] = {**rows[15]}  # one line landed twice
    # the same path and line number an hour later: the live file after a rotation, not a duplicate
    rows[17] = {**rows[18], "completion_ms": rows[18]["completion_ms"] + 3_600_000}
    rows[17]["arrival_ms"] = rows[17]["completion_ms"] - 5
    rows[16]["broker_id"] = None  # a null key (the table schema forbids it; the contract checks anyway)
    schema = REQUESTS.spark_schema()
    nullable = StructType([StructField(f.name, f.dataType, True) for f in schema.fields])
    broken = spark.createDataFrame(rows, nullable)
    res = run(frames, tmp_path, requests=broken)
    assert res.gx is not None
    assert res.gx_success is False  # reported, not raised
    assert res.gx.suites[OUTPUTS_SUITE]["success"] is True
    failed = res.gx.suites[REQUESTS_SUITE]["failed"]
    assert sorted(failed) == sorted(
        [
            "expect_column_pair_values_a_to_be_greater_than_b(completion_ms, arrival_ms)",
            "expect_column_values_to_be_in_set(version_valid)",
            "expect_column_values_to_not_be_null(group_id)",
            "expect_compound_columns_to_be_unique(source_file, line_no, completion_ms)",
            "expect_column_values_to_be_null(missing_keys)",
        ]
    )
    by_name = {f.name: f for f in res.gx.failures}
    assert by_name["expect_column_values_to_be_in_set(version_valid)"].unexpected_count == 2
    assert (
        by_name[
            "expect_column_pair_values_a_to_be_greater_than_b(completion_ms, arrival_ms)"
        ].unexpected_count
        == 1
    )
    assert by_name["expect_column_values_to_not_be_null(group_id)"].unexpected_count == 1
    assert by_name["expect_column_values_to_be_null(missing_keys)"].examples == ["broker_id"]
    twice = by_name["expect_compound_columns_to_be_unique(source_file, line_no, completion_ms)"]
    assert twice.unexpected_count == 2  # the two copies of one line; the rotated live file's line is not one
    assert twice.examples == [{c: rows[15][c] for c in ("source_file", "line_no", "completion_ms")}]
    s = res.as_summary()
    assert s["gx_success"] is False
    assert {f["name"] for f in s["gx"]["failures"]} == set(failed)
    assert Path(s["data_docs"]).is_file()
    assert "arrival_ms ≤ completion_ms" in res.format_text()
    # the agreement numbers are unaffected
    assert (s["predictions"], s["scored"], s["matched"]) == (28, 25, 19)


def test_gx_broken_outputs_are_reported_by_name(spark: Any, frames: dict[str, Any], tmp_path: Path) -> None:
    preds = build_predictions()
    preds[1]["seq"] = preds[0]["seq"]  # duplicate (group, seq)
    rebalances = [*GOOD_REBALANCES, rebalance_row("g-c", 0, 4, 3, total=-5, join=10, sync=-15)]
    transitions = [*GOOD_TRANSITIONS, transition_row("g-a", 12, 2)]  # generation 3 → 2
    res = validate_frames(
        spark.createDataFrame(preds, PREDICTIONS.spark_schema()),
        requests=None,  # absent table: its suite is not run
        rebalances=spark.createDataFrame(rebalances, REBALANCES.spark_schema()),
        transitions=spark.createDataFrame(transitions, TRANSITIONS.spark_schema()),
        min_agreement=0.5,
        gx_root=tmp_path,
        log=_quiet,
    )
    assert res.gx is not None
    assert res.gx_success is False
    assert list(res.gx.suites) == [OUTPUTS_SUITE]
    assert sorted(res.gx.suites[OUTPUTS_SUITE]["failed"]) == sorted(
        [
            "expect_column_values_to_be_between(total_duration_ms)",
            "expect_column_values_to_be_between(sync_phase_ms)",
            "expect_column_pair_values_a_to_be_greater_than_b(generation_to, generation_from)",
            "expect_column_pair_values_a_to_be_greater_than_b("
            "transition_generation_id, previous_generation_id)",
            "expect_compound_columns_to_be_unique(prediction_group_id, prediction_seq)",
        ]
    )
    assert res.as_summary()["validated_tables"]["requests"] is None


# --------------------------------------------------------------------------------------------------
# The job entry point: tables read through the store
# --------------------------------------------------------------------------------------------------


def test_validate_reads_the_warehouse(spark: Any, frames: dict[str, Any], warehouse: Path) -> None:
    from rebalance_replay.jobs.config import load_config
    from rebalance_replay.jobs.delta import open_store

    config = load_config(overrides=["validation.min_agreement=0.7"], warehouse=str(warehouse))
    store = open_store(spark, str(warehouse), "delta-rs")
    with pytest.raises(MissingTableError, match="no predictions table"):
        validate(spark, store, config, log=_quiet)
    for table in (PREDICTIONS, REQUESTS, REBALANCES, TRANSITIONS):
        store.append(frames[table.name], table)
    lines: list[str] = []
    res = validate(spark, store, config, log=lines.append)
    s = res.as_summary()
    assert (s["predictions"], s["scored"], s["matched"]) == (28, 25, 19)
    assert s["min_agreement"] == 0.7
    assert s["gx_success"] is True, res.format_text()
    assert (
        Path(s["data_docs"]) == warehouse / "gx" / "uncommitted" / "data_docs" / "local_site" / "index.html"
    )
    assert any("GX requests_contract: ok" in line for line in lines)
    assert res.gx is not None and res.gx.checked_as_of is None
    # nothing changed since: the last check's results stand, GX does not run again
    lines.clear()
    again = validate(spark, store, config, log=lines.append)
    assert again.gx is not None and again.gx.checked_as_of is not None
    assert again.gx.as_dict()["suites"] == res.gx.as_dict()["suites"] and again.gx_success is True
    assert not any("GX requests_contract" in line for line in lines)
    assert "those results stand" in "\n".join(lines) and "the tables unchanged since" in again.format_text()
    # a table changed (a new version), or the threshold: checked again
    store.append(frames[REBALANCES.name].limit(1), REBALANCES)
    lines.clear()
    changed = validate(spark, store, config, log=lines.append)
    assert changed.gx is not None and changed.gx.checked_as_of is None
    assert any("GX outputs_contract: ok" in line for line in lines)
    stricter = load_config(overrides=["validation.min_agreement=0.71"], warehouse=str(warehouse))
    assert validate(spark, store, stricter, log=_quiet).gx.checked_as_of is None  # type: ignore[union-attr]
    # report.great_expectations: false skips GX
    config = load_config(overrides=["report.great_expectations=false"], warehouse=str(warehouse))
    res = validate(spark, store, config, log=_quiet)
    assert res.gx_success is None
    assert "skipped" in res.format_text()


def test_gx_trouble_is_reported_not_raised(frames: dict[str, Any], tmp_path: Path) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    res = run(frames, not_a_dir)
    assert res.gx is not None
    assert res.gx_success is False
    assert res.gx.error is not None
    assert res.data_docs is None
    assert "error:" in res.format_text()
    assert res.as_summary()["matched"] == 19  # the agreement part still ran
