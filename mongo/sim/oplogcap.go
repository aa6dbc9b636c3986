package sim

import (
	"math"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// oplogCap bounds the oplog as mongod's capped local.oplog.rs: its size is
// the BSON size of its entries; past maxBytes the oldest entries go, but
// never the majority commit point's entry or anything after it, nor what
// minRetentionHours keeps (the oplog may grow past its size for those).
type oplogCap struct {
	maxBytes          int64
	minRetentionHours float64
	bytes             int64 // BSON size of n.oplog[:sized]
	sized             int
	base              OpTime // optime of the persisted checkpoint
	truncations       int64
	truncatingTime    time.Duration
}

const (
	mb             = 1 << 20
	minOplogSizeMB = 990
	maxOplogSizeMB = 1 << 30 // 1 PB
)

// defaultOplogBytes is mongod's default: 5% of the free disk space of the
// dbpath, at least 990 MB and at most 50 GB.
func defaultOplogBytes(dbpath string) int64 {
	var st syscall.Statfs_t
	free := int64(0)
	if syscall.Statfs(dbpath, &st) == nil {
		free = int64(st.Bavail) * st.Bsize
	}
	return min(max(free/20, minOplogSizeMB*mb), 50<<30)
}

// loadOplogSizeLocked fixes the oplog's maximum: what was stored when the
// oplog was created (or resized) wins over --oplogSize, as in mongod.
func (n *Node) loadOplogSizeLocked() error {
	if raw, err := n.store.GetMeta("oplogSize"); err == nil && raw != nil {
		n.cap.maxBytes, _ = raw.Lookup("bytes").AsInt64OK()
	}
	if n.cap.maxBytes > 0 {
		return nil
	}
	n.cap.maxBytes = int64(n.cfg.OplogSizeMB) * mb
	if n.cap.maxBytes <= 0 {
		n.cap.maxBytes = defaultOplogBytes(n.cfg.DBPath)
	}
	return n.store.PutMeta("oplogSize", bson.D{{Key: "bytes", Value: n.cap.maxBytes}})
}

// recountOplogLocked recomputes the oplog's size after it shrank (rollback).
func (n *Node) recountOplogLocked() {
	n.cap.bytes, n.cap.sized = 0, 0
	n.sizeOplogLocked()
}

func (n *Node) sizeOplogLocked() int64 {
	for ; n.cap.sized < len(n.oplog); n.cap.sized++ {
		n.cap.bytes += int64(len(n.oplog[n.cap.sized].Raw))
	}
	return n.cap.bytes
}

// truncateOplogLocked drops the oldest entries once the oplog is past its
// size, down to 90% of it (mongod truncates whole "stones" too), after
// folding them into a new checkpoint at the commit point.
func (n *Node) truncateOplogLocked() {
	size := n.sizeOplogLocked()
	if size <= n.cap.maxBytes || n.commitIdx < 2 {
		return
	}
	target := n.cap.maxBytes - n.cap.maxBytes/10
	var keepAfter time.Time
	if h := n.cap.minRetentionHours; h > 0 {
		keepAfter = time.Now().Add(-time.Duration(h * float64(time.Hour)))
	}
	k, left := 0, size
	for k < n.commitIdx-1 && left > target {
		if !keepAfter.IsZero() && n.oplog[k].Wall.After(keepAfter) {
			break
		}
		left -= int64(len(n.oplog[k].Raw))
		k++
	}
	// Not worth a checkpoint for a sliver: wait for the commit point.
	if k == 0 || left > target && size-left < n.cap.maxBytes/20 {
		return
	}
	start := time.Now()
	base := n.oplog[n.commitIdx-1].OpTime()
	if err := n.store.SaveCheckpoint(base, n.committed.Dump(), n.oplog[k].TS); err != nil {
		n.logS("E", "STORAGE", 21004, "cannot persist the checkpoint", func(e *zerolog.Event) { e.Str("err", err.Error()) })
		return
	}
	n.oplog = append([]OplogEntry(nil), n.oplog[k:]...)
	n.commitIdx -= k
	n.cap.sized -= k
	n.cap.bytes = left
	n.cap.base = base
	n.cap.truncations++
	n.cap.truncatingTime += time.Since(start)
}

// oplogTruncationStatusLocked is serverStatus.oplogTruncation.
func (n *Node) oplogTruncationStatusLocked() bson.D {
	return bson.D{{Key: "processingMethod", Value: "scanning"}, {Key: "totalTimeProcessingMicros", Value: int64(0)},
		{Key: "totalTimeTruncatingMicros", Value: n.cap.truncatingTime.Microseconds()}, {Key: "truncateCount", Value: n.cap.truncations},
		{Key: "oplogMinRetentionHours", Value: n.cap.minRetentionHours}}
}

// oplogStatsLocked is what collStats reports for local.oplog.rs: entries,
// their BSON size and the configured maximum.
func (n *Node) oplogStatsLocked() (count, size, maxSize int64) {
	return int64(len(n.oplog)), n.sizeOplogLocked(), n.cap.maxBytes
}

// cmdReplSetResizeOplog changes the oplog's maximum size (MB, persisted)
// and minimum retention (hours, until restart), as mongod 6.0+; it runs on
// any member, each member's oplog being its own.
func (c *conn) cmdReplSetResizeOplog(req *Request) (bson.D, error) {
	n := c.n
	if req.DB() != "admin" {
		return nil, cerr(13, "replSetResizeOplog may only be run against the admin database.")
	}
	if n.cfg.ReplSet == "" {
		return nil, cerr(26, "oplog does not exist")
	}
	bad := int32(51024)
	if n.cfg.MajorMinor() >= "7.1" {
		bad = 2
	}
	// mongod's IDL: both fields are optional doubles (an int is refused),
	// size within [990, 1 PB] MB, minRetentionHours >= 0.
	field := func(name string, lo, hi float64) (float64, bool, error) {
		v := req.Body.Lookup(name)
		if v.Type == 0 {
			return 0, false, nil
		}
		f, ok := v.DoubleOK()
		if !ok {
			return 0, false, cerr(14, "BSON field 'replSetResizeOplog.%s' is the wrong type '%s', expected type 'double'", name, typeName(v.Type))
		}
		if !(f >= lo) {
			return 0, false, cerr(bad, "BSON field '%s' value must be >= %v, actual value '%v'", name, lo, f)
		}
		if !(f <= hi) {
			return 0, false, cerr(bad, "BSON field '%s' value must be <= %v, actual value '%v'", name, hi, f)
		}
		return f, true, nil
	}
	size, hasSize, err := field("size", minOplogSizeMB, maxOplogSizeMB)
	if err != nil {
		return nil, err
	}
	ret, hasRet, err := field("minRetentionHours", 0, math.Inf(1))
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	if hasSize {
		bytes := int64(size * mb)
		if err := n.store.PutMeta("oplogSize", bson.D{{Key: "bytes", Value: bytes}}); err != nil {
			n.mu.Unlock()
			return nil, cerr(1, "%s", err.Error())
		}
		n.cap.maxBytes = bytes
	}
	if hasRet {
		n.cap.minRetentionHours = ret
	}
	n.truncateOplogLocked()
	maxBytes, hours := n.cap.maxBytes, n.cap.minRetentionHours
	n.mu.Unlock()
	n.logI("STORAGE", 20497, "replSetResizeOplog success", func(e *zerolog.Event) {
		e.Int64("size", maxBytes).Float64("minRetentionHours", hours)
	})
	return bson.D{}, nil
}
