"""Adversarial sizes (issue 29 part 3): the whole CLI ``run`` on logs whose shape strains the pipeline.

    .venv/bin/python benchmarks/bench_adversarial.py [--shapes storm metadata groups]
        [--size storm=100000 --size metadata=1048576 --size groups=20000] [--set KEY=VALUE ...]

Shapes (``simulator.adversarial``; Kafka 3.7 JSON-era request logs as a broker writes them):

- ``storm``: one group receiving ``size`` JoinGroup v9 requests without member id, each from a client
  connection of its own, each answered MEMBER_ID_REQUIRED with a generated member id; 20 of them come back
  (join, a minute, crash), the rest never do; the group's three consumers and two ordinary groups beside.
- ``metadata``: one consumer whose JoinGroup protocol metadata is ``size`` bytes (base64 in the line, in
  its JoinGroups and in the leader's answers), in an otherwise ordinary group of five; two groups beside.
- ``groups``: ``size`` groups of 1-3 members within one hour (join, sync, heartbeats, commits, leave).

Each shape's log is generated once into ``benchmarks/.data/adversarial-<shape>-<size>/logs`` (reused;
``--data-root`` for another folder than ``benchmarks/.data``).
Then the CLI ``rebalance-replay run`` (ingest → replay → validate → audit → report;
``report.great_expectations=false`` unless ``--set report.great_expectations=true``) runs on it into a
fresh warehouse beside it, one shape at a time. The parent reads the run's stdout as it comes: each
stage prints its lines when it is done, so the stage in progress is known, and the RSS of the process
tree (``bench_pipeline.RssSampler``: driver JVM, driver Python, the Python workers) is sampled every 0.2 s
and kept per stage (a Python worker lives on from one stage to the next: a stage's peak includes what the
worker still holds from the stage before). The ``ingest`` stage includes the JVM start.

The run's stdout and stderr are kept beside the logs (``run-stdout.txt``, ``run-stderr.txt``). Per shape
it reports: per stage seconds, exit code (0: done; the run's exit code on the stage it ended
in; ``-``: not reached), peak MB (largest Python worker, driver Python, driver JVM); then the run's
exit code, whether anything printed a traceback, whether the ingest accounting identity holds, and the
groups refused (``summary.json`` ``refused_groups``: each with its stage and one-line reason).
Not a test: the numbers depend on the machine; results go into ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_pipeline import RUN_STAGES, RssSampler, _mb, cli_run_cmd, machine, run_cli_staged  # noqa: E402

SHAPES = ("storm", "metadata", "groups")
FULL = {"storm": 100_000, "metadata": 1 << 20, "groups": 20_000}


@dataclass
class StageRow:
    stage: str
    seconds: float | None = None
    exit: str = "-"
    rss: dict[str, int] = field(default_factory=dict)


@dataclass
class ShapeRun:
    shape: str
    size: int
    lines: int
    exit_code: int
    seconds: float
    stages: list[StageRow]
    traceback: bool
    accounting_ok: bool | None
    refused: list[dict[str, Any]]
    last_lines: list[str]
    rss: dict[str, int] = field(default_factory=dict)


class StageSampler(RssSampler):
    """``RssSampler`` keeping the peaks per stage: ``stage`` is switched by the reader of the run's output."""

    def __init__(self, root: int) -> None:
        super().__init__(root)
        self.stage = RUN_STAGES[0]
        self.total = dict(self.peak)
        self.peaks: dict[str, dict[str, int]] = {}

    def sample(self) -> None:
        self.peak = self.peaks.setdefault(self.stage, dict.fromkeys(self.total, 0))
        super().sample()
        for k, v in self.peak.items():
            self.total[k] = max(self.total[k], v)


DATA_ROOT = ROOT / "benchmarks" / ".data"


def data_dir(shape: str, size: int, root: Path = DATA_ROOT) -> Path:
    return root / f"adversarial-{shape}-{size}"


def ensure_log(shape: str, size: int, root: Path = DATA_ROOT) -> tuple[Path, int]:
    """The shape's log folder (generated once) and its number of lines."""
    data = data_dir(shape, size, root)
    marker = data / "log-ok.json"
    if not marker.exists():
        from simulator.adversarial import generate

        shutil.rmtree(data, ignore_errors=True)
        t = time.perf_counter()
        counts = generate(shape, data / "logs", size)
        n = sum(counts.values())
        print(f"{shape}: generated {n:,} lines in {time.perf_counter() - t:.1f}s", flush=True)
        marker.write_text(json.dumps({"lines": n}))
    return data / "logs", int(json.loads(marker.read_text())["lines"])


