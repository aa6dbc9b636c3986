package sim

import (
	"testing"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// A retried write (same lsid and txnNumber) is answered, not applied twice.
func TestRetryableWriteNotAppliedTwice(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DBPath = t.TempDir()
	n, err := NewNode(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = n.store.Close() }()
	c := &conn{n: n, nc: nopConn{}, id: 1, local: true}
	lsid := bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: []byte("0123456789abcdef")}}}
	insert := mustRaw(bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "a", Value: 1}}}},
		{Key: "lsid", Value: lsid}, {Key: "txnNumber", Value: int64(1)}, {Key: "$db", Value: "t"}})
	for range 2 {
		reply, _ := c.handle(&Request{Body: insert})
		var nVal any
		for _, e := range reply {
			if e.Key == "n" {
				nVal = e.Value
			}
		}
		if nVal != int32(1) {
			t.Fatalf("reply %v", reply)
		}
	}
	if got := len(n.data.Coll("t", "c", false).Docs()); got != 1 {
		t.Fatalf("retried insert applied %d times", got)
	}
	// a new txnNumber is a new write
	insert2 := mustRaw(bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "a", Value: 2}}}},
		{Key: "lsid", Value: lsid}, {Key: "txnNumber", Value: int64(2)}, {Key: "$db", Value: "t"}})
	c.handle(&Request{Body: insert2})
	if got := len(n.data.Coll("t", "c", false).Docs()); got != 2 {
		t.Fatalf("docs %d", got)
	}
}
