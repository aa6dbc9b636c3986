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
	Op         int    // position of the refused op in its batch
}

func (e *DuplicateKeyError) Error() string {
	return fmt.Sprintf("E11000 duplicate key error collection: %s index: %s dup key: %s", e.NS, e.Index, e.Shown)
}

// fields are the keyPattern and keyValue mongod adds to the error.
func (e *DuplicateKeyError) fields() []bson.E {
	return []bson.E{{Key: "keyPattern", Value: e.KeyPattern}, {Key: "keyValue", Value: e.KeyValue}}
}

// WriteError is the error as an entry of a write command's writeErrors.
func (e *DuplicateKeyError) WriteError(index int) bson.D {
	return writeErr(index, 11000, e.Error(), e.fields()...)
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

// CheckWrites reports the first entry of a batch that would break _id or
// a unique index, applying the entries before it in thought only; a
// batch that passes can be applied. Writes to a collection the batch
// itself creates are checked against _id only.
func (d *Data) CheckWrites(entries []OplogEntry) error {
	pending := map[string]*pendingColl{}
	for i, e := range entries {
		if e.Op != "i" && e.Op != "u" && e.Op != "d" {
			continue
		}
		db, name := splitNS(e.NS)
		c := d.Coll(db, name, false)
		p := pending[e.NS]
		if p == nil {
			p = &pendingColl{docs: map[string]bson.Raw{}, keys: map[*Index]map[string]map[string]bool{}, mine: map[*Index]map[string][]string{}}
			pending[e.NS] = p
		}
		idv := e.O.Lookup("_id")
		if e.Op == "u" && e.O2 != nil {
			idv = e.O2.Lookup("_id")
		}
		id := idKey(idv)
		old, seen := p.docs[id]
		if !seen {
			old = c.Get(idv)
		}
		var doc bson.Raw
		if e.Op != "d" {
			doc = postImage(old, e)
		}
		if e.Op == "i" && old != nil {
			return &DuplicateKeyError{NS: e.NS, Index: "_id_", KeyPattern: mustRaw(bson.D{{Key: "_id", Value: int32(1)}}),
				KeyValue: bson.D{{Key: "_id", Value: idv}}, Shown: "{ _id: " + formatValue(idv) + " }", Op: i}
		}
		if c != nil {
			for _, ix := range c.Indexes {
				if !ix.Unique && doc != nil {
					if _, err := ix.keysOf(doc); err != nil {
						return err
					}
					continue
				}
				if err := p.check(ix, e.NS, id, doc, i); err != nil {
					return err
				}
			}
		}
		p.docs[id] = doc
	}
	return nil
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

// writeErrorOf turns a refused write (duplicate key, unindexable
// document) into a write command's writeErrors entry; ok is false for
// any other failure (not writable).
func writeErrorOf(err error, index int) (bson.D, bool) {
	var dk *DuplicateKeyError
	if errors.As(err, &dk) {
		return dk.WriteError(index), true
	}
	var ce *CmdError
	if errors.As(err, &ce) {
		return writeErr(index, ce.Code, ce.Msg), true
	}
	return nil, false
}

// cmdErrorOf turns a failed write into a command error: the refusal, or
// 10107 when the node is not writable.
func cmdErrorOf(err error) *CmdError {
	var dk *DuplicateKeyError
	if errors.As(err, &dk) {
		return dk.CmdError()
	}
	var ce *CmdError
	if errors.As(err, &ce) {
		return ce
	}
	return cerr(10107, "not primary")
}
