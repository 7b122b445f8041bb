"""Validate: how often does the coordinator model predict what the broker answered — and are the tables
sound? Reads ``predictions`` (and ``requests``, ``rebalances``, ``transitions`` when present).

Agreement (computed with Spark over ``predictions``; the per-row rules live in
``rebalance_replay.transforms.validation``):

* overall ``agreement = matched / scored``; **None when nothing is scored** (no evidence either way — the
  text summary prints ``n/a``, and the ``outputs_contract`` agreement expectation fails);
* per API, per observed error, the groups with the most mismatches;
* the mismatch taxonomy: rows per mismatch kind, per API × kind, a few example rows
  (``source_file:line_no``, API, field, observed vs predicted) and the unscored rows per reason.

Great Expectations 1.x (file context under ``<warehouse>/gx/``, Data Docs in
``<warehouse>/gx/uncommitted/data_docs/local_site/index.html``, analytics off, no network), one
checkpoint per suite:

* ``requests_contract`` on ``requests``: the row keys (``source_file, line_no, broker_id, api_key,
  api_name, api_version, completion_ms, arrival_ms``) are not null (one expectation: the derived
  ``missing_keys``, naming a row's null keys, is null); ``api_name`` is a kept API;
  ``arrival_ms ≤ completion_ms``; ``version_valid`` (derived: ``0 ≤ api_version ≤ MAX_API_VERSION`` of the
  row's API) is true; ``group_id`` is not null for the five classic group APIs; ``(source_file, line_no)``
  is unique.
* ``outputs_contract`` on one frame that stacks the three outputs (each row fills only its own table's
  columns, and column expectations ignore nulls): the mean of ``scored_matched`` (1/0 on scored
  predictions) — i.e. the agreement — is ≥ ``validation.min_agreement``; rebalance ``total/join/sync``
  durations ≥ 0; ``generation_to ≥ generation_from``; in ``transitions`` each group's ``generation_id``
  ≥ the previous one (``lag`` over the group ordered by ``seq, time_ms``); ``(group_id, seq)`` unique in
  ``predictions``. An absent table leaves its expectations vacuously true.
* ``findings_contract`` on the audit's ``findings`` (when the table exists; ``audit`` also runs it right
  after writing the table): every finding has evidence rows, ``window_start_ms ≤ window_end_ms``,
  ``severity`` in info/warning/critical, ``confidence`` in [0, 1], ``rule_id`` is a registered rule's.

A failed expectation does not fail the job (exit 0): it is reported (``gx_success``, ``gx.failures``) and
shown in Data Docs. ``report.great_expectations: false`` skips GX (``gx_success`` and ``data_docs`` None).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from rebalance_replay.jobs.errors import MissingTableError
from rebalance_replay.schemas import FINDINGS, PREDICTIONS, REBALANCES, REQUESTS, TRANSITIONS
from rebalance_replay.schemas.core import TableDef
from rebalance_replay.transforms.kafka_protocol import MAX_API_VERSION, STATE_CHANGING_APIS, ApiKey
from rebalance_replay.transforms.validation import MISMATCH_KINDS

if TYPE_CHECKING:  # pragma: no cover - typing only
    from pyspark.sql import Column, DataFrame, SparkSession

    from rebalance_replay.jobs.config import Config
    from rebalance_replay.jobs.delta import DeltaStore

__all__ = [
    "FINDINGS_SUITE",
    "OUTPUTS_SUITE",
    "REQUESTS_SUITE",
    "GxFailure",
    "GxOutcome",
    "MissingTableError",
    "ValidationResult",
    "findings_contract_frame",
    "outputs_contract_frame",
    "requests_contract_frame",
    "run_gx",
    "validate",
    "validate_frames",
]

REQUESTS_SUITE = "requests_contract"
OUTPUTS_SUITE = "outputs_contract"
FINDINGS_SUITE = "findings_contract"
TOP_GROUPS = 10
EXAMPLES_PER_KIND = 3
MAX_EXAMPLES = 20
PARTIAL_UNEXPECTED = 5  # unexpected values GX keeps per failed expectation
MISSING = "(none)"  # key for a null observed error / unscored reason

#: request columns that must never be null
REQUEST_KEYS = (
    "source_file",
    "line_no",
    "broker_id",
    "api_key",
    "api_name",
    "api_version",
    "completion_ms",
    "arrival_ms",
)
KEPT_API_NAMES = tuple(sorted(a.name for a in ApiKey))
GROUP_API_NAMES = tuple(sorted(a.name for a in STATE_CHANGING_APIS))

Log = Callable[[str], object]


# --------------------------------------------------------------------------------------------------
# Result
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GxFailure:
    """One failed expectation, named so a person can find it in Data Docs."""

    suite: str
    expectation: str  # e.g. expect_column_pair_values_a_to_be_greater_than_b
    columns: tuple[str, ...]
    description: str | None
    unexpected_count: int | None
    observed_value: Any
    examples: list[Any]
    exception: str | None = None

    @property
    def name(self) -> str:
        return f"{self.expectation}({', '.join(self.columns)})"

    def as_dict(self) -> dict[str, Any]:
        return {
            "suite": self.suite,
            "expectation": self.expectation,
            "columns": list(self.columns),
            "name": self.name,
            "description": self.description,
            "unexpected_count": self.unexpected_count,
            "observed_value": self.observed_value,
            "examples": self.examples,
            "exception": self.exception,
        }

    def format(self) -> str:
        what = self.description or self.name
        if self.exception:
            detail = f"raised {self.exception}"
        elif self.unexpected_count is not None:
            detail = f"{self.unexpected_count} unexpected"
            if self.examples:
                detail += f", e.g. {', '.join(str(e) for e in self.examples[:3])}"
        else:
            detail = f"observed {self.observed_value!r}"
        return f"{self.suite}: {what} [{self.name}]: {detail}"


@dataclass
class GxOutcome:
    """What the GX checkpoints said."""

    success: bool
    suites: dict[str, dict[str, Any]]  # suite -> {success, evaluated, failed}
    failures: list[GxFailure]
    data_docs: str | None
    seconds: float
    error: str | None = None  # GX itself failed (the job still succeeds)

    def as_dict(self) -> dict[str, Any]:
        return {
            "success": self.success,
            "suites": self.suites,
            "failures": [f.as_dict() for f in self.failures],
            "data_docs": self.data_docs,
            "seconds": round(self.seconds, 2),
            "error": self.error,
        }


def _ratio(matched: int, scored: int) -> float | None:
    return matched / scored if scored else None


@dataclass
class ValidationResult:
    """Agreement numbers, the mismatch taxonomy and the GX outcome of one validate run."""

    predictions: int
    scored: int
    matched: int
    min_agreement: float
    by_api: dict[str, dict[str, Any]]  # api -> {predictions, scored, matched, mismatched, agreement}
    by_observed_error: dict[str, dict[str, Any]]  # observed error (or "(none)") -> same keys
    top_groups: list[dict[str, Any]]  # [{group_id, predictions, scored, matched, mismatched, agreement}]
    mismatch_kinds: dict[str, int]  # kind -> rows with that kind
    mismatch_kinds_by_api: dict[str, dict[str, int]]
    unscored_reasons: dict[str, int]
    examples: list[dict[str, Any]]  # [{ref, api, group_id, field, observed, predicted}]
    tables: dict[str, int | None]  # rows per table read (None: absent)
    gx: GxOutcome | None = None
    seconds: float = 0.0

    @property
    def agreement(self) -> float | None:
        """matched / scored; None when nothing was scored."""
        return _ratio(self.matched, self.scored)

    @property
    def agreement_ok(self) -> bool | None:
        a = self.agreement
        return None if a is None else a >= self.min_agreement

    @property
    def gx_success(self) -> bool | None:
        return None if self.gx is None else self.gx.success

    @property
    def data_docs(self) -> str | None:
        return None if self.gx is None else self.gx.data_docs

    def as_summary(self) -> dict[str, Any]:
        """The validate keys of ``summary.json`` (``agreement`` is null when nothing was scored)."""
        return {
            "predictions": self.predictions,
            "scored": self.scored,
            "matched": self.matched,
            "unscored": self.predictions - self.scored,
            "mismatched": self.scored - self.matched,
            "agreement": self.agreement,
            "min_agreement": self.min_agreement,
            "agreement_ok": self.agreement_ok,
            "agreement_by_api": {api: v["agreement"] for api, v in self.by_api.items()},
            "by_api": self.by_api,
            "agreement_by_observed_error": self.by_observed_error,
            "top_mismatch_groups": self.top_groups,
            "mismatch_kinds": self.mismatch_kinds,
            "mismatch_kinds_by_api": self.mismatch_kinds_by_api,
            "unscored_reasons": self.unscored_reasons,
            "mismatch_examples": self.examples,
            "validated_tables": self.tables,
            "data_docs": self.data_docs,
            "gx_success": self.gx_success,
            "gx": None if self.gx is None else self.gx.as_dict(),
            "validate_seconds": round(self.seconds, 2),
        }

    def format_text(self) -> str:
        """A short human summary for the terminal."""

        def pct(v: float | None) -> str:
            return "n/a" if v is None else f"{100 * v:.2f}%"

        ok = {None: "nothing scored", True: "ok", False: "BELOW"}[self.agreement_ok]
        lines = [
            f"validate: {self.predictions} predictions, {self.scored} scored, {self.matched} matched: "
            f"agreement {pct(self.agreement)} (min {pct(self.min_agreement)}: {ok})"
        ]
        if self.by_api:
            parts = [
                f"{api} {pct(v['agreement'])} ({v['matched']}/{v['scored']})"
                for api, v in self.by_api.items()
            ]
            lines.append("  by API: " + ", ".join(parts))
        if self.mismatch_kinds:
            lines.append("  mismatches: " + ", ".join(f"{k} {n}" for k, n in self.mismatch_kinds.items()))
        if self.unscored_reasons:
            lines.append("  unscored: " + ", ".join(f"{k} {n}" for k, n in self.unscored_reasons.items()))
        worst = [g for g in self.top_groups if g["mismatched"]][:3]
        if worst:
            lines.append("  top groups: " + ", ".join(f"{g['group_id']} ({g['mismatched']})" for g in worst))
        for e in self.examples[:3]:
            lines.append(
                f"  e.g. {e['ref']} {e['api']} {e['field']}: "
                f"observed {e['observed']}, predicted {e['predicted']}"
            )
        if self.gx is None:
            lines.append("  Great Expectations: skipped (report.great_expectations=false)")
        else:
            state = "ok" if self.gx.success else "FAILED"
            suites = ", ".join(
                f"{name} {'ok' if s['success'] else 'FAILED'} ({s['evaluated']} expectations)"
                for name, s in self.gx.suites.items()
            )
            lines.append(f"  Great Expectations: {state} in {self.gx.seconds:.1f}s: {suites or '-'}")
            if self.gx.error:
                lines.append(f"    error: {self.gx.error}")
            for f in self.gx.failures[:5]:
                lines.append(f"    {f.format()}")
            if self.gx.data_docs:
                lines.append(f"  Data Docs: {self.gx.data_docs}")
        return "\n".join(lines)


# --------------------------------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------------------------------


def _read_optional(store: DeltaStore, table: TableDef) -> DataFrame | None:
    return store.read(table) if store.exists(table) else None


def validate(spark: SparkSession, store: DeltaStore, config: Config, *, log: Log = print) -> ValidationResult:
    """Read the warehouse's tables through ``store`` and validate them (see the module docstring).

    Raises:
        MissingTableError: there is no ``predictions`` table (run replay first).
    """
    predictions = _read_optional(store, PREDICTIONS)
    if predictions is None:
        raise MissingTableError(
            f"validate: no predictions table in {config.storage.warehouse}; "
            "run `rebalance-replay replay` first"
        )
    return validate_frames(
        predictions,
        requests=_read_optional(store, REQUESTS),
        rebalances=_read_optional(store, REBALANCES),
        transitions=_read_optional(store, TRANSITIONS),
        findings=_read_optional(store, FINDINGS),
        min_agreement=config.validation.min_agreement,
        gx_root=config.storage.warehouse if config.report.great_expectations else None,
        log=log,
    )


def validate_frames(
    predictions: DataFrame,
    *,
    requests: DataFrame | None = None,
    rebalances: DataFrame | None = None,
    transitions: DataFrame | None = None,
    findings: DataFrame | None = None,
    min_agreement: float,
    gx_root: str | Path | None,
    log: Log = print,
) -> ValidationResult:
    """The core of :func:`validate` on DataFrames. ``gx_root`` None skips Great Expectations; otherwise
    the GX file context lives in ``<gx_root>/gx``."""
    started = time.monotonic()
    result = _agreement(predictions, min_agreement)
    result.tables = {
        "predictions": result.predictions,
        "requests": None,
        "rebalances": None,
        "transitions": None,
    }
    log(
        f"validate: {result.predictions} predictions, {result.scored} scored, agreement "
        f"{'n/a' if result.agreement is None else f'{100 * result.agreement:.2f}%'}"
    )
    if gx_root is not None:
        frames: dict[str, DataFrame] = {}
        if requests is not None:
            frames[REQUESTS_SUITE] = requests_contract_frame(requests)
        frames[OUTPUTS_SUITE] = outputs_contract_frame(predictions, rebalances, transitions)
        if findings is not None:
            frames[FINDINGS_SUITE] = findings_contract_frame(findings)
        result.gx = run_gx(gx_root, frames, min_agreement=min_agreement, log=log)
    for name, df in (("requests", requests), ("rebalances", rebalances), ("transitions", transitions)):
        if df is not None:
            result.tables[name] = df.count()
    result.seconds = time.monotonic() - started
    return result


# --------------------------------------------------------------------------------------------------
# Agreement and mismatch taxonomy (Spark)
# --------------------------------------------------------------------------------------------------


def _counts(row: Any) -> dict[str, Any]:
    n, scored, matched = int(row["n"]), int(row["scored"] or 0), int(row["matched"] or 0)
    return {
        "predictions": n,
        "scored": scored,
        "matched": matched,
        "mismatched": scored - matched,
        "agreement": _ratio(matched, scored),
    }


def _count_aggs() -> list[Column]:
    from pyspark.sql import functions as F

    return [
        F.count(F.lit(1)).alias("n"),
        F.sum(F.col("scored").cast("long")).alias("scored"),
        F.sum((F.col("scored") & F.col("matched")).cast("long")).alias("matched"),
    ]


def _kind_values(kind: Column, side: str) -> Column:
    """The ``side`` (observed/predicted) value of the field a mismatch kind names, as a string."""
    from pyspark.sql import functions as F

    def s(col: str) -> Column:
        return F.coalesce(F.col(f"{side}_{col}").cast("string"), F.lit("null"))

    def arr(col: str) -> Column:
        c = F.col(f"{side}_{col}")
        return F.when(c.isNull(), F.lit("null")).otherwise(
            F.concat(F.lit("["), F.array_join(c, ", "), F.lit("]"))
        )

    return (
        F.when(kind == "error", s("error"))
        .when(kind == "generation", s("generation_id"))
        .when(kind == "leader", s("leader"))
        .when(kind.isin("member_id", "member_id_format"), s("member_id"))
        .when(kind == "protocol_name", s("protocol_name"))
        .when(kind == "members", arr("members"))
        .when(kind == "skip_assignment", s("skip_assignment"))
        .when(kind == "completion_time", s("completion_ms"))
        .when(kind == "member_errors", arr("member_errors"))
        .otherwise(F.lit("?"))
    )


def _order_kinds(counts: Mapping[str, int]) -> dict[str, int]:
    known = [k for k in MISMATCH_KINDS if k in counts]
    other = sorted(k for k in counts if k not in MISMATCH_KINDS)
    return {k: counts[k] for k in (*known, *other)}


def _add_counts(into: dict[Any, dict[str, int]], key: Any, row: Any) -> None:
    c = into.setdefault(key, {"n": 0, "scored": 0, "matched": 0})
    for k in c:
        c[k] += int(row[k] or 0)


def _nulls_first(key: str | None) -> tuple[bool, str]:
    """Spark's ascending order of a string column (nulls first; UTF-8 bytes order like code points)."""
    return (key is not None, key or "")


