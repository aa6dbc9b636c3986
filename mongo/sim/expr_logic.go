package sim

import (
	"math/rand/v2"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Variables ($let, $literal, $meta), comparison, boolean and conditional expressions.

func init() {
	exprOps["$literal"] = func(_ *evalCtx, arg bson.RawValue) (bson.RawValue, error) { return arg, nil }
	exprOps["$let"] = opLet
	exprOps["$meta"] = opMeta
	for _, name := range []string{"$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$cmp"} {
		exprOps[name] = compareOp(name)
	}
	exprOps["$and"] = func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		for _, o := range operands(arg) {
			v, err := x.eval(o)
			if err != nil || !truthy(v) {
				return val(false), err
			}
		}
		return val(true), nil
	}
	exprOps["$or"] = func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		for _, o := range operands(arg) {
			v, err := x.eval(o)
			if err != nil || truthy(v) {
				return val(err == nil), err
			}
		}
		return val(false), nil
	}
	exprOps["$not"] = func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		a, err := x.args("$not", arg, 1, 1)
		if err != nil {
			return missing, err
		}
		return val(!truthy(a[0])), nil
	}
	exprOps["$cond"] = opCond
	exprOps["$ifNull"] = func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		ops := operands(arg)
		if len(ops) < 2 {
			return missing, cerr(1257300, "$ifNull needs at least two arguments, had: %d", len(ops))
		}
		for i, o := range ops {
			v, err := x.eval(o)
			if err != nil {
				return missing, err
			}
			if !nullish(v) || i == len(ops)-1 {
				return v, nil
			}
		}
		return missing, nil
	}
	exprOps["$switch"] = opSwitch
}

func opLet(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
	m, err := objectArgs("$let", arg, 16874, 16875, []string{"vars", "in"}, map[string]int32{"vars": 16876, "in": 16877})
	if err != nil {
		return missing, err
	}
	vd, ok := m["vars"].DocumentOK()
	if !ok {
		return missing, cerr(10065, "invalid parameter: expected an object (vars)")
	}
	els, _ := vd.Elements()
	inner := x
	for _, e := range els {
		if err := checkVarName(e.Key()); err != nil {
			return missing, err
		}
		v, err := x.eval(e.Value()) // vars see only the outer scope
		if err != nil {
			return missing, err
		}
		inner = inner.with(e.Key(), v)
	}
	return inner.eval(m["in"])
}

// checkVarName applies mongod's rule for user variable names.
func checkVarName(name string) error {
	if name == "" {
		return cerr(16866, "empty variable names are not allowed")
	}
	if c := name[0]; (c < 'a' || c > 'z') && c < 0x80 {
		return cerr(16867, "'%s' starts with an invalid character for a user variable name", name)
	}
	for _, c := range name {
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '_' && c < 0x80 {
			return cerr(16868, "'%s' contains an invalid character for a variable name: '%c'", name, c)
		}
	}
	return nil
}

func compareOp(name string) exprOp {
	return func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		a, err := x.args(name, arg, 2, 2)
		if err != nil {
			return missing, err
		}
		c := exprCmp(a[0], a[1])
		switch name {
		case "$eq":
			return val(c == 0), nil
		case "$ne":
			return val(c != 0), nil
		case "$gt":
			return val(c > 0), nil
		case "$gte":
			return val(c >= 0), nil
		case "$lt":
			return val(c < 0), nil
		case "$lte":
			return val(c <= 0), nil
		}
		return val(int32(c)), nil
	}
}

func opCond(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
	var ifE, thenE, elseE bson.RawValue
	if d, ok := arg.DocumentOK(); ok {
		els, _ := d.Elements()
		for _, e := range els {
			switch e.Key() {
			case "if":
				ifE = e.Value()
			case "then":
				thenE = e.Value()
			case "else":
				elseE = e.Value()
			default:
				return missing, cerr(17083, "Unrecognized parameter to $cond: %s", e.Key())
			}
		}
		for _, p := range []struct {
			name string
			v    bson.RawValue
		}{{"if", ifE}, {"then", thenE}, {"else", elseE}} {
			if p.v.Type == 0 {
				return missing, cerr(17080+int32(map[string]int{"if": 0, "then": 1, "else": 2}[p.name]), "Missing '%s' parameter to $cond", p.name)
			}
		}
	} else {
		ops := operands(arg)
		if len(ops) != 3 {
			return missing, cerr(16020, "Expression $cond takes exactly 3 arguments. %d were passed in.", len(ops))
		}
		ifE, thenE, elseE = ops[0], ops[1], ops[2]
	}
	c, err := x.eval(ifE)
	if err != nil {
		return missing, err
	}
	if truthy(c) {
		return x.eval(thenE)
	}
	return x.eval(elseE)
}

func opSwitch(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
	d, ok := arg.DocumentOK()
	if !ok {
		return missing, cerr(40060, "$switch requires an object as an argument, found: %s", exprTypeName(arg))
	}
	branches, hasBranches := d.Lookup("branches").ArrayOK()
	if !hasBranches {
		return missing, cerr(40061, "$switch expected an array for 'branches', found: %s", exprTypeName(d.Lookup("branches")))
	}
	els, _ := d.Elements()
	for _, e := range els {
		if e.Key() != "branches" && e.Key() != "default" {
			return missing, cerr(40067, "$switch found an unknown argument: %s", e.Key())
		}
	}
	bs, _ := branches.Values()
	if len(bs) == 0 {
		return missing, cerr(40068, "$switch requires at least one branch.")
	}
	for _, b := range bs {
		bd, ok := b.DocumentOK()
		if !ok {
			return missing, cerr(40062, "$switch expected each branch to be an object, found: %s", exprTypeName(b))
		}
		bels, _ := bd.Elements()
		for _, be := range bels {
			if be.Key() != "case" && be.Key() != "then" {
				return missing, cerr(40063, "$switch found an unknown argument to a branch: %s", be.Key())
			}
		}
		caseE, err1 := bd.LookupErr("case")
		thenE, err2 := bd.LookupErr("then")
		if err1 != nil {
			return missing, cerr(40064, "$switch requires each branch have a 'case' expression")
		}
		if err2 != nil {
			return missing, cerr(40065, "$switch requires each branch have a 'then' expression.")
		}
		c, err := x.eval(caseE)
		if err != nil {
			return missing, err
		}
		if truthy(c) {
			return x.eval(thenE)
		}
	}
	if def, err := d.LookupErr("default"); err == nil {
		return x.eval(def)
	}
	return missing, cerr(40066, "$switch could not find a matching branch for an input, and no default was specified.")
}

// opMeta answers the metadata a document can carry here: a random value, and
// none of the text or search scores, which need indexes the simulator lacks.
func opMeta(_ *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
	name, ok := arg.StringValueOK()
	if !ok {
		return missing, cerr(17307, "$meta only supports string arguments")
	}
	switch name {
	case "randVal":
		return val(rand.Float64()), nil
	case "textScore":
		return missing, cerr(40218, "query requires text score metadata, but it is not available")
	case "searchScore", "searchHighlights", "searchScoreDetails", "searchSequenceToken", "vectorSearchScore", "geoNearDistance", "geoNearPoint":
		return missing, cerr(40218, "query requires %s metadata, but it is not available", name)
	case "indexKey", "recordId", "sortKey":
		return missing, nil
	}
	return missing, cerr(17308, "Unsupported argument to $meta: %s", name)
}
