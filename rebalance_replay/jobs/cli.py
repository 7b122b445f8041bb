"""``rebalance-replay`` — the command line.

    rebalance-replay ingest   --input PATH... --warehouse DIR   land request logs into Delta
    rebalance-replay replay   --warehouse DIR                   replay every group through the model
    rebalance-replay validate --warehouse DIR                   predicted vs observed, GX checkpoints
    rebalance-replay audit    --warehouse DIR [--rules R02,R03] misconfigurations and anomalies (rules)
    rebalance-replay report   --warehouse DIR                   HTML forensics report
    rebalance-replay run      --input PATH... --warehouse DIR   all of the above in order

Common options: ``--conf FILE`` (repeatable), ``--set key=value`` (repeatable), ``--debug``.
Exit codes: 0 the pipeline ran (even with mismatches), 1 a runtime error, 2 bad usage or input,
3 ``--fail-on``: a new finding at that severity, 4 sending new findings (``audit.notify.*``) failed
(``rebalance_replay.jobs.schedule``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, get_args

from rebalance_replay.jobs.bookkeeping import write_json
from rebalance_replay.jobs.config import Config, ReplayPath, load_config
from rebalance_replay.jobs.errors import EXIT_USAGE, UsageError, UserError, user_message
from rebalance_replay.jobs.paths import absolute_location

PROG = "rebalance-replay"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _common(p: argparse.ArgumentParser, *, needs_input: bool) -> None:
    if needs_input:
        p.add_argument(
            "--input",
            "-i",
            nargs="+",
            required=True,
            metavar="PATH",
            help="request-log files or directories (recursive), from any number of brokers",
        )
    p.add_argument(
        "--warehouse", "-w", metavar="DIR", help="warehouse directory (default: storage.warehouse)"
    )
    p.add_argument("--conf", action="append", default=[], metavar="FILE", help="YAML config overrides")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        dest="overrides",
        metavar="KEY=VALUE",
        help="override one setting, e.g. --set broker.group.initial.rebalance.delay.ms=0",
    )
    p.add_argument(
        "--database",
        default=None,
        metavar="NAME",
        help="register every table in the Spark catalog under this database (default: storage.database)",
    )
    p.add_argument("--debug", action="store_true", help="show tracebacks for internal errors")
    p.add_argument(
        "--verbose",
        action="store_true",
        help="show Spark's warnings too (a local session shows its errors only)",
    )


def build_parser() -> argparse.ArgumentParser:
    from rebalance_replay.jobs.schedule import EXIT_CODES_TEXT, add_options
    from rebalance_replay.transforms.audit import rule_ids_text

    parser = _Parser(
        prog=PROG,
        description="Spark-native batch analytics over Kafka group-coordinator request logs.",
        epilog=EXIT_CODES_TEXT,
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    descriptions = {
        "ingest": "land broker request logs (text ≤2.7 and JSON 2.8+, rotated, gzipped) into Delta tables",
        "replay": "replay each group's requests through the coordinator model",
        "validate": "compare predicted and observed responses; Great Expectations checkpoints",
        "audit": f"flag misconfigurations and anomalies (rules {rule_ids_text()})",
        "report": "write the HTML forensics report",
        "run": "ingest, replay, validate, audit and report, in order",
        "history": "list each table's Delta versions with the run that wrote them",
        "maintain": "compact small files, VACUUM old ones, checkpoint the Delta logs",
        "sql": "run a SQL query over the tables registered by name (storage.database)",
    }
    for name, help_text in descriptions.items():
        p = sub.add_parser(name, help=help_text, description=help_text, epilog=EXIT_CODES_TEXT)
        _common(p, needs_input=name in ("ingest", "run"))
        add_options(p, name)
        if name in ("replay", "run"):
            p.add_argument(
                "--incremental",
                action="store_true",
                help="scheduled audit: replay only what landed since the last run, keeping the "
                "coordinator state in the warehouse's checkpoint (default: one-shot batch)",
            )
            p.add_argument(
                "--path",
                choices=get_args(ReplayPath),
                default=None,
                help="replay path (default: replay.path)",
            )
        if name in ("replay", "run", "report"):
            for flag, side in (("--from", "start"), ("--to", "end")):
                p.add_argument(
                    flag,
                    dest=f"window_{side}",
                    type=_instant,
                    default=None,
                    metavar="TIME",
                    help=(
                        f"only what happened from/to this time ({side}; ISO 8601 or epoch ms)"
                        if name == "report"
                        else f"batch replay of a time window: {side} of arrival times (ISO 8601, UTC "
                        "unless an offset is given, or epoch ms)"
                        + (", exclusive" if side == "end" else "")
                        + "; a forensics run, written to WAREHOUSE/forensics/NAME, never over the "
                        "scheduled tables"
                    ),
                )
        if name in ("replay", "run", "report"):
            p.add_argument(
                "--group",
                "-g",
                action="append",
                default=[],
                dest="groups",
                metavar="GROUP",
                help="only this group (repeatable); with replay or run, a forensics run",
            )
        if name in ("replay", "run", "report", "validate", "audit"):
            p.add_argument(
                "--name",
                dest="forensics_name",
                default=None,
                metavar="NAME",
                help="forensics run name (replay, run: default derived from the window and groups; report, "
                "validate, audit: work on WAREHOUSE/forensics/NAME instead of the scheduled tables)",
            )
        if name in ("replay", "report"):
            p.add_argument(
                "--as-of",
                dest="as_of",
                type=_as_of,
                default=None,
                metavar="VERSION|TIMESTAMP",
                help="read the tables as they were: a Delta version of each table read, or an ISO 8601 "
                "time (the last version committed at or before it); replay: with --from/--to/--group",
            )
        if name in ("ingest", "replay", "audit", "run"):
            p.add_argument(
                "--repair",
                action="store_true",
                help=REPAIR_HELP[name],
            )
        if name == "maintain":
            p.add_argument(
                "--dry-run",
                action="store_true",
                help="say what would be compacted and deleted; change nothing",
            )
        if name == "sql":
            p.add_argument(
                "query", metavar="QUERY", help='e.g. "SELECT rule_id, count(*) FROM rr.findings GROUP BY 1"'
            )
            p.add_argument("--limit", type=int, default=50, help="rows to print (default 50)")
        if name in ("report", "run"):
            p.add_argument(
                "--out",
                type=absolute_location,
                default=None,
                metavar="DIR",
                help="report folder (default: WAREHOUSE/reports, or the forensics run's reports/)",
            )
        if name in ("audit", "run"):
            p.add_argument(
                "--rules",
                type=_rule_ids,
                default=None,
                metavar="R02,R03",
                help=f"run only these audit rules, of {rule_ids_text()} (default: every rule enabled in "
                "audit.*)",
            )
    return parser


#: ``--repair``: what each command repairs of a damaged warehouse (rebalance_replay.jobs.damage)
REPAIR_HELP = {
    "ingest": "first repair a damaged requests, quarantine or ingest_files table (a data file missing, the "
    "newest Delta log entry cut short): forget the source files whose rows were lost (or roll the batch "
    "back) and read them again from --input, which must name them; the error of a damaged table says which",
    "replay": "first repair a damaged predictions, transitions, rebalances or member_sessions table (missing "
    "data files removed from the log, a cut newest log entry moved to WAREHOUSE/_damaged) and rebuild the "
    "four from requests",
    "audit": "first repair a damaged findings table (missing data files removed from the log, a cut newest "
    "log entry moved to WAREHOUSE/_damaged) and audit every group again",
    "run": "first repair every damaged table as ingest/replay/audit --repair do (--input must name the "
    "source files whose rows were lost)",
}


def _rule_ids(text: str) -> tuple[str, ...]:
    """``--rules R02,R03``: known rule ids, upper-cased; R2 is R02."""
    import re

    from rebalance_replay.transforms.audit import RULES, rule_ids_text

    ids = []
    for part in (p.strip().upper() for p in text.split(",")):
        if not part:
            continue
        m = re.fullmatch(r"R(\d{1,2})", part)
        rule_id = f"R{int(m.group(1)):02d}" if m else part
        if rule_id not in RULES:
            raise argparse.ArgumentTypeError(f"unknown rule {part!r} (rules are {rule_ids_text()})")
        ids.append(rule_id)
    if not ids:
        raise argparse.ArgumentTypeError("--rules needs at least one rule id, e.g. R02,R03")
    return tuple(sorted(set(ids)))


def _as_of(text: str) -> Any:
    """``--as-of``: a Delta version (a whole number) or a time (ISO 8601)."""
    if text.strip().isdigit():
        return int(text)
    if text.strip().startswith("-"):
        raise argparse.ArgumentTypeError(f"{text!r}: a Delta version is a whole number >= 0")
    return ("ms", _instant(text))


def _instant(text: str) -> int:
    """``--from``/``--to``: epoch ms, or an ISO 8601 time (UTC unless it carries an offset)."""
    from datetime import UTC, datetime

    if text.strip().isdigit():
        return int(text)
    try:
        t = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a time (use e.g. 2024-05-01T10:00:00, 2024-05-01T12:00+02:00 or epoch ms)"
        ) from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=UTC)
    return int(t.timestamp() * 1000)


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def write_summary(warehouse: str, updates: dict[str, Any]) -> Path:
    """Merge ``updates`` into ``<warehouse>/summary.json`` (other stages' keys are kept)."""
    path = Path(warehouse) / "summary.json"
    current: dict[str, Any] = {}
    if path.exists():
        try:
            current = json.loads(path.read_text())
        except json.JSONDecodeError:
            current = {}
    current.update(updates)
    current.setdefault("findings", {})
    current["refused_groups"] = refused_groups(current)
    write_json(path, current, indent=2)
    return path


#: the stages that may refuse a group (a setting's limit), in the order they run
REFUSING_STAGES = ("replay", "report")


def refused_groups(summary: dict[str, Any]) -> list[dict[str, str]]:
    """``summary.json`` ``refused_groups``: every group a stage refused (``{group, stage, reason}``), from
    the stages' own keys (``replay.refused_groups``, ``report.refused_groups``)."""
    out = []
    for stage in REFUSING_STAGES:
        for r in (summary.get(stage) or {}).get("refused_groups") or []:
            out.append({"group": str(r["group"]), "stage": stage, "reason": str(r["reason"])})
    return out


def _session(config: Config) -> Any:
    from rebalance_replay.jobs.spark_session import get_spark

    conf = {
        "spark.master": config.spark.master,
        "spark.driver.memory": config.spark.driver_memory,
        "spark.sql.shuffle.partitions": str(config.spark.shuffle_partitions),
        **config.spark.extra,
    }
    # a progress bar for people at a terminal; none in CI logs or files
    conf.setdefault("spark.ui.showConsoleProgress", "true" if sys.stderr.isatty() else "false")
    from rebalance_replay.jobs.delta.spark import DELTA_SQL_CONF, delta_session_conf, submitted_with_delta

    if submitted_with_delta():  # spark-submit --packages io.delta:…: Delta's SQL too
        for k, v in DELTA_SQL_CONF.items():
            conf.setdefault(k, v)
    elif _needs_delta_jars(config):
        for k, v in delta_session_conf(
            config.storage.delta_spark_package or None, config.storage.delta_spark_ivy or None
        ).items():
            conf.setdefault(k, v)
    if config.storage.database and not config.spark.master.startswith("local"):
        pass  # a cluster session: the cluster's own catalog
    elif config.storage.database:
        from rebalance_replay.jobs.housekeeping import catalog_conf

        for k, v in catalog_conf(config.storage.warehouse).items():
            conf.setdefault(k, v)
    spark = get_spark(conf=conf, log_level="WARN" if _STATE.get("verbose") else None)
    _STATE["spark"] = spark
    _quiet_query_context_logs()
    return spark


def _quiet_query_context_logs() -> None:
    """PySpark 4 logs each analysis error of a query (a table that is not there, a bad column) with its
    Java stack trace, as JSON to stderr, as it raises it; the CLI says every error in one line itself."""
    from pyspark.logger import PySparkLogger

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).disabled = True


