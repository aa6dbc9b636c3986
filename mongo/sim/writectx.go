package sim

import (
	"errors"
	"time"
)

// writeCtx is one write command's view of the data and where its writes
// go: the oplog, or the buffer of a multi-document transaction. A write
// command holds its collection's lock (with n.mu shared) or n.mu
// exclusively from its first read to its last write (beginWrite), so no
// other write to its collection comes in between (mongod's
// document-level atomicity).
type writeCtx struct {
	n      *Node
	txn    *transaction   // the multi-document transaction, if any
	retry  *txnRef        // the retryable write's identity, if any
	base   int32          // stmtId of the first statement
	record *sessionRecord // what the oplog holds of this retryable write
	// deadline is the command's maxTimeMS, for waits on transactions
	deadline time.Time
	// coll is the collection ns whose lock the write holds, with n.mu
	// shared (collock.go); nil under n.mu exclusively
	coll *Collection
	ns   string
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
	return w.n.data.stmt(w.record, w.base+int32(i))
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
	if w.coll != nil {
		return w.n.writeCollLocked(w.ns, ops)
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
