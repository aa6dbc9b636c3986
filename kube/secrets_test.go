package kube

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// The finalizer goes on the Secrets the operator generated, never on a
// user's nor on one being deleted, and comes off keeping others' finalizers.
func TestProtectAndReleaseSecret(t *testing.T) {
	ctx := context.Background()
	m := sample()
	ours := KeyfileSecret(m, "k")
	ours.Finalizers = []string{"someone.else/keep"}
	users := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: m.AdminSecretName(), Namespace: m.Namespace}}
	deleting := OperatorSecret(m, "op", "pw")
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	deleting.Finalizers = []string{"someone.else/keep"}
	c := fake.NewClientset(ours, users, deleting)
	a := NewApplier(c)
	get := func(name string) *corev1.Secret {
		s, err := c.CoreV1().Secrets(m.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, name := range SecretNames(m) {
		if _, err := a.ProtectSecret(ctx, m, name); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if got := get(ours.Name).Finalizers; !slices.Equal(got, []string{"someone.else/keep", SecretFinalizer}) {
		t.Errorf("generated Secret: finalizers %v", got)
	}
	if got := get(users.Name).Finalizers; len(got) != 0 {
		t.Errorf("a user's Secret was modified: %v", got)
	}
	if Protected(get(deleting.Name)) {
		t.Error("a finalizer was added to a Secret being deleted")
	}
	if wrote, err := a.ProtectSecret(ctx, m, ours.Name); wrote || err != nil {
		t.Errorf("protecting again wrote %v, err %v", wrote, err)
	}
	if wrote, err := a.ProtectSecret(ctx, m, "gone"); wrote || err != nil {
		t.Errorf("a Secret gone: wrote %v, err %v", wrote, err)
	}
	if wrote, err := a.ReleaseSecret(ctx, m, ours.Name); !wrote || err != nil {
		t.Fatalf("release wrote %v, err %v", wrote, err)
	}
	if got := get(ours.Name).Finalizers; !slices.Equal(got, []string{"someone.else/keep"}) {
		t.Errorf("after release: finalizers %v", got)
	}
}

// The refusal to make a new key names the Secret and where the key still is,
// and never a key.
func TestKeyfileLostSaysWhatToDo(t *testing.T) {
	msg := (&KeyfileLost{Name: "db-keyfile"}).Error()
	for _, want := range []string{"db-keyfile", "never generates a new key", KeyfilePath} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q lacks %q", msg, want)
		}
	}
}
