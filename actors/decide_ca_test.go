package actors

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
)

// caWorld plays the certificate Secret, the StatefulSet and the pods of a
// CA rotation: CAs are named by fingerprint; the Secret takes each step
// when RotateCA runs; the StatefulSet takes the certificate and CAs the
// objects name when ensured; a pod starts trusting the Secret's CAs and
// presenting its certificate.
type caWorld struct {
	*tlsWorld
	cas      []string // the Secret's ca.crt
	issuedBy string   // the CA of the Secret's certificate
	serial   string   // the Secret's certificate
	version  int
	tpl      string              // what the StatefulSet template names
	trust    map[string][]string // the CAs each member's pod trusts
	presents map[string]string   // the CA of the certificate each pod presents
	podTpl   map[string]string
	events   []Event
}

func newCAWorld(t *testing.T, issued bool) (*caWorld, State) {
	t.Helper()
	m := demo(3)
	m.Spec.TLS = &v1alpha1.TLSSpec{Mode: "requireTLS"}
	if !issued {
		m.Spec.TLS.CertificateSecretRef = &v1alpha1.SecretReference{Name: "mine"}
	}
	tw, _ := newTLSWorld(t, m)
	w := &caWorld{tlsWorld: tw, cas: []string{"0ld0ld00"}, issuedBy: "0ld0ld00", serial: "a1", version: 7,
		trust: map[string][]string{}, presents: map[string]string{}, podTpl: map[string]string{}}
	for name := range w.obs.Pods {
		w.trust[name], w.presents[name] = w.cas, w.issuedBy
	}
	w.observe(issued)
	s := healthyState(t, w.world)
	if !slices.Equal(s.TLS.CAs, w.cas) || s.TLS.CAChanged || Running(w.m, s) != w.m {
		t.Fatalf("the first CAs: %+v", s.TLS)
	}
	return w, s
}

func (w *caWorld) observe(issued bool) {
	w.obs.Certificate = &CertificateView{Secret: kube.CertificateSecretName(w.m), Version: string(rune('0' + w.version)),
		Serial: w.serial, NotBefore: t0, NotAfter: t0.Add(365 * 24 * time.Hour), Issued: issued,
		CAs: w.cas, IssuedBy: w.issuedBy}
}

// template is what the objects name of the certificate and CAs.
func template(m *v1alpha1.Mgors) string {
	return m.Annotations[kube.CertificateSerialAnnotation] + "|" + m.Annotations[kube.CABundleAnnotation]
}

// check holds the invariant of every moment: each member trusts the CA of
// the certificate every other presents, and the operator (which trusts the
// Secret's ca.crt) trusts every member's.
func (w *caWorld) check(t *testing.T) {
	t.Helper()
	for a, ca := range w.presents {
		for b, trust := range w.trust {
			if !slices.Contains(trust, ca) {
				t.Fatalf("%s presents a certificate of %s, which %s (trusting %v) refuses", a, ca, b, trust)
			}
		}
		if !slices.Contains(w.cas, ca) {
			t.Fatalf("the operator trusting %v refuses %s's certificate of %s", w.cas, a, ca)
		}
	}
}

func (w *caWorld) step(t *testing.T, s State) (State, bool) {
	t.Helper()
	w.obs.ObjectsReady = w.tpl == template(Running(w.m, s))
	for name, p := range w.obs.Pods {
		p.Outdated = w.podTpl[name] != w.tpl
		w.obs.Pods[name] = p
	}
	w.observe(w.obs.Certificate.Issued)
	w.check(t)
	d := Decide(s, w.in())
	s = run(s, d)
	w.events = append(w.events, d.Events...)
	if d.Action == nil {
		return s, len(d.Events) > 0
	}
	switch a := d.Action; a.Kind {
	case ActEnsureObjects:
		w.tpl = template(Running(w.m, s))
	case ActRestartMember:
		w.trust[a.Host], w.presents[a.Host], w.podTpl[a.Host] = w.cas, w.issuedBy, w.tpl
	case ActStepDown:
		w.stepDown(a.Host)
	case ActRotateCA:
		w.version++
		switch a.Step {
		case 1:
			w.cas = []string{w.cas[0], "ne3ne3ne"}
		case 2:
			w.serial, w.issuedBy = "b2", w.cas[1]
		case 3:
			w.cas = w.cas[1:]
		}
	case ActRemoveAnnotation:
		delete(w.m.Annotations, a.Host)
		w.obs.RotateCA = ""
	default:
		t.Fatalf("unexpected action %+v", a)
	}
	c := Conclude(*d.Action, nil)
	w.events = append(w.events, c...)
	return run(s, Decision{Events: c}), true
}

