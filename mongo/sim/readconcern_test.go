package sim_test

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readconcern"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// linearizable: refused on a secondary (10107), served on a primary, and
// not served by a primary cut off from the majority.
func TestLinearizableRead(t *testing.T) {
	settings := bson.D{{Key: "electionTimeoutMillis", Value: 4000}, {Key: "heartbeatIntervalMillis", Value: 200}}
	ms, p := initiated(t, 3, settings)
	pc := ms[p].client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lin := options.Collection().SetReadConcern(readconcern.Linearizable())
	if _, err := pc.Database("test").Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := pc.Database("test").Collection("c", lin).FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Err(); err != nil {
		t.Fatalf("linearizable read on a healthy primary: %v", err)
	}
	// (raw: the driver answers 10107 by waiting for the next topology check)
	r := rawCmd(t, ms[(p+1)%3].host, bson.D{{Key: "find", Value: "c"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "linearizable"}}},
		{Key: "$readPreference", Value: bson.D{{Key: "mode", Value: "secondary"}}}, {Key: "$db", Value: "test"}})
	if code, _ := r.Lookup("code").AsInt64OK(); code != 10107 {
		t.Fatalf("linearizable read on a secondary: %v", r)
	}
	r = rawCmd(t, ms[p].host, bson.D{{Key: "find", Value: "c"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "bogus"}}}, {Key: "$db", Value: "test"}})
	if code, _ := r.Lookup("code").AsInt64OK(); code != 9 {
		t.Fatalf("unknown level: %v", r)
	}
	stopSecondaries(t, ms, p)
	short, cancelShort := context.WithTimeout(ctx, time.Second)
	defer cancelShort()
	err := pc.Database("test").Collection("c", options.Collection().SetReadConcern(readconcern.Linearizable())).FindOne(short, bson.D{{Key: "_id", Value: 1}}).Err()
	if err == nil {
		t.Fatal("a primary without its majority served a linearizable read")
	}
	// with maxTimeMS the server gives up itself: 50
	r = rawCmd(t, ms[p].host, bson.D{{Key: "find", Value: "c"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "linearizable"}}},
		{Key: "maxTimeMS", Value: 300}, {Key: "$db", Value: "test"}})
	if code, _ := r.Lookup("code").AsInt64OK(); code != 50 {
		t.Fatalf("linearizable read with maxTimeMS on an isolated primary: %v", r)
	}
}

