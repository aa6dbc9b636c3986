package sim

import (
	"sort"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// cloneBatchBytes bounds one answer to a cloning member, well under the
// 48 MB message limit.
const cloneBatchBytes = 8 << 20

// cmdClone serves initial sync from the majority-committed view. Without
// ns: the commit point (begin) and its oplog entry, the databases to clone
// (all but local) with the entries that define their collections
// (Data.dumpDB without documents) and each collection's count and size,
// and the retryable-write records.
// With ns: that collection's documents in _id order after the key "after",
// one batch at a time. Documents changed meanwhile are fixed by the oplog
// replay from begin, as in mongod's collection cloner.
func (c *conn) cmdClone(req *Request) (bson.D, error) {
	n := c.n
	c.internal.Store(true)
	n.mu.Lock()
	defer n.mu.Unlock()
	if ns, ok := req.Body.Lookup("ns").StringValueOK(); ok {
		_, after, _ := req.Body.Lookup("after").BinaryOK()
		db, coll := splitNS(ns)
		docs, last, more := n.committed.Coll(db, coll, false).batchAfter(string(after), cloneBatchBytes)
		arr := make(bson.A, 0, len(docs))
		for _, d := range docs {
			arr = append(arr, d)
		}
		return bson.D{{Key: "docs", Value: arr}, {Key: "last", Value: bson.Binary{Data: []byte(last)}}, {Key: "more", Value: more}}, nil
	}
	d := bson.D{{Key: "rbid", Value: n.rbid}}
	if n.commitIdx > 0 {
		e := n.oplog[n.commitIdx-1]
		d = append(d, bson.E{Key: "begin", Value: e.OpTime().Doc()}, bson.E{Key: "entry", Value: e.Raw})
	}
	dbs := bson.A{}
	for _, db := range n.committed.DBNames() {
		if db == "local" {
			continue
		}
		defs := bson.A{}
		for _, e := range n.committed.dumpDB(db, false) {
			defs = append(defs, e.Raw)
		}
		sizes := bson.D{}
		for _, coll := range n.committed.CollNames(db) {
			var bytes int64
			docs := n.committed.Coll(db, coll, false).Docs()
			for _, d := range docs {
				bytes += int64(len(d))
			}
			sizes = append(sizes, bson.E{Key: coll, Value: bson.D{{Key: "count", Value: int64(len(docs))}, {Key: "size", Value: bytes}}})
		}
		dbs = append(dbs, bson.D{{Key: "name", Value: db}, {Key: "entries", Value: defs}, {Key: "sizes", Value: sizes}})
	}
	txns := bson.A{}
	for _, e := range n.committed.dumpSessions() {
		txns = append(txns, e.Raw)
	}
	return append(d, bson.E{Key: "databases", Value: dbs}, bson.E{Key: "entries", Value: txns}), nil
}

// batchAfter returns documents whose clone key sorts after "after", in
// key order, up to maxBytes (at least one), the last key and whether more
// follow. The key is the _id's BSON type and bytes: any fixed order of
// unique keys will do.
func (c *Collection) batchAfter(after string, maxBytes int) ([]bson.Raw, string, bool) {
	type keyed struct {
		key string
		doc bson.Raw
	}
	var rest []keyed
	for _, doc := range c.Docs() {
		id := doc.Lookup("_id")
		if k := string(rune(id.Type)) + string(id.Value); k > after {
			rest = append(rest, keyed{k, doc})
		}
	}
	sort.Slice(rest, func(i, j int) bool { return rest[i].key < rest[j].key })
	var out []bson.Raw
	size, last := 0, after
	for _, r := range rest {
		if len(out) > 0 && size+len(r.doc) > maxBytes {
			return out, last, true
		}
		out = append(out, r.doc)
		size += len(r.doc)
		last = r.key
	}
	return out, last, false
}
