package backup

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
	driver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/mgors/operator/mongo"
	"github.com/mgors/operator/mongo/backup/store"
)

// ArchiveDir is the last segment of a cluster's archive prefix. A
// Kubernetes name holds no '_', so no MgorsBackup's prefix (its name in the
// same place) can be the archive's.
const ArchiveDir = "oplog_archive"

// ArchivePrefix is where the oplog archive of the Mgors cluster in
// namespace goes in its bucket: <store prefix>/<namespace>/<cluster>/oplog_archive,
// beside the cluster's backups (Prefix).
func ArchivePrefix(storePrefix, namespace, cluster string) string {
	return path.Join(storePrefix, namespace, cluster, ArchiveDir)
}

// Defaults of ArchiveOptions.
const (
	DefaultChunkEvery = 10 * time.Second
	DefaultChunkBytes = 16 << 20
)

// ErrDiverged is returned when the member's oplog holds another entry
// (another term) at the archive's last timestamp, or none although it has
// older and newer ones: its history is not the one archived, so what
// follows there cannot continue the archive.
var ErrDiverged = errors.New("backup: the member's oplog does not continue the archive")

// ArchiveStore is a Store that also lists keys: store.Client.
type ArchiveStore interface {
	Store
	List(ctx context.Context, prefix string) ([]store.Object, error)
}

// ArchiveOptions configure an Archiver.
type ArchiveOptions struct {
	// Prefix is the archive's key prefix (ArchivePrefix).
	Prefix string
	// ChunkEvery is Run's period: the oplog read since the last call is
	// written as chunks every ChunkEvery (DefaultChunkEvery).
	ChunkEvery time.Duration
	// ChunkBytes bounds one chunk's bytes (DefaultChunkBytes); an entry
	// larger than that is a chunk of its own.
	ChunkBytes int
	// BatchSize is the entries asked per find/getMore batch (DefaultBatchSize).
	BatchSize int32
	// Timeout bounds every command, batch and object write (DefaultTimeout).
	Timeout time.Duration
	Log     zerolog.Logger
}

// Archiver copies a replica set's oplog, from one member, into an archive
// of chunks in the store, continuously: each ArchiveOnce writes the
// entries after the last one archived, up to the member's majority commit
// point. With a backup taken at or after the archive's start, the archive
// lets a restore reach any point up to its last entry (Coverage, RestoreTo).
//
// Only majority-committed entries are archived, so a failover never rolls
// back an archived entry: the cap is the member's own
// replSetGetStatus optimes.lastCommittedOpTime, read before the oplog.
// A readConcern majority find would say the same on mongod, but the
// oplog's visibility under it is a storage detail (mongod-sim ignores it
// there), while the commit point is the definition itself. The member's
// oplog must hold the commit point's entry, same term (mongod and
// mongod-sim cap a member's commit point at what it has applied): then,
// as two oplogs that hold one entry agree on everything before it, every
// entry the member has up to there is the committed history, whatever
// the member learnt its commit point from.
//
// An Archiver is used by one goroutine at a time.
type Archiver struct {
	c     *driver.Client
	host  string
	store ArchiveStore
	opts  ArchiveOptions
	log   zerolog.Logger
	// last is the newest entry archived, or the start.
	last Position
	// lost is set once the oplog rolled over past last: the archive
	// cannot continue, ever; a new backup starts a new chain.
	lost error
}

