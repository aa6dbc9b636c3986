package sim

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// runPipelineJSON runs a pipeline that needs no collection on docs (extended JSON).
func runPipelineJSON(t *testing.T, docs []string, spec string) string {
	t.Helper()
	var in []bson.Raw
	for _, d := range docs {
		var r bson.Raw
		if err := bson.UnmarshalExtJSON([]byte(d), false, &r); err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		in = append(in, r)
	}
	var wrap bson.Raw
	if err := bson.UnmarshalExtJSON([]byte(`{"p": `+spec+`}`), false, &wrap); err != nil {
		t.Fatalf("%s: %v", spec, err)
	}
	specs, _ := arrayElems(wrap.Lookup("p"))
	p := &pipeline{now: time.UnixMilli(0)}
	out, err := p.run(in, specs)
	if err != nil {
		var ce *CmdError
		if !errors.As(err, &ce) {
			return "ERR " + err.Error()
		}
		return "ERR " + codeName(ce.Code)
	}
	var parts []string
	for _, d := range out {
		j, err := bson.MarshalExtJSON(d, false, false)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, string(j))
	}
	return strings.Join(parts, " ")
}

// Edge cases of the reshaping stages, as mongod answers them.
func TestPipelineShapes(t *testing.T) {
	for _, c := range []struct {
		docs     []string
		pipeline string
		want     string
	}{
		{[]string{`{"_id": 1, "a": [{"b": 1, "c": 2}, 3, {"c": 4}]}`}, `[{"$project": {"a.b": 1}}]`, `{"_id":1,"a":[{"b":1},{}]}`},
		{[]string{`{"_id": 1, "a": [{"b": 1, "c": 2}, 3, {"c": 4}]}`}, `[{"$project": {"a.b": 0}}]`, `{"_id":1,"a":[{"c":2},3,{"c":4}]}`},
		{[]string{`{"_id": 1, "a": [{"c": 1}, 2]}`}, `[{"$addFields": {"a.b": 5}}]`, `{"_id":1,"a":[{"c":1,"b":5},{"b":5}]}`},
		{[]string{`{"_id": 1, "a": {"c": 1}}`}, `[{"$set": {"a": {"b": 5}}}]`, `{"_id":1,"a":{"c":1,"b":5}}`},
		{[]string{`{"_id": 1}`}, `[{"$project": {"_id": 0, "a.b": {"$literal": 1}}}]`, `{"a":{"b":1}}`},
		{[]string{`{"_id": 1, "x": 5}`}, `[{"$project": {"x": {"$cond": [{"$gt": ["$x", 3]}, "$$REMOVE", "$x"]}, "y": "$x"}}]`, `{"_id":1,"y":5}`},
		{[]string{`{"_id": 1, "a": 1, "b": 2}`}, `[{"$project": {"b": {"$add": ["$b", 1]}, "a": 1}}]`, `{"_id":1,"a":1,"b":3}`},
		{[]string{`{"_id": 1, "a": 1}`}, `[{"$project": {"_id": 1}}]`, `{"_id":1}`},
		{[]string{`{"_id": 1, "a": 1}`}, `[{"$project": {"_id": 0}}]`, `{"a":1}`},
		{[]string{`{"_id": 1, "a": 1}`}, `[{"$project": {"a": 1, "a.b": 1}}]`, `ERR Location31250`},
		{[]string{`{"_id": 1, "a": 1}`}, `[{"$project": {}}]`, `ERR Location51272`},
		{[]string{`{"_id": 1, "a": 1}`}, `[{"$project": {"a": 0, "b": "$a"}}]`, `ERR Location31252`},
		{[]string{`{"_id": 1, "a": {"b": [1, 2]}}`}, `[{"$unwind": "$a.b"}]`, `{"_id":1,"a":{"b":1}} {"_id":1,"a":{"b":2}}`},
		{[]string{`{"_id": 1, "a": 7}`}, `[{"$unwind": {"path": "$a", "includeArrayIndex": "i"}}]`, `{"_id":1,"a":7,"i":null}`},
		{[]string{`{"_id": 1, "s": {"x": 1}}`, `{"_id": 2}`}, `[{"$replaceWith": "$s"}]`, `ERR Location40228`},
		{[]string{`{"_id": 1, "k": 1}`, `{"_id": 2, "k": 1.0}`, `{"_id": 3, "k": {"$numberLong": "1"}}`, `{"_id": 4}`, `{"_id": 5, "k": null}`},
			`[{"$group": {"_id": "$k", "n": {"$sum": 1}}}]`, `{"_id":1,"n":3} {"_id":null,"n":2}`},
		{[]string{`{"_id": 1, "a": 1}`, `{"_id": 2}`}, `[{"$group": {"_id": {"a": "$a"}, "n": {"$sum": 1}}}]`, `{"_id":{"a":1},"n":1} {"_id":{},"n":1}`},
		{[]string{`{"_id": 1, "v": 2147483647}`, `{"_id": 2, "v": 1}`}, `[{"$group": {"_id": null, "s": {"$sum": "$v"}}}, {"$set": {"t": {"$type": "$s"}}}]`, `{"_id":null,"s":2147483648,"t":"long"}`},
		{[]string{`{"_id": 1, "v": "x"}`}, `[{"$group": {"_id": null, "s": {"$sum": "$v"}, "a": {"$avg": "$v"}, "m": {"$max": "$nope"}, "f": {"$first": "$nope"}}}]`,
			`{"_id":null,"s":0,"a":null,"m":null,"f":null}`},
		{[]string{`{"_id": 1, "v": 4}`, `{"_id": 2, "v": 1}`, `{"_id": 3, "v": "x"}`, `{"_id": 4, "v": 9}`},
			`[{"$group": {"_id": null, "m": {"$median": {"input": "$v", "method": "approximate"}}, "p": {"$percentile": {"input": "$v", "p": [0.1, 1], "method": "approximate"}}}}]`,
			`{"_id":null,"m":4.0,"p":[1.0,9.0]}`},
		{[]string{`{"_id": 1}`}, `[{"$documents": [{"a": 1}]}]`, `{"a":1}`},
		{[]string{`{"_id": 1}`}, `[{"$match": {"_id": 1}}, {"$documents": [{"a": 1}]}]`, `ERR Location40602`},
		{[]string{`{"_id": 1, "a": 2}`}, `[{"$match": {"$expr": {"$eq": ["$a", 2]}, "_id": 1}}]`, `{"_id":1,"a":2}`},
		{[]string{`{"_id": 1, "a": 2}`}, `[{"$match": {"$expr": {"$eq": ["$a", 2]}, "_id": 2}}]`, ``},
		// $setWindowFields
		{[]string{`{"_id": 1, "g": "a", "t": 1, "v": 10}`, `{"_id": 2, "g": "b", "t": 1, "v": 1}`, `{"_id": 3, "g": "a", "t": 2, "v": 20}`, `{"_id": 4, "g": "a", "t": 3, "v": 30}`},
			`[{"$setWindowFields": {"partitionBy": "$g", "sortBy": {"t": 1}, "output": {
			  "run": {"$sum": "$v", "window": {"documents": ["unbounded", "current"]}},
			  "avg2": {"$avg": "$v", "window": {"documents": [-1, 0]}},
			  "all": {"$sum": "$v"},
			  "near": {"$push": "$v", "window": {"range": [-1, 1]}},
			  "rank": {"$rank": {}}, "prev": {"$shift": {"output": "$v", "by": -1, "default": 0}}}}}, {"$project": {"g": 0, "t": 0, "v": 0}}]`,
			`{"_id":1,"run":10,"avg2":10.0,"all":60,"near":[10,20],"rank":1,"prev":0} {"_id":3,"run":30,"avg2":15.0,"all":60,"near":[10,20,30],"rank":2,"prev":10} ` +
				`{"_id":4,"run":60,"avg2":25.0,"all":60,"near":[20,30],"rank":3,"prev":20} {"_id":2,"run":1,"avg2":1.0,"all":1,"near":[1],"rank":1,"prev":0}`},
		{[]string{`{"_id": 1}`}, `[{"$setWindowFields": {"output": {"r": {"$rank": {}}}}}]`, `ERR Location5371602`},
		{[]string{`{"_id": 1, "g": "a", "v": 1}`, `{"_id": 2, "g": "a", "v": 4}`, `{"_id": 3, "g": "b", "v": 2}`, `{"_id": 4, "g": "b"}`},
			`[{"$densify": {"field": "v", "partitionByFields": ["g"], "range": {"step": 1, "bounds": "partition"}}}]`,
			`{"_id":1,"g":"a","v":1} {"g":"a","v":2} {"g":"a","v":3} {"_id":2,"g":"a","v":4} {"_id":4,"g":"b"} {"_id":3,"g":"b","v":2}`},
		{[]string{`{"_id": 1, "v": 1}`, `{"_id": 2, "v": 9}`},
			`[{"$densify": {"field": "v", "range": {"step": 2, "bounds": [0, 5]}}}]`,
			`{"v":0} {"_id":1,"v":1} {"v":2} {"v":4} {"_id":2,"v":9}`},
		{[]string{`{"_id": 1, "t": {"$date": "2024-01-01T00:00:00Z"}}`, `{"_id": 2, "t": {"$date": "2024-01-01T02:00:00Z"}}`},
			`[{"$densify": {"field": "t", "range": {"step": 1, "unit": "hour", "bounds": "full"}}}, {"$project": {"h": {"$hour": "$t"}}}]`,
			`{"_id":1,"h":0} {"h":1} {"_id":2,"h":2}`},
		{[]string{`{"_id": 1, "t": 1, "v": 10, "w": 1}`, `{"_id": 2, "t": 2}`, `{"_id": 3, "t": 3, "v": 30, "w": null}`},
			`[{"$fill": {"sortBy": {"t": 1}, "output": {"v": {"method": "linear"}, "w": {"value": 0}}}}, {"$project": {"v": 1, "w": 1}}]`,
			`{"_id":1,"v":10,"w":1} {"_id":2,"v":20.0,"w":0} {"_id":3,"v":30,"w":0}`},
		{[]string{`{"_id": 1, "t": 1, "v": 10}`, `{"_id": 2, "t": 2}`, `{"_id": 3, "t": 4, "v": 40}`, `{"_id": 4, "t": 5, "v": null}`},
			`[{"$setWindowFields": {"sortBy": {"t": 1}, "output": {"l": {"$locf": "$v"}, "f": {"$linearFill": "$v"}}}}, {"$project": {"l": 1, "f": 1}}]`,
			`{"_id":1,"l":10,"f":10} {"_id":2,"l":10,"f":20.0} {"_id":3,"l":40,"f":40} {"_id":4,"l":40,"f":null}`},
	} {
		if got := runPipelineJSON(t, c.docs, c.pipeline); got != c.want {
			t.Errorf("%s on %v:\n got %s\nwant %s", c.pipeline, c.docs, got, c.want)
		}
	}
}

