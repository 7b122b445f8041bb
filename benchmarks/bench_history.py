"""Issue 30 part 3: does an hourly ``run --incremental`` cost the same at hour 720 of a 30-day warehouse
as at hour 2? The same new hour, side by side, on a young and an old warehouse.

    .venv/bin/python benchmarks/bench_history.py [--hours 720] [--groups 2] [--members 1] [--repeat 2]
        [--before DIR]

A steady log (``bench_replay.broker_lines``: consumers heartbeating every 3 s, committing every 5 s) of
``--hours`` hours is generated once into ``benchmarks/.data/history-…/hours`` (one file a broker and hour).
Two warehouses are built once, each by scheduled runs as a scheduler leaves them: *young* has read hour 0;
*old* has read hours 0 … N-2 (in one ``run --incremental``: the same tables and checkpoints as N-1 hourly
runs, without the hours of waiting). Each code timed first gives each base its own audit state (one
``audit`` from scratch: :func:`warmed`), as its own scheduled runs would have left it. Then, in rotation,
each from a copy of its warehouse: the next hour lands as the live ``kafka-request.log`` (the hour before it
rotated) and one ``run --incremental`` is timed per stage (each stage's end is its ``<stage>: this run``
line; ingest's time includes the JVM's start). Both measured hours have the same traffic (the generator's
hours are alike), so the ratio old / young is the warehouse's age in the run's cost. ``--before DIR``: each
timed run is made twice in the rotation, first with the code of the checkout at ``DIR`` (``git archive`` of
an earlier commit) on the same restored warehouse, then with this one's: columns ``(before)``. Not a test:
the numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_pipeline import RUN_STAGES, machine, run_cli_staged  # noqa: E402
from benchmarks.bench_replay import T0, broker_lines  # noqa: E402
from simulator.log_render import rotated_file_name  # noqa: E402

HOUR = 3_600_000
#: requests a consumer sends a second (heartbeat every 3 s, commit every 5 s)
PER_MEMBER_S = 1 / 3 + 1 / 5


def data_dir(hours: int, groups: int, members: int) -> Path:
    return ROOT / "benchmarks" / ".data" / f"history-h{hours}-g{groups}-m{members}"


def hour_name(hour: int) -> str:
    """The rotated name of hour ``hour`` of the log (``kafka-request.log.2024-05-01-00``)."""
    return rotated_file_name(T0 + hour * HOUR)


def ensure_hours(data: Path, hours: int, groups: int, members: int) -> int:
    """The log, one file a broker and hour under ``data/hours/<broker>/<hour>`` (generated once); returns
    its lines."""
    marker = data / "hours-ok.json"
    if marker.exists():
        return int(json.loads(marker.read_text())["lines"])
    shutil.rmtree(data / "hours", ignore_errors=True)
    t = time.perf_counter()
    n = 0
    requests = groups * members * PER_MEMBER_S * 3600 * hours
    for broker, lines in broker_lines(requests, groups, members).items():
        folder = data / "hours" / broker
        folder.mkdir(parents=True, exist_ok=True)
        current, fh = -1, None
        for ms, line in lines:
            hour = (ms - T0) // HOUR
            if hour >= hours:
                break
            if hour != current:
                if fh is not None:
                    fh.close()
                current, fh = hour, open(folder / str(hour), "w", encoding="utf-8")  # noqa: SIM115
            assert fh is not None
            fh.write(line + "\n")
            n += 1
        if fh is not None:
            fh.close()
    marker.write_text(json.dumps({"lines": n, "seconds": round(time.perf_counter() - t, 1)}))
    return n


def lay_out(data: Path, logs: Path, upto: int) -> None:
    """``logs`` as the brokers leave it at the end of hour ``upto``: hours before it rotated, ``upto`` the
    live file (hard links to the generated hours: no copy)."""
    shutil.rmtree(logs, ignore_errors=True)
    for broker_dir in sorted((data / "hours").iterdir()):
        out = logs / broker_dir.name
        out.mkdir(parents=True)
        for hour in range(upto + 1):
            src = broker_dir / str(hour)
            if src.exists():
                os.link(src, out / ("kafka-request.log" if hour == upto else hour_name(hour)))


def run_cmd(logs: Path, warehouse: Path) -> list[str]:
    return [
        sys.executable, "-m", "rebalance_replay.jobs.cli", "run", "--incremental",
        "--input", str(logs), "--warehouse", str(warehouse),
    ]  # fmt: skip


def ensure_warehouse(data: Path, name: str, upto: int) -> Path:
    """A warehouse that has read hours 0 … ``upto`` by ``run --incremental``, built once and kept as
    ``warehouse-<name>.base`` (a timed run works on ``warehouse-<name>`` itself, restored from it first:
    the incremental checkpoint knows its warehouse's path, a copy elsewhere would start afresh)."""
    wh = data / f"warehouse-{name}"
    base = data / f"warehouse-{name}.base"
    marker = data / f"warehouse-{name}-ok.json"
    if marker.exists():
        return base
    for p in (wh, base):
        shutil.rmtree(p, ignore_errors=True)
    lay_out(data, data / f"logs-{name}", upto)
    t = time.perf_counter()
    run = run_cli_staged(run_cmd(data / f"logs-{name}", wh))
    if run.code != 0:
        raise RuntimeError(f"building the {name} warehouse failed: {''.join(run.err)[-2000:]}")
    shutil.copytree(wh, base, symlinks=True)
    marker.write_text(json.dumps({"hours": upto + 1, "seconds": round(time.perf_counter() - t, 1)}))
    print(f"  built {name}: hours 0-{upto} in {time.perf_counter() - t:.0f} s", flush=True)
    return base


def warmed(data: Path, name: str, base: Path, tag: str, root: Path) -> Path:
    """``base`` with the audit's state as the code at ``root`` leaves it (a base built by other code has
    another's, or none a later version reads): its audit state dropped and one ``audit`` run with that code
    (every group evaluated, as a first scheduled audit does), kept as ``warehouse-<name>.warm<tag>`` (made in
    ``warehouse-<name>`` itself: the incremental checkpoint knows its warehouse's path)."""
    wh = data / f"warehouse-{name}"
    out = data / f"warehouse-{name}.warm{'-' + tag if tag else ''}"
    shutil.rmtree(wh, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(base, wh, symlinks=True)
    for state in ("state.json", "fingerprints.json"):
        (wh / "_audit" / state).unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "rebalance_replay.jobs.cli", "audit", "--warehouse", str(wh)]
    run = run_cli_staged(cmd, root=root)
    if run.code not in (0, 3):  # 3: findings at --fail-on's severity
        raise RuntimeError(f"warming the {name} warehouse failed: {''.join(run.err)[-2000:]}")
    shutil.copytree(wh, out, symlinks=True)
    print(f"  warmed {name}{' ' + tag if tag else ''}: {run.total:.0f} s", flush=True)
    return out


def timed_hour(data: Path, name: str, base: Path, hour: int, root: Path = ROOT) -> dict[str, float]:
    """One ``run --incremental`` (with the code at ``root``) on the warehouse as ``base`` has it, after
    hour ``hour`` lands (the live file before it rotated): seconds per stage."""
    wh = data / f"warehouse-{name}"
    shutil.rmtree(wh, ignore_errors=True)
    shutil.copytree(base, wh, symlinks=True)
    lay_out(data, data / f"logs-{name}", hour)
    run = run_cli_staged(run_cmd(data / f"logs-{name}", wh), root=root)
    if run.code != 0:
        raise RuntimeError(f"the {name} run failed: {''.join(run.err)[-2000:]}")
    head = next((ln for ln in run.out if ln.startswith("run: this run")), "").strip()
    tag = "" if root == ROOT else " before"
    print(f"  {name}{tag} (hour {hour + 1}): {run.total:.1f} s  {head[:160]}", flush=True)
    return {**run.seconds, "total": run.total}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hours", type=int, default=720)
    p.add_argument("--groups", type=int, default=2)
    p.add_argument("--members", type=int, default=1)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--before", type=Path, help="a checkout of earlier code, run beside this one's")
    args = p.parse_args(argv)
    if args.hours < 3:
        p.error("--hours must be at least 3")
    data = data_dir(args.hours, args.groups, args.members)
    n = ensure_hours(data, args.hours, args.groups, args.members)
    print(f"log: {n:,} lines, {args.hours} h, {args.groups} groups × {args.members} members in {data}")
    print(f"machine: {machine()}", flush=True)
    young = ensure_warehouse(data, "young", 0)
    old = ensure_warehouse(data, "old", args.hours - 2)
    trees = ([("before", args.before.resolve())] if args.before else []) + [("", ROOT)]
    bases = {
        (name, tag): warmed(data, name, base, tag, tree)
        for tag, tree in trees
        for name, base in (("young", young), ("old", old))
    }
    runs: dict[tuple[str, str], list[dict[str, float]]] = {}
    for _ in range(args.repeat):
        for tag, tree in trees:
            for name, hour in (("young", 1), ("old", args.hours - 1)):
                runs.setdefault((name, tag), []).append(
                    timed_hour(data, name, bases[(name, tag)], hour, tree)
                )

    def median(name: str, tag: str, stage: str) -> float:
        return statistics.median(r.get(stage, 0.0) for r in runs[(name, tag)])

    print(f"\nmedian of {args.repeat} runs each, in rotation")
    cols = [
        (f"hour 2{' (before)' if t else ''} (s)", f"hour {args.hours}{' (before)' if t else ''} (s)")
        for t, _ in trees
    ]
    head = [c for pair in cols for c in pair] + [
        f"hour {args.hours} / hour 2{' (before)' if t else ''}" for t, _ in trees
    ]
    print("| stage | " + " | ".join(head) + " |")
    print("|---" * (len(head) + 1) + "|")
    for stage in (*RUN_STAGES, "total"):
        cells = [f"{median(n, t, stage):.1f}" for t, _ in trees for n in ("young", "old")]
        for t, _ in trees:
            y, o = median("young", t, stage), median("old", t, stage)
            cells.append(f"{o / y:.2f}×" if y else "-")
        print(f"| {stage} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
