package kube

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

func issuedTLS(m *v1alpha1.Mgors) { m.Spec.TLS = &v1alpha1.TLSSpec{Mode: "requireTLS"} }

// The certificate the operator issues chains to its CA and is valid for
// every name a member or an arbiter is dialled by, in every DNS form, also
// for a member added after it was issued, as server and as client.
func TestIssuedCertificateNamesEveryMember(t *testing.T) {
	m := sample(issuedTLS, func(m *v1alpha1.Mgors) { m.Spec.Members, m.Spec.Arbiters = 3, 1 })
	now := time.Now()
	issuer, err := NewIssuerSecret(m, now)
	if err != nil {
		t.Fatal(err)
	}
	sec, err := NewCertificateSecret(m, issuer, "example.org", now, 0)
	if err != nil {
		t.Fatal(err)
	}
	if sec.Name != "db-tls" || sec.Type != corev1.SecretTypeTLS || string(sec.Data[TLSCAKey]) != string(issuer.Data[TLSCAKey]) {
		t.Fatalf("certificate Secret %s type %s", sec.Name, sec.Type)
	}
	if _, ok := sec.Data[caKeyKey]; ok {
		t.Fatal("the CA's key is in the members' Secret")
	}
	pair, err := tls.X509KeyPair(sec.Data[TLSCertKey], sec.Data[TLSKeyKey])
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(pair.Certificate[0])
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(sec.Data[TLSCAKey]) {
		t.Fatal("no CA in ca.crt")
	}
	var hosts []string
	for i := range int32(3) {
		hosts = append(hosts, m.MemberHost(i, "example.org"))
	}
	hosts = append(hosts, ArbiterHost(m, 0, "example.org"), m.MemberHost(6, "example.org")) // db-6: a member added later
	for _, h := range hosts {
		full := strings.TrimSuffix(h, ":27017")
		short := strings.TrimSuffix(full, ".svc.example.org")
		for _, name := range []string{full, strings.TrimSuffix(full, ".example.org"), short, strings.TrimSuffix(short, ".ns")} {
			for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
				if _, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: roots, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
					t.Errorf("%s (usage %v): %v", name, usage, err)
				}
			}
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "db-0.other-svc.ns.svc.example.org", Roots: roots}); err == nil {
		t.Error("the certificate is valid for another Service's pods")
	}
	ca, _ := pem.Decode(issuer.Data[TLSCAKey])
	caCert, _ := x509.ParseCertificate(ca.Bytes)
	if !caCert.IsCA || leaf.NotAfter.After(caCert.NotAfter) {
		t.Errorf("CA %v, leaf ends %v after the CA %v", caCert.IsCA, leaf.NotAfter, caCert.NotAfter)
	}
}

// A certificate lacks nothing of the spec it was issued for, nor of a spec
// with more members or arbiters (the wildcard covers their pods); it lacks
// an external host added to spec.externalAccess.members, and the one issued
// for that spec lacks nothing.
func TestCertificateLacksOnlyNamesAddedOutsideTheWildcard(t *testing.T) {
	m := sample(issuedTLS)
	now := time.Now()
	issuer, err := NewIssuerSecret(m, now)
	if err != nil {
		t.Fatal(err)
	}
	sec, err := NewCertificateSecret(m, issuer, "example.org", now, 0)
	if err != nil {
		t.Fatal(err)
	}
	if lacks := lacked(t, sec, MemberDNSNames(m, "example.org")); lacks != nil {
		t.Fatalf("lacks %v of its own spec", lacks)
	}
	grown := m.DeepCopy()
	grown.Spec.Members, grown.Spec.Arbiters = 7, 1
	if lacks := lacked(t, sec, MemberDNSNames(grown, "example.org")); lacks != nil {
		t.Fatalf("lacks %v of the spec with more members", lacks)
	}
	exposed := m.DeepCopy()
	exposed.Spec.ExternalAccess = &v1alpha1.ExternalAccessSpec{Members: []v1alpha1.ExternalMember{
		{Ordinal: 0, Host: "db-0.example.com:31000"}, {Ordinal: 1, Host: "db-1.example.com"}}}
	if lacks := lacked(t, sec, MemberDNSNames(exposed, "example.org")); !slices.Equal(lacks, []string{"db-0.example.com", "db-1.example.com"}) {
		t.Fatalf("lacks %v; want the two external hosts", lacks)
	}
	reissued, err := NewCertificateSecret(exposed, issuer, "example.org", now, 0)
	if err != nil {
		t.Fatal(err)
	}
	if lacks := lacked(t, reissued, MemberDNSNames(exposed, "example.org")); lacks != nil {
		t.Fatalf("the reissued certificate lacks %v", lacks)
	}
}

