package sim

import (
	"math"
	"sort"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// The accumulators of $group, $bucket and the accumulator expressions.

// accumulator folds the values of one group.
type accumulator interface {
	add(v bson.RawValue) error
	result() bson.RawValue
}

type accSum struct{ total num }

// errDecimal refuses Decimal128 where mongod would compute with it, rather than skip it silently.
func errDecimal(v bson.RawValue) error {
	if v.Type == bson.TypeDecimal128 {
		return cerr(2, "the simulator does not model Decimal128 arithmetic")
	}
	return nil
}

func (a *accSum) add(v bson.RawValue) error {
	if err := errDecimal(v); err != nil {
		return err
	}
	if isNumber(v) {
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
	if isNumber(v) {
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

func parseAccumulators(els []bson.RawElement) ([]accSpec, error) {
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
	if !isNumber(v) {
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

// accN keeps n values: the first, last, largest or smallest, or the top or
// bottom by a sort order (values are then {k: [sort keys], v: output}).
type accN struct {
	n      int64
	mode   string // first, last, max, min, sort
	single bool   // $top/$bottom: the value, not an array
	bottom bool   // kept in reverse order, answered in sort order
	dirs   []float64
	vals   []bson.RawValue
}

func (a *accN) less(x, y bson.RawValue) bool {
	if a.mode == "max" {
		return exprCmp(x, y) > 0
	}
	if a.mode == "min" {
		return exprCmp(x, y) < 0
	}
	kx, _ := arrayElems(x.Document().Lookup("k"))
	ky, _ := arrayElems(y.Document().Lookup("k"))
	for i, d := range a.dirs {
		if c := exprCmp(kx[i], ky[i]); c != 0 {
			return float64(c)*d < 0
		}
	}
	return false
}

func (a *accN) add(v bson.RawValue) error {
	switch a.mode {
	case "first":
		if int64(len(a.vals)) < a.n {
			a.vals = append(a.vals, v)
		}
		return nil
	case "last":
		a.vals = append(a.vals, v)
		if int64(len(a.vals)) > a.n {
			a.vals = a.vals[1:]
		}
		return nil
	case "max", "min":
		if nullish(v) {
			return nil
		}
	}
	i := sort.Search(len(a.vals), func(i int) bool { return a.less(v, a.vals[i]) })
	a.vals = append(a.vals[:i], append([]bson.RawValue{v}, a.vals[i:]...)...)
	if int64(len(a.vals)) > a.n {
		a.vals = a.vals[:a.n]
	}
	return nil
}

func (a *accN) result() bson.RawValue {
	out := make([]bson.RawValue, len(a.vals))
	for i, v := range a.vals {
		if a.mode == "sort" {
			v = v.Document().Lookup("v")
		}
		out[i] = v
	}
	if a.bottom {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	if a.single {
		if len(out) == 0 || out[0].Type == 0 {
			return nullValue
		}
		return out[0]
	}
	return arrayValue(out)
}

// accumulatorsN parse the accumulators that take named arguments.
var accumulatorsN = map[string]func(op string, arg bson.RawValue) (bson.RawValue, func() accumulator, error){
	"$firstN": parseAccN, "$lastN": parseAccN, "$maxN": parseAccN, "$minN": parseAccN,
	"$top": parseAccSort, "$bottom": parseAccSort, "$topN": parseAccSort, "$bottomN": parseAccSort,
}

// accNCount reads n: a constant positive integer.
func accNCount(op string, m map[string]bson.RawValue) (int64, error) {
	nv, err := newEvalCtx(emptyDoc, time.Time{}, nil).eval(m["n"])
	if err != nil {
		return 0, err
	}
	n, ok := intArg(nv)
	if !isNumber(nv) || !ok || nv.Type == bson.TypeDouble && nv.Double() != float64(n) {
		return 0, cerr(5787902, "Value for 'n' must be of integral type, but found %s", nv.String())
	}
	if n <= 0 {
		return 0, cerr(5787908, "'n' must be greater than 0, found %d", n)
	}
	return n, nil
}

func parseAccN(op string, arg bson.RawValue) (bson.RawValue, func() accumulator, error) {
	m, err := namedArgs(op, arg, 5787901, []string{"n", "input"}, "n", "input")
	if err != nil {
		return missing, nil, err
	}
	n, err := accNCount(op, m)
	if err != nil {
		return missing, nil, err
	}
	mode := strings.TrimSuffix(strings.TrimPrefix(op, "$"), "N")
	return m["input"], func() accumulator { return &accN{n: n, mode: mode} }, nil
}

func parseAccSort(op string, arg bson.RawValue) (bson.RawValue, func() accumulator, error) {
	single := op == "$top" || op == "$bottom"
	fields := []string{"sortBy", "output", "n"}
	required := []string{"sortBy", "output", "n"}
	if single {
		fields, required = fields[:2], required[:2]
	}
	m, err := namedArgs(op, arg, 5788002, fields, required...)
	if err != nil {
		return missing, nil, err
	}
	n := int64(1)
	if !single {
		if n, err = accNCount(op, m); err != nil {
			return missing, nil, err
		}
	}
	sd, ok := m["sortBy"].DocumentOK()
	if !ok {
		return missing, nil, cerr(5788004, "expected an object for 'sortBy' in %s, found %s", op, exprTypeName(m["sortBy"]))
	}
	keys, _ := sd.Elements()
	var dirs []float64
	var paths bson.A
	for _, k := range keys {
		d, ok := k.Value().AsFloat64OK()
		if !ok || d != 1 && d != -1 {
			return missing, nil, cerr(15975, "$sort key ordering must be 1 (for ascending) or -1 (for descending)")
		}
		if strings.HasPrefix(op, "$bottom") {
			d = -d
		}
		dirs = append(dirs, d)
		paths = append(paths, "$"+k.Key())
	}
	expr := val(bson.D{{Key: "k", Value: paths}, {Key: "v", Value: m["output"]}})
	bottom := strings.HasPrefix(op, "$bottom")
	return expr, func() accumulator { return &accN{n: n, mode: "sort", single: single, bottom: bottom, dirs: dirs} }, nil
}

// $firstN, $lastN, $maxN and $minN are also expressions over an array.
func init() {
	for _, op := range []string{"$firstN", "$lastN", "$maxN", "$minN"} {
		exprOps[op] = func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
			inE, mk, err := parseAccN(op, arg)
			if err != nil {
				return missing, err
			}
			in, err := x.eval(inE)
			if err != nil {
				return missing, err
			}
			el, ok := arrayElems(in)
			if !ok {
				return missing, cerr(5788200, "Input must be an array")
			}
			acc := mk()
			for _, e := range el {
				if err := acc.add(e); err != nil {
					return missing, err
				}
			}
			return acc.result(), nil
		}
	}
}

// accPercentile collects numbers for $percentile and $median; the
// percentile is the value at rank ceil(p·n), which is what mongod's
// approximation answers on the data sizes the simulator holds.
type accPercentile struct {
	ps     []float64
	single bool // $median: a number, not an array
	vals   []float64
}

func (a *accPercentile) add(v bson.RawValue) error {
	if err := errDecimal(v); err != nil {
		return err
	}
	if isNumber(v) {
		a.vals = append(a.vals, toNum(v).float())
	}
	return nil
}

func (a *accPercentile) result() bson.RawValue {
	sort.Float64s(a.vals)
	out := make([]bson.RawValue, len(a.ps))
	for i, p := range a.ps {
		out[i] = nullValue
		if n := len(a.vals); n > 0 {
			out[i] = val(a.vals[max(0, int(math.Ceil(p*float64(n)))-1)])
		}
	}
	if a.single {
		return out[0]
	}
	return arrayValue(out)
}

func parseAccPercentile(op string, arg bson.RawValue) (bson.RawValue, func() accumulator, error) {
	fields, required := []string{"input", "p", "method"}, []string{"input", "p", "method"}
	if op == "$median" {
		fields, required = []string{"input", "method"}, []string{"input", "method"}
	}
	m, err := namedArgs(op, arg, 7436200, fields, required...)
	if err != nil {
		return missing, nil, err
	}
	if s, _ := m["method"].StringValueOK(); s != "approximate" {
		return missing, nil, cerr(2, "Enumeration value '%s' for field '%s.method' is not a valid value.", m["method"].String(), op)
	}
	ps := []float64{0.5}
	if op == "$percentile" {
		el, ok := arrayElems(m["p"])
		if !ok || len(el) == 0 {
			return missing, nil, cerr(7750301, "%s 'p' must be a non-empty array of numbers, found %s", op, m["p"].String())
		}
		ps = nil
		for _, e := range el {
			if !isNumber(e) || toNum(e).float() < 0 || toNum(e).float() > 1 {
				return missing, nil, cerr(7750302, "%s 'p' must be an array of numeric values from [0.0, 1.0] range, but received incorrect value: %s", op, e.String())
			}
			ps = append(ps, toNum(e).float())
		}
	}
	single := op == "$median"
	return m["input"], func() accumulator { return &accPercentile{ps: ps, single: single} }, nil
}

// $percentile and $median are also expressions, over an array or several values.
func init() {
	accumulatorsN["$percentile"] = parseAccPercentile
	accumulatorsN["$median"] = parseAccPercentile
	for _, op := range []string{"$percentile", "$median"} {
		exprOps[op] = func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
			inE, mk, err := parseAccPercentile(op, arg)
			if err != nil {
				return missing, err
			}
			in, err := x.eval(inE)
			if err != nil {
				return missing, err
			}
			vals := []bson.RawValue{in}
			if el, ok := arrayElems(in); ok {
				vals = el
			}
			acc := mk()
			for _, v := range vals {
				if err := acc.add(v); err != nil {
					return missing, err
				}
			}
			return acc.result(), nil
		}
	}
}
