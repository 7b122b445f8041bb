"""Delta per-file statistics (``numRecords``, min/max, null counts) read from parquet footers."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any

from rebalance_replay.schemas.core import TableDef

#: string statistics longer than this are left out (a truncated max would not be an upper bound)
_MAX_STATS_STRING = 256

# --------------------------------------------------------------------------------------------------
# Parquet footer statistics (Delta's per-file "stats")
# --------------------------------------------------------------------------------------------------


def _ts_stat(value: Any, *, upper: bool) -> str | None:
    """Delta timestamp stats are ISO-8601 UTC with millisecond precision: floor the min, ceil the max."""
    if isinstance(value, int):  # raw int64 micros
        value = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=value)
    if not isinstance(value, datetime):
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    value = value.astimezone(UTC)
    extra = value.microsecond % 1000
    if extra:
        value -= timedelta(microseconds=extra)
        if upper:
            value += timedelta(milliseconds=1)
    return str(value.strftime("%Y-%m-%dT%H:%M:%S.")) + f"{value.microsecond // 1000:03d}Z"


def _stat_value(ctype: str, value: Any, *, upper: bool) -> Any:
    """A parquet min/max as Delta stats JSON, or None to leave it out."""
    if value is None:
        return None
    if ctype in ("int", "bigint"):
        return int(value) if isinstance(value, int) and not isinstance(value, bool) else None
    if ctype == "double":
        f = float(value)
        return None if math.isnan(f) or math.isinf(f) else f
    if ctype == "boolean":
        return bool(value)
    if ctype == "date":
        if isinstance(value, datetime):
            return value.date().isoformat()
        if isinstance(value, date):
            return value.isoformat()
        return None
    if ctype == "timestamp":
        return _ts_stat(value, upper=upper)
    if ctype == "string":
        if isinstance(value, bytes):
            try:
                value = value.decode("utf-8")
            except UnicodeDecodeError:
                return None
        return value if isinstance(value, str) and len(value) <= _MAX_STATS_STRING else None
    return None  # binary and complex types: no min/max


def stats_columns(table: TableDef, config: Mapping[str, str | None]) -> list[str]:
    """The data columns Delta collects statistics for: ``delta.dataSkippingStatsColumns`` if set, else
    the first ``delta.dataSkippingNumIndexedCols`` (default 32; -1 = all) columns."""
    data_cols = [c.name for c in table.columns if c.name not in table.partition_by]
    explicit = config.get("delta.dataSkippingStatsColumns")
    if explicit:
        wanted = {n.strip().strip("`") for n in explicit.split(",")}
        return [c for c in data_cols if c in wanted]
    try:
        n = int(config.get("delta.dataSkippingNumIndexedCols") or 32)
    except ValueError:
        n = 32
    return data_cols if n < 0 else data_cols[:n]


def file_stats(local_path: str, table: TableDef, columns: Sequence[str]) -> tuple[int, str]:
    """(numRecords, Delta stats JSON) from a parquet file's footer, for the given top-level columns."""
    import pyarrow.parquet as pq

    md = pq.read_metadata(local_path)
    types = {name: table.column(name).type.strip() for name in columns}
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, int] = {}
    # top-level primitive columns only: their parquet leaf path is the column name itself
    leaves = {md.schema.column(i).path: i for i in range(md.num_columns)}
    for name, ctype in types.items():
        idx = leaves.get(name)
        if idx is None:
            continue
        lo: Any = None
        hi: Any = None
        nc: int | None = 0
        minmax_ok = md.num_row_groups > 0
        for rg in range(md.num_row_groups):
            chunk = md.row_group(rg).column(idx)
            st = chunk.statistics
            if st is None:
                nc = None
                minmax_ok = False
                continue
            if nc is not None:
                nc = nc + int(st.null_count) if st.has_null_count else None
            if chunk.num_values == (st.null_count if st.has_null_count else -1):
                continue  # an all-null row group has no min/max and does not need one
            if not st.has_min_max:
                minmax_ok = False
                continue
            try:
                lo = st.min if lo is None or st.min < lo else lo
                hi = st.max if hi is None or st.max > hi else hi
            except TypeError:
                minmax_ok = False
        if nc is not None:
            nulls[name] = nc
        if minmax_ok and lo is not None:
            smin = _stat_value(ctype, lo, upper=False)
            smax = _stat_value(ctype, hi, upper=True)
            if smin is not None and smax is not None:
                mins[name] = smin
                maxs[name] = smax
    stats = {"numRecords": md.num_rows, "minValues": mins, "maxValues": maxs, "nullCount": nulls}
    return int(md.num_rows), json.dumps(stats, separators=(",", ":"))


# --------------------------------------------------------------------------------------------------
