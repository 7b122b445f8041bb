"""Great Expectations: the suites that check the tables and the runner, for ``validate`` (``requests``, the
replay's outputs, ``findings``) and ``audit`` (``findings``, right after writing the table).

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

from rebalance_replay.jobs.bookkeeping import crash_point
from rebalance_replay.transforms.kafka_protocol import MAX_API_VERSION, STATE_CHANGING_APIS, ApiKey

if TYPE_CHECKING:  # pragma: no cover - typing only
    from pyspark.sql import Column, DataFrame

__all__ = [
    "FINDINGS_SUITE",
    "OUTPUTS_SUITE",
    "REQUESTS_SUITE",
    "GxFailure",
    "GxOutcome",
    "findings_contract_frame",
    "outputs_contract_frame",
    "requests_contract_frame",
    "run_gx",
]

REQUESTS_SUITE = "requests_contract"
OUTPUTS_SUITE = "outputs_contract"
FINDINGS_SUITE = "findings_contract"
PARTIAL_UNEXPECTED = 5  # unexpected values GX keeps per failed expectation

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
        set_aside_unreadable(root, log)
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
            crash_point(f"gx:{suite_name}")  # a suite's results and Data Docs written, the next not yet
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
