package sim

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Updates with an aggregation pipeline (u: [{$set: ...}, {$unset: ...}]).

// updateStages are the stages mongod allows in an update pipeline.
var updateStages = map[string]bool{"$addFields": true, "$set": true, "$project": true, "$unset": true,
	"$replaceRoot": true, "$replaceWith": true}

// docUpdate is what one update statement does to a document: update
// operators or a replacement (*Update), or an aggregation pipeline.
type docUpdate interface {
	Apply(doc, query bson.Raw, inserting bool) (bson.Raw, error)
	Upsert(query bson.Raw) (bson.Raw, error)
}

// pipelineUpdate is an update by aggregation pipeline, with its variables.
type pipelineUpdate struct {
	specs []bson.RawValue
	let   map[string]bson.RawValue
}

func (p pipelineUpdate) Apply(doc, _ bson.Raw, _ bool) (bson.Raw, error) {
	return applyPipelineUpdate(doc, p.specs, p.let)
}

// Upsert runs the pipeline on the query's equality fields, as mongod seeds
// an upserted document.
func (p pipelineUpdate) Upsert(query bson.Raw) (bson.Raw, error) {
	seed, err := seedFromQuery(bson.D{}, query)
	if err != nil {
		return nil, err
	}
	nd, err := applyPipelineUpdate(mustRaw(seed), p.specs, p.let)
	if err != nil {
		return nil, err
	}
	if nd.Lookup("_id").Type == 0 {
		nd = mustRaw(append(bson.D{{Key: "_id", Value: bson.NewObjectID()}}, rawFields(nd)...))
	}
	return idFirst(nd), nil
}

// parseDocUpdate parses an update's u (operators or replacement document,
// or a pipeline) with its arrayFilters and the pipeline's variables (the
// command's let, then the statement's constants c).
func parseDocUpdate(u bson.RawValue, arrayFilters []bson.Raw, vars ...bson.Raw) (docUpdate, error) {
	if spec, ok := u.DocumentOK(); ok {
		return ParseUpdate(spec, arrayFilters)
	}
	specs, ok := arrayElems(u)
	if !ok {
		return nil, cerr(14, "Update argument must be either an object or an array")
	}
	if len(arrayFilters) > 0 {
		return nil, cerr(72, "arrayFilters may not be specified for pipeline-style updates")
	}
	for _, s := range specs {
		d, ok := s.DocumentOK()
		if !ok {
			return nil, cerr(14, "Each element of the 'pipeline' array must be an object")
		}
		els, _ := d.Elements()
		if len(els) != 1 {
			return nil, cerr(40323, "A pipeline stage specification object must contain exactly one field.")
		}
		if _, known := stages[els[0].Key()]; !known {
			return nil, cerr(40324, "Unrecognized pipeline stage name: '%s'", els[0].Key())
		}
		if !updateStages[els[0].Key()] {
			return nil, cerr(72, "%s is not allowed to be used within an update", els[0].Key())
		}
	}
	let := map[string]bson.RawValue{}
	for _, d := range vars {
		if d == nil {
			continue
		}
		m, err := evalLet(newEvalCtx(emptyDoc, time.Now(), nil), d)
		if err != nil {
			return nil, err
		}
		for k, v := range m {
			let[k] = v
		}
	}
	return pipelineUpdate{specs: specs, let: let}, nil
}

// applyPipelineUpdate runs the stages on one document; _id may not change
// and is kept when a stage drops it.
func applyPipelineUpdate(doc bson.Raw, specs []bson.RawValue, let map[string]bson.RawValue) (bson.Raw, error) {
	p := &pipeline{now: time.Now(), let: let}
	out, err := p.run([]bson.Raw{doc}, specs)
	if err != nil {
		return nil, err
	}
	nd := out[0]
	id, had := doc.Lookup("_id"), doc.Lookup("_id").Type != 0
	nid := nd.Lookup("_id")
	switch {
	case nid.Type == 0 && had:
		nd = mustRaw(append(bson.D{{Key: "_id", Value: id}}, rawFields(nd)...))
	case had && (typeOrder(nid.Type) != typeOrder(id.Type) || compareValues(nid, id) != 0):
		return nil, cerr(66, "Performing an update on the path '_id' would modify the immutable field '_id'")
	}
	return idFirst(nd), nil
}
