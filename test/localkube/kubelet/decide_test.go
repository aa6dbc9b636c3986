package kubelet

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// A pod whose sandbox was recreated runs again from the start: its init
// container first, although its app container ran before, and without back-off.
func TestDecideRerunsInitContainersOfARecreatedSandbox(t *testing.T) {
	now := time.Now()
	spec := &corev1.PodSpec{
		RestartPolicy:  corev1.RestartPolicyAlways,
		InitContainers: []corev1.Container{{Name: "init"}},
		Containers:     []corev1.Container{{Name: "app"}},
	}
	ended := &termination{ExitCode: 137, FinishedAt: now}
	obs := map[string]*observed{
		"init": {Current: &termination{ExitCode: 0, FinishedAt: now}, Rerun: true},
		"app":  {Current: ended, RestartCount: 4, Rerun: true},
	}
	p := decide(spec, obs, now)
	if len(p.Start) != 1 || p.Start[0] != "init" {
		t.Fatalf("start %v, want the init container first", p.Start)
	}
	obs["init"] = &observed{Current: &termination{ExitCode: 0, FinishedAt: now}}
	p = decide(spec, obs, now)
	if len(p.Start) != 1 || p.Start[0] != "app" {
		t.Fatalf("start %v, want the app without back-off once init succeeded", p.Start)
	}
}
