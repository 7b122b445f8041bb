# The README's two commands: `make demo` (set up + run the pipeline on the bundled sample) and
# `make test` (set up + run the whole test suite). Both create .venv on first use.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
WAREHOUSE ?= warehouse

.PHONY: demo test test-fast test-browser test-delta-spark test-realkafka test-random real-kafka-corpus lint install check-java check-maven bench clean cluster-demo mutation mutation-ci

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else 1)' \
	  || { echo "rebalance-replay needs Python 3.11 (found: $$($(PYTHON) --version 2>&1)); set PYTHON=/path/to/python3.11"; exit 1; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "installing rebalance-replay and its dependencies into $(VENV) (first run: a few minutes; log: $(VENV)/install.log)"
	@{ $(BIN)/python -m pip install --disable-pip-version-check --upgrade pip \
	   && $(BIN)/python -m pip install --disable-pip-version-check -e '.[dev]'; } > $(VENV)/install.log 2>&1 \
	  || { tail -n 30 $(VENV)/install.log; echo "install failed: see $(VENV)/install.log"; exit 1; }
	@touch $(STAMP)

install: $(STAMP)

check-java:
	@command -v java >/dev/null 2>&1 || test -x "$$JAVA_HOME/bin/java" \
	  || { echo "Java 17 is required to run Spark: install a JDK 17 and put java on PATH (or set JAVA_HOME)"; exit 1; }

demo: check-java install
	$(BIN)/rebalance-replay run --input samples/logs --warehouse $(WAREHOUSE)
	@echo "--- the incident sample (one group per audit rule, ground truth in samples/incidents/ground_truth.json):"
	$(BIN)/rebalance-replay run --input samples/incidents --warehouse $(WAREHOUSE)-incidents \
	  --set broker.group.max.size=8

# The demo on a real Spark standalone cluster (a master and two 1-core workers from the pyspark package),
# driven through spark-submit with the delta-spark engine (Delta's jars from Maven Central, cached in the
# git-ignored .cache/ivy), the warehouse given as the README gives it (relative); the cluster is stopped
# afterwards.
CLUSTER_DIR ?= /tmp/rebalance-replay-cluster
IVY_DIR := $(CURDIR)/.cache/ivy
cluster-demo: check-java install
	@rm -rf $(CLUSTER_DIR) $(WAREHOUSE)-cluster
	@DELTA=$$($(BIN)/python -c 'from rebalance_replay.jobs.delta import delta_package; print(delta_package())') && \
	  MASTER=$$($(BIN)/python -m rebalance_replay.jobs.standalone start --dir $(CLUSTER_DIR)) && echo "cluster: $$MASTER" && \
	  PYSPARK_PYTHON=$(abspath $(BIN))/python PYTHONPATH=$(CURDIR) \
	  $(BIN)/spark-submit --master $$MASTER --packages $$DELTA --conf spark.jars.ivy=$(IVY_DIR) \
	    rebalance_replay/jobs/submit.py run --input samples/logs --warehouse $(WAREHOUSE)-cluster; \
	  status=$$?; $(BIN)/python -m rebalance_replay.jobs.standalone stop --dir $(CLUSTER_DIR); exit $$status

# The test tiers (README "Development" gives each one's measured time). `make test` is every tier but the
# real-Kafka and the delta-spark ones, the browser tests among the rest (a process of their own until stop 53:
# one core idle for their ~6 minutes).
# TEST_WORKERS pytest-xdist workers, a test file each at a time (a Spark session per worker; the real-Kafka
# corpus file alone takes ~5 minutes, so two workers overlap it with the rest); TEST_WORKERS=0: one process
TEST_WORKERS ?= 2
test: check-java install
	$(BIN)/python -m pytest -m "not realkafka and not deltaspark" -n $(TEST_WORKERS) --dist loadfile --durations=15

# The delta-spark engine (Delta's jars from Maven Central, cached in .cache/ivy): the two engines compared
# table by table, a warehouse changing engine, schema evolution, time travel, maintenance, and the
# standalone-cluster tests; fails (never skips) without the jars unless DELTA_SPARK_REQUIRED=0.
test-delta-spark: check-java install
	DELTA_SPARK_REQUIRED=$${DELTA_SPARK_REQUIRED:-1} $(BIN)/python -m pytest -m "deltaspark and not realkafka and not browser" \
	  -n $(TEST_WORKERS) --dist loadfile --durations=10

