package sim

import (
	"errors"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
)

func rv(v any) bson.RawValue {
	return mustRaw(bson.D{{Key: "v", Value: v}}).Lookup("v")
}

func TestKeyStringEquatesWhatIndexesEquate(t *testing.T) {
	same := [][2]any{
		{int32(1), 1.0}, {int64(1), int32(1)}, {2.5, 2.5}, {"x", "x"},
		{bson.D{{Key: "a", Value: 1}}, bson.D{{Key: "a", Value: 1.0}}}, {nil, bson.Undefined{}},
	}
	for _, p := range same {
		if keyString(rv(p[0])) != keyString(rv(p[1])) {
			t.Errorf("%v and %v should be one key", p[0], p[1])
		}
	}
	differ := [][2]any{
		{int32(1), "1"}, {1.5, int32(1)}, {bson.D{{Key: "a", Value: 1}, {Key: "b", Value: 1}}, bson.D{{Key: "b", Value: 1}, {Key: "a", Value: 1}}},
		{nil, int32(0)}, {bson.A{1}, int32(1)}, {true, int32(1)}, {"a", "b"},
	}
	for _, p := range differ {
		if keyString(rv(p[0])) == keyString(rv(p[1])) {
			t.Errorf("%v and %v should be different keys", p[0], p[1])
		}
	}
	if keyString(bson.RawValue{}) != keyString(rv(nil)) {
		t.Error("missing and null should be one key")
	}
}

func TestFormatValueAsMongod(t *testing.T) {
	oid, _ := bson.ObjectIDFromHex("64b7f0c2a1b2c3d4e5f60718")
	cases := []struct {
		v    any
		want string
	}{
		{"x", `"x"`}, {int32(1), "1"}, {int64(7), "7"}, {1.0, "1.0"}, {2.5, "2.5"}, {nil, "null"}, {true, "true"},
		{oid, "ObjectId('64b7f0c2a1b2c3d4e5f60718')"}, {bson.DateTime(1700000000000), "new Date(1700000000000)"},
		{bson.D{{Key: "a", Value: int32(1)}, {Key: "b", Value: "c"}}, `{ a: 1, b: "c" }`}, {bson.A{int32(1), "x"}, `[ 1, "x" ]`},
		{bson.D{}, "{}"},
		{bson.Binary{Subtype: 4, Data: []byte{0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0x4d, 0xef, 0x80, 1, 2, 3, 4, 5, 6, 7}}, `UUID("12345678-9abc-4def-8001-020304050607")`},
		{bson.Binary{Subtype: 0, Data: []byte("Hi")}, "BinData(0, 4869)"}, {bson.Regex{Pattern: "^a", Options: "i"}, "/^a/i"},
		{bson.Timestamp{T: 5, I: 1}, "Timestamp(5, 1)"},
	}
	for _, c := range cases {
		if got := showValue(rv(c.v)); got != c.want {
			t.Errorf("showValue(%v) = %s, want %s", c.v, got, c.want)
		}
	}
}

func TestPathValuesTraverseArrays(t *testing.T) {
	doc := mustRaw(bson.D{{Key: "a", Value: bson.A{bson.D{{Key: "b", Value: 1}}, bson.D{{Key: "b", Value: bson.A{2, 3}}}, bson.D{{Key: "c", Value: 1}}}}, {Key: "e", Value: bson.A{}}})
	vals, multi := indexedValues(doc, "a.b")
	var got []string
	for _, v := range vals {
		got = append(got, showValue(v))
	}
	if !multi || fmt.Sprint(got) != "[1 2 3 null]" {
		t.Fatalf("a.b: %v %v", got, multi)
	}
	if vals, _ := indexedValues(doc, "e"); len(vals) != 1 || vals[0].Type != bson.TypeUndefined {
		t.Fatalf("empty array: %v", vals)
	}
}

