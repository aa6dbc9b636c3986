package sim_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// cloneSettings are fastSettings with an election timeout a loaded machine
// cannot miss: these tests write through one primary while a member clones,
// and a stepdown (a heartbeat late by a second under the race detector on two
// busy cores) would fail the writer, not the clone under test.
var cloneSettings = bson.D{{Key: "electionTimeoutMillis", Value: 5000}, {Key: "heartbeatIntervalMillis", Value: 200}}

// skusOn lists m's app.keys as "_id=sku" lines, sorted, the padding left out.
func skusOn(t *testing.T, m *member) string {
	c := m.shortClient()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	defer func() { _ = c.Disconnect(ctx) }()
	cur, err := c.Database("app").Collection("keys", options.Collection().SetReadPreference(readpref.PrimaryPreferred())).
		Find(ctx, bson.D{}, options.Find().SetProjection(bson.D{{Key: "sku", Value: 1}}))
	if err != nil {
		return err.Error()
	}
	var lines []string
	for cur.Next(ctx) {
		lines = append(lines, fmt.Sprintf("%v=%v", cur.Current.Lookup("_id"), cur.Current.Lookup("sku")))
	}
	if err := cur.Err(); err != nil {
		return err.Error()
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// Writes that move unique keys between documents while a new member
// clones the collection in batches: the clone may hold a key twice for a
// while (an early batch has the old owner, a later one the new), which the
// oplog replay resolves, as in mongod's idempotent initial-sync apply. The
// attempt must neither fail nor diverge.
func TestInitialSyncWithUniqueKeysMovingDuringClone(t *testing.T) {
	ms, p := initiated(t, 2, cloneSettings)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	keys := ms[p].client(t).Database("app").Collection("keys")
	if _, err := keys.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "sku", Value: 1}}, Options: options.Index().SetUnique(true)}); err != nil {
		t.Fatal(err)
	}
	// _ids are equal-length strings, so clone order is their order: the
	// "a-" documents come in the first batch, the ~17 MB of "m-" padding
	// makes three batches, the "z-" documents written meanwhile come last.
	sku := map[string]string{}
	var docs []any
	for i := range 20 {
		id := fmt.Sprintf("a-%03d", i)
		sku[id] = "k" + id
		docs = append(docs, bson.D{{Key: "_id", Value: id}, {Key: "sku", Value: sku[id]}})
	}
	pad := strings.Repeat("p", 700<<10)
	for i := range 24 {
		docs = append(docs, bson.D{{Key: "_id", Value: fmt.Sprintf("m-%03d", i)}, {Key: "sku", Value: fmt.Sprintf("pad%d", i)}, {Key: "pad", Value: pad}})
	}
	maj := keys.Database().Collection("keys", options.Collection().SetWriteConcern(writeconcern.Majority()))
	for i := 0; i < len(docs); i += 4 {
		if _, err := maj.InsertMany(ctx, docs[i:i+4]); err != nil {
			t.Fatal(err)
		}
	}
	nm := newMember(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	rounds := 0
	go func() {
		defer wg.Done()
		for r := 0; ; r++ {
			select {
			case <-stop:
				rounds = r
				return
			default:
			}
			// move a key from an early document to a new late one
			low := fmt.Sprintf("a-%03d", r%20)
			freed := sku[low]
			sku[low] = fmt.Sprintf("k%s-%d", low, r)
			if _, err := keys.UpdateOne(ctx, bson.D{{Key: "_id", Value: low}}, bson.D{{Key: "$set", Value: bson.D{{Key: "sku", Value: sku[low]}}}}); err != nil {
				t.Errorf("round %d update: %v", r, err)
				return
			}
			if _, err := keys.InsertOne(ctx, bson.D{{Key: "_id", Value: fmt.Sprintf("z-%05d", r)}, {Key: "sku", Value: freed}}); err != nil {
				t.Errorf("round %d insert: %v", r, err)
				return
			}
			// and change or delete an earlier late one
			if r >= 2 {
				var err error
				if r%3 == 0 {
					_, err = keys.DeleteOne(ctx, bson.D{{Key: "_id", Value: fmt.Sprintf("z-%05d", r-2)}})
				} else {
					_, err = keys.UpdateOne(ctx, bson.D{{Key: "_id", Value: fmt.Sprintf("z-%05d", r-2)}}, bson.D{{Key: "$set", Value: bson.D{{Key: "sku", Value: fmt.Sprintf("late%d", r)}}}})
				}
				if err != nil {
					t.Errorf("round %d: %v", r, err)
					return
				}
			}
		}
	}()
	addMember(t, ms, p, nm, 5)
	waitFor(t, 90*time.Second, "new member SECONDARY", func() bool { return state(t, nm) == 2 })
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	t.Logf("%d rounds of writes", rounds)
	if strings.Contains(nm.out.String(), "Initial sync attempt failed") {
		t.Error("an initial sync attempt failed")
	}
	want := skusOn(t, ms[p])
	waitFor(t, 30*time.Second, "the new member converged", func() bool { return skusOn(t, nm) == want })
	// its unique index answers lookups as a scan would
	var all bson.A
	for _, line := range strings.Split(want, "\n") {
		_, s, _ := strings.Cut(line, "=")
		all = append(all, strings.Trim(s, `"`))
	}
	c := nm.client(t)
	n, err := c.Database("app").Collection("keys", options.Collection().SetReadPreference(readpref.Secondary())).
		CountDocuments(ctx, bson.D{{Key: "sku", Value: bson.D{{Key: "$in", Value: all}}}})
	if err != nil || n != int64(len(all)) {
		t.Errorf("lookup of every key through the index: %d of %d, %v", n, len(all), err)
	}
}

