package sim

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Arithmetic expressions. Numbers widen int → long → double as mongod's do:
// an int result that overflows becomes a long, a long that overflows a double.
// Decimal128 is not modelled.

// num is a number of one of the three modelled kinds.
type num struct {
	kind int // 0 int32, 1 int64, 2 double
	i    int64
	f    float64
}

func isArith(v bson.RawValue) bool {
	return v.Type == bson.TypeInt32 || v.Type == bson.TypeInt64 || v.Type == bson.TypeDouble
}

func toNum(v bson.RawValue) num {
	switch v.Type {
	case bson.TypeInt32:
		return num{kind: 0, i: int64(v.Int32())}
	case bson.TypeInt64:
		return num{kind: 1, i: v.Int64()}
	case bson.TypeDateTime:
		return num{kind: 1, i: v.DateTime()}
	}
	return num{kind: 2, f: v.Double()}
}

// int32OK reports whether n is an integer that fits in an int32, as mongod's
// "representable as a 32-bit integer" checks ask.
func (n num) int32OK() bool {
	if n.kind == 2 {
		return n.f == math.Trunc(n.f) && n.f >= math.MinInt32 && n.f <= math.MaxInt32
	}
	return n.i >= math.MinInt32 && n.i <= math.MaxInt32
}

func (n num) float() float64 {
	if n.kind == 2 {
		return n.f
	}
	return float64(n.i)
}

// value is the BSON value; an int32 kind out of int32 range is a long.
func (n num) value() bson.RawValue {
	switch n.kind {
	case 0:
		if n.i >= math.MinInt32 && n.i <= math.MaxInt32 {
			return val(int32(n.i))
		}
		return val(n.i)
	case 1:
		return val(n.i)
	}
	return val(n.f)
}

func addNum(a, b num) num {
	k := max(a.kind, b.kind)
	if k == 2 {
		return num{kind: 2, f: a.float() + b.float()}
	}
	s := a.i + b.i
	if (s > a.i) != (b.i > 0) { // overflow
		return num{kind: 2, f: a.float() + b.float()}
	}
	return num{kind: k, i: s}
}

func mulNum(a, b num) num {
	k := max(a.kind, b.kind)
	if k == 2 {
		return num{kind: 2, f: a.float() * b.float()}
	}
	p := a.i * b.i
	if a.i != 0 && (p/a.i != b.i || a.i == -1 && b.i == math.MinInt64) {
		return num{kind: 2, f: a.float() * b.float()}
	}
	return num{kind: k, i: p}
}

func init() {
	exprOps["$add"] = opAdd
	exprOps["$subtract"] = opSubtract
	exprOps["$multiply"] = func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		a, err := x.args("$multiply", arg, 0, -1)
		if err != nil {
			return missing, err
		}
		p := num{kind: 0, i: 1}
		for _, v := range a {
			if nullish(v) {
				return nullValue, nil
			}
			if !isArith(v) {
				return missing, cerr(14, "$multiply only supports numeric types, not %s", exprTypeName(v))
			}
			p = mulNum(p, toNum(v))
		}
		return p.value(), nil
	}
	exprOps["$divide"] = func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		a, err := x.args("$divide", arg, 2, 2)
		if err != nil {
			return missing, err
		}
		if isArith(a[0]) && isArith(a[1]) {
			d := toNum(a[1]).float()
			if d == 0 {
				return missing, cerr(2, "can't $divide by zero")
			}
			return val(toNum(a[0]).float() / d), nil
		}
		if nullish(a[0]) || nullish(a[1]) {
			return nullValue, nil
		}
		return missing, cerr(14, "$divide only supports numeric types, not %s and %s", exprTypeName(a[0]), exprTypeName(a[1]))
	}
	exprOps["$mod"] = func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		a, err := x.args("$mod", arg, 2, 2)
		if err != nil {
			return missing, err
		}
		if isArith(a[0]) && isArith(a[1]) {
			l, r := toNum(a[0]), toNum(a[1])
			if r.float() == 0 {
				return missing, cerr(2, "can't $mod by zero")
			}
			if max(l.kind, r.kind) == 2 {
				return val(math.Mod(l.float(), r.float())), nil
			}
			if r.i == -1 {
				return num{kind: max(l.kind, r.kind)}.value(), nil
			}
			return num{kind: max(l.kind, r.kind), i: l.i % r.i}.value(), nil
		}
		if nullish(a[0]) || nullish(a[1]) {
			return nullValue, nil
		}
		return missing, cerr(14, "$mod only supports numeric types, not %s and %s", exprTypeName(a[0]), exprTypeName(a[1]))
	}
	exprOps["$abs"] = unaryNumeric("$abs", func(n num) (bson.RawValue, error) {
		if n.kind == 2 {
			return val(math.Abs(n.f)), nil
		}
		if n.i == math.MinInt64 {
			return missing, cerr(28680, "can't take $abs of long long min")
		}
		if n.i < 0 {
			n.i = -n.i
		}
		return n.value(), nil
	})
	exprOps["$ceil"] = unaryNumeric("$ceil", floatOnly(math.Ceil))
	exprOps["$floor"] = unaryNumeric("$floor", floatOnly(math.Floor))
	exprOps["$sqrt"] = unaryNumeric("$sqrt", func(n num) (bson.RawValue, error) {
		if n.float() < 0 {
			return missing, cerr(28714, "$sqrt's argument must be greater than or equal to 0")
		}
		return val(math.Sqrt(n.float())), nil
	})
	exprOps["$round"] = roundOp("$round", math.RoundToEven)
	exprOps["$trunc"] = roundOp("$trunc", math.Trunc)
	exprOps["$pow"] = opPow
}

