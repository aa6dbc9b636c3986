package sim

import (
	"fmt"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// showValue prints a value the way mongod's error messages do
// ({ a: 1, b: "x" }, [ 1, 2 ]).
func showValue(v bson.RawValue) string {
	switch v.Type {
	case bson.TypeString:
		return strconv.Quote(stringValue(v))
	case bson.TypeInt32:
		return strconv.Itoa(int(v.Int32()))
	case bson.TypeInt64:
		return strconv.FormatInt(v.Int64(), 10)
	case bson.TypeDouble:
		f := v.Double()
		if f == float64(int64(f)) && f < 1e15 && f > -1e15 {
			return strconv.FormatFloat(f, 'f', 1, 64)
		}
		return strconv.FormatFloat(f, 'g', -1, 64)
	case bson.TypeBoolean:
		return strconv.FormatBool(v.Boolean())
	case bson.TypeNull:
		return "null"
	case bson.TypeUndefined:
		return "undefined"
	case bson.TypeObjectID:
		return "ObjectId('" + v.ObjectID().Hex() + "')"
	case bson.TypeDateTime:
		return fmt.Sprintf("new Date(%d)", v.DateTime())
	case bson.TypeEmbeddedDocument:
		return showDoc(v.Document())
	case bson.TypeArray:
		vals, _ := v.Array().Values()
		if len(vals) == 0 {
			return "[]"
		}
		parts := make([]string, len(vals))
		for i, x := range vals {
			parts[i] = showValue(x)
		}
		return "[ " + strings.Join(parts, ", ") + " ]"
	case bson.TypeMinKey:
		return "MinKey"
	case bson.TypeMaxKey:
		return "MaxKey"
	}
	return v.String()
}

// stringOf: a string value, "" for anything else (or a malformed one).
func stringValue(v bson.RawValue) string {
	s, _ := v.StringValueOK()
	return s
}

func showDoc(d bson.Raw) string {
	elems, _ := d.Elements()
	if len(elems) == 0 {
		return "{}"
	}
	parts := make([]string, len(elems))
	for i, e := range elems {
		parts[i] = e.Key() + ": " + showValue(e.Value())
	}
	return "{ " + strings.Join(parts, ", ") + " }"
}

// showElem prints one field as mongod's messages quote an element: {a: 1}.
func showElem(key string, v bson.RawValue) string {
	return "{" + key + ": " + showValue(v) + "}"
}
