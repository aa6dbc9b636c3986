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
	"github.com/mgors/operator/test/localkube/fault"
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

// injector is the fault package's Injector for the test's cluster, logging into
// the test's log.
func (e *Env) injector(tb testing.TB) *fault.Injector {
	return &fault.Injector{Dir: e.Dir, Client: e.Client, Log: Logger(tb)}
}

func faultCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), time.Minute)
}

// KillPod SIGKILLs every container process of the pod, like a crash of its node's
// processes: no API call reaches the kubelet, which sees the containers die.
func (e *Env) KillPod(tb testing.TB, namespace, name string) {
	tb.Helper()
	ctx, cancel := faultCtx()
	defer cancel()
	ev, err := e.injector(tb).Kill(ctx, namespace, name, "")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Log(ev)
}

// StopPod freezes every container process of the pod (SIGSTOP): it keeps its
// connections but answers nothing, like a hung process. The test's cleanup
// resumes it.
func (e *Env) StopPod(tb testing.TB, namespace, name string) {
	tb.Helper()
	ctx, cancel := faultCtx()
	defer cancel()
	ev, err := e.injector(tb).Pause(ctx, namespace, name)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Log(ev)
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
	tb.Helper()
	ctx, cancel := faultCtx()
	defer cancel()
	ev, err := e.injector(tb).Resume(ctx, namespace, name)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Log(ev)
}

// Partition cuts the network between two pods of the test's namespace (by pod
// IP, both directions) until Heal or the end of the test. The rules are tagged with
// the namespace, so one test's Heal leaves another test's partitions alone.
func (e *Env) Partition(tb testing.TB, podA, podB string) {
	tb.Helper()
	if e.Namespace == "" {
		tb.Fatal("Partition needs the namespace of harness.Cluster")
	}
	ctx, cancel := faultCtx()
	defer cancel()
	if err := e.injector(tb).Partition(ctx, e.Namespace, e.Namespace, []string{podA}, []string{podB}); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { e.Heal(tb) })
}

// Heal removes the partitions this test made (other tests' stay).
func (e *Env) Heal(tb testing.TB) {
	tb.Helper()
	ctx, cancel := faultCtx()
	defer cancel()
	if err := e.injector(tb).Heal(ctx, e.Namespace); err != nil {
		tb.Fatal(err)
	}
}

// RestartControlPlane stops etcd, the API server, the controller manager and the
// scheduler and starts them again with their data; pods and kubelets keep running.
// It returns when the cluster is ready again. Every test binary that shares the
// cluster sees the outage: a test that calls it should run alone (`go test -run`,
// or against a cluster of its own through LOCALKUBE_DIR).
func (e *Env) RestartControlPlane(tb testing.TB) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ev, err := e.injector(tb).RestartControlPlane(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Log(ev)
}

// Resolver resolves cluster names (for example "NAME.NS.svc.cluster.local") through
// the cluster's CoreDNS, as a pod would.
func (e *Env) Resolver() *net.Resolver { return cluster.Resolver() }

// String names the environment in test logs.
func (e *Env) String() string { return fmt.Sprintf("localkube %s ns=%s", e.Dir, e.Namespace) }
