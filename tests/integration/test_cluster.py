"""The product on a real Spark standalone cluster (a master and two 1-core workers, separate JVMs,
started from the pyspark package), with the engine a multi-machine cluster needs: ``storage.engine=auto``
picks delta-spark for a cluster master (Delta's jars from Maven Central, cached in ``.cache/ivy``). The
same rows as the local run (delta-rs), the scheduled (incremental) path with a worker killed in the middle
of its replay, and a relative ``--warehouse`` (the executors' working folders are not the driver's)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from deltalake import DeltaTable

from rebalance_replay.jobs.cli import main
from rebalance_replay.jobs.delta.spark import delta_package
from rebalance_replay.jobs.standalone import StandaloneCluster
from tests.helpers import canonical, read_table, sample_warehouse

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "artifacts"
SAMPLE = ROOT / "samples" / "logs"
TABLES = ("requests", "quarantine", "predictions", "transitions", "rebalances", "member_sessions")

#: the demo's whole `run` (Great Expectations and the report included) on the cluster, beside the other xdist
#: worker: more than the default 600 s on a loaded box
pytestmark = [
    pytest.mark.cluster,
    pytest.mark.spark,
    pytest.mark.slow,
    pytest.mark.deltaspark,
    pytest.mark.timeout(1800),
]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    with StandaloneCluster(tmp_path_factory.mktemp("cluster")) as c:
        yield c


def _tables(wh: Path) -> dict[str, list[str]]:
    return {t: canonical(read_table(wh / t), drop=("ingested_at",)) for t in TABLES}


def _executor_conf() -> Path:
    """The executors import the tree under test too (not whatever an installed copy holds)."""
    path = ROOT / ".cache" / "cluster-test-conf.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"spark:\n  extra:\n    spark.executorEnv.PYTHONPATH: {json.dumps(str(ROOT))}\n")
    return path


def _cli(cluster: StandaloneCluster, *args: str, cwd: Path | None = None) -> subprocess.Popen[str]:
    """The CLI as spark-submit would run it: its own driver process, executors on the cluster."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rebalance_replay.jobs.cli",
            *args,
            "--set",
            f"spark.master={cluster.master_url}",
            "--set",
            f"storage.delta_spark_ivy={ROOT / '.cache' / 'ivy'}",
            "--conf",
            str(_executor_conf()),
        ],
        cwd=cwd or ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYSPARK_PYTHON": sys.executable},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _ok(p: subprocess.Popen[str]) -> str:
    _out, err = p.communicate(timeout=900)
    assert p.returncode == 0, err[-3000:]
    assert "storage: delta-spark engine (auto: master spark://" in err, err[-3000:]
    return err


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory, spark: object) -> Path:
    return sample_warehouse(tmp_path_factory.mktemp("local") / "wh")


def _submit(cluster: StandaloneCluster, *args: str, cwd: Path) -> subprocess.Popen[str]:
    """The README's cluster demo as ``make cluster-demo`` runs it: spark-submit, Delta's package from Maven
    Central (cached in ``.cache/ivy``), the ``submit.py`` entry point (the session is spark-submit's: the
    product sets none of its settings)."""
    return subprocess.Popen(
        [
            str(Path(sys.executable).parent / "spark-submit"),
            "--master",
            cluster.master_url,
            "--packages",
            delta_package(),
            "--conf",
            f"spark.jars.ivy={ROOT / '.cache' / 'ivy'}",
            str(ROOT / "rebalance_replay" / "jobs" / "submit.py"),
            *args,
        ],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYSPARK_PYTHON": sys.executable},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_cluster_run_gives_the_local_rows(cluster: StandaloneCluster, local: Path, tmp_path: Path) -> None:
    """``make cluster-demo``'s command (spark-submit ``run``, relative paths as the README gives them: the
    driver makes them absolute) on the cluster gives the local run's rows (CI's cluster-demo stage until
    stop 52, folded into this test: the same command, its rows compared)."""
    rel = os.path.relpath(SAMPLE, tmp_path)
    p = _submit(cluster, "run", "--input", rel, "--warehouse", "wh", cwd=tmp_path)
    out, err = p.communicate(timeout=1200)
    assert p.returncode == 0, err[-3000:]
    said = out + err  # `run` says its progress on stdout
    assert "storage: delta-spark engine (auto: master spark://" in said, said[-3000:]
    wh = tmp_path / "wh"
    assert (wh / "summary.json").exists() and (wh / "reports" / "index.html").exists()
    here, there = _tables(local), _tables(wh)
    lines = ["| table | rows local (delta-rs) | rows cluster (delta-spark) | equal |", "|---|---:|---:|---|"]
    lines += [
        f"| {t} | {len(here[t])} | {len(there[t])} | {'yes' if here[t] == there[t] else 'NO'} |"
        for t in TABLES
    ]
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "cluster-equality.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert there == here
    assert all(here[t] for t in ("requests", "predictions", "rebalances")), "nothing to compare"
    # the tables were committed by Delta itself (delta-spark), not by delta-rs
    assert "Delta-Lake" in str(DeltaTable(str(wh / "requests")).history()[-1].get("engineInfo"))


def test_cluster_incremental_with_a_worker_killed_equals_local_incremental(
    cluster: StandaloneCluster, tmp_path: Path, spark: object
) -> None:
    """The scheduled (incremental) path on the cluster gives the local incremental rows, even when a worker
    dies after the replay's first micro-batch: its executor goes with it, Spark runs the remaining
    micro-batches' tasks on the other worker, and no table commits a micro-batch twice."""
    local_wh, wh = tmp_path / "local", tmp_path / "wh"
    assert main(["ingest", "--input", str(SAMPLE), "--warehouse", str(local_wh)]) == 0
    # --final: the sample is 9 minutes of log, within replay.late_tolerance_ms of its newest answer, so a
    # run without it holds every request back for late arrivals and writes no row to compare
    assert main(["replay", "--incremental", "--final", "--warehouse", str(local_wh)]) == 0
    _ok(_cli(cluster, "ingest", "--input", str(SAMPLE), "--warehouse", str(wh)))
    p = _cli(cluster, "replay", "--incremental", "--final", "--warehouse", str(wh))
    assert p.stderr is not None
    seen = []
    for line in p.stderr:
        seen.append(line)
        if "micro-batch 1/" in line:
            cluster.kill_worker(0)
            break
    _out, err = p.communicate(timeout=900)
    said = "".join(seen) + err
    assert p.returncode == 0, said[-3000:]
    first = re.search(r"micro-batch 1/(\d+) committed", said)
    assert first and int(first.group(1)) >= 2, said[-3000:]  # the worker died with micro-batches to go
    assert f"micro-batch {first.group(1)}/{first.group(1)} committed" in said, said[-3000:]
    here, there = _tables(local_wh), _tables(wh)
    assert all(here[t] for t in ("predictions", "transitions", "rebalances")), "nothing to compare"
    assert there == here
    # each micro-batch committed once (no duplicate commit after the retry)
    assert len(read_table(wh / "predictions")) == len(read_table(local_wh / "predictions"))
