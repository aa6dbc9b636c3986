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
	p := &replayer{r: r}
	for _, key := range o.Parts {
		entries, err := r.entries(ctx, key)
		if err != nil {
			return p.n, err
		}
		for _, e := range entries {
			if err := p.add(ctx, e); err != nil {
				return p.n, err
			}
		}
	}
	return p.n, p.flush(ctx)
}

// entries reads one object of concatenated oplog entries.
func (r *restorer) entries(ctx context.Context, key string) ([]bson.Raw, error) {
	body, err := r.get(ctx, key)
	if err != nil {
		return nil, err
	}
	entries, err := split(body)
	if err != nil {
		return nil, fmt.Errorf("backup: %s: %w", key, err)
	}
	return entries, nil
}

// replayer applies entries one at a time, batching document writes into
// applyOps commands of at most BatchDocs operations and BatchBytes bytes;
// n counts the entries applied.
type replayer struct {
	r     *restorer
	batch bson.A
	size  int
	n     int64
}

func (p *replayer) add(ctx context.Context, e bson.Raw) error {
	writes, cmd, err := flatten(e, p.r.kept)
	if err != nil {
		return err
	}
	for _, w := range writes {
		if len(p.batch) >= p.r.opts.BatchDocs || len(p.batch) > 0 && p.size+len(w) > p.r.opts.BatchBytes {
			if err := p.flush(ctx); err != nil {
				return err
			}
		}
		p.batch = append(p.batch, w)
		p.size += len(w)
	}
	if cmd == nil {
		return nil
	}
	if err := p.flush(ctx); err != nil {
		return err
	}
	if err := p.r.command(ctx, cmd); err != nil {
		return err
	}
	p.n++
	return nil
}

func (p *replayer) flush(ctx context.Context) error {
	if len(p.batch) == 0 {
		return nil
	}
	if err := p.r.run(ctx, "admin", bson.D{{Key: "applyOps", Value: p.batch}}); err != nil {
		return fmt.Errorf("backup: applyOps: %w", err)
	}
	p.n += int64(len(p.batch))
	p.batch, p.size = nil, 0
	return nil
}

// ddl is a collection, view or index command of the window, as it is sent
// again, and the one to send after it, if any.
type ddl struct {
	db     string
	cmd    bson.D
	ignore int32 // the error code that means "already done"
	then   *ddl
}

func (r *restorer) command(ctx context.Context, c *ddl) error {
	for ; c != nil; c = c.then {
		err := r.run(ctx, c.db, c.cmd)
		if err != nil && (c.ignore == 0 || !isCode(err, c.ignore)) {
			return fmt.Errorf("backup: replay %s on %s: %w", c.cmd[0].Key, c.db, err)
		}
	}
	return nil
}

// flatten turns one oplog entry into the writes to apply (applyOps
// operations) or a command to send; a no-op, an entry of a namespace the
// backup leaves out, or a write to a user keep says to leave alone, is
// neither.
func flatten(e bson.Raw, keep func(id string) bool) ([]bson.Raw, *ddl, error) {
	op, _ := e.Lookup("op").StringValueOK()
	ns, _ := e.Lookup("ns").StringValueOK()
	o, _ := e.Lookup("o").DocumentOK()
	switch op {
	case "n":
		return nil, nil, nil
	case "i", "u", "d":
		if w, c, handled, err := flattenAuthz(e, op, ns, o, keep); handled {
			return w, c, err
		}
		if skipNS(ns) {
			return nil, nil, nil
		}
		w, err := stripped(e, op, ns, o)
		return w, nil, err
	case "c":
		return flattenCommand(e, ns, o, keep)
	}
	return nil, nil, fmt.Errorf("%w: op %q on %s", ErrUnsupportedOp, op, ns)
}

func flattenCommand(e bson.Raw, ns string, o bson.Raw, keep func(string) bool) ([]bson.Raw, *ddl, error) {
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
			w, cmd, err := flatten(inner, keep)
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
