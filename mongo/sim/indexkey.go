package sim

import (
	"math"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// keyString encodes a value so that values mongod's indexes hold equal
// (1, 1.0 and NumberLong(1); documents field by field) encode equally and
// values of different canonical types never do. Missing, null and
// undefined encode as null, as an index stores them.
func keyString(v bson.RawValue) string {
	var b strings.Builder
	writeKeyString(&b, v)
	return b.String()
}

func writeKeyString(b *strings.Builder, v bson.RawValue) {
	switch v.Type {
	case 0, bson.TypeNull, bson.TypeUndefined:
		b.WriteString("z")
		return
	}
	b.WriteString(strconv.Itoa(typeOrder(v.Type)))
	switch v.Type {
	case bson.TypeInt32, bson.TypeInt64, bson.TypeDouble, bson.TypeDecimal128:
		b.WriteString(canonicalNumber(v))
	case bson.TypeString, bson.TypeSymbol:
		s, _ := v.StringValueOK()
		if v.Type == bson.TypeSymbol {
			s, _ = v.SymbolOK()
		}
		b.WriteString(strconv.Quote(s))
	case bson.TypeEmbeddedDocument, bson.TypeArray:
		b.WriteString("{")
		els, _ := bson.Raw(v.Value).Elements()
		for _, e := range els {
			if v.Type == bson.TypeEmbeddedDocument {
				b.WriteString(strconv.Quote(e.Key()))
			}
			writeKeyString(b, e.Value())
			b.WriteString(",")
		}
		b.WriteString("}")
	default:
		b.WriteString(strconv.Itoa(int(v.Type)))
		b.WriteString(strconv.Quote(string(v.Value)))
	}
}

// canonicalNumber writes numbers that compare equal identically.
func canonicalNumber(v bson.RawValue) string {
	switch v.Type {
	case bson.TypeInt32:
		return strconv.FormatInt(int64(v.Int32()), 10)
	case bson.TypeInt64:
		return strconv.FormatInt(v.Int64(), 10)
	case bson.TypeDecimal128:
		d := v.Decimal128()
		if f, err := strconv.ParseFloat(d.String(), 64); err == nil {
			return canonicalFloat(f)
		}
		return d.String()
	}
	return canonicalFloat(v.Double())
}

func canonicalFloat(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1<<63 {
		return strconv.FormatInt(int64(f), 10)
	}
	if math.IsNaN(f) {
		return "NaN"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// indexedValues returns the values an index stores for a dotted path: every
// element of an array met on the way (an empty array as undefined), a
// missing field as the zero RawValue. multikey reports an array was met.
func indexedValues(doc bson.Raw, path string) (vals []bson.RawValue, multikey bool) {
	collectPath(bson.RawValue{Type: bson.TypeEmbeddedDocument, Value: doc}, strings.Split(path, "."), &vals, &multikey)
	return vals, multikey
}

func collectPath(v bson.RawValue, parts []string, out *[]bson.RawValue, multikey *bool) {
	if len(parts) == 0 {
		if v.Type != bson.TypeArray {
			*out = append(*out, v)
			return
		}
		*multikey = true
		els, _ := bson.Raw(v.Value).Values()
		if len(els) == 0 {
			*out = append(*out, bson.RawValue{Type: bson.TypeUndefined})
		}
		*out = append(*out, els...)
		return
	}
	switch v.Type {
	case bson.TypeEmbeddedDocument:
		sub, err := bson.Raw(v.Value).LookupErr(parts[0])
		if err != nil {
			*out = append(*out, bson.RawValue{})
			return
		}
		collectPath(sub, parts[1:], out, multikey)
	case bson.TypeArray:
		*multikey = true
		els, _ := bson.Raw(v.Value).Values()
		found := false
		for _, e := range els {
			if e.Type == bson.TypeEmbeddedDocument {
				collectPath(e, parts, out, multikey)
				found = true
			}
		}
		if !found {
			*out = append(*out, bson.RawValue{})
		}
	default:
		*out = append(*out, bson.RawValue{})
	}
}
