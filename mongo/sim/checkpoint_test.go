package sim

import (
	"reflect"
	"testing"
	"time"

	"github.com/rs/zerolog"
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
		NewOplogEntry(ot, "i", "a.x", doc(2, "two"), nil, time.Now(), bson.E{Key: "lsid", Value: lsid}, bson.E{Key: "txnNumber", Value: int64(7)}, bson.E{Key: "stmtId", Value: int32(0)}),
		NewOplogEntry(ot, "i", "a.x", doc(3, "three"), nil, time.Now(), bson.E{Key: "lsid", Value: lsid}, bson.E{Key: "txnNumber", Value: int64(7)}, bson.E{Key: "stmtId", Value: int32(1)}),
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
	if got, want := r.session(sessionKey(lsid)), d.session(sessionKey(lsid)); got == nil || !reflect.DeepEqual(got, want) || len(got.stmts) != 2 {
		t.Fatalf("retryable write record %+v, want %+v with 2 statements", got, want)
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
		dbs: []clonedDB{{name: "test", start: now, end: now, colls: []clonedColl{{ns: "test.c", docsToCopy: 3, docs: 3, bytes: 60, start: now, end: now}}}}, totalBytes: 60}
	raw := mustRaw(n.initialSyncStatusLocked())
	for _, c := range []struct {
		path []string
		want any
	}{
		{[]string{"failedInitialSyncAttempts"}, int32(1)}, {[]string{"maxFailedInitialSyncAttempts"}, int32(10)},
		{[]string{"databases", "databasesToClone"}, int32(1)}, {[]string{"databases", "databasesCloned"}, int32(1)},
		{[]string{"databases", "test", "collections"}, int32(1)}, {[]string{"databases", "test", "test.c", "documentsCopied"}, int64(3)},
		{[]string{"approxTotalDataSize"}, int64(60)}, {[]string{"approxTotalBytesCopied"}, int64(60)},
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

func storeNode(t *testing.T, dir string) *Node {
	t.Helper()
	cfg := DefaultConfig()
	cfg.DBPath, cfg.ReplSet = dir, "rs0"
	n, err := NewNode(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Start-up loads the checkpoint and replays only the oplog after it; an
// initial sync that never finished leaves an empty member.
func TestStartUpLoadsCheckpointAndHonoursInitialSyncFlag(t *testing.T) {
	dir := t.TempDir()
	st, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	var entries []OplogEntry
	d := NewData()
	for i := range 5 {
		e := NewOplogEntry(OpTime{TS: bson.Timestamp{T: 10, I: uint32(i + 1)}, T: 1}, "i", "a.x", mustRaw(bson.D{{Key: "_id", Value: int32(i)}}), nil, time.Now())
		entries = append(entries, e)
		if i <= 2 {
			d.Apply(e)
		}
	}
	if err := st.AppendOplog(entries); err != nil {
		t.Fatal(err)
	}
	// Checkpoint at the third entry, truncate the two before it.
	if err := st.SaveCheckpoint(entries[2].OpTime(), d.Dump(), entries[2].TS); err != nil {
		t.Fatal(err)
	}
	_ = st.Close()
	n := storeNode(t, dir)
	if len(n.oplog) != 3 || n.oplog[0].TS != entries[2].TS || len(n.data.Coll("a", "x", false).Docs()) != 5 {
		t.Fatalf("after load: %d entries from %v, %d documents", len(n.oplog), n.oplog[0].TS, len(n.data.Coll("a", "x", false).Docs()))
	}
	if n.commitIdx != 1 || n.commit != entries[2].OpTime() || len(n.committed.Coll("a", "x", false).Docs()) != 3 {
		t.Fatalf("commit point %v at %d, %d committed documents", n.commit, n.commitIdx, len(n.committed.Coll("a", "x", false).Docs()))
	}
	_ = n.store.Close()

	st, err = OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.ResetForInitialSync(entries[4].OpTime(), d.Dump(), &entries[4]); err != nil {
		t.Fatal(err)
	}
	_ = st.Close()
	n = storeNode(t, dir)
	if len(n.oplog) != 0 || n.data.HasUserData() || !n.applied.IsZero() {
		t.Fatalf("interrupted initial sync left %d entries, data %v", len(n.oplog), n.data.DBNames())
	}
	_ = n.store.Close()
}

// Truncation keeps the oplog near its size, the documents whole, and a
// restart finds them; minRetentionHours stops it.
func TestTruncationBoundsTheOplog(t *testing.T) {
	dir := t.TempDir()
	cfg := DefaultConfig()
	cfg.DBPath = dir
	n, err := NewNode(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	n.cap.maxBytes = 20 << 10
	pad := string(make([]byte, 1000))
	insert := func(from, to int) {
		for i := from; i < to; i++ {
			if _, err := n.writeOplog([]opSpec{{op: "i", ns: "a.x", o: mustRaw(bson.D{{Key: "_id", Value: int32(i)}, {Key: "pad", Value: pad}})}}, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	insert(0, 100)
	if n.cap.bytes > n.cap.maxBytes || len(n.oplog) > 25 || n.cap.truncations == 0 {
		t.Fatalf("oplog of %d bytes, %d entries after %d truncations", n.cap.bytes, len(n.oplog), n.cap.truncations)
	}
	if got := len(n.data.Coll("a", "x", false).Docs()); got != 100 {
		t.Fatalf("%d documents", got)
	}
	n.cap.minRetentionHours = 1
	before := n.oplog[0].TS
	insert(100, 150)
	if n.oplog[0].TS != before || n.cap.bytes < 50<<10 {
		t.Fatalf("minRetentionHours did not keep entries: first %v, %d bytes", n.oplog[0].TS, n.cap.bytes)
	}
	_ = n.store.Close()
	n = storeNode(t, dir)
	defer func() { _ = n.store.Close() }()
	if got := len(n.data.Coll("a", "x", false).Docs()); got != 150 {
		t.Fatalf("%d documents after restart", got)
	}
}
