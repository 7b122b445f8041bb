"""Mutation testing of the core modules with mutmut (docs/mutation-testing.md; configuration: the
``[tool.mutmut]`` table of pyproject.toml).

Three ways to pick the mutants, all against the fast tests that guard the core modules:

* ``--full``: every mutant of every core module (``make mutation``: many hours on two cores);
* ``--base REF``: the mutants of the core functions that the change against ``REF`` touched (git diff), a
  seeded sample of at most ``--changed-max`` of them; with no core function changed, the sample below;
* ``--sample N`` (default): a seeded random sample of ``N`` mutants per core module.

``--budget SECONDS`` bounds the whole run (generation, mutmut's coverage stats, the mutants): the mutants
not reached in time are reported as not run, not as a failure. The run FAILS (exit 1) when a mutant it ran
survived (or no test reached it) and ``tests/mutation/equivalents.txt`` does not list it as equivalent.

Run from the repository root: ``.venv/bin/python tests/mutation/run.py --sample 5 --budget 540``.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EQUIVALENTS = Path(__file__).resolve().parent / "equivalents.txt"
#: survivors found by the sampled runs and not yet triaged (each needs a test): reported as OPEN, not a
#: failure unless --strict, so that CI fails on new survivors while this backlog is worked off
BACKLOG = Path(__file__).resolve().parent / "backlog.txt"

# module → (its files, the functions mutated: None = all of them). Ingest is mostly Spark plumbing: only
# its accounting (the executor-side reading and counting, the merge of the tasks' counts, the balance and
# its table) is a core module.
_COORD = "rebalance_replay/transforms/coordinator/"
MODULES: dict[str, tuple[tuple[str, ...], tuple[str, ...] | None]] = {
    "coordinator/engine": ((_COORD + "engine.py",), None),
    "coordinator/state": ((_COORD + "state.py",), None),
    "coordinator/reconcile": ((_COORD + "reconcile.py",), None),
    "coordinator/timers": ((_COORD + "timers.py",), None),
    "coordinator/other": (
        tuple(
            _COORD + f + ".py"
            for f in ("causes", "codec", "config", "fastobj", "model", "placement", "serde", "types")
        ),
        None,
    ),
    "validation": (("rebalance_replay/transforms/validation.py",), None),
    "validate tallies": (("rebalance_replay/transforms/tally.py",), None),
    "columnar_log": (("rebalance_replay/transforms/columnar_log.py",), None),
    "request_log (line parser)": (("rebalance_replay/transforms/request_log.py",), None),
    "ingest accounting": (
        ("rebalance_replay/jobs/ingest.py",),
        (
            "x_counts_balance",
            "xǁIngestCountsǁadd",
            "xǁIngestCountsǁas_dict",
            "xǁIngestResultǁas_dict",
            "x_parse_slices",
            "x_merge_slice_stats",
            "x_ingest_summary",
            "x_format_counts_table",
        ),
    ),
    "audit rules": (
        tuple(
            f"rebalance_replay/transforms/audit/{f}.py"
            for f in (
                "base",
                "cadence",
                "config",
                "liveness",
                "model",
                "phases",
                "protocol",
                "registry",
                "routine",
            )
        ),
        None,
    ),
}
#: the modules of the default sample: the heart of the coordinator, validation, both parsers, the
#: ingest accounting, the audit rules (``coordinator/other`` joins with ``--module`` or ``--full``)
SAMPLED = [m for m in MODULES if m != "coordinator/other"]

#: the tests that guard each core module (docs/mutation-testing.md's table; pyproject.toml's
#: ``pytest_add_cli_args_test_selection`` is their union, for ``mutmut run`` by hand). A run judges the
#: mutants of modules whose guards share a test in one ``mutmut run`` (a *group*), which mutates only the
#: files holding its mutants and collects its coverage stats from its guards alone: mutmut's stats of the
#: whole selection with every core file mutated took 308 s on an idle two-core box (the selection runs
#: in 117 s untraced: every call of a mutated function goes through mutmut's trampoline, and the audit's
#: and the parsers' tests replay through the coordinator), which left CI's 600 s no time for a mutant
_COORD_TESTS = (
    "tests/unit/coordinator",
    "tests/unit/test_real_kafka_replay.py",
    "tests/unit/test_held_joins.py",
)
_PARSER_TESTS = (
    "tests/unit/test_other_api_lines.py",
    "tests/unit/test_columnar_log.py",
    "tests/unit/test_request_log_text.py",
    "tests/unit/test_request_log_json.py",
    "tests/unit/test_request_log_properties.py",
)
GUARDS: dict[str, tuple[str, ...]] = {
    "coordinator/engine": _COORD_TESTS,
    "coordinator/state": _COORD_TESTS,
    "coordinator/reconcile": _COORD_TESTS,
    "coordinator/timers": _COORD_TESTS,
    "coordinator/other": _COORD_TESTS,
    "validation": ("tests/unit/test_validation.py", *_COORD_TESTS),
    "validate tallies": ("tests/unit/test_tally.py",),
    "columnar_log": _PARSER_TESTS,
    "request_log (line parser)": _PARSER_TESTS,
    "ingest accounting": (
        "tests/unit/test_ingest_accounting.py",
        "tests/unit/test_clock_steps.py",
        "tests/unit/test_other_api_lines.py",
    ),
    "audit rules": ("tests/unit/audit",),
}

CAUGHT = {"killed", "caught by type check", "segfault"}
#: mutmut's verdict when a mutant's tests ran past its limit ((their measured time + timeout_constant) ×
#: timeout_multiplier seconds of wall clock, pyproject.toml): caught, as mutmut counts it (a mutant that
#: makes a loop endless never lets its tests pass), but named and counted in a column of its own, so that a
#: timeout that is only the machine's load (a survivor in disguise) is seen. (mutmut also files its worker's
#: exit code 255, an exception outside the tests, as a timeout.)
TIMED_OUT = {"timeout"}
SURVIVING = {"survived", "no tests", "suspicious"}


def module_name(path: str) -> str:
    return path.removesuffix(".py").replace("/", ".")


def function_of(mutant: str) -> str:
    """``pkg.mod.xǁClassǁmethod__mutmut_3`` → ``pkg.mod.xǁClassǁmethod``"""
    return mutant.rsplit("__mutmut_", 1)[0]


def all_mutants(module: str) -> list[str]:
    files, functions = MODULES[module]
    names: list[str] = []
    for f in files:
        meta = ROOT / "mutants" / (f + ".meta")
        if not meta.exists():
            continue
        keys = json.loads(meta.read_text())["exit_code_by_key"]
        prefix = module_name(f) + "."
        names += [k for k in keys if functions is None or function_of(k).removeprefix(prefix) in functions]
    return sorted(names, key=lambda n: (function_of(n), int(n.rsplit("_", 1)[1])))


def results() -> dict[str, int | None]:
    out: dict[str, int | None] = {}
    for meta in (ROOT / "mutants").rglob("*.py.meta"):
        out.update(json.loads(meta.read_text())["exit_code_by_key"])
    return out


#: what ./mutants was generated from: the sources' digest and the files mutated (stamp)
SOURCE_STAMP = ".rebalance-replay-sources"
#: the mutated copies as generated, put back before each group's run (mutmut overwrites every file a run
#: does not mutate with its plain source, and takes a file whose copy is newer than its source as mutated)
GENERATED = ".generated"


def source_digest() -> str:
    """A digest of every source file's path and content."""
    h = hashlib.sha256()
    for path in sorted((ROOT / "rebalance_replay").rglob("*.py")):
        h.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def stamp(files: Iterable[str]) -> str:
    """The stamp of ./mutants generated from these sources with these files mutated."""
    return "\n".join([source_digest(), *sorted(files)])


