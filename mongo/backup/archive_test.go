package backup_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
	driver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/mgors/operator/mongo"
	"github.com/mgors/operator/mongo/backup"
	"github.com/mgors/operator/mongo/backup/store"
	"github.com/mgors/operator/mongo/sim"
)

// workload writes app.items through a replica-set client, w:majority,
// from concurrent writers, and keeps the model of what the acknowledged
// writes left: each writer owns the _ids it inserts (disjoint), so the
// documents are known exactly once every writer's round ends.
type workload struct {
	t       *testing.T
	writers []*writer
}

// writer is one client session writing its own documents, one at a time.
type writer struct {
	items *driver.Collection
	sess  *driver.Session
	docs  map[int32]bson.D
	next  int32
}

func newWorkload(t *testing.T, hosts []string, set string, writers int) *workload {
	t.Helper()
	c, err := driver.Connect(options.Client().SetHosts(hosts).SetReplicaSet(set).
		SetWriteConcern(writeconcern.Majority()).SetTimeout(30 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	w := &workload{t: t}
	for i := range writers {
		sess, err := c.StartSession()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sess.EndSession(context.Background()) })
		w.writers = append(w.writers, &writer{items: c.Database("app").Collection("items"), sess: sess,
			docs: map[int32]bson.D{}, next: int32(i) * 1_000_000})
	}
	return w
}

// round has every writer do n writes concurrently and returns the newest
// operation time of the round's writes: the point after the round.
func (w *workload) round(k, n int) bson.Timestamp {
	w.t.Helper()
	errs := make([]error, len(w.writers))
	var wg sync.WaitGroup
	for i, wr := range w.writers {
		wg.Go(func() { errs[i] = wr.round(k, n) })
	}
	wg.Wait()
	var last bson.Timestamp
	for i, wr := range w.writers {
		if errs[i] != nil {
			w.t.Fatalf("writer %d: %v", i, errs[i])
		}
		if ot := *wr.sess.OperationTime(); ot.After(last) {
			last = ot
		}
	}
	return last
}

// round does n writes (inserts, $set updates, replacements, deletes) of
// the writer's documents, each acknowledged by a majority before the
// next, recording each in the model.
func (wr *writer) round(k, n int) error {
	ctx := driver.NewSessionContext(context.Background(), wr.sess)
	for j := range n {
		var err error
		ids := slices.Sorted(maps.Keys(wr.docs))
		switch {
		case j%4 == 0 || len(ids) < 4:
			wr.next++
			doc := bson.D{{Key: "_id", Value: wr.next}, {Key: "round", Value: int32(k)}, {Key: "v", Value: int32(0)}}
			if _, err = wr.items.InsertOne(ctx, doc); err == nil {
				wr.docs[wr.next] = doc
			}
		case j%4 == 1:
			id := ids[(j*7+k)%len(ids)]
			v := int32(k*1000 + j)
			if _, err = wr.items.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: v}}}}); err == nil {
				doc := slices.Clone(wr.docs[id])
				doc[2].Value = v // _id, round, v[, replaced]: $set keeps the field's place
				wr.docs[id] = doc
			}
		case j%4 == 2:
			id := ids[(j*5+k)%len(ids)]
			doc := bson.D{{Key: "_id", Value: id}, {Key: "round", Value: int32(k)}, {Key: "v", Value: int32(-j)}, {Key: "replaced", Value: true}}
			if _, err = wr.items.ReplaceOne(ctx, bson.D{{Key: "_id", Value: id}}, doc[1:]); err == nil {
				wr.docs[id] = doc
			}
		default:
			id := ids[(j*3+k)%len(ids)]
			if _, err = wr.items.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}}); err == nil {
				delete(wr.docs, id)
			}
		}
		if err != nil {
			return fmt.Errorf("round %d, write %d: %w", k, j, err)
		}
	}
	return nil
}

