package sim

import (
	"errors"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// asCmdError gives an error of the query language mongod's reply shape;
// errors that carry no code are BadValue.
func asCmdError(err error) *CmdError {
	var ce *CmdError
	if errors.As(err, &ce) {
		return ce
	}
	return cerr(2, "%s", err.Error())
}

// Filter is a parsed query filter.
type Filter func(doc bson.Raw) bool

// valuesFn yields the values a predicate looks at; expand says whether an
// array at the end of the path also yields its elements.
type valuesFn func(expand bool) []bson.RawValue

// fieldPred is a compiled condition on one path.
type fieldPred func(get valuesFn) bool

// Match reports whether doc satisfies filter, with mongod's semantics.
func Match(doc, filter bson.Raw) (bool, error) {
	f, err := ParseFilter(filter)
	if err != nil {
		return false, err
	}
	return runFilter(f, doc)
}

// exprFailure carries an $expr evaluation error out of a Filter, which
// answers only a bool; runFilter turns it back into an error.
type exprFailure struct{ err error }

// exprFilter is the query language's $expr as a Filter.
func exprFilter(e bson.RawValue) Filter {
	return func(doc bson.Raw) bool {
		m, err := exprMatches(doc, e)
		if err != nil {
			panic(exprFailure{exprError(err)})
		}
		return m
	}
}

// runFilter applies f to doc; an $expr that fails to evaluate (a division
// by zero, a bad conversion) fails the query, as in mongod.
func runFilter(f Filter, doc bson.Raw) (ok bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			ef, isExpr := r.(exprFailure)
			if !isExpr {
				panic(r)
			}
			ok, err = false, ef.err
		}
	}()
	return f(doc), nil
}

// ParseFilter compiles a query filter, failing with mongod's error codes on
// a filter mongod would refuse.
func ParseFilter(filter bson.Raw) (Filter, error) {
	elems, err := filter.Elements()
	if err != nil {
		return nil, cerr(2, "%v", err)
	}
	var parts []Filter
	for _, e := range elems {
		k, v := e.Key(), e.Value()
		var f Filter
		switch {
		case k == "$and" || k == "$or" || k == "$nor":
			if f, err = parseLogical(k, v); err != nil {
				return nil, err
			}
		case k == "$comment":
			continue
		case k == "$expr":
			f = exprFilter(v)
		case k == "$jsonSchema":
			schema, ok := v.DocumentOK()
			if !ok {
				return nil, cerr(14, "$jsonSchema must be an object")
			}
			p, err := parseJSONSchema(schema)
			if err != nil {
				return nil, err
			}
			f = func(doc bson.Raw) bool { return p(bson.RawValue{Type: bson.TypeEmbeddedDocument, Value: doc}) }
		case k == "$text":
			return nil, cerr(27, "text index required for $text query")
		case k == "$where":
			return nil, cerr(2, "$where is not allowed in this context: the simulator runs no JavaScript")
		case strings.HasPrefix(k, "$"):
			return nil, cerr(2, "unknown top level operator: %s. If you have a field name that starts with a '$' symbol, consider using $getField or $setField.", k)
		default:
			p, err := parseFieldCond(k, v)
			if err != nil {
				return nil, err
			}
			path := k
			f = func(doc bson.Raw) bool {
				return p(func(expand bool) []bson.RawValue { return pathValues(doc, path, expand) })
			}
		}
		parts = append(parts, f)
	}
	return func(doc bson.Raw) bool {
		for _, f := range parts {
			if !f(doc) {
				return false
			}
		}
		return true
	}, nil
}

func parseLogical(op string, v bson.RawValue) (Filter, error) {
	arr, ok := v.ArrayOK()
	vals, _ := arr.Values()
	if !ok || len(vals) == 0 {
		return nil, cerr(2, "$and/$or/$nor must be a nonempty array")
	}
	var subs []Filter
	for _, x := range vals {
		sub, ok := x.DocumentOK()
		if !ok {
			return nil, cerr(2, "$or/$and/$nor entries need to be full objects")
		}
		f, err := ParseFilter(sub)
		if err != nil {
			return nil, err
		}
		subs = append(subs, f)
	}
	return func(doc bson.Raw) bool {
		for _, f := range subs {
			m := f(doc)
			switch {
			case op == "$and" && !m:
				return false
			case op == "$or" && m:
				return true
			case op == "$nor" && m:
				return false
			}
		}
		return op != "$or"
	}, nil
}

