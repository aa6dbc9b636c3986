package harness_test

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgors/operator/test/localkube/cluster"
	"github.com/mgors/operator/test/localkube/harness"
)

func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// eventually polls cond until it holds; the deadline bounds waiting for
// controllers, it is not what the test asserts.
func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
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

func TestClusterServesAPIAndDNS(t *testing.T) {
	env := harness.Cluster(t)
	ctx := ctxFor(t)
	cs := env.Client

	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		ready := false
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				ready = true
			}
		}
		if !ready {
			t.Errorf("node %s is not Ready", n.Name)
		}
	}

	// Objects that controllers and bootstrap create in any cluster.
	eventually(t, "default ServiceAccount in the test namespace", func() error {
		_, err := cs.CoreV1().ServiceAccounts(env.Namespace).Get(ctx, "default", metav1.GetOptions{})
		return err
	})
	eventually(t, "kube-root-ca.crt in the test namespace", func() error {
		_, err := cs.CoreV1().ConfigMaps(env.Namespace).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return err
	})
	sc, err := cs.StorageV1().StorageClasses().Get(ctx, cluster.StorageClass, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Annotations["storageclass.kubernetes.io/is-default-class"] != "true" {
		t.Errorf("StorageClass %s is not the default", sc.Name)
	}
	dns, err := cs.CoreV1().Services("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if dns.Spec.ClusterIP != cluster.DNSServiceIP {
		t.Errorf("kube-dns cluster IP %s, want %s", dns.Spec.ClusterIP, cluster.DNSServiceIP)
	}

	// TokenRequest works for service accounts (no legacy token Secrets).
	tok, err := cs.CoreV1().ServiceAccounts(env.Namespace).CreateToken(ctx, "default",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tok.Status.Token == "" {
		t.Error("empty token")
	}

	// CoreDNS answers for a Service created now.
	svc, err := cs.CoreV1().Services(env.Namespace).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	name := "web." + env.Namespace + ".svc." + cluster.ClusterDomain
	eventually(t, "resolve "+name, func() error {
		addrs, err := env.Resolver().LookupHost(ctx, name)
		if err != nil {
			return err
		}
		if len(addrs) != 1 || addrs[0] != svc.Spec.ClusterIP {
			t.Fatalf("%s resolved to %v, want [%s]", name, addrs, svc.Spec.ClusterIP)
		}
		return nil
	})
}

func pids(t *testing.T, dir string) map[string]int {
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

func TestUpAgainLeavesRunningPartsAlone(t *testing.T) {
	env := harness.Shared(t)
	before := pids(t, env.Dir)
	for _, c := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "coredns", "provisioner", "loadbalancer"} {
		if before[c] == 0 {
			t.Fatalf("%s is not running: %v", c, before)
		}
	}
	out, err := exec.Command(harness.Localkube(t), "up", "--dir", env.Dir).CombinedOutput()
	if err != nil {
		t.Fatalf("second up: %v\n%s", err, out)
	}
	after := pids(t, env.Dir)
	for c, pid := range before {
		if after[c] != pid {
			t.Errorf("%s: pid %d before the second up, %d after", c, pid, after[c])
		}
	}
}
