package sim

import (
	"fmt"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

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
		let, _ := req.Body.Lookup("let").DocumentOK()
		constants, _ := u.Lookup("c").DocumentOK()
		apply, err := updater(u.Lookup("u"), let, constants)
		if err != nil {
			code, msg := updateError(err)
			writeErrors = append(writeErrors, writeErr(i, code, msg))
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
			nd, err := apply(d, false)
			if err != nil {
				code, msg := updateError(err)
				writeErrors = append(writeErrors, writeErr(i, code, msg))
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
			nd, err := apply(mustRaw(base), true)
			if err != nil {
				code, msg := updateError(err)
				writeErrors = append(writeErrors, writeErr(i, code, msg))
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
	updV := req.Body.Lookup("update")
	if !remove && updV.Type == 0 {
		return nil, cerr(9, "Either an update or remove=true must be specified")
	}
	constants, _ := req.Body.Lookup("let").DocumentOK()
	apply, err := updater(updV, constants)
	if !remove && err != nil {
		return nil, err
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
		nd, err := apply(before, false)
		if err != nil {
			code, msg := updateError(err)
			return nil, cerr(code, "%s", msg)
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
		nd, err := apply(mustRaw(base), true)
		if err != nil {
			code, msg := updateError(err)
			return nil, cerr(code, "%s", msg)
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
