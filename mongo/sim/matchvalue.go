package sim

import (
	"math"
	"regexp"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// bsonTypeAliases are $type's names for BSON types (mongod's aliases).
var bsonTypeAliases = map[string]bson.Type{
	"double": bson.TypeDouble, "string": bson.TypeString, "object": bson.TypeEmbeddedDocument,
	"array": bson.TypeArray, "binData": bson.TypeBinary, "undefined": bson.TypeUndefined,
	"objectId": bson.TypeObjectID, "bool": bson.TypeBoolean, "date": bson.TypeDateTime,
	"null": bson.TypeNull, "regex": bson.TypeRegex, "dbPointer": bson.TypeDBPointer,
	"javascript": bson.TypeJavaScript, "symbol": bson.TypeSymbol,
	"javascriptWithScope": bson.TypeCodeWithScope, "int": bson.TypeInt32,
	"timestamp": bson.TypeTimestamp, "long": bson.TypeInt64, "decimal": bson.TypeDecimal128,
	"minKey": bson.TypeMinKey, "maxKey": bson.TypeMaxKey,
}

func isNumber(t bson.Type) bool {
	return t == bson.TypeDouble || t == bson.TypeInt32 || t == bson.TypeInt64 || t == bson.TypeDecimal128
}

// typePred: $type with a code, an alias, "number" or an array of those.
func typePred(ov bson.RawValue) (func(bson.RawValue) bool, error) {
	var args []bson.RawValue
	if arr, ok := ov.ArrayOK(); ok {
		args, _ = arr.Values()
	} else {
		args = []bson.RawValue{ov}
	}
	if len(args) == 0 {
		return nil, cerr(2, "$type must match at least one type")
	}
	want := map[bson.Type]bool{}
	number := false
	for _, a := range args {
		switch {
		case a.Type == bson.TypeString:
			s, _ := a.StringValueOK()
			if s == "number" {
				number = true
				continue
			}
			t, ok := bsonTypeAliases[s]
			if !ok {
				return nil, cerr(2, "Unknown type name alias: %s", s)
			}
			want[t] = true
		case isNumber(a.Type):
			f, _ := a.AsFloat64OK()
			t := bson.Type(int8(f))
			if f != float64(int64(f)) || !validTypeCode(int64(f)) {
				return nil, cerr(2, "Invalid numerical type code: %v", f)
			}
			want[t] = true
		default:
			return nil, cerr(14, "type must be represented as a number or a string")
		}
	}
	return func(v bson.RawValue) bool {
		return v.Type != 0 && (want[v.Type] || number && isNumber(v.Type))
	}, nil
}

func validTypeCode(c int64) bool {
	return c >= 1 && c <= 19 || c == -1 || c == 127
}

// modPred: $mod [divisor, remainder] on numbers, both truncated to integers.
func modPred(ov bson.RawValue) (func(bson.RawValue) bool, error) {
	arr, ok := ov.ArrayOK()
	if !ok {
		return nil, cerr(2, "malformed mod, needs to be an array")
	}
	vals, _ := arr.Values()
	switch {
	case len(vals) < 2:
		return nil, cerr(2, "malformed mod, not enough elements")
	case len(vals) > 2:
		return nil, cerr(2, "malformed mod, too many elements")
	case !isNumber(vals[0].Type):
		return nil, cerr(2, "malformed mod, divisor not a number")
	case !isNumber(vals[1].Type):
		return nil, cerr(2, "malformed mod, remainder not a number")
	}
	df, _ := vals[0].AsFloat64OK()
	rf, _ := vals[1].AsFloat64OK()
	if math.IsNaN(df) || math.IsInf(df, 0) {
		return nil, cerr(2, "malformed mod, divisor value is invalid :: caused by :: %v", df)
	}
	if math.IsNaN(rf) || math.IsInf(rf, 0) {
		return nil, cerr(2, "malformed mod, remainder value is invalid :: caused by :: %v", rf)
	}
	d, r := truncInt(vals[0]), truncInt(vals[1])
	if d == 0 {
		return nil, cerr(2, "divisor cannot be 0")
	}
	return func(v bson.RawValue) bool {
		if !isNumber(v.Type) {
			return false
		}
		if f, _ := v.AsFloat64OK(); math.IsNaN(f) || math.IsInf(f, 0) {
			return false
		}
		return truncInt(v)%d == r
	}, nil
}

func truncInt(v bson.RawValue) int64 {
	if i, ok := v.AsInt64OK(); ok && v.Type != bson.TypeDouble {
		return i
	}
	f, _ := v.AsFloat64OK()
	return int64(f)
}

// parseRegexOp compiles $regex (a string or a BSON regex) with $options, or
// a bare BSON regex, into a predicate on strings and symbols.
func parseRegexOp(regex, options *bson.RawValue) (func(bson.RawValue) bool, error) {
	if regex == nil {
		return nil, cerr(2, "$options needs a $regex")
	}
	var pat, flags string
	switch regex.Type {
	case bson.TypeString:
		pat, _ = regex.StringValueOK()
	case bson.TypeRegex:
		pat, flags = regex.Regex()
	default:
		return nil, cerr(2, "$regex has to be a string")
	}
	if options != nil {
		o, ok := options.StringValueOK()
		if !ok {
			return nil, cerr(2, "$options has to be a string")
		}
		if flags != "" && o != "" {
			return nil, cerr(51075, "options set in both $regex and $options")
		}
		if o != "" {
			flags = o
		}
	}
	if strings.ContainsRune(pat, 0) {
		return nil, cerr(51109, "Regular expression cannot contain an embedded null byte")
	}
	re, err := compileRegex(pat, flags)
	if err != nil {
		return nil, err
	}
	return func(v bson.RawValue) bool {
		switch v.Type {
		case bson.TypeString, bson.TypeSymbol:
			s, _ := v.StringValueOK()
			if v.Type == bson.TypeSymbol {
				s = v.Symbol()
			}
			return re.MatchString(s)
		case bson.TypeRegex:
			p, f := v.Regex()
			return p == pat && f == flags
		}
		return false
	}, nil
}

// compileRegex builds a Go regexp for a PCRE pattern with mongod's flags
// i, m, s, x (u is accepted: matching is always UTF-8).
func compileRegex(pat, flags string) (*regexp.Regexp, error) {
	goFlags := ""
	for _, f := range flags {
		switch f {
		case 'i', 'm', 's':
			if !strings.ContainsRune(goFlags, f) {
				goFlags += string(f)
			}
		case 'x':
			pat = stripExtended(pat)
		case 'u':
		default:
			return nil, cerr(51108, "invalid flag in regex options: %c", f)
		}
	}
	if goFlags != "" {
		pat = "(?" + goFlags + ")" + pat
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		return nil, cerr(51091, "Regular expression is invalid: %v", err)
	}
	return re, nil
}

// stripExtended removes the whitespace and #-comments that the x flag lets
// a pattern contain (outside character classes, unless escaped).
func stripExtended(pat string) string {
	var b strings.Builder
	inClass, comment := false, false
	for i := 0; i < len(pat); i++ {
		c := pat[i]
		switch {
		case comment:
			if c == '\n' {
				comment = false
			}
		case c == '\\' && i+1 < len(pat):
			b.WriteByte(c)
			b.WriteByte(pat[i+1])
			i++
		case inClass:
			if c == ']' {
				inClass = false
			}
			b.WriteByte(c)
		case c == '[':
			inClass = true
			b.WriteByte(c)
		case c == '#':
			comment = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
