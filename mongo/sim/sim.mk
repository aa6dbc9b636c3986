# mongod-sim: the simulated mongod (mongo/sim, cmd/mongod-sim).
# Included by the top-level Makefile; targets are prefixed mongod-sim-.

.PHONY: mongod-sim-build mongod-sim-test mongod-sim-race mongod-sim-fuzz mongod-sim-bench

mongod-sim-build:
	go build -o bin/mongod-sim ./cmd/mongod-sim

# Real processes on 127.0.3.0/24, driven by the official Go driver.
mongod-sim-test:
	go test -count=1 ./mongo/sim/... ./cmd/mongod-sim/...

# Builds the simulator itself with -race too and fails on reported races.
mongod-sim-race:
	go test -race -count=1 ./mongo/sim/...

mongod-sim-fuzz:
	go test -run '^$$' -fuzz FuzzWireMessage -fuzztime 30s ./mongo/sim/
	go test -run '^$$' -fuzz FuzzCommand -fuzztime 30s ./mongo/sim/

# Figures (election after initiate, failover after SIGKILL, idle RSS): logged, never asserted.
mongod-sim-bench:
	go test -count=1 -tags simmeasure -run TestMeasure -v ./mongo/sim/ | grep -E 'MEASURE|^(ok|FAIL|---)'
