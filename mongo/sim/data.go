package sim

import (
	"sort"
	"strings"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Collection holds documents in insertion order, keyed by the _id's
// index key (so _id 1 and 1.0 are one document, as in mongod's _id index),
// and its secondary indexes.
type Collection struct {
	// mu is the collection's lock: a write holding n.mu shared holds it
	// exclusively, a read holding n.mu shared holds it shared; taken after
	// n.mu, never two at once (collock.go). Under n.mu exclusively it is
	// not needed.
	mu      sync.RWMutex
	docs    map[string]*record
	order   []string // _id keys in insertion order; "" where removed
	dead    int      // removed slots in order
	Indexes []*Index // secondary indexes in creation order; _id_ is docs itself
	Options bson.Raw // create/collMod options, as listCollections shows them
	UUID    [16]byte // derived from the entry that created it, so equal on every member
}

type record struct {
	doc bson.Raw
	pos int // in order
}

// Data is the document store: database → collection → documents. It is
// a pure function of the oplog applied in order.
type Data struct {
	dbs map[string]map[string]*Collection
	// sessions records, per logical session, the statements of its latest
	// retryable write and whether its latest transaction committed, so a
	// retry (e.g. after a failover) is answered, not applied twice.
	sessions map[string]*sessionRecord
	// sessMu guards sessions and the records in it: writes to different
	// collections record their statements at once (collock.go). Taken
	// under n.mu and a collection's lock; nothing is taken under it.
	sessMu sync.Mutex
	// authzGen changes with every write to admin.system.users/roles
	// (a fresh value from the global authzGen), so cached privileges are
	// re-resolved after it.
	authzGen uint64
}

// NewData returns an empty store.
func NewData() *Data {
	return &Data{dbs: map[string]map[string]*Collection{}, sessions: map[string]*sessionRecord{}, authzGen: authzGen.Add(1)}
}

// Clone returns an independent copy of the documents (immutable, so
// shared) for a transaction's snapshot. Session records and secondary
// indexes are left out: a snapshot's lookups scan, with the same results.
func (d *Data) Clone() *Data {
	out := NewData()
	for db, m := range d.dbs {
		cm := map[string]*Collection{}
		for name, c := range m {
			nc := &Collection{docs: make(map[string]*record, len(c.docs)), Options: c.Options, UUID: c.UUID}
			c.Each(func(doc bson.Raw) bool { nc.put(doc); return true })
			cm[name] = nc
		}
		out.dbs[db] = cm
	}
	return out
}

func idKey(v bson.RawValue) string { return keyString(v) }

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
		c = &Collection{docs: map[string]*record{}}
		m[coll] = c
	}
	return c
}

// Len is the number of documents.
func (c *Collection) Len() int {
	if c == nil {
		return 0
	}
	return len(c.docs)
}

// Docs returns the documents in insertion order.
func (c *Collection) Docs() []bson.Raw {
	if c == nil {
		return nil
	}
	out := make([]bson.Raw, 0, len(c.docs))
	c.Each(func(d bson.Raw) bool { out = append(out, d); return true })
	return out
}

// Each calls fn on the documents in insertion order until it returns false.
func (c *Collection) Each(fn func(bson.Raw) bool) {
	if c == nil {
		return
	}
	for _, k := range c.order {
		if k != "" && !fn(c.docs[k].doc) {
			return
		}
	}
}

// Get returns the document with this _id.
func (c *Collection) Get(id bson.RawValue) bson.Raw {
	if c == nil {
		return nil
	}
	if r := c.docs[idKey(id)]; r != nil {
		return r.doc
	}
	return nil
}

// put inserts or replaces a document; a replaced one keeps its place.
func (c *Collection) put(doc bson.Raw) {
	k := idKey(doc.Lookup("_id"))
	r := c.docs[k]
	if r == nil {
		r = &record{pos: len(c.order)}
		c.order = append(c.order, k)
		c.docs[k] = r
	} else {
		for _, ix := range c.Indexes {
			ix.remove(k, r.doc)
		}
	}
	r.doc = doc
	for _, ix := range c.Indexes {
		ix.add(k, doc)
	}
}

// remove deletes a document in O(1), compacting the order when half of
// it is holes.
func (c *Collection) remove(id bson.RawValue) {
	k := idKey(id)
	r := c.docs[k]
	if r == nil {
		return
	}
	for _, ix := range c.Indexes {
		ix.remove(k, r.doc)
	}
	delete(c.docs, k)
	c.order[r.pos] = ""
	c.dead++
	if c.dead > 64 && c.dead > len(c.order)/2 {
		live := make([]string, 0, len(c.docs))
		for _, x := range c.order {
			if x != "" {
				c.docs[x].pos = len(live)
				live = append(live, x)
			}
		}
		c.order, c.dead = live, 0
	}
}

// Apply applies one oplog entry; entries are idempotent. An update of a
// document that no longer exists (deleted later in the oplog, seen again
// on replay) does not bring it back.
func (d *Data) Apply(e OplogEntry) {
	db, coll := splitNS(e.NS)
	var pre, post bson.Raw
	if db == "admin" && (coll == "system.users" || coll == "system.roles" || coll == "$cmd") {
		d.authzGen = authzGen.Add(1)
	}
	switch e.Op {
	case "i":
		c := d.collFor(e, db, coll)
		c.put(e.O)
		post = e.O
	case "u":
		id := e.O2.Lookup("_id")
		if id.Type == 0 {
			id = e.O.Lookup("_id")
		}
		c := d.Coll(db, coll, false)
		if pre = c.Get(id); pre != nil {
			post = postImage(pre, e)
			c.put(post)
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
		d.applyCommand(db, e)
	case "n":
		if r, ok := e.O.Lookup("sessionRecord").DocumentOK(); ok {
			d.restoreSession(r)
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

// postImage is the document an insert or update entry leaves (entries
// carry the whole document).
func postImage(_ bson.Raw, e OplogEntry) bson.Raw { return e.O }

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
		for _, r := range c.docs {
			docs++
			bytes += int64(len(r.doc))
		}
	}
	return
}
