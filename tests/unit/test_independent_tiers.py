"""The independent tiers (Kafka's own coordinator, real brokers) fail instead of skipping when CI
requires them (``tests.helpers.unavailable``), and CI does require them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import helpers

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("variable", ["DIFFERENTIAL_REQUIRED", "REALKAFKA_REQUIRED"])
def test_a_missing_tier_skips_unless_required(variable: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("DIFFERENTIAL_REQUIRED", "REALKAFKA_REQUIRED", helpers.INDEPENDENT_TIERS_REQUIRED):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(pytest.skip.Exception, match="no oracle here"):
        helpers.unavailable("differential", variable, "no oracle here")
    for off in ("", "0", "false"):
        monkeypatch.setenv(variable, off)
        assert not helpers.tier_required(variable)
    monkeypatch.setenv(variable, "1")
    assert helpers.tier_required(variable)
    with pytest.raises(pytest.fail.Exception, match=rf"required \({variable}\) but no oracle here"):
        helpers.unavailable("differential", variable, "no oracle here")


def test_one_variable_requires_every_independent_tier(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DIFFERENTIAL_REQUIRED", raising=False)
    monkeypatch.delenv("REALKAFKA_REQUIRED", raising=False)
    monkeypatch.setenv(helpers.INDEPENDENT_TIERS_REQUIRED, "1")
    assert helpers.tier_required("DIFFERENTIAL_REQUIRED") and helpers.tier_required("REALKAFKA_REQUIRED")
    with pytest.raises(pytest.fail.Exception):
        helpers.unavailable("real-Kafka", "REALKAFKA_REQUIRED", "no Maven")


def test_ci_requires_both_independent_tiers() -> None:
    run = (ROOT / ".ci" / "run").read_text().splitlines()
    assert "DIFFERENTIAL_REQUIRED=1 DELTA_SPARK_REQUIRED=1 make test" in run
    # a step of its own (the box is its brokers'), its status failing the script
    assert "step realkafka_twice" in run  # recorded once more when it fails: fails if both fail
    assert run.count("  env REALKAFKA_REQUIRED=1 make test-realkafka || rc=$?") == 1
    assert run.count("    env REALKAFKA_REQUIRED=1 make test-realkafka || rc=$?") == 1
    assert run[-1] == 'exit "$status"' and 'if [ "$rc" != 0 ]; then status=1; fi' in "\n".join(run)


def test_ci_requires_the_delta_spark_tests_and_runs_the_cluster_demos_command() -> None:
    """No delta-spark test may skip in CI (Delta's jars unreachable fails them), and the README's
    `make cluster-demo` command (spark-submit with Delta's package, ``submit.py run``) runs in that tier:
    ``test_cluster.py`` submits it to the tier's cluster (a CI stage of its own until stop 52)."""
    run = (ROOT / ".ci" / "run").read_text().splitlines()
    assert "DELTA_SPARK_REQUIRED=1 make test-delta-spark" in run
    makefile = (ROOT / "Makefile").read_text()
    assert '-m "not realkafka and not deltaspark"' in makefile  # make test leaves them out
    recipe = makefile.split("\ncluster-demo:")[1].split("\n\n")[0]
    for part in ("spark-submit --master", "--packages $$DELTA", "spark.jars.ivy=", "jobs/submit.py run"):
        assert part in recipe, part
    test = (ROOT / "tests" / "integration" / "test_cluster.py").read_text()
    for part in ('"spark-submit"', '"--packages"', "delta_package()", "spark.jars.ivy=", '"submit.py"'):
        assert part in test, part
    assert '_submit(cluster, "run", "--input"' in test and "pytest.mark.deltaspark" in test


def test_missing_delta_jars_fail_when_required(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DELTA_SPARK_REQUIRED", "1")
    with pytest.raises(pytest.fail.Exception, match="delta-spark tier is required"):
        helpers.unavailable("delta-spark", "DELTA_SPARK_REQUIRED", "Delta's jars could not be fetched")


def test_ci_runs_hypothesis_derandomized_and_a_separate_profile_is_random() -> None:
    from hypothesis import settings

    from tests.conftest import hypothesis_profile

    assert hypothesis_profile({"CI": "1"}) == "ci"
    assert hypothesis_profile({"CI": "true", "HYPOTHESIS_PROFILE": "random"}) == "random"
    assert hypothesis_profile({}) == "dev"
    ci, rnd = settings.get_profile("ci"), settings.get_profile("random")
    assert (ci.derandomize, ci.print_blob, ci.deadline) == (True, True, None)
    assert (rnd.derandomize, rnd.print_blob, rnd.deadline) == (False, True, None)
    assert 'export CI="${CI:-1}"' in (ROOT / ".ci" / "run").read_text().splitlines()
