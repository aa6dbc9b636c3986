package sim

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// Initial sync, as mongod: an empty member copies its sync source's
// documents (every database but local) as of the source's majority commit
// point, then applies the source's oplog from that point (entries are
// idempotent, so what the clone already holds is applied again harmlessly)
// and becomes SECONDARY once caught up. It works when the source's oplog no
// longer holds the beginning of history. A failed attempt is retried, up
// to 10 attempts.

const maxInitialSyncAttempts = 10

type initialSyncState struct {
	start      time.Time
	failed     int
	attempts   bson.A
	retried    int           // operations retried after the source was unreachable
	unreach    time.Duration // time the source was unreachable
	cloned     bool          // documents installed; applying the oplog until caught up
	begin      OpTime
	appliedOps int
	dbsToClone int
	totalBytes int64 // approximate data size of the source, from its sizes
	dbs        []clonedDB
}

type clonedDB struct {
	name       string
	start, end time.Time
	colls      []clonedColl
}

type clonedColl struct {
	ns                 string
	docsToCopy, docs   int64
	bytesToCopy, bytes int64
	batches            int
	start, end         time.Time
}

func decodeEntries(r bson.Raw) ([]OplogEntry, error) {
	arr, _ := r.Lookup("entries").ArrayOK()
	vals, err := arr.Values()
	if err != nil {
		return nil, err
	}
	out := make([]OplogEntry, 0, len(vals))
	for _, v := range vals {
		d, ok := v.DocumentOK()
		if !ok {
			return nil, errors.New("entry is not a document")
		}
		e, err := DecodeOplogEntry(append(bson.Raw(nil), d...))
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// unreachableError is a network failure talking to the sync source: as in
// mongod (initialSyncTransientErrorRetryPeriodSeconds, 24 h), it is retried
// and does not count as a failed attempt.
type unreachableError struct{ err error }

func (e *unreachableError) Error() string { return e.err.Error() }

// cloneCall runs one cloning command; an error reply is returned as is,
// anything else (no answer, a broken connection) as unreachable.
func cloneCall(pc *peerConn, cmd bson.D) (bson.Raw, error) {
	r, err := pc.run(append(cmd, bson.E{Key: "$db", Value: "admin"}), time.Now().Add(60*time.Second))
	var ce *CmdError
	if err != nil && !errors.As(err, &ce) {
		return nil, &unreachableError{err}
	}
	return r, err
}

// initialSync runs one attempt from src; a failure is recorded and retried
// by the fetch loop, and after the last attempt the process exits, as
// mongod's fassert does. It reports whether the connection is still usable.
func (n *Node) initialSync(pc *peerConn, src string) bool {
	n.mu.Lock()
	if n.isync == nil {
		n.isync = &initialSyncState{start: time.Now()}
	}
	st := n.isync
	attempt := st.failed + 1
	n.mu.Unlock()
	n.logI("INITSYNC", 21164, "Starting initial sync attempt", func(e *zerolog.Event) {
		e.Int("initialSyncAttempt", attempt).Int("initialSyncMaxAttempts", maxInitialSyncAttempts)
	})
	t0 := time.Now()
	rbid, err := n.cloneFrom(pc, st)
	if err == nil {
		n.logI("INITSYNC", 21183, "Finished cloning data. Beginning oplog replay", func(e *zerolog.Event) {
			e.Str("databaseClonerFinishStatus", "OK")
		})
		return true
	}
	var ue *unreachableError
	if errors.As(err, &ue) {
		n.mu.Lock()
		st.retried++
		st.unreach += time.Since(t0)
		st.dbs, st.dbsToClone = nil, 0
		n.mu.Unlock()
		n.logI("INITSYNC", 21009, "Sync source unreachable during initial sync; retrying", func(e *zerolog.Event) {
			e.Str("syncSource", src).Str("error", err.Error())
		})
		select {
		case <-time.After(time.Second):
		case <-n.quit:
		}
		return false
	}
	n.initialSyncFailed(src, rbid, t0, err)
	return true
}

// initialSyncFailed records a failed attempt and forgets what it cloned.
func (n *Node) initialSyncFailed(src string, rbid int32, t0 time.Time, err error) {
	n.mu.Lock()
	st := n.isync
	st.failed++
	st.cloned, st.dbs, st.dbsToClone, st.appliedOps = false, nil, 0, 0
	st.attempts = append(st.attempts, bson.D{{Key: "durationMillis", Value: int32(time.Since(t0).Milliseconds())},
		{Key: "status", Value: "InitialSyncFailure: " + err.Error()}, {Key: "syncSource", Value: src},
		{Key: "rollBackId", Value: rbid}, {Key: "operationsRetried", Value: int32(st.retried)},
		{Key: "totalTimeUnreachableMillis", Value: int32(st.unreach.Milliseconds())}})
	st.retried, st.unreach = 0, 0
	n.emptyLocked()
	failed := st.failed
	n.mu.Unlock()
	n.logS("E", "INITSYNC", 21200, "Initial sync attempt failed", func(e *zerolog.Event) {
		e.Str("error", err.Error()).Int("attemptsLeft", maxInitialSyncAttempts-failed)
	})
	if failed >= maxInitialSyncAttempts {
		n.logS("F", "INITSYNC", 21202, "The maximum number of retries have been exhausted for initial sync", nil)
		_ = n.store.Close()
		os.Exit(14)
	}
	select {
	case <-time.After(time.Second):
	case <-n.quit:
	}
}

// cloneFrom copies the source's databases: the entries that define each
// one, each collection's documents in _id order right after its create;
// it installs them as our checkpoint, and the oplog then starts at the
// source's entry at begin.
func (n *Node) cloneFrom(pc *peerConn, st *initialSyncState) (int32, error) {
	r, err := cloneCall(pc, bson.D{{Key: "_simClone", Value: int32(1)}})
	if err != nil {
		return 0, err
	}
	rbid, _ := r.Lookup("rbid").Int32OK()
	begin := parseOpTime(r.Lookup("begin"))
	var first *OplogEntry
	if raw, ok := r.Lookup("entry").DocumentOK(); ok {
		e, err := DecodeOplogEntry(append(bson.Raw(nil), raw...))
		if err != nil {
			return rbid, err
		}
		first = &e
	}
	all, err := decodeEntries(r)
	if err != nil {
		return rbid, err
	}
	arr, _ := r.Lookup("databases").ArrayOK()
	dbs, _ := arr.Values()
	n.mu.Lock()
	st.begin, st.dbsToClone, st.totalBytes = begin, len(dbs), 0
	for _, v := range dbs {
		sizes, _ := v.Document().Lookup("sizes").DocumentOK()
		elems, _ := sizes.Elements()
		for _, e := range elems {
			b, _ := e.Value().Document().Lookup("size").AsInt64OK()
			st.totalBytes += b
		}
	}
	n.mu.Unlock()
	for _, v := range dbs {
		d, _ := v.DocumentOK()
		name, _ := d.Lookup("name").StringValueOK()
		defs, err := decodeEntries(d)
		if err != nil {
			return rbid, err
		}
		cdb := clonedDB{name: name, start: time.Now()}
		for _, def := range defs {
			all = append(all, def)
			coll, ok := def.O.Lookup("create").StringValueOK()
			if def.Op != "c" || !ok {
				continue
			}
			cc := clonedColl{ns: name + "." + coll, start: time.Now()}
			cc.docsToCopy, _ = d.Lookup("sizes", coll, "count").AsInt64OK()
			cc.bytesToCopy, _ = d.Lookup("sizes", coll, "size").AsInt64OK()
			var after []byte
			for {
				r, err := cloneCall(pc, bson.D{{Key: "_simClone", Value: int32(1)}, {Key: "ns", Value: cc.ns}, {Key: "after", Value: bson.Binary{Data: after}}})
				if err != nil {
					return rbid, fmt.Errorf("cloning %s: %w", cc.ns, err)
				}
				docs, _ := r.Lookup("docs").ArrayOK()
				vals, _ := docs.Values()
				for _, dv := range vals {
					doc, ok := dv.DocumentOK()
					if !ok {
						return rbid, fmt.Errorf("cloning %s: a document is not one", cc.ns)
					}
					all = append(all, NewOplogEntry(OpTime{}, "i", cc.ns, append(bson.Raw(nil), doc...), nil, time.Time{}))
					cc.bytes += int64(len(doc))
				}
				cc.docs += int64(len(vals))
				cc.batches++
				_, after, _ = r.Lookup("last").BinaryOK()
				if more, _ := r.Lookup("more").BooleanOK(); !more {
					break
				}
			}
			cc.end = time.Now()
			cdb.colls = append(cdb.colls, cc)
		}
		cdb.end = time.Now()
		n.mu.Lock()
		st.dbs = append(st.dbs, cdb)
		n.mu.Unlock()
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.state != StateStartup2 {
		return rbid, errors.New("member state changed during initial sync")
	}
	if err := n.store.ResetForInitialSync(begin, all, first); err != nil {
		return rbid, err
	}
	n.oplog = nil
	if first != nil {
		n.oplog = []OplogEntry{*first}
	}
	n.data, n.committed = replayData(all), replayData(all)
	n.commitIdx, n.commit, n.applied, n.cap.base = len(n.oplog), begin, begin, begin
	if tsAfter(begin.TS, n.lastTS) {
		n.lastTS = begin.TS
	}
	n.recountOplogLocked()
	st.cloned = true
	n.notifyProgressLocked()
	return rbid, nil
}

// emptyLocked forgets every document and oplog entry in memory (the store
// is reset when the next clone is installed).
func (n *Node) emptyLocked() {
	n.oplog, n.applied, n.commit, n.commitIdx, n.cap.base = nil, OpTime{}, OpTime{}, 0, OpTime{}
	n.data, n.committed = NewData(), NewData()
	n.recountOplogLocked()
}

// needsInitialSyncLocked: an empty member in STARTUP2 that has not cloned yet.
func (n *Node) needsInitialSyncLocked() bool {
	return n.state == StateStartup2 && n.applied.IsZero() && (n.isync == nil || !n.isync.cloned)
}

// initialSyncAppliedLocked counts oplog entries applied after the clone,
// and ends initial sync when the member leaves STARTUP2.
func (n *Node) initialSyncAppliedLocked(applied int, done bool) {
	st := n.isync
	if st == nil || !st.cloned {
		return
	}
	st.appliedOps += applied
	if done {
		d := time.Since(st.start)
		n.isync = nil
		if err := n.store.ClearInitialSyncFlag(); err != nil {
			n.logS("E", "INITSYNC", 21005, "cannot persist the end of initial sync", func(e *zerolog.Event) { e.Str("err", err.Error()) })
		}
		n.logI("INITSYNC", 21163, "Initial sync done", func(e *zerolog.Event) { e.Int64("durationSeconds", int64(d.Seconds())) })
	}
}

// initialSyncStatusLocked is replSetGetStatus.initialSyncStatus, reported
// while the member is in initial sync (STARTUP2), as mongod 4.2.1+ does.
func (n *Node) initialSyncStatusLocked() bson.D {
	st := n.isync
	if st == nil || n.state != StateStartup2 {
		return nil
	}
	ms := func(a, b time.Time) int32 { return int32(b.Sub(a).Milliseconds()) }
	date := bson.NewDateTimeFromTime
	cloned, copied := 0, int64(0)
	dbs := bson.D{{Key: "databasesToClone", Value: int32(st.dbsToClone)}}
	var perDB bson.D
	for _, db := range st.dbs {
		cloned++
		d := bson.D{{Key: "collections", Value: int32(len(db.colls))}, {Key: "clonedCollections", Value: int32(len(db.colls))},
			{Key: "start", Value: date(db.start)}, {Key: "end", Value: date(db.end)}, {Key: "elapsedMillis", Value: ms(db.start, db.end)}}
		for _, c := range db.colls {
			copied += c.bytes
			d = append(d, bson.E{Key: c.ns, Value: bson.D{{Key: "documentsToCopy", Value: c.docsToCopy}, {Key: "documentsCopied", Value: c.docs},
				{Key: "indexes", Value: int32(1)}, {Key: "fetchedBatches", Value: int32(c.batches)}, {Key: "bytesToCopy", Value: c.bytesToCopy},
				{Key: "approxBytesCopied", Value: c.bytes}, {Key: "start", Value: date(c.start)},
				{Key: "end", Value: date(c.end)}, {Key: "elapsedMillis", Value: ms(c.start, c.end)}, {Key: "receivedBatches", Value: int32(c.batches)}}})
		}
		perDB = append(perDB, bson.E{Key: db.name, Value: d})
	}
	dbs = append(dbs, bson.E{Key: "databasesCloned", Value: int32(cloned)})
	dbs = append(dbs, perDB...)
	attempts := st.attempts
	if attempts == nil {
		attempts = bson.A{}
	}
	d := bson.D{{Key: "failedInitialSyncAttempts", Value: int32(st.failed)}, {Key: "maxFailedInitialSyncAttempts", Value: int32(maxInitialSyncAttempts)},
		{Key: "approxTotalDataSize", Value: st.totalBytes}, {Key: "approxTotalBytesCopied", Value: copied},
		{Key: "initialSyncStart", Value: date(st.start)}, {Key: "totalInitialSyncElapsedMillis", Value: ms(st.start, time.Now())},
		{Key: "initialSyncAttempts", Value: attempts}, {Key: "appliedOps", Value: int32(st.appliedOps)}}
	if st.cloned {
		d = append(d, bson.E{Key: "initialSyncOplogStart", Value: st.begin.TS})
	}
	return append(d, bson.E{Key: "totalTimeUnreachableMillis", Value: st.unreach.Milliseconds()}, bson.E{Key: "databases", Value: dbs})
}
