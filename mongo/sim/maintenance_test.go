package sim_test

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// replSetMaintenance as mongod: a secondary in maintenance is RECOVERING
// (reads refused with 13436) until every task has left it; a primary refuses
// (95), and leaving when none is active fails (96).
func TestReplSetMaintenance(t *testing.T) {
	ms, p := initiated(t, 3, fastSettings)
	if _, err := run(ms[p].client(t), bson.D{{Key: "replSetMaintenance", Value: true}}); !hasCode(err, 95) {
		t.Fatalf("maintenance on the primary: want 95, got %v", err)
	}
	s := ms[(p+1)%3]
	sc := s.client(t)
	mustRun(t, sc, bson.D{{Key: "replSetMaintenance", Value: true}})
	mustRun(t, sc, bson.D{{Key: "replSetMaintenance", Value: true}})
	if st := state(t, s); st != 3 {
		t.Fatalf("state in maintenance %d, want 3 (RECOVERING)", st)
	}
	if n := countOn(t, s, bson.D{}); n != -1 {
		t.Fatalf("read from a RECOVERING member answered %d", n)
	}
	mustRun(t, sc, bson.D{{Key: "replSetMaintenance", Value: false}})
	if st := state(t, s); st != 3 {
		t.Fatalf("state with one task left %d, want 3", st)
	}
	mustRun(t, sc, bson.D{{Key: "replSetMaintenance", Value: false}})
	waitFor(t, 10*time.Second, "SECONDARY again", func() bool { return state(t, s) == 2 })
	if _, err := run(sc, bson.D{{Key: "replSetMaintenance", Value: false}}); !hasCode(err, 96) {
		t.Fatalf("leaving maintenance twice: want 96, got %v", err)
	}
}
