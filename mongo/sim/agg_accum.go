package sim

import (
	"math"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// The accumulators of $group, $bucket and the accumulator expressions.

// accumulator folds the values of one group.
type accumulator interface {
	add(v bson.RawValue) error
	result() bson.RawValue
}

// errDecimal refuses Decimal128 where mongod would compute with it, rather than skip it silently.
func errDecimal(v bson.RawValue) error {
	if v.Type == bson.TypeDecimal128 {
		return cerr(2, "the simulator does not model Decimal128 arithmetic")
	}
	return nil
}

// accSum is $sum and $count.
type accSum struct{ total num }

func (a *accSum) add(v bson.RawValue) error {
	if err := errDecimal(v); err != nil {
		return err
	}
	if isArith(v) {
		a.total = addNum(a.total, toNum(v))
	}
	return nil
}
func (a *accSum) result() bson.RawValue { return a.total.value() }

type accAvg struct {
	sum   float64
	count int
}

func (a *accAvg) add(v bson.RawValue) error {
	if err := errDecimal(v); err != nil {
		return err
	}
	if isArith(v) {
		a.sum += toNum(v).float()
		a.count++
	}
	return nil
}

func (a *accAvg) result() bson.RawValue {
	if a.count == 0 {
		return nullValue
	}
	return val(a.sum / float64(a.count))
}

type accMinMax struct {
	sign int
	best bson.RawValue
}

func (a *accMinMax) add(v bson.RawValue) error {
	if nullish(v) {
		return nil
	}
	if a.best.Type == 0 || exprCmp(v, a.best)*a.sign > 0 {
		a.best = v
	}
	return nil
}

func (a *accMinMax) result() bson.RawValue {
	if a.best.Type == 0 {
		return nullValue
	}
	return a.best
}

type accPush struct {
	vals []bson.RawValue
	set  bool
	seen map[string]bool // $addToSet: group keys of vals
}

func (a *accPush) add(v bson.RawValue) error {
	if v.Type == 0 {
		return nil
	}
	if a.set {
		k := groupKey(v)
		if a.seen[k] {
			return nil
		}
		if a.seen == nil {
			a.seen = map[string]bool{}
		}
		a.seen[k] = true
	}
	a.vals = append(a.vals, v)
	return nil
}
func (a *accPush) result() bson.RawValue { return arrayValue(append([]bson.RawValue{}, a.vals...)) }

type accFirstLast struct {
	last bool
	seen bool
	v    bson.RawValue
}

func (a *accFirstLast) add(v bson.RawValue) error {
	if !a.seen || a.last {
		a.v, a.seen = v, true
	}
	return nil
}

func (a *accFirstLast) result() bson.RawValue {
	if a.v.Type == 0 {
		return nullValue
	}
	return a.v
}

type accMerge struct{ vals []bson.RawValue }

func (a *accMerge) add(v bson.RawValue) error {
	if nullish(v) {
		return nil
	}
	if _, ok := v.DocumentOK(); !ok {
		return cerr(40400, "$mergeObjects requires object inputs, but input %s is of type %s", v.String(), exprTypeName(v))
	}
	a.vals = append(a.vals, v)
	return nil
}

func (a *accMerge) result() bson.RawValue {
	r, _ := mergeObjects(a.vals)
	return r
}

// accumulators are the simple group operators: their argument is the
// expression evaluated on each document.
var accumulators = map[string]func() accumulator{
	"$sum":          func() accumulator { return &accSum{} },
	"$count":        func() accumulator { return &accSum{} },
	"$avg":          func() accumulator { return &accAvg{} },
	"$min":          func() accumulator { return &accMinMax{sign: -1} },
	"$max":          func() accumulator { return &accMinMax{sign: 1} },
	"$push":         func() accumulator { return &accPush{} },
	"$addToSet":     func() accumulator { return &accPush{set: true} },
	"$first":        func() accumulator { return &accFirstLast{} },
	"$last":         func() accumulator { return &accFirstLast{last: true} },
	"$mergeObjects": func() accumulator { return &accMerge{} },
	"$stdDevPop":    func() accumulator { return &accStdDev{} },
	"$stdDevSamp":   func() accumulator { return &accStdDev{sample: true} },
}

// accSpec is one output field of a group: its name, the expression evaluated
// on each document and the accumulator it feeds.
type accSpec struct {
	field string
	arg   bson.RawValue
	make  func() accumulator
}

func parseAccumulators(els []bson.RawElement, version string) ([]accSpec, error) {
	var out []accSpec
	for _, e := range els {
		name := e.Key()
		if strings.Contains(name, ".") {
			return nil, cerr(40235, "The field name '%s' cannot contain '.'", name)
		}
		if strings.HasPrefix(name, "$") {
			return nil, cerr(40236, "The field name '%s' cannot be an operator name", name)
		}
		d, ok := e.Value().DocumentOK()
		if !ok {
			return nil, cerr(40234, "The field '%s' must be an accumulator object", name)
		}
		ops, _ := d.Elements()
		if len(ops) != 1 {
			return nil, cerr(40238, "The field '%s' must specify one accumulator", name)
		}
		op, arg := ops[0].Key(), ops[0].Value()
		if !available(op, version) {
			return nil, cerr(15952, "unknown group operator '%s'", op)
		}
		if parse, ok := accumulatorsN[op]; ok {
			expr, mk, err := parse(op, arg)
			if err != nil {
				return nil, err
			}
			out = append(out, accSpec{field: name, arg: expr, make: mk})
			continue
		}
		mk, ok := accumulators[op]
		if !ok {
			return nil, cerr(15952, "unknown group operator '%s'", op)
		}
		if op == "$count" {
			if cd, ok := arg.DocumentOK(); !ok || len(cd) > 5 {
				return nil, cerr(2, "$count takes no arguments, i.e. $count:{}")
			}
			arg = val(int32(1))
		} else if arg.Type == bson.TypeArray {
			return nil, cerr(40237, "The %s accumulator is a unary operator", op)
		}
		out = append(out, accSpec{field: name, arg: arg, make: mk})
	}
	return out, nil
}

// accStdDev is the population or sample standard deviation (Welford's method).
type accStdDev struct {
	sample    bool
	n         int
	mean, m2v float64
}

func (a *accStdDev) add(v bson.RawValue) error {
	if err := errDecimal(v); err != nil {
		return err
	}
	if !isArith(v) {
		return nil
	}
	f := toNum(v).float()
	a.n++
	d := f - a.mean
	a.mean += d / float64(a.n)
	a.m2v += d * (f - a.mean)
	return nil
}

func (a *accStdDev) result() bson.RawValue {
	switch {
	case a.sample && a.n < 2, a.n == 0:
		return nullValue
	case a.sample:
		return val(math.Sqrt(a.m2v / float64(a.n-1)))
	}
	return val(math.Sqrt(a.m2v / float64(a.n)))
}