// NewArchiver archives, from the member that member is directly
// connected to (host names it in logs), the entries after from (a
// backup's Start, say: it must be an entry, its term included). Read a
// secondary, as Dump does; if it becomes primary the archive goes on.
func NewArchiver(member *driver.Client, host string, st ArchiveStore, from Position, opts ArchiveOptions) *Archiver {
	if opts.ChunkEvery <= 0 {
		opts.ChunkEvery = DefaultChunkEvery
	}
	if opts.ChunkBytes <= 0 {
		opts.ChunkBytes = DefaultChunkBytes
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = DefaultBatchSize
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	return &Archiver{c: member, host: host, store: st, opts: opts, last: from,
		log: opts.Log.With().Str("member", host).Str("archive", opts.Prefix).Logger()}
}

// Last is the newest entry archived (the start until one is).
func (a *Archiver) Last() Position { return a.last }

// Resume continues the archive in the store: when its newest chunk ends
// after the position the Archiver has, the Archiver goes on after that
// chunk's last entry (read from the chunk, its term included). A new
// Archiver, after a restart or on another member, calls it before the
// first ArchiveOnce: nothing is archived twice and nothing is skipped.
func (a *Archiver) Resume(ctx context.Context) error {
	cctx, cancel := a.call(ctx)
	objs, err := a.store.List(cctx, a.opts.Prefix+"/")
	cancel()
	if err != nil {
		return fmt.Errorf("backup: list the oplog archive: %w", err)
	}
	var newest Chunk
	for _, o := range objs {
		if c, ok := ParseChunk(o.Key); ok && tsAfter(c.Last, newest.Last) {
			newest = c
		}
	}
	if !tsAfter(newest.Last, a.last.Timestamp()) {
		return nil
	}
	cctx, cancel = a.call(ctx)
	body, err := a.store.Get(cctx, newest.Key)
	cancel()
	if err != nil {
		return fmt.Errorf("backup: read the oplog archive: %w", err)
	}
	entries, err := split(body)
	if err != nil {
		return fmt.Errorf("backup: oplog archive chunk %s: %w", newest.Key, err)
	}
	if len(entries) == 0 {
		return fmt.Errorf("backup: oplog archive chunk %s holds no entries", newest.Key)
	}
	p, err := entryPosition(entries[len(entries)-1])
	if err != nil {
		return fmt.Errorf("backup: oplog archive chunk %s: %w", newest.Key, err)
	}
	if p.Timestamp() != newest.Last {
		return fmt.Errorf("backup: oplog archive chunk %s ends at %s, not at its key's timestamp", newest.Key, p)
	}
	a.log.Info().Str("from", a.last.String()).Str("to", p.String()).Msg("oplog archive resumed")
	a.last = p
	return nil
}

// ArchiveOnce writes the member's entries after Last, up to its majority
// commit point, as chunks of at most ChunkBytes, and returns how many it
// wrote. It fails with ErrWindowLost, for good, once the member's oldest
// entry is after Last (the entries between are gone: the gap is named),
// and with ErrDiverged when the member's oplog does not hold Last. Every
// command, batch and object write has its own deadline (Timeout).
func (a *Archiver) ArchiveOnce(ctx context.Context) (int64, error) {
	if a.lost != nil {
		return 0, a.lost
	}
	if a.last.Timestamp().IsZero() {
		return 0, errors.New("backup: the oplog archive has no start position")
	}
	commit, err := a.commitPoint(ctx)
	if err != nil {
		return 0, err
	}
	if tsAfter(commit.TS, a.last.Timestamp()) {
		p, found, err := a.entryAt(ctx, commit.TS)
		if err != nil {
			return 0, err
		}
		if !found || p.Term != commit.T {
			return 0, fmt.Errorf("%w: %s does not hold its commit point ts(%d,%d) term %d", ErrDiverged, a.host, commit.TS.T, commit.TS.I, commit.T)
		}
	}
	filter := bson.D{{Key: "ts", Value: bson.D{{Key: "$gt", Value: a.last.Timestamp()}, {Key: "$lte", Value: commit.TS}}}}
	cctx, cancel := a.call(ctx)
	cur, err := a.c.Database("local").Collection("oplog.rs").Find(cctx, filter,
		options.Find().SetBatchSize(a.opts.BatchSize).SetSort(bson.D{{Key: "$natural", Value: 1}}))
	cancel()
	if err != nil {
		return 0, fmt.Errorf("backup: read the oplog: %w", err)
	}
	defer func() {
		cctx, cancel := a.call(ctx)
		_ = cur.Close(cctx)
		cancel()
	}()
	next := func() bool {
		nctx, cancel := a.call(ctx)
		defer cancel()
		return cur.Next(nctx)
	}
	more := next()
	// The cursor is open: if Last is still in the oplog now, it was when
	// the read began (the oplog loses its oldest entries only), so what the
	// read returns follows Last with nothing missing.
	if ok, err := a.holdsLast(ctx); err != nil || !ok {
		return 0, err
	}
	var buf []byte
	var n, inBuf int64
	var newest Position
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		key := chunkKey(a.opts.Prefix, a.last.Timestamp(), newest.Timestamp())
		pctx, cancel := a.call(ctx)
		err := a.store.Put(pctx, key, buf, "application/bson")
		cancel()
		if err != nil {
			return err
		}
		a.log.Debug().Str("chunk", key).Int64("entries", inBuf).Int("bytes", len(buf)).Msg("oplog chunk archived")
		a.last, n, buf, inBuf = newest, n+inBuf, nil, 0
		return nil
	}
	for ; more; more = next() {
		p, err := entryPosition(cur.Current)
		if err != nil {
			return n, err
		}
		if len(buf) > 0 && len(buf)+len(cur.Current) > a.opts.ChunkBytes {
			if err := flush(); err != nil {
				return n, err
			}
		}
		buf = append(buf, cur.Current...)
		newest = p
		inBuf++
	}
	if err := cur.Err(); err != nil {
		return n, fmt.Errorf("backup: read the oplog: %w", err)
	}
	return n, flush()
}

