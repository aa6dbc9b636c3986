package sim

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

type txnState int

const (
	txnActive txnState = iota
	txnCommitted
	txnAborted
)

// transaction is a multi-document transaction on the primary. Its reads
// see snap: the data at its first statement plus its own writes; its
// writes are buffered in ops and logged at commit as one applyOps entry.
type transaction struct {
	ref     *txnRef
	term    int64
	started time.Time
	state   txnState
	snap    *Data
	readTS  bson.Timestamp
	ops     []opSpec
	touched map[string]bool // documents written (namespace and _id)
}

// txnTable is the primary's transaction state per logical session.
type txnTable struct {
	bySession map[string]*transaction // the session's latest transaction
	highest   map[string]int64        // the highest txnNumber seen
	open      map[*transaction]bool   // transactions in progress
	ended     chan struct{}           // closed when a transaction ends
}

// inTransaction: statements of a transaction carry autocommit:false.
func inTransaction(req *Request) bool {
	_, err := req.Body.LookupErr("autocommit")
	return err == nil
}

// txnCommands may run inside a transaction (mongod 7.0's list, less DDL).
var txnCommands = map[string]bool{"find": true, "getMore": true, "killCursors": true, "insert": true, "update": true,
	"delete": true, "findAndModify": true, "findandmodify": true, "aggregate": true, "distinct": true,
	"commitTransaction": true, "abortTransaction": true}

func txnNumberOf(req *Request) (int64, bool) { return req.Body.Lookup("txnNumber").AsInt64OK() }

// sessionName prints a session as mongod does: its id, then the hash of
// the (unauthenticated) user.
func sessionName(lsid bson.Raw) string {
	_, id, _ := lsid.Lookup("id").BinaryOK()
	h := sha256.Sum256(nil)
	u := fmt.Sprintf("%x", id)
	if len(u) == 32 {
		u = u[:8] + "-" + u[8:12] + "-" + u[12:16] + "-" + u[16:20] + "-" + u[20:]
	}
	return u + " - " + base64.StdEncoding.EncodeToString(h[:])
}

func transient(e *CmdError) *CmdError {
	e.Labels = append(e.Labels, "TransientTransactionError")
	return e
}

func noSuchTransaction(req *Request) *CmdError {
	num, _ := txnNumberOf(req)
	return transient(cerr(251, "Transaction with { txnNumber: %d } has been aborted.", num))
}

// highestTxnLocked is the session's newest txnNumber known here.
func (n *Node) highestTxnLocked(key string) (int64, bool) {
	h, ok := n.txns.highest[key]
	if r := n.data.session(key); r != nil && (!ok || r.txnNumber > h) {
		h, ok = r.txnNumber, true
	}
	return h, ok
}

