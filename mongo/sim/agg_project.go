package sim

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// The reshaping stages: $project, $addFields/$set, $unset, $replaceRoot/$replaceWith.

// stageProjNode is one level of a projection: fields kept or dropped, computed
// fields, and sub-projections, in the order the spec names them.
type stageProjNode struct {
	order []string
	leaf  map[string]bool
	exprs map[string]bson.RawValue
	kids  map[string]*stageProjNode
}

func newProjNode() *stageProjNode {
	return &stageProjNode{leaf: map[string]bool{}, exprs: map[string]bson.RawValue{}, kids: map[string]*stageProjNode{}}
}

// projection is a parsed $project: inclusion (with computed fields) or exclusion.
type projection struct {
	root      *stageProjNode
	inclusion bool
}

func projErr(code int32, format string, a ...any) error {
	e := cerr(code, format, a...)
	e.Msg = "Invalid $project :: caused by :: " + e.Msg
	return e
}

// parseProjection reads a $project specification as mongod does.
func parseProjection(spec bson.Raw) (*projection, error) {
	p := &projection{root: newProjNode()}
	mode := 0 // 1 inclusion, -1 exclusion
	idSet := false
	var walk func(n *stageProjNode, d bson.Raw, prefix string) error
	walk = func(n *stageProjNode, d bson.Raw, prefix string) error {
		els, _ := d.Elements()
		for _, e := range els {
			full := prefix + e.Key()
			parts := strings.Split(e.Key(), ".")
			for _, part := range parts {
				if part == "" {
					return projErr(15998, "FieldPath field names may not be empty strings.")
				}
			}
			if strings.HasPrefix(e.Key(), "$") {
				return projErr(16410, "FieldPath field names may not start with '$'. Consider using $getField or $setField.")
			}
			node := n
			for _, part := range parts[:len(parts)-1] {
				if _, isLeaf := node.leaf[part]; isLeaf || node.exprs[part].Type != 0 {
					return projErr(31250, "Path collision at %s", full)
				}
				k, ok := node.kids[part]
				if !ok {
					k = newProjNode()
					node.kids[part] = k
					node.order = append(node.order, part)
				}
				node = k
			}
			last := parts[len(parts)-1]
			if _, dup := node.kids[last]; dup && !isSubSpec(e.Value()) {
				return projErr(31250, "Path collision at %s", full)
			}
			if _, dup := node.leaf[last]; dup {
				return projErr(31250, "Path collision at %s", full)
			}
			v := e.Value()
			isID := prefix == "" && full == "_id"
			switch {
			case v.Type == bson.TypeBoolean || isArith(v):
				on := truthy(v)
				if isID {
					idSet = true
				} else if on && mode < 0 {
					return projErr(31253, "Cannot do inclusion on field %s in exclusion projection", full)
				} else if !on && mode > 0 {
					return projErr(31254, "Cannot do exclusion on field %s in inclusion projection", full)
				} else if on {
					mode = 1
				} else {
					mode = -1
				}
				node.leaf[last] = on
				node.order = append(node.order, last)
			case isSubSpec(v):
				sub := v.Document()
				if len(sub) <= 5 {
					return projErr(51270, "An empty sub-projection is not a valid value. Found empty object at path")
				}
				k, ok := node.kids[last]
				if !ok {
					k = newProjNode()
					node.kids[last] = k
					node.order = append(node.order, last)
				}
				if err := walk(k, sub, full+"."); err != nil {
					return err
				}
			default:
				if mode < 0 {
					return projErr(31252, "Cannot use expression other than $meta in exclusion projection")
				}
				if !isID {
					mode = 1
				}
				node.exprs[last] = v
				node.order = append(node.order, last)
			}
		}
		return nil
	}
	if len(spec) <= 5 {
		return nil, projErr(51272, "projection specification must have at least one field")
	}
	if err := walk(p.root, spec, ""); err != nil {
		return nil, err
	}
	switch {
	case mode != 0:
		p.inclusion = mode > 0
	default: // only _id is named: {_id: 0} excludes it, anything else includes
		p.inclusion = !idSet || p.root.leaf["_id"]
	}
	if _, ok := p.root.leaf["_id"]; !ok && p.root.exprs["_id"].Type == 0 && p.inclusion {
		p.root.leaf["_id"] = true
	}
	return p, nil
}

// isSubSpec: a document that is not an expression is a nested projection.
func isSubSpec(v bson.RawValue) bool {
	d, ok := v.DocumentOK()
	if !ok {
		return false
	}
	e, err := d.IndexErr(0)
	return err != nil || !strings.HasPrefix(e.Key(), "$")
}

func (p *projection) apply(x *evalCtx, doc bson.Raw) (bson.Raw, error) {
	if p.inclusion {
		d, err := includeDoc(x, p.root, doc)
		if err != nil {
			return nil, err
		}
		return mustRaw(d), nil
	}
	return mustRaw(excludeDoc(p.root, doc)), nil
}

