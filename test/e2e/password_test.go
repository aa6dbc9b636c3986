package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo"
	"github.com/mgors/operator/test/localkube/harness"
)

// A password changed in a user's Secret becomes the password in the
// database (issue: least privilege inside MongoDB): the admin Secret's, applied
// by the operator's own user, and the operator's own Secret's, which the
// operator applies as __system after its login is refused. The old passwords
// stop working, the changes are Events, and no password shows in them.
func TestChangedPasswordsAreApplied(t *testing.T) {
	t.Parallel()
	env := harness.Cluster(t)
	deployOperator(t, env)
	ctx := context.Background()
	m := sample(t, env, "mgors-dev-1.yaml", func(m *v1alpha1.Mgors) {
		m.Name = "pw"
		m.Spec.Storage.Reclaim = v1alpha1.VolumeDelete
	})
	if _, err := mgorsClient(t, env).Mgorses(env.Namespace).Create(ctx, m, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = mgorsClient(t, env).Mgorses(env.Namespace).Delete(context.Background(), m.Name, metav1.DeleteOptions{})
	})
	healthy := waitMgors(t, env, m.Name, "Healthy", 6*time.Minute, func(m *v1alpha1.Mgors) bool {
		return m.Status.Phase == v1alpha1.PhaseHealthy && m.Status.Primary != ""
	})
	var host string // the primary's host:port in the config
	for _, ms := range healthy.Status.Members {
		if ms.State == "PRIMARY" {
			host = ms.Host
		}
	}
	admin := mongo.NewClient(mongo.Options{Resolver: env.Resolver(), Timeout: 10 * time.Second})
	t.Cleanup(func() { _ = admin.Close(context.Background()) })

	for _, c := range []struct{ secret, defaultUser string }{{m.AdminSecretName(), "admin"}, {m.OperatorSecretName(), mongo.OperatorUser}} {
		secret := c.secret
		sec, err := env.Client.CoreV1().Secrets(env.Namespace).Get(ctx, secret, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		user := string(sec.Data[v1alpha1.AdminUsernameSecretKey])
		if user == "" {
			user = c.defaultUser
		}
		old := string(sec.Data[v1alpha1.AdminPasswordSecretKey])
		// Healthy is the operator's view from inside the cluster; the test's
		// first connection from the host may take a moment longer.
		reach := time.Now().Add(2 * time.Minute)
		for err := login(ctx, admin, host, user, old); err != nil; err = login(ctx, admin, host, user, old) {
			if errors.Is(err, mongo.ErrAuthenticationFailed) || time.Now().After(reach) {
				t.Fatalf("%s: the Secret's password does not open user %s before the change: %v", secret, user, err)
			}
			t.Logf("%s: not yet: %v", secret, err)
			time.Sleep(2 * time.Second)
		}
		changed := "changed-" + strings.Repeat("x", 12) + secret
		sec.Data[v1alpha1.AdminPasswordSecretKey] = []byte(changed)
		if _, err := env.Client.CoreV1().Secrets(env.Namespace).Update(ctx, sec, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		deadline := start.Add(3 * time.Minute)
		for login(ctx, admin, host, user, changed) != nil {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the new password does not open user %s 3 min after the change", secret, user)
			}
			time.Sleep(2 * time.Second)
		}
		t.Logf("%s: the new password opens user %s %s after the Secret changed", secret, user, time.Since(start).Round(100*time.Millisecond))
		if err := login(ctx, admin, host, user, old); !errors.Is(err, mongo.ErrAuthenticationFailed) {
			t.Errorf("%s: the old password of user %s: %v, want refused", secret, user, err)
		}
		waitMgors(t, env, m.Name, "Healthy after the change of "+secret, 3*time.Minute, func(m *v1alpha1.Mgors) bool {
			return m.Status.Phase == v1alpha1.PhaseHealthy && m.Status.Primary != ""
		})
		desc := mustKubectl(t, env, "", "-n", env.Namespace, "describe", "mgors", m.Name)
		if strings.Contains(desc, changed) || strings.Contains(desc, old) {
			t.Errorf("kubectl describe shows a password of %s", secret)
		}
	}
	describeWith(t, env, m.Name, "PasswordApplied", "AuthSwitched")
}

// login is one SCRAM conversation as user with password on host.
func login(ctx context.Context, admin *mongo.Client, host, user, password string) error {
	lctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	return admin.Login(lctx, host, mongo.AdminUser(user, password))
}
