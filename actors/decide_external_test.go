package actors

import (
	"strings"
	"testing"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo"
)

// externalDemo is a healthy three-member set to which spec.externalAccess
// is then added.
func externalDemo(t *testing.T) (*world, State) {
	t.Helper()
	w := newWorld(demo(3)).initiated()
	s := healthyState(t, w)
	respec(w, func(m *v1alpha1.Mgors) {
		m.Spec.ExternalAccess = &v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalNodePort, Horizon: "outside"}
	})
	return w, s
}

func seen(addrs map[string]string, why string) map[string]ExternalObserved {
	out := map[string]ExternalObserved{}
	for pod, a := range addrs {
		out[pod] = ExternalObserved{Address: a}
		if a == "" {
			out[pod] = ExternalObserved{Why: why}
		}
	}
	return out
}

// What is recorded, and which horizons the members get, for each case.
func TestExternalRecordAndHorizons(t *testing.T) {
	m := demo(2)
	m.Spec.ExternalAccess = &v1alpha1.ExternalAccessSpec{}
	desired := mongo.Desired(m, "cluster.local")
	cur := mongo.InitialConfig("demo", desired, m.Spec.ReplicaSet)
	withOld := cur.Clone()
	for i := range withOld.Members {
		withOld.Members[i].Extra = map[string]any{"horizons": map[string]string{"external": "old-" + desired[i].Name + ":1"}}
	}
	for _, tc := range []struct {
		name     string
		spec     bool
		obs      map[string]ExternalObserved
		cur      *mongo.Config
		missing  string
		horizons []string // per desired member, "" for none
	}{
		{name: "no externalAccess", cur: &withOld, horizons: []string{"", ""}},
		{name: "every address known", spec: true, cur: &cur,
			obs:      seen(map[string]string{"demo-0": "a.example.com:31000", "demo-1": "b.example.com:31001"}, ""),
			horizons: []string{"a.example.com:31000", "b.example.com:31001"}},
		{name: "one pending keeps the config's", spec: true, cur: &withOld,
			obs:      seen(map[string]string{"demo-0": "a.example.com:31000", "demo-1": ""}, "its load balancer has no address yet"),
			missing:  "demo-1: its load balancer has no address yet",
			horizons: []string{"old-demo-0:1", "old-demo-1:1"}},
		{name: "one not observed, config without horizons", spec: true, cur: &cur,
			obs:     seen(map[string]string{"demo-0": "a.example.com:31000"}, ""),
			missing: "demo-1: not observed yet", horizons: []string{"", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mm := m.DeepCopy()
			if !tc.spec {
				mm.Spec.ExternalAccess = nil
			}
			e := externalRecord(mm, desired, tc.obs)
			if e.Missing != tc.missing {
				t.Errorf("missing %q, want %q", e.Missing, tc.missing)
			}
			var v *ExternalView
			if s := foldExternal(State{}, e); s.External != nil {
				v = s.External
			}
			if (v == nil) == tc.spec {
				t.Fatalf("view %+v with spec %v", v, tc.spec)
			}
			got := withHorizons(desired, v, tc.cur)
			for i, want := range tc.horizons {
				var h string
				for _, x := range got[i].Horizons {
					h = x
				}
				if h != want {
					t.Errorf("%s horizon %q, want %q", desired[i].Name, h, want)
				}
			}
			if desired[0].Horizons != nil {
				t.Error("withHorizons modified its input")
			}
		})
	}
}

// Adding spec.externalAccess: the addresses are recorded, the set leaves
// Healthy, one reconfig sets every member's horizon, and the status shows
// the external connection string (without a password).
func TestExternalAccessReconfig(t *testing.T) {
	w, s := externalDemo(t)
	w.obs.External = seen(map[string]string{
		"demo-0": "db-0.example.com:31000", "demo-1": "db-1.example.com:31001", "demo-2": "db-2.example.com:31002"}, "")
	var cfg *mongo.Config
	for range 6 {
		d := Decide(s, w.in())
		s = run(s, d)
		if d.Action != nil && d.Action.Kind == ActReconfig {
			cfg = d.Action.Config
			break
		}
	}
	if cfg == nil {
		t.Fatalf("no reconfig; state %s", s)
	}
	if s.External == nil || s.External.Missing != "" || len(s.External.Addresses) != 3 {
		t.Fatalf("recorded %+v", s.External)
	}
	for _, mem := range cfg.Members {
		name, _, _ := strings.Cut(mem.Host, ".")
		if got := mem.Horizons()["outside"]; !strings.HasPrefix(got, strings.Replace(name, "demo", "db", 1)+".example.com:") {
			t.Errorf("%s horizons %v", mem.Host, mem.Horizons())
		}
	}
	st := StatusFor(s, w.obs, w.m, "memory", "cluster.local")
	want := "mongodb://db-0.example.com:31000,db-1.example.com:31001,db-2.example.com:31002/?replicaSet=demo&authSource=admin&tls=true"
	if st.ExternalConnectionString != want {
		t.Errorf("status %q, want %q", st.ExternalConnectionString, want)
	}
}

// While one address is missing nothing is reconfigured, and the status
// has no external connection string.
func TestExternalAccessWaitsForEveryAddress(t *testing.T) {
	w, s := externalDemo(t)
	w.obs.External = seen(map[string]string{
		"demo-0": "db-0.example.com:31000", "demo-1": "", "demo-2": "db-2.example.com:31002"}, "its load balancer has no address yet")
	for range 6 {
		d := Decide(s, w.in())
		s = run(s, d)
		if d.Action != nil && d.Action.Kind == ActReconfig {
			t.Fatalf("reconfig while an address is missing: %+v", d.Action.Config.Members)
		}
	}
	if s.External == nil || !strings.Contains(s.External.Missing, "demo-1") {
		t.Fatalf("recorded %+v", s.External)
	}
	if st := StatusFor(s, w.obs, w.m, "memory", "cluster.local"); st.ExternalConnectionString != "" {
		t.Errorf("status %q", st.ExternalConnectionString)
	}
}