// snapshot outside transactions reads the majority-committed view at one
// time, reported as the cursor's atClusterTime; atClusterTime reads the
// past, and too far back is SnapshotTooOld (239). afterClusterTime waits
// for this member to catch up (50 on maxTimeMS), and a causally
// consistent session reading from a secondary sees its own writes.
func TestSnapshotAndCausalReads(t *testing.T) {
	ms, p := initiated(t, 3, fastSettings)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	host := ms[p].host
	w := func(doc bson.D) bson.Raw {
		r := rawCmd(t, host, append(doc, bson.E{Key: "writeConcern", Value: bson.D{{Key: "w", Value: "majority"}}}, bson.E{Key: "$db", Value: "test"}))
		if ok, _ := r.Lookup("ok").AsFloat64OK(); ok != 1 {
			t.Fatalf("%v", r)
		}
		return r
	}
	r := w(bson.D{{Key: "insert", Value: "s"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}, {Key: "x", Value: 1}}}}})
	t1, i1, _ := r.Lookup("operationTime").TimestampOK()
	w(bson.D{{Key: "update", Value: "s"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 1}}},
		{Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 2}}}}}}}}})
	find := func(rc bson.D) bson.Raw {
		return rawCmd(t, host, bson.D{{Key: "find", Value: "s"}, {Key: "readConcern", Value: rc}, {Key: "$db", Value: "test"}})
	}
	r = find(bson.D{{Key: "level", Value: "snapshot"}})
	if _, _, ok := r.Lookup("cursor", "atClusterTime").TimestampOK(); !ok {
		t.Fatalf("snapshot read without atClusterTime: %v", r)
	}
	if x, _ := r.Lookup("cursor", "firstBatch", "0", "x").AsInt64OK(); x != 2 {
		t.Fatalf("snapshot read: %v", r)
	}
	r = find(bson.D{{Key: "level", Value: "snapshot"}, {Key: "atClusterTime", Value: bson.Timestamp{T: t1, I: i1}}})
	if x, _ := r.Lookup("cursor", "firstBatch", "0", "x").AsInt64OK(); x != 1 {
		t.Fatalf("snapshot read at the insert's time: %v", r)
	}
	r = rawCmd(t, host, bson.D{{Key: "count", Value: "s"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"}}}, {Key: "$db", Value: "test"}})
	if code, _ := r.Lookup("code").AsInt64OK(); code != 72 {
		t.Fatalf("count with snapshot: %v", r)
	}
	r = find(bson.D{{Key: "level", Value: "snapshot"}, {Key: "atClusterTime", Value: bson.Timestamp{T: t1 - 3600, I: 1}}})
	if code, _ := r.Lookup("code").AsInt64OK(); code != 239 {
		t.Fatalf("snapshot read an hour back: %v", r)
	}
	// afterClusterTime past any cluster time: 72; past this member's but
	// within the cluster time the client gossips: waits, then maxTimeMS (50)
	s := (p + 1) % 3
	future := bson.Timestamp{T: t1 + 3600, I: 1}
	after := bson.D{{Key: "find", Value: "s"}, {Key: "readConcern", Value: bson.D{{Key: "afterClusterTime", Value: future}}},
		{Key: "maxTimeMS", Value: 300}, {Key: "$readPreference", Value: bson.D{{Key: "mode", Value: "secondary"}}}, {Key: "$db", Value: "test"}}
	r = rawCmd(t, ms[s].host, after)
	if code, _ := r.Lookup("code").AsInt64OK(); code != 72 {
		t.Fatalf("afterClusterTime past the cluster time: %v", r)
	}
	r = rawCmd(t, ms[s].host, append(after, bson.E{Key: "$clusterTime", Value: bson.D{{Key: "clusterTime", Value: future}}}))
	if code, _ := r.Lookup("code").AsInt64OK(); code != 50 {
		t.Fatalf("afterClusterTime not reached: %v", r)
	}
	// a primary asked for a cluster time past its last write gets there
	// with a no-op instead of waiting for a write
	gossiped := bson.Timestamp{T: uint32(time.Now().Unix()), I: 1 << 20}
	r = rawCmd(t, host, bson.D{{Key: "find", Value: "s"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "majority"},
		{Key: "afterClusterTime", Value: gossiped}}}, {Key: "$clusterTime", Value: bson.D{{Key: "clusterTime", Value: gossiped}}},
		{Key: "maxTimeMS", Value: 10000}, {Key: "$db", Value: "test"}})
	if ok, _ := r.Lookup("ok").AsFloat64OK(); ok != 1 {
		t.Fatalf("afterClusterTime just past the primary's last write: %v", r)
	}
	// a transaction cannot start on a secondary
	r = rawCmd(t, ms[s].host, bson.D{{Key: "find", Value: "s"}, {Key: "lsid", Value: bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: make([]byte, 16)}}}},
		{Key: "txnNumber", Value: int64(1)}, {Key: "startTransaction", Value: true}, {Key: "autocommit", Value: false},
		{Key: "$readPreference", Value: bson.D{{Key: "mode", Value: "secondary"}}}, {Key: "$db", Value: "test"}})
	if code, _ := r.Lookup("code").AsInt64OK(); code != 10107 {
		t.Fatalf("transaction on a secondary: %v", r)
	}
	// causal consistency through the driver
	client := connect(t, rsURI(ms, ""))
	sess, err := client.StartSession(options.Session().SetCausalConsistency(true))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	sc := mongo.NewSessionContext(ctx, sess)
	wcoll := client.Database("test").Collection("cc", options.Collection().SetWriteConcern(writeconcern.W1()))
	rcoll := client.Database("test").Collection("cc", options.Collection().SetReadPreference(readpref.Secondary()))
	for i := range 20 {
		if _, err := wcoll.InsertOne(sc, bson.D{{Key: "_id", Value: i}}); err != nil {
			t.Fatal(err)
		}
		if n, err := rcoll.CountDocuments(sc, bson.D{{Key: "_id", Value: i}}); err != nil || n != 1 {
			t.Fatalf("causal read of write %d from a secondary: %d %v", i, n, err)
		}
	}
}
