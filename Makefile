# Two commands for a newcomer: `make demo` and `make test`. Both install what
# they need: uv (into .tools/ when it is not on PATH), then the locked
# dependencies into .venv/.

SHELL := /bin/bash
UV_VERSION := 0.13.9
UV := $(shell command -v uv 2>/dev/null || echo .tools/bin/uv)
RUN := $(UV) run --frozen

.PHONY: setup setup-test demo test lint typecheck imports unit bench clean setup-bench bench-full bench-docs bench-micro soak realkube

.tools/bin/uv:
	python3 -m venv .tools
	.tools/bin/pip install --quiet "uv==$(UV_VERSION)"

setup: $(UV)
	$(UV) sync --frozen --quiet

# The tests also render the Helm charts (helm-python-sdk, large: kept out of demo).
setup-test: $(UV)
	$(UV) sync --frozen --quiet --group charts

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

realkube: $(KUBE_BIN)/kube-apiserver

demo: setup
	$(RUN) python -m demo

lint: setup-test
	$(RUN) ruff check .
	$(RUN) ruff format --check .

typecheck: setup-test
	$(RUN) mypy

imports: setup-test
	$(RUN) lint-imports

unit: setup-test realkube
	$(RUN) pytest -q -p no:cacheprovider

test: lint typecheck imports unit

# The benchmark suite (tests/benchmarks/bench_suite.py): results, Markdown and plots in
# bench-results/. By default on a real control plane it starts per run (make realkube),
# at OCM's default client QPS (50/100) and unlimited. BENCH_ARGS passes options, e.g.
# BENCH_ARGS="--n 100 --runs 5", "--target kubesim" or "--agent-cmd '...'"; bench-full
# measures N = 100, 500, 1000. --inexact: the plotting group is added without removing
# the test tools.
BENCH_ARGS ?=
BENCH := $(RUN) --group bench python tests/benchmarks/bench_suite.py

setup-bench: $(UV)
	$(UV) sync --frozen --quiet --inexact --group bench

bench: setup-bench realkube
	$(BENCH) $(BENCH_ARGS)

bench-full: setup-bench realkube
	$(BENCH) --full $(BENCH_ARGS)

# The peer: OCM's Go work agent (cmd/work of open-cluster-management.io/ocm at a
# pinned release), built from the Go module proxy into .tools/peer/<version>/ if
# the proxy serves it. It does not (as of 2026-11-27 it answers 403 "This module
# version is not available" for every version), so this target stops with that
# message, and docs/benchmarks.md compares with the figures in the project's
# notes instead. The build step after the check has never run here.
OCM_MODULE := open-cluster-management.io/ocm
OCM_VERSION := v1.3.0
PEER_BIN := .tools/peer/$(OCM_VERSION)

.PHONY: bench-peer
bench-peer:
	@command -v go >/dev/null || { echo "make bench-peer: the Go toolchain is required" >&2; exit 1; }
	@if ! out=$$(go list -m $(OCM_MODULE)@$(OCM_VERSION) 2>&1); then \
		echo "$$out" >&2; \
		echo "make bench-peer: the Go module proxy does not serve $(OCM_MODULE)@$(OCM_VERSION):" \
			"OCM's work agent (the peer) cannot be built here. docs/benchmarks.md compares" \
			"with the peer's figures from the project's notes instead." >&2; \
		exit 1; \
	fi
	mkdir -p $(PEER_BIN)
	GOBIN=$(CURDIR)/$(PEER_BIN) go install $(OCM_MODULE)/cmd/work@$(OCM_VERSION)
	@echo "built $(PEER_BIN)/work: run it A/B with make bench BENCH_ARGS=\"--agent-cmd '...'\" (docs/benchmarks.md)"

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
	$(RUN) --group charts python -m tests.soak $(SOAK_ARGS)

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