def _agreement(predictions: DataFrame, min_agreement: float) -> ValidationResult:
    """The agreement numbers and the mismatch taxonomy, in two passes over ``predictions``: one
    aggregate per (api, observed error, group, unscored reason) that every count table is summed from,
    and one over the mismatched rows' kinds; the example rows are read only when there are mismatches."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    reason = F.when(~F.col("scored"), F.coalesce(F.col("unscored_reason"), F.lit(MISSING)))
    cells = (
        predictions.groupBy(
            "api",
            F.coalesce(F.col("observed_error"), F.lit(MISSING)).alias("observed_error"),
            "group_id",
            reason.alias("reason"),
        )
        .agg(*_count_aggs())
        .collect()
    )
    apis: dict[Any, dict[str, int]] = {}  # api is never null in predictions
    errors: dict[str, dict[str, int]] = {}
    per_group: dict[str | None, dict[str, int]] = {}
    reason_counts: dict[str, int] = {}
    for r in cells:
        _add_counts(apis, r["api"], r)
        _add_counts(errors, r["observed_error"], r)
        _add_counts(per_group, r["group_id"], r)
        if r["reason"] is not None:
            reason_counts[r["reason"]] = reason_counts.get(r["reason"], 0) + int(r["n"])
    by_api = {api: _counts(apis[api]) for api in sorted(apis, key=_nulls_first)}
    total = sum(v["predictions"] for v in by_api.values())
    scored = sum(v["scored"] for v in by_api.values())
    matched = sum(v["matched"] for v in by_api.values())
    by_error = {e: _counts(errors[e]) for e in sorted(errors)}
    ranked = sorted(
        per_group,
        key=lambda g: (-(per_group[g]["scored"] - per_group[g]["matched"]), *_nulls_first(g)),
    )
    top_groups = [{"group_id": g, **_counts(per_group[g])} for g in ranked[:TOP_GROUPS]]
    reasons = dict(sorted(reason_counts.items(), key=lambda kv: (-kv[1], kv[0])))

    kinds = predictions.filter(F.col("scored") & ~F.col("matched")).select(
        "source_file",
        "line_no",
        "api",
        "group_id",
        F.explode(F.coalesce(F.col("mismatch_kinds"), F.array().cast("array<string>"))).alias("kind"),
        *[c for c in PREDICTIONS.column_names if c.startswith(("observed_", "predicted_"))],
    )
    per_api_kind: dict[str, dict[str, int]] = {}
    per_kind: dict[str, int] = {}
    for r in kinds.groupBy("api", "kind").count().collect():
        per_api_kind.setdefault(r["api"], {})[r["kind"]] = int(r["count"])
        per_kind[r["kind"]] = per_kind.get(r["kind"], 0) + int(r["count"])
    examples: list[dict[str, Any]] = []
    if per_kind:  # the example rows (their observed and predicted values) only when there are mismatches
        w = Window.partitionBy("kind").orderBy("source_file", "line_no")
        example_rows = (
            kinds.withColumn("rank", F.row_number().over(w))
            .filter(F.col("rank") <= EXAMPLES_PER_KIND)
            .select(
                F.concat_ws(":", "source_file", F.col("line_no").cast("string")).alias("ref"),
                "source_file",
                "line_no",
                "api",
                "group_id",
                F.col("kind").alias("field"),
                _kind_values(F.col("kind"), "observed").alias("observed"),
                _kind_values(F.col("kind"), "predicted").alias("predicted"),
            )
            .orderBy("source_file", "line_no", "field")
            .limit(MAX_EXAMPLES)
            .collect()
        )
        examples = [
            {k: r[k] for k in ("ref", "api", "group_id", "field", "observed", "predicted")}
            for r in example_rows
        ]
    return ValidationResult(
        predictions=total,
        scored=scored,
        matched=matched,
        min_agreement=min_agreement,
        by_api=by_api,
        by_observed_error=by_error,
        top_groups=top_groups,
        mismatch_kinds=dict(sorted(_order_kinds(per_kind).items(), key=lambda kv: -kv[1])),
        mismatch_kinds_by_api={api: _order_kinds(v) for api, v in sorted(per_api_kind.items())},
        unscored_reasons=reasons,
        examples=examples,
        tables={},
    )


# --------------------------------------------------------------------------------------------------
# Frames the GX suites check
# --------------------------------------------------------------------------------------------------


def requests_contract_frame(requests: DataFrame) -> DataFrame:
    """The ``requests`` columns the contract reads, plus two derived ones:

    * ``missing_keys``: the names of the row's null key columns, comma-separated (null when none is
      missing) — one expectation instead of one per key, and its unexpected values say which key;
    * ``version_valid``: 0 ≤ api_version ≤ the API's highest version (false for an unknown API or a null
      version).
    """
    from pyspark.sql import functions as F

    valid = F.lit(False)
    for api, highest in MAX_API_VERSION.items():
        valid = F.when(F.col("api_name") == api.name, F.col("api_version").between(0, highest)).otherwise(
            valid
        )
    missing = F.concat_ws(",", *[F.when(F.col(c).isNull(), F.lit(c)) for c in REQUEST_KEYS])
    return requests.select(
        *REQUEST_KEYS,
        "group_id",
        F.when(missing != "", missing).alias("missing_keys"),
        F.coalesce(valid, F.lit(False)).alias("version_valid"),
    )


# columns of the stacked outputs frame: (name, Spark type)
_OUTPUT_COLUMNS = (
    ("table", "string"),
    ("scored_matched", "double"),  # predictions: 1.0/0.0 when scored, else null
    ("prediction_group_id", "string"),
    ("prediction_seq", "bigint"),
    ("total_duration_ms", "bigint"),  # rebalances
    ("join_phase_ms", "bigint"),
    ("sync_phase_ms", "bigint"),
    ("generation_from", "int"),
    ("generation_to", "int"),
    ("transition_group_id", "string"),  # transitions
    ("transition_generation_id", "int"),
    ("previous_generation_id", "int"),
)


def outputs_contract_frame(
    predictions: DataFrame, rebalances: DataFrame | None, transitions: DataFrame | None
) -> DataFrame:
    """One frame stacking the replay outputs for the ``outputs_contract`` suite (see module docstring)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    def shaped(df: DataFrame, table: str, cols: Mapping[str, Column]) -> DataFrame:
        return df.select(
            *[
                (cols[name] if name in cols else F.lit(table) if name == "table" else F.lit(None))
                .cast(typ)
                .alias(name)
                for name, typ in _OUTPUT_COLUMNS
            ]
        )

    parts = [
        shaped(
            predictions,
            "predictions",
            {
                "scored_matched": F.when(F.col("scored"), F.col("matched").cast("double")),
                "prediction_group_id": F.col("group_id"),
                "prediction_seq": F.col("seq"),
            },
        )
    ]
    if rebalances is not None:
        parts.append(
            shaped(
                rebalances,
                "rebalances",
                {
                    c: F.col(c)
                    for c in (
                        "total_duration_ms",
                        "join_phase_ms",
                        "sync_phase_ms",
                        "generation_from",
                        "generation_to",
                    )
                },
            )
        )
    if transitions is not None:
        w = Window.partitionBy("group_id").orderBy("seq", "time_ms", "generation_id")
        parts.append(
            shaped(
                transitions,
                "transitions",
                {
                    "transition_group_id": F.col("group_id"),
                    "transition_generation_id": F.col("generation_id"),
                    "previous_generation_id": F.lag("generation_id").over(w),
                },
            )
        )
    out = parts[0]
    for p in parts[1:]:
        out = out.unionByName(p)
    return out


