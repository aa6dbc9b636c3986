package sim

import (
	"crypto/rand"
	"encoding/binary"
	"sort"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"
)

type cursor struct {
	ns    string
	docs  []bson.Raw
	users []authedUser // who opened it: only they may getMore
}

type cursorTable struct {
	sync.Mutex
	m map[int64]*cursor
}

func (t *cursorTable) add(c *cursor) int64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	id := int64(binary.LittleEndian.Uint64(b[:]) & 0x3fffffffffffffff)
	if id == 0 {
		id = 1
	}
	t.Lock()
	t.m[id] = c
	t.Unlock()
	return id
}

// matching returns the documents of a collection the request's read
// concern lets it see that match filter.
func (n *Node) matching(req *Request, db, coll string, filter bson.Raw) ([]bson.Raw, error) {
	docs, _, err := n.matchingAt(req, db, coll, filter)
	return docs, err
}

// matchingAt is matching that also returns the time the read saw.
func (n *Node) matchingAt(req *Request, db, coll string, filter bson.Raw) ([]bson.Raw, bson.Timestamp, error) {
	rc, e := n.parseReadConcern(req)
	if e != nil {
		return nil, bson.Timestamp{}, e
	}
	if rc.level == "snapshot" && !inTransaction(req) && !snapshotCommands[req.Name()] {
		return nil, bson.Timestamp{}, cerr(72, "Command %s does not support { readConcern: { level: \"snapshot\" } }", req.Name())
	}
	if e := n.awaitReadConcern(req, rc); e != nil {
		return nil, bson.Timestamp{}, e
	}
	// A read takes the lock shared, then its collection's lock shared
	// (collock.go): reads never wait for one another, only for a write to
	// their collection or an exclusive hold.
	n.mu.RLock()
	var docs []bson.Raw
	var at bson.Timestamp
	switch {
	case db == "local" && coll == "oplog.rs":
		// as mongod's oplog, entries are visible once written, before the
		// journal's flush (fetching members get only durable ones)
		n.logMu.Lock() // writes to collections queue entries meanwhile
		for _, entries := range [][]OplogEntry{n.oplog, n.pending} {
			for _, e := range entries {
				docs = append(docs, e.Raw)
			}
		}
		n.logMu.Unlock()
	case db == "local" && coll == "system.replset":
		if n.rs != nil {
			docs = append(docs, n.rs.Raw())
		}
	default:
		view, ts, e := n.readViewLocked(req, rc)
		if e != nil {
			n.mu.RUnlock()
			return nil, ts, e
		}
		c := view.Coll(db, coll, false)
		if c != nil {
			c.mu.RLock()
		}
		found, err := c.Find(filter)
		if c != nil {
			c.mu.RUnlock()
		}
		if err != nil {
			n.mu.RUnlock()
			return nil, ts, asCmdError(err)
		}
		docs, at, filter = found, ts, nil // Find used the indexes and matched
	}
	n.mu.RUnlock()
	if rc.level == "linearizable" && n.cfg.ReplSet != "" && !inTransaction(req) {
		if e := n.awaitLinearizable(req); e != nil {
			return nil, at, e
		}
	}
	out, err := filterDocs(docs, filter)
	return out, at, err
}

// snapshotCommands take readConcern snapshot outside transactions (5.0+).
var snapshotCommands = map[string]bool{"find": true, "aggregate": true, "distinct": true}

// filterDocs keeps the documents that match filter (all when nil).
func filterDocs(docs []bson.Raw, filter bson.Raw) ([]bson.Raw, error) {
	if filter == nil {
		return docs, nil
	}
	match, err := ParseFilter(filter)
	if err != nil {
		return nil, asCmdError(err)
	}
	out := docs[:0:0]
	for _, d := range docs {
		ok, err := runFilter(match, d)
		if err != nil {
			return nil, asCmdError(err)
		}
		if ok {
			out = append(out, d)
		}
	}
	return out, nil
}

func intField(req *Request, name string) int64 {
	v, _ := numberOK(req.Body.Lookup(name))
	return int64(v)
}

func (c *conn) cmdFind(req *Request) (bson.D, error) {
	coll, e := collName(req, "find")
	if e != nil {
		return nil, e
	}
	db := req.DB()
	filter, _ := req.Body.Lookup("filter").DocumentOK()
	docs, at, err := c.readable(req, db, coll, filter)
	if err != nil {
		return nil, err
	}
	if s, ok := req.Body.Lookup("sort").DocumentOK(); ok {
		if err := SortDocs(docs, s); err != nil {
			return nil, asCmdError(err)
		}
	}
	if skip := intField(req, "skip"); skip > 0 {
		if int(skip) >= len(docs) {
			docs = nil
		} else {
			docs = docs[skip:]
		}
	}
	limit := intField(req, "limit")
	if limit < 0 {
		limit = -limit
	}
	if limit > 0 && int(limit) < len(docs) {
		docs = docs[:limit]
	}
	if p, ok := req.Body.Lookup("projection").DocumentOK(); ok {
		proj, err := ParseProjection(p, filter)
		if err != nil {
			return nil, asCmdError(err)
		}
		for i, d := range docs {
			if docs[i], err = proj.Apply(d); err != nil {
				return nil, asCmdError(err)
			}
		}
	}
	batch := int(intField(req, "batchSize"))
	if _, err := req.Body.LookupErr("batchSize"); err != nil {
		batch = 101
	}
	single, _ := req.Body.Lookup("singleBatch").BooleanOK()
	out := c.cursorReply(db+"."+coll, docs, batch, single, "firstBatch")
	if lvl, _ := req.Body.Lookup("readConcern", "level").StringValueOK(); lvl == "snapshot" && !inTransaction(req) {
		out[0].Value = append(out[0].Value.(bson.D), bson.E{Key: "atClusterTime", Value: at})
	}
	return out, nil
}

