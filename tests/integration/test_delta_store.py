"""DeltaStore through Spark, checked against delta-rs reading the same tables directly.

Every storage test runs on both engines (the ``engine`` fixture: delta-rs, and delta-spark with Delta's
jars from Maven Central); the delta-rs engine's own machinery (task files, the log listing of the
incremental feed, stage folders, table features it refuses) only on delta-rs. Tables written by one
engine are read and appended by the other, both ways."""

from __future__ import annotations

import json
import os
from datetime import UTC, date, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pytest
from deltalake import DeltaTable
from pyspark.sql.types import StructField, StructType

from rebalance_replay.jobs.delta import (
    AddedFile,
    DeltaSparkStore,
    DeltaStore,
    HistoryUnavailableError,
    TableFeatureError,
    choose_engine,
    delta_spark_available,
    open_store,
)
from rebalance_replay.jobs.delta.spark import SNAPSHOT_PARTITIONS, _replace_where, size_snapshots
from rebalance_replay.jobs.delta.task_files import TaskFileWriter
from rebalance_replay.jobs.errors import SchemaEvolutionError, StorageError
from rebalance_replay.schemas.core import Column as C
from rebalance_replay.schemas.core import TableDef
from rebalance_replay.schemas.tables import REQUESTS

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]


D1, D2, D3 = date(2024, 5, 1), date(2024, 5, 2), date(2024, 5, 3)

TINY = TableDef(
    name="tiny",
    partition_by=("day",),
    columns=(
        C("id", "bigint", False),
        C("name", "string"),
        C("ts", "timestamp"),
        C("blob", "binary"),
        C("items", "array<struct<k:string,v:int>>"),
        C("day", "date", False),
    ),
)

TWO_KEYS = TableDef(
    name="two_keys",
    partition_by=("day", "kind"),
    columns=(C("id", "bigint", False), C("day", "date", False), C("kind", "string")),
)

FLAT = TableDef(name="flat", columns=(C("id", "bigint", False), C("note", "string")))


# --------------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------------


@pytest.fixture
def store(spark: Any, warehouse: Path, engine: str) -> DeltaStore:
    return open_store(spark, str(warehouse), engine)  # type: ignore[arg-type]


#: the delta-rs engine's own machinery
rs_only = pytest.mark.parametrize("engine", ["delta-rs"], indirect=True)


def first(store: DeltaStore) -> int:
    """The version of a table's first write: delta-spark creates the table (schema, NOT NULL, comments,
    partitioning) in a commit of its own, version 0; delta-rs creates it with the first write's files."""
    return 0 if store.engine == "delta-rs" else 1


def tiny_rows(spark: Any, ids: list[int], day: date, name: str = "n") -> Any:
    rows = [
        (
            i,
            f"{name}{i}",
            datetime(2024, 5, 1, 10, 0, 0, 123456, tzinfo=UTC),
            bytes([i % 256, 0, 255]),
            [(f"k{i}", i), (None, None)],
            day,
        )
        for i in ids
    ]
    return spark.createDataFrame(rows, TINY.spark_schema())


def delta(store: DeltaStore, table: TableDef) -> DeltaTable:
    return DeltaTable(store.path(table))


def arrow_of(store: DeltaStore, table: TableDef) -> pa.Table:
    """The table as delta-rs reads it. (A pyarrow filesystem: with delta-rs' own one the interpreter
    sometimes aborts at exit, 'terminate called without an active exception'.)"""
    fs = pafs.SubTreeFileSystem(store.path(table), pafs.LocalFileSystem())
    return delta(store, table).to_pyarrow_table(filesystem=fs)


def commits(store: DeltaStore, table: TableDef) -> int:
    return len(delta(store, table).history())


def data_files_on_disk(store: DeltaStore, table: TableDef) -> set[str]:
    out = set()
    for root, _dirs, files in os.walk(store.path(table)):
        out.update(os.path.join(root, f) for f in files if f.endswith(".parquet"))
    return out


def assert_no_stage(store: DeltaStore, table: TableDef) -> None:
    leftovers = [n for n in os.listdir(store.path(table)) if n.startswith("_stage-")]
    assert leftovers == []


def commit_adds(store: DeltaStore, table: TableDef, version: int) -> set[str]:
    log = Path(store.path(table)) / "_delta_log" / f"{version:020d}.json"
    adds = set()
    for line in log.read_text().splitlines():
        action = json.loads(line)
        if "add" in action:
            adds.add(action["add"]["path"])
    return adds


def live_paths(store: DeltaStore, table: TableDef) -> set[str]:
    return set(delta(store, table).file_uris())


def same_types(a: Any, b: Any) -> bool:
    """Same column names and types (Spark's parquet reader marks every column nullable)."""
    return [(f.name, f.dataType) for f in a.fields] == [(f.name, f.dataType) for f in b.fields]


def ids_of(df: Any) -> list[int]:
    return sorted(r["id"] for r in df.select("id").collect())


def strip_list_names(t: pa.DataType) -> pa.DataType:
    """Arrow types with list item fields unnamed (Spark writes 'element', pyarrow defaults to 'item')."""
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(strip_list_names(t.value_type))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, strip_list_names(f.type), f.nullable) for f in t])
    return t


