"""The documentation the code points to exists and stays in step with it (no Spark).

* Every ``§N`` citation in the code (``.py`` and ``.md`` outside ``docs/``) names a heading of a document
  in ``docs/``: ``docs/coordinator-semantics.md`` unless the citation names another one
  (``request-log-format.md §3``).
* Every relative link in ``docs/*.md``, ``README.md`` and the other Markdown files points to a file.
* Every project module named in ``docs/*.md`` (```rebalance_replay.transforms.coordinator.engine```) exists.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
DEFAULT_DOC = "coordinator-semantics.md"
#: folders that are not project code: data, generated output, tool caches, the docs themselves
# mutants: mutmut's copy of the tree (make mutation), git-ignored
SKIP_DIRS = {"docs", "samples", "warehouse", "build", "dist", "__pycache__", "node_modules", "mutants"}
#: the test's own docstring and patterns cite sections as examples
SELF = Path(__file__).resolve()

REF = re.compile(r"(?:(?P<doc>[\w.-]+\.md)\s+)?§\s?(?P<id>\d+[a-z]?(?:\.\d+)*)")
HEADING = re.compile(r"^#{1,6}\s+§(?P<id>\d+[a-z]?(?:\.\d+)*)(?![\w.])", re.M)
LINK = re.compile(r"\[[^\]]*\]\((?P<target>[^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
#: a project module in backticks: `rebalance_replay.transforms.coordinator.engine`,
#: `rebalance_replay.jobs.cli`
MODULE = re.compile(r"`(?P<mod>(?:rebalance_replay\.)?(?:conf|schemas|transforms|jobs|simulator)(?:\.\w+)+)`")


def source_files(root: Path, suffixes: tuple[str, ...]) -> Iterator[Path]:
    """Project files with these suffixes, outside hidden folders (``.venv``, ``.git``) and ``SKIP_DIRS``."""
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIP_DIRS)
        for name in sorted(files):
            path = Path(folder) / name
            if path.suffix in suffixes and path.resolve() != SELF:
                yield path


def headings(doc: Path) -> set[str]:
    return set(HEADING.findall(doc.read_text(encoding="utf-8"))) if doc.is_file() else set()


def unresolved_refs(root: Path, docs: Path) -> tuple[list[str], int]:
    """``file:line: §id`` for every citation without a heading, and the number of citations seen."""
    cache: dict[str, set[str]] = {}
    bad: list[str] = []
    seen = 0
    for f in source_files(root, (".py", ".md")):
        for no, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            for m in REF.finditer(line):
                seen += 1
                doc = m.group("doc") or DEFAULT_DOC
                doc = Path(doc).name  # "reference/x.md" and "docs/x.md" both mean docs/x.md
                if doc not in cache:
                    cache[doc] = headings(docs / doc)
                if m.group("id") not in cache[doc]:
                    bad.append(f"{f.relative_to(root)}:{no}: §{m.group('id')} has no heading in docs/{doc}")
    return bad, seen


def broken_links(md_files: list[Path], root: Path) -> list[str]:
    bad: list[str] = []
    for md in md_files:
        text = FENCE.sub("", md.read_text(encoding="utf-8"))
        for m in LINK.finditer(text):
            target = m.group("target")
            if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("#"):
                continue  # URLs, mailto:, anchors in the same file
            path = target.split("#", 1)[0]
            if not (md.parent / path).exists():
                bad.append(f"{md.relative_to(root)}: link to {target} (no such file)")
    return bad


def missing_modules(md_files: list[Path], root: Path) -> list[str]:
    bad: list[str] = []
    for md in md_files:
        for no, line in enumerate(md.read_text(encoding="utf-8").splitlines(), 1):
            for m in MODULE.finditer(line):
                parts = m.group("mod").split(".")
                # the longest prefix that is a module or package; the rest may be an attribute
                found = any(
                    root.joinpath(*parts[:i]).with_suffix(".py").is_file()
                    or (root.joinpath(*parts[:i]) / "__init__.py").is_file()
                    for i in range(len(parts), 1, -1)
                )
                if not found:
                    bad.append(f"{md.relative_to(root)}:{no}: module {m.group('mod')} does not exist")
    return bad


def markdown_files() -> list[Path]:
    return sorted({*DOCS.glob("*.md"), *source_files(ROOT, (".md",))})


def test_every_section_reference_in_the_code_has_a_heading() -> None:
    bad, seen = unresolved_refs(ROOT, DOCS)
    assert seen >= 20, f"only {seen} § references found: is the scan looking at the code?"
    assert not bad, "section references without a heading:\n" + "\n".join(bad)


def test_the_scan_covers_every_code_folder() -> None:
    scanned = {p.relative_to(ROOT).as_posix() for p in source_files(ROOT, (".py",))}
    expected = (
        "rebalance_replay/conf/__init__.py",
        "rebalance_replay/schemas/tables.py",
        "rebalance_replay/transforms/coordinator/engine.py",
        "rebalance_replay/jobs/cli.py",
    )
    for module in expected:
        assert any(s == module or s.endswith("/" + module) for s in scanned), module
    assert any(s.startswith("simulator/") for s in scanned)
    assert not any(s.startswith(("docs/", "samples/", ".venv/")) for s in scanned)


def test_relative_links_in_the_docs_point_to_files() -> None:
    md = markdown_files()
    assert ROOT / "README.md" in md and DOCS / "coordinator-semantics.md" in md
    bad = broken_links(md, ROOT)
    assert not bad, "\n".join(bad)


def test_modules_named_in_the_docs_exist() -> None:
    bad = missing_modules(sorted(DOCS.glob("*.md")), ROOT)
    assert not bad, "\n".join(bad)


# ---------------------------------------------------------------------------- the checks themselves
@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "docs").mkdir()
    doc = "# T\n\n## §3 Checks\n\n### §4.7 Protocols\n\n## §16a Timers\n"
    (tmp_path / "docs" / DEFAULT_DOC).write_text(doc)
    (tmp_path / "docs" / "other.md").write_text("## §4 Lines\n[up](../pkg/mod.py) [web](https://x.org/a)\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text('"""§3 and §4.7; §16a."""\n# other.md §4\n')
    return tmp_path


def test_references_resolve_against_the_named_document(tree: Path) -> None:
    assert unresolved_refs(tree, tree / "docs") == ([], 4)


def test_a_reference_without_heading_is_reported_with_file_and_line(tree: Path) -> None:
    (tree / "pkg" / "bad.py").write_text("x = 1\n# see §4.8 and other.md §3 and §16\n")
    bad, _ = unresolved_refs(tree, tree / "docs")
    assert bad == [
        f"pkg/bad.py:2: §4.8 has no heading in docs/{DEFAULT_DOC}",
        "pkg/bad.py:2: §3 has no heading in docs/other.md",
        f"pkg/bad.py:2: §16 has no heading in docs/{DEFAULT_DOC}",
    ]


def test_a_heading_prefix_is_not_a_heading(tree: Path) -> None:
    """``§16a`` is not ``§16`` and ``§4.7`` is not ``§4``."""
    assert headings(tree / "docs" / DEFAULT_DOC) == {"3", "4.7", "16a"}


def test_broken_links_and_unknown_modules_are_reported(tree: Path) -> None:
    md = tree / "docs" / "other.md"
    assert broken_links([md], tree) == []
    md.write_text("[gone](../pkg/gone.py#x) `transforms.nothing_here`\n```\n[in a fence](nope.md)\n```\n")
    assert broken_links([md], tree) == ["docs/other.md: link to ../pkg/gone.py#x (no such file)"]
    assert missing_modules([md], tree) == ["docs/other.md:1: module transforms.nothing_here does not exist"]
