package sim

import (
	"fmt"

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
func (d *Data) session(key string) *sessionRecord { return d.sessions[key] }
