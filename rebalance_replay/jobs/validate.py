"""Validate: how often does the coordinator model predict what the broker answered — and are the tables
sound? Reads ``predictions`` (and ``requests``, ``rebalances``, ``transitions`` when present).

Agreement (computed with Spark over ``predictions``; the per-row rules live in
``rebalance_replay.transforms.validation``; a scheduled run counts only the rows appended since the last
one and adds the tallies it kept, :class:`Carry`):

* overall ``agreement = matched / scored``; **None when nothing is scored** (no evidence either way — the
  text summary prints ``n/a``, and the ``outputs_contract`` agreement expectation fails);
* per API, per observed error, the groups with the most mismatches;
* the mismatch taxonomy: rows per mismatch kind, per API × kind, a few example rows
  (``source_file:line_no``, API, field, observed vs predicted) and the unscored rows per reason.

The Great Expectations suites and their runner (``requests_contract``, ``outputs_contract``,
``findings_contract``) live in :mod:`rebalance_replay.jobs.expectations`; ``validate`` runs the three.
A failed expectation does not fail the job (exit 0): it is reported (``gx_success``, ``gx.failures``) and
shown in Data Docs. ``report.great_expectations: false`` skips GX (``gx_success`` and ``data_docs`` None).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rebalance_replay.jobs.carry import Carry, carried_text
from rebalance_replay.jobs.errors import MissingTableError
from rebalance_replay.jobs.expectations import (
    FINDINGS_SUITE,
    OUTPUTS_SUITE,
    REQUESTS_SUITE,
    Check,
    ContractMetrics,
    GxFailure,
    GxOutcome,
    Log,
    Measure,
    contract_tally,
    contracts_fingerprint,
    findings_contract_frame,
    metrics_of,
    outputs_contract_frame,
    requests_contract_frame,
    run_gx,
)
from rebalance_replay.schemas import FINDINGS, PREDICTIONS, REBALANCES, REQUESTS, TRANSITIONS
from rebalance_replay.schemas.core import TableDef
from rebalance_replay.transforms.report.units import plural
from rebalance_replay.transforms.tally import EXAMPLES_PER_KIND, AgreementTally, ContractTally
from rebalance_replay.transforms.validation import MISMATCH_KINDS

if TYPE_CHECKING:  # pragma: no cover - typing only
    from pyspark.sql import Column, DataFrame, SparkSession

    from rebalance_replay.jobs.config import Config
    from rebalance_replay.jobs.delta import DeltaStore
    from rebalance_replay.jobs.forensics import Forensics

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

TOP_GROUPS = 10
MISSING = "(none)"  # key for a null observed error / unscored reason


# --------------------------------------------------------------------------------------------------
# Result
# --------------------------------------------------------------------------------------------------


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
        # its numbers are the warehouse's (a scheduled run adds the new rows to the counts it kept)
        lines = [
            f"validate: this run checked the warehouse total: {plural(self.predictions, 'prediction')}, "
            f"{self.scored} scored, {self.matched} matched: agreement {pct(self.agreement)} (min "
            f"{pct(self.min_agreement)}: {ok})"
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
                f"{name} {'ok' if s['success'] else 'FAILED'} ({plural(s['evaluated'], 'expectation')})"
                for name, s in self.gx.suites.items()
            )
            when = (
                f"as checked at {self.gx.checked_as_of}, the tables unchanged since"
                if self.gx.checked_as_of
                else f"in {self.gx.seconds:.1f} s"
            )
            lines.append(f"  Great Expectations: {state} {when}: {suites or 'no suite'}")
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


def validate(
    spark: SparkSession,
    store: DeltaStore,
    config: Config,
    *,
    log: Log = print,
    within: Forensics | None = None,
) -> ValidationResult:
    """Read the warehouse's tables through ``store`` and validate them (see the module docstring).
    ``within``: validate a forensics run (its tables in ``store``, its requests the scheduled ones in its
    window and groups, its Great Expectations results in its own folder).

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
        requests=_read_optional(store, REQUESTS) if within is None else within.requests(),
        rebalances=_read_optional(store, REBALANCES),
        transitions=_read_optional(store, TRANSITIONS),
        findings=_read_optional(store, FINDINGS),
        min_agreement=config.validation.min_agreement,
        gx_keep_results=config.report.gx_keep_results,
        gx_root=(config.storage.warehouse if within is None else within.folder)
        if config.report.great_expectations
        else None,
        log=log,
        # a scheduled run whose tables did not change since the last check keeps its results
        tables_key=None
        if within is not None or not config.report.great_expectations
        else {t.name: store.version(t) for t in (PREDICTIONS, REQUESTS, REBALANCES, TRANSITIONS, FINDINGS)},
        # a scheduled run on a local warehouse carries its counts forward (the engine lists what was appended)
        carry=Carry.scheduled(
            store, config.storage.warehouse, STATE_FILE, STATE_FORMAT, (PREDICTIONS, REQUESTS)
        )
        if within is None
        else None,
    )