func includeDoc(x *evalCtx, n *stageProjNode, doc bson.Raw) (bson.D, error) {
	out := bson.D{}
	els, _ := doc.Elements()
	for _, e := range els {
		k := e.Key()
		if n.leaf[k] {
			out = append(out, bson.E{Key: k, Value: e.Value()})
			continue
		}
		kid, ok := n.kids[k]
		if !ok {
			continue
		}
		v, keep, err := includeValue(x, kid, e.Value())
		if err != nil {
			return nil, err
		}
		if keep {
			out = append(out, bson.E{Key: k, Value: v})
		}
	}
	for _, k := range n.order {
		if ex, ok := n.exprs[k]; ok {
			v, err := x.eval(ex)
			if err != nil {
				return nil, err
			}
			if v.Type != 0 {
				out = setTop(out, k, v)
			}
			continue
		}
		if kid, ok := n.kids[k]; ok && kid.computes() && doc.Lookup(k).Type == 0 {
			sub, err := includeDoc(x, kid, emptyDoc)
			if err != nil {
				return nil, err
			}
			out = append(out, bson.E{Key: k, Value: sub})
		}
	}
	return out, nil
}

func (n *stageProjNode) computes() bool {
	if len(n.exprs) > 0 {
		return true
	}
	for _, k := range n.kids {
		if k.computes() {
			return true
		}
	}
	return false
}

// includeValue projects a sub-document, or each document of an array.
func includeValue(x *evalCtx, n *stageProjNode, v bson.RawValue) (bson.RawValue, bool, error) {
	switch v.Type {
	case bson.TypeEmbeddedDocument:
		d, err := includeDoc(x, n, v.Document())
		return val(d), err == nil, err
	case bson.TypeArray:
		el, _ := arrayElems(v)
		var out []bson.RawValue
		for _, e := range el {
			if e.Type == bson.TypeEmbeddedDocument || e.Type == bson.TypeArray {
				r, _, err := includeValue(x, n, e)
				if err != nil {
					return missing, false, err
				}
				out = append(out, r)
			} else if n.computes() {
				r, _, err := includeValue(x, n, docValue(emptyDoc))
				if err != nil {
					return missing, false, err
				}
				out = append(out, r)
			}
		}
		return arrayValue(out), true, nil
	}
	if n.computes() {
		return includeValue(x, n, docValue(emptyDoc))
	}
	return missing, false, nil
}

func excludeDoc(n *stageProjNode, doc bson.Raw) bson.D {
	out := bson.D{}
	els, _ := doc.Elements()
	for _, e := range els {
		k := e.Key()
		if on, ok := n.leaf[k]; ok && !on {
			continue
		}
		kid, ok := n.kids[k]
		if !ok {
			out = append(out, bson.E{Key: k, Value: e.Value()})
			continue
		}
		out = append(out, bson.E{Key: k, Value: excludeValue(kid, e.Value())})
	}
	return out
}

func excludeValue(n *stageProjNode, v bson.RawValue) bson.RawValue {
	switch v.Type {
	case bson.TypeEmbeddedDocument:
		return val(excludeDoc(n, v.Document()))
	case bson.TypeArray:
		el, _ := arrayElems(v)
		out := make([]bson.RawValue, len(el))
		for i, e := range el {
			out[i] = excludeValue(n, e)
		}
		return arrayValue(out)
	}
	return v
}

