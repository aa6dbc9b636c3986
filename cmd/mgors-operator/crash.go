//go:build crashhook

package main

import (
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/rs/zerolog"

	"github.com/mgors/operator/actors/eventlog"
)

// crashHook reads MGORS_CRASH_AFTER=<EventType>[:<n>] and kills the process
// right after the n-th record of that type is durable, as SIGKILL would: the
// recovery tests use it to prove the operator converges from any point. It
// exists only in a binary built with -tags crashhook (test/e2e builds one);
// the production binary has no such hook (crash_off.go).
func crashHook(log zerolog.Logger) func(eventlog.Record) {
	spec := os.Getenv("MGORS_CRASH_AFTER")
	if spec == "" {
		return nil
	}
	typ, nth, _ := strings.Cut(spec, ":")
	n, err := strconv.Atoi(nth)
	if err != nil || n < 1 {
		n = 1
	}
	var seen atomic.Int32
	return func(r eventlog.Record) {
		if r.Type == typ && int(seen.Add(1)) == n {
			log.Warn().Str("event", r.Type).Int64("seq", r.Seq).Msg("MGORS_CRASH_AFTER: crashing now")
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	}
}
