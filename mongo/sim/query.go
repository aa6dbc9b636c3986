package sim

import (
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// sortKey is one document's value for one sort field; empty marks an empty
// array, which mongod orders below null.
type sortKey struct {
	v     bson.RawValue
	empty bool
}

func compareSortKeys(a, b sortKey) int {
	switch {
	case a.empty && b.empty:
		return 0
	case a.empty:
		if b.v.Type == bson.TypeMinKey {
			return 1
		}
		return -1
	case b.empty:
		return -compareSortKeys(b, a)
	}
	return compareValues(a.v, b.v)
}

// sortKeyOf: the smallest (ascending) or largest (descending) value the
// path reaches; array elements stand for their array, missing is null.
func sortKeyOf(doc bson.Raw, path string, desc bool) sortKey {
	var keys []sortKey
	for _, v := range pathValues(doc, path, false) {
		if arr, ok := v.ArrayOK(); ok {
			vals, _ := arr.Values()
			if len(vals) == 0 {
				keys = append(keys, sortKey{empty: true})
			}
			for _, x := range vals {
				keys = append(keys, sortKey{v: x})
			}
			continue
		}
		if v.Type == 0 {
			v = bson.RawValue{Type: bson.TypeNull}
		}
		keys = append(keys, sortKey{v: v})
	}
	if len(keys) == 0 {
		return sortKey{v: bson.RawValue{Type: bson.TypeNull}}
	}
	best := keys[0]
	for _, k := range keys[1:] {
		c := compareSortKeys(k, best)
		if desc && c > 0 || !desc && c < 0 {
			best = k
		}
	}
	return best
}

type sortField struct {
	path string
	desc bool
	meta bool
}

// parseSort validates a sort specification as mongod does.
func parseSort(spec bson.Raw) ([]sortField, error) {
	elems, err := spec.Elements()
	if err != nil {
		return nil, cerr(2, "%v", err)
	}
	var out []sortField
	for _, e := range elems {
		k, v := e.Key(), e.Value()
		switch {
		case k == "":
			return nil, cerr(40352, "FieldPath cannot be constructed with empty string")
		case strings.Contains("."+k+".", ".."):
			return nil, cerr(15998, "FieldPath field names may not be empty strings.")
		case strings.HasPrefix(k, "$") && k != "$natural":
			return nil, cerr(16410, "FieldPath field names may not start with '$'. Consider using $getField or $setField.")
		}
		if d, ok := v.DocumentOK(); ok {
			if m, ok := d.Lookup("$meta").StringValueOK(); ok && len(d.Lookup("$meta").Value) > 0 {
				if m != "textScore" && m != "randVal" && m != "searchScore" && m != "indexKey" {
					return nil, cerr(31138, "Illegal $meta sort: %s: {$meta: \"%s\"}", k, m)
				}
				out = append(out, sortField{path: k, meta: true})
				continue
			}
			return nil, cerr(17312, "$meta is the only expression supported by $sort right now")
		}
		f, ok := v.AsFloat64OK()
		if !ok {
			return nil, cerr(15974, "Illegal key in $sort specification: %s: %s", k, showValue(v))
		}
		if f != 1 && f != -1 {
			return nil, cerr(15975, "$sort key ordering must be 1 (for ascending) or -1 (for descending)")
		}
		out = append(out, sortField{path: k, desc: f < 0})
	}
	return out, nil
}

// SortDocs sorts by a sort specification, stably, as mongod orders: an array
// by its smallest element ascending and its largest descending.
func SortDocs(docs []bson.Raw, spec bson.Raw) error {
	fields, err := parseSort(spec)
	if err != nil {
		return err
	}
	if len(fields) == 0 {
		return nil
	}
	if fields[0].path == "$natural" {
		// insertion order, reversed for -1
		if fields[0].desc {
			for i, j := 0, len(docs)-1; i < j; i, j = i+1, j-1 {
				docs[i], docs[j] = docs[j], docs[i]
			}
		}
		return nil
	}
	keys := make([][]sortKey, len(docs))
	for i, d := range docs {
		if parallelArrays(d, fields) {
			return cerr(2, "cannot sort with keys that are parallel arrays")
		}
		for _, f := range fields {
			if f.meta {
				keys[i] = append(keys[i], sortKey{v: bson.RawValue{Type: bson.TypeNull}})
				continue
			}
			keys[i] = append(keys[i], sortKeyOf(d, f.path, f.desc))
		}
	}
	idx := make([]int, len(docs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		for k, f := range fields {
			c := compareSortKeys(keys[idx[a]][k], keys[idx[b]][k])
			if c != 0 {
				return c < 0 != f.desc
			}
		}
		return false
	})
	sorted := make([]bson.Raw, len(docs))
	for i, j := range idx {
		sorted[i] = docs[j]
	}
	copy(docs, sorted)
	return nil
}

// parallelArrays: two sort keys reach different arrays of one document,
// which mongod refuses to sort by.
func parallelArrays(doc bson.Raw, fields []sortField) bool {
	seen := ""
	for _, f := range fields {
		if f.meta {
			continue
		}
		p := firstArray(doc, strings.Split(f.path, "."))
		switch {
		case p == "":
		case seen == "":
			seen = p
		case seen != p:
			return true
		}
	}
	return false
}

// firstArray is the shortest prefix of path whose value is an array.
func firstArray(doc bson.Raw, parts []string) string {
	for i := range parts {
		v, err := doc.LookupErr(parts[:i+1]...)
		if err != nil {
			return ""
		}
		if v.Type == bson.TypeArray {
			return strings.Join(parts[:i+1], ".")
		}
	}
	return ""
}