def request_row(i: int, day: date, **overrides: Any) -> dict[str, Any]:
    """A REQUESTS row: every column null except the NOT NULL ones and a few typed ones."""
    row: dict[str, Any] = {c.name: None for c in REQUESTS.columns}
    ts = datetime(day.year, day.month, day.day, 12, 30, 15, 250000 + i, tzinfo=UTC)
    row.update(
        source_file=f"/logs/broker-1/kafka-request.log.{day.isoformat()}",
        line_no=i,
        broker_id="1",
        log_era="json",
        log_level="DEBUG",
        api_key=11,
        api_name="JOIN_GROUP",
        api_version=9,
        completion_time=ts,
        completion_ms=int(ts.timestamp() * 1000),
        arrival_ms=int(ts.timestamp() * 1000) - 5,
        group_id=f"group-{i % 3}",
        group_ids=[f"group-{i % 3}"],
        protocols=[{"name": "range", "metadata": b"\x00\x01meta", "metadata_length": 6}],
        response_assignment=bytes([1, 2, 3, i % 256]),
        total_time_ms=1.5,
        log_date=day,
    )
    row.update(overrides)
    return row


def requests_df(spark: Any, rows: list[dict[str, Any]]) -> Any:
    cols = REQUESTS.column_names
    return spark.createDataFrame([tuple(r[c] for c in cols) for r in rows], REQUESTS.spark_schema())


# --------------------------------------------------------------------------------------------------
# delta-rs engine
# --------------------------------------------------------------------------------------------------


def test_auto_engine_choice_and_reason(spark: Any, warehouse: Path) -> None:
    # a local master and a local warehouse: delta-rs (even with Delta's jars on the classpath)
    engine, why = choose_engine(spark, str(warehouse))
    assert (engine, open_store(spark, str(warehouse)).engine) == ("delta-rs", "delta-rs")
    assert "local master" in why
    assert choose_engine(spark, "s3://bucket/wh")[0] == "delta-spark"
    assert choose_engine(spark, str(warehouse), "delta-spark") == (
        "delta-spark",
        "storage.engine=delta-spark",
    )
    with pytest.raises(ValueError, match="unknown Delta engine"):
        open_store(spark, str(warehouse), "iceberg")  # type: ignore[arg-type]


def test_delta_spark_without_jars_says_how_to_get_them(spark: Any, warehouse: Path) -> None:
    if delta_spark_available(spark):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr("rebalance_replay.jobs.delta.spark.delta_spark_available", lambda _s: False)
            with pytest.raises(StorageError, match=r"spark.jars.packages=io\.delta:delta-spark_4\.2_2\.13"):
                open_store(spark, str(warehouse), "delta-spark")
    else:
        with pytest.raises(StorageError, match="Delta Lake jars"):
            open_store(spark, str(warehouse), "delta-spark")


def test_requests_round_trip(spark: Any, store: DeltaStore) -> None:
    rows = [request_row(i, D1) for i in range(1, 4)] + [request_row(i, D2) for i in range(4, 6)]
    df = requests_df(spark, rows)

    assert not store.exists(REQUESTS)
    assert store.version(REQUESTS) is None
    assert store.append(df, REQUESTS, app_id="ingest", txn_version=1) is True

    # exactly one commit, carrying the application transaction
    assert store.version(REQUESTS) == first(store)
    assert commits(store, REQUESTS) == first(store) + 1
    assert store.transaction_version(REQUESTS, "ingest") == 1
    assert_no_stage(store, REQUESTS)

    # delta-rs reads what Spark wrote: rows, types, partition values
    dt = delta(store, REQUESTS)
    table = arrow_of(store, REQUESTS)
    assert table.num_rows == 5
    for f in REQUESTS.arrow_schema():
        assert strip_list_names(table.schema.field(f.name).type) == strip_list_names(f.type), f.name
    assert table.schema.field("completion_time").type == pa.timestamp("us", tz="UTC")
    assert table.schema.field("log_date").type == pa.date32()
    assert table.schema.field("response_assignment").type == pa.binary()
    got = {r["line_no"]: r for r in table.to_pylist()}
    for r in rows:
        g = got[r["line_no"]]
        assert g["completion_time"] == r["completion_time"]  # microseconds survive, UTC
        assert g["response_assignment"] == r["response_assignment"]
        assert g["protocols"] == r["protocols"]
        assert g["group_ids"] == r["group_ids"]
        assert g["log_date"] == r["log_date"]
    assert sorted(p["log_date"] for p in dt.partitions()) == ["2024-05-01", "2024-05-02"]
    for path in dt.file_uris():
        assert f"{os.sep}log_date=" in path and "_stage-" not in path

    # per-file statistics from the parquet footers
    actions = pa.table(dt.get_add_actions(flatten=True)).to_pylist()
    assert sum(a["num_records"] for a in actions) == 5
    d1 = [a for a in actions if a["partition.log_date"] == D1]
    d2 = [a for a in actions if a["partition.log_date"] == D2]
    assert min(a["min.line_no"] for a in d1) == 1 and max(a["max.line_no"] for a in d1) == 3
    assert sum(a["null_count.client_id"] for a in d2) == 2
    # like Delta: statistics for the first 32 data columns only (delta.dataSkippingNumIndexedCols)
    assert "null_count.reason" not in actions[0]
    assert min(a["min.completion_time"] for a in d1) <= rows[0]["completion_time"]
    # (delta-spark, as Delta's writer does, keeps timestamp statistics in milliseconds: max truncated)
    last = rows[2]["completion_time"]
    assert max(a["max.completion_time"] for a in d1) >= last.replace(
        microsecond=last.microsecond // 1000 * 1000
    )

    # and Spark reads it back identically, columns in table order
    back = store.read(REQUESTS)
    assert back.columns == REQUESTS.column_names
    assert same_types(back.schema, REQUESTS.spark_schema())
    assert sorted(back.collect(), key=lambda r: r["line_no"]) == sorted(
        df.collect(), key=lambda r: r["line_no"]
    )


