package kubelet

import "time"

// The restart back-off of a crashing container follows the real kubelet
// (k8s.io/kubernetes v1.37.2):
//
//   - kuberuntime_manager.go doBackOff: a container that exited is held back while
//     backOff.IsInBackOffSince(key, finishedAt) (reason CrashLoopBackOff, message
//     "back-off <backOff.Get(key)> restarting failed container=…"); otherwise
//     backOff.Next(key, finishedAt) and the container starts at once.
//   - client-go util/flowcontrol/backoff.go: Next creates an entry with the initial
//     delay when there is none or it expired, else doubles it up to the maximum, and
//     sets lastUpdate to now. IsInBackOffSince is false without an entry or when
//     it expired, else true while now-finishedAt < the entry's delay.
//   - kubelet.go NewMainKubelet: initial 10 s (initialCrashLoopBackOff), maximum
//     5 min (crashLoopBackOff.maxContainerRestartPeriod, default MaxContainerBackOff),
//     HasExpiredFunc eventTime-lastUpdate > 600 s; kubelet_pods.go HandlePodCleanups
//     GCs entries not updated for 600 s.
//
// So the first exit restarts at once, the second waits 10 s, then 20 s, 40 s … 5 min;
// an exit more than 10 min after the last restart starts over. The entries live in
// the kubelet's memory only: a restarted kubelet starts every container over.

// maxCrashBackoff is the longest restart delay (MaxContainerBackOff).
const maxCrashBackoff = 5 * time.Minute

// backoffExpiry is how long after a restart an exit no longer counts as part of a
// crash loop (the kubelet's HasExpiredFunc and back-off GC: 600 s).
const backoffExpiry = 10 * time.Minute

// restartBackoff is one container's back-off entry (flowcontrol's backoffEntry).
type restartBackoff struct {
	Delay   time.Duration // the current delay; zero: no entry
	Updated time.Time     // when the last restart was let through (lastUpdate)
}

// backoffPolicy is the kubelet's back-off configuration.
type backoffPolicy struct {
	Initial time.Duration
	Max     time.Duration
}

// newBackoffPolicy is the policy for a configured initial delay and maximum (zero:
// the kubelet's defaults); as the kubelet does, a maximum under the initial delay
// lowers the initial delay.
func newBackoffPolicy(initial, maxDelay time.Duration) backoffPolicy {
	if initial <= 0 {
		initial = 10 * time.Second
	}
	if maxDelay <= 0 {
		maxDelay = maxCrashBackoff
	}
	if maxDelay < initial {
		initial = maxDelay
	}
	return backoffPolicy{Initial: initial, Max: maxDelay}
}

// live reports whether the entry still holds for a run that finished at finished,
// looked at now: it exists, was not garbage-collected (600 s without update) and
// had not expired when the run ended.
func (b restartBackoff) live(finished, now time.Time) bool {
	return b.Delay > 0 && finished.Sub(b.Updated) <= backoffExpiry && now.Sub(b.Updated) <= backoffExpiry
}

// restartAt is when a container whose run finished at finished may start again:
// at once without a live entry, else finished plus the entry's delay, or earlier
// if the entry is garbage-collected before then.
func (b restartBackoff) restartAt(finished time.Time) time.Time {
	if b.Delay <= 0 || finished.Sub(b.Updated) > backoffExpiry {
		return finished
	}
	at := finished.Add(b.Delay)
	if gc := b.Updated.Add(backoffExpiry); gc.Before(at) {
		// The GC runs every 2 s; a second past expiry it has removed the entry.
		at = gc.Add(time.Second)
	}
	return at
}

// next is the entry after a restart let through at now for a run that finished at
// finished (flowcontrol's Next).
func (p backoffPolicy) next(b restartBackoff, finished, now time.Time) restartBackoff {
	if !b.live(finished, now) {
		return restartBackoff{Delay: p.Initial, Updated: now}
	}
	return restartBackoff{Delay: min(2*b.Delay, p.Max), Updated: now}
}
