package sim

import (
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// writeConcern is a request's resolved write concern.
type writeConcern struct {
	w          any // int64 or string
	wtimeout   time.Duration
	doc        bson.D // as given (or the default), for errInfo
	provenance string // clientSupplied, customDefault or implicitDefault
}

// unacknowledged is w:0: the client waits for nothing.
func (wc writeConcern) unacknowledged() bool { return wc.w == int64(0) }

// parseWriteConcern resolves the request's writeConcern. Without a w, the
// cluster-wide default set by setDefaultRWConcern applies, or else
// mongod's implicit default (w:"majority"; w:1 in a PSA-like set); the
// client's wtimeout still counts.
func (n *Node) parseWriteConcern(req *Request) writeConcern {
	client, given := req.Body.Lookup("writeConcern").DocumentOK()
	if given {
		if _, err := client.LookupErr("w"); err == nil {
			return decodeWriteConcern(client, "clientSupplied")
		}
	}
	var out writeConcern
	if wc, ok := n.defaultsDoc().Lookup("defaultWriteConcern").DocumentOK(); ok {
		out = decodeWriteConcern(wc, "customDefault")
	} else {
		n.mu.RLock() // the config changes under n.mu exclusively
		w := n.implicitDefaultWLocked()
		n.mu.RUnlock()
		out = writeConcern{w: w, doc: bson.D{{Key: "w", Value: w}, {Key: "wtimeout", Value: int32(0)}}, provenance: "implicitDefault"}
	}
	if v, ok := numberOK(client.Lookup("wtimeout")); ok && given {
		out.wtimeout = time.Duration(v) * time.Millisecond
		doc := bson.D{}
		for _, e := range out.doc {
			if e.Key != "wtimeout" {
				doc = append(doc, e)
			}
		}
		out.doc = append(doc, bson.E{Key: "wtimeout", Value: int32(v)})
	}
	return out
}

// checkWriteConcern refuses a malformed writeConcern before the command
// runs, with mongod's parse errors.
func checkWriteConcern(req *Request) *CmdError {
	v := req.Body.Lookup("writeConcern")
	if v.Type == 0 {
		return nil
	}
	wc, ok := v.DocumentOK()
	if !ok {
		return cerr(14, "BSON field 'writeConcern' is the wrong type '%s', expected type 'object'", typeName(v.Type))
	}
	if w, err := wc.LookupErr("w"); err == nil {
		if x, ok := numberOK(w); ok {
			if x < 0 || x > 50 {
				return cerr(9, "w has to be a non-negative number and not greater than 50; found: %v", x)
			}
		} else if _, ok := w.StringValueOK(); !ok {
			return cerr(9, "w has to be a number or string; found: %s", typeName(w.Type))
		}
	}
	if j, err := wc.LookupErr("j"); err == nil {
		if _, ok := j.BooleanOK(); !ok {
			if _, ok := numberOK(j); !ok {
				return cerr(14, "BSON field 'j' is the wrong type '%s', expected types '[bool, long, int, decimal, double]'", typeName(j.Type))
			}
		}
	}
	return nil
}

func decodeWriteConcern(wc bson.Raw, provenance string) writeConcern {
	out := writeConcern{w: int64(1), provenance: provenance}
	_ = bson.Unmarshal(wc, &out.doc)
	if v, err := wc.LookupErr("w"); err == nil {
		if s, ok := v.StringValueOK(); ok {
			out.w = s
		} else if x, ok := numberOK(v); ok {
			out.w = int64(x)
		}
	}
	if v, ok := numberOK(wc.Lookup("wtimeout")); ok {
		out.wtimeout = time.Duration(v) * time.Millisecond
	}
	return out
}

// implicitDefaultWLocked is mongod's implicit default write concern
// (5.0+): w:1 when the set has arbiters and its voting data-bearing
// members are no more than a voting majority (PSA), else w:"majority".
func (n *Node) implicitDefaultWLocked() any {
	if n.rs == nil {
		return "majority"
	}
	voters, arbiters, dataVoters := 0, 0, 0
	for _, m := range n.rs.Members {
		if m.Votes == 0 {
			continue
		}
		voters++
		if m.ArbiterOnly {
			arbiters++
		} else {
			dataVoters++
		}
	}
	if arbiters > 0 && dataVoters <= voters/2+1 {
		return int64(1)
	}
	return "majority"
}

// awaitWriteConcern waits for the last write of this node to satisfy the
// request's write concern; it returns a writeConcernError document or nil.
func (n *Node) awaitWriteConcern(req *Request) bson.D {
	standalone := n.cfg.ReplSet == ""
	var wc writeConcern
	if !standalone {
		if wc = n.parseWriteConcern(req); wc.unacknowledged() {
			return nil
		}
	}
	// Every acknowledged write is on our disk first (the journal's group
	// commit), whatever w and j say.
	n.mu.RLock()
	n.logMu.Lock()
	seq := n.appendSeq
	target := n.lastAppendedLocked()
	n.logMu.Unlock()
	n.mu.RUnlock()
	if err := n.waitDurable(seq); err != nil {
		return bson.D{{Key: "code", Value: int32(11600)}, {Key: "codeName", Value: codeName(11600)}, {Key: "errmsg", Value: "interrupted at shutdown"}}
	}
	if standalone {
		return nil
	}
	n.mu.Lock()
	term := n.term
	dataBearing := 0
	for _, m := range n.rs.Members {
		if !m.ArbiterOnly {
			dataBearing++
		}
	}
	n.mu.Unlock()
	var cond func() bool
	switch x := wc.w.(type) {
	case string:
		if x != "majority" {
			return bson.D{{Key: "code", Value: int32(79)}, {Key: "codeName", Value: codeName(79)}, {Key: "errmsg", Value: fmt.Sprintf("No write concern mode named '%s' found in replica set configuration", x)}}
		}
		cond = func() bool { return !n.commit.Less(target) || n.term != term || n.state != StatePrimary }
	case int64:
		if x <= 1 {
			return nil
		}
		if int(x) > dataBearing {
			return bson.D{{Key: "code", Value: int32(100)}, {Key: "codeName", Value: codeName(100)}, {Key: "errmsg", Value: "Not enough data-bearing nodes"}}
		}
		cond = func() bool {
			return n.membersAppliedLocked(target, false) >= int(x) || n.term != term || n.state != StatePrimary
		}
	}
	deadline := time.Now().Add(365 * 24 * time.Hour)
	if wc.wtimeout > 0 {
		deadline = time.Now().Add(wc.wtimeout)
	}
	ok := n.waitFor(deadline, cond)
	n.mu.Lock()
	stepped := n.term != term || n.state != StatePrimary
	n.mu.Unlock()
	if stepped {
		return bson.D{{Key: "code", Value: int32(189)}, {Key: "codeName", Value: codeName(189)}, {Key: "errmsg", Value: "Primary stepped down while waiting for replication"}}
	}
	if !ok {
		wcd := append(append(bson.D{}, wc.doc...), bson.E{Key: "provenance", Value: wc.provenance})
		return bson.D{{Key: "code", Value: int32(64)}, {Key: "codeName", Value: codeName(64)}, {Key: "errmsg", Value: "waiting for replication timed out"},
			{Key: "errInfo", Value: bson.D{{Key: "wtimeout", Value: true}, {Key: "writeConcern", Value: wcd}}}}
	}
	return nil
}

// finishWrite waits for the write concern and adds its error to the reply.
// Statements of a transaction do not wait: their writes are not yet made.
func (c *conn) finishWrite(req *Request, d bson.D) bson.D {
	if inTransaction(req) {
		return d
	}
	if wce := c.n.awaitWriteConcern(req); wce != nil {
		d = append(d, bson.E{Key: "writeConcernError", Value: wce})
		if _, err := req.Body.LookupErr("txnNumber"); err == nil && retryableCodes[wce[0].Value.(int32)] {
			d = append(d, bson.E{Key: "errorLabels", Value: bson.A{"RetryableWriteError"}})
		}
	}
	return d
}

// defaultsID is the config.settings document holding the cluster-wide
// read and write concern defaults, replicated and persisted as mongod does.
const defaultsID = "ReadWriteConcernDefaults"

// defaultsDoc returns the defaults set by setDefaultRWConcern, or nil.
func (n *Node) defaultsDoc() bson.Raw {
	// config.* is written under n.mu exclusively only (collock.go), so
	// every write's concern and every read's is parsed beside the writes
	// that hold n.mu shared
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.data.Coll("config", "settings", false).Get(defaultsIDValue)
}

var defaultsIDValue = mustRaw(bson.D{{Key: "_id", Value: defaultsID}}).Lookup("_id")

func (c *conn) cmdGetDefaultRWConcern(*Request) (bson.D, error) {
	d := c.n.defaultsDoc()
	wc, rc := bson.D{{Key: "w", Value: "majority"}, {Key: "wtimeout", Value: int32(0)}}, bson.D{{Key: "level", Value: "local"}}
	c.n.mu.Lock()
	if w := c.n.implicitDefaultWLocked(); w != "majority" {
		wc[0].Value = int32(1)
	}
	c.n.mu.Unlock()
	wcSrc, rcSrc := "implicit", "implicit"
	var out bson.D
	if v, ok := d.Lookup("defaultWriteConcern").DocumentOK(); ok {
		wc, wcSrc = nil, "global"
		_ = bson.Unmarshal(v, &wc)
	}
	if v, ok := d.Lookup("defaultReadConcern").DocumentOK(); ok {
		rc, rcSrc = nil, "global"
		_ = bson.Unmarshal(v, &rc)
	}
	out = append(out, bson.E{Key: "defaultReadConcern", Value: rc}, bson.E{Key: "defaultWriteConcern", Value: wc})
	if d != nil {
		out = append(out, bson.E{Key: "updateOpTime", Value: d.Lookup("updateOpTime")}, bson.E{Key: "updateWallClockTime", Value: d.Lookup("updateWallClockTime")})
	}
	return append(out, bson.E{Key: "defaultWriteConcernSource", Value: wcSrc}, bson.E{Key: "defaultReadConcernSource", Value: rcSrc},
		bson.E{Key: "localUpdateWallClockTime", Value: bson.NewDateTimeFromTime(time.Now())}), nil
}

// cmdSetDefaultRWConcern stores the defaults in config.settings through
// the oplog, so every member applies them and they survive restarts.
func (c *conn) cmdSetDefaultRWConcern(req *Request) (bson.D, error) {
	n := c.n
	if req.DB() != "admin" {
		return nil, cerr(13, "setDefaultRWConcern may only be run against the admin database.")
	}
	wc, hasWC := req.Body.Lookup("defaultWriteConcern").DocumentOK()
	rc, hasRC := req.Body.Lookup("defaultReadConcern").DocumentOK()
	if !hasWC && !hasRC {
		return nil, cerr(2, "At least one of the \"defaultReadConcern\" or \"defaultWriteConcern\" fields must be present")
	}
	if hasWC {
		if w := decodeWriteConcern(wc, ""); w.unacknowledged() {
			return nil, cerr(2, "Default write concern must have 'w' field >= 1")
		}
	}
	if hasRC {
		lvl, _ := rc.Lookup("level").StringValueOK()
		switch lvl {
		case "local", "available", "majority":
		case "snapshot", "linearizable":
			return nil, cerr(2, "level: '%s' is not allowed in the default read concern", lvl)
		case "":
		default:
			return nil, cerr(9, "%s", readConcernLevelMsg)
		}
	}
	n.mu.Lock()
	prev := n.data.Coll("config", "settings", false).Get(defaultsIDValue)
	doc := bson.D{{Key: "_id", Value: defaultsID}}
	for _, f := range []string{"defaultReadConcern", "defaultWriteConcern"} {
		if v := req.Body.Lookup(f); v.Type == bson.TypeEmbeddedDocument {
			doc = append(doc, bson.E{Key: f, Value: v})
		} else if v := prev.Lookup(f); v.Type == bson.TypeEmbeddedDocument {
			doc = append(doc, bson.E{Key: f, Value: v})
		}
	}
	now := time.Now()
	doc = append(doc, bson.E{Key: "updateOpTime", Value: bson.Timestamp{T: uint32(now.Unix()), I: 1}},
		bson.E{Key: "updateWallClockTime", Value: bson.NewDateTimeFromTime(now)})
	op := opSpec{op: "i", ns: "config.settings", o: mustRaw(doc), stmt: -1}
	if prev != nil {
		op.op, op.o2 = "u", mustRaw(bson.D{{Key: "_id", Value: defaultsID}})
	}
	_, err := n.writeOplogLocked([]opSpec{op}, false)
	n.mu.Unlock()
	if err != nil {
		return nil, cerr(10107, "not primary")
	}
	if wce := n.awaitWriteConcern(req); wce != nil {
		return bson.D{{Key: "writeConcernError", Value: wce}}, nil
	}
	return c.cmdGetDefaultRWConcern(req)
}