# Pure Python, no JVM, no browser, nothing slow: `-n` workers (pytest-xdist; FAST_WORKERS=0 runs them in
# this process), one test file per worker so a file's cached inputs are computed once.
FAST_MARKERS = not spark and not slow and not browser and not differential and not realkafka and not cluster and not deltaspark
FAST_WORKERS ?= auto
test-fast: install
	$(BIN)/python -m pytest -m "$(FAST_MARKERS)" -n $(FAST_WORKERS) --dist loadfile

# The pages in headless Chromium (/usr/lib/chromium/chromium; skipped, with the reason, without it): the
# 1,000-member report page (no Spark) and the sample's report and Data Docs (Spark).
test-browser: check-java install
	$(BIN)/python -m pytest -p no:xdist -m "browser and not realkafka"

# The property tests (hypothesis) once more, randomized: a new seed each run unless HYPOTHESIS_SEED is set
# (printed first, so a failure can be replayed with HYPOTHESIS_SEED=<seed> make test-random). `make test`
# runs them derandomized under CI (tests/conftest.py, profile "ci"); CI runs this with its commit's seed.
PROPERTY_TESTS = $(shell grep -rl "@given" tests --include='*.py' | sort)
test-random: install
	@seed=$${HYPOTHESIS_SEED:-$$($(BIN)/python -c "import random; print(random.randrange(2**32))")}; \
	echo "hypothesis seed: $$seed (replay: HYPOTHESIS_SEED=$$seed make test-random)"; \
	HYPOTHESIS_PROFILE=random $(BIN)/python -m pytest -m "not spark and not slow" \
		--hypothesis-seed=$$seed $(PROPERTY_TESTS)

check-maven:
	@command -v mvn >/dev/null 2>&1 \
	  || { echo "the real-Kafka tier needs Maven (mvn) to fetch Kafka's jars from Maven Central"; exit 1; }

# Real brokers and clients: records scenarios afresh (Kafka 2.7, 3.7, 4.4 from Maven Central, into the
# git-ignored .cache/realkafka) and checks the product on them; CI runs it after `make test`.
test-realkafka: check-java check-maven install
	REALKAFKA_REQUIRED=$${REALKAFKA_REQUIRED:-1} $(BIN)/python -m pytest -m realkafka

# Re-record the committed corpus tests/data/real-kafka (every release, every scenario: ~15 min).
real-kafka-corpus: check-java check-maven install
	$(BIN)/python -m simulator.realkafka.record --out tests/data/real-kafka

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# Mutation testing of the core modules (docs/mutation-testing.md; mutmut, configured in pyproject.toml).
# `make mutation`: EVERY mutant of every core module (~14,000 mutants: many hours on two cores; a
# surviving mutant not listed in tests/mutation/equivalents.txt fails it). `make mutation-ci`: the CI tier,
# time-boxed (MUTATION_BUDGET seconds, all included): the mutants of the core functions changed since
# MUTATION_BASE (origin/main, or main without a remote), or, when none changed (or the base is unknown),
# a seeded sample of MUTATION_SAMPLE mutants per core module.
MUTATION_BASE   ?= $(shell git rev-parse -q --verify origin/main >/dev/null && echo origin/main || echo main)
MUTATION_BUDGET ?= 600
MUTATION_SAMPLE ?= 4
MUTATION_SEED   ?= 24
# mutants run at once (mutmut --max-children)
MUTATION_CHILDREN ?= 2
mutation: install
	$(BIN)/python tests/mutation/run.py --full

mutation-ci: install
	$(BIN)/python tests/mutation/run.py --base $(MUTATION_BASE) --sample $(MUTATION_SAMPLE) \
	  --seed $(MUTATION_SEED) --budget $(MUTATION_BUDGET) --max-children $(MUTATION_CHILDREN)

bench: install
	$(BIN)/python benchmarks/bench_model.py
	$(BIN)/python benchmarks/bench_parse.py

clean:
	rm -rf $(WAREHOUSE) $(WAREHOUSE)-incidents .pytest_cache .mypy_cache .ruff_cache mutants
