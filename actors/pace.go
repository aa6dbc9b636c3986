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

// slowest caps lookAgain's back-off of a moving cluster. Its wake-ups (the
// watches of its objects, the driver's monitoring of its members) do not
// cover all that moves (an initial sync's progress, a config committing),
// and the --interval timer of a healthy cluster is a minute.
const slowest = 10 * time.Second

// lookAgain is how soon a cluster is observed again after a step, besides the
// --interval timer, owned-object events and the members' moves (wake.go); 0:
// not before those. A paused cluster, and one waiting for a person (a
// majority lost under the Manual policy, every volume lost), waits for them.
// An action that failed is looked at again when its back-off ends (decide.go),
// so its retry does not wait for the timer. A Healthy cluster, and one
// Stalled (a problem outside the operator, a failing action past its
// back-off), waits for them too, unless a keyfile rotation runs (its next
// step starts from Healthy). Any other cluster is moving (an election, a
// pod starting, an initial sync) without events that would wake it: 1 s after
// a step that wrote something, doubling with each quiet observation, capped
// at slowest and at the interval. Not paused, a backup schedule's next fire
// within the interval is looked at when it comes, even on a quiet Healthy
// cluster (untilFire).
func lookAgain(s State, m *v1alpha1.Mgors, quiet int, interval time.Duration, now time.Time) time.Duration {
	d := pace(s, m, quiet, interval, now)
	if m.Spec.Paused {
		return d
	}
	if until := untilFire(m, interval, now); until > 0 && (d == 0 || until < d) {
		return until
	}
	return d
}

// untilFire is how long until m's next scheduled backup, 0 when there is
// none within interval (the --interval timer comes first).
func untilFire(m *v1alpha1.Mgors, interval time.Duration, now time.Time) time.Duration {
	next := NextBackupTime(m, now)
	if next.IsZero() {
		return 0
	}
	if until := next.Sub(now); interval <= 0 || until <= interval {
		return until
	}
	return 0
}

// pace is lookAgain without the schedules.
func pace(s State, m *v1alpha1.Mgors, quiet int, interval time.Duration, now time.Time) time.Duration {
	waiting := s.MajorityLost != nil && m.Spec.Recovery.MajorityLoss != v1alpha1.RecoveryAutomatic
	if m.Spec.Paused || waiting || s.VolumesLost != nil {
		return 0
	}
	if s.LastFailure != nil {
		if until := s.FailedAt.Add(backoff(s.Failures)).Sub(now); until > 0 {
			return capped(max(until, quickly), interval)
		}
	}
	// A keyfile or CA rotation moves through Healthy between its steps, with
	// no spec change or owned-object event to wake the actor for the next.
	if s.Phase == v1alpha1.PhaseHealthy && !s.Keyfile.Rotating() && !s.CA.Rotating() || len(s.Problems) > 0 || s.LastFailure != nil {
		return 0
	}
	return capped(min(quickly<<min(quiet, 10), slowest), interval)
}

// capped is d, at most interval when there is one.
func capped(d, interval time.Duration) time.Duration {
	if interval > 0 && d > interval {
		return interval
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
