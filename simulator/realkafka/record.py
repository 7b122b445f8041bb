"""Record the real-Kafka corpus: ``python -m simulator.realkafka.record [--release 3.7 ...]``.

For each release and each cluster profile its scenarios need: fetch the jars (Maven), start the
cluster, run the scenarios, stop it, and keep the logs, manifest and ground truth under ``--out``
(default ``tests/data/real-kafka``). ``make real-kafka-corpus`` re-records the committed corpus.
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import time
from pathlib import Path

from simulator.realkafka.jars import RELEASES, HarnessUnavailable, release
from simulator.realkafka.recording import Recording
from simulator.realkafka.scenarios import PROFILES, for_release

REPO = Path(__file__).resolve().parent.parent.parent
DEFAULT_OUT = REPO / "tests" / "data" / "real-kafka"


def record(
    lines: list[str],
    out: Path,
    workdir: Path,
    names: set[str] | None = None,
    profiles: set[str] | None = None,
    parallel: int = 3,
) -> list[Path]:
    saved: list[Path] = []
    for line in lines:
        rel = release(line)
        scenarios = for_release(line, names)
        for pname, profile in PROFILES.items():
            chosen = [s for s in scenarios if s.profile == pname]
            if not chosen or (profiles and pname not in profiles):
                continue
            t0 = time.monotonic()
            rec = Recording(rel, profile, workdir / line / pname)
            try:
                rec.start()
                # the three-broker scenarios kill brokers: one at a time
                rec.run_all(chosen, parallel=1 if profile.brokers > 1 else parallel)
            finally:
                rec.stop()
            dest = rec.save(out)
            failed = [r.scenario.name for r in rec.runs if r.error]
            print(
                f"recorded {line}/{pname}: {len(chosen)} scenario(s) "
                f"in {time.monotonic() - t0:.0f} s → {dest}"
                + (f"; FAILED: {', '.join(failed)}" if failed else ""),
                flush=True,
            )
            for r in rec.runs:
                if r.error:
                    print(f"  {r.scenario.name}: {r.error.strip().splitlines()[-1]}", flush=True)
            saved.append(dest)
    return saved


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--release", action="append", choices=sorted(RELEASES), help="default: every release")
    ap.add_argument("--scenario", action="append", help="only these scenarios (default: all)")
    ap.add_argument(
        "--profile", action="append", choices=sorted(PROFILES), help="only these cluster profiles"
    )
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--workdir", type=Path, help="where brokers and clients run (default: a temp dir)")
    ap.add_argument("--parallel", type=int, default=3, help="scenarios at a time on one-broker profiles")
    args = ap.parse_args(argv)
    # a SIGTERM unwinds like an exception, so the brokers and clients started so far are stopped
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    work = args.workdir or Path(tempfile.mkdtemp(prefix="realkafka-"))
    try:
        record(
            args.release or list(RELEASES),
            args.out,
            work,
            set(args.scenario) if args.scenario else None,
            set(args.profile) if args.profile else None,
            args.parallel,
        )
    except HarnessUnavailable as e:
        print(f"real-kafka: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
