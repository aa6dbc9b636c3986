package sim_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// Where indexes and the bounded oplog meet: a catalog must survive every
// path that rebuilds data without the oplog entries that built it
// (cloning initial sync, start-up from a checkpoint, rollback).

// setUpCatalog creates app.items with options and a unique, a TTL, a
// partial unique and a hidden index, changes the TTL and the options by
// collMod, and inserts a few documents.
func setUpCatalog(t *testing.T, c *mongo.Client) {
	t.Helper()
	ctx := ctx20(t)
	db := c.Database("app", options.Database().SetWriteConcern(writeconcern.Majority()))
	if err := db.RunCommand(ctx, bson.D{{Key: "create", Value: "items"},
		{Key: "validator", Value: bson.D{{Key: "sku", Value: bson.D{{Key: "$exists", Value: true}}}}},
		{Key: "validationLevel", Value: "moderate"}}).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("items").Indexes().CreateMany(ctx, []mongo.IndexModel{
		{Keys: bson.D{{Key: "sku", Value: 1}}, Options: options.Index().SetUnique(true)},
		{Keys: bson.D{{Key: "at", Value: 1}}, Options: options.Index().SetExpireAfterSeconds(7200)},
		{Keys: bson.D{{Key: "email", Value: 1}}, Options: options.Index().SetUnique(true).
			SetPartialFilterExpression(bson.D{{Key: "active", Value: true}})},
		{Keys: bson.D{{Key: "n", Value: -1}}, Options: options.Index().SetHidden(true).SetUnique(true).SetSparse(true)},
	}); err != nil {
		t.Fatal(err)
	}
	// collMod changes that only the catalog (not the create entries) holds
	if err := db.RunCommand(ctx, bson.D{{Key: "collMod", Value: "items"},
		{Key: "index", Value: bson.D{{Key: "keyPattern", Value: bson.D{{Key: "at", Value: 1}}}, {Key: "expireAfterSeconds", Value: 3600}}},
		{Key: "validationAction", Value: "warn"}}).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("items").InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: 1}, {Key: "sku", Value: "a"}, {Key: "email", Value: "x@y"}, {Key: "active", Value: true}, {Key: "at", Value: time.Now()}, {Key: "n", Value: 7}},
		bson.D{{Key: "_id", Value: 2}, {Key: "sku", Value: "b"}, {Key: "email", Value: "x@y"}, {Key: "active", Value: false}, {Key: "at", Value: time.Now()}},
	}); err != nil {
		t.Fatal(err)
	}
}

// catalogOf is app.items as listCollections (options, UUID) and
// listIndexes show it on m, in a comparable form.
func catalogOf(t *testing.T, m *member) string {
	t.Helper()
	c := m.shortClient()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	defer func() { _ = c.Disconnect(ctx) }()
	db := c.Database("app", options.Database().SetReadPreference(readpref.PrimaryPreferred()))
	cur, err := db.ListCollections(ctx, bson.D{{Key: "name", Value: "items"}})
	if err != nil {
		return "listCollections: " + err.Error()
	}
	var colls []bson.Raw
	if err := cur.All(ctx, &colls); err != nil || len(colls) != 1 {
		return fmt.Sprintf("listCollections: %d, %v", len(colls), err)
	}
	out := fmt.Sprintf("options %s info %s\n", colls[0].Lookup("options"), colls[0].Lookup("info"))
	icur, err := db.Collection("items").Indexes().List(ctx)
	if err != nil {
		return "listIndexes: " + err.Error()
	}
	var specs []bson.Raw
	if err := icur.All(ctx, &specs); err != nil {
		return "listIndexes: " + err.Error()
	}
	for _, s := range specs {
		out += s.String() + "\n"
	}
	return out
}

// collectionsOf is listCollections of every user database on m, names
// and infos (UUIDs), for comparison: implicitly created collections too.
func collectionsOf(t *testing.T, m *member) string {
	t.Helper()
	c := m.shortClient()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	defer func() { _ = c.Disconnect(ctx) }()
	out := ""
	for _, name := range []string{"app", "test"} {
		cur, err := c.Database(name, options.Database().SetReadPreference(readpref.PrimaryPreferred())).ListCollections(ctx, bson.D{})
		if err != nil {
			return err.Error()
		}
		var colls []bson.Raw
		if err := cur.All(ctx, &colls); err != nil {
			return err.Error()
		}
		var lines []string
		for _, cl := range colls {
			lines = append(lines, fmt.Sprintf("%s.%s %s %s", name, cl.Lookup("name").StringValue(), cl.Lookup("options"), cl.Lookup("info")))
		}
		sort.Strings(lines)
		out += strings.Join(lines, "\n") + "\n"
	}
	return out
}

