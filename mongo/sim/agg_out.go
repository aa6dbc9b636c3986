package sim

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// The writing stages $out and $merge: their writes are oplog entries written
// on the primary in one batch, as every other write.

// outputStages must end a pipeline and may not appear in $lookup or $facet.
var outputStages = map[string]bool{"$out": true, "$merge": true}

// outTarget reads $out's and $merge's target: "coll" or {db, coll}.
func outTarget(stage, field string, v bson.RawValue, defaultDB string) (string, string, error) {
	db, coll := defaultDB, ""
	switch v.Type {
	case bson.TypeString:
		coll = v.StringValue()
	case bson.TypeEmbeddedDocument:
		els, _ := v.Document().Elements()
		for _, e := range els {
			s, ok := e.Value().StringValueOK()
			if !ok {
				return "", "", cerr(13111, "BSON field '%s.%s.%s' is the wrong type '%s', expected type 'string'", stage, field, e.Key(), exprTypeName(e.Value()))
			}
			switch e.Key() {
			case "db":
				db = s
			case "coll":
				coll = s
			default:
				return "", "", cerr(40415, "BSON field '%s.%s.%s' is an unknown field.", stage, field, e.Key())
			}
		}
	default:
		return "", "", cerr(16990, "%s only supports a string or object argument, not %s", stage, exprTypeName(v))
	}
	switch {
	case coll == "":
		return "", "", cerr(73, "Invalid %s target namespace, %s.%s", stage, db, coll)
	case db == "admin" || db == "local" || db == "config":
		return "", "", cerr(31321, "Can't %s to internal database: %s", strings.TrimPrefix(stage, "$"), db)
	case strings.HasPrefix(coll, "system."):
		return "", "", cerr(17385, "Can't %s to special collection: %s", strings.TrimPrefix(stage, "$"), coll)
	}
	return db, coll, nil
}

// write applies ops built under the node's lock from the target's current documents.
func (p *pipeline) write(build func(target []bson.Raw) ([]opSpec, error), db, coll string) error {
	n := p.c.n
	n.mu.Lock()
	defer n.mu.Unlock()
	ops, err := build(n.data.Coll(db, coll, false).Docs())
	if err != nil || len(ops) == 0 {
		return err
	}
	if _, err := n.writeOplogLocked(ops, false); err != nil {
		return cerr(10107, "not primary")
	}
	p.wrote = true
	return nil
}

func idDupKeyError(ns string, id bson.RawValue) error {
	return cerr(11000, "E11000 duplicate key error collection: %s index: _id_ dup key: { _id: %s }", ns, id.String())
}

func stageOut(p *pipeline, spec bson.RawValue, docs []bson.Raw) ([]bson.Raw, error) {
	db, coll, err := outTarget("$out", "", spec, p.db)
	if err != nil {
		return nil, err
	}
	ns := db + "." + coll
	return nil, p.write(func(target []bson.Raw) ([]opSpec, error) {
		var ops []opSpec
		if target != nil || p.c.n.data.Coll(db, coll, false) != nil {
			ops = append(ops, opSpec{op: "c", ns: db + ".$cmd", o: mustRaw(bson.D{{Key: "drop", Value: coll}})})
		}
		ops = append(ops, opSpec{op: "c", ns: db + ".$cmd", o: mustRaw(bson.D{{Key: "create", Value: coll}})})
		seen := map[string]bool{}
		for _, d := range docs {
			d = idFirst(d)
			k := groupKey(d.Lookup("_id"))
			if seen[k] {
				return nil, idDupKeyError(ns, d.Lookup("_id"))
			}
			seen[k] = true
			ops = append(ops, opSpec{op: "i", ns: ns, o: d})
		}
		return ops, nil
	}, db, coll)
}

// mergeSpec is a parsed $merge.
type mergeSpec struct {
	db, coll       string
	on             []string
	whenMatched    string
	matchedPipe    []bson.RawValue
	whenNotMatched string
	let            bson.Raw
}

