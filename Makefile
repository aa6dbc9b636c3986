# Mgors: build, test and run the operator and its local cluster.
#
# On a fresh machine `make run` and `make test` are all a person types: every tool
# below is pinned and installed into .cache/ by the targets that need it.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build

GO ?= go
CACHE := $(CURDIR)/.cache
TOOLS := $(CACHE)/tools/bin
BIN := $(CURDIR)/bin

# Pinned tools. deploy/deploy_test.go reads CONTROLLER_TOOLS_VERSION from here.
CONTROLLER_TOOLS_VERSION ?= v0.23.0
GOLANGCI_LINT_VERSION ?= v2.15.0
GOTESTSUM_VERSION ?= v1.13.0

CONTROLLER_GEN := $(GO) run sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)
GOLANGCI_LINT := $(TOOLS)/golangci-lint-$(GOLANGCI_LINT_VERSION)
GOTESTSUM := $(TOOLS)/gotestsum-$(GOTESTSUM_VERSION)

# Test flags: TEST_PKGS narrows `make test`, TEST_FLAGS sets go test flags. Every
# test runs under the race detector (mongod-sim's tests then build mongod-sim with it
# too, and fail on any race it reports); TEST_FLAGS= turns it off.
#
# One local cluster runs on the machine at a time (test/localkube/harness): the
# packages that share one (SHARED_PKGS) use it together, then the packages that
# start clusters of their own (EXCLUSIVE_PKGS) take the machine one test at a time.
# Their clusters, one after the other, are the run's critical path, so the order
# keeps it busy: the end-to-end tests first, and beside them test/recovery, the
# longest of the exclusive packages, waiting (without a core) to take the machine
# the moment they end. go test runs TEST_P test binaries at a time, started in the
# order given: one more than the 2 cores, the waiting one, so that the unit
# packages run beside the end-to-end tests meanwhile.
SHARED_PKGS = ./test/e2e ./test/localkube ./test/localkube/harness ./test/localkube/kubelet/e2e
EXCLUSIVE_PKGS = ./test/recovery ./test/chaos ./test/localkube/cluster ./test/localkube/fault
MODULE = $(shell $(GO) list -m)
UNIT_PKGS = $(shell $(GO) list ./... | grep -vxF $(foreach p,$(SHARED_PKGS) $(EXCLUSIVE_PKGS),-e $(MODULE)/$(p:./%=%)))
TEST_PKGS ?= $(firstword $(SHARED_PKGS)) $(firstword $(EXCLUSIVE_PKGS)) $(filter-out $(firstword $(SHARED_PKGS)),$(SHARED_PKGS)) \
	$(UNIT_PKGS) $(filter-out $(firstword $(EXCLUSIVE_PKGS)),$(EXCLUSIVE_PKGS))
TEST_P ?= 3
# -parallel: how many of the end-to-end tests that may share the cluster's
# operator run at once (test/e2e's TestMain); no other package has parallel tests.
TEST_FLAGS ?= -race -parallel 3
# A test binary's deadline counts from its start: test/recovery's includes its wait
# for the end-to-end tests and the chaos run between its own tests.
TEST_TIMEOUT ?= 75m

# The local cluster `make run` starts (kept between runs; `make down` stops it).
RUN_DIR ?= $(CURDIR)/.run/localkube
RUN_KUBECTL = KUBECONFIG=$(RUN_DIR)/kubeconfig $(RUN_DIR)/bin/kubectl

# The cluster `make chaos` starts and stops, and where its report goes.
CHAOS_DIR ?= $(CURDIR)/.run/chaos
CHAOS_REPORT ?= $(CURDIR)/.run/chaos-report

include test/localkube/localkube.mk
include test/localkube/kubelet/kubelet.mk
include mongo/sim/sim.mk

# What the end-to-end tests need: the binaries the pods run (bin/), the control
# plane, mongosh for the mongo images, and the machine's network tools.
TEST_ENV = LOCALKUBE_BIN=$(LOCALKUBE_BINS) LOCALKUBE_BIN_DIR=$(BIN) MONGOSH_DIR=$(MONGOSH_DIR) LOCALKUBE_KUBELET_E2E=1

.PHONY: build test run down e2e chaos bench manifests generate lint clean tools help deps

help: ## List the targets.
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | sort

