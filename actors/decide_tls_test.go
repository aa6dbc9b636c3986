package actors

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo"
)

// tlsWorld plays the StatefulSet and the pods of a TLS change: the
// StatefulSet takes the mode of the objects the actor builds (Running) when
// it ensures them, and a pod takes the StatefulSet's when it restarts.
type tlsWorld struct {
	*world
	sts  string            // the StatefulSet template's --tlsMode
	pods map[string]string // the --tlsMode each member's pod runs
}

func newTLSWorld(t *testing.T, m *v1alpha1.Mgors) (*tlsWorld, State) {
	t.Helper()
	w := &tlsWorld{world: newWorld(m).initiated(), sts: tlsMode(m.Spec.TLS), pods: map[string]string{}}
	for name, p := range w.obs.Pods {
		p.Ready = true
		w.obs.Pods[name] = p
		w.pods[name] = w.sts
	}
	return w, healthyState(t, w.world)
}

// reaches says whether a member running from can open a connection to one
// running to: allowTLS dials plain, preferTLS and requireTLS dial TLS;
// requireTLS refuses plain, no TLS refuses TLS.
func reaches(from, to string) bool {
	if from == "" || from == "allowTLS" {
		return to != "requireTLS"
	}
	return to != ""
}

// check holds the invariants of every moment of a TLS change: every member
// reaches every other, and the operator's client reaches every member.
func (w *tlsWorld) check(t *testing.T, s State) {
	t.Helper()
	for a, ma := range w.pods {
		for b, mb := range w.pods {
			if !reaches(ma, mb) {
				t.Fatalf("%s (%q) cannot reach %s (%q)", a, ma, b, mb)
			}
		}
		sub := Running(w.m, s)
		tlsClient := sub.Spec.TLS != nil && sub.Annotations[PlainClientAnnotation] == ""
		if tlsClient && ma == "" || !tlsClient && ma == "requireTLS" {
			t.Fatalf("the operator's client (TLS %v) cannot reach %s (%q)", tlsClient, a, ma)
		}
		uri := kube.ConnectionString(connectable(w.m, s), "cluster.local")
		if strings.Contains(uri, "tls=true") != tlsClient {
			t.Fatalf("status connection string %s while the client uses TLS %v", uri, tlsClient)
		}
	}
}

// settle plays decisions until the actor has nothing to do, and returns
// the Kubernetes Events' reasons of the TLS steps in order.
func (w *tlsWorld) settle(t *testing.T, s State) (State, []string) {
	t.Helper()
	var steps []string
	for range 200 {
		w.obs.ObjectsReady = w.sts == tlsMode(Running(w.m, s).Spec.TLS)
		for name, p := range w.obs.Pods {
			p.Outdated = w.pods[name] != w.sts
			w.obs.Pods[name] = p
		}
		w.check(t, s)
		d := Decide(s, w.in())
		s = run(s, d)
		for _, e := range d.Events {
			if reason, msg, ok := tlsAnnouncement(e); ok {
				msg, _, _ = strings.Cut(msg, ":")
				steps = append(steps, reason+": "+msg)
			}
		}
		if d.Action == nil {
			if len(d.Events) == 0 {
				return s, steps
			}
			continue
		}
		switch a := d.Action; a.Kind {
		case ActEnsureObjects:
			w.sts = tlsMode(Running(w.m, s).Spec.TLS)
		case ActRestartMember:
			w.pods[a.Host] = w.sts
		case ActStepDown:
			w.stepDown(a.Host)
		default:
			t.Fatalf("unexpected action %+v", a)
		}
		s = run(s, Decision{Events: Conclude(*d.Action, nil)})
	}
	t.Fatalf("no end: %s", s)
	return s, nil
}

// stepDown moves the primary from host to the next member.
func (w *tlsWorld) stepDown(host string) {
	i := slices.IndexFunc(w.desired, func(dm mongo.DesiredMember) bool { return dm.Host == host })
	next := w.desired[(i+1)%len(w.desired)].Host
	for h, mv := range w.obs.Members {
		mv.State, mv.Primary = mongo.StateSecondary, h == next
		if h == next {
			mv.State = mongo.StatePrimary
		}
		w.obs.Members[h] = mv
	}
	w.obs.Primary = next
}

func (w *tlsWorld) respec(tls *v1alpha1.TLSSpec) {
	w.m.Spec.TLS = tls
	w.m.Generation++
}

