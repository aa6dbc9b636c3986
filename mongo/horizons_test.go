package mongo

import (
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// horizonSet is a healthy three-member set as Plan sees it.
func horizonSet(t *testing.T) (Config, *Status, []DesiredMember, Hosts) {
	t.Helper()
	hosts := []string{"a:27017", "b:27017", "c:27017"}
	c := Config{ID: "rs", Version: 3}
	var desired []DesiredMember
	for i, h := range hosts {
		c.Members = append(c.Members, NewMember(i, h))
		desired = append(desired, DesiredMember{Ordinal: int32(i), Host: h, Votes: 1, Priority: 1})
	}
	st := &Status{Set: "rs", Members: []MemberStatus{
		{Name: "a:27017", Health: 1, State: StatePrimary, ConfigVersion: 3},
		{Name: "b:27017", Health: 1, State: StateSecondary, ConfigVersion: 3},
		{Name: "c:27017", Health: 1, State: StateSecondary, ConfigVersion: 3},
	}}
	return c, st, desired, NewHosts(hosts...)
}

func TestPlanHorizons(t *testing.T) {
	c, st, desired, reach := horizonSet(t)
	for i := range desired {
		desired[i].Horizons = map[string]string{"external": string(rune('a'+i)) + ".example.com:27017"}
	}
	s := Plan(c, st, desired, reach, v1alpha1.ReplicaSetSettings{})
	if s.Kind != ChangeHorizons {
		t.Fatalf("step %s (%s), want ChangeHorizons", s.Kind, s.Reason)
	}
	for i, m := range s.Config.Members {
		if got := m.Horizons()["external"]; got != desired[i].Horizons["external"] {
			t.Errorf("member %d horizon %q", i, got)
		}
	}
	// Round trip through BSON, as replSetGetConfig returns it: then Done.
	raw, err := bson.Marshal(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	var back Config
	if err := bson.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	for i := range st.Members {
		st.Members[i].ConfigVersion = back.Version
	}
	if s := Plan(back, st, desired, reach, v1alpha1.ReplicaSetSettings{}); s.Kind != Done {
		t.Fatalf("after the reconfig: %s (%s), want Done", s.Kind, s.Reason)
	}
	// Removing them is one reconfig too.
	for i := range desired {
		desired[i].Horizons = nil
	}
	s = Plan(back, st, desired, reach, v1alpha1.ReplicaSetSettings{})
	if s.Kind != ChangeHorizons || len(s.Config.Members[0].Horizons()) > 0 || !sameHorizonNames(s.Config) {
		t.Fatalf("removal: %s %v", s.Kind, s.Config.Members)
	}
}

// Different horizon names on different members are never sent.
func TestPlanHorizonsMixedNamesWait(t *testing.T) {
	c, st, desired, reach := horizonSet(t)
	desired[0].Horizons = map[string]string{"external": "x.example.com:1"}
	s := Plan(c, st, desired, reach, v1alpha1.ReplicaSetSettings{})
	if s.Kind != Wait || !strings.Contains(s.Reason, "horizons differ") {
		t.Fatalf("%s (%s), want a Wait", s.Kind, s.Reason)
	}
}

// While the config has horizons, a member without its own does not join.
func TestPlanAdditionWaitsForHorizon(t *testing.T) {
	c, st, desired, _ := horizonSet(t)
	for i := range c.Members {
		c.Members[i].setHorizons(map[string]string{"external": string(rune('a'+i)) + ".example.com:27017"})
		desired[i].Horizons = c.Members[i].Horizons()
	}
	desired = append(desired, DesiredMember{Ordinal: 3, Host: "d:27017", Votes: 1, Priority: 1})
	reach := NewHosts("a:27017", "b:27017", "c:27017", "d:27017")
	s := Plan(c, st, desired, reach, v1alpha1.ReplicaSetSettings{})
	if s.Kind != Wait || !strings.Contains(s.Reason, "external address") {
		t.Fatalf("%s (%s), want a Wait for d's address", s.Kind, s.Reason)
	}
	desired[3].Horizons = map[string]string{"external": "d.example.com:27017"}
	s = Plan(c, st, desired, reach, v1alpha1.ReplicaSetSettings{})
	if s.Kind != AddMember || s.Config.Member("d:27017").Horizons()["external"] != "d.example.com:27017" {
		t.Fatalf("%s (%s), want d added with its horizon", s.Kind, s.Reason)
	}
}

// sameHorizonNames reports whether every member of c has the same horizon
// names, as mongod requires of any config it accepts.
func sameHorizonNames(c Config) bool {
	for _, m := range c.Members {
		if !slices.Equal(horizonNames(m.Horizons()), horizonNames(c.Members[0].Horizons())) {
			return false
		}
	}
	return true
}

// External access given while the set grows: the config has no horizons,
// every desired member has its address. The new member joins without
// horizons (one with them beside members without is a config mongod
// refuses, and rule 2 would send it again at every decision), then one
// reconfig gives every member its horizons.
func TestPlanAdditionJoinsWithTheConfigsHorizonNames(t *testing.T) {
	c, st, desired, _ := horizonSet(t)
	desired = append(desired, DesiredMember{Ordinal: 3, Host: "d:27017", Votes: 1, Priority: 1})
	for i := range desired {
		desired[i].Horizons = map[string]string{"external": string(rune('a'+i)) + ".example.com:27017"}
	}
	reach := NewHosts("a:27017", "b:27017", "c:27017", "d:27017")
	s := Plan(c, st, desired, reach, v1alpha1.ReplicaSetSettings{})
	if s.Kind != AddMember || !sameHorizonNames(s.Config) {
		t.Fatalf("%s (%s): want d added without horizons, got %v", s.Kind, s.Reason, s.Config.Members)
	}
	st.Members = append(st.Members, MemberStatus{Name: "d:27017", Health: 1, State: StateSecondary})
	for range 4 { // its vote, then the horizons
		for i := range st.Members {
			st.Members[i].ConfigVersion = s.Config.Version
		}
		s = Plan(s.Config, st, desired, reach, v1alpha1.ReplicaSetSettings{})
		if !s.Reconfig() || !sameHorizonNames(s.Config) {
			t.Fatalf("%s (%s): %v", s.Kind, s.Reason, s.Config.Members)
		}
		if s.Kind == ChangeHorizons {
			break
		}
	}
	if s.Kind != ChangeHorizons || s.Config.Member("d:27017").Horizons()["external"] != "d.example.com:27017" {
		t.Fatalf("%s (%s): want every member's horizons in one reconfig", s.Kind, s.Reason)
	}
}

// The horizon renamed while the set grows: the members in the config take
// the new name first, and the new member joins with it after.
func TestPlanHorizonRenameBeforeAddition(t *testing.T) {
	c, st, desired, _ := horizonSet(t)
	for i := range c.Members {
		c.Members[i].setHorizons(map[string]string{"old": string(rune('a'+i)) + ".example.com:27017"})
	}
	desired = append(desired, DesiredMember{Ordinal: 3, Host: "d:27017", Votes: 1, Priority: 1})
	for i := range desired {
		desired[i].Horizons = map[string]string{"new": string(rune('a'+i)) + ".example.com:27017"}
	}
	reach := NewHosts("a:27017", "b:27017", "c:27017", "d:27017")
	s := Plan(c, st, desired, reach, v1alpha1.ReplicaSetSettings{})
	if s.Kind != ChangeHorizons || !sameHorizonNames(s.Config) || s.Config.Member("d:27017") != nil {
		t.Fatalf("%s (%s): want the three members renamed first, got %v", s.Kind, s.Reason, s.Config.Members)
	}
}

// A member that is not desired and still in the config (its removal
// cannot go yet) keeps the config's horizons: no change of names is sent
// past it.
func TestPlanHorizonChangeWaitsForRemovals(t *testing.T) {
	c, st, desired, reach := horizonSet(t)
	for i := range c.Members {
		c.Members[i].setHorizons(map[string]string{"external": string(rune('a'+i)) + ".example.com:27017"})
		desired[i].Horizons = nil
	}
	p := planner{cur: c, st: st, want: desiredByHost(desired[:2]), order: sortedDesired(desired[:2]), reachable: reach}
	if steps := p.horizonChange(); len(steps) != 0 {
		t.Fatalf("horizons removed past c, which is still in the config: %v", steps[0].Config.Members)
	}
}
