package mongo

import (
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// A config as mongod 7.0 returns it, with numbers in the types mongod uses and
// fields Mgors does not model.
func mongodConfigDoc(t *testing.T, rsID bson.ObjectID) bson.Raw {
	t.Helper()
	doc := bson.D{
		{Key: "_id", Value: "rs0"},
		{Key: "version", Value: int32(3)},
		{Key: "term", Value: int32(2)},
		{Key: "protocolVersion", Value: int64(1)},
		{Key: "writeConcernMajorityJournalDefault", Value: true},
		{Key: "members", Value: bson.A{
			bson.D{{Key: "_id", Value: int32(0)}, {Key: "host", Value: "a:27017"}, {Key: "arbiterOnly", Value: false},
				{Key: "buildIndexes", Value: true}, {Key: "hidden", Value: false}, {Key: "priority", Value: float64(2.5)},
				{Key: "tags", Value: bson.D{{Key: "zone", Value: "x"}}}, {Key: "secondaryDelaySecs", Value: int64(0)}, {Key: "votes", Value: int32(1)},
				{Key: "horizons", Value: bson.D{{Key: "ext", Value: "ext-a:1"}}}},
			bson.D{{Key: "_id", Value: float64(1)}, {Key: "host", Value: "b:27017"}, {Key: "priority", Value: int32(0)}, {Key: "votes", Value: float64(0)}},
			bson.D{{Key: "_id", Value: int64(2)}, {Key: "host", Value: "c:27017"}, {Key: "arbiterOnly", Value: true}},
		}},
		{Key: "settings", Value: bson.D{
			{Key: "chainingAllowed", Value: true},
			{Key: "heartbeatIntervalMillis", Value: int32(2000)},
			{Key: "heartbeatTimeoutSecs", Value: float64(10)},
			{Key: "electionTimeoutMillis", Value: int64(10000)},
			{Key: "catchUpTimeoutMillis", Value: int32(-1)},
			{Key: "catchUpTakeoverDelayMillis", Value: int32(30000)},
			{Key: "getLastErrorModes", Value: bson.D{}},
			{Key: "getLastErrorDefaults", Value: bson.D{{Key: "w", Value: int32(1)}, {Key: "wtimeout", Value: int32(0)}}},
			{Key: "replicaSetId", Value: rsID},
			{Key: "futureSetting", Value: "kept"},
		}},
		{Key: "configsvr", Value: false},
	}
	raw, err := bson.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestConfigDecodeAnyNumberAndDefaults(t *testing.T) {
	id := bson.NewObjectID()
	var c Config
	if err := bson.Unmarshal(mongodConfigDoc(t, id), &c); err != nil {
		t.Fatal(err)
	}
	if c.ID != "rs0" || c.Version != 3 || c.Term != 2 || c.ProtocolVersion != 1 || len(c.Members) != 3 {
		t.Fatalf("top level: %+v", c)
	}
	a, b, arb := c.Members[0], c.Members[1], c.Members[2]
	if a.Priority != 2.5 || a.Votes != 1 || a.Tags["zone"] != "x" || !a.BuildIndexes {
		t.Errorf("member a: %+v", a)
	}
	if b.ID != 1 || b.Votes != 0 || b.Priority != 0 || !b.BuildIndexes {
		t.Errorf("member b (defaults, double _id): %+v", b)
	}
	if arb.ID != 2 || !arb.ArbiterOnly || arb.Priority != 0 || arb.Votes != 1 {
		t.Errorf("arbiter without priority gets 0, votes 1: %+v", arb)
	}
	s := c.Settings
	if s == nil || *s.HeartbeatTimeoutSecs != 10 || *s.CatchUpTimeoutMillis != -1 || *s.ElectionTimeoutMillis != 10000 || s.ReplicaSetID == nil || *s.ReplicaSetID != id {
		t.Fatalf("settings: %+v", s)
	}
	if err := Validate(c); err != nil {
		t.Errorf("mongod's config is valid: %v", err)
	}
}

// A read-modify-reconfig must send back what it read: replicaSetId, unknown
// settings, member fields and top-level fields.
func TestConfigRoundTripKeepsUnknownFields(t *testing.T) {
	id := bson.NewObjectID()
	var c Config
	if err := bson.Unmarshal(mongodConfigDoc(t, id), &c); err != nil {
		t.Fatal(err)
	}
	n := c.Next()
	n.Members[0].Priority = 3
	raw, err := bson.Marshal(n)
	if err != nil {
		t.Fatal(err)
	}
	r := bson.Raw(raw)
	checks := map[string]func(bson.RawValue) bool{
		"version":                         func(v bson.RawValue) bool { x, ok := v.AsInt64OK(); return ok && x == 4 },
		"term":                            func(v bson.RawValue) bool { x, ok := v.AsInt64OK(); return ok && x == 2 },
		"configsvr":                       func(v bson.RawValue) bool { return v.Type == bson.TypeBoolean && !v.Boolean() },
		"settings.replicaSetId":           func(v bson.RawValue) bool { return v.Type == bson.TypeObjectID && v.ObjectID() == id },
		"settings.futureSetting":          func(v bson.RawValue) bool { return v.StringValue() == "kept" },
		"settings.getLastErrorDefaults.w": func(v bson.RawValue) bool { x, ok := v.AsInt64OK(); return ok && x == 1 },
		"members.0.horizons.ext":          func(v bson.RawValue) bool { return v.StringValue() == "ext-a:1" },
		"members.0.priority":              func(v bson.RawValue) bool { return v.Type == bson.TypeDouble && v.Double() == 3 },
		"members.2.arbiterOnly":           func(v bson.RawValue) bool { return v.Boolean() },
	}
	for path, ok := range checks {
		v, err := r.LookupErr(strings.Split(path, ".")...)
		if err != nil {
			t.Errorf("%s missing: %v", path, err)
			continue
		}
		if !ok(v) {
			t.Errorf("%s = %v", path, v)
		}
	}
	// The original is untouched by Next and its edits.
	if c.Members[0].Priority != 2.5 || c.Version != 3 {
		t.Errorf("Next modified its receiver: %+v", c.Members[0])
	}
}

func TestNextDropsNewlyAdded(t *testing.T) {
	c := Config{ID: "rs", Version: 5, Members: []Member{NewMember(0, "a:1")}}
	c.Members[0].Extra = bson.M{"newlyAdded": true}
	n := c.Next()
	if _, ok := n.Members[0].Extra["newlyAdded"]; ok || n.Version != 6 {
		t.Fatalf("next: %+v", n)
	}
	if _, ok := c.Members[0].Extra["newlyAdded"]; !ok {
		t.Fatal("Next modified its receiver")
	}
}

func cfg(members ...Member) Config { return Config{ID: "rs", Version: 1, Members: members} }

func m(id int, host string, mod ...func(*Member)) Member {
	x := NewMember(id, host)
	for _, f := range mod {
		f(&x)
	}
	return x
}

func votes(v int) func(*Member)      { return func(m *Member) { m.Votes = v } }
func prio(p float64) func(*Member)   { return func(m *Member) { m.Priority = p } }
func hidden(m *Member)               { m.Hidden = true }
func arbiter(m *Member)              { m.ArbiterOnly, m.Priority = true, 0 }
func tags(k, v string) func(*Member) { return func(m *Member) { m.Tags = map[string]string{k: v} } }
func delay(s int64) func(*Member)    { return func(m *Member) { m.SecondaryDelaySecs = s } }
func noIndexes(m *Member)            { m.BuildIndexes = false }
func nonVoter(m *Member)             { m.Votes, m.Priority = 0, 0 }

func TestValidateRules(t *testing.T) {
	many := func(n int, mod ...func(*Member)) []Member {
		var out []Member
		for i := range n {
			out = append(out, m(i, "h"+string(rune('a'+i%26))+string(rune('a'+i/26))+":27017", mod...))
		}
		return out
	}
	eightVoters := many(8)
	tests := []struct {
		name string
		c    Config
		want []Rule
	}{
		{"valid three", cfg(m(0, "a:1"), m(1, "b:1"), m(2, "c:1")), nil},
		{"valid PSA", cfg(m(0, "a:1"), m(1, "b:1"), m(2, "c:1", arbiter)), nil},
		{"valid hidden delayed non-voter", cfg(m(0, "a:1"), m(1, "b:1", prio(0), hidden, delay(3600), nonVoter)), nil},
		{"no members", cfg(), []Rule{RuleMemberCount}},
		{"51 members", cfg(many(51, nonVoter)...), []Rule{RuleMemberCount, RuleVoterCount, RuleElectable}},
		{"8 voters", cfg(eightVoters...), []Rule{RuleVoterCount}},
		{"no voters", cfg(m(0, "a:1", nonVoter)), []Rule{RuleVoterCount, RuleElectable}},
		{"no electable", cfg(m(0, "a:1", prio(0)), m(1, "b:1", arbiter)), []Rule{RuleElectable}},
		{"duplicate _id", cfg(m(0, "a:1"), m(0, "b:1")), []Rule{RuleUniqueID}},
		{"duplicate host", cfg(m(0, "a:1"), m(1, "A:1")), []Rule{RuleUniqueHost}},
		{"duplicate host default port", cfg(m(0, "a"), m(1, "a:27017")), []Rule{RuleUniqueHost}},
		{"negative _id", cfg(m(-1, "a:1")), []Rule{RuleMemberID}},
		{"bad host", cfg(m(0, "a:notaport")), []Rule{RuleHost}},
		{"votes 2", cfg(m(0, "a:1", votes(2))), []Rule{RuleVotes}},
		{"priority 1001", cfg(m(0, "a:1", prio(1001))), []Rule{RulePriority}},
		{"non-voter with priority", cfg(m(0, "a:1"), m(1, "b:1", votes(0))), []Rule{RuleNonVotingPriority}},
		{"arbiter without vote", cfg(m(0, "a:1"), m(1, "b:1", arbiter, votes(0))), []Rule{RuleArbiterVotes}},
		{"arbiter with tags", cfg(m(0, "a:1"), m(1, "b:1", arbiter, tags("k", "v"))), []Rule{RuleArbiterTags}},
		{"arbiter with priority", cfg(m(0, "a:1"), m(1, "b:1", arbiter, prio(1))), []Rule{RuleArbiterPriority}},
		{"hidden with priority", cfg(m(0, "a:1"), m(1, "b:1", hidden)), []Rule{RuleHiddenPriority}},
		{"delay with priority", cfg(m(0, "a:1"), m(1, "b:1", delay(10))), []Rule{RuleDelayPriority}},
		{"delay too long", cfg(m(0, "a:1"), m(1, "b:1", prio(0), delay(MaxSecondaryDelaySecs+1))), []Rule{RuleDelayRange}},
		{"buildIndexes false with priority", cfg(m(0, "a:1"), m(1, "b:1", noIndexes)), []Rule{RuleBuildIndexesPriority}},
		{"two arbiters", cfg(m(0, "a:1"), m(1, "b:1", arbiter), m(2, "c:1", arbiter)), []Rule{RuleOneArbiter}},
		{"localhost mix", cfg(m(0, "localhost:1"), m(1, "b:1")), []Rule{RuleLocalhost}},
		{"all localhost", cfg(m(0, "localhost:1"), m(1, "127.0.0.1:2")), nil},
		{"empty name", Config{Version: 1, Members: []Member{m(0, "a:1")}}, []Rule{RuleSetName}},
		{"version 0", Config{ID: "rs", Members: []Member{m(0, "a:1")}}, []Rule{RuleVersion}},
		{"protocol 0 means absent", Config{ID: "rs", Version: 1, Members: []Member{m(0, "a:1")}}, nil},
		{"protocol 2", Config{ID: "rs", Version: 1, ProtocolVersion: 2, Members: []Member{m(0, "a:1")}}, []Rule{RuleProtocolVersion}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(tt.c)
			got := BrokenRules(err)
			slices.Sort(got)
			want := slices.Clone(tt.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("rules %v, want %v (err %v)", got, want, err)
			}
			for _, r := range tt.want {
				if !strings.Contains(err.Error(), string(r)+": ") {
					t.Errorf("error %q does not name rule %s", err, r)
				}
			}
		})
	}
}

func TestVotingChanges(t *testing.T) {
	base := cfg(m(0, "a:1"), m(1, "b:1"), m(2, "c:1"))
	tests := []struct {
		name string
		next Config
		want int
	}{
		{"same", base, 0},
		{"add voter", cfg(m(0, "a:1"), m(1, "b:1"), m(2, "c:1"), m(3, "d:1")), 1},
		{"add non-voter", cfg(m(0, "a:1"), m(1, "b:1"), m(2, "c:1"), m(3, "d:1", nonVoter)), 0},
		{"remove voter", cfg(m(0, "a:1"), m(1, "b:1")), 1},
		{"take a vote", cfg(m(0, "a:1"), m(1, "b:1"), m(2, "c:1", nonVoter)), 1},
		{"swap votes", cfg(m(0, "a:1"), m(1, "b:1"), m(2, "c:1", nonVoter), m(3, "d:1")), 2},
		{"replace host same _id", cfg(m(0, "a:1"), m(1, "b:1"), m(2, "z:1")), 0},
		{"priority only", cfg(m(0, "a:1", prio(5)), m(1, "b:1"), m(2, "c:1")), 0},
	}
	for _, tt := range tests {
		if got := VotingChanges(base, tt.next); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestValidateTransition(t *testing.T) {
	old := cfg(m(0, "a:1"), m(1, "b:1"), m(2, "c:1"))
	old.Version = 4
	old.Settings = &Settings{ReplicaSetID: new(bson.NewObjectID())}
	next := func(mod func(*Config)) Config { n := old.Next(); mod(&n); return n }
	tests := []struct {
		name  string
		next  Config
		force bool
		ok    bool
	}{
		{"version+1", old.Next(), false, true},
		{"same version", next(func(c *Config) { c.Version = 4 }), false, false},
		{"renamed", next(func(c *Config) { c.ID = "other" }), false, false},
		{"replicaSetId dropped", next(func(c *Config) { c.Settings = nil }), false, false},
		{"replicaSetId changed", next(func(c *Config) { c.Settings.ReplicaSetID = new(bson.NewObjectID()) }), false, false},
		{"host changes _id", next(func(c *Config) { c.Members[2].ID = 7 }), false, false},
		{"arbiterOnly flips", next(func(c *Config) { c.Members[2].ArbiterOnly, c.Members[2].Priority = true, 0 }), false, false},
		{"buildIndexes flips", next(func(c *Config) { c.Members[2].BuildIndexes, c.Members[2].Priority = false, 0 }), false, false},
		{"two votes", next(func(c *Config) { c.Members = c.Members[:1] }), false, false},
		{"two votes forced", next(func(c *Config) { c.Members = c.Members[:1] }), true, true},
		{"reuse _id for new host", next(func(c *Config) { c.Members[2].Host = "z:1" }), false, true},
	}
	for _, tt := range tests {
		err := ValidateTransition(old, tt.next, tt.force)
		if (err == nil) != tt.ok {
			t.Errorf("%s: err %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}

func TestNormalizeHost(t *testing.T) {
	for in, want := range map[string]string{"A:1": "a:1", "b": "b:27017", "[::1]": "[::1]:27017", "[::1]:5": "[::1]:5", " c:2 ": "c:2"} {
		if got := NormalizeHost(in); got != want {
			t.Errorf("NormalizeHost(%q) = %q, want %q", in, got, want)
		}
	}
}
