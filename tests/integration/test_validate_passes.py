"""validate's agreement tables, computed in two passes over ``predictions`` (one aggregate every count
table is summed from, one over the mismatch kinds), equal — values and key order, i.e. the bytes of
``summary.json`` — what one Spark query per table gives (the reference below), on random predictions
with tied groups, null observed errors, null unscored reasons and unknown mismatch kinds."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from rebalance_replay.jobs.validate import MISSING, TOP_GROUPS, _count_aggs, _counts, validate_frames
from rebalance_replay.schemas import PREDICTIONS
from tests.integration.test_validate import Rows

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]

APIS = ("HEARTBEAT", "JOIN_GROUP", "SYNC_GROUP", "LEAVE_GROUP", "OFFSET_COMMIT")
KINDS = ("error", "generation", "leader", "completion_time", "member_errors", "zz_model_anomaly")


def _random_rows(seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    p = Rows()
    groups = [f"g-{i:02d}" for i in range(14)]  # more than TOP_GROUPS, with ties
    for _ in range(400):
        scored = rng.random() < 0.8
        kinds = tuple(sorted(rng.sample(KINDS, rng.choice((1, 2))))) if rng.random() < 0.15 else ()
        p.add(
            rng.choice(groups),
            rng.choice(APIS),
            kinds=kinds if scored else (),
            scored=scored,
            reason=None if scored else rng.choice(("warm_up", "external_error", None)),
            observed_error=rng.choice(("NONE", "NONE", "REBALANCE_IN_PROGRESS", "UNKNOWN_MEMBER_ID", None)),
            observed_generation_id=rng.choice((1, 2, None)),
            predicted_generation_id=rng.choice((1, 2, None)),
        )
    return p.rows


def _reference(preds: Any) -> dict[str, Any]:
    """One Spark query per table (the tables' definitions)."""
    from pyspark.sql import functions as F

    by_api = {r["api"]: _counts(r) for r in preds.groupBy("api").agg(*_count_aggs()).orderBy("api").collect()}
    err = F.coalesce(F.col("observed_error"), F.lit(MISSING)).alias("observed_error")
    by_error = {
        r["observed_error"]: _counts(r)
        for r in preds.groupBy(err).agg(*_count_aggs()).orderBy("observed_error").collect()
    }
    groups = (
        preds.groupBy("group_id")
        .agg(*_count_aggs())
        .withColumn("mismatched", F.col("scored") - F.col("matched"))
        .orderBy(F.desc("mismatched"), F.asc("group_id"))
        .limit(TOP_GROUPS)
        .collect()
    )
    reasons = {
        r["reason"]: int(r["count"])
        for r in preds.filter(~F.col("scored"))
        .groupBy(F.coalesce(F.col("unscored_reason"), F.lit(MISSING)).alias("reason"))
        .count()
        .orderBy(F.desc("count"), "reason")
        .collect()
    }
    return {
        "by_api": by_api,
        "agreement_by_observed_error": by_error,
        "top_mismatch_groups": [{"group_id": r["group_id"], **_counts(r)} for r in groups],
        "unscored_reasons": reasons,
    }


@pytest.mark.parametrize("seed", [1, 2])
def test_tables_equal_one_query_per_table(spark: Any, seed: int) -> None:
    df = spark.createDataFrame(_random_rows(seed), PREDICTIONS.spark_schema())
    s = validate_frames(df, min_agreement=0.5, gx_root=None, log=lambda m: None).as_summary()
    want = _reference(df)
    assert len(want["top_mismatch_groups"]) == TOP_GROUPS and len(want["unscored_reasons"]) == 3
    for key, value in want.items():
        assert json.dumps(s[key]) == json.dumps(value), key
    assert s["predictions"] == 400 and s["scored"] == sum(v["scored"] for v in want["by_api"].values())
    assert "zz_model_anomaly" in s["mismatch_kinds"] and s["mismatch_examples"]