# --------------------------------------------------------------------------------------------------
# Great Expectations
# --------------------------------------------------------------------------------------------------


def _requests_expectations(gx: Any) -> list[Any]:
    from great_expectations.expectations.row_conditions import Column as Col

    E = gx.expectations
    return [
        E.ExpectColumnValuesToBeNull(
            column="missing_keys", description=f"the row keys ({', '.join(REQUEST_KEYS)}) are never null"
        ),
        E.ExpectColumnValuesToBeInSet(
            column="api_name", value_set=list(KEPT_API_NAMES), description="api_name is a kept group API"
        ),
        E.ExpectColumnPairValuesAToBeGreaterThanB(
            column_A="completion_ms",
            column_B="arrival_ms",
            or_equal=True,
            description="arrival_ms ≤ completion_ms",
        ),
        E.ExpectColumnValuesToBeInSet(
            column="version_valid",
            value_set=[True],
            description="0 ≤ api_version ≤ MAX_API_VERSION of the row's API",
        ),
        E.ExpectColumnValuesToNotBeNull(
            column="group_id",
            row_condition=Col(name="api_name").is_in(list(GROUP_API_NAMES)),
            description="group_id is present on every classic group API request",
        ),
        E.ExpectCompoundColumnsToBeUnique(
            column_list=["source_file", "line_no"], description="(source_file, line_no) is unique"
        ),
    ]