def test_retry_with_same_transaction_is_a_noop(spark: Any, store: DeltaStore) -> None:
    assert store.append(tiny_rows(spark, [1, 2], D1), TINY, app_id="job", txn_version=7)
    files = data_files_on_disk(store, TINY)

    assert store.append(tiny_rows(spark, [1, 2], D1), TINY, app_id="job", txn_version=7) is False
    assert store.append(tiny_rows(spark, [3], D1), TINY, app_id="job", txn_version=6) is False
    assert store.overwrite(tiny_rows(spark, [9], D1), TINY, app_id="job", txn_version=7) is False
    assert store.version(TINY) == first(store)
    assert data_files_on_disk(store, TINY) == files  # nothing written, nothing left behind
    assert_no_stage(store, TINY)

    # another app, or the next batch, commits
    assert store.append(tiny_rows(spark, [3], D2), TINY, app_id="other", txn_version=7) is True
    assert store.append(tiny_rows(spark, [4], D2), TINY, app_id="job", txn_version=8) is True
    assert store.version(TINY) == first(store) + 2
    assert store.transaction_version(TINY, "job") == 8
    assert store.transaction_version(TINY, "other") == 7
    assert store.transaction_version(TINY, "never") is None
    assert ids_of(store.read(TINY)) == [1, 2, 3, 4]


def test_overwrite_one_partition_leaves_the_others(spark: Any, store: DeltaStore) -> None:
    store.append(tiny_rows(spark, [1, 2], D1).unionByName(tiny_rows(spark, [3], D2)), TINY)
    store.append(tiny_rows(spark, [4], D3), TINY)
    before = commits(store, TINY)
    d2_files = {p for p in live_paths(store, TINY) if "day=2024-05-02" in p}

    assert store.overwrite(tiny_rows(spark, [10, 11], D1, "new"), TINY, partitions=[{"day": D1}])

    assert commits(store, TINY) == before + 1
    df = store.read(TINY)
    assert ids_of(df) == [3, 4, 10, 11]
    assert {r["name"] for r in df.where("day = DATE'2024-05-01'").collect()} == {"new10", "new11"}
    assert d2_files <= live_paths(store, TINY)  # untouched partitions keep their files
    table = arrow_of(store, TINY)
    assert sorted(table.column("id").to_pylist()) == [3, 4, 10, 11]
    assert_no_stage(store, TINY)

    # several partitions at once, one of them emptied (no rows for D3 in the new data)
    assert store.overwrite(tiny_rows(spark, [20], D2), TINY, partitions=[{"day": D2}, {"day": "2024-05-03"}])
    assert ids_of(store.read(TINY)) == [10, 11, 20]


def test_overwrite_whole_table(spark: Any, store: DeltaStore) -> None:
    store.append(tiny_rows(spark, [1], D1).unionByName(tiny_rows(spark, [2], D2)), TINY)
    assert store.overwrite(tiny_rows(spark, [5], D3), TINY, app_id="full", txn_version=1)
    assert store.version(TINY) == first(store) + 1
    assert ids_of(store.read(TINY)) == [5]
    assert arrow_of(store, TINY).num_rows == 1
    assert store.transaction_version(TINY, "full") == 1


def test_overwrite_refuses_rows_outside_the_partitions(spark: Any, store: DeltaStore) -> None:
    store.append(tiny_rows(spark, [1], D1), TINY)
    files, live = data_files_on_disk(store, TINY), live_paths(store, TINY)
    bad = tiny_rows(spark, [2], D1).unionByName(tiny_rows(spark, [3], D2))
    with pytest.raises(ValueError, match="not among the partitions being replaced"):
        store.overwrite(bad, TINY, partitions=[{"day": D1}])
    assert store.version(TINY) == first(store)
    assert live_paths(store, TINY) == live and ids_of(store.read(TINY)) == [1]
    if store.engine == "delta-rs":  # its stage is checked before anything moves into the table
        assert data_files_on_disk(store, TINY) == files
    # (delta-spark: Delta writes the files before its commit checks replaceWhere; the uncommitted
    # files stay on disk, unreferenced, until `maintain`'s VACUUM removes them)
    assert_no_stage(store, TINY)


def _check_write_counts(spark: Any, store: DeltaStore) -> None:
    """``write`` returns the rows its commit added (None: the transaction was already committed)."""
    assert (
        store.write(tiny_rows(spark, [1, 2], D1).unionByName(tiny_rows(spark, [3], D2)), TINY, "append") == 3
    )
    assert store.write(spark.createDataFrame([], TINY.spark_schema()), TINY, "append") == 0
    replaced = store.write(tiny_rows(spark, [4], D1), TINY, "overwrite", partitions=[{"day": D1}])
    assert replaced == 1
    assert store.write(tiny_rows(spark, [5, 6], D2), TINY, "append", app_id="job", txn_version=1) == 2
    assert store.write(tiny_rows(spark, [7], D2), TINY, "append", app_id="job", txn_version=1) is None
    assert ids_of(store.read(TINY)) == [3, 4, 5, 6]
    assert store.write(tiny_rows(spark, [8, 9], D3), TINY, "overwrite") == 2
    assert ids_of(store.read(TINY)) == [8, 9]
    # several files, no partitions
    flat = spark.createDataFrame([(i, None) for i in range(7)], FLAT.spark_schema()).repartition(3)
    assert store.write(flat, FLAT, "overwrite") == 7
    with pytest.raises(ValueError, match="only an overwrite"):
        store.write(tiny_rows(spark, [1], D1), TINY, "append", partitions=[{"day": D1}])


def test_write_returns_the_rows_committed(spark: Any, store: DeltaStore) -> None:
    _check_write_counts(spark, store)


def test_bad_arguments_are_refused_before_writing(spark: Any, store: DeltaStore) -> None:
    df = tiny_rows(spark, [1], D1)
    with pytest.raises(ValueError, match="together"):
        store.append(df, TINY, app_id="x")
    with pytest.raises(ValueError, match="not a partition column"):
        store.overwrite(df, TINY, partitions=[{"name": "x"}])
    with pytest.raises(ValueError, match="must not be empty"):
        store.overwrite(df, TINY, partitions=[])
    with pytest.raises(ValueError, match="lacks column"):
        store.append(df.drop("name"), TINY)
    assert not store.exists(TINY)


