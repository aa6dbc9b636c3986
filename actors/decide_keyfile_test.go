package actors

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
)

// keyfileWorld plays the keyfile Secret, the StatefulSet and the pods of a
// keyfile rotation: keys are named by fingerprint; the Secret takes each
// step's keys when RotateKeyfile runs; the StatefulSet takes the step the
// objects name when ensured; a pod starts with the Secret's keys and the
// StatefulSet's step.
type keyfileWorld struct {
	*world
	secret  []string            // the Secret's keys
	sts     string              // the step the StatefulSet template names
	podKeys map[string][]string // the keys each member's pod runs
	podStep map[string]string   // the step each pod's template named
	events  []Event             // every event, as the log holds them
}

func newKeyfileWorld(t *testing.T) (*keyfileWorld, State) {
	t.Helper()
	w := &keyfileWorld{world: newWorld(demo(3)).initiated(), secret: []string{"0ld0ld00"},
		podKeys: map[string][]string{}, podStep: map[string]string{}}
	for name, p := range w.obs.Pods {
		p.Ready = true
		w.obs.Pods[name] = p
		w.podKeys[name] = w.secret
	}
	w.obs.KeyfileKeys = w.secret
	return w, healthyState(t, w.world)
}

// check holds the invariant of every moment: each member reaches each
// other (it dials with its first key, then its second; the other accepts
// any of its keys), and the operator's first key opens every member.
func (w *keyfileWorld) check(t *testing.T) {
	t.Helper()
	for a, ka := range w.podKeys {
		for b, kb := range w.podKeys {
			if !slices.ContainsFunc(ka, func(k string) bool { return slices.Contains(kb, k) }) {
				t.Fatalf("%s %v cannot authenticate to %s %v", a, ka, b, kb)
			}
		}
		if !slices.Contains(ka, w.secret[0]) {
			t.Fatalf("the operator's key %s does not open %s %v", w.secret[0], a, ka)
		}
	}
}

// step plays one decision and its action; false when nothing was left to do.
func (w *keyfileWorld) step(t *testing.T, s State) (State, bool) {
	t.Helper()
	w.obs.ObjectsReady = w.sts == Running(w.m, s).Annotations[kube.KeyfileRotationAnnotation]
	for name, p := range w.obs.Pods {
		p.Outdated = w.podStep[name] != w.sts
		w.obs.Pods[name] = p
	}
	w.obs.KeyfileKeys = w.secret
	w.check(t)
	d := Decide(s, w.in())
	s = run(s, d)
	w.events = append(w.events, d.Events...)
	if d.Action == nil {
		return s, len(d.Events) > 0
	}
	switch a := d.Action; a.Kind {
	case ActEnsureObjects:
		w.sts = Running(w.m, s).Annotations[kube.KeyfileRotationAnnotation]
	case ActRestartMember:
		w.podKeys[a.Host], w.podStep[a.Host] = w.secret, w.sts
	case ActStepDown:
		(&tlsWorld{world: w.world}).stepDown(a.Host)
	case ActRotateKeyfile:
		if a.Host != w.m.KeyfileSecretName() {
			t.Fatalf("RotateKeyfile of %q", a.Host)
		}
		switch a.Step {
		case 1:
			w.secret = []string{w.secret[0], "ne3ne3ne"}
		case 2:
			w.secret = []string{w.secret[1], w.secret[0]}
		case 3:
			w.secret = w.secret[:1]
		}
	case ActRemoveAnnotation:
		delete(w.m.Annotations, a.Host)
		w.obs.RotateKeyfile = ""
	default:
		t.Fatalf("unexpected action %+v", a)
	}
	c := Conclude(*d.Action, nil)
	w.events = append(w.events, c...)
	return run(s, Decision{Events: c}), true
}

