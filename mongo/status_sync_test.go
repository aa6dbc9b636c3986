package mongo

import (
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// A member's own status during initial sync and when too stale, as mongod
// (and mongod-sim, mongo/sim/initialsync.go and stale.go) writes it.
func TestStatusDecodesInitialSyncAndInfoMessage(t *testing.T) {
	start := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	doc := bson.D{
		{Key: "set", Value: "rs0"}, {Key: "myState", Value: int32(5)}, {Key: "term", Value: int64(2)},
		{Key: "initialSyncStatus", Value: bson.D{
			{Key: "failedInitialSyncAttempts", Value: int32(2)}, {Key: "maxFailedInitialSyncAttempts", Value: int32(10)},
			{Key: "approxTotalDataSize", Value: int64(4096)}, {Key: "approxTotalBytesCopied", Value: int64(1024)},
			{Key: "initialSyncStart", Value: bson.NewDateTimeFromTime(start)}, {Key: "totalInitialSyncElapsedMillis", Value: int32(3500)},
			{Key: "initialSyncAttempts", Value: bson.A{
				bson.D{{Key: "durationMillis", Value: int32(12)}, {Key: "status", Value: "InitialSyncFailure: OplogStartMissing"},
					{Key: "syncSource", Value: "a:27017"}, {Key: "rollBackId", Value: int32(1)}},
			}},
			{Key: "appliedOps", Value: int32(7)}, {Key: "initialSyncOplogStart", Value: bson.Timestamp{T: 5, I: 1}},
			{Key: "totalTimeUnreachableMillis", Value: int64(0)}, {Key: "databases", Value: bson.D{{Key: "databasesToClone", Value: int32(1)}}},
		}},
		{Key: "members", Value: bson.A{
			bson.D{{Key: "_id", Value: int32(2)}, {Key: "name", Value: "c:27017"}, {Key: "health", Value: float64(1)},
				{Key: "state", Value: int32(3)}, {Key: "stateStr", Value: "RECOVERING"}, {Key: "self", Value: true},
				{Key: "infoMessage", Value: "Could not find member to sync from"}},
		}},
	}
	raw, err := bson.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	var st Status
	if err := bson.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	is := st.InitialSyncStatus
	if is == nil || is.FailedInitialSyncAttempts != 2 || is.MaxFailedInitialSyncAttempts != 10 || is.AppliedOps != 7 ||
		!is.InitialSyncStart.Equal(start) || len(is.Attempts) != 1 || is.Attempts[0].SyncSource != "a:27017" {
		t.Fatalf("initialSyncStatus = %+v", is)
	}
	if is.Exhausted() {
		t.Error("2 of 10 failed attempts: not exhausted")
	}
	if p := is.Progress(); !strings.Contains(p, "1024 of ~4096 bytes") || !strings.Contains(p, "2 of 10 attempts failed") || !strings.Contains(p, "OplogStartMissing") {
		t.Errorf("Progress() = %q", p)
	}
	is.FailedInitialSyncAttempts = 10
	if !is.Exhausted() {
		t.Error("10 of 10 failed attempts: exhausted")
	}
	if self := st.Self(); self == nil || self.InfoMessage != "Could not find member to sync from" {
		t.Fatalf("self = %+v", self)
	}
	var none *InitialSyncStatus
	if none.Exhausted() || none.Progress() != "" {
		t.Error("no initial sync: neither exhausted nor any progress")
	}
}
