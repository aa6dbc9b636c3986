package cluster

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNeedsVolume(t *testing.T) {
	wffc, immediate := storagev1.VolumeBindingWaitForFirstConsumer, storagev1.VolumeBindingImmediate
	block := corev1.PersistentVolumeBlock
	pending := func(mut func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
		p := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{}},
			Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
		}
		if mut != nil {
			mut(p)
		}
		return p
	}
	tests := []struct {
		name    string
		pvc     *corev1.PersistentVolumeClaim
		binding storagev1.VolumeBindingMode
		want    bool
	}{
		{"immediate pending", pending(nil), immediate, true},
		{"wffc not scheduled", pending(nil), wffc, false},
		{"wffc scheduled", pending(func(p *corev1.PersistentVolumeClaim) { p.Annotations[annSelectedNode] = "localkube-1" }), wffc, true},
		{"already bound", pending(func(p *corev1.PersistentVolumeClaim) { p.Spec.VolumeName = "pv" }), immediate, false},
		{"bound phase", pending(func(p *corev1.PersistentVolumeClaim) { p.Status.Phase = corev1.ClaimBound }), immediate, false},
		{"block volume", pending(func(p *corev1.PersistentVolumeClaim) { p.Spec.VolumeMode = &block }), immediate, false},
		{"being deleted", pending(func(p *corev1.PersistentVolumeClaim) { now := metav1.Now(); p.DeletionTimestamp = &now }), immediate, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := &storagev1.StorageClass{VolumeBindingMode: &tt.binding}
			if got := needsVolume(tt.pvc, sc); got != tt.want {
				t.Errorf("needsVolume = %v, want %v", got, tt.want)
			}
		})
	}
}
