package sim

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// typeOrder is MongoDB's canonical BSON comparison order.
func typeOrder(t bson.Type) int {
	switch t {
	case bson.TypeMinKey:
		return 1
	case bson.TypeNull, bson.TypeUndefined, 0:
		return 2
	case bson.TypeDouble, bson.TypeInt32, bson.TypeInt64, bson.TypeDecimal128:
		return 3
	case bson.TypeString, bson.TypeSymbol:
		return 4
	case bson.TypeEmbeddedDocument:
		return 5
	case bson.TypeArray:
		return 6
	case bson.TypeBinary:
		return 7
	case bson.TypeObjectID:
		return 8
	case bson.TypeBoolean:
		return 9
	case bson.TypeDateTime:
		return 10
	case bson.TypeTimestamp:
		return 11
	case bson.TypeRegex:
		return 12
	case bson.TypeMaxKey:
		return 100
	}
	return 50
}

// compareValues orders two values as MongoDB does (numbers across types).
func compareValues(a, b bson.RawValue) int {
	oa, ob := typeOrder(a.Type), typeOrder(b.Type)
	if oa != ob {
		return cmpInt(oa, ob)
	}
	switch oa {
	case 2, 1, 100:
		return 0
	case 3:
		fa, _ := a.AsFloat64OK()
		fb, _ := b.AsFloat64OK()
		if ia, ok := a.Int64OK(); ok {
			if ib, ok := b.Int64OK(); ok {
				return cmpInt64(ia, ib)
			}
		}
		switch {
		case fa < fb:
			return -1
		case fa > fb:
			return 1
		}
		return 0
	case 4:
		sa, _ := a.StringValueOK()
		sb, _ := b.StringValueOK()
		return strings.Compare(sa, sb)
	case 9:
		ba, bb := a.Boolean(), b.Boolean()
		if ba == bb {
			return 0
		}
		if !ba {
			return -1
		}
		return 1
	case 10:
		return cmpInt64(a.DateTime(), b.DateTime())
	case 11:
		ta, ia := a.Timestamp()
		tb, ib := b.Timestamp()
		if ta != tb {
			return cmpInt64(int64(ta), int64(tb))
		}
		return cmpInt64(int64(ia), int64(ib))
	case 5, 6:
		return compareDocs(a, b)
	}
	return bytes.Compare(a.Value, b.Value)
}

