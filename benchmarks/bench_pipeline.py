"""The whole pipeline, stage by stage, side by side on ONE generated log, in ONE run.

    .venv/bin/python benchmarks/bench_pipeline.py [--lines 1000000] [--groups 200] [--members 5]
        [--stages bare ingest model fast stateful validate run] [--in-process] [--set KEY=VALUE ...]
        [--engines delta-rs delta-spark]

``--engines``: every stage that writes or reads the tables runs once per storage engine, side by side in
the same run (each engine its own warehouse, ``<data>/warehouse-<engine>``); rows are named
``ingest (delta-rs)``, ``ingest (delta-spark)``, ….

A heartbeat-dominated JSON-era log (the simulator's consumers heartbeat every 3 s and commit every 5 s;
the generator of ``bench_replay.py``) of about ``--lines`` lines over ``--groups`` groups is generated once
into ``benchmarks/.data/pipeline-l<lines>-g<groups>-m<members>/logs`` (reused by later runs). Then, in order:

- ``bare``: the baseline: ``spark.read.text`` + ``from_json`` (request header, request, response, timings)
  + a parquet write of the same files — what Spark itself costs;
- ``ingest_python`` / ``ingest_spark_writer``: the ingest with every line through ``parse_line``
  (``input.columnar_json=false``) / with the request rows handed to Spark's parquet writer (what the
  delta-spark engine does) instead of written by the tasks themselves: the befores, in the same run;
- ``ingest``: ``rebalance_replay.jobs.ingest.ingest`` into a fresh warehouse (``<data>/warehouse``);
- ``model``: the replay baseline: the same coordinator model (``GroupReplayer``), one Python process, the
  classic-group rows of that warehouse in memory (read before the clock starts), every request through
  the model one by one;
- ``model_columns``: the same process, each group's rows as an Arrow slice with bulk validation of routine
  traffic (``replay.bulk``) — what a Spark task does per group, without Spark (for reference: the ratios
  are against ``model``);
- ``fast`` / ``stateful``: ``rebalance_replay.jobs.replay.replay`` on that warehouse with ``path=fast`` /
``path=stateful``;
- ``validate``: ``rebalance_replay.jobs.validate.validate`` on it (after the stateful replay);
- ``audit``: ``rebalance_replay.jobs.audit.audit`` on it (every rule; no Great Expectations);
- ``run``: the whole CLI ``run`` (ingest → replay → validate …) into a second fresh warehouse, JVM start
  included.

Each stage runs in its own subprocess (``--stage NAME --data DIR``: callable on its own against the same
warehouse), timed inside the subprocess around the stage only (the JVM start is not counted, except for
``run``); the parent samples the RSS of the subprocess tree from ``/proc`` every 0.2 s: the driver JVM,
the driver's Python, and the Python workers (peak of the largest one, and of their sum). ``--in-process``
runs every stage in this process with one SparkSession instead (no per-stage memory figures).

Ratios: line stages (bare, ingest, run) as time ÷ the bare pass's time (target: ingest ≤ 1.5); replay
stages as events/s ÷ the single-process model's events/s (targets: fast ≥ 1.6, stateful ≥ 1.0).
Not a test: the numbers depend on the machine; results go into ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

STAGES = (
    "bare",
    "ingest_python",
    "ingest_spark_writer",
    "ingest",
    "model",
    "model_columns",
    "fast",
    "stateful",
    "validate",
    "audit",
    "run",
)
#: stages that neither write nor read a Delta table
ENGINE_FREE = ("bare", "model", "model_columns")
LINE_STAGES = ("bare", "ingest_python", "ingest_spark_writer", "ingest", "run")
# the bare pass's schema: what a hand-written Spark job over these logs would declare
BARE_SCHEMA = (
    "isForwarded boolean, "
    "requestHeader struct<requestApiKey:int,requestApiVersion:int,correlationId:int,clientId:string,"
    "requestApiKeyName:string>, "
    "request struct<groupId:string,generationId:int,generationIdOrMemberEpoch:int,memberId:string,"
    "groupInstanceId:string,topics:array<struct<name:string,partitions:array<struct<partitionIndex:int,"
    "committedOffset:bigint,committedLeaderEpoch:int,committedMetadata:string>>>>>, "
    "response struct<throttleTimeMs:int,errorCode:int,topics:array<struct<name:string,"
    "partitions:array<struct<partitionIndex:int,errorCode:int>>>>>, "
    "connection string, totalTimeMs double, requestQueueTimeMs double, localTimeMs double, "
    "remoteTimeMs double, throttleTimeMs bigint, responseQueueTimeMs double, sendTimeMs double, "
    "securityProtocol string, principal string, listener string, "
    "clientInformation struct<softwareName:string,softwareVersion:string>"
)


@dataclass
class StageResult:
    stage: str
    seconds: float
    units: int
    unit: str  # "lines" or "events"
    note: str = ""
    rss: dict[str, int] = field(default_factory=dict)  # bytes

    @property
    def rate(self) -> float:
        return self.units / self.seconds if self.seconds > 0 else float("nan")


# ----------------------------------------------------------------------------------------------------
# Data
# ----------------------------------------------------------------------------------------------------


def data_dir(lines: int, groups: int, members: int) -> Path:
    return ROOT / "benchmarks" / ".data" / f"pipeline-l{lines}-g{groups}-m{members}"


def ensure_log(data: Path, lines: int, groups: int, members: int) -> int:
    """Generate the log once; returns its number of lines."""
    marker = data / "log-ok.json"
    if marker.exists():
        return int(json.loads(marker.read_text())["lines"])
    from benchmarks.bench_replay import generate

    shutil.rmtree(data, ignore_errors=True)
    t = time.perf_counter()
    n = generate(data / "logs", lines, groups, members)
    print(f"generated {n:,} lines in {time.perf_counter() - t:.1f}s", flush=True)
    data.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps({"lines": n}))
    return n


def _engine(overrides: list[str]) -> str | None:
    """The ``storage.engine`` the overrides name (``--engines`` adds one per engine), if any."""
    named = [o.split("=", 1)[1] for o in overrides if o.startswith("storage.engine=")]
    return named[-1] if named else None


def _config(data: Path, warehouse: str, overrides: list[str]) -> Any:
    from rebalance_replay.jobs.config import load_config

    engine = _engine(overrides)
    suffix = f"-{engine}" if engine else ""  # one warehouse per engine, side by side
    return load_config([], overrides, str(data / f"{warehouse}{suffix}"))


def _spark(overrides: list[str] | None = None) -> Any:
    from rebalance_replay.jobs.spark_session import get_spark

    conf = {"spark.ui.showConsoleProgress": "false"}
    if _engine(overrides or []) == "delta-spark":
        from rebalance_replay.jobs.delta import delta_session_conf

        conf.update(delta_session_conf(ivy_dir=str(ROOT / ".cache" / "ivy")))
    return get_spark("bench-pipeline", conf=conf)


def _n_lines(data: Path) -> int:
    return int(json.loads((data / "log-ok.json").read_text())["lines"])


# ----------------------------------------------------------------------------------------------------
# Stages (each callable in-process; all share <data>/warehouse except bare and run)
# ----------------------------------------------------------------------------------------------------


def stage_bare(data: Path, overrides: list[str]) -> StageResult:
    from pyspark.sql import functions as F

    spark = _spark(overrides)
    out = data / "bare-out"
    shutil.rmtree(out, ignore_errors=True)
    t = time.perf_counter()
    text = spark.read.text(str(data / "logs"), recursiveFileLookup=True)
    body = F.regexp_extract("value", r"Completed request:(\{.*\}) \(kafka\.request\.logger\)$", 1)
    parsed = text.select(
        F.regexp_extract("value", r"^\[([^\]]+)\] (\w+) ", 1).alias("ts"),
        F.from_json(body, BARE_SCHEMA).alias("j"),
    ).select("ts", "j.*")
    parsed.write.parquet(str(out))
    secs = time.perf_counter() - t
    shutil.rmtree(out, ignore_errors=True)
    return StageResult("bare", secs, _n_lines(data), "lines", "read.text + from_json + parquet write")


def _ingest_stage(
    name: str, warehouse: str, data: Path, overrides: list[str], task_files: bool = True
) -> StageResult:
    from rebalance_replay.jobs.delta import open_store
    from rebalance_replay.jobs.ingest import ingest

    config = _config(data, warehouse, overrides)
    shutil.rmtree(config.storage.warehouse, ignore_errors=True)
    spark = _spark(overrides)
    store = open_store(spark, config.storage.warehouse, config.storage.engine)
    if not task_files:
        store.task_stage = lambda table: None  # type: ignore[method-assign]
    t = time.perf_counter()
    res = ingest(spark, store, config, [str(data / "logs")], log=lambda m: None)
    secs = time.perf_counter() - t
    how = "columnar routine lines" if config.input.columnar_json else "every line through parse_line"
    how += ", the tasks write the files" if task_files else ", Spark's parquet writer"
    note = f"{res.run.requests:,} requests, {res.run.quarantined} quarantined, {how}"
    return StageResult(name, secs, res.run.lines_read, "lines", note)


def stage_ingest(data: Path, overrides: list[str]) -> StageResult:
    return _ingest_stage("ingest", "warehouse", data, overrides)


def stage_ingest_python(data: Path, overrides: list[str]) -> StageResult:
    """The ingest with the per-line Python parser only (``input.columnar_json=false``), into a warehouse
    of its own that is removed afterwards: the before of the columnar parser, in the same invocation."""
    try:
        return _ingest_stage(
            "ingest_python", "warehouse-python", data, [*overrides, "input.columnar_json=false"]
        )
    finally:
        shutil.rmtree(data / "warehouse-python", ignore_errors=True)


def stage_ingest_spark_writer(data: Path, overrides: list[str]) -> StageResult:
    """The ingest with the request rows handed to Spark's parquet writer (``DeltaStore.task_stage`` None,
    what the delta-spark engine does) instead of written by the tasks themselves: the before of the task
    files, in the same invocation."""
    try:
        return _ingest_stage(
            "ingest_spark_writer", "warehouse-spark-writer", data, overrides, task_files=False
        )
    finally:
        shutil.rmtree(data / "warehouse-spark-writer", ignore_errors=True)


def _classic(spark: Any, config: Any) -> Any:
    from rebalance_replay.jobs.delta import open_store
    from rebalance_replay.jobs.replay import _classic_rows
    from rebalance_replay.schemas import REQUESTS

    store = open_store(spark, config.storage.warehouse, config.storage.engine)
    return _classic_rows(store.read(REQUESTS))


def stage_model(data: Path, overrides: list[str]) -> StageResult:
    from benchmarks.bench_replay import replay_in_process
    from rebalance_replay.jobs.replay import settings_from

    config = _config(data, "warehouse", overrides)
    spark = _spark(overrides)
    table = _classic(spark, config).toArrow()
    horizon = int(max(table.column("completion_ms").to_pylist())) + 1
    groups, secs = replay_in_process(table, settings_from(config), horizon)
    return StageResult("model", secs, table.num_rows, "events", f"{groups} groups, rows in memory")


def stage_model_columns(data: Path, overrides: list[str]) -> StageResult:
    from benchmarks.bench_replay import replay_in_process
    from rebalance_replay.jobs.replay import settings_from

    config = _config(data, "warehouse", overrides)
    spark = _spark(overrides)
    table = _classic(spark, config).toArrow()
    horizon = int(max(table.column("completion_ms").to_pylist())) + 1
    groups, secs = replay_in_process(table, settings_from(config), horizon, columns=True)
    note = f"{groups} groups, Arrow slices in memory, bulk validation (no Spark)"
    return StageResult("model_columns", secs, table.num_rows, "events", note)


def _replay_stage(name: str, path: str, data: Path, overrides: list[str]) -> StageResult:
    from rebalance_replay.jobs.delta import open_store
    from rebalance_replay.jobs.replay import ReplayDirs, replay

    config = _config(data, "warehouse", overrides)
    spark = _spark(overrides)
    store = open_store(spark, config.storage.warehouse, config.storage.engine)
    ReplayDirs(config.storage.warehouse).manifest.unlink(missing_ok=True)  # never "up to date"
    t = time.perf_counter()
    res = replay(spark, store, config, path=path, log=lambda m: None)
    secs = time.perf_counter() - t
    share = res.bulk_validated / res.new_rows if res.new_rows else 0.0
    note = f"{res.groups} groups, {res.path} path, {share:.1%} validated in bulk"
    return StageResult(name, secs, res.new_rows, "events", note)


def stage_fast(data: Path, overrides: list[str]) -> StageResult:
    return _replay_stage("fast", "fast", data, overrides)


def stage_stateful(data: Path, overrides: list[str]) -> StageResult:
    return _replay_stage("stateful", "stateful", data, overrides)


def _on_warehouse(data: Path, overrides: list[str]) -> tuple[Any, Any, Any, int]:
    """(config, spark, store, classic-group rows) of the shared warehouse, for a stage that reads it."""
    from rebalance_replay.jobs.delta import open_store

    config = _config(data, "warehouse", overrides)
    spark = _spark(overrides)
    store = open_store(spark, config.storage.warehouse, config.storage.engine)
    return config, spark, store, _classic(spark, config).count()


def stage_validate(data: Path, overrides: list[str]) -> StageResult:
    from rebalance_replay.jobs.validate import validate

    config, spark, store, n = _on_warehouse(data, overrides)
    t = time.perf_counter()
    res = validate(spark, store, config, log=lambda m: None)
    secs = time.perf_counter() - t
    agreement = res.agreement
    note = "agreement " + ("n/a" if agreement is None else f"{agreement:.4%}")
    return StageResult("validate", secs, n, "events", note)


def stage_audit(data: Path, overrides: list[str]) -> StageResult:
    from rebalance_replay.jobs.audit import _state_path, audit

    config, spark, store, n = _on_warehouse(data, [*overrides, "report.great_expectations=false"])
    _state_path(config.storage.warehouse).unlink(missing_ok=True)  # never "up to date": every group
    t = time.perf_counter()
    res = audit(spark, store, config, log=lambda m: None)
    secs = time.perf_counter() - t
    note = f"{res.evaluated_groups} groups, {len(res.findings)} findings"
    return StageResult("audit", secs, n, "events", note)


def cli_run_cmd(logs: Path, warehouse: Path, overrides: list[str]) -> list[str]:
    """The CLI's whole ``run`` over ``logs`` into ``warehouse``, each override a ``--set``."""
    cmd = [sys.executable, "-m", "rebalance_replay.jobs.cli", "run"]
    cmd += ["--input", str(logs), "--warehouse", str(warehouse)]
    for o in overrides:
        cmd += ["--set", o]
    return cmd