// want is the model as snapshot returns a collection: sorted by _id.
func (w *workload) want() []string {
	docs := map[int32]bson.D{}
	for _, wr := range w.writers {
		maps.Copy(docs, wr.docs)
	}
	var out []string
	for _, id := range slices.Sorted(maps.Keys(docs)) {
		b, err := bson.MarshalExtJSON(docs[id], true, false)
		if err != nil {
			w.t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}

// TestArchiveAndRestoreToAPointInTime: a 3-member set is dumped from a
// secondary and archived from it continuously while three writers write
// in rounds, w:majority; between rounds 2 and 3 the archived member is
// elected primary (a new term). Restored into fresh 1-member sets to the
// point after round 1 (a wall time, TimestampAt) and after round 3 (the
// round's newest operation time), and into one of them again to after round
// 2, each holds exactly the documents acknowledged up to that point. A
// point past the archive or before the backup's end is refused, as is one
// past a chunk deleted from the store. A new Archiver, on another member,
// resumes the archive: the archive then holds every entry of the source's
// oplog after the backup's Start, once, in order.
func TestArchiveAndRestoreToAPointInTime(t *testing.T) {
	ctx := context.Background()
	hosts, primary := simSet(t, "pitr", 3)
	secondary := hosts[0]
	if mongo.SameHost(secondary, primary) {
		secondary = hosts[1]
	}
	s := newStore(t)
	w := newWorkload(t, hosts, "pitr", 3)
	opTime0 := w.round(0, 20)
	// The secondary dumped has applied round 0 (w:majority may not have
	// waited for it), so the backup's End is after it.
	eventually(t, "the secondary has round 0", func() error {
		if newest := newestTS(t, direct(t, secondary)); newest.Before(opTime0) {
			return fmt.Errorf("its newest entry is ts(%d,%d)", newest.T, newest.I)
		}
		return nil
	})
	m, err := backup.Dump(ctx, direct(t, secondary), secondary, s, backup.Options{Cluster: "default/pitr", Prefix: "default/pitr/b1", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	atEnd := w.want()
	archive := backup.ArchivePrefix("", "default", "pitr")
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)
	opts := backup.ArchiveOptions{Prefix: archive, ChunkEvery: 100 * time.Millisecond, ChunkBytes: 2 << 10, Timeout: 10 * time.Second, Log: log}
	a := backup.NewArchiver(direct(t, secondary), secondary, s, m.Start, opts)
	if err := a.Resume(ctx); err != nil || a.Last() != m.Start {
		t.Fatalf("resume of an empty archive: %v, last %s", err, a.Last())
	}
	runCtx, stop := context.WithCancel(ctx)
	var runErr error
	var wg sync.WaitGroup
	wg.Go(func() { runErr = a.Run(runCtx) })

	const rounds = 4
	var (
		times  [rounds + 1]time.Time
		opTime [rounds + 1]bson.Timestamp
		want   [rounds + 1][]string
	)
	admin := mongo.NewClient(mongo.Options{Timeout: 10 * time.Second, Log: zerolog.Nop()})
	defer func() { _ = admin.Close(ctx) }()
	for k := 1; k <= rounds; k++ {
		if k == 3 {
			stepUp(t, admin, secondary)
		}
		opTime[k] = w.round(k, 30)
		times[k], want[k] = time.Now(), w.want()
		// The next round's entries are written on a later millisecond
		// (an entry's wall clock has milliseconds).
		time.Sleep(20 * time.Millisecond)
	}
	// Run stops; ArchiveOnce goes on until the archive holds the last round.
	stop()
	wg.Wait()
	if !errors.Is(runErr, context.Canceled) {
		t.Fatalf("Run: %v", runErr)
	}
	eventually(t, "the archive holds the last round", func() error {
		if _, err := a.ArchiveOnce(ctx); err != nil {
			return err
		}
		if last := a.Last().Timestamp(); last.Before(opTime[rounds]) {
			return fmt.Errorf("archived to %s, the last round ends at ts(%d,%d)", a.Last(), opTime[rounds].T, opTime[rounds].I)
		}
		return nil
	})
	rng, _, err := backup.ArchiveCoverage(ctx, s, "default/pitr/b1", archive, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("backup %s .. %s; archive covers %s in %d chunks", m.Start, m.End, rng, len(rng.Chunks))
	if rng.From != m.End.Timestamp() || rng.To != a.Last().Timestamp() || len(rng.Chunks) < 2 {
		t.Fatalf("coverage %s in %d chunks; archived to %s", rng, len(rng.Chunks), a.Last())
	}

	// Restores.
	restoreOpts := backup.RestoreOptions{Timeout: 10 * time.Second, Log: log}
	_, dst1 := simSet(t, "pdst1", 1)
	_, dst2 := simSet(t, "pdst2", 1)
	at1, err := backup.TimestampAt(ctx, s, "default/pitr/b1", archive, times[1], 0)
	if err != nil {
		t.Fatal(err)
	}
	check := func(name, host string, at bson.Timestamp, want []string) {
		t.Helper()
		res, err := backup.RestoreTo(ctx, direct(t, host), s, "default/pitr/b1", archive, at, restoreOpts)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := snapshot(t, direct(t, host), "app", "items", bson.Timestamp{})
		if !slices.Equal(got, want) {
			t.Errorf("%s (ts(%d,%d), restored to %s): %d documents, want the %d acknowledged", name, at.T, at.I, res.End, len(got), len(want))
			for i := range min(len(got), len(want)) {
				if got[i] != want[i] {
					t.Logf("first difference: %s != %s", got[i], want[i])
					break
				}
			}
		}
	}
	check("after round 1, by wall time", dst1, at1, want[1])
	check("after round 3, by timestamp", dst2, opTime[3], want[3])
	at2, err := backup.TimestampAt(ctx, s, "default/pitr/b1", archive, times[2], 0)
	if err != nil {
		t.Fatal(err)
	}
	check("after round 2, into a set restored before", dst1, at2, want[2])
	check("at the backup's end", dst2, m.End.Timestamp(), atEnd)

	// Refusals.
	past := bson.Timestamp{T: rng.To.T + 3600}
	if _, err := backup.RestoreTo(ctx, direct(t, dst1), s, "default/pitr/b1", archive, past, restoreOpts); !errors.Is(err, backup.ErrOutsideRange) || !strings.Contains(err.Error(), rng.String()) {
		t.Errorf("restore past the archive: %v", err)
	}
	if _, err := backup.TimestampAt(ctx, s, "default/pitr/b1", archive, time.Now().Add(time.Hour), 0); !errors.Is(err, backup.ErrOutsideRange) {
		t.Errorf("a wall time past the archive: %v", err)
	}
	if _, err := backup.TimestampAt(ctx, s, "default/pitr/b1", archive, m.End.Wall.Add(-time.Second), 0); !errors.Is(err, backup.ErrOutsideRange) {
		t.Errorf("a wall time before the backup's end: %v", err)
	}

	// Resume on another member (the archived one is primary now): the
	// archive continues where it ended.
	other := hosts[0]
	if mongo.SameHost(other, secondary) {
		other = hosts[1]
	}
	opTime5 := w.round(5, 10)
	b := backup.NewArchiver(direct(t, other), other, s, m.Start, opts)
	if err := b.Resume(ctx); err != nil || b.Last() != a.Last() {
		t.Fatalf("resumed at %s (%v), the archive ends at %s", b.Last(), err, a.Last())
	}
	eventually(t, "the resumed archive holds round 5", func() error {
		if _, err := b.ArchiveOnce(ctx); err != nil {
			return err
		}
		if b.Last().Timestamp().Before(opTime5) {
			return fmt.Errorf("archived to %s", b.Last())
		}
		return nil
	})
	archived := archivedEntries(t, s, archive)
	// The primary (the member first archived) has every committed entry.
	source := oplogTimestamps(t, direct(t, secondary), m.Start.Timestamp(), b.Last().Timestamp())
	if !slices.Equal(archived, source) {
		t.Errorf("the archive holds %d entries, the source's oplog %d in (%s, %s]", len(archived), len(source), m.Start, b.Last())
	}
	terms := archivedTerms(t, s, archive)
	if len(terms) < 2 {
		t.Errorf("archived entries of terms %v: the failover is not in the archive", terms)
	}

	// A chunk deleted: the range ends before it, and a restore past it is refused.
	rng, _, err = backup.ArchiveCoverage(ctx, s, "default/pitr/b1", archive, 0)
	if err != nil {
		t.Fatal(err)
	}
	hole := rng.Chunks[len(rng.Chunks)/2]
	if err := s.Delete(ctx, hole.Key); err != nil {
		t.Fatal(err)
	}
	cut, _, err := backup.ArchiveCoverage(ctx, s, "default/pitr/b1", archive, 0)
	if err != nil || cut.To != hole.After {
		t.Fatalf("with %s deleted the archive covers %s (%v), want up to its start ts(%d,%d)", hole.Key, cut, err, hole.After.T, hole.After.I)
	}
	if _, err := backup.RestoreTo(ctx, direct(t, dst1), s, "default/pitr/b1", archive, hole.Last, restoreOpts); !errors.Is(err, backup.ErrOutsideRange) {
		t.Errorf("restore past a hole: %v", err)
	}
}

// stepUp makes host primary (replSetStepUp: a new term) and waits until
// it takes writes.
func stepUp(t *testing.T, admin *mongo.Client, host string) {
	t.Helper()
	eventually(t, host+" primary", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		r, err := admin.Hello(ctx, host)
		if err != nil {
			return err
		}
		if r.IsWritablePrimary {
			return nil
		}
		_ = direct(t, host).Database("admin").RunCommand(ctx, bson.D{{Key: "replSetStepUp", Value: 1}}).Err()
		return errors.New("not primary yet")
	})
}

// archivedEntries is the timestamps of every entry of the archive's
// chunks, in key order.
func archivedEntries(t *testing.T, s *store.Client, prefix string) []bson.Timestamp {
	t.Helper()
	var out []bson.Timestamp
	forEachArchived(t, s, prefix, func(e bson.Raw) {
		ts, i, _ := e.Lookup("ts").TimestampOK()
		out = append(out, bson.Timestamp{T: ts, I: i})
	})
	return out
}

func archivedTerms(t *testing.T, s *store.Client, prefix string) []int64 {
	t.Helper()
	var out []int64
	forEachArchived(t, s, prefix, func(e bson.Raw) {
		if term, _ := e.Lookup("t").AsInt64OK(); !slices.Contains(out, term) {
			out = append(out, term)
		}
	})
	return out
}

func forEachArchived(t *testing.T, s *store.Client, prefix string, f func(bson.Raw)) {
	t.Helper()
	objs, err := s.List(context.Background(), prefix+"/")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		body, err := s.Get(context.Background(), o.Key)
		if err != nil {
			t.Fatal(err)
		}
		for len(body) > 0 {
			doc, rest, ok := bsoncore.ReadDocument(body)
			if !ok {
				t.Fatalf("%s: truncated", o.Key)
			}
			f(bson.Raw(doc))
			body = rest
		}
	}
}

// newestTS is the timestamp of c's newest oplog entry.
func newestTS(t *testing.T, c *driver.Client) bson.Timestamp {
	t.Helper()
	var e struct {
		TS bson.Timestamp `bson:"ts"`
	}
	if err := c.Database("local").Collection("oplog.rs").FindOne(context.Background(), bson.D{},
		options.FindOne().SetSort(bson.D{{Key: "$natural", Value: -1}})).Decode(&e); err != nil {
		t.Fatal(err)
	}
	return e.TS
}

// oplogTimestamps is the timestamps of host's oplog entries in (after, last].
func oplogTimestamps(t *testing.T, c *driver.Client, after, last bson.Timestamp) []bson.Timestamp {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	filter := bson.D{{Key: "ts", Value: bson.D{{Key: "$gt", Value: after}, {Key: "$lte", Value: last}}}}
	cur, err := c.Database("local").Collection("oplog.rs").Find(ctx, filter, options.Find().SetSort(bson.D{{Key: "$natural", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	var out []bson.Timestamp
	for cur.Next(ctx) {
		ts, i, _ := cur.Current.Lookup("ts").TimestampOK()
		out = append(out, bson.Timestamp{T: ts, I: i})
	}
	if err := cur.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestArchiveGap: with a 1 MB oplog, writes made while the archiver does
// not run roll the entries after its last one off the oplog; the next
// ArchiveOnce fails with ErrWindowLost naming the gap, and so does every
// later one, and nothing more is written to the archive.
func TestArchiveGap(t *testing.T) {
	ctx := context.Background()
	_, primary := simSetWith(t, "gap", 1, func(c *sim.Config) { c.OplogSizeMB = 1 })
	c := direct(t, primary)
	items := c.Database("app").Collection("items")
	if _, err := items.InsertOne(ctx, bson.D{{Key: "_id", Value: 0}}); err != nil {
		t.Fatal(err)
	}
	s := newStore(t)
	m, err := backup.Dump(ctx, c, primary, s, backup.Options{Prefix: "gap/b1", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	archive := backup.ArchivePrefix("", "default", "gap")
	a := backup.NewArchiver(c, primary, s, m.Start, backup.ArchiveOptions{Prefix: archive, Timeout: 10 * time.Second})
	if _, err := items.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the first insert archived", func() error {
		if _, err := a.ArchiveOnce(ctx); err != nil {
			return err
		}
		if !a.Last().Timestamp().After(m.End.Timestamp()) {
			return errors.New("not yet")
		}
		return nil
	})
	last := a.Last()
	pad := strings.Repeat("x", 16<<10)
	for i := 2; i < 200; i++ {
		if _, err := items.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "pad", Value: pad}}); err != nil {
			t.Fatal(err)
		}
	}
	oplog := c.Database("local").Collection("oplog.rs")
	eventually(t, "the oplog rolled over past the archive's last entry", func() error {
		var oldest struct {
			TS bson.Timestamp `bson:"ts"`
		}
		if err := oplog.FindOne(ctx, bson.D{}, options.FindOne().SetSort(bson.D{{Key: "$natural", Value: 1}})).Decode(&oldest); err != nil {
			return err
		}
		if !oldest.TS.After(last.Timestamp()) {
			return fmt.Errorf("the oldest entry is ts(%d,%d)", oldest.TS.T, oldest.TS.I)
		}
		return nil
	})
	before, err := s.List(ctx, archive+"/")
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		n, err := a.ArchiveOnce(ctx)
		if !errors.Is(err, backup.ErrWindowLost) || !strings.Contains(err.Error(), last.String()) || n != 0 {
			t.Fatalf("ArchiveOnce after the gap: %d entries, %v", n, err)
		}
	}
	if a.Last() != last {
		t.Errorf("the archiver moved to %s past the gap", a.Last())
	}
	after, err := s.List(ctx, archive+"/")
	if err != nil || len(after) != len(before) {
		t.Errorf("the archive had %d objects, has %d after the gap (%v)", len(before), len(after), err)
	}
}
