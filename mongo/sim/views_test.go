package sim

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestViews: create with viewOn and pipeline stores the definition in
// <db>.system.views as mongod does (one insert entry in the oplog);
// listCollections shows it as a view; find and aggregate run its pipeline
// (over a view of a view too) before their own stages, count and distinct
// too; a write to it is
// refused (166), a second create of another definition too (48), the same
// one is idempotent (7.0); drop removes the definition only.
func TestViews(t *testing.T) {
	n, c := standaloneConn(t)
	do := func(d bson.D) bson.Raw {
		reply, _ := c.handle(&Request{Body: mustRaw(append(d, bson.E{Key: "$db", Value: "t"}))})
		return mustRaw(reply)
	}
	code := func(r bson.Raw) int32 {
		if ok, _ := r.Lookup("ok").AsFloat64OK(); ok == 1 {
			return 0
		}
		v, _ := r.Lookup("code").AsInt64OK()
		return int32(v)
	}
	batch := func(r bson.Raw) []bson.Raw {
		arr, ok := r.Lookup("cursor", "firstBatch").ArrayOK()
		if !ok {
			t.Fatalf("no cursor: %v", r)
		}
		vals, _ := arr.Values()
		out := make([]bson.Raw, 0, len(vals))
		for _, v := range vals {
			out = append(out, v.Document())
		}
		return out
	}
	if r := do(bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{
		bson.D{{Key: "_id", Value: 1}, {Key: "k", Value: "a"}, {Key: "secret", Value: "x"}},
		bson.D{{Key: "_id", Value: 2}, {Key: "k", Value: "b"}, {Key: "secret", Value: "y"}},
		bson.D{{Key: "_id", Value: 3}, {Key: "k", Value: "b"}, {Key: "secret", Value: "z"}},
	}}}); code(r) != 0 {
		t.Fatalf("insert: %v", r)
	}
	pipeline := bson.A{bson.D{{Key: "$project", Value: bson.D{{Key: "secret", Value: 0}}}}}
	before := len(n.oplog)
	if r := do(bson.D{{Key: "create", Value: "v"}, {Key: "viewOn", Value: "c"}, {Key: "pipeline", Value: pipeline}}); code(r) != 0 {
		t.Fatalf("create view: %v", r)
	}
	if got := n.oplog[len(n.oplog)-1]; len(n.oplog)-before != 1 || got.Op != "i" || got.NS != "t.system.views" ||
		got.O.Lookup("_id").StringValue() != "t.v" || got.O.Lookup("viewOn").StringValue() != "c" {
		t.Fatalf("oplog after create view: %d entries, last %v", len(n.oplog)-before, got.Raw)
	}
	if r := do(bson.D{{Key: "create", Value: "v"}, {Key: "viewOn", Value: "c"}, {Key: "pipeline", Value: pipeline}}); code(r) != 0 {
		t.Errorf("the same create again: %v, want ok (7.0)", r)
	}
	if r := do(bson.D{{Key: "create", Value: "v"}, {Key: "viewOn", Value: "other"}}); code(r) != 48 {
		t.Errorf("another definition: %v, want 48", r)
	}
	if r := do(bson.D{{Key: "create", Value: "c"}, {Key: "viewOn", Value: "v"}}); code(r) != 48 {
		t.Errorf("a view over a collection's name: %v, want 48", r)
	}
	if r := do(bson.D{{Key: "create", Value: "w"}, {Key: "pipeline", Value: bson.A{}}}); code(r) != 9 {
		t.Errorf("pipeline without viewOn: %v, want 9", r)
	}
	if r := do(bson.D{{Key: "create", Value: "w"}, {Key: "viewOn", Value: "c"}, {Key: "capped", Value: true}}); code(r) != 167 {
		t.Errorf("capped view: %v, want 167", r)
	}
	if r := do(bson.D{{Key: "create", Value: "bs"}, {Key: "viewOn", Value: "v"},
		{Key: "pipeline", Value: bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "k", Value: "b"}}}}}}}); code(r) != 0 {
		t.Fatalf("view of a view: %v", r)
	}
	var listed []string
	for _, d := range batch(do(bson.D{{Key: "listCollections", Value: 1}})) {
		name, typ := d.Lookup("name").StringValue(), d.Lookup("type").StringValue()
		listed = append(listed, name+":"+typ)
		if name == "v" && (d.Lookup("options", "viewOn").StringValue() != "c" || !d.Lookup("info", "readOnly").Boolean()) {
			t.Errorf("listCollections of v: %v", d)
		}
	}
	want := []string{"c:collection", "system.views:collection", "v:view", "bs:view"}
	if len(listed) != len(want) {
		t.Fatalf("listCollections: %v, want %v", listed, want)
	}
	for i := range want {
		if listed[i] != want[i] {
			t.Fatalf("listCollections: %v, want %v", listed, want)
		}
	}
	docs := batch(do(bson.D{{Key: "find", Value: "v"}, {Key: "filter", Value: bson.D{{Key: "k", Value: "b"}}},
		{Key: "sort", Value: bson.D{{Key: "_id", Value: -1}}}}))
	if len(docs) != 2 || docs[0].Lookup("_id").Int32() != 3 || docs[0].Lookup("secret").Type != 0 {
		t.Errorf("find on the view: %v", docs)
	}
	if docs := batch(do(bson.D{{Key: "find", Value: "bs"}})); len(docs) != 2 || docs[1].Lookup("secret").Type != 0 {
		t.Errorf("find on the view of a view: %v", docs)
	}
	docs = batch(do(bson.D{{Key: "aggregate", Value: "bs"}, {Key: "cursor", Value: bson.D{}},
		{Key: "pipeline", Value: bson.A{bson.D{{Key: "$count", Value: "n"}}}}}))
	if len(docs) != 1 || docs[0].Lookup("n").Int32() != 2 {
		t.Errorf("aggregate on the view of a view: %v", docs)
	}
	if r := do(bson.D{{Key: "count", Value: "bs"}, {Key: "query", Value: bson.D{{Key: "_id", Value: 2}}}}); r.Lookup("n").Int32() != 1 {
		t.Errorf("count on the view of a view: %v", r)
	}
	if r := do(bson.D{{Key: "distinct", Value: "v"}, {Key: "key", Value: "k"}}); len(r.Lookup("values").Array().String()) == 0 ||
		r.Lookup("values").Array().String() != `["a","b"]` {
		t.Errorf("distinct on the view: %v", r)
	}
	if r := do(bson.D{{Key: "insert", Value: "v"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 9}}}}}); code(r) != 166 {
		t.Errorf("insert into a view: %v, want 166", r)
	}
	if r := do(bson.D{{Key: "drop", Value: "v"}}); code(r) != 0 {
		t.Fatalf("drop view: %v", r)
	}
	if n.data.Coll("t", "c", false).Len() != 3 {
		t.Error("dropping the view touched its collection")
	}
	if docs := batch(do(bson.D{{Key: "find", Value: "v"}})); len(docs) != 0 {
		t.Errorf("find on a dropped view: %v, want nothing", docs)
	}
}