// Run archives every ChunkEvery until ctx ends or the window is lost
// (ErrWindowLost, returned); other errors are logged and tried again at
// the next tick.
func (a *Archiver) Run(ctx context.Context) error {
	for {
		n, err := a.ArchiveOnce(ctx)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, ErrWindowLost):
			a.log.Error().Err(err).Msg("oplog archive stopped")
			return err
		case err != nil:
			a.log.Warn().Err(err).Msg("oplog archiving failed; trying again")
		case n > 0:
			a.log.Debug().Int64("entries", n).Str("last", a.last.String()).Msg("oplog archived")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(a.opts.ChunkEvery):
		}
	}
}

func (a *Archiver) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, a.opts.Timeout)
}

// commitPoint is the member's replSetGetStatus optimes.lastCommittedOpTime.
func (a *Archiver) commitPoint(ctx context.Context) (mongo.OpTime, error) {
	cctx, cancel := a.call(ctx)
	defer cancel()
	var st struct {
		OpTimes struct {
			Committed *mongo.OpTime `bson:"lastCommittedOpTime"`
		} `bson:"optimes"`
	}
	if err := a.c.Database("admin").RunCommand(cctx, bson.D{{Key: "replSetGetStatus", Value: 1}}).Decode(&st); err != nil {
		return mongo.OpTime{}, fmt.Errorf("backup: replSetGetStatus: %w", err)
	}
	if st.OpTimes.Committed == nil {
		return mongo.OpTime{}, errors.New("backup: replSetGetStatus has no optimes.lastCommittedOpTime")
	}
	return *st.OpTimes.Committed, nil
}

// entryAt reads the position of the member's oplog entry at ts, if it has one.
func (a *Archiver) entryAt(ctx context.Context, ts bson.Timestamp) (Position, bool, error) {
	cctx, cancel := a.call(ctx)
	defer cancel()
	proj := options.FindOne().SetProjection(bson.D{{Key: "ts", Value: 1}, {Key: "t", Value: 1}, {Key: "wall", Value: 1}})
	raw, err := a.c.Database("local").Collection("oplog.rs").FindOne(cctx, bson.D{{Key: "ts", Value: ts}}, proj).Raw()
	if errors.Is(err, driver.ErrNoDocuments) {
		return Position{}, false, nil
	}
	if err != nil {
		return Position{}, false, fmt.Errorf("backup: read the oplog: %w", err)
	}
	p, err := entryPosition(raw)
	return p, err == nil, err
}

// holdsLast reports whether the member's oplog holds Last, same term. It
// does not (false, nil) when the member has not applied Last yet (it
// lags: nothing to archive from it now); otherwise the answer is an error:
// ErrWindowLost, remembered, when its oldest entry is after Last, else
// ErrDiverged.
func (a *Archiver) holdsLast(ctx context.Context) (bool, error) {
	p, found, err := a.entryAt(ctx, a.last.Timestamp())
	if err != nil {
		return false, err
	}
	if found {
		if p.Term != a.last.Term {
			return false, fmt.Errorf("%w: its entry at ts(%d,%d) has term %d, the archive's %d", ErrDiverged, a.last.T, a.last.I, p.Term, a.last.Term)
		}
		return true, nil
	}
	d := &dumper{c: a.c, opts: Options{Timeout: a.opts.Timeout}}
	oldest, err := d.oplogEdge(ctx, 1)
	if err != nil {
		return false, err
	}
	newest, err := d.oplogEdge(ctx, -1)
	if err != nil {
		return false, err
	}
	switch {
	case tsAfter(oldest.Timestamp(), a.last.Timestamp()):
		a.lost = fmt.Errorf("%w: the archive ends at %s, the oldest entry of %s is %s: the entries between are gone",
			ErrWindowLost, a.last, a.host, oldest)
		return false, a.lost
	case tsAfter(a.last.Timestamp(), newest.Timestamp()):
		return false, nil
	}
	return false, fmt.Errorf("%w: %s has no entry at %s", ErrDiverged, a.host, a.last)
}

// entryPosition reads an oplog entry's ts, t and wall.
func entryPosition(e bson.Raw) (Position, error) {
	t, i, ok := e.Lookup("ts").TimestampOK()
	if !ok {
		return Position{}, errors.New("backup: an oplog entry without ts")
	}
	p := Position{T: t, I: i}
	p.Term, _ = e.Lookup("t").AsInt64OK()
	if w, ok := e.Lookup("wall").DateTimeOK(); ok {
		p.Wall = time.UnixMilli(w).UTC()
	}
	return p, nil
}
