"""Great Expectations: the suites that check the tables and the runner, for ``validate`` (``requests``, the
replay's outputs, ``findings``) and ``audit`` (``findings``, right after writing the table).

Great Expectations 1.x (file context under ``<warehouse>/gx/``, Data Docs in
``<warehouse>/gx/uncommitted/data_docs/local_site/index.html``, analytics off, no network), one suite and
checkpoint per contract. Each expectation is declared once (:class:`Check`); a contract's metrics (per
expectation: how many rows break it, or the mean it bounds) are measured in ONE Spark pass over its table
(:func:`contract_metrics`: a uniqueness check groups the rows by its key and the other counts ride along),
plus one small job for example values only when an expectation is broken; GX then judges those metrics —
its suite, on a one-row pandas batch, says each count must be 0 (the mean within its bounds) — and Data
Docs are rebuilt for this run's results and the index only. GX on the Spark frames themselves ran a Spark
job or two per expectation (~90 per validate on the sample: the fixed cost issue 30 measured):

* ``requests_contract`` on ``requests``: the row keys (``source_file, line_no, broker_id, api_key,
  api_name, api_version, completion_ms, arrival_ms``) are not null (one expectation: the derived
  ``missing_keys``, naming a row's null keys, is null); ``api_name`` is a kept API;
  ``arrival_ms ≤ completion_ms``; ``version_valid`` (derived: ``0 ≤ api_version ≤ MAX_API_VERSION`` of the
  row's API) is true; ``group_id`` is not null for the five classic group APIs; each line landed once:
  ``(source_file, line_no, completion_ms)`` is unique (not ``(source_file, line_no)``: the live
  ``kafka-request.log`` is read each hour under the same name, its line numbers starting again at 1 after
  each rotation).
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

import contextlib
import logging
import os
import shutil
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from rebalance_replay.jobs.bookkeeping import crash_point, write_json
from rebalance_replay.transforms.kafka_protocol import MAX_API_VERSION, STATE_CHANGING_APIS, ApiKey
from rebalance_replay.transforms.tally import PARTIAL_UNEXPECTED, ContractTally, SegmentCounts

if TYPE_CHECKING:  # pragma: no cover - typing only
    from pyspark.sql import Column, DataFrame

__all__ = [
    "FINDINGS_SUITE",
    "OUTPUTS_SUITE",
    "REQUESTS_SUITE",
    "GxFailure",
    "GxOutcome",
    "Measure",
    "contract_tally",
    "contracts_fingerprint",
    "findings_contract_frame",
    "outputs_contract_frame",
    "requests_contract_frame",
    "run_gx",
]

REQUESTS_SUITE = "requests_contract"
OUTPUTS_SUITE = "outputs_contract"
FINDINGS_SUITE = "findings_contract"
GX_SOURCE = "rebalance_replay_contracts"  # the pandas data source of the metrics frames
GX_SPARK_SOURCE = "rebalance_replay"  # the Spark data source of earlier versions: removed when found

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
    checked_as_of: str | None = None  # the tables' versions were checked before: these are those results

    def as_dict(self) -> dict[str, Any]:
        return {
            "success": self.success,
            "suites": self.suites,
            "failures": [f.as_dict() for f in self.failures],
            "data_docs": self.data_docs,
            "seconds": round(self.seconds, 2),
            "error": self.error,
            "checked_as_of": self.checked_as_of,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> GxOutcome:
        fields = ("suite", "expectation", "description", "unexpected_count", "observed_value")
        failures = [
            GxFailure(
                **{k: f[k] for k in fields},
                columns=tuple(f["columns"]),
                examples=list(f.get("examples") or []),
                exception=f.get("exception"),
            )
            for f in d.get("failures") or []
        ]
        return cls(
            bool(d["success"]),
            dict(d["suites"]),
            failures,
            d.get("data_docs"),
            float(d.get("seconds") or 0.0),
            d.get("error"),
            d.get("checked_as_of"),
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


# --------------------------------------------------------------------------------------------------
# The contracts: each expectation declared once, measured in one Spark pass per table
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Check:
    """One expectation of a contract. ``expectation`` and ``columns`` name it as Great Expectations' own
    expectation of that meaning would be named (the names ``gx.failures`` and Data Docs carry);
    ``key`` is its column in the suite's metrics frame. A row check counts the rows ``bad`` holds for
    (null counts as not bad, as GX ignores nulls); a ``unique`` check counts the rows whose (non-null)
    ``columns`` occur more than once; a ``mean`` check bounds the mean of ``columns[0]`` (nulls ignored)."""

    key: str
    expectation: str
    columns: tuple[str, ...]
    description: str
    kind: str = "rows"  # rows | unique | mean
    bad: Callable[[], Column] | None = None  # built when measured (a Spark session is running then)
    bounds: tuple[float, float] = (0.0, 0.0)
    pattern: str | None = None  # a rows check of a regex every non-null value of columns[0] matches
    #: a unique check's tally (:func:`contract_tally`): its segments (some of ``columns``) and the column
    #: whose lowest and highest value each keeps (one of ``columns``): rows appended later whose lowest
    #: value lies above a segment's highest cannot repeat a key of that segment
    segment_by: tuple[str, ...] = ()
    bound: str | None = None

    @property
    def name(self) -> str:
        return f"{self.expectation}({', '.join(self.columns)})"

    def condition(self) -> Column | None:
        """The Spark condition of a row that breaks the check (None: not a row check)."""
        from pyspark.sql import functions as F

        if self.pattern is not None:
            column = F.col(self.columns[0])
            return column.isNotNull() & ~column.rlike(self.pattern)
        return None if self.bad is None else self.bad()


def _in_set(column: str, values: Iterable[str]) -> tuple[Callable[[], Column], tuple[str, ...]]:
    from pyspark.sql import functions as F

    kept = list(values)
    return lambda: F.col(column).isNotNull() & ~F.col(column).isin(kept), (column,)


def _negative(column: str) -> Callable[[], Column]:
    from pyspark.sql import functions as F

    return lambda: F.col(column) < 0


def _requests_checks() -> list[Check]:
    from pyspark.sql import functions as F

    kept, kept_cols = _in_set("api_name", KEPT_API_NAMES)
    return [
        Check(
            "rows_with_null_keys",
            "expect_column_values_to_be_null",
            ("missing_keys",),
            f"the row keys ({', '.join(REQUEST_KEYS)}) are never null",
            bad=lambda: F.col("missing_keys").isNotNull(),
        ),
        Check(
            "rows_with_other_api",
            "expect_column_values_to_be_in_set",
            kept_cols,
            "api_name is a kept group API",
            bad=kept,
        ),
        Check(
            "rows_arriving_after_completion",
            "expect_column_pair_values_a_to_be_greater_than_b",
            ("completion_ms", "arrival_ms"),
            "arrival_ms ≤ completion_ms",
            bad=lambda: F.col("completion_ms") < F.col("arrival_ms"),
        ),
        Check(
            "rows_with_invalid_version",
            "expect_column_values_to_be_in_set",
            ("version_valid",),
            "0 ≤ api_version ≤ MAX_API_VERSION of the row's API",
            bad=lambda: F.col("version_valid").isNotNull() & ~F.col("version_valid"),
        ),
        Check(
            "group_requests_without_group",
            "expect_column_values_to_not_be_null",
            ("group_id",),
            "group_id is present on every classic group API request",
            bad=lambda: F.col("api_name").isin(list(GROUP_API_NAMES)) & F.col("group_id").isNull(),
        ),
        Check(
            "rows_sharing_a_line",
            "expect_compound_columns_to_be_unique",
            ("source_file", "line_no", "completion_ms"),
            "each log line landed once: (source_file, line_no, completion_ms) is unique (a live file's name "
            "comes back after each rotation, so its path and line numbers repeat, hours apart)",
            kind="unique",
            segment_by=("source_file",),
            bound="completion_ms",
        ),
    ]


def _outputs_checks(min_agreement: float) -> list[Check]:
    from pyspark.sql import functions as F

    return [
        Check(
            "agreement",
            "expect_column_mean_to_be_between",
            ("scored_matched",),
            f"agreement (matched / scored predictions) ≥ {min_agreement}",
            kind="mean",
            bounds=(min_agreement, 1.0),
        ),
        *[
            Check(
                f"rebalances_with_negative_{c}",
                "expect_column_values_to_be_between",
                (c,),
                f"rebalance {c} ≥ 0",
                bad=_negative(c),
            )
            for c in ("total_duration_ms", "join_phase_ms", "sync_phase_ms")
        ],
        Check(
            "rebalances_with_generation_going_back",
            "expect_column_pair_values_a_to_be_greater_than_b",
            ("generation_to", "generation_from"),
            "rebalance generation_to ≥ generation_from",
            bad=lambda: F.col("generation_to") < F.col("generation_from"),
        ),
        Check(
            "transitions_with_generation_going_back",
            "expect_column_pair_values_a_to_be_greater_than_b",
            ("transition_generation_id", "previous_generation_id"),
            "per group, transition generations never decrease",
            bad=lambda: F.col("transition_generation_id") < F.col("previous_generation_id"),
        ),
        Check(
            "predictions_sharing_a_seq",
            "expect_compound_columns_to_be_unique",
            ("prediction_group_id", "prediction_seq"),
            "prediction seq is unique per group",
            kind="unique",
            segment_by=("prediction_group_id",),
            bound="prediction_seq",
        ),
    ]


def _findings_checks() -> list[Check]:
    from pyspark.sql import functions as F

    from rebalance_replay.transforms.audit import rule_id_pattern, rule_ids_text

    severity, severity_cols = _in_set("severity", ("info", "warning", "critical"))
    return [
        Check(
            "findings_without_evidence",
            "expect_column_values_to_be_between",
            ("evidence_rows",),
            "every finding has evidence rows",
            bad=lambda: F.col("evidence_rows") < 1,
        ),
        Check(
            "findings_ending_before_they_start",
            "expect_column_pair_values_a_to_be_greater_than_b",
            ("window_end_ms", "window_start_ms"),
            "window_start_ms ≤ window_end_ms",
            bad=lambda: F.col("window_end_ms") < F.col("window_start_ms"),
        ),
        Check(
            "findings_with_other_severity",
            "expect_column_values_to_be_in_set",
            severity_cols,
            "severity in the set",
            bad=severity,
        ),
        Check(
            "findings_with_confidence_outside_0_1",
            "expect_column_values_to_be_between",
            ("confidence",),
            "confidence in [0, 1]",
            bad=lambda: (F.col("confidence") < 0) | (F.col("confidence") > 1),
        ),
        Check(
            "findings_with_unknown_rule",
            "expect_column_values_to_match_regex",
            ("rule_id",),
            f"rule_id is {rule_ids_text()}",
            pattern=rule_id_pattern(),
        ),
    ]


def _checks(suite: str, min_agreement: float) -> list[Check]:
    if suite == REQUESTS_SUITE:
        return _requests_checks()
    if suite == OUTPUTS_SUITE:
        return _outputs_checks(min_agreement)
    if suite == FINDINGS_SUITE:
        return _findings_checks()
    raise ValueError(f"no contract named {suite}")


@dataclass
class ContractMetrics:
    """What one pass over a suite's frame measured: the rows, each check's value (its count of rows that
    break it, or the mean), and for each broken check up to :data:`PARTIAL_UNEXPECTED` example values."""

    rows: int
    values: dict[str, float | int | None]
    examples: dict[str, list[Any]]


#: what measures a contract's checks when ``run_gx`` is not given its frame (see :func:`run_gx`)
Measure = Callable[[list[Check]], ContractMetrics]


def contract_metrics(frame: DataFrame, checks: list[Check]) -> ContractMetrics:
    """Measure every check of a contract over ``frame`` (:func:`contract_tally`)."""
    return metrics_of(contract_tally(frame, checks), checks)


def metrics_of(tally: ContractTally, checks: list[Check]) -> ContractMetrics:
    """The metrics GX judges, from a contract's tally (of one frame, or of the rows of several runs)."""
    values: dict[str, float | int | None] = {
        c.key: tally.mean(c.key) if c.kind == "mean" else tally.count(c.key) for c in checks
    }
    examples = {k: v for k, v in tally.examples.items() if values.get(k)}
    return ContractMetrics(tally.rows(), values, examples)


