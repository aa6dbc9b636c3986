package actors

import (
	"strings"
	"testing"
	"time"

	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
)

// certWorld is a healthy 3-member requireTLS set whose members' certificate
// (serial "a1") was issued at t0 for life.
func certWorld(t *testing.T, issued bool, life time.Duration) (*tlsWorld, State) {
	t.Helper()
	m := demo(3)
	m.Spec.TLS = &v1alpha1.TLSSpec{Mode: "requireTLS"}
	if !issued {
		m.Spec.TLS.CertificateSecretRef = &v1alpha1.SecretReference{Name: "mine"}
	}
	w, _ := newTLSWorld(t, m)
	w.obs.Certificate = &CertificateView{Secret: "demo-tls", Version: "7", Serial: "a1", NotBefore: t0, NotAfter: t0.Add(life), Issued: issued}
	s := healthyState(t, w.world)
	if s.TLS.Serial != "a1" || s.TLS.Renewed {
		t.Fatalf("certificate not recorded: %+v", s.TLS)
	}
	if Running(w.m, s) != w.m {
		t.Fatal("the first certificate changed the objects")
	}
	return w, s
}

// The certificate the operator issued is renewed in the last third of its
// life, once, bound to the Secret's version; the new one is recorded, named
// on the objects, and the members restart onto it one at a time.
func TestCertificateRenewedInTheLastThird(t *testing.T) {
	w, s := certWorld(t, true, 90*time.Second)
	in := w.in()
	in.Now = t0.Add(59 * time.Second)
	if d := Decide(s, in); d.Action != nil {
		t.Fatalf("renewed before due: %+v", d.Action)
	}
	in.Now = t0.Add(61 * time.Second)
	d := Decide(s, in)
	if d.Action == nil || d.Action.Kind != ActRenewCertificate || d.Action.Credential.SecretVersion != "7" {
		t.Fatalf("want a renewal bound to version 7: %+v %v", d.Action, types(d))
	}
	s = run(s, d)
	s = run(s, Decision{Events: Conclude(*d.Action, nil)})

	w.obs.Certificate = &CertificateView{Secret: "demo-tls", Version: "8", Serial: "b2", NotBefore: in.Now, NotAfter: in.Now.Add(90 * time.Second), Issued: true}
	in = w.in()
	in.Now = t0.Add(62 * time.Second)
	d = Decide(s, in)
	s = run(s, d)
	if !has(d, "CertificateRenewed") || d.Action != nil || s.TLS.Serial != "b2" || !s.TLS.Renewed {
		t.Fatalf("%v %+v %+v", types(d), d.Action, s.TLS)
	}
	if why, msg, ok := tlsAnnouncement(d.Events[len(d.Events)-1]); !ok || why != "CertificateRenewed" || msg == "" {
		t.Fatalf("no Event: %q %q", why, msg)
	}
	sub := Running(w.m, s)
	if sub.Annotations[kube.CertificateSerialAnnotation] != "b2" || w.m.Annotations[kube.CertificateSerialAnnotation] != "" {
		t.Fatalf("the objects do not name the new certificate: %v", sub.Annotations)
	}
	// The template changed: every pod is outdated and rolls.
	for name, p := range w.obs.Pods {
		p.Outdated = true
		w.obs.Pods[name] = p
	}
	d = Decide(s, in)
	s = run(s, d)
	if s.Phase != v1alpha1.PhaseRecovering {
		t.Fatalf("no roll: %v", types(d))
	}
	d = Decide(s, in)
	if d.Action == nil || d.Action.Kind != ActRestartMember || d.Action.Host != "demo-2" {
		t.Fatalf("want demo-2 restarted first: %+v", d.Action)
	}
}

// A certificate the operator issued that lacks a name the members are
// reached by (an external host added to the spec) is reissued at once, long
// before it is due, and the reason names what it lacked; a user's
// certificate is left to its issuer.
func TestCertificateLackingANameIsReissued(t *testing.T) {
	w, s := certWorld(t, true, 90*time.Second)
	w.obs.Certificate.Lacks = []string{"db-0.example.com"}
	in := w.in()
	in.Now = t0.Add(time.Second)
	d := Decide(s, in)
	if d.Action == nil || d.Action.Kind != ActRenewCertificate || d.Action.Credential.SecretVersion != "7" {
		t.Fatalf("want a reissue bound to version 7: %+v %v", d.Action, types(d))
	}
	started, ok := d.Events[len(d.Events)-1].(ActionStarted)
	if !ok || !strings.Contains(started.Reason, "does not name db-0.example.com") {
		t.Fatalf("the reason does not say what the certificate lacked: %+v", d.Events)
	}

	w, s = certWorld(t, false, 90*time.Second)
	w.obs.Certificate.Lacks = []string{"db-0.example.com"}
	if d := Decide(s, w.in()); d.Action != nil {
		t.Fatalf("the user's certificate reissued: %+v", d.Action)
	}
}

// A renewal the world shows done after a crash is finished, not sent again.
func TestCertificateRenewalSettledFromTheSecret(t *testing.T) {
	w, s := certWorld(t, true, 90*time.Second)
	in := w.in()
	in.Now = t0.Add(80 * time.Second)
	d := Decide(s, in)
	s = run(s, d) // in flight; the operator stops here
	w.obs.Certificate = &CertificateView{Secret: "demo-tls", Version: "8", Serial: "b2", NotBefore: in.Now, NotAfter: in.Now.Add(90 * time.Second), Issued: true}
	d = Decide(s, w.in())
	if !has(d, "ActionFinished") || has(d, "ActionFailed") || d.Action != nil && d.Action.Kind == ActRenewCertificate {
		t.Fatalf("%v %+v", types(d), d.Action)
	}
}

// A user's certificate is never renewed by the operator; one its issuer
// renewed in place (cert-manager) is recorded and rolled onto.
func TestUserCertificateRenewedByItsIssuerRolls(t *testing.T) {
	w, s := certWorld(t, false, 90*time.Second)
	in := w.in()
	in.Now = t0.Add(89 * time.Second)
	if d := Decide(s, in); d.Action != nil {
		t.Fatalf("the operator renews a user's certificate: %+v", d.Action)
	}
	w.obs.Certificate = &CertificateView{Secret: "mine", Version: "9", Serial: "c3", NotBefore: in.Now, NotAfter: in.Now.Add(time.Hour)}
	d := Decide(s, w.in())
	s = run(s, d)
	if !has(d, "CertificateRenewed") || Running(w.m, s).Annotations[kube.CertificateSerialAnnotation] != "c3" {
		t.Fatalf("%v %+v", types(d), s.TLS)
	}
}
