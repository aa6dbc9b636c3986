package sim

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Views, as mongod keeps them: a view is its definition, a document of
// <db>.system.views ({_id: "db.view", viewOn, pipeline}), written by
// create {viewOn, pipeline} as an insert into that collection (so it
// replicates through the oplog like any document) and removed by drop.
// listCollections shows it as type "view"; find and aggregate on it run
// its pipeline over the collection (or view) it is on, then their own
// filter, sort, skip, limit and projection (count and distinct: their
// query). A write to a view is refused (166).

// maxViewDepth is mongod's limit on views of views.
const maxViewDepth = 20

// viewsColl is the collection of a database's view definitions.
const viewsColl = "system.views"

// viewDefLocked is the definition of db.name when it is a view.
func (n *Node) viewDefLocked(db, name string) bson.Raw {
	return n.data.Coll(db, viewsColl, false).Get(mustRV(db + "." + name))
}

// isView reports whether db.name is a view.
func (n *Node) isView(db, name string) bool {
	n.mu.RLock() // system.views changes under n.mu exclusively
	defer n.mu.RUnlock()
	return n.viewDefLocked(db, name) != nil
}

// viewsOf are the view definitions of db, by name.
func (n *Node) viewsOfLocked(db string) []bson.Raw {
	return n.data.Coll(db, viewsColl, false).Docs()
}

// cmdCreateView is create with viewOn (and pipeline, collation).
func (c *conn) cmdCreateView(req *Request, db, name string) (bson.D, error) {
	viewOn, ok := req.Body.Lookup("viewOn").StringValueOK()
	if !ok {
		return nil, cerr(14, "BSON field 'create.viewOn' is the wrong type, expected type 'string'")
	}
	if viewOn == "" {
		return nil, cerr(73, "Invalid collection name: %s.", db)
	}
	pipeline := bson.A{}
	if pv, err := req.Body.LookupErr("pipeline"); err == nil {
		specs, ok := arrayElems(pv)
		if !ok {
			return nil, cerr(14, "BSON field 'create.pipeline' is the wrong type, expected type 'array'")
		}
		if err := checkStageSpecs(specs, false, ""); err != nil {
			return nil, err
		}
		for _, s := range specs {
			switch stage := stageName(s); stage {
			case "$out", "$merge":
				return nil, cerr(ErrOptionNotSupportedOnView, "%s cannot be used in a view definition", stage)
			}
			pipeline = append(pipeline, s)
		}
	}
	els, _ := req.Body.Elements()
	for _, el := range els {
		switch k := el.Key(); {
		case k == "create" || k == "viewOn" || k == "pipeline" || k == "collation" || genericArgs[k]:
		case createOptions[k] || createIgnored[k] || k == "timeseries" || k == "clusteredIndex" || k == "expireAfterSeconds":
			return nil, cerr(ErrOptionNotSupportedOnView, "option not supported on a view: %s", k)
		default:
			return nil, cerr(40415, "BSON field 'create.%s' is an unknown field.", k)
		}
	}
	def := bson.D{{Key: "_id", Value: db + "." + name}, {Key: "viewOn", Value: viewOn}, {Key: "pipeline", Value: pipeline}}
	if coll, ok := req.Body.Lookup("collation").DocumentOK(); ok {
		if loc, _ := coll.Lookup("locale").StringValueOK(); loc != "simple" {
			return nil, cerr(2, "the simulator models only the simple collation, not %s", coll.String())
		}
	}
	n := c.n
	n.mu.Lock()
	if old := n.viewDefLocked(db, name); old != nil {
		n.mu.Unlock()
		same := keyString(bson.RawValue{Type: bson.TypeEmbeddedDocument, Value: old}) ==
			keyString(bson.RawValue{Type: bson.TypeEmbeddedDocument, Value: mustRaw(def)})
		if same && n.cfg.MajorMinor() >= "7.0" {
			return bson.D{}, nil // 7.0 and later: create is idempotent with the same options
		}
		return nil, cerr(48, "Namespace already exists: %s.%s", db, name)
	}
	if n.data.Coll(db, name, false) != nil {
		n.mu.Unlock()
		return nil, cerr(48, "Namespace already exists: %s.%s", db, name)
	}
	_, err := n.writeOplogLocked([]opSpec{{op: "i", ns: db + "." + viewsColl, o: mustRaw(def), stmt: -1}}, false)
	n.mu.Unlock()
	if err != nil {
		return nil, cerr(10107, "not primary")
	}
	return c.finishWrite(req, bson.D{}), nil
}

