package cluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// needsResize: a bound claim whose storage request is above its capacity. The
// API server admitted the larger request, so the claim's StorageClass allows
// volume expansion (the PersistentVolumeClaimResize admission plugin refuses it
// otherwise) and the claim is bound.
func needsResize(pvc *corev1.PersistentVolumeClaim) bool {
	if pvc.Spec.VolumeName == "" || pvc.Status.Phase != corev1.ClaimBound || pvc.DeletionTimestamp != nil {
		return false
	}
	want, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		return false
	}
	have, ok := pvc.Status.Capacity[corev1.ResourceStorage]
	return !ok || have.Cmp(want) < 0
}

// resize expands a bound claim's volume online, as a CSI driver whose
// ControllerExpandVolume needs no node step (node_expansion_required false)
// does with the external-resizer: the claim gets the Resizing condition, the
// PV's spec.capacity is raised, then the claim's status.capacity (and
// allocatedResources) become the request and the condition goes. A hostPath
// directory has no size to change, so the controller step is the PV's new
// capacity alone; the pod keeps running, nothing is remounted. A pass that
// stops half way is finished by the next: each step is idempotent.
func (p *provisioner) resize(ctx context.Context, pvc *corev1.PersistentVolumeClaim) error {
	want := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	pv, err := p.cs.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if pv.Annotations[annProvisionedBy] != Provisioner {
		return fmt.Errorf("volume %s was not provisioned by %s", pv.Name, Provisioner)
	}
	if !hasCondition(pvc, corev1.PersistentVolumeClaimResizing) {
		next := pvc.DeepCopy()
		setResizeCondition(next, corev1.PersistentVolumeClaimResizing)
		if pvc, err = p.cs.CoreV1().PersistentVolumeClaims(pvc.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	if have := pv.Spec.Capacity[corev1.ResourceStorage]; have.Cmp(want) < 0 {
		next := pv.DeepCopy()
		next.Spec.Capacity[corev1.ResourceStorage] = want.DeepCopy()
		if _, err := p.cs.CoreV1().PersistentVolumes().Update(ctx, next, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	next := pvc.DeepCopy()
	if next.Status.Capacity == nil {
		next.Status.Capacity = corev1.ResourceList{}
	}
	next.Status.Capacity[corev1.ResourceStorage] = want.DeepCopy()
	if next.Status.AllocatedResources != nil {
		next.Status.AllocatedResources[corev1.ResourceStorage] = want.DeepCopy()
	}
	delete(next.Status.AllocatedResourceStatuses, corev1.ResourceStorage)
	var conds []corev1.PersistentVolumeClaimCondition
	for _, c := range next.Status.Conditions {
		if c.Type != corev1.PersistentVolumeClaimResizing && c.Type != corev1.PersistentVolumeClaimFileSystemResizePending {
			conds = append(conds, c)
		}
	}
	next.Status.Conditions = conds
	if _, err := p.cs.CoreV1().PersistentVolumeClaims(pvc.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil {
		return err
	}
	p.log.Info().Str("claim", pvc.Namespace+"/"+pvc.Name).Str("volume", pv.Name).Str("capacity", want.String()).Msg("resized")
	return nil
}

func hasCondition(pvc *corev1.PersistentVolumeClaim, t corev1.PersistentVolumeClaimConditionType) bool {
	for _, c := range pvc.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func setResizeCondition(pvc *corev1.PersistentVolumeClaim, t corev1.PersistentVolumeClaimConditionType) {
	pvc.Status.Conditions = append(pvc.Status.Conditions, corev1.PersistentVolumeClaimCondition{
		Type: t, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now(),
	})
}
