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
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Store is where backups go: store.Client, or anything that keeps whole
// objects by key.
type Store interface {
	Put(ctx context.Context, key string, body []byte, contentType string) error
	Get(ctx context.Context, key string) ([]byte, error)
}

// Defaults of Options.
const (
	DefaultPartSize  = 16 << 20
	DefaultBatchSize = 1000
	DefaultTimeout   = 30 * time.Second
)

// ErrWindowLost is returned when the member's oplog no longer holds
// entries that are needed: the start of the dump's window (it rolled over
// while the dump ran), so the documents cannot be made consistent; or the
// entries right after the oplog archive's last (Archiver), so the archive
// cannot continue.
var ErrWindowLost = errors.New("backup: the oplog rolled over past entries needed")

// ErrNoOplog is returned for a member without an oplog (not a replica-set
// member, or one never initiated): there is no position to be consistent at.
var ErrNoOplog = errors.New("backup: the member has no oplog")

// Options configure Dump.
type Options struct {
	// Cluster names the Mgors (namespace/name) in the manifest.
	Cluster string
	// Prefix is the key prefix of this backup's objects.
	Prefix string
	// PartSize bounds the bytes of one data or oplog object (DefaultPartSize).
	PartSize int
	// BatchSize is the documents asked per find/getMore batch (DefaultBatchSize).
	BatchSize int32
	// Timeout bounds every command, batch and object write (DefaultTimeout).
	Timeout time.Duration
	Log     zerolog.Logger
	// Now is the clock of Started and Finished; time.Now when nil.
	Now func() time.Time
}

func (o *Options) defaults() {
	if o.PartSize <= 0 {
		o.PartSize = DefaultPartSize
	}
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Dump backs up the member that member is directly connected to (host
// names it in the manifest) into store under opts.Prefix, and returns the
// manifest it wrote last. Read a secondary: the dump's reads then cost the
// primary nothing.
//
//  1. Start: the member's newest oplog entry.
//  2. Every collection of every database but local and config: options and
//     indexes (listCollections, listIndexes), then its documents in natural
//     order, in objects of at most PartSize bytes; admin.system.users and
//     admin.system.roles, every document as stored; each view's definition
//     (listCollections), in the manifest. Other system collections and
//     time-series collections are skipped (the manifest names them).
//  3. End: the newest oplog entry again; then the entries in (Start, End].
//  4. The oldest oplog entry must still be at or before Start, else the
//     window has a hole (ErrWindowLost).
//  5. The manifest.
func Dump(ctx context.Context, member *driver.Client, host string, store Store, opts Options) (*Manifest, error) {
	opts.defaults()
	d := &dumper{c: member, store: store, opts: opts, log: opts.Log.With().Str("member", host).Logger()}
	m := &Manifest{Format: FormatVersion, Cluster: opts.Cluster, Member: host, Started: opts.Now().UTC()}
	start, err := d.oplogEdge(ctx, -1)
	if err != nil {
		return nil, err
	}
	m.Start = start
	d.log.Info().Str("start", start.String()).Msg("backup started")
	dbs, err := d.databases(ctx)
	if err != nil {
		return nil, err
	}
	for _, db := range dbs {
		if err := d.dumpDatabase(ctx, m, db); err != nil {
			return nil, err
		}
	}
	if m.End, err = d.oplogEdge(ctx, -1); err != nil {
		return nil, err
	}
	if m.Oplog, err = d.dumpOplog(ctx, m.Start, m.End); err != nil {
		return nil, err
	}
	first, err := d.oplogEdge(ctx, 1)
	if err != nil {
		return nil, err
	}
	if tsAfter(first.Timestamp(), m.Start.Timestamp()) {
		return nil, fmt.Errorf("%w: its oldest entry %s is after the start %s", ErrWindowLost, first, m.Start)
	}
	m.Size += m.Oplog.Bytes
	for _, c := range m.Collections {
		m.Size += c.Bytes
	}
	m.Size += d.metaBytes + m.Users.Bytes + m.Roles.Bytes
	m.Finished = opts.Now().UTC()
	body, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := store.Put(ctx, manifestKey(opts.Prefix), body, "application/json"); err != nil {
		return nil, err
	}
	d.log.Info().Str("end", m.End.String()).Int("collections", len(m.Collections)).Int64("size", m.Size).
		Int64("oplog_entries", m.Oplog.Entries).Msg("backup finished")
	return m, nil
}

type dumper struct {
	c         *driver.Client
	store     Store
	opts      Options
	log       zerolog.Logger
	metaBytes int64
}

func (d *dumper) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d.opts.Timeout)
}

