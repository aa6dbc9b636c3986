package kube

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// The three writes of a CA rotation: ca.crt [old, new] with the certificate
// of old; a certificate of new (and new issues from then on); ca.crt [new].
// Each step written again is left alone; a step out of order is an error
// naming fingerprints, never keys.
func TestRotateCAInThreeSteps(t *testing.T) {
	ctx := context.Background()
	m := sample(issuedTLS)
	a := NewApplier(fake.NewClientset())
	if err := a.EnsureTLS(ctx, m, ""); err != nil {
		t.Fatal(err)
	}
	read := func() (cas []string, by string, issuer []string, sec, iss []byte) {
		t.Helper()
		s, err := a.Secret(ctx, "ns", "db-tls")
		if err != nil {
			t.Fatal(err)
		}
		i, err := a.Secret(ctx, "ns", "db-ca")
		if err != nil {
			t.Fatal(err)
		}
		_, cas = CAs(s.Data[TLSCAKey])
		_, issuer = CAs(i.Data[TLSCAKey])
		return cas, IssuedBy(s, s.Data[TLSCAKey]), issuer, s.Data[TLSCertKey], i.Data[caKeyKey]
	}
	cas, by, _, _, _ := read()
	if len(cas) != 1 || by != cas[0] {
		t.Fatalf("before: CAs %v issued by %q", cas, by)
	}
	old := cas[0]
	if err := a.RotateCA(ctx, m, "", 2, old, "whatever"); err == nil || !strings.Contains(err.Error(), old) {
		t.Fatalf("step 2 first: %v", err)
	}

	if err := a.RotateCA(ctx, m, "", 1, old, ""); err != nil {
		t.Fatal(err)
	}
	cas, by, issuer, cert1, _ := read()
	if len(cas) != 2 || cas[0] != old || by != old || !slices.Equal(issuer, []string{old}) {
		t.Fatalf("step 1: CAs %v issued by %q, issuer %v", cas, by, issuer)
	}
	next := cas[1]
	if err := a.RotateCA(ctx, m, "", 1, old, next); err != nil {
		t.Fatal(err)
	}
	if again, _, _, _, _ := read(); !slices.Equal(again, cas) {
		t.Fatalf("step 1 again made another CA: %v, was %v", again, cas)
	}

	if err := a.RotateCA(ctx, m, "", 2, old, next); err != nil {
		t.Fatal(err)
	}
	cas, by, issuer, cert2, _ := read()
	if !slices.Equal(cas, []string{old, next}) || by != next || !slices.Equal(issuer, []string{next}) || string(cert2) == string(cert1) {
		t.Fatalf("step 2: CAs %v issued by %q, issuer %v", cas, by, issuer)
	}
	sec, _ := a.Secret(ctx, "ns", "db-tls")
	verify(t, m, sec, sec.Data[TLSCAKey])
	if i, _ := a.Secret(ctx, "ns", "db-ca"); len(i.Data[nextCAKey]) != 0 || len(i.Data[nextCAKeyKey]) != 0 {
		t.Fatal("the issuer still keeps the CA it promoted waiting")
	}

	if err := a.RotateCA(ctx, m, "", 3, old, next); err != nil {
		t.Fatal(err)
	}
	cas, by, _, _, _ = read()
	if !slices.Equal(cas, []string{next}) || by != next {
		t.Fatalf("step 3: CAs %v issued by %q", cas, by)
	}
	sec, _ = a.Secret(ctx, "ns", "db-tls")
	verify(t, m, sec, sec.Data[TLSCAKey])
	// A renewal after the rotation is issued by the new CA.
	if err := a.RenewCertificate(ctx, m, "", sec.ResourceVersion); err != nil {
		t.Fatal(err)
	}
	if cas, by, _, _, _ = read(); !slices.Equal(cas, []string{next}) || by != next {
		t.Fatalf("renewed after the rotation: CAs %v issued by %q", cas, by)
	}
}

// A crash after the new CA was kept in the issuer Secret and before the
// certificate Secret trusted it: step 1 again uses the CA kept, never a
// second one.
func TestRotateCAStepOneKeepsTheCAItMade(t *testing.T) {
	ctx := context.Background()
	m := sample(issuedTLS)
	a := NewApplier(fake.NewClientset())
	if err := a.EnsureTLS(ctx, m, ""); err != nil {
		t.Fatal(err)
	}
	issuer, _ := a.Secret(ctx, "ns", "db-ca")
	_, fps := CAs(issuer.Data[TLSCAKey])
	kept, err := a.nextCA(ctx, m, issuer, fps[0])
	if err != nil {
		t.Fatal(err)
	}
	_, keptFP := CAs(kept)
	if err := a.RotateCA(ctx, m, "", 1, fps[0], ""); err != nil {
		t.Fatal(err)
	}
	sec, _ := a.Secret(ctx, "ns", "db-tls")
	if _, cas := CAs(sec.Data[TLSCAKey]); !slices.Equal(cas, []string{fps[0], keptFP[0]}) {
		t.Fatalf("CAs %v, want the kept %s after %s", cas, keptFP[0], fps[0])
	}
}

// The user's certificates are never rotated by the operator.
func TestRotateCARefusesTheUsersSecrets(t *testing.T) {
	m := sample(func(m *v1alpha1.Mgors) {
		m.Spec.TLS = &v1alpha1.TLSSpec{CertificateSecretRef: &v1alpha1.SecretReference{Name: "mine"}}
	})
	err := NewApplier(fake.NewClientset()).RotateCA(context.Background(), m, "", 1, "a", "")
	if err == nil || !strings.Contains(err.Error(), "mine") {
		t.Fatalf("%v", err)
	}
}

// verify checks the certificate of sec against bundle, as a member does.
func verify(t *testing.T, m *v1alpha1.Mgors, sec *corev1.Secret, bundle []byte) {
	t.Helper()
	pair, err := tls.X509KeyPair(sec.Data[TLSCertKey], sec.Data[TLSKeyKey])
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(pair.Certificate[0])
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(bundle)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: strings.TrimSuffix(m.MemberHost(0, "cluster.local"), ":27017"),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Fatalf("the certificate does not verify against ca.crt: %v", err)
	}
}
