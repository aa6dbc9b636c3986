package main

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"k8s.io/client-go/kubernetes"

	"github.com/mgors/operator/actors"
	"github.com/mgors/operator/kube/client"
	"github.com/mgors/operator/kube/shard"
)

// Timings of the sharded mode: a replica's Lease lasts shardLease; it writes
// only within shardRenewDeadline of its last renewal (the margin is for clock
// skew and latency); the assigner passes every assignPeriod.
const (
	shardLease         = 15 * time.Second
	shardRenewDeadline = 10 * time.Second
	shardRetry         = 2 * time.Second
	assignPeriod       = time.Second
	shardCalls         = 5 * time.Second
)

// runSharded runs this replica as one shard (docs/design/sharding.md): it
// takes its own Lease, runs the actors of the Mgors labelled as its own
// (lead, with the dispatcher selecting them), gives drained and fenced ones
// back, and, while it holds the operator's leader Lease, runs the assigner.
// Losing either Lease ends the process (a fresh start rejoins); a clean
// shutdown stops the actors first and releases the Lease after them, so the
// assigner moves its Mgors at once and never while an actor still runs.
func runSharded(ctx context.Context, o options, kc kubernetes.Interface, mc client.Interface, deps *actors.Deps, log zerolog.Logger, lead func(context.Context) error) error {
	keeper := &shard.Keeper{
		Leases: kc.CoordinationV1(), Namespace: o.leaseNamespace, Ring: o.leaseName, Identity: o.identity,
		Duration: shardLease, RenewDeadline: shardRenewDeadline, RetryPeriod: shardRetry, CallTimeout: shardCalls,
		Log: log.With().Str("component", "shard").Logger(),
	}
	if err := keeper.Acquire(ctx); err != nil {
		return err
	}
	// A restarted process writes under a new name, and so does each actor it
	// spawns (#n): in every event log the writers follow one another and
	// none returns, also when a Mgors moves back to a replica.
	deps.Writer = o.identity + "@" + time.Now().UTC().Format("20060102T150405.000000000Z")
	deps.WriterTerms = true
	log.Info().Str("identity", o.identity).Str("writer", deps.Writer).Msg("sharded: this replica's Lease is held; running the Mgors labelled as its own")
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	release := releaser(sctx, mc, o.identity, log)
	deps.Lease = keeper.Check
	deps.Released = release
	deps.Fenced = func(f actors.Fenced) { release(f.Namespace, f.Name, f.UID) }

	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	fail := func(err error) {
		if err != nil {
			failed.CompareAndSwap(nil, &err)
		}
		stop()
	}
	wg.Add(2)
	go func() {
		defer wg.Done()
		fail(keeper.Run(sctx))
	}()
	go func() {
		defer wg.Done()
		assigner := &shard.Assigner{
			Leases: kc.CoordinationV1(), LeaseNamespace: o.leaseNamespace, Ring: o.leaseName, Identity: o.identity,
			Mgors: mc, Namespace: o.namespace, Period: assignPeriod, CallTimeout: shardCalls, May: keeper.Check,
			Log: log.With().Str("component", "assigner").Logger(),
		}
		var assigning atomic.Bool
		err := leaderElect(sctx, o, kc, log, &assigning, func(actx context.Context) error {
			assigner.Run(actx)
			return nil
		})
		if sctx.Err() == nil {
			fail(err) // lost the assigner's Lease: start afresh
		}
	}()
	err := lead(sctx) // returns once the actors stopped
	stop()
	wg.Wait()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shardCalls)
	if rerr := keeper.Release(rctx); rerr != nil {
		log.Warn().Err(rerr).Msg("releasing this replica's Lease; its Mgors move when it expires")
	}
	cancel()
	if p := failed.Load(); p != nil {
		return errors.Join(*p, err)
	}
	return err
}

// releaser returns the owner's acknowledgement of a drain (or a fence): the
// Mgors's labels are removed, retried with back-off until done, no longer
// ours, or the replica stops.
func releaser(ctx context.Context, mc client.Interface, self string, log zerolog.Logger) func(ns, name, uid string) {
	return func(ns, name, uid string) {
		go func() {
			for delay := 100 * time.Millisecond; ; delay = min(2*delay, 10*time.Second) {
				err := shard.Release(ctx, mc, shardCalls, ns, name, uid, self)
				if err == nil {
					log.Info().Str("cluster", ns+"/"+name).Str("uid", uid).Msg("Mgors given back to the assigner")
					return
				}
				log.Warn().Err(err).Str("cluster", ns+"/"+name).Str("uid", uid).Msg("giving the Mgors back failed; retrying")
				select {
				case <-ctx.Done():
					return
				case <-time.After(delay):
				}
			}
		}()
	}
}