def _segment_columns(frame: DataFrame, unique: Check | None) -> list[str]:
    """What a tally's segments are keyed by: the frame's ``table`` (when it stacks several) and the
    uniqueness key's leading columns."""
    return (["table"] if "table" in frame.columns else []) + list(unique.segment_by if unique else ())


def contract_tally(frame: DataFrame, checks: list[Check]) -> ContractTally:
    """Measure every check of a contract in ONE Spark job over ``frame`` (a uniqueness check groups the
    rows by its columns and the other checks' counts ride along that aggregation), by segment
    (:mod:`rebalance_replay.transforms.tally`); then, only when a check is broken, one more small job
    for its examples."""
    from pyspark.sql import functions as F

    rows_checks = [c for c in checks if c.kind == "rows"]
    means = [c for c in checks if c.kind == "mean"]
    uniques = [c for c in checks if c.kind == "unique"]
    if len(uniques) > 1:
        raise ValueError("one uniqueness check per contract")
    unique = uniques[0] if uniques else None
    conditions = {c.key: c.condition() for c in rows_checks}
    flags = {k: F.coalesce(v, F.lit(False)).cast("long") for k, v in conditions.items() if v is not None}
    parts: dict[str, Column] = {"n": F.count(F.lit(1))}
    parts |= {k: F.sum(v) for k, v in flags.items()}
    for m in means:
        parts[f"{m.key}__sum"] = F.sum(F.col(m.columns[0]).cast("double"))
        parts[f"{m.key}__n"] = F.count(F.col(m.columns[0]))
    segment = _segment_columns(frame, unique)
    bounds: list[Column] = []
    if unique is None:
        agg = frame.groupBy(*segment).agg(*[v.alias(k) for k, v in parts.items()])
    else:
        keys = [*segment, *[c for c in unique.columns if c not in segment]]
        grouped = frame.groupBy(*keys).agg(*[v.alias(k) for k, v in parts.items()])
        keys_present = F.lit(True)
        for key in unique.columns:
            keys_present = keys_present & F.col(key).isNotNull()
        dup = F.sum(F.when(keys_present & (F.col("n") > 1), F.col("n")).otherwise(0)).alias(unique.key)
        if unique.bound is not None:
            bounds = [F.min(unique.bound).alias("__low"), F.max(unique.bound).alias("__high")]
        agg = grouped.groupBy(*segment).agg(*[F.sum(k).alias(k) for k in parts], dup, *bounds)
    tally = ContractTally()
    for row in agg.collect():
        segment_key: tuple[Any, ...] = (
            row["table"] if "table" in segment else None,
            *[row[c] for c in segment if c != "table"],
        )
        counts = {k: int(row[k] or 0) for k in flags}
        if unique is not None:
            counts[unique.key] = int(row[unique.key] or 0)
        tally.segments[segment_key] = SegmentCounts(
            int(row["n"] or 0),
            counts,
            {m.key: [float(row[f"{m.key}__sum"] or 0.0), float(row[f"{m.key}__n"] or 0)] for m in means},
            _jsonable(row["__low"]) if bounds else None,
            _jsonable(row["__high"]) if bounds else None,
        )
    broken = [c for c in rows_checks if tally.count(c.key)]
    if broken:  # up to PARTIAL_UNEXPECTED rows of each broken check, in one job
        cols = sorted({col for check in broken for col in check.columns})
        picks = [
            frame.where(flags[check.key] > 0)
            .select(F.lit(check.key).alias("__check"), *cols)
            .limit(PARTIAL_UNEXPECTED)
            for check in broken
        ]
        union = picks[0]
        for more in picks[1:]:
            union = union.unionByName(more)
        picked = union.collect()
        for check in broken:
            hits = [r for r in picked if r["__check"] == check.key]
            tally.examples[check.key] = [_example(r, check.columns) for r in hits]
    if unique is not None and tally.count(unique.key):
        twice = (
            frame.groupBy(*unique.columns)
            .count()
            .where(F.col("count") > 1)
            .dropna(subset=list(unique.columns))
            .limit(PARTIAL_UNEXPECTED)
            .collect()
        )
        tally.examples[unique.key] = [{c: _jsonable(r[c]) for c in unique.columns} for r in twice]
    return tally