func stageProject(p *pipeline, spec bson.RawValue, docs []bson.Raw) ([]bson.Raw, error) {
	s, ok := spec.DocumentOK()
	if !ok {
		return nil, cerr(15969, "$project specification must be an object")
	}
	proj, err := parseProjection(s)
	if err != nil {
		return nil, err
	}
	out := make([]bson.Raw, len(docs))
	for i, d := range docs {
		if out[i], err = proj.apply(p.ctx(d), d); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func stageUnset(p *pipeline, spec bson.RawValue, docs []bson.Raw) ([]bson.Raw, error) {
	var fields []bson.RawValue
	switch spec.Type {
	case bson.TypeString:
		fields = []bson.RawValue{spec}
	case bson.TypeArray:
		fields, _ = arrayElems(spec)
		if len(fields) == 0 {
			return nil, cerr(31119, "$unset specification must be a string or an array with at least one field")
		}
	default:
		return nil, cerr(31002, "$unset specification must be a string or an array")
	}
	d := bson.D{}
	for _, f := range fields {
		s, ok := f.StringValueOK()
		if !ok {
			return nil, cerr(31120, "$unset specification must be a string or an array containing only string values")
		}
		d = append(d, bson.E{Key: s, Value: int32(0)})
	}
	proj, err := parseProjection(mustRaw(d))
	if err != nil {
		return nil, err
	}
	out := make([]bson.Raw, len(docs))
	for i, doc := range docs {
		out[i] = mustRaw(excludeDoc(proj.root, doc))
	}
	return out, nil
}

// addFieldsSpec flattens {a: {b: expr}} into ("a.b", expr) pairs.
func addFieldsSpec(d bson.Raw, prefix string, out *[]bson.E) error {
	els, _ := d.Elements()
	for _, e := range els {
		if err := checkFieldName(e.Key()); err != nil {
			return err
		}
		if sub, ok := e.Value().DocumentOK(); ok && isSubSpec(e.Value()) && len(sub) > 5 {
			if err := addFieldsSpec(sub, prefix+e.Key()+".", out); err != nil {
				return err
			}
			continue
		}
		*out = append(*out, bson.E{Key: prefix + e.Key(), Value: e.Value()})
	}
	return nil
}

// addFields sets each computed field, all evaluated against the input document.
func addFields(x *evalCtx, spec bson.Raw, doc bson.Raw) (bson.Raw, error) {
	var fields []bson.E
	if err := addFieldsSpec(spec, "", &fields); err != nil {
		return nil, err
	}
	vals := make([]bson.RawValue, len(fields))
	for i, f := range fields {
		v, err := x.eval(f.Value.(bson.RawValue))
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	for i, f := range fields {
		doc = setRaw(doc, strings.Split(f.Key, "."), vals[i])
	}
	return doc, nil
}

func stageAddFields(p *pipeline, spec bson.RawValue, docs []bson.Raw) ([]bson.Raw, error) {
	s, ok := spec.DocumentOK()
	if !ok {
		return nil, cerr(40272, "$addFields specification stage must be an object, got %s", exprTypeName(spec))
	}
	out := make([]bson.Raw, len(docs))
	for i, d := range docs {
		r, err := addFields(p.ctx(d), s, d)
		if err != nil {
			return nil, err
		}
		out[i] = r
	}
	return out, nil
}

// setRaw sets path in doc to v (missing v removes it); through arrays it sets
// the field in every element, as $addFields does.
func setRaw(doc bson.Raw, path []string, v bson.RawValue) bson.Raw {
	els, _ := doc.Elements()
	out := bson.D{}
	found := false
	for _, e := range els {
		if e.Key() != path[0] {
			out = append(out, bson.E{Key: e.Key(), Value: e.Value()})
			continue
		}
		found = true
		if len(path) == 1 {
			if v.Type != 0 {
				out = append(out, bson.E{Key: e.Key(), Value: v})
			}
			continue
		}
		out = append(out, bson.E{Key: e.Key(), Value: setIn(e.Value(), path[1:], v)})
	}
	if !found && v.Type != 0 {
		out = append(out, bson.E{Key: path[0], Value: setIn(missing, path[1:], v)})
	}
	return mustRaw(out)
}

func setIn(cur bson.RawValue, path []string, v bson.RawValue) bson.RawValue {
	if len(path) == 0 {
		return v
	}
	switch cur.Type {
	case bson.TypeEmbeddedDocument:
		return docValue(setRaw(cur.Document(), path, v))
	case bson.TypeArray:
		el, _ := arrayElems(cur)
		out := make([]bson.RawValue, len(el))
		for i, e := range el {
			out[i] = setIn(e, path, v)
		}
		return arrayValue(out)
	}
	return docValue(setRaw(emptyDoc, path, v))
}

func replaceRoot(x *evalCtx, expr bson.RawValue, doc bson.Raw) (bson.Raw, error) {
	v, err := x.eval(expr)
	if err != nil {
		return nil, err
	}
	d, ok := v.DocumentOK()
	if !ok {
		shown := v.String()
		if v.Type == 0 {
			shown = "MISSING"
		}
		return nil, cerr(40228, "'replacement document' must evaluate to an object, but resulting value was: %s. Type of resulting value: '%s'. Input document: %s", shown, exprTypeName(v), doc.String())
	}
	return d, nil
}

func stageReplaceRoot(p *pipeline, spec bson.RawValue, docs []bson.Raw) ([]bson.Raw, error) {
	s, ok := spec.DocumentOK()
	if !ok {
		return nil, cerr(40229, "expected an object as specification for $replaceRoot stage, got %s", exprTypeName(spec))
	}
	nr, err := s.LookupErr("newRoot")
	if err != nil {
		return nil, cerr(40231, "no newRoot specified for the $replaceRoot stage")
	}
	els, _ := s.Elements()
	for _, e := range els {
		if e.Key() != "newRoot" {
			return nil, cerr(40415, "BSON field '$replaceRoot.%s' is an unknown field.", e.Key())
		}
	}
	return stageReplaceWith(p, nr, docs)
}

func stageReplaceWith(p *pipeline, spec bson.RawValue, docs []bson.Raw) ([]bson.Raw, error) {
	out := make([]bson.Raw, len(docs))
	for i, d := range docs {
		r, err := replaceRoot(p.ctx(d), spec, d)
		if err != nil {
			return nil, err
		}
		out[i] = r
	}
	return out, nil
}
