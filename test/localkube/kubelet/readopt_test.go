package kubelet

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// A container re-adopted after a kubelet restart keeps running, and when it is
// killed its real exit status is reported, not ContainerStatusUnknown.
func TestReadoptedContainerReportsItsExit(t *testing.T) {
	e := cluster(t)
	p := e.create(t, shellPod("readopt", "exec sleep 3600"))
	e.waitPod(t, p.Name, 60*time.Second, "Running", isRunningReady)
	before, err := PodProcesses(e.cfg.Dir, testNS, p.Name)
	if err != nil || len(before) != 1 {
		t.Fatalf("PodProcesses: %v %v", before, err)
	}
	if err := e.stopKubelet(); err != nil {
		t.Fatal(err)
	}
	if err := e.startKubelet(); err != nil {
		t.Fatal(err)
	}
	after, _ := PodProcesses(e.cfg.Dir, testNS, p.Name)
	if len(after) != 1 || after[0] != before[0] {
		t.Fatalf("processes %v -> %v after the kubelet restart, want the same", before, after)
	}
	// The Node outlives the kubelet, so startKubelet returns before the pod
	// worker recovered: a kill before the re-adoption is a container that
	// ended while no kubelet watched (its status lost, as in Kubernetes).
	pid := fmt.Sprintf(`"pid":%d,`, before[0])
	readopted := func() bool {
		b, _ := os.ReadFile(filepath.Join(e.root, "kubelet.log"))
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, pid) && strings.Contains(line, "re-adopted running container") {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(30 * time.Second); !readopted(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the restarted kubelet did not log the re-adoption of pid %d", before[0])
		}
	}
	if err := syscall.Kill(-before[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	got := e.waitPod(t, p.Name, 60*time.Second, "restarted", func(p *corev1.Pod) bool {
		s := p.Status.ContainerStatuses[0]
		return s.RestartCount == 1 && s.LastTerminationState.Terminated != nil
	})
	last := got.Status.ContainerStatuses[0].LastTerminationState.Terminated
	if last.ExitCode != 137 || last.Reason != "Error" || last.Signal != 9 {
		t.Fatalf("last state %+v, want exit 137, reason Error, signal 9", last)
	}
}
