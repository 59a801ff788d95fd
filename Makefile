# Two commands for a newcomer: `make demo` and `make test`. Both install what
# they need: uv (into .tools/ when it is not on PATH), then the locked
# dependencies into .venv/. `make conformance` compares the project with the
# reference documents kept beside the repository (../shared).

SHELL := /bin/bash
UV_VERSION := 0.13.9
UV := $(shell command -v uv 2>/dev/null || echo .tools/bin/uv)
RUN := $(UV) run --frozen

.PHONY: setup setup-test demo test lint typecheck imports unit bench clean setup-bench bench-full bench-docs bench-micro soak conformance conformance-folder

.tools/bin/uv:
	python3 -m venv .tools
	.tools/bin/pip install --quiet "uv==$(UV_VERSION)"

# One environment for every target: the locked dependencies, the dev tools and
# the chart renderer the tests use (helm-python-sdk). --inexact: what another
# target added (the bench group) stays, so no target uninstalls what another
# installed and running them in any order installs nothing the second time
# (`make clean` starts afresh, e.g. after a dependency left the lock).
SYNC := $(UV) sync --frozen --quiet --inexact --group charts

setup: $(UV)
	$(SYNC)

# The same environment (kept as a name for scripts that call it).
setup-test: setup

demo: setup
	$(RUN) python -m demo

lint: setup-test
	$(RUN) ruff check .
	$(RUN) ruff format --check .

typecheck: setup-test
	$(RUN) mypy

imports: setup-test
	$(RUN) lint-imports

# OCM_SHARED points at a folder that does not exist: no test of `make test` may
# need the reference documents, and tests/readguard.py fails the run if one
# reads them (../shared, or where OCM_SHARED says).
unit: setup-test
	OCM_SHARED=$(CURDIR)/.no-reference-documents $(RUN) pytest -q -p no:cacheprovider

test: lint typecheck imports unit

# The project against the reference documents (not in the repository): the user
# documentation's examples, the specification's wire strings, and the test
# fixtures against the reference data they were taken from (conformance/).
# They are ../shared beside the repository, or OCM_SHARED=/path/to/them.
OCM_SHARED ?= $(abspath $(CURDIR)/../shared)

conformance-folder:
	@test -d "$(OCM_SHARED)" || { \
		echo "make conformance: no reference documents at $(OCM_SHARED)." >&2; \
		echo "  It compares the project with the specification, user documentation and" >&2; \
		echo "  reference data kept beside the repository (../shared); put them there or" >&2; \
		echo "  run make conformance OCM_SHARED=/path/to/shared." >&2; \
		exit 1; }

conformance: conformance-folder setup
	OCM_SHARED="$(OCM_SHARED)" $(RUN) pytest -q -p no:cacheprovider conformance

# The benchmark suite (tests/benchmarks/bench_suite.py): results, Markdown and plots in
# bench-results/. BENCH_ARGS passes options, e.g. BENCH_ARGS="--n 100 --runs 5" or
# BENCH_ARGS="--agent-cmd '...'"; bench-full measures N = 100, 500, 1000.
BENCH_ARGS ?=
BENCH := $(RUN) --group bench python tests/benchmarks/bench_suite.py

setup-bench: $(UV)
	$(SYNC) --group bench

bench: setup-bench
	$(BENCH) $(BENCH_ARGS)

bench-full: setup-bench
	$(BENCH) --full $(BENCH_ARGS)

# docs/benchmarks.md's generated block, from the newest bench-results/*.json.
bench-docs: $(UV)
	$(RUN) python tests/benchmarks/bench_suite.py docs

# The micro-benchmarks and the single-scenario scripts, each printing its figures.
bench-micro: setup
	$(RUN) python tests/benchmarks/kubesim_bench.py
	$(RUN) python tests/benchmarks/kube_client_bench.py
	$(RUN) python tests/benchmarks/runtime_bench.py
	$(RUN) python tests/benchmarks/feedback_bench.py
	$(RUN) python tests/benchmarks/cel_bench.py
	$(RUN) python tests/benchmarks/webhook_bench.py
	$(RUN) python tests/benchmarks/mwrs_bench.py
	$(RUN) python tests/benchmarks/agent_bench.py
	$(RUN) python tests/benchmarks/feedback_latency_bench.py

# The soak test (not part of `make test`): random works, changes, deletions and
# faults against the real agent process for 10 minutes; see docs/reliability.md.
# Options: make soak SOAK_ARGS="--duration 30m --seed 7"
soak: setup-test
	$(RUN) python -m tests.soak $(SOAK_ARGS)

clean:
	rm -rf .venv .tools .mypy_cache .ruff_cache .pytest_cache

# Known vulnerabilities in every locked dependency (all groups), from PyPI's
# advisory data. It needs the network, so it is not part of `make test`.
# --strict: a package that cannot be looked up fails the audit instead of
# being skipped, so an unreachable advisory service never reads as "clean";
# the hashes of the lock pin exactly the files uv installs.
.PHONY: audit
audit: $(UV)
	mkdir -p .tools
	$(UV) export --frozen --all-groups --no-emit-project --quiet \
		--output-file .tools/audit-requirements.txt
	$(UV) tool run --from pip-audit==2.10.1 pip-audit --strict --require-hashes --disable-pip \
		--progress-spinner off --requirement .tools/audit-requirements.txt
