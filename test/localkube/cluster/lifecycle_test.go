package cluster_test

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/mgors/operator/test/localkube/cluster"
	"github.com/mgors/operator/test/localkube/harness"
	"github.com/mgors/operator/test/localkube/kubelet"
)

func output(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return string(out)
}

// hostTrace is what a cluster could leave on the host.
type hostTrace struct {
	netns, tables, links string
}

func traceOf(t *testing.T) hostTrace {
	return hostTrace{
		netns:  output(t, "ip", "netns", "list"),
		tables: output(t, "nft", "list", "tables"),
		links:  output(t, "ip", "-o", "link", "show"),
	}
}

// TestDownLeavesNothingBehind starts a cluster of its own with a running pod, stops
// it, and checks the host: no process, mount, network namespace, link or nftables
// table of the cluster remains (nor a load-balancer listener), and `up` on the
// same directory brings back the objects it had and the load balancer's address.
func TestDownLeavesNothingBehind(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	localkube := harness.Exclusive(t)
	repo, err := cluster.FindRepo(".")
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(repo, ".cache", "localkube", "harness")
	dir, err := os.MkdirTemp(root, "lifecycle-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = exec.Command(localkube, "down", "--dir", dir, "--purge").Run()
		_ = os.Remove(dir) // still there, empty, if up failed before making anything
	})
	before := traceOf(t)

	up := func() {
		t.Helper()
		cmd := exec.Command(localkube, "up", "--dir", dir, "--nodes", "2")
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("up: %v\n%s", err, out)
		}
	}
	up()
	_, cs, err := cluster.Client(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "kept"}, Data: map[string]string{"k": "v"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "sleeper"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "sleep", Image: "busybox", Command: []string{"sleep", "3600"},
		}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSleeper(ctx, t, dir)
	lbAddr := loadBalancerAddress(ctx, t, cs)
	if !listens(lbAddr) {
		t.Errorf("the load balancer does not listen at %s", lbAddr)
	}
	if !strings.Contains(output(t, "ip", "-o", "link", "show", "master", cluster.Bridge), "master "+cluster.Bridge) {
		t.Fatal("the running pod has no veth on the bridge")
	}

	out, err := exec.Command(localkube, "down", "--dir", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("down: %v\n%s", err, out)
	}

	after := traceOf(t)
	if after.netns != before.netns {
		t.Errorf("network namespaces before up:\n%s\nafter down:\n%s", before.netns, after.netns)
	}
	for _, table := range []string{"inet localkube", "bridge localkube", "ip kube-proxy", "ip6 kube-proxy"} {
		if strings.Contains(after.tables, "table "+table+"\n") {
			t.Errorf("nftables table %s left behind", table)
		}
	}
	if strings.Contains(after.links, " "+cluster.Bridge+":") || strings.Contains(after.links, "master "+cluster.Bridge) {
		t.Errorf("links left behind:\n%s", after.links)
	}
	if mounts := output(t, "findmnt", "-rn", "-o", "TARGET"); strings.Contains(mounts, dir) {
		t.Errorf("mounts left under %s:\n%s", dir, mounts)
	}
	if ps := output(t, "ps", "-eo", "pid,args"); strings.Contains(ps, dir) {
		t.Errorf("processes left:\n%s", grepLines(ps, dir))
	}
	if listens(lbAddr) {
		t.Errorf("%s still accepts after down", lbAddr)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "etcd")); len(entries) == 0 {
		t.Error("down without --purge removed the etcd data")
	}

	// The same directory comes back with its objects.
	up()
	got, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "kept", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("after up again: %v", err)
	}
	if got.Data["k"] != "v" {
		t.Errorf("ConfigMap after up again: %v", got.Data)
	}
	// The load balancer, started again, finds its Service's address in the status
	// and listens there again.
	if again := loadBalancerAddress(ctx, t, cs); again != lbAddr {
		t.Errorf("load balancer address %s before down, %s after up", lbAddr, again)
	}
	for !listens(lbAddr) {
		if ctx.Err() != nil {
			t.Fatalf("the load balancer does not listen at %s after up", lbAddr)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// A restart of the control plane alone (what harness.RestartControlPlane does)
	// keeps the objects and the running pod.
	pidsBefore := waitSleeper(ctx, t, dir) // the kubelet restarts it after the down
	etcdBefore := running(t, dir)["etcd"]
	if err := cluster.StopControlPlane(dir); err != nil {
		t.Fatal(err)
	}
	up()
	if after := running(t, dir)["etcd"]; after == 0 || after == etcdBefore {
		t.Errorf("etcd pid %d before the restart, %d after", etcdBefore, after)
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "kept", metav1.GetOptions{}); err != nil {
		t.Errorf("after the control-plane restart: %v", err)
	}
	pidsAfter, err := kubelet.PodProcesses(dir, "default", "sleeper")
	if err != nil || len(pidsAfter) != 1 || pidsAfter[0] != pidsBefore[0] {
		t.Errorf("sleeper's process %v before the restart, %v after (%v)", pidsBefore, pidsAfter, err)
	}
}

// loadBalancerAddress creates (once) the Service of type LoadBalancer "front"
// and returns its ingress IP and port once the load balancer has given it one.
func loadBalancerAddress(ctx context.Context, t *testing.T, cs kubernetes.Interface) string {
	t.Helper()
	_, err := cs.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "front"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "none"},
			Ports: []corev1.ServicePort{{Port: 8080}}},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for {
		svc, err := cs.CoreV1().Services("default").Get(ctx, "front", metav1.GetOptions{})
		if err == nil && len(svc.Status.LoadBalancer.Ingress) == 1 && svc.Status.LoadBalancer.Ingress[0].IP != "" {
			return net.JoinHostPort(svc.Status.LoadBalancer.Ingress[0].IP, "8080")
		}
		if ctx.Err() != nil {
			t.Fatalf("Service front has no load-balancer address: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// listens: a TCP connection to addr is accepted (a listener without a backend
// closes it at once, after the accept).
func listens(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

func running(t *testing.T, dir string) map[string]int {
	t.Helper()
	st, err := cluster.Status(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, c := range st {
		if c.Running {
			out[c.Name] = c.PID
		}
	}
	return out
}

func grepLines(s, sub string) string {
	var b bytes.Buffer
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// waitSleeper waits until the sleeper pod's container runs and returns its pids.
func waitSleeper(ctx context.Context, t *testing.T, dir string) []int {
	t.Helper()
	for {
		pids, err := kubelet.PodProcesses(dir, "default", "sleeper")
		if err == nil && len(pids) > 0 {
			return pids
		}
		if ctx.Err() != nil {
			t.Fatalf("pod sleeper does not run: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