def _outputs_expectations(gx: Any, min_agreement: float) -> list[Any]:
    E = gx.expectations
    return [
        E.ExpectColumnMeanToBeBetween(
            column="scored_matched",
            min_value=min_agreement,
            max_value=1.0,
            description=f"agreement (matched / scored predictions) ≥ {min_agreement}",
        ),
        *[
            E.ExpectColumnValuesToBeBetween(column=c, min_value=0, description=f"rebalance {c} ≥ 0")
            for c in ("total_duration_ms", "join_phase_ms", "sync_phase_ms")
        ],
        E.ExpectColumnPairValuesAToBeGreaterThanB(
            column_A="generation_to",
            column_B="generation_from",
            or_equal=True,
            ignore_row_if="either_value_is_missing",
            description="rebalance generation_to ≥ generation_from",
        ),
        E.ExpectColumnPairValuesAToBeGreaterThanB(
            column_A="transition_generation_id",
            column_B="previous_generation_id",
            or_equal=True,
            ignore_row_if="either_value_is_missing",
            description="per group, transition generations never decrease",
        ),
        E.ExpectCompoundColumnsToBeUnique(
            column_list=["prediction_group_id", "prediction_seq"],
            ignore_row_if="any_value_is_missing",
            description="prediction seq is unique per group",
        ),
    ]


