package sim

import (
	"math"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// schemaPred is a compiled $jsonSchema: whether a value satisfies it.
type schemaPred func(v bson.RawValue) bool

// jsonTypes are the JSON Schema "type" names over BSON types.
var jsonTypes = map[string]func(bson.Type) bool{
	"object":  func(t bson.Type) bool { return t == bson.TypeEmbeddedDocument },
	"array":   func(t bson.Type) bool { return t == bson.TypeArray },
	"number":  isNumber,
	"boolean": func(t bson.Type) bool { return t == bson.TypeBoolean },
	"string":  func(t bson.Type) bool { return t == bson.TypeString },
	"null":    func(t bson.Type) bool { return t == bson.TypeNull },
}

// parseJSONSchema compiles the subset of $jsonSchema that mongod supports
// and the simulator models: bsonType, type, required, properties,
// additionalProperties, enum, minimum/maximum (exclusive too),
// minLength/maxLength, pattern, items (one schema), minItems/maxItems,
// uniqueItems, minProperties/maxProperties, allOf/anyOf/oneOf/not;
// title and description are ignored.
func parseJSONSchema(schema bson.Raw) (schemaPred, error) {
	elems, err := schema.Elements()
	if err != nil {
		return nil, cerr(2, "%v", err)
	}
	var preds []schemaPred
	var props map[string]schemaPred
	var additional *bson.RawValue
	for _, e := range elems {
		k, v := e.Key(), e.Value()
		p, err := schemaKeyword(schema, k, v)
		if err != nil {
			return nil, err
		}
		switch k {
		case "properties":
			d, ok := v.DocumentOK()
			if !ok {
				return nil, cerr(14, "$jsonSchema keyword 'properties' must be an object")
			}
			props = map[string]schemaPred{}
			pe, _ := d.Elements()
			for _, f := range pe {
				sub, ok := f.Value().DocumentOK()
				if !ok {
					return nil, cerr(14, "Nested schema for $jsonSchema property '%s' must be an object", f.Key())
				}
				if props[f.Key()], err = parseJSONSchema(sub); err != nil {
					return nil, err
				}
			}
		case "additionalProperties":
			additional = &v
		}
		if p != nil {
			preds = append(preds, p)
		}
	}
	if props != nil || additional != nil {
		p, err := objectSchema(props, additional)
		if err != nil {
			return nil, err
		}
		preds = append(preds, p)
	}
	return func(v bson.RawValue) bool {
		for _, p := range preds {
			if !p(v) {
				return false
			}
		}
		return true
	}, nil
}

// onType restricts a keyword to the values it is about: others pass.
func onType(is func(bson.Type) bool, p schemaPred) schemaPred {
	return func(v bson.RawValue) bool { return !is(v.Type) || p(v) }
}

func schemaCount(k string, v bson.RawValue) (int, error) {
	f, ok := v.AsFloat64OK()
	if !ok || f != math.Trunc(f) || f < 0 {
		return 0, cerr(2, "$jsonSchema keyword '%s' must be a non-negative integer", k)
	}
	return int(f), nil
}

func schemaKeyword(schema bson.Raw, k string, v bson.RawValue) (schemaPred, error) {
	isString := func(t bson.Type) bool { return t == bson.TypeString }
	isArray := func(t bson.Type) bool { return t == bson.TypeArray }
	isObject := func(t bson.Type) bool { return t == bson.TypeEmbeddedDocument }
	switch k {
	case "title", "description", "properties", "additionalProperties":
		return nil, nil
	case "bsonType", "type":
		var names []bson.RawValue
		if arr, ok := v.ArrayOK(); ok {
			names, _ = arr.Values()
		} else {
			names = []bson.RawValue{v}
		}
		var accept []func(bson.Type) bool
		for _, n := range names {
			s, ok := n.StringValueOK()
			if !ok {
				return nil, cerr(14, "$jsonSchema keyword '%s' must be a string or an array of strings", k)
			}
			if k == "type" {
				is, ok := jsonTypes[s]
				if !ok {
					return nil, cerr(2, "Unknown type name alias: %s", s)
				}
				accept = append(accept, is)
				continue
			}
			if s == "number" {
				accept = append(accept, isNumber)
				continue
			}
			t, ok := bsonTypeAliases[s]
			if !ok {
				return nil, cerr(2, "Unknown type name alias: %s", s)
			}
			accept = append(accept, func(x bson.Type) bool { return x == t })
		}
		return func(x bson.RawValue) bool {
			for _, is := range accept {
				if is(x.Type) {
					return true
				}
			}
			return false
		}, nil
	case "required":
		arr, ok := v.ArrayOK()
		if !ok {
			return nil, cerr(14, "$jsonSchema keyword 'required' must be an array")
		}
		names, _ := arr.Values()
		for _, n := range names {
			if n.Type != bson.TypeString {
				return nil, cerr(14, "$jsonSchema keyword 'required' must be an array of strings")
			}
		}
		return onType(isObject, func(x bson.RawValue) bool {
			for _, n := range names {
				if _, err := x.Document().LookupErr(stringValue(n)); err != nil {
					return false
				}
			}
			return true
		}), nil
	case "enum":
		arr, ok := v.ArrayOK()
		if !ok {
			return nil, cerr(14, "$jsonSchema keyword 'enum' must be an array")
		}
		vals, _ := arr.Values()
		return func(x bson.RawValue) bool {
			for _, e := range vals {
				if typeOrder(e.Type) == typeOrder(x.Type) && compareValues(e, x) == 0 {
					return true
				}
			}
			return false
		}, nil
	case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
		if k[0] == 'e' {
			if v.Type != bson.TypeBoolean {
				return nil, cerr(14, "$jsonSchema keyword '%s' must be a boolean", k)
			}
			return nil, nil // read by minimum/maximum
		}
		if !isNumber(v.Type) {
			return nil, cerr(14, "$jsonSchema keyword '%s' must be a number", k)
		}
		exclusive, _ := schema.Lookup("exclusive" + string(k[0]-'a'+'A') + k[1:]).BooleanOK()
		return onType(isNumber, func(x bson.RawValue) bool {
			c := compareValues(x, v)
			if k == "maximum" {
				c = -c
			}
			return c > 0 || c == 0 && !exclusive
		}), nil
	case "minLength", "maxLength":
		n, err := schemaCount(k, v)
		if err != nil {
			return nil, err
		}
		return onType(isString, func(x bson.RawValue) bool {
			l := utf8.RuneCountInString(stringValue(x))
			return k == "minLength" && l >= n || k == "maxLength" && l <= n
		}), nil
	case "pattern":
		s, ok := v.StringValueOK()
		if !ok {
			return nil, cerr(14, "$jsonSchema keyword 'pattern' must be a string")
		}
		re, err := compileRegex(s, "")
		if err != nil {
			return nil, err
		}
		return onType(isString, func(x bson.RawValue) bool { return re.MatchString(stringValue(x)) }), nil
	case "minItems", "maxItems", "minProperties", "maxProperties":
		n, err := schemaCount(k, v)
		if err != nil {
			return nil, err
		}
		is := isArray
		if k == "minProperties" || k == "maxProperties" {
			is = isObject
		}
		return onType(is, func(x bson.RawValue) bool {
			l := 0
			if els, err := bson.Raw(x.Value).Elements(); err == nil {
				l = len(els)
			}
			if k[:3] == "min" {
				return l >= n
			}
			return l <= n
		}), nil
	case "uniqueItems":
		if b, _ := v.BooleanOK(); !b {
			return nil, nil
		}
		return onType(isArray, func(x bson.RawValue) bool {
			vals, _ := x.Array().Values()
			for i := range vals {
				for j := i + 1; j < len(vals); j++ {
					if typeOrder(vals[i].Type) == typeOrder(vals[j].Type) && compareValues(vals[i], vals[j]) == 0 {
						return false
					}
				}
			}
			return true
		}), nil
	case "items":
		sub, ok := v.DocumentOK()
		if !ok {
			return nil, cerr(2, "$jsonSchema keyword 'items' as an array is not modelled by the simulator")
		}
		item, err := parseJSONSchema(sub)
		if err != nil {
			return nil, err
		}
		return onType(isArray, func(x bson.RawValue) bool {
			vals, _ := x.Array().Values()
			for _, e := range vals {
				if !item(e) {
					return false
				}
			}
			return true
		}), nil
	case "allOf", "anyOf", "oneOf", "not":
		return schemaLogic(k, v)
	}
	return nil, cerr(9, "Unknown $jsonSchema keyword: %s", k)
}

func schemaLogic(k string, v bson.RawValue) (schemaPred, error) {
	if k == "not" {
		sub, ok := v.DocumentOK()
		if !ok {
			return nil, cerr(14, "$jsonSchema keyword 'not' must be an object")
		}
		p, err := parseJSONSchema(sub)
		if err != nil {
			return nil, err
		}
		return func(x bson.RawValue) bool { return !p(x) }, nil
	}
	arr, ok := v.ArrayOK()
	vals, _ := arr.Values()
	if !ok || len(vals) == 0 {
		return nil, cerr(2, "$jsonSchema keyword '%s' must be a nonempty array", k)
	}
	var subs []schemaPred
	for _, x := range vals {
		d, ok := x.DocumentOK()
		if !ok {
			return nil, cerr(14, "$jsonSchema keyword '%s' must be an array of objects", k)
		}
		p, err := parseJSONSchema(d)
		if err != nil {
			return nil, err
		}
		subs = append(subs, p)
	}
	return func(x bson.RawValue) bool {
		n := 0
		for _, p := range subs {
			if p(x) {
				n++
			}
		}
		switch k {
		case "allOf":
			return n == len(subs)
		case "anyOf":
			return n > 0
		}
		return n == 1
	}, nil
}

func objectSchema(props map[string]schemaPred, additional *bson.RawValue) (schemaPred, error) {
	var extra schemaPred
	if additional != nil {
		switch additional.Type {
		case bson.TypeBoolean:
			if !additional.Boolean() {
				extra = func(bson.RawValue) bool { return false }
			}
		case bson.TypeEmbeddedDocument:
			p, err := parseJSONSchema(additional.Document())
			if err != nil {
				return nil, err
			}
			extra = p
		default:
			return nil, cerr(14, "$jsonSchema keyword 'additionalProperties' must be either an object or a boolean")
		}
	}
	return onType(func(t bson.Type) bool { return t == bson.TypeEmbeddedDocument }, func(x bson.RawValue) bool {
		elems, _ := x.Document().Elements()
		for _, e := range elems {
			if p, ok := props[e.Key()]; ok {
				if !p(e.Value()) {
					return false
				}
			} else if extra != nil && !extra(e.Value()) {
				return false
			}
		}
		return true
	}), nil
}