func opAdd(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
	a, err := x.args("$add", arg, 0, -1)
	if err != nil {
		return missing, err
	}
	sum := num{kind: 0}
	isDate := false
	for _, v := range a {
		if nullish(v) {
			return nullValue, nil
		}
		switch {
		case v.Type == bson.TypeDateTime:
			if isDate {
				return missing, cerr(16612, "only one date allowed in an $add expression")
			}
			isDate = true
			n := toNum(v)
			n.kind = 0 // a date does not widen the sum's type
			sum = addNum(sum, n)
		case isArith(v):
			sum = addNum(sum, toNum(v))
		default:
			return missing, cerr(14, "$add only supports numeric or date types, not %s", exprTypeName(v))
		}
	}
	if isDate {
		if sum.kind == 2 {
			if sum.f < math.MinInt64 || sum.f >= math.MaxInt64 {
				return missing, cerr(15, "date overflow in $add")
			}
			return val(bson.DateTime(int64(math.Round(sum.f)))), nil
		}
		return val(bson.DateTime(sum.i)), nil
	}
	return sum.value(), nil
}

func opSubtract(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
	a, err := x.args("$subtract", arg, 2, 2)
	if err != nil {
		return missing, err
	}
	l, r := a[0], a[1]
	switch {
	case nullish(l) || nullish(r):
		return nullValue, nil
	case isArith(l) && isArith(r):
		rn := toNum(r)
		if rn.kind == 2 {
			rn.f = -rn.f
		} else if rn.i == math.MinInt64 {
			rn = num{kind: 2, f: -float64(rn.i)}
		} else {
			rn.i = -rn.i
		}
		return addNum(toNum(l), rn).value(), nil
	case l.Type == bson.TypeDateTime && r.Type == bson.TypeDateTime:
		return val(l.DateTime() - r.DateTime()), nil
	case l.Type == bson.TypeDateTime && isArith(r):
		rn := toNum(r)
		ms := rn.i
		if rn.kind == 2 {
			ms = int64(math.Round(rn.f))
		}
		return val(bson.DateTime(l.DateTime() - ms)), nil
	case l.Type == bson.TypeDateTime:
		return missing, cerr(14, "cant $subtract a %s from a Date", exprTypeName(r))
	case r.Type == bson.TypeDateTime:
		return missing, cerr(14, "cant $subtract a Date from a %s", exprTypeName(l))
	}
	return missing, cerr(14, "cant $subtract a %s from a %s", exprTypeName(r), exprTypeName(l))
}

// unaryNumeric is an operator of one numeric argument: null gives null,
// a non-number 28765 (mongod's message).
func unaryNumeric(name string, f func(num) (bson.RawValue, error)) exprOp {
	return func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		a, err := x.args(name, arg, 1, 1)
		if err != nil {
			return missing, err
		}
		if nullish(a[0]) {
			return nullValue, nil
		}
		if !isArith(a[0]) {
			return missing, cerr(28765, "%s only supports numeric types, not %s", name, exprTypeName(a[0]))
		}
		return f(toNum(a[0]))
	}
}

// floatOnly applies f to doubles and leaves integers as they are.
func floatOnly(f func(float64) float64) func(num) (bson.RawValue, error) {
	return func(n num) (bson.RawValue, error) {
		if n.kind == 2 {
			return val(f(n.f)), nil
		}
		return n.value(), nil
	}
}

// roundOp is $round (half to even) or $trunc, with an optional place in [-20, 100].
func roundOp(name string, f func(float64) float64) exprOp {
	return func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		a, err := x.args(name, arg, 1, 2)
		if err != nil {
			return missing, err
		}
		place := int64(0)
		if len(a) == 2 {
			if nullish(a[1]) {
				return nullValue, nil
			}
			p, ok := a[1].AsInt64OK()
			if f, isF := a[1].DoubleOK(); isF && f == math.Trunc(f) {
				p, ok = int64(f), true
			}
			if !ok {
				return missing, cerr(51082, "%s requires \"place\" argument to be an integral value, found a value of type: %s, with value: %s", name, exprTypeName(a[1]), a[1].String())
			}
			if p < -20 || p > 100 {
				return missing, cerr(51083, "cannot apply %s with precision value %d value must be in [-20, 100]", name, p)
			}
			place = p
		}
		if nullish(a[0]) {
			return nullValue, nil
		}
		if !isArith(a[0]) {
			return missing, cerr(51081, "%s only supports numeric types, not %s", name, exprTypeName(a[0]))
		}
		n := toNum(a[0])
		if n.kind != 2 {
			if place >= 0 {
				return n.value(), nil
			}
			pow := math.Pow(10, float64(-place))
			r := f(float64(n.i)/pow) * pow
			return num{kind: n.kind, i: int64(r)}.value(), nil
		}
		pow := math.Pow(10, float64(place))
		return val(f(n.f*pow) / pow), nil
	}
}