def drop_stale_mutants(files: Iterable[str]) -> None:
    """Remove ./mutants when it was generated from other sources, or with other files mutated. mutmut
    regenerates a file's mutants only when the source's mtime is later than its copy's: a copy left from
    other sources with a later mtime (another checkout's, a file restored by git) is kept, and its tests then
    fail on the clean run ("failed to collect stats": a stale columnar_log.py without a function the tests
    import, stop 47); a plain copy of a file another run did not mutate would pass for its mutants."""
    folder = ROOT / "mutants"
    mark = folder / SOURCE_STAMP
    if folder.exists() and (not mark.exists() or mark.read_text() != stamp(files)):
        print("mutation: ./mutants was generated from other sources or files: generated again", flush=True)
        shutil.rmtree(folder)


def core_files(modules: Iterable[str]) -> list[str]:
    return sorted({f for m in modules for f in MODULES[m][0]})


def files_holding(files: Iterable[str], names: Iterable[str]) -> list[str]:
    """Those of ``files`` that hold one of the mutants ``names``."""
    prefixes = {n.rsplit(".", 1)[0] for n in names}  # pkg.mod.x_f__mutmut_3 → pkg.mod
    return sorted(f for f in set(files) if module_name(f) in prefixes)


def narrow_mutmut(files: Iterable[str], tests: Iterable[str] = ()) -> None:
    """mutmut's configuration (pyproject.toml) in this process, with only ``files`` mutated and, when
    given, ``tests`` as the test selection; mutmut forks its stats run, its fork server and its mutants'
    processes from this one, so they all see it."""
    from mutmut import configuration

    os.chdir(ROOT)
    configuration.reset_config()
    full = configuration.config()
    configuration._config = dataclasses.replace(
        full,
        only_mutate=list(files),
        pytest_add_cli_args_test_selection=list(tests) or full.pytest_add_cli_args_test_selection,
    )


