package sim

import (
	"strings"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// String expressions (regular expressions: expr_regex.go).

func init() {
	exprOps["$concat"] = func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		a, err := x.args("$concat", arg, 0, -1)
		if err != nil {
			return missing, err
		}
		var b strings.Builder
		for _, v := range a {
			if nullish(v) {
				return nullValue, nil
			}
			s, ok := v.StringValueOK()
			if !ok {
				return missing, cerr(16702, "$concat only supports strings, not %s", exprTypeName(v))
			}
			b.WriteString(s)
		}
		return val(b.String()), nil
	}
	exprOps["$toUpper"] = caseOp("$toUpper", strings.ToUpper)
	exprOps["$toLower"] = caseOp("$toLower", strings.ToLower)
	exprOps["$substr"] = opSubstrBytes("$substr")
	exprOps["$substrBytes"] = opSubstrBytes("$substrBytes")
	exprOps["$substrCP"] = opSubstrCP
	exprOps["$strLenCP"] = func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		a, err := x.args("$strLenCP", arg, 1, 1)
		if err != nil {
			return missing, err
		}
		s, ok := a[0].StringValueOK()
		if !ok {
			return missing, cerr(34471, "$strLenCP requires a string argument, found: %s", exprTypeName(a[0]))
		}
		return val(int32(utf8.RuneCountInString(s))), nil
	}
	exprOps["$strLenBytes"] = func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		a, err := x.args("$strLenBytes", arg, 1, 1)
		if err != nil {
			return missing, err
		}
		s, ok := a[0].StringValueOK()
		if !ok {
			return missing, cerr(34473, "$strLenBytes requires a string argument, found: %s", exprTypeName(a[0]))
		}
		return val(int32(len(s))), nil
	}
	exprOps["$split"] = opSplit
	exprOps["$trim"] = trimOp("$trim", strings.Trim)
	exprOps["$ltrim"] = trimOp("$ltrim", strings.TrimLeft)
	exprOps["$rtrim"] = trimOp("$rtrim", strings.TrimRight)
	exprOps["$indexOfCP"] = indexOfOp("$indexOfCP", true)
	exprOps["$indexOfBytes"] = indexOfOp("$indexOfBytes", false)
}

// stringOf is $toUpper's and $substr's coercion: null → "", numbers and dates as text.
func stringOf(name string, v bson.RawValue) (string, error) {
	switch {
	case nullish(v):
		return "", nil
	case v.Type == bson.TypeString:
		return v.StringValue(), nil
	case isArith(v), v.Type == bson.TypeDateTime, v.Type == bson.TypeTimestamp:
		s, err := convertTo(v, "string")
		if err != nil {
			return "", err
		}
		return s.StringValue(), nil
	}
	return "", cerr(16007, "can't convert from BSON type %s to String", exprTypeName(v))
}

func caseOp(name string, f func(string) string) exprOp {
	return func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		a, err := x.args(name, arg, 1, 1)
		if err != nil {
			return missing, err
		}
		s, err := stringOf(name, a[0])
		if err != nil {
			return missing, err
		}
		// mongod changes ASCII letters only
		out := []byte(s)
		for i, c := range out {
			if c < 0x80 {
				out[i] = f(string(c))[0]
			}
		}
		return val(string(out)), nil
	}
}

func intArg(v bson.RawValue) (int64, bool) {
	if f, ok := v.DoubleOK(); ok {
		return int64(f), true
	}
	return v.AsInt64OK()
}