// Pipeline updates keep _id and refuse stages other than the reshaping ones.
func TestApplyPipelineUpdate(t *testing.T) {
	doc := mustRaw(bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}})
	upd, err := parseDocUpdate(val(bson.A{bson.D{{Key: "$project", Value: bson.D{{Key: "_id", Value: 0}, {Key: "b", Value: "$a"}}}}}), nil)
	if err != nil {
		t.Fatal(err)
	}
	nd, err := upd.Apply(doc, nil, false)
	if err != nil || nd.String() != `{"_id": {"$numberInt":"1"},"b": {"$numberInt":"1"}}` {
		t.Fatalf("dropping _id keeps it: %v %v", nd, err)
	}
	upd, _ = parseDocUpdate(val(bson.A{bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: "$$k"}, {Key: "y", Value: "$$l"}}}}}), nil,
		mustRaw(bson.D{{Key: "k", Value: "let"}, {Key: "l", Value: "let"}}), mustRaw(bson.D{{Key: "k", Value: "c"}}))
	if nd, err = upd.Apply(doc, nil, false); err != nil || nd.Lookup("x").StringValue() != "c" || nd.Lookup("y").StringValue() != "let" {
		t.Fatalf("let and constants: %v %v", nd, err)
	}
	if _, err := parseDocUpdate(val(bson.A{bson.D{{Key: "$group", Value: bson.D{}}}}), nil); !isCode(err, 72) {
		t.Fatalf("$group in an update: %v", err)
	}
	if _, err := parseDocUpdate(val(1), nil); err == nil {
		t.Fatal("a number as an update")
	}
}

