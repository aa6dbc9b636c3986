package fault_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/mgors/operator/test/localkube/cluster"
	"github.com/mgors/operator/test/localkube/fault"
	"github.com/mgors/operator/test/localkube/harness"
	"github.com/mgors/operator/test/localkube/kubelet"
)

func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }

// eventually polls cond; the deadline bounds waiting for controllers and kubelets,
// it is not what the test asserts.
func eventually(t *testing.T, what string, limit time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// web serves / over HTTP on 8080 with the host's python3 (an image the kubelet
// does not know runs on the host's root), with an HTTP readiness probe: a frozen
// process still completes TCP handshakes but never answers a request.
func web() corev1.Container {
	return corev1.Container{
		Name:    "web",
		Image:   "python:3",
		Command: []string{"python3", "-m", "http.server", "8080", "--directory", "/"},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080)}},
			PeriodSeconds:    1,
			TimeoutSeconds:   1,
			FailureThreshold: 1,
		},
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// fixture is a cluster of this test's own.
type fixture struct {
	t         *testing.T
	dir, repo string
	localkube string
	cs        kubernetes.Interface
	ns        string
}

func (f *fixture) localkubeCmd(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, f.localkube, args...)
	cmd.Dir = f.repo
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (f *fixture) pod(ctx context.Context, name string) *corev1.Pod {
	f.t.Helper()
	p, err := f.cs.CoreV1().Pods(f.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return p
}

func (f *fixture) waitReady(ctx context.Context, name string, want bool) {
	f.t.Helper()
	eventually(f.t, fmt.Sprintf("pod %s Ready=%v", name, want), 2*time.Minute, func() error {
		p, err := f.cs.CoreV1().Pods(f.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if podReady(p) != want {
			return fmt.Errorf("Ready=%v", podReady(p))
		}
		return nil
	})
}

// reach reports whether pod from gets an HTTP answer from pod to's address.
func (f *fixture) reach(from, toIP string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(f.dir, "bin", "kubectl"), "--kubeconfig", filepath.Join(f.dir, "kubeconfig"),
		"-n", f.ns, "exec", from, "-c", "web", "--", "python3", "-c",
		"import urllib.request as u; u.urlopen('http://"+toIP+":8080/', timeout=2); print('ok')").CombinedOutput()
	return err == nil && strings.Contains(string(out), "ok")
}

func restarts(p *corev1.Pod, container string) int32 {
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == container {
			return s.RestartCount
		}
	}
	return -1
}

