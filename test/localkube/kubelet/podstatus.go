package kubelet

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// writeStatus computes the pod status and writes it through the status subresource
// when it changed.
func (w *podWorker) writeStatus(ctx context.Context, pod *corev1.Pod) *corev1.PodStatus {
	st := computeStatus(statusInput{
		Pod: pod, Obs: w.observedWithWaits(), PodIP: w.ip, HostIP: w.k.cfg.NodeIP,
		StartTime: w.startTime, SandboxReady: w.sandboxReady, Now: time.Now(),
		Image: func(ref string) (string, string) {
			return normalizeReference(ref), imageID(ref, w.k.images.Lookup(ref))
		},
	})
	if pod.Spec.HostNetwork && w.ip == "" {
		st.PodIP = ""
	}
	if w.lastStatus != nil && equality.Semantic.DeepEqual(*w.lastStatus, st) {
		return &st
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		cur, err := w.k.cs.CoreV1().Pods(pod.Namespace).Get(cctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.UID != pod.UID {
			return nil
		}
		cur.Status = mergeForeignConditions(st, cur.Status)
		_, err = w.k.cs.CoreV1().Pods(pod.Namespace).UpdateStatus(cctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		if !apierrors.IsNotFound(err) {
			w.log.Warn().Err(err).Msg("update pod status")
		}
		return &st
	}
	w.lastStatus = &st
	return &st
}

// mergeForeignConditions keeps conditions that others own (readiness gates,
// DisruptionTarget) next to the kubelet's.
func mergeForeignConditions(st corev1.PodStatus, cur corev1.PodStatus) corev1.PodStatus {
	mine := map[corev1.PodConditionType]bool{}
	for _, c := range st.Conditions {
		mine[c.Type] = true
	}
	for _, c := range cur.Conditions {
		if !mine[c.Type] {
			st.Conditions = append(st.Conditions, c)
		}
	}
	if st.QOSClass == "" {
		st.QOSClass = cur.QOSClass
	}
	return st
}

// observedWithWaits includes config errors that observedMap hides from decide.
func (w *podWorker) observedWithWaits() map[string]*observed {
	m := map[string]*observed{}
	for name, c := range w.ctrs {
		o := c.obs
		m[name] = &o
	}
	return m
}