func opSubstrBytes(name string) exprOp {
	return func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		a, err := x.args(name, arg, 3, 3)
		if err != nil {
			return missing, err
		}
		s, err := stringOf(name, a[0])
		if err != nil {
			return missing, err
		}
		start, ok := intArg(a[1])
		if !ok {
			return missing, cerr(16034, "%s: starting index must be a numeric type (is BSON type %s)", name, exprTypeName(a[1]))
		}
		length, ok := intArg(a[2])
		if !ok {
			return missing, cerr(16035, "%s: length must be a numeric type (is BSON type %s)", name, exprTypeName(a[2]))
		}
		if start < 0 || start >= int64(len(s)) {
			return val(""), nil
		}
		end := int64(len(s))
		if length >= 0 && length < end-start {
			end = start + length
		}
		if !utf8.RuneStart(s[start]) || end < int64(len(s)) && !utf8.RuneStart(s[end]) {
			return missing, cerr(28656, "%s:  Invalid range, starting index is a UTF-8 continuation byte.", name)
		}
		return val(s[start:end]), nil
	}
}

func opSubstrCP(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
	a, err := x.args("$substrCP", arg, 3, 3)
	if err != nil {
		return missing, err
	}
	s, err := stringOf("$substrCP", a[0])
	if err != nil {
		return missing, err
	}
	if !isArith(a[1]) {
		return missing, cerr(34450, "$substrCP: starting index must be a numeric type (is BSON type %s)", exprTypeName(a[1]))
	}
	if !isArith(a[2]) {
		return missing, cerr(34452, "$substrCP: length must be a numeric type (is BSON type %s)", exprTypeName(a[2]))
	}
	start, length := toNum(a[1]), toNum(a[2])
	if !start.int32OK() {
		return missing, cerr(34451, "$substrCP: starting index cannot be represented as a 32-bit integral value: %s", a[1].String())
	}
	if !length.int32OK() {
		return missing, cerr(34453, "$substrCP: length cannot be represented as a 32-bit integral value: %s", a[2].String())
	}
	st, ln := int64(start.float()), int64(length.float())
	if st < 0 {
		return missing, cerr(34455, "$substrCP: the starting index must be nonnegative integer.")
	}
	if ln < 0 {
		return missing, cerr(34454, "$substrCP: length must be a nonnegative integer.")
	}
	r := []rune(s)
	if st >= int64(len(r)) {
		return val(""), nil
	}
	end := st + min(ln, int64(len(r))-st)
	return val(string(r[st:end])), nil
}

func opSplit(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
	a, err := x.args("$split", arg, 2, 2)
	if err != nil {
		return missing, err
	}
	if nullish(a[0]) || nullish(a[1]) {
		return nullValue, nil
	}
	s, ok := a[0].StringValueOK()
	if !ok {
		return missing, cerr(40085, "$split requires an expression that evaluates to a string as a first argument, found: %s", exprTypeName(a[0]))
	}
	sep, ok := a[1].StringValueOK()
	if !ok {
		return missing, cerr(40086, "$split requires an expression that evaluates to a string as a second argument, found: %s", exprTypeName(a[1]))
	}
	if sep == "" {
		return missing, cerr(40087, "$split requires a non-empty separator")
	}
	var out []bson.RawValue
	for _, p := range strings.Split(s, sep) {
		out = append(out, val(p))
	}
	return arrayValue(out), nil
}

// mongod's default $trim characters: the whitespace of the manual's list.
const trimSpace = "\u0000\u0020\u0009\u000A\u000B\u000C\u000D\u00A0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200A"

func trimOp(name string, f func(string, string) string) exprOp {
	return func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		m, err := namedArgs(name, arg, 50696, []string{"input", "chars"}, "input")
		if err != nil {
			if _, ok := arg.DocumentOK(); !ok {
				return missing, cerr(50696, "%s only supports an object as an argument, found: %s", name, exprTypeName(arg))
			}
			return missing, err
		}
		in, err := x.eval(m["input"])
		if err != nil {
			return missing, err
		}
		chars := trimSpace
		if ce, ok := m["chars"]; ok {
			cv, err := x.eval(ce)
			if err != nil {
				return missing, err
			}
			if nullish(cv) {
				return nullValue, nil
			}
			c, ok := cv.StringValueOK()
			if !ok {
				return missing, cerr(50700, "%s requires 'chars' to be a string, found: %s", name, exprTypeName(cv))
			}
			chars = c
		}
		if nullish(in) {
			return nullValue, nil
		}
		s, ok := in.StringValueOK()
		if !ok {
			return missing, cerr(50699, "%s requires its input to be a string, got %s (of type %s) instead.", name, in.String(), exprTypeName(in))
		}
		return val(f(s, chars)), nil
	}
}

