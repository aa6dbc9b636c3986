package sim

import (
	"fmt"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// sessionKey identifies a logical session by its lsid's id.
func sessionKey(lsid bson.Raw) string {
	_, id, _ := lsid.Lookup("id").BinaryOK()
	return fmt.Sprintf("%x", id)
}

// sessionRecord is what the oplog says about one session's latest
// txnNumber: the statements of a retryable write that were applied (with
// their outcome, so a retry is answered as the original was), or that its
// transaction committed.
type sessionRecord struct {
	txnNumber int64
	committed bool // the transaction txnNumber committed
	stmts     map[int32]stmtRecord
}

// stmtRecord is one applied statement of a retryable write.
type stmtRecord struct {
	op    string        // i, u or d
	id    bson.RawValue // _id of the document written
	image bson.Raw      // findAndModify's pre- or post-image
}

// recordSession notes an entry's statement or committed transaction;
// pre and post are the document before and after the entry.
func (d *Data) recordSession(e OplogEntry, pre, post bson.Raw) {
	if e.Session == "" {
		return
	}
	d.sessMu.Lock()
	defer d.sessMu.Unlock()
	r := d.sessions[e.Session]
	if r == nil || r.txnNumber < e.TxnNumber {
		r = &sessionRecord{txnNumber: e.TxnNumber, stmts: map[int32]stmtRecord{}}
		d.sessions[e.Session] = r
	}
	if r.txnNumber != e.TxnNumber {
		return
	}
	if e.Op == "c" {
		r.committed = true
		return
	}
	if e.StmtID < 0 {
		return
	}
	s := stmtRecord{op: e.Op, id: e.O.Lookup("_id")}
	if e.Op == "u" {
		s.id = e.O2.Lookup("_id")
	}
	switch {
	case e.Op == "i":
		s.image = post
	case e.RetryImage == "preImage":
		s.image = pre
	case e.RetryImage == "postImage":
		s.image = post
	}
	r.stmts[e.StmtID] = s
}

// session returns the record of a session, or nil.
func (d *Data) session(key string) *sessionRecord {
	d.sessMu.Lock()
	defer d.sessMu.Unlock()
	return d.sessions[key]
}

// stmt returns statement id's outcome in r, read under sessMu (a record
// changes while writes to other collections run).
func (d *Data) stmt(r *sessionRecord, id int32) (stmtRecord, bool) {
	d.sessMu.Lock()
	defer d.sessMu.Unlock()
	s, ok := r.stmts[id]
	return s, ok
}

// doc is the record as a checkpoint keeps it (Dump), under session key k.
func (r *sessionRecord) doc(k string) bson.D {
	stmts := bson.A{}
	ids := make([]int32, 0, len(r.stmts))
	for id := range r.stmts {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		s := r.stmts[id]
		d := bson.D{{Key: "stmt", Value: id}, {Key: "op", Value: s.op}, {Key: "id", Value: s.id}}
		if s.image != nil {
			d = append(d, bson.E{Key: "image", Value: s.image})
		}
		stmts = append(stmts, d)
	}
	return bson.D{{Key: "key", Value: k}, {Key: "txnNumber", Value: r.txnNumber}, {Key: "committed", Value: r.committed}, {Key: "stmts", Value: stmts}}
}

// restoreSession puts back a record that doc wrote.
func (d *Data) restoreSession(raw bson.Raw) {
	k, _ := raw.Lookup("key").StringValueOK()
	num, _ := raw.Lookup("txnNumber").AsInt64OK()
	committed, _ := raw.Lookup("committed").BooleanOK()
	r := &sessionRecord{txnNumber: num, committed: committed, stmts: map[int32]stmtRecord{}}
	if arr, ok := raw.Lookup("stmts").ArrayOK(); ok {
		vals, _ := arr.Values()
		for _, v := range vals {
			sd, ok := v.DocumentOK()
			if !ok {
				continue
			}
			id, _ := sd.Lookup("stmt").Int32OK()
			s := stmtRecord{id: sd.Lookup("id")}
			s.op, _ = sd.Lookup("op").StringValueOK()
			s.image, _ = sd.Lookup("image").DocumentOK()
			r.stmts[id] = s
		}
	}
	d.sessions[k] = r
}
