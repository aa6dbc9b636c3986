package mongo

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func ot(secs uint32, term int64) OpTime { return OpTime{TS: bson.Timestamp{T: secs, I: 1}, T: term} }

func TestOpTimeCompare(t *testing.T) {
	tests := []struct {
		a, b OpTime
		want int
	}{
		{ot(10, 1), ot(10, 1), 0},
		{ot(9, 2), ot(10, 1), 1}, // a higher term wins over a later timestamp
		{ot(10, 1), ot(11, 1), -1},
		{OpTime{TS: bson.Timestamp{T: 10, I: 2}, T: 1}, ot(10, 1), 1},
	}
	for _, tt := range tests {
		if got := tt.a.Compare(tt.b); got != tt.want {
			t.Errorf("%v vs %v: %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func view(self string, members ...MemberStatus) *Status {
	st := &Status{Set: "rs"}
	for _, m := range members {
		m.Self = m.Name == self
		st.Members = append(st.Members, m)
	}
	return st
}

func up(name string, state MemberState, o OpTime) MemberStatus {
	return MemberStatus{Name: name, Health: 1, State: state, Optime: o}
}

func down(name string, o OpTime) MemberStatus {
	return MemberStatus{Name: name, Health: 0, State: StateDown, Optime: o, LastHeartbeatMessage: "connection refused"}
}

func TestMajorityLost(t *testing.T) {
	five := cfg(m(0, "a:1"), m(1, "b:1"), m(2, "c:1"), m(3, "d:1"), m(4, "e:1", nonVoter))
	psa := cfg(m(0, "a:1"), m(1, "b:1"), m(2, "c:1", arbiter))
	tests := []struct {
		name    string
		c       Config
		st      *Status
		lost    bool
		missing []string
	}{
		{"all up with primary", psa, view("a:1", up("a:1", StatePrimary, ot(5, 1)), up("b:1", StateSecondary, ot(5, 1)), up("c:1", StateArbiter, OpTime{})), false, nil},
		{"one of three down, primary", psa, view("a:1", up("a:1", StatePrimary, ot(5, 1)), down("b:1", ot(4, 1)), up("c:1", StateArbiter, OpTime{})), false, []string{"b:1"}},
		{"arbiter counts toward the majority", psa, view("b:1", down("a:1", ot(5, 1)), up("b:1", StateSecondary, ot(4, 1)), up("c:1", StateArbiter, OpTime{})), false, []string{"a:1"}},
		{"two of three down", psa, view("b:1", down("a:1", ot(5, 1)), up("b:1", StateSecondary, ot(4, 1)), down("c:1", OpTime{})), true, []string{"a:1", "c:1"}},
		{"2 of 4 voters is not a majority; the non-voter does not count", five,
			view("a:1", up("a:1", StateSecondary, ot(5, 1)), up("b:1", StateSecondary, ot(5, 1)), down("c:1", ot(5, 1)), down("d:1", ot(5, 1)), up("e:1", StateSecondary, ot(5, 1))), true, []string{"c:1", "d:1"}},
		{"never heard of (health -1)", psa, view("a:1", up("a:1", StateSecondary, ot(5, 1)), MemberStatus{Name: "b:1", Health: -1, State: StateUnknown}, MemberStatus{Name: "c:1", Health: -1, State: StateUnknown}), true, []string{"b:1", "c:1"}},
		{"no status proves nothing", psa, nil, false, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lost, ev := MajorityLost(tt.c, tt.st)
			if lost != tt.lost {
				t.Fatalf("lost %v, want %v (%+v)", lost, tt.lost, ev)
			}
			var missing []string
			for _, x := range ev.Missing {
				missing = append(missing, x.Host)
			}
			if tt.st != nil && !slices.Equal(missing, tt.missing) {
				t.Fatalf("missing %v, want %v", missing, tt.missing)
			}
			if ev.Needed != tt.c.MajorityVoteCount() || ev.Voters != tt.c.Voters() {
				t.Fatalf("counts: %+v", ev)
			}
		})
	}
}

func TestForceTarget(t *testing.T) {
	five := cfg(m(0, "a:1"), m(1, "b:1"), m(2, "c:1", prio(0)), m(3, "d:1"), m(4, "e:1"))
	five.Version = 7
	five.Settings = &Settings{ReplicaSetID: new(bson.NewObjectID())}

	t.Run("newest survivor, data at risk", func(t *testing.T) {
		// a (the old primary) and d, e are gone; b and c survive; c is ahead of
		// b but has priority 0; a was ahead of both when they last heard of it.
		f, err := ForceTarget(five, map[string]*Status{
			"b:1": view("b:1", down("a:1", ot(100, 3)), up("b:1", StateSecondary, ot(90, 3)), up("c:1", StateSecondary, ot(95, 3)), down("d:1", ot(50, 3)), down("e:1", OpTime{})),
			"c:1": view("c:1", down("a:1", ot(98, 3)), up("b:1", StateSecondary, ot(90, 3)), up("c:1", StateSecondary, ot(95, 3)), down("d:1", ot(50, 3)), down("e:1", OpTime{})),
		})
		if err != nil {
			t.Fatal(err)
		}
		if f.Survivor != "c:1" || f.SurvivorOptime != ot(95, 3) {
			t.Fatalf("survivor %s %v", f.Survivor, f.SurvivorOptime)
		}
		if !f.AtRisk || f.BestMissing != "a:1" || f.BestMissingOptime != ot(100, 3) || f.GapSeconds != 5 || f.Unknown {
			t.Fatalf("risk: %+v", f)
		}
		if !slices.Equal(f.Kept, []string{"b:1", "c:1"}) || !slices.Equal(f.Dropped, []string{"a:1", "d:1", "e:1"}) {
			t.Fatalf("kept %v dropped %v", f.Kept, f.Dropped)
		}
		c := f.Config
		if c.Version != 8 || len(c.Members) != 2 || c.Settings.ReplicaSetID != five.Settings.ReplicaSetID {
			t.Fatalf("config %+v", c)
		}
		if s := c.Member("c:1"); !s.Electable() || !s.Voter() {
			t.Fatalf("survivor not electable: %+v", s)
		}
		if err := Validate(c); err != nil {
			t.Fatal(err)
		}
		if five.Member("c:1").Priority != 0 {
			t.Fatal("ForceTarget modified its input")
		}
	})

	t.Run("survivor ahead: nothing at risk", func(t *testing.T) {
		f, err := ForceTarget(five, map[string]*Status{
			"a:1": view("a:1", up("a:1", StateSecondary, ot(100, 3)), up("b:1", StateSecondary, ot(100, 3)), down("c:1", ot(80, 3)), down("d:1", ot(80, 3)), down("e:1", ot(99, 3))),
			"b:1": view("b:1", up("a:1", StateSecondary, ot(100, 3)), up("b:1", StateSecondary, ot(100, 3)), down("c:1", ot(80, 3)), down("d:1", ot(80, 3)), down("e:1", ot(99, 3))),
		})
		if err != nil {
			t.Fatal(err)
		}
		if f.Survivor != "a:1" || f.AtRisk || f.Unknown || f.BestMissing != "e:1" {
			t.Fatalf("%+v", f)
		}
	})

	t.Run("missing optimes unknown", func(t *testing.T) {
		f, err := ForceTarget(five, map[string]*Status{
			"d:1": view("d:1", MemberStatus{Name: "a:1", Health: -1, State: StateUnknown}, up("d:1", StateSecondary, ot(10, 1))),
		})
		if err != nil {
			t.Fatal(err)
		}
		if f.Survivor != "d:1" || !f.Unknown || f.AtRisk || len(f.Config.Members) != 1 {
			t.Fatalf("%+v", f)
		}
	})

	t.Run("only the arbiter answers", func(t *testing.T) {
		psa := cfg(m(0, "a:1"), m(1, "b:1"), m(2, "c:1", arbiter))
		if _, err := ForceTarget(psa, map[string]*Status{"c:1": view("c:1", up("c:1", StateArbiter, OpTime{}))}); !errors.Is(err, ErrNoSurvivor) {
			t.Fatalf("err %v", err)
		}
	})

	t.Run("non-voting hidden survivor becomes an electable voter", func(t *testing.T) {
		c := cfg(m(0, "a:1"), m(1, "b:1"), m(2, "c:1"), m(3, "h:1", hidden, nonVoter))
		f, err := ForceTarget(c, map[string]*Status{"h:1": view("h:1", up("h:1", StateSecondary, ot(1, 1)))})
		if err != nil {
			t.Fatal(err)
		}
		s := f.Config.Member("h:1")
		if !s.Voter() || !s.Electable() || s.Hidden {
			t.Fatalf("%+v", s)
		}
	})
}

func TestForceOnto(t *testing.T) {
	five := cfg(m(0, "a:1"), m(1, "b:1"), m(2, "c:1"), m(3, "d:1"), m(4, "e:1", arbiter))
	statuses := map[string]*Status{
		"b:1": view("b:1", down("a:1", ot(100, 3)), up("b:1", StateSecondary, ot(95, 3)), up("c:1", StateSecondary, ot(95, 3)), down("d:1", ot(90, 3)), up("e:1", StateArbiter, OpTime{})),
		"c:1": view("c:1", down("a:1", ot(100, 3)), up("b:1", StateSecondary, ot(95, 3)), up("c:1", StateSecondary, ot(95, 3)), down("d:1", ot(90, 3)), up("e:1", StateArbiter, OpTime{})),
		"e:1": view("e:1", down("a:1", ot(100, 3)), up("b:1", StateSecondary, ot(95, 3)), up("c:1", StateSecondary, ot(95, 3)), down("d:1", ot(90, 3)), up("e:1", StateArbiter, OpTime{})),
	}
	tests := []struct {
		name, host, refusal string
	}{
		{"a tie with the newest is accepted, not only the lowest id", "c:1", ""},
		{"the newest", "b:1", ""},
		{"unreachable", "a:1", "does not answer"},
		{"not a member", "z:1", "not a member"},
		{"an arbiter", "e:1", "arbiter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := ForceOnto(five, statuses, tt.host)
			if tt.refusal != "" {
				if !errors.Is(err, ErrForceRefused) || !strings.Contains(err.Error(), tt.refusal) {
					t.Fatalf("err %v, want a refusal saying %q", err, tt.refusal)
				}
				return
			}
			if err != nil || f.Survivor != tt.host || f.Config.Member(tt.host) == nil || !f.AtRisk {
				t.Fatalf("force %+v err %v", f, err)
			}
		})
	}
	behind := map[string]*Status{
		"b:1": view("b:1", up("b:1", StateSecondary, ot(95, 3)), up("c:1", StateSecondary, ot(96, 3))),
		"c:1": view("c:1", up("b:1", StateSecondary, ot(95, 3)), up("c:1", StateSecondary, ot(96, 3))),
	}
	if _, err := ForceOnto(five, behind, "b:1"); !errors.Is(err, ErrForceRefused) || !strings.Contains(err.Error(), "c:1 is newer") {
		t.Fatalf("a member behind the newest was accepted: %v", err)
	}
}