def test_two_partition_columns(spark: Any, store: DeltaStore) -> None:
    def rows(spec: list[tuple[int, date, str | None]]) -> Any:
        return spark.createDataFrame(spec, TWO_KEYS.spark_schema())

    store.append(rows([(1, D1, "a"), (2, D1, "b"), (3, D2, "a"), (4, D2, "b"), (5, D2, None)]), TWO_KEYS)
    parts = {(p["day"], p["kind"]) for p in delta(store, TWO_KEYS).partitions()}
    assert parts == {("2024-05-01", "a"), ("2024-05-01", "b"), ("2024-05-02", "a"), ("2024-05-02", "b"),
                     ("2024-05-02", None)}  # fmt: skip

    # specs over several columns that no single conjunction expresses
    assert store.overwrite(
        rows([(11, D1, "a"), (14, D2, "b")]),
        TWO_KEYS,
        partitions=[{"day": D1, "kind": "a"}, {"day": D2, "kind": "b"}],
    )
    assert ids_of(store.read(TWO_KEYS)) == [2, 3, 5, 11, 14]
    # a partial spec replaces every kind of that day, the null partition included
    assert store.overwrite(rows([(20, D2, None)]), TWO_KEYS, partitions=[{"day": D2}])
    assert ids_of(store.read(TWO_KEYS)) == [2, 11, 20]
    # a null partition value in a spec
    assert store.overwrite(rows([(21, D2, None)]), TWO_KEYS, partitions=[{"day": D2, "kind": None}])
    back = store.read(TWO_KEYS)
    assert sorted((r["id"], r["kind"]) for r in back.collect()) == [(2, "b"), (11, "a"), (21, None)]
    assert sorted(arrow_of(store, TWO_KEYS).column("id").to_pylist()) == [2, 11, 21]


def test_special_characters_in_partition_values(spark: Any, store: DeltaStore) -> None:
    table = TableDef("odd", (C("id", "bigint", False), C("key", "string")), partition_by=("key",))
    values = ["a:b c", "50%/x=y", "ü{[*?]}", None]
    df = spark.createDataFrame([(i, v) for i, v in enumerate(values)], table.spark_schema())
    store.append(df, table)
    back = {r["id"]: r["key"] for r in store.read(table).collect()}
    assert back == dict(enumerate(values))
    via_delta_rs = {r["id"]: r["key"] for r in arrow_of(store, table).to_pylist()}
    assert via_delta_rs == dict(enumerate(values))
    assert store.overwrite(spark.createDataFrame([(9, "50%/x=y")], table.spark_schema()), table,
                           partitions=[{"key": "50%/x=y"}])  # fmt: skip
    assert sorted(r["id"] for r in store.read(table).collect()) == [0, 2, 3, 9]


def test_empty_append_creates_the_table_and_records_the_transaction(spark: Any, store: DeltaStore) -> None:
    empty = spark.createDataFrame([], TINY.spark_schema())
    assert store.append(empty, TINY, app_id="ingest", txn_version=0) is True
    assert store.exists(TINY)
    assert store.version(TINY) == first(store)
    assert store.transaction_version(TINY, "ingest") == 0
    assert delta(store, TINY).file_uris() == []
    assert delta(store, TINY).metadata().partition_columns == ["day"]
    assert store.append(empty, TINY, app_id="ingest", txn_version=0) is False
    back = store.read(TINY)
    assert back.count() == 0 and same_types(back.schema, TINY.spark_schema())
    assert data_files_on_disk(store, TINY) == set()
    assert_no_stage(store, TINY)
    # an empty append without a transaction: one commit on delta-rs; Delta itself commits nothing for
    # an empty write with nothing to record (no transaction), so delta-spark's version stays
    assert store.append(empty, TINY) is True
    assert store.version(TINY) == first(store) + (1 if store.engine == "delta-rs" else 0)


def test_missing_table_reads_empty_with_schema(spark: Any, store: DeltaStore) -> None:
    df = store.read(REQUESTS)
    assert df.count() == 0
    assert df.schema == REQUESTS.spark_schema()
    if store.engine == "delta-rs":  # its incremental source (delta-spark reads Delta's streaming source)
        assert store.files_added_since(REQUESTS, None) == []  # type: ignore[attr-defined]
    assert store.transaction_version(REQUESTS, "x") is None


def test_unpartitioned_table(spark: Any, store: DeltaStore) -> None:
    df = spark.createDataFrame([(1, "a"), (2, None)], FLAT.spark_schema()).repartition(2)
    assert store.append(df, FLAT)
    assert store.append(spark.createDataFrame([(3, "c")], FLAT.spark_schema()), FLAT)
    assert ids_of(store.read(FLAT)) == [1, 2, 3]
    assert arrow_of(store, FLAT).num_rows == 3
    assert store.overwrite(spark.createDataFrame([(4, "d")], FLAT.spark_schema()), FLAT)
    assert ids_of(store.read(FLAT)) == [4]
    assert store.version(FLAT) == first(store) + 2


def test_not_null_violation_fails_and_leaves_nothing(spark: Any, store: DeltaStore) -> None:
    store.append(tiny_rows(spark, [1], D1), TINY)
    files = data_files_on_disk(store, TINY)
    nullable = StructType([StructField(f.name, f.dataType, True) for f in TINY.spark_schema()])
    bad = spark.createDataFrame([(None, "x", None, None, None, D1)], nullable)
    with pytest.raises(Exception, match=r"NOT NULL column tiny\.id is null"):
        store.append(bad, TINY)
    assert store.version(TINY) == first(store)
    assert data_files_on_disk(store, TINY) == files
    assert_no_stage(store, TINY)