def _needs_delta_jars(config: Config) -> bool:
    """A locally built session loads Delta's jars for the delta-spark engine (``storage.engine``, or
    ``auto`` choosing it: a cluster master or a warehouse URI) and for tables by name."""
    from rebalance_replay.jobs.paths import is_uri

    engine = config.storage.engine
    warehouse = config.storage.warehouse
    auto_spark = not config.spark.master.startswith("local") or (
        is_uri(warehouse) and not warehouse.startswith("file:")
    )
    return engine == "delta-spark" or (engine == "auto" and auto_spark) or bool(config.storage.database)


def _store(spark: Any, config: Config, *, as_of: Any = None) -> Any:
    from rebalance_replay.jobs.delta import choose_engine, open_store

    engine, why = choose_engine(spark, config.storage.warehouse, config.storage.engine)
    store = open_store(spark, config.storage.warehouse, engine)
    store.run_id = _STATE.get("run_id")
    master = spark.sparkContext.master
    line = f"storage: {engine} engine ({why}), Spark master {master}"
    if line not in _LOGGED:  # once per process
        _LOGGED.add(line)
        _say(line)
    _STATE["store"] = store
    return store.at(as_of) if as_of is not None else store


_LOGGED: set[str] = set()
#: this command's run id, session and store (for the run record and the catalog, after the command)
_STATE: dict[str, Any] = {}


