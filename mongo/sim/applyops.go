package sim

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// cmdApplyOps is mongod's applyOps command as mongorestore --oplogReplay
// sends it: document writes (op i, u, d; n is a no-op) applied in order on
// a writable primary, each logged as its own oplog entry, answered with
// {applied, results}. As mongod applies oplog entries, they are
// idempotent: an insert of an _id that exists replaces the document, a
// delete of a missing one does nothing, and an update of a missing one is
// an upsert unless alwaysUpsert is false (then 47, NoMatchingDocument).
// Not modelled: command entries (72), update entries in the $v:2 diff form
// (2; mongod-sim logs whole documents), preCondition (72).
func (c *conn) cmdApplyOps(req *Request) (bson.D, error) {
	n := c.n
	arr, ok := req.Body.Lookup("applyOps").ArrayOK()
	if !ok {
		return nil, cerr(14, "ApplyOps must be an array")
	}
	if _, err := req.Body.LookupErr("preCondition"); err == nil {
		return nil, cerr(72, "applyOps preCondition is not modelled by mongod-sim")
	}
	upsert := true
	if b, ok := req.Body.Lookup("alwaysUpsert").BooleanOK(); ok {
		upsert = b
	}
	vals, _ := arr.Values()
	entries := make([]bson.Raw, 0, len(vals))
	for _, v := range vals {
		e, ok := v.DocumentOK()
		if !ok {
			return nil, cerr(2, "applyOps entries must be documents")
		}
		op, _ := e.Lookup("op").StringValueOK()
		ns, _ := e.Lookup("ns").StringValueOK()
		switch op {
		case "i", "u", "d", "n":
		case "c":
			return nil, cerr(72, "applyOps of command entries is not modelled by mongod-sim")
		default:
			return nil, cerr(2, "applyOps: invalid op type %q", op)
		}
		if op != "n" && (!strings.Contains(ns, ".") || strings.HasPrefix(ns, "local.")) {
			return nil, cerr(73, "applyOps: invalid namespace %q", ns)
		}
		entries = append(entries, e)
	}
	out, err := func() (bson.D, error) {
		n.mu.Lock()
		defer n.mu.Unlock()
		w, ce := n.writeCtxLocked(req)
		if ce != nil {
			return nil, ce
		}
		results := bson.A{}
		for _, e := range entries {
			op, err := applyOpSpec(w.view(), e, upsert)
			if err != nil {
				return nil, err
			}
			if op != nil {
				if err := w.write([]opSpec{*op}); err != nil {
					return nil, writeError(err)
				}
			}
			results = append(results, true)
		}
		return bson.D{{Key: "applied", Value: int32(len(results))}, {Key: "results", Value: results}}, nil
	}()
	if err != nil {
		return nil, err
	}
	return c.finishWrite(req, out), nil
}

// applyOpSpec is the write one applyOps entry makes on view, or nil for none.
func applyOpSpec(view *Data, e bson.Raw, upsert bool) (*opSpec, error) {
	op, _ := e.Lookup("op").StringValueOK()
	ns, _ := e.Lookup("ns").StringValueOK()
	o, _ := e.Lookup("o").DocumentOK()
	db, coll := splitNS(ns)
	exists := func(id bson.RawValue) bool {
		c := view.Coll(db, coll, false)
		return c != nil && c.Get(id) != nil
	}
	switch op {
	case "i":
		id := o.Lookup("_id")
		if id.Type == 0 {
			return nil, cerr(2, "applyOps: an insert entry needs a document with an _id")
		}
		if exists(id) {
			return &opSpec{op: "u", ns: ns, o: idFirst(o), o2: idFilter(id), stmt: -1}, nil
		}
		return &opSpec{op: "i", ns: ns, o: idFirst(o), stmt: -1}, nil
	case "u":
		o2, _ := e.Lookup("o2").DocumentOK()
		id := o2.Lookup("_id")
		if id.Type == 0 {
			return nil, cerr(2, "applyOps: an update entry needs o2 with an _id")
		}
		if first, err := o.IndexErr(0); err == nil && strings.HasPrefix(first.Key(), "$") {
			return nil, cerr(2, "applyOps: update entries with operators (%s) are not modelled by mongod-sim, which logs whole documents", first.Key())
		}
		doc := withID(o, id)
		if exists(id) {
			return &opSpec{op: "u", ns: ns, o: doc, o2: idFilter(id), stmt: -1}, nil
		}
		if !upsert {
			return nil, cerr(47, "applyOps: no document matches the update of %s", ns)
		}
		return &opSpec{op: "i", ns: ns, o: doc, stmt: -1}, nil
	case "d":
		id := o.Lookup("_id")
		if id.Type == 0 || !exists(id) {
			return nil, nil
		}
		return &opSpec{op: "d", ns: ns, o: idFilter(id), stmt: -1}, nil
	}
	return nil, nil
}

// withID is a replacement document with _id first, taken from the
// entry's o2 when the document lacks it.
func withID(doc bson.Raw, id bson.RawValue) bson.Raw {
	if doc.Lookup("_id").Type != 0 {
		return idFirst(doc)
	}
	d := bson.D{{Key: "_id", Value: id}}
	elems, _ := doc.Elements()
	for _, e := range elems {
		d = append(d, bson.E{Key: e.Key(), Value: e.Value()})
	}
	return mustRaw(d)
}

// authzApplyOps is mongod's check for applyOps: each entry needs the
// action its write takes on its namespace (an insert or an update may
// upsert or replace, so both need insert and update).
func authzApplyOps(c *conn, req *Request) *CmdError {
	arr, _ := req.Body.Lookup("applyOps").ArrayOK()
	vals, _ := arr.Values()
	for _, v := range vals {
		e, _ := v.DocumentOK()
		op, _ := e.Lookup("op").StringValueOK()
		ns, _ := e.Lookup("ns").StringValueOK()
		db, coll := splitNS(ns)
		res := Resource{DB: db, Collection: coll}
		var acts []string
		switch op {
		case "i", "u":
			acts = []string{"insert", "update"}
		case "d":
			acts = []string{"remove"}
		case "n":
			acts = []string{"appendOplogNote"}
			res = clusterRes()
		default:
			acts = []string{"applyOps"}
			res = clusterRes()
		}
		for _, a := range acts {
			if !c.can(res, a) {
				return unauthorized(req)
			}
		}
	}
	return nil
}
