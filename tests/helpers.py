"""Shared test helpers: read Delta tables without Spark, write simulated logs as broker files, and
fail (not skip) an independent tier CI requires."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NoReturn

import pyarrow.fs as pafs
import pytest
from deltalake import DeltaTable

from rebalance_replay.transforms.audit.model import Req

# re-exported: the tests' logs are simulated groups
from simulator.render import render_group_lines as render_group_lines

#: Set (to anything but ``""``, ``0`` or ``false``) to require every independent tier at once: the
#: differential tests (Kafka's own coordinator) and the real-broker tests. ``.ci/run`` sets the per-tier
#: variables: ``DIFFERENTIAL_REQUIRED`` for ``make test``, ``REALKAFKA_REQUIRED`` for
#: ``make test-realkafka``.
INDEPENDENT_TIERS_REQUIRED = "INDEPENDENT_TIERS_REQUIRED"


def tier_required(variable: str) -> bool:
    """Whether CI requires the tier named by ``variable`` (or every independent tier)."""
    return any(
        os.environ.get(name, "") not in ("", "0", "false") for name in (variable, INDEPENDENT_TIERS_REQUIRED)
    )


def unavailable(tier: str, variable: str, reason: str) -> NoReturn:
    """The tier cannot run: fail when CI requires it (``variable`` or ``INDEPENDENT_TIERS_REQUIRED``),
    else skip with the reason, so a missing oracle or broker never passes as a green CI run."""
    if tier_required(variable):
        pytest.fail(f"the {tier} tier is required ({variable}) but {reason}", pytrace=False)
    pytest.skip(reason)


def read_table(path: Path | str) -> list[dict[str, Any]]:
    """A Delta table's rows through delta-rs (a sub-tree filesystem avoids a pyarrow abort at exit)."""
    fs = pafs.SubTreeFileSystem(str(path), pafs.LocalFileSystem())
    return DeltaTable(str(path)).to_pyarrow_table(filesystem=fs).to_pylist()  # type: ignore[no-any-return]


def canonical(rows: Iterable[dict[str, Any]], drop: Sequence[str] = ()) -> list[str]:
    """Rows as sorted JSON strings, for order-insensitive exact comparison."""
    return sorted(
        json.dumps({k: v for k, v in r.items() if k not in drop}, sort_keys=True, default=str) for r in rows
    )


def write_lines(
    root: Path, broker: str, lines: Iterable[str], *, append: bool = False, name: str = "kafka-request.log"
) -> Path:
    d = root / broker
    d.mkdir(parents=True, exist_ok=True)
    path = d / name
    with path.open("a" if append else "w", encoding="utf-8") as f:
        f.writelines(line + "\n" for line in lines)
    return path


def quiet_cuts(lines: Sequence[tuple[int, int, str]], parts: int) -> list[int]:
    """Indexes that split ``lines`` into ``parts`` chunks at quiet points: every request after a cut
    arrived after everything before it completed (nothing in flight across the cut)."""
    cuts = []
    n = len(lines)
    for k in range(1, parts):
        target = n * k // parts
        for i in range(target, n - 1):
            done = max(c for c, _, _ in lines[: i + 1])
            if all(a > done for _, a, _ in lines[i + 1 :]):
                cuts.append(i + 1)
                break
    return cuts


def quiet_times(story: dict[str, list[tuple[int, int, str]]], parts: int) -> list[int]:
    """Instants that split every broker's lines into ``parts`` chunks with nothing in flight across them:
    all lines completing at or before the instant arrived before it, all later ones after it."""
    merged = sorted(x for lines in story.values() for x in lines)
    cuts = quiet_cuts(merged, parts)
    return [merged[i - 1][0] for i in cuts]


def sample_warehouse(wh: Path, *extra: str) -> Path:
    """The bundled sample ingested and replayed (batch) into ``wh`` with the in-process CLI."""
    from rebalance_replay.jobs.cli import main

    sample = Path(__file__).resolve().parents[1] / "samples" / "logs"
    assert main(["ingest", "--input", str(sample), "--warehouse", str(wh), *extra]) == 0
    assert main(["replay", "--warehouse", str(wh), *extra]) == 0
    return wh


def audit_request(t: int, **fields: Any) -> Req:
    """A ``requests`` row as the audit reads it: line ``t`` of broker-1's log, arriving at ``t`` ms and
    answered 1 ms later, a HeartBeat v4 unless ``fields`` say otherwise."""
    base = Req(
        source_file="b1/kafka-request.log",
        line_no=t,
        broker_id="broker-1",
        api_name="HEARTBEAT",
        api_version=4,
        arrival_ms=t,
        completion_ms=t + 1,
    )
    return base._replace(**fields)
