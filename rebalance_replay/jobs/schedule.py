"""The contract an audit run offers a scheduler (cron, Airflow, a Databricks job): what it prints, where
it sends new findings, and its exit code.

* ``--fail-on warning|critical``: exit :data:`EXIT_FINDINGS` (3) when this run found a *new* finding at
  that severity or worse (``--include-ongoing``: when any open finding is); a rerun that changed nothing
  finds nothing new.
* ``--format json``: the findings as JSON lines on stdout (new first, then ongoing, then resolved; the
  status is the one of this run), every other line on stderr.
* ``audit.notify.*``: the new findings to a webhook and/or a command (:mod:`rebalance_replay.jobs.notify`);
  a delivery that fails is one line on stderr and :data:`EXIT_NOTIFY` (4), unless 3 applies.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from rebalance_replay.jobs.errors import EXIT_FINDINGS, EXIT_NOTIFY
from rebalance_replay.transforms.audit import lifecycle
from rebalance_replay.transforms.report.units import plural

if TYPE_CHECKING:  # pragma: no cover
    from rebalance_replay.jobs.audit import AuditResult
    from rebalance_replay.jobs.config import Config

EXIT_CODES_TEXT = (
    "exit codes: 0 the pipeline ran (findings or not, unless --fail-on); 1 a runtime error; 2 bad usage, "
    "configuration or input (nothing ran); 3 --fail-on: a new finding (with --include-ongoing: an open "
    "one) at that severity or worse; 4 the run finished but sending its new findings (audit.notify.*) "
    "failed; 130 interrupted"
)


def add_options(p: argparse.ArgumentParser, command: str) -> None:
    """``--fail-on``, ``--include-ongoing``, ``--format`` (audit, run) and ``--final`` (replay, run)."""
    if command in ("audit", "run"):
        p.add_argument(
            "--fail-on",
            choices=("warning", "critical"),
            default=None,
            help="exit 3 when this run finds a new finding of this severity or worse (a scheduler's alert)",
        )
        p.add_argument(
            "--include-ongoing",
            action="store_true",
            help="with --fail-on: count every open finding (new or ongoing), not only new ones",
        )
        p.add_argument(
            "--format",
            dest="output_format",
            choices=("text", "json"),
            default="text",
            help="json: print the findings as JSON lines on stdout (new first), everything else on stderr",
        )
    if command in ("replay", "run"):
        p.add_argument(
            "--final",
            action="store_true",
            help="with --incremental: the last run of a period: close the late-arrival horizon (replay "
            "everything landed, no replay.late_tolerance_ms held back for a run that will not come)",
        )


def check_usage(args: argparse.Namespace) -> None:
    from rebalance_replay.jobs.errors import UsageError

    if getattr(args, "include_ongoing", False) and not getattr(args, "fail_on", None):
        raise UsageError("--include-ongoing goes with --fail-on warning|critical")
    if getattr(args, "final", False) and not getattr(args, "incremental", False):
        raise UsageError("--final closes the horizon of a scheduled run: use it with --incremental")


def json_mode(args: argparse.Namespace) -> bool:
    return getattr(args, "output_format", "text") == "json"


@contextlib.contextmanager
def quiet_stdout(args: argparse.Namespace) -> Iterator[None]:
    """With ``--format json``, what the stages print goes to stderr (stdout is the findings')."""
    if json_mode(args):
        with contextlib.redirect_stdout(sys.stderr):
            yield
    else:
        yield


def output_rows(result: AuditResult) -> list[dict[str, Any]]:
    """The findings with the status of this run (a rerun that changed nothing reports no new one)."""
    rows = []
    for f in result.findings:
        status = f.get("status") or "ongoing"
        if result.up_to_date and status == "new":
            status = "ongoing"
        rows.append({**f, "status": status})
    return lifecycle.ordered(rows)


def print_json_lines(result: AuditResult) -> None:
    from rebalance_replay.jobs.notify import finding_json

    for row in output_rows(result):
        print(finding_json(row), flush=True)


def after_audit(
    args: argparse.Namespace,
    config: Config,
    result: AuditResult,
    *,
    say: Callable[[str], None],
    notify: bool = True,
) -> tuple[int, dict[str, Any]]:
    """Notify (unless ``notify`` is false), then the exit code by the contract above; also the summary
    keys to add (``notify``)."""
    from rebalance_replay.jobs.notify import failure_line
    from rebalance_replay.jobs.notify import notify as send

    code = 0
    extra: dict[str, Any] = {}
    findings = result.new_findings if notify else []
    sent = send(findings, config.audit.notify, warehouse=config.storage.warehouse)
    if sent.deliveries:
        extra["notify"] = sent.as_dict()
        line = failure_line(sent)
        if line:
            say(f"rebalance-replay: error: {line}")
            code = EXIT_NOTIFY
        else:
            targets = ", ".join(d.target for d in sent.deliveries)
            say(f"notify: {plural(sent.sent, 'new finding')} sent to {targets}")
    threshold = getattr(args, "fail_on", None)
    if threshold:
        include = bool(getattr(args, "include_ongoing", False))
        rows = output_rows(result)
        hits = lifecycle.failing(rows, threshold, include_ongoing=include)
        what = "open" if include else "new"
        if hits:
            say(
                f"audit: --fail-on {threshold}: {plural(len(hits), f'{what} finding')} at {threshold} or "
                "worse "
                f"({', '.join(sorted({h['rule_id'] for h in hits}))}): exit {EXIT_FINDINGS}"
            )
            code = EXIT_FINDINGS
        extra["fail_on"] = {
            "severity": threshold,
            "include_ongoing": include,
            "findings": len(hits),
            "exit_code": EXIT_FINDINGS if hits else code,
        }
    return code, extra
