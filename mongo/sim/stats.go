package sim

import (
	"syscall"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// pageSize is the unit WiredTiger allocates in: storage sizes are whole pages,
// and an empty collection or index still takes one.
const pageSize = 4096

func pages(n int64) int64 {
	if n <= 0 {
		return pageSize
	}
	return (n + pageSize - 1) / pageSize * pageSize
}

// bsonNumber appends a count or size as mongod's appendNumber does: Int32
// when it is small, Int64 otherwise.
func bsonNumber(n int64) any {
	if n > -(1<<30) && n < 1<<30 {
		return int32(n)
	}
	return n
}

// scaleOf reads a command's scale (default 1); mongod refuses one below 1.
func scaleOf(v bson.RawValue) (int64, *CmdError) {
	if v.Type == 0 {
		return 1, nil
	}
	s, ok := numberOK(v)
	if !ok || s < 1 {
		return 0, cerr(2, "scale has to be > 0")
	}
	return int64(s), nil
}

// indexSizes is each index's estimated size, _id_ first, as collStats lists them.
func indexSizes(cl *Collection) bson.D {
	out := bson.D{}
	for _, ix := range cl.IndexSizes() {
		out = append(out, bson.E{Key: ix.Name, Value: pages(ix.Bytes)})
	}
	if len(out) == 0 {
		out = append(out, bson.E{Key: "_id_", Value: pages(0)})
	}
	return out
}

// collSizes are a collection's measured sizes, unscaled.
type collSizes struct {
	count, size, storage int64
	indexes              bson.D
	capped               bool
	maxSize              int64
}

func (s collSizes) totalIndexSize() int64 {
	var t int64
	for _, e := range s.indexes {
		t += e.Value.(int64)
	}
	return t
}

// measure computes a collection's sizes: size is the sum of its documents'
// BSON sizes, storage that rounded up to pages; local.oplog.rs is capped at
// the configured oplog size.
func (n *Node) measure(db, coll string) collSizes {
	n.mu.Lock()
	defer n.mu.Unlock()
	var s collSizes
	if db == "local" && coll == "oplog.rs" {
		s.count, s.size, s.maxSize = n.oplogStatsLocked()
		s.capped = true
		s.storage = pages(s.size)
		s.indexes = bson.D{}
		return s
	}
	cl := n.data.Coll(db, coll, false)
	if cl != nil {
		for _, d := range cl.Docs() {
			s.count++
			s.size += int64(len(d))
		}
	}
	s.storage = pages(s.size)
	s.indexes = indexSizes(cl)
	return s
}

// fsSizes are the used and total bytes of the file system holding path.
func fsSizes(path string) (used, total int64) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, 0
	}
	total = int64(st.Blocks) * st.Bsize
	return total - int64(st.Bfree)*st.Bsize, total
}

func (c *conn) cmdDBStats(req *Request) (bson.D, error) {
	n := c.n
	db := req.DB()
	scale, e := scaleOf(req.Body.Lookup("scale"))
	if e != nil {
		return nil, e
	}
	n.mu.Lock()
	colls := n.data.CollNames(db)
	n.mu.Unlock()
	var objs, size, storage, indexes, indexSize int64
	for _, coll := range colls {
		s := n.measure(db, coll)
		objs += s.count
		size += s.size
		storage += s.storage
		indexes += int64(len(s.indexes))
		indexSize += s.totalIndexSize()
	}
	avg := 0.0
	if objs > 0 {
		avg = float64(size) / float64(objs)
	}
	used, total := fsSizes(n.cfg.DBPath)
	sc := float64(scale)
	out := bson.D{{Key: "db", Value: db}, {Key: "collections", Value: int64(len(colls))}, {Key: "views", Value: int64(0)},
		{Key: "objects", Value: objs}, {Key: "avgObjSize", Value: avg}, {Key: "dataSize", Value: float64(size) / sc},
		{Key: "storageSize", Value: float64(storage) / sc}, {Key: "indexes", Value: indexes}, {Key: "indexSize", Value: float64(indexSize) / sc},
		{Key: "totalSize", Value: float64(storage+indexSize) / sc}, {Key: "scaleFactor", Value: scale},
		{Key: "fsUsedSize", Value: float64(used) / sc}, {Key: "fsTotalSize", Value: float64(total) / sc}}
	if f, ok := numberOK(req.Body.Lookup("freeStorage")); ok && f != 0 {
		// WiredTiger's reusable space; the simulator's files have none
		out = append(out, bson.E{Key: "freeStorageSize", Value: float64(0)}, bson.E{Key: "indexFreeStorageSize", Value: float64(0)},
			bson.E{Key: "totalFreeStorageSize", Value: float64(0)})
	}
	return out, nil
}

