package sim

import (
	"sort"
	"strconv"
	"time"
)

// docKey names a document across namespaces.
func docKey(op opSpec) string {
	id := op.o.Lookup("_id")
	if op.op == "u" {
		id = op.o2.Lookup("_id")
	}
	return op.ns + "\x00" + idKey(id)
}

func entryKeys(e OplogEntry, visit func(string)) {
	switch e.Op {
	case "i", "u", "d":
		visit(docKey(opSpec{op: e.Op, ns: e.NS, o: e.O, o2: e.O2}))
	case "c":
		arr, _ := e.O.Lookup("applyOps").ArrayOK()
		vals, _ := arr.Values()
		for _, v := range vals {
			op, _ := v.DocumentOK()
			ns, _ := op.Lookup("ns").StringValueOK()
			o, _ := op.Lookup("o").DocumentOK()
			o2, _ := op.Lookup("o2").DocumentOK()
			kind, _ := op.Lookup("op").StringValueOK()
			visit(docKey(opSpec{op: kind, ns: ns, o: o, o2: o2}))
		}
	}
}

// conflictLocked: first writer wins. A document another transaction has
// written, or that was written after this transaction's snapshot, is a
// WriteConflict.
func (n *Node) conflictLocked(t *transaction, keys map[string]bool) *CmdError {
	for k := range keys {
		if n.holderLocked(k, t) != nil {
			return writeConflict()
		}
	}
	if len(n.oplog) > 0 && tsAfter(n.oplog[0].TS, t.readTS) && !t.readTS.IsZero() {
		return writeConflict() // what was written since the snapshot is truncated: assume the worst
	}
	// the entries after the snapshot: durable ones, then those the journal
	// has yet to write (already in the documents, so as much a conflict)
	from := sort.Search(len(n.oplog), func(i int) bool { return tsLess(t.readTS, n.oplog[i].TS) })
	for _, entries := range [][]OplogEntry{n.oplog[from:], n.pending} {
		for _, e := range entries {
			hit := false
			entryKeys(e, func(k string) { hit = hit || keys[k] })
			if hit && tsLess(t.readTS, e.TS) {
				return writeConflict()
			}
		}
	}
	return nil
}

func writeConflict() *CmdError {
	return transient(cerr(112, "Caused by :: Write conflict during plan execution and yielding is disabled. :: Please retry your operation or multi-document transaction."))
}

// txnLifetime is mongod's transactionLifetimeLimitSeconds: an open
// transaction older than this is aborted, freeing its documents.
func (n *Node) txnLifetime() time.Duration {
	if v, err := strconv.Atoi(n.cfg.SetParameters["transactionLifetimeLimitSeconds"]); err == nil && v > 0 {
		return time.Duration(v) * time.Second
	}
	return 60 * time.Second
}

// holderLocked returns the open transaction other than self that wrote
// the document, aborting on the way those a new term or their lifetime
// ended.
func (n *Node) holderLocked(key string, self *transaction) *transaction {
	for o := range n.txns.open {
		if o == self {
			continue
		}
		if o.term != n.term || time.Since(o.started) > n.txnLifetime() {
			n.endTxnLocked(o, txnAborted)
			continue
		}
		if o.touched[key] {
			return o
		}
	}
	return nil
}

// endTxnLocked ends a transaction and wakes writes waiting for its documents.
func (n *Node) endTxnLocked(t *transaction, s txnState) {
	t.state, t.snap = s, nil
	delete(n.txns.open, t)
	if n.txns.ended != nil {
		close(n.txns.ended)
	}
	n.txns.ended = make(chan struct{})
}

// blocked makes a write outside transactions wait, as mongod's does, while
// an open transaction holds one of its documents; it reports whether it
// waited (the caller reads again), or 50 at the command's maxTimeMS.
func (w *writeCtx) blocked(ops []opSpec) (bool, error) {
	n := w.n
	if w.txn != nil || len(n.txns.open) == 0 {
		return false, nil
	}
	busy := false
	for _, op := range ops {
		if n.holderLocked(docKey(op), nil) != nil {
			busy = true
			break
		}
	}
	if !busy {
		return false, nil
	}
	if time.Now().After(w.deadline) {
		return false, cerr(50, "operation exceeded time limit")
	}
	if n.txns.ended == nil {
		n.txns.ended = make(chan struct{})
	}
	ch := n.txns.ended
	n.mu.Unlock()
	t := time.NewTimer(min(time.Second, max(time.Until(w.deadline), 0)))
	select {
	case <-ch:
	case <-t.C:
	case <-n.quit:
	}
	t.Stop()
	n.mu.Lock()
	return true, nil
}
