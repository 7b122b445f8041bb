"""tests/mutation/run.py's housekeeping: ./mutants generated from other sources (or with other files mutated)
is generated again; the groups of modules judged in one ``mutmut run``, and their guards."""

from __future__ import annotations

import importlib.util
import sys
import tomllib
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
    files = ["rebalance_replay/transforms/x.py"]
    (mutants / run.SOURCE_STAMP).write_text(run.stamp(files))
    run.drop_stale_mutants(files)
    assert mutants.exists()  # generated from these sources: kept (mutmut regenerates by mtime)
    run.drop_stale_mutants([*files, "rebalance_replay/transforms/y.py"])
    assert not mutants.exists()  # another file to mutate: its copy may be a plain one
    (mutants / "rebalance_replay").mkdir(parents=True)
    (mutants / run.SOURCE_STAMP).write_text(run.stamp(files))
    source.write_text("def f() -> int:\n    return 2\n")
    run.drop_stale_mutants(files)
    assert not mutants.exists()
    mutants.mkdir()  # no stamp: from before the stamp, or another tool's
    run.drop_stale_mutants(files)
    assert not mutants.exists()
    run.drop_stale_mutants(files)  # nothing to drop


def test_the_guards_are_the_selection_mutmut_is_configured_with() -> None:
    """pyproject.toml's test selection (for ``mutmut run`` by hand) is the union of run.py's guards, and
    every guard exists."""
    run = load_run()
    config = tomllib.loads((RUN.parents[2] / "pyproject.toml").read_text())["tool"]["mutmut"]
    union = {t for tests in run.GUARDS.values() for t in tests}
    assert set(config["pytest_add_cli_args_test_selection"]) == union
    assert set(run.GUARDS) == set(run.MODULES) == set(run.GROUP_ORDER)
    assert all((RUN.parents[2] / t).exists() for t in union)


def test_modules_whose_guards_share_a_test_run_together_cheapest_first() -> None:
    run = load_run()
    assert run.groups(run.SAMPLED) == [
        ["validate tallies"],
        ["ingest accounting", "columnar_log", "request_log (line parser)"],
        [
            "coordinator/reconcile",
            "coordinator/engine",
            "coordinator/state",
            "coordinator/timers",
            "validation",
        ],
        ["audit rules"],
    ]
    assert run.groups(["audit rules", "validation"]) == [["validation"], ["audit rules"]]
    assert run.groups(["validation", "coordinator/timers"]) == [["coordinator/timers", "validation"]]
    assert run.guard_tests(["validation", "coordinator/timers"]) == sorted(
        {"tests/unit/test_validation.py", *run.GUARDS["coordinator/timers"]}
    )


def test_changed_functions_without_mutants_fall_back_to_the_sample(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A change that touched core functions holding no mutant (a comment, a ``# pragma: no mutate block``
    function) is judged by the seeded sample, not by an empty selection that judges nothing."""
    import argparse

    run = load_run()
    names = {m: [f"{m}.x_f__mutmut_{i}" for i in range(1, 7)] for m in run.MODULES}
    monkeypatch.setattr(run, "all_mutants", lambda m: names[m])
    args = argparse.Namespace(
        full=False, mutant=None, base="origin/main", seed="24", sample=2, changed_max=60
    )
    file = run.MODULES["validation"][0][0]
    selected, what = run.pick(args, ["validation", "audit rules"], {file: {"validation.x_untouched"}})
    assert what == "a sample of 2 mutants per module, seed 24"
    assert {m: len(ns) for m, ns in selected.items()} == {"validation": 2, "audit rules": 2}
    assert "hold no mutant: a seeded sample" in capsys.readouterr().out
    changed = {file: {"validation.x_f"}}
    selected, what = run.pick(args, ["validation", "audit rules"], changed)
    assert selected == {"validation": names["validation"]} and what.startswith("the mutants of the functions")


def test_the_files_holding_mutants_are_named_by_module() -> None:
    run = load_run()
    engine, state = (run.MODULES[m][0][0] for m in ("coordinator/engine", "coordinator/state"))
    names = ["rebalance_replay.transforms.coordinator.engine.xǁCoordinatorEngineǁsettled_state__mutmut_24"]
    assert run.files_holding([state, engine], names) == [engine]
    assert run.files_holding([state], names) == [] and run.files_holding([engine], []) == []
