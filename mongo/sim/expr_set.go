package sim

import (
	"sort"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Set expressions and the array operators that search, zip or sort arrays.

// distinct keeps the first of each group of equal values.
func distinct(vals []bson.RawValue) []bson.RawValue {
	seen := map[string]bool{}
	out := []bson.RawValue{}
	for _, v := range vals {
		if k := groupKey(v); !seen[k] {
			seen[k] = true
			out = append(out, v)
		}
	}
	return out
}

func keySet(vals []bson.RawValue) map[string]bool {
	m := map[string]bool{}
	for _, v := range vals {
		m[groupKey(v)] = true
	}
	return m
}

// setArgs evaluates the operands of a set operator; isNull reports a null or missing one.
func setArgs(x *evalCtx, name string, arg bson.RawValue, min, max int, nullOK bool, code int32, msg string) ([][]bson.RawValue, bool, error) {
	a, err := x.args(name, arg, min, max)
	if err != nil {
		return nil, false, err
	}
	var out [][]bson.RawValue
	isNull := false
	for i, v := range a {
		if nullish(v) && nullOK {
			isNull = true
			continue
		}
		el, ok := arrayElems(v)
		if !ok {
			c := code
			if i == 1 && max == 2 {
				c = map[string]int32{"$setDifference": 17049, "$setIsSubset": 17042}[name]
			}
			return nil, false, cerr(c, msg, exprTypeName(v))
		}
		out = append(out, el)
	}
	return out, isNull, nil
}

func init() {
	exprOps["$setUnion"] = func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		sets, isNull, err := setArgs(x, "$setUnion", arg, 0, -1, true, 17043, "All operands of $setUnion must be arrays. One argument is of type: %s")
		if err != nil || isNull {
			return nullValue, err
		}
		var all []bson.RawValue
		for _, s := range sets {
			all = append(all, s...)
		}
		return arrayValue(distinct(all)), nil
	}
	exprOps["$setIntersection"] = func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		sets, isNull, err := setArgs(x, "$setIntersection", arg, 0, -1, true, 17047, "All operands of $setIntersection must be arrays. One argument is of type: %s")
		if err != nil || isNull {
			return nullValue, err
		}
		if len(sets) == 0 {
			return arrayValue(nil), nil
		}
		out := distinct(sets[0])
		for _, s := range sets[1:] {
			in := keySet(s)
			var kept []bson.RawValue
			for _, v := range out {
				if in[groupKey(v)] {
					kept = append(kept, v)
				}
			}
			out = kept
		}
		return arrayValue(out), nil
	}
	exprOps["$setDifference"] = func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		sets, isNull, err := setArgs(x, "$setDifference", arg, 2, 2, true, 17048, "both operands of $setDifference must be arrays. First argument is of type: %s")
		if err != nil || isNull {
			return nullValue, err
		}
		not := keySet(sets[1])
		var out []bson.RawValue
		for _, v := range distinct(sets[0]) {
			if !not[groupKey(v)] {
				out = append(out, v)
			}
		}
		return arrayValue(out), nil
	}
	exprOps["$setEquals"] = func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		sets, _, err := setArgs(x, "$setEquals", arg, 2, -1, false, 17044, "All operands of $setEquals must be arrays. One argument is of type: %s")
		if err != nil {
			return missing, err
		}
		first := keySet(sets[0])
		for _, s := range sets[1:] {
			other := keySet(s)
			if len(other) != len(first) {
				return val(false), nil
			}
			for k := range other {
				if !first[k] {
					return val(false), nil
				}
			}
		}
		return val(true), nil
	}
	exprOps["$setIsSubset"] = func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		sets, _, err := setArgs(x, "$setIsSubset", arg, 2, 2, false, 17046, "both operands of $setIsSubset must be arrays. First argument is of type: %s")
		if err != nil {
			return missing, err
		}
		super := keySet(sets[1])
		for _, v := range sets[0] {
			if !super[groupKey(v)] {
				return val(false), nil
			}
		}
		return val(true), nil
	}
	for name, code := range map[string]int32{"$allElementsTrue": 17040, "$anyElementTrue": 17041} {
		exprOps[name] = func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
			a, err := x.args(name, arg, 1, 1)
			if err != nil {
				return missing, err
			}
			el, ok := arrayElems(a[0])
			if !ok {
				return missing, cerr(code, "%s's argument must be an array, but is %s", name, exprTypeName(a[0]))
			}
			want := name == "$anyElementTrue"
			for _, e := range el {
				if truthy(e) == want {
					return val(want), nil
				}
			}
			return val(!want), nil
		}
	}
	exprOps["$indexOfArray"] = opIndexOfArray
	exprOps["$sortArray"] = opSortArray
	exprOps["$zip"] = opZip
}

