package sim

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// The stages that fan documents out or join them: $unwind, $lookup, $facet, $unionWith, $graphLookup.

func stageUnwind(p *pipeline, spec bson.RawValue, docs []bson.Raw) ([]bson.Raw, error) {
	var path, indexField string
	preserve := false
	switch spec.Type {
	case bson.TypeString:
		path = spec.StringValue()
	case bson.TypeEmbeddedDocument:
		els, _ := spec.Document().Elements()
		for _, e := range els {
			v := e.Value()
			switch e.Key() {
			case "path":
				s, ok := v.StringValueOK()
				if !ok {
					return nil, cerr(28808, "expected a string as the path for $unwind stage, got %s", exprTypeName(v))
				}
				path = s
			case "includeArrayIndex":
				s, ok := v.StringValueOK()
				if !ok || s == "" {
					return nil, cerr(28810, "expected a non-empty string for the includeArrayIndex  option to $unwind stage, got %s", exprTypeName(v))
				}
				if strings.HasPrefix(s, "$") {
					return nil, cerr(28822, "includeArrayIndex option to $unwind stage should not be prefixed with a '$': %s", s)
				}
				indexField = s
			case "preserveNullAndEmptyArrays":
				b, ok := v.BooleanOK()
				if !ok {
					return nil, cerr(28809, "expected a boolean for the preserveNullAndEmptyArrays option to $unwind stage, got %s", exprTypeName(v))
				}
				preserve = b
			default:
				return nil, cerr(28811, "unrecognized option to $unwind stage: %s", e.Key())
			}
		}
	default:
		return nil, cerr(15981, "expected either a string or an object as specification for $unwind stage, got %s", exprTypeName(spec))
	}
	if path == "" {
		return nil, cerr(28812, "no path specified to $unwind stage")
	}
	if !strings.HasPrefix(path, "$") {
		return nil, cerr(28818, "path option to $unwind stage should be prefixed with a '$': %s", path)
	}
	parts := strings.Split(path[1:], ".")
	for _, part := range parts {
		if err := checkFieldName(part); err != nil {
			return nil, err
		}
	}
	var idxPath []string
	if indexField != "" {
		idxPath = strings.Split(indexField, ".")
	}
	var out []bson.Raw
	for _, d := range docs {
		v := lookupPath(d, path[1:]) // through sub-documents only, not arrays
		el, isArr := arrayElems(v)
		switch {
		case isArr && len(el) > 0:
			for i, e := range el {
				nd := setRaw(d, parts, e)
				if idxPath != nil {
					nd = setRaw(nd, idxPath, val(int64(i)))
				}
				out = append(out, nd)
			}
		case isArr || nullish(v):
			if preserve {
				nd := d
				if isArr {
					nd = setRaw(d, parts, missing)
				}
				if idxPath != nil {
					nd = setRaw(nd, idxPath, nullValue)
				}
				out = append(out, nd)
			}
		default: // a scalar unwinds to itself
			nd := d
			if idxPath != nil {
				nd = setRaw(nd, idxPath, nullValue)
			}
			out = append(out, nd)
		}
	}
	return out, nil
}

// lookupSpec is a parsed $lookup.
type lookupSpec struct {
	from, as, local, foreign string
	let                      bson.Raw
	pipeline                 []bson.RawValue
	hasPipeline              bool
}