// oplogEdge reads the newest (dir -1) or oldest (dir 1) oplog entry.
func (d *dumper) oplogEdge(ctx context.Context, dir int) (Position, error) {
	cctx, cancel := d.call(ctx)
	defer cancel()
	var e struct {
		TS   bson.Timestamp `bson:"ts"`
		T    int64          `bson:"t"`
		Wall time.Time      `bson:"wall"`
	}
	o := options.FindOne().SetSort(bson.D{{Key: "$natural", Value: dir}}).
		SetProjection(bson.D{{Key: "ts", Value: 1}, {Key: "t", Value: 1}, {Key: "wall", Value: 1}})
	err := d.c.Database("local").Collection("oplog.rs").FindOne(cctx, bson.D{}, o).Decode(&e)
	if errors.Is(err, driver.ErrNoDocuments) {
		return Position{}, ErrNoOplog
	}
	if err != nil {
		return Position{}, fmt.Errorf("backup: read the oplog: %w", err)
	}
	return Position{T: e.TS.T, I: e.TS.I, Term: e.T, Wall: e.Wall.UTC()}, nil
}

func (d *dumper) databases(ctx context.Context) ([]string, error) {
	cctx, cancel := d.call(ctx)
	defer cancel()
	names, err := d.c.ListDatabaseNames(cctx, bson.D{})
	if err != nil {
		return nil, fmt.Errorf("backup: listDatabases: %w", err)
	}
	slices.Sort(names)
	return slices.DeleteFunc(names, func(n string) bool { return n == "local" || n == "config" }), nil
}

type collInfo struct {
	Name    string   `bson:"name"`
	Type    string   `bson:"type"`
	Options bson.Raw `bson:"options"`
	Info    struct {
		UUID bson.Binary `bson:"uuid"`
	} `bson:"info"`
}

func (d *dumper) dumpDatabase(ctx context.Context, m *Manifest, db string) error {
	cctx, cancel := d.call(ctx)
	defer cancel()
	cur, err := d.c.Database(db).ListCollections(cctx, bson.D{})
	if err != nil {
		return fmt.Errorf("backup: listCollections %s: %w", db, err)
	}
	var infos []collInfo
	if err := cur.All(cctx, &infos); err != nil {
		return fmt.Errorf("backup: listCollections %s: %w", db, err)
	}
	slices.SortFunc(infos, func(a, b collInfo) int { return strings.Compare(a.Name, b.Name) })
	for _, ci := range infos {
		ns := db + "." + ci.Name
		switch {
		case db == "admin" && ci.Name == "system.users":
			if m.Users, err = d.dumpAuth(ctx, ci.Name); err != nil {
				return err
			}
		case db == "admin" && ci.Name == "system.roles":
			if m.Roles, err = d.dumpAuth(ctx, ci.Name); err != nil {
				return err
			}
		case ci.Name == "system.views":
			// the views' definitions: each view is recorded below, as listCollections shows it
		case strings.HasPrefix(ci.Name, "system."):
			m.Skipped = append(m.Skipped, Skipped{NS: ns, Reason: "system collection"})
		case ci.Type == "view":
			v, err := viewOf(db, ci)
			if err != nil {
				return err
			}
			m.Views = append(m.Views, v)
		case ci.Type != "" && ci.Type != "collection":
			m.Skipped = append(m.Skipped, Skipped{NS: ns, Reason: ci.Type + " not backed up yet"})
		default:
			c, err := d.dumpCollection(ctx, db, ci)
			if err != nil {
				return err
			}
			m.Collections = append(m.Collections, c)
		}
	}
	return nil
}

func (d *dumper) dumpCollection(ctx context.Context, db string, ci collInfo) (Collection, error) {
	coll := d.c.Database(db).Collection(ci.Name)
	out := Collection{DB: db, Name: ci.Name, Metadata: dataKey(d.opts.Prefix, db, ci.Name, "metadata.json")}
	meta := metadata{Options: ci.Options, Name: ci.Name, Type: "collection"}
	if len(ci.Info.UUID.Data) == 16 {
		meta.UUID = fmt.Sprintf("%x", ci.Info.UUID.Data)
	}
	cctx, cancel := d.call(ctx)
	cur, err := coll.Indexes().List(cctx)
	if err == nil {
		err = cur.All(cctx, &meta.Indexes)
	}
	cancel()
	if err != nil {
		return out, fmt.Errorf("backup: listIndexes %s: %w", out.NS(), err)
	}
	body, err := json.Marshal(meta)
	if err != nil {
		return out, err
	}
	if err := d.put(ctx, out.Metadata, body, "application/json"); err != nil {
		return out, err
	}
	d.metaBytes += int64(len(body))
	cctx, cancel = d.call(ctx)
	docs, err := coll.Find(cctx, bson.D{}, options.Find().SetBatchSize(d.opts.BatchSize))
	cancel()
	if err != nil {
		return out, fmt.Errorf("backup: find %s: %w", out.NS(), err)
	}
	parts, n, size, err := d.drain(ctx, docs, func(i int) string { return dataKey(d.opts.Prefix, db, ci.Name, partName(i)) })
	if err != nil {
		return out, fmt.Errorf("backup: %s: %w", out.NS(), err)
	}
	out.Parts, out.Documents, out.Bytes = parts, n, size
	d.log.Debug().Str("ns", out.NS()).Int64("documents", n).Int64("bytes", size).Msg("collection dumped")
	return out, nil
}

