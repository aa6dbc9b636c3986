package sim

import (
	"encoding/hex"
	"math"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// stringValue: a string value, "" for anything else (or a malformed one).
func stringValue(v bson.RawValue) string {
	s, _ := v.StringValueOK()
	return s
}

// showElem prints one field as mongod's messages quote an element: {a: 1}.
func showElem(key string, v bson.RawValue) string {
	return "{" + key + ": " + showValue(v) + "}"
}

// showValue writes a value as mongod's BSONObj::toString does, the
// form of "dup key: { sku: \"x\" }" and of specs in error messages.
func showValue(v bson.RawValue) (shown string) {
	defer func() {
		if recover() != nil {
			shown = "<malformed BSON>" // a value the driver cannot read: never a panic
		}
	}()
	switch v.Type {
	case 0, bson.TypeNull:
		return "null"
	case bson.TypeUndefined:
		return "undefined"
	case bson.TypeString:
		return strconv.Quote(v.StringValue())
	case bson.TypeInt32:
		return strconv.FormatInt(int64(v.Int32()), 10)
	case bson.TypeInt64:
		return strconv.FormatInt(v.Int64(), 10)
	case bson.TypeDouble:
		f := v.Double()
		if f == math.Trunc(f) && math.Abs(f) < 1e15 {
			return strconv.FormatFloat(f, 'f', 1, 64)
		}
		return strconv.FormatFloat(f, 'g', -1, 64)
	case bson.TypeDecimal128:
		return "NumberDecimal(\"" + v.Decimal128().String() + "\")"
	case bson.TypeBoolean:
		return strconv.FormatBool(v.Boolean())
	case bson.TypeObjectID:
		return "ObjectId('" + v.ObjectID().Hex() + "')"
	case bson.TypeDateTime:
		return "new Date(" + strconv.FormatInt(v.DateTime(), 10) + ")"
	case bson.TypeTimestamp:
		t, i := v.Timestamp()
		return "Timestamp(" + strconv.FormatUint(uint64(t), 10) + ", " + strconv.FormatUint(uint64(i), 10) + ")"
	case bson.TypeBinary:
		sub, data := v.Binary()
		if sub == 4 && len(data) == 16 {
			var u [16]byte
			copy(u[:], data)
			return "UUID(\"" + formatUUID(u) + "\")"
		}
		return "BinData(" + strconv.Itoa(int(sub)) + ", " + strings.ToUpper(hex.EncodeToString(data)) + ")"
	case bson.TypeRegex:
		pattern, opts := v.Regex()
		return "/" + pattern + "/" + opts
	case bson.TypeMinKey:
		return "MinKey"
	case bson.TypeMaxKey:
		return "MaxKey"
	case bson.TypeEmbeddedDocument:
		return showDoc(bson.Raw(v.Value))
	case bson.TypeArray:
		vals, _ := bson.Raw(v.Value).Values()
		if len(vals) == 0 {
			return "[]"
		}
		parts := make([]string, len(vals))
		for i, x := range vals {
			parts[i] = showValue(x)
		}
		return "[ " + strings.Join(parts, ", ") + " ]"
	}
	return v.String()
}

// showDoc is a document in mongod's toString form: { a: 1, b: "x" }.
func showDoc(d bson.Raw) string {
	els, _ := d.Elements()
	if len(els) == 0 {
		return "{}"
	}
	parts := make([]string, len(els))
	for i, e := range els {
		parts[i] = e.Key() + ": " + showValue(e.Value())
	}
	return "{ " + strings.Join(parts, ", ") + " }"
}
