package sim

import (
	"encoding/hex"
	"sort"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// The grouping stages: $group and its accumulators, $bucket, $sortByCount.

// accumulator folds the values of one group.
type accumulator interface {
	add(v bson.RawValue) error
	result() bson.RawValue
}

type accSum struct{ total num }

func (a *accSum) add(v bson.RawValue) error {
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
}

func (a *accPush) add(v bson.RawValue) error {
	if v.Type == 0 {
		return nil
	}
	if a.set {
		for _, w := range a.vals {
			if exprCmp(v, w) == 0 {
				return nil
			}
		}
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

// accumulators are the group operators mongod knows; nil makes one.
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
}

// accSpec is one output field of a group: name, operator, argument expression.
type accSpec struct {
	field, op string
	arg       bson.RawValue
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
		op := ops[0].Key()
		if _, ok := accumulators[op]; !ok {
			return nil, cerr(15952, "unknown group operator '%s'", op)
		}
		arg := ops[0].Value()
		if op == "$count" {
			if cd, ok := arg.DocumentOK(); !ok || len(cd) > 5 {
				return nil, cerr(2, "$count takes no arguments, i.e. $count:{}")
			}
			arg = val(int32(1))
		} else if arg.Type == bson.TypeArray {
			return nil, cerr(40237, "The %s accumulator is a unary operator", op)
		}
		out = append(out, accSpec{field: name, op: op, arg: arg})
	}
	return out, nil
}

// groupKey is a canonical text of a value: equal values (1, 1.0, 1L) share it.
func groupKey(v bson.RawValue) string {
	switch {
	case nullish(v):
		return "null"
	case isNumber(v):
		n := toNum(v)
		if n.kind != 2 {
			return "n" + strconv.FormatInt(n.i, 10)
		}
		if n.f == float64(int64(n.f)) {
			return "n" + strconv.FormatInt(int64(n.f), 10)
		}
		return "n" + strconv.FormatFloat(n.f, 'g', -1, 64)
	case v.Type == bson.TypeString:
		return "s" + strconv.Quote(v.StringValue())
	case v.Type == bson.TypeEmbeddedDocument:
		els, _ := v.Document().Elements()
		var b strings.Builder
		b.WriteString("{")
		for _, e := range els {
			b.WriteString(strconv.Quote(e.Key()) + ":" + groupKey(e.Value()) + ",")
		}
		return b.String() + "}"
	case v.Type == bson.TypeArray:
		el, _ := arrayElems(v)
		var b strings.Builder
		b.WriteString("[")
		for _, e := range el {
			b.WriteString(groupKey(e) + ",")
		}
		return b.String() + "]"
	}
	return strconv.Itoa(typeOrder(v.Type)) + ":" + hex.EncodeToString(v.Value)
}

type group struct {
	id   bson.RawValue
	accs []accumulator
}

// groupDocs groups docs by keyOf and folds the accumulators; groups keep the order they were first seen.
func groupDocs(p *pipeline, docs []bson.Raw, keyOf func(x *evalCtx, d bson.Raw) (bson.RawValue, error), specs []accSpec) ([]*group, error) {
	byKey := map[string]*group{}
	var order []*group
	for _, d := range docs {
		x := p.ctx(d)
		id, err := keyOf(x, d)
		if err != nil {
			return nil, err
		}
		if id.Type == 0 {
			id = nullValue
		}
		k := groupKey(id)
		g, ok := byKey[k]
		if !ok {
			g = &group{id: id}
			for _, s := range specs {
				g.accs = append(g.accs, accumulators[s.op]())
			}
			byKey[k] = g
			order = append(order, g)
		}
		for i, s := range specs {
			v, err := x.eval(s.arg)
			if err != nil {
				return nil, err
			}
			if err := g.accs[i].add(v); err != nil {
				return nil, err
			}
		}
	}
	return order, nil
}

func groupOutput(groups []*group, specs []accSpec) []bson.Raw {
	out := make([]bson.Raw, 0, len(groups))
	for _, g := range groups {
		d := bson.D{{Key: "_id", Value: g.id}}
		for i, s := range specs {
			d = append(d, bson.E{Key: s.field, Value: g.accs[i].result()})
		}
		out = append(out, mustRaw(d))
	}
	return out
}

func stageGroup(p *pipeline, spec bson.RawValue, docs []bson.Raw) ([]bson.Raw, error) {
	s, ok := spec.DocumentOK()
	if !ok {
		return nil, cerr(15947, "a group's fields must be specified in an object")
	}
	els, _ := s.Elements()
	var idExpr bson.RawValue
	var rest []bson.RawElement
	for _, e := range els {
		if e.Key() == "_id" {
			idExpr = e.Value()
			continue
		}
		rest = append(rest, e)
	}
	if idExpr.Type == 0 {
		return nil, cerr(15955, "a group specification must include an _id")
	}
	specs, err := parseAccumulators(rest)
	if err != nil {
		return nil, err
	}
	groups, err := groupDocs(p, docs, func(x *evalCtx, _ bson.Raw) (bson.RawValue, error) { return x.eval(idExpr) }, specs)
	if err != nil {
		return nil, err
	}
	return groupOutput(groups, specs), nil
}

func stageSortByCount(p *pipeline, spec bson.RawValue, docs []bson.Raw) ([]bson.Raw, error) {
	const msg = "the sortByCount field must be defined as a $-prefixed path or an expression inside an object"
	switch spec.Type {
	case bson.TypeEmbeddedDocument:
		if !isExprDoc(spec) {
			return nil, cerr(40147, msg)
		}
	case bson.TypeString:
		if s := spec.StringValue(); len(s) < 2 || s[0] != '$' {
			return nil, cerr(40148, msg)
		}
	default:
		return nil, cerr(40149, "the sortByCount field must be specified as a string or as an object")
	}
	specs := []accSpec{{field: "count", op: "$sum", arg: val(int32(1))}}
	groups, err := groupDocs(p, docs, func(x *evalCtx, _ bson.Raw) (bson.RawValue, error) { return x.eval(spec) }, specs)
	if err != nil {
		return nil, err
	}
	out := groupOutput(groups, specs)
	SortDocs(out, mustRaw(bson.D{{Key: "count", Value: -1}}))
	return out, nil
}

func isExprDoc(v bson.RawValue) bool {
	d, ok := v.DocumentOK()
	if !ok {
		return false
	}
	e, err := d.IndexErr(0)
	return err == nil && strings.HasPrefix(e.Key(), "$")
}

func stageBucket(p *pipeline, spec bson.RawValue, docs []bson.Raw) ([]bson.Raw, error) {
	s, ok := spec.DocumentOK()
	if !ok {
		return nil, cerr(40201, "Argument to $bucket stage must be an object, but found type: %s.", exprTypeName(spec))
	}
	var groupBy, def bson.RawValue
	var bounds []bson.RawValue
	specs := []accSpec{{field: "count", op: "$sum", arg: val(int32(1))}}
	els, _ := s.Elements()
	for _, e := range els {
		switch e.Key() {
		case "groupBy":
			groupBy = e.Value()
			if str, ok := groupBy.StringValueOK(); ok && !strings.HasPrefix(str, "$") || !ok && !isExprDoc(groupBy) {
				return nil, cerr(40202, "The $bucket 'groupBy' field must be defined as a $-prefixed path or an expression, but found: %s.", groupBy.String())
			}
		case "boundaries":
			b, ok := arrayElems(e.Value())
			if !ok {
				return nil, cerr(40200, "The $bucket 'boundaries' field must be an array, but found type: %s.", exprTypeName(e.Value()))
			}
			bounds = b
		case "default":
			def = e.Value()
		case "output":
			od, ok := e.Value().DocumentOK()
			if !ok {
				return nil, cerr(40196, "The $bucket 'output' field must be an object, but found type: %s.", exprTypeName(e.Value()))
			}
			oe, _ := od.Elements()
			var err error
			if specs, err = parseAccumulators(oe); err != nil {
				return nil, err
			}
		default:
			return nil, cerr(40197, "Unrecognized option to $bucket: %s.", e.Key())
		}
	}
	if groupBy.Type == 0 || bounds == nil {
		return nil, cerr(40198, "$bucket requires 'groupBy' and 'boundaries' to be specified.")
	}
	if len(bounds) < 2 {
		return nil, cerr(40192, "The $bucket 'boundaries' field must have at least 2 values, but found %d value(s).", len(bounds))
	}
	for i := 1; i < len(bounds); i++ {
		if typeOrder(bounds[i].Type) != typeOrder(bounds[0].Type) {
			return nil, cerr(40193, "All values in the the 'boundaries' option to $bucket must have the same type. Found conflicting types %s and %s.", exprTypeName(bounds[0]), exprTypeName(bounds[i]))
		}
		if exprCmp(bounds[i-1], bounds[i]) >= 0 {
			return nil, cerr(40194, "The 'boundaries' option to $bucket must be sorted in ascending order, but elements %d and %d are not in ascending order (%s is not less than %s).", i-1, i, bounds[i-1].String(), bounds[i].String())
		}
	}
	if def.Type != 0 && exprCmp(def, bounds[0]) >= 0 && exprCmp(def, bounds[len(bounds)-1]) < 0 && typeOrder(def.Type) == typeOrder(bounds[0].Type) {
		return nil, cerr(40199, "The $bucket 'default' field must be less than the lowest boundary or greater than or equal to the highest boundary.")
	}
	keyOf := func(x *evalCtx, _ bson.Raw) (bson.RawValue, error) {
		v, err := x.eval(groupBy)
		if err != nil {
			return missing, err
		}
		if exprCmp(v, bounds[0]) >= 0 && exprCmp(v, bounds[len(bounds)-1]) < 0 {
			i := sort.Search(len(bounds), func(i int) bool { return exprCmp(bounds[i], v) > 0 })
			return bounds[i-1], nil
		}
		if def.Type == 0 {
			return missing, cerr(40066, "$switch could not find a matching branch for an input, and no default was specified.")
		}
		return def, nil
	}
	groups, err := groupDocs(p, docs, keyOf, specs)
	if err != nil {
		return nil, err
	}
	rank := func(g *group) int {
		for i, b := range bounds {
			if exprCmp(g.id, b) == 0 && typeOrder(g.id.Type) == typeOrder(b.Type) {
				return i
			}
		}
		return len(bounds)
	}
	sort.SliceStable(groups, func(i, j int) bool { return rank(groups[i]) < rank(groups[j]) })
	return groupOutput(groups, specs), nil
}
