package sim

import (
	"fmt"
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// SortDocs sorts by a {field: 1|-1} spec, stably.
func SortDocs(docs []bson.Raw, spec bson.Raw) {
	elems, _ := spec.Elements()
	if len(elems) == 0 {
		return
	}
	if elems[0].Key() == "$natural" {
		// insertion order, reversed for -1
		if f, _ := elems[0].Value().AsFloat64OK(); f < 0 {
			for i, j := 0, len(docs)-1; i < j; i, j = i+1, j-1 {
				docs[i], docs[j] = docs[j], docs[i]
			}
		}
		return
	}
	sort.SliceStable(docs, func(i, j int) bool {
		for _, e := range elems {
			dir := 1.0
			if f, ok := e.Value().AsFloat64OK(); ok && f < 0 {
				dir = -1
			}
			c := compareValues(lookupPath(docs[i], e.Key()), lookupPath(docs[j], e.Key()))
			if c != 0 {
				return float64(c)*dir < 0
			}
		}
		return false
	})
}

// Project applies an inclusion or exclusion projection on top-level
// (and dotted-prefix) fields.
func Project(doc, proj bson.Raw) (bson.Raw, error) {
	elems, _ := proj.Elements()
	if len(elems) == 0 {
		return doc, nil
	}
	include := map[string]bool{}
	exclude := map[string]bool{}
	idOut := false
	for _, e := range elems {
		v := e.Value()
		on := true
		if b, ok := v.BooleanOK(); ok {
			on = b
		} else if f, ok := v.AsFloat64OK(); ok {
			on = f != 0
		}
		top, _, _ := strings.Cut(e.Key(), ".")
		if e.Key() == "_id" {
			idOut = !on
			continue
		}
		if on {
			include[top] = true
		} else {
			exclude[top] = true
		}
	}
	if len(include) > 0 && len(exclude) > 0 {
		return nil, &QueryError{fmt.Sprintf("Cannot do exclusion on field %s in inclusion projection", sortedKeys(exclude)[0])}
	}
	var out bson.D
	de, _ := doc.Elements()
	for _, e := range de {
		k := e.Key()
		var keep bool
		switch {
		case k == "_id":
			keep = !idOut
		case len(include) > 0:
			keep = include[k]
		default:
			keep = !exclude[k]
		}
		if keep {
			out = append(out, bson.E{Key: k, Value: e.Value()})
		}
	}
	return bson.Marshal(out)
}