func (c *conn) cursorReply(ns string, docs []bson.Raw, batch int, single bool, key string) bson.D {
	first := docs
	var id int64
	if batch >= 0 && batch < len(docs) && !single {
		first = docs[:batch]
		id = c.n.cursors.add(&cursor{ns: ns, docs: docs[batch:], users: c.users})
	} else if batch >= 0 && batch < len(docs) {
		first = docs[:batch]
	}
	arr := bson.A{}
	for _, d := range first {
		arr = append(arr, d)
	}
	return bson.D{{Key: "cursor", Value: bson.D{{Key: key, Value: arr}, {Key: "id", Value: id}, {Key: "ns", Value: ns}}}}
}

func (c *conn) cmdGetMore(req *Request) (bson.D, error) {
	id, ok := req.Body.Lookup("getMore").Int64OK()
	if !ok {
		return nil, cerr(14, "BSON field 'getMore.getMore' is the wrong type, expected type 'long'")
	}
	coll, _ := req.Body.Lookup("collection").StringValueOK()
	t := &c.n.cursors
	t.Lock()
	cur := t.m[id]
	if cur != nil && !c.coauthorized(cur.users) {
		t.Unlock()
		return nil, cerr(13, "cursor id %d was not created by the authenticated user", id)
	}
	delete(t.m, id)
	t.Unlock()
	if cur == nil {
		return nil, cerr(43, "cursor id %d not found", id)
	}
	if cur.ns != req.DB()+"."+coll {
		return nil, cerr(13, "Requested getMore on namespace '%s.%s', but cursor belongs to a different namespace %s", req.DB(), coll, cur.ns)
	}
	batch := int(intField(req, "batchSize"))
	if batch <= 0 {
		batch = len(cur.docs)
	}
	return c.cursorReply(cur.ns, cur.docs, batch, false, "nextBatch"), nil
}

func (c *conn) cmdKillCursors(req *Request) (bson.D, error) {
	arr, _ := req.Body.Lookup("cursors").ArrayOK()
	vals, _ := arr.Values()
	killed, notFound := bson.A{}, bson.A{}
	t := &c.n.cursors
	t.Lock()
	for _, v := range vals {
		id, _ := v.Int64OK()
		if _, ok := t.m[id]; ok {
			delete(t.m, id)
			killed = append(killed, id)
		} else {
			notFound = append(notFound, id)
		}
	}
	t.Unlock()
	return bson.D{{Key: "cursorsKilled", Value: killed}, {Key: "cursorsNotFound", Value: notFound},
		{Key: "cursorsAlive", Value: bson.A{}}, {Key: "cursorsUnknown", Value: bson.A{}}}, nil
}

func (c *conn) cmdCount(req *Request) (bson.D, error) {
	coll, e := collName(req, "count")
	if e != nil {
		return nil, e
	}
	q, _ := req.Body.Lookup("query").DocumentOK()
	docs, _, err := c.readable(req, req.DB(), coll, q)
	if err != nil {
		return nil, err
	}
	cnt := int64(len(docs))
	if s := intField(req, "skip"); s > 0 {
		cnt = max(0, cnt-s)
	}
	if l := intField(req, "limit"); l > 0 && l < cnt {
		cnt = l
	}
	return bson.D{{Key: "n", Value: int32(cnt)}}, nil
}

func (c *conn) cmdDistinct(req *Request) (bson.D, error) {
	coll, e := collName(req, "distinct")
	if e != nil {
		return nil, e
	}
	key, _ := req.Body.Lookup("key").StringValueOK()
	q, _ := req.Body.Lookup("query").DocumentOK()
	docs, _, err := c.readable(req, req.DB(), coll, q)
	if err != nil {
		return nil, err
	}
	var vals []bson.RawValue
	for _, d := range docs {
		for _, x := range pathValues(d, key, true) {
			if x.Type == 0 || x.Type == bson.TypeArray {
				continue
			}
			dup := false
			for _, y := range vals {
				if typeOrder(x.Type) == typeOrder(y.Type) && compareValues(x, y) == 0 {
					dup = true
				}
			}
			if !dup {
				vals = append(vals, x)
			}
		}
	}
	sort.SliceStable(vals, func(i, j int) bool { return compareValues(vals[i], vals[j]) < 0 })
	arr := bson.A{}
	for _, v := range vals {
		arr = append(arr, v)
	}
	return bson.D{{Key: "values", Value: arr}}, nil
}
