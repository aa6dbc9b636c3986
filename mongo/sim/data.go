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
	// txns counts the oplog entries of each retryable write, so a retry
	// (same lsid and txnNumber, e.g. after a failover) is not applied twice.
	txns map[string]int
	// authzGen changes with every write to admin.system.users/roles
	// (a fresh value from the global authzGen), so cached privileges are
	// re-resolved after it.
	authzGen uint64
}

// NewData returns an empty store.
func NewData() *Data {
	return &Data{dbs: map[string]map[string]*Collection{}, txns: map[string]int{}, authzGen: authzGen.Add(1)}
}

// TxnDone returns how many entries a retryable write produced, if applied.
func (d *Data) TxnDone(key string) (int, bool) {
	n, ok := d.txns[key]
	return n, ok
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

// Apply applies one oplog entry; entries are idempotent.
func (d *Data) Apply(e OplogEntry) {
	if e.TxnKey != "" {
		d.txns[e.TxnKey]++
	}
	db, coll := splitNS(e.NS)
	if db == "admin" && (coll == "system.users" || coll == "system.roles" || coll == "$cmd") {
		d.authzGen = authzGen.Add(1)
	}
	switch e.Op {
	case "i":
		d.Coll(db, coll, true).put(e.O)
	case "u":
		d.Coll(db, coll, true).put(e.O)
	case "d":
		if c := d.Coll(db, coll, false); c != nil {
			c.remove(e.O.Lookup("_id"))
		}
	case "c":
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
