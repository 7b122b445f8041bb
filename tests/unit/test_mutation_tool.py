"""tests/mutation/run.py's housekeeping: ./mutants generated from other sources is generated again."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

RUN = Path(__file__).resolve().parents[1] / "mutation" / "run.py"


def load_run() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mutation_run", RUN)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_mutants_from_other_sources_are_dropped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = load_run()
    monkeypatch.setattr(run, "ROOT", tmp_path)
    source = tmp_path / "rebalance_replay" / "transforms" / "x.py"
    source.parent.mkdir(parents=True)
    source.write_text("def f() -> int:\n    return 1\n")
    mutants = tmp_path / "mutants"
    (mutants / "rebalance_replay").mkdir(parents=True)
    (mutants / run.SOURCE_STAMP).write_text(run.source_digest())
    run.drop_stale_mutants()
    assert mutants.exists()  # generated from these sources: kept (mutmut regenerates by mtime)
    source.write_text("def f() -> int:\n    return 2\n")
    run.drop_stale_mutants()
    assert not mutants.exists()
    mutants.mkdir()  # no stamp: from before the stamp, or another tool's
    run.drop_stale_mutants()
    assert not mutants.exists()
    run.drop_stale_mutants()  # nothing to drop
