"""The test tree itself: pytest imports test modules by basename (rootdir, no packages), so two test files
with one name in two folders make the second fail to collect in a process that imported the first (as a
pytest-xdist worker does), and mutmut's stats run with it."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent


def test_no_two_test_modules_share_a_basename() -> None:
    by_name: dict[str, list[str]] = defaultdict(list)
    for path in TESTS.rglob("test_*.py"):
        by_name[path.name].append(str(path.relative_to(TESTS)))
    assert {name: paths for name, paths in by_name.items() if len(paths) > 1} == {}
