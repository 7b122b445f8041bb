"""The single schema definition: Spark and Arrow schemas agree, and the docs are generated from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from rebalance_replay.schemas import ALL_TABLES, Column, TableDef
from rebalance_replay.schemas.core import arrow_type, spark_type
from rebalance_replay.schemas.tables import tables_markdown


def test_docs_are_current() -> None:
    docs = Path(__file__).resolve().parents[2] / "docs" / "tables.md"
    assert docs.read_text(encoding="utf-8") == tables_markdown(), "run: python -m rebalance_replay.schemas"


@pytest.mark.parametrize("table", ALL_TABLES, ids=lambda t: t.name)
def test_spark_and_arrow_schemas_match(table: TableDef) -> None:
    spark = table.spark_schema()
    arrow = table.arrow_schema()
    assert [f.name for f in spark.fields] == [f.name for f in arrow] == table.column_names
    for c in table.columns:
        assert spark[c.name].nullable == c.nullable == arrow.field(c.name).nullable
        assert c.doc, f"{table.name}.{c.name} has no description"
    assert all(p in table.column_names for p in table.partition_by)


def test_type_grammar() -> None:
    t = "array<struct<a:string,b:array<int>,c:map<string,bigint>>>"
    assert spark_type(t).simpleString() == "array<struct<a:string,b:array<int>,c:map<string,bigint>>>"
    assert str(arrow_type(t)) == "list<item: struct<a: string, b: list<item: int32>, c: map<string, int64>>>"
    with pytest.raises(ValueError, match="unknown column type"):
        spark_type("decimal(10,2)")


def test_duplicate_and_partition_columns_rejected() -> None:
    with pytest.raises(ValueError, match="names a column twice"):
        TableDef("t", (Column("a", "int"), Column("a", "string")))
    with pytest.raises(ValueError, match="partitioned by unknown"):
        TableDef("t", (Column("a", "int"),), partition_by=("b",))
