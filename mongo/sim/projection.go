package sim

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// projAction is what a projection does at one path.
type projAction int

const (
	projInternal projAction = iota // a prefix of longer paths
	projInclude
	projExclude
	projSlice
	projElemMatch
	projPositional
	projExpr
	projMeta
)

type projNode struct {
	action   projAction
	arg      bson.RawValue
	match    func(bson.RawValue) bool // $elemMatch, on one element
	children map[string]*projNode
	order    []string
}

func (n *projNode) child(k string) *projNode {
	if n.children == nil {
		n.children = map[string]*projNode{}
	}
	c, ok := n.children[k]
	if !ok {
		c = &projNode{}
		n.children[k] = c
		n.order = append(n.order, k)
	}
	return c
}

// ProjectionExpr evaluates an aggregation expression of a find projection
// ({field: <expression>}); the aggregation slice provides the full language.
// Until then field paths ("$a.b") and literals are evaluated.
var ProjectionExpr = func(doc bson.Raw, expr bson.RawValue) (bson.RawValue, error) {
	if s, ok := expr.StringValueOK(); ok && strings.HasPrefix(s, "$") {
		return fieldPathValue(bson.RawValue{Type: bson.TypeEmbeddedDocument, Value: doc}, strings.Split(s[1:], ".")), nil
	}
	if d, ok := expr.DocumentOK(); ok {
		if lit, err := d.LookupErr("$literal"); err == nil {
			return lit, nil
		}
		return bson.RawValue{}, cerr(2, "projection expression %s is not supported by the simulator", showDoc(d))
	}
	return expr, nil
}

// fieldPathValue is an aggregation field path's value: through arrays it
// is the array of the values found in their elements.
func fieldPathValue(v bson.RawValue, parts []string) bson.RawValue {
	if len(parts) == 0 {
		return v
	}
	switch v.Type {
	case bson.TypeEmbeddedDocument:
		child, err := v.Document().LookupErr(parts[0])
		if err != nil {
			return bson.RawValue{}
		}
		return fieldPathValue(child, parts[1:])
	case bson.TypeArray:
		vals, _ := v.Array().Values()
		out := bson.A{}
		for _, x := range vals {
			if r := fieldPathValue(x, parts); r.Type != 0 {
				out = append(out, r)
			}
		}
		return toRaw(out)
	}
	return bson.RawValue{}
}

// Projection is a parsed find projection.
type Projection struct {
	root      projNode
	inclusion bool
	idOut     bool
	query     bson.Raw

	// what parsing has seen, for mongod's rules on the projection's type
	mode                  string // "", "inclusion", "exclusion"
	idIn, idSpecified     bool
	positional, elemMatch bool
	hasSlice, hasMeta     bool
}

// Project applies a find projection to one document; query is the find's
// filter, which the positional projection (field.$) needs.
func Project(doc, spec, query bson.Raw) (bson.Raw, error) {
	p, err := ParseProjection(spec, query)
	if err != nil {
		return nil, err
	}
	return p.Apply(doc)
}

// Apply projects one document.
func (p *Projection) Apply(doc bson.Raw) (bson.Raw, error) {
	if len(p.root.children) == 0 && !p.inclusion {
		return doc, nil
	}
	out, err := p.apply(doc, doc, &p.root, true)
	if err != nil {
		return nil, err
	}
	return bson.Marshal(out)
}

func (p *Projection) apply(root, doc bson.Raw, n *projNode, top bool) (bson.D, error) {
	out := bson.D{}
	elems, _ := doc.Elements()
	for _, e := range elems {
		k, v := e.Key(), e.Value()
		c := n.children[k]
		if top && k == "_id" && (c == nil || c.action == projInclude || c.action == projExclude) {
			if !p.idOut {
				out = append(out, bson.E{Key: k, Value: v})
			}
			continue
		}
		if c == nil {
			if !p.inclusion {
				out = append(out, bson.E{Key: k, Value: v})
			}
			continue
		}
		nv, keep, err := p.applyValue(root, v, c)
		if err != nil {
			return nil, err
		}
		if keep {
			out = append(out, bson.E{Key: k, Value: nv})
		}
	}
	// computed fields follow, in the projection's order, under new
	// sub-documents where their parents are missing
	for _, k := range n.order {
		c := n.children[k]
		if c.action == projInternal && c.computes() && !hasKey(out, k) {
			if d, err := p.apply(root, emptyDoc, c, false); err != nil {
				return nil, err
			} else if len(d) > 0 {
				out = append(out, bson.E{Key: k, Value: d})
			}
			continue
		}
		if c.action != projExpr {
			continue // $meta: no text or search score to report
		}
		v, err := ProjectionExpr(root, c.arg)
		if err != nil {
			return nil, err
		}
		if v.Type != 0 {
			out = removeKey(out, k)
			out = append(out, bson.E{Key: k, Value: v})
		}
	}
	return out, nil
}

