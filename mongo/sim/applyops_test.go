package sim

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestApplyOps: applyOps applies oplog entries as mongod applies them,
// idempotently: an insert of an existing _id replaces it, an update of a
// missing document is an upsert (refused with 47 under alwaysUpsert false),
// a delete of a missing one does nothing, a no-op is counted; each write is
// logged as its own oplog entry. Command entries and update operators are
// refused (not modelled), without applying anything.
func TestApplyOps(t *testing.T) {
	n, c := standaloneConn(t)
	do := func(d bson.D) bson.Raw {
		reply, _ := c.handle(&Request{Body: mustRaw(append(d, bson.E{Key: "$db", Value: "admin"}))})
		return mustRaw(reply)
	}
	entry := func(op string, o, o2 bson.D) bson.D {
		e := bson.D{{Key: "op", Value: op}, {Key: "ns", Value: "t.c"}, {Key: "o", Value: o}}
		if o2 != nil {
			e = append(e, bson.E{Key: "o2", Value: o2})
		}
		return e
	}
	id := func(v int) bson.D { return bson.D{{Key: "_id", Value: v}} }
	before := len(n.oplog)
	r := do(bson.D{{Key: "applyOps", Value: bson.A{
		entry("i", bson.D{{Key: "_id", Value: 1}, {Key: "v", Value: "a"}}, nil),
		entry("i", bson.D{{Key: "_id", Value: 1}, {Key: "v", Value: "b"}}, nil),   // exists: replaced
		entry("u", bson.D{{Key: "_id", Value: 2}, {Key: "v", Value: "c"}}, id(2)), // missing: upserted
		entry("u", bson.D{{Key: "v", Value: "d"}}, id(2)),                         // _id from o2
		entry("d", id(3), nil), // missing: nothing
		bson.D{{Key: "op", Value: "n"}, {Key: "ns", Value: ""}, {Key: "o", Value: bson.D{{Key: "msg", Value: "x"}}}},
	}}})
	if ok, _ := r.Lookup("ok").AsFloat64OK(); ok != 1 || r.Lookup("applied").Int32() != 6 {
		t.Fatalf("applyOps: %v", r)
	}
	coll := n.data.Coll("t", "c", false)
	if got := coll.Get(bson.RawValue{Type: bson.TypeInt32, Value: []byte{1, 0, 0, 0}}); got == nil || got.Lookup("v").StringValue() != "b" {
		t.Errorf("_id 1 = %v, want v b", got)
	}
	if got := coll.Get(bson.RawValue{Type: bson.TypeInt32, Value: []byte{2, 0, 0, 0}}); got == nil || got.Lookup("v").StringValue() != "d" {
		t.Errorf("_id 2 = %v, want v d", got)
	}
	if got := len(n.oplog) - before; got != 4 {
		t.Errorf("%d oplog entries written, want 4 (the delete of a missing document and the no-op write none)", got)
	}
	for _, tc := range []struct {
		name string
		cmd  bson.D
		code int32
	}{
		{"update of a missing document without alwaysUpsert", bson.D{{Key: "applyOps", Value: bson.A{entry("u", bson.D{{Key: "v", Value: 1}}, id(9))}}, {Key: "alwaysUpsert", Value: false}}, 47},
		{"a command entry", bson.D{{Key: "applyOps", Value: bson.A{bson.D{{Key: "op", Value: "c"}, {Key: "ns", Value: "t.$cmd"}, {Key: "o", Value: bson.D{{Key: "drop", Value: "c"}}}}}}}, 72},
		{"an update operator", bson.D{{Key: "applyOps", Value: bson.A{entry("u", bson.D{{Key: "$v", Value: 2}, {Key: "diff", Value: bson.D{}}}, id(1))}}}, 2},
		{"not an array", bson.D{{Key: "applyOps", Value: 1}}, 14},
		{"a bad op", bson.D{{Key: "applyOps", Value: bson.A{bson.D{{Key: "op", Value: "x"}, {Key: "ns", Value: "t.c"}}}}}, 2},
	} {
		r := do(tc.cmd)
		if code, _ := r.Lookup("code").AsInt64OK(); int32(code) != tc.code {
			t.Errorf("%s: %v, want code %d", tc.name, r, tc.code)
		}
	}
	if coll.Get(bson.RawValue{Type: bson.TypeInt32, Value: []byte{9, 0, 0, 0}}) != nil {
		t.Error("a refused applyOps wrote")
	}
}
