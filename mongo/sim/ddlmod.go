package sim

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// cmdCollMod changes an index's expireAfterSeconds or hidden flag and
// records validator options, replicated as {collMod: coll, ...}.
func (c *conn) cmdCollMod(req *Request) (bson.D, error) {
	coll, e := collName(req, "collMod")
	if e != nil {
		return nil, e
	}
	c.n.mu.Lock()
	out, err := c.n.collModLocked(req, req.DB(), coll)
	c.n.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return c.finishWrite(req, out), nil
}

// collModIgnored are collMod fields mongod accepts that change nothing here.
var collModIgnored = map[string]bool{"collMod": true, "index": true, "validator": true, "validationLevel": true,
	"validationAction": true, "cappedSize": true, "cappedMax": true, "changeStreamPreAndPostImages": true,
	"recordPreImages": true, "dryRun": true}

func (n *Node) collModLocked(req *Request, db, coll string) (bson.D, error) {
	els, _ := req.Body.Elements()
	for _, el := range els {
		switch k := el.Key(); {
		case k == "viewOn" || k == "pipeline" || k == "timeseries" || k == "clusteredIndex" || k == "expireAfterSeconds":
			return nil, cerr(72, "The '%s' option is not modelled by mongod-sim", k)
		case !collModIgnored[k] && !genericArgs[k]:
			return nil, cerr(40415, "BSON field 'collMod.%s' is an unknown field.", k)
		}
	}
	ns := db + "." + coll
	o := bson.D{{Key: "collMod", Value: coll}}
	out := bson.D{}
	cl := n.data.Coll(db, coll, false)
	if cl == nil {
		return nil, cerr(26, "ns does not exist: %s", ns)
	}
	if v, err := req.Body.LookupErr("index"); err == nil {
		idx, ok := v.DocumentOK()
		if !ok {
			return nil, cerr(14, "BSON field 'collMod.index' is the wrong type '%s', expected type 'object'", typeName(v.Type))
		}
		ix, ce := collModIndex(cl, ns, idx)
		if ce != nil {
			return nil, ce
		}
		mod := bson.D{{Key: "name", Value: ix.Name}}
		if v, err := idx.LookupErr("expireAfterSeconds"); err == nil {
			secs, ok := numberOK(v)
			if !ok || secs < 0 || secs > 2147483647 {
				return nil, cerr(2, "TTL index 'expireAfterSeconds' option must be within an acceptable range, try a lower number")
			}
			if ix.HasTTL {
				out = append(out, bson.E{Key: "expireAfterSeconds_old", Value: ix.TTL})
			}
			out = append(out, bson.E{Key: "expireAfterSeconds_new", Value: int64(secs)})
			mod = append(mod, bson.E{Key: "expireAfterSeconds", Value: int64(secs)})
		}
		if v, err := idx.LookupErr("hidden"); err == nil {
			h, ok := v.BooleanOK()
			if !ok {
				return nil, cerr(14, "BSON field 'collMod.index.hidden' is the wrong type '%s', expected type 'bool'", typeName(v.Type))
			}
			if h != ix.Hidden {
				out = append(out, bson.E{Key: "hidden_old", Value: ix.Hidden}, bson.E{Key: "hidden_new", Value: h})
			}
			mod = append(mod, bson.E{Key: "hidden", Value: h})
		}
		if len(mod) == 1 {
			return nil, cerr(2, "no expireAfterSeconds or hidden field")
		}
		o = append(o, bson.E{Key: "index", Value: mod})
	}
	for _, f := range []string{"validator", "validationLevel", "validationAction"} {
		if v, err := req.Body.LookupErr(f); err == nil {
			o = append(o, bson.E{Key: f, Value: v})
		}
	}
	if _, err := n.writeOplogLocked([]opSpec{{op: "c", ns: db + ".$cmd", o: mustRaw(o)}}, false); err != nil {
		return nil, cmdErrorOf(err)
	}
	return out, nil
}

// collModIndex finds the index collMod names by name or key pattern.
func collModIndex(cl *Collection, ns string, idx bson.Raw) (*Index, *CmdError) {
	if name, ok := idx.Lookup("name").StringValueOK(); ok {
		if name == "_id_" {
			return nil, cerr(72, "cannot modify the _id index")
		}
		if ix := cl.Index(name); ix != nil {
			return ix, nil
		}
		return nil, cerr(27, "cannot find index %s for ns %s", name, ns)
	}
	kp, ok := idx.Lookup("keyPattern").DocumentOK()
	if !ok {
		return nil, cerr(2, "must specify either index name or key pattern")
	}
	want := keyString(bson.RawValue{Type: bson.TypeEmbeddedDocument, Value: kp})
	for _, ix := range cl.Indexes {
		if keyString(bson.RawValue{Type: bson.TypeEmbeddedDocument, Value: ix.Key}) == want {
			return ix, nil
		}
	}
	return nil, cerr(27, "cannot find index %s for ns %s", showDoc(kp), ns)
}

// cmdRenameCollection renames within or across databases (admin only),
// replicated as {renameCollection: from, to, dropTarget}.
func (c *conn) cmdRenameCollection(req *Request) (bson.D, error) {
	if req.DB() != "admin" {
		return nil, cerr(13, "renameCollection may only be run against the admin database.")
	}
	from, _ := req.Body.Lookup("renameCollection").StringValueOK()
	to, _ := req.Body.Lookup("to").StringValueOK()
	for _, x := range [][2]string{{"source", from}, {"target", to}} {
		if db, coll := splitNS(x[1]); db == "" || coll == "" || strings.ContainsAny(db, "/\\. \"$") {
			return nil, cerr(73, "Invalid %s namespace: %s", x[0], x[1])
		}
	}
	if from == to {
		return nil, cerr(20, "Can't rename a collection to itself")
	}
	dropTarget, _ := req.Body.Lookup("dropTarget").BooleanOK()
	fromDB, fromColl := splitNS(from)
	toDB, toColl := splitNS(to)
	n := c.n
	n.mu.Lock()
	if n.data.Coll(fromDB, fromColl, false) == nil {
		n.mu.Unlock()
		return nil, cerr(26, "Source collection %s does not exist", from)
	}
	if n.data.Coll(toDB, toColl, false) != nil && !dropTarget {
		n.mu.Unlock()
		return nil, cerr(48, "target namespace exists")
	}
	o := bson.D{{Key: "renameCollection", Value: from}, {Key: "to", Value: to}, {Key: "stayTemp", Value: false}, {Key: "dropTarget", Value: dropTarget}}
	_, err := n.writeOplogLocked([]opSpec{{op: "c", ns: fromDB + ".$cmd", o: mustRaw(o)}}, false)
	n.mu.Unlock()
	if err != nil {
		return nil, cmdErrorOf(err)
	}
	return c.finishWrite(req, bson.D{}), nil
}
