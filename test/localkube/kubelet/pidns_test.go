package kubelet

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Each container has a PID namespace of its own: ps shows its processes only,
// `kill 1` and `kill -9 1` inside do nothing to its PID 1 (a sleep), and neither
// the host's processes nor another pod's are visible or reachable.
func TestPIDNamespacePerContainer(t *testing.T) {
	e := cluster(t)
	a := shellPod("pid-a", "exec sleep 3600")
	b := shellPod("pid-b", "exec sleep 3607")
	e.create(t, a)
	e.create(t, b)
	e.waitPod(t, a.Name, 60*time.Second, "Running", isRunningReady)
	e.waitPod(t, b.Name, 60*time.Second, "Running", isRunningReady)
	hostA, err := PodProcesses(e.cfg.Dir, testNS, a.Name)
	if err != nil || len(hostA) != 1 {
		t.Fatalf("PodProcesses(pid-a): %v %v", hostA, err)
	}
	hostB, err := PodProcesses(e.cfg.Dir, testNS, b.Name)
	if err != nil || len(hostB) != 1 {
		t.Fatalf("PodProcesses(pid-b): %v %v", hostB, err)
	}
	out, err := e.exec(t, a.Name, "main", []string{"ps", "-e", "-o", "pid=,comm="})
	if err != nil {
		t.Fatalf("ps: %q %v", out, err)
	}
	var seen []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		seen = append(seen, strings.Join(strings.Fields(l), " "))
	}
	if len(seen) != 2 || seen[0] != "1 sleep" || !strings.HasSuffix(seen[1], " ps") {
		t.Fatalf("ps in the container shows %q, want its sleep as PID 1 and ps only", seen)
	}
	// Another pod's process and the test binary do not exist in here.
	for _, pid := range []int{hostB[0], syscall.Getpid()} {
		out, err := e.exec(t, a.Name, "main", []string{"/bin/sh", "-c", "kill -9 " + strconv.Itoa(pid) + " 2>&1; echo rc=$?"})
		if err != nil || !strings.Contains(out, "rc=1") {
			t.Fatalf("kill -9 %d from the container: %q %v, want it to fail", pid, out, err)
		}
	}
	out, err = e.exec(t, a.Name, "main", []string{"/bin/sh", "-c", "pkill -9 -f 'sleep [3]607'; echo rc=$?"})
	if err != nil || !strings.Contains(out, "rc=1") {
		t.Fatalf("pkill of the other pod's sleep from the container: %q %v, want no match", out, err)
	}
	if _, err := procStartTicks(hostB[0]); err != nil {
		t.Fatalf("the other pod's process %d died: %v", hostB[0], err)
	}
	// PID 1 gets no signal it does not handle from inside its namespace.
	if out, err := e.exec(t, a.Name, "main", []string{"/bin/sh", "-c", "kill 1; kill -9 1; echo sent"}); err != nil || out != "sent\n" {
		t.Fatalf("kill 1 in the container: %q %v", out, err)
	}
	if out, err := e.exec(t, a.Name, "main", []string{"cat", "/proc/1/cmdline"}); err != nil || out != "sleep\x003600\x00" {
		t.Fatalf("PID 1 after kill 1: %q %v, want the sleep still there", out, err)
	}
	after, _ := PodProcesses(e.cfg.Dir, testNS, a.Name)
	if len(after) != 1 || after[0] != hostA[0] {
		t.Fatalf("pid-a's process %v -> %v: want it untouched", hostA, after)
	}
	// From the node, the harness's SIGKILL to the process group still ends it.
	if err := syscall.Kill(-hostA[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p := e.waitPod(t, a.Name, 60*time.Second, "restarted", func(p *corev1.Pod) bool {
		return p.Status.ContainerStatuses[0].RestartCount == 1 && p.Status.ContainerStatuses[0].State.Running != nil
	})
	if last := p.Status.ContainerStatuses[0].LastTerminationState.Terminated; last == nil || last.ExitCode != 137 {
		t.Fatalf("last state %+v, want exit 137", p.Status.ContainerStatuses[0].LastTerminationState)
	}
}

// With shareProcessNamespace the pod's containers share one PID namespace whose
// PID 1 is the pod's pause process: a container sees and signals its sibling. The
// sibling killed that way is restarted at once, the first time, without
// CrashLoopBackOff: its new run starts within two seconds of the old one's end.
func TestSharedProcessNamespace(t *testing.T) {
	e := cluster(t)
	pod := shellPod("pid-shared", "exec sleep 3603")
	pod.Spec.ShareProcessNamespace = ptr.To(true)
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{
		Name: "sibling", Image: "debian:12", Command: []string{"/bin/sh", "-c", "exec sleep 3604"},
	})
	e.create(t, pod)
	e.waitPod(t, pod.Name, 60*time.Second, "Running", isRunningReady)
	if out, err := e.exec(t, pod.Name, "main", []string{"cat", "/proc/1/cmdline"}); err != nil || out != "/pause\x00" {
		t.Fatalf("PID 1 of the shared namespace: %q %v, want /pause", out, err)
	}
	out, err := e.exec(t, pod.Name, "main", []string{"pgrep", "-f", "sleep 3604"})
	if err != nil || strings.TrimSpace(out) == "" {
		t.Fatalf("the sibling's sleep is not visible: %q %v", out, err)
	}
	if out, err := e.exec(t, pod.Name, "main", []string{"pkill", "-f", "sleep 3604"}); err != nil {
		t.Fatalf("pkill of the sibling: %q %v", out, err)
	}
	p := e.waitPod(t, pod.Name, 60*time.Second, "sibling restarted", func(p *corev1.Pod) bool {
		for _, s := range p.Status.ContainerStatuses {
			if s.Name == "sibling" {
				return s.RestartCount == 1 && s.State.Running != nil
			}
		}
		return false
	})
	for _, s := range p.Status.ContainerStatuses {
		if s.Name != "sibling" {
			if s.RestartCount != 0 {
				t.Fatalf("container %s restarted %d times, want untouched", s.Name, s.RestartCount)
			}
			continue
		}
		last := s.LastTerminationState.Terminated
		if last == nil || last.ExitCode != 143 {
			t.Fatalf("sibling's last state %+v, want exit 143 (SIGTERM)", s.LastTerminationState)
		}
		// Times in the status have whole seconds: a gap of at most 1 s is under 2 s.
		if gap := s.State.Running.StartedAt.Sub(last.FinishedAt.Time); gap > time.Second {
			t.Fatalf("restarted %v after its exit (finished %v, started %v), want at once", gap, last.FinishedAt, s.State.Running.StartedAt)
		}
	}
}

// An exec probe that times out leaves nothing behind in the container: the command
// nsenter forked into its PID namespace ends with it.
func TestTimedOutExecEndsInTheContainer(t *testing.T) {
	e := cluster(t)
	pod := shellPod("pid-probe", "exec sleep 3600")
	pod.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{
		Command: []string{"sleep", "3605"}}}, TimeoutSeconds: 1, PeriodSeconds: 1}
	e.create(t, pod)
	e.waitPod(t, pod.Name, 60*time.Second, "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	// Three probe runs have timed out once the third Unhealthy event is there.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		evs, err := e.cs.CoreV1().Events(testNS).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=pid-probe,reason=Unhealthy"})
		cancel()
		if err == nil && len(evs.Items) > 0 && evs.Items[0].Count >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no three Unhealthy events: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	out, err := e.exec(t, pod.Name, "main", []string{"ps", "-e", "-o", "args="})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out, "sleep 3605"); n > 1 {
		t.Fatalf("timed-out probe commands left in the container:\n%s", out)
	}
}
