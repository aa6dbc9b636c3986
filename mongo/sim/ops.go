package sim

import (
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// cmdCurrentOp lists the operations in progress (the currentOp command
// itself among them, as mongod shows it); the filter fields of the
// command are matched against each operation document.
func (c *conn) cmdCurrentOp(req *Request) (bson.D, error) {
	if e := requireAdmin(req, "currentOp"); e != nil {
		return nil, e
	}
	inprog := bson.A{}
	for _, op := range c.n.metrics.inProgress() {
		doc := op.doc(c.n)
		if ok, err := currentOpMatches(doc, req.Body); err != nil {
			return nil, err
		} else if ok {
			inprog = append(inprog, doc)
		}
	}
	return bson.D{{Key: "inprog", Value: inprog}}, nil
}

// currentOpMatches applies currentOp's filter: every field but the
// command's own options is a query on the operation document.
func currentOpMatches(doc bson.D, body bson.Raw) (bool, error) {
	filter := bson.D{}
	elems, _ := body.Elements()
	for _, e := range elems {
		if k := e.Key(); k != "currentOp" && !isCommandOption(k) {
			filter = append(filter, bson.E{Key: k, Value: e.Value()})
		}
	}
	if len(filter) == 0 {
		return true, nil
	}
	return Match(mustRaw(doc), mustRaw(filter))
}

func (op *operation) doc(n *Node) bson.D {
	running := time.Since(op.start)
	return bson.D{{Key: "type", Value: "op"}, {Key: "host", Value: n.hostPort()}, {Key: "desc", Value: "conn" + strconv.FormatInt(op.connID, 10)},
		{Key: "connectionId", Value: int32(op.connID)}, {Key: "client", Value: op.client}, {Key: "active", Value: true},
		{Key: "currentOpTime", Value: time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00")},
		{Key: "opid", Value: op.opid}, {Key: "secs_running", Value: int64(running.Seconds())},
		{Key: "microsecs_running", Value: running.Microseconds()}, {Key: "op", Value: opKind(op.name)},
		{Key: "ns", Value: op.ns}, {Key: "command", Value: op.command}, {Key: "numYields", Value: int32(0)},
		{Key: "locks", Value: bson.D{}}, {Key: "waitingForLock", Value: false}}
}

// opKind is currentOp's "op" for a command.
func opKind(name string) string {
	switch name {
	case "insert", "update", "getMore":
		if name == "getMore" {
			return "getmore"
		}
		return name
	case "delete":
		return "remove"
	case "find":
		return "query"
	}
	return "command"
}

// cmdKillOp marks an operation killed. The simulator's operations are short
// and not interruptible, so a running one finishes; mongod answers the same
// "attempting to kill op" whether or not the op still runs.
func (c *conn) cmdKillOp(req *Request) (bson.D, error) {
	if e := requireAdmin(req, "killOp"); e != nil {
		return nil, e
	}
	v, err := req.Body.LookupErr("op")
	if err != nil {
		return nil, cerr(4, "Missing expected field \"op\"")
	}
	id, ok := numberOK(v)
	if !ok {
		return nil, cerr(14, "Expected field \"op\" to have numeric type, but found %s", typeName(v.Type))
	}
	c.n.metrics.kill(int32(id))
	return bson.D{{Key: "info", Value: "attempting to kill op"}}, nil
}

// currentOpStage is the $currentOp aggregation stage: the operations in
// progress as documents, run as {aggregate: 1} against admin.
func (c *conn) currentOpStage(req *Request, spec bson.RawValue) ([]bson.Raw, error) {
	if _, ok := spec.DocumentOK(); !ok {
		return nil, cerr(14, "$currentOp options must be specified in an object, but found: %s", typeName(spec.Type))
	}
	if req.DB() != "admin" {
		return nil, cerr(73, "$currentOp must be run against the 'admin' database with {aggregate: 1}")
	}
	var docs []bson.Raw
	for _, op := range c.n.metrics.inProgress() {
		docs = append(docs, mustRaw(op.doc(c.n)))
	}
	return docs, nil
}
