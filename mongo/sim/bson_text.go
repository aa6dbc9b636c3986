package sim

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// bsonText renders a document as mongod's BSONObj::toString does in
// error messages: { find: "c", filter: {}, $db: "app" }.
func bsonText(d bson.Raw) string {
	els, err := d.Elements()
	if err != nil || len(els) == 0 {
		return "{}"
	}
	var b strings.Builder
	b.WriteString("{ ")
	for i, e := range els {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(e.Key())
		b.WriteString(": ")
		b.WriteString(bsonValueText(e.Value()))
	}
	b.WriteString(" }")
	return b.String()
}

func bsonValueText(v bson.RawValue) string {
	switch v.Type {
	case bson.TypeString:
		return strconv.Quote(v.StringValue())
	case bson.TypeInt32:
		return strconv.Itoa(int(v.Int32()))
	case bson.TypeInt64:
		return strconv.FormatInt(v.Int64(), 10)
	case bson.TypeDouble:
		f := v.Double()
		if f == float64(int64(f)) {
			return strconv.FormatInt(int64(f), 10) + ".0"
		}
		return strconv.FormatFloat(f, 'g', -1, 64)
	case bson.TypeBoolean:
		return strconv.FormatBool(v.Boolean())
	case bson.TypeNull:
		return "null"
	case bson.TypeEmbeddedDocument:
		return bsonText(v.Document())
	case bson.TypeArray:
		vals, _ := v.Array().Values()
		if len(vals) == 0 {
			return "[]"
		}
		parts := make([]string, len(vals))
		for i, x := range vals {
			parts[i] = bsonValueText(x)
		}
		return "[ " + strings.Join(parts, ", ") + " ]"
	case bson.TypeObjectID:
		return "ObjectId('" + v.ObjectID().Hex() + "')"
	case bson.TypeTimestamp:
		t, i := v.Timestamp()
		return fmt.Sprintf("Timestamp(%d, %d)", t, i)
	case bson.TypeDateTime:
		return fmt.Sprintf("new Date(%d)", v.DateTime())
	case bson.TypeBinary:
		sub, data := v.Binary()
		if sub == 4 && len(data) == 16 {
			h := hex.EncodeToString(data)
			return fmt.Sprintf("UUID(\"%s-%s-%s-%s-%s\")", h[:8], h[8:12], h[12:16], h[16:20], h[20:])
		}
		return fmt.Sprintf("BinData(%d, %s)", sub, strings.ToUpper(hex.EncodeToString(data)))
	}
	return v.String()
}
