// Package e2e runs the operator against a real Kubernetes control plane
// (localkube) with mongod-sim members: deployed from deploy/ as a pod, as a
// user would run it.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/kube/client"
	"github.com/mgors/operator/test/localkube/harness"
)

// TestMain runs the tests on the shared cluster. A test that only creates
// Mgors in its own namespace for the operator deployed from deploy/ calls
// t.Parallel(), and runs beside the others (go test's -parallel, the number of
// cores, at a time) once the serial tests have ended. A serial test is one
// that stops or replaces that operator (pauseInClusterOperator,
// withoutOperator) or installs the CRD (installCRD): it must not overlap.
func TestMain(m *testing.M) {
	harness.CheckEachNamespace(scanForSecrets)
	os.Exit(harness.Main(m))
}

// repo is the repository root (tests run in test/e2e).
func repo(t testing.TB) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Clean(filepath.Join(wd, "..", ".."))
}

// kubectl runs the cluster's kubectl and returns its output.
func kubectl(t testing.TB, env *harness.Env, stdin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(env.Dir, "bin", "kubectl"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(env.Dir, "kubeconfig"))
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func mustKubectl(t testing.TB, env *harness.Env, stdin string, args ...string) string {
	t.Helper()
	out, err := kubectl(t, env, stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

var (
	deployOnce sync.Once
	deployErr  error
)

// deployOperator applies deploy/ (CRD, RBAC, the operator Deployment) once per
// test binary and waits until the operator is available.
func deployOperator(t *testing.T, env *harness.Env) {
	t.Helper()
	deployOnce.Do(func() {
		out, err := kubectl(t, env, "", "apply", "--server-side", "--force-conflicts", "-k", filepath.Join(repo(t), "deploy"))
		if err != nil {
			deployErr = fmt.Errorf("kubectl apply -k deploy: %w\n%s", err, out)
			return
		}
		out, err = kubectl(t, env, "", "-n", "mgors-system", "rollout", "status", "deployment/mgors-operator", "--timeout=180s")
		if err != nil {
			logs, _ := kubectl(t, env, "", "-n", "mgors-system", "logs", "deployment/mgors-operator", "--tail=50")
			deployErr = fmt.Errorf("the operator did not become available: %w\n%s\n%s", err, out, logs)
		}
	})
	if deployErr != nil {
		t.Fatal(deployErr)
	}
}

func mgorsClient(t testing.TB, env *harness.Env) client.Interface {
	c, err := client.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// sample reads a sample from deploy/samples into the test's namespace.
func sample(t testing.TB, env *harness.Env, file string, edit func(*v1alpha1.Mgors)) *v1alpha1.Mgors {
	b, err := os.ReadFile(filepath.Join(repo(t), "deploy", "samples", file))
	if err != nil {
		t.Fatal(err)
	}
	var m v1alpha1.Mgors
	if err := yaml.UnmarshalStrict(b, &m); err != nil {
		t.Fatal(err)
	}
	m.Namespace = env.Namespace
	if edit != nil {
		edit(&m)
	}
	return &m
}

// waitMgors polls the Mgors until cond holds, dumping the story if it never does.
func waitMgors(t *testing.T, env *harness.Env, name, what string, timeout time.Duration, cond func(*v1alpha1.Mgors) bool) *v1alpha1.Mgors {
	t.Helper()
	mc := mgorsClient(t, env)
	var last *v1alpha1.Mgors
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		m, err := mc.Mgorses(env.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // keep polling until the deadline
		}
		last = m
		return cond(m), nil
	})
	if err != nil {
		desc, _ := kubectl(t, env, "", "-n", env.Namespace, "describe", "mgors", name)
		pods, _ := kubectl(t, env, "", "-n", env.Namespace, "get", "pods,pvc", "-o", "wide")
		logs, _ := kubectl(t, env, "", "-n", "mgors-system", "logs", "deployment/mgors-operator", "--tail=80")
		t.Fatalf("%s: %v\nlast status: %+v\n%s\n%s\noperator log:\n%s", what, err, last, desc, pods, logs)
	}
	return last
}

func condition(m *v1alpha1.Mgors, typ string) *metav1.Condition {
	for i := range m.Status.Conditions {
		if m.Status.Conditions[i].Type == typ {
			return &m.Status.Conditions[i]
		}
	}
	return nil
}

// installCRD installs the Mgors, MgorsBackup and MgorsRestore CRDs from the binary's
// embedded copies, as the operator does at start.
func installCRD(t testing.TB, env *harness.Env) {
	t.Helper()
	ac, err := apiextensionsclient.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := kube.InstallCRD(ctx, ac, time.Minute); err != nil {
		t.Fatal(err)
	}
}

// The API server itself rejects every invalid input of the table, naming the
// field and the rule.
func TestAPIServerRejectsInvalidMgors(t *testing.T) {
	env := harness.Cluster(t)
	installCRD(t, env)
	for _, c := range invalidCases(t) {
		t.Run(c.name, func(t *testing.T) {
			out, err := c.apply(t, env)
			if err == nil {
				t.Fatalf("accepted; want an error on %s saying %q", c.field, c.rule)
			}
			if !strings.Contains(out, c.field) || !strings.Contains(out, c.rule) {
				t.Fatalf("error does not name the field %q and the rule %q:\n%s", c.field, c.rule, out)
			}
		})
	}
}

// kubectl explain and kubectl get mgo help a person.
func TestKubectlExplainAndGet(t *testing.T) {
	env := harness.Cluster(t)
	installCRD(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out string
	var err error
	// The OpenAPI of a new CRD is published shortly after it is Established.
	_ = wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(context.Context) (bool, error) {
		out, err = kubectl(t, env, "", "explain", "mgors.spec.storage")
		return err == nil, nil
	})
	for _, want := range []string{"reclaim", "Retain", "storageClassName", "cannot change once set"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl explain mgors.spec.storage lacks %q:\n%s", want, out)
		}
	}
	out = mustKubectl(t, env, "", "explain", "mgors.spec")
	for _, want := range []string{"members", "recovery", "memberOptions", "paused"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl explain mgors.spec lacks %q", want)
		}
	}
	m := sample(t, env, "mgors-dev-1.yaml", nil)
	m.Spec.Paused = true // no operator needed: only the columns are looked at
	if _, err := mgorsClient(t, env).Mgorses(env.Namespace).Create(ctx, m, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	out = mustKubectl(t, env, "", "-n", env.Namespace, "get", "mgo")
	for _, col := range []string{"NAME", "PHASE", "READY", "PRIMARY", "AGE", "dev"} {
		if !strings.Contains(out, col) {
			t.Errorf("kubectl get mgo lacks %q:\n%s", col, out)
		}
	}
}

// The operator, deployed from deploy/ as a pod, takes the 3-member sample from
// apply to Healthy: one primary, members named by DNS; deleting it removes the
// pods and keeps the volumes (reclaim Retain, the default).
func TestOperatorBringsTheSampleToHealthy(t *testing.T) {
	t.Parallel()
	env := harness.Cluster(t)
	deployOperator(t, env)
	ctx := context.Background()
	m := sample(t, env, "mgors-3.yaml", nil)
	if _, err := mgorsClient(t, env).Mgorses(env.Namespace).Create(ctx, m, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := waitMgors(t, env, m.Name, "Healthy", 6*time.Minute, func(m *v1alpha1.Mgors) bool {
		return m.Status.Phase == v1alpha1.PhaseHealthy && m.Status.Primary != ""
	})
	if got.Status.Ready != "3/3" || len(got.Status.Members) != 3 {
		t.Fatalf("status: ready %s, members %+v", got.Status.Ready, got.Status.Members)
	}
	primaries := 0
	for i, ms := range got.Status.Members {
		want := fmt.Sprintf("demo-%d.demo-svc.%s.svc.cluster.local:27017", i, env.Namespace)
		if ms.Host != want || !ms.Healthy {
			t.Errorf("member %d: %+v, want host %s and healthy", i, ms, want)
		}
		if ms.State == "PRIMARY" {
			primaries++
		}
	}
	if primaries != 1 {
		t.Errorf("%d primaries", primaries)
	}
	for _, c := range []string{v1alpha1.ConditionReady, v1alpha1.ConditionInitialized} {
		if cond := condition(got, c); cond == nil || cond.Status != metav1.ConditionTrue {
			t.Errorf("condition %s: %+v", c, cond)
		}
	}
	if strings.Contains(got.Status.ConnectionString, "@") {
		t.Errorf("credentials in the status: %s", got.Status.ConnectionString)
	}
	out := mustKubectl(t, env, "", "-n", env.Namespace, "get", "mgo", m.Name)
	if !strings.Contains(out, "Healthy") || !strings.Contains(out, "3/3") || !strings.Contains(out, "demo-") {
		t.Errorf("kubectl get mgo:\n%s", out)
	}
	describeWith(t, env, m.Name, "PhaseChanged", "Initiated", "UserCreated")
	checkHealthMetrics(t, env, env.Namespace+"/"+m.Name)

	// A spec change that needs new pods rolls them one at a time: never more
	// than one member away, and the set is Healthy again at the new generation.
	cur, err := mgorsClient(t, env).Mgorses(env.Namespace).Get(ctx, m.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("20m")}
	if _, err := mgorsClient(t, env).Mgorses(env.Namespace).Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	maxAway := 0
	rolled := waitMgors(t, env, m.Name, "Healthy after a rolling restart", 6*time.Minute, func(x *v1alpha1.Mgors) bool {
		pods, err := env.Client.CoreV1().Pods(env.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + m.Name})
		if err != nil {
			return false
		}
		ready, updated := 0, 0
		for _, p := range pods.Items {
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
					ready++
				}
			}
			if q := p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; q.Cmp(resource.MustParse("20m")) == 0 {
				updated++
			}
		}
		maxAway = max(maxAway, 3-ready)
		return x.Status.ObservedGeneration == x.Generation && x.Status.Phase == v1alpha1.PhaseHealthy && updated == 3 && ready == 3
	})
	if maxAway > 1 {
		t.Errorf("the rolling restart took %d members away at once", maxAway)
	}
	if rolled.Status.Primary == "" {
		t.Errorf("no primary after the rolling restart")
	}

	// Delete: pods go, volumes stay.
	if err := mgorsClient(t, env).Mgorses(env.Namespace).Delete(ctx, m.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, env, "pods", "app.kubernetes.io/instance="+m.Name)
	pvcs := mustKubectl(t, env, "", "-n", env.Namespace, "get", "pvc", "-l", "app.kubernetes.io/instance="+m.Name, "-o", "name")
	if n := len(strings.Fields(pvcs)); n != 3 {
		t.Fatalf("reclaim Retain: %d volumes left, want 3:\n%s", n, pvcs)
	}
	// The credentials the kept data was made with stay too.
	for _, s := range []string{m.KeyfileSecretName(), m.AdminSecretName()} {
		if _, err := env.Client.CoreV1().Secrets(env.Namespace).Get(ctx, s, metav1.GetOptions{}); err != nil {
			t.Errorf("reclaim Retain: Secret %s: %v", s, err)
		}
	}
}

