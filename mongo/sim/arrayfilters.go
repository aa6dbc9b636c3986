package sim

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func parseArrayFilters(filters []bson.Raw) (map[string]Filter, error) {
	out := map[string]Filter{}
	for _, f := range filters {
		id, err := arrayFilterID(f)
		if err != nil {
			return nil, err
		}
		if _, dup := out[id]; dup {
			return nil, cerr(9, "Found multiple array filters with the same top-level field name %s", id)
		}
		m, err := ParseFilter(f)
		if err != nil {
			return nil, err
		}
		out[id] = m
	}
	return out, nil
}

// arrayFilterID is the identifier an array filter is about: the first
// component of its field names, the same for all of them.
func arrayFilterID(f bson.Raw) (string, error) {
	id := ""
	var walk func(d bson.Raw) error
	walk = func(d bson.Raw) error {
		elems, _ := d.Elements()
		for _, e := range elems {
			k := e.Key()
			if k == "$and" || k == "$or" || k == "$nor" {
				arr, _ := e.Value().ArrayOK()
				vals, _ := arr.Values()
				for _, v := range vals {
					if sub, ok := v.DocumentOK(); ok {
						if err := walk(sub); err != nil {
							return err
						}
					}
				}
				continue
			}
			first, _, _ := strings.Cut(k, ".")
			switch {
			case id == "":
				id = first
			case id != first:
				return cerr(9, "Error parsing array filter :: caused by :: Expected a single top-level field name, found '%s' and '%s'", id, first)
			}
		}
		return nil
	}
	if err := walk(f); err != nil {
		return "", err
	}
	if id == "" {
		return "", cerr(9, "Cannot use an expression without a top-level field name in arrayFilters")
	}
	if c := id[0]; c < 'a' || c > 'z' || strings.IndexFunc(id, func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9')
	}) >= 0 {
		return "", cerr(2, "Error parsing array filter :: caused by :: The top-level field name must be an alphanumeric string beginning with a lowercase letter, found '%s'", id)
	}
	return id, nil
}

// arrayFiltersOf: the arrayFilters of an update statement or findAndModify.
func arrayFiltersOf(body bson.Raw) []bson.Raw {
	arr, ok := body.Lookup("arrayFilters").ArrayOK()
	if !ok {
		return nil
	}
	vals, _ := arr.Values()
	var out []bson.Raw
	for _, v := range vals {
		if d, ok := v.DocumentOK(); ok {
			out = append(out, d)
		}
	}
	return out
}
