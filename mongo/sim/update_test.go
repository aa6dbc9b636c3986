package sim_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

type updateCase struct {
	docs, filter, update string
	arrayFilters         string // a JSON array, or ""
	upsert, multi        bool
	want                 string // the collection afterwards, by _id
	code                 int
	msg                  string // a part of mongod's message
}

func (tc updateCase) run(t *testing.T, coll *mongo.Collection) error {
	ctx := context.Background()
	filter, upd := ej(t, tc.filter), ej(t, tc.update)
	var af []any
	for _, f := range ejArray(t, tc.arrayFilters+map[bool]string{true: "[]"}[tc.arrayFilters == ""]) {
		af = append(af, f)
	}
	first, _ := upd.IndexErr(0)
	switch {
	case first == nil || !strings.HasPrefix(first.Key(), "$"):
		_, err := coll.ReplaceOne(ctx, filter, upd, options.Replace().SetUpsert(tc.upsert))
		return err
	case tc.multi:
		o := options.UpdateMany().SetUpsert(tc.upsert)
		if af != nil {
			o.SetArrayFilters(af)
		}
		_, err := coll.UpdateMany(ctx, filter, upd, o)
		return err
	}
	o := options.UpdateOne().SetUpsert(tc.upsert)
	if af != nil {
		o.SetArrayFilters(af)
	}
	_, err := coll.UpdateOne(ctx, filter, upd, o)
	return err
}

