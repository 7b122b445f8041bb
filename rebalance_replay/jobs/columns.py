"""ConsumerProtocol bytes as Spark columns: the pure decoders of
``rebalance_replay.transforms.consumer_protocol`` wrapped as
pandas UDFs, so a query can read subscriptions and assignments straight out of the bronze table::

    from rebalance_replay.jobs.columns import decoded_assignment, decoded_subscription
    requests.select(decoded_assignment("response_assignment").alias("assignment"))
    requests.select(F.transform("protocols", lambda p: decoded_subscription(p["metadata"])))  # per entry

Malformed or absent bytes (the text era logs none) give a struct of nulls, never an error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd  # at run time: pandas_udf reads the functions' type hints

from rebalance_replay.transforms.consumer_protocol import (
    Assignment,
    Subscription,
    TopicPartitions,
    try_decode_assignment,
    try_decode_subscription,
)

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column

TOPIC_PARTITIONS = "array<struct<topic:string,partitions:array<int>>>"
SUBSCRIPTION_TYPE = (
    f"struct<version:int,topics:array<string>,owned_partitions:{TOPIC_PARTITIONS},generation_id:int,"
    "rack_id:string,user_data_length:int>"
)
ASSIGNMENT_TYPE = f"struct<version:int,partitions:{TOPIC_PARTITIONS},user_data_length:int>"


def _tp(parts: TopicPartitions) -> list[dict[str, Any]]:
    return [{"topic": t, "partitions": list(ps)} for t, ps in parts]


def subscription_value(data: bytes | None) -> dict[str, Any] | None:
    """One decoded subscription as the column's struct value (None when absent or malformed)."""
    s: Subscription | None = try_decode_subscription(data)
    if s is None:
        return None
    return {
        "version": s.version,
        "topics": list(s.topics),
        "owned_partitions": _tp(s.owned_partitions),
        "generation_id": s.generation_id,
        "rack_id": s.rack_id,
        "user_data_length": None if s.user_data is None else len(s.user_data),
    }


def assignment_value(data: bytes | None) -> dict[str, Any] | None:
    """One decoded assignment as the column's struct value (None when absent or malformed)."""
    a: Assignment | None = try_decode_assignment(data)
    if a is None:
        return None
    return {
        "version": a.version,
        "partitions": _tp(a.partitions),
        "user_data_length": None if a.user_data is None else len(a.user_data),
    }


def decoded_subscription(col: Column | str) -> Column:
    """A ConsumerProtocolSubscription bytes column → ``SUBSCRIPTION_TYPE`` struct column."""
    from pyspark.sql.functions import pandas_udf

    @pandas_udf(SUBSCRIPTION_TYPE)  # type: ignore[call-overload, untyped-decorator]
    def decode(data: pd.Series) -> pd.DataFrame:
        return pd.DataFrame.from_records(
            [subscription_value(d) or dict.fromkeys(_SUB_FIELDS) for d in data], columns=_SUB_FIELDS
        )

    result: Column = decode(col)
    return result


def decoded_assignment(col: Column | str) -> Column:
    """A ConsumerProtocolAssignment bytes column → ``ASSIGNMENT_TYPE`` struct column."""
    from pyspark.sql.functions import pandas_udf

    @pandas_udf(ASSIGNMENT_TYPE)  # type: ignore[call-overload, untyped-decorator]
    def decode(data: pd.Series) -> pd.DataFrame:
        return pd.DataFrame.from_records(
            [assignment_value(d) or dict.fromkeys(_ASSIGN_FIELDS) for d in data], columns=_ASSIGN_FIELDS
        )

    result: Column = decode(col)
    return result


_SUB_FIELDS = ["version", "topics", "owned_partitions", "generation_id", "rack_id", "user_data_length"]
_ASSIGN_FIELDS = ["version", "partitions", "user_data_length"]