// checkCatalog asserts m shows every index of setUpCatalog and the same
// catalog as want. collMod leaves expireAfterSeconds a long, as mongod's
// catalog does.
func checkCatalog(t *testing.T, m *member, want string) {
	t.Helper()
	got := catalogOf(t, m)
	for _, s := range []string{`"sku_1"`, `"unique": true`, `"expireAfterSeconds": {"$numberLong":"3600"}`, `"partialFilterExpression"`, `"hidden": true`, `"validationLevel": "moderate"`, `"validationAction": "warn"`, `"uuid"`} {
		if !strings.Contains(got, s) {
			t.Errorf("%s: catalog lacks %s:\n%s", m.host, s, got)
		}
	}
	if got != want {
		t.Errorf("%s: catalog differs from the source's\n got %s\nwant %s", m.host, got, want)
	}
}

// enforced asserts that the writable primary m refuses duplicates of the
// unique and the partial unique index, and accepts what the partial
// filter leaves out.
func enforced(t *testing.T, m *member, tag string) {
	t.Helper()
	ctx := ctx20(t)
	items := m.client(t).Database("app").Collection("items")
	_, err := items.InsertOne(ctx, bson.D{{Key: "sku", Value: "a"}})
	if we := dupErr(t, m.host+" unique", err); !strings.Contains(we.Message, "index: sku_1 dup key") {
		t.Errorf("%s: %s", m.host, we.Message)
	}
	_, err = items.UpdateOne(ctx, bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "$set", Value: bson.D{{Key: "active", Value: true}}}})
	_ = dupErr(t, m.host+" partial unique", err)
	// a hidden unique index is not used by queries but still enforced
	_, err = items.UpdateOne(ctx, bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 7}}}})
	_ = dupErr(t, m.host+" hidden unique", err)
	if _, err := items.InsertOne(ctx, bson.D{{Key: "sku", Value: "c-" + tag}, {Key: "email", Value: "x@y"}}); err != nil {
		t.Errorf("%s: insert outside the partial filter: %v", m.host, err)
	}
}

// addMember reconfigures the set (through its primary ms[p]) to add nm;
// it returns the version of that config.
func addMember(t *testing.T, ms []*member, p int, nm *member, id int) int64 {
	t.Helper()
	pc := ms[p].client(t)
	cfg := mustRun(t, pc, bson.D{{Key: "replSetGetConfig", Value: 1}}).Lookup("config").Document()
	v, _ := cfg.Lookup("version").AsInt64OK()
	vals, _ := cfg.Lookup("members").Array().Values()
	members := bson.A{}
	for _, x := range vals {
		members = append(members, x.Document())
	}
	members = append(members, bson.D{{Key: "_id", Value: id}, {Key: "host", Value: nm.host}})
	mustRun(t, pc, bson.D{{Key: "replSetReconfig", Value: configWith(cfg, members, v+1)}})
	return v + 1
}

// waitVoting waits for the primary's follow-up reconfig (a version after
// added) that makes the newly added member a voter; until then it cannot
// be elected. replSetGetConfig does not show newlyAdded, as in mongod.
func waitVoting(t *testing.T, ms []*member, added int64) {
	t.Helper()
	waitFor(t, 30*time.Second, "newlyAdded removed", func() bool {
		p := primaryOf(ms)
		if p < 0 {
			return false
		}
		c := ms[p].shortClient()
		defer func() { _ = c.Disconnect(context.Background()) }()
		r, err := run(c, bson.D{{Key: "replSetGetConfig", Value: 1}})
		if err != nil {
			return false
		}
		v, _ := r.Lookup("config", "version").AsInt64OK()
		return v > added
	})
}

// makePrimary freezes every other live member and steps the primary down
// until target is the writable primary.
func makePrimary(t *testing.T, ms []*member, target *member) {
	t.Helper()
	waitFor(t, 60*time.Second, target.host+" primary", func() bool {
		p := primaryOf(ms)
		if p >= 0 && ms[p] == target {
			return true
		}
		for _, m := range ms {
			if m != target && m.cmd != nil {
				c := m.shortClient()
				_, _ = run(c, bson.D{{Key: "replSetFreeze", Value: 120}})
				if p >= 0 && m == ms[p] {
					_, _ = run(c, bson.D{{Key: "replSetStepDown", Value: 120}, {Key: "secondaryCatchUpPeriodSecs", Value: 10}})
				}
				_ = c.Disconnect(context.Background())
			}
		}
		time.Sleep(500 * time.Millisecond)
		p = primaryOf(ms)
		return p >= 0 && ms[p] == target
	})
}

