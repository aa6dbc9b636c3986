# localkube's kubelet: tests and the pieces its built-in images hold.
# Included from the top-level Makefile (paths relative to the repository root).
# Needs root, iproute2 and util-linux (nsenter); mongosh needs node and npm.

KUBELET_BIN_DIR  ?= $(CURDIR)/.cache/kubelet/bin
MONGOSH_DIR      ?= $(CURDIR)/.cache/mongosh
MONGOSH_VERSION  ?= 2.12.0
# Directory with etcd and kube-apiserver for the API-level tests (localkube-build).
LOCALKUBE_BINS   ?= $(CURDIR)/.cache/localkube/bin

.PHONY: kubelet-images kubelet-mongosh kubelet-unit kubelet-test

# The binaries the built-in images carry: mongod-sim (mongo images) and the
# operator (operator image). Point the kubelet at them with binDir or
# LOCALKUBE_BIN_DIR.
kubelet-images:
	mkdir -p $(KUBELET_BIN_DIR)
	go build -o $(KUBELET_BIN_DIR)/mongod-sim ./cmd/mongod-sim
	if [ -d ./cmd/mgors-operator ]; then go build -o $(KUBELET_BIN_DIR)/mgors-operator ./cmd/mgors-operator; fi

# The MongoDB shell from npm, pinned, for the mongo images' /usr/bin/mongosh
# (MONGOSH_DIR or the kubelet's mongoshDir).
kubelet-mongosh:
	test -x $(MONGOSH_DIR)/node_modules/mongosh/bin/mongosh.js || \
		npm install --prefix $(MONGOSH_DIR) --no-audit --no-fund mongosh@$(MONGOSH_VERSION)

# Pure unit tests only (no root, no control plane).
kubelet-unit:
	go test -count=1 -run 'TestExpand|TestContainerEnv|TestCommandLine|TestDecide|TestCrashBackoff|TestComputeStatus|TestCondition|TestRender|TestImageTable|TestIPAM|TestLogRendering|TestResolveIn|TestResolveIdentity|TestProbeCounter|TestKeyFiles|TestPodProcessesAndKillAll|TestServiceLinkEnv|TestDecideSidecars|TestProbeOutput|TestImageVersion' ./test/localkube/kubelet

# Everything, as root, against etcd and kube-apiserver from LOCALKUBE_BINS.
kubelet-test: kubelet-images kubelet-mongosh
	LOCALKUBE_BIN=$(LOCALKUBE_BINS) LOCALKUBE_BIN_DIR=$(KUBELET_BIN_DIR) MONGOSH_DIR=$(MONGOSH_DIR) \
		go test -count=1 -timeout 15m ./test/localkube/kubelet/...

.PHONY: kubelet-e2e
# The kubelet inside a whole localkube cluster (test/localkube/harness): a StatefulSet
# over three Nodes, pod-to-pod by DNS name, a killed container restarted.
kubelet-e2e:
	LOCALKUBE_KUBELET_E2E=1 go test -count=1 -timeout 20m ./test/localkube/kubelet/e2e/...