// computes: the subtree holds an expression.
func (n *projNode) computes() bool {
	if n.action == projExpr {
		return true
	}
	for _, c := range n.children {
		if c.computes() {
			return true
		}
	}
	return false
}

func hasKey(d bson.D, k string) bool {
	for _, e := range d {
		if e.Key == k {
			return true
		}
	}
	return false
}

func removeKey(d bson.D, k string) bson.D {
	for i, e := range d {
		if e.Key == k {
			return append(d[:i:i], d[i+1:]...)
		}
	}
	return d
}

// applyValue projects one field's value under node c; keep=false drops it.
func (p *Projection) applyValue(root bson.Raw, v bson.RawValue, c *projNode) (any, bool, error) {
	switch c.action {
	case projInclude:
		return v, true, nil
	case projExclude, projExpr, projMeta:
		return nil, false, nil
	case projSlice:
		return sliceValue(v, c.arg), true, nil
	case projElemMatch:
		arr, ok := v.ArrayOK()
		if !ok {
			return nil, false, nil
		}
		vals, _ := arr.Values()
		for _, x := range vals {
			if c.match(x) {
				return bson.A{x}, true, nil
			}
		}
		return nil, false, nil
	case projPositional:
		arr, ok := v.ArrayOK()
		if !ok {
			return v, true, nil
		}
		vals, _ := arr.Values()
		i, err := p.positionalIndex(root, c, vals)
		if err != nil {
			return nil, false, err
		}
		return bson.A{vals[i]}, true, nil
	}
	// an inner node: project sub-documents, and the documents in arrays
	switch v.Type {
	case bson.TypeEmbeddedDocument:
		d, err := p.apply(root, v.Document(), c, false)
		return d, err == nil, err
	case bson.TypeArray:
		vals, _ := v.Array().Values()
		out := bson.A{}
		for _, x := range vals {
			nv, keep, err := p.applyValue(root, x, c)
			if err != nil {
				return nil, false, err
			}
			if keep {
				out = append(out, nv)
			}
		}
		return out, true, nil
	}
	return v, !p.inclusion, nil
}

func sliceValue(v, arg bson.RawValue) any {
	arr, ok := v.ArrayOK()
	if !ok {
		return v
	}
	vals, _ := arr.Values()
	skip, limit := 0, len(vals)
	if a, ok := arg.ArrayOK(); ok {
		av, _ := a.Values()
		skip, limit = int(truncInt(av[0])), int(truncInt(av[1]))
		if skip < 0 {
			skip = max(len(vals)+skip, 0)
		}
	} else if n := int(truncInt(arg)); n >= 0 {
		limit = n
	} else {
		skip = max(len(vals)+n, 0)
	}
	skip = min(skip, len(vals))
	end := min(skip+limit, len(vals))
	out := bson.A{}
	for _, x := range vals[skip:end] {
		out = append(out, x)
	}
	return out
}

// positionalIndex finds the first element of the array that makes the
// query match, as mongod records it while matching.
func (p *Projection) positionalIndex(root bson.Raw, c *projNode, vals []bson.RawValue) (int, error) {
	noMatch := cerr(51246, "Executor error during find command :: caused by :: positional operator '.$' couldn't find a matching element in the array")
	if p.query == nil {
		return 0, noMatch
	}
	path := p.pathOf(c)
	f, err := ParseFilter(p.query)
	if err != nil {
		return 0, err
	}
	var d bson.D
	if err := bson.Unmarshal(root, &d); err != nil {
		return 0, err
	}
	arr := make(bson.A, len(vals))
	for i, v := range vals {
		arr[i] = v
	}
	if i, ok := matchedElement(f, d, path, arr); ok {
		return i, nil
	}
	return 0, noMatch
}

func (p *Projection) pathOf(target *projNode) []string {
	var walk func(n *projNode, prefix []string) []string
	walk = func(n *projNode, prefix []string) []string {
		for _, k := range n.order {
			c := n.children[k]
			path := append(append([]string{}, prefix...), k)
			if c == target {
				return path
			}
			if r := walk(c, path); r != nil {
				return r
			}
		}
		return nil
	}
	return walk(&p.root, nil)
}

// replacePath returns a copy of d with the value at a path of documents
// replaced.
func replacePath(d bson.D, path []string, v any) (bson.D, error) {
	out := append(bson.D{}, d...)
	for i, e := range out {
		if e.Key != path[0] {
			continue
		}
		if len(path) == 1 {
			out[i].Value = v
			return out, nil
		}
		sub, ok := e.Value.(bson.D)
		if !ok {
			return nil, cerr(2, "not a document")
		}
		nv, err := replacePath(sub, path[1:], v)
		if err != nil {
			return nil, err
		}
		out[i].Value = nv
		return out, nil
	}
	return nil, cerr(2, "missing")
}