def stage_run(data: Path, overrides: list[str]) -> StageResult:
    engine = _engine(overrides)
    wh = data / ("warehouse-run" + (f"-{engine}" if engine else ""))
    shutil.rmtree(wh, ignore_errors=True)
    cmd = cli_run_cmd(data / "logs", wh, overrides)
    if engine == "delta-spark":
        cmd += ["--set", f"storage.delta_spark_ivy={ROOT / '.cache' / 'ivy'}"]
    t = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=_env(), capture_output=True, text=True)
    secs = time.perf_counter() - t
    if proc.returncode != 0:
        raise RuntimeError(f"run failed ({proc.returncode}): {proc.stderr[-2000:]}")
    head = next((ln for ln in proc.stdout.splitlines() if ln.startswith("run: ")), "")
    return StageResult("run", secs, _n_lines(data), "lines", "CLI, JVM start included; " + head[5:80])


STAGE_FUNCS: dict[str, Callable[[Path, list[str]], StageResult]] = {
    "bare": stage_bare,
    "ingest_python": stage_ingest_python,
    "ingest_spark_writer": stage_ingest_spark_writer,
    "ingest": stage_ingest,
    "model": stage_model,
    "model_columns": stage_model_columns,
    "fast": stage_fast,
    "stateful": stage_stateful,
    "validate": stage_validate,
    "audit": stage_audit,
    "run": stage_run,
}


