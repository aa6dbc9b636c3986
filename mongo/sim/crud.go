package sim

import (
	"errors"

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

func dupKeyErr(i int, ns string, id bson.RawValue) bson.D {
	e := &DuplicateKeyError{NS: ns, Index: "_id_", KeyPattern: mustRaw(bson.D{{Key: "_id", Value: int32(1)}}),
		KeyValue: bson.D{{Key: "_id", Value: id}}, Shown: "{ _id: " + showValue(id) + " }"}
	return writeErr(i, 11000, e.Error(), e.fields()...)
}

func (c *conn) cmdInsert(req *Request) (bson.D, error) {
	n := c.n
	coll, e := collName(req, "insert")
	if e != nil {
		return nil, e
	}
	db := req.DB()
	if n.isView(db, coll) {
		return nil, viewWriteRefused(db, coll)
	}
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
		w, unlock, e := n.beginWrite(req, db, coll)
		if e != nil {
			return nil, e
		}
		defer unlock()
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

func idFilter(id bson.RawValue) bson.Raw { return mustRaw(bson.D{{Key: "_id", Value: id}}) }

func (c *conn) cmdUpdate(req *Request) (bson.D, error) {
	n := c.n
	coll, e := collName(req, "update")
	if e != nil {
		return nil, e
	}
	db := req.DB()
	if n.isView(db, coll) {
		return nil, viewWriteRefused(db, coll)
	}
	ns := db + "." + coll
	ups, err := req.Docs("updates")
	if err != nil {
		return nil, cerr(14, "%v", err)
	}
	ordered := true
	if b, ok := req.Body.Lookup("ordered").BooleanOK(); ok {
		ordered = b
	}
	let, _ := req.Body.Lookup("let").DocumentOK()
	out, err := func() (bson.D, error) {
		w, unlock, e := n.beginWrite(req, db, coll)
		if e != nil {
			return nil, e
		}
		defer unlock()
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
			constants, _ := u.Lookup("c").DocumentOK()
			multi, _ := u.Lookup("multi").BooleanOK()
			upsert, _ := u.Lookup("upsert").BooleanOK()
			upd, perr := parseDocUpdate(u.Lookup("u"), arrayFiltersOf(u), let, constants)
			if perr != nil {
				ce := asCmdError(perr)
				writeErrors = append(writeErrors, writeErr(i, ce.Code, ce.Msg))
				if ordered {
					break
				}
				continue
			}
			st, err := updateStatement(w.view().Coll(db, coll, false), ns, q, upd, multi, upsert, w.stmt(i))
			if err != nil {
				return nil, err
			}
			if again, err := w.blocked(st.ops); err != nil {
				return nil, err
			} else if again {
				i--
				continue
			}
			if err := w.write(st.ops); err != nil {
				// a document the write path refuses (e.g. a unique index) is
				// this statement's write error
				var ce *CmdError
				if w.txn != nil || errors.Is(err, errNotWritable) || !errors.As(err, &ce) {
					return nil, writeError(err)
				}
				writeErrors = append(writeErrors, writeErr(i, ce.Code, ce.Msg, ce.Extra...))
				if ordered {
					break
				}
				continue
			}
			matched += st.matched
			modified += st.modified
			if st.upserted.Type != 0 {
				upserted = append(upserted, bson.D{{Key: "index", Value: int32(i)}, {Key: "_id", Value: st.upserted}})
			}
			if st.err != nil {
				writeErrors = append(writeErrors, writeErr(i, st.err.Code, st.err.Msg, st.err.Extra...))
				if ordered {
					break
				}
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
	err               *CmdError     // an update that cannot apply
}

func updateStatement(view *Collection, ns string, q bson.Raw, parsed docUpdate, multi, upsert bool, stmt int32) (updateResult, error) {
	var r updateResult
	docs, err := view.Find(q)
	if err != nil {
		return r, asCmdError(err)
	}
	if !multi && len(docs) > 1 {
		docs = docs[:1]
	}
	for _, d := range docs {
		nd, err := parsed.Apply(d, q, false)
		if err != nil {
			r.err = asCmdError(err)
			return r, nil
		}
		r.matched++
		if string(nd) != string(d) {
			r.modified++
			r.ops = append(r.ops, opSpec{op: "u", ns: ns, o: nd, o2: idFilter(d.Lookup("_id")), stmt: stmt})
		}
	}
	if len(docs) == 0 && upsert {
		nd, err := parsed.Upsert(q)
		if err != nil {
			r.err = asCmdError(err)
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
	if n.isView(db, coll) {
		return nil, viewWriteRefused(db, coll)
	}
	ns := db + "." + coll
	dels, err := req.Docs("deletes")
	if err != nil {
		return nil, cerr(14, "%v", err)
	}
	out, err := func() (bson.D, error) {
		w, unlock, e := n.beginWrite(req, db, coll)
		if e != nil {
			return nil, e
		}
		defer unlock()
		var removed int32
		for i := 0; i < len(dels); i++ {
			d := dels[i]
			if _, ok := w.done(i); ok {
				removed++
				continue
			}
			q, _ := d.Lookup("q").DocumentOK()
			limit, _ := numberOK(d.Lookup("limit"))
			docs, err := w.view().Coll(db, coll, false).Find(q)
			if err != nil {
				return nil, asCmdError(err)
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
