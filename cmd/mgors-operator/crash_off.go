//go:build !crashhook

package main

import (
	"github.com/rs/zerolog"

	"github.com/mgors/operator/actors/eventlog"
)

// crashHook is the production binary's: no test hook, MGORS_CRASH_AFTER is
// not read. The tests' binary is built with -tags crashhook (crash.go).
func crashHook(zerolog.Logger) func(eventlog.Record) { return nil }
