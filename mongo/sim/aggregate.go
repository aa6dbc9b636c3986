package sim

import (
	"math/rand/v2"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// pipeline runs the stages of one aggregate command (or one pipeline update).
type pipeline struct {
	c    *conn
	req  *Request
	db   string
	coll string // "" for {aggregate: 1}
	now  time.Time
	let  map[string]bson.RawValue
	// nested names the stage a sub-pipeline runs in ("" at top level)
	nested string
	// wrote is set once $out or $merge wrote, so the reply waits for the write concern
	wrote bool
	// version is the member's mongod version ("7.0"), which decides the operators known
	version string
}

// stageFn transforms the documents flowing through a pipeline.
type stageFn func(p *pipeline, spec bson.RawValue, docs []bson.Raw) ([]bson.Raw, error)

// stages is the table of stage names; each file adds its own in an init
// function (the functions run pipelines, so the table cannot be a literal).
var stages = map[string]stageFn{}

// sourceStages must open a pipeline and produce its documents; those marked
// true also open a database-level pipeline ({aggregate: 1}).
var sourceStages = map[string]bool{"$collStats": false, "$documents": true, "$currentOp": true}

func init() {
	stages["$match"] = stageMatch
	stages["$sort"] = stageSort
	stages["$skip"] = stageSkip
	stages["$limit"] = stageLimit
	stages["$project"] = stageProject
	stages["$addFields"] = stageAddFields
	stages["$set"] = stageAddFields
	stages["$unset"] = stageUnset
	stages["$replaceRoot"] = stageReplaceRoot
	stages["$replaceWith"] = stageReplaceWith
	stages["$group"] = stageGroup
	stages["$bucket"] = stageBucket
	stages["$bucketAuto"] = stageBucketAuto
	stages["$sortByCount"] = stageSortByCount
	stages["$count"] = stageCount
	stages["$unwind"] = stageUnwind
	stages["$lookup"] = stageLookup
	stages["$facet"] = stageFacet
	stages["$sample"] = stageSample
	stages["$collStats"] = stageCollStats
	stages["$currentOp"] = stageCurrentOp
	stages["$documents"] = stageDocuments
	stages["$out"] = stageOut
	stages["$merge"] = stageMerge
	stages["$unionWith"] = stageUnionWith
	stages["$graphLookup"] = stageGraphLookup
	stages["$redact"] = stageRedact
}

// aggregateFields are the fields an aggregate command may carry (others → 40415).
var aggregateFields = map[string]bool{"aggregate": true, "pipeline": true, "explain": true, "allowDiskUse": true, "cursor": true,
	"maxTimeMS": true, "bypassDocumentValidation": true, "readConcern": true, "writeConcern": true, "collation": true, "hint": true,
	"comment": true, "let": true, "lsid": true, "txnNumber": true, "autocommit": true, "startTransaction": true, "stmtId": true,
	"apiVersion": true, "apiStrict": true, "apiDeprecationErrors": true, "maxTimeMSOpOnly": true, "readPreference": true,
	"collectionUUID": true, "mayBypassWriteBlocking": true, "fromMongos": true, "needsMerge": true, "isMapReduceCommand": true}

// aggregateFieldTypes are the BSON types mongod's IDL requires of some fields.
var aggregateFieldTypes = map[string]bson.Type{"allowDiskUse": bson.TypeBoolean, "explain": bson.TypeBoolean,
	"bypassDocumentValidation": bson.TypeBoolean, "collation": bson.TypeEmbeddedDocument, "readConcern": bson.TypeEmbeddedDocument,
	"writeConcern": bson.TypeEmbeddedDocument}

func (c *conn) cmdAggregate(req *Request) (bson.D, error) {
	db := req.DB()
	p := &pipeline{c: c, req: req, db: db, now: time.Now(), version: c.n.cfg.MajorMinor()}
	target := req.Body.Lookup("aggregate")
	if s, ok := target.StringValueOK(); ok {
		if s == "" {
			return nil, cerr(73, "Invalid namespace specified '%s.'", db)
		}
		p.coll = s
	} else if isArith(target) || target.Type == bson.TypeDecimal128 {
		if f, _ := target.AsFloat64OK(); f != 1 {
			return nil, cerr(codeFailedToParse, "Invalid command format: the 'aggregate' field must specify a collection name or 1")
		}
	} else {
		return nil, cerr(14, "collection name has invalid type: %s", typeName(target.Type))
	}
	els, _ := req.Body.Elements()
	for _, e := range els {
		if !strings.HasPrefix(e.Key(), "$") && !aggregateFields[e.Key()] {
			return nil, cerr(40415, "BSON field 'aggregate.%s' is an unknown field.", e.Key())
		}
		if want, typed := aggregateFieldTypes[e.Key()]; typed && e.Value().Type != want {
			return nil, cerr(14, "BSON field 'aggregate.%s' is the wrong type '%s', expected type '%s'", e.Key(), exprTypeName(e.Value()), typeName(want))
		}
	}
	if coll, ok := req.Body.Lookup("collation").DocumentOK(); ok {
		// comparisons under a collation are not modelled: refuse rather than answer as binary
		if loc, _ := coll.Lookup("locale").StringValueOK(); loc != "simple" {
			return nil, cerr(2, "the simulator models only the simple collation, not %s", coll.String())
		}
	}
	pv, err := req.Body.LookupErr("pipeline")
	if err != nil {
		return nil, cerr(40414, "BSON field 'aggregate.pipeline' is missing but a required field")
	}
	specs, ok := arrayElems(pv)
	if !ok {
		return nil, cerr(14, "'pipeline' option must be specified as an array")
	}
	explain, _ := req.Body.Lookup("explain").BooleanOK()
	cur, hasCursor := req.Body.Lookup("cursor").DocumentOK()
	if cv := req.Body.Lookup("cursor"); cv.Type != 0 && !hasCursor {
		return nil, cerr(14, "BSON field 'aggregate.cursor' is the wrong type '%s', expected type 'object'", exprTypeName(cv))
	}
	if !hasCursor && !explain {
		return nil, cerr(9, "The 'cursor' option is required, except for aggregate with the explain argument")
	}
	batch := 101
	if b := cur.Lookup("batchSize"); b.Type != 0 {
		n, ok := numberOK(b)
		if !ok || b.Type == bson.TypeBoolean {
			return nil, cerr(14, "BSON field 'aggregate.cursor.batchSize' is the wrong type '%s', expected types '[long, int, decimal, double']", exprTypeName(b))
		}
		if n < 0 {
			return nil, cerr(51024, "BSON field 'batchSize' value must be >= 0, actual value '%d'", int64(n))
		}
		batch = int(n)
	}
	if lv := req.Body.Lookup("let"); lv.Type != 0 {
		ld, ok := lv.DocumentOK()
		if !ok {
			return nil, cerr(14, "BSON field 'aggregate.let' is the wrong type '%s', expected type 'object'", exprTypeName(lv))
		}
		if p.let, err = evalLet(newEvalCtx(emptyDoc, p.now, nil), ld); err != nil {
			return nil, err
		}
	}
	if c.n.cfg.ReplSet != "" { // $$CLUSTER_TIME: the newest timestamp this member has used or seen
		if p.let == nil {
			p.let = map[string]bson.RawValue{}
		}
		c.n.mu.Lock()
		p.let["CLUSTER_TIME"] = val(c.n.lastTS)
		c.n.mu.Unlock()
	}
	if err := checkStageSpecs(specs, p.coll == "", ""); err != nil {
		return nil, err
	}
	if explain {
		arr := bson.A{}
		for _, s := range specs {
			arr = append(arr, s)
		}
		return bson.D{{Key: "explainVersion", Value: "1"}, {Key: "stages", Value: arr}}, nil
	}
	var docs []bson.Raw
	if _, source := sourceStages[firstStage(specs)]; p.coll != "" && !source {
		var view bool
		if docs, view, err = c.viewDocs(req, db, p.coll); err != nil {
			return nil, err
		}
		if !view {
			if docs, err = c.n.matching(req, db, p.coll, nil); err != nil {
				return nil, err
			}
		}
	}
	if docs, err = p.run(docs, specs); err != nil {
		return nil, err
	}
	ns := db + "." + p.coll
	if p.coll == "" {
		ns = db + ".$cmd.aggregate"
	}
	reply := c.cursorReply(ns, docs, batch, false, "firstBatch")
	if p.wrote {
		return c.finishWrite(req, reply), nil
	}
	return reply, nil
}

var emptyDoc = mustRaw(bson.D{})

func firstStage(specs []bson.RawValue) string {
	if len(specs) == 0 {
		return ""
	}
	d, _ := specs[0].DocumentOK()
	e, err := d.IndexErr(0)
	if err != nil {
		return ""
	}
	return e.Key()
}

// checkStageSpecs validates a pipeline's shape before anything runs, as mongod parses it first.
func checkStageSpecs(specs []bson.RawValue, collectionless bool, nested string) error {
	for i, s := range specs {
		d, ok := s.DocumentOK()
		if !ok {
			return cerr(14, "Each element of the 'pipeline' array must be an object")
		}
		els, _ := d.Elements()
		if len(els) != 1 {
			return cerr(40323, "A pipeline stage specification object must contain exactly one field.")
		}
		name := els[0].Key()
		if _, ok := stages[name]; !ok {
			return cerr(40324, "Unrecognized pipeline stage name: '%s'", name)
		}
		if _, source := sourceStages[name]; source && i != 0 {
			return cerr(40602, "%s is only valid as the first stage in a pipeline", name)
		}
		if err := checkOutputStage(name, i, len(specs), nested); err != nil {
			return err
		}
		if i == 0 && collectionless && !sourceStages[name] {
			return cerr(73, "{aggregate: 1} is not valid for '%s'; a collection is required.", name)
		}
	}
	return nil
}

// evalLet evaluates a let document's variables.
func evalLet(x *evalCtx, ld bson.Raw) (map[string]bson.RawValue, error) {
	out := map[string]bson.RawValue{}
	els, _ := ld.Elements()
	for _, e := range els {
		if err := checkVarName(e.Key()); err != nil {
			return nil, err
		}
		v, err := x.eval(e.Value())
		if err != nil {
			return nil, err
		}
		out[e.Key()] = v
	}
	return out, nil
}

func (p *pipeline) ctx(doc bson.Raw) *evalCtx {
	x := newEvalCtx(doc, p.now, p.let)
	x.version = p.version
	return x
}

// run passes docs through the stages in order.
func (p *pipeline) run(docs []bson.Raw, specs []bson.RawValue) ([]bson.Raw, error) {
	if err := checkStageSpecs(specs, false, p.nested); err != nil {
		return nil, err
	}
	for _, s := range specs {
		e, _ := s.Document().IndexErr(0)
		out, err := stages[e.Key()](p, e.Value(), docs)
		if err != nil {
			return nil, exprError(err)
		}
		docs = out
	}
	return docs, nil
}

func stageSort(p *pipeline, spec bson.RawValue, docs []bson.Raw) ([]bson.Raw, error) {
	s, ok := spec.DocumentOK()
	if !ok {
		return nil, cerr(15973, "the $sort key specification must be an object")
	}
	els, _ := s.Elements()
	if len(els) == 0 {
		return nil, cerr(15976, "$sort stage must have at least one sort key")
	}
	for _, e := range els {
		f, ok := e.Value().AsFloat64OK()
		if !ok || f != 1 && f != -1 {
			return nil, cerr(15975, "$sort key ordering must be 1 (for ascending) or -1 (for descending)")
		}
	}
	if err := SortDocs(docs, s); err != nil {
		return nil, asCmdError(err)
	}
	return docs, nil
}

// countArg reads $skip's and $limit's number: integral, representable as a long.
func countArg(stage string, spec bson.RawValue) (int64, error) {
	if !isArith(spec) {
		return 0, cerr(5107201, "invalid argument to %s stage: Expected a number in: %s: %s", stage, stage, spec.String())
	}
	n := toNum(spec)
	if n.kind == 2 && n.f != float64(int64(n.f)) {
		return 0, cerr(5107200, "invalid argument to %s stage: Cannot represent as a 64-bit integer: %s: %s", stage, stage, spec.String())
	}
	return int64(n.float()), nil
}

func stageSkip(p *pipeline, spec bson.RawValue, docs []bson.Raw) ([]bson.Raw, error) {
	k, err := countArg("$skip", spec)
	if err != nil {
		return nil, err
	}
	if k < 0 {
		return nil, cerr(15956, "Argument to $skip cannot be negative")
	}
	if k >= int64(len(docs)) {
		return nil, nil
	}
	return docs[k:], nil
}

func stageLimit(p *pipeline, spec bson.RawValue, docs []bson.Raw) ([]bson.Raw, error) {
	k, err := countArg("$limit", spec)
	if err != nil {
		return nil, err
	}
	if k <= 0 {
		return nil, cerr(15958, "the limit must be positive")
	}
	if k < int64(len(docs)) {
		docs = docs[:k]
	}
	return docs, nil
}

func stageCount(p *pipeline, spec bson.RawValue, docs []bson.Raw) ([]bson.Raw, error) {
	name, ok := spec.StringValueOK()
	switch {
	case !ok:
		return nil, cerr(40156, "the count field must be a non-empty string")
	case name == "":
		return nil, cerr(40157, "the count field must be a non-empty string")
	case strings.HasPrefix(name, "$"):
		return nil, cerr(40158, "the count field cannot be a $-prefixed path")
	case strings.Contains(name, "."):
		return nil, cerr(40160, "the count field cannot contain '.'")
	}
	if len(docs) == 0 {
		return nil, nil
	}
	return []bson.Raw{mustRaw(bson.D{{Key: name, Value: num{kind: 0, i: int64(len(docs))}.value()}})}, nil
}

func stageSample(p *pipeline, spec bson.RawValue, docs []bson.Raw) ([]bson.Raw, error) {
	d, ok := spec.DocumentOK()
	if !ok {
		return nil, cerr(28745, "the $sample stage specification must be an object")
	}
	els, _ := d.Elements()
	size := int64(-1)
	for _, e := range els {
		if e.Key() != "size" {
			return nil, cerr(28748, "unrecognized option to $sample: %s", e.Key())
		}
		if !isArith(e.Value()) {
			return nil, cerr(28746, "size argument to $sample must be a number")
		}
		size = int64(toNum(e.Value()).float())
		if size < 0 {
			return nil, cerr(28747, "size argument to $sample must not be negative")
		}
	}
	if size < 0 {
		return nil, cerr(28749, "$sample stage must specify a size")
	}
	out := append([]bson.Raw(nil), docs...)
	rand.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	if int64(len(out)) > size {
		out = out[:size]
	}
	return out, nil
}

func stageCollStats(p *pipeline, spec bson.RawValue, _ []bson.Raw) ([]bson.Raw, error) {
	d, _ := spec.DocumentOK()
	cs, e := p.c.n.collStatsStage(p.db, p.coll, d)
	if e != nil {
		return nil, e
	}
	return []bson.Raw{mustRaw(cs)}, nil
}

// stageCurrentOp lists the operations in progress ({aggregate: 1} on admin).
func stageCurrentOp(p *pipeline, spec bson.RawValue, _ []bson.Raw) ([]bson.Raw, error) {
	return p.c.currentOpStage(p.req, spec)
}

func stageDocuments(p *pipeline, spec bson.RawValue, docs []bson.Raw) ([]bson.Raw, error) {
	v, err := p.ctx(emptyDoc).eval(spec)
	if err != nil {
		return nil, err
	}
	el, ok := arrayElems(v)
	if !ok {
		return nil, cerr(5858203, "error during $documents stage :: caused by :: an array is expected")
	}
	var out []bson.Raw
	for _, e := range el {
		d, ok := e.DocumentOK()
		if !ok {
			return nil, cerr(40228, "'replacement document' must evaluate to an object, but resulting value was: %s. Type of resulting value: '%s'.", e.String(), exprTypeName(e))
		}
		out = append(out, d)
	}
	return out, nil
}