def cmd_ingest(args: argparse.Namespace, config: Config) -> int:
    from rebalance_replay.jobs.ingest import (
        format_counts_table,
        ingest,
        ingest_summary,
        resolve_inputs,
        result_line,
    )

    files = resolve_inputs(config, args.input)  # bad paths fail here, before Spark starts
    spark = _session(config)
    result = ingest(spark, _store(spark, config), config, files, log=_say)
    path = write_summary(config.storage.warehouse, ingest_summary(result))
    print(result_line(result))
    print(format_counts_table(result))
    print(f"summary: {path}")
    return 0


def _window(args: argparse.Namespace) -> tuple[int | None, int | None]:
    window = (getattr(args, "window_start", None), getattr(args, "window_end", None))
    if None not in window and window[0] >= window[1]:  # type: ignore[operator]
        raise UsageError("--from must be before --to")
    return window


def cmd_replay(args: argparse.Namespace, config: Config) -> int:
    from rebalance_replay.jobs.replay import replay
    from rebalance_replay.transforms.report.naming import forensics_name, valid_name

    window = _window(args)
    groups = tuple(getattr(args, "groups", None) or ())
    forensics = window != (None, None) or bool(groups)
    if getattr(args, "incremental", False) and forensics:
        raise UsageError(
            "--from/--to/--group select a forensics window for a batch replay; they do not go with "
            "--incremental"
        )
    name = getattr(args, "forensics_name", None)
    if name is not None and not forensics:
        raise UsageError("--name names a forensics run: give --from/--to and/or --group with it")
    if name is not None and not valid_name(name):
        raise UsageError(f"--name {name!r}: use letters, digits, '.', '_' and '-' only")

    as_of = getattr(args, "as_of", None)
    if as_of is not None and not forensics:
        raise UsageError(
            "--as-of replays the requests as they were into a forensics run: give --from/--to and/or "
            "--group with it"
        )
    _known_groups(Path(config.storage.warehouse), groups)
    spark = _session(config)
    store = _store(spark, config, as_of=as_of)
    output = None
    summary_dir = config.storage.warehouse
    if forensics:
        from rebalance_replay.jobs.delta import open_store
        from rebalance_replay.jobs.forensics import Forensics

        name = name or forensics_name(window, groups)
        summary_dir = str(Path(config.storage.warehouse) / "forensics" / name)
        output = open_store(spark, summary_dir, store.engine)
        output.run_id = store.run_id
        args.forensics_name = name  # `run --from/--to`: its report renders this forensics run
        _STATE["summary_dir"] = summary_dir
        # validate and audit (of `run`, or of this replay: see _replay_command) work on this run
        _STATE["forensics"] = Forensics(name, summary_dir, output, store, window, groups)
        _say(f"replay: forensics run {name!r} → {summary_dir} (the scheduled tables are not touched)")
    result = replay(
        spark,
        store,
        config,
        incremental=getattr(args, "incremental", False),
        final=getattr(args, "final", False),
        path=getattr(args, "path", None),
        window=window,
        groups=groups,
        output=output,
        log=_say,
    )
    extra: dict[str, Any] = {}
    if forensics:
        extra = {"forensics": _STATE["forensics"].describe()}
    write_summary(summary_dir, {**result.as_summary(), **extra})
    from rebalance_replay.transforms.report.units import plural

    if result.broker:
        from rebalance_replay.jobs.broker_facts import summary_lines

        for line in summary_lines(result.broker):
            print(line)
    print(result.this_run_line())  # what this run replayed, what it held back (the horizon in UTC)
    print(result.warehouse_line())  # the output tables after it
    for line in result.refused_lines():  # a group too large to replay: why, the others went on
        print(line)
    replayed = result.new_rows if result.replayed_rows is None else result.replayed_rows
    if result.bulk_validated and not result.up_to_date:
        print(
            f"replay: this run: {result.bulk_validated} of {plural(replayed, 'request')} validated in bulk "
            "(routine heartbeats and offset commits of Stable generations)"
        )
    if result.kip848_groups:
        speak = "uses ConsumerGroupHeartbeat, not the classic protocol"
        if len(result.kip848_groups) > 1:
            speak = "use ConsumerGroupHeartbeat, not the classic protocol"
        print(
            f"replay: {plural(len(result.kip848_groups), 'KIP-848 group')} {speak} (not replayed): "
            f"{', '.join(result.kip848_groups[:10])}"
        )
    if result.late_rows:
        print(
            f"replay: this run: {plural(result.late_rows, 'request')} landed after "
            f"{'its' if result.late_rows == 1 else 'their'} time had been replayed (raise "
            "replay.late_tolerance_ms)"
        )
    return 0


