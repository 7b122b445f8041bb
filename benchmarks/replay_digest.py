"""Digests of every row the pure replay writes on the corpora the repository carries (no Spark): a
refactor of the coordinator model or of the replay is byte-identical when the digests are.

    PYTHONPATH=. .venv/bin/python benchmarks/replay_digest.py --write /tmp/before.txt
    PYTHONPATH=. .venv/bin/python benchmarks/replay_digest.py --check /tmp/before.txt [--dump DIR]

Corpora (each replayed as ``rebalance-replay replay`` does, one ``GroupReplayer`` per group, in both modes
where it matters):

- ``real-kafka``: every recording under ``tests/data/real-kafka`` (track and predict, broker lag 200 ms);
- ``samples/logs`` and ``samples/incidents`` (track and predict), and the incident sample's audit findings;
- ``differential``: the shrunk sequences under ``tests/unit/coordinator/data`` through
  ``simulator.differential.run_model`` at every coordinator implementation, and the oracle's burst
  recordings (``data/bursts``) as a 4.0 broker's log, in order and shuffled;
- ``self-consistency``: the simulator's scenarios (``simulator.fidelity``) at 1 ms and 10 ms clocks, track
  with warm start and pure predict.

Every output row (predictions, transitions, rebalances, member sessions, and the model's own events and
answers) is written as canonical JSON; the digest file lists, per corpus and kind, the row count and the
SHA-256 of the rows in order. ``--dump`` writes the rows themselves, for a diff when a digest differs.
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import gzip
import hashlib
import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, os.getcwd())  # the tree run from (compare two checkouts with one script)

ROOT = Path(os.getcwd())
MODES = ("track", "predict")
#: every coordinator the model implements, and the releases where one of its version flags changes
VERSIONS = (
    "4.0",
    "3.7",
    "3.7:java",
    "3.4",
    "3.3.2",
    "3.3.1",
    "3.2",
    "3.0",
    "2.8.1",
    "2.8.0",
    "2.7",
    "2.6.1",
    "2.6.0",
    "2.5",
    "2.4",
    "2.3.0",
    "2.3",
    "2.2",
)


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_plain(v) for v in value), key=repr)
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, float) and value != value:
        return "NaN"
    return value


def canonical(row: Any) -> str:
    return json.dumps(_plain(row), sort_keys=True, default=repr, separators=(",", ":"))


class Digests:
    def __init__(self, dump: Path | None) -> None:
        self.rows: dict[str, list[str]] = {}
        self.dump = dump

    def add(self, key: str, rows: Iterable[Any]) -> None:
        self.rows.setdefault(key, []).extend(canonical(r) for r in rows)

    def lines(self) -> list[str]:
        out = []
        for key in sorted(self.rows):
            rows = self.rows[key]
            h = hashlib.sha256("\n".join(rows).encode()).hexdigest()
            out.append(f"{key}\t{len(rows)}\t{h}")
        return out

    def write_dump(self) -> None:
        if self.dump is None:
            return
        self.dump.mkdir(parents=True, exist_ok=True)
        for key, rows in self.rows.items():
            (self.dump / (key.replace("/", "__") + ".jsonl")).write_text("\n".join(rows) + "\n")


@contextmanager
def model_events(sink: list[Any]) -> Iterator[None]:
    """Every event the coordinator model drains, in order (the replay's tracker consumes them); under a
    ``GroupReplayer``, use :func:`replayer_events`: only its own model's, not those of the copies it
    tries requests on."""
    from rebalance_replay.transforms.coordinator.engine import CoordinatorEngine

    drain = CoordinatorEngine.drain

    def recording(self: Any) -> Any:
        predictions, events = drain(self)
        sink.extend((self.group_id, e) for e in events)
        return predictions, events

    CoordinatorEngine.drain = recording  # type: ignore[method-assign]
    try:
        yield
    finally:
        CoordinatorEngine.drain = drain  # type: ignore[method-assign]


@contextmanager
def replayer_events(sink: list[Any]) -> Iterator[None]:
    """Every event a ``GroupReplayer``'s model drains into its tracker, in order."""
    from rebalance_replay.transforms.replay import GroupReplayer

    drain_model = GroupReplayer._drain_model

    def recording(self: Any, out: Any) -> None:
        model = self.model
        drain = model.drain

        def recorded() -> Any:
            predictions, events = drain()
            sink.extend((model.group_id, e) for e in events)
            return predictions, events

        model.drain = recorded
        try:
            drain_model(self, out)
        finally:
            del model.drain

    GroupReplayer._drain_model = recording  # type: ignore[method-assign]
    try:
        yield
    finally:
        GroupReplayer._drain_model = drain_model  # type: ignore[method-assign]


def replay_groups(
    out: Digests, key: str, rows: list[dict[str, Any]], config: Any, horizon: int | None = None, **kw: Any
) -> None:
    """One replayer per group (sorted), every output kind, then ``finish``; the model's events too."""
    from rebalance_replay.transforms.replay import GroupReplayer, ReplaySettings

    by_group: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if r.get("group_id"):
            by_group.setdefault(str(r["group_id"]), []).append(r)
    settings = ReplaySettings(coordinator=config, **kw)
    events: list[Any] = []
    with replayer_events(events):
        for gid in sorted(by_group):
            group_rows = by_group[gid]
            replayer = GroupReplayer(gid, settings)
            replayer.feed(group_rows)
            end = horizon if horizon is not None else max(int(r["completion_ms"]) for r in group_rows) + 1
            for o in (replayer.process(end), replayer.finish()):
                for kind, kind_rows in o.rows.items():
                    out.add(f"{key}/{kind}", kind_rows)
    out.add(f"{key}/events", events)


def read_logs(folder: Path) -> dict[str, list[str]]:
    files: dict[str, list[str]] = {}
    for path in sorted(folder.glob("broker-*/kafka-request.log*")):
        opener: Callable[..., Any] = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt") as f:
            files.setdefault(path.parent.name, []).extend(f.read().splitlines())
    return files


def real_kafka(out: Digests) -> None:
    from rebalance_replay.transforms.coordinator.config import CoordinatorConfig
    from simulator.fidelity import parse_rows

    corpus = ROOT / "tests" / "data" / "real-kafka"
    for manifest_path in sorted(corpus.glob("*/*/manifest.json")):
        rec = manifest_path.parent
        release, profile = rec.parent.name, rec.name
        files: dict[str, list[str]] = {}
        for path in sorted(rec.glob("broker-*/kafka-request.log*.gz")):
            with gzip.open(path, "rt") as f:
                files.setdefault(path.parent.name, []).extend(f.read().splitlines())
        rows = parse_rows(files)
        settings = json.loads(manifest_path.read_text())["broker_settings"]
        for mode in MODES:
            config = CoordinatorConfig(
                kafka_version="4.0" if release.startswith("4") else release,
                group_initial_rebalance_delay_ms=int(settings["group.initial.rebalance.delay.ms"]),
                group_min_session_timeout_ms=int(settings["group.min.session.timeout.ms"]),
                mode=mode,  # type: ignore[arg-type]
            )
            for lag in (0, 200):
                replay_groups(
                    out, f"real-kafka/{release}/{profile}/{mode}/lag{lag}", rows, config, broker_lag_ms=lag
                )


def samples(out: Digests) -> None:
    from rebalance_replay.transforms.audit import AuditSettings, evaluate
    from rebalance_replay.transforms.coordinator.config import CoordinatorConfig
    from simulator.fidelity import parse_rows
    from simulator.incidents import group_inputs_of, incident_coordinator

    for name in ("logs", "incidents"):
        files = read_logs(ROOT / "samples" / name)
        rows = parse_rows(files)
        for mode in MODES:
            config = CoordinatorConfig(mode=mode)  # type: ignore[arg-type]
            replay_groups(out, f"samples/{name}/{mode}", rows, config)
            capped = replace(config, group_max_size=8)  # what the demo runs the incident sample with
            replay_groups(out, f"samples/{name}/{mode}/max8", rows, capped)
        inputs = group_inputs_of(files, incident_coordinator())
        for gid, gi in sorted(inputs.items()):
            out.add(f"samples/{name}/findings", [(gid, f) for f in evaluate(gi, AuditSettings()).findings])


def differential(out: Digests) -> None:
    from simulator import bursts
    from simulator import differential as d
    from tests.unit.coordinator.kafka_answers import load_sequence

    data = ROOT / "tests" / "unit" / "coordinator" / "data"
    for path in sorted(data.glob("*.jsonl")):
        seq = load_sequence(path)
        for version in VERSIONS:
            events: list[Any] = []
            with model_events(events):
                answers = d.run_model(seq, version)
            out.add(f"differential/{path.stem}/{version}/answers", sorted(answers.items()))
            out.add(f"differential/{path.stem}/{version}/events", events)
    for path in sorted((data / "bursts").glob("*.jsonl")):
        rec = bursts.read_fixture(path)
        for shuffle in (None, 1, 2):
            rows, _ = bursts.log_rows(rec, shuffle)
            for mode in MODES:
                replay_groups(
                    out, f"bursts/{path.stem}/{shuffle}/{mode}", rows, bursts.coordinator(rec, mode)
                )


def self_consistency(out: Digests, seeds: int) -> None:
    from rebalance_replay.transforms.coordinator.config import CoordinatorConfig
    from simulator.fidelity import coordinator_for, parse_rows, render_coarse, scenario_configs

    bases = {
        "track": CoordinatorConfig(),
        "predict": CoordinatorConfig(mode="predict", warm_start=False),
    }
    for seed in range(seeds):
        configs = scenario_configs(seed)
        for resolution in (1, 10):
            rows = parse_rows(render_coarse(configs, resolution, seed))
            for name, base in bases.items():
                for cfg in configs:
                    group_rows = [r for r in rows if r["group_id"] == cfg.group_id]
                    replay_groups(
                        out,
                        f"self-consistency/{seed}/{resolution}/{name}",
                        group_rows,
                        coordinator_for(cfg, base),
                    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--write", type=Path)
    p.add_argument("--check", type=Path)
    p.add_argument("--dump", type=Path)
    p.add_argument("--seeds", type=int, default=4, help="self-consistency seeds")
    p.add_argument(
        "--only", action="append", default=[], help="corpus: real-kafka, samples, differential, sim"
    )
    args = p.parse_args(argv)
    out = Digests(args.dump)
    steps: dict[str, Callable[[Digests], None]] = {
        "real-kafka": real_kafka,
        "samples": samples,
        "differential": differential,
        "sim": lambda o: self_consistency(o, args.seeds),
    }
    for name, step in steps.items():
        if not args.only or name in args.only:
            step(out)
    lines = out.lines()
    out.write_dump()
    total = sum(int(line.split("\t")[1]) for line in lines)
    whole = hashlib.sha256("\n".join(lines).encode()).hexdigest()
    print(f"{len(lines)} digests, {total} rows, all: {whole}")
    if args.write:
        args.write.write_text("\n".join(lines) + "\n")
    if args.check:
        want = dict(line.split("\t", 1) for line in args.check.read_text().splitlines() if line)
        got = dict(line.split("\t", 1) for line in lines)
        differing = sorted(k for k in want.keys() | got.keys() if want.get(k) != got.get(k))
        for k in differing:
            print(f"DIFFERS {k}: want {want.get(k)} got {got.get(k)}")
        print("identical" if not differing else f"{len(differing)} digests differ")
        return 1 if differing else 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
