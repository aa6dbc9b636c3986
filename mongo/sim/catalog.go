package sim

import (
	"crypto/sha256"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// applyCommand applies a DDL oplog entry (op "c") to the store; like
// every entry it is idempotent.
func (d *Data) applyCommand(db string, e OplogEntry) {
	o := e.O
	first, err := o.IndexErr(0)
	if err != nil {
		return
	}
	name, _ := first.Value().StringValueOK()
	switch first.Key() {
	case "create":
		c := d.collFor(e, db, name)
		if opts := withoutFields(o, "create", "idIndex"); len(opts) > 5 {
			c.Options = opts
		}
	case "drop":
		d.dropColl(db, name)
	case "dropDatabase":
		delete(d.dbs, db)
	case "createIndexes":
		d.collFor(e, db, name).addIndex(withoutFields(o, "createIndexes"))
	case "dropIndexes":
		if c := d.Coll(db, name, false); c != nil {
			ixName, _ := o.Lookup("index").StringValueOK()
			c.dropIndex(ixName)
		}
	case "collMod":
		if c := d.Coll(db, name, false); c != nil {
			c.collMod(o)
		}
	case "renameCollection":
		to, _ := o.Lookup("to").StringValueOK()
		fromDB, fromColl := splitNS(name)
		toDB, toColl := splitNS(to)
		c := d.Coll(fromDB, fromColl, false)
		if c == nil {
			return
		}
		d.dropColl(fromDB, fromColl)
		d.dropColl(toDB, toColl)
		if d.dbs[toDB] == nil {
			d.dbs[toDB] = map[string]*Collection{}
		}
		d.dbs[toDB][toColl] = c
	}
}

// collFor returns a collection, creating it for entry e: with the entry's
// ui when it has one (a catalog dump), else a UUID derived from the entry.
func (d *Data) collFor(e OplogEntry, db, coll string) *Collection {
	if c := d.Coll(db, coll, false); c != nil {
		return c
	}
	c := d.Coll(db, coll, true)
	if sub, ui, ok := e.Raw.Lookup("ui").BinaryOK(); ok && sub == 4 && len(ui) == 16 {
		copy(c.UUID[:], ui)
		return c
	}
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s.%s|%d|%d|%d", db, coll, e.TS.T, e.TS.I, e.T)))
	copy(c.UUID[:], sum[:16])
	c.UUID[6] = c.UUID[6]&0x0f | 0x40
	c.UUID[8] = c.UUID[8]&0x3f | 0x80
	return c
}

// CatalogEntries are the DDL entries that recreate a collection without
// its documents: create with its options and UUID (ui), then one
// createIndexes per index. A checkpoint or initial sync that rebuilds
// data from a dump applies them before the documents.
func (d *Data) CatalogEntries(db, coll string) []OplogEntry {
	c := d.Coll(db, coll, false)
	if c == nil {
		return nil
	}
	ui := bson.E{Key: "ui", Value: bson.Binary{Subtype: 4, Data: c.UUID[:]}}
	create := append(bson.D{{Key: "create", Value: coll}}, rawFields(optionsOf(c))...)
	create = append(create, bson.E{Key: "idIndex", Value: idIndexSpec})
	out := []OplogEntry{NewOplogEntry(OpTime{}, "c", db+".$cmd", mustRaw(create), nil, time.Time{}, ui)}
	for _, ix := range c.Indexes {
		o := append(bson.D{{Key: "createIndexes", Value: coll}}, rawFields(ix.Spec)...)
		out = append(out, NewOplogEntry(OpTime{}, "c", db+".$cmd", mustRaw(o), nil, time.Time{}, ui))
	}
	return out
}

func (d *Data) dropColl(db, coll string) {
	if m := d.dbs[db]; m != nil {
		delete(m, coll)
		if len(m) == 0 {
			delete(d.dbs, db)
		}
	}
}

// withoutFields returns doc without the named top-level fields.
func withoutFields(doc bson.Raw, names ...string) bson.Raw {
	out := bson.D{}
	els, _ := doc.Elements()
next:
	for _, e := range els {
		for _, n := range names {
			if e.Key() == n {
				continue next
			}
		}
		out = append(out, bson.E{Key: e.Key(), Value: e.Value()})
	}
	return mustRaw(out)
}

// Index returns the secondary index with this name, or nil.
func (c *Collection) Index(name string) *Index {
	if c == nil {
		return nil
	}
	for _, ix := range c.Indexes {
		if ix.Name == name {
			return ix
		}
	}
	return nil
}

// addIndex builds an index over the current documents.
func (c *Collection) addIndex(spec bson.Raw) {
	ix := newIndex(spec)
	if ix.Name == "_id_" || c.Index(ix.Name) != nil {
		return
	}
	for _, k := range c.order {
		if k != "" {
			ix.add(k, c.docs[k].doc)
		}
	}
	c.Indexes = append(c.Indexes, ix)
}

func (c *Collection) dropIndex(name string) {
	for i, ix := range c.Indexes {
		if ix.Name == name {
			c.Indexes = append(c.Indexes[:i:i], c.Indexes[i+1:]...)
			return
		}
	}
}

// collMod changes an index's expireAfterSeconds or hidden flag and
// records validator options.
func (c *Collection) collMod(o bson.Raw) {
	if idx, ok := o.Lookup("index").DocumentOK(); ok {
		name, _ := idx.Lookup("name").StringValueOK()
		ix := c.Index(name)
		if ix == nil {
			return
		}
		spec := bson.D{}
		_ = bson.Unmarshal(ix.Spec, &spec)
		for _, f := range []string{"expireAfterSeconds", "hidden"} {
			v, err := idx.LookupErr(f)
			if err != nil {
				continue
			}
			if f == "hidden" && !v.Boolean() {
				spec = dropField(spec, f)
			} else {
				spec = setField(spec, f, v)
			}
		}
		entries, bytes := ix.entries, ix.bytes
		*ix = *newIndex(mustRaw(spec))
		ix.entries, ix.bytes = entries, bytes
	}
	opts := bson.D{}
	if c.Options != nil {
		_ = bson.Unmarshal(c.Options, &opts)
	}
	for _, f := range []string{"validator", "validationLevel", "validationAction"} {
		if v, err := o.LookupErr(f); err == nil {
			opts = setField(opts, f, v)
		}
	}
	if len(opts) > 0 {
		c.Options = mustRaw(opts)
	}
}

// dropField deletes a field of d, keeping the others' order.
func dropField(d bson.D, key string) bson.D {
	for i, e := range d {
		if e.Key == key {
			return append(d[:i:i], d[i+1:]...)
		}
	}
	return d
}

// IndexSizes lists the collection's indexes, _id_ first, with an estimate
// of each one's bytes (for collStats' nindexes, totalIndexSize and
// indexSizes).
func (c *Collection) IndexSizes() []IndexSize {
	if c == nil {
		return nil
	}
	idBytes := int64(0)
	for k := range c.docs {
		idBytes += int64(2*len(k)) + 16
	}
	out := []IndexSize{{Name: "_id_", Bytes: max(idBytes, 4096)}}
	for _, ix := range c.Indexes {
		out = append(out, IndexSize{Name: ix.Name, Bytes: max(ix.bytes+16*int64(len(ix.entries)), 4096)})
	}
	return out
}

// IndexSize is one index's name and estimated size in bytes.
type IndexSize struct {
	Name  string
	Bytes int64
}
