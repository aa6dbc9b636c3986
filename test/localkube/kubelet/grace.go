package kubelet

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// minKillGrace is the least time a container gets between SIGTERM and SIGKILL,
// whatever the grace period and however long its preStop hook ran: the real
// kubelet's minimumGracePeriodInSeconds (kuberuntime_manager.go), applied in
// killContainer (kuberuntime_container.go) "to avoid unnecessary SIGKILLs".
const minKillGrace = 2 * time.Second

// podKillGrace is the grace period a pod's containers are stopped with, as the
// kubelet's calculateEffectiveGracePeriod (pod_workers.go) computes it: the
// deletion grace period the API server set (a force delete sets 0) or a shorter
// override of the kubelet's own (1 s for an orphaned pod), else the pod's
// terminationGracePeriodSeconds; never under 1 s. pod may be nil (an orphan).
func podKillGrace(pod *corev1.Pod, override *int64) time.Duration {
	var grace int64
	overridden := false
	if pod != nil && pod.DeletionGracePeriodSeconds != nil {
		grace, overridden = *pod.DeletionGracePeriodSeconds, true
	}
	if override != nil && (!overridden || *override < grace) {
		grace, overridden = *override, true
	}
	if !overridden && grace == 0 && pod != nil {
		grace = 30
		if pod.Spec.TerminationGracePeriodSeconds != nil {
			grace = *pod.Spec.TerminationGracePeriodSeconds
		}
	}
	if grace < 1 {
		grace = 1
	}
	return time.Duration(grace) * time.Second
}

// containerKillGrace is how long SIGTERM gets before SIGKILL once a preStop hook
// that ran for hookTook is done: what is left of grace (the hook's time counted in
// whole seconds, as the kubelet's executePreStopHook returns it), never under
// minKillGrace.
func containerKillGrace(grace, hookTook time.Duration) time.Duration {
	left := grace - hookTook.Truncate(time.Second)
	if left < minKillGrace {
		left = minKillGrace
	}
	return left
}
