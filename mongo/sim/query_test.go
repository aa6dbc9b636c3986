package sim_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// singleMemberClient starts a one-member replica set and returns a client
// connected to its primary.
func singleMemberClient(t *testing.T) *mongo.Client {
	t.Helper()
	m := newMember(t)
	c := m.client(t)
	mustRun(t, c, bson.D{{Key: "replSetInitiate", Value: rsConfig([]*member{m}, fastSettings)}})
	waitPrimary(t, []*member{m}, 30*time.Second)
	return c
}

// ej parses relaxed extended JSON: 1 is an int32, 1.5 a double,
// {"$numberLong": "1"} an int64.
func ej(t *testing.T, s string) bson.Raw {
	t.Helper()
	if s == "" {
		return nil
	}
	var d bson.Raw
	if err := bson.UnmarshalExtJSON([]byte(s), false, &d); err != nil {
		t.Fatalf("ext JSON %s: %v", s, err)
	}
	return d
}

// canonical prints a document with its BSON types and field order.
func canonical(t *testing.T, d bson.Raw) string {
	t.Helper()
	b, err := bson.MarshalExtJSON(d, true, false)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func ejArray(t *testing.T, s string) []bson.Raw {
	t.Helper()
	wrapped := ej(t, `{"a": `+s+`}`)
	vals, _ := wrapped.Lookup("a").Array().Values()
	out := make([]bson.Raw, len(vals))
	for i, v := range vals {
		out[i] = v.Document()
	}
	return out
}

func codeOf(err error) int {
	var ce mongo.CommandError
	if errors.As(err, &ce) {
		return int(ce.Code)
	}
	var we mongo.WriteException
	if errors.As(err, &we) && len(we.WriteErrors) > 0 {
		return we.WriteErrors[0].Code
	}
	var se mongo.ServerError
	if errors.As(err, &se) {
		for _, c := range []int{2, 9, 14, 28, 40, 52, 54, 56, 66} {
			if se.HasErrorCode(c) {
				return c
			}
		}
	}
	return -1
}

func seed(t *testing.T, coll *mongo.Collection, docs string) {
	t.Helper()
	ctx := context.Background()
	for _, d := range ejArray(t, docs) {
		if _, err := coll.InsertOne(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
}

func findAll(t *testing.T, coll *mongo.Collection, filter bson.Raw, sort bson.Raw, proj bson.Raw) ([]string, error) {
	t.Helper()
	cmd := bson.D{{Key: "find", Value: coll.Name()}, {Key: "filter", Value: filter}}
	if sort != nil {
		cmd = append(cmd, bson.E{Key: "sort", Value: sort})
	}
	if proj != nil {
		cmd = append(cmd, bson.E{Key: "projection", Value: proj})
	}
	r, err := coll.Database().RunCommand(context.Background(), cmd).Raw()
	if err != nil {
		return nil, err
	}
	vals, _ := r.Lookup("cursor", "firstBatch").Array().Values()
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = canonical(t, v.Document())
	}
	return out, nil
}

// ids lists the _id of each document a find returned.
func ids(t *testing.T, docs []string) string {
	t.Helper()
	var out []string
	for _, d := range docs {
		id, _ := ej(t, d).Lookup("_id").AsInt64OK()
		out = append(out, fmt.Sprint(id))
	}
	return strings.Join(out, ",")
}

func TestQueryFilters(t *testing.T) {
	c := singleMemberClient(t)
	db := c.Database("q")
	cases := []struct {
		docs, filter string
		want         string // _ids in natural order
		code         int
	}{
		// dotted paths through arrays of sub-documents, nested arrays and positions
		{`[{"_id":1,"items":[{"sku":"x"},{"sku":"y"}]},{"_id":2,"items":[{"sku":"z"}]},{"_id":3,"items":{"sku":"x"}}]`, `{"items.sku":"x"}`, "1,3", 0},
		{`[{"_id":1,"a":[{"b":[{"c":1}]}]},{"_id":2,"a":[{"b":[{"c":2}]}]}]`, `{"a.b.c":1}`, "1", 0},
		{`[{"_id":1,"a":[[{"b":1}]]}]`, `{"a.b":1}`, "", 0},
		{`[{"_id":1,"arr":[5,6]},{"_id":2,"arr":[6,5]}]`, `{"arr.0":5}`, "1", 0},
		{`[{"_id":1,"arr":[{"k":1},{"k":2}]},{"_id":2,"arr":[{"k":2}]}]`, `{"arr.1.k":2}`, "1", 0},
		{`[{"_id":1,"arr":[[1,2],[3]]}]`, `{"arr.0":2}`, "1", 0},
		// equality against whole arrays and elements
		{`[{"_id":1,"a":[1,2]},{"_id":2,"a":[2,1]},{"_id":3,"a":[[1,2]]},{"_id":4,"a":1}]`, `{"a":[1,2]}`, "1,3", 0},
		{`[{"_id":1,"a":[1,2]},{"_id":2,"a":[[1]]},{"_id":3,"a":1}]`, `{"a":1}`, "1,3", 0},
		{`[{"_id":1,"a":{"x":1,"y":2}},{"_id":2,"a":{"y":2,"x":1}}]`, `{"a":{"x":1,"y":2}}`, "1", 0},
		// null and missing
		{`[{"_id":1},{"_id":2,"a":null},{"_id":3,"a":1},{"_id":4,"a":[null,1]},{"_id":5,"a":[]}]`, `{"a":null}`, "1,2,4", 0},
		{`[{"_id":1,"a":[{"b":1},{"c":1}]},{"_id":2,"a":[{"b":1}]},{"_id":3,"a":5},{"_id":4,"a":[1,2]}]`, `{"a.b":null}`, "1,3", 0},
		{`[{"_id":1},{"_id":2,"a":null},{"_id":3,"a":1}]`, `{"a":{"$exists":false}}`, "1", 0},
		{`[{"_id":1},{"_id":2,"a":null},{"_id":3,"a":1}]`, `{"a":{"$exists":true}}`, "2,3", 0},
		{`[{"_id":1},{"_id":2,"a":null},{"_id":3,"a":1}]`, `{"a":{"$ne":null}}`, "3", 0},
		{`[{"_id":1},{"_id":2,"a":null},{"_id":3,"a":1}]`, `{"a":{"$gte":null}}`, "1,2", 0},
		// $ne / $nin across arrays
		{`[{"_id":1,"a":[1,2]},{"_id":2,"a":[3]},{"_id":3}]`, `{"a":{"$ne":1}}`, "2,3", 0},
		{`[{"_id":1,"a":[1,2]},{"_id":2,"a":[3]},{"_id":3}]`, `{"a":{"$nin":[2,3]}}`, "3", 0},
		{`[{"_id":1,"a":[1,5]},{"_id":2,"a":[3]}]`, `{"a":{"$gt":2,"$lt":4}}`, "1,2", 0},
		// $elemMatch
		{`[{"_id":1,"a":[1,5]},{"_id":2,"a":[3]}]`, `{"a":{"$elemMatch":{"$gt":2,"$lt":4}}}`, "2", 0},
		{`[{"_id":1,"a":[{"x":1,"y":2},{"x":2,"y":1}]},{"_id":2,"a":[{"x":1,"y":1}]}]`, `{"a":{"$elemMatch":{"x":1,"y":2}}}`, "1", 0},
		{`[{"_id":1,"a":[{"x":1,"y":2}]},{"_id":2,"a":{"x":1,"y":2}}]`, `{"a":{"$elemMatch":{"x":1}}}`, "1", 0},
		// $all
		{`[{"_id":1,"a":[1,2,3]},{"_id":2,"a":[1,3]},{"_id":3,"a":2}]`, `{"a":{"$all":[1,2]}}`, "1", 0},
		{`[{"_id":1,"a":[1]}]`, `{"a":{"$all":[]}}`, "", 0},
		{`[{"_id":1,"a":[{"x":1},{"x":5}]},{"_id":2,"a":[{"x":1}]}]`, `{"a":{"$all":[{"$elemMatch":{"x":1}},{"$elemMatch":{"x":{"$gt":4}}}]}}`, "1", 0},
		// $type
		{`[{"_id":1,"a":1},{"_id":2,"a":{"$numberLong":"1"}},{"_id":3,"a":1.5},{"_id":4,"a":"s"},{"_id":5,"a":[1]}]`, `{"a":{"$type":"number"}}`, "1,2,3,5", 0},
		{`[{"_id":1,"a":1},{"_id":2,"a":{"$numberLong":"1"}},{"_id":3,"a":"s"}]`, `{"a":{"$type":[18,"string"]}}`, "2,3", 0},
		{`[{"_id":1,"a":[1]},{"_id":2,"a":1}]`, `{"a":{"$type":"array"}}`, "1", 0},
		{`[{"_id":1,"a":null},{"_id":2}]`, `{"a":{"$type":10}}`, "1", 0},
		{`[{"_id":1}]`, `{"a":{"$type":"foo"}}`, "", 2},
		{`[{"_id":1}]`, `{"a":{"$type":100}}`, "", 2},
		// $mod
		{`[{"_id":1,"a":7},{"_id":2,"a":8},{"_id":3,"a":7.9},{"_id":4,"a":"7"}]`, `{"a":{"$mod":[4,3]}}`, "1,3", 0},
		{`[{"_id":1}]`, `{"a":{"$mod":[0,1]}}`, "", 2},
		{`[{"_id":1}]`, `{"a":{"$mod":[1]}}`, "", 2},
		// $regex with options, flags and in $in; $not with a regex
		{`[{"_id":1,"s":"Apple"},{"_id":2,"s":"banana"},{"_id":3,"s":["x","apricot"]}]`, `{"s":{"$regex":"^a","$options":"i"}}`, "1,3", 0},
		{`[{"_id":1,"s":"one\ntwo"},{"_id":2,"s":"two"}]`, `{"s":{"$regex":"^two$","$options":"m"}}`, "1,2", 0},
		{`[{"_id":1,"s":"a\nb"}]`, `{"s":{"$regex":"a.b","$options":"s"}}`, "1", 0},
		{`[{"_id":1,"s":"ab"}]`, `{"s":{"$regex":"a b # comment","$options":"x"}}`, "1", 0},
		{`[{"_id":1,"s":"Abc"},{"_id":2,"s":"xyz"}]`, `{"s":{"$regularExpression":{"pattern":"^a","options":"i"}}}`, "1", 0},
		{`[{"_id":1,"s":"Abc"},{"_id":2,"s":"xyz"},{"_id":3,"s":"q"}]`, `{"s":{"$in":[{"$regularExpression":{"pattern":"^a","options":"i"}},"q"]}}`, "1,3", 0},
		{`[{"_id":1,"s":"Abc"},{"_id":2,"s":"xyz"},{"_id":3}]`, `{"s":{"$not":{"$regularExpression":{"pattern":"^A","options":""}}}}`, "2,3", 0},
		{`[{"_id":1}]`, `{"s":{"$regex":"a","$options":"z"}}`, "", 51108},
		{`[{"_id":1}]`, `{"s":{"$options":"i"}}`, "", 2},
		// bit tests
		{`[{"_id":1,"a":54},{"_id":2,"a":20},{"_id":3,"a":-1},{"_id":4,"a":"x"}]`, `{"a":{"$bitsAllSet":[1,5]}}`, "1,3", 0},
		{`[{"_id":1,"a":54},{"_id":2,"a":20},{"_id":3,"a":-1}]`, `{"a":{"$bitsAnyClear":35}}`, "1,2", 0},
		{`[{"_id":1,"a":54},{"_id":2,"a":20}]`, `{"a":{"$bitsAllClear":{"$binary":{"base64":"Ag==","subType":"00"}}}}`, "2", 0},
		{`[{"_id":1,"a":54}]`, `{"a":{"$bitsAnySet":"x"}}`, "", 2},
		// $jsonSchema
		{`[{"_id":1,"n":"ab","q":5,"t":["x"]},{"_id":2,"n":"a","q":5},{"_id":3,"q":5},{"_id":4,"n":"ab","q":50},{"_id":5,"n":"ab","q":5,"t":[1]}]`,
			`{"$jsonSchema":{"required":["n"],"properties":{"n":{"bsonType":"string","minLength":2},"q":{"bsonType":["int","long"],"minimum":1,"maximum":10},"t":{"bsonType":"array","items":{"type":"string"}}}}}`, "1", 0},
		{`[{"_id":1,"a":1},{"_id":2,"a":1,"b":2}]`, `{"$jsonSchema":{"properties":{"_id":{},"a":{}},"additionalProperties":false}}`, "1", 0},
		{`[{"_id":1,"a":5},{"_id":2,"a":10}]`, `{"$jsonSchema":{"properties":{"a":{"maximum":10,"exclusiveMaximum":true}}}}`, "1", 0},
		{`[{"_id":1}]`, `{"$jsonSchema":{"foo":1}}`, "", 9},
		// $size, $not, $comment, logical operators
		{`[{"_id":1,"a":[1,2]},{"_id":2,"a":[1]},{"_id":3,"a":[[1,2]]}]`, `{"a":{"$size":2}}`, "1", 0},
		{`[{"_id":1,"a":5},{"_id":2,"a":1},{"_id":3}]`, `{"a":{"$not":{"$gt":3}}}`, "2,3", 0},
		{`[{"_id":1,"a":5}]`, `{"a":5,"$comment":"why"}`, "1", 0},
		{`[{"_id":1,"a":5},{"_id":2,"a":1},{"_id":3}]`, `{"$nor":[{"a":5},{"a":1}]}`, "3", 0},
		// mongod's errors for bad operators
		{`[{"_id":1}]`, `{"a":{"$foo":1}}`, "", 2},
		{`[{"_id":1}]`, `{"a":{"$comment":"top level only"}}`, "", 2},
		{`[{"_id":1}]`, `{"$foo":1}`, "", 2},
		{`[{"_id":1}]`, `{"$and":[]}`, "", 2},
		{`[{"_id":1}]`, `{"$or":[1]}`, "", 2},
		{`[{"_id":1}]`, `{"a":{"$in":1}}`, "", 2},
		{`[{"_id":1}]`, `{"a":{"$size":-1}}`, "", 2},
		{`[{"_id":1}]`, `{"a":{"$not":{}}}`, "", 2},
		{`[{"_id":1}]`, `{"a":{"$elemMatch":1}}`, "", 2},
		{`[{"_id":1}]`, `{"$text":{"$search":"x"}}`, "", 27},
		{`[{"_id":1}]`, `{"a":{"$gt":{"$regularExpression":{"pattern":"x","options":""}}}}`, "", 2},
		{`[{"_id":1}]`, `{"a":{"$ne":{"$regularExpression":{"pattern":"x","options":""}}}}`, "", 2},
		{`[{"_id":1}]`, `{"a":{"$type":[]}}`, "", 2},
	}
	// countDocuments (aggregate $match) and deleteMany use the same matcher
	ctx := context.Background()
	dc := db.Collection("count_delete")
	seed(t, dc, `[{"_id":1,"items":[{"sku":"x"}]},{"_id":2,"items":[{"sku":"y"}]},{"_id":3,"items":[{"sku":"x","q":2}]}]`)
	if n, err := dc.CountDocuments(ctx, ej(t, `{"items":{"$elemMatch":{"sku":"x"}}}`)); err != nil || n != 2 {
		t.Errorf("countDocuments: %d %v", n, err)
	}
	if r, err := dc.DeleteMany(ctx, ej(t, `{"items.sku":"x","items.q":{"$exists":false}}`)); err != nil || r.DeletedCount != 1 {
		t.Errorf("deleteMany: %v %v", r, err)
	}
	if _, err := dc.CountDocuments(ctx, ej(t, `{"a":{"$foo":1}}`)); codeOf(err) != 2 {
		t.Errorf("countDocuments with a bad filter: %v", err)
	}
	for i, tc := range cases {
		coll := db.Collection(fmt.Sprintf("f%d", i))
		seed(t, coll, tc.docs)
		got, err := findAll(t, coll, ej(t, tc.filter), nil, nil)
		if tc.code != 0 {
			if codeOf(err) != tc.code {
				t.Errorf("%s: want code %d, got %v", tc.filter, tc.code, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.filter, err)
			continue
		}
		if g := ids(t, got); g != tc.want {
			t.Errorf("%s on %s: got [%s] want [%s]", tc.filter, tc.docs, g, tc.want)
		}
	}
}

func TestQuerySortAndProjection(t *testing.T) {
	c := singleMemberClient(t)
	db := c.Database("q")
	sorts := []struct {
		docs, sort, want string
		code             int
	}{
		{`[{"_id":1,"a":[1,9]},{"_id":2,"a":5},{"_id":3,"a":[3,4]}]`, `{"a":1}`, "1,3,2", 0},
		{`[{"_id":1,"a":[1,9]},{"_id":2,"a":5},{"_id":3,"a":[3,4]}]`, `{"a":-1}`, "1,2,3", 0},
		{`[{"_id":1,"a":1},{"_id":2},{"_id":3,"a":null},{"_id":4,"a":[]},{"_id":5,"a":"s"}]`, `{"a":1}`, "4,2,3,1,5", 0},
		{`[{"_id":1,"a":{"b":2}},{"_id":2,"a":[{"b":3},{"b":0}]},{"_id":3,"a":{"b":1}}]`, `{"a.b":1}`, "2,3,1", 0},
		{`[{"_id":1,"x":1,"y":2},{"_id":2,"x":1,"y":1},{"_id":3,"x":0,"y":5}]`, `{"x":-1,"y":1}`, "2,1,3", 0},
		{`[{"_id":1},{"_id":2},{"_id":3}]`, `{"$natural":-1}`, "3,2,1", 0},
		{`[{"_id":1,"a":[{"x":2,"y":1},{"x":1,"y":3}]},{"_id":2,"a":{"x":1,"y":0}}]`, `{"a.x":1,"a.y":1}`, "2,1", 0},
		{`[{"_id":1,"a":[1,2],"b":[1,2]}]`, `{"a":1,"b":1}`, "", 2},
		{`[{"_id":1}]`, `{"a":2}`, "", 15975},
		{`[{"_id":1}]`, `{"a":"x"}`, "", 15974},
		{`[{"_id":1}]`, `{"$a":1}`, "", 16410},
	}
	for i, tc := range sorts {
		coll := db.Collection(fmt.Sprintf("s%d", i))
		seed(t, coll, tc.docs)
		got, err := findAll(t, coll, ej(t, `{}`), ej(t, tc.sort), nil)
		if tc.code != 0 {
			if codeOf(err) != tc.code {
				t.Errorf("sort %s: want code %d, got %v", tc.sort, tc.code, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("sort %s: %v", tc.sort, err)
		} else if g := ids(t, got); g != tc.want {
			t.Errorf("sort %s: got [%s] want [%s]", tc.sort, g, tc.want)
		}
	}
	// distinct reaches values through arrays of sub-documents
	dc := db.Collection("distinct")
	seed(t, dc, `[{"_id":1,"items":[{"sku":"b"},{"sku":"a"}]},{"_id":2,"items":{"sku":"c"}},{"_id":3,"items":[{"sku":"a"}]}]`)
	res := dc.Distinct(context.Background(), "items.sku", bson.D{})
	var skus []string
	if err := res.Decode(&skus); err != nil || strings.Join(skus, ",") != "a,b,c" {
		t.Errorf("distinct items.sku: %v %v", skus, err)
	}
	projections := []struct {
		doc, filter, proj, want string
		code                    int
	}{
		{`{"_id":1,"a":{"b":1,"c":2},"d":3}`, `{}`, `{"a.b":1}`, `{"_id":1,"a":{"b":1}}`, 0},
		{`{"_id":1,"a":{"b":1,"c":2},"d":3}`, `{}`, `{"a.b":0,"_id":0}`, `{"a":{"c":2},"d":3}`, 0},
		{`{"_id":1,"a":[{"b":1,"c":2},{"c":3},5]}`, `{}`, `{"a.b":1}`, `{"_id":1,"a":[{"b":1},{}]}`, 0},
		{`{"_id":1,"a":[{"b":1,"c":2},5]}`, `{}`, `{"a.b":0}`, `{"_id":1,"a":[{"c":2},5]}`, 0},
		{`{"_id":1,"x":1,"y":2}`, `{}`, `{"_id":0,"y":1}`, `{"y":2}`, 0},
		{`{"_id":1,"a":[1,2,3,4],"b":1}`, `{}`, `{"a":{"$slice":2}}`, `{"_id":1,"a":[1,2],"b":1}`, 0},
		{`{"_id":1,"a":[1,2,3,4],"b":1}`, `{}`, `{"a":{"$slice":-1},"b":1}`, `{"_id":1,"a":[4],"b":1}`, 0},
		{`{"_id":1,"a":[1,2,3,4]}`, `{}`, `{"a":{"$slice":[1,2]}}`, `{"_id":1,"a":[2,3]}`, 0},
		{`{"_id":1,"a":[{"k":1},{"k":2},{"k":2,"z":1}],"b":1}`, `{}`, `{"a":{"$elemMatch":{"k":2}}}`, `{"_id":1,"a":[{"k":2}]}`, 0},
		{`{"_id":1,"a":[{"k":1},{"k":2}],"b":1}`, `{"a.k":2}`, `{"a.$":1}`, `{"_id":1,"a":[{"k":2}]}`, 0},
		{`{"_id":1,"a":[3,8,9]}`, `{}`, `{"a":{"$elemMatch":{"$gt":5}}}`, `{"_id":1,"a":[8]}`, 0},
		{`{"_id":1,"a":[4,7,9]}`, `{"a":{"$gt":5}}`, `{"a.$":1}`, `{"_id":1,"a":[7]}`, 0},
		{`{"_id":1,"a":1,"b":2}`, `{}`, `{"a":1,"s":{"$meta":"textScore"}}`, `{"_id":1,"a":1}`, 0},
		{`{"_id":1,"a":1,"b":{"c":5}}`, `{}`, `{"a":1,"x":"$b.c"}`, `{"_id":1,"a":1,"x":5}`, 0},
		{`{"_id":1,"a":{"b":1,"c":2},"d":3}`, `{}`, `{"a":{"c":1}}`, `{"_id":1,"a":{"c":2}}`, 0},
		{`{"_id":1,"a":[1,2,3],"b":1}`, `{}`, `{"_id":1,"a":{"$slice":1}}`, `{"_id":1,"a":[1]}`, 0},
		{`{"_id":1,"a":[{"k":1},{"k":2}],"b":1,"c":1}`, `{}`, `{"c":0,"a":{"$elemMatch":{"k":2}}}`, `{"_id":1,"a":[{"k":2}],"b":1}`, 0},
		{`{"_id":1,"a":1}`, `{}`, `{"a":1,"s":"lit"}`, `{"_id":1,"a":1,"s":"lit"}`, 0},
		{`{"_id":1,"a":1}`, `{}`, `{"x.y":"$a"}`, `{"_id":1,"x":{"y":1}}`, 0},
		{`{"_id":1,"a":[{"b":1},{"c":2},{"b":3}]}`, `{}`, `{"x":"$a.b"}`, `{"_id":1,"x":[1,3]}`, 0},
		{`{"_id":1}`, `{"b":1}`, `{"a.$":1}`, ``, 31277},
		{`{"_id":1}`, `{}`, `{"a":0,"s":"lit"}`, ``, 31310},
		{`{"_id":1}`, `{}`, `{"a":{"$slice":"x"}}`, ``, 28667},
		{`{"_id":1}`, `{}`, `{"x.a":1,"x.a.b":1}`, ``, 31249},
		{`{"_id":1}`, `{}`, `{"a":1,"b":0}`, ``, 31254},
		{`{"_id":1}`, `{}`, `{"a":0,"b":1}`, ``, 31253},
		{`{"_id":1}`, `{}`, `{"a":1,"a.b":1}`, ``, 31249},
		{`{"_id":1}`, `{}`, `{"a.b":1,"a":1}`, ``, 31250},
	}
	for i, tc := range projections {
		coll := db.Collection(fmt.Sprintf("p%d", i))
		seed(t, coll, "["+tc.doc+"]")
		got, err := findAll(t, coll, ej(t, tc.filter), nil, ej(t, tc.proj))
		if tc.code != 0 {
			if codeOf(err) != tc.code {
				t.Errorf("projection %s: want code %d, got %v", tc.proj, tc.code, err)
			}
			continue
		}
		if err != nil || len(got) != 1 {
			t.Errorf("projection %s: %v %v", tc.proj, got, err)
		} else if want := canonical(t, ej(t, tc.want)); got[0] != want {
			t.Errorf("projection %s: got %s want %s", tc.proj, got[0], want)
		}
	}
}