def _replay_command(args: argparse.Namespace, config: Config) -> int:
    """``replay``: a forensics replay (``--from/--to/--group``) goes on to validate, audit and report
    its window, so the run is complete in one command (``run`` does those stages itself)."""
    status = cmd_replay(args, config)
    if _STATE.get("forensics") is not None:
        for stage in ("validate", "audit", "report"):
            status = max(status, COMMANDS[stage](args, config))
    return status


def _forensics_folder(config: Config, name: str) -> Path:
    """The folder of the forensics run ``name``; a usage error (before Spark starts) when there is none."""
    root = Path(config.storage.warehouse)
    folder = root / "forensics" / name
    if not folder.is_dir():
        raise UsageError(f"no forensics run {name!r} in {root} (see {root / 'forensics'})")
    return folder


def _forensics_run(args: argparse.Namespace, config: Config) -> Any:
    """The forensics run this validate/audit works on: the one this command replayed (``run``/``replay``
    with a window or groups), or the one ``--name`` names (window and groups as it was replayed with);
    None for the scheduled tables. A missing run is a usage error, before Spark starts."""
    from rebalance_replay.jobs.forensics import Forensics, recorded_scope

    if _STATE.get("forensics") is not None or args.command not in ("validate", "audit"):
        return _STATE.get("forensics")
    name = getattr(args, "forensics_name", None)
    if name is None:
        return None
    folder = _forensics_folder(config, name)
    scope = recorded_scope(folder)
    if scope is None:  # a folder of a scoped report: no replay of its own to validate or audit
        raise UsageError(f"no forensics run {name!r} in {config.storage.warehouse} (see {folder.parent})")
    from rebalance_replay.jobs.delta import open_store

    spark = _session(config)
    source = _store(spark, config)
    output = open_store(spark, str(folder), source.engine)
    output.run_id = source.run_id
    _STATE["summary_dir"] = str(folder)
    _STATE["forensics"] = Forensics(name, str(folder), output, source, *scope)
    return _STATE["forensics"]


