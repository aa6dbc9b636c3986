package sim

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// OpTime orders oplog entries: by term, then timestamp, as mongod does.
type OpTime struct {
	TS bson.Timestamp
	T  int64
}

// Less reports whether o is before p.
func (o OpTime) Less(p OpTime) bool {
	if o.T != p.T {
		return o.T < p.T
	}
	return o.TS.T < p.TS.T || o.TS.T == p.TS.T && o.TS.I < p.TS.I
}

// IsZero is the null optime of an empty oplog.
func (o OpTime) IsZero() bool { return o.TS.T == 0 && o.TS.I == 0 }

// Doc is the {ts, t} document mongod reports; a null optime has t -1.
func (o OpTime) Doc() bson.D {
	t := o.T
	if o.IsZero() {
		t = -1
	}
	return bson.D{{Key: "ts", Value: o.TS}, {Key: "t", Value: t}}
}

// Date is the wall-clock date of an optime (its seconds).
func (o OpTime) Date() bson.DateTime { return bson.DateTime(int64(o.TS.T) * 1000) }

func parseOpTime(v bson.RawValue) OpTime {
	d, ok := v.DocumentOK()
	if !ok {
		return OpTime{}
	}
	var o OpTime
	if tv, err := d.LookupErr("ts"); err == nil {
		t, i, _ := tv.TimestampOK()
		o.TS = bson.Timestamp{T: t, I: i}
	}
	if tv, err := d.LookupErr("t"); err == nil {
		o.T, _ = tv.AsInt64OK()
	}
	if o.T < 0 {
		o.T = 0
	}
	return o
}

// OplogEntry is one local.oplog.rs document.
type OplogEntry struct {
	TS   bson.Timestamp
	T    int64
	Op   string // i, u, d, c, n
	NS   string
	O    bson.Raw
	O2   bson.Raw
	Wall time.Time
	Raw  bson.Raw
	// TxnKey identifies the retryable write (lsid, txnNumber) that wrote it.
	TxnKey string
}

// OpTime of the entry.
func (e OplogEntry) OpTime() OpTime { return OpTime{TS: e.TS, T: e.T} }

// NewOplogEntry builds and encodes an entry.
// extra carries lsid/txnNumber/stmtId of a retryable write.
func NewOplogEntry(ot OpTime, op, ns string, o, o2 bson.Raw, wall time.Time, extra ...bson.E) OplogEntry {
	e := OplogEntry{TS: ot.TS, T: ot.T, Op: op, NS: ns, O: o, O2: o2, Wall: wall}
	d := bson.D{{Key: "op", Value: op}, {Key: "ns", Value: ns}, {Key: "o", Value: o}}
	if o2 != nil {
		d = append(d, bson.E{Key: "o2", Value: o2})
	}
	d = append(d, extra...)
	d = append(d, bson.E{Key: "ts", Value: ot.TS}, bson.E{Key: "t", Value: ot.T}, bson.E{Key: "v", Value: int64(2)},
		bson.E{Key: "wall", Value: bson.NewDateTimeFromTime(wall)})
	e.Raw, _ = bson.Marshal(d)
	e.TxnKey = txnKeyOf(e.Raw)
	return e
}

func txnKeyOf(raw bson.Raw) string {
	lsid, ok := raw.Lookup("lsid").DocumentOK()
	if !ok {
		return ""
	}
	num, ok := raw.Lookup("txnNumber").AsInt64OK()
	if !ok {
		return ""
	}
	return (&txnRef{lsid: lsid, number: num}).key()
}

// DecodeOplogEntry parses an entry received from a sync source or the store.
func DecodeOplogEntry(raw bson.Raw) (OplogEntry, error) {
	if err := raw.Validate(); err != nil {
		return OplogEntry{}, err
	}
	e := OplogEntry{Raw: raw}
	t, i, ok := raw.Lookup("ts").TimestampOK()
	if !ok {
		return e, fmt.Errorf("oplog entry without ts")
	}
	e.TS = bson.Timestamp{T: t, I: i}
	e.T, _ = raw.Lookup("t").AsInt64OK()
	e.Op, _ = raw.Lookup("op").StringValueOK()
	e.NS, _ = raw.Lookup("ns").StringValueOK()
	e.O, _ = raw.Lookup("o").DocumentOK()
	e.O2, _ = raw.Lookup("o2").DocumentOK()
	if ms, ok := raw.Lookup("wall").DateTimeOK(); ok {
		e.Wall = time.UnixMilli(ms)
	}
	e.TxnKey = txnKeyOf(raw)
	return e, nil
}

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
}

// NewData returns an empty store.
func NewData() *Data { return &Data{dbs: map[string]map[string]*Collection{}, txns: map[string]int{}} }

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