func entry(op, ns string, o bson.D, o2 ...bson.D) OplogEntry {
	e := OplogEntry{Op: op, NS: ns, O: mustRaw(o)}
	if len(o2) > 0 {
		e.O2 = mustRaw(o2[0])
	}
	return e
}

// specs are entries as the ops a write path hands to writeOplogLocked.
func specs(es ...OplogEntry) []opSpec {
	var out []opSpec
	for _, e := range es {
		out = append(out, opSpec{op: e.Op, ns: e.NS, o: e.O, o2: e.O2})
	}
	return out
}

// A batch is checked in order: a write may take a key an earlier write
// of the same batch freed, and may not take one it took.
func TestCheckWritesFollowsTheBatch(t *testing.T) {
	d := NewData()
	d.Apply(entry("c", "t.$cmd", bson.D{{Key: "createIndexes", Value: "c"}, {Key: "v", Value: 2}, {Key: "key", Value: bson.D{{Key: "k", Value: 1}}}, {Key: "name", Value: "k_1"}, {Key: "unique", Value: true}}))
	d.Apply(entry("i", "t.c", bson.D{{Key: "_id", Value: 1}, {Key: "k", Value: "x"}}))
	swap := []OplogEntry{
		entry("u", "t.c", bson.D{{Key: "_id", Value: 1}, {Key: "k", Value: "y"}}, bson.D{{Key: "_id", Value: 1}}),
		entry("i", "t.c", bson.D{{Key: "_id", Value: 2}, {Key: "k", Value: "x"}}),
	}
	if err := d.CheckWrites(specs(swap...)); err != nil {
		t.Fatalf("freed key refused: %v", err)
	}
	twice := []OplogEntry{
		entry("i", "t.c", bson.D{{Key: "_id", Value: 3}, {Key: "k", Value: "z"}}),
		entry("i", "t.c", bson.D{{Key: "_id", Value: 4}, {Key: "k", Value: "z"}}),
	}
	err := d.CheckWrites(specs(twice...))
	var dk *DuplicateKeyError
	ok := errors.As(err, &dk)
	if !ok || dk.Op != 1 || dk.Error() != `E11000 duplicate key error collection: t.c index: k_1 dup key: { k: "z" }` {
		t.Fatalf("got %v", err)
	}
	var ce *CmdError
	if !errors.As(err, &ce) || ce.Code != 11000 || len(ce.Extra) != 2 || ce.Msg != dk.Error() {
		t.Fatalf("as a CmdError: %v", ce)
	}
	del := []OplogEntry{entry("d", "t.c", bson.D{{Key: "_id", Value: 1}}), entry("i", "t.c", bson.D{{Key: "_id", Value: 5}, {Key: "k", Value: "x"}})}
	if err := d.CheckWrites(specs(del...)); err != nil {
		t.Fatalf("key of a deleted document refused: %v", err)
	}
	if err := d.CheckWrites(specs(entry("i", "t.c", bson.D{{Key: "_id", Value: int64(1)}}))); err == nil {
		t.Fatal("_id 1 inserted twice")
	}
	// a transaction's applyOps entry is checked as its ops
	txn := entry("c", "admin.$cmd", bson.D{{Key: "applyOps", Value: bson.A{
		bson.D{{Key: "op", Value: "i"}, {Key: "ns", Value: "t.c"}, {Key: "o", Value: bson.D{{Key: "_id", Value: 7}, {Key: "k", Value: "q"}}}},
		bson.D{{Key: "op", Value: "i"}, {Key: "ns", Value: "t.c"}, {Key: "o", Value: bson.D{{Key: "_id", Value: 8}, {Key: "k", Value: "q"}}}},
	}}})
	if dk := (*DuplicateKeyError)(nil); !errors.As(d.CheckWrites(specs(txn)), &dk) || dk.Op != 1 {
		t.Fatalf("applyOps with a duplicate: %v", dk)
	}
}

