"""Delta table features and schema drift the delta-rs engine cannot honour, found before it uses a table."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rebalance_replay.schemas.core import TableDef

if TYPE_CHECKING:  # pragma: no cover - typing only
    from deltalake import DeltaTable


# Table features
# --------------------------------------------------------------------------------------------------

#: reader features the delta-rs path honours: the files it lists are plain parquet files to read whole
_READER_FEATURES_OK = frozenset({"timestampNtz"})
#: writer features the delta-rs path honours outright (appendOnly: delta-rs refuses data removals itself)
_WRITER_FEATURES_OK = frozenset({"appendOnly", "timestampNtz", "changeDataFeed"})
#: writer features that are harmless while unused (no invariant, constraint, generated/identity column)
_WRITER_FEATURES_IF_UNUSED = frozenset(
    {"invariants", "checkConstraints", "generatedColumns", "identityColumns"}
)


def _field_metadata_keys(schema_json: Mapping[str, Any]) -> set[str]:
    keys: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            meta = node.get("metadata")
            if isinstance(meta, dict):
                keys.update(meta)
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(schema_json)
    return keys


def _features_in_use(dt: DeltaTable) -> tuple[set[str], set[str]]:
    """(reader features, writer features) of the table that actually matter for its files."""
    proto = dt.protocol()
    config = dict(dt.metadata().configuration or {})
    meta_keys = _field_metadata_keys(json.loads(dt.schema().to_json()))
    column_mapping = config.get("delta.columnMapping.mode", "none").lower() not in ("", "none")

    reader: set[str] = set()
    if proto.min_reader_version >= 3:
        reader.update(proto.reader_features or [])
    elif proto.min_reader_version == 2 and column_mapping:
        reader.add("columnMapping")

    writer: set[str] = set()
    wv = proto.min_writer_version
    if wv >= 7:
        writer.update(proto.writer_features or [])
    else:  # legacy protocol versions imply their features; count those in use
        if wv >= 2:
            writer.add("appendOnly")
            if any(k == "delta.invariants" for k in meta_keys):
                writer.add("invariants")
        if wv >= 3 and any(k.startswith("delta.constraints.") for k in config):
            writer.add("checkConstraints")
        if wv >= 4:
            writer.add("changeDataFeed")
            if "delta.generationExpression" in meta_keys:
                writer.add("generatedColumns")
        if wv >= 5 and column_mapping:
            writer.add("columnMapping")
        if wv >= 6 and any(k.startswith("delta.identity.") for k in meta_keys):
            writer.add("identityColumns")
    # writer features that only matter when used
    in_use = {
        "invariants": "delta.invariants" in meta_keys,
        "checkConstraints": any(k.startswith("delta.constraints.") for k in config),
        "generatedColumns": "delta.generationExpression" in meta_keys,
        "identityColumns": any(k.startswith("delta.identity.") for k in meta_keys),
    }
    writer = {f for f in writer if f not in _WRITER_FEATURES_IF_UNUSED or in_use[f]}
    return reader, writer


def unsupported_features(dt: DeltaTable, *, write: bool, overwrite: bool = False) -> list[str]:
    reader, writer = _features_in_use(dt)
    bad = {f for f in reader if f not in _READER_FEATURES_OK}
    if write:
        ok = _READER_FEATURES_OK | _WRITER_FEATURES_OK
        bad.update(f for f in writer if f not in ok)
        config = dict(dt.metadata().configuration or {})
        if overwrite and config.get("delta.appendOnly", "false").lower() == "true":
            bad.add("appendOnly (delta.appendOnly=true forbids overwrites)")
    return sorted(bad)


# --------------------------------------------------------------------------------------------------
# Schema checks
# --------------------------------------------------------------------------------------------------


def _loose_type(t: Any) -> Any:
    """A Delta schema type (JSON) without metadata and nested nullability."""
    if isinstance(t, dict):
        out: dict[str, Any] = {}
        for k, v in t.items():
            if k in ("metadata", "nullable", "containsNull", "valueContainsNull"):
                continue
            out[k] = _loose_type(v)
        return out
    if isinstance(t, list):
        return [_loose_type(v) for v in t]
    return t


def schema_problems(dt: DeltaTable, table: TableDef, *, for_read: bool = False) -> list[str]:
    """How the table's schema disagrees with the TableDef. For reads only what breaks reading counts:
    a column of another type, other partition columns (a TableDef column the table lacks reads as null)."""
    have = {f["name"]: f for f in json.loads(dt.schema().to_json())["fields"]}
    return fields_problems(have, list(dt.metadata().partition_columns), table, for_read=for_read)


def wanted_fields(table: TableDef) -> dict[str, dict[str, Any]]:
    """The TableDef's columns as Delta schema fields (JSON), by name."""
    from deltalake import Schema

    return {f["name"]: f for f in json.loads(Schema.from_arrow(table.arrow_schema()).to_json())["fields"]}


def additive_fields(have: Mapping[str, Any], table: TableDef) -> list[dict[str, Any]]:
    """The TableDef's nullable columns the table lacks (a newer version added them): the additive change
    the next write makes to the table (old rows read them as null)."""
    return [f for name, f in wanted_fields(table).items() if name not in have and f.get("nullable", True)]


def fields_problems(
    have: Mapping[str, Any], parts: Sequence[str], table: TableDef, *, for_read: bool = False
) -> list[str]:
    """:func:`schema_problems` on the table's fields (Delta schema JSON, by name) and partition columns."""
    want = wanted_fields(table)
    problems: list[str] = []
    for name, f in want.items():
        if name not in have:
            if not for_read:
                problems.append(f"column {name} is missing from the table")
            continue
        if _loose_type(have[name]["type"]) != _loose_type(f["type"]):
            problems.append(
                f"column {name} is {json.dumps(have[name]['type'])} in the table, "
                f"{json.dumps(f['type'])} in the TableDef"
            )
        if not for_read and not have[name].get("nullable", True) and f.get("nullable", True):
            problems.append(f"column {name} is NOT NULL in the table but nullable in the TableDef")
    for name, f in have.items():
        if not for_read and name not in want and not f.get("nullable", True):
            problems.append(f"NOT NULL column {name} of the table is not in the TableDef")
    if list(parts) != list(table.partition_by):
        problems.append(f"table is partitioned by {list(parts)}, the TableDef by {list(table.partition_by)}")
    return problems


def breaking_change_message(table: TableDef, path: str, problems: Sequence[str]) -> str:
    """One line: what breaks, and the migration that must make such a change."""
    return (
        f"Delta table {table.name!r} at {path} does not match its TableDef: {'; '.join(problems)} — a "
        "breaking schema change, which only a warehouse layout migration may make "
        "(rebalance_replay/jobs/warehouse.py MIGRATIONS; docs/delta.md#schema-evolution): run the "
        "rebalance-replay that wrote this warehouse, or re-ingest into a new --warehouse"
    )
