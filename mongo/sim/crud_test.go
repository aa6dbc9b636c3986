package sim

import (
	"testing"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// A standalone refuses txnNumber, as mongod does (retryable writes and
// transactions need a replica set; TestRetryableWritesAcrossFailover
// covers them).
func TestStandaloneRefusesTxnNumber(t *testing.T) {
	n, c := standaloneConn(t)
	lsid := bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: []byte("0123456789abcdef")}}}
	insert := mustRaw(bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "a", Value: 1}}}},
		{Key: "lsid", Value: lsid}, {Key: "txnNumber", Value: int64(1)}, {Key: "$db", Value: "t"}})
	reply, _ := c.handle(&Request{Body: insert})
	if code := mustRaw(reply).Lookup("code").Int32(); code != 20 {
		t.Fatalf("reply %v", reply)
	}
	if got := len(n.data.Coll("t", "c", false).Docs()); got != 0 {
		t.Fatalf("refused insert applied: %d", got)
	}
}

func TestFindAndModifyDistinctAndNaturalOrder(t *testing.T) {
	n, c := standaloneConn(t)
	do := func(d bson.D) bson.Raw {
		reply, _ := c.handle(&Request{Body: mustRaw(append(d, bson.E{Key: "$db", Value: "t"}))})
		return mustRaw(reply)
	}
	do(bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{
		bson.D{{Key: "k", Value: "a"}, {Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}, {Key: "k", Value: "b"}}, bson.D{{Key: "_id", Value: 3}, {Key: "k", Value: "a"}}}}})
	r := do(bson.D{{Key: "findAndModify", Value: "c"}, {Key: "query", Value: bson.D{{Key: "_id", Value: 2}}},
		{Key: "update", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "k", Value: "z"}}}}}, {Key: "new", Value: true}})
	if k, _ := r.Lookup("value", "k").StringValueOK(); k != "z" {
		t.Fatalf("findAndModify: %v", r)
	}
	r = do(bson.D{{Key: "distinct", Value: "c"}, {Key: "key", Value: "k"}})
	if vals, _ := r.Lookup("values").Array().Values(); len(vals) != 2 {
		t.Fatalf("distinct: %v", r)
	}
	r = do(bson.D{{Key: "find", Value: "c"}, {Key: "sort", Value: bson.D{{Key: "$natural", Value: -1}}}, {Key: "limit", Value: 1}})
	first, _ := r.Lookup("cursor", "firstBatch").Array().Values()
	if id, _ := first[0].Document().Lookup("_id").AsInt64OK(); id != 3 {
		t.Fatalf("$natural -1: %v", r)
	}
	// _id is stored first, as mongod does
	if e, _ := n.data.Coll("t", "c", false).Docs()[0].IndexErr(0); e.Key() != "_id" {
		t.Fatal("_id not first")
	}
}

// An unordered update goes on past a failing statement; an ordered one stops.
func TestUpdateOrderedAndUnordered(t *testing.T) {
	_, c := standaloneConn(t)
	c.handle(&Request{Body: mustRaw(bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}}}}, {Key: "$db", Value: "t"}})})
	for _, ordered := range []bool{true, false} {
		reply, _ := c.handle(&Request{Body: mustRaw(bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{
			bson.D{{Key: "q", Value: bson.D{}}, {Key: "u", Value: bson.D{{Key: "$foo", Value: 1}}}}, // unknown modifier: 9
			bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}}},
		}}, {Key: "ordered", Value: ordered}, {Key: "$db", Value: "t"}})})
		r := mustRaw(reply)
		want := int32(1)
		if ordered {
			want = 0
		}
		if got := r.Lookup("nModified").Int32(); got != want {
			t.Fatalf("ordered %v: %v", ordered, r)
		}
		if errs, _ := r.Lookup("writeErrors").Array().Values(); len(errs) != 1 {
			t.Fatalf("ordered %v: %v", ordered, r)
		}
	}
}

// standaloneConn is a standalone member (no replica set) on a fresh dbpath,
// with a local connection to run commands through, closed at the test's end.
func standaloneConn(t *testing.T) (*Node, *conn) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.DBPath = t.TempDir()
	n, err := NewNode(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.store.Close() })
	return n, &conn{n: n, nc: nopConn{}, id: 1, local: true}
}
