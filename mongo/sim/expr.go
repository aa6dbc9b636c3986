package sim

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// The aggregation expression evaluator: field paths, variables, literals,
// object and array expressions, and the operators registered in exprOps
// (this file: paths and variables; expr_*.go: the operators by concern).

// exprOp evaluates one operator on its unevaluated argument.
type exprOp func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error)

// exprOps is filled by the init functions of the expr_*.go files.
var exprOps = map[string]exprOp{}

// evalCtx holds the variables in scope: ROOT, CURRENT, NOW and user variables.
type evalCtx struct {
	vars map[string]bson.RawValue
	// version is the mongod version ("7.0") whose operators are known; "" knows all
	version string
}

// introduced names the operators newer than mongod 6.0 and the version that added them.
var introduced = map[string]string{"$median": "7.0", "$percentile": "7.0",
	"$bitAnd": "6.3", "$bitOr": "6.3", "$bitXor": "6.3", "$bitNot": "6.3"}

// available reports whether mongod of this version ("" = any) knows the operator.
func available(op, version string) bool {
	since, ok := introduced[op]
	if !ok || version == "" {
		return true
	}
	var vMaj, vMin, sMaj, sMin int
	_, _ = fmt.Sscanf(version, "%d.%d", &vMaj, &vMin)
	_, _ = fmt.Sscanf(since, "%d.%d", &sMaj, &sMin)
	return vMaj > sMaj || vMaj == sMaj && vMin >= sMin
}

// newEvalCtx starts an evaluation on doc with the command's $$NOW and let variables.
func newEvalCtx(doc bson.Raw, now time.Time, let map[string]bson.RawValue) *evalCtx {
	root := bson.RawValue{Type: bson.TypeEmbeddedDocument, Value: doc}
	vars := map[string]bson.RawValue{"ROOT": root, "CURRENT": root, "NOW": val(bson.NewDateTimeFromTime(now))}
	for k, v := range let {
		vars[k] = v
	}
	return &evalCtx{vars: vars}
}

// with returns a context with name bound to v.
func (x *evalCtx) with(name string, v bson.RawValue) *evalCtx {
	m := make(map[string]bson.RawValue, len(x.vars)+1)
	for k, w := range x.vars {
		m[k] = w
	}
	m[name] = v
	return &evalCtx{vars: m, version: x.version}
}

// missing is the value of an absent field (BSON type 0).
var missing = bson.RawValue{}

var nullValue = bson.RawValue{Type: bson.TypeNull}

// val converts a Go value into a BSON value.
func val(x any) bson.RawValue {
	if rv, ok := x.(bson.RawValue); ok {
		return rv
	}
	t, b, err := bson.MarshalValue(x)
	if err != nil {
		panic(err)
	}
	return bson.RawValue{Type: t, Value: b}
}

// arrayValue builds an array; missing elements become null, as mongod does.
func arrayValue(vals []bson.RawValue) bson.RawValue {
	a := make(bson.A, len(vals))
	for i, v := range vals {
		if v.Type == 0 {
			v = nullValue
		}
		a[i] = v
	}
	return val(a)
}

func docValue(d bson.Raw) bson.RawValue {
	return bson.RawValue{Type: bson.TypeEmbeddedDocument, Value: d}
}

func nullish(v bson.RawValue) bool {
	return v.Type == 0 || v.Type == bson.TypeNull || v.Type == bson.TypeUndefined
}

// truthy is mongod's coercion to bool: false, 0, null and missing are false.
func truthy(v bson.RawValue) bool {
	switch v.Type {
	case 0, bson.TypeNull, bson.TypeUndefined:
		return false
	case bson.TypeBoolean:
		return v.Boolean()
	case bson.TypeInt32, bson.TypeInt64, bson.TypeDouble:
		f, _ := v.AsFloat64OK()
		return f != 0
	}
	return true
}

func arrayElems(v bson.RawValue) ([]bson.RawValue, bool) {
	a, ok := v.ArrayOK()
	if !ok {
		return nil, false
	}
	vals, _ := a.Values()
	return vals, true
}

