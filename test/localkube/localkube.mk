# localkube: a one-machine Kubernetes cluster for the end-to-end tests.
# Included from the top-level Makefile (paths are relative to the repository root).
# Needs root, iproute2 and nftables (apt-get install nftables).

LOCALKUBE_CMD  ?= $(CURDIR)/.cache/localkube/localkube
LOCALKUBE_BINS ?= $(CURDIR)/.cache/localkube/bin
LOCALKUBE_RUN  ?= $(CURDIR)/.cache/localkube/dev
LOCALKUBE_TEST_TIMEOUT ?= 40m

.PHONY: localkube-cmd localkube-build localkube-test localkube-up localkube-down localkube-status

# The localkube command itself (seconds).
localkube-cmd:
	go build -o $(LOCALKUBE_CMD) ./cmd/localkube

# The control-plane binaries from test/localkube/controlplane (minutes when cold,
# seconds when the stamp matches).
localkube-build: localkube-cmd
	$(LOCALKUBE_CMD) build --bin $(LOCALKUBE_BINS)

# Unit tests, the cluster tests and the end-to-end tests of localkube (root; they
# start and stop real clusters; the kubelet's own API-level tests find etcd and
# kube-apiserver through LOCALKUBE_BIN).
localkube-test: localkube-build
	LOCALKUBE_BIN=$(LOCALKUBE_BINS) go test -count=1 -timeout $(LOCALKUBE_TEST_TIMEOUT) ./test/localkube/... ./cmd/localkube/...

# A cluster to work with by hand: make localkube-up; export KUBECONFIG=...
localkube-up: localkube-build
	$(LOCALKUBE_CMD) up --dir $(LOCALKUBE_RUN) --bin $(LOCALKUBE_BINS)

localkube-down: localkube-cmd
	$(LOCALKUBE_CMD) down --dir $(LOCALKUBE_RUN)

localkube-status: localkube-cmd
	$(LOCALKUBE_CMD) status --dir $(LOCALKUBE_RUN)