// TestFaultVerbs runs every fault once against a cluster of its own (node-down and
// the control-plane restart would disturb tests sharing a cluster).
func TestFaultVerbs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: localkube runs a bridge, nftables and namespaces")
	}
	localkube := harness.Exclusive(t)
	repo, err := cluster.FindRepo(".")
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(repo, ".cache", "localkube", "harness")
	dir, err := os.MkdirTemp(root, "fault-")
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, dir: dir, repo: repo, localkube: localkube, ns: "default"}
	t.Cleanup(func() {
		if out, err := f.localkubeCmd("down", "--dir", dir, "--purge"); err != nil {
			t.Errorf("down: %v\n%s", err, out)
		}
		_ = os.Remove(dir)
	})
	if out, err := f.localkubeCmd("up", "--dir", dir, "--nodes", "2"); err != nil {
		t.Fatalf("up: %v\n%s", err, out)
	}
	inj, err := fault.New(dir, harness.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	f.cs = inj.Client
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	onNode := func(name, node string, extra ...corev1.Container) {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       corev1.PodSpec{Containers: append([]corev1.Container{web()}, extra...)},
		}
		if node != "" {
			p.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": node}
		}
		if _, err := f.cs.CoreV1().Pods(f.ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	sidecar := corev1.Container{Name: "side", Image: "busybox", Command: []string{"sleep", "3600"}}
	onNode("a", "localkube-1", sidecar)
	onNode("b", "localkube-1")
	onNode("c", "localkube-2")
	onNode("d", "localkube-2")
	onNode("e", "localkube-2")
	for _, p := range []string{"a", "b", "c", "d", "e"} {
		f.waitReady(ctx, p, true)
	}

	t.Run("kill", func(t *testing.T) { testKill(ctx, t, f, inj) })
	t.Run("pause", func(t *testing.T) { testPause(ctx, t, f, inj) })
	t.Run("partition", func(t *testing.T) { testPartition(ctx, t, f, inj) })
	t.Run("node-down", func(t *testing.T) { testNodeDownUp(ctx, t, f, inj) })
}

func testKill(ctx context.Context, t *testing.T, f *fixture, inj *fault.Injector) {
	ev, err := inj.Kill(ctx, f.ns, "a", "side")
	if err != nil {
		t.Fatal(err)
	}
	t.Log(ev)
	if !strings.Contains(ev, "container side pid ") || strings.Contains(ev, "container web") {
		t.Errorf("evidence %q: want the side container's pid only", ev)
	}
	eventually(t, "side restarted", 2*time.Minute, func() error {
		p := f.pod(ctx, "a")
		if restarts(p, "side") < 1 || !podReady(p) {
			return fmt.Errorf("statuses %+v", p.Status.ContainerStatuses)
		}
		return nil
	})
	if n := restarts(f.pod(ctx, "a"), "web"); n != 0 {
		t.Errorf("killing container side restarted web %d times", n)
	}
	for _, bad := range []struct{ pod, container, says string }{
		{"nosuch", "", "no pod default/nosuch"},
		{"a", "nosuch", `has no container "nosuch" (it has web, side)`},
	} {
		if _, err := inj.Kill(ctx, f.ns, bad.pod, bad.container); err == nil || !strings.Contains(err.Error(), bad.says) {
			t.Errorf("Kill(%s, %q) = %v, want an error saying %q", bad.pod, bad.container, err, bad.says)
		}
	}
	// The command line says the same to a person, with a non-zero exit.
	out, err := f.localkubeCmd("fault", "kill", "nosuch", "--dir", f.dir)
	if err == nil || !strings.Contains(out, "no pod default/nosuch") {
		t.Errorf("localkube fault kill nosuch: %v\n%s", err, out)
	}
}

func testPause(ctx context.Context, t *testing.T, f *fixture, inj *fault.Injector) {
	ev, err := inj.Pause(ctx, f.ns, "b")
	if err != nil {
		t.Fatal(err)
	}
	t.Log(ev)
	if !strings.Contains(ev, "(state T)") {
		t.Errorf("pause evidence %q lacks the stopped state", ev)
	}
	f.waitReady(ctx, "b", false)
	ev, err = inj.Resume(ctx, f.ns, "b")
	if err != nil {
		t.Fatal(err)
	}
	t.Log(ev)
	if strings.Contains(ev, "T)") {
		t.Errorf("resume evidence %q still shows a stopped process", ev)
	}
	f.waitReady(ctx, "b", true)
	if n := restarts(f.pod(ctx, "b"), "web"); n != 0 {
		t.Errorf("a paused and resumed container was restarted %d times", n)
	}
}

func testPartition(ctx context.Context, t *testing.T, f *fixture, inj *fault.Injector) {
	ip := map[string]string{}
	for _, p := range []string{"a", "b", "c"} {
		ip[p] = f.pod(ctx, p).Status.PodIP
	}
	if !f.reach("a", ip["b"]) || !f.reach("a", ip["c"]) {
		t.Fatal("a does not reach b and c before the partition")
	}
	// Pod a cut off from b and c: across Nodes and on one Node.
	if err := inj.Partition(ctx, "t-cut", f.ns, []string{"a"}, []string{"b", "c"}); err != nil {
		t.Fatal(err)
	}
	if f.reach("a", ip["b"]) || f.reach("a", ip["c"]) || f.reach("c", ip["a"]) {
		t.Error("a still talks to b or c across the partition")
	}
	if !f.reach("b", ip["c"]) {
		t.Error("the partition of a cut b from c too")
	}
	drops, err := inj.Drops(ctx, "t-cut")
	if err != nil || drops == 0 {
		t.Errorf("Drops = %d, %v: want packets counted", drops, err)
	}
	t.Logf("partition t-cut dropped %d packets", drops)
	out, err := f.localkubeCmd("fault", "heal", "--dir", f.dir, "--tag", "t-cut")
	if err != nil || !strings.Contains(out, "healed partition t-cut") {
		t.Fatalf("localkube fault heal: %v\n%s", err, out)
	}
	t.Log(strings.TrimSpace(out))
	if !f.reach("a", ip["b"]) || !f.reach("c", ip["a"]) {
		t.Error("a is still cut off after heal")
	}
	if _, err := inj.Drops(ctx, "t-cut"); !errors.Is(err, fault.ErrNoPartition) {
		t.Errorf("Drops after heal: %v, want ErrNoPartition", err)
	}
}

// mounted reports whether a path is a mount point, from /proc/self/mountinfo.
func mounted(path string) bool {
	fh, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	defer func() { _ = fh.Close() }()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) > 4 && fields[4] == path {
			return true
		}
	}
	return false
}