def test_extra_columns_are_dropped_and_types_cast(spark: Any, store: DeltaStore) -> None:
    from pyspark.sql import functions as F

    df = tiny_rows(spark, [1], D1).withColumn("id", F.col("id").cast("int")).withColumn("extra", F.lit(1))
    assert store.append(df.select("extra", *reversed(TINY.column_names)), TINY)
    assert same_types(store.read(TINY).schema, TINY.spark_schema())
    assert "extra" not in arrow_of(store, TINY).column_names


def test_timestamps_are_written_as_micros_whatever_the_session_says(spark: Any, store: DeltaStore) -> None:
    import pyarrow.parquet as pq

    key = "spark.sql.parquet.outputTimestampType"
    before = spark.conf.get(key)
    spark.conf.set(key, "INT96")
    try:
        store.append(tiny_rows(spark, [1], D1), TINY)
        assert spark.conf.get(key) == "INT96"  # the session's setting is put back
    finally:
        spark.conf.set(key, before)
    (path,) = live_paths(store, TINY)
    md = pq.read_metadata(path)
    ts = next(md.schema.column(i) for i in range(md.num_columns) if md.schema.column(i).path == "ts")
    assert ts.physical_type == "INT64"
    assert arrow_of(store, TINY).column("ts").to_pylist() == [
        datetime(2024, 5, 1, 10, 0, 0, 123456, tzinfo=UTC)
    ]


def test_schema_mismatch_is_refused(spark: Any, store: DeltaStore) -> None:
    from pyspark.sql import functions as F

    store.append(tiny_rows(spark, [1], D1), TINY)
    changed = TableDef(
        TINY.name, (*TINY.columns[:1], C("name", "bigint"), *TINY.columns[2:]), TINY.partition_by
    )
    df = spark.createDataFrame([(1, 5, None, None, None, D1)], changed.spark_schema())
    with pytest.raises(ValueError, match=r"does not match its TableDef.*column name"):
        store.append(df, changed)
    assert store.version(TINY) == first(store)
    with pytest.raises(ValueError, match=r"does not match its TableDef.*column name"):
        store.read(changed)
    with pytest.raises(SchemaEvolutionError, match=r"breaking schema change.*warehouse layout migration"):
        store.append(df, changed)
    # a nullable TableDef column the table does not have yet (a newer version added it): read as null;
    # the next write adds it to the table (additive), old rows keep reading null
    grown = TableDef(TINY.name, (*TINY.columns, C("added", "string")), TINY.partition_by)
    assert [r["added"] for r in store.read(grown).collect()] == [None]
    store.append(tiny_rows(spark, [2], D1).withColumn("added", F.lit("x")), grown)
    assert sorted((r["id"], r["added"]) for r in store.read(grown).collect()) == [(1, None), (2, "x")]
    assert ids_of(store.read(TINY)) == [1, 2]  # the older TableDef still reads the table
    # a new NOT NULL column cannot be added to rows that exist: breaking, refused
    strict = TableDef(TINY.name, (*grown.columns, C("must", "bigint", False)), TINY.partition_by)
    with pytest.raises(SchemaEvolutionError, match="column must is missing from the table"):
        store.append(
            tiny_rows(spark, [3], D1).withColumn("added", F.lit("y")).withColumn("must", F.lit(1)), strict
        )


@rs_only
def test_files_added_since(spark: Any, store: DeltaStore) -> None:
    store.append(tiny_rows(spark, [1], D1).unionByName(tiny_rows(spark, [2], D2)), TINY)  # v0
    store.append(tiny_rows(spark, [3], D3), TINY)  # v1
    store.overwrite(tiny_rows(spark, [4], D1), TINY, partitions=[{"day": D1}])  # v2
    assert store.version(TINY) == 2

    table_dir = store.path(TINY)

    def abs_adds(version: int) -> set[str]:
        from urllib.parse import unquote

        return {os.path.join(table_dir, unquote(p)) for p in commit_adds(store, TINY, version)}

    everything = store.files_added_since(TINY, None)
    assert {f.path for f in everything} == live_paths(store, TINY)
    assert {(f.version, f.partition_values["day"]) for f in everything} == {(0, D2), (1, D3), (2, D1)}
    assert all(isinstance(f, AddedFile) and f.num_records == 1 and f.size_bytes > 0 for f in everything)
    assert [f.version for f in everything] == sorted(f.version for f in everything)

    since0 = store.files_added_since(TINY, 0)
    assert {f.path for f in since0} == abs_adds(1) | abs_adds(2)
    assert {f.version for f in since0} == {1, 2}
    since1 = store.files_added_since(TINY, 1)
    assert {f.path for f in since1} == abs_adds(2)
    assert store.files_added_since(TINY, 2) == []
    assert store.files_added_since(TINY, 5) == []

    # the v0 file of 2024-05-01 was replaced at v2: it is not listed any more
    replaced = abs_adds(0) - live_paths(store, TINY)
    assert len(replaced) == 1 and replaced.isdisjoint(f.path for f in everything)
    assert ids_of(store.read_files(TINY, since0)) == [3, 4]
    assert ids_of(store.read_files(TINY, [])) == []


