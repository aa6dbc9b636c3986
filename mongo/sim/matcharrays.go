package sim

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func sizeArg(ov bson.RawValue) (int64, error) {
	f, ok := ov.AsFloat64OK()
	if !ok {
		return 0, cerr(2, "$size needs a number")
	}
	if f != float64(int64(f)) {
		return 0, cerr(2, "$size must be a whole number")
	}
	if f < 0 {
		return 0, cerr(2, "$size may not be negative")
	}
	return int64(f), nil
}

func allPred(path string, ov bson.RawValue) (fieldPred, error) {
	arr, ok := ov.ArrayOK()
	if !ok {
		return nil, cerr(2, "$all needs an array")
	}
	vals, _ := arr.Values()
	if len(vals) == 0 {
		return func(valuesFn) bool { return false }, nil
	}
	var preds []fieldPred
	elemMatches := 0
	for _, x := range vals {
		if d, ok := x.DocumentOK(); ok && firstKey(d) == "$elemMatch" {
			elemMatches++
			p, err := parseFieldCond(path, x)
			if err != nil {
				return nil, err
			}
			preds = append(preds, p)
			continue
		}
		if isOperatorDoc(x) {
			return nil, cerr(2, "no $ expressions in $all")
		}
		eq, err := equalityPred(x, true)
		if err != nil {
			return nil, err
		}
		preds = append(preds, anyValue(true, eq))
	}
	if elemMatches > 0 && elemMatches != len(vals) {
		return nil, cerr(2, "$all/$elemMatch has to be consistent")
	}
	return func(get valuesFn) bool {
		for _, p := range preds {
			if !p(get) {
				return false
			}
		}
		return true
	}, nil
}

// elemMatchPred: an array with one element that satisfies the operators
// (value form, {$elemMatch: {$gt: 1}}) or the filter (object form).
func elemMatchPred(ov bson.RawValue) (func(bson.RawValue) bool, error) {
	elem, err := elemMatchElement(ov)
	if err != nil {
		return nil, err
	}
	return func(v bson.RawValue) bool {
		arr, ok := v.ArrayOK()
		if !ok {
			return false
		}
		vals, _ := arr.Values()
		for _, x := range vals {
			if elem(x) {
				return true
			}
		}
		return false
	}, nil
}

// elemMatchElement: whether one array element satisfies an $elemMatch.
func elemMatchElement(ov bson.RawValue) (func(bson.RawValue) bool, error) {
	d, ok := ov.DocumentOK()
	if !ok {
		return nil, cerr(2, "$elemMatch needs an Object")
	}
	var elem func(bson.RawValue) bool
	switch k := firstKey(d); {
	case strings.HasPrefix(k, "$") && k != "$and" && k != "$or" && k != "$nor" && k != "$expr" && k != "$where" && k != "$text":
		p, err := parseFieldCond("", ov)
		if err != nil {
			return nil, err
		}
		elem = func(v bson.RawValue) bool {
			return p(func(bool) []bson.RawValue { return []bson.RawValue{v} })
		}
	default:
		f, err := ParseFilter(d)
		if err != nil {
			return nil, err
		}
		elem = func(v bson.RawValue) bool {
			if v.Type != bson.TypeEmbeddedDocument && v.Type != bson.TypeArray {
				return false
			}
			return f(bson.Raw(v.Value))
		}
	}
	return elem, nil
}
