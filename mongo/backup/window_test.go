package backup_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	driver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	"github.com/mgors/operator/mongo"
	"github.com/mgors/operator/mongo/backup"
)

// hookStore runs hook once, before the first data object whose key holds
// at is written: what the hook writes falls inside the dump's window.
type hookStore struct {
	backup.Store
	at   string
	once sync.Once
	hook func()
}

func (h *hookStore) Put(ctx context.Context, key string, body []byte, contentType string) error {
	if strings.Contains(key, h.at) && strings.HasSuffix(key, ".bson") {
		h.once.Do(h.hook)
	}
	return h.Store.Put(ctx, key, body, contentType)
}

// TestWindowWithCommandsAndATransaction: while the dump runs, the primary
// builds an index, creates a collection with an index, runs a
// multi-document transaction, deletes, and drops an index; each is
// acknowledged by every member, so it falls inside the window. Early, the
// dump has not listed shop's collections yet (the new one is dumped and
// the replay finds it there); late, it has (only the replay creates it).
// The restored databases equal the source's (nothing writes after the
// window), with the indexes the commands left.
func TestWindowWithCommandsAndATransaction(t *testing.T) {
	for _, at := range []string{"/data/app/", "/data/shop/orders/"} {
		t.Run(strings.Split(at, "/")[2], func(t *testing.T) { windowWithCommands(t, at) })
	}
}

func windowWithCommands(t *testing.T, at string) {
	ctx := context.Background()
	hosts, primary := simSet(t, "win", 3)
	secondary := hosts[0]
	if mongo.SameHost(secondary, primary) {
		secondary = hosts[1]
	}
	src := direct(t, primary)
	seed(t, src)
	// Every member acknowledges, so the secondary read has applied it
	// before the dump reads its End.
	shop := src.Database("shop", options.Database().SetWriteConcern(&writeconcern.WriteConcern{W: 3}))
	if _, err := shop.Collection("items").Indexes().CreateOne(ctx, driver.IndexModel{Keys: bson.D{{Key: "tmp", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	var hookErr error
	hook := func() {
		must := func(err error) {
			if err != nil && hookErr == nil {
				hookErr = err
			}
		}
		_, err := shop.Collection("orders").Indexes().CreateOne(ctx, driver.IndexModel{Keys: bson.D{{Key: "total", Value: -1}}})
		must(err)
		_, err = shop.Collection("late").Indexes().CreateOne(ctx, driver.IndexModel{Keys: bson.D{{Key: "k", Value: 1}}, Options: options.Index().SetUnique(true)})
		must(err)
		_, err = shop.Collection("late").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "k", Value: "x"}})
		must(err)
		sess, err := src.StartSession()
		must(err)
		if sess != nil {
			_, err = sess.WithTransaction(ctx, func(tctx context.Context) (any, error) {
				if _, err := shop.Collection("items").InsertOne(tctx, bson.D{{Key: "sku", Value: "c"}}); err != nil {
					return nil, err
				}
				_, err := shop.Collection("orders").UpdateOne(tctx, bson.D{{Key: "_id", Value: 5}}, bson.D{{Key: "$set", Value: bson.D{{Key: "txn", Value: true}}}})
				return nil, err
			})
			must(err)
			sess.EndSession(ctx)
		}
		_, err = shop.Collection("orders").DeleteOne(ctx, bson.D{{Key: "_id", Value: 6}})
		must(err)
		must(shop.Collection("items").Indexes().DropOne(ctx, "tmp_1"))
	}
	s := &hookStore{Store: newStore(t), at: at, hook: hook}
	m, err := backup.Dump(ctx, direct(t, secondary), secondary, s, backup.Options{Cluster: "default/win", Prefix: "win/b1", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if hookErr != nil {
		t.Fatalf("the writes inside the window: %v", hookErr)
	}
	if m.Oplog.Entries < 7 {
		t.Fatalf("%d oplog entries in the window, want the hook's 7 at least", m.Oplog.Entries)
	}
	_, dstPrimary := simSet(t, "wdst", 1)
	dst := direct(t, dstPrimary)
	res, err := backup.Restore(ctx, dst, s, "win/b1", backup.RestoreOptions{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("window %s .. %s: %d entries; restore %+v", m.Start, m.End, m.Oplog.Entries, res)
	for _, db := range []string{"app", "shop"} {
		srcNames, _ := src.Database(db).ListCollectionNames(ctx, bson.D{})
		dstNames, _ := dst.Database(db).ListCollectionNames(ctx, bson.D{})
		slices.Sort(srcNames)
		slices.Sort(dstNames)
		if !slices.Equal(srcNames, dstNames) {
			t.Errorf("%s: collections %v, want %v", db, dstNames, srcNames)
		}
		for _, coll := range srcNames {
			if got, want := snapshot(t, dst, db, coll, bson.Timestamp{}), snapshot(t, src, db, coll, bson.Timestamp{}); !slices.Equal(got, want) {
				t.Errorf("%s.%s: %d documents restored differ from the source's %d", db, coll, len(got), len(want))
			}
			if got, want := indexes(t, dst, db, coll), indexes(t, src, db, coll); got != want {
				t.Errorf("%s.%s indexes %s, want %s", db, coll, got, want)
			}
		}
	}
}
