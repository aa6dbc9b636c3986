package actors

import (
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// quickly is how soon a moving cluster is observed again after a step that
// wrote something (see lookAgain): the world moves on (an election, a pod
// starting) without an event that would wake the actor.
const quickly = time.Second

// lookAgain is how soon a cluster is observed again after a step, besides the
// --interval timer and owned-object events; 0: not before those. A Healthy
// or paused cluster, and one waiting for a person (a majority lost under the
// Manual policy, every volume lost) or Stalled (a problem outside the
// operator, a failing action), waits for them. Any other cluster is moving
// (an election, a pod starting, an initial sync) without events that would
// wake it: 1 s after a step that wrote something, doubling with each quiet
// observation, capped at the interval.
func lookAgain(s State, m *v1alpha1.Mgors, quiet int, interval time.Duration) time.Duration {
	waiting := s.MajorityLost != nil && m.Spec.Recovery.MajorityLoss != v1alpha1.RecoveryAutomatic
	if s.Phase == v1alpha1.PhaseHealthy || m.Spec.Paused || waiting || s.VolumesLost != nil ||
		len(s.Problems) > 0 || s.LastFailure != nil {
		return 0
	}
	d := quickly << min(quiet, 10)
	if interval > 0 && d > interval {
		d = interval
	}
	return d
}

// every sends msg to the actor every d until the returned stop is called. It
// replaces scheduler.SendRepeatedly, whose cancel races with its timer at the
// pinned protoactor commit (a plain read of an atomically written state).
func every(ctx actor.Context, d time.Duration, msg any) (stop func()) {
	root, self := ctx.ActorSystem().Root, ctx.Self()
	t := time.NewTicker(d)
	done := make(chan struct{})
	go func() {
		defer t.Stop()
		for {
			select {
			case <-t.C:
				root.Send(self, msg)
			case <-done:
				return
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done) }) }
}