// isOperatorDoc: a document whose first field is an operator ($gt, ...);
// a DBRef ($ref, $id, $db) is a value.
func isOperatorDoc(v bson.RawValue) bool {
	d, ok := v.DocumentOK()
	if !ok {
		return false
	}
	k := firstKey(d)
	return strings.HasPrefix(k, "$") && k != "$ref" && k != "$id" && k != "$db"
}

// parseFieldCond compiles {path: cond}: an operator document, a regex or
// a value to compare for equality.
func parseFieldCond(path string, cond bson.RawValue) (fieldPred, error) {
	if !isOperatorDoc(cond) {
		eq, err := equalityPred(cond, true)
		if err != nil {
			return nil, err
		}
		return anyValue(true, eq), nil
	}
	ops, _ := cond.Document().Elements()
	var preds []fieldPred
	var regex, options *bson.RawValue
	for _, op := range ops {
		ov := op.Value()
		switch op.Key() {
		case "$regex":
			regex = &ov
			continue
		case "$options":
			options = &ov
			continue
		}
		p, err := parseOperator(path, op.Key(), ov)
		if err != nil {
			return nil, err
		}
		preds = append(preds, p)
	}
	if regex != nil || options != nil {
		re, err := parseRegexOp(regex, options)
		if ce := (*CmdError)(nil); errors.As(err, &ce) && ce.Code == 51075 && firstKey(cond.Document()) == "$options" {
			ce.Code = 51074 // mongod tells which came first
		}
		if err != nil {
			return nil, err
		}
		preds = append(preds, anyValue(true, re))
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

// anyValue: the predicate holds for one of the values on the path.
func anyValue(expand bool, pred func(bson.RawValue) bool) fieldPred {
	return func(get valuesFn) bool {
		for _, v := range get(expand) {
			if pred(v) {
				return true
			}
		}
		return false
	}
}

func not(p fieldPred) fieldPred { return func(get valuesFn) bool { return !p(get) } }

func parseOperator(path, op string, ov bson.RawValue) (fieldPred, error) {
	switch op {
	case "$eq", "$ne":
		if op == "$ne" && ov.Type == bson.TypeRegex {
			return nil, cerr(2, "Can't have regex as arg to $ne.")
		}
		eq, err := equalityPred(ov, false)
		if err != nil {
			return nil, err
		}
		if op == "$ne" {
			return not(anyValue(true, eq)), nil
		}
		return anyValue(true, eq), nil
	case "$gt", "$gte", "$lt", "$lte":
		if ov.Type == bson.TypeRegex {
			return nil, cerr(2, "Can't have RegEx as arg to predicate over field '%s'.", path)
		}
		return anyValue(true, comparePred(op, ov)), nil
	case "$in", "$nin":
		in, err := inPred(op, ov)
		if err != nil {
			return nil, err
		}
		if op == "$nin" {
			return not(anyValue(true, in)), nil
		}
		return anyValue(true, in), nil
	case "$exists":
		want := truthy(ov)
		return func(get valuesFn) bool {
			for _, v := range get(false) {
				if v.Type != 0 {
					return want
				}
			}
			return !want
		}, nil
	case "$type":
		tp, err := typePred(ov)
		if err != nil {
			return nil, err
		}
		return anyValue(true, tp), nil
	case "$size":
		n, err := sizeArg(ov)
		if err != nil {
			return nil, err
		}
		return anyValue(false, func(v bson.RawValue) bool {
			arr, ok := v.ArrayOK()
			if !ok {
				return false
			}
			vals, _ := arr.Values()
			return int64(len(vals)) == n
		}), nil
	case "$mod":
		mp, err := modPred(ov)
		if err != nil {
			return nil, err
		}
		return anyValue(true, mp), nil
	case "$all":
		return allPred(path, ov)
	case "$elemMatch":
		ep, err := elemMatchPred(ov)
		if err != nil {
			return nil, err
		}
		return anyValue(false, ep), nil
	case "$not":
		switch ov.Type {
		case bson.TypeRegex:
			re, err := parseRegexOp(&ov, nil)
			if err != nil {
				return nil, err
			}
			return not(anyValue(true, re)), nil
		case bson.TypeEmbeddedDocument:
			d := ov.Document()
			if len(d) <= 5 {
				return nil, cerr(2, "$not cannot be empty")
			}
			if !isOperatorDoc(ov) {
				return nil, cerr(2, "unknown operator: %s", firstKey(d))
			}
			p, err := parseFieldCond(path, ov)
			if err != nil {
				return nil, err
			}
			return not(p), nil
		}
		return nil, cerr(2, "$not needs a regex or a document")
	case "$bitsAllSet", "$bitsAnySet", "$bitsAllClear", "$bitsAnyClear":
		bp, err := bitsPred(op, ov)
		if err != nil {
			return nil, err
		}
		return anyValue(true, bp), nil
	case "$where":
		return nil, cerr(2, "$where cannot be applied to a field")
	}
	return nil, cerr(2, "unknown operator: %s", op)
}

func firstKey(d bson.Raw) string {
	e, err := d.IndexErr(0)
	if err != nil {
		return ""
	}
	return e.Key()
}

// equalityPred: value equality as mongod's $eq does (null also matches a
// missing field); a regex in a plain {field: /re/} matches strings.
func equalityPred(want bson.RawValue, regexMatches bool) (func(bson.RawValue) bool, error) {
	if want.Type == bson.TypeRegex && regexMatches {
		return parseRegexOp(&want, nil)
	}
	if want.Type == bson.TypeNull {
		return func(v bson.RawValue) bool {
			return v.Type == 0 || v.Type == bson.TypeNull || v.Type == bson.TypeUndefined
		}, nil
	}
	return func(v bson.RawValue) bool {
		return v.Type != 0 && typeOrder(v.Type) == typeOrder(want.Type) && compareValues(v, want) == 0
	}, nil
}

func comparePred(op string, want bson.RawValue) func(bson.RawValue) bool {
	return func(v bson.RawValue) bool {
		if v.Type == 0 {
			// a missing field compares as null only to $gte/$lte null
			return want.Type == bson.TypeNull && (op == "$gte" || op == "$lte")
		}
		switch want.Type {
		case bson.TypeMinKey:
			return op == "$gt" && v.Type != bson.TypeMinKey || op == "$gte"
		case bson.TypeMaxKey:
			return op == "$lt" && v.Type != bson.TypeMaxKey || op == "$lte"
		}
		if typeOrder(v.Type) != typeOrder(want.Type) {
			return false
		}
		r := compareValues(v, want)
		switch op {
		case "$gt":
			return r > 0
		case "$gte":
			return r >= 0
		case "$lt":
			return r < 0
		}
		return r <= 0
	}
}

func inPred(op string, ov bson.RawValue) (func(bson.RawValue) bool, error) {
	arr, ok := ov.ArrayOK()
	if !ok {
		return nil, cerr(2, "%s needs an array", op)
	}
	vals, _ := arr.Values()
	// Plain scalars are looked up in a set (as mongod's $in keeps a sorted
	// set), so a long $in list costs one lookup, not one comparison each;
	// null, regexes, arrays and documents keep their own predicates.
	set := map[string]bool{}
	var preds []func(bson.RawValue) bool
	for _, x := range vals {
		if isOperatorDoc(x) {
			return nil, cerr(2, "cannot nest $ under %s", op)
		}
		if inSetKind(x) {
			set[keyString(x)] = true
			continue
		}
		p, err := equalityPred(x, true)
		if err != nil {
			return nil, err
		}
		preds = append(preds, p)
	}
	return func(v bson.RawValue) bool {
		if inSetKind(v) && set[keyString(v)] {
			return true
		}
		for _, p := range preds {
			if p(v) {
				return true
			}
		}
		return false
	}, nil
}

// inSetKind: values whose equality is exactly equality of their index key
// (numbers compare across types, 1 == 1.0, as mongod's index keys do).
func inSetKind(v bson.RawValue) bool {
	switch v.Type {
	case bson.TypeInt32, bson.TypeInt64, bson.TypeString, bson.TypeObjectID, bson.TypeBoolean, bson.TypeDateTime, bson.TypeTimestamp:
		return v.Validate() == nil
	case bson.TypeDouble:
		f, ok := v.DoubleOK()
		return ok && f == f // NaN keeps its own predicate
	}
	return false
}
