package sim

import (
	"math"
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// pushSpec is $push's or $addToSet's argument: the values and, for $push,
// the $position, $sort and $slice modifiers.
type pushSpec struct {
	each     []bson.RawValue
	position *int64
	slice    *int64
	sort     bson.RawValue
}

func (o *updateOp) parsePull() error {
	v := o.arg
	switch {
	case isOperatorDoc(v):
		p, err := parseFieldCond("", v)
		if err != nil {
			return err
		}
		o.pull = func(x bson.RawValue) bool {
			return p(func(bool) []bson.RawValue { return []bson.RawValue{x} })
		}
	case v.Type == bson.TypeEmbeddedDocument:
		f, err := ParseFilter(v.Document())
		if err != nil {
			return err
		}
		o.pull = func(x bson.RawValue) bool {
			return x.Type == bson.TypeEmbeddedDocument && f(x.Document())
		}
	default:
		eq, err := equalityPred(v, true)
		if err != nil {
			return err
		}
		o.pull = eq
	}
	return nil
}

func (o *updateOp) parsePush() error {
	v := o.arg
	spec := &pushSpec{each: []bson.RawValue{v}}
	o.push = spec
	d, ok := v.DocumentOK()
	if !ok {
		return nil
	}
	each := d.Lookup("$each")
	if each.Type == 0 {
		return nil
	}
	arr, ok := each.ArrayOK()
	if !ok {
		if o.op == "$addToSet" {
			return cerr(2, "The argument to $each in $addToSet must be an array but it was of type %s", typeName(each.Type))
		}
		return cerr(2, "The argument to $each in $push must be an array but it was of type: %s", typeName(each.Type))
	}
	spec.each, _ = arr.Values()
	elems, _ := d.Elements()
	for _, e := range elems {
		k, ev := e.Key(), e.Value()
		if k == "$each" {
			continue
		}
		if o.op == "$addToSet" {
			return cerr(2, "Found unexpected fields after $each in $addToSet: %s", showDoc(d))
		}
		switch k {
		case "$slice":
			n, ok := wholeNumber(ev)
			if !ok {
				return cerr(2, "The value for $slice must be an integer value but was given type: %s", typeName(ev.Type))
			}
			spec.slice = &n
		case "$position":
			n, ok := wholeNumber(ev)
			if !ok {
				return cerr(2, "The value for $position must be an integer value, not of type: %s", typeName(ev.Type))
			}
			spec.position = &n
		case "$sort":
			if err := checkPushSort(ev); err != nil {
				return err
			}
			spec.sort = ev
		default:
			return cerr(2, "Unrecognized clause in $push: %s", k)
		}
	}
	return nil
}

func wholeNumber(v bson.RawValue) (int64, bool) {
	f, ok := v.AsFloat64OK()
	if !ok || f != math.Trunc(f) {
		return 0, false
	}
	return int64(f), true
}

func checkPushSort(v bson.RawValue) error {
	bad := cerr(2, "The $sort is invalid: use 1/-1 to sort the whole element, or {field:1/-1} to sort embedded fields")
	if f, ok := v.AsFloat64OK(); ok {
		if f != 1 && f != -1 {
			return bad
		}
		return nil
	}
	d, ok := v.DocumentOK()
	if !ok {
		return bad
	}
	elems, _ := d.Elements()
	if len(elems) == 0 {
		return cerr(2, "The $sort pattern is empty when it should be a set of fields.")
	}
	for _, e := range elems {
		if f, ok := e.Value().AsFloat64OK(); !ok || f != 1 && f != -1 {
			return cerr(2, "The $sort element value must be either 1 or -1")
		}
		if e.Key() == "" || strings.HasPrefix(e.Key(), "$") {
			return cerr(2, "The $sort field is a special identifier, which is not allowed: %s", e.Key())
		}
	}
	return nil
}

func addToSet(arr bson.A, each []bson.RawValue) bson.A {
	for _, v := range each {
		present := false
		for _, x := range arr {
			if r := toRaw(x); typeOrder(r.Type) == typeOrder(v.Type) && compareValues(r, v) == 0 {
				present = true
				break
			}
		}
		if !present {
			arr = append(arr, toGo(v))
		}
	}
	return arr
}

func push(arr bson.A, s *pushSpec) bson.A {
	items := make(bson.A, 0, len(s.each))
	for _, v := range s.each {
		items = append(items, toGo(v))
	}
	pos := int64(len(arr))
	if s.position != nil {
		pos = *s.position
		if pos < 0 {
			pos = max(int64(len(arr))+pos, 0)
		}
		pos = min(pos, int64(len(arr)))
	}
	out := append(append(append(bson.A{}, arr[:pos]...), items...), arr[pos:]...)
	if s.sort.Type != 0 {
		sortArray(out, s.sort)
	}
	if s.slice != nil {
		n := *s.slice
		switch {
		case n >= 0 && n < int64(len(out)):
			out = out[:n]
		case n < 0 && -n < int64(len(out)):
			out = out[int64(len(out))+n:]
		}
	}
	return out
}

// sortArray is $push's $sort: whole elements (1/-1) or by fields.
func sortArray(arr bson.A, spec bson.RawValue) {
	if f, ok := spec.AsFloat64OK(); ok {
		sort.SliceStable(arr, func(i, j int) bool {
			c := compareValues(toRaw(arr[i]), toRaw(arr[j]))
			return f > 0 && c < 0 || f < 0 && c > 0
		})
		return
	}
	fields, _ := spec.Document().Elements()
	key := func(x any, path string, desc bool) sortKey {
		r := toRaw(x)
		if r.Type != bson.TypeEmbeddedDocument {
			return sortKey{v: bson.RawValue{Type: bson.TypeNull}}
		}
		return sortKeyOf(r.Document(), path, desc)
	}
	sort.SliceStable(arr, func(i, j int) bool {
		for _, f := range fields {
			desc := false
			if d, _ := f.Value().AsFloat64OK(); d < 0 {
				desc = true
			}
			c := compareSortKeys(key(arr[i], f.Key(), desc), key(arr[j], f.Key(), desc))
			if c != 0 {
				return c < 0 != desc
			}
		}
		return false
	})
}
