package mongo

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestStatusDecode(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	doc := bson.D{
		{Key: "set", Value: "rs0"}, {Key: "date", Value: bson.NewDateTimeFromTime(now)},
		{Key: "myState", Value: int32(1)}, {Key: "term", Value: int64(4)},
		{Key: "majorityVoteCount", Value: int32(2)}, {Key: "votingMembersCount", Value: float64(3)},
		{Key: "members", Value: bson.A{
			bson.D{{Key: "_id", Value: int32(0)}, {Key: "name", Value: "a:27017"}, {Key: "health", Value: float64(1)},
				{Key: "state", Value: int32(1)}, {Key: "stateStr", Value: "PRIMARY"}, {Key: "uptime", Value: int32(50)},
				{Key: "optime", Value: bson.D{{Key: "ts", Value: bson.Timestamp{T: 100, I: 3}}, {Key: "t", Value: int64(4)}}},
				{Key: "optimeDate", Value: bson.NewDateTimeFromTime(now)},
				{Key: "configVersion", Value: int32(7)}, {Key: "configTerm", Value: int32(4)}, {Key: "self", Value: true},
				{Key: "lastHeartbeatMessage", Value: ""}},
			bson.D{{Key: "_id", Value: int32(1)}, {Key: "name", Value: "b:27017"}, {Key: "health", Value: int32(0)},
				{Key: "state", Value: int32(8)}, {Key: "stateStr", Value: "(not reachable/healthy)"},
				{Key: "optime", Value: bson.D{{Key: "ts", Value: bson.Timestamp{T: 90, I: 1}}, {Key: "t", Value: int32(3)}}},
				{Key: "lastHeartbeatRecv", Value: bson.NewDateTimeFromTime(now.Add(-time.Minute))},
				{Key: "configVersion", Value: int64(6)}, {Key: "configTerm", Value: int64(3)},
				{Key: "lastHeartbeatMessage", Value: "Error connecting to b:27017 :: caused by :: Connection refused"}},
			bson.D{{Key: "_id", Value: int32(2)}, {Key: "name", Value: "c:27017"}, {Key: "health", Value: float64(1)},
				{Key: "state", Value: int32(7)}, {Key: "stateStr", Value: "ARBITER"},
				{Key: "configVersion", Value: int32(7)}, {Key: "configTerm", Value: int32(4)}},
		}},
		{Key: "ok", Value: float64(1)},
	}
	raw, err := bson.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	var st Status
	if err := bson.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	if st.Set != "rs0" || st.MyState != StatePrimary || st.Term != 4 || st.VotingMembersCount != 3 || !st.Date.Equal(now) {
		t.Fatalf("status %+v", st)
	}
	p := st.Primary()
	if p == nil || p.Name != "a:27017" || st.Self() != p || p.Optime != (OpTime{TS: bson.Timestamp{T: 100, I: 3}, T: 4}) || p.ConfigVersion != 7 {
		t.Fatalf("primary %+v", p)
	}
	b := st.Member("B:27017")
	if b == nil || b.Up() || b.State != StateDown || b.Optime.T != 3 || b.LastHeartbeatRecv.IsZero() {
		t.Fatalf("down member %+v", b)
	}
	if c := st.Member("c"); c == nil || !c.Up() || !c.Optime.IsZero() || c.State.String() != "ARBITER" {
		t.Fatalf("arbiter %+v", c)
	}
}

func TestHelloDecode(t *testing.T) {
	ghost := bson.D{{Key: "isWritablePrimary", Value: false}, {Key: "secondary", Value: false},
		{Key: "info", Value: "Does not have a valid replica set config"}, {Key: "isreplicaset", Value: true},
		{Key: "maxWireVersion", Value: int32(21)}, {Key: "minWireVersion", Value: int32(0)}, {Key: "ok", Value: float64(1)}}
	raw, _ := bson.Marshal(ghost)
	var h HelloReply
	if err := bson.Unmarshal(raw, &h); err != nil {
		t.Fatal(err)
	}
	if h.HasConfig() || !h.IsReplicaSet || h.MaxWireVersion != 21 {
		t.Fatalf("ghost %+v", h)
	}
	member := bson.D{{Key: "setName", Value: "rs0"}, {Key: "setVersion", Value: int32(3)}, {Key: "isWritablePrimary", Value: true},
		{Key: "hosts", Value: bson.A{"a:1", "b:1"}}, {Key: "arbiters", Value: bson.A{"c:1"}}, {Key: "me", Value: "a:1"}, {Key: "primary", Value: "a:1"}}
	raw, _ = bson.Marshal(member)
	h = HelloReply{}
	if err := bson.Unmarshal(raw, &h); err != nil {
		t.Fatal(err)
	}
	if !h.HasConfig() || h.SetVersion != 3 || len(h.Hosts) != 2 || h.Arbiters[0] != "c:1" || h.Me != "a:1" {
		t.Fatalf("member %+v", h)
	}
}

func TestMemberStateStrings(t *testing.T) {
	for s, want := range map[MemberState]string{StateStartup: "STARTUP", StatePrimary: "PRIMARY", StateSecondary: "SECONDARY",
		StateRecovering: "RECOVERING", StateStartup2: "STARTUP2", StateUnknown: "UNKNOWN", StateArbiter: "ARBITER",
		StateDown: "DOWN", StateRollback: "ROLLBACK", StateRemoved: "REMOVED", MemberState(4): "UNKNOWN"} {
		if s.String() != want {
			t.Errorf("%d: %s, want %s", s, s, want)
		}
	}
	if !StateArbiter.Healthy() || StateStartup2.Healthy() {
		t.Error("Healthy")
	}
}
