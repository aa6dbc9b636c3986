package sim

import (
	"fmt"
	"sort"
	"time"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// opSpec is one write to log and apply.
type opSpec struct {
	op, ns string
	o, o2  bson.Raw
	txn    *txnRef // retryable write or transaction this op belongs to, if any
	stmt   int32   // statement id within a retryable write; -1 for none
	image  string  // needsRetryImage: "preImage" or "postImage" for findAndModify
}

// txnRef names a retryable write: the session (lsid) and its txnNumber.
type txnRef struct {
	lsid   bson.Raw
	number int64
}

// retryableWrite returns the request's retryable-write identity, or nil.
func retryableWrite(req *Request) *txnRef {
	num, ok := req.Body.Lookup("txnNumber").AsInt64OK()
	if !ok {
		return nil
	}
	lsid, ok := req.Body.Lookup("lsid").DocumentOK()
	if !ok {
		return nil
	}
	if _, err := req.Body.LookupErr("autocommit"); err == nil {
		return nil // a statement of a multi-document transaction
	}
	return &txnRef{lsid: lsid, number: num}
}

func mustRaw(d any) bson.Raw {
	b, err := bson.Marshal(d)
	if err != nil {
		panic(err)
	}
	return b
}

// waitFor blocks until cond holds (checked under the lock) or the deadline.
func (n *Node) waitFor(deadline time.Time, cond func() bool) bool {
	for {
		n.mu.Lock()
		ok := cond()
		ch := n.oplogCh
		n.mu.Unlock()
		if ok {
			return true
		}
		d := time.Until(deadline)
		if d <= 0 {
			return false
		}
		t := time.NewTimer(d)
		select {
		case <-ch:
		case <-t.C:
		case <-n.quit:
			t.Stop()
			return false
		}
		t.Stop()
	}
}

// oplogIndexAfter finds the position after ot; found is false if ot is
// not in our history (divergence).
func (n *Node) oplogIndexAfterLocked(ot OpTime) (int, bool) {
	if ot.IsZero() {
		return 0, true
	}
	i := sort.Search(len(n.oplog), func(i int) bool {
		e := n.oplog[i].TS
		return e.T > ot.TS.T || e.T == ot.TS.T && e.I >= ot.TS.I
	})
	if i < len(n.oplog) && n.oplog[i].OpTime() == ot {
		return i + 1, true
	}
	return 0, false
}

// cmdOplogFetch serves a syncing secondary: entries after its last
// applied optime, waiting up to maxWaitMS; it also records the caller's
// progress, which moves the commit point.
func (c *conn) cmdOplogFetch(req *Request) (bson.D, error) {
	n := c.n
	c.internal.Store(true)
	b := req.Body
	after := parseOpTime(b.Lookup("after"))
	applied := parseOpTime(b.Lookup("applied"))
	from, _ := b.Lookup("from").StringValueOK()
	wait, _ := b.Lookup("maxWaitMS").AsInt64OK()
	term, _ := b.Lookup("term").AsInt64OK()
	deadline := time.Now().Add(time.Duration(wait) * time.Millisecond)
	n.mu.Lock()
	if term > n.term {
		// As mongod's oplog getMore and replSetUpdatePosition do: a fetcher
		// in a newer term deposes us before its progress is counted.
		n.updateTermLocked(term, "oplog fetch with higher term from "+from)
	}
	if p := n.peers[from]; p != nil {
		if p.applied.Less(applied) {
			p.applied = applied
		}
		p.lastOK = time.Now()
		n.recomputeCommitLocked()
		n.truncateOplogLocked()
		n.notifyProgressLocked()
	}
	startCommit := n.commit
	n.mu.Unlock()
	for {
		n.mu.Lock()
		idx, found := n.oplogIndexAfterLocked(after)
		// Our oldest entry is after the caller's newest (or the caller is
		// empty and our history was truncated): it cannot sync from us.
		if len(n.oplog) > 0 && (after.IsZero() && !n.cap.base.IsZero() || !found && tsAfter(n.oplog[0].TS, after.TS)) {
			d := bson.D{{Key: "tooStale", Value: true}, {Key: "earliest", Value: n.oplog[0].OpTime().Doc()}, {Key: "term", Value: n.term}}
			n.mu.Unlock()
			return d, nil
		}
		if !found {
			d := bson.D{{Key: "diverged", Value: true}, {Key: "term", Value: n.term}, {Key: "lastApplied", Value: n.applied.Doc()}}
			n.mu.Unlock()
			return d, nil
		}
		if idx < len(n.oplog) || n.commit != startCommit || time.Now().After(deadline) {
			arr := bson.A{}
			size := 0
			for i := idx; i < len(n.oplog) && len(arr) < 1000 && size < 8<<20; i++ {
				arr = append(arr, n.oplog[i].Raw)
				size += len(n.oplog[i].Raw)
			}
			d := bson.D{{Key: "entries", Value: arr}, {Key: "commit", Value: n.commit.Doc()}, {Key: "term", Value: n.term},
				{Key: "isPrimary", Value: n.state == StatePrimary}, {Key: "more", Value: idx+len(arr) < len(n.oplog)}}
			n.mu.Unlock()
			return d, nil
		}
		ch := n.oplogCh
		n.mu.Unlock()
		t := time.NewTimer(time.Until(deadline))
		select {
		case <-ch:
		case <-t.C:
		case <-n.quit:
		}
		t.Stop()
	}
}

// cmdOplogFind returns the newest of the given optimes that is in our oplog.
func (c *conn) cmdOplogFind(req *Request) (bson.D, error) {
	n := c.n
	c.internal.Store(true)
	arr, _ := req.Body.Lookup("optimes").ArrayOK()
	vals, _ := arr.Values()
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, v := range vals {
		ot := parseOpTime(v)
		if _, found := n.oplogIndexAfterLocked(ot); found && !ot.IsZero() {
			return bson.D{{Key: "common", Value: ot.Doc()}}, nil
		}
	}
	return bson.D{{Key: "common", Value: nil}}, nil
}

// fetchLoop is the secondary's oplog fetcher and applier; its sync source
// is the primary.
func (n *Node) fetchLoop() {
	defer n.bg.Done()
	var pc *peerConn
	var pcHost string
	defer func() { pc.close() }()
	for {
		select {
		case <-n.quit:
			return
		default:
		}
		// A former primary's last entries reach the disk before we fetch
		// after them.
		_ = n.syncJournal()
		n.mu.Lock()
		ok := n.rs != nil && n.self >= 0 && n.primary >= 0 && n.primary != n.self &&
			(n.state == StateSecondary || n.state == StateStartup2 || n.state == StateRecovering)
		var src, me string
		var after OpTime
		var term int64
		var wait, callTimeout time.Duration
		ok = ok || n.rs != nil && n.self >= 0 && (n.state == StateSecondary || n.state == StateStartup2 || n.state == StateRecovering)
		if ok {
			src = n.syncSourceLocked()
			ok = src != ""
		}
		if ok {
			me = n.rs.Members[n.self].Host
			after = n.applied
			term = n.term
			wait = min(max(n.hbInterval(), 100*time.Millisecond), 2*time.Second)
			callTimeout = min(n.hbTimeout(), max(n.electionTimeout(), time.Second))
		}
		ch := n.topoCh
		n.mu.Unlock()
		if !ok {
			select {
			case <-ch:
			case <-time.After(100 * time.Millisecond):
			case <-n.quit:
				return
			}
			continue
		}
		if pc == nil || pcHost != src {
			pc.close()
			var err error
			pc, err = n.dialPeer(src, 5*time.Second)
			if err != nil {
				pc = nil
				time.Sleep(100 * time.Millisecond)
				continue
			}
			pcHost = src
		}
		n.mu.Lock()
		isync := n.needsInitialSyncLocked()
		n.mu.Unlock()
		if isync {
			if !n.initialSync(pc, src) {
				pc.close()
				pc = nil
			}
			continue
		}
		// Drop the call if the sync source changes meanwhile (a new primary).
		callDone := make(chan struct{})
		go func(conn *peerConn, topo <-chan struct{}) {
			for {
				select {
				case <-callDone:
					return
				case <-n.quit:
					conn.close()
					return
				case <-topo:
				}
				n.mu.Lock()
				changed := n.rs == nil || n.self < 0 || n.syncSourceLocked() != src
				topo = n.topoCh
				n.mu.Unlock()
				if changed {
					conn.close()
					return
				}
			}
		}(pc, ch)
		r, err := pc.run(bson.D{{Key: "_simOplogFetch", Value: int32(1)}, {Key: "after", Value: after.Doc()},
			{Key: "applied", Value: after.Doc()}, {Key: "from", Value: me}, {Key: "term", Value: term}, {Key: "maxWaitMS", Value: wait.Milliseconds()},
			{Key: "$db", Value: "admin"}}, time.Now().Add(wait+callTimeout))
		close(callDone)
		if err != nil {
			pc.close()
			pc = nil
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if stale, _ := r.Lookup("tooStale").BooleanOK(); stale {
			n.fetchedTooStale(src, after, parseOpTime(r.Lookup("earliest")))
			continue
		}
		if div, _ := r.Lookup("diverged").BooleanOK(); div {
			n.mu.Lock()
			ahead := after.Less(parseOpTime(r.Lookup("lastApplied")))
			if !ahead && n.syncFrom == src {
				n.syncFrom = "" // a requested source that is behind us is given up
			}
			n.mu.Unlock()
			if !ahead {
				// As mongod: a source whose oplog is not ahead of ours is no sync
				// source (a new primary still catching up); never roll back to it.
				time.Sleep(100 * time.Millisecond)
				continue
			}
			n.rollback(pc)
			continue
		}
		n.applyBatch(r)
	}
}

// batchEntries decodes a fetch reply's entries; ok is false when one is malformed.
func batchEntries(r bson.Raw) (entries []OplogEntry, ok bool) {
	arr, _ := r.Lookup("entries").ArrayOK()
	vals, _ := arr.Values()
	for _, v := range vals {
		d, isDoc := v.DocumentOK()
		if !isDoc {
			continue
		}
		e, err := DecodeOplogEntry(append(bson.Raw(nil), d...))
		if err != nil {
			return nil, false
		}
		entries = append(entries, e)
	}
	return entries, true
}

// appendAppliedLocked applies the entries newer than what we have, in
// order, queues them for the journal and returns them (nil when none is
// new); the caller waits for them to be durable after releasing the lock.
func (n *Node) appendAppliedLocked(entries []OplogEntry) []OplogEntry {
	last := n.lastAppendedLocked()
	var fresh []OplogEntry
	for _, e := range entries {
		if last.Less(e.OpTime()) {
			fresh = append(fresh, e)
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	for _, e := range fresh {
		n.data.Apply(e)
		n.metrics.applied(e)
		n.noteAppliedLocked(e)
		if tsLess(n.lastTS, e.TS) {
			n.lastTS = e.TS
		}
	}
	n.appendLocked(fresh)
	return fresh
}

// applyBatch applies a fetched batch; the batch is durable, and counts as
// applied, before the source's commit point and the state move with it.
func (n *Node) applyBatch(r bson.Raw) {
	entries, ok := batchEntries(r)
	if !ok {
		return
	}
	term, _ := r.Lookup("term").AsInt64OK()
	commit := parseOpTime(r.Lookup("commit"))
	more, _ := r.Lookup("more").BooleanOK()
	syncing := func() bool {
		return n.state == StateSecondary || n.state == StateStartup2 || n.state == StateRecovering
	}
	n.mu.Lock()
	if !syncing() {
		n.mu.Unlock()
		return
	}
	if term > n.term {
		n.updateTermLocked(term, "sync source has a higher term")
	}
	// A batch from the primary postpones our election, as a heartbeat
	// from it does (mongod's oplog fetcher does the same).
	if fromPrimary, _ := r.Lookup("isPrimary").BooleanOK(); fromPrimary && term == n.term && n.state == StateSecondary {
		n.resetElectionTimerLocked()
	}
	fresh := n.appendAppliedLocked(entries)
	seq := n.appendSeq
	n.mu.Unlock()
	if n.waitDurable(seq) != nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if !syncing() {
		return // elected meanwhile: the batch is ours, the rest is the source's
	}
	n.advanceCommitLocked(commit)
	n.truncateOplogLocked()
	n.caughtUpAgainLocked()
	n.initialSyncAppliedLocked(len(fresh), n.state == StateStartup2 && !more)
	if (n.state == StateStartup2 || n.state == StateRecovering && n.maintTasks == 0) && !more {
		n.state = StateSecondary
		n.bumpTopologyLocked()
		n.logI("REPL", 21358, "Replica set state transition", func(e *zerolog.Event) { e.Str("newState", "SECONDARY") })
	}
	n.notifyProgressLocked()
}

// rollback discards our entries after the common point with the sync
// source (they never reached a majority) and rebuilds the data.
func (n *Node) rollback(pc *peerConn) {
	n.mu.Lock()
	n.state = StateRollback
	n.bumpTopologyLocked()
	n.mu.Unlock()
	// Entries of ours still on their way to disk get there first: the
	// truncation below must not be followed by their flush. No new entry
	// is appended in ROLLBACK.
	if n.syncJournal() != nil {
		return
	}
	n.mu.Lock()
	arr := bson.A{}
	for i := len(n.oplog) - 1; i >= 0 && len(arr) < 10000; i-- {
		arr = append(arr, n.oplog[i].OpTime().Doc())
	}
	n.mu.Unlock()
	n.closeClientConns()
	n.logI("ROLLBACK", 21593, "Transition to ROLLBACK", nil)
	r, err := pc.run(bson.D{{Key: "_simOplogFind", Value: int32(1)}, {Key: "optimes", Value: arr}, {Key: "$db", Value: "admin"}}, time.Now().Add(30*time.Second))
	n.mu.Lock()
	defer n.mu.Unlock()
	if err != nil {
		n.state = StateRecovering
		n.bumpTopologyLocked()
		return
	}
	common := parseOpTime(r.Lookup("common"))
	keep := 0
	if !common.IsZero() {
		keep, _ = n.oplogIndexAfterLocked(common)
	}
	dropped := len(n.oplog) - keep
	if tsAfter(n.cap.base.TS, common.TS) {
		// The checkpoint cannot be undone (mongod fasserts here); resync.
		n.logS("E", "ROLLBACK", 21008, "Common point is before the stable checkpoint; starting initial sync", nil)
		if err := n.store.ResetForInitialSync(OpTime{}, nil, nil); err == nil {
			n.emptyLocked()
			n.isync = nil
			n.state = StateStartup2
			n.bumpTopologyLocked()
			return
		}
	}
	// A zero common point (no shared history) truncates everything.
	if err := n.store.TruncateOplogAfter(common.TS); err != nil {
		n.logS("E", "ROLLBACK", 21003, "cannot truncate the oplog", func(e *zerolog.Event) { e.Str("err", err.Error()) })
		n.state = StateRecovering
		n.bumpTopologyLocked()
		return
	}
	n.oplog = n.oplog[:keep]
	c := n.commit
	if common.Less(c) {
		c = common
	}
	if err := n.rebuildLocked(keep); err != nil {
		n.logS("E", "ROLLBACK", 21006, "cannot reload the checkpoint", func(e *zerolog.Event) { e.Str("err", err.Error()) })
		n.state = StateRecovering
		n.bumpTopologyLocked()
		return
	}
	n.applied = common
	n.advanceCommitLocked(c)
	n.rbid++
	n.state = StateRecovering
	n.bumpTopologyLocked()
	n.logI("ROLLBACK", 21612, "Rollback summary", func(e *zerolog.Event) {
		e.Int("entriesRolledBack", dropped).Str("commonPoint", fmt.Sprintf("{ts: %d.%d, t: %d}", common.TS.T, common.TS.I, common.T))
	})
}

// syncSourceLocked picks the primary, or else the healthy member furthest
// ahead of us (chaining, as mongod does during initial sync without a
// primary), skipping sources denylisted as too stale for us.
func (n *Node) syncSourceLocked() string {
	now := time.Now()
	if n.syncFrom != "" {
		if p := n.peers[n.syncFrom]; p != nil && p.health == 1 && !n.stale.denied(p.host, now) {
			return n.syncFrom
		}
	}
	if n.primary >= 0 && n.primary != n.self && n.primary < len(n.rs.Members) {
		if p := n.peers[n.rs.Members[n.primary].Host]; p != nil && p.health != 0 && !n.stale.denied(p.host, now) {
			return p.host
		}
	}
	best := ""
	bestOT := n.applied
	for _, m := range n.rs.Members {
		p := n.peers[m.Host]
		if p == nil || p.health != 1 || (p.state != StateSecondary && p.state != StatePrimary) || m.ArbiterOnly || n.stale.denied(p.host, now) {
			continue
		}
		if bestOT.Less(p.applied) {
			best, bestOT = p.host, p.applied
		}
	}
	return best
}
