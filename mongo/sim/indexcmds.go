package sim

import (
	"crypto/rand"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// maxIndexes is mongod's limit of indexes per collection, _id_ included.
const maxIndexes = 64

// cmdCreateIndexes builds indexes as mongod 7.0 does, each one an oplog
// entry {createIndexes: coll, v, key, name, ...} that every member applies.
func (c *conn) cmdCreateIndexes(req *Request) (bson.D, error) {
	coll, e := collName(req, "createIndexes")
	if e != nil {
		return nil, e
	}
	db := req.DB()
	ns := db + "." + coll
	v, err := req.Body.LookupErr("indexes")
	if err != nil {
		return nil, cerr(40414, "BSON field 'createIndexes.indexes' is missing but a required field")
	}
	arr, ok := v.ArrayOK()
	switch {
	case v.Type == bson.TypeNull:
		return nil, cerr(10065, "invalid parameter: expected an object (indexes)")
	case !ok:
		return nil, cerr(14, "BSON field 'createIndexes.indexes' is the wrong type '%s', expected type 'array'", typeName(v.Type))
	}
	vals, _ := arr.Values()
	if len(vals) == 0 {
		return nil, cerr(2, "Must specify at least one index to create")
	}
	var specs []bson.Raw
	for i, x := range vals {
		d, ok := x.DocumentOK()
		if !ok {
			return nil, cerr(14, "BSON field 'createIndexes.indexes.%d' is the wrong type '%s', expected type 'object'", i, typeName(x.Type))
		}
		spec, ce := parseIndexSpec(d)
		if ce != nil {
			return nil, ce
		}
		specs = append(specs, spec)
	}
	n := c.n
	n.mu.Lock()
	cl := n.data.Coll(db, coll, false)
	before := int32(1)
	if cl != nil {
		before += int32(len(cl.Indexes))
	}
	var build []bson.Raw
	for _, spec := range specs {
		exists, ce := indexConflict(cl, build, spec)
		if ce != nil {
			n.mu.Unlock()
			return nil, ce
		}
		if !exists {
			build = append(build, spec)
		}
	}
	if int(before)+len(build) > maxIndexes {
		n.mu.Unlock()
		return nil, cerr(67, "add index fails, too many indexes for %s key:%s", ns, showValue(build[len(build)-1].Lookup("key")))
	}
	for _, spec := range build {
		if err := checkIndexBuild(cl, ns, spec); err != nil {
			n.mu.Unlock()
			return nil, err
		}
	}
	var ops []opSpec
	if cl == nil {
		ops = append(ops, opSpec{op: "c", ns: db + ".$cmd", o: mustRaw(bson.D{{Key: "create", Value: coll}, {Key: "idIndex", Value: idIndexSpec}})})
	}
	for _, spec := range build {
		o := append(bson.D{{Key: "createIndexes", Value: coll}}, rawFields(spec)...)
		ops = append(ops, opSpec{op: "c", ns: db + ".$cmd", o: mustRaw(o)})
	}
	if len(ops) > 0 {
		if _, err := n.writeOplogLocked(ops, false); err != nil {
			n.mu.Unlock()
			return nil, cmdErrorOf(err)
		}
	}
	replSet := n.cfg.ReplSet != ""
	n.mu.Unlock()
	after := before + int32(len(build))
	out := bson.D{{Key: "numIndexesBefore", Value: before}, {Key: "numIndexesAfter", Value: after}}
	if cl == nil {
		out = append(out, bson.E{Key: "createdCollectionAutomatically", Value: true})
	} else if len(build) > 0 {
		out = append(out, bson.E{Key: "createdCollectionAutomatically", Value: false})
	}
	if len(build) == 0 {
		out = append(out, bson.E{Key: "note", Value: "all indexes already exist"})
	} else if replSet {
		out = append(out, bson.E{Key: "commitQuorum", Value: "votingMembers"})
	}
	return c.finishWrite(req, out), nil
}

// rawFields is a document's fields, for building a larger document.
func rawFields(d bson.Raw) bson.D {
	out := bson.D{}
	els, _ := d.Elements()
	for _, e := range els {
		out = append(out, bson.E{Key: e.Key(), Value: e.Value()})
	}
	return out
}

// indexConflict compares a requested spec with the existing indexes (and
// those earlier in the same request): exists when an identical one is
// there, else mongod's 85/86 errors.
func indexConflict(cl *Collection, pending []bson.Raw, spec bson.Raw) (bool, *CmdError) {
	existing := []bson.Raw{idIndexSpec}
	if cl != nil {
		for _, ix := range cl.Indexes {
			existing = append(existing, ix.Spec)
		}
	}
	existing = append(existing, pending...)
	name, _ := spec.Lookup("name").StringValueOK()
	for _, ex := range existing {
		if exName, _ := ex.Lookup("name").StringValueOK(); exName != name {
			continue
		}
		identifying, identical := compareSpecs(spec, ex)
		switch {
		case !identifying:
			return false, cerr(86, "An existing index has the same name as the requested index. When index names are not specified, they are auto generated and can cause conflicts. Please refer to our documentation. Requested index: %s, existing index: %s", showDoc(spec), showDoc(ex))
		case !identical:
			return false, cerr(85, "An equivalent index already exists with the same name but different options. Requested index: %s, existing index: %s", showDoc(spec), showDoc(ex))
		}
		return true, nil
	}
	for _, ex := range existing {
		identifying, identical := compareSpecs(spec, ex)
		exName, _ := ex.Lookup("name").StringValueOK()
		switch {
		case identifying && !identical:
			return false, cerr(85, "An equivalent index already exists with a different name and options. Requested index: %s, existing index: %s", showDoc(spec), showDoc(ex))
		case identical:
			return false, cerr(85, "Index already exists with a different name: %s", exName)
		}
	}
	return false, nil
}

// checkIndexBuild refuses a build the existing documents break: a
// duplicate under a unique index (11000) or parallel arrays (171).
func checkIndexBuild(cl *Collection, ns string, spec bson.Raw) error {
	if cl == nil {
		return nil
	}
	ix := newIndex(spec)
	var failure error
	seen := map[string]bool{}
	cl.Each(func(doc bson.Raw) bool {
		keys, err := ix.keysOf(doc)
		if err != nil {
			failure = err
			return false
		}
		if !ix.Unique {
			return true
		}
		for _, k := range keys {
			if seen[k.str] {
				failure = ix.dupError(ns, k, 0)
				return false
			}
		}
		for _, k := range keys {
			seen[k.str] = true
		}
		return true
	})
	if failure == nil {
		return nil
	}
	ce := cmdErrorOf(failure)
	ce.Msg = fmt.Sprintf("Index build failed: %s: Collection %s ( %s ) :: caused by :: %s", randomUUID(), ns, formatUUID(cl.UUID), ce.Msg)
	return ce
}

// randomUUID is a version 4 UUID in its text form.
func randomUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return formatUUID(b)
}

