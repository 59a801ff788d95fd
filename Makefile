# Two commands for a newcomer: `make demo` and `make test`. Both install what
# they need: uv (into .tools/ when it is not on PATH), then the locked
# dependencies into .venv/. `make conformance` compares the project with the
# reference documents kept beside the repository (../shared).

SHELL := /bin/bash
UV_VERSION := 0.13.9
UV := $(shell command -v uv 2>/dev/null || echo .tools/bin/uv)
RUN := $(UV) run --frozen

.PHONY: setup setup-test setup-debian demo test lint typecheck imports unit bench clean setup-bench runtime-env bench-full bench-docs bench-micro soak fuzz-peers realkube unit-kubesim unit-realkube conformance conformance-folder proto ocm

# Debian packages the tests run for real (prometheus: `prometheus` and `promtool`;
# mosquitto: an MQTT broker for the mqtt driver). One line, so branches merge easily.
DEBIAN_PACKAGES := prometheus mosquitto
# The binary each package provides: a package is installed when its binary is missing.
DEBIAN_BINARY_prometheus := promtool
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

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

# The real control plane (kube-apiserver, kube-controller-manager, etcd), built
# from the Go module proxy by the module in tests/support/realkube-build into
# .tools/kube/<version>/; rebuilt only when its go.mod or go.sum changes.
KUBE_MOD := tests/support/realkube-build
KUBE_VERSION := $(shell awk '$$1 == "k8s.io/kubernetes" {print $$2}' $(KUBE_MOD)/go.mod)
KUBE_BIN := .tools/kube/$(KUBE_VERSION)
KUBE_VERSION_PKG := k8s.io/component-base/version
KUBE_LDFLAGS := -s -w -X $(KUBE_VERSION_PKG).gitVersion=$(KUBE_VERSION) \
	-X $(KUBE_VERSION_PKG).gitMajor=$(word 2,$(subst ., ,$(KUBE_VERSION:v%=x.%))) \
	-X $(KUBE_VERSION_PKG).gitMinor=$(word 3,$(subst ., ,$(KUBE_VERSION:v%=x.%))) \
	-X $(KUBE_VERSION_PKG).gitTreeState=clean
GO_BUILD := cd $(KUBE_MOD) && go build -trimpath

$(KUBE_BIN)/kube-apiserver: $(KUBE_MOD)/go.mod $(KUBE_MOD)/go.sum
	@command -v go >/dev/null || { echo "make realkube: the Go toolchain is required (go >= the version in $(KUBE_MOD)/go.mod)" >&2; exit 1; }
	mkdir -p $(KUBE_BIN)
	$(GO_BUILD) -ldflags "$(KUBE_LDFLAGS)" -o $(CURDIR)/$(KUBE_BIN)/ \
		k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager
	$(GO_BUILD) -ldflags "-s -w" -o $(CURDIR)/$(KUBE_BIN)/etcd go.etcd.io/etcd/server/v3
	touch $@

# A client-go 1.35 informer (streaming list by default) for kubesim's tests against it.
$(KUBE_BIN)/informersync: $(KUBE_MOD)/go.mod $(KUBE_MOD)/go.sum $(KUBE_MOD)/informersync/main.go
	@command -v go >/dev/null || { echo "make realkube: the Go toolchain is required (go >= the version in $(KUBE_MOD)/go.mod)" >&2; exit 1; }
	mkdir -p $(KUBE_BIN)
	$(GO_BUILD) -ldflags "-s -w" -o $(CURDIR)/$@ ./informersync

realkube: $(KUBE_BIN)/kube-apiserver $(KUBE_BIN)/informersync

# The CEL oracle: cel-go with the libraries and versions OCM's agent evaluates
# condition rules with, from the module in tests/conditions/celoracle, for the
# differential test of our CEL engine (tests/conditions/test_cel_oracle.py).
CEL_ORACLE_MOD := tests/conditions/celoracle
CEL_ORACLE := .tools/celoracle/$(shell awk '$$1 == "github.com/google/cel-go" {print $$2}' $(CEL_ORACLE_MOD)/go.mod)/celoracle

