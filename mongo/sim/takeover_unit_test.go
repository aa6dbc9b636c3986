package sim

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Catch-up takeover: a secondary ahead of a primary that has written nothing
// in its term yet runs for election after catchUpTakeoverDelayMillis.
func TestCatchUpTakeoverDecision(t *testing.T) {
	setup := func(delay int, primaryApplied OpTime) *Node {
		cfg, err := ParseRSConfig(mustRaw(bson.D{{Key: "_id", Value: "rs0"}, {Key: "version", Value: 1},
			{Key: "members", Value: bson.A{bson.D{{Key: "_id", Value: 0}, {Key: "host", Value: "a:1"}}, bson.D{{Key: "_id", Value: 1}, {Key: "host", Value: "b:1"}},
				bson.D{{Key: "_id", Value: 2}, {Key: "host", Value: "c:1"}}}},
			{Key: "settings", Value: bson.D{{Key: "catchUpTakeoverDelayMillis", Value: delay}}}}), false)
		if err != nil {
			t.Fatal(err)
		}
		n := &Node{rs: cfg, self: 1, state: StateSecondary, term: 5, primary: 0, electionAt: time.Now().Add(time.Hour),
			applied: OpTime{TS: bson.Timestamp{T: 100, I: 3}, T: 4}, peers: map[string]*peerState{
				"a:1": {host: "a:1", health: 1, state: StatePrimary, term: 5, applied: primaryApplied, lastOK: time.Now()},
				"c:1": {host: "c:1", health: 1, state: StateSecondary, term: 5, lastOK: time.Now()}}}
		return n
	}
	behind := OpTime{TS: bson.Timestamp{T: 100, I: 1}, T: 4}
	now := time.Now()
	// at decides d after now, with heartbeats fresh at that moment.
	at := func(n *Node, d time.Duration) tickAction {
		for _, p := range n.peers {
			p.lastOK = now.Add(d)
		}
		return n.decideLocked(now.Add(d))
	}
	n := setup(30000, behind)
	if a := at(n, 0); a != tickIdle {
		t.Fatalf("first look: want idle (takeover scheduled), got %v", a)
	}
	if a := at(n, 29*time.Second); a != tickIdle {
		t.Fatalf("before the delay: want idle, got %v", a)
	}
	if a := at(n, 31*time.Second); a != actElectCatchUpTakeover {
		t.Fatalf("after the delay: want a catch-up takeover, got %v", a)
	}
	// A primary that has written in its term is done catching up.
	n = setup(30000, OpTime{TS: bson.Timestamp{T: 99, I: 1}, T: 5})
	at(n, 0)
	if a := at(n, 31*time.Second); a == actElectCatchUpTakeover {
		t.Fatal("catch-up takeover of a primary that finished catching up")
	}
	// -1 disables it.
	n = setup(-1, behind)
	at(n, 0)
	if a := at(n, 31*time.Second); a == actElectCatchUpTakeover {
		t.Fatal("catch-up takeover with catchUpTakeoverDelayMillis -1")
	}
}
