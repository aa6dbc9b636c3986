package sim

import (
	"regexp"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// lookupPath returns the value at a dotted path (missing → zero RawValue).
func lookupPath(doc bson.Raw, path string) bson.RawValue {
	v, err := doc.LookupErr(strings.Split(path, ".")...)
	if err != nil {
		return bson.RawValue{}
	}
	return v
}

// QueryError is a filter the simulator cannot evaluate.
type QueryError struct{ Msg string }

func (e *QueryError) Error() string { return e.Msg }

// Match reports whether doc satisfies filter (equality, comparison,
// $in/$nin, $exists, $and/$or/$nor, $not, $regex on strings).
func Match(doc, filter bson.Raw) (bool, error) {
	elems, err := filter.Elements()
	if err != nil {
		return false, err
	}
	for _, e := range elems {
		k, v := e.Key(), e.Value()
		switch k {
		case "$and", "$or", "$nor":
			arr, ok := v.ArrayOK()
			if !ok {
				return false, &QueryError{k + " must be an array"}
			}
			vals, _ := arr.Values()
			any, all := false, true
			for _, x := range vals {
				sub, ok := x.DocumentOK()
				if !ok {
					return false, &QueryError{k + " entries need to be full objects"}
				}
				m, err := Match(doc, sub)
				if err != nil {
					return false, err
				}
				any = any || m
				all = all && m
			}
			if k == "$and" && !all || k == "$or" && !any || k == "$nor" && any {
				return false, nil
			}
			continue
		case "$comment":
			continue
		case "$expr":
			m, err := exprMatches(doc, v)
			if err != nil || !m {
				return false, err
			}
			continue
		}
		if strings.HasPrefix(k, "$") {
			return false, &QueryError{"unknown top level operator: " + k}
		}
		m, err := matchField(doc, k, v)
		if err != nil || !m {
			return false, err
		}
	}
	return true, nil
}

func isOperatorDoc(v bson.RawValue) bool {
	d, ok := v.DocumentOK()
	if !ok {
		return false
	}
	e, err := d.IndexErr(0)
	return err == nil && strings.HasPrefix(e.Key(), "$")
}

// candidates: the field value, plus array elements (MongoDB array semantics).
func candidates(v bson.RawValue) []bson.RawValue {
	out := []bson.RawValue{v}
	if arr, ok := v.ArrayOK(); ok {
		vals, _ := arr.Values()
		out = append(out, vals...)
	}
	return out
}

func matchField(doc bson.Raw, path string, cond bson.RawValue) (bool, error) {
	val := lookupPath(doc, path)
	if !isOperatorDoc(cond) {
		return equalsAny(val, cond), nil
	}
	ops, _ := cond.Document().Elements()
	for _, op := range ops {
		ov := op.Value()
		var ok bool
		switch op.Key() {
		case "$eq":
			ok = equalsAny(val, ov)
		case "$ne":
			ok = !equalsAny(val, ov)
		case "$gt", "$gte", "$lt", "$lte":
			ok = false
			if val.Type == 0 {
				break
			}
			for _, c := range candidates(val) {
				if typeOrder(c.Type) != typeOrder(ov.Type) {
					continue
				}
				r := compareValues(c, ov)
				switch op.Key() {
				case "$gt":
					ok = ok || r > 0
				case "$gte":
					ok = ok || r >= 0
				case "$lt":
					ok = ok || r < 0
				case "$lte":
					ok = ok || r <= 0
				}
			}
		case "$in", "$nin":
			arr, isArr := ov.ArrayOK()
			if !isArr {
				return false, &QueryError{op.Key() + " needs an array"}
			}
			vals, _ := arr.Values()
			found := false
			for _, x := range vals {
				if equalsAny(val, x) {
					found = true
				}
			}
			ok = found == (op.Key() == "$in")
		case "$exists":
			want := true
			if b, isB := ov.BooleanOK(); isB {
				want = b
			} else if f, isN := ov.AsFloat64OK(); isN {
				want = f != 0
			}
			ok = (val.Type != 0) == want
		case "$not":
			sub, isDoc := ov.DocumentOK()
			if !isDoc {
				return false, &QueryError{"$not needs a document"}
			}
			m, err := matchField(doc, path, bson.RawValue{Type: bson.TypeEmbeddedDocument, Value: sub})
			if err != nil {
				return false, err
			}
			ok = !m
		case "$regex":
			pat, _ := ov.StringValueOK()
			if p, _, isRe := ov.RegexOK(); isRe {
				pat = p
			}
			re, err := regexp.Compile(pat)
			if err != nil {
				return false, &QueryError{"invalid regex"}
			}
			s, isS := val.StringValueOK()
			ok = isS && re.MatchString(s)
		case "$options":
			ok = true
		case "$size":
			arr, isArr := val.ArrayOK()
			n, _ := ov.AsInt64OK()
			if isArr {
				vals, _ := arr.Values()
				ok = int64(len(vals)) == n
			}
		default:
			return false, &QueryError{"unknown operator: " + op.Key()}
		}
		if !ok {
			return false, nil
		}
	}
	return true, nil
}

func equalsAny(val, want bson.RawValue) bool {
	if want.Type == bson.TypeNull && val.Type == 0 {
		return true
	}
	if val.Type == 0 {
		return false
	}
	if p, _, ok := want.RegexOK(); ok {
		re, err := regexp.Compile(p)
		if err != nil {
			return false
		}
		for _, c := range candidates(val) {
			if s, ok := c.StringValueOK(); ok && re.MatchString(s) {
				return true
			}
		}
		return false
	}
	for _, c := range candidates(val) {
		if typeOrder(c.Type) == typeOrder(want.Type) && compareValues(c, want) == 0 {
			return true
		}
	}
	return false
}