// indexOfOp is $indexOfCP (code points) or $indexOfBytes.
func indexOfOp(name string, codePoints bool) exprOp {
	first, second := int32(40093), int32(40094)
	if !codePoints {
		first, second = 40091, 40092
	}
	return func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		a, err := x.args(name, arg, 2, 4)
		if err != nil {
			return missing, err
		}
		if nullish(a[0]) {
			return nullValue, nil
		}
		s, ok := a[0].StringValueOK()
		if !ok {
			return missing, cerr(first, "%s requires a string as the first argument, found: %s", name, exprTypeName(a[0]))
		}
		sub, ok := a[1].StringValueOK()
		if !ok {
			return missing, cerr(second, "%s requires a string as the second argument, found: %s", name, exprTypeName(a[1]))
		}
		units := []string{}
		if codePoints {
			for _, r := range s {
				units = append(units, string(r))
			}
		} else {
			for i := 0; i < len(s); i++ {
				units = append(units, s[i:i+1])
			}
		}
		subLen := len(sub)
		if codePoints {
			subLen = utf8.RuneCountInString(sub)
		}
		start, end := int64(0), int64(len(units))
		for i, v := range a[2:] {
			n, ok := v.AsInt64OK()
			if f, isF := v.DoubleOK(); isF && f == float64(int64(f)) {
				n, ok = int64(f), true
			}
			if !ok {
				return missing, cerr(40096, "%s requires an integral starting index, found a value of type: %s, with value: %s", name, exprTypeName(v), v.String())
			}
			if n < 0 {
				return missing, cerr(40097, "%s requires a nonnegative start index, found: %d", name, n)
			}
			if i == 0 {
				start = n
			} else {
				end = min(n, end)
			}
		}
		for i := start; i+int64(subLen) <= end; i++ {
			if strings.Join(units[i:i+int64(subLen)], "") == sub {
				return val(int32(i)), nil
			}
		}
		return val(int32(-1)), nil
	}
}

func init() {
	exprOps["$strcasecmp"] = func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		a, err := x.args("$strcasecmp", arg, 2, 2)
		if err != nil {
			return missing, err
		}
		l, err := stringOf("$strcasecmp", a[0])
		if err != nil {
			return missing, err
		}
		r, err := stringOf("$strcasecmp", a[1])
		if err != nil {
			return missing, err
		}
		return val(int32(strings.Compare(strings.ToUpper(l), strings.ToUpper(r)))), nil
	}
	exprOps["$replaceOne"] = replaceOp("$replaceOne", 1)
	exprOps["$replaceAll"] = replaceOp("$replaceAll", -1)
}

func replaceOp(name string, n int) exprOp {
	return func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		if _, ok := arg.DocumentOK(); !ok {
			return missing, cerr(51751, "%s requires an object as an argument, found: %s", name, exprTypeName(arg))
		}
		m, err := namedArgs(name, arg, 51750, []string{"input", "find", "replacement"}, "input", "find", "replacement")
		if err != nil {
			return missing, err
		}
		var s [3]string
		isNull := false
		for i, k := range []string{"input", "find", "replacement"} {
			v, err := x.eval(m[k])
			if err != nil {
				return missing, err
			}
			if nullish(v) {
				isNull = true
				continue
			}
			str, ok := v.StringValueOK()
			if !ok {
				return missing, cerr(int32(51746+i), "%s requires that '%s' be a string, found: %s", name, k, v.String())
			}
			s[i] = str
		}
		if isNull {
			return nullValue, nil
		}
		return val(strings.Replace(s[0], s[1], s[2], n)), nil
	}
}