func formatUUID(b [16]byte) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func (c *conn) cmdListIndexes(req *Request) (bson.D, error) {
	coll, e := collName(req, "listIndexes")
	if e != nil {
		return nil, e
	}
	db := req.DB()
	rc, e := c.n.parseReadConcern(req)
	if e != nil {
		return nil, e
	}
	c.n.mu.Lock()
	view, _, e := c.n.readViewLocked(req, rc)
	if e != nil {
		c.n.mu.Unlock()
		return nil, e
	}
	cl := view.Coll(db, coll, false)
	var specs []bson.Raw
	if cl != nil {
		specs = append(specs, idIndexSpec)
		for _, ix := range cl.Indexes {
			specs = append(specs, ix.Spec)
		}
	}
	c.n.mu.Unlock()
	if cl == nil {
		return nil, cerr(26, "ns does not exist: %s.%s", db, coll)
	}
	batch := -1
	if b, ok := numberOK(req.Body.Lookup("cursor", "batchSize")); ok {
		batch = int(b)
	}
	return c.cursorReply(db+"."+coll, specs, batch, false, "firstBatch"), nil
}

// cmdDropIndexes drops by name, key pattern, list of names or "*".
func (c *conn) cmdDropIndexes(req *Request) (bson.D, error) {
	coll, e := collName(req, req.Name())
	if e != nil {
		return nil, e
	}
	db := req.DB()
	ns := db + "." + coll
	which, err := req.Body.LookupErr("index")
	if err != nil {
		return nil, cerr(40414, "BSON field 'dropIndexes.index' is missing but a required field")
	}
	n := c.n
	n.mu.Lock()
	cl := n.data.Coll(db, coll, false)
	if cl == nil {
		n.mu.Unlock()
		return nil, cerr(26, "ns not found %s", ns)
	}
	was := int32(1 + len(cl.Indexes))
	names, ce := indexesToDrop(cl, which)
	if ce != nil {
		n.mu.Unlock()
		return nil, ce
	}
	var ops []opSpec
	for _, name := range names {
		ops = append(ops, opSpec{op: "c", ns: db + ".$cmd", o: mustRaw(bson.D{{Key: "dropIndexes", Value: coll}, {Key: "index", Value: name}}),
			o2: cl.Index(name).Spec})
	}
	if len(ops) > 0 {
		if _, err := n.writeOplogLocked(ops, false); err != nil {
			n.mu.Unlock()
			return nil, cmdErrorOf(err)
		}
	}
	n.mu.Unlock()
	out := bson.D{{Key: "nIndexesWas", Value: was}}
	if s, _ := which.StringValueOK(); s == "*" {
		out = append(out, bson.E{Key: "msg", Value: "non-_id indexes dropped for collection"})
	}
	return c.finishWrite(req, out), nil
}