// dbCatalog is every collection of db on m with its options, UUID and
// indexes, sorted, for comparison.
func dbCatalog(t *testing.T, m *member, db string) string {
	c := m.shortClient()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	defer func() { _ = c.Disconnect(ctx) }()
	d := c.Database(db, options.Database().SetReadPreference(readpref.PrimaryPreferred()))
	cur, err := d.ListCollections(ctx, bson.D{})
	if err != nil {
		return err.Error()
	}
	var colls []bson.Raw
	if err := cur.All(ctx, &colls); err != nil {
		return err.Error()
	}
	var lines []string
	for _, cl := range colls {
		name := cl.Lookup("name").StringValue()
		line := fmt.Sprintf("%s %s %s", name, cl.Lookup("options"), cl.Lookup("info"))
		icur, err := d.Collection(name).Indexes().List(ctx)
		if err != nil {
			return err.Error()
		}
		var specs []bson.Raw
		if err := icur.All(ctx, &specs); err != nil {
			return err.Error()
		}
		for _, s := range specs {
			line += "\n  " + s.String()
		}
		lines = append(lines, line)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// Collections dropped, recreated with other unique indexes and renamed
// while a new member clones: the clone's definitions are older than some
// of its documents, and the replay must still end in the source's catalog
// (same collections, UUIDs and indexes) without a failed attempt.
func TestInitialSyncWithDDLDuringClone(t *testing.T) {
	ms, p := initiated(t, 2, cloneSettings)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	app := ms[p].client(t).Database("app")
	pad := strings.Repeat("p", 700<<10)
	maj := app.Collection("pad", options.Collection().SetWriteConcern(writeconcern.Majority()))
	for i := range 24 {
		if _, err := maj.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "pad", Value: pad}}); err != nil {
			t.Fatal(err)
		}
	}
	nm := newMember(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	rounds := 0
	go func() {
		defer wg.Done()
		for r := 0; ; r++ {
			select {
			case <-stop:
				rounds = r
				return
			default:
			}
			name := fmt.Sprintf("d%d", r%3)
			coll := app.Collection(name)
			field := []string{"k", "j"}[r%2]
			steps := []func() error{
				func() error { return coll.Drop(ctx) },
				func() error {
					_, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: field, Value: 1}}, Options: options.Index().SetUnique(true)})
					return err
				},
				func() error {
					_, err := coll.InsertMany(ctx, []any{bson.D{{Key: field, Value: r}, {Key: "r", Value: r}}, bson.D{{Key: field, Value: -r - 1}}})
					return err
				},
				func() error {
					if r%4 != 3 {
						return nil
					}
					return app.Client().Database("admin").RunCommand(ctx, bson.D{{Key: "renameCollection", Value: "app." + name},
						{Key: "to", Value: fmt.Sprintf("app.renamed%d", r%2)}, {Key: "dropTarget", Value: true}}).Err()
				},
			}
			for i, step := range steps {
				if err := step(); err != nil {
					t.Errorf("round %d step %d: %v", r, i, err)
					return
				}
			}
		}
	}()
	addMember(t, ms, p, nm, 5)
	waitFor(t, 90*time.Second, "new member SECONDARY", func() bool { return state(t, nm) == 2 })
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	t.Logf("%d rounds of DDL", rounds)
	if strings.Contains(nm.out.String(), "Initial sync attempt failed") {
		t.Error("an initial sync attempt failed")
	}
	want := dbCatalog(t, ms[p], "app")
	var got string
	waitFor(t, 30*time.Second, "the new member's catalog converged", func() bool { got = dbCatalog(t, nm, "app"); return got == want })
}
