package sim

import (
	"math"
	"math/rand/v2"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Trigonometry, bitwise operators, $rand, and the sizes and parts of BSON values.

func init() {
	trig := map[string]func(float64) float64{
		"$sin": math.Sin, "$cos": math.Cos, "$tan": math.Tan, "$asin": math.Asin, "$acos": math.Acos, "$atan": math.Atan,
		"$sinh": math.Sinh, "$cosh": math.Cosh, "$tanh": math.Tanh, "$asinh": math.Asinh, "$acosh": math.Acosh, "$atanh": math.Atanh,
		"$degreesToRadians": func(f float64) float64 { return f * math.Pi / 180 },
		"$radiansToDegrees": func(f float64) float64 { return f * 180 / math.Pi },
	}
	// the domain each function accepts, as mongod checks it (code 50989)
	domain := map[string][2]float64{"$asin": {-1, 1}, "$acos": {-1, 1}, "$atanh": {-1, 1}, "$acosh": {1, math.Inf(1)},
		"$sin": {math.Inf(-1), math.Inf(1)}, "$cos": {math.Inf(-1), math.Inf(1)}, "$tan": {math.Inf(-1), math.Inf(1)}}
	for op, f := range trig {
		exprOps[op] = unaryNumeric(op, func(n num) (bson.RawValue, error) {
			x := n.float()
			if d, ok := domain[op]; ok && !math.IsNaN(x) && (x < d[0] || x > d[1]) {
				return missing, cerr(50989, "cannot apply %s to %s, value must be in [%s,%s]", op, formatDouble(x), formatDouble(d[0]), formatDouble(d[1]))
			}
			return val(f(x)), nil
		})
	}
	exprOps["$atan2"] = func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		a, err := x.args("$atan2", arg, 2, 2)
		if err != nil {
			return missing, err
		}
		if nullish(a[0]) || nullish(a[1]) {
			return nullValue, nil
		}
		for i, v := range a {
			if !isArith(v) {
				return missing, cerr(int32(51044+i), "$atan2 only supports numeric types, not %s", exprTypeName(v))
			}
		}
		return val(math.Atan2(toNum(a[0]).float(), toNum(a[1]).float())), nil
	}
	for _, op := range []string{"$bitAnd", "$bitOr", "$bitXor"} {
		exprOps[op] = func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
			a, err := x.args(op, arg, 0, -1)
			if err != nil {
				return missing, err
			}
			acc := num{kind: 0}
			if op == "$bitAnd" {
				acc.i = -1
			}
			for _, v := range a {
				if nullish(v) {
					return nullValue, nil
				}
				if v.Type != bson.TypeInt32 && v.Type != bson.TypeInt64 {
					return missing, cerr(14, "%s only supports int and long operands.", op)
				}
				n := toNum(v)
				acc.kind = max(acc.kind, n.kind)
				switch op {
				case "$bitAnd":
					acc.i &= n.i
				case "$bitOr":
					acc.i |= n.i
				default:
					acc.i ^= n.i
				}
			}
			return acc.value(), nil
		}
	}
	exprOps["$bitNot"] = func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		a, err := x.args("$bitNot", arg, 1, 1)
		if err != nil {
			return missing, err
		}
		switch a[0].Type {
		case bson.TypeInt32:
			return val(^a[0].Int32()), nil
		case bson.TypeInt64:
			return val(^a[0].Int64()), nil
		}
		if nullish(a[0]) {
			return nullValue, nil
		}
		if isArith(a[0]) {
			return missing, cerr(14, "$bitNot only supports int and long, not: %s.", exprTypeName(a[0]))
		}
		return missing, cerr(28765, "$bitNot only supports numeric types, not %s", exprTypeName(a[0]))
	}
	exprOps["$rand"] = func(_ *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		if d, ok := arg.DocumentOK(); !ok || len(d) > 5 {
			return missing, cerr(3040501, "$rand not expecting arguments")
		}
		return val(rand.Float64()), nil
	}
	exprOps["$bsonSize"] = func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		a, err := x.args("$bsonSize", arg, 1, 1)
		if err != nil {
			return missing, err
		}
		if nullish(a[0]) {
			return nullValue, nil
		}
		if a[0].Type != bson.TypeEmbeddedDocument {
			return missing, cerr(31393, "$bsonSize requires a document input, found: %s", exprTypeName(a[0]))
		}
		return val(int32(len(a[0].Value))), nil
	}
	exprOps["$binarySize"] = func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		a, err := x.args("$binarySize", arg, 1, 1)
		if err != nil {
			return missing, err
		}
		switch a[0].Type {
		case bson.TypeString:
			return val(int32(len(a[0].StringValue()))), nil
		case bson.TypeBinary:
			_, b := a[0].Binary()
			return val(int32(len(b))), nil
		}
		if nullish(a[0]) {
			return nullValue, nil
		}
		return missing, cerr(51276, "$binarySize requires a string or BinData argument, found: %s", exprTypeName(a[0]))
	}
	for op, part := range map[string]func(t, i uint32) int64{
		"$tsSecond": func(t, _ uint32) int64 { return int64(t) }, "$tsIncrement": func(_, i uint32) int64 { return int64(i) },
	} {
		exprOps[op] = func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
			a, err := x.args(op, arg, 1, 1)
			if err != nil {
				return missing, err
			}
			if nullish(a[0]) {
				return nullValue, nil
			}
			if a[0].Type != bson.TypeTimestamp {
				return missing, cerr(5687301, "Argument to %s must be a timestamp, but is %s", op, exprTypeName(a[0]))
			}
			t, i := a[0].Timestamp()
			return val(part(t, i)), nil
		}
	}
}
