package sim

import (
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Collection holds documents in insertion order, keyed by the _id's
// index key (so _id 1 and 1.0 are one document, as in mongod's _id index),
// and its secondary indexes.
type Collection struct {
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
	// txns counts the oplog entries of each retryable write, so a retry
	// (same lsid and txnNumber, e.g. after a failover) is not applied twice.
	txns map[string]int
}

// NewData returns an empty store.
func NewData() *Data { return &Data{dbs: map[string]map[string]*Collection{}, txns: map[string]int{}} }

// TxnDone returns how many entries a retryable write produced, if applied.
func (d *Data) TxnDone(key string) (int, bool) {
	n, ok := d.txns[key]
	return n, ok
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

// Apply applies one oplog entry; entries are idempotent.
func (d *Data) Apply(e OplogEntry) {
	if e.TxnKey != "" {
		d.txns[e.TxnKey]++
	}
	db, coll := splitNS(e.NS)
	switch e.Op {
	case "i", "u":
		c := d.collFor(e, db, coll)
		c.put(postImage(c.Get(e.O.Lookup("_id")), e))
	case "d":
		if c := d.Coll(db, coll, false); c != nil {
			c.remove(e.O.Lookup("_id"))
		}
	case "c":
		d.applyCommand(db, e)
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
