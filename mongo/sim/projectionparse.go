package sim

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// ParseProjection validates a find projection as mongod does: no mix of
// inclusion and exclusion (31254/31253), no path collisions (31249/31250),
// positional and $elemMatch rules.
func ParseProjection(spec, query bson.Raw) (*Projection, error) {
	p := &Projection{query: query}
	if err := p.parseDoc(spec, ""); err != nil {
		return nil, err
	}
	switch {
	case p.mode != "":
		p.inclusion = p.mode == "inclusion"
	case p.hasSlice || p.hasMeta:
		p.inclusion = p.idIn
	case p.elemMatch:
		p.inclusion = true
	default:
		p.inclusion = p.idIn
	}
	return p, nil
}

func (p *Projection) parseDoc(spec bson.Raw, prefix string) error {
	elems, err := spec.Elements()
	if err != nil {
		return cerr(2, "%v", err)
	}
	for _, e := range elems {
		if err := p.parseElem(prefix+e.Key(), e.Value(), prefix == ""); err != nil {
			return err
		}
	}
	return nil
}

func (p *Projection) setMode(field, m string) error {
	switch {
	case p.mode == "" || p.mode == m:
		p.mode = m
		return nil
	case m == "exclusion":
		return cerr(31254, "Cannot do exclusion on field %s in inclusion projection", field)
	}
	return cerr(31253, "Cannot do inclusion on field %s in exclusion projection", field)
}

func (p *Projection) parseElem(k string, v bson.RawValue, top bool) error {
	if k == "_id" || strings.HasPrefix(k, "_id.") {
		p.idSpecified = true
	}
	positional := strings.Index(k+".", ".$.")
	if positional < 0 && k == "$" {
		positional = 0
	}
	d, isDoc := v.DocumentOK()
	switch {
	case isDoc && positional >= 0:
		return cerr(31271, "positional projection cannot be used with an expression or sub object")
	case isDoc && strings.HasPrefix(firstKey(d), "$"):
		return p.parseOperator(k, d)
	case isDoc:
		return p.parseDoc(d, k+".")
	case v.Type == bson.TypeBoolean || isNumber(v.Type):
		if !truthy(v) {
			if k == "_id" {
				p.idOut = true
			} else if err := p.setMode(k, "exclusion"); err != nil {
				return err
			}
			return p.insert(k, projExclude, v, nil)
		}
		if positional >= 0 {
			return p.parsePositional(k, positional)
		}
		if k == "_id" {
			p.idIn = true
		} else if err := p.setMode(k, "inclusion"); err != nil {
			return err
		}
		return p.insert(k, projInclude, v, nil)
	case positional >= 0:
		return cerr(31308, "positional projection cannot be used with a literal")
	}
	if p.mode == "exclusion" {
		return cerr(31310, "Cannot use an expression %s in an exclusion projection", showElem(k, v))
	}
	p.mode = "inclusion"
	return p.insert(k, projExpr, v, nil)
}

func (p *Projection) parsePositional(k string, at int) error {
	if p.positional {
		return cerr(31276, "Cannot specify more than one positional projection per query.")
	}
	if p.elemMatch {
		return cerr(31256, "Cannot specify positional operator and $elemMatch.")
	}
	path := k[:at]
	if rest := (k + ".")[at+3:]; strings.Contains("."+rest, ".$.") {
		return cerr(31287, "Cannot use positional operator twice: %s", k)
	}
	first, _, _ := strings.Cut(path, ".")
	if !queryMentions(p.query, first) {
		return cerr(31277, "Positional projection '%s' does not match the query document.", k)
	}
	p.positional = true
	if err := p.setMode(k, "inclusion"); err != nil {
		return err
	}
	return p.insert(path, projPositional, bson.RawValue{}, nil)
}

// queryMentions: the query has a predicate on a path whose first component
// is field (what a positional projection needs).
func queryMentions(query bson.Raw, field string) bool {
	elems, _ := query.Elements()
	for _, e := range elems {
		k := e.Key()
		if k == "$and" || k == "$or" || k == "$nor" {
			arr, _ := e.Value().ArrayOK()
			vals, _ := arr.Values()
			for _, x := range vals {
				if sub, ok := x.DocumentOK(); ok && queryMentions(sub, field) {
					return true
				}
			}
			continue
		}
		if first, _, _ := strings.Cut(k, "."); first == field {
			return true
		}
	}
	return false
}

func (p *Projection) parseOperator(k string, d bson.Raw) error {
	op := firstKey(d)
	arg := d.Lookup(op)
	switch op {
	case "$slice":
		if isNumber(arg.Type) || validFindSlice(arg) {
			p.hasSlice = true
			return p.insert(k, projSlice, arg, nil)
		}
		if arg.Type != bson.TypeArray {
			return cerr(28667, "Invalid $slice syntax. The given syntax %s did not match the find() syntax because :: Location31273: $slice only supports numbers and [skip, limit] arrays :: The given syntax did not match the expression $slice syntax. :: caused by :: Expression $slice takes at least 2 arguments, and at most 3, but 1 were passed in.", showDoc(d))
		}
	case "$elemMatch":
		if arg.Type != bson.TypeEmbeddedDocument {
			return cerr(31274, "elemMatch: Invalid argument, object required, but got %s", typeName(arg.Type))
		}
		if p.positional {
			return cerr(31255, "Cannot specify positional operator and $elemMatch.")
		}
		if strings.Contains(k, ".") {
			return cerr(31275, "Cannot use $elemMatch projection on a nested field.")
		}
		match, err := elemMatchElement(arg)
		if err != nil {
			return err
		}
		p.elemMatch = true
		return p.insert(k, projElemMatch, arg, match)
	case "$meta":
		p.hasMeta = true
		return p.insert(k, projMeta, arg, nil)
	}
	if p.mode == "exclusion" {
		return cerr(31252, "Cannot use expression other than $meta in exclusion projection")
	}
	p.mode = "inclusion"
	return p.insert(k, projExpr, bson.RawValue{Type: bson.TypeEmbeddedDocument, Value: d}, nil)
}

// validFindSlice: find's [skip, limit] form with a positive limit.
func validFindSlice(v bson.RawValue) bool {
	arr, ok := v.ArrayOK()
	if !ok {
		return false
	}
	vals, _ := arr.Values()
	if len(vals) != 2 || !isNumber(vals[0].Type) || !isNumber(vals[1].Type) {
		return false
	}
	return truncInt(vals[1]) > 0
}

func (p *Projection) insert(path string, action projAction, arg bson.RawValue, match func(bson.RawValue) bool) error {
	parts := strings.Split(path, ".")
	n := &p.root
	for i, part := range parts {
		if n != &p.root && n.action != projInternal {
			return cerr(31249, "Path collision at %s remaining portion %s", path, strings.Join(parts[1:], "."))
		}
		if _, exists := n.children[part]; exists && i == len(parts)-1 {
			return cerr(31250, "Path collision at %s", path)
		}
		n = n.child(part)
	}
	n.action, n.arg, n.match = action, arg, match
	return nil
}