def findings_contract_frame(findings: DataFrame) -> DataFrame:
    """``findings`` with the derived ``evidence_rows`` (size of the evidence array) for its suite."""
    from pyspark.sql import functions as F

    return findings.select(
        "rule_id",
        "severity",
        "confidence",
        "window_start_ms",
        "window_end_ms",
        F.coalesce(F.size("evidence"), F.lit(0)).alias("evidence_rows"),
    )


def _findings_expectations(gx: Any) -> list[Any]:
    from rebalance_replay.transforms.audit import rule_id_pattern, rule_ids_text

    E = gx.expectations
    return [
        E.ExpectColumnValuesToBeBetween(
            column="evidence_rows", min_value=1, description="every finding has evidence rows"
        ),
        E.ExpectColumnPairValuesAToBeGreaterThanB(
            column_A="window_end_ms",
            column_B="window_start_ms",
            or_equal=True,
            description="window_start_ms ≤ window_end_ms",
        ),
        E.ExpectColumnValuesToBeInSet(
            column="severity", value_set=["info", "warning", "critical"], description="severity in the set"
        ),
        E.ExpectColumnValuesToBeBetween(
            column="confidence", min_value=0, max_value=1, description="confidence in [0, 1]"
        ),
        E.ExpectColumnValuesToMatchRegex(
            column="rule_id", regex=rule_id_pattern(), description=f"rule_id is {rule_ids_text()}"
        ),
    ]


