package sim

import (
	"sort"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// $setWindowFields: partitions sorted by sortBy, each output field an
// accumulator over a document or range window, or a rank/shift/fill operator;
// and $fill, which mongod builds on it.

func init() {
	stages["$setWindowFields"] = stageSetWindowFields
	stages["$fill"] = stageFill
}

// windowBound is one end of a window: unbounded, the current document, or an offset.
type windowBound struct {
	unbounded, current bool
	off                bson.RawValue
}

// windowOutput is one output field of $setWindowFields.
type windowOutput struct {
	field     []string
	op        string
	arg       bson.RawValue
	make      func() accumulator
	byRange   bool
	lo, hi    windowBound
	unit      string
	shiftBy   int64
	shiftDflt bson.RawValue
}

func parseBound(v bson.RawValue, byRange bool) (windowBound, error) {
	if s, ok := v.StringValueOK(); ok {
		switch s {
		case "unbounded":
			return windowBound{unbounded: true}, nil
		case "current":
			return windowBound{current: true}, nil
		}
	}
	if !isArith(v) {
		return windowBound{}, cerr(5339904, "Window bounds must be 'unbounded', 'current', or a number, found %s", v.String())
	}
	if !byRange {
		if n, _ := intArg(v); v.Type == bson.TypeDouble && v.Double() != float64(n) {
			return windowBound{}, cerr(5339905, "Numeric document-based bounds must be an integer")
		}
	}
	return windowBound{off: v}, nil
}

func parseWindowOutput(name string, spec bson.RawValue, sortKeys []bson.RawElement, version string) (*windowOutput, error) {
	d, ok := spec.DocumentOK()
	if !ok {
		return nil, cerr(codeFailedToParse, "The field '%s' must be an object", name)
	}
	w := &windowOutput{field: strings.Split(name, "."), lo: windowBound{unbounded: true}, hi: windowBound{unbounded: true}}
	els, _ := d.Elements()
	for _, e := range els {
		if e.Key() == "window" {
			wd, ok := e.Value().DocumentOK()
			if !ok {
				return nil, cerr(codeFailedToParse, "'window' field must be an object")
			}
			wels, _ := wd.Elements()
			for _, we := range wels {
				switch we.Key() {
				case "documents", "range":
					b, ok := arrayElems(we.Value())
					if !ok || len(b) != 2 {
						return nil, cerr(codeFailedToParse, "Window bounds must be a 2-element array: %s", we.Value().String())
					}
					w.byRange = we.Key() == "range"
					var err error
					if w.lo, err = parseBound(b[0], w.byRange); err != nil {
						return nil, err
					}
					if w.hi, err = parseBound(b[1], w.byRange); err != nil {
						return nil, err
					}
				case "unit":
					w.unit, _ = we.Value().StringValueOK()
					if !timeUnits[w.unit] {
						return nil, cerr(codeFailedToParse, "unknown time unit value: %s", w.unit)
					}
				default:
					return nil, cerr(codeFailedToParse, "'window' field can only contain 'documents' as the only argument or 'range' with an optional 'unit' field")
				}
			}
			if (w.byRange || !w.lo.unbounded || !w.hi.unbounded) && len(sortKeys) == 0 {
				return nil, cerr(5339901, "Document-based bounds require a sortBy")
			}
			if w.byRange && len(sortKeys) != 1 {
				return nil, cerr(5339902, "Range-based bounds require sortBy a single field")
			}
			continue
		}
		if w.op != "" {
			return nil, cerr(codeFailedToParse, "Two operators found in the window field '%s': %s and %s", name, w.op, e.Key())
		}
		w.op, w.arg = e.Key(), e.Value()
	}
	switch {
	case !available(w.op, version):
		return nil, cerr(codeFailedToParse, "Unrecognized window function, %s", w.op)
	case w.op == "":
		return nil, cerr(codeFailedToParse, "Expected a $-prefixed window function, %s", name)
	case w.op == "$rank" || w.op == "$denseRank" || w.op == "$documentNumber":
		if len(sortKeys) != 1 {
			return nil, cerr(5371602, "%s must be specified with a top level sortBy expression with exactly one element", w.op)
		}
	case w.op == "$locf" || w.op == "$linearFill":
		if w.op == "$linearFill" && len(sortKeys) != 1 {
			return nil, cerr(605001, "$linearFill must be specified with a top level sortBy expression with exactly one element")
		}
	case w.op == "$shift":
		m, err := namedArgs("$shift", w.arg, 5433602, []string{"output", "by", "default"}, "output", "by")
		if err != nil {
			return nil, err
		}
		if len(sortKeys) == 0 {
			return nil, cerr(5433604, "$shift requires a sortBy")
		}
		by, ok := intArg(m["by"])
		if !isArith(m["by"]) || !ok {
			return nil, cerr(5433603, "'$shift:by' field must be an integer, but found %s", m["by"].String())
		}
		w.arg, w.shiftBy, w.shiftDflt = m["output"], by, m["default"]
		if w.shiftDflt.Type == 0 {
			w.shiftDflt = nullValue
		}
	default:
		if parse, ok := accumulatorsN[w.op]; ok {
			expr, mk, err := parse(w.op, w.arg)
			if err != nil {
				return nil, err
			}
			w.arg, w.make = expr, mk
			break
		}
		mk, ok := accumulators[w.op]
		if !ok || w.op == "$mergeObjects" {
			return nil, cerr(codeFailedToParse, "Unrecognized window function, %s", w.op)
		}
		if w.op == "$count" {
			w.arg = val(int32(1))
		}
		w.make = mk
	}
	return w, nil
}

func stageSetWindowFields(p *pipeline, spec bson.RawValue, docs []bson.Raw) ([]bson.Raw, error) {
	s, ok := spec.DocumentOK()
	if !ok {
		return nil, cerr(codeFailedToParse, "$setWindowFields must be an object")
	}
	var partitionBy bson.RawValue
	var sortBy bson.Raw
	var outputs bson.Raw
	els, _ := s.Elements()
	for _, e := range els {
		switch e.Key() {
		case "partitionBy":
			partitionBy = e.Value()
		case "sortBy":
			if sortBy, ok = e.Value().DocumentOK(); !ok {
				return nil, cerr(14, "BSON field '$setWindowFields.sortBy' is the wrong type '%s', expected type 'object'", exprTypeName(e.Value()))
			}
		case "output":
			if outputs, ok = e.Value().DocumentOK(); !ok {
				return nil, cerr(14, "BSON field '$setWindowFields.output' is the wrong type '%s', expected type 'object'", exprTypeName(e.Value()))
			}
		default:
			return nil, cerr(40415, "BSON field '$setWindowFields.%s' is an unknown field.", e.Key())
		}
	}
	if outputs == nil {
		return nil, cerr(40414, "BSON field '$setWindowFields.output' is missing but a required field")
	}
	var sortKeys []bson.RawElement
	if sortBy != nil {
		sortKeys, _ = sortBy.Elements()
	}
	var outs []*windowOutput
	oels, _ := outputs.Elements()
	for _, e := range oels {
		w, err := parseWindowOutput(e.Key(), e.Value(), sortKeys, p.version)
		if err != nil {
			return nil, err
		}
		outs = append(outs, w)
	}
	// sort by partition, then sortBy, as mongod's own $sort does
	type row struct {
		part bson.RawValue
		keys []bson.RawValue
		doc  bson.Raw
	}
	rows := make([]row, len(docs))
	for i, d := range docs {
		x := p.ctx(d)
		part := nullValue
		if partitionBy.Type != 0 {
			v, err := x.eval(partitionBy)
			if err != nil {
				return nil, err
			}
			if v.Type != 0 {
				part = v
			}
		}
		rows[i] = row{part: part, doc: d}
		for _, k := range sortKeys {
			rows[i].keys = append(rows[i].keys, exprPath(docValue(d), strings.Split(k.Key(), ".")))
		}
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if c := exprCmp(rows[i].part, rows[j].part); c != 0 {
			return c < 0
		}
		for k, e := range sortKeys {
			dir, _ := e.Value().AsFloat64OK()
			if c := exprCmp(rows[i].keys[k], rows[j].keys[k]); c != 0 {
				return float64(c)*dir < 0
			}
		}
		return false
	})
	out := make([]bson.Raw, 0, len(rows))
	for start := 0; start < len(rows); {
		end := start
		for end < len(rows) && groupKey(rows[end].part) == groupKey(rows[start].part) {
			end++
		}
		part := rows[start:end]
		results := make([][]bson.RawValue, len(outs))
		for oi, w := range outs {
			results[oi] = make([]bson.RawValue, len(part))
			vals := make([]bson.RawValue, len(part))
			for i, r := range part {
				v, err := p.ctx(r.doc).eval(w.arg)
				if err != nil {
					return nil, err
				}
				vals[i] = v
			}
			for i := range part {
				v, err := windowValue(w, i, vals, func(j int) bson.RawValue {
					if len(part[j].keys) == 0 {
						return missing
					}
					return part[j].keys[0]
				})
				if err != nil {
					return nil, err
				}
				results[oi][i] = v
			}
		}
		for i, r := range part {
			d := r.doc
			for oi, w := range outs {
				d = setRaw(d, w.field, results[oi][i])
			}
			out = append(out, d)
		}
		start = end
	}
	return out, nil
}

