package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/test/localkube/harness"
	"github.com/mgors/operator/test/secretscan"
)

func getSecret(t *testing.T, env *harness.Env, name string) (*corev1.Secret, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return env.Client.CoreV1().Secrets(env.Namespace).Get(ctx, name, metav1.GetOptions{})
}

func waitSecret(t *testing.T, env *harness.Env, name, what string, cond func(*corev1.Secret, error) bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, 2*time.Minute, true, func(context.Context) (bool, error) {
		return cond(getSecret(t, env, name)), nil
	})
	if err != nil {
		s, gerr := getSecret(t, env, name)
		if gerr == nil {
			t.Fatalf("Secret %s %s: %v; finalizers %v, deleting %v", name, what, err, s.Finalizers, s.DeletionTimestamp)
		}
		t.Fatalf("Secret %s %s: %v (%v)", name, what, err, gerr)
	}
}

// The keyfile Secret of a Healthy set is deleted: the finalizer holds it, the
// set stays Healthy with the SecretDeletionHeld problem shown, and only the
// Mgors' deletion lets it go (and unprotects the credentials, which reclaim
// Retain keeps).
func TestKeyfileSecretDeletedIsHeld(t *testing.T) {
	t.Parallel()
	env := harness.Cluster(t)
	deployOperator(t, env)
	ctx := context.Background()
	m := sample(t, env, "mgors-dev-1.yaml", nil)
	if _, err := mgorsClient(t, env).Mgorses(env.Namespace).Create(ctx, m, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitMgors(t, env, m.Name, "Healthy", 5*time.Minute, func(m *v1alpha1.Mgors) bool { return m.Status.Phase == v1alpha1.PhaseHealthy })
	for _, name := range kube.SecretNames(m) {
		waitSecret(t, env, name, "protected", func(s *corev1.Secret, err error) bool { return err == nil && kube.Protected(s) })
	}
	if err := env.Client.CoreV1().Secrets(env.Namespace).Delete(ctx, m.KeyfileSecretName(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got := waitMgors(t, env, m.Name, "Stalled SecretDeletionHeld", 2*time.Minute, func(m *v1alpha1.Mgors) bool {
		c := condition(m, v1alpha1.ConditionStalled)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == "SecretDeletionHeld"
	})
	if got.Status.Phase != v1alpha1.PhaseHealthy {
		t.Errorf("phase %s while the keyfile deletion is held, want Healthy", got.Status.Phase)
	}
	s, err := getSecret(t, env, m.KeyfileSecretName())
	if err != nil || s.DeletionTimestamp == nil || len(s.Data[v1alpha1.KeyfileSecretKey]) == 0 {
		t.Fatalf("the keyfile Secret is not held with its key: %v", err)
	}
	if err := mgorsClient(t, env).Mgorses(env.Namespace).Delete(ctx, m.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSecret(t, env, m.KeyfileSecretName(), "gone with the Mgors", func(_ *corev1.Secret, err error) bool { return apierrors.IsNotFound(err) })
	waitSecret(t, env, m.AdminSecretName(), "kept (reclaim Retain) and unprotected", func(s *corev1.Secret, err error) bool {
		return err == nil && !kube.Protected(s) && s.DeletionTimestamp == nil
	})
}

// The namespaced install (deploy/namespaced, in the test's namespace, the
// CRD applied apart) brings a set to Healthy with a Role only; its
// ServiceAccount can do nothing outside the namespace. The cluster-wide
// operator is scaled to zero meanwhile, so that only the namespaced one acts.
func TestNamespacedInstall(t *testing.T) {
	env := harness.Cluster(t)
	installCRD(t, env)
	ctx := context.Background()
	withoutOperator(t, env)
	kubectlBin := filepath.Join(env.Dir, "bin", "kubectl")
	out, err := exec.CommandContext(ctx, kubectlBin, "kustomize", filepath.Join(repo(t), "deploy", "namespaced")).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize deploy/namespaced: %v", err)
	}
	manifests := strings.ReplaceAll(string(out), "mgors-db", env.Namespace)
	mustKubectl(t, env, manifests, "apply", "--server-side", "-f", "-")
	if out, err := kubectl(t, env, "", "-n", env.Namespace, "rollout", "status", "deployment/mgors-operator", "--timeout=180s"); err != nil {
		logs, _ := kubectl(t, env, "", "-n", env.Namespace, "logs", "deployment/mgors-operator", "--tail=50")
		t.Fatalf("the namespaced operator did not become available: %v\n%s\n%s", err, out, logs)
	}
	sa := "system:serviceaccount:" + env.Namespace + ":mgors-operator"
	for _, q := range [][]string{
		{"list", "secrets", "--all-namespaces"},
		{"get", "nodes"},
		{"create", "customresourcedefinitions"},
		{"get", "secrets", "-n", "mgors-system"},
	} {
		// The answer is the last line (kubectl may warn before it).
		out, _ := kubectl(t, env, "", append([]string{"auth", "can-i", "--as=" + sa}, q...)...)
		if lines := strings.Split(strings.TrimSpace(out), "\n"); lines[len(lines)-1] != "no" {
			t.Errorf("the namespaced operator may %v: %s", q, out)
		}
	}
	m := sample(t, env, "mgors-dev-1.yaml", nil)
	if _, err := mgorsClient(t, env).Mgorses(env.Namespace).Create(ctx, m, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitMgors(t, env, m.Name, "Healthy under the namespaced install", 5*time.Minute, func(m *v1alpha1.Mgors) bool {
		return m.Status.Phase == v1alpha1.PhaseHealthy
	})
	// Its own log too, besides mgors-system's (which the harness scans).
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	secrets, err := secretscan.Secrets(sctx, env.Client, mgorsClient(t, env), env.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	texts, err := secretscan.Collect(sctx, env.Client, mgorsClient(t, env), env.Namespace, env.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range secretscan.Scan(texts, secrets) {
		t.Errorf("secret scan: %s", leak)
	}
	// The Mgors goes first, so that its operator releases the Secrets
	// before the namespace (and the operator with it) is deleted.
	if err := mgorsClient(t, env).Mgorses(env.Namespace).Delete(ctx, m.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSecret(t, env, m.KeyfileSecretName(), "unprotected after the Mgors went", func(s *corev1.Secret, err error) bool {
		return err == nil && !kube.Protected(s)
	})
}

// withoutOperator scales the cluster-wide operator, when an earlier test
// deployed it, to zero until the test ends: nothing else acts on (or writes
// the event log of) the test's Mgors.
func withoutOperator(t *testing.T, env *harness.Env) {
	t.Helper()
	out, err := kubectl(t, env, "", "-n", "mgors-system", "get", "deployment", "mgors-operator", "-o", "name")
	if err != nil || strings.TrimSpace(out) == "" {
		return
	}
	mustKubectl(t, env, "", "-n", "mgors-system", "scale", "deployment/mgors-operator", "--replicas=0")
	t.Cleanup(func() {
		mustKubectl(t, env, "", "-n", "mgors-system", "scale", "deployment/mgors-operator", "--replicas=2")
		mustKubectl(t, env, "", "-n", "mgors-system", "rollout", "status", "deployment/mgors-operator", "--timeout=180s")
	})
	waitGoneIn(t, env, "mgors-system", "pods", "app.kubernetes.io/name=mgors-operator")
}
