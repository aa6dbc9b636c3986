package sim

import (
	"go.mongodb.org/mongo-driver/v2/bson"
)

// leafOp is what an update operator does to the value at its path.
type leafOp int

const (
	leafKeep leafOp = iota
	leafSet
	leafDelete
)

// leafFn decides the new value at a path from the current one.
type leafFn func(cur any, exists bool) (any, leafOp, error)

// modifyPath applies fn at path inside container (a bson.D or bson.A),
// returning the new container. With create, missing documents on the way
// are created and arrays padded with null, as $set does; without, a path
// that does not exist is left alone. parentKey names container in
// PathNotViable messages.
func modifyPath(container any, parentKey string, path []string, create bool, fn leafFn) (any, error) {
	switch c := container.(type) {
	case bson.D:
		for i, e := range c {
			if e.Key != path[0] {
				continue
			}
			if len(path) == 1 {
				nv, op, err := fn(e.Value, true)
				switch {
				case err != nil:
					return nil, err
				case op == leafSet:
					c[i].Value = nv
				case op == leafDelete:
					return append(c[:i:i], c[i+1:]...), nil
				}
				return c, nil
			}
			nv, err := modifyChild(e.Value, e.Key, path[1:], create, fn)
			if err != nil {
				return nil, err
			}
			c[i].Value = nv
			return c, nil
		}
		if !create {
			return c, nil
		}
		nv, ok, err := createValue(path[1:], fn)
		if err != nil || !ok {
			return c, err
		}
		return append(c, bson.E{Key: path[0], Value: nv}), nil
	case bson.A:
		idx, isIdx := arrayIndex(path[0])
		if !isIdx {
			if !create {
				return c, nil
			}
			return nil, cerr(28, "Cannot create field '%s' in element {%s: %s}", path[0], parentKey, showValue(toRaw(c)))
		}
		if idx < len(c) {
			if len(path) == 1 {
				nv, op, err := fn(c[idx], true)
				switch {
				case err != nil:
					return nil, err
				case op == leafSet:
					c[idx] = nv
				case op == leafDelete:
					c[idx] = nil // $unset of an array element leaves null
				}
				return c, nil
			}
			nv, err := modifyChild(c[idx], path[0], path[1:], create, fn)
			if err != nil {
				return nil, err
			}
			c[idx] = nv
			return c, nil
		}
		if !create {
			return c, nil
		}
		nv, ok, err := createValue(path[1:], fn)
		if err != nil || !ok {
			return c, err
		}
		for len(c) < idx {
			c = append(c, nil)
		}
		return append(c, nv), nil
	}
	return container, nil
}

func modifyChild(v any, key string, rest []string, create bool, fn leafFn) (any, error) {
	switch v.(type) {
	case bson.D, bson.A:
		return modifyPath(v, key, rest, create, fn)
	}
	if !create {
		return v, nil
	}
	return nil, cerr(28, "Cannot create field '%s' in element {%s: %s}", rest[0], key, showValue(toRaw(v)))
}

// createValue builds the value for a missing path: nested documents down
// to what fn sets.
func createValue(rest []string, fn leafFn) (any, bool, error) {
	if len(rest) == 0 {
		nv, op, err := fn(nil, false)
		return nv, op == leafSet, err
	}
	inner, ok, err := createValue(rest[1:], fn)
	if err != nil || !ok {
		return nil, false, err
	}
	return bson.D{{Key: rest[0], Value: inner}}, true, nil
}

// getPath returns the value at a concrete path of documents and array
// positions.
func getPath(v any, path []string) (any, bool) {
	for _, p := range path {
		switch c := v.(type) {
		case bson.D:
			found := false
			for _, e := range c {
				if e.Key == p {
					v, found = e.Value, true
					break
				}
			}
			if !found {
				return nil, false
			}
		case bson.A:
			i, ok := arrayIndex(p)
			if !ok || i >= len(c) {
				return nil, false
			}
			v = c[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// toRaw and toGo convert between driver values and raw BSON values.
func toRaw(v any) bson.RawValue {
	switch x := v.(type) {
	case bson.RawValue:
		return x
	case nil:
		return bson.RawValue{Type: bson.TypeNull}
	}
	t, b, err := bson.MarshalValue(v)
	if err != nil {
		return bson.RawValue{}
	}
	return bson.RawValue{Type: t, Value: b}
}

func toGo(v bson.RawValue) any {
	raw, err := bson.Marshal(bson.D{{Key: "v", Value: v}})
	if err != nil {
		return nil
	}
	var d bson.D
	if err := bson.Unmarshal(raw, &d); err != nil || len(d) == 0 {
		return nil
	}
	return d[0].Value
}
