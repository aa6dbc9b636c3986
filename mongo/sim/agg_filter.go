package sim

import (
	"go.mongodb.org/mongo-driver/v2/bson"
)

// The filtering stages: $match and $redact.

// stageMatch filters with the query language; $expr, also inside $and/$or/$nor,
// sees the pipeline's variables ($lookup's let). The filter is compiled once.
func stageMatch(p *pipeline, spec bson.RawValue, docs []bson.Raw) ([]bson.Raw, error) {
	f, ok := spec.DocumentOK()
	if !ok {
		return nil, cerr(15959, "the match filter must be an expression in an object")
	}
	match, err := p.compileMatch(f)
	if err != nil {
		return nil, exprError(err)
	}
	var out []bson.Raw
	for _, d := range docs {
		keep, err := match(d)
		if err != nil {
			return nil, exprError(err)
		}
		if keep {
			out = append(out, d)
		}
	}
	return out, nil
}

// docMatch is a compiled $match filter.
type docMatch func(d bson.Raw) (bool, error)

// compileMatch compiles $expr and the logical operators here (so $expr sees
// the pipeline's variables) and the rest with ParseFilter.
func (p *pipeline) compileMatch(filter bson.Raw) (docMatch, error) {
	els, _ := filter.Elements()
	parts := make([]docMatch, 0, len(els))
	for _, e := range els {
		subs, isArr := arrayElems(e.Value())
		switch {
		case e.Key() == "$expr":
			expr := e.Value()
			parts = append(parts, func(d bson.Raw) (bool, error) {
				v, err := p.ctx(d).eval(expr)
				return truthy(v), err
			})
		case (e.Key() == "$and" || e.Key() == "$or" || e.Key() == "$nor") && isArr && len(subs) > 0 && allDocs(subs):
			op := e.Key()
			compiled := make([]docMatch, len(subs))
			for i, sub := range subs {
				m, err := p.compileMatch(sub.Document())
				if err != nil {
					return nil, err
				}
				compiled[i] = m
			}
			parts = append(parts, func(d bson.Raw) (bool, error) {
				hits := 0
				for _, m := range compiled {
					ok, err := m(d)
					if err != nil {
						return false, err
					}
					if ok {
						hits++
					}
				}
				return op == "$and" && hits == len(compiled) || op == "$or" && hits > 0 || op == "$nor" && hits == 0, nil
			})
		default:
			f, err := ParseFilter(mustRaw(bson.D{{Key: e.Key(), Value: e.Value()}}))
			if err != nil {
				return nil, err
			}
			parts = append(parts, func(d bson.Raw) (bool, error) { return runFilter(f, d) })
		}
	}
	return func(d bson.Raw) (bool, error) {
		for _, m := range parts {
			if ok, err := m(d); err != nil || !ok {
				return false, err
			}
		}
		return true, nil
	}, nil
}

func allDocs(vals []bson.RawValue) bool {
	for _, v := range vals {
		if v.Type != bson.TypeEmbeddedDocument {
			return false
		}
	}
	return true
}

// stageRedact keeps, prunes or descends into each document level as the expression says.
func stageRedact(p *pipeline, spec bson.RawValue, docs []bson.Raw) ([]bson.Raw, error) {
	var out []bson.Raw
	for _, d := range docs {
		r, keep, err := redact(p.ctx(d), spec, d)
		if err != nil {
			return nil, err
		}
		if keep {
			out = append(out, r)
		}
	}
	return out, nil
}

func redact(x *evalCtx, spec bson.RawValue, doc bson.Raw) (bson.Raw, bool, error) {
	x = x.with("CURRENT", docValue(doc)).with("DESCEND", val("descend")).with("PRUNE", val("prune")).with("KEEP", val("keep"))
	v, err := x.eval(spec)
	if err != nil {
		return nil, false, err
	}
	switch s, _ := v.StringValueOK(); s {
	case "keep":
		return doc, true, nil
	case "prune":
		return nil, false, nil
	case "descend":
	default:
		return nil, false, cerr(17053, "$redact's expression should not return anything aside from the variables $$KEEP, $$DESCEND, and $$PRUNE, but returned %s", v.String())
	}
	out := bson.D{}
	for _, e := range rawFields(doc) {
		fv := e.Value.(bson.RawValue)
		switch fv.Type {
		case bson.TypeEmbeddedDocument:
			r, keep, err := redact(x, spec, fv.Document())
			if err != nil {
				return nil, false, err
			}
			if keep {
				out = append(out, bson.E{Key: e.Key, Value: r})
			}
			continue
		case bson.TypeArray:
			el, _ := arrayElems(fv)
			kept := []bson.RawValue{}
			for _, a := range el {
				if d, ok := a.DocumentOK(); ok {
					r, keep, err := redact(x, spec, d)
					if err != nil {
						return nil, false, err
					}
					if keep {
						kept = append(kept, docValue(r))
					}
					continue
				}
				kept = append(kept, a)
			}
			fv = arrayValue(kept)
		}
		out = append(out, bson.E{Key: e.Key, Value: fv})
	}
	return mustRaw(out), true, nil
}
