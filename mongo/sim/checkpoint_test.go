package sim

import (
	"reflect"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Dump replayed into an empty store rebuilds the same state: documents in
// order, collections (also empty ones), and retryable-write records.
func TestDumpRebuildsTheSameData(t *testing.T) {
	d := NewData()
	ot := OpTime{TS: bson.Timestamp{T: 1, I: 1}, T: 1}
	lsid := mustRaw(bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: []byte("0123456789abcdef")}}})
	doc := func(id int, v string) bson.Raw { return mustRaw(bson.D{{Key: "_id", Value: id}, {Key: "v", Value: v}}) }
	for _, e := range []OplogEntry{
		NewOplogEntry(ot, "i", "a.x", doc(1, "one"), nil, time.Now()),
		NewOplogEntry(ot, "i", "a.x", doc(2, "two"), nil, time.Now(), bson.E{Key: "lsid", Value: lsid}, bson.E{Key: "txnNumber", Value: int64(7)}),
		NewOplogEntry(ot, "i", "a.x", doc(3, "three"), nil, time.Now(), bson.E{Key: "lsid", Value: lsid}, bson.E{Key: "txnNumber", Value: int64(7)}),
		NewOplogEntry(ot, "u", "a.x", doc(1, "uno"), mustRaw(bson.D{{Key: "_id", Value: 1}}), time.Now()),
		NewOplogEntry(ot, "d", "a.x", mustRaw(bson.D{{Key: "_id", Value: 2}}), nil, time.Now()),
		NewOplogEntry(ot, "c", "b.$cmd", mustRaw(bson.D{{Key: "create", Value: "empty"}}), nil, time.Now()),
		NewOplogEntry(ot, "i", "c.y", doc(1, "gone"), nil, time.Now()),
		NewOplogEntry(ot, "c", "c.$cmd", mustRaw(bson.D{{Key: "dropDatabase", Value: 1}}), nil, time.Now()),
	} {
		d.Apply(e)
	}
	r := replayData(d.Dump())
	if !reflect.DeepEqual(r.DBNames(), d.DBNames()) || !reflect.DeepEqual(r.CollNames("b"), []string{"empty"}) {
		t.Fatalf("databases %v / %v", r.DBNames(), d.DBNames())
	}
	if !reflect.DeepEqual(r.Coll("a", "x", false).Docs(), d.Coll("a", "x", false).Docs()) {
		t.Fatalf("documents differ: %v / %v", r.Coll("a", "x", false).Docs(), d.Coll("a", "x", false).Docs())
	}
	key := (&txnRef{lsid: lsid, number: 7}).key()
	if n, ok := r.TxnDone(key); !ok || n != 2 {
		t.Fatalf("retryable write record %d %v, want 2", n, ok)
	}
	if got := replayData(d.dumpDB("a", false)); len(got.Coll("a", "x", false).Docs()) != 0 || !reflect.DeepEqual(got.CollNames("a"), []string{"x"}) {
		t.Fatalf("definitions of a: %v", got.CollNames("a"))
	}
}

func TestInitialSyncStatusFields(t *testing.T) {
	n := &Node{state: StateStartup2}
	now := time.Now()
	n.isync = &initialSyncState{start: now, failed: 1, attempts: bson.A{bson.D{{Key: "status", Value: "x"}}}, cloned: true,
		begin: OpTime{TS: bson.Timestamp{T: 5, I: 1}, T: 1}, dbsToClone: 1,
		dbs: []clonedDB{{name: "test", start: now, end: now, colls: []clonedColl{{ns: "test.c", docs: 3, start: now, end: now}}}}}
	raw := mustRaw(n.initialSyncStatusLocked())
	for _, c := range []struct {
		path []string
		want any
	}{
		{[]string{"failedInitialSyncAttempts"}, int32(1)}, {[]string{"maxFailedInitialSyncAttempts"}, int32(10)},
		{[]string{"databases", "databasesToClone"}, int32(1)}, {[]string{"databases", "databasesCloned"}, int32(1)},
		{[]string{"databases", "test", "collections"}, int32(1)}, {[]string{"databases", "test", "test.c", "documentsCopied"}, int64(3)},
	} {
		var got any
		switch v := raw.Lookup(c.path...); v.Type {
		case bson.TypeInt32:
			got = v.Int32()
		case bson.TypeInt64:
			got = v.Int64()
		}
		if got != c.want {
			t.Errorf("%v = %v, want %v (%v)", c.path, got, c.want, raw)
		}
	}
	if _, ok := raw.Lookup("initialSyncStart").DateTimeOK(); !ok {
		t.Error("no initialSyncStart")
	}
	if _, _, ok := raw.Lookup("initialSyncOplogStart").TimestampOK(); !ok {
		t.Error("no initialSyncOplogStart")
	}
	n.state = StateSecondary
	if n.initialSyncStatusLocked() != nil {
		t.Error("initialSyncStatus reported outside STARTUP2")
	}
}