def run_shape(shape: str, size: int, overrides: list[str], root: Path = DATA_ROOT) -> ShapeRun:
    logs, n = ensure_log(shape, size, root)
    wh = logs.parent / "warehouse"
    shutil.rmtree(wh, ignore_errors=True)
    cmd = cli_run_cmd(logs, wh, ["report.great_expectations=false", *overrides])
    sampler = StageSampler(0)  # the run's pid is set when it starts

    def switch(stage: str) -> None:
        sampler.stage = stage

    run = run_cli_staged(cmd, sampler, switch)
    code, out, err, seconds = run.code, run.out, run.err, run.total
    rows = []
    for stage in RUN_STAGES:
        row = StageRow(stage, rss=sampler.peaks.get(stage, {}))
        if stage in run.seconds:
            row.seconds = run.seconds[stage]
            row.exit = str(run.code) if stage == run.last else "0"
        rows.append(row)
    summary_path = wh / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    ingest = summary.get("ingest") or {}
    accounting = None
    if ingest:
        accounting = bool((ingest.get("this_run") or {}).get("accounting_ok", ingest.get("accounting_ok")))
        accounting = accounting and bool(summary.get("accounting_ok", True))
    everything = out + err
    (logs.parent / "run-stdout.txt").write_text("".join(out))  # the run's terminal, for a look afterwards
    (logs.parent / "run-stderr.txt").write_text("".join(err))
    return ShapeRun(
        shape=shape,
        size=size,
        lines=n,
        exit_code=code,
        seconds=seconds,
        stages=rows,
        traceback=any("Traceback (most recent call last)" in ln for ln in everything),
        accounting_ok=accounting,
        refused=list(summary.get("refused_groups") or []),
        last_lines=[ln.rstrip() for ln in everything[-12:]],
        rss=dict(sampler.total),
    )


def _refused_text(refused: list[dict[str, Any]]) -> str:
    if not refused:
        return "none"
    return "; ".join(f"{r.get('group')} ({r.get('stage')})" for r in refused[:3]) + (
        f" … {len(refused)} in all" if len(refused) > 3 else ""
    )


def format_table(runs: list[ShapeRun]) -> str:
    head = (
        "| shape | stage | seconds | exit | worker max MB | driver Py MB | driver JVM MB | refused groups |"
    )
    rows = [head, "|" + "---|" * 8]
    for r in runs:
        label = f"{r.shape} ({r.size:,})"
        for s in r.stages:
            secs = "-" if s.seconds is None else f"{s.seconds:.1f}"
            mem = " | ".join(_mb(s.rss.get(k)) for k in ("worker_max", "driver_python", "driver_jvm"))
            refused = [x for x in r.refused if x.get("stage") == s.stage]
            rows.append(f"| {label} | {s.stage} | {secs} | {s.exit} | {mem} | {_refused_text(refused)} |")
        mem = " | ".join(_mb(r.rss.get(k)) for k in ("worker_max", "driver_python", "driver_jvm"))
        rows.append(
            f"| {label} | **run** | {r.seconds:.1f} | {r.exit_code} | {mem} | {_refused_text(r.refused)} |"
        )
    return "\n".join(rows)


def describe(r: ShapeRun) -> str:
    acc = {None: "n/a", True: "ok", False: "MISMATCH"}[r.accounting_ok]
    return (
        f"{r.shape} ({r.size:,}; {r.lines:,} lines): exit {r.exit_code}, {r.seconds:.1f} s, "
        f"traceback: {'YES' if r.traceback else 'no'}, accounting: {acc}, refused: {_refused_text(r.refused)}"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", nargs="+", choices=SHAPES, default=list(SHAPES))
    p.add_argument(
        "--size", action="append", default=[], metavar="SHAPE=N", help="e.g. storm=1000 (default: full size)"
    )
    p.add_argument("--set", action="append", default=[], dest="overrides", metavar="KEY=VALUE")
    p.add_argument("--data-root", type=Path, default=DATA_ROOT, help="where the logs and warehouses go")
    args = p.parse_args(argv)
    sizes = dict(FULL)
    for item in args.size:
        shape, _, n = item.partition("=")
        if shape not in SHAPES or not n.isdigit():
            p.error(f"--size {item!r}: expected one of {', '.join(SHAPES)}=N")
        sizes[shape] = int(n)
    print(f"machine: {machine()}", flush=True)
    runs = []
    for shape in args.shapes:
        r = run_shape(shape, sizes[shape], args.overrides, args.data_root.resolve())
        runs.append(r)
        print(describe(r), flush=True)
        if r.exit_code != 0 or r.traceback:
            print("\n".join(f"    {ln}" for ln in r.last_lines), flush=True)
    print()
    print(format_table(runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