# ----------------------------------------------------------------------------------------------------
# Subprocesses and memory
# ----------------------------------------------------------------------------------------------------


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("GX_ANALYTICS_ENABLED", "false")
    return env


def _proc_table() -> dict[int, tuple[int, str, int]]:
    """pid → (ppid, command line, RSS bytes), for every readable process."""
    out: dict[int, tuple[int, str, int]] = {}
    page = os.sysconf("SC_PAGE_SIZE")
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{d}/statm") as f:
                rss = int(f.read().split()[1]) * page
        except (OSError, ValueError, IndexError):
            continue
        ppid = int(stat[stat.rfind(")") + 2 :].split()[1])
        out[int(d)] = (ppid, cmd, rss)
    return out


class RssSampler:
    """Peak RSS of a process tree: the root (driver Python), its JVM, and the Python workers."""

    def __init__(self, root: int, interval: float = 0.2) -> None:
        self.root = root
        self.interval = interval
        self.peak: dict[str, int] = {"driver_python": 0, "driver_jvm": 0, "worker_max": 0, "workers_sum": 0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def sample(self) -> None:
        table = _proc_table()
        children: dict[int, list[int]] = {}
        for pid, (ppid, _, _) in table.items():
            children.setdefault(ppid, []).append(pid)
        tree, todo = [], [self.root]
        while todo:
            pid = todo.pop()
            tree.append(pid)
            todo.extend(children.get(pid, []))
        jvm = workers_sum = worker_max = 0
        driver = table[self.root][2] if self.root in table else 0
        for pid in tree:
            if pid == self.root or pid not in table:
                continue
            _, cmd, rss = table[pid]
            if "java" in cmd.split(" ", 1)[0]:
                jvm += rss
            elif "python" in cmd:
                if "pyspark" in cmd or "daemon" in cmd or "worker" in cmd:
                    workers_sum += rss
                    worker_max = max(worker_max, rss)
                else:  # a CLI subprocess (stage `run`) is a driver Python too
                    driver = max(driver, rss)
        for k, v in (
            ("driver_python", driver),
            ("driver_jvm", jvm),
            ("worker_max", worker_max),
            ("workers_sum", workers_sum),
        ):
            self.peak[k] = max(self.peak[k], v)


def run_subprocess(stage: str, data: Path, overrides: list[str]) -> StageResult:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--stage", stage, "--data", str(data)]
    for o in overrides:
        cmd += ["--set", o]
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    with RssSampler(proc.pid) as sampler:
        stdout, stderr = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"stage {stage} failed ({proc.returncode}):\n{stderr[-3000:]}")
    line = [ln for ln in stdout.splitlines() if ln.startswith("RESULT ")][-1]
    d = json.loads(line[len("RESULT ") :])
    return StageResult(d["stage"], d["seconds"], d["units"], d["unit"], d["note"], dict(sampler.peak))


