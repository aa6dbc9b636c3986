package kubelet

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// A container whose preStop hook used up the grace period, and one whose pod was
// force-deleted, still get SIGTERM with time to act on it before SIGKILL: the
// kubelet's 2 s minimum. Their handler needs 1.2 s, more than the 1 s a force
// delete leaves without that minimum.
func TestSIGTERMBeforeSIGKILLAlways(t *testing.T) {
	e := cluster(t)
	out := filepath.Join(e.root, "grace")
	if err := os.MkdirAll(out, 0o777); err != nil {
		t.Fatal(err)
	}
	pod := func(name string, preStop bool) *corev1.Pod {
		p := shellPod(name, "trap 'sleep 1.2; echo term > /out/"+name+"; exit 0' TERM; while true; do sleep 0.1; done")
		p.Spec.TerminationGracePeriodSeconds = ptr.To(int64(2))
		p.Spec.Volumes = []corev1.Volume{{Name: "out", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: out}}}}
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "out", MountPath: "/out"}}
		if preStop {
			p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
				Exec: &corev1.ExecAction{Command: []string{"sleep", "30"}}}}
		}
		return p
	}
	slow := e.create(t, pod("grace-prestop", true))
	forced := e.create(t, pod("grace-forced", false))
	e.waitPod(t, slow.Name, 60*time.Second, "Running", isRunningReady)
	e.waitPod(t, forced.Name, 60*time.Second, "Running", isRunningReady)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.cs.CoreV1().Pods(testNS).Delete(ctx, slow.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.cs.CoreV1().Pods(testNS).Delete(ctx, forced.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{slow.Name, forced.Name} {
		deadline := time.Now().Add(60 * time.Second)
		for {
			if _, err := PodProcesses(e.cfg.Dir, testNS, name); err != nil {
				break // the kubelet removed the pod
			}
			if time.Now().After(deadline) {
				t.Fatalf("pod %s was not removed from its node", name)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if b, err := os.ReadFile(filepath.Join(out, name)); err != nil || string(b) != "term\n" {
			t.Errorf("%s: the container's SIGTERM handler left %q (%v), want it run before SIGKILL", name, b, err)
		}
	}
}