def cmd_validate(args: argparse.Namespace, config: Config) -> int:
    from rebalance_replay.jobs.validate import validate

    within = _forensics_run(args, config)
    spark = _session(config)
    store = _store(spark, config) if within is None else within.store
    result = validate(spark, store, config, log=_say, within=within)
    write_summary(_summary_dir(config), result.as_summary())
    print(result.format_text())
    return 0


def cmd_audit(args: argparse.Namespace, config: Config) -> int:
    from rebalance_replay.jobs.audit import audit
    from rebalance_replay.jobs.schedule import after_audit, json_mode, print_json_lines

    within = _forensics_run(args, config)
    spark = _session(config)
    store = _store(spark, config) if within is None else within.store
    result = audit(spark, store, config, rules=getattr(args, "rules", None), log=_say, within=within)
    summary = result.as_summary()
    # the tables are written: notify (never for a forensics run: it looks back), the exit code
    code, extra = after_audit(args, config, result, say=_say, notify=within is None)
    summary["audit"].update(extra)
    write_summary(_summary_dir(config), summary)
    print(result.format_text(), file=sys.stderr if json_mode(args) else sys.stdout)
    if json_mode(args) and args.command == "audit":
        print_json_lines(result)
    args.audit_result = result  # `run --format json` prints the findings after the report
    return code


def _known_groups(warehouse: Path, groups: tuple[str, ...]) -> None:
    """Refuse, before Spark starts, ``--group`` names the warehouse's ``requests`` never saw (read with
    delta-rs from a local warehouse; elsewhere the report says so after reading)."""
    table = warehouse / "requests"
    if not groups or not (table / "_delta_log").is_dir():
        return
    import pyarrow.compute as pc
    from deltalake import DeltaTable

    column = DeltaTable(str(table)).to_pyarrow_dataset().to_table(columns=["group_id"]).column("group_id")
    seen = set(pc.unique(column).to_pylist())
    unknown = sorted(set(groups) - seen)
    if unknown:
        near = sorted(g for g in seen if g and any(u.lower() in g.lower() for u in unknown))[:5]
        hint = f" (did you mean {', '.join(near)}?)" if near else f" ({len(seen)} group(s) in the log)"
        raise UsageError(f"--group {', '.join(unknown)}: no such group in {table}{hint}")