// exprTypeName is the name $type and mongod's messages use.
func exprTypeName(v bson.RawValue) string {
	switch v.Type {
	case 0:
		return "missing"
	case bson.TypeBinary:
		return "binData"
	case bson.TypeUndefined:
		return "undefined"
	case bson.TypeObjectID:
		return "objectId"
	case bson.TypeDateTime:
		return "date"
	case bson.TypeNull:
		return "null"
	case bson.TypeRegex:
		return "regex"
	case bson.TypeJavaScript:
		return "javascript"
	case bson.TypeTimestamp:
		return "timestamp"
	case bson.TypeDecimal128:
		return "decimal"
	case bson.TypeMinKey:
		return "minKey"
	case bson.TypeMaxKey:
		return "maxKey"
	case bson.TypeSymbol:
		return "symbol"
	case bson.TypeDBPointer:
		return "dbPointer"
	case bson.TypeCodeWithScope:
		return "javascriptWithScope"
	}
	return typeName(v.Type)
}

// exprCmp orders values as mongod's expressions do: like the query order,
// except that missing sorts below null.
func exprCmp(a, b bson.RawValue) int {
	rank := func(v bson.RawValue) int {
		switch v.Type {
		case bson.TypeMinKey:
			return 0
		case 0, bson.TypeUndefined:
			return 1
		}
		return typeOrder(v.Type) * 10
	}
	ra, rb := rank(a), rank(b)
	if ra != rb {
		return cmpInt(ra, rb)
	}
	if ra <= 1 {
		return 0
	}
	return compareValues(a, b)
}

// Eval evaluates an expression against a context.
func (x *evalCtx) eval(e bson.RawValue) (bson.RawValue, error) {
	switch e.Type {
	case bson.TypeString:
		s := e.StringValue()
		if strings.HasPrefix(s, "$") {
			return x.path(s)
		}
		return e, nil
	case bson.TypeArray:
		elems, _ := arrayElems(e)
		out := make([]bson.RawValue, len(elems))
		for i, el := range elems {
			v, err := x.eval(el)
			if err != nil {
				return missing, err
			}
			out[i] = v
		}
		return arrayValue(out), nil
	case bson.TypeEmbeddedDocument:
		d := e.Document()
		els, _ := d.Elements()
		if len(els) > 0 && strings.HasPrefix(els[0].Key(), "$") {
			if len(els) != 1 {
				return missing, cerr(15983, "an expression specification must contain exactly one field, the name of the expression. Found %d fields in %s, while parsing object %s", len(els), d.String(), d.String())
			}
			op, ok := exprOps[els[0].Key()]
			if !ok || !available(els[0].Key(), x.version) {
				return missing, cerr(168, "Unrecognized expression '%s'", els[0].Key())
			}
			return op(x, els[0].Value())
		}
		out := bson.D{}
		for _, el := range els {
			if err := checkFieldName(el.Key()); err != nil {
				return missing, err
			}
			v, err := x.eval(el.Value())
			if err != nil {
				return missing, err
			}
			if v.Type != 0 {
				out = append(out, bson.E{Key: el.Key(), Value: v})
			}
		}
		return val(out), nil
	}
	return e, nil
}

func checkFieldName(k string) error {
	switch {
	case k == "":
		return cerr(15998, "FieldPath field names may not be empty strings.")
	case strings.HasPrefix(k, "$"):
		return cerr(16410, "FieldPath field names may not start with '$'. Consider using $getField or $setField.")
	}
	return nil
}

// path evaluates "$a.b" (a field of CURRENT) or "$$var.a.b".
func (x *evalCtx) path(s string) (bson.RawValue, error) {
	if s == "$" {
		return missing, cerr(16872, "'$' by itself is not a valid FieldPath")
	}
	var name string
	var parts []string
	if strings.HasPrefix(s, "$$") {
		p := strings.Split(s[2:], ".")
		name, parts = p[0], p[1:]
		if name == "" {
			return missing, cerr(16869, "empty variable name")
		}
	} else {
		name, parts = "CURRENT", strings.Split(s[1:], ".")
	}
	for _, p := range parts {
		if p == "" {
			return missing, cerr(15998, "FieldPath field names may not be empty strings.")
		}
		if strings.HasPrefix(p, "$") {
			return missing, cerr(16410, "FieldPath field names may not start with '$'. Consider using $getField or $setField.")
		}
	}
	if name == "REMOVE" {
		return missing, nil
	}
	v, ok := x.vars[name]
	if !ok {
		return missing, cerr(17276, "Use of undefined variable: %s", name)
	}
	return exprPath(v, parts), nil
}

