package sim_test

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// replSetSyncFrom as mongod: a secondary syncs from the member it is told
// to (and reports it), with mongod's refusals.
func TestReplSetSyncFrom(t *testing.T) {
	ms, p := initiated(t, 3, fastSettings)
	a, b := ms[(p+1)%3], ms[(p+2)%3]
	if _, err := run(ms[p].client(t), bson.D{{Key: "replSetSyncFrom", Value: a.host}}); !hasCode(err, 95) {
		t.Fatalf("syncFrom on the primary: want 95, got %v", err)
	}
	ac := a.client(t)
	if _, err := run(ac, bson.D{{Key: "replSetSyncFrom", Value: a.host}}); !hasCode(err, 72) {
		t.Fatalf("syncFrom self: want 72, got %v", err)
	}
	if _, err := run(ac, bson.D{{Key: "replSetSyncFrom", Value: "nowhere.test:1"}}); !hasCode(err, 74) {
		t.Fatalf("syncFrom a non-member: want 74, got %v", err)
	}
	r := mustRun(t, ac, bson.D{{Key: "replSetSyncFrom", Value: b.host}})
	if got := r.Lookup("syncFromRequested").StringValue(); got != b.host {
		t.Fatalf("syncFromRequested %q, want %q", got, b.host)
	}
	if prev, _ := r.Lookup("prevSyncTarget").StringValueOK(); prev != ms[p].host {
		t.Errorf("prevSyncTarget %q, want the primary %q", prev, ms[p].host)
	}
	waitFor(t, 10*time.Second, "syncSourceHost "+b.host, func() bool {
		st, err := run(ac, bson.D{{Key: "replSetGetStatus", Value: 1}})
		return err == nil && st.Lookup("syncSourceHost").StringValue() == b.host
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w3 := &writeconcern.WriteConcern{W: 3}
	if _, err := ms[p].client(t).Database("test").Collection("c", options.Collection().SetWriteConcern(w3)).
		InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatalf("w:3 write with a chained secondary: %v", err)
	}
	// w:3 was acknowledged, so a has the write; a count that fails (-1: the
	// short client timed out on a loaded machine, as in one CI run) is asked again.
	n := int64(-1)
	waitFor(t, 10*time.Second, "the chained secondary's count", func() bool {
		n = countOn(t, a, bson.D{{Key: "_id", Value: 1}})
		return n >= 0
	})
	if n != 1 {
		t.Fatalf("the chained secondary has %d of the write", n)
	}
}