def _columns_of(kwargs: Mapping[str, Any]) -> tuple[str, ...]:
    if "column_list" in kwargs:
        return tuple(kwargs["column_list"])
    return tuple(kwargs[k] for k in ("column", "column_A", "column_B") if k in kwargs)


def _jsonable(v: Any) -> Any:
    if v is None or isinstance(v, str | int | float | bool):
        return v
    if isinstance(v, Mapping):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, Iterable):
        return [_jsonable(x) for x in v]
    return str(v)


def _get_or_add(getter: Callable[[str], Any], adder: Callable[[str], Any], name: str) -> Any:
    try:
        return getter(name)
    except (LookupError, ValueError, AttributeError):
        return adder(name)
    except Exception as e:  # GX raises its own DataContextError subclasses for "not found"
        if "not found" in str(e).lower() or "could not find" in str(e).lower():
            return adder(name)
        raise


def _docs_path(ctx: Any, root: Path) -> str | None:
    for site in ctx.get_docs_sites_urls() or []:
        url = site.get("site_url")
        if url and url.startswith("file://"):
            return unquote(urlparse(url).path)
    fallback = root / "gx" / "uncommitted" / "data_docs" / "local_site" / "index.html"
    return str(fallback) if fallback.exists() else None


def run_gx(
    root: str | Path,
    frames: Mapping[str, DataFrame],
    *,
    min_agreement: float,
    log: Log = print,
) -> GxOutcome:
    """Run one checkpoint per suite named in ``frames`` (``requests_contract`` / ``outputs_contract``)
    on its frame, in a file context under ``<root>/gx``, update Data Docs, and say what failed.
    Never raises for GX's own problems: they come back as ``error`` with ``success=False``."""
    started = time.monotonic()
    root = Path(root)
    suites: dict[str, dict[str, Any]] = {}
    failures: list[GxFailure] = []
    persisted = [df.persist() for df in frames.values()]
    try:
        os.environ["GX_ANALYTICS_ENABLED"] = "false"  # before GX is imported: no usage statistics
        logging.getLogger("great_expectations").setLevel(logging.ERROR)
        import great_expectations as gx
        from great_expectations.data_context.types.base import ProgressBarsConfig

        root.mkdir(parents=True, exist_ok=True)
        ctx = gx.get_context(mode="file", project_root_dir=str(root))
        if ctx.config.analytics_enabled is not False:
            ctx.enable_analytics(False)
        progress = ctx.variables.progress_bars
        if progress is None or getattr(progress, "globally", None) is not False:
            ctx.variables.progress_bars = ProgressBarsConfig(globally=False)
            ctx.variables.save()
        source = _get_or_add(ctx.data_sources.get, ctx.data_sources.add_spark, "rebalance_replay")
        expectations = {
            REQUESTS_SUITE: lambda: _requests_expectations(gx),
            OUTPUTS_SUITE: lambda: _outputs_expectations(gx, min_agreement),
            FINDINGS_SUITE: lambda: _findings_expectations(gx),
        }
        for suite_name, df in zip(frames, persisted, strict=True):
            asset = _get_or_add(source.get_asset, source.add_dataframe_asset, suite_name)
            batch = _get_or_add(
                asset.get_batch_definition, asset.add_batch_definition_whole_dataframe, "whole_dataframe"
            )
            suite = gx.ExpectationSuite(name=suite_name, expectations=expectations[suite_name]())
            suite = ctx.suites.add_or_update(suite)
            vd = ctx.validation_definitions.add_or_update(
                gx.ValidationDefinition(name=suite_name, data=batch, suite=suite)
            )
            checkpoint = ctx.checkpoints.add_or_update(
                gx.Checkpoint(
                    name=suite_name,
                    validation_definitions=[vd],
                    actions=[gx.checkpoint.UpdateDataDocsAction(name="update_data_docs")],
                    # BASIC: counts and a few unexpected values; SUMMARY costs ~2x the Spark jobs
                    result_format={"result_format": "BASIC", "partial_unexpected_count": PARTIAL_UNEXPECTED},
                )
            )
            t0 = time.monotonic()
            run = checkpoint.run(batch_parameters={"dataframe": df})
            evaluated = 0
            failed: list[str] = []
            for vr in run.run_results.values():
                for r in vr.results:
                    evaluated += 1
                    if r.success:
                        continue
                    cfg = r.expectation_config
                    res = r.result or {}
                    exc = r.exception_info or {}
                    f = GxFailure(
                        suite=suite_name,
                        expectation=cfg.type,
                        columns=_columns_of(cfg.kwargs),
                        description=cfg.description,
                        unexpected_count=res.get("unexpected_count"),
                        observed_value=_jsonable(res.get("observed_value")),
                        examples=_jsonable(res.get("partial_unexpected_list") or [])[:5],
                        exception=exc.get("exception_message") if exc.get("raised_exception") else None,
                    )
                    failures.append(f)
                    failed.append(f.name)
            suites[suite_name] = {"success": bool(run.success), "evaluated": evaluated, "failed": failed}
            log(
                f"validate: GX {suite_name}: {'ok' if run.success else 'FAILED'} "
                f"({evaluated} expectations, {time.monotonic() - t0:.1f}s)"
            )
        docs = _docs_path(ctx, root)
        if docs:  # offline: assets from PyPI packages, no CDN, no tracking image
            from rebalance_replay.jobs.datadocs import make_offline

            make_offline(Path(docs).parent, log)
        success = all(s["success"] for s in suites.values())
        return GxOutcome(success, suites, failures, docs, time.monotonic() - started)
    except Exception as e:  # GX trouble is reported, never fatal
        log(f"validate: Great Expectations failed: {type(e).__name__}: {e}")
        return GxOutcome(
            False, suites, failures, None, time.monotonic() - started, error=f"{type(e).__name__}: {e}"
        )
    finally:
        for df in persisted:
            df.unpersist()
