package sim

import (
	"errors"
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

func writeErr(index int, code int32, msg string, extra ...bson.E) bson.D {
	d := bson.D{{Key: "index", Value: int32(index)}, {Key: "code", Value: code}}
	d = append(d, extra...)
	return append(d, bson.E{Key: "errmsg", Value: msg})
}

// writeCtx is one write command's view of the data and where its writes
// go: the oplog, or the buffer of a multi-document transaction. A write
// command holds n.mu from its first read to its last write, so no other
// write comes in between (mongod's document-level atomicity).
type writeCtx struct {
	n      *Node
	txn    *transaction   // the multi-document transaction, if any
	retry  *txnRef        // the retryable write's identity, if any
	base   int32          // stmtId of the first statement
	record *sessionRecord // what the oplog holds of this retryable write
	// deadline is the command's maxTimeMS, for waits on transactions
	deadline time.Time
}

func (n *Node) writeCtxLocked(req *Request) (*writeCtx, *CmdError) {
	w := &writeCtx{n: n, retry: retryableWrite(req), deadline: maxTimeDeadline(req)}
	if inTransaction(req) {
		if w.txn = n.txnOfLocked(req); w.txn == nil {
			return nil, noSuchTransaction(req)
		}
	}
	if w.retry != nil {
		if s, ok := req.Body.Lookup("stmtId").AsInt64OK(); ok {
			w.base = int32(s)
		}
		if r := n.data.session(sessionKey(w.retry.lsid)); r != nil && r.txnNumber == w.retry.number {
			w.record = r
		}
	}
	return w, nil
}

func (w *writeCtx) view() *Data {
	if w.txn != nil {
		return w.txn.snap
	}
	return w.n.data
}

// stmt is the statement id of the i-th statement (-1 outside retryable writes).
func (w *writeCtx) stmt(i int) int32 {
	if w.retry == nil {
		return -1
	}
	return w.base + int32(i)
}

// done returns the outcome of statement i if a previous attempt applied it.
func (w *writeCtx) done(i int) (stmtRecord, bool) {
	if w.record == nil {
		return stmtRecord{}, false
	}
	r, ok := w.record.stmts[w.base+int32(i)]
	return r, ok
}

// write logs and applies ops as one oplog batch (one fsync), or buffers
// them in the transaction.
func (w *writeCtx) write(ops []opSpec) error {
	if len(ops) == 0 {
		return nil
	}
	if w.txn != nil {
		return w.n.txnWriteLocked(w.txn, ops)
	}
	for i := range ops {
		ops[i].txn = w.retry
	}
	_, err := w.n.writeOplogLocked(ops, false)
	return err
}

// writeError turns a failed write into the command's error.
func writeError(err error) error {
	var ce *CmdError
	if errors.As(err, &ce) {
		return ce
	}
	if errors.Is(err, errNotWritable) {
		return cerr(10107, "not primary")
	}
	return cerr(1, "%v", err)
}

func dupKeyErr(i int, ns string, id bson.RawValue) bson.D {
	return writeErr(i, 11000, fmt.Sprintf("E11000 duplicate key error collection: %s index: _id_ dup key: { _id: %s }", ns, id.String()),
		bson.E{Key: "keyPattern", Value: bson.D{{Key: "_id", Value: int32(1)}}}, bson.E{Key: "keyValue", Value: bson.D{{Key: "_id", Value: id}}})
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
	out, err := func() (bson.D, error) {
		n.mu.Lock()
		defer n.mu.Unlock()
		w, e := n.writeCtxLocked(req)
		if e != nil {
			return nil, e
		}
		var writeErrors bson.A
		inserted := 0
		var ops []opSpec
		var index []int // statement of each op
		pending := map[string]bool{}
		// flush writes the batch so far as one oplog write (one fsync).
		flush := func() error {
			defer func() { ops, index = nil, nil }()
			switch err := w.write(ops); {
			case err == nil:
				inserted += len(ops)
			case w.txn != nil || errors.Is(err, errNotWritable):
				return writeError(err)
			default:
				// The batch was refused as a whole (e.g. a unique index):
				// write document by document to report each failure.
				var ce *CmdError
				for k, op := range ops {
					err := w.write([]opSpec{op})
					if err == nil {
						inserted++
						continue
					}
					if !errors.As(err, &ce) {
						return writeError(err)
					}
					writeErrors = append(writeErrors, writeErr(index[k], ce.Code, ce.Msg, ce.Extra...))
					if ordered {
						break
					}
				}
			}
			return nil
		}
		for i := 0; i < len(docs); i++ {
			if _, ok := w.done(i); ok {
				inserted++ // applied by an earlier attempt of this retryable write
				continue
			}
			d := idFirst(docs[i])
			id := d.Lookup("_id")
			op := opSpec{op: "i", ns: ns, o: d, stmt: w.stmt(i)}
			if w.txn == nil && n.holderLocked(docKey(op), nil) != nil {
				if err := flush(); err != nil {
					return nil, err
				}
				if ordered && len(writeErrors) > 0 {
					break
				}
				if again, err := w.blocked([]opSpec{op}); err != nil {
					return nil, err
				} else if again {
					i--
					continue
				}
			}
			if w.view().Coll(db, coll, false).Get(id) != nil || pending[idKey(id)] {
				writeErrors = append(writeErrors, dupKeyErr(i, ns, id))
				if ordered {
					break
				}
				continue
			}
			pending[idKey(id)] = true
			ops = append(ops, op)
			index = append(index, i)
		}
		if err := flush(); err != nil {
			return nil, err
		}
		if len(writeErrors) > 0 && w.txn != nil {
			n.endTxnLocked(w.txn, txnAborted)
		}
		out := bson.D{{Key: "n", Value: int32(inserted)}}
		if len(writeErrors) > 0 {
			out = append(out, bson.E{Key: "writeErrors", Value: sortByIndex(writeErrors)})
		}
		return out, nil
	}()
	if err != nil {
		return nil, err
	}
	return c.finishWrite(req, out), nil
}

// sortByIndex orders write errors by their statement index.
func sortByIndex(errs bson.A) bson.A {
	for i := 1; i < len(errs); i++ {
		for j := i; j > 0 && errs[j].(bson.D)[0].Value.(int32) < errs[j-1].(bson.D)[0].Value.(int32); j-- {
			errs[j], errs[j-1] = errs[j-1], errs[j]
		}
	}
	return errs
}

// upsertBase is the document an upsert starts from: the query's equality
// fields.
func upsertBase(q bson.Raw) bson.Raw {
	base := bson.D{}
	fe, _ := q.Elements()
	for _, f := range fe {
		if !strings.HasPrefix(f.Key(), "$") && !isOperatorDoc(f.Value()) && !strings.Contains(f.Key(), ".") {
			base = append(base, bson.E{Key: f.Key(), Value: f.Value()})
		}
	}
	return mustRaw(base)
}

func idFilter(id bson.RawValue) bson.Raw { return mustRaw(bson.D{{Key: "_id", Value: id}}) }

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
	out, err := func() (bson.D, error) {
		n.mu.Lock()
		defer n.mu.Unlock()
		w, e := n.writeCtxLocked(req)
		if e != nil {
			return nil, e
		}
		var matched, modified int32
		upserted := bson.A{}
		var writeErrors bson.A
		for i := 0; i < len(ups); i++ {
			u := ups[i]
			if r, ok := w.done(i); ok {
				// answered from the oplog's record, as mongod does
				matched++
				if r.op == "i" {
					upserted = append(upserted, bson.D{{Key: "index", Value: int32(i)}, {Key: "_id", Value: r.id}})
					matched--
				} else {
					modified++
				}
				continue
			}
			q, _ := u.Lookup("q").DocumentOK()
			spec, ok := u.Lookup("u").DocumentOK()
			if !ok {
				writeErrors = append(writeErrors, writeErr(i, 9, "pipeline-style updates are not supported by the simulator"))
				break
			}
			multi, _ := u.Lookup("multi").BooleanOK()
			upsert, _ := u.Lookup("upsert").BooleanOK()
			st, err := updateStatement(w.view().Coll(db, coll, false), ns, q, spec, multi, upsert, w.stmt(i))
			if err != nil {
				return nil, err
			}
			if again, err := w.blocked(st.ops); err != nil {
				return nil, err
			} else if again {
				i--
				continue
			}
			matched += st.matched
			modified += st.modified
			if st.upserted.Type != 0 {
				upserted = append(upserted, bson.D{{Key: "index", Value: int32(i)}, {Key: "_id", Value: st.upserted}})
			}
			if err := w.write(st.ops); err != nil {
				return nil, writeError(err)
			}
			if st.err != "" {
				writeErrors = append(writeErrors, writeErr(i, 66, st.err))
				break
			}
		}
		if len(writeErrors) > 0 && w.txn != nil {
			n.endTxnLocked(w.txn, txnAborted)
		}
		out := bson.D{{Key: "n", Value: matched + int32(len(upserted))}, {Key: "nModified", Value: modified}}
		if len(upserted) > 0 {
			out = append(out, bson.E{Key: "upserted", Value: upserted})
		}
		if len(writeErrors) > 0 {
			out = append(out, bson.E{Key: "writeErrors", Value: writeErrors})
		}
		return out, nil
	}()
	if err != nil {
		return nil, err
	}
	return c.finishWrite(req, out), nil
}