$(CEL_ORACLE): $(CEL_ORACLE_MOD)/go.mod $(CEL_ORACLE_MOD)/go.sum $(CEL_ORACLE_MOD)/main.go
	@command -v go >/dev/null || { echo "make cel-oracle: the Go toolchain is required (go >= the version in $(CEL_ORACLE_MOD)/go.mod)" >&2; exit 1; }
	mkdir -p $(dir $@)
	cd $(CEL_ORACLE_MOD) && go build -trimpath -ldflags "-s -w" -o $(CURDIR)/$@ .

.PHONY: cel-oracle
cel-oracle: $(CEL_ORACLE)

# The function declarations of OCM's CEL environment, as cel-go prints them, for
# the agent's type checker (committed; tests/conditions/test_celtyping.py checks them).
.PHONY: cel-declarations
cel-declarations: $(CEL_ORACLE)
	$(CEL_ORACLE) -declarations > workagent/conditions/celdecls.json

# Installs the DEBIAN_PACKAGES whose binary is missing, non-interactively.
setup-debian:
	@missing="$(strip $(foreach pkg,$(DEBIAN_PACKAGES),$(if $(shell command -v $(or $(DEBIAN_BINARY_$(pkg)),$(pkg)) 2>/dev/null || ls /usr/sbin/$(or $(DEBIAN_BINARY_$(pkg)),$(pkg)) 2>/dev/null),,$(pkg))))"; \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages: $$missing"; \
		$(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

demo: setup
	$(RUN) python -m demo

lint: setup-test
	$(RUN) ruff check .
	$(RUN) ruff format --check .

typecheck: setup-test
	$(RUN) mypy

imports: setup-test
	$(RUN) lint-imports

# The tests in two legs: everything on kubesim (and the tests that need no
# cluster), then the end-to-end suites again on a real control plane (tests
# marked realkube; fresh API servers per test over one etcd), with the
# interoperability tests against OCM's own server and agent (`make ocm`).
# OCM_SHARED points at a folder that does not exist: no test of `make test` may
# need the reference documents, and tests/readguard.py fails the run if one
# reads them (../shared, or where OCM_SHARED says).
PYTEST := OCM_SHARED=$(CURDIR)/.no-reference-documents $(RUN) pytest -q -p no:cacheprovider

unit: unit-kubesim unit-realkube

# The kubesim leg keeps one core busy per pytest process: it runs on one xdist
# worker per core (TEST_WORKERS=1 for one process). The real leg spends much of
# its time waiting (OCM's agent's backoffs, quiet windows) and used 1.2 of 2
# cores in one process: on two workers, a test file each (module fixtures stay
# on one worker), it took 19 minutes instead of 27 (REAL_WORKERS=0: one process).
TEST_WORKERS ?= auto
REAL_WORKERS ?= 2

unit-kubesim: setup-test setup-debian
	time $(PYTEST) -m "not realkube" -n $(TEST_WORKERS) --durations=15

unit-realkube: setup-test setup-debian realkube ocm cel-oracle
	time $(PYTEST) -m realkube -n $(REAL_WORKERS) --dist loadfile --durations=25

test: lint typecheck imports unit

# The CloudEvents gRPC modules generated from ocmkit/cloudevents/pb/cloudevent.proto
# (committed; tests/unit/test_cloudevents_proto.py checks they match a fresh generation).
PROTO := ocmkit/cloudevents/pb/cloudevent.proto
proto: setup-test
	$(RUN) python -m grpc_tools.protoc -I . --python_out=. --grpc_python_out=. \
		--plugin=protoc-gen-mypy=.venv/bin/protoc-gen-mypy --mypy_out=. \
		--plugin=protoc-gen-mypy_grpc=.venv/bin/protoc-gen-mypy_grpc --mypy_grpc_out=. $(PROTO)

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
# bench-results/. By default on a real control plane it starts per run (make realkube),
# at OCM's default client QPS (50/100) and unlimited. BENCH_ARGS passes options, e.g.
# BENCH_ARGS="--n 100 --runs 5", "--target kubesim", "--peer .tools/ocm/v1.2.1/work" (OCM's
# agent side by side, after make ocm) or "--agent-cmd '...'"; bench-full
# measures N = 100, 500, 1000.
BENCH_ARGS ?=
BENCH := $(RUN) --group bench python tests/benchmarks/bench_suite.py