# ----------------------------------------------------------------------------------------------------
# Report
# ----------------------------------------------------------------------------------------------------


def _mb(b: int | None) -> str:
    return "-" if not b else f"{b / 2**20:,.0f}"


def format_table(results: list[StageResult]) -> str:
    by = {r.stage: r for r in results}
    bare, model = by.get("bare"), by.get("model")
    head = (
        "| stage | seconds | lines/s or events/s | ratio | driver JVM MB | driver Py MB | "
        "worker max MB | workers sum MB | note |"
    )
    rows = [head, "|" + "---|" * 9]
    for r in results:
        if r.unit == "lines":
            ratio = f"{r.seconds / bare.seconds:.2f}× bare time" if bare else "-"
        else:
            ratio = f"{r.rate / model.rate:.2f}× model ev/s" if model else "-"
            if r.stage in ("validate", "audit"):
                ratio = "-"
        mem = " | ".join(
            _mb(r.rss.get(k)) for k in ("driver_jvm", "driver_python", "worker_max", "workers_sum")
        )
        rows.append(
            f"| {r.stage} | {r.seconds:.1f} | {r.rate:,.0f} {r.unit}/s | {ratio} | {mem} | {r.note} |"
        )
    return "\n".join(rows)


def machine() -> str:
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            mem = f"{int(f.readline().split()[1]) / 2**20:.0f} GB RAM"
    except OSError:
        pass
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "")
    except OSError:
        pass
    load = os.getloadavg()[0]
    import pyspark

    return (
        f"{os.cpu_count()} cores ({cpu}), {mem}, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}, pyspark {pyspark.__version__}, load avg {load:.1f} at start"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lines", type=int, default=1_000_000)
    p.add_argument("--groups", type=int, default=200)
    p.add_argument("--members", type=int, default=5)
    p.add_argument("--stages", nargs="+", choices=STAGES, default=list(STAGES))
    p.add_argument("--in-process", action="store_true", help="all stages in this process, one SparkSession")
    p.add_argument("--set", action="append", default=[], dest="overrides", metavar="KEY=VALUE")
    p.add_argument(
        "--engines",
        nargs="+",
        choices=("delta-rs", "delta-spark"),
        default=None,
        help="run the storage stages once per engine, side by side (each its own warehouse)",
    )
    p.add_argument("--stage", choices=STAGES, help=argparse.SUPPRESS)  # subprocess mode
    p.add_argument("--data", help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.stage:  # one stage, in this process, against <data>
        res = STAGE_FUNCS[args.stage](Path(args.data), args.overrides)
        payload = {
            "stage": res.stage,
            "seconds": res.seconds,
            "units": res.units,
            "unit": res.unit,
            "note": res.note,
        }
        print("RESULT " + json.dumps(payload), flush=True)
        return 0

    data = data_dir(args.lines, args.groups, args.members)
    n = ensure_log(data, args.lines, args.groups, args.members)
    print(f"log: {n:,} lines, {args.groups} groups × {args.members} members in {data / 'logs'}", flush=True)
    print(f"machine: {machine()}", flush=True)
    results = []
    plan: list[tuple[str, str | None]] = []
    for engine in args.engines or [None]:
        for stage in [s for s in STAGES if s in args.stages]:
            if engine is not None and engine != args.engines[0] and stage in ENGINE_FREE:
                continue  # no table written or read: the same for both engines
            plan.append((stage, engine))
    for stage, engine in plan:
        overrides = args.overrides + ([f"storage.engine={engine}"] if engine else [])
        t = time.perf_counter()
        if args.in_process:
            res = STAGE_FUNCS[stage](data, overrides)
        else:
            res = run_subprocess(stage, data, overrides)
        if engine is not None and stage not in ENGINE_FREE:
            res.stage = f"{stage} ({engine})"
        results.append(res)
        wall = time.perf_counter() - t
        print(f"  {stage}: {res.seconds:.1f}s ({res.rate:,.0f} {res.unit}/s), wall {wall:.0f}s", flush=True)
    print()
    print(format_table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