// oplogHasIndexBuild says whether m's oplog still holds the build of sku_1.
func oplogHasIndexBuild(t *testing.T, m *member) bool {
	t.Helper()
	c := m.shortClient()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	defer func() { _ = c.Disconnect(ctx) }()
	n, err := c.Database("local").Collection("oplog.rs", options.Collection().SetReadPreference(readpref.PrimaryPreferred())).
		CountDocuments(ctx, bson.D{{Key: "op", Value: "c"}, {Key: "o.createIndexes", Value: "items"}})
	if err != nil {
		t.Fatal(err)
	}
	return n > 0
}

// A member that joins by cloning, after the oplog lost the index builds,
// gets the whole catalog with the source's UUIDs, and enforces it once
// primary: unique keys refused, expired documents deleted by its TTL monitor.
func TestClonedMemberGetsCatalogAndEnforcesIt(t *testing.T) {
	ms, p := initiated(t, 2, fastSettings, "--oplogSize", "1", "--setParameter", "ttlMonitorSleepSecs=1")
	setUpCatalog(t, ms[p].client(t))
	fillOplog(t, connect(t, rsURI(ms, "")), 0, 300)
	waitFor(t, 30*time.Second, "index builds truncated from the oplog", func() bool { return !oplogHasIndexBuild(t, ms[p]) })
	want := catalogOf(t, ms[p])
	nm := newMember(t, "--oplogSize", "1", "--setParameter", "ttlMonitorSleepSecs=1")
	added := addMember(t, ms, p, nm, 5)
	waitFor(t, 60*time.Second, "new member SECONDARY", func() bool { return state(t, nm) == 2 })
	if !nm.logged("Finished cloning data") {
		t.Fatal("the new member did not clone")
	}
	checkCatalog(t, nm, want)
	if got, want := collectionsOf(t, nm), collectionsOf(t, ms[p]); got != want {
		t.Errorf("collections of the new member:\n%s\nof its source:\n%s", got, want)
	}
	// the clone is the member's checkpoint: a kill -9 keeps the catalog
	nm.kill()
	nm.start()
	waitFor(t, 30*time.Second, "new member SECONDARY again", func() bool { return state(t, nm) == 2 })
	checkCatalog(t, nm, want)
	all := append(ms, nm)
	waitVoting(t, all, added)
	makePrimary(t, all, nm)
	enforced(t, nm, "cloned")
	ctx := ctx20(t)
	items := nm.client(t).Database("app").Collection("items")
	if _, err := items.InsertOne(ctx, bson.D{{Key: "_id", Value: "expired"}, {Key: "sku", Value: "old"}, {Key: "at", Value: time.Now().Add(-2 * time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "expired document deleted by the new primary", func() bool {
		return errors.Is(items.FindOne(ctx, bson.D{{Key: "_id", Value: "expired"}}).Err(), mongo.ErrNoDocuments)
	})
	if err := items.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Err(); err != nil {
		t.Errorf("a fresh document went too: %v", err)
	}
}

// replSetStepUp on a frozen member fails as mongod's does (the freeze is
// not lifted), and succeeds once unfrozen.
func TestStepUpRefusedWhileFrozen(t *testing.T) {
	ms, p := initiated(t, 2, fastSettings)
	sec := ms[1-p]
	sc := sec.client(t)
	mustRun(t, sc, bson.D{{Key: "replSetFreeze", Value: 60}})
	if _, err := run(sc, bson.D{{Key: "replSetStepUp", Value: 1}}); !hasCode(err, 125) {
		t.Fatalf("stepUp while frozen: want 125, got %v", err)
	}
	if !sec.logged(`"id":4615657`) {
		t.Error("no log 4615657")
	}
	if primaryOf(ms) != p {
		t.Fatal("the frozen member took over")
	}
	mustRun(t, sc, bson.D{{Key: "replSetFreeze", Value: 0}})
	mustRun(t, sc, bson.D{{Key: "replSetStepUp", Value: 1}})
	waitFor(t, 20*time.Second, "the unfrozen member primary", func() bool { return primaryOf(ms) == 1-p })
}
