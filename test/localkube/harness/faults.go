package harness

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"

	"github.com/mgors/operator/test/localkube/cluster"
	"github.com/mgors/operator/test/localkube/kubelet"
)

var notDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// createNamespace makes a namespace named after the test and deletes it (without
// waiting) when the test ends.
func createNamespace(t testing.TB, cs kubernetes.Interface) string {
	t.Helper()
	base := strings.Trim(notDNS.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(base) > 40 {
		base = strings.Trim(base[:40], "-")
	}
	name := base + "-" + rand.String(5)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:   name,
		Labels: map[string]string{"localkube.mgors.io/test": "true"},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := cs.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Logf("delete namespace %s: %v", name, err)
		}
	})
	return name
}

// signalPod sends sig to the process group of every container of a pod. It talks
// to no API: the kubelet finds out the way it would on a real node.
func (e *Env) signalPod(tb testing.TB, namespace, name string, sig syscall.Signal) {
	tb.Helper()
	pids, err := kubelet.PodProcesses(e.Dir, namespace, name)
	if err != nil {
		tb.Fatalf("pod %s/%s: %v", namespace, name, err)
	}
	if len(pids) == 0 {
		tb.Fatalf("pod %s/%s has no running container", namespace, name)
	}
	for _, pid := range pids {
		if err := syscall.Kill(-pid, sig); err != nil {
			tb.Fatalf("pod %s/%s: signal %v to group %d: %v", namespace, name, sig, pid, err)
		}
	}
}

// KillPod SIGKILLs every container process of the pod, like a crash of its node's
// processes: no API call, the kubelet sees the containers die.
func (e *Env) KillPod(tb testing.TB, namespace, name string) {
	e.signalPod(tb, namespace, name, syscall.SIGKILL)
}

// StopPod freezes every container process of the pod (SIGSTOP): it keeps its
// connections but answers nothing, like a hung process.
func (e *Env) StopPod(tb testing.TB, namespace, name string) {
	e.signalPod(tb, namespace, name, syscall.SIGSTOP)
	tb.Cleanup(func() {
		if pids, err := kubelet.PodProcesses(e.Dir, namespace, name); err == nil {
			for _, pid := range pids {
				_ = syscall.Kill(-pid, syscall.SIGCONT)
			}
		}
	})
}

// ResumePod continues a pod frozen by StopPod (SIGCONT).
func (e *Env) ResumePod(tb testing.TB, namespace, name string) {
	e.signalPod(tb, namespace, name, syscall.SIGCONT)
}

// Partition cuts the network between two pods of the test's namespace (by pod
// IP, both directions) until Heal or the end of the test.
func (e *Env) Partition(tb testing.TB, podA, podB string) {
	tb.Helper()
	if e.Namespace == "" {
		tb.Fatal("Partition needs the namespace of harness.Cluster")
	}
	a, b := e.podIP(tb, podA), e.podIP(tb, podB)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cluster.Partition(ctx, a, b, e.Namespace); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { e.Heal(tb) })
}

// Heal removes the partitions this test made (other tests' stay).
func (e *Env) Heal(tb testing.TB) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cluster.Heal(ctx, e.Namespace); err != nil {
		tb.Fatal(err)
	}
}

func (e *Env) podIP(tb testing.TB, name string) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pod, err := e.Client.CoreV1().Pods(e.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		tb.Fatalf("pod %s/%s: %v", e.Namespace, name, err)
	}
	if pod.Status.PodIP == "" {
		tb.Fatalf("pod %s/%s has no IP yet", e.Namespace, name)
	}
	return pod.Status.PodIP
}

// Resolver resolves cluster names (for example "NAME.NS.svc.cluster.local") through
// the cluster's CoreDNS, as a pod would.
func (e *Env) Resolver() *net.Resolver { return cluster.Resolver() }

// String names the environment in test logs.
func (e *Env) String() string { return fmt.Sprintf("localkube %s ns=%s", e.Dir, e.Namespace) }
