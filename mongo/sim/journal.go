package sim

import (
	"errors"
	"time"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// The journal: group commit of the oplog.
//
// A write appends its entries under n.mu, or under n.mu shared plus logMu
// for a write to one user collection (collock.go), timestamps assigned
// there, so the oplog order is the commit order, and applies them to the documents at
// once, as mongod makes a write visible before its journal flush; the
// entries wait in n.pending. A flush writes every pending entry in one bbolt
// transaction (one fsync) without n.mu, so hello, heartbeats and other
// writers never wait for the disk, then publishes them under n.mu: only
// then are they in n.oplog, n.applied (our durable optime, which the commit
// point, heartbeats and the sync sources' fetches see) and served to
// fetching members. One flush runs at a time (flushMu); writers arriving
// during it are covered together by the next one. A write is acknowledged
// only once a flush covered it (waitDurable), for every acknowledged write
// concern, so a w:1 or a w:"majority" acknowledgement still means the write
// is on disk on the members it counted.

var errNotWritable = errors.New("not primary")

// errJournal is a flush that failed: the process shuts down (mongod
// fasserts on a journal error), and writes waiting for it are not
// acknowledged.
var errJournal = errors.New("cannot write the journal")

// nextTSLocked returns a timestamp after every one used so far.
func (n *Node) nextTSLocked() bson.Timestamp {
	now := uint32(time.Now().Unix())
	if now > n.lastTS.T {
		n.lastTS = bson.Timestamp{T: now, I: 1}
	} else {
		n.lastTS = bson.Timestamp{T: n.lastTS.T, I: n.lastTS.I + 1}
	}
	return n.lastTS
}

// writeOplog logs and applies writes as primary (or, with internal set,
// while becoming primary), and returns the optime of the last entry once
// it is durable.
func (n *Node) writeOplog(ops []opSpec, internal bool) (OpTime, error) {
	n.mu.Lock()
	ot, err := n.writeOplogLocked(ops, internal)
	seq := n.appendSeq
	n.mu.Unlock()
	if err != nil {
		return ot, err
	}
	return ot, n.waitDurable(seq)
}

// writeOplogLocked logs and applies writes as primary and returns the
// optime of the last entry. The entries are not durable yet: the caller
// acknowledges them after waitDurable (awaitWriteConcern does).
func (n *Node) writeOplogLocked(ops []opSpec, internal bool) (OpTime, error) {
	if n.cfg.ReplSet != "" && (n.state != StatePrimary || !n.canAcceptWritesLocked() && !internal) {
		return OpTime{}, errNotWritable
	}
	if err := n.data.CheckWrites(ops); err != nil {
		return OpTime{}, err
	}
	entries := n.entriesLocked(ops, time.Now())
	for _, e := range entries {
		n.data.Apply(e)
	}
	n.appendLocked(entries)
	return entries[len(entries)-1].OpTime(), nil
}

// entriesLocked gives ops their timestamps, in order, and makes them oplog
// entries. The caller holds n.mu exclusively, or shared plus logMu.
func (n *Node) entriesLocked(ops []opSpec, now time.Time) []OplogEntry {
	entries := make([]OplogEntry, 0, len(ops))
	for _, op := range ops {
		ot := OpTime{TS: n.nextTSLocked(), T: n.term}
		if n.cfg.ReplSet == "" {
			ot.T = 0
		}
		var extra bson.D
		if op.txn != nil {
			extra = bson.D{{Key: "lsid", Value: op.txn.lsid}, {Key: "txnNumber", Value: op.txn.number}}
			if op.stmt >= 0 {
				extra = append(extra, bson.E{Key: "stmtId", Value: op.stmt})
			}
			if op.image != "" {
				extra = append(extra, bson.E{Key: "needsRetryImage", Value: op.image})
			}
		}
		entries = append(entries, NewOplogEntry(ot, op.op, op.ns, op.o, op.o2, now, extra...))
	}
	return entries
}

// appendLocked queues entries already applied to the documents for the
// next flush, and wakes the journal loop so that entries no writer waits
// for (no-ops, w:0 writes) reach the disk too.
func (n *Node) appendLocked(entries []OplogEntry) {
	n.pending = append(n.pending, entries...)
	n.appendSeq += uint64(len(entries))
	select {
	case n.journalKick <- struct{}{}:
	default:
	}
}

// lastAppendedLocked is the optime of our newest entry, durable or not.
func (n *Node) lastAppendedLocked() OpTime {
	if len(n.pending) > 0 {
		return n.pending[len(n.pending)-1].OpTime()
	}
	return n.applied
}

// flush writes every pending entry in one transaction (one fsync) and
// publishes them.
func (n *Node) flush() error {
	n.flushMu.Lock()
	defer n.flushMu.Unlock()
	n.mu.RLock()
	n.logMu.Lock()
	batch, err := n.pending, n.journalErr
	n.logMu.Unlock()
	n.mu.RUnlock()
	if err != nil || len(batch) == 0 {
		return err
	}
	// Only this flush removes entries from n.pending, so the batch stays its
	// prefix while the lock is released. Writers holding n.mu shared append
	// under logMu in timestamp order, so the batch is in timestamp order.
	err = n.store.AppendOplog(batch)
	n.mu.Lock()
	defer n.mu.Unlock()
	if err != nil {
		n.journalErr = errJournal
		if !n.inShutdown {
			n.logS("F", "REPL", 21002, "cannot persist oplog", func(e *zerolog.Event) { e.Str("err", err.Error()) })
			n.requestShutdown()
		}
		n.notifyProgressLocked()
		return n.journalErr
	}
	n.pending = append([]OplogEntry(nil), n.pending[len(batch):]...)
	n.durableSeq += uint64(len(batch))
	n.oplog = append(n.oplog, batch...)
	n.applied = batch[len(batch)-1].OpTime()
	if n.cfg.ReplSet == "" {
		n.advanceCommitLocked(n.applied)
	} else {
		n.recomputeCommitLocked()
	}
	n.truncateOplogLocked()
	n.notifyProgressLocked()
	return nil
}

// waitDurable returns once the first seq entries ever appended are on
// disk, flushing them itself when no flush is under way.
func (n *Node) waitDurable(seq uint64) error {
	for {
		n.mu.RLock()
		n.logMu.Lock()
		done, err := n.durableSeq >= seq, n.journalErr
		n.logMu.Unlock()
		n.mu.RUnlock()
		if done {
			return nil
		}
		if err != nil {
			return err
		}
		if err := n.flush(); err != nil {
			return err
		}
	}
}

// syncJournal waits until every entry appended so far is durable.
func (n *Node) syncJournal() error {
	n.mu.RLock()
	n.logMu.Lock()
	seq := n.appendSeq
	n.logMu.Unlock()
	n.mu.RUnlock()
	return n.waitDurable(seq)
}

// journalLoop flushes entries that no writer waits for.
func (n *Node) journalLoop() {
	defer n.bg.Done()
	for {
		select {
		case <-n.journalKick:
			_ = n.flush()
		case <-n.quit:
			return
		}
	}
}
