package kube

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// WipeMember empties a member's data the way the StatefulSet allows it: its
// claim is deleted first, then its pod, so the StatefulSet recreates both and
// the member comes back on an empty volume (mongod then initial-syncs).
//
// The order matters. A claim used by a live pod is only marked for deletion
// (the kubernetes.io/pvc-protection finalizer keeps it until the pod is gone),
// and the StatefulSet controller does not create a pod whose claim is being
// deleted; once the pod is gone the claim goes, and the StatefulSet creates a
// new claim and the pod. Deleting the pod first would let the StatefulSet
// recreate it on the old claim.
//
// Only this member's objects are touched: the pod must be one of m's member
// pods, the claim must be the pod's data claim and labelled as m's, and both
// deletions are bound to the UIDs read here. When spec.storage.reclaim is not
// Delete (invariant 4) the claim's PersistentVolume is set to Retain first, so
// the diverged data (the only copy of writes past the forced reconfig) stays
// on a Released volume; the StatefulSet's new claim gets a new volume. A claim
// already being deleted is not deleted again (a retried wipe only deletes the
// pod). Which member to wipe is the caller's decision: never one in the config.
func (a *Applier) WipeMember(ctx context.Context, m *v1alpha1.Mgors, podName string) error {
	pods := a.Client.CoreV1().Pods(m.Namespace)
	pod, err := bounded(ctx, a, func(ctx context.Context) (*corev1.Pod, error) {
		return pods.Get(ctx, podName, metav1.GetOptions{})
	})
	if err != nil {
		return fmt.Errorf("reading pod %s: %w", podName, err)
	}
	if pod.Labels[LabelInstance] != m.Name || pod.Labels[LabelManagedBy] != ManagedBy || pod.Labels[LabelComponent] != ComponentMember {
		return &NotOwned{Kind: "Pod", Name: podName}
	}
	claimName := DataVolume + "-" + podName
	if !usesClaim(pod, claimName) {
		return fmt.Errorf("pod %s does not use the data claim %s", podName, claimName)
	}
	claims := a.Client.CoreV1().PersistentVolumeClaims(m.Namespace)
	claim, err := bounded(ctx, a, func(ctx context.Context) (*corev1.PersistentVolumeClaim, error) {
		return claims.Get(ctx, claimName, metav1.GetOptions{})
	})
	switch {
	case apierrors.IsNotFound(err):
		// Gone already (a retried wipe): the pod still holds the old volume.
	case err != nil:
		return fmt.Errorf("reading claim %s: %w", claimName, err)
	case claim.Labels[LabelCluster] != m.Name:
		return &NotOwned{Kind: "PersistentVolumeClaim", Name: claimName}
	case claim.DeletionTimestamp == nil:
		if m.Spec.Storage.Reclaim != v1alpha1.VolumeDelete && claim.Spec.VolumeName != "" {
			if err := a.retainVolume(ctx, claim.Spec.VolumeName); err != nil {
				return err
			}
		}
		dctx, cancel := a.call(ctx)
		err := claims.Delete(dctx, claimName, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &claim.UID}})
		cancel()
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting claim %s: %w", claimName, err)
		}
	}
	dctx, cancel := a.call(ctx)
	defer cancel()
	err = pods.Delete(dctx, podName, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting pod %s: %w", podName, err)
	}
	return nil
}

// retainVolume sets a PersistentVolume's reclaim policy to Retain.
func (a *Applier) retainVolume(ctx context.Context, name string) error {
	pvs := a.Client.CoreV1().PersistentVolumes()
	pv, err := bounded(ctx, a, func(ctx context.Context) (*corev1.PersistentVolume, error) {
		return pvs.Get(ctx, name, metav1.GetOptions{})
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading volume %s: %w", name, err)
	}
	if pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimRetain {
		return nil
	}
	patch := []byte(`{"spec":{"persistentVolumeReclaimPolicy":"Retain"}}`)
	_, err = bounded(ctx, a, func(ctx context.Context) (*corev1.PersistentVolume, error) {
		return pvs.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	})
	if err != nil {
		return fmt.Errorf("retaining volume %s: %w", name, err)
	}
	return nil
}

func usesClaim(p *corev1.Pod, claim string) bool {
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim {
			return true
		}
	}
	return false
}
