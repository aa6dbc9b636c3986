package sim

import (
	"go.mongodb.org/mongo-driver/v2/bson"
)

// Array expressions.

func init() {
	exprOps["$size"] = func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		a, err := x.args("$size", arg, 1, 1)
		if err != nil {
			return missing, err
		}
		el, ok := arrayElems(a[0])
		if !ok {
			return missing, cerr(17124, "The argument to $size must be an array. Type of the provided argument: %s", exprTypeName(a[0]))
		}
		return val(int32(len(el))), nil
	}
	exprOps["$arrayElemAt"] = func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		a, err := x.args("$arrayElemAt", arg, 2, 2)
		if err != nil {
			return missing, err
		}
		return arrayElemAt("$arrayElemAt", "first argument", a[0], a[1])
	}
	exprOps["$first"] = func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		a, err := x.args("$first", arg, 1, 1)
		if err != nil {
			return missing, err
		}
		return arrayElemAt("$first", "argument", a[0], val(int32(0)))
	}
	exprOps["$last"] = func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		a, err := x.args("$last", arg, 1, 1)
		if err != nil {
			return missing, err
		}
		return arrayElemAt("$last", "argument", a[0], val(int32(-1)))
	}
	exprOps["$in"] = func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		a, err := x.args("$in", arg, 2, 2)
		if err != nil {
			return missing, err
		}
		el, ok := arrayElems(a[1])
		if !ok {
			return missing, cerr(40081, "$in requires an array as a second argument, found: %s", exprTypeName(a[1]))
		}
		for _, e := range el {
			if exprCmp(a[0], e) == 0 {
				return val(true), nil
			}
		}
		return val(false), nil
	}
	exprOps["$isArray"] = func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		a, err := x.args("$isArray", arg, 1, 1)
		if err != nil {
			return missing, err
		}
		return val(a[0].Type == bson.TypeArray), nil
	}
	exprOps["$reverseArray"] = func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		a, err := x.args("$reverseArray", arg, 1, 1)
		if err != nil {
			return missing, err
		}
		if nullish(a[0]) {
			return nullValue, nil
		}
		el, ok := arrayElems(a[0])
		if !ok {
			return missing, cerr(34435, "The argument to $reverseArray must be an array, but was of type: %s", exprTypeName(a[0]))
		}
		out := make([]bson.RawValue, len(el))
		for i, e := range el {
			out[len(el)-1-i] = e
		}
		return arrayValue(out), nil
	}
	exprOps["$concatArrays"] = func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		a, err := x.args("$concatArrays", arg, 0, -1)
		if err != nil {
			return missing, err
		}
		out := []bson.RawValue{}
		for _, v := range a {
			if nullish(v) {
				return nullValue, nil
			}
			el, ok := arrayElems(v)
			if !ok {
				return missing, cerr(28664, "$concatArrays only supports arrays, not %s", exprTypeName(v))
			}
			out = append(out, el...)
		}
		return arrayValue(out), nil
	}
	exprOps["$slice"] = opSlice
	exprOps["$range"] = opRange
	exprOps["$filter"] = opFilter
	exprOps["$map"] = opMap
	exprOps["$reduce"] = opReduce
}

func arrayElemAt(name, which string, arr, idx bson.RawValue) (bson.RawValue, error) {
	if nullish(arr) || nullish(idx) {
		return nullValue, nil
	}
	el, ok := arrayElems(arr)
	if !ok {
		return missing, cerr(28689, "%s's %s must be an array, but is %s", name, which, exprTypeName(arr))
	}
	if !isArith(idx) {
		return missing, cerr(28690, "%s's second argument must be a numeric value, but is %s", name, exprTypeName(idx))
	}
	n := toNum(idx)
	if n.kind == 2 && n.f != float64(int64(n.f)) {
		return missing, cerr(28691, "%s's second argument must be representable as a 32-bit integer: %v", name, n.f)
	}
	i := int64(n.float())
	if i < 0 {
		i += int64(len(el))
	}
	if i < 0 || i >= int64(len(el)) {
		return missing, nil
	}
	return el[i], nil
}

func opSlice(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
	a, err := x.args("$slice", arg, 2, 3)
	if err != nil {
		return missing, err
	}
	for _, v := range a {
		if nullish(v) {
			return nullValue, nil
		}
	}
	el, ok := arrayElems(a[0])
	if !ok {
		return missing, cerr(28724, "First argument to $slice must be an array, but is of type: %s", exprTypeName(a[0]))
	}
	for i, v := range a[1:] {
		which := []string{"Second", "Third"}[i]
		if !isArith(v) {
			return missing, cerr(int32(28725+2*i), "%s argument to $slice must be numeric, but is of type: %s", which, exprTypeName(v))
		}
		if !toNum(v).int32OK() {
			return missing, cerr(int32(28726+2*i), "%s argument to $slice can't be represented as a 32-bit integer: %s", which, v.String())
		}
	}
	size := int64(len(el))
	first := toNum(a[1]).float()
	var start, n int64
	if len(a) == 2 {
		n = int64(first)
		if n >= 0 {
			start = 0
		} else {
			start, n = max(0, size+n), -n
		}
	} else {
		start = int64(first)
		n = int64(toNum(a[2]).float())
		if n <= 0 {
			return missing, cerr(28729, "Third argument to $slice must be positive: %d", n)
		}
		if start < 0 {
			start = max(0, size+start)
		}
	}
	if start > size {
		start = size
	}
	end := start + min(n, size-start) // no overflow for huge n
	return arrayValue(el[start:end]), nil
}

