package kubelet

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Readiness gates Ready; a failing liveness probe restarts the container.
func TestProbes(t *testing.T) {
	e := cluster(t)
	pod := servePod(t, "probed", "0.0.0.0:8080")
	c := &pod.Spec.Containers[0]
	c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}
	c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}},
		PeriodSeconds: 1, FailureThreshold: 1}
	c.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/sh", "-c", "test ! -e /tmp/dead"}}},
		PeriodSeconds: 1, FailureThreshold: 1}
	unready := servePod(t, "unready", "0.0.0.0:8080")
	unready.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt(9999)}},
		PeriodSeconds: 1}
	p := e.create(t, pod)
	u := e.create(t, unready)
	e.waitPod(t, p.Name, 60*time.Second, "Ready", isRunningReady)
	if out, err := e.exec(t, p.Name, "web", []string{"/bin/sh", "-c", "touch /tmp/dead"}); err != nil {
		t.Fatalf("exec: %q %v", out, err)
	}
	e.waitPod(t, p.Name, 60*time.Second, "a liveness restart", func(p *corev1.Pod) bool {
		return p.Status.ContainerStatuses[0].RestartCount == 1 && isRunningReady(p)
	})
	u = e.waitPod(t, u.Name, 30*time.Second, "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	time.Sleep(3 * time.Second) // several readiness periods
	u = e.waitPod(t, u.Name, 5*time.Second, "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	if isRunningReady(u) || u.Status.ContainerStatuses[0].Ready {
		t.Fatalf("a pod whose readiness probe fails is Ready: %+v", u.Status.Conditions)
	}
}