// parseLookup reads $lookup's arguments in mongod's order, with its messages.
func parseLookup(spec bson.RawValue) (*lookupSpec, error) {
	s, ok := spec.DocumentOK()
	if !ok {
		return nil, cerr(codeFailedToParse, "the $lookup specification must be an Object")
	}
	l := &lookupSpec{}
	hasLet := false
	els, _ := s.Elements()
	for _, e := range els {
		v := e.Value()
		switch e.Key() {
		case "pipeline":
			arr, ok := arrayElems(v)
			if !ok {
				return nil, cerr(codeFailedToParse, "'pipeline' option must be specified as an array")
			}
			l.pipeline, l.hasPipeline = arr, true
			continue
		case "let":
			d, ok := v.DocumentOK()
			if !ok {
				return nil, cerr(codeFailedToParse, "$lookup argument 'let: %s' must be an object, is type %s", v.String(), exprTypeName(v))
			}
			l.let, hasLet = d, true
			continue
		case "from":
			str, ok := v.StringValueOK()
			if !ok {
				return nil, cerr(codeFailedToParse, "$lookup 'from' field must be a string, but found %s", exprTypeName(v))
			}
			l.from = str
			continue
		}
		str, ok := v.StringValueOK()
		if !ok {
			return nil, cerr(codeFailedToParse, "$lookup argument '%s: %s' must be a string, found %s: %s", e.Key(), v.String(), v.String(), exprTypeName(v))
		}
		switch e.Key() {
		case "as":
			l.as = str
		case "localField":
			l.local = str
		case "foreignField":
			l.foreign = str
		default:
			return nil, cerr(codeFailedToParse, "unknown argument to $lookup: %s", e.Key())
		}
	}
	switch {
	case l.from == "" && !l.hasPipeline:
		return nil, cerr(codeFailedToParse, "must specify 'pipeline' when 'from' is empty")
	case l.from == "" && firstStage(l.pipeline) != "$documents":
		return nil, cerr(codeFailedToParse, "$lookup stage without explicit collection must have a pipeline with $documents as first stage")
	case l.as == "":
		return nil, cerr(codeFailedToParse, "must specify 'as' field for a $lookup")
	case l.hasPipeline && (l.local == "") != (l.foreign == ""):
		return nil, cerr(codeFailedToParse, "$lookup requires both or neither of 'localField' and 'foreignField' to be specified")
	case !l.hasPipeline && (l.local == "" || l.foreign == ""):
		return nil, cerr(codeFailedToParse, "$lookup requires either 'pipeline' or both 'localField' and 'foreignField' to be specified")
	case !l.hasPipeline && hasLet:
		return nil, cerr(codeFailedToParse, "$lookup with a 'let' argument must also specify 'pipeline'")
	}
	if err := checkStageSpecs(l.pipeline, false, "$lookup's sub-pipeline"); err != nil {
		return nil, err
	}
	return l, nil
}

func stageLookup(p *pipeline, spec bson.RawValue, docs []bson.Raw) ([]bson.Raw, error) {
	l, err := parseLookup(spec)
	if err != nil {
		return nil, err
	}
	from, as, local, foreign, letDoc, sub, hasPipeline := l.from, l.as, l.local, l.foreign, l.let, l.pipeline, l.hasPipeline
	var foreignDocs []bson.Raw
	if from != "" {
		if foreignDocs, err = p.c.n.matching(p.req, p.db, from, nil); err != nil {
			return nil, err
		}
	}
	asPath := strings.Split(as, ".")
	out := make([]bson.Raw, len(docs))
	for i, d := range docs {
		matched := foreignDocs
		if local != "" {
			var keys []bson.RawValue
			lookupValues(docValue(d), strings.Split(local, "."), &keys)
			if len(keys) == 0 { // missing or empty: matches a null or missing foreign field
				keys = []bson.RawValue{nullValue}
			}
			in := mustRaw(bson.D{{Key: foreign, Value: bson.D{{Key: "$in", Value: arrayValue(keys)}}}})
			matched = nil
			for _, f := range foreignDocs {
				ok, err := Match(f, in)
				if err != nil {
					return nil, exprError(err)
				}
				if ok {
					matched = append(matched, f)
				}
			}
		}
		if hasPipeline {
			inner := &pipeline{c: p.c, req: p.req, db: p.db, coll: from, now: p.now, let: map[string]bson.RawValue{}, nested: "$lookup's sub-pipeline", version: p.version}
			for k, v := range p.let {
				inner.let[k] = v
			}
			if letDoc != nil {
				vars, err := evalLet(p.ctx(d), letDoc)
				if err != nil {
					return nil, err
				}
				for k, v := range vars {
					inner.let[k] = v
				}
			}
			var err error
			if matched, err = inner.run(append([]bson.Raw(nil), matched...), sub); err != nil {
				return nil, err
			}
		}
		arr := make([]bson.RawValue, len(matched))
		for j, m := range matched {
			arr[j] = docValue(m)
		}
		out[i] = setRaw(d, asPath, arrayValue(arr))
	}
	return out, nil
}

