package sim

import (
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// createOptions are the create fields mongod records in the
// collection's options; the ones not modelled are refused.
var createOptions = map[string]bool{"capped": true, "size": true, "max": true, "validator": true,
	"validationLevel": true, "validationAction": true, "collation": true, "storageEngine": true,
	"indexOptionDefaults": true, "changeStreamPreAndPostImages": true}

// genericArgs are the fields every command accepts (mongod's generic
// arguments), which DDL commands that refuse unknown fields let through.
var genericArgs = map[string]bool{"$db": true, "$readPreference": true, "$clusterTime": true, "lsid": true, "txnNumber": true,
	"autocommit": true, "startTransaction": true, "writeConcern": true, "readConcern": true, "comment": true,
	"maxTimeMS": true, "apiVersion": true, "apiStrict": true, "apiDeprecationErrors": true, "$audit": true,
	"$client": true, "mayBypassWriteBlocking": true, "txnRetryCounter": true}

// createIgnored are create fields mongod accepts that change nothing here.
var createIgnored = map[string]bool{"create": true, "idIndex": true, "autoIndexId": true, "flags": true, "temp": true,
	"recordPreImages": true}

func (c *conn) cmdCreate(req *Request) (bson.D, error) {
	coll, e := collName(req, "create")
	if e != nil {
		return nil, e
	}
	db := req.DB()
	if _, err := req.Body.LookupErr("viewOn"); err == nil {
		return c.cmdCreateView(req, db, coll)
	}
	if _, err := req.Body.LookupErr("pipeline"); err == nil {
		return nil, cerr(codeFailedToParse, "'pipeline' requires 'viewOn' to also be specified")
	}
	opts := bson.D{}
	els, _ := req.Body.Elements()
	for _, el := range els {
		switch k := el.Key(); {
		case k == "collation":
			c, ok := el.Value().DocumentOK()
			if !ok {
				return nil, cerr(14, "BSON field 'create.collation' is the wrong type '%s', expected type 'object'", typeName(el.Value().Type))
			}
			if loc, _ := c.Lookup("locale").StringValueOK(); loc != "simple" {
				opts = append(opts, bson.E{Key: k, Value: fullCollation(c)})
			}
		case createOptions[k]:
			opts = append(opts, bson.E{Key: k, Value: el.Value()})
		case k == "clusteredIndex" || k == "timeseries" || k == "expireAfterSeconds" || k == "encryptedFields":
			return nil, cerr(72, "The '%s' option is not modelled by mongod-sim", k)
		case !createIgnored[k] && !genericArgs[k]:
			return nil, cerr(40415, "BSON field 'create.%s' is an unknown field.", k)
		}
	}
	if strings.ContainsRune(coll, 0) {
		return nil, cerr(73, "Invalid collection name: %s", coll)
	}
	capped, _ := req.Body.Lookup("capped").BooleanOK()
	_, sizeErr := req.Body.LookupErr("size")
	_, maxErr := req.Body.LookupErr("max")
	switch {
	case capped && sizeErr != nil:
		return nil, cerr(72, "the 'size' field is required when 'capped' is true")
	case !capped && (sizeErr == nil || maxErr == nil):
		return nil, cerr(72, "the 'capped' field needs to be true when either the 'size' or 'max' fields are present")
	}
	if v, err := req.Body.LookupErr("validationLevel"); err == nil {
		if s, _ := v.StringValueOK(); s != "off" && s != "strict" && s != "moderate" {
			return nil, cerr(2, "Enumeration value '%s' for field 'create.validationLevel' is not a valid value.", s)
		}
	}
	o := append(bson.D{{Key: "create", Value: coll}}, opts...)
	o = append(o, bson.E{Key: "idIndex", Value: idIndexSpec})
	n := c.n
	n.mu.Lock()
	if cl := n.data.Coll(db, coll, false); cl != nil {
		same := keyString(bson.RawValue{Type: bson.TypeEmbeddedDocument, Value: optionsOf(cl)}) == keyString(bson.RawValue{Type: bson.TypeEmbeddedDocument, Value: mustRaw(opts)})
		n.mu.Unlock()
		switch {
		case n.cfg.MajorMinor() < "7.0":
			return nil, cerr(48, "Collection already exists. NS: %s.%s", db, coll)
		case same:
			return bson.D{}, nil // 7.0 and later: create is idempotent with the same options
		}
		return nil, cerr(48, "namespace %s.%s already exists, but with different options: %s", db, coll, showDoc(optionsOf(cl)))
	}
	_, err := n.writeOplogLocked([]opSpec{{op: "c", ns: db + ".$cmd", o: mustRaw(o)}}, false)
	n.mu.Unlock()
	if err != nil {
		return nil, cerr(10107, "not primary")
	}
	return c.finishWrite(req, bson.D{}), nil
}

// optionsOf is a collection's options, {} when created without any.
func optionsOf(cl *Collection) bson.Raw {
	if cl.Options == nil {
		return mustRaw(bson.D{})
	}
	return cl.Options
}

func (c *conn) cmdDrop(req *Request) (bson.D, error) {
	coll, e := collName(req, "drop")
	if e != nil {
		return nil, e
	}
	db := req.DB()
	c.n.mu.Lock()
	cl := c.n.data.Coll(db, coll, false)
	if view, err := c.n.dropViewLocked(db, coll); view {
		c.n.mu.Unlock()
		if err != nil {
			return nil, cerr(10107, "not primary")
		}
		return c.finishWrite(req, bson.D{{Key: "ns", Value: db + "." + coll}}), nil
	}
	if cl == nil {
		c.n.mu.Unlock()
		if c.n.cfg.MajorMinor() < "7.0" {
			return nil, cerr(26, "ns not found")
		}
		return bson.D{{Key: "ns", Value: db + "." + coll}, {Key: "nIndexesWas", Value: int32(0)}}, nil
	}
	nIndexes := int32(1 + len(cl.Indexes))
	_, err := c.n.writeOplogLocked([]opSpec{{op: "c", ns: db + ".$cmd", o: mustRaw(bson.D{{Key: "drop", Value: coll}})}}, false)
	c.n.mu.Unlock()
	if err != nil {
		return nil, cerr(10107, "not primary")
	}
	return c.finishWrite(req, bson.D{{Key: "ns", Value: db + "." + coll}, {Key: "nIndexesWas", Value: nIndexes}}), nil
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
	options := map[string]bson.Raw{}
	uuids := map[string][16]byte{}
	for _, name := range names {
		cl := n.data.Coll(db, name, false)
		options[name], uuids[name] = optionsOf(cl), cl.UUID
	}
	if db == "local" && n.cfg.ReplSet != "" {
		names = append(names, "oplog.rs", "system.replset")
	}
	views := n.viewsOfLocked(db)
	n.mu.Unlock()
	var docs []bson.Raw
	visible := c.collectionVisible(req)
	for _, name := range names {
		if !visible(name) {
			continue
		}
		d := bson.D{{Key: "name", Value: name}, {Key: "type", Value: "collection"}}
		if !nameOnly {
			opts := options[name]
			if opts == nil {
				opts = mustRaw(bson.D{})
			}
			info := bson.D{{Key: "readOnly", Value: false}}
			if u, ok := uuids[name]; ok {
				info = append(info, bson.E{Key: "uuid", Value: bson.Binary{Subtype: 4, Data: u[:]}})
			}
			d = append(d, bson.E{Key: "options", Value: opts}, bson.E{Key: "info", Value: info},
				bson.E{Key: "idIndex", Value: idIndexSpec})
		}
		raw := mustRaw(d)
		if filter != nil {
			if ok, _ := Match(raw, filter); !ok {
				continue
			}
		}
		docs = append(docs, raw)
	}
	for _, def := range views {
		raw := mustRaw(viewListing(def, nameOnly))
		name, _ := raw.Lookup("name").StringValueOK()
		if !visible(name) {
			continue
		}
		if filter != nil {
			if ok, _ := Match(raw, filter); !ok {
				continue
			}
		}
		docs = append(docs, raw)
	}
	return c.cursorReply(db+".$cmd.listCollections", docs, -1, false, "firstBatch"), nil
}