func opPow(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
	a, err := x.args("$pow", arg, 2, 2)
	if err != nil {
		return missing, err
	}
	if nullish(a[0]) || nullish(a[1]) {
		return nullValue, nil
	}
	if !isArith(a[0]) {
		return missing, cerr(28762, "$pow's base must be numeric, not %s", exprTypeName(a[0]))
	}
	if !isArith(a[1]) {
		return missing, cerr(28763, "$pow's exponent must be numeric, not %s", exprTypeName(a[1]))
	}
	b, e := toNum(a[0]), toNum(a[1])
	if b.float() == 0 && e.float() < 0 {
		return missing, cerr(28764, "$pow cannot take a base of 0 and a negative exponent")
	}
	k := max(b.kind, e.kind)
	if k == 2 {
		return val(math.Pow(b.float(), e.float())), nil
	}
	if e.i < 0 {
		switch b.i {
		case 1:
			return num{kind: k, i: 1}.value(), nil
		case -1:
			if e.i%2 == 0 {
				return num{kind: k, i: 1}.value(), nil
			}
			return num{kind: k, i: -1}.value(), nil
		}
		return val(math.Pow(b.float(), e.float())), nil
	}
	switch b.i { // powers that never overflow
	case 0:
		if e.i == 0 {
			return num{kind: k, i: 1}.value(), nil
		}
		return num{kind: k}.value(), nil
	case 1:
		return num{kind: k, i: 1}.value(), nil
	case -1:
		return num{kind: k, i: 1 - 2*(e.i%2)}.value(), nil
	}
	r := num{kind: k, i: 1}
	for i := int64(0); i < e.i; i++ { // |b| >= 2: overflows within 64 steps
		r = mulNum(r, b)
		if r.kind == 2 {
			return val(math.Pow(b.float(), e.float())), nil
		}
	}
	return r.value(), nil
}

// The accumulators that are also expressions: over an array argument's
// elements, or over several arguments.
func init() {
	for _, op := range []string{"$sum", "$avg", "$min", "$max"} {
		exprOps[op] = func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
			ops := operands(arg)
			vals := make([]bson.RawValue, 0, len(ops))
			for _, o := range ops {
				v, err := x.eval(o)
				if err != nil {
					return missing, err
				}
				vals = append(vals, v)
			}
			if el, ok := arrayElems(arg); !ok || len(el) == 1 {
				if inner, isArr := arrayElems(vals[0]); isArr {
					vals = inner
				}
			}
			acc := accumulators[op]()
			for _, v := range vals {
				if err := acc.add(v); err != nil {
					return missing, err
				}
			}
			return acc.result(), nil
		}
	}
}

// Logarithms and exponentials, and $isNumber.
func init() {
	exprOps["$exp"] = unaryNumeric("$exp", func(n num) (bson.RawValue, error) { return val(math.Exp(n.float())), nil })
	exprOps["$ln"] = unaryNumeric("$ln", func(n num) (bson.RawValue, error) {
		if n.float() <= 0 {
			return missing, cerr(28766, "$ln's argument must be a positive number, but is %s", n.value().String())
		}
		return val(math.Log(n.float())), nil
	})
	exprOps["$log10"] = unaryNumeric("$log10", func(n num) (bson.RawValue, error) {
		if n.float() <= 0 {
			return missing, cerr(28761, "$log10's argument must be a positive number, but is %s", n.value().String())
		}
		return val(math.Log10(n.float())), nil
	})
	exprOps["$log"] = func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		a, err := x.args("$log", arg, 2, 2)
		if err != nil {
			return missing, err
		}
		if nullish(a[0]) || nullish(a[1]) {
			return nullValue, nil
		}
		switch {
		case !isArith(a[0]):
			return missing, cerr(28756, "$log's argument must be numeric, not %s", exprTypeName(a[0]))
		case !isArith(a[1]):
			return missing, cerr(28757, "$log's base must be numeric, not %s", exprTypeName(a[1]))
		case toNum(a[0]).float() <= 0:
			return missing, cerr(28758, "$log's argument must be a positive number, but is %s", a[0].String())
		case toNum(a[1]).float() <= 0 || toNum(a[1]).float() == 1:
			return missing, cerr(28759, "$log's base must be a positive number not equal to 1, but is %s", a[1].String())
		}
		return val(math.Log(toNum(a[0]).float()) / math.Log(toNum(a[1]).float())), nil
	}
	exprOps["$isNumber"] = func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		a, err := x.args("$isNumber", arg, 1, 1)
		if err != nil {
			return missing, err
		}
		return val(isArith(a[0]) || a[0].Type == bson.TypeDecimal128), nil
	}
}
