package sim

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// Store is what survives a restart under --dbpath: the replica-set config,
// term and vote, and the oplog (documents are rebuilt from the oplog).
// Every update is one fsync'd bbolt transaction.
type Store struct {
	db   *bolt.DB
	lock *os.File
}

var (
	bucketMeta  = []byte("meta")
	bucketOplog = []byte("oplog")
)

// DBPathError is a dbpath that cannot be used; mongod exits with code 100.
type DBPathError struct{ Msg string }

func (e *DBPathError) Error() string { return e.Msg }

// OpenStore locks dbpath/mongod.lock (refusing a dbpath another live
// process holds, as mongod does) and opens the store inside it.
func OpenStore(dir string) (*Store, error) {
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return nil, &DBPathError{fmt.Sprintf("Data directory %s not found. Create the missing directory or specify another path using (1) the --dbpath command line option, or (2) by adding the 'storage.dbPath' option in the configuration file.", dir)}
	}
	lockPath := filepath.Join(dir, "mongod.lock")
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, &DBPathError{fmt.Sprintf("Unable to create/open the lock file: %s (%s). Ensure the user executing mongod is the owner of the lock file and has the appropriate permissions. Also make sure that another mongod instance is not already running on the %s directory", lockPath, errText(err), dir)}
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return nil, &DBPathError{fmt.Sprintf("Unable to lock the lock file: %s (Resource temporarily unavailable). Another mongod instance is already running on the %s directory", lockPath, dir)}
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	_ = f.Sync()
	db, err := bolt.Open(filepath.Join(dir, "sim.bolt"), 0o600, &bolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		_ = f.Close()
		return nil, &DBPathError{fmt.Sprintf("cannot open store in %s: %v", dir, err)}
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketMeta, bucketOplog} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		_ = db.Close()
		_ = f.Close()
		return nil, err
	}
	return &Store{db: db, lock: f}, nil
}

// Close releases the store and the lock; mongod empties mongod.lock on a
// clean shutdown.
func (s *Store) Close() error {
	err := s.db.Close()
	_ = s.lock.Truncate(0)
	_ = s.lock.Close()
	return err
}

// PutMeta stores one metadata document (config, term, vote).
func (s *Store) PutMeta(key string, doc any) error {
	b, err := bson.Marshal(doc)
	if err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put([]byte(key), b) })
}

// GetMeta returns a stored metadata document, nil if absent.
func (s *Store) GetMeta(key string) (bson.Raw, error) {
	var out bson.Raw
	err := s.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketMeta).Get([]byte(key)); v != nil {
			out = append(bson.Raw(nil), v...)
		}
		return nil
	})
	return out, err
}

func oplogKey(ts bson.Timestamp) []byte {
	k := make([]byte, 8)
	binary.BigEndian.PutUint32(k, ts.T)
	binary.BigEndian.PutUint32(k[4:], ts.I)
	return k
}

// AppendOplog durably appends entries (already encoded) in order.
func (s *Store) AppendOplog(entries []OplogEntry) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketOplog)
		for _, e := range entries {
			if err := b.Put(oplogKey(e.TS), e.Raw); err != nil {
				return err
			}
		}
		return nil
	})
}

// TruncateOplogAfter deletes every entry after ts (rollback).
func (s *Store) TruncateOplogAfter(ts bson.Timestamp) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketOplog).Cursor()
		start := oplogKey(ts)
		var del [][]byte
		for k, _ := c.Seek(start); k != nil; k, _ = c.Next() {
			if string(k) == string(start) {
				continue
			}
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

// LoadOplog returns the whole oplog in order.
func (s *Store) LoadOplog() ([]OplogEntry, error) {
	var out []OplogEntry
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketOplog).ForEach(func(_, v []byte) error {
			e, err := DecodeOplogEntry(append(bson.Raw(nil), v...))
			if err != nil {
				return err
			}
			out = append(out, e)
			return nil
		})
	})
	return out, err
}
