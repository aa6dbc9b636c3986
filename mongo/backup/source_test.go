package backup

import (
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mgors/operator/mongo"
)

// Source never picks the primary while a healthy secondary exists; among
// secondaries a hidden or priority-0 one, then the least lag.
func TestSource(t *testing.T) {
	ot := func(sec uint32) mongo.OpTime { return mongo.OpTime{TS: bson.Timestamp{T: sec}, T: 1} }
	member := func(name string, state mongo.MemberState, sec uint32) mongo.MemberStatus {
		return mongo.MemberStatus{Name: name, State: state, Health: 1, Optime: ot(sec)}
	}
	cfgMember := func(host string, prio float64) mongo.Member {
		return mongo.Member{Host: host, Priority: prio, Votes: 1, BuildIndexes: true}
	}
	cfg := mongo.Config{Members: []mongo.Member{cfgMember("a:27017", 1), cfgMember("b:27017", 1), cfgMember("c:27017", 1)}}
	hidden := mongo.Config{Members: []mongo.Member{cfgMember("a:27017", 1), cfgMember("b:27017", 1), {Host: "c:27017", Hidden: true, BuildIndexes: true}}}
	noIndexes := mongo.Config{Members: []mongo.Member{cfgMember("a:27017", 1), cfgMember("b:27017", 1), {Host: "c:27017", BuildIndexes: false}}}
	arbiter := mongo.Config{Members: []mongo.Member{cfgMember("a:27017", 1), cfgMember("b:27017", 1), {Host: "c:27017", ArbiterOnly: true}}}
	down := member("c:27017", mongo.StateSecondary, 9)
	down.Health = 0
	for _, tc := range []struct {
		name    string
		members []mongo.MemberStatus
		cfg     mongo.Config
		want    string
	}{
		{"the secondary with the least lag", []mongo.MemberStatus{member("a:27017", mongo.StatePrimary, 10), member("b:27017", mongo.StateSecondary, 8), member("c:27017", mongo.StateSecondary, 9)}, cfg, "c:27017"},
		{"equal lag: by name", []mongo.MemberStatus{member("a:27017", mongo.StatePrimary, 10), member("c:27017", mongo.StateSecondary, 9), member("b:27017", mongo.StateSecondary, 9)}, cfg, "b:27017"},
		{"a hidden secondary first", []mongo.MemberStatus{member("a:27017", mongo.StatePrimary, 10), member("b:27017", mongo.StateSecondary, 10), member("c:27017", mongo.StateSecondary, 5)}, hidden, "c:27017"},
		{"not a member without indexes", []mongo.MemberStatus{member("a:27017", mongo.StatePrimary, 10), member("b:27017", mongo.StateSecondary, 5), member("c:27017", mongo.StateSecondary, 10)}, noIndexes, "b:27017"},
		{"a down or recovering secondary is not read", []mongo.MemberStatus{member("a:27017", mongo.StatePrimary, 10), member("b:27017", mongo.StateRecovering, 9), down}, cfg, "a:27017"},
		{"an arbiter holds no data", []mongo.MemberStatus{member("a:27017", mongo.StatePrimary, 10), member("b:27017", mongo.StateStartup2, 0), member("c:27017", mongo.StateArbiter, 0)}, arbiter, "a:27017"},
		{"nobody", []mongo.MemberStatus{member("a:27017", mongo.StateRecovering, 10)}, cfg, ""},
	} {
		got, err := Source(&mongo.Status{Members: tc.members}, tc.cfg)
		if got != tc.want || (tc.want == "") != errors.Is(err, ErrNoSource) {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}