// codeFailedToParse is mongod's FailedToParse.
const codeFailedToParse = 9

func stageFacet(p *pipeline, spec bson.RawValue, docs []bson.Raw) ([]bson.Raw, error) {
	s, ok := spec.DocumentOK()
	if !ok {
		return nil, cerr(15947, "the $facet specification must be a non-empty object")
	}
	els, _ := s.Elements()
	if len(els) == 0 {
		return nil, cerr(40169, "the $facet specification must be a non-empty object")
	}
	out := bson.D{}
	for _, e := range els {
		if err := checkFieldName(e.Key()); err != nil {
			return nil, err
		}
		sub, ok := arrayElems(e.Value())
		if !ok {
			return nil, cerr(40170, "arguments to $facet must be arrays, %s is type %s", e.Key(), exprTypeName(e.Value()))
		}
		for _, st := range sub {
			switch firstStage([]bson.RawValue{st}) {
			case "$facet", "$collStats", "$documents", "$out", "$merge":
				return nil, cerr(40600, "%s is not allowed to be used within a $facet stage", firstStage([]bson.RawValue{st}))
			}
		}
		res, err := p.run(append([]bson.Raw(nil), docs...), sub)
		if err != nil {
			return nil, err
		}
		arr := make([]bson.RawValue, len(res))
		for j, r := range res {
			arr[j] = docValue(r)
		}
		out = append(out, bson.E{Key: e.Key(), Value: arrayValue(arr)})
	}
	return []bson.Raw{mustRaw(out)}, nil
}

// stageUnionWith appends the documents of another collection, passed through its own pipeline.
func stageUnionWith(p *pipeline, spec bson.RawValue, docs []bson.Raw) ([]bson.Raw, error) {
	var coll string
	var sub []bson.RawValue
	switch spec.Type {
	case bson.TypeString:
		coll = spec.StringValue()
	case bson.TypeEmbeddedDocument:
		els, _ := spec.Document().Elements()
		for _, e := range els {
			switch e.Key() {
			case "coll":
				s, ok := e.Value().StringValueOK()
				if !ok {
					return nil, cerr(14, "BSON field '$unionWith.coll' is the wrong type '%s', expected type 'string'", exprTypeName(e.Value()))
				}
				coll = s
			case "pipeline":
				arr, ok := arrayElems(e.Value())
				if !ok {
					return nil, cerr(14, "BSON field '$unionWith.pipeline' is the wrong type '%s', expected type 'array'", exprTypeName(e.Value()))
				}
				sub = arr
			default:
				return nil, cerr(40415, "BSON field '$unionWith.%s' is an unknown field.", e.Key())
			}
		}
		if coll == "" && firstStage(sub) != "$documents" {
			return nil, cerr(40414, "BSON field '$unionWith.coll' is missing but a required field")
		}
	default:
		return nil, cerr(40155, "the $unionWith stage specification must be an object or string, but found %s", exprTypeName(spec))
	}
	if err := checkStageSpecs(sub, false, "$unionWith sub-pipeline"); err != nil {
		return nil, err
	}
	var other []bson.Raw
	if coll != "" && firstStage(sub) != "$documents" {
		var err error
		if other, err = p.c.n.matching(p.req, p.db, coll, nil); err != nil {
			return nil, err
		}
	}
	inner := &pipeline{c: p.c, req: p.req, db: p.db, coll: coll, now: p.now, let: p.let, nested: "$unionWith sub-pipeline", version: p.version}
	other, err := inner.run(other, sub)
	if err != nil {
		return nil, err
	}
	return append(append([]bson.Raw(nil), docs...), other...), nil
}