// ErrOptionNotSupportedOnView is mongod's OptionNotSupportedOnView.
const ErrOptionNotSupportedOnView = 167

// dropViewLocked removes db.name's definition, when it is a view; it
// reports whether it was one.
func (n *Node) dropViewLocked(db, name string) (bool, error) {
	if n.viewDefLocked(db, name) == nil {
		return false, nil
	}
	_, err := n.writeOplogLocked([]opSpec{{op: "d", ns: db + "." + viewsColl,
		o: mustRaw(bson.D{{Key: "_id", Value: db + "." + name}}), stmt: -1}}, false)
	return true, err
}

// viewDocs are the documents of the view db.name, its pipeline run over
// what it is on (a collection, or a view in turn); ok is false when
// db.name is not a view.
func (c *conn) viewDocs(req *Request, db, name string) (docs []bson.Raw, ok bool, err error) {
	var chain [][]bson.RawValue // outermost first
	base := name
	c.n.mu.Lock()
	for {
		def := c.n.viewDefLocked(db, base)
		if def == nil {
			break
		}
		if len(chain) == maxViewDepth {
			c.n.mu.Unlock()
			return nil, true, cerr(ErrViewDepthLimitExceeded, "View depth too deep or view cycle detected; maximum depth is %d", maxViewDepth)
		}
		specs, _ := arrayElems(def.Lookup("pipeline"))
		chain = append(chain, specs)
		base, _ = def.Lookup("viewOn").StringValueOK()
	}
	c.n.mu.Unlock()
	if len(chain) == 0 {
		return nil, false, nil
	}
	if docs, err = c.n.matching(req, db, base, nil); err != nil {
		return nil, true, err
	}
	for i := len(chain) - 1; i >= 0; i-- {
		p := &pipeline{c: c, req: req, db: db, coll: base, now: time.Now(), version: c.n.cfg.MajorMinor()}
		if docs, err = p.run(docs, chain[i]); err != nil {
			return nil, true, err
		}
	}
	return docs, true, nil
}

// readable is matchingAt for a collection; for a view, its documents
// that match filter (and no read time).
func (c *conn) readable(req *Request, db, name string, filter bson.Raw) ([]bson.Raw, bson.Timestamp, error) {
	docs, view, err := c.viewDocs(req, db, name)
	switch {
	case err != nil:
		return nil, bson.Timestamp{}, err
	case !view:
		return c.n.matchingAt(req, db, name, filter)
	}
	docs, err = filterDocs(docs, filter)
	return docs, bson.Timestamp{}, err
}

// ErrViewDepthLimitExceeded is mongod's ViewDepthLimitExceeded.
const ErrViewDepthLimitExceeded = 149

// viewWriteRefused is mongod's refusal of a write to a view.
func viewWriteRefused(db, name string) *CmdError {
	return cerr(ErrCommandNotSupportedOnView, "Namespace %s.%s is a view, not a collection", db, name)
}

// ErrCommandNotSupportedOnView is mongod's CommandNotSupportedOnView.
const ErrCommandNotSupportedOnView = 166

// viewListing is a view's listCollections entry.
func viewListing(def bson.Raw, nameOnly bool) bson.D {
	id, _ := def.Lookup("_id").StringValueOK()
	_, name := splitNS(id)
	d := bson.D{{Key: "name", Value: name}, {Key: "type", Value: "view"}}
	if nameOnly {
		return d
	}
	opts := bson.D{{Key: "viewOn", Value: def.Lookup("viewOn")}, {Key: "pipeline", Value: def.Lookup("pipeline")}}
	if coll := def.Lookup("collation"); coll.Type != 0 {
		opts = append(opts, bson.E{Key: "collation", Value: coll})
	}
	return append(d, bson.E{Key: "options", Value: opts}, bson.E{Key: "info", Value: bson.D{{Key: "readOnly", Value: true}}})
}

// stageName is a pipeline stage's name ("$match"), "" for a non-document.
func stageName(v bson.RawValue) string {
	d, ok := v.DocumentOK()
	if !ok {
		return ""
	}
	return firstKey(d)
}
