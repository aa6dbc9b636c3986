package sim

import (
	"encoding/hex"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Type expressions: $type, $convert and its shorthands.

func init() {
	exprOps["$type"] = func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
		a, err := x.args("$type", arg, 1, 1)
		if err != nil {
			return missing, err
		}
		return val(exprTypeName(a[0])), nil
	}
	for op, to := range map[string]string{"$toString": "string", "$toInt": "int", "$toLong": "long", "$toDouble": "double",
		"$toBool": "bool", "$toDate": "date", "$toObjectId": "objectId", "$toDecimal": "decimal"} {
		exprOps[op] = func(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
			a, err := x.args(op, arg, 1, 1)
			if err != nil {
				return missing, err
			}
			if nullish(a[0]) {
				return nullValue, nil
			}
			return convertTo(a[0], to)
		}
	}
	exprOps["$convert"] = opConvert
}

// typeCodes are the numeric aliases $convert's 'to' accepts.
var typeCodes = map[int64]string{1: "double", 2: "string", 7: "objectId", 8: "bool", 9: "date", 16: "int", 18: "long", 19: "decimal"}

func convFail(format string, a ...any) error {
	return cerr(241, format, a...)
}

// convertTo is $convert without onError/onNull; the input is not nullish.
func convertTo(v bson.RawValue, to string) (bson.RawValue, error) {
	unsupported := func() (bson.RawValue, error) {
		return missing, convFail("Unsupported conversion from %s to %s in $convert with no onError value", exprTypeName(v), to)
	}
	switch to {
	case "double", "int", "long":
		var f float64
		isInt := false
		var i int64
		switch v.Type {
		case bson.TypeBoolean:
			if v.Boolean() {
				i = 1
			}
			isInt = true
		case bson.TypeInt32, bson.TypeInt64:
			i, isInt = toNum(v).i, true
		case bson.TypeDouble:
			f = v.Double()
		case bson.TypeDateTime:
			if to == "int" {
				return unsupported()
			}
			i, isInt = v.DateTime(), true
		case bson.TypeString:
			s := v.StringValue()
			if to == "double" {
				p, err := strconv.ParseFloat(s, 64)
				if err != nil && !strings.Contains(err.Error(), "range") {
					return missing, convFail("Failed to parse number '%s' in $convert with no onError value: Did not consume whole string.", s)
				}
				f = p
			} else {
				p, err := strconv.ParseInt(s, 10, 64)
				if err != nil || to == "int" && p != int64(int32(p)) {
					if err == nil || strings.Contains(err.Error(), "range") {
						return missing, convFail("Failed to parse number '%s' in $convert with no onError value: Overflow", s)
					}
					return missing, convFail("Failed to parse number '%s' in $convert with no onError value: Did not consume whole string.", s)
				}
				i, isInt = p, true
			}
		default:
			return unsupported()
		}
		switch {
		case to == "double" && isInt:
			return val(float64(i)), nil
		case to == "double":
			return val(f), nil
		case !isInt && (math.IsNaN(f) || math.IsInf(f, 0)):
			return missing, convFail("Attempt to convert %s value to integer type in $convert with no onError value", map[bool]string{true: "NaN", false: "infinity"}[math.IsNaN(f)])
		case !isInt:
			t := math.Trunc(f)
			if to == "int" && (t > math.MaxInt32 || t < math.MinInt32) || to == "long" && (t >= math.MaxInt64 || t < math.MinInt64) {
				return missing, convFail("Conversion would overflow target type in $convert with no onError value: %s", strconv.FormatFloat(f, 'g', -1, 64))
			}
			i = int64(t)
		}
		if to == "int" {
			if i != int64(int32(i)) {
				return missing, convFail("Conversion would overflow target type in $convert with no onError value: %d", i)
			}
			return val(int32(i)), nil
		}
		return val(i), nil
	case "bool":
		switch v.Type {
		case bson.TypeBoolean:
			return v, nil
		case bson.TypeInt32, bson.TypeInt64, bson.TypeDouble:
			return val(truthy(v)), nil
		case bson.TypeString, bson.TypeObjectID, bson.TypeDateTime, bson.TypeEmbeddedDocument, bson.TypeArray,
			bson.TypeBinary, bson.TypeRegex, bson.TypeTimestamp, bson.TypeMinKey, bson.TypeMaxKey, bson.TypeJavaScript:
			return val(true), nil
		}
		return unsupported()
	case "string":
		switch v.Type {
		case bson.TypeString:
			return v, nil
		case bson.TypeInt32, bson.TypeInt64:
			return val(strconv.FormatInt(toNum(v).i, 10)), nil
		case bson.TypeDouble:
			return val(formatDouble(v.Double())), nil
		case bson.TypeBoolean:
			return val(strconv.FormatBool(v.Boolean())), nil
		case bson.TypeObjectID:
			return val(v.ObjectID().Hex()), nil
		case bson.TypeDateTime:
			return val(time.UnixMilli(v.DateTime()).UTC().Format("2006-01-02T15:04:05.000Z")), nil
		}
		return unsupported()
	case "date":
		switch v.Type {
		case bson.TypeDateTime:
			return v, nil
		case bson.TypeInt64:
			return val(bson.DateTime(v.Int64())), nil
		case bson.TypeDouble:
			f := v.Double()
			if math.IsNaN(f) || math.IsInf(f, 0) || f >= math.MaxInt64 || f < math.MinInt64 {
				return missing, convFail("Conversion would overflow target type in $convert with no onError value: %s", formatDouble(f))
			}
			return val(bson.DateTime(int64(f))), nil
		case bson.TypeObjectID:
			return val(bson.NewDateTimeFromTime(v.ObjectID().Timestamp())), nil
		case bson.TypeTimestamp:
			t, _ := v.Timestamp()
			return val(bson.DateTime(int64(t) * 1000)), nil
		case bson.TypeString:
			s := v.StringValue()
			for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.000Z0700", "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02"} {
				if t, err := time.Parse(layout, s); err == nil {
					return val(bson.NewDateTimeFromTime(t)), nil
				}
			}
			return missing, convFail("Error parsing date string '%s'; 0: passing a time zone identifier as part of the string is not allowed '%s'", s, s)
		}
		return unsupported()
	case "objectId":
		switch v.Type {
		case bson.TypeObjectID:
			return v, nil
		case bson.TypeString:
			s := v.StringValue()
			b, err := hex.DecodeString(s)
			if err != nil || len(b) != 12 {
				return missing, convFail("Failed to parse objectId '%s' in $convert with no onError value: Invalid string length for parsing to OID, expected 24 but found %d", s, len(s))
			}
			var id bson.ObjectID
			copy(id[:], b)
			return val(id), nil
		}
		return unsupported()
	case "decimal":
		return missing, cerr(2, "the simulator does not model Decimal128 ($convert to decimal)")
	}
	return missing, cerr(2, "Unknown type name: %s", to)
}

