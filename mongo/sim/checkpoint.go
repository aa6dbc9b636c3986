package sim

import (
	"encoding/binary"
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// A checkpoint is the document store as of one optime (at or below the
// majority commit point), persisted so that the oplog before it can be
// truncated. It is written as the oplog entries that rebuild that state
// (Data.Dump), so it stays a pure function of the applied oplog: a new kind
// of state only needs Dump to cover it.

var bucketCheckpoint = []byte("checkpoint")

// Dump returns entries that, applied in order to NewData(), rebuild d:
// a create per collection, an insert per document (in insertion order), and
// a no-op per recorded retryable-write entry. New kinds of state (index
// definitions...) belong in dumpDB, which initial sync's cloning uses too.
func (d *Data) Dump() []OplogEntry {
	var out []OplogEntry
	for _, db := range d.DBNames() {
		out = append(out, d.dumpDB(db, true)...)
	}
	return append(out, d.dumpSessions()...)
}

// dumpDB is Dump's part for one database; without docs it is only the
// definitions (initial sync fetches documents in batches).
func (d *Data) dumpDB(db string, docs bool) []OplogEntry {
	var out []OplogEntry
	for _, coll := range d.CollNames(db) {
		out = append(out, d.CatalogEntries(db, coll)...)
		if !docs {
			continue
		}
		for _, doc := range d.dbs[db][coll].Docs() {
			out = append(out, NewOplogEntry(OpTime{}, "i", db+"."+coll, doc, nil, time.Time{}))
		}
	}
	return out
}

// dumpSessions is Dump's retryable-write and transaction records: one
// no-op per session carrying its record, which Apply restores.
func (d *Data) dumpSessions() []OplogEntry {
	keys := make([]string, 0, len(d.sessions))
	for k := range d.sessions {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]OplogEntry, 0, len(keys))
	for _, k := range keys {
		o := bson.D{{Key: "msg", Value: "session record"}, {Key: "sessionRecord", Value: d.sessions[k].doc(k)}}
		out = append(out, NewOplogEntry(OpTime{}, "n", "", mustRaw(o), nil, time.Time{}))
	}
	return out
}

// replayData builds a document store from entries (a checkpoint).
func replayData(entries []OplogEntry) *Data {
	d := NewData()
	for _, e := range entries {
		d.Apply(e)
	}
	return d
}

// SaveCheckpoint replaces the checkpoint with entries (the state as of
// base) and deletes the oplog entries before cut, in one transaction, so a
// crash leaves either the old checkpoint and oplog or the new ones.
func (s *Store) SaveCheckpoint(base OpTime, entries []OplogEntry, cut bson.Timestamp) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		if err := writeCheckpoint(tx, base, entries); err != nil {
			return err
		}
		c := tx.Bucket(bucketOplog).Cursor()
		end := oplogKey(cut)
		var del [][]byte
		for k, _ := c.First(); k != nil && string(k) < string(end); k, _ = c.Next() {
			del = append(del, append([]byte(nil), k...))
		}
		for _, k := range del {
			if err := tx.Bucket(bucketOplog).Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
}

// ResetForInitialSync replaces everything initial sync rebuilds: the
// checkpoint becomes the cloned state as of base, and the oplog holds only
// first (the sync source's entry at base), or nothing. It sets the initial
// sync flag, cleared once the member is consistent: a member that stops
// before then starts empty (mongod's initialSyncFlag).
func (s *Store) ResetForInitialSync(base OpTime, entries []OplogEntry, first *OplogEntry) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketMeta).Put([]byte("initialSyncFlag"), mustRaw(bson.D{{Key: "set", Value: true}})); err != nil {
			return err
		}
		if err := tx.DeleteBucket(bucketOplog); err != nil {
			return err
		}
		b, err := tx.CreateBucket(bucketOplog)
		if err != nil {
			return err
		}
		if first != nil {
			if err := b.Put(oplogKey(first.TS), first.Raw); err != nil {
				return err
			}
		}
		return writeCheckpoint(tx, base, entries)
	})
}

// ClearInitialSyncFlag marks the end of initial sync.
func (s *Store) ClearInitialSyncFlag() error {
	return s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Delete([]byte("initialSyncFlag")) })
}

func writeCheckpoint(tx *bolt.Tx, base OpTime, entries []OplogEntry) error {
	if tx.Bucket(bucketCheckpoint) != nil {
		if err := tx.DeleteBucket(bucketCheckpoint); err != nil {
			return err
		}
	}
	b, err := tx.CreateBucket(bucketCheckpoint)
	if err != nil {
		return err
	}
	for i, e := range entries {
		k := make([]byte, 8)
		binary.BigEndian.PutUint64(k, uint64(i))
		if err := b.Put(k, e.Raw); err != nil {
			return err
		}
	}
	meta, err := bson.Marshal(bson.D{{Key: "optime", Value: base.Doc()}})
	if err != nil {
		return err
	}
	return tx.Bucket(bucketMeta).Put([]byte("checkpoint"), meta)
}

// LoadCheckpoint returns the checkpoint's entries and optime (none and a
// null optime when the oplog was never truncated).
func (s *Store) LoadCheckpoint() ([]OplogEntry, OpTime, error) {
	var out []OplogEntry
	var base OpTime
	err := s.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketMeta).Get([]byte("checkpoint")); v != nil {
			base = parseOpTime(bson.Raw(v).Lookup("optime"))
		}
		b := tx.Bucket(bucketCheckpoint)
		if b == nil {
			return nil
		}
		return b.ForEach(func(_, v []byte) error {
			e, err := DecodeOplogEntry(append(bson.Raw(nil), v...))
			if err != nil {
				return err
			}
			out = append(out, e)
			return nil
		})
	})
	return out, base, err
}

// tsAfter reports whether a is a later timestamp than b.
func tsAfter(a, b bson.Timestamp) bool { return a.T > b.T || a.T == b.T && a.I > b.I }

// loadDataLocked loads the checkpoint and the oplog at start-up and replays
// only the entries after the checkpoint.
func (n *Node) loadDataLocked() error {
	if flag, err := n.store.GetMeta("initialSyncFlag"); err != nil {
		return err
	} else if flag != nil {
		n.logS("W", "REPL", 21007, "Initial sync was interrupted; starting it again", nil)
		if err := n.store.ResetForInitialSync(OpTime{}, nil, nil); err != nil {
			return err
		}
	}
	entries, err := n.store.LoadOplog()
	if err != nil {
		return err
	}
	n.oplog = entries
	if len(entries) > 0 {
		last := entries[len(entries)-1]
		n.applied, n.lastTS = last.OpTime(), last.TS
	}
	return n.rebuildLocked(len(entries))
}

// rebuildLocked rebuilds both document stores from the checkpoint and
// n.oplog[:keep] (start-up and rollback); the commit point restarts at the
// checkpoint's optime, which is never above it.
func (n *Node) rebuildLocked(keep int) error {
	ckpt, base, err := n.store.LoadCheckpoint()
	if err != nil {
		return err
	}
	n.cap.base = base
	n.data, n.committed = replayData(ckpt), replayData(ckpt)
	i0 := 0
	for i0 < keep && !tsAfter(n.oplog[i0].TS, base.TS) {
		i0++
	}
	for _, e := range n.oplog[i0:keep] {
		n.data.Apply(e)
	}
	n.commitIdx = i0
	n.commit = base
	n.recountOplogLocked()
	return nil
}