// FuzzAggregate: no pipeline, however malformed, panics the aggregate command.
func FuzzAggregate(f *testing.F) {
	cfg := DefaultConfig()
	cfg.DBPath = f.TempDir()
	n, err := NewNode(cfg, zerolog.Nop())
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = n.store.Close() })
	c := &conn{n: n, nc: nopConn{}, id: 1, local: true}
	var docs bson.A
	for _, d := range []string{`{"_id": 1, "a": [1, {"b": 2}], "s": "x", "d": {"$date": "2024-01-01T00:00:00Z"}}`, `{"_id": 2, "a": 5, "o": {"p": null}}`, `{"_id": 3}`} {
		var r bson.Raw
		if err := bson.UnmarshalExtJSON([]byte(d), false, &r); err != nil {
			f.Fatal(err)
		}
		docs = append(docs, r)
	}
	if _, err := c.cmdInsert(&Request{Body: mustRaw(bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: docs}, {Key: "$db", Value: "t"}})}); err != nil {
		f.Fatal(err)
	}
	for _, p := range []string{
		`[{"$group": {"_id": "$a", "n": {"$sum": 1}, "t": {"$top": {"sortBy": {"_id": 1}, "output": "$s"}}}}]`,
		`[{"$project": {"a.b": 1, "x": {"$concat": ["$s", "y"]}}}, {"$unwind": {"path": "$a", "includeArrayIndex": "i"}}]`,
		`[{"$lookup": {"from": "c", "localField": "a", "foreignField": "_id", "as": "j"}}, {"$facet": {"x": [{"$count": "n"}]}}]`,
		`[{"$setWindowFields": {"sortBy": {"_id": 1}, "output": {"r": {"$sum": "$_id", "window": {"documents": [-1, 1]}}}}}]`,
		`[{"$bucketAuto": {"groupBy": "$_id", "buckets": 2}}, {"$sortByCount": "$count"}]`,
		`[{"$graphLookup": {"from": "c", "startWith": "$a", "connectFromField": "a", "connectToField": "_id", "as": "g"}}]`,
		`[{"$merge": {"into": "m", "whenMatched": [{"$set": {"x": "$$new.a"}}]}}]`,
	} {
		var r bson.Raw
		if err := bson.UnmarshalExtJSON([]byte(`{"p": `+p+`}`), false, &r); err != nil {
			f.Fatal(err)
		}
		f.Add([]byte(r))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		in := bson.Raw(b)
		var full bson.D
		if in.Validate() != nil || bson.Unmarshal(b, &full) != nil || in.Lookup("p").Type == 0 {
			return
		}
		body := mustRaw(bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: in.Lookup("p")}, {Key: "cursor", Value: bson.D{}}, {Key: "$db", Value: "t"}})
		_, _ = c.cmdAggregate(&Request{Body: body})
	})
}

// isCode reports whether err is a command error with this code.
func isCode(err error, code int32) bool {
	var ce *CmdError
	return errors.As(err, &ce) && ce.Code == code
}
