package sim

import (
	"sort"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// $densify: adds documents so that a numeric or date field takes every value
// of a step grid, in each partition.

func init() {
	stages["$densify"] = stageDensify
}

// densifySpec is a parsed $densify.
type densifySpec struct {
	field     []string
	partition []string
	step      bson.RawValue
	unit      string
	bounds    string // "full", "partition" or "" for explicit lo/hi
	lo, hi    bson.RawValue
}

func parseDensify(spec bson.RawValue) (*densifySpec, error) {
	s, ok := spec.DocumentOK()
	if !ok {
		return nil, cerr(14, "$densify specification must be an object, found %s", exprTypeName(spec))
	}
	d := &densifySpec{}
	els, _ := s.Elements()
	for _, e := range els {
		v := e.Value()
		switch e.Key() {
		case "field":
			f, ok := v.StringValueOK()
			if !ok || f == "" || strings.HasPrefix(f, "$") {
				return nil, cerr(5733412, "Cannot densify field path %s: must be a non-empty field path without '$'", v.String())
			}
			d.field = strings.Split(f, ".")
		case "partitionByFields":
			fields, ok := arrayElems(v)
			if !ok {
				return nil, cerr(14, "BSON field '$densify.partitionByFields' is the wrong type '%s', expected type 'array'", exprTypeName(v))
			}
			for _, f := range fields {
				name, _ := f.StringValueOK()
				d.partition = append(d.partition, name)
			}
		case "range":
			r, ok := v.DocumentOK()
			if !ok {
				return nil, cerr(14, "BSON field '$densify.range' is the wrong type '%s', expected type 'object'", exprTypeName(v))
			}
			d.step = r.Lookup("step")
			if !isArith(d.step) || toNum(d.step).float() <= 0 {
				return nil, cerr(5733401, "the step parameter in a range statement must be a strictly positive numeric value")
			}
			if u, ok := r.Lookup("unit").StringValueOK(); ok {
				if !timeUnits[u] {
					return nil, cerr(5439014, "$densify parameter 'unit' value cannot be recognized as a time unit: %s", u)
				}
				d.unit = u
			}
			b := r.Lookup("bounds")
			if str, ok := b.StringValueOK(); ok && (str == "full" || str == "partition") {
				d.bounds = str
			} else if arr, ok := arrayElems(b); ok && len(arr) == 2 && exprCmp(arr[0], arr[1]) <= 0 && typeOrder(arr[0].Type) == typeOrder(arr[1].Type) {
				d.lo, d.hi = arr[0], arr[1]
			} else {
				return nil, cerr(5946802, "Bounds must be 'full', 'partition', or an array of two ascending values, found %s", b.String())
			}
		default:
			return nil, cerr(40415, "BSON field '$densify.%s' is an unknown field.", e.Key())
		}
	}
	if d.field == nil || d.step.Type == 0 {
		return nil, cerr(40414, "BSON field '$densify.field' and '$densify.range' are required")
	}
	return d, nil
}

// next is v plus one step.
func (d *densifySpec) next(v bson.RawValue) (bson.RawValue, error) {
	if v.Type == bson.TypeDateTime {
		if d.unit == "" {
			return missing, cerr(5733410, "Densify field type must be numeric if no unit is provided, found date")
		}
		n, _ := intArg(d.step)
		return val(bson.NewDateTimeFromTime(addUnits(time.UnixMilli(v.DateTime()).UTC(), d.unit, n))), nil
	}
	if !isArith(v) {
		return missing, cerr(5733409, "Densify field must be numeric or a date, found %s", exprTypeName(v))
	}
	if d.unit != "" {
		return missing, cerr(6053600, "Densify field must be a date when a unit is provided")
	}
	return addNum(toNum(v), toNum(d.step)).value(), nil
}

func stageDensify(p *pipeline, spec bson.RawValue, docs []bson.Raw) ([]bson.Raw, error) {
	d, err := parseDensify(spec)
	if err != nil {
		return nil, err
	}
	type part struct {
		key   bson.D
		docs  []bson.Raw
		other []bson.Raw // field null or missing: passed through first
	}
	parts := map[string]*part{}
	var order []*part
	var gmin, gmax bson.RawValue
	for _, doc := range docs {
		key := bson.D{}
		for _, f := range d.partition {
			if v := exprPath(docValue(doc), strings.Split(f, ".")); v.Type != 0 {
				key = append(key, bson.E{Key: f, Value: v})
			}
		}
		k := groupKey(val(key))
		pt, ok := parts[k]
		if !ok {
			pt = &part{key: key}
			parts[k] = pt
			order = append(order, pt)
		}
		v := exprPath(docValue(doc), d.field)
		if nullish(v) {
			pt.other = append(pt.other, doc)
			continue
		}
		pt.docs = append(pt.docs, doc)
		if gmin.Type == 0 || exprCmp(v, gmin) < 0 {
			gmin = v
		}
		if gmax.Type == 0 || exprCmp(v, gmax) > 0 {
			gmax = v
		}
	}
	sort.SliceStable(order, func(i, j int) bool { return exprCmp(val(order[i].key), val(order[j].key)) < 0 })
	var out []bson.Raw
	for _, pt := range order {
		value := func(doc bson.Raw) bson.RawValue { return exprPath(docValue(doc), d.field) }
		sort.SliceStable(pt.docs, func(i, j int) bool { return exprCmp(value(pt.docs[i]), value(pt.docs[j])) < 0 })
		lo, hi := d.lo, d.hi
		switch {
		case d.bounds == "full":
			lo, hi = gmin, gmax
		case d.bounds == "partition" && len(pt.docs) > 0:
			lo, hi = value(pt.docs[0]), value(pt.docs[len(pt.docs)-1])
		case d.bounds == "partition":
			lo, hi = missing, missing
		}
		out = append(out, pt.other...)
		i := 0
		for g := lo; g.Type != 0 && exprCmp(g, hi) < 0; {
			for i < len(pt.docs) && exprCmp(value(pt.docs[i]), g) < 0 {
				out = append(out, pt.docs[i])
				i++
			}
			if i >= len(pt.docs) || exprCmp(value(pt.docs[i]), g) != 0 {
				gen := emptyDoc
				for _, e := range pt.key {
					gen = setRaw(gen, strings.Split(e.Key, "."), e.Value.(bson.RawValue))
				}
				out = append(out, setRaw(gen, d.field, g))
			}
			if g, err = d.next(g); err != nil {
				return nil, err
			}
		}
		out = append(out, pt.docs[i:]...)
	}
	return out, nil
}
