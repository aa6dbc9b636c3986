package sim

import (
	"encoding/hex"
	"math"
	"sort"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// The grouping stages: $group, $bucket, $bucketAuto, $sortByCount.

// groupKey is a canonical text of a value: equal values (1, 1.0, 1L) share it.
func groupKey(v bson.RawValue) string {
	switch {
	case nullish(v):
		return "null"
	case isArith(v):
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
				g.accs = append(g.accs, s.make())
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
	specs, err := parseAccumulators(rest, p.version)
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
	specs := []accSpec{{field: "count", arg: val(int32(1)), make: accumulators["$sum"]}}
	groups, err := groupDocs(p, docs, func(x *evalCtx, _ bson.Raw) (bson.RawValue, error) { return x.eval(spec) }, specs)
	if err != nil {
		return nil, err
	}
	out := groupOutput(groups, specs)
	if err := SortDocs(out, mustRaw(bson.D{{Key: "count", Value: -1}})); err != nil {
		return nil, asCmdError(err)
	}
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
	specs := []accSpec{{field: "count", arg: val(int32(1)), make: accumulators["$sum"]}}
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
			if specs, err = parseAccumulators(oe, p.version); err != nil {
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

// stageBucketAuto splits the documents, sorted by groupBy, into buckets of
// about equal size; equal values stay in one bucket, as mongod does.
func stageBucketAuto(p *pipeline, spec bson.RawValue, docs []bson.Raw) ([]bson.Raw, error) {
	s, ok := spec.DocumentOK()
	if !ok {
		return nil, cerr(40240, "The argument to $bucketAuto must be an object, but found type: %s.", exprTypeName(spec))
	}
	var groupBy bson.RawValue
	nBuckets := int64(0)
	specs := []accSpec{{field: "count", arg: val(int32(1)), make: accumulators["$sum"]}}
	els, _ := s.Elements()
	for _, e := range els {
		v := e.Value()
		switch e.Key() {
		case "groupBy":
			if str, ok := v.StringValueOK(); ok && !strings.HasPrefix(str, "$") || !ok && !isExprDoc(v) {
				return nil, cerr(40239, "The $bucketAuto 'groupBy' field must be defined as a $-prefixed path or an expression object, but found: %s.", v.String())
			}
			groupBy = v
		case "buckets":
			n, ok := intArg(v)
			if !isArith(v) || !ok || v.Type == bson.TypeDouble && v.Double() != float64(n) {
				return nil, cerr(40241, "The $bucketAuto 'buckets' field must be a numeric value, but found type: %s.", exprTypeName(v))
			}
			if n <= 0 {
				return nil, cerr(40243, "The $bucketAuto 'buckets' field must be greater than 0, but found: %d.", n)
			}
			nBuckets = n
		case "output":
			od, ok := v.DocumentOK()
			if !ok {
				return nil, cerr(40244, "The $bucketAuto 'output' field must be an object, but found type: %s.", exprTypeName(v))
			}
			oe, _ := od.Elements()
			var err error
			if specs, err = parseAccumulators(oe, p.version); err != nil {
				return nil, err
			}
		case "granularity":
			return nil, cerr(2, "the simulator does not model $bucketAuto granularity")
		default:
			return nil, cerr(40245, "Unrecognized option to $bucketAuto: %s.", e.Key())
		}
	}
	if groupBy.Type == 0 || nBuckets == 0 {
		return nil, cerr(40246, "$bucketAuto requires 'groupBy' and 'buckets' to be specified")
	}
	type keyed struct {
		key bson.RawValue
		doc bson.Raw
	}
	items := make([]keyed, 0, len(docs))
	for _, d := range docs {
		k, err := p.ctx(d).eval(groupBy)
		if err != nil {
			return nil, err
		}
		if k.Type == 0 {
			k = nullValue
		}
		items = append(items, keyed{k, d})
	}
	sort.SliceStable(items, func(i, j int) bool { return exprCmp(items[i].key, items[j].key) < 0 })
	size := int(math.Round(float64(len(items)) / float64(nBuckets)))
	size = max(size, 1)
	type bucket struct {
		min, max bson.RawValue
		accs     []accumulator
	}
	var buckets []*bucket
	var cur *bucket
	count := 0
	for _, it := range items {
		if cur == nil || count >= size && exprCmp(it.key, cur.max) != 0 && int64(len(buckets)) < nBuckets {
			cur = &bucket{min: it.key}
			for _, s := range specs {
				cur.accs = append(cur.accs, s.make())
			}
			buckets = append(buckets, cur)
			count = 0
		}
		cur.max = it.key
		count++
		x := p.ctx(it.doc)
		for i, s := range specs {
			v, err := x.eval(s.arg)
			if err != nil {
				return nil, err
			}
			if err := cur.accs[i].add(v); err != nil {
				return nil, err
			}
		}
	}
	out := make([]bson.Raw, 0, len(buckets))
	for i, b := range buckets {
		hi := b.max
		if i+1 < len(buckets) {
			hi = buckets[i+1].min
		}
		d := bson.D{{Key: "_id", Value: bson.D{{Key: "min", Value: b.min}, {Key: "max", Value: hi}}}}
		for j, s := range specs {
			d = append(d, bson.E{Key: s.field, Value: b.accs[j].result()})
		}
		out = append(out, mustRaw(d))
	}
	return out, nil
}
