package sim

import "go.mongodb.org/mongo-driver/v2/bson"

func (c *conn) cmdDBStats(req *Request) (bson.D, error) {
	n := c.n
	db := req.DB()
	scale := 1.0
	if s, ok := numberOK(req.Body.Lookup("scale")); ok && s > 0 {
		scale = s
	}
	n.mu.Lock()
	colls := len(n.data.CollNames(db))
	objs, size := n.data.Size(db)
	n.mu.Unlock()
	avg := 0.0
	if objs > 0 {
		avg = float64(size) / float64(objs)
	}
	return bson.D{{Key: "db", Value: db}, {Key: "collections", Value: int64(colls)}, {Key: "views", Value: int64(0)},
		{Key: "objects", Value: objs}, {Key: "avgObjSize", Value: avg}, {Key: "dataSize", Value: float64(size) / scale},
		{Key: "storageSize", Value: float64(size) / scale}, {Key: "indexes", Value: int64(colls)}, {Key: "indexSize", Value: float64(4096*colls) / scale},
		{Key: "totalSize", Value: float64(size+int64(4096*colls)) / scale}, {Key: "scaleFactor", Value: int64(scale)},
		{Key: "fsUsedSize", Value: float64(0)}, {Key: "fsTotalSize", Value: float64(0)}}, nil
}

func (c *conn) cmdCollStats(req *Request) (bson.D, error) {
	coll, e := collName(req, "collStats")
	if e != nil {
		return nil, e
	}
	db := req.DB()
	c.n.mu.Lock()
	exists := c.n.data.Coll(db, coll, false) != nil || db == "local" && coll == "oplog.rs" && c.n.cfg.ReplSet != ""
	c.n.mu.Unlock()
	if !exists {
		return nil, cerr(26, "Collection [%s.%s] not found.", db, coll)
	}
	return c.collStatsDoc(db, coll), nil
}

// collStatsDoc is collStats' answer (also $collStats.storageStats).
func (c *conn) collStatsDoc(db, coll string) bson.D {
	n := c.n
	n.mu.Lock()
	cl := n.data.Coll(db, coll, false)
	var cnt, size int64
	for _, d := range cl.Docs() {
		cnt++
		size += int64(len(d))
	}
	oplog := db == "local" && coll == "oplog.rs"
	var maxSize int64
	if oplog {
		cnt, size, maxSize = n.oplogStatsLocked()
	}
	n.mu.Unlock()
	avg := int64(0)
	if cnt > 0 {
		avg = size / cnt
	}
	if oplog {
		return bson.D{{Key: "ns", Value: "local.oplog.rs"}, {Key: "size", Value: size}, {Key: "count", Value: cnt},
			{Key: "avgObjSize", Value: avg}, {Key: "storageSize", Value: size}, {Key: "capped", Value: true},
			{Key: "max", Value: int64(-1)}, {Key: "maxSize", Value: maxSize}, {Key: "nindexes", Value: int32(0)},
			{Key: "totalIndexSize", Value: int64(0)}, {Key: "totalSize", Value: size}, {Key: "indexSizes", Value: bson.D{}},
			{Key: "scaleFactor", Value: int32(1)}}
	}
	return bson.D{{Key: "ns", Value: db + "." + coll}, {Key: "size", Value: size}, {Key: "count", Value: cnt},
		{Key: "avgObjSize", Value: avg}, {Key: "storageSize", Value: size}, {Key: "freeStorageSize", Value: int64(0)},
		{Key: "capped", Value: false}, {Key: "nindexes", Value: int32(1)}, {Key: "indexDetails", Value: bson.D{}},
		{Key: "indexBuilds", Value: bson.A{}}, {Key: "totalIndexSize", Value: int64(4096)}, {Key: "totalSize", Value: size + 4096},
		{Key: "indexSizes", Value: bson.D{{Key: "_id_", Value: int64(4096)}}}, {Key: "scaleFactor", Value: int32(1)}}
}
