package actors

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// mongodShows makes every answering data member report the runtime options.
func (w *world) mongodShows(params map[string]string, oplogMB int64) *world {
	w.obs.Mongod = map[string]MongodView{}
	for host, mv := range w.obs.Members {
		if mv.Answers && !mv.Arbiter {
			v := MongodView{Parameters: map[string]string{}, OplogSizeMB: oplogMB}
			for k, val := range params {
				v.Parameters[k] = val
			}
			w.obs.Mongod[host] = v
		}
	}
	return w
}

func configWorld(t *testing.T) (*world, State) {
	t.Helper()
	m := demo(3)
	m.Spec.Config = &v1alpha1.MongodConfig{WiredTigerCacheSizeGB: "1",
		SetParameter: map[string]v1alpha1.ParameterValue{"logLevel": "0", "ttlMonitorSleepSecs": "60"}}
	w := newWorld(m).initiated().mongodShows(map[string]string{"logLevel": "0"}, 990)
	s := healthyState(t, w)
	if s.MongodOptions["setParameter.logLevel"] != "0" || s.MongodOptions["wiredTigerCacheSizeGB"] != "1" {
		t.Fatalf("options not recorded: %v", s.MongodOptions)
	}
	return w, s
}

func respec(w *world, change func(m *v1alpha1.Mgors)) {
	change(w.m)
	w.m.Generation++
}

// A runtime parameter's new value is recorded as a run-time change and set
// on each member in turn with setParameter; nothing restarts, and the set
// is Healthy again once every member shows it.
func TestRuntimeParameterAppliedWithoutRestart(t *testing.T) {
	w, s := configWorld(t)
	respec(w, func(m *v1alpha1.Mgors) { m.Spec.Config.SetParameter["logLevel"] = "01" })
	applied := map[string]bool{}
	for range 10 {
		d := Decide(s, w.in())
		s = run(s, d)
		for _, e := range d.Events {
			if c, ok := e.(ConfigChanged); ok {
				if !slices.Equal(c.Runtime, []string{"setParameter.logLevel 0 → 01"}) || len(c.Restart) > 0 {
					t.Fatalf("classified %+v", c)
				}
			}
		}
		if d.Action == nil {
			continue
		}
		if d.Action.Kind != ActApplyConfig || d.Action.Parameters["logLevel"] != "1" || d.Action.OplogSizeMB != 0 {
			t.Fatalf("want ApplyConfig logLevel=1, got %+v", d.Action)
		}
		if applied[d.Action.Host] {
			t.Fatalf("applied twice to %s", d.Action.Host)
		}
		applied[d.Action.Host] = true
		s = run(s, Decision{Events: Conclude(*d.Action, nil)})
		v := w.obs.Mongod[d.Action.Host]
		v.Parameters["logLevel"] = "1"
		w.obs.Mongod[d.Action.Host] = v
	}
	if len(applied) != 3 || s.Phase != v1alpha1.PhaseHealthy {
		t.Fatalf("applied to %v, phase %s (%s)", applied, s.Phase, s.PhaseReason)
	}
}

// Options mongod reads at startup are recorded as a restart: the roll is
// the outdated pods' (decide_roll.go), not an ApplyConfig.
func TestStartupOptionsAreRecordedAsARestart(t *testing.T) {
	w, s := configWorld(t)
	respec(w, func(m *v1alpha1.Mgors) {
		m.Spec.Config.WiredTigerCacheSizeGB = "2"
		m.Spec.Config.SetParameter["ttlMonitorSleepSecs"] = "30"
		m.Spec.Config.SetParameter["notablescan"] = "true" // added: a restart too
	})
	d := Decide(s, w.in())
	var c ConfigChanged
	for _, e := range d.Events {
		if e, ok := e.(ConfigChanged); ok {
			c = e
		}
	}
	want := []string{"setParameter.notablescan unset → true", "setParameter.ttlMonitorSleepSecs 60 → 30", "wiredTigerCacheSizeGB 1 → 2"}
	if !slices.Equal(c.Restart, want) || len(c.Runtime) > 0 {
		t.Fatalf("classified %+v, want restart %v", c, want)
	}
	if msg := configChangedMessage(c); !strings.Contains(msg, "members roll one at a time") {
		t.Errorf("event message %q", msg)
	}
}