def test_appended_since(spark: Any, store: DeltaStore) -> None:
    """The rows commits appended after a version — None (read the whole table) when one of them removed
    a file (an overwrite, a compaction) or has left the log, and always on the delta-spark engine."""
    store.append(tiny_rows(spark, [1], D1), TINY)  # v0
    store.append(tiny_rows(spark, [2], D2).unionByName(tiny_rows(spark, [3], D3)), TINY)  # v1
    store.append(tiny_rows(spark, [4], D1), TINY)  # v2
    v = store.version(TINY)
    assert v is not None
    if store.engine == "delta-spark":
        assert store.appended_since(TINY, v - 2, v) is None
        return
    since = store.appended_since(TINY, 0, 2)
    assert since is not None and ids_of(since) == [2, 3, 4]
    assert ids_of(store.appended_since(TINY, 1, 2)) == [4]  # type: ignore[arg-type]
    assert ids_of(store.appended_since(TINY, 2, 2)) == []  # type: ignore[arg-type]
    assert store.appended_since(TINY, 1, 3) is None  # not the table's current version
    store.overwrite(tiny_rows(spark, [5], D2), TINY, partitions=[{"day": D2}])  # v3 removes a file
    store.append(tiny_rows(spark, [6], D1), TINY)  # v4
    assert store.appended_since(TINY, 2, 4) is None
    assert ids_of(store.appended_since(TINY, 3, 4)) == [6]  # type: ignore[arg-type]
    _remove_commits(store, TINY, range(3, 4))
    assert store.appended_since(TINY, 2, 4) is None  # v3 has left the log


@rs_only
def test_appended_since_sees_through_a_compaction(spark: Any, store: DeltaStore) -> None:
    """``maintain``'s compaction rewrites rows without changing them (its removes are
    ``dataChange=false``): the appends after a version are still told apart while their files are live,
    and None once a compaction has folded them into other files."""
    store.append(tiny_rows(spark, [1], D1), TINY)  # v0
    store.append(tiny_rows(spark, [2], D1), TINY)  # v1: a second small file in D1
    store.append(tiny_rows(spark, [3], D2), TINY)  # v2
    done = store.maintain(TINY, retention_hours=168, target_file_bytes=1 << 20, dry_run=False)
    assert done.compacted == 2  # D1's two files, into one (v3)
    store.append(tiny_rows(spark, [4], D2), TINY)  # v4
    v = store.version(TINY)
    assert v is not None and v >= 4
    assert ids_of(store.appended_since(TINY, 2, v)) == [4]  # type: ignore[arg-type]
    assert ids_of(store.appended_since(TINY, v - 1, v)) == [4]  # type: ignore[arg-type]
    assert store.appended_since(TINY, 0, v) is None  # v1's file lives on only inside the compacted one
    store.overwrite(tiny_rows(spark, [5], D2), TINY, partitions=[{"day": D2}])  # removes rows
    assert store.appended_since(TINY, v, v + 1) is None


@pytest.mark.parametrize(
    ("feature", "refused_on"),
    [("DeletionVectors", "read"), ("ColumnMapping", "read"), ("RowTracking", "write")],
)
@rs_only
def test_unsupported_table_features_are_refused(
    spark: Any, store: DeltaStore, feature: str, refused_on: str
) -> None:
    from deltalake import TableFeatures

    store.append(tiny_rows(spark, [1], D1), TINY)
    delta(store, TINY).alter.add_feature(
        getattr(TableFeatures, feature), allow_protocol_versions_increase=True
    )
    version = store.version(TINY)
    files = data_files_on_disk(store, TINY)
    name = feature[0].lower() + feature[1:]

    if refused_on == "read":
        with pytest.raises(TableFeatureError, match=f"'tiny'.*{name}"):
            store.read(TINY)
    else:
        assert ids_of(store.read(TINY)) == [1]
    with pytest.raises(TableFeatureError, match=f"'tiny'.*{name}") as info:
        store.append(tiny_rows(spark, [2], D1), TINY)
    assert name in info.value.features
    assert store.version(TINY) == version
    assert data_files_on_disk(store, TINY) == files
    assert_no_stage(store, TINY)


@rs_only
def test_leftover_stage_folders_of_killed_writers_are_removed(spark: Any, store: DeltaStore) -> None:
    store.append(tiny_rows(spark, [1], D1), TINY)
    stale = Path(store.path(TINY)) / "_stage-deadbeef"
    (stale / "day=2024-05-01").mkdir(parents=True)
    (stale / "day=2024-05-01" / "part-0.parquet").write_bytes(b"junk")
    old = 1_000_000_000
    os.utime(stale, (old, old))
    fresh = Path(store.path(TINY)) / "_stage-concurrent"
    fresh.mkdir()
    store.append(tiny_rows(spark, [2], D1), TINY)
    assert not stale.exists()
    assert fresh.exists()  # may belong to a writer still running
    assert ids_of(store.read(TINY)) == [1, 2]


def _remove_commits(store: DeltaStore, table: TableDef, versions: range) -> None:
    """Simulate Delta's log cleanup: drop commit files older than a checkpoint."""
    delta(store, table).create_checkpoint()
    for v in versions:
        (Path(store.path(table)) / "_delta_log" / f"{v:020d}.json").unlink()


@rs_only
def test_cleaned_up_history(spark: Any, store: DeltaStore) -> None:
    store.append(tiny_rows(spark, [1], D1), TINY, app_id="job", txn_version=1)  # v0
    store.append(tiny_rows(spark, [2], D2), TINY, app_id="job", txn_version=2)  # v1
    _remove_commits(store, TINY, range(0, 1))
    store.append(tiny_rows(spark, [3], D3), TINY)  # v2

    assert store.transaction_version(TINY, "job") == 2  # from the checkpoint
    assert store.append(tiny_rows(spark, [2], D2), TINY, app_id="job", txn_version=2) is False
    with pytest.raises(HistoryUnavailableError, match="commit 0"):
        store.files_added_since(TINY, -1)
    assert [f.version for f in store.files_added_since(TINY, 0)] == [1, 2]
    # without a starting version, files whose commit is gone count from just before the oldest commit left
    assert sorted((f.version, f.partition_values["day"]) for f in store.files_added_since(TINY, None)) == [
        (0, D1),
        (1, D2),
        (2, D3),
    ]