func TestRemoveKeepsNaturalOrder(t *testing.T) {
	d := NewData()
	for i := range 300 {
		d.Apply(entry("i", "t.c", bson.D{{Key: "_id", Value: i}}))
	}
	for i := 0; i < 300; i += 2 {
		d.Apply(entry("d", "t.c", bson.D{{Key: "_id", Value: i}}))
	}
	d.Apply(entry("u", "t.c", bson.D{{Key: "_id", Value: 1}, {Key: "x", Value: 1}}))
	docs := d.Coll("t", "c", false).Docs()
	if len(docs) != 150 {
		t.Fatalf("%d documents", len(docs))
	}
	for i, doc := range docs {
		if doc.Lookup("_id").Int32() != int32(2*i+1) {
			t.Fatalf("position %d holds %s", i, doc)
		}
	}
	if d.Coll("t", "c", false).Get(rv(1.0)) == nil {
		t.Fatal("_id 1.0 does not find _id 1")
	}
}

// Index lookups return exactly what a scan returns, on random data
// changed by random inserts, updates and deletes.
func TestIndexLookupMatchesScan(t *testing.T) {
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	pool := []any{int32(1), int64(1), 1.0, 2.5, "x", "y", nil, bson.A{int32(1), "x"}, bson.A{}, bson.D{{Key: "k", Value: 1}}, true, bson.DateTime(5)}
	pick := func() any { return pool[rng.Intn(len(pool))] }
	d := NewData()
	for _, f := range []string{"a", "b.c"} {
		d.Apply(entry("c", "t.$cmd", bson.D{{Key: "createIndexes", Value: "c"}, {Key: "v", Value: 2}, {Key: "key", Value: bson.D{{Key: f, Value: 1}}}, {Key: "name", Value: f + "_1"}}))
	}
	d.Apply(entry("c", "t.$cmd", bson.D{{Key: "createIndexes", Value: "c"}, {Key: "v", Value: 2}, {Key: "key", Value: bson.D{{Key: "e", Value: 1}, {Key: "a", Value: -1}}}, {Key: "name", Value: "e_1_a_-1"}}))
	d.Apply(entry("c", "t.$cmd", bson.D{{Key: "createIndexes", Value: "c"}, {Key: "v", Value: 2}, {Key: "key", Value: bson.D{{Key: "s", Value: 1}}}, {Key: "name", Value: "s_1"}, {Key: "sparse", Value: true}}))
	randomDoc := func(id int) bson.D {
		doc := bson.D{{Key: "_id", Value: id}}
		if rng.Intn(5) > 0 {
			doc = append(doc, bson.E{Key: "a", Value: pick()})
		}
		for _, f := range []string{"e", "s"} {
			if rng.Intn(3) > 0 {
				doc = append(doc, bson.E{Key: f, Value: pick()})
			}
		}
		switch rng.Intn(3) {
		case 0:
			doc = append(doc, bson.E{Key: "b", Value: bson.D{{Key: "c", Value: pick()}}})
		case 1:
			doc = append(doc, bson.E{Key: "b", Value: bson.A{bson.D{{Key: "c", Value: pick()}}, bson.D{{Key: "c", Value: pick()}}}})
		}
		return doc
	}
	// writes a primary would refuse (two arrays under e_1_a_-1) are left
	// out, except in the last round: an index holding such a document
	// must not be used
	refused := 0
	write := func(e OplogEntry) {
		if d.CheckWrites(specs(e)) == nil || refused == -1 {
			d.Apply(e)
		} else {
			refused++
		}
	}
	for i := range 300 {
		write(entry("i", "t.c", randomDoc(i)))
	}
	for range 200 {
		id := rng.Intn(300)
		if rng.Intn(2) == 0 {
			write(entry("d", "t.c", bson.D{{Key: "_id", Value: id}}))
		} else {
			write(entry("u", "t.c", randomDoc(id), bson.D{{Key: "_id", Value: id}}))
		}
	}
	cl := d.Coll("t", "c", false)
	usedIndex := 0
	for q := range 600 {
		if q == 500 {
			refused = -1
			write(entry("i", "t.c", bson.D{{Key: "_id", Value: 1000}, {Key: "e", Value: bson.A{int32(1), "x"}}, {Key: "a", Value: bson.A{int32(1), "x"}}}))
		}
		var filter bson.D
		field := []string{"a", "b.c", "_id", "e", "s"}[rng.Intn(5)]
		v := pick()
		if field == "_id" {
			v = int32(rng.Intn(300))
		}
		switch rng.Intn(3) {
		case 0:
			filter = bson.D{{Key: field, Value: v}}
		case 1:
			filter = bson.D{{Key: field, Value: bson.D{{Key: "$eq", Value: v}}}}
		default:
			filter = bson.D{{Key: field, Value: bson.D{{Key: "$in", Value: bson.A{v, pick()}}}}}
		}
		f := mustRaw(filter)
		var scan, indexed []string
		for _, doc := range cl.Docs() {
			if ok, _ := Match(doc, f); ok {
				scan = append(scan, doc.Lookup("_id").String())
			}
		}
		if _, used := cl.viaIndex(f); used {
			usedIndex++
		}
		found, err := cl.Find(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range found {
			indexed = append(indexed, doc.Lookup("_id").String())
		}
		if fmt.Sprint(scan) != fmt.Sprint(indexed) {
			t.Fatalf("seed %d query %d %s: scan %v, index %v", seed, q, f, scan, indexed)
		}
	}
	if usedIndex < 200 {
		t.Fatalf("indexes answered only %d of 500 queries", usedIndex)
	}
}

// create on an existing collection: 48 before 7.0; from 7.0 ok with the
// same options and 48 with others. drop of a missing collection: 26
// before 7.0, ok from 7.0.
func TestCreateAndDropByVersion(t *testing.T) {
	for _, c := range []struct {
		version                  string
		same, different, dropped int32
	}{{"6.0.19", 48, 48, 26}, {"7.0.14", 0, 48, 0}, {"8.0.4", 0, 48, 0}} {
		cfg := DefaultConfig()
		cfg.DBPath = t.TempDir()
		cfg.ServerVersion = c.version
		n, err := NewNode(cfg, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		cn := &conn{n: n, nc: nopConn{}, id: 1, local: true}
		code := func(cmd bson.D) int32 {
			reply, _ := cn.handle(&Request{Body: mustRaw(append(cmd, bson.E{Key: "$db", Value: "t"}))})
			for _, e := range reply {
				if e.Key == "code" {
					return e.Value.(int32)
				}
			}
			return 0
		}
		capped := bson.D{{Key: "create", Value: "c"}, {Key: "capped", Value: true}, {Key: "size", Value: int32(4096)}}
		if got := code(capped); got != 0 {
			t.Fatalf("%s: first create %d", c.version, got)
		}
		if got := code(capped); got != c.same {
			t.Errorf("%s: same options: %d, want %d", c.version, got, c.same)
		}
		if got := code(bson.D{{Key: "create", Value: "c"}}); got != c.different {
			t.Errorf("%s: other options: %d, want %d", c.version, got, c.different)
		}
		if got := code(bson.D{{Key: "drop", Value: "missing"}}); got != c.dropped {
			t.Errorf("%s: drop missing: %d, want %d", c.version, got, c.dropped)
		}
		_ = n.store.Close()
	}
}

// Spec errors with mongod's codes and texts.
func TestParseIndexSpecErrors(t *testing.T) {
	cases := []struct {
		spec bson.D
		code int32
		msg  string
	}{
		{bson.D{{Key: "key", Value: bson.D{{Key: "v", Value: 1}}}}, 9,
			`Error in specification { key: { v: 1 } } :: caused by :: The 'name' field is a required property of an index specification`},
		{bson.D{}, 9, `Error in specification {} :: caused by :: The 'key' field is a required property of an index specification`},
		{bson.D{{Key: "key", Value: bson.D{{Key: "v", Value: -1}}}, {Key: "name", Value: ""}}, 67,
			`Error in specification { key: { v: -1 }, name: "", v: 2 } :: caused by :: index name cannot be empty`},
		{bson.D{{Key: "key", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "name", Value: "_id_"}, {Key: "unique", Value: true}}, 197,
			`The field 'unique' is not valid for an _id index specification. Specification: { key: { _id: 1 }, name: "_id_", unique: true, v: 2 }`},
		{bson.D{{Key: "key", Value: bson.D{{Key: "v", Value: 1}}}, {Key: "name", Value: "unique_index"}, {Key: "unique", Value: bson.D{}}}, 14,
			`Error in specification { key: { v: 1 }, name: "unique_index", unique: {} } :: caused by :: The field 'unique has value unique: {}, which is not convertible to bool`},
		{bson.D{{Key: "key", Value: bson.D{{Key: "u", Value: 1}}}, {Key: "bogus", Value: true}, {Key: "name", Value: "u_1"}}, 197,
			`Error in specification { key: { u: 1 }, bogus: true, name: "u_1" } :: caused by :: The field 'bogus' is not valid for an index specification. Specification: { key: { u: 1 }, bogus: true, name: "u_1" }`},
	}
	for _, c := range cases {
		_, err := parseIndexSpec(mustRaw(c.spec))
		if err == nil || err.Code != c.code || err.Msg != c.msg {
			t.Errorf("%v: got %v, want %d %s", c.spec, err, c.code, c.msg)
		}
	}
}

// A collection rebuilt from its catalog entries and documents has the
// same options, indexes and UUID.
func TestCatalogEntriesRebuildTheCollection(t *testing.T) {
	d := NewData()
	d.Apply(NewOplogEntry(OpTime{TS: bson.Timestamp{T: 9, I: 1}, T: 1}, "c", "t.$cmd",
		mustRaw(bson.D{{Key: "create", Value: "c"}, {Key: "capped", Value: true}, {Key: "size", Value: int32(4096)}, {Key: "idIndex", Value: idIndexSpec}}), nil, time.Now()))
	d.Apply(entry("c", "t.$cmd", bson.D{{Key: "createIndexes", Value: "c"}, {Key: "v", Value: 2}, {Key: "key", Value: bson.D{{Key: "k", Value: 1}}}, {Key: "name", Value: "k_1"}, {Key: "unique", Value: true}}))
	d.Apply(entry("i", "t.c", bson.D{{Key: "_id", Value: 1}, {Key: "k", Value: "x"}}))
	orig := d.Coll("t", "c", false)

	rebuilt := NewData()
	for _, e := range d.CatalogEntries("t", "c") {
		e, err := DecodeOplogEntry(e.Raw)
		if err != nil {
			t.Fatal(err)
		}
		rebuilt.Apply(e)
	}
	for _, doc := range orig.Docs() {
		rebuilt.Apply(entry("i", "t.c", bson.D{{Key: "_id", Value: doc.Lookup("_id")}, {Key: "k", Value: doc.Lookup("k")}}))
	}
	c := rebuilt.Coll("t", "c", false)
	if c.UUID != orig.UUID || string(c.Options) != string(orig.Options) || len(c.Indexes) != 1 || string(c.Indexes[0].Spec) != string(orig.Indexes[0].Spec) {
		t.Fatalf("rebuilt %x %s %v, was %x %s %v", c.UUID, c.Options, c.Indexes, orig.UUID, orig.Options, orig.Indexes)
	}
	if err := rebuilt.CheckWrites(specs(entry("i", "t.c", bson.D{{Key: "_id", Value: 2}, {Key: "k", Value: "x"}}))); err == nil {
		t.Fatal("rebuilt unique index not enforced")
	}
}