def cmd_report(args: argparse.Namespace, config: Config) -> int:
    from rebalance_replay.jobs.forensics import recorded_scope
    from rebalance_replay.jobs.report import report
    from rebalance_replay.transforms.report.naming import forensics_name

    name = getattr(args, "forensics_name", None)
    root = Path(config.storage.warehouse)
    source = root if name is None else _forensics_folder(config, name)
    # checked before Spark starts: a reversed window, a group the log does not have
    window = _window(args) if args.command == "report" else (None, None)
    groups = tuple(getattr(args, "groups", None) or ())
    if args.command == "report":
        _known_groups(source, groups)
    # a report scoped to a window or groups of the scheduled tables is forensics: its pages and summary go
    # beside the forensics runs, never over the scheduled run's reports and summary.json
    scoped = name is None and (window != (None, None) or bool(groups))
    target = root / "forensics" / forensics_name(window, groups) if scoped else source
    recorded = None if name is None else recorded_scope(source)
    if recorded is not None:  # a forensics run's pages count its own window and groups (unless narrowed)
        window = window if window != (None, None) else recorded[0]
        groups = groups or recorded[1]
    if target != root:
        _STATE["summary_dir"] = str(target)
    out = getattr(args, "out", None) or str(target / "reports")
    spark = _session(config)
    from rebalance_replay.jobs.delta import open_store

    as_of = getattr(args, "as_of", None)
    store = _store(spark, config, as_of=as_of)
    if name is not None:
        store = open_store(spark, str(source), store.engine).at(as_of)
    result = report(
        spark,
        store,
        config,
        out_dir=out,
        groups=groups,
        window=window,
        summary_dir=str(source),
        warehouse=config.storage.warehouse,
        log=_say,
    )
    target.mkdir(parents=True, exist_ok=True)
    write_summary(str(target), {"report": result.as_dict()})
    print(_report_line(result, scope=None if target == root else target.name))
    for line in result.refused_lines():  # a group too large for a page: why, the others have theirs
        print(line)
    return 0


def cmd_history(args: argparse.Namespace, config: Config) -> int:
    from rebalance_replay.jobs.housekeeping import format_history, history

    spark = _session(config)
    rows = history(_store(spark, config))
    if not rows:
        print(f"history: no tables in {config.storage.warehouse}")
        return 0
    print(f"history: {len(rows)} version(s) of {len({r.table for r in rows})} table(s)")
    print(format_history(rows))
    return 0


def cmd_maintain(args: argparse.Namespace, config: Config) -> int:
    from rebalance_replay.jobs.housekeeping import maintain

    spark = _session(config)
    result = maintain(_store(spark, config), config, dry_run=args.dry_run, log=_say)
    if not args.dry_run:
        write_summary(config.storage.warehouse, result.as_summary())
    print(result.format_text())
    return 0


def cmd_sql(args: argparse.Namespace, config: Config) -> int:
    if not config.storage.database:
        raise UsageError("sql reads the tables by name: give --database NAME (or set storage.database)")
    spark = _session(config)
    _store(spark, config)
    from pyspark.errors import AnalysisException, ParseException

    try:
        df = spark.sql(args.query)
        rows = df.limit(args.limit).collect()
    except (AnalysisException, ParseException) as e:
        raise UsageError(f"sql: {str(e).strip().splitlines()[0]}") from None
    print("\t".join(df.columns))
    for r in rows:
        print("\t".join("" if v is None else str(v) for v in r))
    return 0


def cmd_run(args: argparse.Namespace, config: Config) -> int:
    from rebalance_replay.jobs.schedule import json_mode, print_json_lines, quiet_stdout

    with quiet_stdout(args):  # --format json: stdout is the findings'
        status = cmd_ingest(args, config)
        for stage in (cmd_replay, cmd_validate, cmd_audit, cmd_report):
            status = max(status, stage(args, config))
        path = Path(_summary_dir(config)) / "summary.json"  # a forensics run's own, with --from/--to/--group
        summary = json.loads(path.read_text()) if path.exists() else {}
        print(headline(summary))
        print(f"summary: {path}")
        if summary.get("report", {}).get("index"):
            print(f"report: {summary['report']['index']}")
    if json_mode(args) and getattr(args, "audit_result", None) is not None:
        print_json_lines(args.audit_result)
    return status