def _example(row: Any, columns: tuple[str, ...]) -> Any:
    if len(columns) == 1:
        return _jsonable(row[columns[0]])
    return [_jsonable(row[c]) for c in columns]


def _expectation(gx: Any, check: Check, metrics: ContractMetrics) -> Any:
    """The GX expectation judging a check's metric: a count of rows that break it must be 0; a mean must
    lie within its bounds. Its description carries what was measured (Data Docs show it)."""
    lo, hi = check.bounds
    value = metrics.values.get(check.key)
    if check.kind == "mean":
        seen = "nothing to average" if value is None else f"observed {value:.4f}"
    else:
        seen = f"{value or 0:,} of {metrics.rows:,} rows break it"
        if check.kind == "unique":
            seen = f"{value or 0:,} of {metrics.rows:,} rows share their key"
    return gx.expectations.ExpectColumnValuesToBeBetween(
        column=check.key, min_value=lo, max_value=hi, description=f"{check.description} ({seen})"
    )


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


def set_aside_unreadable(root: Path, log: Log = print) -> list[str]:
    """Move the Great Expectations files under ``<root>/gx`` that cannot be read (a YAML or JSON file a
    run killed while GX wrote it left cut short: GX would refuse to load its context on every later run)
    to ``<root>/_damaged/gx-<time>/``; the suites, checkpoints and project file are made again from the
    code by the run. The files moved, relative to ``gx``."""
    import json

    import yaml

    gx_dir = root / "gx"
    moved: list[str] = []
    if not gx_dir.is_dir():
        return moved
    target = root / "_damaged" / f"gx-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"
    for path in sorted(gx_dir.rglob("*")):
        if path.suffix not in (".json", ".yml") or not path.is_file() or "data_docs" in path.parts:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
        except (ValueError, yaml.YAMLError):
            data = None
        if path.suffix == ".json" or path.name == "great_expectations.yml":
            readable = isinstance(data, dict) and (path.suffix == ".json" or "config_version" in data)
        else:  # another YAML file (config_variables.yml: comments only is fine)
            readable = data is not None or not text.strip() or text.lstrip().startswith("#")
        if readable:
            continue
        rel = path.relative_to(gx_dir)
        (target / rel).parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, target / rel)
        moved.append(str(rel))
    if moved:
        log(
            f"validate: Great Expectations: {len(moved)} file(s) under {gx_dir} could not be read (cut short "
            f"by a run that was killed: {', '.join(moved[:3])}); moved to {target}, made again"
        )
    return moved


