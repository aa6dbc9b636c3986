package sim

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Object expressions.

func init() {
	exprOps["$mergeObjects"] = func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		a, err := x.args("$mergeObjects", arg, 0, -1)
		if err != nil {
			return missing, err
		}
		return mergeObjects(a)
	}
	exprOps["$objectToArray"] = func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		a, err := x.args("$objectToArray", arg, 1, 1)
		if err != nil {
			return missing, err
		}
		if nullish(a[0]) {
			return nullValue, nil
		}
		d, ok := a[0].DocumentOK()
		if !ok {
			return missing, cerr(40390, "$objectToArray requires a document input, found: %s", exprTypeName(a[0]))
		}
		els, _ := d.Elements()
		out := []bson.RawValue{}
		for _, e := range els {
			out = append(out, val(bson.D{{Key: "k", Value: e.Key()}, {Key: "v", Value: e.Value()}}))
		}
		return arrayValue(out), nil
	}
	exprOps["$arrayToObject"] = opArrayToObject
	exprOps["$getField"] = opGetField
	exprOps["$setField"] = setFieldOp("$setField")
	exprOps["$unsetField"] = setFieldOp("$unsetField")
}

// mergeObjects combines documents left to right; null and missing are skipped.
func mergeObjects(vals []bson.RawValue) (bson.RawValue, error) {
	out := bson.D{}
	for _, v := range vals {
		if nullish(v) {
			continue
		}
		d, ok := v.DocumentOK()
		if !ok {
			return missing, cerr(40400, "$mergeObjects requires object inputs, but input %s is of type %s", v.String(), exprTypeName(v))
		}
		els, _ := d.Elements()
		for _, e := range els {
			out = setTop(out, e.Key(), e.Value())
		}
	}
	return val(out), nil
}

// setTop replaces or appends a top-level field.
func setTop(d bson.D, k string, v bson.RawValue) bson.D {
	for i := range d {
		if d[i].Key == k {
			d[i].Value = v
			return d
		}
	}
	return append(d, bson.E{Key: k, Value: v})
}

func opArrayToObject(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
	a, err := x.args("$arrayToObject", arg, 1, 1)
	if err != nil {
		return missing, err
	}
	if nullish(a[0]) {
		return nullValue, nil
	}
	el, ok := arrayElems(a[0])
	if !ok {
		return missing, cerr(40386, "$arrayToObject requires an array input, found: %s", exprTypeName(a[0]))
	}
	out := bson.D{}
	if len(el) == 0 {
		return val(out), nil
	}
	pairs := el[0].Type == bson.TypeArray
	if !pairs && el[0].Type != bson.TypeEmbeddedDocument {
		return missing, cerr(40398, "Unrecognised input type format for $arrayToObject: %s", exprTypeName(el[0]))
	}
	for _, e := range el {
		var k, v bson.RawValue
		if pairs {
			kv, ok := arrayElems(e)
			if !ok {
				return missing, cerr(40396, "$arrayToObject requires a consistent input format. Elements must all be arrays or all be objects. Array was detected, now found: %s", exprTypeName(e))
			}
			if len(kv) != 2 {
				return missing, cerr(40397, "$arrayToObject requires an array of size 2 arrays,found array of size: %d", len(kv))
			}
			k, v = kv[0], kv[1]
		} else {
			d, ok := e.DocumentOK()
			if !ok {
				return missing, cerr(40391, "$arrayToObject requires a consistent input format. Elements must all be arrays or all be objects. Object was detected, now found: %s", exprTypeName(e))
			}
			n, _ := d.Elements()
			kk, kerr := d.LookupErr("k")
			vv, verr := d.LookupErr("v")
			if len(n) != 2 || kerr != nil || verr != nil {
				return missing, cerr(40392, "$arrayToObject requires an object keys of 'k' and 'v'. Found incorrect number of keys:%d", len(n))
			}
			k, v = kk, vv
		}
		ks, ok := k.StringValueOK()
		if !ok {
			return missing, cerr(40395, "$arrayToObject requires an array of key-value pairs, where the key must be of type string. Found key type: %s", exprTypeName(k))
		}
		if strings.ContainsRune(ks, 0) {
			return missing, cerr(4940400, "Key field cannot contain an embedded null byte")
		}
		out = setTop(out, ks, v)
	}
	return val(out), nil
}

func opGetField(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
	fieldE, inputE := arg, bson.RawValue{Type: bson.TypeString, Value: val("$$CURRENT").Value}
	if _, ok := arg.DocumentOK(); ok {
		m, err := namedArgs("$getField", arg, 3041701, []string{"field", "input"}, "field")
		if err != nil {
			return missing, err
		}
		fieldE = m["field"]
		if in, ok := m["input"]; ok {
			inputE = in
		}
	}
	fv, err := x.eval(fieldE)
	if err != nil {
		return missing, err
	}
	f, ok := fv.StringValueOK()
	if !ok {
		return missing, cerr(3041704, "$getField requires 'field' to evaluate to type String, but got %s", exprTypeName(fv))
	}
	in, err := x.eval(inputE)
	if err != nil {
		return missing, err
	}
	if nullish(in) {
		return nullValue, nil
	}
	d, ok := in.DocumentOK()
	if !ok {
		return missing, cerr(3041705, "$getField requires 'input' to evaluate to type Object, but got %s", exprTypeName(in))
	}
	return d.Lookup(f), nil // missing (Type 0) when d has no such field
}

// setFieldOp is $setField {field, input, value} or $unsetField {field, input}.
func setFieldOp(op string) exprOp {
	return func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		if _, ok := arg.DocumentOK(); !ok {
			return missing, cerr(4161100, "%s only supports an object as its argument", op)
		}
		fields, required := []string{"field", "input", "value"}, []string{"field", "input", "value"}
		if op == "$unsetField" {
			fields, required = fields[:2], required[:2]
		}
		m, err := namedArgs(op, arg, 4161101, fields, required...)
		if err != nil {
			return missing, err
		}
		fe := m["field"]
		if d, ok := fe.DocumentOK(); ok && d.Lookup("$const").Type == bson.TypeString {
			fe = d.Lookup("$const")
		} else if d, ok := fe.DocumentOK(); ok && d.Lookup("$literal").Type == bson.TypeString {
			fe = d.Lookup("$literal")
		}
		f, ok := fe.StringValueOK()
		if !ok {
			return missing, cerr(4161106, "%s requires 'field' to evaluate to a constant, but got a non-constant argument", op)
		}
		in, err := x.eval(m["input"])
		if err != nil {
			return missing, err
		}
		if nullish(in) {
			return nullValue, nil
		}
		d, ok := in.DocumentOK()
		if !ok {
			return missing, cerr(4161105, "%s requires 'input' to evaluate to type Object", op)
		}
		v := missing
		if op == "$setField" {
			if v, err = x.eval(m["value"]); err != nil {
				return missing, err
			}
		}
		out := bson.D{}
		found := false
		for _, e := range rawFields(d) {
			if e.Key == f {
				found = true
				if v.Type != 0 {
					out = append(out, bson.E{Key: f, Value: v})
				}
				continue
			}
			out = append(out, e)
		}
		if !found && v.Type != 0 {
			out = append(out, bson.E{Key: f, Value: v})
		}
		return val(out), nil
	}
}