func (w *caWorld) settle(t *testing.T, s State) State {
	t.Helper()
	for range 300 {
		var more bool
		if s, more = w.step(t, s); !more {
			return s
		}
	}
	t.Fatalf("no end: %s", s)
	return s
}

func (w *caWorld) ask(request string) {
	if w.m.Annotations == nil {
		w.m.Annotations = map[string]string{}
	}
	w.m.Annotations[RotateCAAnnotation] = request
	w.obs.RotateCA = request
}

// A CA rotation asked on a Healthy set trusts [old, new], then presents a
// certificate of new, then trusts [new], each a rolling restart; at no
// moment does a member or the operator refuse a certificate presented to
// it; the annotation goes at the end and the set is Healthy on the new CA.
func TestCARotationRollsThreeSteps(t *testing.T) {
	w, s := newCAWorld(t, true)
	w.ask("2026-12-02")
	s = w.settle(t, s)
	if s.Phase != v1alpha1.PhaseHealthy || s.CA.Rotating() || !slices.Equal(w.cas, []string{"ne3ne3ne"}) || w.issuedBy != "ne3ne3ne" {
		t.Fatalf("after the rotation: %s CA %+v, Secret %v issued by %s", s, s.CA, w.cas, w.issuedBy)
	}
	for name := range w.obs.Pods {
		if !slices.Equal(w.trust[name], []string{"ne3ne3ne"}) || w.presents[name] != "ne3ne3ne" {
			t.Fatalf("%s trusts %v and presents %s", name, w.trust[name], w.presents[name])
		}
	}
	var steps []string
	restarts := 0
	for _, e := range w.events {
		switch e := e.(type) {
		case CARotationStarted, CAStepRolled, CARotated, CATrustChanged, CertificateRenewed:
			steps = append(steps, e.Type())
		case CARotationStep:
			steps = append(steps, e.Type()+" "+strings.Join(e.CAs, ",")+" by "+e.IssuedBy)
		case ActionStarted:
			if e.Action == ActRestartMember {
				restarts++
			}
		}
	}
	want := []string{"CARotationStarted",
		"CATrustChanged", "CARotationStep 0ld0ld00,ne3ne3ne by 0ld0ld00", "CAStepRolled",
		"CertificateRenewed", "CARotationStep 0ld0ld00,ne3ne3ne by ne3ne3ne", "CAStepRolled",
		"CATrustChanged", "CARotationStep ne3ne3ne by ne3ne3ne", "CAStepRolled", "CARotated"}
	if !slices.Equal(steps, want) {
		t.Fatalf("steps:\n%s\nwant:\n%s", strings.Join(steps, "\n"), strings.Join(want, "\n"))
	}
	if restarts != 9 {
		t.Fatalf("%d restarts, want 3 rolls of 3 members", restarts)
	}
	if _, ok := w.m.Annotations[RotateCAAnnotation]; ok {
		t.Fatal("the annotation stayed")
	}
	for _, e := range w.events {
		if reason, msg, ok := caAnnouncement(e); ok && (reason == "" || msg == "") {
			t.Fatalf("no words for %T", e)
		}
	}
}

// An operator restarted in the middle rebuilds its state from the log and
// resumes: at each moment of the rotation a restart leads to the same end.
func TestCARotationResumesFromTheLog(t *testing.T) {
	for cut := 1; cut < 90; cut += 7 {
		w, s := newCAWorld(t, true)
		w.ask("r1")
		w.events = nil
		base := s
		for range cut {
			var more bool
			if s, more = w.step(t, s); !more {
				break
			}
		}
		replayed := base
		for _, e := range w.events {
			replayed = Evolve(replayed, replayed.Seq+1, t0, e)
		}
		if !reflect.DeepEqual(replayed, s) {
			t.Fatalf("cut %d: the replayed state differs:\n%+v %+v\n%+v %+v", cut, replayed.CA, replayed.TLS, s.CA, s.TLS)
		}
		s = w.settle(t, replayed)
		if s.CA.Rotating() || !slices.Equal(w.cas, []string{"ne3ne3ne"}) || s.Phase != v1alpha1.PhaseHealthy {
			t.Fatalf("cut %d: %s CA %+v, Secret %v", cut, s, s.CA, w.cas)
		}
	}
}

