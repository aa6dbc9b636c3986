package sim

import (
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

const readConcernLevelMsg = "level must be either 'local', 'majority', 'linearizable', 'available', or 'snapshot'"

// readConcern is a read's resolved readConcern.
type readConcern struct {
	level   string // local, available, majority, linearizable, snapshot
	after   bson.Timestamp
	at      bson.Timestamp
	afterOT OpTime
}

func tsLess(a, b bson.Timestamp) bool { return a.T < b.T || a.T == b.T && a.I < b.I }

// parseReadConcern reads the request's readConcern, or the cluster-wide
// default when it names no level (for a transaction, at its start).
func (n *Node) parseReadConcern(req *Request) (readConcern, *CmdError) {
	rc := readConcern{level: "local"}
	doc, ok := req.Body.Lookup("readConcern").DocumentOK()
	start, _ := req.Body.Lookup("startTransaction").BooleanOK()
	if lvl := doc.Lookup("level"); lvl.Type == 0 && (!inTransaction(req) || start) {
		if v, ok := n.defaultsDoc().Lookup("defaultReadConcern", "level").StringValueOK(); ok {
			rc.level = v
		}
	}
	if !ok {
		return rc, nil
	}
	if v := doc.Lookup("level"); v.Type != 0 {
		s, _ := v.StringValueOK()
		switch s {
		case "local", "available", "majority", "linearizable", "snapshot":
			rc.level = s
		default:
			return rc, cerr(9, "%s", readConcernLevelMsg)
		}
	}
	if t, i, ok := doc.Lookup("afterClusterTime").TimestampOK(); ok {
		rc.after = bson.Timestamp{T: t, I: i}
	}
	if v, err := doc.LookupErr("afterOpTime"); err == nil {
		rc.afterOT = parseOpTime(v)
	}
	if t, i, ok := doc.Lookup("atClusterTime").TimestampOK(); ok {
		if rc.level != "snapshot" {
			return rc, cerr(72, "readConcern level must be 'snapshot' when atClusterTime is specified")
		}
		if !rc.after.IsZero() {
			return rc, cerr(72, "Can not specify both atClusterTime and afterClusterTime")
		}
		rc.at = bson.Timestamp{T: t, I: i}
	}
	if rc.level == "linearizable" && !rc.after.IsZero() {
		return rc, cerr(72, "afterClusterTime is not allowed with linearizable read concern")
	}
	return rc, nil
}

// maxTimeDeadline is the command's maxTimeMS deadline, or far away.
func maxTimeDeadline(req *Request) time.Time {
	if ms, ok := numberOK(req.Body.Lookup("maxTimeMS")); ok && ms > 0 {
		return time.Now().Add(time.Duration(ms) * time.Millisecond)
	}
	return time.Now().Add(365 * 24 * time.Hour)
}

// awaitReadConcern checks where the read may run and waits until this
// member has applied (or, for majority and snapshot, majority-committed)
// what afterClusterTime, afterOpTime or atClusterTime name.
func (n *Node) awaitReadConcern(req *Request, rc readConcern) *CmdError {
	if n.cfg.ReplSet == "" {
		if rc.level == "majority" || rc.level == "snapshot" || rc.level == "linearizable" {
			return nil // a standalone commits at once
		}
	}
	if rc.level == "linearizable" {
		n.mu.Lock()
		primary := n.state == StatePrimary
		n.mu.Unlock()
		if !primary {
			return cerr(10107, "cannot satisfy linearizable read concern on non-primary node")
		}
	}
	target := rc.after
	if !rc.at.IsZero() {
		target = rc.at
	}
	if !rc.afterOT.IsZero() && tsLess(target, rc.afterOT.TS) {
		target = rc.afterOT.TS
	}
	if target.IsZero() {
		return nil
	}
	// a time past the cluster time (ours, or one the client gossips) cannot
	// have been handed out by the cluster
	clusterTime := bson.Timestamp{}
	if t, i, ok := req.Body.Lookup("$clusterTime", "clusterTime").TimestampOK(); ok {
		clusterTime = bson.Timestamp{T: t, I: i}
	}
	n.mu.Lock()
	if tsLess(clusterTime, n.lastTS) {
		clusterTime = n.lastTS
	}
	n.mu.Unlock()
	if tsLess(clusterTime, target) {
		field := "afterClusterTime"
		if !rc.at.IsZero() {
			field = "atClusterTime"
		}
		return cerr(72, "readConcern %s value must not be greater than the current clusterTime. Requested clusterTime: { ts: Timestamp(%d, %d) }; current clusterTime: { ts: Timestamp(%d, %d) }",
			field, target.T, target.I, clusterTime.T, clusterTime.I)
	}
	committed := rc.level == "majority" || rc.level == "snapshot"
	// A primary asked for a time past its own (a cluster time gossiped from
	// elsewhere) writes a no-op at that time, as mongod does, not to wait
	// for a write that may never come.
	n.mu.Lock()
	if n.state == StatePrimary && n.writable && tsLess(n.lastTS, target) && target.T <= uint32(time.Now().Unix())+1 {
		n.lastTS = bson.Timestamp{T: target.T, I: max(target.I, 1) - 1}
		_, _ = n.writeOplogLocked([]opSpec{{op: "n", o: mustRaw(bson.D{{Key: "msg", Value: "new cluster time"}}), stmt: -1}}, false)
	}
	n.mu.Unlock()
	ok := n.waitFor(maxTimeDeadline(req), func() bool {
		if committed {
			return !tsLess(n.commit.TS, target)
		}
		return !tsLess(n.applied.TS, target)
	})
	if !ok {
		return cerr(50, "operation exceeded time limit")
	}
	return nil
}

// snapshotHistory is how far back a snapshot read may go, mongod's
// minSnapshotHistoryWindowInSeconds.
func (n *Node) snapshotHistory() time.Duration {
	if v, err := strconv.Atoi(n.cfg.SetParameters["minSnapshotHistoryWindowInSeconds"]); err == nil {
		return time.Duration(v) * time.Second
	}
	return 300 * time.Second
}

// readViewLocked picks the data a read sees and the time it reads at:
// a transaction's snapshot, the majority-committed view (majority,
// snapshot), the view at atClusterTime rebuilt from the oplog, or the
// latest applied data.
func (n *Node) readViewLocked(req *Request, rc readConcern) (*Data, bson.Timestamp, *CmdError) {
	if t := n.txnOfLocked(req); t != nil {
		return t.snap, t.readTS, nil
	}
	if n.cfg.ReplSet == "" {
		return n.data, n.lastTSLocked(), nil
	}
	switch rc.level {
	case "majority":
		return n.committed, n.commit.TS, nil
	case "snapshot":
		if rc.at.IsZero() || rc.at == n.commit.TS {
			return n.committed, n.commit.TS, nil
		}
		// History starts at the checkpoint (the state as of the oldest
		// truncated entry) and the oplog after it.
		oldest := bson.Timestamp{T: n.commit.TS.T - min(n.commit.TS.T, uint32(n.snapshotHistory()/time.Second))}
		if tsLess(oldest, n.cap.base.TS) {
			oldest = n.cap.base.TS
		}
		if tsLess(rc.at, oldest) {
			return nil, rc.at, cerr(239, "Read timestamp Timestamp(%d, %d) is older than the oldest available timestamp.", rc.at.T, rc.at.I)
		}
		ckpt, _, err := n.store.LoadCheckpoint()
		if err != nil {
			return nil, rc.at, cerr(246, "Unable to read from a snapshot due to pending collection catalog changes; please retry the operation. (%v)", err)
		}
		view := replayData(ckpt)
		for _, e := range n.oplog[:n.commitIdx] {
			if tsLess(rc.at, e.TS) {
				break
			}
			if tsAfter(e.TS, n.cap.base.TS) {
				view.Apply(e)
			}
		}
		return view, rc.at, nil
	}
	return n.data, n.lastTSLocked(), nil
}

// lastTSLocked reads lastTS under n.mu, held in either mode: writes to
// collections advance it under n.mu shared plus logMu (collock.go).
func (n *Node) lastTSLocked() bson.Timestamp {
	n.logMu.Lock()
	defer n.logMu.Unlock()
	return n.lastTS
}

// awaitLinearizable makes a linearizable read wait until a no-op written
// after it is majority-committed, so a deposed primary cannot answer.
func (n *Node) awaitLinearizable(req *Request) *CmdError {
	n.mu.Lock()
	term := n.term
	ot, err := n.writeOplogLocked([]opSpec{{op: "n", o: mustRaw(bson.D{{Key: "msg", Value: "linearizable read"}}), stmt: -1}}, false)
	n.mu.Unlock()
	if err != nil {
		return cerr(10107, "cannot satisfy linearizable read concern on non-primary node")
	}
	ok := n.waitFor(maxTimeDeadline(req), func() bool {
		return !n.commit.Less(ot) || n.term != term || n.state != StatePrimary
	})
	if !ok {
		return cerr(50, "operation exceeded time limit")
	}
	n.mu.Lock()
	stepped := n.term != term || n.state != StatePrimary
	n.mu.Unlock()
	if stepped {
		return cerr(189, "Primary stepped down while waiting for replication")
	}
	return nil
}