// windowValue computes output w for the i-th document of a partition.
func windowValue(w *windowOutput, i int, vals []bson.RawValue, key func(int) bson.RawValue) (bson.RawValue, error) {
	switch w.op {
	case "$documentNumber":
		return val(int64(i + 1)), nil
	case "$rank", "$denseRank":
		rank, dense := 1, 1
		for j := 1; j <= i; j++ {
			if exprCmp(key(j), key(j-1)) != 0 {
				rank, dense = j+1, dense+1
			}
		}
		if w.op == "$rank" {
			return val(int32(rank)), nil
		}
		return val(int32(dense)), nil
	case "$locf":
		for j := i; j >= 0; j-- {
			if !nullish(vals[j]) {
				return vals[j], nil
			}
		}
		return nullValue, nil
	case "$linearFill":
		return linearFill(i, vals, key)
	case "$shift":
		j := int64(i) + w.shiftBy
		if j < 0 || j >= int64(len(vals)) {
			return w.shiftDflt, nil
		}
		if vals[j].Type == 0 {
			return nullValue, nil
		}
		return vals[j], nil
	}
	var lo, hi int
	if w.byRange {
		cur := key(i)
		in := func(j int, b windowBound, upper bool) bool {
			if b.unbounded {
				return true
			}
			bound := cur
			if !b.current {
				var err error
				if bound, err = shiftKey(cur, b.off, w.unit); err != nil {
					return false
				}
			}
			c := exprCmp(key(j), bound)
			if upper {
				return c <= 0
			}
			return c >= 0
		}
		lo, hi = len(vals), -1
		for j := range vals {
			if in(j, w.lo, false) && in(j, w.hi, true) {
				lo, hi = min(lo, j), max(hi, j)
			}
		}
	} else {
		off := func(b windowBound, dflt int) int {
			switch {
			case b.unbounded:
				return dflt
			case b.current:
				return i
			}
			n, _ := intArg(b.off)
			return i + int(n)
		}
		lo, hi = max(off(w.lo, 0), 0), min(off(w.hi, len(vals)-1), len(vals)-1)
	}
	acc := w.make()
	for j := lo; j <= hi; j++ {
		if err := acc.add(vals[j]); err != nil {
			return missing, err
		}
	}
	return acc.result(), nil
}

