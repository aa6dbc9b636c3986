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

# Test flags: TEST_PKGS narrows `make test`, TEST_FLAGS adds go test flags.
TEST_PKGS ?= ./...
TEST_FLAGS ?=
TEST_TIMEOUT ?= 45m

.PHONY: build test run e2e chaos bench manifests generate lint clean tools help

help: ## List the targets.
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | sort

build: ## Build every command into bin/.
	$(GO) build -o $(BIN)/ ./cmd/...

generate: ## Regenerate DeepCopy methods from the API types.
	$(CONTROLLER_GEN) object paths=./kube/api/...

manifests: generate ## Regenerate the CRD in deploy/crd from the API types.
	$(CONTROLLER_GEN) crd paths=./kube/api/... output:crd:artifacts:config=deploy/crd

test: $(GOTESTSUM) ## Run every test (unit, and end-to-end on the local cluster).
	$(GOTESTSUM) --format pkgname-and-test-fails --jsonfile $(CACHE)/test.json -- \
		-count=1 -timeout $(TEST_TIMEOUT) $(TEST_FLAGS) $(TEST_PKGS)

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

clean: ## Remove built binaries and caches of this repository (not the Go caches).
	rm -rf $(BIN) $(CACHE)
