"""The package's layers (issue 25), checked on the source of every module of ``rebalance_replay``:

* the pure layers (``transforms``, ``schemas``, ``conf``, the package root) never import ``jobs`` — not at
  module level, not inside a function, not for type checking;
* no module outside ``jobs`` imports pyspark when it is imported: pyspark only inside a function (run
  when Spark is there) or under ``if TYPE_CHECKING``.

tests/unit/coordinator/test_boundaries.py adds the coordinator package's own rules (no cycle, no
function-local import, no private access across modules)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import rebalance_replay

PACKAGE = Path(rebalance_replay.__file__).parent
MODULES = {
    ".".join(("rebalance_replay", *p.relative_to(PACKAGE).with_suffix("").parts)).removesuffix(".__init__"): p
    for p in sorted(PACKAGE.rglob("*.py"))
}
PURE = {name: path for name, path in MODULES.items() if not name.startswith("rebalance_replay.jobs")}


def _resolve(module: str, path: Path, node: ast.ImportFrom) -> str:
    """The absolute name an ``from … import`` reads (relative imports resolved against ``module``)."""
    if not node.level:
        return node.module or ""
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
    return f"{base}.{node.module}" if node.module else base


def _imported(module: str, path: Path, nodes: Iterator[ast.AST]) -> Iterator[tuple[int, str]]:
    for node in nodes:
        if isinstance(node, ast.Import):
            yield from ((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, path, node)
            yield node.lineno, base
            yield from ((node.lineno, f"{base}.{a.name}") for a in node.names)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_time(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """The statements that run when the module is imported: not function bodies, not TYPE_CHECKING."""
    for stmt in body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if isinstance(stmt, ast.If):
            if not _is_type_checking(stmt.test):
                yield from _import_time(stmt.body)
            yield from _import_time(stmt.orelse)
            continue
        yield stmt
        for field in ("body", "orelse", "finalbody"):  # class bodies, try/with/for blocks
            yield from _import_time(getattr(stmt, field, []))
        for handler in getattr(stmt, "handlers", []):
            yield from _import_time(handler.body)


def test_the_modules_are_found() -> None:
    assert "rebalance_replay.transforms.audit.registry" in PURE and "rebalance_replay.schemas" in PURE
    assert "rebalance_replay.jobs.cli" in MODULES and "rebalance_replay.jobs.cli" not in PURE


@pytest.mark.parametrize("module", sorted(PURE))
def test_pure_layers_never_import_jobs(module: str) -> None:
    path = PURE[module]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bad = [
        f"line {line}: {name}"
        for line, name in _imported(module, path, ast.walk(tree))
        if name == "rebalance_replay.jobs" or name.startswith("rebalance_replay.jobs.")
    ]
    assert not bad, f"{module} imports jobs: {bad}"


@pytest.mark.parametrize("module", sorted(PURE))
def test_no_module_level_pyspark_outside_jobs(module: str) -> None:
    path = PURE[module]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bad = [
        f"line {line}: {name}"
        for line, name in _imported(module, path, _import_time(tree.body))
        if name == "pyspark" or name.startswith("pyspark.")
    ]
    assert not bad, f"{module} imports pyspark when imported: {bad}"


def test_the_checks_see_what_they_look_for() -> None:
    """The walkers on a made-up module: jobs imported in a function counts, pyspark in one does not."""
    src = (
        "from typing import TYPE_CHECKING\n"
        "import pyspark.sql\n"
        "if TYPE_CHECKING:\n    from pyspark.sql import DataFrame\n"
        "try:\n    from pyspark import SparkContext\nexcept ImportError:\n    pass\n"
        "class K:\n    from pyspark.sql import functions\n"
        "def f():\n    from rebalance_replay.jobs import config\n    import pyspark.ml\n"
        "from ..jobs import cli\n"
    )
    tree = ast.parse(src)
    path = PACKAGE / "transforms" / "made_up.py"
    module = "rebalance_replay.transforms.made_up"
    at_import = {n for _, n in _imported(module, path, _import_time(tree.body)) if n.startswith("pyspark")}
    assert at_import == {"pyspark.sql", "pyspark", "pyspark.SparkContext", "pyspark.sql.functions"}
    jobs = {n for _, n in _imported(module, path, ast.walk(tree)) if n.startswith("rebalance_replay.jobs")}
    assert jobs == {
        "rebalance_replay.jobs",
        "rebalance_replay.jobs.config",
        "rebalance_replay.jobs.cli",
    }