// A Secret write whose result was lost in a crash is settled from the
// Secret: written → finished and the step goes on; not written → failed.
func TestCAWriteInFlightIsSettledFromTheSecret(t *testing.T) {
	for _, written := range []bool{true, false} {
		w, s := newCAWorld(t, true)
		w.ask("r1")
		d := Decide(s, w.in())
		if d.Action == nil || d.Action.Kind != ActRotateCA || d.Action.Step != 1 {
			t.Fatalf("first decision: %+v %v", d.Action, types(d))
		}
		s = run(s, d)
		if written {
			w.cas = []string{"0ld0ld00", "ne3ne3ne"}
		}
		w.observe(true)
		d = Decide(s, w.in())
		got := types(d)
		want := "ActionFailed"
		if written {
			want = "ActionFinished"
		}
		if len(got) == 0 || got[0] != want {
			t.Fatalf("written %v: %v", written, got)
		}
	}
}

func TestCARotationRequests(t *testing.T) {
	cases := []struct {
		name    string
		issued  bool
		prepare func(w *caWorld, s *State)
		want    []string
		action  ActionKind
	}{
		{"none asked", true, func(*caWorld, *State) {}, nil, ""},
		{"asked on a Healthy set", true, func(w *caWorld, _ *State) { w.ask("r1") },
			[]string{"ApprovalAccepted", "CARotationStarted", "ActionStarted"}, ActRotateCA},
		{"asked with the user's certificates", false, func(w *caWorld, _ *State) { w.ask("r1") },
			[]string{"ApprovalRefused"}, ""},
		{"asked without TLS", true, func(w *caWorld, s *State) {
			w.ask("r1")
			w.m.Spec.TLS, w.obs.Certificate, s.TLS = nil, nil, TLSRoll{Known: true}
		}, []string{"ApprovalRefused"}, ""},
		{"asked while Recovering", true, func(w *caWorld, s *State) {
			w.ask("r1")
			s.Phase = v1alpha1.PhaseRecovering
		}, nil, ""},
		{"asked while a keyfile rotation runs", true, func(w *caWorld, s *State) {
			w.ask("r1")
			s.Keyfile = KeyfileRoll{Request: "k", Old: "aaaaaaaa"}
		}, []string{"ActionStarted"}, ActRotateKeyfile}, // the keyfile's step; the CA waits
		{"asked while ca.crt holds two CAs", true, func(w *caWorld, s *State) {
			w.ask("r1")
			s.TLS.CAs = []string{"0ld0ld00", "0th3r000"}
			w.cas = s.TLS.CAs
			w.observe(true)
		}, []string{"ApprovalRefused"}, ""},
		{"handled and still there", true, func(w *caWorld, s *State) {
			w.ask("r1")
			s.Handled = map[string]string{RotateCAAnnotation: "r1"}
		}, []string{"ActionStarted"}, ActRemoveAnnotation},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, s := newCAWorld(t, c.issued)
			c.prepare(w, &s)
			d := Decide(s, w.in())
			var kinds []string
			for _, ty := range types(d) {
				if ty != "MembersObserved" && ty != "ProblemsObserved" && ty != "PhaseChanged" && ty != "TLSRecorded" {
					kinds = append(kinds, ty)
				}
			}
			if !slices.Equal(kinds, c.want) {
				t.Fatalf("events %v, want %v", kinds, c.want)
			}
			var got ActionKind
			if d.Action != nil {
				got = d.Action.Kind
			}
			if got != c.action {
				t.Fatalf("action %q, want %q", got, c.action)
			}
		})
	}
}

// The user's issuer changing the CAs of ca.crt (cert-manager rotating its
// CA) is recorded and rolls the members onto it; a log that predates the
// CAs records them with no restart.
func TestCATrustChangedByTheUsersIssuerRolls(t *testing.T) {
	w, s := newCAWorld(t, false)
	w.cas = []string{"0ld0ld00", "ne3ne3ne"}
	w.observe(false)
	d := Decide(s, w.in())
	s = run(s, d)
	if !has(d, "CATrustChanged") || !s.TLS.CAChanged || Running(w.m, s).Annotations[kube.CABundleAnnotation] != "0ld0ld00,ne3ne3ne" {
		t.Fatalf("%v %+v", types(d), s.TLS)
	}

	w, s = newCAWorld(t, true)
	s.TLS.CAs = nil // a log written before the CAs were recorded
	d = Decide(s, w.in())
	s = run(s, d)
	if !has(d, "CertificateObserved") || has(d, "CATrustChanged") || s.TLS.CAChanged || !slices.Equal(s.TLS.CAs, w.cas) || Running(w.m, s) != w.m {
		t.Fatalf("%v %+v", types(d), s.TLS)
	}
}