// updateResult is what one update statement does.
type updateResult struct {
	ops               []opSpec
	matched, modified int32
	upserted          bson.RawValue // _id of an upserted document
	err               string        // an update that cannot apply (66)
}

func updateStatement(view *Collection, ns string, q, spec bson.Raw, multi, upsert bool, stmt int32) (updateResult, error) {
	var r updateResult
	docs, err := filterDocs(view.Docs(), q)
	if err != nil {
		return r, err
	}
	if !multi && len(docs) > 1 {
		docs = docs[:1]
	}
	for _, d := range docs {
		nd, err := ApplyUpdate(d, spec, false)
		if err != nil {
			r.err = err.Error()
			return r, nil
		}
		r.matched++
		if string(nd) != string(d) {
			r.modified++
			r.ops = append(r.ops, opSpec{op: "u", ns: ns, o: nd, o2: idFilter(d.Lookup("_id")), stmt: stmt})
		}
	}
	if len(docs) == 0 && upsert {
		nd, err := ApplyUpdate(upsertBase(q), spec, true)
		if err != nil {
			r.err = err.Error()
			return r, nil
		}
		nd = idFirst(nd)
		r.ops = append(r.ops, opSpec{op: "i", ns: ns, o: nd, stmt: stmt})
		r.upserted = nd.Lookup("_id")
	}
	return r, nil
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
	out, err := func() (bson.D, error) {
		n.mu.Lock()
		defer n.mu.Unlock()
		w, e := n.writeCtxLocked(req)
		if e != nil {
			return nil, e
		}
		var removed int32
		for i := 0; i < len(dels); i++ {
			d := dels[i]
			if _, ok := w.done(i); ok {
				removed++
				continue
			}
			q, _ := d.Lookup("q").DocumentOK()
			limit, _ := numberOK(d.Lookup("limit"))
			docs, err := filterDocs(w.view().Coll(db, coll, false).Docs(), q)
			if err != nil {
				return nil, err
			}
			if limit == 1 && len(docs) > 1 {
				docs = docs[:1]
			}
			var ops []opSpec
			for _, x := range docs {
				ops = append(ops, opSpec{op: "d", ns: ns, o: idFilter(x.Lookup("_id")), stmt: w.stmt(i)})
			}
			if again, err := w.blocked(ops); err != nil {
				return nil, err
			} else if again {
				i--
				continue
			}
			if err := w.write(ops); err != nil {
				return nil, writeError(err)
			}
			removed += int32(len(ops))
		}
		return bson.D{{Key: "n", Value: removed}}, nil
	}()
	if err != nil {
		return nil, err
	}
	return c.finishWrite(req, out), nil
}