def _report_line(result: Any, scope: str | None) -> str:
    """``report:``: what this run wrote, and of what (the warehouse, or a forensics run's window)."""
    from rebalance_replay.transforms.report.units import plural

    of = "the warehouse's" if scope is None else f"forensics run {scope!r}:"
    return (
        f"report: this run wrote {plural(result.pages, 'page')} on {of} {plural(result.groups, 'group')} "
        f"→ {result.index}"
    )


def headline(summary: dict[str, Any]) -> str:
    """The figures a person looks for first, from ``summary.json``: what this run did (``run: this run:``)
    and the warehouse's totals after it (``run: warehouse total:``), never one mixed with the other."""
    from rebalance_replay.transforms.report.units import plural

    done = []
    ingest = summary.get("ingest")
    if ingest is not None:
        new = (ingest.get("this_run") or {}).get("requests", 0)
        done.append(
            "nothing new to ingest"
            if ingest.get("batch_id") is None
            else f"{plural(new, 'request')} ingested"
        )
    replay = summary.get("replay")
    if replay is not None:
        if replay.get("up_to_date"):
            done.append("nothing new to replay")
        else:
            replayed = replay.get("replayed_rows")
            replayed = replay.get("new_rows", 0) if replayed is None else replayed
            this = replay.get("this_run") or {}
            held = replay.get("held_rows") or 0
            predictions = plural(this.get("predictions", 0), "prediction")
            done.append(
                f"{plural(replayed, 'request')} replayed → {predictions}, "
                f"{plural(this.get('rebalances', 0), 'rebalance')}"
                + (f" ({held} held back for late arrivals)" if held else "")
            )
    audit = summary.get("audit") or {}
    if audit:
        done.append(plural((audit.get("status") or {}).get("new", 0), "new finding"))
    refused = sorted({r["group"] for r in summary.get("refused_groups") or []})
    if refused:
        done.append(
            f"{plural(len(refused), 'group')} refused ({', '.join(refused[:3])}: summary.json refused_groups)"
        )
    agreement = summary.get("agreement")
    total = []
    if "requests" in summary:  # (a forensics run's summary has none: its requests are the warehouse's)
        total.append(
            f"{plural(summary['requests'], 'request')} ({summary.get('quarantined', 0)} quarantined)"
        )
    total += [
        f"{plural(summary.get('predictions', 0), 'prediction')} (agreement "
        + ("n/a" if agreement is None else f"{agreement:.2%}")
        + ")",
        plural(summary.get("rebalances", 0), "rebalance"),
    ]
    if audit or summary.get("findings"):
        by_sev = audit.get("by_severity") or {}
        sev = ", ".join(f"{by_sev[k]} {k}" for k in ("critical", "warning", "info") if by_sev.get(k))
        total.append(
            plural(sum((summary.get("findings") or {}).values()), "open finding")
            + (f" ({sev})" if sev else "")
        )
    lines = []
    if done:
        lines.append("run: this run: " + "; ".join(done))
    whose = "forensics run" if summary.get("forensics") else "warehouse"
    lines.append(f"run: {whose} total: " + ", ".join(total))
    if summary.get("data_docs"):
        lines.append(f"run: Data Docs: {summary['data_docs']}")
    return "\n".join(lines)


COMMANDS: dict[str, Callable[[argparse.Namespace, Config], int]] = {
    "ingest": cmd_ingest,
    "replay": _replay_command,
    "validate": cmd_validate,
    "audit": cmd_audit,
    "report": cmd_report,
    "run": cmd_run,
    "history": cmd_history,
    "maintain": cmd_maintain,
    "sql": cmd_sql,
}

#: commands that write tables: each is a run (an id in summary.json and in its Delta commits)
WRITING = ("ingest", "replay", "validate", "audit", "report", "run", "maintain")


def _check_tables(args: argparse.Namespace, config: Config) -> None:
    """Before Spark starts: a damaged table the command reads is a one-line error naming the table, the
    file or version and the repair; with ``--repair`` the command repairs the tables it writes first."""
    from rebalance_replay.jobs.damage import guard

    def inputs() -> list[str]:
        from rebalance_replay.jobs.ingest import resolve_inputs

        return [f.path for f in resolve_inputs(config, args.input)]

    guard(
        config.storage.warehouse,
        args.command,
        repair_them=getattr(args, "repair", False),
        inputs=inputs if getattr(args, "input", None) else None,
        run_id=_STATE.get("run_id"),
        say=_say,
    )


