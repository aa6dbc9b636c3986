package backup_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
	driver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/mgors/operator/mongo"
	"github.com/mgors/operator/mongo/backup"
)

// seed writes the data the test backs up: documents of many BSON types over
// several parts, a secondary and a unique index, a capped collection, a
// collection whose name holds '/', and an empty one.
func seed(t *testing.T, c *driver.Client) {
	t.Helper()
	ctx := context.Background()
	orders := c.Database("shop").Collection("orders")
	var docs []any
	for i := range 2000 {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "customer", Value: fmt.Sprintf("c%03d", i%97)},
			{Key: "total", Value: float64(i) * 1.25}, {Key: "when", Value: time.UnixMilli(int64(1_700_000_000_000 + i)).UTC()},
			{Key: "tags", Value: bson.A{"a", i % 3}}, {Key: "blob", Value: bson.Binary{Data: []byte(strings.Repeat("x", i%50))}},
			{Key: "big", Value: int64(i) << 40}, {Key: "oid", Value: bson.NewObjectID()}})
	}
	if _, err := orders.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if _, err := orders.Indexes().CreateOne(ctx, driver.IndexModel{Keys: bson.D{{Key: "customer", Value: 1}, {Key: "when", Value: -1}}}); err != nil {
		t.Fatal(err)
	}
	items := c.Database("shop").Collection("items")
	if _, err := items.InsertMany(ctx, []any{bson.D{{Key: "sku", Value: "a"}}, bson.D{{Key: "sku", Value: "b"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := items.Indexes().CreateOne(ctx, driver.IndexModel{Keys: bson.D{{Key: "sku", Value: 1}}, Options: options.Index().SetUnique(true)}); err != nil {
		t.Fatal(err)
	}
	if err := c.Database("shop").CreateCollection(ctx, "events", options.CreateCollection().SetCapped(true).SetSizeInBytes(1<<20)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Database("shop").Collection("events").InsertOne(ctx, bson.D{{Key: "e", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Database("app").Collection("a/b").InsertOne(ctx, bson.D{{Key: "_id", Value: "k"}, {Key: "nested", Value: bson.D{{Key: "x", Value: bson.D{{Key: "y", Value: 1}}}}}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Database("app").CreateCollection(ctx, "empty"); err != nil {
		t.Fatal(err)
	}
}

// write inserts, replaces, updates and deletes shop.orders documents until
// stop closes, and returns how many writes were acknowledged.
func write(c *driver.Client, stop <-chan struct{}) *atomic.Int64 {
	var n atomic.Int64
	orders := c.Database("shop").Collection("orders")
	go func() {
		r := rand.New(rand.NewPCG(1, 2))
		next := 100_000
		for {
			select {
			case <-stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			id := r.IntN(2000)
			var err error
			switch r.IntN(4) {
			case 0:
				next++
				_, err = orders.InsertOne(ctx, bson.D{{Key: "_id", Value: next}, {Key: "customer", Value: "new"}})
			case 1:
				_, err = orders.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "total", Value: 1}}}, {Key: "$set", Value: bson.D{{Key: "seen", Value: true}}}})
			case 2:
				_, err = orders.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}})
			case 3:
				_, err = orders.ReplaceOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "replaced", Value: next}})
			}
			cancel()
			if err == nil {
				n.Add(1)
			}
			time.Sleep(time.Millisecond)
		}
	}()
	return &n
}

