package kube

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

func TestRenewalDue(t *testing.T) {
	issued := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := Certificate{NotBefore: issued, NotAfter: issued.Add(90 * time.Hour)}
	for _, tc := range []struct {
		after time.Duration
		due   bool
	}{{0, false}, {59 * time.Hour, false}, {60 * time.Hour, true}, {89 * time.Hour, true}, {100 * time.Hour, true}} {
		if got := RenewalDue(c, issued.Add(tc.after)); got != tc.due {
			t.Errorf("%s after issue: due %v, want %v", tc.after, got, tc.due)
		}
	}
}

// A renewal replaces the certificate and its key in the operator's Secret
// with a new one from the same CA, of the lifetime asked; the CA stays, so
// old and new verify against the members' ca.crt. A user's certificate is
// never written.
func TestRenewCertificateFromTheSameCA(t *testing.T) {
	ctx := context.Background()
	m := sample(issuedTLS)
	a := NewApplier(fake.NewClientset())
	a.CertificateLifetime = 90 * time.Second
	if err := a.EnsureTLS(ctx, m, ""); err != nil {
		t.Fatal(err)
	}
	before, err := a.Secret(ctx, "ns", "db-tls")
	if err != nil {
		t.Fatal(err)
	}
	old, err := ParseCertificate(before)
	if err != nil {
		t.Fatal(err)
	}
	if life := old.NotAfter.Sub(old.NotBefore); life > 100*time.Second || life < 90*time.Second {
		t.Fatalf("lifetime %s, want 90s (and a little skew)", life)
	}
	if err := a.RenewCertificate(ctx, m, "", before.ResourceVersion); err != nil {
		t.Fatal(err)
	}
	after, err := a.Secret(ctx, "ns", "db-tls")
	if err != nil {
		t.Fatal(err)
	}
	renewed, err := ParseCertificate(after)
	if err != nil {
		t.Fatal(err)
	}
	if renewed.Serial == old.Serial || string(after.Data[TLSKeyKey]) == string(before.Data[TLSKeyKey]) {
		t.Fatal("same certificate or key after a renewal")
	}
	if string(after.Data[TLSCAKey]) != string(before.Data[TLSCAKey]) {
		t.Fatal("the CA changed")
	}
	pair, err := tls.X509KeyPair(after.Data[TLSCertKey], after.Data[TLSKeyKey])
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(pair.Certificate[0])
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(before.Data[TLSCAKey])
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: strings.TrimSuffix(m.MemberHost(0, "cluster.local"), ":27017"),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Fatalf("the renewed certificate does not verify against the old ca.crt: %v", err)
	}

	user := sample(func(m *v1alpha1.Mgors) {
		m.Spec.TLS = &v1alpha1.TLSSpec{CertificateSecretRef: &v1alpha1.SecretReference{Name: "mine"}}
	})
	if err := a.RenewCertificate(ctx, user, "", "1"); err == nil || !strings.Contains(err.Error(), "mine") {
		t.Fatalf("renewing a user's certificate: %v", err)
	}
}

// A renewed certificate named on the Mgors the objects are built from
// changes the pod template (members restart onto it); without it, the
// template is the one before renewal existed.
func TestCertificateSerialChangesTheTemplate(t *testing.T) {
	m := sample(issuedTLS)
	plain := StatefulSet(m, Options{}).Spec.Template.Annotations[TemplateHashAnnotation]
	m.Annotations = map[string]string{CertificateSerialAnnotation: "abc"}
	first := StatefulSet(m, Options{}).Spec.Template.Annotations[TemplateHashAnnotation]
	m.Annotations[CertificateSerialAnnotation] = "def"
	second := StatefulSet(m, Options{}).Spec.Template.Annotations[TemplateHashAnnotation]
	if plain == first || first == second {
		t.Fatalf("template hashes %s %s %s", plain, first, second)
	}
}