def _summary_dir(config: Config) -> str:
    """Where this command's summary.json is: a forensics command's own folder (set by the command), so
    the scheduled run's summary is not touched; else the warehouse."""
    return str(_STATE.get("summary_dir") or config.storage.warehouse)


def _after(command: str, config: Config) -> None:
    """Record the run (its id, command, the table versions it left) in summary.json and register the
    tables by name when ``storage.database`` is set."""
    store = _STATE.get("store")
    if store is None:
        return
    if command in WRITING:
        from datetime import UTC, datetime

        from rebalance_replay.jobs.housekeeping import table_versions

        where = _summary_dir(config)
        path = Path(where) / "summary.json"
        runs = []
        if path.exists():
            try:
                runs = list(json.loads(path.read_text()).get("runs") or [])
            except json.JSONDecodeError:
                runs = []
        runs.append(
            {
                "run_id": _STATE["run_id"],
                "command": command,
                "finished": datetime.now(UTC).isoformat(timespec="seconds"),
                "engine": store.engine,
                "versions": table_versions(store),
            }
        )
        write_summary(where, {"run_id": _STATE["run_id"], "runs": runs[-200:]})
    if config.storage.database:
        from rebalance_replay.jobs.housekeeping import register_tables

        names = register_tables(_STATE["spark"], store, config.storage.database)
        if names and command in WRITING:
            _say(f"catalog: {len(names)} table(s) by name in {config.storage.database} ({names[0]}, …)")


def next_step(args: argparse.Namespace, config: Config) -> str | None:
    """What a user types after a command that ran well: the pipeline's next stage, or where to look."""
    wh = f"--warehouse {config.storage.warehouse}"
    name = getattr(args, "forensics_name", None)
    summary = Path(_summary_dir(config)) / "summary.json"
    index = None
    if summary.exists():
        with contextlib.suppress(json.JSONDecodeError):
            index = (json.loads(summary.read_text()).get("report") or {}).get("index")
    forensics = f" --name {name}" if name else ""
    if args.command in ("report", "run") or (args.command == "replay" and name):
        return f"open {index} in a browser (it works offline)" if index else None
    follows = {"ingest": "replay", "replay": "validate", "validate": "audit", "audit": "report"}
    if args.command in follows:
        return f"{PROG} {follows[args.command]} {wh}{forensics}"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    parser = build_parser()
    debug = "--debug" in (argv if argv is not None else sys.argv[1:])
    try:
        args = parser.parse_args(argv)
        from rebalance_replay.jobs.schedule import check_usage

        check_usage(args)
        database = [] if args.database is None else [f"storage.database={args.database}"]
        config = load_config(args.conf, [*args.overrides, *database], args.warehouse)
        from rebalance_replay.jobs.housekeeping import new_run_id

        _STATE.clear()
        _STATE["run_id"] = new_run_id(args.command)
        _STATE["verbose"] = getattr(args, "verbose", False)
        from rebalance_replay.jobs.locking import warehouse_lock
        from rebalance_replay.jobs.warehouse import open_warehouse

        with warehouse_lock(
            config.storage.warehouse, " ".join([PROG, args.command]), config.storage.lock_wait_s
        ):
            open_warehouse(config.storage.warehouse, config.output.redact, _say)
            _check_tables(args, config)
            status = COMMANDS[args.command](args, config)
            _after(args.command, config)
            step = next_step(args, config) if status == 0 else None
            if step:
                _say(f"next: {step}")
            return status
    except UserError as e:  # usage, config, input, warehouse, storage, Java: the message says it all
        if debug and e.exit_code != EXIT_USAGE:  # nothing ran on bad usage/config/input: no trace
            traceback.print_exc()
        hint = f" (see '{PROG} --help')" if isinstance(e, UsageError) else ""
        _say(f"{PROG}: error: {e.message}{hint}")
        return e.exit_code
    except KeyboardInterrupt:
        _say(f"{PROG}: interrupted")
        return 130
    except Exception as e:  # a one-line message, never a stack trace, unless --debug
        if debug:
            traceback.print_exc()
        hint = "" if debug else " (rerun with --debug for details)"
        _say(f"{PROG}: error: {user_message(e)}{hint}")
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