build: ## Build every command into bin/ (mgorsctl also as the kubectl plugin kubectl-mgors).
	$(GO) build -o $(BIN)/ ./cmd/...
	ln -sf mgorsctl $(BIN)/kubectl-mgors

generate: ## Regenerate DeepCopy methods from the API types.
	$(CONTROLLER_GEN) object paths=./kube/api/...

manifests: generate ## Regenerate the CRDs in deploy/crd from the API types.
	$(CONTROLLER_GEN) crd paths=./kube/api/... output:crd:artifacts:config=deploy/crd

test: $(GOTESTSUM) deps build localkube-build kubelet-mongosh ## Run every test (unit, and end-to-end on the local cluster).
	$(TEST_ENV) $(GOTESTSUM) --format pkgname-and-test-fails --jsonfile $(CACHE)/test.json -- \
		-count=1 -p $(TEST_P) -timeout $(TEST_TIMEOUT) $(TEST_FLAGS) $(TEST_PKGS)

e2e: ## Only the operator's end-to-end tests on the local cluster.
	$(MAKE) test TEST_PKGS=./test/e2e/...

chaos: deps build localkube-build kubelet-mongosh ## The chaos suite on a cluster of its own: CHAOS_DURATION (10m), CHAOS_SEED, CHAOS_FAULTS, CHAOS_KEEP=1 keeps the cluster.
	@if [ -f $(RUN_DIR)/run/etcd.pid ] && kill -0 "$$(cut -d' ' -f1 $(RUN_DIR)/run/etcd.pid)" 2>/dev/null; then \
		echo "make chaos: the cluster of 'make run' is running ($(RUN_DIR)); make down first" >&2; exit 1; fi
	$(GO) build -o $(BIN)/ ./test/chaos/cmd/mgors-chaos
	$(LOCALKUBE_CMD) up --dir $(CHAOS_DIR) --bin $(LOCALKUBE_BINS) --workload-bin $(BIN)
	@status=0; \
	LOCALKUBE_CMD=$(LOCALKUBE_CMD) CHAOS_DURATION='$(CHAOS_DURATION)' CHAOS_SEED='$(CHAOS_SEED)' CHAOS_FAULTS='$(CHAOS_FAULTS)' \
		$(BIN)/mgors-chaos --dir $(CHAOS_DIR) --report $(CHAOS_REPORT) || status=$$?; \
	if [ "$(CHAOS_KEEP)" = 1 ]; then \
		echo "make chaos: the cluster stays up (CHAOS_KEEP=1): export KUBECONFIG=$(CHAOS_DIR)/kubeconfig; stop it with $(LOCALKUBE_CMD) down --dir $(CHAOS_DIR) --purge"; \
	else $(LOCALKUBE_CMD) down --dir $(CHAOS_DIR) --purge; fi; \
	echo "make chaos: the report is in $(CHAOS_REPORT) (raw logs in $(CHAOS_REPORT)/logs/)"; \
	exit $$status

bench: build ## Benchmarks: event-log stores, replay, mongod-sim figures. Measured, never asserted.
	$(GO) test -run '^$$' -bench . -benchmem ./actors/... ./mongo/...
	$(MAKE) mongod-sim-bench

# The scale benchmark (issue 13, docs/performance.md): a control plane without
# kubelets (localkube --nodes 0) held for the whole run, N Mgors whose pods and
# members test/scale simulates in process, each N run by the actors and by the
# controller-runtime baseline (one process per row), then one table. The rows
# run at 500 QPS: at the operator's own 50, 100 clusters never become Healthy
# (docs/performance.md); SCALE_FLAGS= shows it.
SCALE_N ?= 10 100
SCALE_FLAGS ?= --qps 500 --healthy-wait 3m --wait 30s
SCALE_DIR ?= /tmp/lk-bench
SCALE_OUT ?= $(CURDIR)/.run/bench-scale
.PHONY: bench-scale
bench-scale: localkube-build ## The scale benchmark: SCALE_N ("10 100"), SCALE_FLAGS (mgors-scale's), report in SCALE_OUT. Measured, never asserted.
	$(GO) build -o $(BIN)/ ./test/scale/cmd/mgors-scale
	@mkdir -p $(SCALE_OUT); rm -f $(SCALE_OUT)/results.jsonl
	$(LOCALKUBE_CMD) up --dir $(SCALE_DIR) --bin $(LOCALKUBE_BINS) --nodes 0 --kube-proxy=false
	@status=0; for n in $(SCALE_N); do for row in mgors baseline; do \
		$(BIN)/mgors-scale --kubeconfig $(SCALE_DIR)/kubeconfig --row $$row --n $$n $(SCALE_FLAGS) \
			--out $(SCALE_OUT)/results.jsonl --log $(SCALE_OUT)/$$row-$$n.log || status=$$?; \
	done; done; \
	$(LOCALKUBE_CMD) down --dir $(SCALE_DIR) --purge || status=$$?; \
	echo; echo "make bench-scale: $(SCALE_OUT)/results.jsonl (logs beside it)"; \
	$(BIN)/mgors-scale --table $(SCALE_OUT)/results.jsonl; exit $$status

