//go:build race

package sim_test

// raceBuild makes the test build mongod-sim with the race detector too.
const raceBuild = true
