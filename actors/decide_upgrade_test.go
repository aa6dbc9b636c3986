package actors

import (
	"slices"
	"strings"
	"testing"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// running makes every member report version in buildInfo, and the set fcv.
func (w *world) running(version, fcv string) *world {
	for host, mv := range w.obs.Members {
		mv.Version = version
		w.obs.Members[host] = mv
	}
	w.obs.FCV = fcv
	return w
}

func (w *world) respec(version string) {
	w.m.Spec.Version = version
	w.m.Generation++
}

func upgradeWorld(t *testing.T, version, fcv string) (*world, State) {
	t.Helper()
	m := demo(3)
	m.Spec.Version = version
	w := newWorld(m).initiated().running(version, fcv)
	s := healthyState(t, w)
	if s.Version != version || s.Versions.FCV != fcv || s.Versions.Members["demo-2"] != version {
		t.Fatalf("versions not recorded: %q %+v", s.Version, s.Versions)
	}
	return w, s
}

// 6.0 → 7.0: accepted against FCV 6.0, the objects take 7.0 (the roll is
// decide_roll's), the FCV waits until every member reports 7.0 in buildInfo,
// then is set on the primary, and the change ends.
func TestUpgradeRollsThenSetsFCV(t *testing.T) {
	w, s := upgradeWorld(t, "6.0.19", "6.0")
	if Running(w.m, s).Spec.Version != "6.0.19" {
		t.Fatal("Running before a change")
	}
	w.respec("7.0.14")
	d := Decide(s, w.in())
	s = run(s, d)
	if !has(d, "UpgradeStarted") || s.Version != "7.0.14" || s.Upgrade == nil || s.Upgrade.From != "6.0.19" || s.Upgrade.FCV != "6.0" {
		t.Fatalf("not accepted: %v %+v", types(d), s.Upgrade)
	}
	if Running(w.m, s).Spec.Version != "7.0.14" {
		t.Fatal("the objects would not take the new version")
	}
	// Two members restarted on 7.0, one still 6.0 (its pod up to date but
	// buildInfo says otherwise): no FCV yet, whatever the pods say.
	w.running("7.0.14", "6.0")
	mv := w.obs.Members[w.desired[0].Host]
	mv.Version = "6.0.19"
	w.obs.Members[w.desired[0].Host] = mv
	for range 3 {
		d = Decide(s, w.in())
		s = run(s, d)
		if d.Action != nil && d.Action.Kind == ActSetFCV {
			t.Fatalf("FCV set while %s runs 6.0: %v", w.desired[0].Name, types(d))
		}
	}
	if s.Phase != v1alpha1.PhaseRecovering || !strings.Contains(s.PhaseReason, "upgrade to 7.0.14") {
		t.Fatalf("phase %s: %s", s.Phase, s.PhaseReason)
	}
	w.running("7.0.14", "6.0")
	d = Decide(s, w.in())
	if d.Action == nil || d.Action.Kind != ActSetFCV || d.Action.Host != w.obs.Primary {
		t.Fatalf("want the FCV set on the primary: %+v %v", d.Action, types(d))
	}
	s = run(s, d)
	s = run(s, Decision{Events: Conclude(*d.Action, nil)})
	w.running("7.0.14", "7.0")
	d = Decide(s, w.in())
	s = run(s, d)
	got := types(d)
	i, j := slices.Index(got, "FCVSet"), slices.Index(got, "UpgradeFinished")
	if i < 0 || j < i || s.Upgrade != nil || s.Phase != v1alpha1.PhaseHealthy || s.Versions.FCV != "7.0" {
		t.Fatalf("not finished: %v, %s", got, s)
	}
	st := StatusFor(s, w.obs, w.m, "memory", "cluster.local")
	if st.Version != "7.0.14" || st.FeatureCompatibilityVersion != "7.0" || st.Members[0].Version != "7.0.14" {
		t.Fatalf("status %q %q %+v", st.Version, st.FeatureCompatibilityVersion, st.Members[0])
	}
}

// A version MongoDB cannot run on the data is refused once, with a
// condition naming spec.version and the rule, and nothing rolls; setting
// the spec back clears it.
func TestVersionRefused(t *testing.T) {
	for _, tc := range []struct {
		from, fcv, to, rule string
	}{
		{"6.0.19", "6.0", "8.0.4", "one major version at a time"},
		{"7.0.14", "7.0", "6.0.19", "below the replica set's featureCompatibilityVersion 7.0"},
	} {
		w, s := upgradeWorld(t, tc.from, tc.fcv)
		w.respec(tc.to)
		d := Decide(s, w.in())
		s = run(s, d)
		if !has(d, "VersionRefused") || has(d, "UpgradeStarted") || s.Version != tc.from {
			t.Fatalf("%s → %s: %v", tc.from, tc.to, types(d))
		}
		if Running(w.m, s).Spec.Version != tc.from {
			t.Fatalf("%s → %s: the objects would roll", tc.from, tc.to)
		}
		st := StatusFor(s, w.obs, w.m, "memory", "cluster.local")
		c := condition(st, v1alpha1.ConditionStalled)
		if c.Reason != "VersionRefused" || !strings.Contains(c.Message, "spec.version "+tc.to) || !strings.Contains(c.Message, tc.rule) {
			t.Errorf("%s → %s: condition %+v", tc.from, tc.to, c)
		}
		if d = Decide(s, w.in()); has(d, "VersionRefused") || d.Action != nil {
			t.Errorf("refused twice or acted: %v %+v", types(d), d.Action)
		}
		w.respec(tc.from)
		d = Decide(s, w.in())
		s = run(s, d)
		if s.VersionRefused != nil || has(d, "UpgradeStarted") {
			t.Errorf("back to %s: %v %+v", tc.from, types(d), s.VersionRefused)
		}
	}
}

// A downgrade on the FCV's own line rolls, and sets no FCV.
func TestDowngradeOnTheSameLine(t *testing.T) {
	w, s := upgradeWorld(t, "7.0.14", "7.0")
	w.respec("7.0.12")
	d := Decide(s, w.in())
	s = run(s, d)
	if s.Upgrade == nil || !s.Upgrade.Downgrade || s.Version != "7.0.12" {
		t.Fatalf("not accepted: %v", types(d))
	}
	w.running("7.0.12", "7.0")
	for range 3 {
		d = Decide(s, w.in())
		s = run(s, d)
		if d.Action != nil || has(d, "FCVSet") {
			t.Fatalf("acted: %+v %v", d.Action, types(d))
		}
	}
	if s.Upgrade != nil || s.Phase != v1alpha1.PhaseHealthy {
		t.Fatalf("not finished: %s", s)
	}
}

// Without a known FCV nothing is judged (never roll blind); before the set
// is initiated there is no data, and any version is taken.
func TestVersionChangeWaitsForTheFCV(t *testing.T) {
	m := demo(3)
	m.Spec.Version = "6.0.19"
	w := newWorld(m).initiated().running("6.0.19", "")
	s := healthyState(t, w)
	w.respec("7.0.14")
	d := Decide(s, w.in())
	if has(d, "UpgradeStarted") || has(d, "VersionRefused") {
		t.Fatalf("judged without an FCV: %v", types(d))
	}

	fresh := newWorld(demo(3))
	s = run(Initial(), Decide(Initial(), fresh.in()))
	fresh.respec("6.0.19")
	if d := Decide(s, fresh.in()); !has(d, "UpgradeStarted") {
		t.Fatalf("a set without data: %v", types(d))
	}
}

func condition(st v1alpha1.MgorsStatus, typ string) (c struct{ Reason, Message string }) {
	for _, x := range st.Conditions {
		if x.Type == typ {
			c.Reason, c.Message = x.Reason, x.Message
		}
	}
	return c
}
