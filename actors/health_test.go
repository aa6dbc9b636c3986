package actors

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mgors/operator/mongo"
)

func TestHealthOf(t *testing.T) {
	at := func(sec uint32) mongo.OpTime { return mongo.OpTime{TS: bson.Timestamp{T: sec}, T: 3} }
	cfg := &mongo.Config{Members: []mongo.Member{
		{ID: 0, Host: "a:27017", Votes: 1}, {ID: 1, Host: "b:27017", Votes: 1},
		{ID: 2, Host: "c:27017", Votes: 1}, {ID: 3, Host: "arb:27017", Votes: 1, ArbiterOnly: true},
		{ID: 4, Host: "hidden:27017", Votes: 0},
	}}
	o := Observation{Config: cfg, Primary: "a:27017", Status: &mongo.Status{Term: 3}, Members: map[string]MemberView{
		"a:27017":      {Name: "a", Answers: true, State: mongo.StatePrimary, LastWrite: at(100)},
		"b:27017":      {Name: "b", Answers: true, State: mongo.StateSecondary, LastWrite: at(96)},
		"c:27017":      {Name: "c", State: mongo.StateDown},
		"arb:27017":    {Name: "arb", Answers: true, State: mongo.StateArbiter},
		"hidden:27017": {Name: "hidden", Answers: true, State: mongo.StateSecondary, LastWrite: at(101)},
	}}
	h := healthOf(o)
	if !h.Primary || h.Voters != 4 || h.VotersAnswering != 3 || h.Majority != 3 || h.Term != 3 {
		t.Fatalf("summary %+v", h)
	}
	want := map[string]MemberHealth{
		"a":      {Name: "a", State: "PRIMARY", HasLag: true},
		"b":      {Name: "b", State: "SECONDARY", Lag: 4, HasLag: true},
		"c":      {Name: "c", State: "DOWN"},
		"arb":    {Name: "arb", State: "ARBITER"},
		"hidden": {Name: "hidden", State: "SECONDARY", HasLag: true}, // ahead of the primary's read: 0
	}
	if len(h.Members) != len(want) {
		t.Fatalf("members %+v", h.Members)
	}
	for _, mh := range h.Members {
		if mh != want[mh.Name] {
			t.Errorf("%s: %+v, want %+v", mh.Name, mh, want[mh.Name])
		}
	}

	// No primary and no status: members that do not answer are DOWN, no lag.
	o.Primary, o.Status = "", nil
	h = healthOf(o)
	if h.Primary || h.Term != 0 {
		t.Fatalf("without a primary: %+v", h)
	}
	for _, mh := range h.Members {
		if mh.HasLag || (mh.Name == "c" && mh.State != "DOWN") || (mh.Name == "b" && mh.State != "UNKNOWN") {
			t.Errorf("without a primary: %+v", mh)
		}
	}
	if h := healthOf(Observation{}); len(h.Members) != 0 || h.Voters != 0 {
		t.Errorf("before the initiate: %+v", h)
	}
}