def prune_results(root: Path, keep: int, suites: Sequence[str]) -> int:
    """Delete all but the last ``keep`` results of each of ``suites`` under ``<root>/gx/uncommitted``
    (``validations/<suite>/<run name>/<run time>/``, run times in ISO form: newest last in name order),
    with their Data Docs pages (the same path under ``data_docs/local_site/validations``): the index,
    built next, lists what is left. Returns how many results were deleted."""
    base = root / "gx" / "uncommitted"
    deleted = 0
    for suite in suites:
        runs = sorted(
            (p for p in (base / "validations" / suite).glob("*/*") if p.is_dir()), key=lambda p: p.name
        )
        for old in runs[: max(0, len(runs) - keep)]:
            page = base / "data_docs" / "local_site" / old.relative_to(base)
            shutil.rmtree(page, ignore_errors=True)
            shutil.rmtree(old, ignore_errors=True)
            deleted += 1
    return deleted


LAST_CHECK = "last_check.json"  # under gx/uncommitted: the key and outcome of the last finished check


def _check_key(tables_key: Mapping[str, Any], frames: Mapping[str, Any], min_agreement: float) -> str:
    """What a check's results depend on: the tables' versions, the threshold, and each contract's
    expectations as declared now."""
    import hashlib
    import json

    contracts = {suite: contracts_fingerprint(suite, min_agreement) for suite in frames}
    text = json.dumps({"tables": tables_key, "contracts": contracts}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def contracts_fingerprint(suite: str, min_agreement: float) -> list[Any]:
    """A contract's expectations as declared now (what its measures, carried tallies and results depend
    on: a uniqueness check's segments and bound column too)."""
    return [
        (c.name, c.description, c.kind, str(c.condition()), c.bounds, c.segment_by, c.bound)
        for c in _checks(suite, min_agreement)
    ]


def _last_check(path: Path, key: str) -> GxOutcome | None:
    """The last finished check's outcome when it was made on ``key`` (and its Data Docs are still there)."""
    import json

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("key") != key:
            return None
        outcome = GxOutcome.from_dict(data["outcome"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if outcome.error is not None or (outcome.data_docs and not Path(outcome.data_docs).is_file()):
        return None
    outcome.seconds = 0.0
    return outcome


def run_gx(
    root: str | Path,
    frames: Mapping[str, DataFrame | Measure],
    *,
    min_agreement: float,
    log: Log = print,
    tables_key: Mapping[str, Any] | None = None,
    keep_results: int = 0,
) -> GxOutcome:
    """Check each suite named in ``frames`` (``requests_contract`` / ``outputs_contract`` /
    ``findings_contract``) on its frame: its metrics measured in one Spark pass (:func:`contract_metrics`),
    judged by its Great Expectations suite through one checkpoint in a file context under ``<root>/gx``
    (a pandas batch of one row: the metrics), and Data Docs updated once, for this run's results only.
    Never raises for GX's own problems: they come back as ``error`` with ``success=False``. A suite's
    frame may instead be a :data:`Measure` that gives its metrics (``validate``'s carried tallies).

    ``tables_key``: what the frames were read from (each table's Delta version, the threshold): when the
    last check of this GX folder finished on the same key and the same contracts, nothing changed since,
    and its results stand (returned with ``checked_as_of``; no Spark job, no GX run) — a scheduled run
    with no new data pays nothing here.

    ``keep_results``: only the results of the last this many checks of each suite are kept, with their
    Data Docs pages (:func:`prune_results`; 0: all)."""
    started = time.monotonic()
    root = Path(root)
    last = root / "gx" / "uncommitted" / LAST_CHECK
    key = None
    if tables_key is not None:
        key = _check_key(tables_key, frames, min_agreement)
        kept = _last_check(last, key)
        if kept is not None:
            log(f"validate: GX: the tables are as checked at {kept.checked_as_of}: those results stand")
            return kept
    suites: dict[str, dict[str, Any]] = {}
    failures: list[GxFailure] = []
    try:
        os.environ["GX_ANALYTICS_ENABLED"] = "false"  # before GX is imported: no usage statistics
        logging.getLogger("great_expectations").setLevel(logging.ERROR)
        import great_expectations as gx
        import pandas as pd
        from great_expectations.data_context.types.base import ProgressBarsConfig
        from great_expectations.data_context.types.resource_identifiers import ExpectationSuiteIdentifier

        root.mkdir(parents=True, exist_ok=True)
        set_aside_unreadable(root, log)
        ctx = gx.get_context(mode="file", project_root_dir=str(root))
        if ctx.config.analytics_enabled is not False:
            ctx.enable_analytics(False)
        progress = ctx.variables.progress_bars
        if progress is None or getattr(progress, "globally", None) is not False:
            ctx.variables.progress_bars = ProgressBarsConfig(globally=False)
            ctx.variables.save()
        if GX_SPARK_SOURCE in ctx.data_sources.all():  # a warehouse whose GX ran on its Spark frames
            for name in (REQUESTS_SUITE, OUTPUTS_SUITE, FINDINGS_SUITE):  # what refers to that source
                for store in (ctx.checkpoints, ctx.validation_definitions):
                    with contextlib.suppress(Exception):  # absent: nothing to delete
                        store.delete(name)
            ctx.data_sources.delete(GX_SPARK_SOURCE)
        source = _get_or_add(ctx.data_sources.get, ctx.data_sources.add_pandas, GX_SOURCE)
        built: list[Any] = []
        for suite_name, df in frames.items():
            t0 = time.monotonic()
            checks = _checks(suite_name, min_agreement)
            metrics = df(checks) if callable(df) else contract_metrics(df, checks)
            asset = _get_or_add(source.get_asset, source.add_dataframe_asset, suite_name)
            batch = _get_or_add(
                asset.get_batch_definition, asset.add_batch_definition_whole_dataframe, "whole_dataframe"
            )
            suite = gx.ExpectationSuite(
                name=suite_name, expectations=[_expectation(gx, c, metrics) for c in checks]
            )
            suite = ctx.suites.add_or_update(suite)
            vd = ctx.validation_definitions.add_or_update(
                gx.ValidationDefinition(name=suite_name, data=batch, suite=suite)
            )
            checkpoint = ctx.checkpoints.add_or_update(
                gx.Checkpoint(
                    name=suite_name, validation_definitions=[vd], result_format={"result_format": "BASIC"}
                )
            )
            measured = pd.DataFrame([{"table_rows": metrics.rows, **metrics.values}])
            run = checkpoint.run(batch_parameters={"dataframe": measured})
            crash_point(f"gx:{suite_name}")  # a suite's results written, the next not yet (Data Docs last)
            by_key = {c.key: c for c in checks}
            evaluated = 0
            failed: list[str] = []
            for result_id, vr in run.run_results.items():
                built.append(result_id)
                for r in vr.results:
                    evaluated += 1
                    if r.success:
                        continue
                    check = by_key[r.expectation_config.kwargs["column"]]
                    exc = r.exception_info or {}
                    value = metrics.values.get(check.key)
                    f = GxFailure(
                        suite=suite_name,
                        expectation=check.expectation,
                        columns=check.columns,
                        description=check.description,
                        unexpected_count=None if check.kind == "mean" else int(value or 0),
                        observed_value=_jsonable(value),
                        examples=metrics.examples.get(check.key, [])[:PARTIAL_UNEXPECTED],
                        exception=exc.get("exception_message") if exc.get("raised_exception") else None,
                    )
                    failures.append(f)
                    failed.append(f.name)
            built.append(ExpectationSuiteIdentifier(name=suite_name))
            suites[suite_name] = {"success": bool(run.success), "evaluated": evaluated, "failed": failed}
            log(
                f"validate: GX {suite_name}: {'ok' if run.success else 'FAILED'} "
                f"({evaluated} expectations on {metrics.rows:,} rows, {time.monotonic() - t0:.1f}s)"
            )
        pruned = prune_results(root, keep_results, tuple(frames)) if keep_results else 0
        if pruned:
            log(
                f"validate: GX: {pruned} older results and their Data Docs pages deleted "
                f"(kept the last {keep_results} of each suite)"
            )
        ctx.build_data_docs(resource_identifiers=built)  # this run's pages and the index, nothing older
        docs = _docs_path(ctx, root)
        if docs:  # offline: assets from PyPI packages, no CDN, no tracking image
            from rebalance_replay.jobs.datadocs import make_offline

            make_offline(Path(docs).parent, log)
        success = all(s["success"] for s in suites.values())
        outcome = GxOutcome(success, suites, failures, docs, time.monotonic() - started)
        if key is not None:  # written last: a run killed before here checks again
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            write_json(last, {"key": key, "outcome": {**outcome.as_dict(), "checked_as_of": stamp}})
        return outcome
    except Exception as e:  # GX trouble is reported, never fatal
        log(f"validate: Great Expectations failed: {type(e).__name__}: {e}")
        return GxOutcome(
            False, suites, failures, None, time.monotonic() - started, error=f"{type(e).__name__}: {e}"
        )