# --------------------------------------------------------------------------------------------------
# Tallies carried from run to run
# --------------------------------------------------------------------------------------------------

STATE_FILE = ("_validate", "state.json")
STATE_FORMAT = 1
AGREEMENT = "agreement"


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
    tables_key: Mapping[str, Any] | None = None,
    gx_keep_results: int = 0,
    carry: Carry | None = None,
) -> ValidationResult:
    """The core of :func:`validate` on DataFrames. ``gx_root`` None skips Great Expectations; otherwise
    the GX file context lives in ``<gx_root>/gx``; ``tables_key``: what the frames were read from, for
    :func:`run_gx` to keep the last results when nothing changed; ``carry``: the tallies of the last
    scheduled run, to count only the ``predictions`` and ``requests`` rows appended since (:class:`Carry`)."""
    started = time.monotonic()
    result = agreement_result(_agreement_of(predictions, carry, log), min_agreement)
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
        frames: dict[str, DataFrame | Measure] = {}
        if requests is not None:
            frames[REQUESTS_SUITE] = _carried_contract(
                REQUESTS_SUITE, REQUESTS, requests, requests_contract_frame, carry, min_agreement, log
            )
        frames[OUTPUTS_SUITE] = _carried_contract(
            OUTPUTS_SUITE,
            PREDICTIONS,
            predictions,
            lambda rows: outputs_contract_frame(rows, rebalances, transitions),
            carry,
            min_agreement,
            log,
        )
        if findings is not None:
            frames[FINDINGS_SUITE] = findings_contract_frame(findings)
        result.gx = run_gx(
            gx_root,
            frames,
            min_agreement=min_agreement,
            log=log,
            tables_key=tables_key,
            keep_results=gx_keep_results,
        )
    if carry is not None:
        carry.save()
    for name, df in (("requests", requests), ("rebalances", rebalances), ("transitions", transitions)):
        if df is not None:
            result.tables[name] = df.count()
    result.seconds = time.monotonic() - started
    return result


def _agreement_of(predictions: DataFrame, carry: Carry | None, log: Log) -> AgreementTally:
    """The agreement tally of ``predictions``: the kept one plus the rows appended since, when ``carry``
    has one; else counted in full (and kept)."""
    fingerprint = [STATE_FORMAT, AGREEMENT]
    got = None if carry is None else carry.added(AGREEMENT, PREDICTIONS, fingerprint)
    if got is None:
        tally = agreement_tally(predictions)
    else:
        kept, rows = got
        tally = AgreementTally.from_json(kept)
        if rows is not None:
            tally = tally.plus(agreement_tally(rows))
        log(f"validate: agreement: {carried_text(rows)}")
    if carry is not None:
        carry.keep(AGREEMENT, PREDICTIONS, fingerprint, tally.to_json())
    return tally


