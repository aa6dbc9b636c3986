package sim

import (
	"fmt"
	"math"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// ApplyUpdate returns the updated document for operator updates ($set,
// $unset, $inc, $setOnInsert, $push, $min, $max) or a replacement.
func ApplyUpdate(doc bson.Raw, upd bson.Raw, inserting bool) (bson.Raw, error) {
	first, err := upd.IndexErr(0)
	var d bson.D
	if err := bson.Unmarshal(doc, &d); err != nil {
		return nil, err
	}
	id := doc.Lookup("_id")
	if err != nil || !strings.HasPrefix(first.Key(), "$") {
		var repl bson.D
		if err := bson.Unmarshal(upd, &repl); err != nil {
			return nil, err
		}
		out := bson.D{}
		if id.Type != 0 {
			out = append(out, bson.E{Key: "_id", Value: id})
		}
		for _, e := range repl {
			if e.Key == "_id" {
				if id.Type == 0 {
					out = append(bson.D{e}, out...)
				}
				continue
			}
			out = append(out, e)
		}
		return bson.Marshal(out)
	}
	ops, _ := upd.Elements()
	for _, op := range ops {
		fields, ok := op.Value().DocumentOK()
		if !ok {
			return nil, &QueryError{fmt.Sprintf("Modifiers operate on fields but we found type %s instead.", typeName(op.Value().Type))}
		}
		fe, _ := fields.Elements()
		for _, f := range fe {
			path := strings.Split(f.Key(), ".")
			if f.Key() == "_id" && op.Key() != "$setOnInsert" && !inserting {
				return nil, &QueryError{"Performing an update on the path '_id' would modify the immutable field '_id'"}
			}
			switch op.Key() {
			case "$set":
				d = setPath(d, path, f.Value())
			case "$setOnInsert":
				if inserting {
					d = setPath(d, path, f.Value())
				}
			case "$unset":
				d = unsetPath(d, path)
			case "$inc":
				cur := getPath(d, path)
				d = setPath(d, path, addNumbers(cur, f.Value()))
			case "$min", "$max":
				cur := getPath(d, path)
				if cur == nil {
					d = setPath(d, path, f.Value())
					break
				}
				ct, cv, _ := bson.MarshalValue(cur)
				c := compareValues(bson.RawValue{Type: ct, Value: cv}, f.Value())
				if op.Key() == "$min" && c > 0 || op.Key() == "$max" && c < 0 {
					d = setPath(d, path, f.Value())
				}
			case "$push":
				cur := getPath(d, path)
				arr, _ := cur.(bson.A)
				d = setPath(d, path, append(arr, f.Value()))
			default:
				return nil, &QueryError{fmt.Sprintf("Unknown modifier: %s. Expected a valid update modifier or pipeline-style update specified as an array", op.Key())}
			}
		}
	}
	return bson.Marshal(d)
}

func getPath(d bson.D, path []string) any {
	for _, e := range d {
		if e.Key == path[0] {
			if len(path) == 1 {
				return e.Value
			}
			if sub, ok := e.Value.(bson.D); ok {
				return getPath(sub, path[1:])
			}
			return nil
		}
	}
	return nil
}

func setPath(d bson.D, path []string, v any) bson.D {
	for i, e := range d {
		if e.Key == path[0] {
			if len(path) == 1 {
				d[i].Value = v
				return d
			}
			sub, _ := e.Value.(bson.D)
			d[i].Value = setPath(sub, path[1:], v)
			return d
		}
	}
	if len(path) == 1 {
		return append(d, bson.E{Key: path[0], Value: v})
	}
	return append(d, bson.E{Key: path[0], Value: setPath(bson.D{}, path[1:], v)})
}

func unsetPath(d bson.D, path []string) bson.D {
	for i, e := range d {
		if e.Key == path[0] {
			if len(path) == 1 {
				return append(d[:i:i], d[i+1:]...)
			}
			if sub, ok := e.Value.(bson.D); ok {
				d[i].Value = unsetPath(sub, path[1:])
			}
			return d
		}
	}
	return d
}

func addNumbers(cur any, inc bson.RawValue) any {
	switch inc.Type {
	case bson.TypeInt32:
		switch c := cur.(type) {
		case int32:
			s := int64(c) + int64(inc.Int32())
			if s > math.MaxInt32 || s < math.MinInt32 {
				return s
			}
			return int32(s)
		case int64:
			return c + int64(inc.Int32())
		case float64:
			return c + float64(inc.Int32())
		case nil:
			return inc.Int32()
		}
	case bson.TypeInt64:
		switch c := cur.(type) {
		case int32:
			return int64(c) + inc.Int64()
		case int64:
			return c + inc.Int64()
		case float64:
			return c + float64(inc.Int64())
		case nil:
			return inc.Int64()
		}
	case bson.TypeDouble:
		switch c := cur.(type) {
		case int32:
			return float64(c) + inc.Double()
		case int64:
			return float64(c) + inc.Double()
		case float64:
			return c + inc.Double()
		case nil:
			return inc.Double()
		}
	}
	return cur
}