def restore_generated(files: Iterable[str]) -> None:
    """Put the mutated copies of ``files`` back as generated (their mtime too: newer than the sources)."""
    for f in files:
        saved = ROOT / "mutants" / GENERATED / f
        if saved.exists():
            shutil.copy2(saved, ROOT / "mutants" / f)


def generate(max_children: int, files: list[str]) -> None:
    """mutmut's mutant generation (the first step of ``mutmut run``) of ``files`` alone: to list the
    mutants; the mutated copies are saved for ``restore_generated``."""
    from mutmut.__main__ import (
        copy_also_copy_files,
        copy_src_dir,
        create_mutants,
        setup_source_paths,
        store_lines_covered_by_tests,
    )
    from mutmut.mutation.trampoline import set_mutant_under_test

    narrow_mutmut(files)
    set_mutant_under_test("mutant_generation")
    drop_stale_mutants(files)
    (ROOT / "mutants").mkdir(exist_ok=True)
    restore_generated(files)
    copy_src_dir()
    copy_also_copy_files()
    setup_source_paths()
    store_lines_covered_by_tests()
    stats = create_mutants(max_children)
    for f in files:
        saved = ROOT / "mutants" / GENERATED / f
        saved.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / "mutants" / f, saved)
    (ROOT / "mutants" / SOURCE_STAMP).write_text(stamp(files))
    print(f"mutation: generated ({stats.mutated} files mutated, {stats.unmodified} unchanged)", flush=True)


