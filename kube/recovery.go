package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/kube/client"
)

// ForceDeletePod deletes one of m's member pods with grace period 0: its node
// is gone, its kubelet will never confirm a graceful deletion, and the
// StatefulSet recreates the pod (same name, same claim) only once the old one
// is gone from the API. Only pods of m are deleted; a pod already gone is
// success.
func (a *Applier) ForceDeletePod(ctx context.Context, m *v1alpha1.Mgors, name string) error {
	zero := int64(0)
	return a.deleteMemberPod(ctx, m, name, "", &zero)
}

// FenceGrace is the grace period of a fencing delete: a member that has not
// answered for the whole recovery grace period gets this long to shut down
// cleanly before its kubelet kills it.
const FenceGrace = 2 * time.Second

// FencePod deletes the member pod name of m whose UID is uid, with FenceGrace,
// before a forced reconfig drops it from the config: its mongod, hung or cut
// off, must not come back with an election timer long expired and elect a
// second primary in the old config. The kubelet kills it and confirms; the
// StatefulSet recreates it, and the member starts afresh. A pod already gone
// or replaced (another UID) is success.
func (a *Applier) FencePod(ctx context.Context, m *v1alpha1.Mgors, name, uid string) error {
	grace := int64(FenceGrace / time.Second)
	return a.deleteMemberPod(ctx, m, name, uid, &grace)
}

// deleteMemberPod deletes the member pod name of m (its labels must say so)
// with grace (nil: the pod's own), bound by precondition to the UID it read;
// when uid is set, only a pod of that UID. A pod gone, or replaced since, is
// success: the one meant is no more.
func (a *Applier) deleteMemberPod(ctx context.Context, m *v1alpha1.Mgors, name, uid string, grace *int64) error {
	c := a.Client.CoreV1().Pods(m.Namespace)
	pod, err := bounded(ctx, a, func(ctx context.Context) (*corev1.Pod, error) {
		return c.Get(ctx, name, metav1.GetOptions{})
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if pod.Labels[LabelInstance] != m.Name || pod.Labels[LabelManagedBy] != ManagedBy {
		return &NotOwned{Kind: "Pod", Name: name}
	}
	if uid != "" && string(pod.UID) != uid {
		return nil
	}
	dctx, cancel := a.call(ctx)
	defer cancel()
	err = c.Delete(dctx, name, metav1.DeleteOptions{GracePeriodSeconds: grace, Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// NodeReadiness is a node's Ready condition: ready, or since when it is not.
type NodeReadiness struct {
	Ready bool
	// NotReadySince is the Ready condition's lastTransitionTime when it is not
	// True (zero when Ready).
	NotReadySince time.Time
}

// Nodes reads the readiness of the named nodes from r (the informer
// cache); a node that is gone from the API is NotReady since the zero time
// (unknown), which no grace period ever passes.
func Nodes(r Reader, names []string) (map[string]NodeReadiness, error) {
	out := map[string]NodeReadiness{}
	for _, name := range names {
		n, err := r.Node(name)
		if apierrors.IsNotFound(err) {
			out[name] = NodeReadiness{}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading node %s: %w", name, err)
		}
		out[name] = readiness(n)
	}
	return out, nil
}

func readiness(n *corev1.Node) NodeReadiness {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			if c.Status == corev1.ConditionTrue {
				return NodeReadiness{Ready: true}
			}
			return NodeReadiness{NotReadySince: c.LastTransitionTime.Time}
		}
	}
	return NodeReadiness{}
}

// RemoveAnnotation removes one annotation from the Mgors with a merge patch
// bound to its UID (a re-created Mgors of the same name is left alone). An
// annotation already gone, or a Mgors gone, is success.
func RemoveAnnotation(ctx context.Context, c client.Interface, timeout time.Duration, m *v1alpha1.Mgors, key string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid": m.UID, "annotations": map[string]any{key: nil}}})
	if err != nil {
		return err
	}
	if timeout <= 0 {
		timeout = DefaultCallTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err = c.Mgorses(m.Namespace).Patch(cctx, m.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
