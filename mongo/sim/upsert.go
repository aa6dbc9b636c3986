package sim

import (
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Upsert builds the document an upsert inserts: the query's equality
// fields (dotted paths as nested documents), then the update applied with
// $setOnInsert; _id first, generated when neither gives one.
func (u *Update) Upsert(query bson.Raw) (bson.Raw, error) {
	var seed any = bson.D{}
	var err error
	if u.replacement != nil {
		if id, e := query.LookupErr("_id"); e == nil && !isOperatorDoc(id) && id.Type != bson.TypeRegex {
			seed = bson.D{{Key: "_id", Value: id}}
		}
	} else if seed, err = seedFromQuery(seed, query); err != nil {
		return nil, err
	}
	nd, err := u.Apply(mustRaw(seed), query, true)
	if err != nil {
		return nil, err
	}
	return idFirst(nd), nil
}

// seedFromQuery sets the query's equality fields into seed, in the order
// of their paths as mongod does.
func seedFromQuery(seed any, query bson.Raw) (any, error) {
	var eqs []queryEquality
	collectEqualities(query, &eqs)
	sort.SliceStable(eqs, func(i, j int) bool { return comparePaths(eqs[i].path, eqs[j].path) < 0 })
	for i := 1; i < len(eqs); i++ {
		a, b := eqs[i-1].path, eqs[i].path
		switch {
		case equalPaths(a, b):
			return nil, cerr(54, "cannot infer query fields to set, path '%s' is matched twice", strings.Join(a, "."))
		case len(a) < len(b) && equalPaths(a, b[:len(a)]):
			return nil, cerr(54, "cannot infer query fields to set, both paths '%s' and '%s' are matched", strings.Join(a, "."), strings.Join(b, "."))
		}
	}
	for _, e := range eqs {
		val := e.value
		var err error
		seed, err = modifyPath(seed, "", e.path, true, func(any, bool) (any, leafOp, error) {
			return toGo(val), leafSet, nil
		})
		if err != nil {
			return nil, err
		}
	}
	return seed, nil
}

type queryEquality struct {
	path  []string
	value bson.RawValue
}

func collectEqualities(query bson.Raw, out *[]queryEquality) {
	elems, _ := query.Elements()
	for _, e := range elems {
		k, v := e.Key(), e.Value()
		switch {
		case k == "$and" || k == "$or":
			arr, _ := v.ArrayOK()
			vals, _ := arr.Values()
			if k == "$or" && len(vals) != 1 {
				continue
			}
			for _, x := range vals {
				if sub, ok := x.DocumentOK(); ok {
					collectEqualities(sub, out)
				}
			}
			continue
		case strings.HasPrefix(k, "$"):
			continue
		}
		if val, ok := equalityValue(v); ok {
			*out = append(*out, queryEquality{path: strings.Split(k, "."), value: val})
		}
	}
}

// equalityValue: the value a query condition pins a field to, if any.
func equalityValue(v bson.RawValue) (bson.RawValue, bool) {
	if v.Type == bson.TypeRegex {
		return v, false
	}
	if !isOperatorDoc(v) {
		return v, true
	}
	d := v.Document()
	if eq, err := d.LookupErr("$eq"); err == nil {
		return eq, true
	}
	if in, err := d.LookupErr("$in"); err == nil {
		if arr, ok := in.ArrayOK(); ok {
			if vals, _ := arr.Values(); len(vals) == 1 && vals[0].Type != bson.TypeRegex {
				return vals[0], true
			}
		}
	}
	return v, false
}