// walkPath follows a path; through an array it collects the values of each
// element (recursing into nested arrays), as mongod's field paths do.
func exprPath(v bson.RawValue, path []string) bson.RawValue {
	if len(path) == 0 {
		return v
	}
	switch v.Type {
	case bson.TypeEmbeddedDocument:
		sub, err := v.Document().LookupErr(path[0])
		if err != nil {
			return missing
		}
		return exprPath(sub, path[1:])
	case bson.TypeArray:
		elems, _ := arrayElems(v)
		var out []bson.RawValue
		for _, el := range elems {
			if el.Type != bson.TypeEmbeddedDocument && el.Type != bson.TypeArray {
				continue
			}
			if r := exprPath(el, path); r.Type != 0 {
				out = append(out, r)
			}
		}
		return arrayValue(out)
	}
	return missing
}

// operands are an operator's argument expressions: an array's elements, or the one value.
func operands(arg bson.RawValue) []bson.RawValue {
	if elems, ok := arrayElems(arg); ok {
		return elems
	}
	return []bson.RawValue{arg}
}

// args evaluates an operator's operands, checking their number (max < 0: no limit).
func (x *evalCtx) args(name string, arg bson.RawValue, min, max int) ([]bson.RawValue, error) {
	ops := operands(arg)
	if min == max && len(ops) != min {
		return nil, cerr(16020, "Expression %s takes exactly %d arguments. %d were passed in.", name, min, len(ops))
	}
	if len(ops) < min || max >= 0 && len(ops) > max {
		if max < 0 {
			return nil, cerr(16020, "Expression %s takes at least %d arguments, but %d were passed in.", name, min, len(ops))
		}
		return nil, cerr(16020, "Expression %s takes at least %d arguments, and at most %d, but %d were passed in.", name, min, max, len(ops))
	}
	out := make([]bson.RawValue, len(ops))
	for i, o := range ops {
		v, err := x.eval(o)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// namedArgs reads an operator's {name: expr} argument: unknown fields are
// refused with code, required ones must be present.
// objectArgs is namedArgs with mongod's own codes and messages for a
// non-object argument, an unknown field and each missing one.
func objectArgs(op string, arg bson.RawValue, notObject, unknown int32, allowed []string, missingCodes map[string]int32) (map[string]bson.RawValue, error) {
	if _, ok := arg.DocumentOK(); !ok {
		return nil, cerr(notObject, "%s only supports an object as its argument", op)
	}
	els, _ := arg.Document().Elements()
	for _, e := range els {
		known := false
		for _, a := range allowed {
			known = known || a == e.Key()
		}
		if !known {
			return nil, cerr(unknown, "Unrecognized parameter to %s: %s", op, e.Key())
		}
	}
	m, err := namedArgs(op, arg, unknown, allowed)
	if err != nil {
		return nil, err
	}
	for _, a := range allowed {
		if code, req := missingCodes[a]; req && m[a].Type == 0 {
			return nil, cerr(code, "Missing '%s' parameter to %s", a, op)
		}
	}
	return m, nil
}

func namedArgs(op string, arg bson.RawValue, code int32, allowed []string, required ...string) (map[string]bson.RawValue, error) {
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, cerr(code, "%s expects an object of named arguments but found: %s", op, exprTypeName(arg))
	}
	els, _ := d.Elements()
	m := map[string]bson.RawValue{}
	for _, e := range els {
		known := false
		for _, a := range allowed {
			known = known || a == e.Key()
		}
		if !known {
			return nil, cerr(code, "%s found an unknown argument: %s", op, e.Key())
		}
		m[e.Key()] = e.Value()
	}
	for _, r := range required {
		if _, ok := m[r]; !ok {
			return nil, cerr(code, "%s requires '%s' to be specified", op, r)
		}
	}
	return m, nil
}

// exprMatches is the query language's $expr: the truth of the expression on doc.
func exprMatches(doc bson.Raw, e bson.RawValue) (bool, error) {
	v, err := newEvalCtx(doc, time.Now(), nil).eval(e)
	return truthy(v), err
}

// exprError turns a non-command error into a BadValue command error.
func exprError(err error) error {
	var ce *CmdError
	if err == nil || errors.As(err, &ce) {
		return err
	}
	return cerr(2, "%s", fmt.Sprint(err))
}