func TestUpdateOperators(t *testing.T) {
	c := singleMemberClient(t)
	db := c.Database("u")
	cases := []updateCase{
		// $set / $unset on dotted and numeric paths; new fields in path order
		{docs: `[{"_id":1}]`, filter: `{"_id":1}`, update: `{"$set":{"a.b.c":1}}`, want: `[{"_id":1,"a":{"b":{"c":1}}}]`},
		{docs: `[{"_id":1,"a":[1]}]`, filter: `{}`, update: `{"$set":{"a.3":5}}`, want: `[{"_id":1,"a":[1,null,null,5]}]`},
		{docs: `[{"_id":1}]`, filter: `{}`, update: `{"$set":{"a.0":1}}`, want: `[{"_id":1,"a":{"0":1}}]`},
		{docs: `[{"_id":1,"a":[{"b":1},{"b":2}]}]`, filter: `{}`, update: `{"$set":{"a.1.b":5}}`, want: `[{"_id":1,"a":[{"b":1},{"b":5}]}]`},
		{docs: `[{"_id":1,"z":1}]`, filter: `{}`, update: `{"$set":{"b":1,"a":1}}`, want: `[{"_id":1,"z":1,"a":1,"b":1}]`},
		{docs: `[{"_id":1,"a":[1,2,3]}]`, filter: `{}`, update: `{"$unset":{"a.1":""}}`, want: `[{"_id":1,"a":[1,null,3]}]`},
		{docs: `[{"_id":1,"a":{"b":1,"c":2}}]`, filter: `{}`, update: `{"$unset":{"a.b":"","x.y":""}}`, want: `[{"_id":1,"a":{"c":2}}]`},
		{docs: `[{"_id":1,"a":[{"b":1}]}]`, filter: `{}`, update: `{"$set":{"a.b":2}}`, code: 28, msg: "Cannot create field 'b' in element {a: [ { b: 1 } ]}"},
		{docs: `[{"_id":1,"a":1}]`, filter: `{}`, update: `{"$set":{"a.b":2}}`, code: 28, msg: "Cannot create field 'b' in element {a: 1}"},
		// $inc / $mul with mongod's type rules
		{docs: `[{"_id":1,"a":2147483647}]`, filter: `{}`, update: `{"$inc":{"a":1}}`, want: `[{"_id":1,"a":{"$numberLong":"2147483648"}}]`},
		{docs: `[{"_id":1,"a":1}]`, filter: `{}`, update: `{"$inc":{"a":1.5,"b":2}}`, want: `[{"_id":1,"a":2.5,"b":2}]`},
		{docs: `[{"_id":1,"a":{"$numberLong":"9223372036854775807"}}]`, filter: `{}`, update: `{"$inc":{"a":1}}`, code: 2, msg: "Failed to apply $inc operations to current value ((NumberLong)9223372036854775807) for document {_id: 1}"},
		{docs: `[{"_id":1,"a":"x"}]`, filter: `{}`, update: `{"$inc":{"a":1}}`, code: 14, msg: "Cannot apply $inc to a value of non-numeric type. {_id: 1} has the field 'a' of non-numeric type string"},
		{docs: `[{"_id":1}]`, filter: `{}`, update: `{"$inc":{"a":"x"}}`, code: 14, msg: `Cannot increment with non-numeric argument: {a: "x"}`},
		{docs: `[{"_id":1,"a":3}]`, filter: `{}`, update: `{"$mul":{"a":2,"b":2.5}}`, want: `[{"_id":1,"a":6,"b":0.0}]`},
		{docs: `[{"_id":1,"a":{"$numberDecimal":"1.1"},"b":2}]`, filter: `{}`, update: `{"$inc":{"a":{"$numberDecimal":"2.2"},"b":{"$numberDecimal":"0.5"}}}`, want: `[{"_id":1,"a":{"$numberDecimal":"3.3"},"b":{"$numberDecimal":"2.5"}}]`},
		{docs: `[{"_id":1,"a":5,"b":5}]`, filter: `{}`, update: `{"$min":{"a":3,"c":1},"$max":{"b":3}}`, want: `[{"_id":1,"a":3,"b":5,"c":1}]`},
		// $rename moves, $bit
		{docs: `[{"_id":1,"a":1,"b":2}]`, filter: `{}`, update: `{"$rename":{"a":"c"}}`, want: `[{"_id":1,"b":2,"c":1}]`},
		{docs: `[{"_id":1,"a":1,"b":2}]`, filter: `{}`, update: `{"$rename":{"a":"b"}}`, want: `[{"_id":1,"b":1}]`},
		{docs: `[{"_id":1,"a":{"x":1}}]`, filter: `{}`, update: `{"$rename":{"a.x":"b.y"}}`, want: `[{"_id":1,"a":{},"b":{"y":1}}]`},
		{docs: `[{"_id":1,"a":1}]`, filter: `{}`, update: `{"$rename":{"a":"a"}}`, code: 2},
		{docs: `[{"_id":1,"a":13,"b":{"$numberLong":"1"}}]`, filter: `{}`, update: `{"$bit":{"a":{"and":10},"b":{"or":6}}}`, want: `[{"_id":1,"a":8,"b":{"$numberLong":"7"}}]`},
		// arrays: $push with modifiers, $addToSet, $pop, $pull, $pullAll
		{docs: `[{"_id":1,"a":[1,2]}]`, filter: `{}`, update: `{"$push":{"a":3,"b":[1]}}`, want: `[{"_id":1,"a":[1,2,3],"b":[[1]]}]`},
		{docs: `[{"_id":1,"a":[5,1]}]`, filter: `{}`, update: `{"$push":{"a":{"$each":[4,2],"$sort":1,"$slice":-3}}}`, want: `[{"_id":1,"a":[2,4,5]}]`},
		{docs: `[{"_id":1,"a":[1,2]}]`, filter: `{}`, update: `{"$push":{"a":{"$each":[9],"$position":1}}}`, want: `[{"_id":1,"a":[1,9,2]}]`},
		{docs: `[{"_id":1,"a":[{"s":2},{"s":1}]}]`, filter: `{}`, update: `{"$push":{"a":{"$each":[{"s":3}],"$sort":{"s":-1},"$slice":2}}}`, want: `[{"_id":1,"a":[{"s":3},{"s":2}]}]`},
		{docs: `[{"_id":1,"a":1}]`, filter: `{}`, update: `{"$push":{"a":2}}`, code: 2, msg: "The field 'a' must be an array but is of type int in document {_id: 1}"},
		{docs: `[{"_id":1,"a":[1,2]}]`, filter: `{}`, update: `{"$push":{"a":{"$each":1}}}`, code: 2},
		{docs: `[{"_id":1,"a":[1,2]}]`, filter: `{}`, update: `{"$addToSet":{"a":{"$each":[2,3,3]},"b":1}}`, want: `[{"_id":1,"a":[1,2,3],"b":[1]}]`},
		{docs: `[{"_id":1,"a":[1,2,3],"b":[1,2,3]}]`, filter: `{}`, update: `{"$pop":{"a":1,"b":-1}}`, want: `[{"_id":1,"a":[1,2],"b":[2,3]}]`},
		{docs: `[{"_id":1,"a":[1]}]`, filter: `{}`, update: `{"$pop":{"a":2}}`, code: 9, msg: "$pop expects 1 or -1, found: 2"},
		{docs: `[{"_id":1,"a":[3,6,9],"b":[{"s":8,"i":"B"},{"s":7,"i":"B"}],"c":["x","y"]}]`, filter: `{}`, update: `{"$pull":{"a":{"$gte":6},"b":{"s":8,"i":"B"},"c":"x"}}`, want: `[{"_id":1,"a":[3],"b":[{"s":7,"i":"B"}],"c":["y"]}]`},
		{docs: `[{"_id":1,"a":[0,5,0,6]}]`, filter: `{}`, update: `{"$pullAll":{"a":[0,6]}}`, want: `[{"_id":1,"a":[5]}]`},
		{docs: `[{"_id":1,"a":[null,1],"b":[null,1]}]`, filter: `{}`, update: `{"$addToSet":{"a":null},"$pull":{"b":null}}`, want: `[{"_id":1,"a":[null,1],"b":[1]}]`},
		{docs: `[{"_id":1,"a":null}]`, filter: `{}`, update: `{"$inc":{"a":1}}`, code: 14, msg: "has the field 'a' of non-numeric type null"},
		// positional $, $[], $[<id>] with arrayFilters
		{docs: `[{"_id":1,"g":[80,85,90]}]`, filter: `{"g":85}`, update: `{"$set":{"g.$":82}}`, want: `[{"_id":1,"g":[80,82,90]}]`},
		{docs: `[{"_id":1,"items":[{"sku":"a","q":1},{"sku":"b","q":1}]}]`, filter: `{"items.sku":"b"}`, update: `{"$inc":{"items.$.q":4}}`, want: `[{"_id":1,"items":[{"sku":"a","q":1},{"sku":"b","q":5}]}]`},
		{docs: `[{"_id":1,"g":[80,85]}]`, filter: `{"_id":1}`, update: `{"$set":{"g.$":1}}`, code: 2, msg: "The positional operator did not find the match needed from the query."},
		{docs: `[{"_id":1,"a":[1,2]}]`, filter: `{}`, update: `{"$inc":{"a.$[]":10}}`, want: `[{"_id":1,"a":[11,12]}]`},
		{docs: `[{"_id":1,"a":[100,5,120]}]`, filter: `{}`, update: `{"$set":{"a.$[x]":0}}`, arrayFilters: `[{"x":{"$gte":100}}]`, want: `[{"_id":1,"a":[0,5,0]}]`},
		{docs: `[{"_id":1,"gs":[{"g":80,"m":1},{"g":90,"m":1}]}]`, filter: `{}`, update: `{"$set":{"gs.$[e].m":2}}`, arrayFilters: `[{"e.g":{"$gte":85}}]`, want: `[{"_id":1,"gs":[{"g":80,"m":1},{"g":90,"m":2}]}]`},
		{docs: `[{"_id":1,"a":[1]}]`, filter: `{}`, update: `{"$set":{"a.$[x]":0}}`, code: 2, msg: "No array filter found for identifier 'x' in path 'a.$[x]'"},
		{docs: `[{"_id":1,"a":[1]}]`, filter: `{}`, update: `{"$set":{"a":0}}`, arrayFilters: `[{"x":1}]`, code: 9, msg: "The array filter for identifier 'x' was not used in the update"},
		// upserts seed from the query's equality fields; $setOnInsert only then
		{docs: `[]`, filter: `{"_id":7,"b.c":2,"a":{"$eq":3},"d":{"$gt":1}}`, update: `{"$set":{"e":1},"$setOnInsert":{"f":1}}`, upsert: true, want: `[{"_id":7,"a":3,"b":{"c":2},"e":1,"f":1}]`},
		{docs: `[{"_id":1,"a":1}]`, filter: `{"_id":1}`, update: `{"$set":{"b":1},"$setOnInsert":{"f":1}}`, upsert: true, want: `[{"_id":1,"a":1,"b":1}]`},
		{docs: `[]`, filter: `{"_id":5,"x":1}`, update: `{"y":2}`, upsert: true, want: `[{"_id":5,"y":2}]`},
		{docs: `[{"_id":1,"a":1}]`, filter: `{"_id":1}`, update: `{"b":2}`, want: `[{"_id":1,"b":2}]`},
		{docs: `[]`, filter: `{"_id":5}`, update: `{"_id":6,"y":2}`, upsert: true, code: 66},
		{docs: `[]`, filter: `{"a":1,"a.b":2}`, update: `{"$set":{"c":1}}`, upsert: true, code: 54, msg: "cannot infer query fields to set, both paths 'a' and 'a.b' are matched"},
		{docs: `[]`, filter: `{"_id":9,"a":{"$in":[3]},"$and":[{"b":1}]}`, update: `{"$set":{"c":1}}`, upsert: true, want: `[{"_id":9,"a":3,"b":1,"c":1}]`},
		{docs: `[]`, filter: `{"a":[1]}`, update: `{"$set":{"a.$":2}}`, upsert: true, code: 2, msg: "The positional operator did not find the match needed from the query."},
		{docs: `[]`, filter: `{"_id":1}`, update: `{"$set":{"a.$[]":2}}`, upsert: true, code: 2, msg: "The path 'a' must exist in the document in order to apply array updates."},
		{docs: `[{"_id":1,"a":1},{"_id":2,"a":1}]`, filter: `{"a":1}`, update: `{"$inc":{"a":1}}`, multi: true, want: `[{"_id":1,"a":2},{"_id":2,"a":2}]`},
		// mongod's errors
		{docs: `[{"_id":1}]`, filter: `{}`, update: `{"$set":{"_id":2}}`, code: 66, msg: "Performing an update on the path '_id' would modify the immutable field '_id'"},
		{docs: `[{"_id":1}]`, filter: `{}`, update: `{"$set":{"_id":1,"a":1}}`, want: `[{"_id":1,"a":1}]`},
		{docs: `[{"_id":1}]`, filter: `{}`, update: `{"_id":2,"a":1}`, code: 66, msg: "After applying the update, the (immutable) field '_id' was found to have been altered to _id: 2"},
		{docs: `[{"_id":1}]`, filter: `{}`, update: `{"$set":{"a":1},"$inc":{"a":1}}`, code: 40, msg: "Updating the path 'a' would create a conflict at 'a'"},
		{docs: `[{"_id":1}]`, filter: `{}`, update: `{"$set":{"a":1},"$unset":{"a.b":1}}`, code: 40, msg: "Updating the path 'a.b' would create a conflict at 'a'"},
		{docs: `[{"_id":1}]`, filter: `{}`, update: `{"$foo":{"a":1}}`, code: 9, msg: "Unknown modifier: $foo. Expected a valid update modifier or pipeline-style update specified as an array"},
		{docs: `[{"_id":1}]`, filter: `{}`, update: `{"$set":1}`, code: 9, msg: "Modifiers operate on fields but we found type int instead. For example: {$mod: {<field>: ...}} not {$set: 1}"},
		{docs: `[{"_id":1,"a":1}]`, filter: `{}`, update: `{"$set":{}}`, want: `[{"_id":1,"a":1}]`},
		{docs: `[{"_id":1}]`, filter: `{}`, update: `{"$set":{"a..b":1}}`, code: 56},
		{docs: `[{"_id":1}]`, filter: `{}`, update: `{"$set":{"a.$x":1}}`, code: 52},
	}
	for i, tc := range cases {
		coll := db.Collection(fmt.Sprintf("u%d", i))
		seed(t, coll, tc.docs)
		err := tc.run(t, coll)
		name := tc.update + " on " + tc.docs
		if tc.code != 0 {
			if codeOf(err) != tc.code || !strings.Contains(fmt.Sprint(err), tc.msg) {
				t.Errorf("%s: want code %d %q, got %v", name, tc.code, tc.msg, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		got, err := findAll(t, coll, ej(t, `{}`), ej(t, `{"_id":1}`), nil)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, d := range ejArray(t, tc.want) {
			want = append(want, canonical(t, d))
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s:\n got %s\nwant %s", name, strings.Join(got, " "), strings.Join(want, " "))
		}
	}
}

// findAndModify takes arrayFilters and reports the update's error codes.
func TestFindAndModifyArrayFiltersAndErrors(t *testing.T) {
	c := singleMemberClient(t)
	coll := c.Database("u").Collection("fam")
	seed(t, coll, `[{"_id":1,"a":[1,5,9],"s":"x"}]`)
	ctx := context.Background()
	var got bson.Raw
	err := coll.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: 1}}, ej(t, `{"$set":{"a.$[x]":0}}`),
		options.FindOneAndUpdate().SetArrayFilters([]any{ej(t, `{"x":{"$gt":4}}`)}).SetReturnDocument(options.After)).Decode(&got)
	if err != nil {
		t.Fatal(err)
	}
	if want := canonical(t, ej(t, `{"_id":1,"a":[1,0,0],"s":"x"}`)); canonical(t, got) != want {
		t.Fatalf("got %s want %s", canonical(t, got), want)
	}
	err = coll.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: 1}}, ej(t, `{"$inc":{"s":1}}`)).Err()
	if codeOf(err) != 14 {
		t.Fatalf("want TypeMismatch, got %v", err)
	}
	err = coll.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: 1}}, ej(t, `{"$set":{"_id":3}}`)).Err()
	if codeOf(err) != 66 {
		t.Fatalf("want ImmutableField, got %v", err)
	}
	// $currentDate sets a date or a timestamp
	if _, err := coll.UpdateOne(ctx, bson.D{}, ej(t, `{"$currentDate":{"d":true,"ts":{"$type":"timestamp"}}}`)); err != nil {
		t.Fatal(err)
	}
	doc, err := coll.FindOne(ctx, bson.D{}).Raw()
	if err != nil || doc.Lookup("d").Type != bson.TypeDateTime || doc.Lookup("ts").Type != bson.TypeTimestamp {
		t.Fatalf("$currentDate: %v %v", doc, err)
	}
}