func parseMerge(spec bson.RawValue, defaultDB string) (*mergeSpec, error) {
	m := &mergeSpec{on: []string{"_id"}, whenMatched: "merge", whenNotMatched: "insert"}
	if spec.Type == bson.TypeString {
		m.db, m.coll = defaultDB, spec.StringValue()
		return m, nil
	}
	d, ok := spec.DocumentOK()
	if !ok {
		return nil, cerr(51182, "$merge only supports a string or object argument, not %s", exprTypeName(spec))
	}
	into, err := d.LookupErr("into")
	if err != nil {
		return nil, cerr(40414, "BSON field '$merge.into' is missing but a required field")
	}
	if m.db, m.coll, err = outTarget("$merge", "into", into, defaultDB); err != nil {
		return nil, err
	}
	els, _ := d.Elements()
	for _, e := range els {
		v := e.Value()
		switch e.Key() {
		case "into":
		case "on":
			var fields []bson.RawValue
			if v.Type == bson.TypeString {
				fields = []bson.RawValue{v}
			} else if fields, ok = arrayElems(v); !ok || len(fields) == 0 {
				return nil, cerr(51186, "$merge 'on' field must be either a string or an array of strings, but found %s", exprTypeName(v))
			}
			m.on = nil
			for _, f := range fields {
				s, ok := f.StringValueOK()
				if !ok {
					return nil, cerr(51134, "$merge 'on' array elements must be strings, but found %s", exprTypeName(f))
				}
				m.on = append(m.on, s)
			}
		case "whenMatched":
			if pipe, ok := arrayElems(v); ok {
				m.whenMatched, m.matchedPipe = "pipeline", pipe
				if _, err := parseDocUpdate(v, nil); err != nil {
					return nil, err
				}
				break
			}
			s, _ := v.StringValueOK()
			switch s {
			case "replace", "keepExisting", "merge", "fail":
				m.whenMatched = s
			default:
				return nil, cerr(2, "Enumeration value '%s' for field '$merge.whenMatched' is not a valid value.", s)
			}
		case "whenNotMatched":
			s, _ := v.StringValueOK()
			switch s {
			case "insert", "discard", "fail":
				m.whenNotMatched = s
			default:
				return nil, cerr(2, "Enumeration value '%s' for field '$merge.whenNotMatched' is not a valid value.", s)
			}
		case "let":
			if m.let, ok = v.DocumentOK(); !ok {
				return nil, cerr(14, "BSON field '$merge.let' is the wrong type '%s', expected type 'object'", exprTypeName(v))
			}
		default:
			return nil, cerr(40415, "BSON field '$merge.%s' is an unknown field.", e.Key())
		}
	}
	return m, nil
}

// onKey is the text of a document's 'on' fields, or an error when one is unusable.
func (m *mergeSpec) onKey(d bson.Raw) (string, error) {
	var b strings.Builder
	for _, f := range m.on {
		v := lookupPath(d, f)
		if nullish(v) || v.Type == bson.TypeArray {
			return "", cerr(51132, "$merge write error: 'on' field '%s' cannot be missing, null, undefined or an array", f)
		}
		b.WriteString(groupKey(v) + ";")
	}
	return b.String(), nil
}

func stageMerge(p *pipeline, spec bson.RawValue, docs []bson.Raw) ([]bson.Raw, error) {
	m, err := parseMerge(spec, p.db)
	if err != nil {
		return nil, err
	}
	ns := m.db + "." + m.coll
	return nil, p.write(func(target []bson.Raw) ([]opSpec, error) {
		byOn := map[string]bson.Raw{}
		for _, t := range target {
			if k, err := m.onKey(t); err == nil {
				byOn[k] = t
			}
		}
		var ops []opSpec
		for _, d := range docs {
			if d.Lookup("_id").Type == 0 {
				d = idFirst(d)
			}
			k, err := m.onKey(d)
			if err != nil {
				return nil, err
			}
			old, matched := byOn[k]
			var nd bson.Raw
			switch {
			case !matched && m.whenNotMatched == "discard":
				continue
			case !matched && m.whenNotMatched == "fail":
				return nil, cerr(13113, "$merge could not find a matching document in the target collection for at least one document in the source collection")
			case !matched:
				nd = idFirst(d)
				ops = append(ops, opSpec{op: "i", ns: ns, o: nd})
				byOn[k] = nd
				continue
			case m.whenMatched == "keepExisting":
				continue
			case m.whenMatched == "fail":
				return nil, cerr(11000, "$merge with whenMatched: fail found an existing document with the same values for the 'on' field: %s", d.String())
			case m.whenMatched == "replace":
				nd = d
			case m.whenMatched == "merge":
				merged, err := mergeObjects([]bson.RawValue{docValue(old), docValue(d)})
				if err != nil {
					return nil, err
				}
				nd = merged.Document()
			default: // pipeline, with $$new bound to the incoming document
				let := map[string]bson.RawValue{"new": docValue(d)}
				if m.let != nil {
					if let, err = evalLet(p.ctx(d), m.let); err != nil {
						return nil, err
					}
				}
				if nd, err = applyPipelineUpdate(old, m.matchedPipe, let); err != nil {
					return nil, err
				}
			}
			if id := nd.Lookup("_id"); id.Type != 0 && groupKey(id) != groupKey(old.Lookup("_id")) {
				return nil, cerr(66, "$merge failed to update the matching document, did you attempt to modify the _id or the shard key? :: caused by :: Performing an update on the path '_id' would modify the immutable field '_id'")
			}
			nd = mustRaw(append(bson.D{{Key: "_id", Value: old.Lookup("_id")}}, withoutID(nd)...))
			ops = append(ops, opSpec{op: "u", ns: ns, o: nd, o2: mustRaw(bson.D{{Key: "_id", Value: old.Lookup("_id")}})})
			byOn[k] = nd
		}
		return ops, nil
	}, m.db, m.coll)
}

func withoutID(d bson.Raw) bson.D {
	out := bson.D{}
	for _, e := range rawFields(d) {
		if e.Key != "_id" {
			out = append(out, e)
		}
	}
	return out
}

// checkOutputStage refuses $out/$merge anywhere but at the end of a top-level pipeline.
func checkOutputStage(name string, i, n int, nested string) error {
	if !outputStages[name] {
		return nil
	}
	if nested != "" {
		return cerr(51047, "%s is not allowed within a %s", name, nested)
	}
	if i != n-1 {
		return cerr(40601, "%s can only be the final stage in the pipeline", name)
	}
	return nil
}