// cmdFindAndModify: one document, update (with upsert, new) or remove,
// read and written under one hold of the lock. A retry is answered from
// the image the oplog kept (mongod's needsRetryImage).
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
	image := "preImage"
	if returnNew && !remove {
		image = "postImage"
	}
	var doc bson.Raw
	var lastErr bson.D
	err := func() error {
		n.mu.Lock()
		defer n.mu.Unlock()
		w, e := n.writeCtxLocked(req)
		if e != nil {
			return e
		}
		if r, ok := w.done(0); ok {
			doc, lastErr = retriedFindAndModify(r, returnNew)
			return nil
		}
	again:
		docs, err := filterDocs(w.view().Coll(db, coll, false).Docs(), q)
		if err != nil {
			return err
		}
		if s, ok := req.Body.Lookup("sort").DocumentOK(); ok {
			SortDocs(docs, s)
		}
		var before, after bson.Raw
		if len(docs) > 0 {
			before = docs[0]
		}
		lastErr = bson.D{{Key: "n", Value: int32(0)}}
		var op *opSpec
		switch {
		case remove && before != nil:
			op = &opSpec{op: "d", ns: ns, o: idFilter(before.Lookup("_id"))}
			lastErr = bson.D{{Key: "n", Value: int32(1)}}
		case !remove && before != nil:
			nd, err := ApplyUpdate(before, upd, false)
			if err != nil {
				return cerr(66, "%s", err.Error())
			}
			after = nd
			op = &opSpec{op: "u", ns: ns, o: nd, o2: idFilter(before.Lookup("_id"))}
			lastErr = bson.D{{Key: "n", Value: int32(1)}, {Key: "updatedExisting", Value: true}}
		case !remove && upsert:
			nd, err := ApplyUpdate(upsertBase(q), upd, true)
			if err != nil {
				return cerr(66, "%s", err.Error())
			}
			nd = idFirst(nd)
			after = nd
			op = &opSpec{op: "i", ns: ns, o: nd}
			lastErr = bson.D{{Key: "n", Value: int32(1)}, {Key: "updatedExisting", Value: false}, {Key: "upserted", Value: nd.Lookup("_id")}}
		}
		if op != nil {
			if again, err := w.blocked([]opSpec{*op}); err != nil {
				return err
			} else if again {
				goto again
			}
			op.stmt = w.stmt(0)
			if w.retry != nil && op.op != "i" {
				op.image = image
			}
			if err := w.write([]opSpec{*op}); err != nil {
				return writeError(err)
			}
		}
		doc = before
		if returnNew && !remove {
			doc = after
		}
		return nil
	}()
	if err != nil {
		return nil, err
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

// retriedFindAndModify rebuilds the reply of an applied findAndModify.
func retriedFindAndModify(r stmtRecord, returnNew bool) (bson.Raw, bson.D) {
	switch r.op {
	case "d":
		return r.image, bson.D{{Key: "n", Value: int32(1)}}
	case "i":
		var doc bson.Raw
		if returnNew {
			doc = r.image
		}
		return doc, bson.D{{Key: "n", Value: int32(1)}, {Key: "updatedExisting", Value: false}, {Key: "upserted", Value: r.id}}
	}
	return r.image, bson.D{{Key: "n", Value: int32(1)}, {Key: "updatedExisting", Value: true}}
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
