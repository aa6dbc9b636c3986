package sim

import (
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// pathValues returns the values a dotted path reaches in doc, the way
// mongod's matcher walks it: sub-documents are entered, arrays on the way
// are traversed element by element (documents only), a numeric component
// also indexes an array, and a path that stops early yields one missing
// value (Type 0). With expandLeaf, an array at the end of the path yields
// itself and then each of its elements.
func pathValues(doc bson.Raw, path string, expandLeaf bool) []bson.RawValue {
	var out []bson.RawValue
	walkPath(bson.RawValue{Type: bson.TypeEmbeddedDocument, Value: doc}, strings.Split(path, "."), expandLeaf, &out)
	return out
}

func walkPath(v bson.RawValue, parts []string, expandLeaf bool, out *[]bson.RawValue) {
	if len(parts) == 0 {
		*out = append(*out, v)
		if arr, ok := v.ArrayOK(); ok && expandLeaf {
			vals, _ := arr.Values()
			*out = append(*out, vals...)
		}
		return
	}
	switch v.Type {
	case bson.TypeEmbeddedDocument:
		child, err := v.Document().LookupErr(parts[0])
		if err != nil {
			*out = append(*out, bson.RawValue{})
			return
		}
		walkPath(child, parts[1:], expandLeaf, out)
	case bson.TypeArray:
		vals, _ := v.Array().Values()
		if i, ok := arrayIndex(parts[0]); ok && i < len(vals) {
			walkPath(vals[i], parts[1:], expandLeaf, out)
		}
		for _, e := range vals {
			if e.Type == bson.TypeEmbeddedDocument {
				if _, err := e.Document().LookupErr(parts[0]); err != nil {
					if _, numeric := arrayIndex(parts[0]); numeric {
						continue // an index miss on a sub-document is no value
					}
				}
				walkPath(e, parts, expandLeaf, out)
			}
		}
	default:
		*out = append(*out, bson.RawValue{})
	}
}

// arrayIndex parses a path component that addresses an array position:
// digits only, as mongod requires.
func arrayIndex(s string) (int, bool) {
	if s == "" || len(s) > 9 {
		return 0, false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	i, err := strconv.Atoi(s)
	return i, err == nil
}