// lacked are the names the certificate of sec does not cover.
func lacked(t *testing.T, sec *corev1.Secret, names []string) []string {
	t.Helper()
	c, err := ParseCertificate(sec)
	if err != nil {
		t.Fatal(err)
	}
	return c.Lacks(names)
}

// EnsureTLS issues the CA and the certificate once; later calls keep them
// (members already trust them).
func TestEnsureTLSIssuesOnce(t *testing.T) {
	ctx := context.Background()
	m := sample(issuedTLS)
	c := fake.NewClientset()
	a := NewApplier(c)
	if err := a.EnsureTLS(ctx, m, ""); err != nil {
		t.Fatal(err)
	}
	first, err := a.Secret(ctx, "ns", "db-tls")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Secret(ctx, "ns", "db-ca"); err != nil {
		t.Fatal(err)
	}
	if err := a.EnsureTLS(ctx, m, ""); err != nil {
		t.Fatal(err)
	}
	again, _ := a.Secret(ctx, "ns", "db-tls")
	if string(first.Data[TLSCertKey]) != string(again.Data[TLSCertKey]) {
		t.Error("the certificate was issued again")
	}
	if n := writes(c, "secrets"); n["create"] != 2 || n["update"] != 0 {
		t.Errorf("secret writes %v, want 2 creates", n)
	}
	// The pods read the issued Secret.
	p := StatefulSet(m, Options{}).Spec.Template.Spec
	found := false
	for _, v := range p.Volumes {
		found = found || (v.Secret != nil && v.Secret.SecretName == "db-tls")
	}
	if !found {
		t.Errorf("no volume of the Secret db-tls: %v", p.Volumes)
	}
	if cmd := strings.Join(container(t, p, MongodContainer).Command, " "); !strings.Contains(cmd, "--tlsMode requireTLS") ||
		!strings.Contains(cmd, "--tlsAllowConnectionsWithoutCertificates") {
		t.Errorf("command %q", cmd)
	}
}

// A user's Secrets are never created nor changed: a missing one, or one
// without a key the members need, is an error naming it.
func TestEnsureTLSUserSecrets(t *testing.T) {
	ctx := context.Background()
	user := func(m *v1alpha1.Mgors) {
		m.Spec.TLS = &v1alpha1.TLSSpec{CertificateSecretRef: &v1alpha1.SecretReference{Name: "mine"}}
	}
	m := sample(user)
	c := fake.NewClientset()
	if err := NewApplier(c).EnsureTLS(ctx, m, ""); err == nil || !strings.Contains(err.Error(), "mine") {
		t.Errorf("missing Secret: %v", err)
	}
	noCA := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: "ns"}, Data: map[string][]byte{"tls.crt": {1}, "tls.key": {1}}}
	c = fake.NewClientset(noCA)
	var mk *MissingSecretKey
	if err := NewApplier(c).EnsureTLS(ctx, m, ""); !errors.As(err, &mk) || mk.Key != "ca.crt" {
		t.Errorf("Secret without ca.crt: %v", err)
	}
	withCA := sample(user, func(m *v1alpha1.Mgors) { m.Spec.TLS.CASecretRef = &v1alpha1.SecretReference{Name: "ca"} })
	ca := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ca", Namespace: "ns"}, Data: map[string][]byte{"ca.crt": {1}}}
	c = fake.NewClientset(noCA, ca)
	if err := NewApplier(c).EnsureTLS(ctx, withCA, ""); err != nil {
		t.Errorf("certificate and CA in two Secrets: %v", err)
	}
	if n := writes(c, "secrets"); len(n) != 0 {
		t.Errorf("a user's Secret was written: %v", n)
	}
	if CertificateSecretName(withCA) != "mine" || CASecretName(withCA) != "ca" || CASecretName(m) != "mine" {
		t.Errorf("names %s %s %s", CertificateSecretName(withCA), CASecretName(withCA), CASecretName(m))
	}
}
