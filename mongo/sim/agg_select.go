package sim

import (
	"math"
	"sort"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// The accumulators that select values: the first, last, largest or smallest
// n, the top or bottom n by a sort order, and percentiles.

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
	if !isArith(nv) || !ok || nv.Type == bson.TypeDouble && nv.Double() != float64(n) {
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
	if isArith(v) {
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
			if !isArith(e) || toNum(e).float() < 0 || toNum(e).float() > 1 {
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
