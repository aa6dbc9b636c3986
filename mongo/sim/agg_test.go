package sim_test

import (
	"context"
	"errors"
	"sort"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// singleMemberDB starts a one-member replica set and returns a database on its primary.
func singleMemberDB(t *testing.T) *mongo.Database {
	t.Helper()
	m := newMember(t)
	c := m.client(t)
	mustRun(t, c, bson.D{{Key: "replSetInitiate", Value: rsConfig([]*member{m}, fastSettings)}})
	waitPrimary(t, []*member{m}, 30*time.Second)
	return c.Database("agg")
}

func ctx30(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// aggregate runs a pipeline (extended JSON) and returns the documents as relaxed extended JSON.
func aggregate(t *testing.T, coll *mongo.Collection, pipeline string) ([]string, error) {
	t.Helper()
	var p bson.A
	if err := bson.UnmarshalExtJSON([]byte(pipeline), false, &p); err != nil {
		t.Fatalf("%s: %v", pipeline, err)
	}
	cur, err := coll.Aggregate(ctx30(t), p)
	if err != nil {
		return nil, err
	}
	var out []string
	for cur.Next(ctx30(t)) {
		j, err := bson.MarshalExtJSON(cur.Current, false, false)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(j))
	}
	return out, cur.Err()
}

func insertJSON(t *testing.T, coll *mongo.Collection, docs ...string) {
	t.Helper()
	var ds []any
	for _, d := range docs {
		var r bson.Raw
		if err := bson.UnmarshalExtJSON([]byte(d), false, &r); err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		ds = append(ds, r)
	}
	if _, err := coll.InsertMany(ctx30(t), ds); err != nil {
		t.Fatal(err)
	}
}

// serverCode is the code of a command error or of the first write error (0: no error, -1: another error).
func serverCode(err error) int32 {
	var ce mongo.CommandError
	if errors.As(err, &ce) {
		return ce.Code
	}
	var we mongo.WriteException
	if errors.As(err, &we) && len(we.WriteErrors) > 0 {
		return int32(we.WriteErrors[0].Code)
	}
	if err != nil {
		return -1
	}
	return 0
}

// The stages of mongod 7.0, as the manual's examples show them.
func TestAggregationStages(t *testing.T) {
	db := singleMemberDB(t)
	sales := db.Collection("sales")
	insertJSON(t, sales,
		`{"_id": 1, "item": "abc", "price": 10, "qty": 2, "tags": ["a", "b"], "date": {"$date": "2024-03-01T08:00:00Z"}}`,
		`{"_id": 2, "item": "jkl", "price": 20, "qty": 1, "tags": [], "date": {"$date": "2024-03-01T09:00:00Z"}}`,
		`{"_id": 3, "item": "xyz", "price": 5, "qty": 10, "tags": ["b"], "date": {"$date": "2024-03-15T09:00:00Z"}}`,
		`{"_id": 4, "item": "xyz", "price": 5, "qty": 20, "date": {"$date": "2024-04-04T11:21:39Z"}}`,
		`{"_id": 5, "item": "abc", "price": 10, "qty": 10, "tags": null, "date": {"$date": "2024-04-04T21:23:13Z"}}`)
	inventory := db.Collection("inventory")
	insertJSON(t, inventory,
		`{"_id": 1, "sku": "abc", "instock": 120}`, `{"_id": 2, "sku": "xyz", "instock": 60}`, `{"_id": 3, "sku": "jkl", "instock": 0}`)

	insertJSON(t, db.Collection("employees"),
		`{"_id": 1, "name": "Dev"}`, `{"_id": 2, "name": "Eliot", "reportsTo": "Dev"}`,
		`{"_id": 3, "name": "Ron", "reportsTo": "Eliot"}`, `{"_id": 4, "name": "Andrew", "reportsTo": "Eliot"}`,
		`{"_id": 5, "name": "Asya", "reportsTo": "Ron"}`)

	cases := []struct {
		name, pipeline string
		want           []string
		sorted         bool // compare as a set (mongod's $group order is unspecified)
	}{
		{"group by field with accumulators",
			`[{"$group": {"_id": "$item", "total": {"$sum": {"$multiply": ["$price", "$qty"]}}, "avgQty": {"$avg": "$qty"},
			  "n": {"$sum": 1}, "count": {"$count": {}}, "maxQty": {"$max": "$qty"}, "minQty": {"$min": "$qty"},
			  "ids": {"$push": "$_id"}, "first": {"$first": "$qty"}, "last": {"$last": "$qty"}}}, {"$sort": {"_id": 1}}]`,
			[]string{
				`{"_id":"abc","total":120,"avgQty":6.0,"n":2,"count":2,"maxQty":10,"minQty":2,"ids":[1,5],"first":2,"last":10}`,
				`{"_id":"jkl","total":20,"avgQty":1.0,"n":1,"count":1,"maxQty":1,"minQty":1,"ids":[2],"first":1,"last":1}`,
				`{"_id":"xyz","total":150,"avgQty":15.0,"n":2,"count":2,"maxQty":20,"minQty":10,"ids":[3,4],"first":10,"last":20}`,
			}, false},
		{"group on null counts everything",
			`[{"$group": {"_id": null, "qty": {"$sum": "$qty"}, "items": {"$addToSet": "$item"}}}, {"$project": {"_id": 0, "qty": 1, "n": {"$size": "$items"}}}]`,
			[]string{`{"qty":43,"n":3}`}, false},
		{"group by document with date parts",
			`[{"$group": {"_id": {"m": {"$month": "$date"}, "y": {"$year": "$date"}}, "n": {"$sum": 1}}}, {"$sort": {"_id.m": 1}}]`,
			[]string{`{"_id":{"m":3,"y":2024},"n":3}`, `{"_id":{"m":4,"y":2024},"n":2}`}, false},
		{"group with N accumulators, top and bottom, standard deviation",
			`[{"$group": {"_id": null, "firstTwo": {"$firstN": {"n": 2, "input": "$_id"}}, "lastTwo": {"$lastN": {"n": 2, "input": "$_id"}},
			  "maxQty": {"$maxN": {"n": 2, "input": "$qty"}}, "minQty": {"$minN": {"n": 2, "input": "$qty"}},
			  "top": {"$top": {"sortBy": {"qty": -1, "_id": 1}, "output": "$_id"}}, "bottom2": {"$bottomN": {"n": 2, "sortBy": {"qty": -1, "_id": 1}, "output": "$_id"}},
			  "sd": {"$stdDevPop": "$price"}}}, {"$project": {"_id": 0}}]`,
			[]string{`{"firstTwo":[1,2],"lastTwo":[4,5],"maxQty":[20,10],"minQty":[1,2],"top":4,"bottom2":[1,2],"sd":5.477225575051661}`}, false},
		{"group on an empty input yields nothing", `[{"$match": {"item": "none"}}, {"$group": {"_id": null, "n": {"$sum": 1}}}]`, nil, false},
		{"match with $expr", `[{"$match": {"$expr": {"$gt": [{"$multiply": ["$price", "$qty"]}, 60]}}}, {"$project": {"_id": 1}}]`,
			[]string{`{"_id":4}`, `{"_id":5}`}, false},
		{"project with expressions and exclusion of _id",
			`[{"$match": {"_id": 1}}, {"$project": {"_id": 0, "item": 1, "total": {"$multiply": ["$price", "$qty"]}, "up": {"$toUpper": "$item"}, "d": {"$dateToString": {"format": "%Y-%m-%d", "date": "$date"}}}}]`,
			[]string{`{"item":"abc","total":20,"up":"ABC","d":"2024-03-01"}`}, false},
		{"exclusion projection", `[{"$match": {"_id": 2}}, {"$project": {"tags": 0, "date": 0, "price": 0}}]`,
			[]string{`{"_id":2,"item":"jkl","qty":1}`}, false},
		{"addFields, set and unset",
			`[{"$match": {"_id": 2}}, {"$addFields": {"total": {"$multiply": ["$price", "$qty"]}, "qty": 99}}, {"$set": {"meta.by": "sim"}}, {"$unset": ["tags", "date"]}]`,
			[]string{`{"_id":2,"item":"jkl","price":20,"qty":99,"total":20,"meta":{"by":"sim"}}`}, false},
		{"unwind with index and preserve",
			`[{"$unwind": {"path": "$tags", "includeArrayIndex": "i", "preserveNullAndEmptyArrays": true}}, {"$project": {"tags": 1, "i": 1}}]`,
			[]string{`{"_id":1,"tags":"a","i":0}`, `{"_id":1,"tags":"b","i":1}`, `{"_id":2,"i":null}`, `{"_id":3,"tags":"b","i":0}`,
				`{"_id":4,"i":null}`, `{"_id":5,"tags":null,"i":null}`}, false},
		{"unwind string form drops empty and missing", `[{"$unwind": "$tags"}, {"$project": {"tags": 1}}]`,
			[]string{`{"_id":1,"tags":"a"}`, `{"_id":1,"tags":"b"}`, `{"_id":3,"tags":"b"}`}, false},
		{"sortByCount", `[{"$sortByCount": "$item"}, {"$match": {"_id": "jkl"}}]`, []string{`{"_id":"jkl","count":1}`}, false},
		{"count", `[{"$match": {"price": 5}}, {"$count": "n"}]`, []string{`{"n":2}`}, false},
		{"count of nothing is no document", `[{"$match": {"price": 0}}, {"$count": "n"}]`, nil, false},
		{"replaceRoot and replaceWith",
			`[{"$match": {"_id": 1}}, {"$replaceRoot": {"newRoot": {"i": "$item"}}}, {"$replaceWith": {"$mergeObjects": ["$$ROOT", {"x": 1}]}}]`,
			[]string{`{"i":"abc","x":1}`}, false},
		{"lookup by local and foreign field",
			`[{"$match": {"_id": {"$in": [1, 2]}}}, {"$lookup": {"from": "inventory", "localField": "item", "foreignField": "sku", "as": "inv"}}, {"$project": {"stock": "$inv.instock"}}]`,
			[]string{`{"_id":1,"stock":[120]}`, `{"_id":2,"stock":[0]}`}, false},
		{"lookup through an array of documents",
			`[{"$match": {"_id": 1}}, {"$project": {"lines": [{"sku": "abc"}, {"sku": "xyz"}, {"sku": "none"}]}},
			  {"$lookup": {"from": "inventory", "localField": "lines.sku", "foreignField": "sku", "as": "inv"}}, {"$project": {"ids": "$inv._id"}}]`,
			[]string{`{"_id":1,"ids":[1,2]}`}, false},
		{"lookup with let and pipeline",
			`[{"$match": {"_id": 3}}, {"$lookup": {"from": "inventory", "let": {"want": "$qty", "sku": "$item"},
			  "pipeline": [{"$match": {"$expr": {"$and": [{"$eq": ["$sku", "$$sku"]}, {"$gte": ["$instock", "$$want"]}]}}}, {"$project": {"_id": 0, "instock": 1}}], "as": "ok"}}, {"$project": {"ok": 1}}]`,
			[]string{`{"_id":3,"ok":[{"instock":60}]}`}, false},
		{"lookup with let, $expr inside $and",
			`[{"$match": {"_id": 3}}, {"$lookup": {"from": "inventory", "let": {"sku": "$item"},
			  "pipeline": [{"$match": {"$and": [{"$expr": {"$eq": ["$sku", "$$sku"]}}, {"instock": {"$gt": 0}}]}}, {"$project": {"_id": 1}}], "as": "ok"}}, {"$project": {"ok": 1}}]`,
			[]string{`{"_id":3,"ok":[{"_id":2}]}`}, false},
		{"facet", `[{"$facet": {"cheap": [{"$match": {"price": {"$lt": 10}}}, {"$count": "n"}], "items": [{"$group": {"_id": "$item"}}, {"$sort": {"_id": -1}}, {"$limit": 1}]}}]`,
			[]string{`{"cheap":[{"n":2}],"items":[{"_id":"xyz"}]}`}, false},
		{"bucket", `[{"$bucket": {"groupBy": "$price", "boundaries": [0, 10, 100], "output": {"n": {"$sum": 1}, "items": {"$addToSet": "$item"}}}}, {"$project": {"n": 1}}]`,
			[]string{`{"_id":0,"n":2}`, `{"_id":10,"n":3}`}, false},
		{"unionWith", `[{"$match": {"_id": 1}}, {"$project": {"item": 1}}, {"$unionWith": {"coll": "inventory", "pipeline": [{"$match": {"instock": 0}}]}}]`,
			[]string{`{"_id":1,"item":"abc"}`, `{"_id":3,"sku":"jkl","instock":0}`}, false},
		{"graphLookup", `[{"$match": {"_id": 1}}, {"$graphLookup": {"from": "employees", "startWith": "Asya", "connectFromField": "reportsTo",
			  "connectToField": "name", "as": "chain", "depthField": "d"}}, {"$project": {"n": {"$size": "$chain"}, "top": {"$max": "$chain.d"}}}]`,
			[]string{`{"_id":1,"n":4,"top":3}`}, false},
		{"graphLookup maxDepth", `[{"$match": {"_id": 1}}, {"$graphLookup": {"from": "employees", "startWith": "Asya", "connectFromField": "reportsTo",
			  "connectToField": "name", "as": "chain", "maxDepth": 1}}, {"$project": {"names": "$chain.name"}}]`,
			[]string{`{"_id":1,"names":["Asya","Ron"]}`}, false},
		{"redact", `[{"$match": {"_id": 1}}, {"$project": {"a": {"$literal": {"level": 1, "b": {"level": 5, "x": 1}}}}},
			  {"$redact": {"$cond": [{"$lte": [{"$ifNull": ["$level", 0]}, 2]}, "$$DESCEND", "$$PRUNE"]}}]`,
			[]string{`{"_id":1,"a":{"level":1}}`}, false},
		{"bucketAuto", `[{"$bucketAuto": {"groupBy": "$qty", "buckets": 2}}]`,
			[]string{`{"_id":{"min":1,"max":20},"count":4}`, `{"_id":{"min":20,"max":20},"count":1}`}, false},
		{"sample size", `[{"$sample": {"size": 2}}, {"$count": "n"}]`, []string{`{"n":2}`}, false},
		{"sort skip limit", `[{"$sort": {"qty": -1}}, {"$skip": 1}, {"$limit": 2}, {"$project": {"qty": 1}}]`,
			[]string{`{"_id":3,"qty":10}`, `{"_id":5,"qty":10}`}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := aggregate(t, sales, c.pipeline)
			if err != nil {
				t.Fatal(err)
			}
			if c.sorted {
				sort.Strings(got)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %d documents %v, want %v", len(got), got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("document %d:\n got %s\nwant %s", i, got[i], c.want[i])
				}
			}
		})
	}

	// $collStats still answers (its numbers are the stats slice's)
	if got, err := aggregate(t, sales, `[{"$collStats": {"storageStats": {}}}]`); err != nil || len(got) != 1 {
		t.Fatalf("$collStats: %v %v", got, err)
	}

	errs := []struct{ pipeline string }{
		{`[{"$foo": 1}]`},
		{`[{"$match": {}, "$sort": {"a": 1}}]`},
		{`[{"$project": {"x": {"$foo": 1}}}]`},
		{`[{"$group": {"n": {"$sum": 1}}}]`},
		{`[{"$group": {"_id": null, "n": {"$bogus": 1}}}]`},
		{`[{"$group": {"_id": null, "n": 1}}]`},
		{`[{"$project": {"a": 1, "b": 0}}]`},
		{`[{"$project": {"a": 0, "b": 1}}]`},
		{`[{"$unwind": "tags"}]`},
		{`[{"$limit": 0}]`},
		{`[{"$skip": -1}]`},
		{`[{"$count": ""}]`},
		{`[{"$replaceRoot": {"newRoot": "$item"}}]`},
		{`[{"$project": {"x": {"$add": ["$item", 1]}}}]`},
		{`[{"$project": {"x": {"$abs": "$item"}}}]`},
		{`[{"$unwind": ""}]`},
		{`[{"$lookup": {"from": "inventory", "localField": "item", "as": "x"}}]`},
		{`[{"$lookup": {"from": "inventory", "localField": "item", "foreignField": "sku"}}]`},
		{`[{"$lookup": {"pipeline": [{"$match": {}}], "as": "x"}}]`},
		{`[{"$group": {"_id": null, "n": {"$sum": [1, 2]}}}]`},
		{`[{"$count": 1}]`},
	}
	want := []int32{40324, 40323, 168, 15955, 15952, 40234, 31254, 31253, 28818, 15958, 15956, 40157, 40228, 14, 28765,
		28812, 9, 9, 9, 40237, 40156}
	for i, e := range errs {
		_, err := aggregate(t, sales, e.pipeline)
		if got := serverCode(err); got != want[i] {
			t.Errorf("%s: want code %d, got %v", e.pipeline, want[i], err)
		}
	}
}

