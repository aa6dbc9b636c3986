package backup

import (
	"context"
	"fmt"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// replay applies the window's oplog entries in order. Document writes go
// in applyOps batches, stripped to op, ns, o and o2 (the source's
// collection UUIDs name nothing on the target); a transaction's applyOps
// is unwrapped into its writes. The index and collection commands a
// window may hold are sent as the commands themselves, idempotently, each
// after the writes before it. Entries are idempotent (an insert of an
// existing _id replaces it, an update of a missing one is skipped or
// upserted), which is what lets the documents, read at any point of the
// window, be brought to its end.
func (r *restorer) replay(ctx context.Context, o Oplog) (int64, error) {
	var batch bson.A
	size := 0
	var n int64
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := r.run(ctx, "admin", bson.D{{Key: "applyOps", Value: batch}}); err != nil {
			return fmt.Errorf("backup: applyOps: %w", err)
		}
		n += int64(len(batch))
		batch, size = nil, 0
		return nil
	}
	for _, key := range o.Parts {
		body, err := r.get(ctx, key)
		if err != nil {
			return n, err
		}
		entries, err := split(body)
		if err != nil {
			return n, fmt.Errorf("backup: %s: %w", key, err)
		}
		for _, e := range entries {
			writes, cmd, err := flatten(e)
			if err != nil {
				return n, err
			}
			for _, w := range writes {
				if len(batch) >= r.opts.BatchDocs || len(batch) > 0 && size+len(w) > r.opts.BatchBytes {
					if err := flush(); err != nil {
						return n, err
					}
				}
				batch = append(batch, w)
				size += len(w)
			}
			if cmd == nil {
				continue
			}
			if err := flush(); err != nil {
				return n, err
			}
			if err := r.command(ctx, cmd); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, flush()
}

// ddl is a collection or index command of the window, as it is sent again.
type ddl struct {
	db     string
	cmd    bson.D
	ignore int32 // the error code that means "already done"
}

func (r *restorer) command(ctx context.Context, c *ddl) error {
	err := r.run(ctx, c.db, c.cmd)
	if err != nil && (c.ignore == 0 || !isCode(err, c.ignore)) {
		return fmt.Errorf("backup: replay %s on %s: %w", c.cmd[0].Key, c.db, err)
	}
	return nil
}

// flatten turns one oplog entry into the writes to apply (applyOps
// operations) or a command to send; a no-op, or an entry of a namespace
// the backup leaves out, is neither.
func flatten(e bson.Raw) ([]bson.Raw, *ddl, error) {
	op, _ := e.Lookup("op").StringValueOK()
	ns, _ := e.Lookup("ns").StringValueOK()
	o, _ := e.Lookup("o").DocumentOK()
	switch op {
	case "n":
		return nil, nil, nil
	case "i", "u", "d":
		if skipNS(ns) {
			return nil, nil, nil
		}
		w := bson.D{{Key: "op", Value: op}, {Key: "ns", Value: ns}, {Key: "o", Value: o}}
		if o2, ok := e.Lookup("o2").DocumentOK(); ok {
			w = append(w, bson.E{Key: "o2", Value: o2})
		}
		raw, err := bson.Marshal(w)
		return []bson.Raw{raw}, nil, err
	case "c":
		return flattenCommand(e, ns, o)
	}
	return nil, nil, fmt.Errorf("%w: op %q on %s", ErrUnsupportedOp, op, ns)
}

func flattenCommand(e bson.Raw, ns string, o bson.Raw) ([]bson.Raw, *ddl, error) {
	db, _, _ := strings.Cut(ns, ".")
	elems, err := o.Elements()
	if err != nil || len(elems) == 0 {
		return nil, nil, fmt.Errorf("%w: empty command on %s", ErrUnsupportedOp, ns)
	}
	name := elems[0].Key()
	coll, _ := elems[0].Value().StringValueOK()
	if name != "applyOps" && skipNS(db+"."+coll) {
		return nil, nil, nil
	}
	rest := withoutFields(o, name)
	switch name {
	case "applyOps":
		if _, partial := e.Lookup("partialTxn").BooleanOK(); partial {
			return nil, nil, fmt.Errorf("%w: a transaction split over several entries", ErrUnsupportedOp)
		}
		if prepare, _ := e.Lookup("prepare").BooleanOK(); prepare {
			return nil, nil, fmt.Errorf("%w: a prepared transaction", ErrUnsupportedOp)
		}
		ops, _ := o.Lookup("applyOps").ArrayOK()
		vals, _ := ops.Values()
		var out []bson.Raw
		for _, v := range vals {
			inner, ok := v.DocumentOK()
			if !ok {
				continue
			}
			w, cmd, err := flatten(inner)
			if err != nil {
				return nil, nil, err
			}
			if cmd != nil {
				return nil, nil, fmt.Errorf("%w: a command inside a transaction", ErrUnsupportedOp)
			}
			out = append(out, w...)
		}
		return out, nil, nil
	case "create":
		return nil, &ddl{db: db, cmd: append(bson.D{{Key: "create", Value: coll}}, rest...), ignore: 48}, nil
	case "drop":
		return nil, &ddl{db: db, cmd: bson.D{{Key: "drop", Value: coll}}, ignore: 26}, nil
	case "createIndexes":
		return nil, &ddl{db: db, cmd: bson.D{{Key: "createIndexes", Value: coll}, {Key: "indexes", Value: bson.A{rest}}}}, nil
	case "commitIndexBuild":
		specs, _ := o.Lookup("indexes").ArrayOK()
		return nil, &ddl{db: db, cmd: bson.D{{Key: "createIndexes", Value: coll}, {Key: "indexes", Value: specs}}}, nil
	case "startIndexBuild", "abortIndexBuild":
		return nil, nil, nil
	case "dropIndexes", "deleteIndexes":
		return nil, &ddl{db: db, cmd: append(bson.D{{Key: "dropIndexes", Value: coll}}, rest...), ignore: 27}, nil
	}
	return nil, nil, fmt.Errorf("%w: command %s on %s", ErrUnsupportedOp, name, ns)
}
