package backup

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mgors/operator/mongo"
)

// The users, roles and views of a backup (docs/design/backup.md,
// "Users, roles and views").
//
// Users and roles are merged into the target as mongorestore merges them
// (without --drop): each of the backup's is written whole, replacing the
// target's of the same _id ("db.name") or added; the target's others stay.
// The writes go to admin.system.users and admin.system.roles themselves,
// which mongod accepts from a user with the restore role's actions (the
// cluster's internal user here) and after which it invalidates its user
// cache, so the users open and hold their roles at once. The users named
// in RestoreOptions.Keep, the ones the target's operator manages, and the
// operator's own user (mongo.OperatorUser) in any case, are never written:
// they keep the target's credentials and roles, so the operator does not
// lose its access and its Secrets stay right.

// UserID is the _id of user db.name in admin.system.users.
func UserID(db, name string) string { return db + "." + name }

// view creates the view v in the target, as it was in the source: what
// held its name is dropped first (a view or collection of the target that
// the backup's view replaces, as a collection of the backup replaces the
// target's).
func (r *restorer) view(ctx context.Context, v View) error {
	var opts bson.D
	if err := bson.UnmarshalExtJSON(v.Options, true, &opts); err != nil {
		return fmt.Errorf("options: %w", err)
	}
	if err := r.run(ctx, v.DB, bson.D{{Key: "drop", Value: v.Name}}); err != nil && !isCode(err, 26) {
		return err
	}
	return r.run(ctx, v.DB, append(bson.D{{Key: "create", Value: v.Name}}, opts...))
}

// mergeAuth writes the backup's documents of admin.<coll> (system.users or
// system.roles) into the target's, each replacing the one of its _id or
// added, but for the users kept; it returns how many it wrote.
func (r *restorer) mergeAuth(ctx context.Context, coll string, a Auth) (int, error) {
	written := 0
	for _, key := range a.Parts {
		body, err := r.get(ctx, key)
		if err != nil {
			return written, err
		}
		docs, err := split(body)
		if err != nil {
			return written, fmt.Errorf("backup: %s: %w", key, err)
		}
		var mine []bson.Raw
		for _, d := range docs {
			if id, _ := d.Lookup("_id").StringValueOK(); coll == "system.users" && r.kept(id) {
				r.opts.Log.Info().Str("user", id).Msg("user of the backup not restored: the target's operator manages it")
				continue
			}
			mine = append(mine, d)
		}
		err = r.batches(mine, func(batch []bson.Raw) error {
			updates := make(bson.A, 0, len(batch))
			for _, d := range batch {
				updates = append(updates, bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: d.Lookup("_id")}}},
					{Key: "u", Value: d}, {Key: "upsert", Value: true}})
			}
			return r.run(ctx, "admin", bson.D{{Key: "update", Value: coll}, {Key: "updates", Value: updates}, {Key: "ordered", Value: true}})
		})
		if err != nil {
			return written, fmt.Errorf("backup: restore admin.%s: %w", coll, err)
		}
		written += len(mine)
	}
	return written, nil
}

// kept reports whether the user id is left as the target has it: one of
// opts.Keep, or the operator's own user, always (whoever restores, the
// target's operator must not lose its access).
func (r *restorer) kept(id string) bool {
	return id == UserID("admin", mongo.OperatorUser) || slices.Contains(r.opts.Keep, id)
}

// flattenAuthz is flatten for the writes to the users, roles and view
// definitions: a user's or role's write is applied as any document's,
// unless it is a kept user's (left out); a view definition written is the
// view dropped and created again, one removed the view dropped. handled
// is false for any other namespace.
func flattenAuthz(e bson.Raw, op, ns string, o bson.Raw, keep func(string) bool) (w []bson.Raw, c *ddl, handled bool, err error) {
	db, coll, _ := strings.Cut(ns, ".")
	switch {
	case ns == "admin.system.users" || ns == "admin.system.roles":
		id := o.Lookup("_id")
		if op == "u" {
			o2, _ := e.Lookup("o2").DocumentOK()
			id = o2.Lookup("_id")
		}
		if s, _ := id.StringValueOK(); ns == "admin.system.users" && keep(s) {
			return nil, nil, true, nil
		}
		w, err := stripped(e, op, ns, o)
		return w, nil, true, err
	case coll != viewsColl:
		return nil, nil, false, nil
	}
	id, def := o.Lookup("_id"), o
	if op == "u" {
		o2, _ := e.Lookup("o2").DocumentOK()
		id = o2.Lookup("_id")
		if first, err := o.IndexErr(0); err == nil && strings.HasPrefix(first.Key(), "$") {
			return nil, nil, true, fmt.Errorf("%w: an update of the view definition %s (%s): collMod of a view", ErrUnsupportedOp, id, first.Key())
		}
	}
	full, _ := id.StringValueOK()
	_, name, ok := strings.Cut(full, ".")
	if !ok {
		return nil, nil, true, fmt.Errorf("%w: a view definition of %s with _id %s", ErrUnsupportedOp, ns, id)
	}
	drop := &ddl{db: db, cmd: bson.D{{Key: "drop", Value: name}}, ignore: 26}
	if op == "d" {
		return nil, drop, true, nil
	}
	create := bson.D{{Key: "create", Value: name}}
	for _, k := range []string{"viewOn", "pipeline", "collation"} {
		if v := def.Lookup(k); v.Type != 0 {
			create = append(create, bson.E{Key: k, Value: v})
		}
	}
	drop.then = &ddl{db: db, cmd: create}
	return nil, drop, true, nil
}

// viewsColl is the collection of a database's view definitions.
const viewsColl = "system.views"

// stripped is a document write as applyOps takes it: op, ns, o, o2.
func stripped(e bson.Raw, op, ns string, o bson.Raw) ([]bson.Raw, error) {
	w := bson.D{{Key: "op", Value: op}, {Key: "ns", Value: ns}, {Key: "o", Value: o}}
	if o2, ok := e.Lookup("o2").DocumentOK(); ok {
		w = append(w, bson.E{Key: "o2", Value: o2})
	}
	raw, err := bson.Marshal(w)
	return []bson.Raw{raw}, err
}
