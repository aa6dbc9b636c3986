package sim

import (
	"fmt"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Index is one secondary index of a collection: its spec as listIndexes
// shows it and its entries, key string → _id keys of the documents.
type Index struct {
	Spec    bson.Raw // {v, key, name, options...}
	Name    string
	Key     bson.Raw
	fields  []string
	Unique  bool
	Sparse  bool
	Hidden  bool
	Partial bson.Raw
	TTL     int64 // expireAfterSeconds, valid when HasTTL
	HasTTL  bool
	entries map[string]map[string]struct{}
	first   map[string]map[string]struct{} // compound indexes: first field's key → _id keys, for prefix lookups
	bytes   int64                          // estimated size of the entries
	// unindexable counts documents applied with keys the index cannot
	// hold (parallel arrays, refused on a primary); lookups avoid such an index.
	unindexable int
}

// idIndexSpec is the spec of every collection's _id_ index.
var idIndexSpec = mustRaw(bson.D{{Key: "v", Value: int32(2)}, {Key: "key", Value: bson.D{{Key: "_id", Value: int32(1)}}}, {Key: "name", Value: "_id_"}})

// newIndex builds an index from a validated spec.
func newIndex(spec bson.Raw) *Index {
	ix := &Index{Spec: spec, entries: map[string]map[string]struct{}{}, first: map[string]map[string]struct{}{}}
	ix.Name, _ = spec.Lookup("name").StringValueOK()
	ix.Key, _ = spec.Lookup("key").DocumentOK()
	els, _ := ix.Key.Elements()
	for _, e := range els {
		ix.fields = append(ix.fields, e.Key())
	}
	ix.Unique, _ = spec.Lookup("unique").BooleanOK()
	ix.Sparse, _ = spec.Lookup("sparse").BooleanOK()
	ix.Hidden, _ = spec.Lookup("hidden").BooleanOK()
	ix.Partial, _ = spec.Lookup("partialFilterExpression").DocumentOK()
	if f, ok := numberOK(spec.Lookup("expireAfterSeconds")); ok {
		ix.TTL, ix.HasTTL = int64(f), true
	}
	return ix
}

// indexKey is one entry a document gives an index.
type indexKey struct {
	str  string
	vals []bson.RawValue // per field, for the dup key message
}

// keysOf returns the entries doc gives ix (none when sparse or partial
// exclude it), or error 171 when two indexed fields are arrays.
func (ix *Index) keysOf(doc bson.Raw) ([]indexKey, error) {
	if ix.Partial != nil {
		if ok, _ := Match(doc, ix.Partial); !ok {
			return nil, nil
		}
	}
	perField := make([][]bson.RawValue, len(ix.fields))
	var arrays []string
	present := false
	for i, f := range ix.fields {
		vals, multi := indexedValues(doc, f)
		if multi {
			arrays = append(arrays, f)
		}
		for _, v := range vals {
			present = present || v.Type != 0
		}
		perField[i] = vals
	}
	if ix.Sparse && !present {
		return nil, nil
	}
	if len(arrays) > 1 {
		return nil, cerr(171, "cannot index parallel arrays [%s] [%s]", arrays[1], arrays[0])
	}
	out := []indexKey{{}}
	for _, vals := range perField {
		var next []indexKey
		for _, k := range out {
			for _, v := range vals {
				next = append(next, indexKey{str: k.str + keyString(v) + "|", vals: append(append([]bson.RawValue(nil), k.vals...), v)})
			}
		}
		out = next
	}
	seen := map[string]bool{}
	uniq := out[:0]
	for _, k := range out {
		if !seen[k.str] {
			seen[k.str] = true
			uniq = append(uniq, k)
		}
	}
	return uniq, nil
}

func (ix *Index) add(id string, doc bson.Raw) {
	keys, err := ix.keysOf(doc)
	if err != nil {
		ix.unindexable++
	}
	for _, k := range keys {
		ix.bytes += addEntry(ix.entries, k.str, id)
		if len(ix.fields) > 1 {
			addEntry(ix.first, keyString(k.vals[0])+"|", id)
		}
	}
}

func (ix *Index) remove(id string, doc bson.Raw) {
	keys, err := ix.keysOf(doc)
	if err != nil {
		ix.unindexable--
	}
	for _, k := range keys {
		ix.bytes -= removeEntry(ix.entries, k.str, id)
		if len(ix.fields) > 1 {
			removeEntry(ix.first, keyString(k.vals[0])+"|", id)
		}
	}
}

// addEntry records id under key; it returns the bytes added.
func addEntry(m map[string]map[string]struct{}, key, id string) int64 {
	ids := m[key]
	if ids == nil {
		ids = map[string]struct{}{}
		m[key] = ids
	}
	if _, ok := ids[id]; ok {
		return 0
	}
	ids[id] = struct{}{}
	return int64(len(key) + len(id))
}

// removeEntry forgets id under key; it returns the bytes freed.
func removeEntry(m map[string]map[string]struct{}, key, id string) int64 {
	ids := m[key]
	if _, ok := ids[id]; !ok {
		return 0
	}
	delete(ids, id)
	if len(ids) == 0 {
		delete(m, key)
	}
	return int64(len(key) + len(id))
}

// keyValue is the {field: value} document of a key, as errors report it.
func (ix *Index) keyValue(k indexKey) (bson.D, string) {
	d := bson.D{}
	parts := make([]string, len(ix.fields))
	for i, f := range ix.fields {
		var v any
		if k.vals[i].Type != 0 {
			v = k.vals[i]
		}
		d = append(d, bson.E{Key: f, Value: v})
		parts[i] = f + ": " + showValue(k.vals[i])
	}
	return d, "{ " + strings.Join(parts, ", ") + " }"
}

// indexOptions are the fields mongod accepts in an index spec; the ones
// the simulator does not model (text, geo, wildcard) are refused by key.
var indexOptions = map[string]bool{
	"v": true, "key": true, "name": true, "unique": true, "sparse": true, "partialFilterExpression": true,
	"expireAfterSeconds": true, "hidden": true, "collation": true, "background": true, "storageEngine": true,
	"prepareUnique": true, "ns": true, "weights": true, "default_language": true, "language_override": true,
	"textIndexVersion": true, "2dsphereIndexVersion": true, "bits": true, "min": true, "max": true,
	"bucketSize": true, "wildcardProjection": true, "coarsestIndexedLevel": true, "finestIndexedLevel": true,
	"dropDups": true, "clustered": true,
}

// parseIndexSpec validates one createIndexes spec as mongod does and
// returns it in listIndexes form: {v: 2, key, name, options...}.
func parseIndexSpec(spec bson.Raw) (bson.Raw, *CmdError) {
	inSpec := func(code int32, format string, a ...any) *CmdError {
		return cerr(code, "Error in specification %s :: caused by :: %s", showDoc(spec), fmt.Sprintf(format, a...))
	}
	els, _ := spec.Elements()
	for _, e := range els {
		if !indexOptions[e.Key()] {
			return nil, inSpec(197, "The field '%s' is not valid for an index specification. Specification: %s", e.Key(), showDoc(spec))
		}
	}
	keyV, err := spec.LookupErr("key")
	if err != nil {
		return nil, inSpec(9, "The 'key' field is a required property of an index specification")
	}
	key, ok := keyV.DocumentOK()
	if !ok {
		return nil, inSpec(14, "The field 'key' must be an object, but got %s", typeName(keyV.Type))
	}
	nameV, err := spec.LookupErr("name")
	if err != nil {
		return nil, inSpec(9, "The 'name' field is a required property of an index specification")
	}
	name, ok := nameV.StringValueOK()
	if !ok {
		return nil, inSpec(14, "The field 'name' must be a string, but got %s", typeName(nameV.Type))
	}
	for _, b := range []string{"unique", "sparse", "hidden", "background"} {
		if v, err := spec.LookupErr(b); err == nil && v.Type != bson.TypeBoolean {
			if _, isNum := numberOK(v); !isNum {
				// mongod's text, unbalanced quote included
				return nil, inSpec(14, "The field '%s has value %s: %s, which is not convertible to bool", b, b, showValue(v))
			}
		}
	}
	// past the required fields mongod shows the spec with its version
	if _, err := spec.LookupErr("v"); err != nil {
		spec = mustRaw(append(rawFields(spec), bson.E{Key: "v", Value: int32(2)}))
	}
	kels, _ := key.Elements()
	if len(kels) == 0 {
		return nil, inSpec(67, "Index keys cannot be empty.")
	}
	if len(kels) > 32 {
		return nil, inSpec(13103, "Index key pattern too large: %d fields", len(kels))
	}
	for _, e := range kels {
		f, isNum := numberOK(e.Value())
		s, isStr := e.Value().StringValueOK()
		switch {
		case e.Key() == "" || strings.HasPrefix(e.Key(), "$") && e.Key() != "$**" || strings.Contains(e.Key(), ".."):
			return nil, inSpec(67, "Index key contains an illegal field name: field name starts with '$'.")
		case isNum && f == 0:
			return nil, inSpec(67, "Values in the index key pattern can't be 0.")
		case isStr:
			return nil, inSpec(67, "Index type '%s' is not modelled by mongod-sim; only ascending and descending keys are", s)
		case !isNum:
			return nil, inSpec(67, "Values in v:2 index key pattern cannot be of type %s. Only numbers > 0, numbers < 0, and strings are allowed.", typeName(e.Value().Type))
		}
		if strings.Contains(e.Key(), "$**") {
			return nil, inSpec(67, "wildcard indexes are not modelled by mongod-sim")
		}
	}
	if name == "" {
		return nil, inSpec(67, "index name cannot be empty")
	}
	if v, ok := numberOK(spec.Lookup("v")); ok && v != 2 && v != 1 {
		return nil, inSpec(67, "Invalid index specification %s; cannot create an index with v=%v", showDoc(spec), v)
	}
	isID := len(kels) == 1 && kels[0].Key() == "_id"
	if v, err := spec.LookupErr("partialFilterExpression"); err == nil {
		pf, ok := v.DocumentOK()
		if !ok {
			return nil, inSpec(67, "The field 'partialFilterExpression' must be an object, but got %s", typeName(v.Type))
		}
		if _, err := Match(mustRaw(bson.D{}), pf); err != nil {
			return nil, inSpec(67, "%s", err.Error())
		}
		if op := unsupportedInPartial(pf, true); op != "" {
			return nil, inSpec(67, "Expression not supported in partial index: %s", op)
		}
		if sp, _ := spec.Lookup("sparse").BooleanOK(); sp {
			return nil, inSpec(67, "cannot mix \"partialFilterExpression\" and \"sparse\" options")
		}
	}
	if v, err := spec.LookupErr("expireAfterSeconds"); err == nil {
		f, ok := numberOK(v)
		switch {
		case !ok:
			return nil, inSpec(67, "TTL index 'expireAfterSeconds' option must be numeric, but received a type of '%s'. Index spec: %s", typeName(v.Type), showDoc(spec))
		case f < 0 || f > 2147483647:
			return nil, inSpec(67, "TTL index 'expireAfterSeconds' option must be within an acceptable range, try a lower number. Index spec: %s", showDoc(spec))
		case len(kels) > 1:
			return nil, inSpec(67, "TTL indexes are single-field indexes, compound indexes do not support TTL. Index spec: %s", showDoc(spec))
		case isID:
			return nil, inSpec(67, "The field 'expireAfterSeconds' is not valid for an _id index specification. Specification: %s", showDoc(spec))
		}
	}
	if isID {
		for _, o := range []string{"unique", "sparse", "partialFilterExpression", "hidden"} {
			if _, err := spec.LookupErr(o); err == nil {
				return nil, cerr(197, "The field '%s' is not valid for an _id index specification. Specification: %s", o, showDoc(spec))
			}
		}
	}
	if v, err := spec.LookupErr("collation"); err == nil {
		if _, ok := v.DocumentOK(); !ok {
			return nil, inSpec(14, "The field 'collation' must be an object, but got %s", typeName(v.Type))
		}
	}
	out := bson.D{{Key: "v", Value: int32(2)}, {Key: "key", Value: key}, {Key: "name", Value: name}}
	for _, e := range els {
		switch e.Key() {
		case "v", "key", "name", "ns", "background", "dropDups":
			continue
		case "unique", "sparse", "hidden":
			// listed only when set, as mongod lists them
			if b, ok := e.Value().BooleanOK(); ok && !b {
				continue
			}
			if f, ok := numberOK(e.Value()); ok && f == 0 {
				continue
			}
			out = append(out, bson.E{Key: e.Key(), Value: true})
		case "collation":
			c, _ := e.Value().DocumentOK()
			if loc, _ := c.Lookup("locale").StringValueOK(); loc == "simple" {
				continue // the simple collation is the default
			}
			out = append(out, bson.E{Key: e.Key(), Value: fullCollation(c)})
		default:
			out = append(out, bson.E{Key: e.Key(), Value: e.Value()})
		}
	}
	return mustRaw(out), nil
}

// identifying reports whether two specs with the same key would be the
// same index (mongod: key, unique, sparse, partialFilterExpression and
// collation identify an index); identical whether all options agree.
func compareSpecs(a, b bson.Raw) (identifying, identical bool) {
	field := func(s bson.Raw, k string) string {
		v, err := s.LookupErr(k)
		if err != nil {
			return ""
		}
		return keyString(v)
	}
	if field(a, "key") != field(b, "key") {
		return false, false
	}
	for _, k := range []string{"unique", "sparse", "partialFilterExpression", "collation"} {
		if field(a, k) != field(b, k) {
			return false, false
		}
	}
	for _, k := range []string{"expireAfterSeconds", "hidden", "storageEngine", "prepareUnique"} {
		if field(a, k) != field(b, k) {
			return true, false
		}
	}
	return true, true
}

// partialOps are the operators mongod allows in a partialFilterExpression.
var partialOps = map[string]bool{"$eq": true, "$exists": true, "$gt": true, "$gte": true, "$lt": true, "$lte": true, "$type": true, "$in": true}

// unsupportedInPartial names the first expression of a partial filter
// mongod refuses ($and/$or only at the top, $exists only true), or "".
func unsupportedInPartial(filter bson.Raw, top bool) string {
	els, _ := filter.Elements()
	for _, e := range els {
		k := e.Key()
		if strings.HasPrefix(k, "$") {
			if !top || k != "$and" && k != "$or" {
				return k
			}
			arr, _ := e.Value().ArrayOK()
			vals, _ := arr.Values()
			for _, v := range vals {
				sub, _ := v.DocumentOK()
				if op := unsupportedInPartial(sub, false); op != "" {
					return op
				}
			}
			continue
		}
		if !isOperatorDoc(e.Value()) {
			continue
		}
		ops, _ := e.Value().Document().Elements()
		for _, op := range ops {
			if !partialOps[op.Key()] {
				return k + " " + op.Key()
			}
			if b, ok := op.Value().BooleanOK(); op.Key() == "$exists" && ok && !b {
				return k + " $exists: false"
			}
		}
	}
	return ""
}

// fullCollation is a collation with every field, as mongod lists it
// (ICU 57.1 defaults for those not given).
func fullCollation(c bson.Raw) bson.D {
	out := bson.D{{Key: "locale", Value: ""}, {Key: "caseLevel", Value: false}, {Key: "caseFirst", Value: "off"},
		{Key: "strength", Value: int32(3)}, {Key: "numericOrdering", Value: false}, {Key: "alternate", Value: "non-ignorable"},
		{Key: "maxVariable", Value: "punct"}, {Key: "normalization", Value: false}, {Key: "backwards", Value: false},
		{Key: "version", Value: "57.1"}}
	els, _ := c.Elements()
	for _, e := range els {
		v := any(e.Value())
		if f, ok := numberOK(e.Value()); ok {
			v = int32(f)
		}
		out = setField(out, e.Key(), v)
	}
	return out
}