def _carried_contract(
    suite: str,
    table: TableDef,
    whole: DataFrame,
    frame_of: Callable[[DataFrame], DataFrame],
    carry: Carry | None,
    min_agreement: float,
    log: Log,
) -> DataFrame | Measure:
    """The GX contract ``suite`` over ``frame_of(whole)``; with ``carry``, measured as the kept tally of
    ``table``'s rows plus ``frame_of(rows appended since)`` (the contract's other tables, small, counted
    in full each run) — or in full when the two cannot be added (:meth:`ContractTally.plus`)."""
    if carry is None:
        return frame_of(whole)
    fingerprint = [STATE_FORMAT, contracts_fingerprint(suite, min_agreement)]
    segment_table = "predictions" if suite == OUTPUTS_SUITE else None

    def measure(checks: list[Check]) -> ContractMetrics:
        got = carry.added(suite, table, fingerprint)
        tally: ContractTally | None = None
        if got is not None:
            kept, rows = got
            added = contract_tally(frame_of(rows if rows is not None else carry.store.empty(table)), checks)
            tally = ContractTally.from_json(kept).plus(added)
            if tally is not None:
                log(f"validate: GX {suite}: {carried_text(rows)}")
        if tally is None:
            tally = contract_tally(frame_of(whole), checks)
        carry.keep(suite, table, fingerprint, tally.of_table(segment_table).to_json())
        return metrics_of(tally, checks)

    return measure


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


def _add_counts(into: dict[Any, dict[str, int]], key: Any, counts: Mapping[str, int]) -> None:
    c = into.setdefault(key, {"n": 0, "scored": 0, "matched": 0})
    for k in c:
        c[k] += counts[k]


def _nulls_first(key: str | None) -> tuple[bool, str]:
    """Spark's ascending order of a string column (nulls first; UTF-8 bytes order like code points)."""
    return (key is not None, key or "")


def agreement_tally(predictions: DataFrame) -> AgreementTally:
    """The agreement counts of ``predictions`` in two passes: one aggregate per (api, observed error,
    group, unscored reason) that every count table is summed from, and one over the mismatched rows'
    kinds; the example rows are read only when there are mismatches."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    reason = F.when(~F.col("scored"), F.coalesce(F.col("unscored_reason"), F.lit(MISSING)))
    tally = AgreementTally()
    for r in (
        predictions.groupBy(
            "api",
            F.coalesce(F.col("observed_error"), F.lit(MISSING)).alias("observed_error"),
            "group_id",
            reason.alias("reason"),
        )
        .agg(*_count_aggs())
        .collect()
    ):
        tally.cells[(r["api"], r["observed_error"], r["group_id"], r["reason"])] = [
            int(r["n"]),
            int(r["scored"] or 0),
            int(r["matched"] or 0),
        ]
    kinds = predictions.filter(F.col("scored") & ~F.col("matched")).select(
        "source_file",
        "line_no",
        "api",
        "group_id",
        F.explode(F.coalesce(F.col("mismatch_kinds"), F.array().cast("array<string>"))).alias("kind"),
        *[c for c in PREDICTIONS.column_names if c.startswith(("observed_", "predicted_"))],
    )
    for r in kinds.groupBy("api", "kind").count().collect():
        tally.kinds[(r["api"], r["kind"])] = int(r["count"])
    if tally.kinds:  # the example rows (their observed and predicted values) only when there are mismatches
        w = Window.partitionBy("kind").orderBy("source_file", "line_no")
        for r in (
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
            .collect()
        ):
            tally.examples.setdefault(r["field"], []).append(r.asDict())
        for rows in tally.examples.values():
            rows.sort(key=lambda e: (e["source_file"], e["line_no"]))
    return tally


def agreement_result(tally: AgreementTally, min_agreement: float) -> ValidationResult:
    """The agreement numbers and the mismatch taxonomy of a tally."""
    apis: dict[Any, dict[str, int]] = {}  # api is never null in predictions
    errors: dict[str, dict[str, int]] = {}
    per_group: dict[str | None, dict[str, int]] = {}
    reason_counts: dict[str, int] = {}
    for (api, error, group, reason), (n, scored_n, matched_n) in tally.cells.items():
        counts = {"n": n, "scored": scored_n, "matched": matched_n}
        _add_counts(apis, api, counts)
        _add_counts(errors, error, counts)
        _add_counts(per_group, group, counts)
        if reason is not None:
            reason_counts[reason] = reason_counts.get(reason, 0) + n
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
    per_api_kind: dict[str, dict[str, int]] = {}
    per_kind: dict[str, int] = {}
    for (api, kind), n in tally.kinds.items():
        per_api_kind.setdefault(api, {})[kind] = n
        per_kind[kind] = per_kind.get(kind, 0) + n
    examples = [
        {k: e[k] for k in ("ref", "api", "group_id", "field", "observed", "predicted")}
        for e in tally.first_examples()
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