// TestDumpFromASecondaryAndRestore backs up a secondary (backup.Source's
// choice, from the set's status and config) of a 3-member set
// while the primary takes writes, into the S3 server, and restores it into
// a new 1-member set. The restored data equals the source's as of the
// window's end (a snapshot read at End on the source's primary), document
// for document; the indexes and collection options are there; the manifest
// counts what its objects hold and their size; the window held writes, so
// the replay was needed. Restored into its own set, the backup brings that
// set back to End.
func TestDumpFromASecondaryAndRestore(t *testing.T) {
	ctx := context.Background()
	_, primary := simSet(t, "src", 3)
	admin := mongo.NewClient(mongo.Options{Timeout: 5 * time.Second, Log: zerolog.Nop()})
	defer func() { _ = admin.Close(ctx) }()
	st, err := admin.Status(ctx, primary)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := admin.Config(ctx, primary)
	if err != nil {
		t.Fatal(err)
	}
	secondary, err := backup.Source(st, cfg)
	if err != nil || mongo.SameHost(secondary, primary) {
		t.Fatalf("the source chosen is %s (%v); the primary is %s", secondary, err, primary)
	}
	src := direct(t, primary)
	seed(t, src)
	s := newStore(t)

	stop := make(chan struct{})
	writes := write(src, stop)
	eventually(t, "writes under way", func() error {
		if writes.Load() < 20 {
			return fmt.Errorf("%d writes", writes.Load())
		}
		return nil
	})
	m, err := backup.Dump(ctx, direct(t, secondary), secondary, s, backup.Options{
		Cluster: "default/src", Prefix: "default/src/b1", PartSize: 32 << 10, BatchSize: 50, Timeout: 10 * time.Second,
		Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel),
	})
	close(stop)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("window %s .. %s: %d oplog entries, %d bytes in all; %d writes acknowledged", m.Start, m.End, m.Oplog.Entries, m.Size, writes.Load())
	if m.Oplog.Entries == 0 {
		t.Fatal("no write fell inside the dump's window: the replay was not exercised")
	}
	if m.Member != secondary || m.Cluster != "default/src" || m.End.OpTime().Compare(m.Start.OpTime()) <= 0 || m.End.Wall.IsZero() {
		t.Errorf("manifest %+v", m)
	}
	var names []string
	for _, c := range m.Collections {
		names = append(names, c.NS())
	}
	if got := strings.Join(names, " "); got != "app.a/b app.empty shop.events shop.items shop.orders" {
		t.Errorf("collections %s", got)
	}
	objs, err := s.List(ctx, "default/src/b1/")
	if err != nil {
		t.Fatal(err)
	}
	var listed int64
	for _, o := range objs {
		if !strings.HasSuffix(o.Key, backup.ManifestName) {
			listed += o.Size
		}
	}
	if listed != m.Size {
		t.Errorf("manifest size %d, objects hold %d", m.Size, listed)
	}
	if orders := m.Collections[4]; len(orders.Parts) < 2 {
		t.Errorf("shop.orders in %d parts; PartSize should have cut it", len(orders.Parts))
	}

	dstHosts, dstPrimary := simSet(t, "dst", 1)
	_ = dstHosts
	dst := direct(t, dstPrimary)
	res, err := backup.Restore(ctx, dst, s, "default/src/b1", backup.RestoreOptions{BatchDocs: 300, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Collections != 5 || res.Replayed != m.Oplog.Entries {
		t.Errorf("restore %+v; manifest has %d oplog entries", res, m.Oplog.Entries)
	}
	for _, c := range m.Collections {
		want := snapshot(t, src, c.DB, c.Name, m.End.Timestamp())
		got := snapshot(t, dst, c.DB, c.Name, bson.Timestamp{})
		if !slices.Equal(got, want) {
			t.Errorf("%s: restored %d documents differ from the source's %d at End", c.NS(), len(got), len(want))
			for i := range min(len(got), len(want)) {
				if got[i] != want[i] {
					t.Logf("first difference: %s != %s", got[i], want[i])
					break
				}
			}
		}
		if gi, wi := indexes(t, dst, c.DB, c.Name), indexes(t, src, c.DB, c.Name); gi != wi {
			t.Errorf("%s indexes %s, want %s", c.NS(), gi, wi)
		}
	}
	if opts := collOptions(t, dst, "shop", "events"); !strings.Contains(opts, `"capped":true`) {
		t.Errorf("shop.events options %s, want capped", opts)
	}

	// Into the same set: what was written after End goes, what End had comes back.
	atEnd := map[string][]string{}
	for _, c := range m.Collections {
		atEnd[c.NS()] = snapshot(t, src, c.DB, c.Name, m.End.Timestamp())
	}
	if _, err := src.Database("shop").Collection("orders").DeleteMany(ctx, bson.D{}); err != nil {
		t.Fatal(err)
	}
	if _, err := backup.Restore(ctx, src, s, "default/src/b1", backup.RestoreOptions{Timeout: 10 * time.Second}); err != nil {
		t.Fatalf("restore into the same set: %v", err)
	}
	for _, c := range m.Collections {
		if got := snapshot(t, src, c.DB, c.Name, bson.Timestamp{}); !slices.Equal(got, atEnd[c.NS()]) {
			t.Errorf("%s restored into its own set: %d documents, want the %d it had at End", c.NS(), len(got), len(atEnd[c.NS()]))
		}
	}
}

// snapshot is a collection's documents by _id as extended JSON, read at ts
// (snapshot read concern) or now.
func snapshot(t *testing.T, c *driver.Client, db, coll string, ts bson.Timestamp) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := bson.D{{Key: "find", Value: coll}, {Key: "sort", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "batchSize", Value: 500}}
	if ts.T != 0 {
		cmd = append(cmd, bson.E{Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"}, {Key: "atClusterTime", Value: ts}}})
	}
	cur, err := c.Database(db).RunCommandCursor(ctx, cmd)
	if err != nil {
		t.Fatalf("find %s.%s: %v", db, coll, err)
	}
	var out []string
	for cur.Next(ctx) {
		b, err := bson.MarshalExtJSON(cur.Current, true, false)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	if err := cur.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func indexes(t *testing.T, c *driver.Client, db, coll string) string {
	t.Helper()
	cur, err := c.Database(db).Collection(coll).Indexes().List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var specs []bson.Raw
	if err := cur.All(context.Background(), &specs); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range specs {
		unique, _ := s.Lookup("unique").BooleanOK()
		out = append(out, fmt.Sprintf("%s %s unique=%t", s.Lookup("name").StringValue(), s.Lookup("key"), unique))
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}

func collOptions(t *testing.T, c *driver.Client, db, coll string) string {
	t.Helper()
	specs, err := c.Database(db).ListCollectionSpecifications(context.Background(), bson.D{{Key: "name", Value: coll}})
	if err != nil || len(specs) != 1 {
		t.Fatalf("listCollections %s.%s: %v", db, coll, err)
	}
	b, _ := bson.MarshalExtJSON(specs[0].Options, false, false)
	return string(b)
}