// beginStatement checks a request before its command runs: a malformed
// writeConcern; its txnNumber against its session (225 for stale
// numbers); for transactions the statement rules and the start of a new
// transaction.
func (c *conn) beginStatement(req *Request, name string) *CmdError {
	n := c.n
	if e := checkWriteConcern(req); e != nil {
		return e
	}
	num, ok := txnNumberOf(req)
	if !ok {
		if inTransaction(req) {
			return cerr(50768, "txnNumber must be provided for multi-document transaction")
		}
		return nil
	}
	if n.cfg.ReplSet == "" {
		return cerr(20, "Transaction numbers are only allowed on a replica set member or mongos")
	}
	lsid, ok := req.Body.Lookup("lsid").DocumentOK()
	if !ok {
		return cerr(50768, "Transaction number is only allowed in a session")
	}
	key := sessionKey(lsid)
	var rc readConcern
	start, _ := req.Body.Lookup("startTransaction").BooleanOK()
	if inTransaction(req) {
		if auto, _ := req.Body.Lookup("autocommit").BooleanOK(); auto {
			return cerr(72, "autocommit must be false when provided")
		}
		if !txnCommands[name] {
			return cerr(263, "Cannot run '%s' in a multi-document transaction.", name)
		}
		if _, err := req.Body.LookupErr("writeConcern"); err == nil && name != "commitTransaction" && name != "abortTransaction" {
			return cerr(72, "Cannot set write concern after starting a transaction.")
		}
		_, hasRC := req.Body.LookupErr("readConcern")
		if hasRC == nil && !start {
			return cerr(72, "Only the first command in a transaction may specify a readConcern")
		}
		if start {
			var e *CmdError
			if rc, e = n.parseReadConcern(req); e != nil {
				return e
			}
			if rc.level != "local" && rc.level != "majority" && rc.level != "snapshot" {
				return cerr(72, "The readConcern level must be either 'local' (default), 'majority' or 'snapshot' in order to run in a transaction")
			}
			if e := n.awaitReadConcern(req, rc); e != nil {
				return e
			}
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.txns.bySession == nil {
		n.txns.bySession, n.txns.highest, n.txns.open = map[string]*transaction{}, map[string]int64{}, map[*transaction]bool{}
	}
	if h, known := n.highestTxnLocked(key); known && num < h {
		if inTransaction(req) {
			return cerr(225, "Cannot start transaction %d on session %s because a newer transaction %d has already started.", num, sessionName(lsid), h)
		}
		return cerr(225, "Retryable write with txnNumber %d is prohibited on session %s because a newer retryable write with txnNumber %d has already started on this session.", num, sessionName(lsid), h)
	}
	n.txns.highest[key] = num
	if !inTransaction(req) || name == "commitTransaction" || name == "abortTransaction" {
		return nil
	}
	t := n.txns.bySession[key]
	if start {
		if n.state != StatePrimary || !n.writable {
			return cerr(10107, "read preference in a transaction must be primary")
		}
		// the same number again restarts only an aborted transaction
		state := ""
		if r := n.data.session(key); r != nil && r.txnNumber == num && r.committed {
			state = "Committed"
		}
		if t != nil && t.ref.number == num && t.state == txnActive {
			state = "InProgress"
		} else if t != nil && t.ref.number == num && t.state == txnCommitted {
			state = "Committed"
		}
		if state != "" {
			return cerr(50911, "Cannot start a transaction at given transaction number %d a transaction with the same number is in state TxnState::%s", num, state)
		}
		t = &transaction{ref: &txnRef{lsid: lsid, number: num}, term: n.term, started: time.Now(), touched: map[string]bool{}}
		switch {
		case rc.level == "local":
			t.snap, t.readTS = n.data.Clone(), n.lastTS
		case !rc.at.IsZero():
			view, at, e := n.readViewLocked(req, rc)
			if e != nil {
				return e
			}
			t.snap, t.readTS = view.Clone(), at
		default:
			t.snap, t.readTS = n.committed.Clone(), n.commit.TS
		}
		if old := n.txns.bySession[key]; old != nil && old.state == txnActive {
			n.endTxnLocked(old, txnAborted) // a new transaction aborts the session's previous one
		}
		n.txns.bySession[key] = t
		n.txns.open[t] = true
		return nil
	}
	if t == nil || t.ref.number != num {
		active := int64(-1)
		if t != nil {
			active = t.ref.number
		}
		return transient(cerr(251, "Given transaction number %d does not match any in-progress transactions. The active transaction number is %d", num, active))
	}
	switch t.state {
	case txnAborted:
		return noSuchTransaction(req)
	case txnCommitted:
		return cerr(256, "Transaction with { txnNumber: %d } has been committed.", num)
	}
	if n.stillPrimaryLocked(t) != nil {
		n.endTxnLocked(t, txnAborted)
		return noSuchTransaction(req)
	}
	return nil
}

// stillPrimaryLocked: a stepdown (or a new term) aborts transactions.
func (n *Node) stillPrimaryLocked(t *transaction) *CmdError {
	if n.cfg.ReplSet != "" && (n.term != t.term || n.state != StatePrimary || !n.writable) {
		return cerr(10107, "not primary")
	}
	return nil
}

// txnOfLocked returns the request's active transaction, or nil.
func (n *Node) txnOfLocked(req *Request) *transaction {
	if !inTransaction(req) || n.txns.bySession == nil {
		return nil
	}
	lsid, _ := req.Body.Lookup("lsid").DocumentOK()
	num, _ := txnNumberOf(req)
	t := n.txns.bySession[sessionKey(lsid)]
	if t == nil || t.ref.number != num || t.state != txnActive {
		return nil
	}
	return t
}

// txnWriteLocked buffers a transaction's writes and applies them to its
// snapshot; a conflict aborts the transaction.
func (n *Node) txnWriteLocked(t *transaction, ops []opSpec) error {
	if e := n.stillPrimaryLocked(t); e != nil {
		n.endTxnLocked(t, txnAborted)
		return transient(e)
	}
	keys := map[string]bool{}
	for _, op := range ops {
		keys[docKey(op)] = true
	}
	if e := n.conflictLocked(t, keys); e != nil {
		n.endTxnLocked(t, txnAborted)
		return e
	}
	for _, op := range ops {
		t.snap.Apply(OplogEntry{Op: op.op, NS: op.ns, O: op.o, O2: op.o2, StmtID: -1})
		op.txn, op.stmt, op.image = nil, -1, ""
		t.ops = append(t.ops, op)
		t.touched[docKey(op)] = true
	}
	return nil
}

func (c *conn) cmdCommitTransaction(req *Request) (bson.D, error) {
	n := c.n
	num, _ := txnNumberOf(req)
	lsid, _ := req.Body.Lookup("lsid").DocumentOK()
	if !inTransaction(req) {
		return nil, cerr(50768, "commitTransaction must be run within a transaction")
	}
	key := sessionKey(lsid)
	err := func() *CmdError {
		n.mu.Lock()
		defer n.mu.Unlock()
		t := n.txns.bySession[key]
		if t == nil || t.ref.number != num {
			if r := n.data.session(key); r != nil && r.txnNumber == num && r.committed {
				return nil // committed before a failover: the retry learns the outcome
			}
			return transient(cerr(251, "Given transaction number %d does not match any in-progress transactions.", num))
		}
		switch t.state {
		case txnCommitted:
			return nil
		case txnAborted:
			return noSuchTransaction(req)
		}
		if n.stillPrimaryLocked(t) != nil {
			n.endTxnLocked(t, txnAborted)
			return noSuchTransaction(req)
		}
		if e := n.conflictLocked(t, t.touched); e != nil {
			n.endTxnLocked(t, txnAborted)
			return e
		}
		if len(t.ops) > 0 {
			arr := bson.A{}
			for _, op := range t.ops {
				d := bson.D{{Key: "op", Value: op.op}, {Key: "ns", Value: op.ns}, {Key: "o", Value: op.o}}
				if op.o2 != nil {
					d = append(d, bson.E{Key: "o2", Value: op.o2})
				}
				arr = append(arr, d)
			}
			entry := opSpec{op: "c", ns: "admin.$cmd", o: mustRaw(bson.D{{Key: "applyOps", Value: arr}}), txn: t.ref, stmt: -1}
			if _, err := n.writeOplogLocked([]opSpec{entry}, false); err != nil {
				n.endTxnLocked(t, txnAborted)
				return cerr(10107, "not primary")
			}
		}
		n.endTxnLocked(t, txnCommitted)
		return nil
	}()
	if err != nil {
		return nil, err
	}
	out := bson.D{}
	if wce := n.awaitWriteConcern(req); wce != nil {
		labels := bson.A{"UnknownTransactionCommitResult"}
		if retryableCodes[wce[0].Value.(int32)] {
			labels = append(labels, "RetryableWriteError")
		}
		out = append(out, bson.E{Key: "writeConcernError", Value: wce}, bson.E{Key: "errorLabels", Value: labels})
	}
	return out, nil
}

func (c *conn) cmdAbortTransaction(req *Request) (bson.D, error) {
	n := c.n
	num, _ := txnNumberOf(req)
	lsid, _ := req.Body.Lookup("lsid").DocumentOK()
	if !inTransaction(req) {
		return nil, cerr(50768, "abortTransaction must be run within a transaction")
	}
	key := sessionKey(lsid)
	n.mu.Lock()
	t := n.txns.bySession[key]
	var e *CmdError
	switch {
	case t != nil && t.ref.number == num && t.state == txnActive:
		n.endTxnLocked(t, txnAborted)
	case t != nil && t.ref.number == num && t.state == txnCommitted:
		e = cerr(256, "Transaction with { txnNumber: %d } has been committed.", num)
	default:
		if r := n.data.session(key); r != nil && r.txnNumber == num && r.committed {
			e = cerr(256, "Transaction with { txnNumber: %d } has been committed.", num)
		} else {
			e = transient(cerr(251, "Given transaction number %d does not match any in-progress transactions.", num))
		}
	}
	n.mu.Unlock()
	if e != nil {
		return nil, e
	}
	return bson.D{}, nil
}

// txnErrorLabels adds TransientTransactionError where mongod does: to a
// transaction statement failing on a state change (not primary, stepped
// down), so the driver retries the whole transaction.
func txnErrorLabels(req *Request, name string, e *CmdError) {
	if !inTransaction(req) || name == "commitTransaction" || name == "abortTransaction" {
		return
	}
	for _, l := range e.Labels {
		if l == "TransientTransactionError" {
			return
		}
	}
	if notPrimaryCodes[e.Code] || e.Code == 189 || e.Code == 91 || e.Code == 11600 || e.Code == 11602 {
		e.Labels = append(e.Labels, "TransientTransactionError")
	}
}

// cmdEndSessions aborts the open transactions of the sessions ended, as
// mongod does, so their documents are free at once.
func (c *conn) cmdEndSessions(req *Request) (bson.D, error) {
	n := c.n
	arr, _ := req.Body.Lookup("endSessions").ArrayOK()
	vals, _ := arr.Values()
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, v := range vals {
		lsid, ok := v.DocumentOK()
		if !ok {
			continue
		}
		if t := n.txns.bySession[sessionKey(lsid)]; t != nil && t.state == txnActive {
			n.endTxnLocked(t, txnAborted)
		}
	}
	return bson.D{}, nil
}
