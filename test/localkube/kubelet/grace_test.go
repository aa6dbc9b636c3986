package kubelet

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestPodKillGrace(t *testing.T) {
	pod := func(spec, deletion *int64) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metaWithDeletion(deletion), Spec: corev1.PodSpec{TerminationGracePeriodSeconds: spec}}
	}
	for _, tc := range []struct {
		name     string
		pod      *corev1.Pod
		override *int64
		want     time.Duration
	}{
		{"spec grace without deletion fields", pod(ptr.To(int64(45)), nil), nil, 45 * time.Second},
		{"default 30 s", pod(nil, nil), nil, 30 * time.Second},
		{"deletion grace period wins", pod(ptr.To(int64(45)), ptr.To(int64(10))), nil, 10 * time.Second},
		{"force delete: 0 becomes 1 s", pod(ptr.To(int64(45)), ptr.To(int64(0))), nil, time.Second},
		{"spec 0 becomes 1 s", pod(ptr.To(int64(0)), nil), nil, time.Second},
		{"orphan override 1 s", nil, ptr.To(int64(1)), time.Second},
		{"override shortens", pod(ptr.To(int64(45)), ptr.To(int64(10))), ptr.To(int64(3)), 3 * time.Second},
		{"override never lengthens", pod(ptr.To(int64(45)), ptr.To(int64(2))), ptr.To(int64(5)), 2 * time.Second},
	} {
		if got := podKillGrace(tc.pod, tc.override); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A preStop hook that uses the whole grace period still leaves 2 s between SIGTERM
// and SIGKILL; a quick one leaves the rest of the grace period.
func TestContainerKillGrace(t *testing.T) {
	for _, tc := range []struct {
		grace, hook, want time.Duration
	}{
		{30 * time.Second, 0, 30 * time.Second},
		{30 * time.Second, 10*time.Second + 900*time.Millisecond, 20 * time.Second}, // whole seconds, as the kubelet counts
		{30 * time.Second, 30 * time.Second, 2 * time.Second},
		{30 * time.Second, 29*time.Second + 900*time.Millisecond, 2 * time.Second},
		{time.Second, time.Second, 2 * time.Second}, // force delete
		{0, 0, 2 * time.Second},
	} {
		if got := containerKillGrace(tc.grace, tc.hook); got != tc.want {
			t.Errorf("containerKillGrace(%v, %v) = %v, want %v", tc.grace, tc.hook, got, tc.want)
		}
	}
}

func metaWithDeletion(grace *int64) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: "p"}
	if grace != nil {
		now := metav1.Now()
		m.DeletionTimestamp, m.DeletionGracePeriodSeconds = &now, grace
	}
	return m
}
