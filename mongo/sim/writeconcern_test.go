package sim

import "testing"

// mongod's implicit default write concern: w:1 for PSA-like sets.
func TestImplicitDefaultWriteConcern(t *testing.T) {
	for _, c := range []struct {
		name    string
		members []Member
		want    any
	}{
		{"PSS", []Member{{Votes: 1}, {Votes: 1}, {Votes: 1}}, "majority"},
		{"PSA", []Member{{Votes: 1}, {Votes: 1}, {Votes: 1, ArbiterOnly: true}}, int64(1)},
		{"PSSSA", []Member{{Votes: 1}, {Votes: 1}, {Votes: 1}, {Votes: 1}, {Votes: 1, ArbiterOnly: true}}, "majority"},
		{"PSSA", []Member{{Votes: 1}, {Votes: 1}, {Votes: 1}, {Votes: 1, ArbiterOnly: true}}, int64(1)},
	} {
		n := &Node{rs: &RSConfig{Members: c.members}}
		if got := n.implicitDefaultWLocked(); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