func kubeletRunning(t *testing.T, dir, node string) bool {
	st, err := cluster.Status(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range st {
		if c.Name == "kubelet-"+node {
			return c.Running
		}
	}
	return false
}

func testNodeDownUp(ctx context.Context, t *testing.T, f *fixture, inj *fault.Injector) {
	const node = "localkube-2"
	d, e := f.pod(ctx, "d"), f.pod(ctx, "e")
	netns := filepath.Join(f.dir, "nodes", node, "pods", string(d.UID), "netns")
	if !mounted(netns) {
		t.Fatalf("pod d's network namespace %s is not pinned before node-down", netns)
	}
	aPIDs, err := kubelet.PodProcesses(f.dir, f.ns, "a")
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	ev, err := inj.NodeDown(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(ev)
	if kubeletRunning(t, f.dir, node) {
		t.Error("the kubelet of the downed Node runs")
	}
	for _, p := range []string{"c", "d", "e"} {
		if pids, err := kubelet.PodProcesses(f.dir, f.ns, p); err != nil || len(pids) > 0 {
			t.Errorf("pod %s on the downed Node: processes %v (%v)", p, pids, err)
		}
	}
	if mounted(netns) {
		t.Error("pod d's network namespace survived node-down")
	}
	if _, err := inj.NodeDown(ctx, node); err == nil || !strings.Contains(err.Error(), "already down") {
		t.Errorf("a second node-down: %v", err)
	}
	if out, err := f.localkubeCmd("fault", "node-down", "localkube-9", "--dir", f.dir); err == nil || !strings.Contains(out, `no Node "localkube-9"`) {
		t.Errorf("node-down of an unknown Node: %v\n%s", err, out)
	}

	// `up` and a control-plane restart leave the Node down.
	if out, err := f.localkubeCmd("up", "--dir", f.dir); err != nil {
		t.Fatalf("up with a Node down: %v\n%s", err, out)
	}
	ev, err = inj.RestartControlPlane(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(ev)
	if kubeletRunning(t, f.dir, node) {
		t.Error("up or the control-plane restart started the downed Node's kubelet")
	}
	if pids, _ := kubelet.PodProcesses(f.dir, f.ns, "d"); len(pids) > 0 {
		t.Errorf("pod d runs again (%v) while its Node is down", pids)
	}
	if now, err := kubelet.PodProcesses(f.dir, f.ns, "a"); err != nil || fmt.Sprint(now) != fmt.Sprint(aPIDs) {
		t.Errorf("pod a's processes %v before the control-plane restart, %v after (%v)", aPIDs, now, err)
	}

	// The node lifecycle controller notices the Lease is no longer renewed.
	eventually(t, "Node NotReady", 3*time.Minute, func() error {
		n, err := f.cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if nodeReady(n) {
			return errors.New("still Ready")
		}
		return nil
	})
	t.Logf("Node %s NotReady %s after node-down (a control-plane restart in between)", node, time.Since(began).Round(time.Second))
	f.waitReady(ctx, "d", false)
	if p := f.pod(ctx, "d"); p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		t.Errorf("pod d on the NotReady Node: phase %s, deleting %v; want it left Running", p.Status.Phase, p.DeletionTimestamp)
	}

	// A pod force-deleted while its Node is down is cleaned up when it returns.
	zero := int64(0)
	if err := f.cs.CoreV1().Pods(f.ns).Delete(ctx, "e", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	eDir := filepath.Join(f.dir, "nodes", node, "pods", string(e.UID))
	if _, err := os.Stat(eDir); err != nil {
		t.Fatalf("pod e's directory before node-up: %v", err)
	}

	out, err := f.localkubeCmd("fault", "node-up", node, "--dir", f.dir)
	if err != nil {
		t.Fatalf("node-up: %v\n%s", err, out)
	}
	t.Log(strings.TrimSpace(out))
	n, err := f.cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil || !nodeReady(n) {
		t.Errorf("Node after node-up: ready=%v (%v)", err == nil && nodeReady(n), err)
	}
	f.waitReady(ctx, "d", true)
	if pids, err := kubelet.PodProcesses(f.dir, f.ns, "d"); err != nil || len(pids) == 0 {
		t.Errorf("pod d after node-up: processes %v (%v)", pids, err)
	}
	if ip := f.pod(ctx, "d").Status.PodIP; ip != d.Status.PodIP {
		t.Errorf("pod d's IP %s before node-down, %s after node-up", d.Status.PodIP, ip)
	}
	eventually(t, "force-deleted pod e cleaned up", time.Minute, func() error {
		if _, err := os.Stat(eDir); !os.IsNotExist(err) {
			return fmt.Errorf("%s still there (stat: %w)", eDir, err)
		}
		return nil
	})
	if err := inj.NodeUp(ctx, node); err == nil || !strings.Contains(err.Error(), "not down") {
		t.Errorf("node-up of a running Node: %v", err)
	}
}