deps: ## Machine packages the local cluster needs (root): nftables, iproute2, util-linux, npm.
	@missing=""; for c in nft:nftables ip:iproute2 nsenter:util-linux npm:npm; do \
		command -v $${c%%:*} >/dev/null || missing="$$missing $${c##*:}"; done; \
	if [ -n "$$missing" ]; then echo "installing$$missing"; apt-get update -qq && apt-get install -y -qq $$missing; fi

run: deps build localkube-build kubelet-mongosh ## Start the local cluster, deploy the operator and a 3-member replica set, show progress.
	$(LOCALKUBE_CMD) up --dir $(RUN_DIR) --bin $(LOCALKUBE_BINS) --workload-bin $(BIN)
	$(RUN_KUBECTL) apply --server-side --force-conflicts -k deploy/
	$(RUN_KUBECTL) -n mgors-system rollout restart deployment/mgors-operator >/dev/null
	$(RUN_KUBECTL) -n mgors-system rollout status deployment/mgors-operator --timeout=180s
	$(RUN_KUBECTL) apply -n default -f deploy/samples/mgors-3.yaml
	KUBECONFIG=$(RUN_DIR)/kubeconfig $(BIN)/mgorsctl wait demo -n default --timeout 10m
	@echo
	@KUBECONFIG=$(RUN_DIR)/kubeconfig $(BIN)/mgorsctl status demo -n default
	@echo
	@echo "The replica set is Healthy. Try next:"
	@echo "  export KUBECONFIG=$(RUN_DIR)/kubeconfig PATH=$(RUN_DIR)/bin:$(BIN):\$$PATH"
	@echo "  kubectl get mgo                                  # the printer columns"
	@echo "  kubectl describe mgors demo                      # the story, as Kubernetes Events"
	@echo "  mgorsctl replay --cluster default/demo           # the event log, as a timeline"
	@echo "  kubectl exec -it demo-0 -- mongosh -u admin -p \"\$$(kubectl get secret demo-admin -o jsonpath='{.data.password}' | base64 -d)\" --eval 'rs.status().members.map(m => m.stateStr)'"
	@echo "  kubectl scale mgors/demo --replicas=5             # grow it, one member and one reconfig at a time"
	@echo "Stop everything with: make down"

down: localkube-cmd ## Stop the cluster `make run` started (its data stays in .run/).
	$(LOCALKUBE_CMD) down --dir $(RUN_DIR)

lint: $(GOLANGCI_LINT) ## go vet and the pinned golangci-lint.
	$(GO) vet ./...
	$(GOLANGCI_LINT) run ./...

tools: $(GOTESTSUM) $(GOLANGCI_LINT) ## Install the pinned tools into .cache/tools.

$(GOTESTSUM):
	@mkdir -p $(TOOLS)
	GOBIN=$(TOOLS) $(GO) install gotest.tools/gotestsum@$(GOTESTSUM_VERSION)
	mv $(TOOLS)/gotestsum $@

$(GOLANGCI_LINT):
	@mkdir -p $(TOOLS)
	@echo "building golangci-lint $(GOLANGCI_LINT_VERSION) (a few minutes, once)"
	GOBIN=$(TOOLS) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(TOOLS)/golangci-lint $@

clean: ## Remove built binaries and caches of this repository (not the Go caches). Stops clusters first.
	-[ -x $(LOCALKUBE_CMD) ] && [ -d $(RUN_DIR) ] && $(LOCALKUBE_CMD) down --dir $(RUN_DIR) --purge
	rm -rf $(BIN) $(CACHE) $(CURDIR)/.run