setup-bench: $(UV) runtime-env
	$(SYNC) --group bench

# The agent under benchmark runs with the runtime dependencies only, as in the image.
runtime-env: $(UV)
	UV_PROJECT_ENVIRONMENT=.tools/runtime $(UV) sync --frozen --quiet --no-dev

bench: setup-bench realkube
	$(BENCH) $(BENCH_ARGS)

bench-full: setup-bench realkube
	$(BENCH) --full $(BENCH_ARGS)

# OCM's own Go programs, the peer of ours: the work agent (cmd/work) and the
# gRPC server (cmd/server) of open-cluster-management.io/ocm, built from the Go
# module proxy by the module in tests/support/ocm-build into .tools/ocm/<version>/.
# The proxy serves exact versions only (it refuses to list the module, and some
# releases: v1.1.0, v1.3.0), so the version is pinned in that go.mod; its go.sum
# is committed. Used by the interoperability tests and `make bench` side by side.
OCM_MOD := tests/support/ocm-build
OCM_VERSION := $(shell awk '$$1 == "open-cluster-management.io/ocm" {print $$2}' $(OCM_MOD)/go.mod)
OCM_BIN := .tools/ocm/$(OCM_VERSION)

$(OCM_BIN)/work: $(OCM_MOD)/go.mod $(OCM_MOD)/go.sum
	@command -v go >/dev/null || { echo "make ocm: the Go toolchain is required (go >= the version in $(OCM_MOD)/go.mod)" >&2; exit 1; }
	mkdir -p $(OCM_BIN)
	cd $(OCM_MOD) && go build -trimpath -ldflags "-s -w" -o $(CURDIR)/$(OCM_BIN)/ \
		open-cluster-management.io/ocm/cmd/work open-cluster-management.io/ocm/cmd/server
	touch $@

.PHONY: ocm bench-peer
ocm: $(OCM_BIN)/work
# The old name of the target.
bench-peer: ocm

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
	$(RUN) python tests/benchmarks/grpc_front_bench.py
	$(RUN) python tests/benchmarks/mwrs_bench.py
	$(RUN) python tests/benchmarks/agent_bench.py
	$(RUN) python tests/benchmarks/feedback_latency_bench.py

# The soak test (not part of `make test`): random works, changes, deletions and
# faults against the real agent process for 10 minutes; see docs/reliability.md.
# Options: make soak SOAK_ARGS="--duration 30m --seed 7"
soak: setup-test
	$(RUN) python -m tests.soak $(SOAK_ARGS)

# Randomized side-by-side runs against OCM v1.2.1's own programs (not part of
# `make test`; each area runs for FUZZ_BUDGET seconds of scenarios, then compares).
# Options: FUZZ_AREAS (any of agent webhook hub cli grpcserver mqtt; default all),
# FUZZ_SEED (default random; printed), FUZZ_BUDGET, FUZZ_OUT (default /tmp/peer-fuzz),
# FUZZ_AGENT_DRIVER (agent area: kube, or kube+grpc for ours through OCM's gRPC server),
# FUZZ_SCENARIO (hub area: start at scenario n; each draws from its own stream).
# Example: make fuzz-peers FUZZ_AREAS="hub mqtt" FUZZ_SEED=7
FUZZ_AREAS := agent webhook hub cli grpcserver mqtt
fuzz-peers: setup-test setup-debian realkube ocm
	PEER_FUZZ=1 FUZZ_SEED=$(FUZZ_SEED) FUZZ_BUDGET=$(FUZZ_BUDGET) FUZZ_OUT=$(FUZZ_OUT) \
		FUZZ_AGENT_DRIVER=$(FUZZ_AGENT_DRIVER) FUZZ_SCENARIO=$(FUZZ_SCENARIO) \
		$(PYTEST) -s $(patsubst %,tests/fuzz/test_%.py,$(FUZZ_AREAS))

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
