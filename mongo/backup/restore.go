package backup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
	driver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// ErrUnsupportedOp is returned for an oplog entry of the window that the
// restore does not replay yet (a rename, a collMod, a dropDatabase, a
// prepared or multi-entry transaction).
var ErrUnsupportedOp = errors.New("backup: oplog entry not replayed")

// RestoreOptions configure Restore.
type RestoreOptions struct {
	// BatchBytes and BatchDocs bound one insert or applyOps command
	// (8 MiB and 1000 when zero).
	BatchBytes int
	BatchDocs  int
	// Timeout bounds every command and object read (DefaultTimeout).
	Timeout time.Duration
	// Keep are the users of the target that the restore leaves as they
	// are (UserID: "db.user"), the backup's user of that name and the
	// window's writes to it notwithstanding: the users the target's
	// operator manages, whose credentials its Secrets hold. The operator's
	// own user (mongo.OperatorUser of admin) is kept without being named.
	Keep []string
	Log  zerolog.Logger
}

// Result says what a restore did.
type Result struct {
	Collections int
	Documents   int64
	// Users and Roles are the backup's users and roles written into the
	// target (the users kept not counted), Views the views created.
	Users, Roles, Views int
	// Replayed are the oplog entries applied; the data is then as the
	// source was at End.
	Replayed int64
	End      Position
}

// ReadManifest reads the manifest of the backup under prefix; a prefix
// without one holds no finished backup (store.ErrNotFound).
func ReadManifest(ctx context.Context, store Store, prefix string, timeout time.Duration) (*Manifest, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	b, err := store.Get(cctx, manifestKey(prefix))
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("backup: manifest: %w", err)
	}
	if m.Format < 1 || m.Format > FormatVersion {
		return nil, fmt.Errorf("backup: manifest format %d is not one this build reads (1..%d)", m.Format, FormatVersion)
	}
	return &m, nil
}

// Restore restores the backup under prefix into the replica set whose
// primary target is connected to: each collection is dropped and created
// again with its options, its documents inserted in batches and its
// indexes built; each view is dropped and created again; the roles and
// users are merged in (mergeAuth: the backup's are written, the target's
// others stay, opts.Keep are not touched); then the window's oplog entries
// are replayed (applyOps, as mongorestore --oplogReplay does), so the data
// is as the source was at the manifest's End. Collections and views the
// backup does not name are left alone.
func Restore(ctx context.Context, target *driver.Client, store Store, prefix string, opts RestoreOptions) (*Result, error) {
	opts.defaults()
	m, err := ReadManifest(ctx, store, prefix, opts.Timeout)
	if err != nil {
		return nil, err
	}
	r := &restorer{c: target, store: store, opts: opts}
	res, err := r.restore(ctx, m)
	if err != nil {
		return nil, err
	}
	opts.Log.Info().Str("backup", prefix).Int("collections", res.Collections).Int64("documents", res.Documents).
		Int("views", res.Views).Int("users", res.Users).Int("roles", res.Roles).Int64("replayed", res.Replayed).Str("end", m.End.String()).Msg("restore finished")
	return res, nil
}

func (o *RestoreOptions) defaults() {
	if o.BatchBytes <= 0 {
		o.BatchBytes = 8 << 20
	}
	if o.BatchDocs <= 0 {
		o.BatchDocs = 1000
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
}

// restore restores m's collections and replays its window: the data is
// then as the source was at m.End.
func (r *restorer) restore(ctx context.Context, m *Manifest) (*Result, error) {
	res := &Result{End: m.End}
	var err error
	for _, c := range m.Collections {
		n, err := r.collection(ctx, c)
		if err != nil {
			return nil, fmt.Errorf("backup: restore %s: %w", c.NS(), err)
		}
		res.Collections++
		res.Documents += n
	}
	for _, v := range m.Views {
		if err := r.view(ctx, v); err != nil {
			return nil, fmt.Errorf("backup: restore the view %s: %w", v.NS(), err)
		}
		res.Views++
	}
	if res.Roles, err = r.mergeAuth(ctx, "system.roles", m.Roles); err != nil {
		return nil, err
	}
	if res.Users, err = r.mergeAuth(ctx, "system.users", m.Users); err != nil {
		return nil, err
	}
	if res.Replayed, err = r.replay(ctx, m.Oplog); err != nil {
		return nil, err
	}
	return res, nil
}

type restorer struct {
	c     *driver.Client
	store Store
	opts  RestoreOptions
}

func (r *restorer) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, r.opts.Timeout)
}