// $expr in find and count filters, as applications write it.
func TestExprInFindAndCount(t *testing.T) {
	db := singleMemberDB(t)
	coll := db.Collection("budget")
	insertJSON(t, coll, `{"_id": 1, "spent": 400, "budget": 450}`, `{"_id": 2, "spent": 100, "budget": 50}`,
		`{"_id": 3, "spent": 500, "budget": 300}`, `{"_id": 4, "spent": 20}`)
	cur, err := coll.Find(ctx30(t), bson.D{{Key: "$expr", Value: bson.D{{Key: "$gt", Value: bson.A{"$spent", "$budget"}}}}},
		options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.M
	if err := cur.All(ctx30(t), &docs); err != nil {
		t.Fatal(err)
	}
	// missing budget sorts below every number, so _id 4 matches, as on mongod
	if len(docs) != 3 || docs[0]["_id"] != int32(2) || docs[1]["_id"] != int32(3) || docs[2]["_id"] != int32(4) {
		t.Fatalf("find $expr: %v", docs)
	}
	n, err := coll.CountDocuments(ctx30(t), bson.D{{Key: "_id", Value: bson.D{{Key: "$lt", Value: 4}}},
		{Key: "$expr", Value: bson.D{{Key: "$lt", Value: bson.A{"$spent", bson.D{{Key: "$multiply", Value: bson.A{"$budget", 0.5}}}}}}}})
	if err != nil || n != 0 {
		t.Fatalf("count $expr: %d %v", n, err)
	}
	_, err = coll.Find(ctx30(t), bson.D{{Key: "$expr", Value: bson.D{{Key: "$nope", Value: 1}}}})
	if serverCode(err) != 168 {
		t.Fatalf("unknown expression in $expr: %v", err)
	}
}

// Updates whose u is a pipeline, through update and findAndModify.
func TestPipelineUpdate(t *testing.T) {
	db := singleMemberDB(t)
	coll := db.Collection("students")
	insertJSON(t, coll, `{"_id": 1, "tests": [95, 92, 90], "old": true}`, `{"_id": 2, "tests": [94, 88, 90], "old": true}`)
	res, err := coll.UpdateMany(ctx30(t), bson.D{}, mongo.Pipeline{
		{{Key: "$set", Value: bson.D{{Key: "average", Value: bson.D{{Key: "$trunc", Value: bson.A{bson.D{{Key: "$avg", Value: "$tests"}}, 0}}}},
			{Key: "modified", Value: "$$NOW"}}}},
		{{Key: "$unset", Value: "old"}},
	})
	if err != nil {
		// $avg of an array is an expression in $set (not an accumulator)
		t.Fatal(err)
	}
	if res.ModifiedCount != 2 {
		t.Fatalf("modified %d", res.ModifiedCount)
	}
	var got bson.M
	if err := coll.FindOne(ctx30(t), bson.D{{Key: "_id", Value: 1}}).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got["average"] != 92.0 || got["old"] != nil || got["modified"] == nil {
		t.Fatalf("after pipeline update: %v", got)
	}
	var after bson.M
	err = coll.FindOneAndUpdate(ctx30(t), bson.D{{Key: "_id", Value: 2}},
		mongo.Pipeline{{{Key: "$replaceWith", Value: bson.D{{Key: "$mergeObjects", Value: bson.A{"$$ROOT", bson.D{{Key: "flag", Value: true}}}}}}}},
		options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&after)
	if err != nil || after["flag"] != true || after["_id"] != int32(2) {
		t.Fatalf("findAndModify pipeline: %v %v", after, err)
	}
	_, err = coll.UpdateOne(ctx30(t), bson.D{{Key: "_id", Value: 1}}, mongo.Pipeline{{{Key: "$set", Value: bson.D{{Key: "_id", Value: 9}}}}})
	if serverCode(err) != 66 {
		t.Fatalf("changing _id: %v", err)
	}
	_, err = coll.UpdateOne(ctx30(t), bson.D{{Key: "_id", Value: 1}}, mongo.Pipeline{{{Key: "$match", Value: bson.D{}}}})
	if serverCode(err) != 72 {
		t.Fatalf("$match in an update: %v", err)
	}
	up, err := coll.UpdateOne(ctx30(t), bson.D{{Key: "_id", Value: 7}}, mongo.Pipeline{{{Key: "$set", Value: bson.D{{Key: "x", Value: bson.D{{Key: "$literal", Value: 1}}}}}}},
		options.UpdateOne().SetUpsert(true))
	if err != nil || up.UpsertedID != int32(7) {
		t.Fatalf("pipeline upsert: %v %v", up, err)
	}
}

// The aggregate command's own options and the database-level form.
func TestAggregateCommandOptions(t *testing.T) {
	db := singleMemberDB(t)
	insertJSON(t, db.Collection("c"), `{"_id": 1}`, `{"_id": 2}`, `{"_id": 3}`)
	run := func(cmd string) (bson.Raw, error) {
		var d bson.D
		if err := bson.UnmarshalExtJSON([]byte(cmd), false, &d); err != nil {
			t.Fatal(err)
		}
		return db.RunCommand(ctx30(t), d).Raw()
	}
	if _, err := run(`{"aggregate": "c", "pipeline": []}`); serverCode(err) != 9 {
		t.Fatalf("no cursor: %v", err)
	}
	if _, err := run(`{"aggregate": 2, "pipeline": [], "cursor": {}}`); serverCode(err) != 9 {
		t.Fatalf("aggregate: 2: %v", err)
	}
	if _, err := run(`{"aggregate": true, "pipeline": [], "cursor": {}}`); serverCode(err) != 14 {
		t.Fatalf("aggregate: true: %v", err)
	}
	if _, err := run(`{"aggregate": "c", "pipeline": [], "cursor": {}, "bogus": 1}`); serverCode(err) != 40415 {
		t.Fatalf("unknown field: %v", err)
	}
	r, err := run(`{"aggregate": "c", "pipeline": [{"$match": {"$expr": {"$gte": ["$_id", "$$min"]}}}], "cursor": {"batchSize": 1},
		"let": {"min": 2}, "allowDiskUse": true, "comment": "x", "hint": {"_id": 1}}`)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := r.Lookup("cursor", "firstBatch").Array().Values()
	if id, _ := r.Lookup("cursor", "id").Int64OK(); len(first) != 1 || id == 0 {
		t.Fatalf("batchSize 1: %v", r)
	}
	r, err = run(`{"aggregate": 1, "pipeline": [{"$documents": [{"x": 1}]}, {"$project": {"t": {"$type": "$$CLUSTER_TIME"}}}], "cursor": {}}`)
	if err != nil {
		t.Fatal(err)
	}
	if typ, _ := r.Lookup("cursor", "firstBatch", "0", "t").StringValueOK(); typ != "timestamp" {
		t.Fatalf("$$CLUSTER_TIME: %v", r)
	}
	r, err = run(`{"aggregate": 1, "pipeline": [{"$documents": [{"x": 1}, {"x": 2}]}, {"$match": {"x": 2}}], "cursor": {}}`)
	if err != nil {
		t.Fatal(err)
	}
	if first, _ := r.Lookup("cursor", "firstBatch").Array().Values(); len(first) != 1 {
		t.Fatalf("$documents: %v", r)
	}
	if _, err := run(`{"aggregate": 1, "pipeline": [{"$match": {}}], "cursor": {}}`); serverCode(err) != 73 {
		t.Fatalf("collectionless $match: %v", err)
	}
	if _, err := run(`{"aggregate": "c", "pipeline": [], "cursor": {}, "allowDiskUse": "yes"}`); serverCode(err) != 14 {
		t.Fatalf("allowDiskUse of the wrong type: %v", err)
	}
	if _, err := run(`{"aggregate": "c", "pipeline": [], "cursor": {}, "collation": {"locale": "simple"}}`); err != nil {
		t.Fatalf("simple collation: %v", err)
	}
	if _, err := run(`{"aggregate": "c", "pipeline": [], "cursor": {}, "collation": {"locale": "en", "strength": 2}}`); serverCode(err) != 2 {
		t.Fatalf("a collation the simulator cannot honour: %v", err)
	}
	// getMore continues an aggregate cursor
	cur, err := db.Collection("c").Aggregate(ctx30(t), mongo.Pipeline{{{Key: "$sort", Value: bson.D{{Key: "_id", Value: -1}}}}},
		options.Aggregate().SetBatchSize(1))
	if err != nil {
		t.Fatal(err)
	}
	var all []bson.M
	if err := cur.All(ctx30(t), &all); err != nil || len(all) != 3 || all[0]["_id"] != int32(3) {
		t.Fatalf("aggregate through getMore: %v %v", all, err)
	}
}

// $out replaces a collection, $merge folds documents into one; both replicate as writes.
func TestAggregateOutAndMerge(t *testing.T) {
	db := singleMemberDB(t)
	src := db.Collection("orders")
	insertJSON(t, src, `{"_id": 1, "cust": "a", "amt": 5}`, `{"_id": 2, "cust": "b", "amt": 7}`, `{"_id": 3, "cust": "a", "amt": 1}`)
	insertJSON(t, db.Collection("totals"), `{"_id": "stale"}`)
	if got, err := aggregate(t, src, `[{"$group": {"_id": "$cust", "total": {"$sum": "$amt"}}}, {"$out": "totals"}]`); err != nil || len(got) != 0 {
		t.Fatalf("$out: %v %v", got, err)
	}
	got, err := aggregate(t, db.Collection("totals"), `[{"$sort": {"_id": 1}}]`)
	if err != nil || len(got) != 2 || got[0] != `{"_id":"a","total":6}` || got[1] != `{"_id":"b","total":7}` {
		t.Fatalf("after $out: %v %v", got, err)
	}
	// merge: matched documents are merged, others inserted
	_, err = aggregate(t, src, `[{"$match": {"_id": {"$in": [2, 3]}}}, {"$project": {"_id": "$cust", "last": "$amt"}},
		{"$merge": {"into": "totals", "whenMatched": "merge", "whenNotMatched": "insert"}}]`)
	if err != nil {
		t.Fatal(err)
	}
	got, err = aggregate(t, db.Collection("totals"), `[{"$sort": {"_id": 1}}]`)
	if err != nil || len(got) != 2 || got[0] != `{"_id":"a","total":6,"last":1}` || got[1] != `{"_id":"b","total":7,"last":7}` {
		t.Fatalf("after $merge: %v %v", got, err)
	}
	// a pipeline for matched documents sees the incoming one as $$new
	_, err = aggregate(t, src, `[{"$match": {"_id": 1}}, {"$project": {"_id": "$cust", "amt": 1}},
		{"$merge": {"into": "totals", "whenMatched": [{"$set": {"total": {"$add": ["$total", "$$new.amt"]}}}], "whenNotMatched": "discard"}}]`)
	if err != nil {
		t.Fatal(err)
	}
	got, _ = aggregate(t, db.Collection("totals"), `[{"$match": {"_id": "a"}}]`)
	if len(got) != 1 || got[0] != `{"_id":"a","total":11,"last":1}` {
		t.Fatalf("after pipeline $merge: %v", got)
	}
	for pipeline, code := range map[string]int32{
		`[{"$out": "x"}, {"$match": {}}]`: 40601,
		`[{"$project": {"_id": "$cust"}}, {"$merge": {"into": "totals", "whenMatched": "fail"}}]`: 11000,
		`[{"$lookup": {"from": "x", "pipeline": [{"$out": "y"}], "as": "z"}}]`:                    51047,
		`[{"$facet": {"a": [{"$out": "y"}]}}]`:                                                    40600,
		`[{"$out": "system.views"}]`:                                                              17385,
		`[{"$merge": {"into": "totals", "whenNotMatched": "fail"}}, {"$limit": 1}]`:               40601,
	} {
		_, err := aggregate(t, src, pipeline)
		var se mongo.ServerError
		if !errors.As(err, &se) || !se.HasErrorCode(int(code)) {
			t.Errorf("%s: want %d, got %v", pipeline, code, err)
		}
	}
}
