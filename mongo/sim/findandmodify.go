package sim

import (
	"go.mongodb.org/mongo-driver/v2/bson"
)

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
	updV := req.Body.Lookup("update")
	hasUpd := updV.Type != 0
	if !remove && !hasUpd {
		return nil, cerr(9, "Either an update or remove=true must be specified")
	}
	var parsed docUpdate
	if hasUpd && !remove {
		let, _ := req.Body.Lookup("let").DocumentOK()
		var err error
		if parsed, err = parseDocUpdate(updV, arrayFiltersOf(req.Body), let); err != nil {
			return nil, asCmdError(err)
		}
	}
	image := "preImage"
	if returnNew && !remove {
		image = "postImage"
	}
	var doc bson.Raw
	var lastErr bson.D
	err := func() error {
		w, unlock, e := n.beginWrite(req, db, coll)
		if e != nil {
			return e
		}
		defer unlock()
		if r, ok := w.done(0); ok {
			doc, lastErr = retriedFindAndModify(r, returnNew)
			return nil
		}
	again:
		docs, err := w.view().Coll(db, coll, false).Find(q)
		if err != nil {
			return asCmdError(err)
		}
		if s, ok := req.Body.Lookup("sort").DocumentOK(); ok {
			if err := SortDocs(docs, s); err != nil {
				return asCmdError(err)
			}
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
			nd, err := parsed.Apply(before, q, false)
			if err != nil {
				return asCmdError(err)
			}
			after = nd
			op = &opSpec{op: "u", ns: ns, o: nd, o2: idFilter(before.Lookup("_id"))}
			lastErr = bson.D{{Key: "n", Value: int32(1)}, {Key: "updatedExisting", Value: true}}
		case !remove && upsert:
			nd, err := parsed.Upsert(q)
			if err != nil {
				return asCmdError(err)
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
		pd, err := Project(doc, p, q)
		if err != nil {
			return nil, asCmdError(err)
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
