package sim

import (
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// DuplicateKeyError is a write that a unique index (or _id) refuses,
// mongod's E11000.
type DuplicateKeyError struct {
	NS         string
	Index      string
	KeyPattern bson.Raw
	KeyValue   bson.D
	Shown      string // the key as mongod prints it: { sku: "x" }
	Op         int    // position of the refused op in its batch (an applyOps' ops counted one by one)
}

func (e *DuplicateKeyError) Error() string {
	return fmt.Sprintf("E11000 duplicate key error collection: %s index: %s dup key: %s", e.NS, e.Index, e.Shown)
}

// As lets errors.As find the error as a *CmdError (code 11000 with
// keyPattern and keyValue), so write paths that map CmdErrors need no
// case of their own.
func (e *DuplicateKeyError) As(target any) bool {
	if p, ok := target.(**CmdError); ok {
		*p = e.CmdError()
		return true
	}
	return false
}

// fields are the keyPattern and keyValue mongod adds to the error.
func (e *DuplicateKeyError) fields() []bson.E {
	return []bson.E{{Key: "keyPattern", Value: e.KeyPattern}, {Key: "keyValue", Value: e.KeyValue}}
}

// CmdError is the error as a command's reply (findAndModify, createIndexes).
func (e *DuplicateKeyError) CmdError() *CmdError {
	ce := cerr(11000, "%s", e.Error())
	ce.Extra = e.fields()
	return ce
}

// pendingColl is what a batch under check has done to one collection so
// far: the documents it wrote (nil: deleted) and their unique-index keys.
type pendingColl struct {
	docs map[string]bson.Raw
	keys map[*Index]map[string]map[string]bool // index → key → _id keys
	mine map[*Index]map[string][]string        // index → _id key → its keys
}

// CheckWrites reports the first op of a batch that would break _id or a
// unique index (or put two arrays under one index), applying the ops
// before it in thought only; a batch that passes can be applied. A
// transaction's applyOps entry is checked as the ops it holds, so a
// transaction can also check its statements before commit. Writes to a
// collection the batch itself creates are checked against _id only.
func (d *Data) CheckWrites(ops []opSpec) error {
	pending := map[string]*pendingColl{}
	for i, e := range flattenApplyOps(ops) {
		if e.op != "i" && e.op != "u" && e.op != "d" {
			continue
		}
		db, name := splitNS(e.ns)
		c := d.Coll(db, name, false)
		p := pending[e.ns]
		if p == nil {
			p = &pendingColl{docs: map[string]bson.Raw{}, keys: map[*Index]map[string]map[string]bool{}, mine: map[*Index]map[string][]string{}}
			pending[e.ns] = p
		}
		idv := e.o.Lookup("_id")
		if e.op == "u" && e.o2 != nil {
			idv = e.o2.Lookup("_id")
		}
		id := idKey(idv)
		old, seen := p.docs[id]
		if !seen {
			old = c.Get(idv)
		}
		var doc bson.Raw
		if e.op != "d" {
			doc = postImage(old, OplogEntry{Op: e.op, NS: e.ns, O: e.o, O2: e.o2})
		}
		if e.op == "i" && old != nil {
			return &DuplicateKeyError{NS: e.ns, Index: "_id_", KeyPattern: mustRaw(bson.D{{Key: "_id", Value: int32(1)}}),
				KeyValue: bson.D{{Key: "_id", Value: idv}}, Shown: "{ _id: " + showValue(idv) + " }", Op: i}
		}
		if c != nil {
			for _, ix := range c.Indexes {
				if !ix.Unique && doc != nil {
					if _, err := ix.keysOf(doc); err != nil {
						return err
					}
					continue
				}
				if err := p.check(ix, e.ns, id, doc, i); err != nil {
					return err
				}
			}
		}
		p.docs[id] = doc
	}
	return nil
}

// flattenApplyOps replaces each applyOps command by the ops it holds.
func flattenApplyOps(ops []opSpec) []opSpec {
	out := make([]opSpec, 0, len(ops))
	for _, op := range ops {
		inner, ok := op.o.Lookup("applyOps").ArrayOK()
		if op.op != "c" || !ok {
			out = append(out, op)
			continue
		}
		vals, _ := inner.Values()
		for _, v := range vals {
			d, _ := v.DocumentOK()
			var x opSpec
			x.o, _ = d.Lookup("o").DocumentOK()
			x.op, _ = d.Lookup("op").StringValueOK()
			x.ns, _ = d.Lookup("ns").StringValueOK()
			x.o2, _ = d.Lookup("o2").DocumentOK()
			out = append(out, x)
		}
	}
	return out
}

// check tests doc's keys in a unique index against the store and the
// batch so far, then records them.
func (p *pendingColl) check(ix *Index, ns, id string, doc bson.Raw, op int) error {
	if p.keys[ix] == nil {
		p.keys[ix], p.mine[ix] = map[string]map[string]bool{}, map[string][]string{}
	}
	for _, k := range p.mine[ix][id] {
		delete(p.keys[ix][k], id)
	}
	delete(p.mine[ix], id)
	if doc == nil {
		return nil
	}
	keys, err := ix.keysOf(doc)
	if err != nil {
		return err
	}
	for _, k := range keys {
		for other := range ix.entries[k.str] {
			if _, rewritten := p.docs[other]; other != id && !rewritten {
				return ix.dupError(ns, k, op)
			}
		}
		for other := range p.keys[ix][k.str] {
			if other != id {
				return ix.dupError(ns, k, op)
			}
		}
	}
	for _, k := range keys {
		if p.keys[ix][k.str] == nil {
			p.keys[ix][k.str] = map[string]bool{}
		}
		p.keys[ix][k.str][id] = true
		p.mine[ix][id] = append(p.mine[ix][id], k.str)
	}
	return nil
}

func (ix *Index) dupError(ns string, k indexKey, op int) *DuplicateKeyError {
	kv, shown := ix.keyValue(k)
	return &DuplicateKeyError{NS: ns, Index: ix.Name, KeyPattern: ix.Key, KeyValue: kv, Shown: shown, Op: op}
}

// cmdErrorOf turns a failed write into a command error: the refusal, or
// 10107 when the node is not writable.
func cmdErrorOf(err error) *CmdError {
	var ce *CmdError
	if errors.As(err, &ce) {
		return ce
	}
	return cerr(10107, "not primary")
}
