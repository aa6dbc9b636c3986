package kube

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// Reasons of the Problems Diagnose finds. They are CamelCase so that the actor
// can use them as a Stalled condition's reason as they are.
const (
	ReasonPodsUnschedulable     = "PodsUnschedulable"
	ReasonStorageClassNotFound  = "StorageClassNotFound"
	ReasonNoDefaultStorageClass = "NoDefaultStorageClass"
	ReasonCrashLoopBackOff      = "CrashLoopBackOff"
	ReasonImagePull             = "ImagePullFailed"
	ReasonContainerConfig       = "ContainerConfigError"
	ReasonPodCreateFailed       = "PodCreateFailed"
)

// maxMessage bounds a Problem's message: it goes into a condition and an Event.
const maxMessage = 512

// Problem is something outside the operator that blocks a cluster's pods, as
// Kubernetes reports it; the actor shows it as a Stalled condition and waits.
type Problem struct {
	// Reason is CamelCase, e.g. PodsUnschedulable.
	Reason string
	// Object is the blocked object, "Pod/db-1" or "PersistentVolumeClaim/data-db-1".
	Object string
	// Message names the object and says what Kubernetes said.
	Message string
}

// String is the Problem as one line, for logs.
func (p Problem) String() string { return p.Reason + ": " + p.Message }

// waiting reasons of a container that need a person, by the Problem reason
// they map to.
var waitingProblems = map[string]string{
	"ErrImagePull":               ReasonImagePull,
	"ImagePullBackOff":           ReasonImagePull,
	"InvalidImageName":           ReasonImagePull,
	"ErrImageNeverPull":          ReasonImagePull,
	"CrashLoopBackOff":           ReasonCrashLoopBackOff,
	"CreateContainerConfigError": ReasonContainerConfig,
	"CreateContainerError":       ReasonContainerConfig,
}

// Diagnose looks at m's pods and volume claims for what blocks provisioning or
// recovery: StatefulSets that cannot create their pods, unschedulable pods,
// claims waiting for a StorageClass that does not exist, images that cannot be
// pulled, containers that crash. It reads the objects from r (the informer
// caches, the FailedCreate Events included): no API call. It returns the
// problems sorted by object; none means nothing outside the operator is known
// to block.
func Diagnose(r Reader, m *v1alpha1.Mgors) ([]Problem, error) {
	sel := labels.SelectorFromSet(ClusterSelectorLabels(m))
	pods, err := r.Pods(m.Namespace, sel)
	if err != nil {
		return nil, err
	}
	var out []Problem
	for _, p := range pods {
		out = append(out, podProblems(p)...)
	}
	for _, name := range []string{m.Name, ArbiterName(m)} {
		p, err := createFailure(r, m, name)
		if err != nil {
			return nil, err
		}
		if p != nil {
			out = append(out, *p)
		}
	}
	claims, err := r.Claims(m.Namespace, sel)
	if err != nil {
		return nil, err
	}
	var classes []*storagev1.StorageClass
	var classErr error
	classesRead := false
	for _, pvc := range claims {
		if pvc.Status.Phase != corev1.ClaimPending || pvc.Spec.VolumeName != "" {
			continue
		}
		if !classesRead {
			classes, classErr = r.StorageClasses()
			// ErrNotWatched: the namespaced install cannot read storage
			// classes; unknown is not "missing".
			if classErr != nil && !errors.Is(classErr, ErrNotWatched) {
				return nil, classErr
			}
			classesRead = true
		}
		unknown := classErr != nil
		obj := "PersistentVolumeClaim/" + pvc.Name
		if name := pvc.Spec.StorageClassName; name != nil && *name != "" {
			if !unknown && !slices.ContainsFunc(classes, func(c *storagev1.StorageClass) bool { return c.Name == *name }) {
				out = append(out, Problem{Reason: ReasonStorageClassNotFound, Object: obj,
					Message: fmt.Sprintf("persistentvolumeclaim %s is pending: storageclass.storage.k8s.io %q not found", pvc.Name, *name)})
			}
			continue
		}
		if pvc.Spec.StorageClassName == nil && !unknown && !slices.ContainsFunc(classes, isDefaultClass) {
			out = append(out, Problem{Reason: ReasonNoDefaultStorageClass, Object: obj,
				Message: fmt.Sprintf("persistentvolumeclaim %s is pending: it names no storage class and the cluster has no default StorageClass", pvc.Name)})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Object != out[j].Object {
			return out[i].Object < out[j].Object
		}
		return out[i].Reason < out[j].Reason
	})
	return out, nil
}

func isDefaultClass(c *storagev1.StorageClass) bool {
	return c.Annotations["storageclass.kubernetes.io/is-default-class"] == "true"
}

// createFailure is why a StatefulSet of m that misses pods cannot create them
// (a quota, an admission policy), from its controller's latest FailedCreate
// Event (the informer's, Reader.FailedCreates: no API read); nil when it
// misses none or nothing says why.
func createFailure(r Reader, m *v1alpha1.Mgors, name string) (*Problem, error) {
	set, err := r.StatefulSet(m.Namespace, name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if set.Spec.Replicas == nil || set.Status.Replicas >= *set.Spec.Replicas {
		return nil, nil
	}
	events, err := r.FailedCreates(m.Namespace, name)
	if err != nil {
		return nil, err
	}
	var latest *corev1.Event
	for _, e := range events {
		if e.InvolvedObject.UID != set.UID {
			continue // of a previous StatefulSet of the same name
		}
		if latest == nil || eventTime(e).After(eventTime(latest)) {
			latest = e
		}
	}
	if latest == nil {
		return nil, nil
	}
	return &Problem{Reason: ReasonPodCreateFailed, Object: "StatefulSet/" + name,
		Message: clip(fmt.Sprintf("statefulset %s cannot create pods: %s", name, latest.Message))}, nil
}

// eventTime is when an Event last happened, whichever API wrote it.
func eventTime(e *corev1.Event) time.Time {
	switch {
	case e.Series != nil:
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	default:
		return e.EventTime.Time
	}
}

// podProblems are the problems one pod shows in its conditions and container
// statuses.
func podProblems(p *corev1.Pod) []Problem {
	var out []Problem
	obj := "Pod/" + p.Name
	if p.Status.Phase == corev1.PodPending {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				out = append(out, Problem{Reason: ReasonPodsUnschedulable, Object: obj,
					Message: clip(fmt.Sprintf("pod %s is unschedulable: %s", p.Name, c.Message))})
			}
		}
	}
	statuses := append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, s := range statuses {
		w := s.State.Waiting
		if w == nil {
			continue
		}
		reason, ok := waitingProblems[w.Reason]
		if !ok {
			continue
		}
		msg := fmt.Sprintf("pod %s container %s: %s", p.Name, s.Name, w.Reason)
		if w.Message != "" {
			msg += ": " + w.Message
		}
		if t := s.LastTerminationState.Terminated; reason == ReasonCrashLoopBackOff && t != nil {
			msg += fmt.Sprintf("; last exit code %d", t.ExitCode)
			if t.Reason != "" {
				msg += " (" + t.Reason + ")"
			}
			if m := strings.TrimSpace(t.Message); m != "" {
				msg += ": " + lastLines(m, 3)
			}
		}
		out = append(out, Problem{Reason: reason, Object: obj, Message: clip(msg)})
	}
	return out
}

// lastLines keeps the last n lines of a termination message, where a crashed
// process says why it exited.
func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// clip bounds a message, keeping its start (which names the object).
func clip(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	return strings.ToValidUTF8(s[:maxMessage-3], "") + "..."
}
