"""ConsumerProtocol bytes decoded as Spark columns, on the bronze table's own column types."""

from __future__ import annotations

from typing import Any

import pytest

from rebalance_replay.jobs.columns import (
    assignment_value,
    decoded_assignment,
    decoded_subscription,
    subscription_value,
)
from rebalance_replay.transforms.consumer_protocol import encode_assignment, encode_subscription

pytestmark = pytest.mark.spark


def test_decoded_columns(spark: Any) -> None:
    sub = encode_subscription(
        ["orders", "payments"], owned_partitions=[("orders", [0, 2])], generation_id=7, rack_id="az-1"
    )
    asg = encode_assignment([("orders", [0, 1]), ("payments", [3])])
    df = spark.createDataFrame(
        [(1, sub, asg), (2, None, None), (3, b"\x00\x09garbage", b"\x01")],
        "id int, metadata binary, assignment binary",
    )
    rows = {
        r["id"]: r
        for r in df.select(
            "id", decoded_subscription("metadata").alias("s"), decoded_assignment("assignment").alias("a")
        ).collect()
    }
    s, a = rows[1]["s"], rows[1]["a"]
    assert (s["version"], s["topics"], s["generation_id"], s["rack_id"]) == (
        3,
        ["orders", "payments"],
        7,
        "az-1",
    )
    assert [(p["topic"], p["partitions"]) for p in s["owned_partitions"]] == [("orders", [0, 2])]
    assert [(p["topic"], p["partitions"]) for p in a["partitions"]] == [("orders", [0, 1]), ("payments", [3])]
    for bad in (2, 3):  # absent (text era) or malformed bytes: nulls, no failure
        assert rows[bad]["s"]["topics"] is None and rows[bad]["a"]["partitions"] is None
    assert subscription_value(sub) == rows[1]["s"].asDict(recursive=True)
    assert assignment_value(asg) == rows[1]["a"].asDict(recursive=True)
