"""The neutral schema language: columns with a small type grammar, convertible to Spark and Arrow.

Type grammar (a subset of Spark DDL): ``string``, ``boolean``, ``int``, ``bigint``, ``double``,
``binary``, ``date``, ``timestamp``, ``array<T>``, ``struct<name:T,...>``, ``map<string,T>``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - typing only
    import pyarrow as pa
    from pyspark.sql.types import DataType, StructType


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    nullable: bool = True
    doc: str = ""


@dataclass(frozen=True)
class TableDef:
    """A table: its name (also its folder under the warehouse), columns, partitioning and purpose."""

    name: str
    columns: tuple[Column, ...]
    partition_by: tuple[str, ...] = ()
    doc: str = ""
    properties: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        names = [c.name for c in self.columns]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"table {self.name} names a column twice: {', '.join(dupes)}")
        missing = [p for p in self.partition_by if p not in names]
        if missing:
            raise ValueError(f"table {self.name} is partitioned by unknown column(s) {', '.join(missing)}")

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]

    def column(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(f"table {self.name} has no column {name!r}")

    def spark_schema(self) -> StructType:
        from pyspark.sql.types import StructField, StructType

        return StructType(
            [StructField(c.name, spark_type(c.type), c.nullable, {"comment": c.doc}) for c in self.columns]
        )

    def conform(self, row: Mapping[str, Any]) -> str | None:
        """Why ``row`` cannot be written to this table (the first column whose value does not fit its
        type, e.g. ``correlation_id: 2147483648 is out of range for int32``), or None."""
        checks = self._checks()
        for name, value in row.items():
            check = checks.get(name)
            if check is not None and value is not None:
                problem = check(value)
                if problem is not None:
                    return f"{name}{'' if problem.startswith(('[', '.')) else ': '}{problem}"
        return None

    def _checks(self) -> dict[str, Check]:
        cached = _CHECKS.get(self.name)
        if cached is None:
            cached = {c.name: value_check(c.type) for c in self.columns}
            _CHECKS[self.name] = cached
        return cached

    def arrow_schema(self) -> pa.Schema:
        import pyarrow as pa

        return pa.schema([pa.field(c.name, arrow_type(c.type), c.nullable) for c in self.columns])

    def markdown(self) -> str:
        """The table as a Markdown section (used to generate docs/tables.md)."""
        lines = [f"### `{self.name}`", "", self.doc, ""]
        if self.partition_by:
            lines += [f"Partitioned by: {', '.join(f'`{p}`' for p in self.partition_by)}", ""]
        lines += ["| column | type | nullable | meaning |", "|---|---|---|---|"]
        for c in self.columns:
            lines.append(f"| `{c.name}` | `{c.type}` | {'yes' if c.nullable else 'no'} | {c.doc} |")
        return "\n".join(lines) + "\n"


Check = Callable[[Any], "str | None"]
_CHECKS: dict[str, dict[str, Check]] = {}


def split_top_level(s: str, sep: str = ",") -> list[str]:
    """Split ``s`` on ``sep`` outside ``<...>``."""
    parts: list[str] = []
    depth = 0
    cur: list[str] = []
    for ch in s:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if cur:
        parts.append("".join(cur).strip())
    return parts


def _inner(t: str, prefix: str) -> str:
    return t[len(prefix) : -1].strip()


def _struct_fields(t: str) -> list[tuple[str, str]]:
    out = []
    for part in split_top_level(_inner(t, "struct<")):
        name, _, typ = part.partition(":")
        out.append((name.strip(), typ.strip()))
    return out


def spark_type(t: str) -> DataType:
    from pyspark.sql import types as T

    t = t.strip()
    simple: dict[str, Any] = {
        "string": T.StringType,
        "boolean": T.BooleanType,
        "int": T.IntegerType,
        "bigint": T.LongType,
        "double": T.DoubleType,
        "binary": T.BinaryType,
        "date": T.DateType,
        "timestamp": T.TimestampType,
    }
    if t in simple:
        return simple[t]()  # type: ignore[no-any-return]
    if t.startswith("array<"):
        return T.ArrayType(spark_type(_inner(t, "array<")), True)
    if t.startswith("map<"):
        k, v = split_top_level(_inner(t, "map<"))
        return T.MapType(spark_type(k), spark_type(v), True)
    if t.startswith("struct<"):
        return T.StructType([T.StructField(n, spark_type(ft), True) for n, ft in _struct_fields(t)])
    raise ValueError(f"unknown column type {t!r}")


def arrow_type(t: str) -> pa.DataType:
    import pyarrow as pa

    t = t.strip()
    simple = {
        "string": pa.string(),
        "boolean": pa.bool_(),
        "int": pa.int32(),
        "bigint": pa.int64(),
        "double": pa.float64(),
        "binary": pa.binary(),
        "date": pa.date32(),
        "timestamp": pa.timestamp("us", tz="UTC"),
    }
    if t in simple:
        return simple[t]
    if t.startswith("array<"):
        return pa.list_(arrow_type(_inner(t, "array<")))
    if t.startswith("map<"):
        k, v = split_top_level(_inner(t, "map<"))
        return pa.map_(arrow_type(k), arrow_type(v))
    if t.startswith("struct<"):
        return pa.struct([pa.field(n, arrow_type(ft)) for n, ft in _struct_fields(t)])
    raise ValueError(f"unknown column type {t!r}")


def arrow_table(schema: pa.Schema, n: int, columns: Mapping[str, Any]) -> pa.Table:
    """A table of ``n`` rows in ``schema`` from ``columns`` (name → array, any subset of the schema's
    names, cast to its types); every other column null."""
    import pyarrow as pa

    arrays = [
        (a if a.type == f.type else a.cast(f.type))
        if (a := columns.get(f.name)) is not None
        else pa.nulls(n, f.type)
        for f in schema
    ]
    return pa.Table.from_arrays(arrays, schema=schema)


# ---------------------------------------------------------------------------------------------------
# Value checks: a row that passes ``TableDef.conform`` converts to the Arrow/Spark schema without error
# ---------------------------------------------------------------------------------------------------
_INT_RANGES = {"int": (-(2**31), 2**31 - 1), "bigint": (-(2**63), 2**63 - 1)}
_EXACT_DOUBLE_INT = 2**53  # Arrow refuses integers a double cannot hold exactly


def show_value(v: Any, limit: int = 40) -> str:
    """A value as a reason can quote it: JSON-like, truncated."""
    text = repr(v) if not isinstance(v, str) else '"' + v + '"'
    return text if len(text) <= limit else text[: limit - 1] + "…"


def value_check(t: str) -> Check:
    """A function telling why a Python value cannot be stored in a column of type ``t`` (None: it can).
    Nulls are accepted (nullability is the writer's concern)."""
    t = t.strip()
    if t in _INT_RANGES:
        lo, hi = _INT_RANGES[t]

        def check_int(v: Any) -> str | None:
            if v is None or (type(v) is int and lo <= v <= hi):
                return None
            if type(v) is not int:
                return f"{show_value(v)} is not an integer"
            return f"{show_value(v)} is out of range for {'int32' if t == 'int' else 'int64'}"

        return check_int
    simple: dict[str, tuple[type, ...]] = {
        "string": (str,),
        "boolean": (bool,),
        "binary": (bytes, bytearray),
        "date": (date,),
        "timestamp": (datetime,),
    }
    if t in simple:
        kinds = simple[t]

        def check_simple(v: Any) -> str | None:
            if v is None or isinstance(v, kinds):
                return None
            return f"{show_value(v)} is not a {t}"

        return check_simple
    if t == "double":

        def check_double(v: Any) -> str | None:
            if v is None or type(v) is float:
                return None
            if type(v) is int and -_EXACT_DOUBLE_INT <= v <= _EXACT_DOUBLE_INT:
                return None
            return f"{show_value(v)} is not a double"

        return check_double
    if t.startswith("array<"):
        element = value_check(_inner(t, "array<"))

        def check_array(v: Any) -> str | None:
            if v is None:
                return None
            if not isinstance(v, list | tuple):
                return f"{show_value(v)} is not an array"
            for i, e in enumerate(v):
                problem = element(e)
                if problem is not None:
                    return f"[{i}]: {problem}"
            return None

        return check_array
    if t.startswith("map<"):
        k, val = (value_check(x) for x in split_top_level(_inner(t, "map<")))

        def check_map(v: Any) -> str | None:
            if v is None:
                return None
            items = v.items() if isinstance(v, dict) else v
            for key, value in items:
                problem = k(key) or val(value)
                if problem is not None:
                    return f"[{show_value(key)}]: {problem}"
            return None

        return check_map
    if t.startswith("struct<"):
        fields = [(n, value_check(ft)) for n, ft in _struct_fields(t)]

        def check_struct(v: Any) -> str | None:
            if v is None:
                return None
            if not isinstance(v, dict):
                return f"{show_value(v)} is not an object"
            for name, check in fields:
                problem = check(v.get(name))
                if problem is not None:
                    return f".{name}: {problem}"
            return None

        return check_struct
    raise ValueError(f"unknown column type {t!r}")