// stageGraphLookup follows connectFromField → connectToField breadth first.
func stageGraphLookup(p *pipeline, spec bson.RawValue, docs []bson.Raw) ([]bson.Raw, error) {
	s, ok := spec.DocumentOK()
	if !ok {
		return nil, cerr(40327, "the $graphLookup stage specification must be an object, but found %s", exprTypeName(spec))
	}
	var from, fromField, toField, as, depthField string
	var startWith bson.RawValue
	var restrict bson.Raw
	maxDepth := int64(-1)
	els, _ := s.Elements()
	for _, e := range els {
		v := e.Value()
		switch e.Key() {
		case "startWith":
			startWith = v
		case "maxDepth":
			n, ok := intArg(v)
			if !isArith(v) || !ok || n < 0 {
				return nil, cerr(40101, "maxDepth requires a nonnegative argument, found: %s", v.String())
			}
			maxDepth = n
		case "restrictSearchWithMatch":
			if restrict, ok = v.DocumentOK(); !ok {
				return nil, cerr(40185, "restrictSearchWithMatch must be an object, found %s", exprTypeName(v))
			}
		case "from", "connectFromField", "connectToField", "as", "depthField":
			str, ok := v.StringValueOK()
			if !ok {
				return nil, cerr(40103, "expected string as argument for %s, found: %s", e.Key(), v.String())
			}
			switch e.Key() {
			case "from":
				from = str
			case "connectFromField":
				fromField = str
			case "connectToField":
				toField = str
			case "as":
				as = str
			case "depthField":
				depthField = str
			}
		default:
			return nil, cerr(40104, "Unknown argument to $graphLookup: %s", e.Key())
		}
	}
	if from == "" || fromField == "" || toField == "" || as == "" || startWith.Type == 0 {
		return nil, cerr(40105, "$graphLookup requires 'from', 'as', 'startWith', 'connectFromField', and 'connectToField' to be specified.")
	}
	foreign, err := p.c.n.matching(p.req, p.db, from, restrict)
	if err != nil {
		return nil, err
	}
	out := make([]bson.Raw, len(docs))
	for i, d := range docs {
		start, err := p.ctx(d).eval(startWith)
		if err != nil {
			return nil, err
		}
		frontier := []bson.RawValue{start}
		if el, ok := arrayElems(start); ok {
			frontier = el
		}
		seen := map[string]bool{}
		var found []bson.RawValue
		for depth := int64(0); len(frontier) > 0 && (maxDepth < 0 || depth <= maxDepth); depth++ {
			in := mustRaw(bson.D{{Key: toField, Value: bson.D{{Key: "$in", Value: arrayValue(frontier)}}}})
			var next []bson.RawValue
			for _, f := range foreign {
				k := groupKey(f.Lookup("_id"))
				if seen[k] {
					continue
				}
				if m, err := Match(f, in); err != nil || !m {
					continue
				}
				seen[k] = true
				r := f
				if depthField != "" {
					r = setRaw(f, strings.Split(depthField, "."), val(depth))
				}
				found = append(found, docValue(r))
				nv := lookupPath(f, fromField)
				if el, ok := arrayElems(nv); ok {
					next = append(next, el...)
				} else if nv.Type != 0 {
					next = append(next, nv)
				}
			}
			frontier = next
		}
		out[i] = setRaw(d, strings.Split(as, "."), arrayValue(found))
	}
	return out, nil
}

// pathValues collects the values along a path, through arrays of documents
// and expanding a final array, as $lookup's localField does.
func lookupValues(v bson.RawValue, path []string, out *[]bson.RawValue) {
	if len(path) == 0 {
		if el, ok := arrayElems(v); ok {
			*out = append(*out, el...)
		} else if v.Type != 0 {
			*out = append(*out, v)
		}
		return
	}
	switch v.Type {
	case bson.TypeEmbeddedDocument:
		lookupValues(v.Document().Lookup(path[0]), path[1:], out)
	case bson.TypeArray:
		el, _ := arrayElems(v)
		for _, e := range el {
			if e.Type == bson.TypeEmbeddedDocument {
				lookupValues(e, path, out)
			}
		}
	}
}

// lookupPath is the value at a dotted path through sub-documents (array
// positions by number), missing (Type 0) when the path leads nowhere.
func lookupPath(doc bson.Raw, path string) bson.RawValue {
	v, err := doc.LookupErr(strings.Split(path, ".")...)
	if err != nil {
		return bson.RawValue{}
	}
	return v
}
