package sim

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// An update entry for a deleted document does not bring it back, and
// replaying the oplog (as a restart or a rollback does) gives the same data.
func TestApplyUpdateAfterDeleteAndReplay(t *testing.T) {
	id := bson.D{{Key: "_id", Value: 1}}
	ot := func(i uint32) OpTime { return OpTime{TS: bson.Timestamp{T: 1, I: i}, T: 1} }
	entries := []OplogEntry{
		NewOplogEntry(ot(1), "i", "t.c", mustRaw(bson.D{{Key: "_id", Value: 1}, {Key: "x", Value: 1}}), nil, time.Now()),
		NewOplogEntry(ot(2), "u", "t.c", mustRaw(bson.D{{Key: "_id", Value: 1}, {Key: "x", Value: 2}}), mustRaw(id), time.Now()),
		NewOplogEntry(ot(3), "d", "t.c", mustRaw(id), nil, time.Now()),
	}
	d := NewData()
	for _, e := range entries {
		d.Apply(e)
	}
	// the update again (a replayed batch): the document stays deleted
	d.Apply(entries[1])
	if got := d.Coll("t", "c", false).Docs(); len(got) != 0 {
		t.Fatalf("an update resurrected a deleted document: %v", got)
	}
	for _, e := range entries {
		d.Apply(e)
	}
	d.Apply(entries[2])
	if got := d.Coll("t", "c", false).Docs(); len(got) != 0 {
		t.Fatalf("replay: %v", got)
	}
}

// A transaction's applyOps entry applies all its operations.
func TestApplyOpsEntry(t *testing.T) {
	ops := bson.A{
		bson.D{{Key: "op", Value: "i"}, {Key: "ns", Value: "t.c"}, {Key: "o", Value: bson.D{{Key: "_id", Value: 1}}}},
		bson.D{{Key: "op", Value: "i"}, {Key: "ns", Value: "t.d"}, {Key: "o", Value: bson.D{{Key: "_id", Value: 2}}}},
	}
	d := NewData()
	d.Apply(NewOplogEntry(OpTime{TS: bson.Timestamp{T: 1, I: 1}, T: 1}, "c", "admin.$cmd", mustRaw(bson.D{{Key: "applyOps", Value: ops}}), nil, time.Now()))
	if len(d.Coll("t", "c", false).Docs()) != 1 || len(d.Coll("t", "d", false).Docs()) != 1 {
		t.Fatal("applyOps not applied")
	}
}

// An insert of many documents is one oplog batch: one call that persists
// them all (one bbolt transaction, one fsync), sharing its wall time.
func TestInsertBatchIsOneOplogWrite(t *testing.T) {
	n, c := standaloneConn(t)
	docs := bson.A{}
	for i := range 100 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}})
	}
	reply, _ := c.handle(&Request{Body: mustRaw(bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: docs}, {Key: "$db", Value: "t"}})})
	if v := mustRaw(reply).Lookup("n"); v.Int32() != 100 {
		t.Fatalf("reply %v", reply)
	}
	stored, err := n.store.LoadOplog()
	if err != nil {
		t.Fatal(err)
	}
	walls := map[time.Time]int{}
	for _, e := range stored {
		if e.Op == "i" {
			walls[e.Wall]++
		}
	}
	if len(walls) != 1 {
		t.Fatalf("100 documents written in %d oplog writes", len(walls))
	}
}
