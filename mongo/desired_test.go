package mongo

import (
	"fmt"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

func mgors(members, arbiters int32, opts ...v1alpha1.MemberOptions) *v1alpha1.Mgors {
	return &v1alpha1.Mgors{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns"},
		Spec:       v1alpha1.MgorsSpec{Members: members, Arbiters: arbiters, MemberOptions: opts},
	}
}

func i32(v int32) *int32 { return &v }
func yes() *bool         { b := true; return &b }

// votesOf renders desired members as "v/p" per member, arbiter as "A".
func votesOf(ds []DesiredMember) []string {
	var out []string
	for _, d := range ds {
		if d.Arbiter {
			out = append(out, "A")
			continue
		}
		s := fmt.Sprintf("%d/%g", d.Votes, d.Priority)
		if d.Hidden {
			s += "h"
		}
		out = append(out, s)
	}
	return out
}

func TestDesiredVotes(t *testing.T) {
	tests := []struct {
		name string
		m    *v1alpha1.Mgors
		want []string
	}{
		{"one", mgors(1, 0), []string{"1/1"}},
		{"two: odd voters", mgors(2, 0), []string{"1/1", "0/0"}},
		{"three", mgors(3, 0), []string{"1/1", "1/1", "1/1"}},
		{"four: 3 voters", mgors(4, 0), []string{"1/1", "1/1", "1/1", "0/0"}},
		{"five", mgors(5, 0), []string{"1/1", "1/1", "1/1", "1/1", "1/1"}},
		{"eight: 7 voters", mgors(8, 0), []string{"1/1", "1/1", "1/1", "1/1", "1/1", "1/1", "1/1", "0/0"}},
		{"nine: 7 voters", mgors(9, 0), []string{"1/1", "1/1", "1/1", "1/1", "1/1", "1/1", "1/1", "0/0", "0/0"}},
		{"PSA", mgors(2, 1), []string{"1/1", "1/1", "A"}},
		{"three plus arbiter: odd", mgors(3, 1), []string{"1/1", "1/1", "0/0", "A"}},
		{"seven plus arbiter", mgors(7, 1), []string{"1/1", "1/1", "1/1", "1/1", "1/1", "1/1", "0/0", "A"}},
		{"default: zero members means 3", mgors(0, 0), []string{"1/1", "1/1", "1/1"}},
		{"explicit votes win over parity", mgors(4, 0, v1alpha1.MemberOptions{Ordinal: 3, Votes: i32(1)}),
			[]string{"1/1", "1/1", "0/0", "1/1"}},
		{"explicit non-voter", mgors(3, 0, v1alpha1.MemberOptions{Ordinal: 1, Votes: i32(0), Priority: i32(0)}),
			[]string{"1/1", "0/0", "0/0"}},
		{"all explicit: even stays", mgors(2, 0, v1alpha1.MemberOptions{Ordinal: 0, Votes: i32(1)}, v1alpha1.MemberOptions{Ordinal: 1, Votes: i32(1)}),
			[]string{"1/1", "1/1"}},
		{"explicit voters beyond 7 keep theirs first", mgors(9, 0, v1alpha1.MemberOptions{Ordinal: 7, Votes: i32(1)}, v1alpha1.MemberOptions{Ordinal: 8, Votes: i32(1)}),
			[]string{"1/1", "1/1", "1/1", "1/1", "1/1", "0/0", "0/0", "1/1", "1/1"}},
		{"eight explicit voters capped", mgors(8, 0, explicitVoters(8)...),
			[]string{"1/1", "1/1", "1/1", "1/1", "1/1", "1/1", "1/1", "0/0"}},
		{"hidden member", mgors(3, 0, v1alpha1.MemberOptions{Ordinal: 2, Hidden: yes(), Priority: i32(0)}),
			[]string{"1/1", "1/1", "1/0h"}},
		{"priorities", mgors(3, 0, v1alpha1.MemberOptions{Ordinal: 0, Priority: i32(10)}, v1alpha1.MemberOptions{Ordinal: 2, Priority: i32(0)}),
			[]string{"1/10", "1/1", "1/0"}},
		{"parity skips the last electable member", mgors(2, 0, v1alpha1.MemberOptions{Ordinal: 0, Priority: i32(0)}),
			[]string{"0/0", "1/1"}},
		{"cap skips the last electable member", mgors(8, 0, onlyLastElectable(8)...),
			[]string{"1/0", "1/0", "1/0", "1/0", "1/0", "1/0", "0/0", "1/5"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := Desired(tt.m, "cluster.local")
			if got := votesOf(ds); !slices.Equal(got, tt.want) {
				t.Fatalf("votes %v, want %v", got, tt.want)
			}
			c := InitialConfig(tt.m.ReplSetName(), ds, tt.m.Spec.ReplicaSet)
			if err := Validate(c); err != nil {
				t.Fatalf("initial config invalid: %v", err)
			}
		})
	}
}

// onlyLastElectable is n explicit voters of which only the last may be primary.
func onlyLastElectable(n int32) []v1alpha1.MemberOptions {
	out := explicitVoters(n)
	for i := range out {
		out[i].Priority = i32(0)
	}
	out[n-1].Priority = i32(5)
	return out
}

func explicitVoters(n int32) []v1alpha1.MemberOptions {
	var out []v1alpha1.MemberOptions
	for i := range n {
		out = append(out, v1alpha1.MemberOptions{Ordinal: i, Votes: i32(1)})
	}
	return out
}

func TestDesiredHostsAndNames(t *testing.T) {
	m := mgors(2, 1, v1alpha1.MemberOptions{Ordinal: 1, Tags: map[string]string{"zone": "b"}})
	ds := Desired(m, "example.org")
	want := []DesiredMember{
		{Ordinal: 0, Name: "db-0", Host: "db-0.db-svc.ns.svc.example.org:27017", Votes: 1, Priority: 1},
		{Ordinal: 1, Name: "db-1", Host: "db-1.db-svc.ns.svc.example.org:27017", Votes: 1, Priority: 1, Tags: map[string]string{"zone": "b"}},
		{Ordinal: 0, Name: "db-arbiter-0", Host: "db-arbiter-0.db-svc.ns.svc.example.org:27017", Arbiter: true, Votes: 1},
	}
	if len(ds) != len(want) {
		t.Fatalf("got %d members", len(ds))
	}
	for i := range want {
		g, w := ds[i], want[i]
		if g.Ordinal != w.Ordinal || g.Name != w.Name || g.Host != w.Host || g.Arbiter != w.Arbiter || g.Votes != w.Votes || g.Priority != w.Priority || fmt.Sprint(g.Tags) != fmt.Sprint(w.Tags) {
			t.Errorf("member %d: %+v, want %+v", i, g, w)
		}
	}
}

func TestInitialConfig(t *testing.T) {
	m := mgors(3, 1)
	m.Spec.ReplicaSetName = "rs0"
	m.Spec.ReplicaSet = v1alpha1.ReplicaSetSettings{ElectionTimeoutMillis: i32(5000), ChainingAllowed: new(false)}
	c := InitialConfig(m.ReplSetName(), Desired(m, "cluster.local"), m.Spec.ReplicaSet)
	if c.ID != "rs0" || c.Version != 1 || c.ProtocolVersion != 1 || c.Term != 0 {
		t.Fatalf("header: %+v", c)
	}
	ids := []int{}
	for _, x := range c.Members {
		ids = append(ids, x.ID)
	}
	if !slices.Equal(ids, []int{0, 1, 2, 3}) || !c.Members[3].ArbiterOnly || c.Members[3].Priority != 0 {
		t.Fatalf("members: %+v", c.Members)
	}
	s := c.Settings
	if s == nil || *s.ElectionTimeoutMillis != 5000 || *s.ChainingAllowed || s.HeartbeatIntervalMillis != nil || s.ReplicaSetID != nil {
		t.Fatalf("settings only where the spec set them: %+v", s)
	}
	if c2 := InitialConfig("x", Desired(mgors(1, 0), "d"), v1alpha1.ReplicaSetSettings{}); c2.Settings != nil {
		t.Fatalf("no settings in spec, none in config: %+v", c2.Settings)
	}
}
