package sim

import (
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// A clone taken in batches can hold a unique key twice (an early batch
// has its old owner, a later one its new owner); applying it and then the
// oplog from the clone's begin point, as initial sync does, must accept
// the transient duplicate and end with exactly the source's index.
func TestCloneReplayToleratesTransientDuplicateKeys(t *testing.T) {
	ot := OpTime{TS: bson.Timestamp{T: 1, I: 1}, T: 1}
	doc := func(id, sku string) bson.Raw {
		return mustRaw(bson.D{{Key: "_id", Value: id}, {Key: "sku", Value: sku}})
	}
	src := NewData()
	src.Apply(NewOplogEntry(ot, "c", "a.$cmd", mustRaw(bson.D{{Key: "createIndexes", Value: "k"}, {Key: "v", Value: 2},
		{Key: "key", Value: bson.D{{Key: "sku", Value: 1}}}, {Key: "name", Value: "sku_1"}, {Key: "unique", Value: true}}), nil, time.Now()))
	src.Apply(NewOplogEntry(ot, "i", "a.k", doc("a", "x"), nil, time.Now()))
	src.Apply(NewOplogEntry(ot, "i", "a.k", doc("z", "y"), nil, time.Now()))
	// the clone: definitions and the first batch at begin...
	clone := src.CatalogEntries("a", "k")
	clone = append(clone, NewOplogEntry(OpTime{}, "i", "a.k", doc("a", "x"), nil, time.Time{}))
	// ...writes after begin move "x" from a to n and delete z...
	after := []OplogEntry{
		NewOplogEntry(ot, "u", "a.k", doc("a", "x2"), mustRaw(bson.D{{Key: "_id", Value: "a"}}), time.Now()),
		NewOplogEntry(ot, "i", "a.k", doc("n", "x"), nil, time.Now()),
		NewOplogEntry(ot, "d", "a.k", mustRaw(bson.D{{Key: "_id", Value: "z"}}), nil, time.Now()),
	}
	for _, e := range after {
		src.Apply(e)
	}
	// ...and the last batch sees n already holding "x".
	clone = append(clone, NewOplogEntry(OpTime{}, "i", "a.k", doc("n", "x"), nil, time.Time{}))
	got := replayData(clone)
	if n := len(got.Coll("a", "k", false).Docs()); n != 2 {
		t.Fatalf("clone holds %d documents, want 2 (a and n, both with sku x)", n)
	}
	for _, e := range after {
		got.Apply(e)
	}
	for _, d := range []*Data{src, got} {
		c := d.Coll("a", "k", false)
		for sku, want := range map[string]string{"x": "n", "x2": "a", "y": ""} {
			docs, err := c.Find(mustRaw(bson.D{{Key: "sku", Value: sku}}))
			if err != nil || len(docs) != map[bool]int{true: 0, false: 1}[want == ""] ||
				want != "" && docs[0].Lookup("_id").StringValue() != want {
				t.Errorf("sku %s: %v, %v", sku, docs, err)
			}
		}
	}
	// the replayed index refuses what the source's refuses
	err := got.CheckWrites([]opSpec{{op: "i", ns: "a.k", o: doc("m", "x")}})
	if dk := (*DuplicateKeyError)(nil); !errors.As(err, &dk) {
		t.Errorf("duplicate after replay: %v", err)
	}
	if err := got.CheckWrites([]opSpec{{op: "i", ns: "a.k", o: doc("m", "y")}}); err != nil {
		t.Errorf("freed key refused: %v", err)
	}
}