func opIndexOfArray(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
	a, err := x.args("$indexOfArray", arg, 2, 4)
	if err != nil {
		return missing, err
	}
	if nullish(a[0]) {
		return nullValue, nil
	}
	el, ok := arrayElems(a[0])
	if !ok {
		return missing, cerr(40090, "$indexOfArray requires an array as a first argument, found: %s", exprTypeName(a[0]))
	}
	start, end := int64(0), int64(len(el))
	for i, v := range a[2:] {
		n, ok := intArg(v)
		if !ok || !isArith(v) || v.Type == bson.TypeDouble && v.Double() != float64(n) {
			return missing, cerr(40096, "$indexOfArray requires an integral %s, found a value of type: %s, with value: %s",
				[]string{"starting index", "ending index"}[i], exprTypeName(v), v.String())
		}
		if n < 0 {
			return missing, cerr(40097, "$indexOfArray requires a nonnegative %s, found: %d", []string{"starting index", "ending index"}[i], n)
		}
		if i == 0 {
			start = n
		} else {
			end = min(n, end)
		}
	}
	for i := start; i < end; i++ {
		if exprCmp(el[i], a[1]) == 0 {
			return val(int32(i)), nil
		}
	}
	return val(int32(-1)), nil
}

func opSortArray(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
	m, err := namedArgs("$sortArray", arg, 2942500, []string{"input", "sortBy"}, "input", "sortBy")
	if err != nil {
		return missing, err
	}
	in, err := x.eval(m["input"])
	if err != nil || nullish(in) {
		return nullValue, err
	}
	el, ok := arrayElems(in)
	if !ok {
		return missing, cerr(2942504, "The input argument to $sortArray must be an array, but was of type: %s", exprTypeName(in))
	}
	out := append([]bson.RawValue(nil), el...)
	by := m["sortBy"]
	if isArith(by) {
		dir := toNum(by).float()
		if dir != 1 && dir != -1 {
			return missing, cerr(2942505, "$sortArray sortBy must be 1 or -1, or a sort specification document")
		}
		sort.SliceStable(out, func(i, j int) bool { return float64(exprCmp(out[i], out[j]))*dir < 0 })
		return arrayValue(out), nil
	}
	spec, ok := by.DocumentOK()
	if !ok {
		return missing, cerr(2942505, "$sortArray sortBy must be 1 or -1, or a sort specification document")
	}
	keys, _ := spec.Elements()
	sort.SliceStable(out, func(i, j int) bool {
		for _, k := range keys {
			dir, _ := k.Value().AsFloat64OK()
			c := exprCmp(exprPath(out[i], []string{k.Key()}), exprPath(out[j], []string{k.Key()}))
			if c != 0 {
				return float64(c)*dir < 0
			}
		}
		return false
	})
	return arrayValue(out), nil
}

func opZip(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
	m, err := namedArgs("$zip", arg, 34464, []string{"inputs", "useLongestLength", "defaults"}, "inputs")
	if err != nil {
		return missing, err
	}
	ins, ok := arrayElems(m["inputs"])
	if !ok {
		return missing, cerr(34461, "inputs must be an array of expressions, found %s", exprTypeName(m["inputs"]))
	}
	longest := false
	if l, ok := m["useLongestLength"]; ok {
		if longest, ok = l.BooleanOK(); !ok {
			return missing, cerr(34463, "useLongestLength must be a bool, found %s", exprTypeName(l))
		}
	}
	var arrays [][]bson.RawValue
	n := -1
	for _, ie := range ins {
		v, err := x.eval(ie)
		if err != nil {
			return missing, err
		}
		if nullish(v) {
			return nullValue, nil
		}
		el, ok := arrayElems(v)
		if !ok {
			return missing, cerr(34468, "$zip found a non-array expression in input: %s", v.String())
		}
		arrays = append(arrays, el)
		if n < 0 || !longest && len(el) < n || longest && len(el) > n {
			n = len(el)
		}
	}
	defaults := make([]bson.RawValue, len(arrays))
	if de, ok := m["defaults"]; ok {
		if !longest {
			return missing, cerr(34466, "cannot specify defaults unless useLongestLength is true")
		}
		dv, err := x.eval(de)
		if err != nil {
			return missing, err
		}
		d, ok := arrayElems(dv)
		if !ok || len(d) != len(arrays) {
			return missing, cerr(34467, "defaults and inputs must have the same length")
		}
		defaults = d
	}
	out := []bson.RawValue{}
	for i := 0; i < n; i++ {
		row := make([]bson.RawValue, len(arrays))
		for j, a := range arrays {
			row[j] = defaults[j]
			if i < len(a) {
				row[j] = a[i]
			}
		}
		out = append(out, arrayValue(row))
	}
	return arrayValue(out), nil
}
