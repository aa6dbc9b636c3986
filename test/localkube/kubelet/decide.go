package kubelet

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// termination is one finished run of a container.
type termination struct {
	ExitCode   int32     `json:"exitCode"`
	Signal     int32     `json:"signal,omitempty"`
	Reason     string    `json:"reason"`
	Message    string    `json:"message,omitempty"`
	StartedAt  time.Time `json:"startedAt"`
	FinishedAt time.Time `json:"finishedAt"`
	ID         string    `json:"id"`
}

// observed is what the kubelet knows about one container: the input of the pure
// decisions and of the status computation.
type observed struct {
	Running      bool         `json:"-"`
	StartedAt    time.Time    `json:"startedAt"`
	ID           string       `json:"id"`
	RestartCount int32        `json:"restartCount"`
	Current      *termination `json:"current,omitempty"` // the run that ended, while not running
	Last         *termination `json:"last,omitempty"`    // the run before the current one
	// Waiting says why a container that is not running has not been (re)started.
	WaitReason  string `json:"-"`
	WaitMessage string `json:"-"`
	Ready       bool   `json:"-"` // readiness probe (true without one, while running)
	Started     bool   `json:"-"` // startup probe (true without one, while running)
	// Rerun marks a container of a pod whose sandbox was recreated (after the
	// node's processes were all stopped): as on a real kubelet the pod runs
	// again from the start, init containers first, without back-off; its
	// restart count and last state are kept.
	Rerun bool `json:"-"`
	// Backoff is the container's crash-loop back-off entry, kept in memory only as
	// a kubelet keeps it (backoff.go).
	Backoff restartBackoff `json:"-"`
}

// plan is what the pod worker should do next.
type plan struct {
	Start []string  // containers to start now, in order
	Wake  time.Time // when to look again at the latest (zero: only on events)
	// BackOff holds the containers that would start now but wait in back-off,
	// with the delay they wait: only these show CrashLoopBackOff.
	BackOff map[string]time.Duration
}

// wantsRestart says whether a container that ended with t is run again under policy.
func wantsRestart(policy corev1.RestartPolicy, t *termination) bool {
	switch policy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return t.ExitCode != 0
	}
	return true
}

// decide is the pod worker's decision: given the spec and what is observed, which
// containers to start now and when to look again. Init containers run one at a
// time in order, each to success, before any app container starts.
func decide(spec *corev1.PodSpec, obs map[string]*observed, now time.Time) plan {
	var p plan
	wake := func(t time.Time) {
		if p.Wake.IsZero() || t.Before(p.Wake) {
			p.Wake = t
		}
	}
	// startOrWait decides for one container that is not running.
	startOrWait := func(name string, policy corev1.RestartPolicy) bool {
		o := obs[name]
		if o == nil || o.Rerun || (o.Current == nil && !o.Running) {
			p.Start = append(p.Start, name)
			return true
		}
		if !wantsRestart(policy, o.Current) {
			return false
		}
		at := o.Backoff.restartAt(o.Current.FinishedAt)
		if !now.Before(at) {
			p.Start = append(p.Start, name)
			return true
		}
		if p.BackOff == nil {
			p.BackOff = map[string]time.Duration{}
		}
		p.BackOff[name] = o.Backoff.Delay
		wake(at)
		return false
	}
	if !appStarted(spec, obs) {
		for i := range spec.InitContainers {
			c := &spec.InitContainers[i]
			o := obs[c.Name]
			if isSidecar(c) {
				// A sidecar lets the next init container start once it has started.
				if o != nil && o.Running {
					if o.Started {
						continue
					}
					return p
				}
				startOrWait(c.Name, corev1.RestartPolicyAlways)
				return p
			}
			if o != nil && o.Running {
				return p
			}
			if o != nil && !o.Rerun && o.Current != nil && o.Current.ExitCode == 0 {
				continue
			}
			// An init container that failed is retried unless the pod never restarts.
			policy := spec.RestartPolicy
			if policy == corev1.RestartPolicyAlways {
				policy = corev1.RestartPolicyOnFailure
			}
			startOrWait(c.Name, policy)
			return p
		}
	}
	// Sidecars run as long as the app containers do, restarted whatever the pod's
	// restartPolicy, until the app containers are finished for good.
	if !appsFinished(spec, obs) {
		for i := range spec.InitContainers {
			c := &spec.InitContainers[i]
			if o := obs[c.Name]; isSidecar(c) && (o == nil || !o.Running) {
				startOrWait(c.Name, corev1.RestartPolicyAlways)
			}
		}
	}
	for _, c := range spec.Containers {
		o := obs[c.Name]
		if o != nil && o.Running {
			continue
		}
		startOrWait(c.Name, spec.RestartPolicy)
	}
	return p
}

// isSidecar says whether an init container is a sidecar: restartPolicy Always, it
// keeps running beside the app containers.
func isSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// appStarted reports whether any app container has run: the init phase is over.
func appStarted(spec *corev1.PodSpec, obs map[string]*observed) bool {
	for _, c := range spec.Containers {
		if o := obs[c.Name]; o != nil && !o.Rerun && (o.Running || o.Current != nil) {
			return true
		}
	}
	return false
}

// appsFinished reports whether every app container has ended for good under the
// pod's restartPolicy (never under Always).
func appsFinished(spec *corev1.PodSpec, obs map[string]*observed) bool {
	if len(spec.Containers) == 0 {
		return false
	}
	for _, c := range spec.Containers {
		o := obs[c.Name]
		if o == nil || o.Rerun || o.Running || o.Current == nil || wantsRestart(spec.RestartPolicy, o.Current) {
			return false
		}
	}
	return true
}

// initDone reports whether every init container has succeeded (a sidecar: has
// started), or the app containers have run already.
func initDone(spec *corev1.PodSpec, obs map[string]*observed) bool {
	if appStarted(spec, obs) {
		return true
	}
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		o := obs[c.Name]
		if isSidecar(c) {
			if o == nil || o.Rerun || !o.Running || !o.Started {
				return false
			}
			continue
		}
		if o == nil || o.Rerun || o.Running || o.Current == nil || o.Current.ExitCode != 0 {
			return false
		}
	}
	return true
}

// initFailed reports whether an init container failed for good (restartPolicy Never).
func initFailed(spec *corev1.PodSpec, obs map[string]*observed) bool {
	if spec.RestartPolicy != corev1.RestartPolicyNever {
		return false
	}
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		o := obs[c.Name]
		if !isSidecar(c) && o != nil && !o.Rerun && !o.Running && o.Current != nil && o.Current.ExitCode != 0 {
			return true
		}
	}
	return false
}