def fingerprint(mutant: str) -> tuple[str, str]:
    """The mutant's diff and a short hash of its changed lines (indentation and line numbers left out),
    so that an equivalents entry goes stale when the mutation it names is no longer the same."""
    from mutmut.mutation.diff_apply import get_diff_for_mutant

    os.chdir(ROOT)
    diff = get_diff_for_mutant(mutant)
    changed = [
        line[0] + line[1:].strip()
        for line in diff.splitlines()
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    return diff, hashlib.sha1("\n".join(changed).encode()).hexdigest()[:10]


@dataclass
class Equivalent:
    mutant: str
    fingerprint: str
    reason: str


def load_equivalents(path: Path = EQUIVALENTS) -> dict[tuple[str, str], Equivalent]:
    """One line per mutant: ``NAME FINGERPRINT REASON`` (``#`` starts a comment line). Matched on the
    mutant's function and fingerprint, so a renumbering of the function's mutants does not matter."""
    out: dict[tuple[str, str], Equivalent] = {}
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, fp, reason = line.split(maxsplit=2)
        out[(function_of(name), fp)] = Equivalent(name, fp, reason)
    return out


def changed_functions(base: str) -> dict[str, set[str]]:
    """The core files changed since ``base`` (committed or not) → the mangled names (mutmut's
    ``x_f``, ``xǁCǁm``) of their top-level functions and methods whose lines the change touched."""
    files = [f for m in MODULES.values() for f in m[0]]
    git = ["git", "-C", str(ROOT)]
    # against where this branch left the base, so that the base's own later commits do not count
    fork = subprocess.run([*git, "merge-base", base, "HEAD"], capture_output=True, text=True, check=True)
    diff = subprocess.run(
        [*git, "diff", "-U0", fork.stdout.strip(), "--", *files], capture_output=True, text=True, check=True
    ).stdout
    touched: dict[str, set[int]] = {}
    current = None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            current = line[6:] if line.startswith("+++ b/") else None
        elif line.startswith("@@") and current:
            m = re.match(r"@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", line)
            assert m
            start, count = int(m[1]), int(m[2] if m[2] is not None else 1)
            touched.setdefault(current, set()).update(range(start, start + max(count, 1)))
    out: dict[str, set[str]] = {}
    for f, lines in touched.items():
        tree = ast.parse((ROOT / f).read_text())
        for node in tree.body:
            defs: list[tuple[str, ast.AST]] = []
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                defs.append((f"x_{node.name}", node))
            elif isinstance(node, ast.ClassDef):
                defs += [
                    (f"xǁ{node.name}ǁ{n.name}", n)
                    for n in node.body
                    if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
                ]
            for mangled, d in defs:
                first = min([d.lineno] + [x.lineno for x in getattr(d, "decorator_list", [])])  # type: ignore[attr-defined]
                if lines & set(range(first, (d.end_lineno or first) + 1)):  # type: ignore[attr-defined]
                    out.setdefault(f, set()).add(f"{module_name(f)}.{mangled}")
    return out


#: ``mutmut run`` with its configuration narrowed (narrow_mutmut): argv[1] the files to mutate, argv[2] the
#: tests (JSON lists), the rest mutmut's own arguments
_NARROWED_MUTMUT = (
    "import json, sys; sys.path.insert(0, sys.argv[1]); import run; "
    "run.narrow_mutmut(json.loads(sys.argv[2]), json.loads(sys.argv[3])); "
    "from mutmut.__main__ import cli; cli(sys.argv[4:])"
)


def run_mutmut(
    names: list[str], timeout: float, max_children: int, files: list[str], tests: list[str]
) -> int | None:
    """``mutmut run NAMES`` in its own process group, mutating only ``files`` and with ``tests`` as its test
    selection: its exit status, None when the budget ran out."""
    if not names:
        return 0
    restore_generated(files)
    (ROOT / "mutants" / "mutmut-stats.json").unlink(missing_ok=True)  # stats of this group's tests only
    cmd = [
        sys.executable,
        "-c",
        _NARROWED_MUTMUT,
        str(Path(__file__).resolve().parent),
        json.dumps(files),
        json.dumps(tests),
        "run",
        "--max-children",
        str(max_children),
        *names,
    ]
    with subprocess.Popen(cmd, cwd=ROOT, start_new_session=True) as proc:
        # a CI timeout that stops this script stops the mutants too
        signal.signal(signal.SIGTERM, lambda *_: (os.killpg(proc.pid, signal.SIGKILL), sys.exit(143)))
        try:
            proc.wait(timeout=max(timeout, 1))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            return None
    return proc.returncode


@dataclass
class Row:
    module: str
    mutants: int = 0
    selected: int = 0
    killed: int = 0
    timeout: list[str] = field(default_factory=list)
    equivalent: list[str] = field(default_factory=list)
    survived: list[str] = field(default_factory=list)
    not_run: int = 0

    @property
    def score(self) -> str:
        caught = self.killed + len(self.timeout)
        judged = caught + len(self.survived)
        return f"{100 * caught / judged:.1f}%" if judged else "-"


def changed_core_functions(base: str | None) -> dict[str, set[str]]:
    """``changed_functions(base)``, empty without a base or when git cannot diff against it."""
    if not base:
        return {}
    try:
        return changed_functions(base)
    except subprocess.CalledProcessError as e:
        print(f"mutation: cannot diff against {base} ({e.stderr.strip()}): sampling instead")
        return {}


def pick(
    args: argparse.Namespace, modules: Iterable[str], changed: dict[str, set[str]]
) -> tuple[dict[str, list[str]], str]:
    rng_seed = args.seed
    selected: dict[str, list[str]] = {}
    if args.full:
        return {m: all_mutants(m) for m in modules}, "every mutant"
    if args.mutant:
        wanted = set(args.mutant)
        selected = {m: [n for n in all_mutants(m) if n in wanted] for m in modules}
        return {m: ns for m, ns in selected.items() if ns}, f"the mutants named ({len(wanted)})"
    if args.base:
        if changed:
            for m in modules:
                funcs = set().union(*(changed.get(f, set()) for f in MODULES[m][0]))
                names = [n for n in all_mutants(m) if function_of(n) in funcs]
                if names:
                    selected[m] = names
            flat = [n for ns in selected.values() for n in ns]
            if len(flat) > args.changed_max:
                keep = set(random.Random(rng_seed).sample(flat, args.changed_max))
                selected = {m: [n for n in ns if n in keep] for m, ns in selected.items()}
            what = ", ".join(sorted(f for f in changed))
            if selected:
                return selected, f"the mutants of the functions changed against {args.base} ({what})"
            print(f"mutation: the core functions changed against {args.base} hold no mutant: a seeded sample")
        else:
            print(f"mutation: no core function changed against {args.base}: a seeded sample instead")
    for m in modules:
        names = all_mutants(m)
        selected[m] = sorted(random.Random(f"{rng_seed}:{m}").sample(names, min(args.sample, len(names))))
    return selected, f"a sample of {args.sample} mutants per module, seed {rng_seed}"


#: the order the groups run in, cheapest guards first, so that a budget judges the most mutants (their
#: guards' untraced seconds on an idle two-core box: tallies 1, ingest 2, parsers 26, coordinator and
#: validation 29, audit 57; an audit mutant replays the incidents: 20–30 s of CPU each)
GROUP_ORDER = (
    "validate tallies",
    "ingest accounting",
    "columnar_log",
    "request_log (line parser)",
    "coordinator/reconcile",
    "coordinator/engine",
    "coordinator/state",
    "coordinator/timers",
    "coordinator/other",
    "validation",
    "audit rules",
)


def groups(modules: Iterable[str]) -> list[list[str]]:
    """The modules together whose guards share a test (one ``mutmut run`` each), in GROUP_ORDER."""
    out: list[list[str]] = []
    for m in sorted(modules, key=GROUP_ORDER.index):
        joined = [g for g in out if any(set(GUARDS[m]) & set(GUARDS[o]) for o in g)]
        merged = [x for g in joined for x in g] + [m]
        out = [g for g in out if g not in joined]
        out.append(merged)
    return sorted(out, key=lambda g: min(GROUP_ORDER.index(m) for m in g))


def guard_tests(group: Iterable[str]) -> list[str]:
    return sorted({t for m in group for t in GUARDS[m]})


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--full", action="store_true", help="every mutant of the core modules (hours)")
    p.add_argument("--base", help="a git ref: mutate the core functions changed against it")
    p.add_argument("--changed-max", type=int, default=60, help="at most this many changed-function mutants")
    p.add_argument("--sample", type=int, default=5, help="mutants per module in a sample run")
    p.add_argument("--seed", default="24", help="the sample's seed (printed; same seed, same mutants)")
    p.add_argument("--module", action="append", choices=list(MODULES), help="only these modules")
    p.add_argument("--mutant", action="append", help="only this mutant (mutmut's name; repeatable)")
    p.add_argument("--budget", type=float, default=0, help="seconds for the whole run (0: no limit)")
    p.add_argument("--max-children", type=int, default=os.cpu_count() or 2)
    p.add_argument("--strict", action="store_true", help="tests/mutation/backlog.txt's survivors fail too")
    p.add_argument("--report", type=Path, help="write the per-module table and survivors as JSON here")
    args = p.parse_args(argv)
    start = time.monotonic()
    modules = args.module or (list(MODULES) if args.full or args.mutant else SAMPLED)

    changed = changed_core_functions(args.base) if not (args.full or args.mutant) else {}
    # a change's mutants come from the files it changed alone; a sample's and a full run's from all
    generated = sorted(changed) if changed else core_files(modules)
    if args.mutant:  # the files of the mutants named
        generated = files_holding(generated, args.mutant)
    generate(args.max_children, generated)
    selected, what = pick(args, modules, changed)
    changed_funcs = set().union(*changed.values())
    picked_changed = any(function_of(n) in changed_funcs for ns in selected.values() for n in ns)
    if changed and not picked_changed and generated != core_files(modules):
        # the changed functions hold no mutant (a comment, a `# pragma: no mutate` function): the sample is
        # drawn from every core file, so those are generated too
        generated = core_files(modules)
        generate(args.max_children, generated)
        selected, what = pick(argparse.Namespace(**{**vars(args), "base": None}), modules, {})
    equivalents = load_equivalents()
    # the listed equivalents are known survivors: not run, only checked to still be the same mutation
    backlog = load_equivalents(BACKLOG) if BACKLOG.exists() and not args.strict else {}
    listed_functions = {f for f, _ in equivalents}
    known: dict[str, str] = {}
    to_run: list[str] = []
    for names in selected.values():
        for n in names:
            if function_of(n) in listed_functions:
                _, fp = fingerprint(n)
                if (function_of(n), fp) in equivalents:
                    known[n] = equivalents[(function_of(n), fp)].reason
                    continue
            to_run.append(n)
    print(f"mutation: {what}: {sum(map(len, selected.values()))} mutant(s), {len(known)} listed equivalent")
    status_of: dict[str, int | None] = {}
    for group in groups(m for m in modules if any(n in to_run for n in selected.get(m, []))):
        names = [n for m in group for n in selected[m] if n in to_run]
        files = files_holding((f for m in group for f in MODULES[m][0]), names)
        tests = guard_tests(group)
        remaining = args.budget - (time.monotonic() - start) if args.budget else 10**9
        if remaining < 60:
            print(f"mutation: the budget of {args.budget:.0f} s ran out before {', '.join(group)}: not run")
            break
        what_runs = f"{len(names)} mutant(s) in {len(files)} file(s), tests {' '.join(tests)}"
        print(f"mutation: {', '.join(group)}: {what_runs}", flush=True)
        exit_status = run_mutmut(names, remaining - 30, args.max_children, files, tests)
        status_of.update({n: results().get(n) for n in names})
        if exit_status is None:
            print(f"mutation: the budget of {args.budget:.0f} s ran out: the mutants not reached are not run")
            break
        if exit_status != 0:
            print(f"mutation: FAILED: mutmut exited with status {exit_status} (its output above says why)")
            return 2
    restore_generated(generated)

    from mutmut.stats import status_by_exit_code

    rows: list[Row] = []
    for m in modules:
        if not set(MODULES[m][0]) & set(generated):
            continue  # a change's run: this module's files were not changed, nor generated
        row = Row(m, mutants=len(all_mutants(m)), selected=len(selected.get(m, [])))
        for n in selected.get(m, []):
            status = status_by_exit_code[status_of.get(n)]
            if n in known:
                row.equivalent.append(n)
            elif status in CAUGHT:
                row.killed += 1
            elif status in TIMED_OUT:
                row.timeout.append(n)
            elif status in SURVIVING:
                row.survived.append(n)
            else:
                row.not_run += 1
        rows.append(row)

    print()
    head = (
        ("mutants", 8),
        ("run", 6),
        ("killed", 8),
        ("timeout", 9),
        ("equiv", 7),
        ("survived", 10),
        ("not run", 9),
        ("score", 8),
    )
    print(f"{'module':<28}" + "".join(f"{h:>{w}}" for h, w in head))
    for r in rows:
        print(
            f"{r.module:<28}{r.mutants:>8}{r.selected:>6}{r.killed:>8}{len(r.timeout):>9}{len(r.equivalent):>7}"
            f"{len(r.survived):>10}{r.not_run:>9}{r.score:>8}"
        )
    for n in (n for r in rows for n in r.timeout):
        print(
            f"\nTIMEOUT (counted as caught; its tests ran past mutmut's limit: an endless loop, or a machine "
            f"too loaded for timeout_constant): {n}"
        )
    survivors = []
    open_ = []
    for n in (n for r in rows for n in r.survived):
        diff, fp = fingerprint(n)
        if (function_of(n), fp) in backlog:
            open_.append(n)
            print(f"\nOPEN (in tests/mutation/backlog.txt, needs a test): {n} {fp}")
            continue
        survivors.append(n)
        print(f"\nSURVIVED ({status_by_exit_code[status_of.get(n)]}): {n} {fp}\n{diff}")
    if args.report:
        args.report.write_text(
            json.dumps(
                {
                    "selection": what,
                    "seconds": round(time.monotonic() - start),
                    "rows": [r.__dict__ | {"score": r.score} for r in rows],
                    "survivors": {n: fingerprint(n)[1] for n in survivors},
                    "open": open_,
                },
                indent=2,
            )
        )
    print(f"\nmutation: {time.monotonic() - start:.0f} s")
    if survivors:
        print(
            f"mutation: FAILED: {len(survivors)} mutant(s) survived. Add a test that kills each (expected "
            "values from Kafka's semantics, never from the model), or list it in "
            "tests/mutation/equivalents.txt "
            "as NAME FINGERPRINT REASON when no test can tell it from the code"
        )
        return 1
    print("mutation: ok: no mutant survived that is not listed as equivalent")
    return 0


if __name__ == "__main__":
    sys.exit(main())