func compareDocs(a, b bson.RawValue) int {
	da := bson.Raw(a.Value)
	db := bson.Raw(b.Value)
	ea, _ := da.Elements()
	eb, _ := db.Elements()
	for i := 0; i < len(ea) && i < len(eb); i++ {
		if c := compareValues(ea[i].Value(), eb[i].Value()); c != 0 {
			return c
		}
		if a.Type == bson.TypeEmbeddedDocument {
			if c := strings.Compare(ea[i].Key(), eb[i].Key()); c != 0 {
				return c
			}
		}
	}
	return cmpInt(len(ea), len(eb))
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

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

// ApplyUpdate returns the updated document for operator updates ($set,
// $unset, $inc, $setOnInsert, $push, $min, $max) or a replacement.
func ApplyUpdate(doc bson.Raw, upd bson.Raw, inserting bool) (bson.Raw, error) {
	first, err := upd.IndexErr(0)
	var d bson.D
	if err := bson.Unmarshal(doc, &d); err != nil {
		return nil, err
	}
	id := doc.Lookup("_id")
	if err != nil || !strings.HasPrefix(first.Key(), "$") {
		var repl bson.D
		if err := bson.Unmarshal(upd, &repl); err != nil {
			return nil, err
		}
		out := bson.D{}
		if id.Type != 0 {
			out = append(out, bson.E{Key: "_id", Value: id})
		}
		for _, e := range repl {
			if e.Key == "_id" {
				if id.Type == 0 {
					out = append(bson.D{e}, out...)
				}
				continue
			}
			out = append(out, e)
		}
		return bson.Marshal(out)
	}
	ops, _ := upd.Elements()
	for _, op := range ops {
		fields, ok := op.Value().DocumentOK()
		if !ok {
			return nil, &QueryError{fmt.Sprintf("Modifiers operate on fields but we found type %s instead.", typeName(op.Value().Type))}
		}
		fe, _ := fields.Elements()
		for _, f := range fe {
			path := strings.Split(f.Key(), ".")
			if f.Key() == "_id" && op.Key() != "$setOnInsert" && !inserting {
				return nil, &QueryError{"Performing an update on the path '_id' would modify the immutable field '_id'"}
			}
			switch op.Key() {
			case "$set":
				d = setPath(d, path, f.Value())
			case "$setOnInsert":
				if inserting {
					d = setPath(d, path, f.Value())
				}
			case "$unset":
				d = unsetPath(d, path)
			case "$inc":
				cur := getPath(d, path)
				d = setPath(d, path, addNumbers(cur, f.Value()))
			case "$min", "$max":
				cur := getPath(d, path)
				if cur == nil {
					d = setPath(d, path, f.Value())
					break
				}
				ct, cv, _ := bson.MarshalValue(cur)
				c := compareValues(bson.RawValue{Type: ct, Value: cv}, f.Value())
				if op.Key() == "$min" && c > 0 || op.Key() == "$max" && c < 0 {
					d = setPath(d, path, f.Value())
				}
			case "$push":
				cur := getPath(d, path)
				arr, _ := cur.(bson.A)
				d = setPath(d, path, append(arr, f.Value()))
			default:
				return nil, &QueryError{fmt.Sprintf("Unknown modifier: %s. Expected a valid update modifier or pipeline-style update specified as an array", op.Key())}
			}
		}
	}
	return bson.Marshal(d)
}

func getPath(d bson.D, path []string) any {
	for _, e := range d {
		if e.Key == path[0] {
			if len(path) == 1 {
				return e.Value
			}
			if sub, ok := e.Value.(bson.D); ok {
				return getPath(sub, path[1:])
			}
			return nil
		}
	}
	return nil
}

func setPath(d bson.D, path []string, v any) bson.D {
	for i, e := range d {
		if e.Key == path[0] {
			if len(path) == 1 {
				d[i].Value = v
				return d
			}
			sub, _ := e.Value.(bson.D)
			d[i].Value = setPath(sub, path[1:], v)
			return d
		}
	}
	if len(path) == 1 {
		return append(d, bson.E{Key: path[0], Value: v})
	}
	return append(d, bson.E{Key: path[0], Value: setPath(bson.D{}, path[1:], v)})
}

func unsetPath(d bson.D, path []string) bson.D {
	for i, e := range d {
		if e.Key == path[0] {
			if len(path) == 1 {
				return append(d[:i:i], d[i+1:]...)
			}
			if sub, ok := e.Value.(bson.D); ok {
				d[i].Value = unsetPath(sub, path[1:])
			}
			return d
		}
	}
	return d
}

func addNumbers(cur any, inc bson.RawValue) any {
	switch inc.Type {
	case bson.TypeInt32:
		switch c := cur.(type) {
		case int32:
			s := int64(c) + int64(inc.Int32())
			if s > math.MaxInt32 || s < math.MinInt32 {
				return s
			}
			return int32(s)
		case int64:
			return c + int64(inc.Int32())
		case float64:
			return c + float64(inc.Int32())
		case nil:
			return inc.Int32()
		}
	case bson.TypeInt64:
		switch c := cur.(type) {
		case int32:
			return int64(c) + inc.Int64()
		case int64:
			return c + inc.Int64()
		case float64:
			return c + float64(inc.Int64())
		case nil:
			return inc.Int64()
		}
	case bson.TypeDouble:
		switch c := cur.(type) {
		case int32:
			return float64(c) + inc.Double()
		case int64:
			return float64(c) + inc.Double()
		case float64:
			return c + inc.Double()
		case nil:
			return inc.Double()
		}
	}
	return cur
}
