package cluster

import (
	"context"
	"testing"

	"github.com/rs/zerolog"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func boundClaim(request, capacity string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data-demo-0", Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{
			VolumeName: "pvc-1",
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse(request)}},
		},
		Status: corev1.PersistentVolumeClaimStatus{
			Phase:    corev1.ClaimBound,
			Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(capacity)},
		},
	}
}

func TestNeedsResize(t *testing.T) {
	pending := boundClaim("2Gi", "1Gi")
	pending.Status.Phase = corev1.ClaimPending
	tests := []struct {
		name string
		pvc  *corev1.PersistentVolumeClaim
		want bool
	}{
		{"grown request", boundClaim("2Gi", "1Gi"), true},
		{"same size", boundClaim("1Gi", "1Gi"), false},
		{"capacity above the request", boundClaim("1Gi", "2Gi"), false},
		{"not bound yet", pending, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := needsResize(tt.pvc); got != tt.want {
				t.Errorf("needsResize = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestResizeRaisesVolumeAndClaim: the PV's capacity and the claim's
// status.capacity become the request, and no resize condition is left.
func TestResizeRaisesVolumeAndClaim(t *testing.T) {
	pvc := boundClaim("2Gi", "1Gi")
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pvc-1", Annotations: map[string]string{annProvisionedBy: Provisioner}},
		Spec:       corev1.PersistentVolumeSpec{Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
	}
	cs := fake.NewClientset(pvc, pv)
	p := &provisioner{cs: cs, log: zerolog.Nop()}
	ctx := context.Background()
	if err := p.resize(ctx, pvc); err != nil {
		t.Fatal(err)
	}
	gotPV, _ := cs.CoreV1().PersistentVolumes().Get(ctx, "pvc-1", metav1.GetOptions{})
	if q := gotPV.Spec.Capacity[corev1.ResourceStorage]; q.Cmp(resource.MustParse("2Gi")) != 0 {
		t.Errorf("PV capacity %s, want 2Gi", q.String())
	}
	gotPVC, _ := cs.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data-demo-0", metav1.GetOptions{})
	if q := gotPVC.Status.Capacity[corev1.ResourceStorage]; q.Cmp(resource.MustParse("2Gi")) != 0 {
		t.Errorf("claim capacity %s, want 2Gi", q.String())
	}
	if len(gotPVC.Status.Conditions) != 0 {
		t.Errorf("conditions left: %v", gotPVC.Status.Conditions)
	}
	if needsResize(gotPVC) {
		t.Error("the claim still needs a resize")
	}
}

// TestResizeRefusesOthersVolumes: a PV another provisioner made is not ours to grow.
func TestResizeRefusesOthersVolumes(t *testing.T) {
	pvc := boundClaim("2Gi", "1Gi")
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pvc-1"},
		Spec: corev1.PersistentVolumeSpec{Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}
	p := &provisioner{cs: fake.NewClientset(pvc, pv), log: zerolog.Nop()}
	if err := p.resize(context.Background(), pvc); err == nil {
		t.Fatal("resized a volume it did not provision")
	}
}