class LogOnlySparkStore(DeltaSparkStore):
    """The delta-spark engine's Delta-log reading (plain Spark JSON/parquet reads of ``_delta_log``, for
    its idempotency check), run here against a table delta-rs wrote: only the calls that need the Delta
    jars are replaced."""

    def __init__(self, spark: Any, warehouse: str) -> None:  # no jar check
        DeltaStore.__init__(self, spark, warehouse)

    def exists(self, table: TableDef) -> bool:
        return DeltaTable.is_deltatable(self.path(table))

    def version(self, table: TableDef) -> int | None:
        return DeltaTable(self.path(table)).version() if self.exists(table) else None


@rs_only
def test_delta_spark_log_reading_without_jars(spark: Any, store: DeltaStore, warehouse: Path) -> None:
    odd = TableDef("odd_log", (C("id", "bigint", False), C("key", "string")), partition_by=("key",))
    rows = spark.createDataFrame([(1, "a b:c"), (2, None)], odd.spark_schema())
    store.append(rows, odd, app_id="a", txn_version=3)  # v0
    store.append(spark.createDataFrame([(3, "x")], odd.spark_schema()), odd, app_id="b", txn_version=1)  # v1
    store.overwrite(
        spark.createDataFrame([(4, "a b:c")], odd.spark_schema()), odd, partitions=[{"key": "a b:c"}]
    )
    log_only = LogOnlySparkStore(spark, str(warehouse))

    assert log_only.transaction_version(odd, "a") == 3
    assert log_only.transaction_version(odd, "b") == 1
    assert log_only.transaction_version(odd, "c") is None

    _remove_commits(store, odd, range(0, 2))
    assert log_only.transaction_version(odd, "a") == 3  # now only in the checkpoint


def test_replace_where_predicates() -> None:
    specs = [{"day": "2024-05-01", "kind": "it's"}, {"day": "2024-05-02", "kind": None}]
    assert _replace_where(TWO_KEYS, specs) == (
        "(`day` = DATE'2024-05-01' AND `kind` = 'it\\'s') OR (`day` = DATE'2024-05-02' AND `kind` IS NULL)"
    )


class _Conf:
    """A session's runtime settings (``spark.conf``) as ``size_snapshots`` uses them."""

    def __init__(self, **settings: str) -> None:
        self.settings = settings

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.settings.get(key, default)

    def set(self, key: str, value: str) -> None:
        self.settings[key] = value


@pytest.mark.parametrize(
    "given,expected",
    [
        ({"spark.sql.shuffle.partitions": "8"}, "8"),  # the CLI's local session
        ({"spark.sql.shuffle.partitions": "2"}, "2"),
        ({}, None),  # Spark's default 200 shuffle partitions: Delta's own 50 stay
        ({"spark.sql.shuffle.partitions": "50"}, None),
        ({"spark.sql.shuffle.partitions": "8", SNAPSHOT_PARTITIONS: "64"}, "64"),  # the session's choice
    ],
)
def test_snapshot_partitions_follow_a_small_sessions_shuffle_partitions(
    given: dict[str, str], expected: str | None
) -> None:
    session = SimpleNamespace(conf=_Conf(**given))
    size_snapshots(session)  # type: ignore[arg-type]
    assert session.conf.get(SNAPSHOT_PARTITIONS) == expected


# --------------------------------------------------------------------------------------------------
# delta-spark engine (clusters): every test above with ``engine`` runs on it in the delta-spark tier
# (``make test-delta-spark``, CI). Three delta-spark-only tests that repeated them in ``make test`` (176 s
# of its 3,421 worker-seconds, stop 52) were removed: a round trip (the retry, partition-overwrite and
# round-trip tests), a whole overwrite and an empty append (their own tests), the rows a write returns
# (``test_write_returns_the_rows_committed``, the same check).
# --------------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------------
# files the Spark tasks write themselves (delta-rs engine)
# --------------------------------------------------------------------------------------------------


def _task_write(stage: str, table: TableDef, batches: list[pa.RecordBatch]) -> list[str]:
    """What a task does: write its batches with a TaskFileWriter, report the files."""
    writer = TaskFileWriter(stage, table)
    for b in batches:
        writer.write(b)
    return [path for path, _rows in writer.close()]


def partition_stats(store: DeltaStore, table: TableDef) -> dict[str, dict[str, Any]]:
    """The Delta log's file statistics summed up per partition: rows, min, max and null count a column."""
    out: dict[str, dict[str, Any]] = {}
    for log in sorted((Path(store.path(table)) / "_delta_log").glob("*.json")):
        for line in log.read_text().splitlines():
            add = json.loads(line).get("add")
            if add is None:
                continue
            stats = json.loads(add["stats"])
            cur = out.setdefault(
                json.dumps(add["partitionValues"], sort_keys=True),
                {"n": 0, "min": {}, "max": {}, "nulls": {}},
            )
            cur["n"] += stats["numRecords"]
            for k, v in stats.get("minValues", {}).items():
                cur["min"][k] = min(cur["min"].get(k, v), v)
            for k, v in stats.get("maxValues", {}).items():
                cur["max"][k] = max(cur["max"].get(k, v), v)
            for k, v in stats.get("nullCount", {}).items():
                cur["nulls"][k] = cur["nulls"].get(k, 0) + v
    return out


def _rows_of(spark_df: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in spark_df.collect()), key=repr)