// With reclaim Delete the volumes go with the Mgors.
func TestReclaimDeleteRemovesVolumes(t *testing.T) {
	t.Parallel()
	env := harness.Cluster(t)
	deployOperator(t, env)
	ctx := context.Background()
	m := sample(t, env, "mgors-dev-1.yaml", func(m *v1alpha1.Mgors) { m.Spec.Storage.Reclaim = v1alpha1.VolumeDelete })
	if _, err := mgorsClient(t, env).Mgorses(env.Namespace).Create(ctx, m, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitMgors(t, env, m.Name, "Healthy", 5*time.Minute, func(m *v1alpha1.Mgors) bool { return m.Status.Phase == v1alpha1.PhaseHealthy })
	if err := mgorsClient(t, env).Mgorses(env.Namespace).Delete(ctx, m.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, env, "pods", "app.kubernetes.io/instance="+m.Name)
	waitGone(t, env, "pvc", "app.kubernetes.io/instance="+m.Name)
}

// A cluster that cannot make progress says why instead of waiting silently.
func TestStalledConditionsSayWhy(t *testing.T) {
	t.Parallel()
	env := harness.Cluster(t)
	deployOperator(t, env)
	ctx := context.Background()
	for _, tc := range []struct {
		name, reason string
		edit         func(*v1alpha1.Mgors)
	}{
		{"nosc", "StorageClassNotFound", func(m *v1alpha1.Mgors) {
			sc := "does-not-exist"
			m.Spec.Storage.StorageClassName = &sc
		}},
		{"nosched", "PodsUnschedulable", func(m *v1alpha1.Mgors) {
			m.Spec.Scheduling.NodeSelector = map[string]string{"mgors.io/no-such-node": "true"}
		}},
		// The API server's Priority admission refuses the pods: the
		// StatefulSet controller's FailedCreate Event says why.
		{"noprio", "PodCreateFailed", func(m *v1alpha1.Mgors) {
			m.Spec.Scheduling.PriorityClassName = "mgors-no-such-class"
		}},
	} {
		m := sample(t, env, "mgors-dev-1.yaml", func(m *v1alpha1.Mgors) { m.Name = tc.name; tc.edit(m) })
		if _, err := mgorsClient(t, env).Mgorses(env.Namespace).Create(ctx, m, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		got := waitMgors(t, env, tc.name, "Stalled "+tc.reason, 3*time.Minute, func(m *v1alpha1.Mgors) bool {
			c := condition(m, v1alpha1.ConditionStalled)
			return c != nil && c.Status == metav1.ConditionTrue && c.Reason == tc.reason
		})
		if got.Status.Phase != v1alpha1.PhaseProvisioning {
			t.Errorf("%s: phase %s, want Provisioning while stalled", tc.name, got.Status.Phase)
		}
	}
}

func waitGone(t *testing.T, env *harness.Env, kind, selector string) {
	t.Helper()
	waitGoneIn(t, env, env.Namespace, kind, selector)
}

func waitGoneIn(t *testing.T, env *harness.Env, ns, kind, selector string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, 3*time.Minute, true, func(context.Context) (bool, error) {
		out, err := kubectl(t, env, "", "-n", ns, "get", kind, "-l", selector, "-o", "name")
		return err == nil && strings.TrimSpace(out) == "", nil
	})
	if err != nil {
		out, _ := kubectl(t, env, "", "-n", ns, "get", kind, "-l", selector)
		t.Fatalf("%s %s in %s still there: %v\n%s", kind, selector, ns, err, out)
	}
}

// checkHealthMetrics scrapes the operator pods' /metrics through the API
// server's proxy until the leader reports the Healthy three-member set: a
// primary, three voters answering, one PRIMARY and two SECONDARY members. The
// manifests of deploy/monitoring that alert on these series must build.
func checkHealthMetrics(t *testing.T, env *harness.Env, cluster string) {
	t.Helper()
	if out, err := kubectl(t, env, "", "kustomize", filepath.Join(repo(t), "deploy", "monitoring")); err != nil {
		t.Errorf("kubectl kustomize deploy/monitoring: %v\n%s", err, out)
	}
	want := []string{
		`mgors_cluster_primary{cluster="` + cluster + `"} 1`,
		`mgors_cluster_voting_members{cluster="` + cluster + `"} 3`,
		`mgors_cluster_voting_members_answering{cluster="` + cluster + `"} 3`,
		`mgors_cluster_votes_needed{cluster="` + cluster + `"} 2`,
	}
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 2*time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := env.Client.CoreV1().Pods("mgors-system").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=mgors-operator"})
		if err != nil {
			return false, nil //nolint:nilerr // a failed list is tried again until the timeout
		}
		for _, p := range pods.Items {
			out, err := kubectl(t, env, "", "get", "--raw", "/api/v1/namespaces/mgors-system/pods/"+p.Name+":8080/proxy/metrics")
			if err != nil || !strings.Contains(out, `cluster="`+cluster+`"`) {
				continue
			}
			last = out
			primaries, secondaries := 0, 0
			for _, l := range strings.Split(out, "\n") {
				if strings.HasPrefix(l, `mgors_member_state{cluster="`+cluster+`"`) {
					primaries += strings.Count(l, `,state="PRIMARY"} 1`)
					secondaries += strings.Count(l, `,state="SECONDARY"} 1`)
				}
			}
			ok := primaries == 1 && secondaries == 2
			for _, w := range want {
				ok = ok && strings.Contains(out, w)
			}
			return ok, nil
		}
		return false, nil
	})
	if err != nil {
		var lines []string
		for _, l := range strings.Split(last, "\n") {
			if strings.HasPrefix(l, "mgors_cluster_") || strings.HasPrefix(l, "mgors_member_") {
				lines = append(lines, l)
			}
		}
		t.Errorf("the operator's metrics never showed the Healthy set (%v); its cluster series:\n%s", err, strings.Join(lines, "\n"))
	}
}