// formatDouble writes a double as mongod's $toString does: printf's %g,
// six significant digits.
func formatDouble(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0 && math.Signbit(f):
		return "-0"
	}
	return strconv.FormatFloat(f, 'g', 6, 64)
}

func opConvert(x *evalCtx, arg bson.RawValue) (bson.RawValue, error) {
	if _, ok := arg.DocumentOK(); !ok {
		return missing, cerr(14, "$convert expects an object of named arguments but found: %s", exprTypeName(arg))
	}
	m, err := namedArgs("$convert", arg, 14, []string{"input", "to", "onError", "onNull"})
	if err != nil {
		return missing, err
	}
	if _, ok := m["input"]; !ok {
		return missing, cerr(9, "Missing 'input' parameter to $convert")
	}
	if _, ok := m["to"]; !ok {
		return missing, cerr(9, "Missing 'to' parameter to $convert")
	}
	in, err := x.eval(m["input"])
	if err != nil {
		return missing, err
	}
	tv, err := x.eval(m["to"])
	if err != nil {
		return missing, err
	}
	if nullish(in) || nullish(tv) {
		if on, ok := m["onNull"]; ok && !nullish(tv) {
			return x.eval(on)
		}
		return nullValue, nil
	}
	var to string
	switch {
	case tv.Type == bson.TypeString:
		to = tv.StringValue()
	case isArith(tv):
		to = typeCodes[int64(toNum(tv).float())]
		if to == "" {
			return missing, cerr(2, "In $convert, numeric value for 'to' does not correspond to a BSON type: %s", tv.String())
		}
	default:
		return missing, cerr(2, "$convert's 'to' argument must be a string or number, but is %s", exprTypeName(tv))
	}
	out, err := convertTo(in, to)
	if ce := (*CmdError)(nil); errors.As(err, &ce) && ce.Code == 241 {
		if on, has := m["onError"]; has {
			return x.eval(on)
		}
	}
	return out, err
}