@pytest.mark.parametrize("table", [TINY, TWO_KEYS, FLAT], ids=lambda t: t.name)
@rs_only
def test_task_files_read_back_as_what_spark_writes(spark: Any, store: DeltaStore, table: TableDef) -> None:
    """Rows written by tasks (TaskFileWriter + commit_task_files) read the same, with Spark and with
    delta-rs, as the same rows appended through Spark's writer; every file has statistics."""
    if table is TINY:
        df = tiny_rows(spark, [1, 2, 3], D1).unionByName(tiny_rows(spark, [4, 5], D2))
    elif table is TWO_KEYS:
        df = spark.createDataFrame(
            [(1, D1, "a"), (2, D1, None), (3, D2, "a"), (4, D1, "a")], table.spark_schema()
        )
    else:
        df = spark.createDataFrame([(1, "a"), (2, None)], table.spark_schema())
    via_spark = TableDef(f"{table.name}_spark", table.columns, partition_by=table.partition_by)
    assert store.append(df, via_spark)
    batches = df.toArrow().to_batches(max_chunksize=2)
    stage = store.task_stage(table)
    assert stage is not None
    files = _task_write(stage, table, [b.cast(table.arrow_schema()) for b in batches])
    assert store.commit_task_files(table, stage, files, app_id="t", txn_version=1) == df.count()
    assert _rows_of(store.read(table)) == _rows_of(store.read(via_spark))
    theirs = arrow_of(store, via_spark)
    ours = arrow_of(store, table)
    assert sorted(map(repr, ours.to_pylist())) == sorted(map(repr, theirs.to_pylist()))
    for add in pa.table(delta(store, table).get_add_actions(flatten=True)).to_pylist():
        assert add["num_records"] >= 1
    # the statistics a reader skips files by: the same per partition (the files themselves differ)
    ours_stats = partition_stats(store, table)
    assert ours_stats == partition_stats(store, via_spark)
    assert all(p["min"] and p["max"] for p in ours_stats.values())
    assert not os.path.exists(stage)
    # the partition folders are Spark's
    folders = {
        os.path.relpath(os.path.dirname(p), store.path(table)) for p in data_files_on_disk(store, table)
    }
    spark_folders = {
        os.path.relpath(os.path.dirname(p), store.path(via_spark))
        for p in data_files_on_disk(store, via_spark)
    }
    assert folders == spark_folders


@rs_only
def test_task_files_only_the_listed_files_are_committed_once(spark: Any, store: DeltaStore) -> None:
    """A failed or speculative task attempt's files are in the stage but not listed: never committed.
    A second commit under the same transaction commits nothing; the stage goes either way."""
    rows = tiny_rows(spark, [1, 2], D1).toArrow().cast(TINY.arrow_schema()).to_batches()
    stage = store.task_stage(TINY)
    assert stage is not None
    kept = _task_write(stage, TINY, rows)
    _task_write(stage, TINY, rows)  # another attempt of the same task
    assert store.commit_task_files(TINY, stage, kept, app_id="ingest", txn_version=3) == 2
    assert ids_of(store.read(TINY)) == [1, 2]
    assert len(data_files_on_disk(store, TINY)) == len(kept)
    assert_no_stage(store, TINY)
    again = store.task_stage(TINY)
    assert again is not None
    assert (
        store.commit_task_files(TINY, again, _task_write(again, TINY, rows), app_id="ingest", txn_version=3)
        is None
    )
    assert ids_of(store.read(TINY)) == [1, 2]
    assert_no_stage(store, TINY)


@rs_only
def test_task_files_special_partition_values_and_not_null(spark: Any, store: DeltaStore) -> None:
    table = TableDef("odd_tasks", (C("id", "bigint", False), C("key", "string")), partition_by=("key",))
    values = ["a:b c", "50%/x=y", "ü{[*?]}", None, "\x01^\\"]
    batch = pa.RecordBatch.from_pylist(
        [{"id": i, "key": v} for i, v in enumerate(values)], schema=table.arrow_schema()
    )
    stage = store.task_stage(table)
    assert stage is not None
    store.commit_task_files(table, stage, _task_write(stage, table, [batch]))
    assert {r["id"]: r["key"] for r in store.read(table).collect()} == dict(enumerate(values))
    assert {r["id"]: r["key"] for r in arrow_of(store, table).to_pylist()} == dict(enumerate(values))
    via_spark = TableDef("odd_spark", table.columns, partition_by=table.partition_by)
    store.append(
        spark.createDataFrame([(i, v) for i, v in enumerate(values)], table.spark_schema()), via_spark
    )

    def folders(t: TableDef) -> set[str]:
        return {os.path.relpath(os.path.dirname(p), store.path(t)) for p in data_files_on_disk(store, t)}

    assert folders(table) == folders(via_spark)
    bad = pa.RecordBatch.from_pylist(
        [{"id": None, "key": "k"}], schema=pa.schema([("id", pa.int64()), ("key", pa.string())])
    )
    with pytest.raises(ValueError, match=r"NOT NULL column odd_tasks\.id is null"):
        TaskFileWriter(store.task_stage(table) or "", table).write(bad)


@rs_only
def test_task_files_row_groups_are_bounded(
    spark: Any, store: DeltaStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pyarrow.parquet as pq

    from rebalance_replay.jobs.delta import task_files

    monkeypatch.setattr(task_files, "ROW_GROUP_BYTES", 1000)
    batch = pa.RecordBatch.from_pylist(
        [{"id": i, "note": "x" * 100} for i in range(100)], schema=FLAT.arrow_schema()
    )
    stage = store.task_stage(FLAT)
    assert stage is not None
    files = _task_write(stage, FLAT, [batch.slice(i, 10) for i in range(0, 100, 10)])
    assert len(files) == 1
    md = pq.read_metadata(os.path.join(stage, files[0]))
    assert md.num_rows == 100 and md.num_row_groups == 10
    assert store.commit_task_files(FLAT, stage, files) == 100
