package sim

import (
	"fmt"
	"strings"
	"time"
)

// Per-collection locking, as mongod's intent locks: a write to one user
// collection (insert, update, delete, findAndModify outside a transaction)
// holds n.mu shared, as mongod holds the global lock and the RSTL in
// intent mode, and the collection's own lock (Collection.mu) exclusively;
// a read holds n.mu shared and the collection's lock shared (read.go). So
// writes to different collections apply at once, and a write and a read of
// one collection exclude each other. Everything else holds n.mu exclusively
// as before, which excludes every collection-lock holder: DDL, the first
// write to a missing collection (it creates it), transactions, applyOps,
// $out/$merge, writes to admin, local, config or system.* collections,
// writes while a transaction is open (they may wait for its documents),
// elections, sync, rollback, initial sync, checkpoints and the journal's
// publish.
//
// Lock order: n.mu, then one collection's lock, then logMu (node.go), which
// a shared-hold write takes only to take its timestamps, queue its entries
// for the journal and publish the new cluster time. Its documents are then
// applied under the collection's lock alone, after logMu: the entries are
// only queued (the journal's publish needs n.mu exclusively, so it waits
// for the apply), and reads of the collection wait for its lock. That
// publish is also why a write's acknowledgement, which waits for the flush,
// waits for the writes in progress on other collections, and why, n.mu
// preferring a waiting exclusive holder, a long write to one collection
// holds back new writes and reads of the others once one waits.
//
// What else a shared-hold write touches has its own guard: the collections
// map is only read (created and dropped under n.mu exclusively); the
// session records (Data.sessMu); the metrics (their own lock); unique
// indexes are the collection's. The cursors and the majority-committed
// store are not touched.

// lockColl takes n.mu shared and the collection's lock for a write to
// db.coll, and returns the collection; nil (no lock held) when the write
// must take n.mu exclusively.
func (n *Node) lockColl(req *Request, db, coll string) *Collection {
	if inTransaction(req) || db == "admin" || db == "local" || db == "config" || strings.HasPrefix(coll, "system.") {
		return nil
	}
	n.mu.RLock()
	// The transactions table changes only under n.mu exclusively, so it
	// is stable while we hold it shared; a write beside an open
	// transaction may have to wait for its documents (txnconflict.go),
	// which only the exclusive hold does.
	c := n.data.Coll(db, coll, false)
	if c == nil || len(n.txns.open) > 0 {
		n.mu.RUnlock()
		return nil
	}
	c.mu.Lock()
	return c
}

// beginWrite starts a write command on db.coll under its lock: per
// collection when lockColl allows it, else n.mu exclusively. The caller
// runs unlock when the command's reads and writes are done.
func (n *Node) beginWrite(req *Request, db, coll string) (w *writeCtx, unlock func(), e *CmdError) {
	if c := n.lockColl(req, db, coll); c != nil {
		unlock = func() {
			c.mu.Unlock()
			n.mu.RUnlock()
		}
		if w, e = n.writeCtxLocked(req); e != nil {
			unlock()
			return nil, nil, e
		}
		w.coll, w.ns = c, db+"."+coll
		return w, unlock, nil
	}
	n.mu.Lock()
	if w, e = n.writeCtxLocked(req); e != nil {
		n.mu.Unlock()
		return nil, nil, e
	}
	return w, n.mu.Unlock, nil
}

// writeCollLocked logs and applies writes to the one collection ns whose
// lock the caller holds, with n.mu shared (beginWrite).
func (n *Node) writeCollLocked(ns string, ops []opSpec) error {
	// A stepdown takes n.mu exclusively, so it cannot come in between this
	// check and the write.
	if n.cfg.ReplSet != "" && !n.canAcceptWritesLocked() {
		return errNotWritable
	}
	for _, op := range ops {
		if op.ns != ns || op.op != "i" && op.op != "u" && op.op != "d" {
			return fmt.Errorf("write to %s (%s) under the lock of %s", op.ns, op.op, ns)
		}
	}
	if err := n.data.CheckWrites(ops); err != nil {
		return err
	}
	now := time.Now()
	n.logMu.Lock()
	entries := n.entriesLocked(ops, now)
	n.appendLocked(entries)
	n.publishClusterTimeLocked()
	n.logMu.Unlock()
	if n.applyHook != nil {
		n.applyHook(ns)
	}
	for _, e := range entries {
		n.data.Apply(e)
	}
	return nil
}

// publishClusterTimeLocked publishes lastTS in the replication view, so
// replies' $clusterTime advance without an exclusive release of n.mu. The
// caller holds n.mu shared and logMu: an exclusive holder, the only other
// publisher, cannot run meanwhile, and logMu orders the shared ones.
func (n *Node) publishClusterTimeLocked() {
	old := n.view.Load()
	if old == nil || !tsLess(old.lastTS, n.lastTS) {
		return
	}
	v := *old
	v.lastTS = n.lastTS
	n.view.Store(&v)
}
