package sim

import (
	"math"
	"math/big"
	"strings"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// parseArg validates an operator's argument for one path (key).
func (o *updateOp) parseArg(key string) error {
	v := o.arg
	switch o.op {
	case "$inc", "$mul":
		if !isNumber(v.Type) {
			verb := map[string]string{"$inc": "increment", "$mul": "multiply"}[o.op]
			return cerr(14, "Cannot %s with non-numeric argument: %s", verb, showElem(key, v))
		}
	case "$rename":
		to, ok := v.StringValueOK()
		if !ok {
			return cerr(2, "The 'to' field for $rename must be a string: %s: %s", key, showValue(v))
		}
		for _, p := range o.path {
			if isPositional(p) {
				return cerr(2, "The source field for $rename may not be dynamic: %s", key)
			}
		}
		if to == key {
			return cerr(2, "The source and target field for $rename must differ: %s: %s", key, showValue(v))
		}
		if strings.HasPrefix(to, key+".") || strings.HasPrefix(key, to+".") {
			return cerr(2, "The source and target field for $rename must not be on the same path: %s: %s", key, showValue(v))
		}
		if to == "" || strings.Contains("."+to+".", "..") {
			return cerr(56, "The update path '%s' contains an empty field name, which is not allowed.", to)
		}
		o.to = strings.Split(to, ".")
		for _, p := range o.to {
			if isPositional(p) {
				return cerr(2, "The destination field for $rename may not be dynamic: %s", to)
			}
		}
	case "$currentDate":
		if v.Type == bson.TypeBoolean {
			return nil
		}
		d, ok := v.DocumentOK()
		if !ok {
			return cerr(2, "%s is not valid type for $currentDate. Please use a boolean ('true') or a $type expression ({$type: 'timestamp/date'}).", typeName(v.Type))
		}
		elems, _ := d.Elements()
		for _, e := range elems {
			if e.Key() != "$type" {
				return cerr(2, "Unrecognized $currentDate option: %s", e.Key())
			}
		}
		if t, _ := d.Lookup("$type").StringValueOK(); t != "date" && t != "timestamp" {
			return cerr(2, "The '$type' string field is required to be 'date' or 'timestamp': {$type: %s}", showValue(d.Lookup("$type")))
		}
	case "$bit":
		d, ok := v.DocumentOK()
		if !ok {
			return cerr(2, "The $bit modifier is not compatible with a %s. You must pass in an embedded document: {$bit: {field: {and/or/xor: #}}", typeName(v.Type))
		}
		elems, _ := d.Elements()
		if len(elems) == 0 {
			return cerr(2, "You must pass in at least one bitwise operation. The format is: {$bit: {field: {and/or/xor: #}}")
		}
		for _, e := range elems {
			if e.Key() != "and" && e.Key() != "or" && e.Key() != "xor" {
				return cerr(2, "The $bit modifier only supports 'and', 'or', and 'xor', not '%s' which is an unknown operator: %s", e.Key(), showElem(e.Key(), e.Value()))
			}
			if e.Value().Type != bson.TypeInt32 && e.Value().Type != bson.TypeInt64 {
				return cerr(2, "The $bit modifier field must be an Integer(32/64 bit); a '%s' is not supported here: %s", typeName(e.Value().Type), showElem(e.Key(), e.Value()))
			}
		}
	case "$pop":
		f, ok := v.AsFloat64OK()
		if !ok {
			return cerr(9, "Expected a number in: %s: %s", key, showValue(v))
		}
		if f != 1 && f != -1 {
			return cerr(9, "$pop expects 1 or -1, found: %s", showValue(v))
		}
	case "$pullAll":
		if v.Type != bson.TypeArray {
			return cerr(2, "$pullAll requires an array argument but was given a %s", typeName(v.Type))
		}
	case "$pull":
		return o.parsePull()
	case "$push", "$addToSet":
		return o.parsePush()
	}
	return nil
}

// leaf returns the function that applies o at one concrete path whose last
// component is field.
func (a *applier) leaf(o updateOp, field string) leafFn {
	arg := o.arg
	switch o.op {
	case "$set", "$setOnInsert":
		return func(any, bool) (any, leafOp, error) { return toGo(arg), leafSet, nil }
	case "$unset":
		return func(_ any, exists bool) (any, leafOp, error) {
			if !exists {
				return nil, leafKeep, nil
			}
			return nil, leafDelete, nil
		}
	case "$inc", "$mul":
		return func(cur any, exists bool) (any, leafOp, error) {
			if !exists {
				if o.op == "$mul" {
					return arith("$mul", zeroOf(arg), arg), leafSet, nil
				}
				return toGo(arg), leafSet, nil
			}
			c := toRaw(cur)
			if !isNumber(c.Type) {
				return nil, 0, cerr(14, "Cannot apply %s to a value of non-numeric type. %s has the field '%s' of non-numeric type %s", o.op, a.idText(), field, typeName(c.Type))
			}
			r := arith(o.op, c, arg)
			if r == nil {
				return nil, 0, cerr(2, "Failed to apply %s operations to current value (%s) for document %s", o.op, numberDebug(c), a.idText())
			}
			return r, leafSet, nil
		}
	case "$min", "$max":
		return func(cur any, exists bool) (any, leafOp, error) {
			if !exists {
				return toGo(arg), leafSet, nil
			}
			c := compareValues(toRaw(cur), arg)
			if o.op == "$min" && c > 0 || o.op == "$max" && c < 0 {
				return toGo(arg), leafSet, nil
			}
			return nil, leafKeep, nil
		}
	case "$currentDate":
		return func(any, bool) (any, leafOp, error) {
			if d, ok := arg.DocumentOK(); ok && stringValue(d.Lookup("$type")) == "timestamp" {
				return bson.Timestamp{T: uint32(time.Now().Unix()), I: currentDateCounter.Add(1)}, leafSet, nil
			}
			return bson.NewDateTimeFromTime(time.Now()), leafSet, nil
		}
	case "$bit":
		return func(cur any, exists bool) (any, leafOp, error) {
			var c bson.RawValue
			if exists {
				c = toRaw(cur)
				if c.Type != bson.TypeInt32 && c.Type != bson.TypeInt64 {
					return nil, 0, cerr(2, "Cannot apply $bit to a value of non-integral type.%s has the field %s of non-integer type %s", a.idText(), field, typeName(c.Type))
				}
			}
			return bitwise(c, arg.Document()), leafSet, nil
		}
	case "$push", "$addToSet":
		return func(cur any, exists bool) (any, leafOp, error) {
			arr := bson.A{}
			if exists {
				var ok bool
				if arr, ok = cur.(bson.A); !ok {
					if o.op == "$addToSet" {
						return nil, 0, cerr(2, "Cannot apply $addToSet to non-array field. Field named '%s' has non-array type %s", field, typeName(toRaw(cur).Type))
					}
					return nil, 0, cerr(2, "The field '%s' must be an array but is of type %s in document %s", field, typeName(toRaw(cur).Type), a.idText())
				}
			}
			if o.op == "$addToSet" {
				return addToSet(arr, o.push.each), leafSet, nil
			}
			return push(arr, o.push), leafSet, nil
		}
	case "$pop":
		return func(cur any, exists bool) (any, leafOp, error) {
			if !exists {
				return nil, leafKeep, nil
			}
			arr, ok := cur.(bson.A)
			if !ok {
				return nil, 0, cerr(14, "Path '%s' contains an element of non-array type '%s'", field, typeName(toRaw(cur).Type))
			}
			if len(arr) == 0 {
				return nil, leafKeep, nil
			}
			if f, _ := arg.AsFloat64OK(); f < 0 {
				return arr[1:], leafSet, nil
			}
			return arr[:len(arr)-1], leafSet, nil
		}
	case "$pull", "$pullAll":
		return func(cur any, exists bool) (any, leafOp, error) {
			if !exists {
				return nil, leafKeep, nil
			}
			arr, ok := cur.(bson.A)
			if !ok {
				return nil, 0, cerr(2, "Cannot apply %s to a non-array value", o.op)
			}
			out := bson.A{}
			for _, x := range arr {
				if !a.pulls(o, toRaw(x)) {
					out = append(out, x)
				}
			}
			return out, leafSet, nil
		}
	}
	return func(any, bool) (any, leafOp, error) { return nil, leafKeep, nil }
}

var currentDateCounter atomic.Uint32

func (a *applier) pulls(o updateOp, x bson.RawValue) bool {
	if o.op == "$pull" {
		return o.pull(x)
	}
	vals, _ := o.arg.Array().Values()
	for _, v := range vals {
		if typeOrder(v.Type) == typeOrder(x.Type) && compareValues(v, x) == 0 {
			return true
		}
	}
	return false
}

// rename moves the value at o.path to o.to ($unset then $set).
func (a *applier) rename(root any, o updateOp) (any, error) {
	v, ok := getPath(root, o.path)
	if !ok {
		return root, nil
	}
	for i := 1; i < len(o.path); i++ {
		if _, isArr := mustGet(root, o.path[:i]).(bson.A); isArr {
			return nil, cerr(2, "The source field cannot be an array element, '%s' in doc with %s", strings.Join(o.path, "."), showElem(o.path[0], toRaw(mustGet(root, o.path[:1]))))
		}
	}
	for i := 1; i < len(o.to); i++ {
		if p, _ := getPath(root, o.to[:i]); p != nil {
			if _, isArr := p.(bson.A); isArr {
				return nil, cerr(2, "The destination field cannot be an array element, '%s' in doc with %s", strings.Join(o.to, "."), showElem(o.to[0], toRaw(mustGet(root, o.to[:1]))))
			}
		}
	}
	root, err := modifyPath(root, "", o.path, false, func(any, bool) (any, leafOp, error) { return nil, leafDelete, nil })
	if err != nil {
		return nil, err
	}
	return modifyPath(root, "", o.to, true, func(any, bool) (any, leafOp, error) { return v, leafSet, nil })
}

func mustGet(root any, path []string) any {
	v, _ := getPath(root, path)
	return v
}

// arith is $inc or $mul with mongod's promotion: int32 overflows into
// int64, doubles win; nil when an int64 overflows (mongod refuses).
func arith(op string, cur, arg bson.RawValue) any {
	if cur.Type == bson.TypeDecimal128 || arg.Type == bson.TypeDecimal128 {
		return decimalArith(op, cur, arg)
	}
	if cur.Type == bson.TypeDouble || arg.Type == bson.TypeDouble {
		a, _ := cur.AsFloat64OK()
		b, _ := arg.AsFloat64OK()
		if op == "$mul" {
			return a * b
		}
		return a + b
	}
	a, _ := cur.AsInt64OK()
	b, _ := arg.AsInt64OK()
	var r int64
	var overflow bool
	if op == "$mul" {
		r = a * b
		overflow = a != 0 && (r/a != b || a == -1 && b == math.MinInt64 || b == -1 && a == math.MinInt64)
	} else {
		r = a + b
		overflow = (a > 0 && b > 0 && r < 0) || (a < 0 && b < 0 && r >= 0)
	}
	if overflow {
		return nil
	}
	if cur.Type == bson.TypeInt32 && arg.Type == bson.TypeInt32 && r >= math.MinInt32 && r <= math.MaxInt32 {
		return int32(r)
	}
	return r
}

// decimalArith: Decimal128 wins over the other number types; the result
// keeps 34 significant digits, as a Decimal128 holds.
func decimalArith(op string, cur, arg bson.RawValue) any {
	toBig := func(v bson.RawValue) (*big.Float, bool) {
		s := showValue(v)
		if d, ok := v.Decimal128OK(); ok {
			s = d.String()
		}
		f, ok := new(big.Float).SetPrec(256).SetString(s)
		return f, ok
	}
	a, okA := toBig(cur)
	b, okB := toBig(arg)
	if !okA || !okB {
		return nil // NaN and infinities are not modelled
	}
	r := new(big.Float).SetPrec(256)
	if op == "$mul" {
		r.Mul(a, b)
	} else {
		r.Add(a, b)
	}
	d, err := bson.ParseDecimal128(r.Text('g', 34))
	if err != nil {
		return nil
	}
	return d
}

// numberDebug prints a number as mongod's SafeNum does: (NumberLong)5.
func numberDebug(v bson.RawValue) string {
	name := map[bson.Type]string{bson.TypeInt32: "NumberInt", bson.TypeInt64: "NumberLong",
		bson.TypeDouble: "NumberDouble", bson.TypeDecimal128: "NumberDecimal"}[v.Type]
	s := showValue(v)
	if v.Type == bson.TypeDecimal128 {
		s = v.Decimal128().String()
	}
	return "(" + name + ")" + s
}

func zeroOf(v bson.RawValue) bson.RawValue {
	return toRaw(map[bson.Type]any{bson.TypeInt32: int32(0), bson.TypeInt64: int64(0), bson.TypeDouble: 0.0}[v.Type])
}

func bitwise(cur bson.RawValue, ops bson.Raw) any {
	x, _ := cur.AsInt64OK()
	long := cur.Type == bson.TypeInt64
	elems, _ := ops.Elements()
	for _, e := range elems {
		y, _ := e.Value().AsInt64OK()
		long = long || e.Value().Type == bson.TypeInt64
		switch e.Key() {
		case "and":
			x &= y
		case "or":
			x |= y
		case "xor":
			x ^= y
		}
	}
	if long {
		return x
	}
	return int32(x)
}
