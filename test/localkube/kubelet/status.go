package kubelet

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// statusInput is everything the pod status is computed from.
type statusInput struct {
	Pod          *corev1.Pod
	Obs          map[string]*observed
	PodIP        string
	HostIP       string
	StartTime    time.Time
	SandboxReady bool
	Now          time.Time
	// Image returns the status image and imageID of a container image reference.
	Image func(ref string) (image, id string)
}

func containerStatus(c *corev1.Container, o *observed, in statusInput, waitDefault string) corev1.ContainerStatus {
	img, id := in.Image(c.Image)
	s := corev1.ContainerStatus{Name: c.Name, Image: img, ImageID: id}
	f := false
	s.Started = &f
	if o == nil {
		s.State.Waiting = &corev1.ContainerStateWaiting{Reason: waitDefault}
		return s
	}
	s.RestartCount = o.RestartCount
	toState := func(t *termination) *corev1.ContainerStateTerminated {
		return &corev1.ContainerStateTerminated{
			ExitCode: t.ExitCode, Signal: t.Signal, Reason: t.Reason, Message: t.Message,
			StartedAt: metav1.NewTime(t.StartedAt), FinishedAt: metav1.NewTime(t.FinishedAt),
			ContainerID: t.ID,
		}
	}
	switch {
	case o.Running:
		s.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(o.StartedAt)}
		s.ContainerID = o.ID
		s.Ready = o.Ready
		started := o.Started
		s.Started = &started
		if o.Current != nil {
			s.LastTerminationState.Terminated = toState(o.Current)
		} else if o.Last != nil {
			s.LastTerminationState.Terminated = toState(o.Last)
		}
	case o.WaitReason != "":
		s.State.Waiting = &corev1.ContainerStateWaiting{Reason: o.WaitReason, Message: o.WaitMessage}
		if o.Current != nil {
			s.LastTerminationState.Terminated = toState(o.Current)
			s.ContainerID = o.Current.ID
		}
	case o.Current != nil:
		s.State.Terminated = toState(o.Current)
		s.ContainerID = o.Current.ID
		if o.Last != nil {
			s.LastTerminationState.Terminated = toState(o.Last)
		}
	default:
		s.State.Waiting = &corev1.ContainerStateWaiting{Reason: waitDefault}
	}
	return s
}

// podPhase follows a kubelet's rules: pending until init containers succeeded and
// every container ran, running while any container runs or will be restarted,
// succeeded or failed once all stopped for good.
func podPhase(spec *corev1.PodSpec, statuses []corev1.ContainerStatus, initOK, initFail bool) corev1.PodPhase {
	if initFail {
		return corev1.PodFailed
	}
	if !initOK {
		return corev1.PodPending
	}
	var running, waiting, stopped, succeeded int
	for _, s := range statuses {
		switch {
		case s.State.Running != nil:
			running++
		case s.State.Terminated != nil:
			stopped++
			if s.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case s.LastTerminationState.Terminated != nil:
			stopped++
		default:
			waiting++
		}
	}
	switch {
	case waiting > 0:
		return corev1.PodPending
	case running > 0:
		return corev1.PodRunning
	case stopped > 0:
		if spec.RestartPolicy == corev1.RestartPolicyAlways {
			return corev1.PodRunning
		}
		if stopped == succeeded {
			return corev1.PodSucceeded
		}
		if spec.RestartPolicy == corev1.RestartPolicyNever {
			return corev1.PodFailed
		}
		return corev1.PodRunning
	}
	return corev1.PodPending
}

// computeStatus is the pod status a kubelet would report. Condition transition times
// are kept from the previous status when a condition's status did not change.
func computeStatus(in statusInput) corev1.PodStatus {
	pod := in.Pod
	st := corev1.PodStatus{
		HostIP:   in.HostIP,
		QOSClass: pod.Status.QOSClass,
		// The generation of the spec this status answers, as kubelets since 1.33 say.
		ObservedGeneration: pod.Generation,
	}
	if in.HostIP != "" {
		st.HostIPs = []corev1.HostIP{{IP: in.HostIP}}
	}
	if in.PodIP != "" {
		st.PodIP = in.PodIP
		st.PodIPs = []corev1.PodIP{{IP: in.PodIP}}
	}
	if !in.StartTime.IsZero() {
		t := metav1.NewTime(in.StartTime)
		st.StartTime = &t
	}
	initOK := initDone(&pod.Spec, in.Obs)
	initFail := initFailed(&pod.Spec, in.Obs)
	var pendingInit, unready []string
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		cs := containerStatus(c, in.Obs[c.Name], in, "PodInitializing")
		switch {
		case isSidecar(c):
			// A sidecar's readiness counts towards the pod's, as an app container's.
			if cs.State.Running == nil || cs.Started == nil || !*cs.Started {
				pendingInit = append(pendingInit, c.Name)
			}
			if !cs.Ready {
				unready = append(unready, c.Name)
			}
		case cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0:
			cs.Ready = true
		default:
			pendingInit = append(pendingInit, c.Name)
		}
		st.InitContainerStatuses = append(st.InitContainerStatuses, cs)
	}
	if initOK {
		pendingInit = nil
	}
	wait := "ContainerCreating"
	if !initOK {
		wait = "PodInitializing"
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		cs := containerStatus(c, in.Obs[c.Name], in, wait)
		if !cs.Ready {
			unready = append(unready, c.Name)
		}
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
	}
	st.Phase = podPhase(&pod.Spec, st.ContainerStatuses, initOK, initFail)

	cond := func(t corev1.PodConditionType, ok bool, reason, msg string) {
		c := corev1.PodCondition{Type: t, Status: corev1.ConditionFalse, Reason: reason, Message: msg, ObservedGeneration: pod.Generation}
		if ok {
			c.Status, c.Reason, c.Message = corev1.ConditionTrue, "", ""
		}
		c.LastTransitionTime = metav1.NewTime(in.Now)
		for _, prev := range pod.Status.Conditions {
			if prev.Type == t && prev.Status == c.Status {
				c.LastTransitionTime = prev.LastTransitionTime
			}
		}
		st.Conditions = append(st.Conditions, c)
	}
	terminal := st.Phase == corev1.PodSucceeded || st.Phase == corev1.PodFailed
	cond(corev1.PodReadyToStartContainers, in.SandboxReady && !terminal, "", "")
	initMsg := ""
	if len(pendingInit) > 0 {
		initMsg = fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(pendingInit, " "))
	}
	cond(corev1.PodInitialized, initOK, "ContainersNotInitialized", initMsg)
	readyReason, readyMsg := "ContainersNotReady", fmt.Sprintf("containers with unready status: [%s]", strings.Join(unready, " "))
	if st.Phase == corev1.PodSucceeded {
		readyReason, readyMsg = "PodCompleted", ""
	}
	ready := len(unready) == 0 && !terminal
	cond(corev1.ContainersReady, ready, readyReason, readyMsg)
	cond(corev1.PodReady, ready && readinessGatesOK(pod), readyReason, readyMsg)
	scheduled := false
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			st.Conditions = append(st.Conditions, c)
			scheduled = true
		}
	}
	if !scheduled {
		cond(corev1.PodScheduled, true, "", "")
	}
	return st
}

func readinessGatesOK(pod *corev1.Pod) bool {
	for _, g := range pod.Spec.ReadinessGates {
		ok := false
		for _, c := range pod.Status.Conditions {
			if c.Type == g.ConditionType && c.Status == corev1.ConditionTrue {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	return true
}