// shiftKey is a range bound: the current sort value plus an offset (a time unit for dates).
func shiftKey(cur, off bson.RawValue, unit string) (bson.RawValue, error) {
	if cur.Type == bson.TypeDateTime {
		if unit == "" {
			return missing, cerr(5429513, "Explicit unit required for range-based bounds on a date field")
		}
		n, _ := intArg(off)
		return val(bson.NewDateTimeFromTime(addUnits(time.UnixMilli(cur.DateTime()).UTC(), unit, n))), nil
	}
	if !isArith(cur) {
		return missing, cerr(5429414, "Invalid range: Expected the sortBy field to be a number, but it was %s", exprTypeName(cur))
	}
	return addNum(toNum(cur), toNum(off)).value(), nil
}

// linearFill interpolates a null between the nearest non-null values before
// and after it, along the (numeric or date) sort key.
func linearFill(i int, vals []bson.RawValue, key func(int) bson.RawValue) (bson.RawValue, error) {
	if !nullish(vals[i]) {
		return vals[i], nil
	}
	prev, next := -1, -1
	for j := i - 1; j >= 0 && prev < 0; j-- {
		if !nullish(vals[j]) {
			prev = j
		}
	}
	for j := i + 1; j < len(vals) && next < 0; j++ {
		if !nullish(vals[j]) {
			next = j
		}
	}
	if prev < 0 || next < 0 {
		return nullValue, nil
	}
	pos := func(v bson.RawValue) (float64, error) {
		switch {
		case v.Type == bson.TypeDateTime:
			return float64(v.DateTime()), nil
		case isArith(v):
			return toNum(v).float(), nil
		}
		return 0, cerr(6050106, "There can be no repeated values in the sort field or non-numeric values for $linearFill")
	}
	xp, err := pos(key(prev))
	if err != nil {
		return missing, err
	}
	xn, err := pos(key(next))
	if err != nil {
		return missing, err
	}
	xi, err := pos(key(i))
	if err != nil {
		return missing, err
	}
	if !isArith(vals[prev]) || !isArith(vals[next]) {
		return missing, cerr(6050104, "Value to be filled must be numeric or nullish, but found %s", exprTypeName(vals[prev]))
	}
	yp, yn := toNum(vals[prev]).float(), toNum(vals[next]).float()
	return val(yp + (yn-yp)*(xi-xp)/(xn-xp)), nil
}