// rangeLimit caps $range's output as mongod's 100 MB memory limit does (16 bytes an element).
const rangeLimit = 100 << 20 / 16

func opRange(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
	a, err := x.args("$range", arg, 2, 3)
	if err != nil {
		return missing, err
	}
	names := []string{"starting value", "ending value", "step value"}
	var v [3]int64
	v[2] = 1
	for i, w := range a {
		if !isArith(w) {
			return missing, cerr(int32(34443+2*i), "$range requires a numeric %s, found value of type: %s", names[i], exprTypeName(w))
		}
		n := toNum(w)
		if n.kind == 2 && n.f != float64(int32(n.f)) || n.kind != 2 && n.i != int64(int32(n.i)) {
			return missing, cerr(int32(34444+2*i), "$range requires a %s that can be represented as a 32-bit integer, found value: %s", names[i], w.String())
		}
		v[i] = int64(n.float())
	}
	if v[2] == 0 {
		return missing, cerr(34449, "$range requires a non-zero step value")
	}
	if n := (v[1] - v[0]) / v[2]; n > rangeLimit {
		return missing, cerr(146, "$range would use too much memory (%d bytes) and cannot spill to disk. Memory limit: %d bytes", n*16, rangeLimit*16)
	}
	out := []bson.RawValue{}
	for i := v[0]; v[2] > 0 && i < v[1] || v[2] < 0 && i > v[1]; i += v[2] {
		out = append(out, val(int32(i)))
	}
	return arrayValue(out), nil
}

// iterInput evaluates the 'input' of $filter/$map/$reduce and its variable name.
func iterInput(x *evalCtx, op string, m map[string]bson.RawValue, code int32) ([]bson.RawValue, bool, string, error) {
	name := "this"
	if as, ok := m["as"]; ok {
		s, _ := as.StringValueOK()
		if err := checkVarName(s); err != nil {
			return nil, false, "", err
		}
		name = s
	}
	in, err := x.eval(m["input"])
	if err != nil {
		return nil, false, "", err
	}
	if nullish(in) {
		return nil, true, name, nil
	}
	el, ok := arrayElems(in)
	if !ok {
		return nil, false, "", cerr(code, "input to %s must be an array not %s", op, exprTypeName(in))
	}
	return el, false, name, nil
}

func opFilter(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
	m, err := objectArgs("$filter", arg, 28646, 28647, []string{"input", "as", "cond", "limit"}, map[string]int32{"input": 28648, "cond": 28650})
	if err != nil {
		return missing, err
	}
	el, isNull, name, err := iterInput(x, "$filter", m, 28651)
	if err != nil || isNull {
		return nullValue, err
	}
	limit := int64(-1)
	if l, ok := m["limit"]; ok {
		lv, err := x.eval(l)
		if err != nil {
			return missing, err
		}
		if !nullish(lv) {
			n, ok := intArg(lv)
			if !ok || n <= 0 {
				return missing, cerr(327391, "$filter: limit must be greater than 0: %s", lv.String())
			}
			limit = n
		}
	}
	out := []bson.RawValue{}
	for _, e := range el {
		if limit >= 0 && int64(len(out)) >= limit {
			break
		}
		c, err := x.with(name, e).eval(m["cond"])
		if err != nil {
			return missing, err
		}
		if truthy(c) {
			out = append(out, e)
		}
	}
	return arrayValue(out), nil
}

func opMap(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
	m, err := objectArgs("$map", arg, 16878, 16879, []string{"input", "as", "in"}, map[string]int32{"input": 16880, "in": 16882})
	if err != nil {
		return missing, err
	}
	el, isNull, name, err := iterInput(x, "$map", m, 16883)
	if err != nil || isNull {
		return nullValue, err
	}
	out := make([]bson.RawValue, len(el))
	for i, e := range el {
		if out[i], err = x.with(name, e).eval(m["in"]); err != nil {
			return missing, err
		}
	}
	return arrayValue(out), nil
}

func opReduce(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
	m, err := objectArgs("$reduce", arg, 40075, 40076, []string{"input", "initialValue", "in"}, map[string]int32{"input": 40077, "initialValue": 40078, "in": 40079})
	if err != nil {
		return missing, err
	}
	in, err := x.eval(m["input"])
	if err != nil || nullish(in) {
		return nullValue, err
	}
	el, ok := arrayElems(in)
	if !ok {
		return missing, cerr(40080, "$reduce requires input to be an array, found: %s", exprTypeName(in))
	}
	acc, err := x.eval(m["initialValue"])
	if err != nil {
		return missing, err
	}
	for _, e := range el {
		if acc, err = x.with("value", acc).with("this", e).eval(m["in"]); err != nil {
			return missing, err
		}
	}
	return acc, nil
}
