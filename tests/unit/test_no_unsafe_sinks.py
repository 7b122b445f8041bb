"""No input ever reaches ``eval``, ``pickle`` or a shell: the product's own code uses none of them
(``exec`` only in the coordinator's constructor builder, over class field names, never over data;
``subprocess`` only in ``rebalance_replay/jobs/standalone.py``, with fixed argument lists and no shell, to
start Spark's
own master and worker JVMs, and in ``rebalance_replay/jobs/notify.py``, to run the configured
``audit.notify.command`` argument list, no shell, the findings on stdin: nothing from a log reaches an
argument list)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
UNSAFE = re.compile(
    r"\bimport pickle\b|\bpickle\.|\bcloudpickle\b|\beval\(|\bshell=True|\bos\.system\(|\bos\.popen\(|"
    r"\bsubprocess\b|\byaml\.load\(|\bmarshal\.loads\("
)


def test_no_eval_pickle_or_shell_in_the_product() -> None:
    hits = []
    for package in (
        "rebalance_replay/jobs",
        "rebalance_replay/transforms",
        "rebalance_replay/schemas",
        "rebalance_replay/conf",
    ):
        for f in sorted((ROOT / package).rglob("*.py")):
            for no, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
                if UNSAFE.search(line) and not (
                    f.name in ("standalone.py", "notify.py")
                    and "subprocess" in line
                    and "shell=True" not in line
                ):
                    hits.append(f"{f.relative_to(ROOT)}:{no}: {line.strip()}")
    assert hits == []
    exec_users = sorted(
        str(f.relative_to(ROOT))
        for package in ("rebalance_replay/jobs", "rebalance_replay/transforms", "rebalance_replay/schemas")
        for f in (ROOT / package).rglob("*.py")
        if re.search(r"\bexec\(", f.read_text(encoding="utf-8"))
    )
    assert exec_users == ["rebalance_replay/transforms/coordinator/fastobj.py"]