// stageFill is mongod's $fill, which it rewrites into $setWindowFields (for
// locf and linear) and $addFields (for value); so does this.
func stageFill(p *pipeline, spec bson.RawValue, docs []bson.Raw) ([]bson.Raw, error) {
	s, ok := spec.DocumentOK()
	if !ok {
		return nil, cerr(14, "$fill specification must be an object, found %s", exprTypeName(spec))
	}
	window := bson.D{}
	var byMethod, byValue bson.D
	els, _ := s.Elements()
	for _, e := range els {
		switch e.Key() {
		case "partitionBy", "sortBy":
			window = append(window, bson.E{Key: e.Key(), Value: e.Value()})
		case "partitionByFields":
			fields, ok := arrayElems(e.Value())
			if !ok {
				return nil, cerr(14, "BSON field '$fill.partitionByFields' is the wrong type '%s', expected type 'array'", exprTypeName(e.Value()))
			}
			part := bson.D{}
			for _, f := range fields {
				name, _ := f.StringValueOK()
				part = append(part, bson.E{Key: name, Value: "$" + name})
			}
			window = append(window, bson.E{Key: "partitionBy", Value: part})
		case "output":
			od, ok := e.Value().DocumentOK()
			if !ok {
				return nil, cerr(14, "BSON field '$fill.output' is the wrong type '%s', expected type 'object'", exprTypeName(e.Value()))
			}
			oels, _ := od.Elements()
			for _, o := range oels {
				spec, ok := o.Value().DocumentOK()
				if !ok {
					return nil, cerr(14, "BSON field '$fill.output.%s' is the wrong type, expected type 'object'", o.Key())
				}
				path := "$" + o.Key()
				if v, err := spec.LookupErr("value"); err == nil {
					byValue = append(byValue, bson.E{Key: o.Key(), Value: bson.D{{Key: "$ifNull", Value: bson.A{path, v}}}})
					continue
				}
				switch m, _ := spec.Lookup("method").StringValueOK(); m {
				case "locf":
					byMethod = append(byMethod, bson.E{Key: o.Key(), Value: bson.D{{Key: "$locf", Value: path}}})
				case "linear":
					byMethod = append(byMethod, bson.E{Key: o.Key(), Value: bson.D{{Key: "$linearFill", Value: path}}})
				default:
					return nil, cerr(6050202, "Method must be either locf or linear")
				}
			}
		default:
			return nil, cerr(40415, "BSON field '$fill.%s' is an unknown field.", e.Key())
		}
	}
	if byMethod == nil && byValue == nil {
		return nil, cerr(40414, "BSON field '$fill.output' is missing but a required field")
	}
	var err error
	if byMethod != nil {
		window = append(window, bson.E{Key: "output", Value: byMethod})
		if docs, err = stageSetWindowFields(p, val(window), docs); err != nil {
			return nil, err
		}
	}
	if byValue != nil {
		return stageAddFields(p, val(byValue), docs)
	}
	return docs, nil
}