// Turning TLS on for a running set goes through allowTLS and preferTLS to
// requireTLS, one step at a time, each a rolling restart with every member
// reaching every other and the operator reaching every member; turning it
// off goes back the same way. Every step is an event.
func TestTLSTurnedOnAndOffStepByStep(t *testing.T) {
	w, s := newTLSWorld(t, demo(3))
	if !s.TLS.Known || s.TLS.Spec != nil {
		t.Fatalf("no TLS not recorded: %+v", s.TLS)
	}
	w.respec(&v1alpha1.TLSSpec{Mode: "requireTLS"})
	s, steps := w.settle(t, s)
	want := []string{
		"TLSStepStarted: TLS mode no TLS → allowTLS (toward requireTLS)",
		"TLSStepFinished: every member runs TLS mode allowTLS",
		"TLSStepStarted: TLS mode allowTLS → preferTLS (toward requireTLS)",
		"TLSStepFinished: every member runs TLS mode preferTLS",
		"TLSStepStarted: TLS mode preferTLS → requireTLS (toward requireTLS)",
		"TLSStepFinished: every member runs TLS mode requireTLS",
	}
	if err := sameSteps(steps, want); err != nil {
		t.Fatal(err)
	}
	if s.Phase != v1alpha1.PhaseHealthy || s.TLS.Mode() != "requireTLS" || s.TLS.Stepping() {
		t.Fatalf("not settled: %s %+v", s.Phase, s.TLS)
	}
	for name, mode := range w.pods {
		if mode != "requireTLS" {
			t.Fatalf("%s runs %q", name, mode)
		}
	}
	if Running(w.m, s) != w.m {
		t.Fatal("settled, the objects are not the spec's")
	}

	// Off: the person steps down to allowTLS (the schema's rules), then
	// removes spec.tls; the operator walks each step.
	w.respec(&v1alpha1.TLSSpec{Mode: "preferTLS"})
	s, _ = w.settle(t, s)
	w.respec(&v1alpha1.TLSSpec{Mode: "allowTLS"})
	s, _ = w.settle(t, s)
	w.respec(nil)
	s, steps = w.settle(t, s)
	want = []string{
		"TLSStepStarted: TLS mode allowTLS → no TLS (toward no TLS)",
		"TLSStepFinished: every member runs TLS mode no TLS",
	}
	if err := sameSteps(steps, want); err != nil {
		t.Fatal(err)
	}
	for name, mode := range w.pods {
		if mode != "" {
			t.Fatalf("%s runs %q", name, mode)
		}
	}
	if s.Phase != v1alpha1.PhaseHealthy || s.TLS.Spec != nil {
		t.Fatalf("not settled: %s %+v", s.Phase, s.TLS)
	}
}

// spec.tls removed while the members still run preferTLS: the operator
// keeps the certificate Secrets the members run with through each step.
func TestTLSRemovedKeepsTheSecretsUntilOff(t *testing.T) {
	m := demo(3)
	m.Spec.TLS = &v1alpha1.TLSSpec{Mode: "preferTLS", CertificateSecretRef: &v1alpha1.SecretReference{Name: "mine"}}
	w, s := newTLSWorld(t, m)
	w.respec(nil)
	d := Decide(s, w.in())
	s = run(s, d)
	sub := Running(w.m, s)
	if !has(d, "TLSStepStarted") || sub.Spec.TLS == nil || sub.Spec.TLS.Mode != "allowTLS" ||
		sub.Spec.TLS.CertificateSecretRef == nil || sub.Spec.TLS.CertificateSecretRef.Name != "mine" {
		t.Fatalf("step: %v, objects' tls %+v", types(d), sub.Spec.TLS)
	}
	s, _ = w.settle(t, s)
	if s.TLS.Spec != nil || s.Phase != v1alpha1.PhaseHealthy {
		t.Fatalf("not off: %s %+v", s.Phase, s.TLS)
	}
}

// A step waits for the one under way: a mode asked mid-step starts only
// once every member restarted into the step's mode.
func TestTLSStepWaitsForTheOneUnderWay(t *testing.T) {
	w, s := newTLSWorld(t, demo(3))
	w.respec(&v1alpha1.TLSSpec{Mode: "allowTLS"})
	d := Decide(s, w.in())
	s = run(s, d)
	if !has(d, "TLSStepStarted") || !s.TLS.Stepping() {
		t.Fatalf("no step: %v", types(d))
	}
	if d.Action != nil {
		t.Fatalf("acted on an observation older than the step: %+v", d.Action)
	}
	w.respec(&v1alpha1.TLSSpec{Mode: "preferTLS"})
	w.sts = "allowTLS"
	for name, p := range w.obs.Pods {
		p.Outdated = true
		w.obs.Pods[name] = p
	}
	for range 3 {
		d = Decide(s, w.in())
		s = run(s, d)
		if has(d, "TLSStepStarted") || has(d, "TLSStepFinished") {
			t.Fatalf("moved on mid-step: %v", types(d))
		}
		if d.Action != nil {
			s = run(s, Decision{Events: Conclude(*d.Action, nil)})
		}
	}
	if s.Phase != v1alpha1.PhaseRecovering || s.TLS.Mode() != "allowTLS" || !s.TLS.Stepping() {
		t.Fatalf("phase %s: %s, %+v", s.Phase, s.PhaseReason, s.TLS)
	}
}

// A new certificate Secret at the same mode is recorded, no step: the
// objects take it and roll as any template change.
func TestTLSNewSecretAtTheSameModeIsRecorded(t *testing.T) {
	m := demo(3)
	m.Spec.TLS = &v1alpha1.TLSSpec{Mode: "requireTLS"}
	w, s := newTLSWorld(t, m)
	w.respec(&v1alpha1.TLSSpec{Mode: "requireTLS", CertificateSecretRef: &v1alpha1.SecretReference{Name: "mine"}})
	d := Decide(s, w.in())
	s = run(s, d)
	if !has(d, "TLSRecorded") || has(d, "TLSStepStarted") || s.TLS.Stepping() {
		t.Fatalf("%v %+v", types(d), s.TLS)
	}
	if r := Running(w.m, s); r != w.m {
		t.Fatalf("the objects are not the spec's: %+v", r.Spec.TLS)
	}
}

func TestNextTLSMode(t *testing.T) {
	for _, tc := range [][3]string{
		{"", "requireTLS", "allowTLS"}, {"allowTLS", "requireTLS", "preferTLS"}, {"preferTLS", "requireTLS", "requireTLS"},
		{"requireTLS", "", "preferTLS"}, {"preferTLS", "", "allowTLS"}, {"allowTLS", "", ""}, {"preferTLS", "preferTLS", "preferTLS"},
	} {
		if got := nextTLSMode(tc[0], tc[1]); got != tc[2] {
			t.Errorf("%q toward %q: %q, want %q", tc[0], tc[1], got, tc[2])
		}
	}
}

func sameSteps(got, want []string) error {
	if !slices.Equal(got, want) {
		return fmt.Errorf("steps:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	return nil
}
