package sim_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// A new primary behind another reachable secondary catches up from it before
// taking writes, so the w:1 writes that secondary has are kept, not rolled
// back; electionCandidateMetrics reports the catch-up.
func TestNewPrimaryCatchesUpFromAMoreAdvancedSecondary(t *testing.T) {
	settings := bson.D{{Key: "electionTimeoutMillis", Value: 4000}, {Key: "heartbeatIntervalMillis", Value: 200}}
	var ms []*member
	for range 5 {
		ms = append(ms, newMember(t))
	}
	// Members 0 and 1 are electable; 2, 3 and 4 only vote.
	cfg := rsConfig(ms, settings)
	members := cfg[1].Value.(bson.A)
	for i := 2; i < 5; i++ {
		members[i] = append(members[i].(bson.D), bson.E{Key: "priority", Value: 0})
	}
	mustRun(t, ms[0].client(t), bson.D{{Key: "replSetInitiate", Value: cfg}})
	p := waitPrimary(t, ms, 60*time.Second)
	for _, m := range ms {
		waitFor(t, 30*time.Second, "member "+m.host+" up", func() bool { s := state(t, m); return s == 1 || s == 2 })
	}
	q := 1 - p // the other electable member: the next primary
	ahead := ms[4]
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Only the primary and member 4 get the w:1 writes.
	var thaws []func()
	for i := range ms {
		if i != p && ms[i] != ahead {
			thaws = append(thaws, freeze(t, ms[i]))
		}
	}
	coll := ms[p].client(t).Database("test").Collection("c", options.Collection().SetWriteConcern(writeconcern.W1()))
	for id := 1; id <= 5; id++ {
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: id}}); err != nil {
			t.Fatalf("w:1 insert %d: %v", id, err)
		}
	}
	waitFor(t, 10*time.Second, "the writes on member 4", func() bool { return countOn(t, ahead, bson.D{}) == 5 })
	// The old primary goes away; the others come back and elect q, which is
	// behind member 4.
	freeze(t, ms[p])
	for _, thaw := range thaws {
		thaw()
	}
	waitFor(t, 60*time.Second, "member "+ms[q].host+" primary", func() bool { w, _ := writable(ms[q]); return w })
	if n := countOn(t, ms[q], bson.D{}); n != 5 {
		t.Fatalf("new primary has %d of the 5 w:1 writes member 4 had", n)
	}
	st := mustRun(t, ms[q].client(t), bson.D{{Key: "replSetGetStatus", Value: 1}})
	cm := st.Lookup("electionCandidateMetrics").Document()
	// Whether the catch-up had work to do depends on timing: a secondary
	// without a primary may pull member 4's writes before its election ends
	// (it chains from the most advanced member, as mongod does).
	caughtUp, _ := cm.Lookup("numCatchUpOps").AsInt64OK()
	for _, k := range []string{"newTermStartDate", "wMajorityWriteAvailabilityDate"} {
		waitFor(t, 20*time.Second, k, func() bool {
			r, err := run(ms[q].client(t), bson.D{{Key: "replSetGetStatus", Value: 1}})
			if err != nil {
				return false
			}
			_, err = r.LookupErr("electionCandidateMetrics", k)
			return err == nil
		})
	}
	_, targetErr := cm.LookupErr("targetCatchupOpTime")
	switch {
	case caughtUp == 0:
		t.Log("the new primary had member 4's writes before its election: no catch-up needed this time")
	case targetErr != nil:
		t.Errorf("caught up %d entries but electionCandidateMetrics has no targetCatchupOpTime: %v", caughtUp, cm)
	case !ms[q].logged(`"id":21359`, `"id":21368`):
		t.Errorf("the new primary caught up %d entries but did not log entering (21359) and completing (21368) catch-up", caughtUp)
	}
	if strings.Contains(ahead.out.String(), `"id":21612`) {
		t.Error("member 4 rolled back writes the new primary should have caught up to")
	}
}