func (w *keyfileWorld) settle(t *testing.T, s State) State {
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

func (w *keyfileWorld) ask(request string) {
	if w.m.Annotations == nil {
		w.m.Annotations = map[string]string{}
	}
	w.m.Annotations[RotateKeyfileAnnotation] = request
	w.obs.RotateKeyfile = request
}

func keyfileSteps(events []Event) []string {
	var out []string
	for _, e := range events {
		switch e := e.(type) {
		case KeyfileRotationStarted:
			out = append(out, "started "+e.Old)
		case KeyfileRotationStep:
			out = append(out, e.Type()+" "+strings.Join(e.Keys, ","))
		case KeyfileStepRolled, KeyfileRotated:
			out = append(out, e.Type())
		case ActionStarted:
			if e.Action == ActRestartMember || e.Action == ActStepDown || e.Action == ActRemoveAnnotation {
				out = append(out, string(e.Action)+" "+e.Target)
			}
		}
	}
	return out
}

// A rotation asked on a Healthy set writes [old, new], [new, old], [new],
// each followed by a rolling restart (secondaries first, the primary after a
// step-down); at no moment do two members fail to authenticate to each
// other; the annotation goes at the end and the set is Healthy on the new key.
func TestKeyfileRotationRollsThreeSteps(t *testing.T) {
	w, s := newKeyfileWorld(t)
	w.ask("2026-12-02")
	s = w.settle(t, s)
	if s.Phase != v1alpha1.PhaseHealthy || s.Keyfile.Rotating() || s.Keyfile.Template != "2026-12-02/3" {
		t.Fatalf("after the rotation: %s, keyfile %+v", s, s.Keyfile)
	}
	if !slices.Equal(w.secret, []string{"ne3ne3ne"}) {
		t.Fatalf("the Secret holds %v", w.secret)
	}
	for name, k := range w.podKeys {
		if !slices.Equal(k, w.secret) {
			t.Fatalf("%s runs %v", name, k)
		}
	}
	if _, ok := w.m.Annotations[RotateKeyfileAnnotation]; ok || s.Handled[RotateKeyfileAnnotation] != "" {
		t.Fatalf("the annotation stays: %v, handled %v", w.m.Annotations, s.Handled)
	}
	roll := []string{"RestartMember demo-2", "RestartMember demo-1", "StepDown demo-0.demo-headless.db.svc.cluster.local:27017", "RestartMember demo-0"}
	want := []string{"started 0ld0ld00", "KeyfileRotationStep 0ld0ld00,ne3ne3ne"}
	want = append(append(want, roll...), "KeyfileStepRolled", "KeyfileRotationStep ne3ne3ne,0ld0ld00")
	want = append(append(want, "RestartMember demo-0", "RestartMember demo-2", "StepDown demo-1.demo-headless.db.svc.cluster.local:27017", "RestartMember demo-1"),
		"KeyfileStepRolled", "KeyfileRotationStep ne3ne3ne")
	got := keyfileSteps(w.events)
	// the primary moves with each step-down: compare the shape, not the names
	if len(got) < len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("steps:\n%s", strings.Join(got, "\n"))
	}
	for _, e := range []string{"KeyfileRotationStep ne3ne3ne", "KeyfileRotated", "RemoveAnnotation " + RotateKeyfileAnnotation} {
		if !slices.Contains(got, e) {
			t.Fatalf("no %q in:\n%s", e, strings.Join(got, "\n"))
		}
	}
	var rolled, downs int
	for _, g := range got {
		if g == "KeyfileStepRolled" {
			rolled++
		}
		if strings.HasPrefix(g, "StepDown") {
			downs++
		}
	}
	if rolled != 3 || downs != 3 {
		t.Fatalf("%d steps rolled, %d step-downs:\n%s", rolled, downs, strings.Join(got, "\n"))
	}
	// Never a key in an event: only fingerprints of 8 hex digits appear.
	for _, e := range w.events {
		if k, ok := e.(KeyfileRotationStep); ok {
			for _, fp := range k.Keys {
				if len(fp) != 8 {
					t.Fatalf("key named %q", fp)
				}
			}
		}
	}
	// The annotation set again (it was removed) is a new request.
	w.ask("2027-01-01")
	if d := Decide(s, w.in()); d.Action == nil || d.Action.Kind != ActRotateKeyfile || d.Action.From != "ne3ne3ne" {
		t.Fatalf("a new request: %+v", d)
	}
}

// An operator restarted in the middle rebuilds its state from the log (the
// events folded from scratch equal the live state) and resumes: at each
// moment of the rotation a restart leads to the same end.
func TestKeyfileRotationResumesFromTheLog(t *testing.T) {
	for cut := 1; cut < 80; cut += 7 {
		w, s := newKeyfileWorld(t)
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
			t.Fatalf("cut %d: the replayed state differs:\n%+v\n%+v", cut, replayed.Keyfile, s.Keyfile)
		}
		s = w.settle(t, replayed)
		if s.Keyfile.Rotating() || !slices.Equal(w.secret, []string{"ne3ne3ne"}) || s.Phase != v1alpha1.PhaseHealthy {
			t.Fatalf("cut %d: %s keyfile %+v, Secret %v", cut, s, s.Keyfile, w.secret)
		}
	}
}

