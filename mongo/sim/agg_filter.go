package sim

import (
	"go.mongodb.org/mongo-driver/v2/bson"
)

// The filtering stages: $match and $redact.

// stageMatch filters with the query language; $expr, also inside $and/$or/$nor,
// sees the pipeline's variables ($lookup's let).
func stageMatch(p *pipeline, spec bson.RawValue, docs []bson.Raw) ([]bson.Raw, error) {
	f, ok := spec.DocumentOK()
	if !ok {
		return nil, cerr(15959, "the match filter must be an expression in an object")
	}
	var out []bson.Raw
	for _, d := range docs {
		keep, err := p.matches(d, f)
		if err != nil {
			return nil, exprError(err)
		}
		if keep {
			out = append(out, d)
		}
	}
	return out, nil
}

// matches evaluates $expr and the logical operators here and the rest with Match.
func (p *pipeline) matches(d, filter bson.Raw) (bool, error) {
	els, _ := filter.Elements()
	for _, e := range els {
		var ok bool
		var err error
		subs, isArr := arrayElems(e.Value())
		switch {
		case e.Key() == "$expr":
			var v bson.RawValue
			v, err = p.ctx(d).eval(e.Value())
			ok = truthy(v)
		case (e.Key() == "$and" || e.Key() == "$or" || e.Key() == "$nor") && isArr && len(subs) > 0 && allDocs(subs):
			hits := 0
			for _, s := range subs {
				m, err := p.matches(d, s.Document())
				if err != nil {
					return false, err
				}
				if m {
					hits++
				}
			}
			ok = e.Key() == "$and" && hits == len(subs) || e.Key() == "$or" && hits > 0 || e.Key() == "$nor" && hits == 0
		default:
			ok, err = Match(d, mustRaw(bson.D{{Key: e.Key(), Value: e.Value()}}))
		}
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
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