func indexesToDrop(cl *Collection, which bson.RawValue) ([]string, *CmdError) {
	byName := func(name string) *CmdError {
		if name == "_id_" {
			return cerr(72, "cannot drop _id index")
		}
		if cl.Index(name) == nil {
			return cerr(27, "index not found with name [%s]", name)
		}
		return nil
	}
	switch which.Type {
	case bson.TypeString:
		name := which.StringValue()
		if name == "*" {
			var all []string
			for _, ix := range cl.Indexes {
				all = append(all, ix.Name)
			}
			return all, nil
		}
		return []string{name}, byName(name)
	case bson.TypeArray:
		vals, _ := bson.Raw(which.Value).Values()
		var out []string
		for _, v := range vals {
			name, ok := v.StringValueOK()
			if !ok {
				return nil, cerr(14, "BSON field 'dropIndexes.index' is the wrong type 'array', expected types '[string']")
			}
			if ce := byName(name); ce != nil {
				return nil, ce
			}
			out = append(out, name)
		}
		return out, nil
	case bson.TypeEmbeddedDocument:
		key := keyString(which)
		if key == keyString(idIndexSpec.Lookup("key")) {
			return nil, cerr(72, "cannot drop _id index")
		}
		var out []string
		for _, ix := range cl.Indexes {
			if keyString(bson.RawValue{Type: bson.TypeEmbeddedDocument, Value: ix.Key}) == key {
				out = append(out, ix.Name)
			}
		}
		switch len(out) {
		case 0:
			return nil, cerr(27, "can't find index with key: %s", showValue(which))
		case 1:
			return out, nil
		}
		return nil, cerr(86, "%d indexes found for key: %s, identify by name instead. Conflicting indexes: %v", len(out), showValue(which), out)
	}
	return nil, cerr(14, "BSON field 'dropIndexes.index' is the wrong type '%s', expected types '[string, object']", typeName(which.Type))
}
