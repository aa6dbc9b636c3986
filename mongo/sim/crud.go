package sim

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

type cursor struct {
	ns   string
	docs []bson.Raw
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

func collName(req *Request, cmd string) (string, *CmdError) {
	s, ok := req.Body.Lookup(cmd).StringValueOK()
	if !ok || s == "" {
		return "", cerr(73, "collection name has invalid type %s", typeName(req.Body.Lookup(cmd).Type))
	}
	return s, nil
}

// writeConcern parses {w, wtimeout}.
func parseWriteConcern(req *Request) (w any, wtimeout time.Duration, doc bson.Raw) {
	wc, ok := req.Body.Lookup("writeConcern").DocumentOK()
	if !ok {
		return int64(1), 0, nil
	}
	w = int64(1)
	if v, err := wc.LookupErr("w"); err == nil {
		if s, ok := v.StringValueOK(); ok {
			w = s
		} else if n, ok := numberOK(v); ok {
			w = int64(n)
		}
	}
	if v, ok := numberOK(wc.Lookup("wtimeout")); ok {
		wtimeout = time.Duration(v) * time.Millisecond
	}
	return w, wtimeout, wc
}

// awaitWriteConcern waits for the last write of this node to satisfy the
// request's write concern; it returns a writeConcernError document or nil.
func (n *Node) awaitWriteConcern(req *Request) bson.D {
	if n.cfg.ReplSet == "" {
		return nil
	}
	w, wtimeout, wcDoc := parseWriteConcern(req)
	n.mu.Lock()
	target := n.applied
	term := n.term
	dataBearing := 0
	for _, m := range n.rs.Members {
		if !m.ArbiterOnly {
			dataBearing++
		}
	}
	n.mu.Unlock()
	var cond func() bool
	switch x := w.(type) {
	case string:
		if x != "majority" {
			return bson.D{{Key: "code", Value: int32(79)}, {Key: "codeName", Value: codeName(79)}, {Key: "errmsg", Value: fmt.Sprintf("No write concern mode named '%s' found in replica set configuration", x)}}
		}
		cond = func() bool { return !n.commit.Less(target) || n.term != term || n.state != StatePrimary }
	case int64:
		if x <= 1 {
			return nil
		}
		if int(x) > dataBearing {
			return bson.D{{Key: "code", Value: int32(100)}, {Key: "codeName", Value: codeName(100)}, {Key: "errmsg", Value: "Not enough data-bearing nodes"}}
		}
		cond = func() bool {
			return n.membersAppliedLocked(target, false) >= int(x) || n.term != term || n.state != StatePrimary
		}
	}
	deadline := time.Now().Add(365 * 24 * time.Hour)
	if wtimeout > 0 {
		deadline = time.Now().Add(wtimeout)
	}
	ok := n.waitFor(deadline, cond)
	n.mu.Lock()
	stepped := n.term != term || n.state != StatePrimary
	n.mu.Unlock()
	if stepped {
		return bson.D{{Key: "code", Value: int32(189)}, {Key: "codeName", Value: codeName(189)}, {Key: "errmsg", Value: "Primary stepped down while waiting for replication"}}
	}
	if !ok {
		wcd := bson.D{}
		if wcDoc != nil {
			_ = bson.Unmarshal(wcDoc, &wcd)
		}
		wcd = append(wcd, bson.E{Key: "provenance", Value: "clientSupplied"})
		return bson.D{{Key: "code", Value: int32(64)}, {Key: "codeName", Value: codeName(64)}, {Key: "errmsg", Value: "waiting for replication timed out"},
			{Key: "errInfo", Value: bson.D{{Key: "wtimeout", Value: true}, {Key: "writeConcern", Value: wcd}}}}
	}
	return nil
}

func (c *conn) finishWrite(req *Request, d bson.D) bson.D {
	if wce := c.n.awaitWriteConcern(req); wce != nil {
		d = append(d, bson.E{Key: "writeConcernError", Value: wce})
		if _, err := req.Body.LookupErr("txnNumber"); err == nil && retryableCodes[wce[0].Value.(int32)] {
			d = append(d, bson.E{Key: "errorLabels", Value: bson.A{"RetryableWriteError"}})
		}
	}
	return d
}

func writeErr(index int, code int32, msg string, extra ...bson.E) bson.D {
	d := bson.D{{Key: "index", Value: int32(index)}, {Key: "code", Value: code}}
	d = append(d, extra...)
	return append(d, bson.E{Key: "errmsg", Value: msg})
}

func (c *conn) cmdInsert(req *Request) (bson.D, error) {
	n := c.n
	coll, e := collName(req, "insert")
	if e != nil {
		return nil, e
	}
	db := req.DB()
	ns := db + "." + coll
	docs, err := req.Docs("documents")
	if err != nil {
		return nil, cerr(14, "%v", err)
	}
	ordered := true
	if b, ok := req.Body.Lookup("ordered").BooleanOK(); ok {
		ordered = b
	}
	var writeErrors bson.A
	inserted := 0
	txn := retryableWrite(req)
	n.mu.Lock()
	if cnt, done := n.data.TxnDone(txn.key()); txn != nil && done {
		n.mu.Unlock()
		return c.finishWrite(req, bson.D{{Key: "n", Value: int32(cnt)}}), nil
	}
	for i, d := range docs {
		d = idFirst(d)
		id := d.Lookup("_id")
		if n.data.Coll(db, coll, false).Get(id) != nil {
			writeErrors = append(writeErrors, writeErr(i, 11000,
				fmt.Sprintf("E11000 duplicate key error collection: %s index: _id_ dup key: { _id: %s }", ns, id.String()),
				bson.E{Key: "keyPattern", Value: bson.D{{Key: "_id", Value: int32(1)}}}, bson.E{Key: "keyValue", Value: bson.D{{Key: "_id", Value: id}}}))
			if ordered {
				break
			}
			continue
		}
		if _, err := n.writeOplogLocked([]opSpec{{op: "i", ns: ns, o: d, txn: txn}}, false); err != nil {
			n.mu.Unlock()
			if inserted == 0 {
				return nil, cerr(10107, "not primary")
			}
			return bson.D{{Key: "n", Value: int32(inserted)}}, nil
		}
		inserted++
	}
	n.mu.Unlock()
	out := bson.D{{Key: "n", Value: int32(inserted)}}
	if len(writeErrors) > 0 {
		out = append(out, bson.E{Key: "writeErrors", Value: writeErrors})
	}
	return c.finishWrite(req, out), nil
}

// readView picks the store: majority-committed or latest applied.
func (n *Node) readViewLocked(req *Request) *Data {
	if lvl, _ := req.Body.Lookup("readConcern", "level").StringValueOK(); lvl == "majority" && n.cfg.ReplSet != "" {
		return n.committed
	}
	return n.data
}

func (n *Node) matching(req *Request, db, coll string, filter bson.Raw) ([]bson.Raw, error) {
	n.mu.Lock()
	var docs []bson.Raw
	switch {
	case db == "local" && coll == "oplog.rs":
		for _, e := range n.oplog {
			docs = append(docs, e.Raw)
		}
	case db == "local" && coll == "system.replset":
		if n.rs != nil {
			docs = append(docs, n.rs.Raw())
		}
	default:
		docs = n.readViewLocked(req).Coll(db, coll, false).Docs()
	}
	n.mu.Unlock()
	if filter == nil {
		return docs, nil
	}
	out := docs[:0:0]
	for _, d := range docs {
		ok, err := Match(d, filter)
		if err != nil {
			return nil, cerr(2, "%s", err.Error())
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
	n := c.n
	coll, e := collName(req, "find")
	if e != nil {
		return nil, e
	}
	db := req.DB()
	filter, _ := req.Body.Lookup("filter").DocumentOK()
	docs, err := n.matching(req, db, coll, filter)
	if err != nil {
		return nil, err
	}
	if s, ok := req.Body.Lookup("sort").DocumentOK(); ok {
		SortDocs(docs, s)
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
		for i, d := range docs {
			pd, err := Project(d, p)
			if err != nil {
				return nil, cerr(31253, "%s", err.Error())
			}
			docs[i] = pd
		}
	}
	batch := int(intField(req, "batchSize"))
	if _, err := req.Body.LookupErr("batchSize"); err != nil {
		batch = 101
	}
	single, _ := req.Body.Lookup("singleBatch").BooleanOK()
	return c.cursorReply(db+"."+coll, docs, batch, single, "firstBatch"), nil
}

func (c *conn) cursorReply(ns string, docs []bson.Raw, batch int, single bool, key string) bson.D {
	first := docs
	var id int64
	if batch >= 0 && batch < len(docs) && !single {
		first = docs[:batch]
		id = c.n.cursors.add(&cursor{ns: ns, docs: docs[batch:]})
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
	docs, err := c.n.matching(req, req.DB(), coll, q)
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

// cmdAggregate supports the pipelines drivers generate for counting and
// simple queries: $match, $sort, $skip, $limit, $project, $count, and
// $group on a constant _id with {$sum: 1}.
func (c *conn) cmdAggregate(req *Request) (bson.D, error) {
	coll, _ := req.Body.Lookup("aggregate").StringValueOK()
	db := req.DB()
	arr, ok := req.Body.Lookup("pipeline").ArrayOK()
	if !ok {
		return nil, cerr(14, "'pipeline' option must be specified as an array")
	}
	docs, err := c.n.matching(req, db, coll, nil)
	if err != nil {
		return nil, err
	}
	stages, _ := arr.Values()
	for _, st := range stages {
		sd, _ := st.DocumentOK()
		e, err := sd.IndexErr(0)
		if err != nil {
			return nil, cerr(40323, "A pipeline stage specification object must contain exactly one field.")
		}
		v := e.Value()
		switch e.Key() {
		case "$match":
			f, _ := v.DocumentOK()
			var out []bson.Raw
			for _, d := range docs {
				ok, err := Match(d, f)
				if err != nil {
					return nil, cerr(2, "%s", err.Error())
				}
				if ok {
					out = append(out, d)
				}
			}
			docs = out
		case "$sort":
			s, _ := v.DocumentOK()
			SortDocs(docs, s)
		case "$skip":
			k, _ := numberOK(v)
			if int(k) >= len(docs) {
				docs = nil
			} else {
				docs = docs[int(k):]
			}
		case "$limit":
			k, _ := numberOK(v)
			if int(k) < len(docs) {
				docs = docs[:int(k)]
			}
		case "$project":
			p, _ := v.DocumentOK()
			for i, d := range docs {
				if docs[i], err = Project(d, p); err != nil {
					return nil, cerr(31253, "%s", err.Error())
				}
			}
		case "$collStats":
			cs := c.collStatsDoc(db, coll)
			docs = []bson.Raw{mustRaw(bson.D{{Key: "ns", Value: db + "." + coll}, {Key: "localTime", Value: bson.NewDateTimeFromTime(time.Now())},
				{Key: "storageStats", Value: cs}, {Key: "count", Value: cs[2].Value}})}
		case "$count":
			name, _ := v.StringValueOK()
			docs = []bson.Raw{mustRaw(bson.D{{Key: name, Value: int32(len(docs))}})}
		case "$group":
			g, _ := v.DocumentOK()
			out := bson.D{{Key: "_id", Value: g.Lookup("_id")}}
			els, _ := g.Elements()
			for _, f := range els[1:] {
				out = append(out, bson.E{Key: f.Key(), Value: int32(len(docs))})
			}
			if len(docs) == 0 {
				docs = nil
			} else {
				docs = []bson.Raw{mustRaw(out)}
			}
		default:
			return nil, cerr(40324, "Unrecognized pipeline stage name: '%s'", e.Key())
		}
	}
	batch := 101
	if b, ok := numberOK(req.Body.Lookup("cursor", "batchSize")); ok {
		batch = int(b)
	}
	return c.cursorReply(db+"."+coll, docs, batch, false, "firstBatch"), nil
}

func (c *conn) cmdUpdate(req *Request) (bson.D, error) {
	n := c.n
	coll, e := collName(req, "update")
	if e != nil {
		return nil, e
	}
	db := req.DB()
	ns := db + "." + coll
	ups, err := req.Docs("updates")
	if err != nil {
		return nil, cerr(14, "%v", err)
	}
	var matched, modified int32
	upserted := bson.A{}
	var writeErrors bson.A
	txn := retryableWrite(req)
	n.mu.Lock()
	cnt, done := n.data.TxnDone(txn.key())
	n.mu.Unlock()
	if txn != nil && done {
		return c.finishWrite(req, bson.D{{Key: "n", Value: int32(cnt)}, {Key: "nModified", Value: int32(cnt)}}), nil
	}
	for i, u := range ups {
		q, _ := u.Lookup("q").DocumentOK()
		uv := u.Lookup("u")
		spec, ok := uv.DocumentOK()
		if !ok {
			writeErrors = append(writeErrors, writeErr(i, 9, "pipeline-style updates are not supported by the simulator"))
			break
		}
		multi, _ := u.Lookup("multi").BooleanOK()
		upsert, _ := u.Lookup("upsert").BooleanOK()
		docs, err := n.matching(&Request{Body: mustRaw(bson.D{})}, db, coll, q)
		if err != nil {
			return nil, err
		}
		if !multi && len(docs) > 1 {
			docs = docs[:1]
		}
		var ops []opSpec
		for _, d := range docs {
			nd, err := ApplyUpdate(d, spec, false)
			if err != nil {
				writeErrors = append(writeErrors, writeErr(i, 66, err.Error()))
				break
			}
			matched++
			if string(nd) != string(d) {
				modified++
				ops = append(ops, opSpec{op: "u", ns: ns, o: nd, o2: mustRaw(bson.D{{Key: "_id", Value: d.Lookup("_id")}})})
			}
		}
		if len(docs) == 0 && upsert {
			base := bson.D{}
			fe, _ := q.Elements()
			for _, f := range fe {
				if !strings.HasPrefix(f.Key(), "$") && !isOperatorDoc(f.Value()) && !strings.Contains(f.Key(), ".") {
					base = append(base, bson.E{Key: f.Key(), Value: f.Value()})
				}
			}
			nd, err := ApplyUpdate(mustRaw(base), spec, true)
			if err != nil {
				writeErrors = append(writeErrors, writeErr(i, 66, err.Error()))
				break
			}
			if _, err := nd.LookupErr("_id"); err != nil {
				var dd bson.D
				_ = bson.Unmarshal(nd, &dd)
				nd = mustRaw(append(bson.D{{Key: "_id", Value: bson.NewObjectID()}}, dd...))
			}
			ops = append(ops, opSpec{op: "i", ns: ns, o: nd})
			upserted = append(upserted, bson.D{{Key: "index", Value: int32(i)}, {Key: "_id", Value: nd.Lookup("_id")}})
		}
		for k := range ops {
			ops[k].txn = txn
		}
		if len(ops) > 0 {
			if _, err := n.writeOplog(ops, false); err != nil {
				return nil, cerr(10107, "not primary")
			}
		}
	}
	out := bson.D{{Key: "n", Value: matched + int32(len(upserted))}, {Key: "nModified", Value: modified}}
	if len(upserted) > 0 {
		out = append(out, bson.E{Key: "upserted", Value: upserted})
	}
	if len(writeErrors) > 0 {
		out = append(out, bson.E{Key: "writeErrors", Value: writeErrors})
	}
	return c.finishWrite(req, out), nil
}

func (c *conn) cmdDelete(req *Request) (bson.D, error) {
	n := c.n
	coll, e := collName(req, "delete")
	if e != nil {
		return nil, e
	}
	db := req.DB()
	ns := db + "." + coll
	dels, err := req.Docs("deletes")
	if err != nil {
		return nil, cerr(14, "%v", err)
	}
	var removed int32
	txn := retryableWrite(req)
	n.mu.Lock()
	cnt, done := n.data.TxnDone(txn.key())
	n.mu.Unlock()
	if txn != nil && done {
		return c.finishWrite(req, bson.D{{Key: "n", Value: int32(cnt)}}), nil
	}
	for _, d := range dels {
		q, _ := d.Lookup("q").DocumentOK()
		limit, _ := numberOK(d.Lookup("limit"))
		docs, err := n.matching(&Request{Body: mustRaw(bson.D{})}, db, coll, q)
		if err != nil {
			return nil, err
		}
		if limit == 1 && len(docs) > 1 {
			docs = docs[:1]
		}
		var ops []opSpec
		for _, x := range docs {
			ops = append(ops, opSpec{op: "d", ns: ns, o: mustRaw(bson.D{{Key: "_id", Value: x.Lookup("_id")}}), txn: txn})
		}
		if len(ops) > 0 {
			if _, err := n.writeOplog(ops, false); err != nil {
				return nil, cerr(10107, "not primary")
			}
			removed += int32(len(ops))
		}
	}
	return c.finishWrite(req, bson.D{{Key: "n", Value: removed}}), nil
}

func (c *conn) cmdCreate(req *Request) (bson.D, error) {
	coll, e := collName(req, "create")
	if e != nil {
		return nil, e
	}
	db := req.DB()
	c.n.mu.Lock()
	exists := c.n.data.Coll(db, coll, false) != nil
	c.n.mu.Unlock()
	if exists {
		return nil, cerr(48, "Collection %s.%s already exists.", db, coll)
	}
	if _, err := c.n.writeOplog([]opSpec{{op: "c", ns: db + ".$cmd", o: mustRaw(bson.D{{Key: "create", Value: coll}})}}, false); err != nil {
		return nil, cerr(10107, "not primary")
	}
	return c.finishWrite(req, bson.D{}), nil
}

func (c *conn) cmdCreateIndexes(req *Request) (bson.D, error) {
	coll, e := collName(req, "createIndexes")
	if e != nil {
		return nil, e
	}
	db := req.DB()
	c.n.mu.Lock()
	exists := c.n.data.Coll(db, coll, false) != nil
	c.n.mu.Unlock()
	if !exists {
		if _, err := c.n.writeOplog([]opSpec{{op: "c", ns: db + ".$cmd", o: mustRaw(bson.D{{Key: "create", Value: coll}})}}, false); err != nil {
			return nil, cerr(10107, "not primary")
		}
	}
	// Secondary indexes are accepted and not modelled.
	return bson.D{{Key: "numIndexesBefore", Value: int32(1)}, {Key: "numIndexesAfter", Value: int32(1)},
		{Key: "createdCollectionAutomatically", Value: !exists}, {Key: "note", Value: "all indexes already exist"}}, nil
}

func (c *conn) cmdListIndexes(req *Request) (bson.D, error) {
	coll, e := collName(req, "listIndexes")
	if e != nil {
		return nil, e
	}
	db := req.DB()
	c.n.mu.Lock()
	exists := c.n.data.Coll(db, coll, false) != nil
	c.n.mu.Unlock()
	if !exists {
		return nil, cerr(26, "ns does not exist: %s.%s", db, coll)
	}
	idx := mustRaw(bson.D{{Key: "v", Value: int32(2)}, {Key: "key", Value: bson.D{{Key: "_id", Value: int32(1)}}}, {Key: "name", Value: "_id_"}})
	return c.cursorReply(db+"."+coll, []bson.Raw{idx}, -1, false, "firstBatch"), nil
}

func (c *conn) cmdDrop(req *Request) (bson.D, error) {
	coll, e := collName(req, "drop")
	if e != nil {
		return nil, e
	}
	db := req.DB()
	c.n.mu.Lock()
	exists := c.n.data.Coll(db, coll, false) != nil
	c.n.mu.Unlock()
	if !exists {
		return bson.D{{Key: "ns", Value: db + "." + coll}, {Key: "nIndexesWas", Value: int32(0)}}, nil
	}
	if _, err := c.n.writeOplog([]opSpec{{op: "c", ns: db + ".$cmd", o: mustRaw(bson.D{{Key: "drop", Value: coll}})}}, false); err != nil {
		return nil, cerr(10107, "not primary")
	}
	return c.finishWrite(req, bson.D{{Key: "ns", Value: db + "." + coll}, {Key: "nIndexesWas", Value: int32(1)}}), nil
}

func (c *conn) cmdDropDatabase(req *Request) (bson.D, error) {
	db := req.DB()
	if _, err := c.n.writeOplog([]opSpec{{op: "c", ns: db + ".$cmd", o: mustRaw(bson.D{{Key: "dropDatabase", Value: int32(1)}})}}, false); err != nil {
		return nil, cerr(10107, "not primary")
	}
	return c.finishWrite(req, bson.D{{Key: "dropped", Value: db}}), nil
}

func (c *conn) cmdListDatabases(req *Request) (bson.D, error) {
	n := c.n
	nameOnly, _ := req.Body.Lookup("nameOnly").BooleanOK()
	filter, _ := req.Body.Lookup("filter").DocumentOK()
	n.mu.Lock()
	names := n.data.DBNames()
	hasLocal := false
	for _, x := range names {
		if x == "local" {
			hasLocal = true
		}
	}
	if n.cfg.ReplSet != "" && !hasLocal {
		names = append(names, "local")
	}
	for _, sys := range []string{"admin", "config"} {
		found := false
		for _, x := range names {
			found = found || x == sys
		}
		if !found && n.cfg.ReplSet != "" {
			names = append(names, sys)
		}
	}
	sort.Strings(names)
	type info struct {
		name  string
		bytes int64
	}
	var infos []info
	for _, name := range names {
		_, b := n.data.Size(name)
		if name == "local" {
			for _, e := range n.oplog {
				b += int64(len(e.Raw))
			}
		}
		infos = append(infos, info{name, max(b, 8192)})
	}
	n.mu.Unlock()
	dbs := bson.A{}
	var total int64
	for _, in := range infos {
		d := bson.D{{Key: "name", Value: in.name}}
		if !nameOnly {
			d = append(d, bson.E{Key: "sizeOnDisk", Value: in.bytes}, bson.E{Key: "empty", Value: false})
		}
		if filter != nil {
			if ok, _ := Match(mustRaw(d), filter); !ok {
				continue
			}
		}
		total += in.bytes
		dbs = append(dbs, d)
	}
	out := bson.D{{Key: "databases", Value: dbs}}
	if !nameOnly {
		out = append(out, bson.E{Key: "totalSize", Value: total}, bson.E{Key: "totalSizeMb", Value: total >> 20})
	}
	return out, nil
}

func (c *conn) cmdListCollections(req *Request) (bson.D, error) {
	n := c.n
	db := req.DB()
	filter, _ := req.Body.Lookup("filter").DocumentOK()
	nameOnly, _ := req.Body.Lookup("nameOnly").BooleanOK()
	n.mu.Lock()
	names := n.data.CollNames(db)
	if db == "local" && n.cfg.ReplSet != "" {
		names = append(names, "oplog.rs", "system.replset")
	}
	n.mu.Unlock()
	var docs []bson.Raw
	for _, name := range names {
		d := bson.D{{Key: "name", Value: name}, {Key: "type", Value: "collection"}}
		if !nameOnly {
			d = append(d, bson.E{Key: "options", Value: bson.D{}}, bson.E{Key: "info", Value: bson.D{{Key: "readOnly", Value: false}}},
				bson.E{Key: "idIndex", Value: bson.D{{Key: "v", Value: int32(2)}, {Key: "key", Value: bson.D{{Key: "_id", Value: int32(1)}}}, {Key: "name", Value: "_id_"}}})
		}
		raw := mustRaw(d)
		if filter != nil {
			if ok, _ := Match(raw, filter); !ok {
				continue
			}
		}
		docs = append(docs, raw)
	}
	return c.cursorReply(db+".$cmd.listCollections", docs, -1, false, "firstBatch"), nil
}

func (c *conn) cmdDBStats(req *Request) (bson.D, error) {
	n := c.n
	db := req.DB()
	scale := 1.0
	if s, ok := numberOK(req.Body.Lookup("scale")); ok && s > 0 {
		scale = s
	}
	n.mu.Lock()
	colls := len(n.data.CollNames(db))
	objs, size := n.data.Size(db)
	n.mu.Unlock()
	avg := 0.0
	if objs > 0 {
		avg = float64(size) / float64(objs)
	}
	return bson.D{{Key: "db", Value: db}, {Key: "collections", Value: int64(colls)}, {Key: "views", Value: int64(0)},
		{Key: "objects", Value: objs}, {Key: "avgObjSize", Value: avg}, {Key: "dataSize", Value: float64(size) / scale},
		{Key: "storageSize", Value: float64(size) / scale}, {Key: "indexes", Value: int64(colls)}, {Key: "indexSize", Value: float64(4096*colls) / scale},
		{Key: "totalSize", Value: float64(size+int64(4096*colls)) / scale}, {Key: "scaleFactor", Value: int64(scale)},
		{Key: "fsUsedSize", Value: float64(0)}, {Key: "fsTotalSize", Value: float64(0)}}, nil
}

func (c *conn) cmdCollStats(req *Request) (bson.D, error) {
	coll, e := collName(req, "collStats")
	if e != nil {
		return nil, e
	}
	db := req.DB()
	c.n.mu.Lock()
	exists := c.n.data.Coll(db, coll, false) != nil || db == "local" && coll == "oplog.rs" && c.n.cfg.ReplSet != ""
	c.n.mu.Unlock()
	if !exists {
		return nil, cerr(26, "Collection [%s.%s] not found.", db, coll)
	}
	return c.collStatsDoc(db, coll), nil
}

// collStatsDoc is collStats' answer (also $collStats.storageStats).
func (c *conn) collStatsDoc(db, coll string) bson.D {
	n := c.n
	n.mu.Lock()
	cl := n.data.Coll(db, coll, false)
	var cnt, size int64
	for _, d := range cl.Docs() {
		cnt++
		size += int64(len(d))
	}
	oplog := db == "local" && coll == "oplog.rs"
	if oplog {
		for _, e := range n.oplog {
			cnt++
			size += int64(len(e.Raw))
		}
	}
	n.mu.Unlock()
	avg := int64(0)
	if cnt > 0 {
		avg = size / cnt
	}
	if oplog {
		// A nominal 990 MB cap, mongod's minimum; the simulator never truncates.
		return bson.D{{Key: "ns", Value: "local.oplog.rs"}, {Key: "size", Value: size}, {Key: "count", Value: cnt},
			{Key: "avgObjSize", Value: avg}, {Key: "storageSize", Value: size}, {Key: "capped", Value: true},
			{Key: "max", Value: int64(-1)}, {Key: "maxSize", Value: int64(990 << 20)}, {Key: "nindexes", Value: int32(0)},
			{Key: "totalIndexSize", Value: int64(0)}, {Key: "totalSize", Value: size}, {Key: "indexSizes", Value: bson.D{}},
			{Key: "scaleFactor", Value: int32(1)}}
	}
	return bson.D{{Key: "ns", Value: db + "." + coll}, {Key: "size", Value: size}, {Key: "count", Value: cnt},
		{Key: "avgObjSize", Value: avg}, {Key: "storageSize", Value: size}, {Key: "freeStorageSize", Value: int64(0)},
		{Key: "capped", Value: false}, {Key: "nindexes", Value: int32(1)}, {Key: "indexDetails", Value: bson.D{}},
		{Key: "indexBuilds", Value: bson.A{}}, {Key: "totalIndexSize", Value: int64(4096)}, {Key: "totalSize", Value: size + 4096},
		{Key: "indexSizes", Value: bson.D{{Key: "_id_", Value: int64(4096)}}}, {Key: "scaleFactor", Value: int32(1)}}
}

func (c *conn) cmdDistinct(req *Request) (bson.D, error) {
	coll, e := collName(req, "distinct")
	if e != nil {
		return nil, e
	}
	key, _ := req.Body.Lookup("key").StringValueOK()
	q, _ := req.Body.Lookup("query").DocumentOK()
	docs, err := c.n.matching(req, req.DB(), coll, q)
	if err != nil {
		return nil, err
	}
	var vals []bson.RawValue
	for _, d := range docs {
		v := lookupPath(d, key)
		if v.Type == 0 {
			continue
		}
		for _, x := range candidates(v) {
			if x.Type == bson.TypeArray {
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

// cmdFindAndModify: one document, update (with upsert, new) or remove.
func (c *conn) cmdFindAndModify(req *Request) (bson.D, error) {
	n := c.n
	coll, e := collName(req, req.Name())
	if e != nil {
		return nil, e
	}
	db := req.DB()
	ns := db + "." + coll
	q, _ := req.Body.Lookup("query").DocumentOK()
	remove, _ := req.Body.Lookup("remove").BooleanOK()
	returnNew, _ := req.Body.Lookup("new").BooleanOK()
	upsert, _ := req.Body.Lookup("upsert").BooleanOK()
	upd, hasUpd := req.Body.Lookup("update").DocumentOK()
	if !remove && !hasUpd {
		return nil, cerr(9, "Either an update or remove=true must be specified")
	}
	txn := retryableWrite(req)
	docs, err := n.matching(&Request{Body: mustRaw(bson.D{})}, db, coll, q)
	if err != nil {
		return nil, err
	}
	if s, ok := req.Body.Lookup("sort").DocumentOK(); ok {
		SortDocs(docs, s)
	}
	var before, after bson.Raw
	if len(docs) > 0 {
		before = docs[0]
	}
	lastErr := bson.D{{Key: "n", Value: int32(0)}}
	var op *opSpec
	switch {
	case remove && before != nil:
		op = &opSpec{op: "d", ns: ns, o: mustRaw(bson.D{{Key: "_id", Value: before.Lookup("_id")}}), txn: txn}
		lastErr = bson.D{{Key: "n", Value: int32(1)}}
	case !remove && before != nil:
		nd, err := ApplyUpdate(before, upd, false)
		if err != nil {
			return nil, cerr(66, "%s", err.Error())
		}
		after = nd
		op = &opSpec{op: "u", ns: ns, o: nd, o2: mustRaw(bson.D{{Key: "_id", Value: before.Lookup("_id")}}), txn: txn}
		lastErr = bson.D{{Key: "n", Value: int32(1)}, {Key: "updatedExisting", Value: true}}
	case !remove && upsert:
		base := bson.D{}
		fe, _ := q.Elements()
		for _, f := range fe {
			if !strings.HasPrefix(f.Key(), "$") && !isOperatorDoc(f.Value()) && !strings.Contains(f.Key(), ".") {
				base = append(base, bson.E{Key: f.Key(), Value: f.Value()})
			}
		}
		nd, err := ApplyUpdate(mustRaw(base), upd, true)
		if err != nil {
			return nil, cerr(66, "%s", err.Error())
		}
		nd = idFirst(nd)
		after = nd
		op = &opSpec{op: "i", ns: ns, o: nd, txn: txn}
		lastErr = bson.D{{Key: "n", Value: int32(1)}, {Key: "updatedExisting", Value: false}, {Key: "upserted", Value: nd.Lookup("_id")}}
	}
	if op != nil {
		if _, err := n.writeOplog([]opSpec{*op}, false); err != nil {
			return nil, cerr(10107, "not primary")
		}
	}
	doc := before
	if returnNew && !remove {
		doc = after
	}
	if p, ok := req.Body.Lookup("fields").DocumentOK(); ok && doc != nil {
		pd, err := Project(doc, p)
		if err != nil {
			return nil, cerr(31253, "%s", err.Error())
		}
		doc = pd
	}
	var value any // BSON null when no document
	if doc != nil {
		value = doc
	}
	return c.finishWrite(req, bson.D{{Key: "lastErrorObject", Value: lastErr}, {Key: "value", Value: value}}), nil
}

// idFirst returns doc with _id as its first field (generated if absent),
// as mongod stores documents.
func idFirst(doc bson.Raw) bson.Raw {
	if e, err := doc.IndexErr(0); err == nil && e.Key() == "_id" {
		return doc
	}
	var dd bson.D
	_ = bson.Unmarshal(doc, &dd)
	out := bson.D{{Key: "_id", Value: nil}}
	found := false
	for _, e := range dd {
		if e.Key == "_id" {
			out[0].Value, found = e.Value, true
			continue
		}
		out = append(out, e)
	}
	if !found {
		out[0].Value = bson.NewObjectID()
	}
	return mustRaw(out)
}
