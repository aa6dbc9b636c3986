package kubelet

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Attachment: a real cluster attaches a ReadWriteOnce disk to one node at a time.
// The attach/detach controller (kube-controller-manager) does not attach a volume
// to a second node while a pod on another node still uses it, and says so on the
// waiting pod (reconciler.go reportMultiAttachError, v1.37.2 wording); the kubelet
// waits for the attachment before it creates the sandbox, the pod stays
// ContainerCreating, and every 2 min 3 s (podAttachAndMountTimeout) the kubelet
// reports FailedMount. localkube has no attachments; each kubelet makes the
// controller's decision itself, from the pod objects, before it sets a pod up.
//
// A pod on another node uses a volume until its object is deleted from the API
// or it is terminated (util.IsPodTerminated: phase Succeeded or Failed, or being
// deleted with no container running). So a pod on a node that went down keeps
// its volume until someone force-deletes it. Unlike a real cluster, the volume
// is free as soon as that pod is gone: no 6 min wait for a forced detach.

// attachWaitReport is how often the kubelet reports a pod still waiting for its
// volumes (podAttachAndMountTimeout).
const attachWaitReport = 2*time.Minute + 3*time.Second

// multiAttachAllowed says whether a PV may be attached to several nodes at once
// (util.IsMultiAttachAllowed): no access modes, ReadWriteMany or ReadOnlyMany.
func multiAttachAllowed(pv *corev1.PersistentVolume) bool {
	if len(pv.Spec.AccessModes) == 0 {
		return true
	}
	for _, m := range pv.Spec.AccessModes {
		if m == corev1.ReadWriteMany || m == corev1.ReadOnlyMany {
			return true
		}
	}
	return false
}

// podTerminated is util.IsPodTerminated: the pod no longer uses its volumes.
func podTerminated(p *corev1.Pod) bool {
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return true
	}
	if p.DeletionTimestamp == nil {
		return false
	}
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses, p.Status.EphemeralContainerStatuses} {
		for _, s := range list {
			if s.State.Terminated == nil && s.State.Waiting == nil {
				return false
			}
		}
	}
	return true
}

// claimNames lists the PVCs a pod's volumes name.
func claimNames(spec *corev1.PodSpec) []string {
	var out []string
	for _, v := range spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			out = append(out, v.PersistentVolumeClaim.ClaimName)
		}
	}
	return out
}

// multiAttachConflicts is the attach/detach controller's decision for pod on
// node: for each of its volumes that may be attached to one node only (pvs maps
// its claims to their bound PVs), the names of the pods in the namespace that
// still use it from other nodes. A volume absent from the result may be used.
func multiAttachConflicts(pod *corev1.Pod, node string, pvs map[string]*corev1.PersistentVolume, pods []corev1.Pod) map[string][]string {
	out := map[string][]string{}
	for claim, pv := range pvs {
		if pv == nil || multiAttachAllowed(pv) {
			continue
		}
		for i := range pods {
			o := &pods[i]
			if o.UID == pod.UID || o.Namespace != pod.Namespace || o.Spec.NodeName == "" || o.Spec.NodeName == node || podTerminated(o) {
				continue
			}
			for _, c := range claimNames(&o.Spec) {
				if c == claim {
					out[pv.Name] = append(out[pv.Name], o.Name)
					break
				}
			}
		}
		sort.Strings(out[pv.Name])
		if len(out[pv.Name]) == 0 {
			delete(out, pv.Name)
		}
	}
	return out
}

// multiAttachMessage is the controller's FailedAttachVolume message for a volume
// that pods of the same namespace use on another node.
func multiAttachMessage(volume string, pods []string) string {
	return fmt.Sprintf("Waiting for detach for volume %q Volume is already used by pod(s) %s", volume, strings.Join(pods, ", "))
}

// attachWait is a worker's record of a pod waiting for its volumes.
type attachWait struct {
	since     time.Time
	reported  map[string]bool // volumes the controller's event was sent for
	lastMount time.Time       // when FailedMount was last reported
}

// attachBlocked reports whether the pod must wait because a volume of it is
// attached elsewhere, sending the Events a real cluster sends. It reads the API
// as the attach/detach controller (Kubelet.attachAPI); an error counts as
// blocked, and the next pass asks again.
func (w *podWorker) attachBlocked(ctx context.Context, pod *corev1.Pod) bool {
	claims := claimNames(&pod.Spec)
	cs := w.k.attachAPI
	if len(claims) == 0 || cs == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	pvs := map[string]*corev1.PersistentVolume{}
	for _, c := range claims {
		pvc, err := cs.CoreV1().PersistentVolumeClaims(pod.Namespace).Get(ctx, c, metav1.GetOptions{})
		if err != nil || pvc.Spec.VolumeName == "" {
			continue // not bound: the sandbox setup reports it
		}
		pv, err := cs.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			w.log.Warn().Err(err).Str("volume", pvc.Spec.VolumeName).Msg("attach check: read persistent volume")
			return true
		}
		pvs[c] = pv
	}
	list, err := cs.CoreV1().Pods(pod.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		w.log.Warn().Err(err).Msg("attach check: list pods")
		return true
	}
	conflicts := multiAttachConflicts(pod, w.k.cfg.NodeName, pvs, list.Items)
	if len(conflicts) == 0 {
		w.attach = attachWait{}
		return false
	}
	now := time.Now()
	if w.attach.since.IsZero() {
		w.attach = attachWait{since: now, lastMount: now, reported: map[string]bool{}}
	}
	var names []string
	for vol, users := range conflicts {
		if !w.attach.reported[vol] {
			w.k.attachEvents.Eventf(pod, corev1.EventTypeWarning, "FailedAttachVolume", "%s", multiAttachMessage(vol, users))
			w.attach.reported[vol] = true
			w.log.Info().Str("volume", vol).Strs("usedBy", users).Msg("volume attached to another node: waiting")
		}
	}
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil && pvs[v.PersistentVolumeClaim.ClaimName] != nil && conflicts[pvs[v.PersistentVolumeClaim.ClaimName].Name] != nil {
			names = append(names, v.Name)
		}
	}
	sort.Strings(names)
	if now.Sub(w.attach.lastMount) >= attachWaitReport {
		w.attach.lastMount = now
		w.k.events.Eventf(pod, corev1.EventTypeWarning, "FailedMount",
			"Unable to attach or mount volumes: unmounted volumes=%v, unattached volumes=%v, failed to process volumes=[]: context deadline exceeded", names, names)
	}
	return true
}
