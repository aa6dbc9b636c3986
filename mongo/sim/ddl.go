package sim

import (
	"sort"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func (c *conn) cmdCreate(req *Request) (bson.D, error) {
	coll, e := collName(req, "create")
	if e != nil {
		return nil, e
	}
	db := req.DB()
	c.n.mu.Lock()
	exists := c.n.data.Coll(db, coll, false) != nil
	c.n.mu.Unlock()
	if exists {
		return nil, cerr(48, "Collection %s.%s already exists.", db, coll)
	}
	if _, err := c.n.writeOplog([]opSpec{{op: "c", ns: db + ".$cmd", o: mustRaw(bson.D{{Key: "create", Value: coll}})}}, false); err != nil {
		return nil, cerr(10107, "not primary")
	}
	return c.finishWrite(req, bson.D{}), nil
}

func (c *conn) cmdCreateIndexes(req *Request) (bson.D, error) {
	coll, e := collName(req, "createIndexes")
	if e != nil {
		return nil, e
	}
	db := req.DB()
	c.n.mu.Lock()
	exists := c.n.data.Coll(db, coll, false) != nil
	c.n.mu.Unlock()
	if !exists {
		if _, err := c.n.writeOplog([]opSpec{{op: "c", ns: db + ".$cmd", o: mustRaw(bson.D{{Key: "create", Value: coll}})}}, false); err != nil {
			return nil, cerr(10107, "not primary")
		}
	}
	// Secondary indexes are accepted and not modelled.
	return bson.D{{Key: "numIndexesBefore", Value: int32(1)}, {Key: "numIndexesAfter", Value: int32(1)},
		{Key: "createdCollectionAutomatically", Value: !exists}, {Key: "note", Value: "all indexes already exist"}}, nil
}

func (c *conn) cmdListIndexes(req *Request) (bson.D, error) {
	coll, e := collName(req, "listIndexes")
	if e != nil {
		return nil, e
	}
	db := req.DB()
	c.n.mu.Lock()
	exists := c.n.data.Coll(db, coll, false) != nil
	c.n.mu.Unlock()
	if !exists {
		return nil, cerr(26, "ns does not exist: %s.%s", db, coll)
	}
	idx := mustRaw(bson.D{{Key: "v", Value: int32(2)}, {Key: "key", Value: bson.D{{Key: "_id", Value: int32(1)}}}, {Key: "name", Value: "_id_"}})
	return c.cursorReply(db+"."+coll, []bson.Raw{idx}, -1, false, "firstBatch"), nil
}

func (c *conn) cmdDrop(req *Request) (bson.D, error) {
	coll, e := collName(req, "drop")
	if e != nil {
		return nil, e
	}
	db := req.DB()
	c.n.mu.Lock()
	exists := c.n.data.Coll(db, coll, false) != nil
	c.n.mu.Unlock()
	if !exists {
		return bson.D{{Key: "ns", Value: db + "." + coll}, {Key: "nIndexesWas", Value: int32(0)}}, nil
	}
	if _, err := c.n.writeOplog([]opSpec{{op: "c", ns: db + ".$cmd", o: mustRaw(bson.D{{Key: "drop", Value: coll}})}}, false); err != nil {
		return nil, cerr(10107, "not primary")
	}
	return c.finishWrite(req, bson.D{{Key: "ns", Value: db + "." + coll}, {Key: "nIndexesWas", Value: int32(1)}}), nil
}

func (c *conn) cmdDropDatabase(req *Request) (bson.D, error) {
	db := req.DB()
	if _, err := c.n.writeOplog([]opSpec{{op: "c", ns: db + ".$cmd", o: mustRaw(bson.D{{Key: "dropDatabase", Value: int32(1)}})}}, false); err != nil {
		return nil, cerr(10107, "not primary")
	}
	return c.finishWrite(req, bson.D{{Key: "dropped", Value: db}}), nil
}

func (c *conn) cmdListDatabases(req *Request) (bson.D, error) {
	n := c.n
	nameOnly, _ := req.Body.Lookup("nameOnly").BooleanOK()
	filter, _ := req.Body.Lookup("filter").DocumentOK()
	n.mu.Lock()
	names := n.data.DBNames()
	hasLocal := false
	for _, x := range names {
		if x == "local" {
			hasLocal = true
		}
	}
	if n.cfg.ReplSet != "" && !hasLocal {
		names = append(names, "local")
	}
	for _, sys := range []string{"admin", "config"} {
		found := false
		for _, x := range names {
			found = found || x == sys
		}
		if !found && n.cfg.ReplSet != "" {
			names = append(names, sys)
		}
	}
	sort.Strings(names)
	type info struct {
		name  string
		bytes int64
	}
	var infos []info
	for _, name := range names {
		_, b := n.data.Size(name)
		if name == "local" {
			for _, e := range n.oplog {
				b += int64(len(e.Raw))
			}
		}
		infos = append(infos, info{name, max(b, 8192)})
	}
	n.mu.Unlock()
	dbs := bson.A{}
	var total int64
	visible := c.databaseVisible(req)
	for _, in := range infos {
		if !visible(in.name) {
			continue
		}
		d := bson.D{{Key: "name", Value: in.name}}
		if !nameOnly {
			d = append(d, bson.E{Key: "sizeOnDisk", Value: in.bytes}, bson.E{Key: "empty", Value: false})
		}
		if filter != nil {
			if ok, _ := Match(mustRaw(d), filter); !ok {
				continue
			}
		}
		total += in.bytes
		dbs = append(dbs, d)
	}
	out := bson.D{{Key: "databases", Value: dbs}}
	if !nameOnly {
		out = append(out, bson.E{Key: "totalSize", Value: total}, bson.E{Key: "totalSizeMb", Value: total >> 20})
	}
	return out, nil
}

func (c *conn) cmdListCollections(req *Request) (bson.D, error) {
	n := c.n
	db := req.DB()
	filter, _ := req.Body.Lookup("filter").DocumentOK()
	nameOnly, _ := req.Body.Lookup("nameOnly").BooleanOK()
	n.mu.Lock()
	names := n.data.CollNames(db)
	if db == "local" && n.cfg.ReplSet != "" {
		names = append(names, "oplog.rs", "system.replset")
	}
	n.mu.Unlock()
	var docs []bson.Raw
	visible := c.collectionVisible(req)
	for _, name := range names {
		if !visible(name) {
			continue
		}
		d := bson.D{{Key: "name", Value: name}, {Key: "type", Value: "collection"}}
		if !nameOnly {
			d = append(d, bson.E{Key: "options", Value: bson.D{}}, bson.E{Key: "info", Value: bson.D{{Key: "readOnly", Value: false}}},
				bson.E{Key: "idIndex", Value: bson.D{{Key: "v", Value: int32(2)}, {Key: "key", Value: bson.D{{Key: "_id", Value: int32(1)}}}, {Key: "name", Value: "_id_"}}})
		}
		raw := mustRaw(d)
		if filter != nil {
			if ok, _ := Match(raw, filter); !ok {
				continue
			}
		}
		docs = append(docs, raw)
	}
	return c.cursorReply(db+".$cmd.listCollections", docs, -1, false, "firstBatch"), nil
}