// dumpAuth writes admin's users or roles collection, every document as
// stored: the users' credentials are SCRAM salts and hashes, as mongodump
// writes them.
func (d *dumper) dumpAuth(ctx context.Context, coll string) (Auth, error) {
	cctx, cancel := d.call(ctx)
	docs, err := d.c.Database("admin").Collection(coll).Find(cctx, bson.D{},
		options.Find().SetBatchSize(d.opts.BatchSize).SetSort(bson.D{{Key: "_id", Value: 1}}))
	cancel()
	if err != nil {
		return Auth{}, fmt.Errorf("backup: find admin.%s: %w", coll, err)
	}
	parts, n, size, err := d.drain(ctx, docs, func(i int) string { return dataKey(d.opts.Prefix, "admin", coll, partName(i)) })
	if err != nil {
		return Auth{}, fmt.Errorf("backup: admin.%s: %w", coll, err)
	}
	d.log.Debug().Str("ns", "admin."+coll).Int64("documents", n).Msg("authorization collection dumped")
	return Auth{Parts: parts, Documents: n, Bytes: size}, nil
}

// viewOf is a view's definition from its listCollections entry.
func viewOf(db string, ci collInfo) (View, error) {
	if _, ok := ci.Options.Lookup("viewOn").StringValueOK(); !ok {
		return View{}, fmt.Errorf("backup: view %s.%s: listCollections gives no viewOn", db, ci.Name)
	}
	b, err := bson.MarshalExtJSON(ci.Options, true, false)
	if err != nil {
		return View{}, fmt.Errorf("backup: view %s.%s: %w", db, ci.Name, err)
	}
	return View{DB: db, Name: ci.Name, Options: b}, nil
}

// dumpOplog writes the entries in (start, end].
func (d *dumper) dumpOplog(ctx context.Context, start, end Position) (Oplog, error) {
	filter := bson.D{{Key: "ts", Value: bson.D{{Key: "$gt", Value: start.Timestamp()}, {Key: "$lte", Value: end.Timestamp()}}}}
	cctx, cancel := d.call(ctx)
	cur, err := d.c.Database("local").Collection("oplog.rs").Find(cctx, filter,
		options.Find().SetBatchSize(d.opts.BatchSize).SetSort(bson.D{{Key: "$natural", Value: 1}}))
	cancel()
	if err != nil {
		return Oplog{}, fmt.Errorf("backup: read the oplog: %w", err)
	}
	parts, n, size, err := d.drain(ctx, cur, func(i int) string { return oplogKey(d.opts.Prefix, i) })
	if err != nil {
		return Oplog{}, fmt.Errorf("backup: oplog: %w", err)
	}
	return Oplog{Parts: parts, Entries: n, Bytes: size}, nil
}

// drain writes a cursor's documents, concatenated, into objects of at most
// PartSize bytes (one document larger than that is an object of its own).
func (d *dumper) drain(ctx context.Context, cur *driver.Cursor, key func(int) string) (parts []string, n, size int64, err error) {
	defer func() {
		cctx, cancel := d.call(ctx)
		_ = cur.Close(cctx)
		cancel()
	}()
	var buf []byte
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		k := key(len(parts))
		if err := d.put(ctx, k, buf, "application/bson"); err != nil {
			return err
		}
		parts, size, buf = append(parts, k), size+int64(len(buf)), nil
		return nil
	}
	for {
		nctx, cancel := d.call(ctx)
		ok := cur.Next(nctx)
		cancel()
		if !ok {
			break
		}
		if len(buf) > 0 && len(buf)+len(cur.Current) > d.opts.PartSize {
			if err := flush(); err != nil {
				return nil, 0, 0, err
			}
		}
		buf = append(buf, cur.Current...)
		n++
	}
	if err := cur.Err(); err != nil {
		return nil, 0, 0, err
	}
	if err := flush(); err != nil {
		return nil, 0, 0, err
	}
	return parts, n, size, nil
}

func (d *dumper) put(ctx context.Context, key string, body []byte, contentType string) error {
	cctx, cancel := d.call(ctx)
	defer cancel()
	return d.store.Put(cctx, key, body, contentType)
}

// tsAfter reports whether a is after b.
func tsAfter(a, b bson.Timestamp) bool { return a.T > b.T || a.T == b.T && a.I > b.I }
