package chaos

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
)

// The clients' trust follows ca.crt through the three writes of a CA
// rotation: [old] trusts old's certificate only; [old, new] both; [new]
// new's only. A name the certificate does not hold is refused.
func TestTrustFollowsTheCARotation(t *testing.T) {
	ctx := context.Background()
	m := &v1alpha1.Mgors{ObjectMeta: metav1.ObjectMeta{Namespace: "chaos", Name: "db"},
		Spec: v1alpha1.MgorsSpec{Members: 3, TLS: &v1alpha1.TLSSpec{Mode: "requireTLS"}}}
	now := time.Now()
	oldCA, err := kube.NewIssuerSecret(m, now)
	if err != nil {
		t.Fatal(err)
	}
	newCA, err := kube.NewIssuerSecret(m, now)
	if err != nil {
		t.Fatal(err)
	}
	oldCert, err := kube.NewCertificateSecret(m, oldCA, "cluster.local", now, 0)
	if err != nil {
		t.Fatal(err)
	}
	newCert, err := kube.NewCertificateSecret(m, newCA, "cluster.local", now, 0)
	if err != nil {
		t.Fatal(err)
	}
	sec := oldCert.DeepCopy()
	kc := fake.NewClientset(sec)
	r := &run{kube: kc}
	tr, err := r.newTrust(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	host, _, _ := strings.Cut(m.MemberHost(1, "cluster.local"), ":")
	accepts := func(cert *corev1.Secret, name string) error {
		t.Helper()
		b, _ := pem.Decode(cert.Data[kube.TLSCertKey])
		leaf, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		return tr.verify(tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf}, ServerName: name})
	}
	write := func(cas ...[]byte) {
		t.Helper()
		sec.Data[kube.TLSCAKey] = bytes.Join(cas, nil)
		if _, err := kc.CoreV1().Secrets("chaos").Update(ctx, sec, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if changed, err := tr.refresh(ctx, r); err != nil || !changed {
			t.Fatalf("refresh after ca.crt changed: changed %t, %v", changed, err)
		}
	}
	oldPEM, newPEM := oldCA.Data[kube.TLSCAKey], newCA.Data[kube.TLSCAKey]
	for _, step := range []struct {
		name     string
		cas      [][]byte
		old, new bool
	}{
		{"before", nil, true, false},
		{"[old, new]", [][]byte{oldPEM, newPEM}, true, true},
		{"[new]", [][]byte{newPEM}, false, true},
	} {
		if step.cas != nil {
			write(step.cas...)
		}
		if err := accepts(oldCert, host); (err == nil) != step.old {
			t.Errorf("%s: the old CA's certificate: %v, want accepted %t", step.name, err, step.old)
		}
		if err := accepts(newCert, host); (err == nil) != step.new {
			t.Errorf("%s: the new CA's certificate: %v, want accepted %t", step.name, err, step.new)
		}
	}
	if changed, err := tr.refresh(ctx, r); err != nil || changed {
		t.Errorf("refresh of an unchanged ca.crt: changed %t, %v", changed, err)
	}
	if err := accepts(newCert, "elsewhere.example"); err == nil {
		t.Error("a name the certificate does not hold is accepted")
	}
}

// A handshake through the client's configuration verifies the member with
// VerifyConnection, against the name the client set (the driver sets the
// host dialed).
func TestTrustConfigHandshake(t *testing.T) {
	m := &v1alpha1.Mgors{ObjectMeta: metav1.ObjectMeta{Namespace: "chaos", Name: "db"},
		Spec: v1alpha1.MgorsSpec{Members: 3, TLS: &v1alpha1.TLSSpec{}}}
	issuer, err := kube.NewIssuerSecret(m, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := kube.NewCertificateSecret(m, issuer, "cluster.local", time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(cert.Data[kube.TLSCertKey], cert.Data[kube.TLSKeyKey])
	if err != nil {
		t.Fatal(err)
	}
	r := &run{kube: fake.NewClientset(cert)}
	tr, err := r.newTrust(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		ok   bool
	}{{"db-0.db-svc.chaos.svc.cluster.local", true}, {"other.example", false}} {
		if got := handshake(t, tr.config(), pair, tc.name); (got == nil) != tc.ok {
			t.Errorf("handshake as %s: %v, want success %t", tc.name, got, tc.ok)
		}
	}
	if tr, err := r.newTrust(context.Background(), &v1alpha1.Mgors{}); tr != nil || err != nil {
		t.Errorf("a Mgors without spec.tls: trust %v, %v; want none", tr, err)
	}
}

func handshake(t *testing.T, cfg *tls.Config, pair tls.Certificate, serverName string) error {
	t.Helper()
	c, s := net.Pipe()
	defer func() { _ = c.Close(); _ = s.Close() }()
	srv := tls.Server(s, &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12})
	go func() { _ = srv.Handshake(); _ = s.Close() }()
	cfg = cfg.Clone()
	cfg.ServerName = serverName
	return tls.Client(c, cfg).Handshake()
}

// A scenario's own fault (a CA rotation) has its line in the summary, after
// the schedule's kinds.
func TestSummaryShowsAScenarioFault(t *testing.T) {
	h := good()
	h.Kinds = []FaultKind{KillMongod}
	f := h.Faults[0]
	f.ID, f.Kind = 2, RotateCA
	h.Faults = append(h.Faults, f)
	var b bytes.Buffer
	Summary(&b, h, Check(h, Bounds{}))
	out := b.String()
	for _, want := range []string{"faults: 2, kill-mongod 1, rotate-ca 1", "\nrotate-ca "} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}