// spec.storage.oplogSizeMB of 990 MB or more resizes each data member's
// oplog at run time (never the arbiter's, which holds none); less is left
// to members whose oplog is created from now on.
func TestOplogResizedAtRunTime(t *testing.T) {
	m := demo(2)
	m.Spec.Arbiters = 1
	w := newWorld(m).initiated().mongodShows(nil, 990)
	w.m.Spec.Storage.OplogSizeMB = ptr.To(int32(500))
	w.obs.Mongod = nil // nothing asked: no runtime option
	s := healthyState(t, w)
	respec(w, func(m *v1alpha1.Mgors) { m.Spec.Storage.OplogSizeMB = ptr.To(int32(2048)) })
	w.mongodShows(nil, 990)
	var hosts []string
	for range 8 {
		d := Decide(s, w.in())
		s = run(s, d)
		if d.Action == nil {
			continue
		}
		if d.Action.Kind != ActApplyConfig || d.Action.OplogSizeMB != 2048 || len(d.Action.Parameters) > 0 {
			t.Fatalf("want an oplog resize, got %+v", d.Action)
		}
		hosts = append(hosts, d.Action.Host)
		s = run(s, Decision{Events: Conclude(*d.Action, nil)})
		v := w.obs.Mongod[d.Action.Host]
		v.OplogSizeMB = 2048
		w.obs.Mongod[d.Action.Host] = v
	}
	if len(hosts) != 2 || slices.ContainsFunc(hosts, func(h string) bool { return strings.Contains(h, "arbiter") }) {
		t.Fatalf("resized %v, want the two data members", hosts)
	}
	if s.Phase != v1alpha1.PhaseHealthy {
		t.Fatalf("phase %s: %s", s.Phase, s.PhaseReason)
	}
	respec(w, func(m *v1alpha1.Mgors) { m.Spec.Storage.OplogSizeMB = ptr.To(int32(100)) })
	d := Decide(s, w.in())
	if d.Action != nil || !has(d, "ConfigChanged") {
		t.Fatalf("100 MB: %+v %v", d.Action, types(d))
	}
	if c := d.Events[slices.IndexFunc(d.Events, func(e Event) bool { return e.Type() == "ConfigChanged" })].(ConfigChanged); len(c.Later) != 1 {
		t.Fatalf("100 MB classified %+v, want later", c)
	}
}

// An ApplyConfig in flight when the operator stopped is settled from the
// members' values: finished when the member has them, failed (and decided
// again) when it does not. A member whose options cannot be read is left
// alone.
func TestApplyConfigSettledFromTheWorld(t *testing.T) {
	w, s := configWorld(t)
	respec(w, func(m *v1alpha1.Mgors) { m.Spec.Config.SetParameter["logLevel"] = "2" })
	var d Decision
	for range 3 {
		d = Decide(s, w.in())
		s = run(s, d)
		if d.Action != nil {
			break
		}
	}
	if d.Action == nil || d.Action.Kind != ActApplyConfig {
		t.Fatalf("no ApplyConfig: %v", types(d))
	}
	host := d.Action.Host
	// Crash: the result is lost. The member does not show it: failed.
	d = Decide(s, w.in())
	if !has(d, "ActionFailed") {
		t.Fatalf("want failed: %v", types(d))
	}
	// It does show it: finished.
	s2 := s
	v := w.obs.Mongod[host]
	v.Parameters["logLevel"] = "2"
	w.obs.Mongod[host] = v
	d = Decide(s2, w.in())
	if !has(d, "ActionFinished") || has(d, "ActionFailed") {
		t.Fatalf("want finished: %v", types(d))
	}
	// Unreadable options: no action on that member.
	for h := range w.obs.Mongod {
		w.obs.Mongod[h] = MongodView{Err: "unauthorized"}
	}
	s2 = run(s2, d)
	if d = Decide(s2, w.in()); d.Action != nil && d.Action.Kind == ActApplyConfig {
		t.Fatalf("acted on unreadable options: %+v", d.Action)
	}
}

// Authenticated as its own user, the operator grants that user
// mongo.ConfigRole on the primary once, before its first ApplyConfig.
func TestConfigRoleGrantedBeforeTheFirstApply(t *testing.T) {
	w, s := configWorld(t)
	s.Auth = AuthOperator
	respec(w, func(m *v1alpha1.Mgors) { m.Spec.Config.SetParameter["logLevel"] = "1" })
	var kinds []ActionKind
	for range 6 {
		d := Decide(s, w.in())
		s = run(s, d)
		if d.Action == nil {
			continue
		}
		kinds = append(kinds, d.Action.Kind)
		if d.Action.Kind == ActGrantConfigRole && d.Action.Host != w.obs.Primary {
			t.Fatalf("granted on %s, not the primary", d.Action.Host)
		}
		s = run(s, Decision{Events: Conclude(*d.Action, nil)})
		if d.Action.Kind == ActApplyConfig {
			v := w.obs.Mongod[d.Action.Host]
			v.Parameters["logLevel"] = "1"
			w.obs.Mongod[d.Action.Host] = v
		}
	}
	want := []ActionKind{ActGrantConfigRole, ActApplyConfig, ActApplyConfig, ActApplyConfig}
	if !slices.Equal(kinds, want) || !s.ConfigRole {
		t.Fatalf("actions %v (role %v), want %v", kinds, s.ConfigRole, want)
	}
}