func (r *restorer) get(ctx context.Context, key string) ([]byte, error) {
	cctx, cancel := r.call(ctx)
	defer cancel()
	return r.store.Get(cctx, key)
}

func (r *restorer) run(ctx context.Context, db string, cmd bson.D) error {
	cctx, cancel := r.call(ctx)
	defer cancel()
	return r.c.Database(db).RunCommand(cctx, cmd).Err()
}

func (r *restorer) collection(ctx context.Context, c Collection) (int64, error) {
	b, err := r.get(ctx, c.Metadata)
	if err != nil {
		return 0, err
	}
	var meta metadata
	if err := json.Unmarshal(b, &meta); err != nil {
		return 0, fmt.Errorf("metadata: %w", err)
	}
	if err := r.run(ctx, c.DB, bson.D{{Key: "drop", Value: c.Name}}); err != nil && !isCode(err, 26) {
		return 0, err
	}
	create := bson.D{{Key: "create", Value: c.Name}}
	if elems, err := meta.Options.Elements(); err == nil {
		for _, e := range elems {
			create = append(create, bson.E{Key: e.Key(), Value: e.Value()})
		}
	}
	if err := r.run(ctx, c.DB, create); err != nil {
		return 0, err
	}
	var n int64
	for _, key := range c.Parts {
		body, err := r.get(ctx, key)
		if err != nil {
			return n, err
		}
		docs, err := split(body)
		if err != nil {
			return n, fmt.Errorf("%s: %w", key, err)
		}
		err = r.batches(docs, func(batch []bson.Raw) error {
			return r.run(ctx, c.DB, bson.D{{Key: "insert", Value: c.Name}, {Key: "documents", Value: batch}, {Key: "ordered", Value: true}})
		})
		if err != nil {
			return n, err
		}
		n += int64(len(docs))
	}
	var specs bson.A
	for _, ix := range meta.Indexes {
		if name, _ := ix.Lookup("name").StringValueOK(); name == "_id_" {
			continue
		}
		specs = append(specs, withoutFields(ix, "ns"))
	}
	if len(specs) > 0 {
		if err := r.run(ctx, c.DB, bson.D{{Key: "createIndexes", Value: c.Name}, {Key: "indexes", Value: specs}}); err != nil {
			return n, err
		}
	}
	if n != c.Documents {
		return n, fmt.Errorf("restored %d documents, the manifest says %d", n, c.Documents)
	}
	return n, nil
}

// batches cuts docs into runs of at most BatchDocs documents and BatchBytes bytes.
func (r *restorer) batches(docs []bson.Raw, f func([]bson.Raw) error) error {
	for len(docs) > 0 {
		size, i := 0, 0
		for i < len(docs) && i < r.opts.BatchDocs && (i == 0 || size+len(docs[i]) <= r.opts.BatchBytes) {
			size += len(docs[i])
			i++
		}
		if err := f(docs[:i]); err != nil {
			return err
		}
		docs = docs[i:]
	}
	return nil
}

// split cuts concatenated BSON documents apart.
func split(b []byte) ([]bson.Raw, error) {
	var out []bson.Raw
	for len(b) > 0 {
		doc, rest, ok := bsoncore.ReadDocument(b)
		if !ok {
			return nil, errors.New("truncated BSON document")
		}
		out = append(out, bson.Raw(doc))
		b = rest
	}
	return out, nil
}

// withoutFields is doc less the named top-level fields.
func withoutFields(doc bson.Raw, names ...string) bson.D {
	var out bson.D
	elems, _ := doc.Elements()
	for _, e := range elems {
		if !slices.Contains(names, e.Key()) {
			out = append(out, bson.E{Key: e.Key(), Value: e.Value()})
		}
	}
	return out
}

func isCode(err error, code int32) bool {
	var se driver.ServerError
	return errors.As(err, &se) && se.HasErrorCode(int(code))
}

// skipNS reports the namespaces a replay leaves out, as the dump does
// (the users, roles and view definitions are taken before: flattenAuthz).
func skipNS(ns string) bool {
	db, coll, _ := strings.Cut(ns, ".")
	return db == "local" || db == "config" || strings.HasPrefix(coll, "system.")
}