// A Secret write whose result was lost in a crash is settled from the
// Secret's keys: written → finished, and the step goes on; not written →
// failed, and it is written again after the back-off.
func TestKeyfileWriteInFlightIsSettledFromTheSecret(t *testing.T) {
	for _, written := range []bool{true, false} {
		w, s := newKeyfileWorld(t)
		w.ask("r1")
		d := Decide(s, w.in())
		if d.Action == nil || d.Action.Kind != ActRotateKeyfile || d.Action.Step != 1 {
			t.Fatalf("first decision: %+v %v", d.Action, types(d))
		}
		s = run(s, d) // ActionStarted is durable; the result is lost
		if written {
			w.secret = []string{"0ld0ld00", "ne3ne3ne"}
		}
		w.obs.KeyfileKeys = w.secret
		d = Decide(s, w.in())
		got := types(d)
		wantFirst := "ActionFailed"
		if written {
			wantFirst = "ActionFinished"
		}
		if len(got) == 0 || got[0] != wantFirst {
			t.Fatalf("written %v: %v", written, got)
		}
		if written && !slices.Contains(got, "KeyfileRotationStep") {
			t.Fatalf("written: no step recorded: %v", got)
		}
		s = run(s, d)
		if !written && (s.LastFailure == nil || s.LastFailure.Action != ActRotateKeyfile) {
			t.Fatalf("not written: last failure %+v", s.LastFailure)
		}
	}
}

func TestKeyfileRotationRequests(t *testing.T) {
	cases := []struct {
		name    string
		prepare func(w *keyfileWorld, s *State)
		want    []string
		action  ActionKind
	}{
		{"none asked", func(*keyfileWorld, *State) {}, nil, ""},
		{"asked on a Healthy set", func(w *keyfileWorld, _ *State) { w.ask("r1") },
			[]string{"ApprovalAccepted", "KeyfileRotationStarted", "ActionStarted"}, ActRotateKeyfile},
		{"asked while Recovering", func(w *keyfileWorld, s *State) {
			w.ask("r1")
			s.Phase = v1alpha1.PhaseRecovering
		}, nil, ""},
		{"asked while the Secret holds two keys", func(w *keyfileWorld, _ *State) {
			w.ask("r1")
			w.obs.KeyfileKeys = []string{"aaaaaaaa", "bbbbbbbb"}
		}, []string{"ApprovalRefused"}, ""},
		{"asked with the user's keyfile Secret", func(w *keyfileWorld, _ *State) {
			w.ask("r1")
			w.m.Spec.Auth.KeyfileSecretRef = &v1alpha1.SecretReference{Name: "mine"}
		}, []string{"ApprovalRefused"}, ""},
		{"asked and the Secret unread", func(w *keyfileWorld, _ *State) {
			w.ask("r1")
			w.obs.KeyfileKeys = nil
		}, nil, ""},
		{"asked while a TLS step runs", func(w *keyfileWorld, s *State) {
			w.ask("r1")
			s.TLS = TLSRoll{Known: true, Spec: &v1alpha1.TLSSpec{Mode: "allowTLS"}}
		}, nil, ""},
		{"handled and still there", func(w *keyfileWorld, s *State) {
			w.ask("r1")
			s.Handled = map[string]string{RotateKeyfileAnnotation: "r1"}
		}, []string{"ActionStarted"}, ActRemoveAnnotation},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, s := newKeyfileWorld(t)
			c.prepare(w, &s)
			d := Decide(s, w.in())
			var kinds []string
			for _, ty := range types(d) {
				if ty != "MembersObserved" && ty != "ProblemsObserved" && ty != "PhaseChanged" {
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

// The fold: each event moves the state as the design says, and the
// template the objects name stays after the rotation.
func TestKeyfileFold(t *testing.T) {
	s := Initial()
	for _, e := range []Event{
		KeyfileRotationStarted{Request: "r", Old: "aaaaaaaa"},
		KeyfileRotationStep{Request: "r", Step: 1, Keys: []string{"aaaaaaaa", "bbbbbbbb"}},
	} {
		s = Evolve(s, s.Seq+1, t0, e)
	}
	if k := s.Keyfile; !k.Rotating() || k.Step != 1 || !k.Rolling || k.Old != "aaaaaaaa" || k.New != "bbbbbbbb" || k.Template != "r/1" {
		t.Fatalf("after step 1: %+v", k)
	}
	s = Evolve(s, s.Seq+1, t0, KeyfileStepRolled{Request: "r", Step: 1})
	if s.Keyfile.Rolling {
		t.Fatalf("rolled: %+v", s.Keyfile)
	}
	s = Evolve(s, s.Seq+1, t0, KeyfileRotated{Request: "r", Old: "aaaaaaaa", New: "bbbbbbbb"})
	if k := s.Keyfile; k.Rotating() || k.Template != "r/1" {
		t.Fatalf("rotated: %+v", k)
	}
	m := Running(demo(3), s)
	if m.Annotations[kube.KeyfileRotationAnnotation] != "r/1" {
		t.Fatalf("Running: %v", m.Annotations)
	}
}
