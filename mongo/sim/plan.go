package sim

import (
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// viaIndex narrows a filter through an index, as mongod's planner
// would: an equality or $in on _id (the document map) or on the first
// field of an index that is neither partial nor hidden (a sparse index
// holds every document with the field, which a non-null equality needs).
// It returns a superset of the matching documents in natural
// order, or ok false when no index applies and the caller must scan.
func (c *Collection) viaIndex(filter bson.Raw) (docs []bson.Raw, ok bool) {
	if c == nil || filter == nil {
		return nil, false
	}
	els, _ := filter.Elements()
	for _, e := range els {
		f := e.Key()
		if strings.HasPrefix(f, "$") || hasNumericPart(f) {
			continue
		}
		vals, ok := equalityValues(e.Value())
		if !ok {
			continue
		}
		if f == "_id" {
			return c.byPos(func(yield func(string)) {
				for _, v := range vals {
					yield(idKey(v))
				}
			}), true
		}
		for _, ix := range c.Indexes {
			if ix.fields[0] != f || ix.Partial != nil || ix.Hidden || ix.unindexable > 0 {
				continue
			}
			byKey := ix.entries
			if len(ix.fields) > 1 {
				byKey = ix.first
			}
			return c.byPos(func(yield func(string)) {
				for _, v := range vals {
					for id := range byKey[keyString(v)+"|"] {
						yield(id)
					}
				}
			}), true
		}
	}
	return nil, false
}

// Find returns the documents matching filter (all for nil) in natural
// order, through an index when one applies; it copies only the matches.
func (c *Collection) Find(filter bson.Raw) ([]bson.Raw, error) {
	match := func(bson.Raw) bool { return true }
	if filter != nil {
		// parsed before any document is read, so a bad filter fails on an
		// empty collection too, as in mongod
		f, err := ParseFilter(filter)
		if err != nil {
			return nil, err
		}
		match = f
	}
	var out []bson.Raw
	var failure error
	keep := func(doc bson.Raw) bool {
		ok, err := runFilter(match, doc)
		if err != nil {
			failure = err
			return false
		}
		if ok {
			out = append(out, doc)
		}
		return true
	}
	if cands, ok := c.viaIndex(filter); ok {
		for _, doc := range cands {
			if !keep(doc) {
				break
			}
		}
	} else {
		c.Each(keep)
	}
	return out, failure
}

// byPos returns the documents of the given _id keys once each, in
// natural order.
func (c *Collection) byPos(ids func(yield func(string))) []bson.Raw {
	var recs []*record
	seen := map[string]bool{}
	ids(func(id string) {
		if r := c.docs[id]; r != nil && !seen[id] {
			seen[id] = true
			recs = append(recs, r)
		}
	})
	sort.Slice(recs, func(i, j int) bool { return recs[i].pos < recs[j].pos })
	out := make([]bson.Raw, len(recs))
	for i, r := range recs {
		out[i] = r.doc
	}
	return out
}

// equalityValues are the values a filter's condition on one field asks
// equality with: a plain value, {$eq: v} or {$in: [...]}; ok is false for
// anything else and for values an index lookup cannot answer alone
// (null matches missing fields, arrays match whole arrays, regexes match
// by pattern).
func equalityValues(v bson.RawValue) ([]bson.RawValue, bool) {
	usable := func(x bson.RawValue) bool {
		switch x.Type {
		case bson.TypeNull, bson.TypeUndefined, bson.TypeArray, bson.TypeRegex:
			return false
		}
		return true
	}
	if !isOperatorDoc(v) {
		return []bson.RawValue{v}, usable(v)
	}
	ops, _ := bson.Raw(v.Value).Elements()
	if len(ops) != 1 {
		return nil, false
	}
	switch ops[0].Key() {
	case "$eq":
		x := ops[0].Value()
		return []bson.RawValue{x}, usable(x)
	case "$in":
		arr, ok := ops[0].Value().ArrayOK()
		if !ok {
			return nil, false
		}
		vals, _ := arr.Values()
		for _, x := range vals {
			if !usable(x) {
				return nil, false
			}
		}
		return vals, true
	}
	return nil, false
}

// hasNumericPart reports a path component that may be an array position
// (a.0.b), which index keys do not model.
func hasNumericPart(path string) bool {
	for _, p := range strings.Split(path, ".") {
		if p != "" && strings.Trim(p, "0123456789") == "" {
			return true
		}
	}
	return false
}
