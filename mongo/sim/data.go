package sim

import (
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Collection holds documents in insertion order, keyed by _id.
type Collection struct {
	order []string
	docs  map[string]bson.Raw
}

// Data is the document store: database → collection → documents. It is
// a pure function of the oplog applied in order.
type Data struct {
	dbs map[string]map[string]*Collection
	// sessions records, per logical session, the statements of its latest
	// retryable write and whether its latest transaction committed, so a
	// retry (e.g. after a failover) is answered, not applied twice.
	sessions map[string]*sessionRecord
}

// NewData returns an empty store.
func NewData() *Data {
	return &Data{dbs: map[string]map[string]*Collection{}, sessions: map[string]*sessionRecord{}}
}

// Clone returns an independent copy of the documents (immutable, so
// shared) for a transaction's snapshot; session records are left out.
func (d *Data) Clone() *Data {
	out := NewData()
	for db, m := range d.dbs {
		cm := map[string]*Collection{}
		for name, c := range m {
			nc := &Collection{order: append([]string(nil), c.order...), docs: make(map[string]bson.Raw, len(c.docs))}
			for k, v := range c.docs {
				nc.docs[k] = v
			}
			cm[name] = nc
		}
		out.dbs[db] = cm
	}
	return out
}

func idKey(v bson.RawValue) string { return string(rune(v.Type)) + string(v.Value) }

func splitNS(ns string) (string, string) {
	db, coll, _ := strings.Cut(ns, ".")
	return db, coll
}

// Coll returns a collection, creating it when create is set.
func (d *Data) Coll(db, coll string, create bool) *Collection {
	m := d.dbs[db]
	if m == nil {
		if !create {
			return nil
		}
		m = map[string]*Collection{}
		d.dbs[db] = m
	}
	c := m[coll]
	if c == nil && create {
		c = &Collection{docs: map[string]bson.Raw{}}
		m[coll] = c
	}
	return c
}

// Docs returns the documents in insertion order.
func (c *Collection) Docs() []bson.Raw {
	if c == nil {
		return nil
	}
	out := make([]bson.Raw, 0, len(c.order))
	for _, k := range c.order {
		out = append(out, c.docs[k])
	}
	return out
}

// Get returns the document with this _id.
func (c *Collection) Get(id bson.RawValue) bson.Raw {
	if c == nil {
		return nil
	}
	return c.docs[idKey(id)]
}

func (c *Collection) put(doc bson.Raw) {
	k := idKey(doc.Lookup("_id"))
	if _, ok := c.docs[k]; !ok {
		c.order = append(c.order, k)
	}
	c.docs[k] = doc
}

func (c *Collection) remove(id bson.RawValue) {
	k := idKey(id)
	if _, ok := c.docs[k]; !ok {
		return
	}
	delete(c.docs, k)
	for i, x := range c.order {
		if x == k {
			c.order = append(c.order[:i], c.order[i+1:]...)
			break
		}
	}
}

// Apply applies one oplog entry; entries are idempotent. An update of a
// document that no longer exists (deleted later in the oplog, seen again
// on replay) does not bring it back.
func (d *Data) Apply(e OplogEntry) {
	db, coll := splitNS(e.NS)
	var pre, post bson.Raw
	switch e.Op {
	case "i":
		d.Coll(db, coll, true).put(e.O)
		post = e.O
	case "u":
		id := e.O2.Lookup("_id")
		if id.Type == 0 {
			id = e.O.Lookup("_id")
		}
		c := d.Coll(db, coll, false)
		if pre = c.Get(id); pre != nil {
			c.put(e.O)
			post = e.O
		}
	case "d":
		if c := d.Coll(db, coll, false); c != nil {
			pre = c.Get(e.O.Lookup("_id"))
			c.remove(e.O.Lookup("_id"))
		}
	case "c":
		if ops, ok := e.O.Lookup("applyOps").ArrayOK(); ok {
			d.applyOps(ops)
			break
		}
		if name, ok := e.O.Lookup("create").StringValueOK(); ok {
			d.Coll(db, name, true)
		}
		if name, ok := e.O.Lookup("drop").StringValueOK(); ok {
			if m := d.dbs[db]; m != nil {
				delete(m, name)
				if len(m) == 0 {
					delete(d.dbs, db)
				}
			}
		}
		if _, err := e.O.LookupErr("dropDatabase"); err == nil {
			delete(d.dbs, db)
		}
	}
	d.recordSession(e, pre, post)
}

// applyOps applies a transaction's operations, all in one entry.
func (d *Data) applyOps(ops bson.RawArray) {
	vals, _ := ops.Values()
	for _, v := range vals {
		if op, ok := v.DocumentOK(); ok {
			inner := OplogEntry{StmtID: -1}
			inner.Op, _ = op.Lookup("op").StringValueOK()
			inner.NS, _ = op.Lookup("ns").StringValueOK()
			inner.O, _ = op.Lookup("o").DocumentOK()
			inner.O2, _ = op.Lookup("o2").DocumentOK()
			d.Apply(inner)
		}
	}
}

// DBNames lists databases with at least one collection, sorted.
func (d *Data) DBNames() []string {
	out := make([]string, 0, len(d.dbs))
	for k := range d.dbs {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// CollNames lists a database's collections, sorted.
func (d *Data) CollNames(db string) []string {
	var out []string
	for k := range d.dbs[db] {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// HasUserData reports data outside local (blocks replSetInitiate, 110).
func (d *Data) HasUserData() bool {
	for k := range d.dbs {
		if k != "local" {
			return true
		}
	}
	return false
}

// Size is an estimate of a database's bytes.
func (d *Data) Size(db string) (docs, bytes int64) {
	for _, c := range d.dbs[db] {
		for _, doc := range c.docs {
			docs++
			bytes += int64(len(doc))
		}
	}
	return
}
