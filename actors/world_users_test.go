package actors

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgors/operator/actors/eventlog"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo"
)

// A person changes the admin Secret's password, then the operator's: the
// real KubeWorld applies each with updateUser (the old password no longer
// opens the user, the new one does), goes back to __system for its own and
// switches to its user again, and records which Secret at which
// resourceVersion, never a password.
func TestKubeWorldAppliesChangedPasswords(t *testing.T) {
	newWorld, rs, mc, _ := kubeFixture(t, "admin")
	world := newWorld(nil)
	store := eventlog.NewMemory()
	deps := testDeps(store, world)
	deps.SnapshotEvery = 0 // the assertions read the whole log
	stop := runOperator(t, deps)
	defer stop()
	waitFor(t, "Healthy", healthyIn(mc))
	m := mgors()
	ctx := context.Background()
	change := func(name, version, password string) {
		t.Helper()
		sec, err := world.Applier.Client.CoreV1().Secrets(m.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sec.Data[v1alpha1.AdminPasswordSecretKey] = []byte(password)
		sec.ResourceVersion = version // the fake clientset keeps what it is given
		if _, err := world.Applier.Client.CoreV1().Secrets(m.Namespace).Update(ctx, sec, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	opens := func(user, password string) bool {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		return rs.Login(cctx, rs.Primary(), mongo.AdminUser(user, password)) == nil
	}
	records := func() string {
		_, recs, _ := store.Load(ctx, eventlog.Stream{Namespace: "db", Name: "demo", UID: "u-1"})
		var b strings.Builder
		for _, r := range recs {
			line, _ := eventlog.EncodeLine(r)
			b.Write(line)
		}
		return b.String()
	}

	change(m.AdminSecretName(), "admin-2", "NEW-ADMIN-PASSWORD")
	waitFor(t, "the admin's new password applied", func() bool {
		return opens("admin", "NEW-ADMIN-PASSWORD") && strings.Contains(records(), `"secretVersion":"admin-2"`)
	})
	if opens("admin", "pw") {
		t.Fatal("the old admin password still opens the user")
	}

	change(m.OperatorSecretName(), "operator-2", "NEW-OPERATOR-PASSWORD")
	waitFor(t, "the operator's new password applied and switched to again", func() bool {
		log := records()
		return opens(mongo.OperatorUser, "NEW-OPERATOR-PASSWORD") && strings.Contains(log, `"secretVersion":"operator-2"`) &&
			strings.Count(log, `"to":"operator"`) == 2 && strings.Count(log, `"type":"AuthSwitched"`) == 3
	})
	log := records()
	for _, secret := range []string{"NEW-ADMIN-PASSWORD", "NEW-OPERATOR-PASSWORD"} {
		if strings.Contains(log, secret) {
			t.Fatal("a password leaked into the records")
		}
	}
	if !strings.Contains(log, `"type":"PasswordApplied"`) {
		t.Fatalf("no PasswordApplied:\n%s", log)
	}
}
