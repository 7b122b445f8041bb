"""Partition values: Python values, Delta log strings and hive-style folder names of one table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date, datetime
from typing import Any
from urllib.parse import unquote

from rebalance_replay.schemas.core import TableDef

_HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
#: one partition: column → its value as a Delta log string (None: null)
PartitionSpec = dict[str, str | None]
_PARTITION_TYPES = ("string", "date", "int", "bigint", "boolean")


def _partition_type(table: TableDef, name: str) -> str:
    if name not in table.partition_by:
        raise ValueError(
            f"{name!r} is not a partition column of table {table.name!r} "
            f"(partitioned by {', '.join(table.partition_by) or 'nothing'})"
        )
    return table.column(name).type.strip()


def check_partition_types(table: TableDef) -> None:
    for name in table.partition_by:
        t = table.column(name).type.strip()
        if t not in _PARTITION_TYPES:
            raise ValueError(
                f"table {table.name!r}: partition column {name!r} has type {t}; "
                f"supported partition types are {', '.join(_PARTITION_TYPES)}"
            )


def _typed_partition_value(ctype: str, value: Any) -> Any:
    """A partition value (Python value, or its string form in a Delta log / folder name) as Python."""
    if value is None:
        return None
    if ctype == "string":
        return str(value)
    if ctype == "date":
        if isinstance(value, datetime):
            raise ValueError(f"a date partition value must be a date, not a datetime: {value!r}")
        if isinstance(value, date):
            return value
        return date.fromisoformat(str(value)[:10])
    if ctype in ("int", "bigint"):
        if isinstance(value, bool):
            raise ValueError(f"an integer partition value must not be a bool: {value!r}")
        return int(value)
    if ctype == "boolean":
        if isinstance(value, bool):
            return value
        s = str(value).strip().lower()
        if s in ("true", "false"):
            return s == "true"
        raise ValueError(f"not a boolean partition value: {value!r}")
    raise ValueError(f"unsupported partition column type {ctype}")


def delta_partition_string(ctype: str, value: Any) -> str | None:
    """Delta's serialized form of a partition value (PROTOCOL.md 'Partition Value Serialization')."""
    v = _typed_partition_value(ctype, value)
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, date):
        return v.isoformat()
    return str(v)


def normalize_specs(table: TableDef, partitions: Sequence[Mapping[str, Any]]) -> list[PartitionSpec]:
    """Partition specs as {column: Delta string} dicts, validated against the table."""
    if isinstance(partitions, Mapping):
        raise ValueError("partitions must be a sequence of mappings, e.g. [{'log_date': date(2024, 5, 1)}]")
    if not partitions:
        raise ValueError("partitions must not be empty; pass partitions=None to replace the whole table")
    specs: list[PartitionSpec] = []
    for spec in partitions:
        if not spec:
            raise ValueError("a partition spec must name at least one partition column")
        specs.append({k: delta_partition_string(_partition_type(table, k), v) for k, v in spec.items()})
    return specs


def spec_matches(spec: Mapping[str, str | None], values: Mapping[str, str | None]) -> bool:
    return all(values.get(k) == v for k, v in spec.items())


def stage_partition_values(table: TableDef, rel_dir: str) -> dict[str, str | None]:
    """Delta partition strings from the hive-style folders Spark wrote (``a=1/b=x``)."""
    parts = [p for p in rel_dir.split("/") if p]
    if [p.split("=", 1)[0] for p in parts] != list(table.partition_by):
        raise RuntimeError(f"unexpected partition folder {rel_dir!r} for table {table.name!r}")
    out: dict[str, str | None] = {}
    for p in parts:
        name, raw = p.split("=", 1)
        value = unquote(raw)
        out[name] = (
            None if value == _HIVE_NULL else delta_partition_string(table.column(name).type.strip(), value)
        )
    return out


#: what Spark escapes in a partition folder name (``ExternalCatalogUtils.escapePathName``, not Windows)
_ESCAPED = frozenset(
    [
        *map(chr, range(0x01, 0x20)),
        '"',
        "#",
        "%",
        "'",
        "*",
        "/",
        ":",
        "=",
        "?",
        "\\",
        "\x7f",
        "{",
        "[",
        "]",
        "^",
    ]
)


def hive_folder(table: TableDef, values: Mapping[str, Any]) -> str:
    """The folder Spark writes a partition's files into (``a=1/b=x``), for the partition columns' values
    (Python values; None or an empty string: Hive's default partition); the inverse of
    :func:`stage_partition_values`."""
    parts = []
    for name in table.partition_by:
        text = delta_partition_string(_partition_type(table, name), values[name])
        escaped = "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in text or "")
        parts.append(f"{name}={escaped or _HIVE_NULL}")
    return "/".join(parts)


def typed_values(table: TableDef, values: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in values.items():
        ctype = table.column(k).type.strip() if k in table.column_names else "string"
        try:
            out[k] = _typed_partition_value(ctype, v)
        except ValueError:
            out[k] = v
    return out