func (c *conn) cmdCollStats(req *Request) (bson.D, error) {
	coll, e := collName(req, "collStats")
	if e != nil {
		return nil, e
	}
	scale, e := scaleOf(req.Body.Lookup("scale"))
	if e != nil {
		return nil, e
	}
	db := req.DB()
	if !c.n.collExists(db, coll) {
		return nil, cerr(26, "Collection [%s.%s] not found.", db, coll)
	}
	return c.n.collStatsDoc(db, coll, scale), nil
}

func (n *Node) collExists(db, coll string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.data.Coll(db, coll, false) != nil || db == "local" && coll == "oplog.rs" && n.cfg.ReplSet != ""
}

// collStatsDoc is collStats' answer (also $collStats' storageStats), sizes
// divided by scale as mongod does; avgObjSize is never scaled.
func (n *Node) collStatsDoc(db, coll string, scale int64) bson.D {
	s := n.measure(db, coll)
	avg := int64(0)
	if s.count > 0 {
		avg = s.size / s.count
	}
	idx := bson.D{}
	for _, e := range s.indexes {
		idx = append(idx, bson.E{Key: e.Key, Value: bsonNumber(e.Value.(int64) / scale)})
	}
	tis := s.totalIndexSize()
	d := bson.D{{Key: "ns", Value: db + "." + coll}, {Key: "size", Value: bsonNumber(s.size / scale)}, {Key: "count", Value: bsonNumber(s.count)},
		{Key: "avgObjSize", Value: bsonNumber(avg)}, {Key: "numOrphanDocs", Value: int32(0)}, {Key: "storageSize", Value: bsonNumber(s.storage / scale)},
		{Key: "freeStorageSize", Value: int32(0)}, {Key: "capped", Value: s.capped}}
	if s.capped {
		d = append(d, bson.E{Key: "max", Value: int64(0)}, bson.E{Key: "maxSize", Value: bsonNumber(s.maxSize / scale)})
	}
	return append(d, bson.E{Key: "nindexes", Value: int32(len(s.indexes))}, bson.E{Key: "indexDetails", Value: bson.D{}},
		bson.E{Key: "indexBuilds", Value: bson.A{}}, bson.E{Key: "totalIndexSize", Value: bsonNumber(tis / scale)},
		bson.E{Key: "totalSize", Value: bsonNumber((s.storage + tis) / scale)}, bson.E{Key: "indexSizes", Value: idx},
		bson.E{Key: "scaleFactor", Value: int32(scale)})
}

// collStatsStage is the document $collStats produces: latencyStats (from
// what top counts), storageStats (with its own scale) and count when asked
// for, as mongod does.
func (n *Node) collStatsStage(db, coll string, spec bson.Raw) (bson.D, *CmdError) {
	d := bson.D{{Key: "ns", Value: db + "." + coll}, {Key: "host", Value: n.hostPort()}, {Key: "localTime", Value: bson.NewDateTimeFromTime(time.Now())}}
	if _, err := spec.LookupErr("latencyStats"); err == nil {
		d = append(d, bson.E{Key: "latencyStats", Value: n.metrics.latencyDoc(db + "." + coll)})
	}
	if ss, err := spec.LookupErr("storageStats"); err == nil {
		if !n.collExists(db, coll) {
			return nil, cerr(26, "Unable to retrieve storageStats in $collStats stage :: caused by :: Collection [%s.%s] not found.", db, coll)
		}
		opts, _ := ss.DocumentOK()
		scale, e := scaleOf(opts.Lookup("scale"))
		if e != nil {
			return nil, e
		}
		d = append(d, bson.E{Key: "storageStats", Value: n.collStatsDoc(db, coll, scale)})
	}
	if _, err := spec.LookupErr("count"); err == nil {
		d = append(d, bson.E{Key: "count", Value: n.measure(db, coll).count})
	}
	return d, nil
}
