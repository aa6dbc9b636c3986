package sim

import (
	"sort"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Update is a parsed update document: a replacement or operators.
type Update struct {
	replacement  bson.Raw // nil for an operator update
	ops          []updateOp
	arrayFilters map[string]Filter
}

// updateOp is one {op: {path: arg}} of an operator update.
type updateOp struct {
	op     string
	path   []string // as written, with $, $[] and $[id] components
	arg    bson.RawValue
	to     []string // $rename's target
	pull   func(bson.RawValue) bool
	push   *pushSpec
	fields bson.Raw // the operator's document, for messages
}

var updateOperators = map[string]bool{
	"$set": true, "$unset": true, "$inc": true, "$mul": true, "$min": true, "$max": true,
	"$rename": true, "$currentDate": true, "$bit": true, "$push": true, "$addToSet": true,
	"$pop": true, "$pull": true, "$pullAll": true, "$setOnInsert": true,
}

// ParseUpdate validates an update document (and the arrayFilters it may
// use) as mongod does before touching any document.
func ParseUpdate(upd bson.Raw, arrayFilters []bson.Raw) (*Update, error) {
	u := &Update{}
	filters, err := parseArrayFilters(arrayFilters)
	if err != nil {
		return nil, err
	}
	u.arrayFilters = filters
	elems, err := upd.Elements()
	if err != nil {
		return nil, cerr(9, "%v", err)
	}
	if len(elems) == 0 || !strings.HasPrefix(elems[0].Key(), "$") {
		for _, e := range elems {
			if strings.HasPrefix(e.Key(), "$") {
				return nil, cerr(2, "The dollar ($) prefixed field '%s' in '%s' is not allowed in the context of an update's replacement document. Consider using an aggregation pipeline with $replaceWith.", e.Key(), e.Key())
			}
		}
		if len(filters) > 0 {
			return nil, cerr(9, "The array filter for identifier '%s' was not used in the update %s", sortedKeys(filters)[0], showDoc(upd))
		}
		u.replacement = upd
		return u, nil
	}
	used := map[string]bool{}
	var seen [][]string
	addPath := func(path []string) error {
		for _, s := range seen {
			n := min(len(s), len(path))
			if equalPaths(s[:n], path[:n]) {
				return cerr(40, "Updating the path '%s' would create a conflict at '%s'", strings.Join(path, "."), strings.Join(path[:n], "."))
			}
		}
		seen = append(seen, path)
		return nil
	}
	for _, e := range elems {
		op := e.Key()
		if !updateOperators[op] {
			return nil, cerr(9, "Unknown modifier: %s. Expected a valid update modifier or pipeline-style update specified as an array", op)
		}
		fields, ok := e.Value().DocumentOK()
		if !ok {
			return nil, cerr(9, "Modifiers operate on fields but we found type %s instead. For example: {$mod: {<field>: ...}} not {%s: %s}", typeName(e.Value().Type), op, showValue(e.Value()))
		}
		fe, _ := fields.Elements()
		for _, f := range fe {
			path, err := parseUpdatePath(f.Key(), filters, used)
			if err != nil {
				return nil, err
			}
			uo := updateOp{op: op, path: path, arg: f.Value(), fields: fields}
			if err := uo.parseArg(f.Key()); err != nil {
				return nil, err
			}
			if err := addPath(path); err != nil {
				return nil, err
			}
			if uo.to != nil {
				if err := addPath(uo.to); err != nil {
					return nil, err
				}
			}
			u.ops = append(u.ops, uo)
		}
	}
	for id := range filters {
		if !used[id] {
			return nil, cerr(9, "The array filter for identifier '%s' was not used in the update %s", id, showDoc(upd))
		}
	}
	// mongod applies updates in the order of their paths: field names
	// lexicographically, array positions numerically.
	sort.SliceStable(u.ops, func(i, j int) bool {
		return comparePaths(u.ops[i].target(), u.ops[j].target()) < 0
	})
	return u, nil
}

func (o *updateOp) target() []string {
	if o.to != nil {
		return o.to
	}
	return o.path
}

func equalPaths(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func comparePaths(a, b []string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		ia, na := arrayIndex(a[i])
		ib, nb := arrayIndex(b[i])
		if na && nb {
			if c := cmpInt(ia, ib); c != 0 {
				return c
			}
			continue
		}
		if c := strings.Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return cmpInt(len(a), len(b))
}

// parseUpdatePath splits and checks an update path; positional components
// must be $, $[] or $[id] with a known id.
func parseUpdatePath(key string, filters map[string]Filter, used map[string]bool) ([]string, error) {
	if key == "" {
		return nil, cerr(56, "An empty update path is not valid.")
	}
	parts := strings.Split(key, ".")
	positional := 0
	for _, p := range parts {
		switch {
		case p == "":
			return nil, cerr(56, "The update path '%s' contains an empty field name, which is not allowed.", key)
		case p == "$":
			positional++
		case p == "$[]":
		case strings.HasPrefix(p, "$[") && strings.HasSuffix(p, "]"):
			id := p[2 : len(p)-1]
			if _, ok := filters[id]; !ok {
				return nil, cerr(2, "No array filter found for identifier '%s' in path '%s'", id, key)
			}
			used[id] = true
		case strings.HasPrefix(p, "$"):
			return nil, cerr(52, "The dollar ($) prefixed field '%s' in '%s' is not valid for storage.", p, key)
		}
	}
	if positional > 1 {
		return nil, cerr(2, "Too many positional (i.e. '$') elements found in path '%s'", key)
	}
	if parts[0] == "$" {
		return nil, cerr(2, "Cannot have positional (i.e. '$') element in the first position in path '%s'", key)
	}
	return parts, nil
}

// isPositional: $, $[] or $[<id>].
func isPositional(p string) bool {
	return p == "$" || strings.HasPrefix(p, "$[") && strings.HasSuffix(p, "]")
}

// Apply returns doc updated; query is the filter that matched it (for the
// positional $), inserting says the document is being created by an upsert.
func (u *Update) Apply(doc, query bson.Raw, inserting bool) (bson.Raw, error) {
	var d bson.D
	if err := bson.Unmarshal(doc, &d); err != nil {
		return nil, err
	}
	oldID, hadID := getPath(d, []string{"_id"})
	if u.replacement != nil {
		var repl bson.D
		if err := bson.Unmarshal(u.replacement, &repl); err != nil {
			return nil, err
		}
		out := bson.D{}
		if hadID {
			out = append(out, bson.E{Key: "_id", Value: oldID})
		}
		for _, e := range repl {
			if e.Key == "_id" {
				if hadID && !sameValue(oldID, e.Value) {
					return nil, cerr(66, "After applying the update, the (immutable) field '_id' was found to have been altered to _id: %s", showValue(toRaw(e.Value)))
				}
				if !hadID {
					out = append(bson.D{e}, out...)
				}
				continue
			}
			out = append(out, e)
		}
		return bson.Marshal(out)
	}
	a := &applier{doc: doc, query: query, u: u, inserting: inserting, id: oldID, hasID: hadID}
	var root any = d
	for _, o := range u.ops {
		var err error
		if root, err = a.applyOp(root, o); err != nil {
			return nil, err
		}
	}
	d = root.(bson.D)
	if newID, ok := getPath(d, []string{"_id"}); hadID && (!ok || !sameValue(oldID, newID)) {
		return nil, cerr(66, "Performing an update on the path '_id' would modify the immutable field '_id'")
	}
	out, err := bson.Marshal(d)
	if err == nil && len(out) > maxBSONSize {
		return nil, cerr(17419, "Resulting document after update is larger than %d", maxBSONSize)
	}
	return out, err
}

// sameValue: equal by BSON comparison (1 and 1.0 are the same _id to
// mongod's immutable-field check).
func sameValue(a, b any) bool {
	ra, rb := toRaw(a), toRaw(b)
	return typeOrder(ra.Type) == typeOrder(rb.Type) && compareValues(ra, rb) == 0
}

// applier carries one document's update.
type applier struct {
	doc, query bson.Raw
	u          *Update
	inserting  bool
	id         any
	hasID      bool
	posIndex   *int // the positional $'s element, once found
}

// idText: the document's _id as mongod quotes it in messages.
func (a *applier) idText() string {
	if !a.hasID {
		return "{no id}"
	}
	return showElem("_id", toRaw(a.id))
}

func (a *applier) applyOp(root any, o updateOp) (any, error) {
	if o.op == "$setOnInsert" && !a.inserting {
		return root, nil
	}
	if o.op == "$rename" {
		return a.rename(root, o)
	}
	paths, err := a.resolve(root, o.path)
	if err != nil {
		return nil, err
	}
	for _, p := range paths {
		fn := a.leaf(o, p[len(p)-1])
		if root, err = modifyPath(root, "", p, createsPath(o.op), fn); err != nil {
			return nil, err
		}
	}
	return root, nil
}

func createsPath(op string) bool {
	switch op {
	case "$unset", "$pop", "$pull", "$pullAll":
		return false
	}
	return true
}

// resolve turns a path with positional components into concrete paths.
func (a *applier) resolve(root any, path []string) ([][]string, error) {
	out := [][]string{nil}
	for i, p := range path {
		if !isPositional(p) {
			for k := range out {
				out[k] = append(out[k], p)
			}
			continue
		}
		var next [][]string
		for _, prefix := range out {
			if p == "$" {
				idx, err := a.positional(root, prefix)
				if err != nil {
					return nil, err
				}
				next = append(next, appendPath(prefix, strconv.Itoa(idx)))
				continue
			}
			v, ok := getPath(root, prefix)
			if !ok {
				return nil, cerr(2, "The path '%s' must exist in the document in order to apply array updates.", strings.Join(path[:i], "."))
			}
			arr, isArr := v.(bson.A)
			if !isArr {
				return nil, cerr(2, "Cannot apply array updates to non-array element %s: %s", prefix[len(prefix)-1], showValue(toRaw(v)))
			}
			var match Filter
			if p != "$[]" {
				id := p[2 : len(p)-1]
				match = a.u.arrayFilters[id]
				for j, x := range arr {
					if match(mustRaw(bson.D{{Key: id, Value: x}})) {
						next = append(next, appendPath(prefix, strconv.Itoa(j)))
					}
				}
				continue
			}
			for j := range arr {
				next = append(next, appendPath(prefix, strconv.Itoa(j)))
			}
		}
		out = next
	}
	return out, nil
}

func appendPath(prefix []string, p string) []string {
	return append(append([]string{}, prefix...), p)
}

// positional finds the element of the array at prefix that the query
// matched: the first one that alone satisfies the query.
func (a *applier) positional(root any, prefix []string) (int, error) {
	noMatch := cerr(2, "The positional operator did not find the match needed from the query.")
	if a.posIndex != nil {
		return *a.posIndex, nil
	}
	if a.query == nil || a.inserting {
		return 0, noMatch
	}
	f, err := ParseFilter(a.query)
	if err != nil {
		return 0, err
	}
	var orig bson.D
	if err := bson.Unmarshal(a.doc, &orig); err != nil {
		return 0, err
	}
	v, ok := getPath(orig, prefix)
	arr, isArr := v.(bson.A)
	if !ok || !isArr {
		return 0, noMatch
	}
	i, ok := matchedElement(f, orig, prefix, arr)
	if !ok {
		return 0, noMatch
	}
	a.posIndex = &i
	return i, nil
}

// matchedElement is the first element of the array at path in doc that the
// filter matched, as mongod records it while matching: the filter must hold
// with the array cut down to that element, and not without it.
func matchedElement(f Filter, doc bson.D, path []string, arr bson.A) (int, bool) {
	matches := func(v bson.A) bool {
		nd, err := replacePath(doc, path, v)
		if err != nil {
			return false
		}
		raw, err := bson.Marshal(nd)
		return err == nil && f(raw)
	}
	if matches(bson.A{}) {
		return 0, false
	}
	for i, x := range arr {
		if matches(bson.A{x}) {
			return i, true
		}
	}
	return 0, false
}
