"""More machines: the whole CLI ``run`` on a Spark standalone cluster of 1 worker and of 2 workers of equal
size (issue 14's harness, ``rebalance_replay.jobs.standalone``), the same input, side by side in one
invocation; the speed-up of each stage.

    .venv/bin/python benchmarks/bench_cluster.py [--lines 2000000] [--groups 200] [--members 5]
        [--cores 1] [--memory 3g] [--repeat 1] [--set KEY=VALUE ...]

The log is ``bench_pipeline.py``'s (generated once into ``benchmarks/.data``). For each repeat, a cluster of
1 worker, then one of 2 (each worker ``--cores`` cores and ``--memory``) is started, the run submitted with
``spark-submit`` (``rebalance_replay/jobs/submit.py run``, Delta's jars by ``--packages`` as ``make
cluster-demo`` does) into a fresh warehouse, and the cluster stopped. Each stage's time is read off the run's
output (``bench_pipeline.run_cli_staged``: when the stage's first line is printed; ingest's includes the
JVM's start and the executors' registration). Not a test: a 2-core box gives a worker a core each, and the
driver shares them.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_pipeline import RUN_STAGES, CliRun, data_dir, ensure_log, machine, run_cli_staged  # noqa: E402


def submit_cmd(master: str, logs: Path, warehouse: Path, overrides: list[str]) -> list[str]:
    """``spark-submit`` of the CLI ``run`` to ``master``, as ``make cluster-demo`` does."""
    from rebalance_replay.jobs.delta import delta_package

    cmd = [
        str(Path(sys.executable).parent / "spark-submit"),
        "--master",
        master,
        "--packages",
        delta_package(),
        "--conf",
        f"spark.jars.ivy={ROOT / '.cache' / 'ivy'}",
        str(ROOT / "rebalance_replay" / "jobs" / "submit.py"),
        "run",
        "--input",
        str(logs),
        "--warehouse",
        str(warehouse),
    ]
    for o in overrides:
        cmd += ["--set", o]
    return cmd


def run_on_cluster(workers: int, cores: int, memory: str, logs: Path, overrides: list[str]) -> CliRun:
    import os

    from rebalance_replay.jobs.standalone import StandaloneCluster

    work = Path(tempfile.mkdtemp(prefix=f"rr-bench-cluster-{workers}-"))
    try:
        with StandaloneCluster(work / "cluster", workers_n=workers, cores=cores, memory=memory) as cluster:
            os.environ["PYSPARK_PYTHON"] = sys.executable
            run = run_cli_staged(submit_cmd(cluster.master_url, logs, work / "warehouse", overrides))
        # the run's terminal, for a look afterwards
        (logs.parent / f"cluster-{workers}-stdout.txt").write_text("".join(run.out))
        (logs.parent / f"cluster-{workers}-stderr.txt").write_text("".join(run.err))
        if run.code != 0:
            raise RuntimeError(f"{workers} worker(s): run failed ({run.code}): {''.join(run.err)[-3000:]}")
        return run
    finally:
        shutil.rmtree(work, ignore_errors=True)


def format_table(runs: dict[int, list[CliRun]]) -> str:
    """Median seconds a stage (and the whole run) with 1 and with 2 workers, and the speed-up."""
    rows = ["| stage | 1 worker s | 2 workers s | speed-up (1 ÷ 2) | runs (1 / 2) |", "|---|---|---|---|---|"]
    for stage in (*RUN_STAGES, "run"):

        def secs(w: int, stage: str = stage) -> list[float]:
            return [r.total if stage == "run" else r.seconds.get(stage, 0.0) for r in runs[w]]

        one, two = statistics.median(secs(1)), statistics.median(secs(2))
        each = " / ".join(f"{a:.1f}" for a in secs(1)) + " ; " + " / ".join(f"{b:.1f}" for b in secs(2))
        name = f"**{stage}**" if stage == "run" else stage
        rows.append(f"| {name} | {one:.1f} | {two:.1f} | {one / two:.2f}× | {each} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lines", type=int, default=2_000_000)
    p.add_argument("--groups", type=int, default=200)
    p.add_argument("--members", type=int, default=5)
    p.add_argument("--cores", type=int, default=1, help="cores of each worker")
    p.add_argument("--memory", default="3g", help="memory of each worker")
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    args = p.parse_args(argv)
    data = data_dir(args.lines, args.groups, args.members)
    n, _ = ensure_log(data, args.lines, args.groups, args.members)
    print(f"log: {n:,} lines, {args.groups} groups × {args.members} members in {data / 'logs'}", flush=True)
    print(f"machine: {machine()}", flush=True)
    runs: dict[int, list[CliRun]] = {1: [], 2: []}
    for _ in range(args.repeat):
        for workers in (1, 2):
            run = run_on_cluster(workers, args.cores, args.memory, data / "logs", args.overrides)
            runs[workers].append(run)
            stages = ", ".join(f"{s} {v:.1f}s" for s, v in run.seconds.items())
            print(f"  {workers} worker(s) × {args.cores} core(s): {run.total:.1f}s ({stages})", flush=True)
    print()
    print(format_table(runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
