"""The coordinator package's boundaries (issue 9): its import graph has no cycle and no function-local
imports, and no module reaches into another module's private members."""

from __future__ import annotations

import ast
from pathlib import Path

import rebalance_replay.transforms.coordinator

PACKAGE = Path(rebalance_replay.transforms.coordinator.__file__).parent
MODULES = {p.stem: ast.parse(p.read_text(encoding="utf-8")) for p in sorted(PACKAGE.glob("*.py"))}


def _imports(tree: ast.Module) -> set[str]:
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module.startswith("rebalance_replay.transforms.coordinator."):
                out.add(node.module.rsplit(".", 1)[1])
            elif node.module == "rebalance_replay.transforms.coordinator":
                out |= {a.name for a in node.names}
    return out


def test_no_import_cycle() -> None:
    graph = {name: _imports(tree) & set(MODULES) for name, tree in MODULES.items()}
    done: set[str] = set()

    def visit(name: str, path: tuple[str, ...]) -> None:
        assert name not in path, f"import cycle: {' -> '.join((*path, name))}"
        if name in done:
            return
        for dep in sorted(graph[name]):
            visit(dep, (*path, name))
        done.add(name)

    for name in sorted(graph):
        visit(name, ())
    assert "engine" not in graph["reconcile"] and "engine" not in graph["serde"]


def test_no_function_local_imports() -> None:
    for name, tree in MODULES.items():
        for fn in ast.walk(tree):
            if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                local = [n for n in ast.walk(fn) if isinstance(n, ast.Import | ast.ImportFrom)]
                assert not local, f"{name}.{fn.name} imports inside a function"


def _own_names(tree: ast.Module) -> set[str]:
    """Names a module defines: functions, classes, class-level and self attributes, slot names."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names.add(node.value)
    return names


def test_no_private_access_across_modules() -> None:
    for name, tree in MODULES.items():
        own = _own_names(tree)
        foreign = sorted(
            {
                n.attr
                for n in ast.walk(tree)
                if isinstance(n, ast.Attribute)
                and n.attr.startswith("_")
                and not n.attr.startswith("__")
                and n.attr not in own
            }
            | {
                a.name
                for n in ast.walk(tree)
                if isinstance(n, ast.ImportFrom)
                and n.module
                and n.module.startswith("rebalance_replay.transforms")
                for a in n.names
                if a.name.startswith("_")
            }
        )
        assert not foreign, f"{name} uses private members of other modules: {foreign}"
