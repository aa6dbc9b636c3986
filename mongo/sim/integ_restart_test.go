package sim_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// Indexes survive a kill -9 after the oplog lost their builds (start-up
// from the checkpoint) and a rollback that rebuilds from the checkpoint;
// an index built only by the rolled-back writes goes with them.
func TestCatalogSurvivesRestartAndRollback(t *testing.T) {
	// A longer election timeout leaves the isolated primary writable long enough.
	settings := bson.D{{Key: "electionTimeoutMillis", Value: 4000}, {Key: "heartbeatIntervalMillis", Value: 200}}
	ms, p := initiated(t, 3, settings, "--oplogSize", "1")
	setUpCatalog(t, ms[p].client(t))
	fillOplog(t, connect(t, rsURI(ms, "")), 0, 300)
	for _, m := range ms {
		waitFor(t, 30*time.Second, "index builds truncated from the oplog of "+m.host, func() bool { return !oplogHasIndexBuild(t, m) })
	}
	want, wantColls := catalogOf(t, ms[p]), collectionsOf(t, ms[p])
	for _, m := range ms {
		m.kill()
	}
	for _, m := range ms {
		m.start()
	}
	p = waitPrimary(t, ms, 30*time.Second)
	for _, m := range ms {
		waitFor(t, 30*time.Second, m.host+" up", func() bool { s := state(t, m); return s == 1 || s == 2 })
		checkCatalog(t, m, want)
		if got := collectionsOf(t, m); got != wantColls {
			t.Errorf("%s: collections after restart:\n%s\nbefore:\n%s", m.host, got, wantColls)
		}
	}
	enforced(t, ms[p], "restarted")

	old := ms[p]
	var secs []*member
	for i, m := range ms {
		if i != p {
			secs = append(secs, m)
			m.kill()
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w1 := old.client(t).Database("app").Collection("items", options.Collection().SetWriteConcern(writeconcern.W1()))
	if _, err := w1.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "lost", Value: 1}}, Options: options.Index().SetUnique(true).SetSparse(true)}); err != nil {
		t.Fatalf("w:1 index build on the isolated primary: %v", err)
	}
	if _, err := w1.InsertOne(ctx, bson.D{{Key: "_id", Value: "lost"}, {Key: "sku", Value: "lost"}}); err != nil {
		t.Fatalf("w:1 write on the isolated primary: %v", err)
	}
	old.kill()
	for _, s := range secs {
		s.start()
	}
	np := secs[waitPrimary(t, secs, 30*time.Second)]
	if _, err := np.client(t).Database("app").Collection("items", options.Collection().SetWriteConcern(writeconcern.Majority())).
		InsertOne(ctx, bson.D{{Key: "_id", Value: "after"}, {Key: "sku", Value: "after"}}); err != nil {
		t.Fatal(err)
	}
	old.start()
	waitFor(t, 60*time.Second, "old primary rolled back and SECONDARY", func() bool {
		return state(t, old) == 2 && strings.Contains(old.out.String(), "Rollback summary")
	})
	waitFor(t, 30*time.Second, "the new write on the old primary", func() bool { return itemOn(t, old, "after") })
	if itemOn(t, old, "lost") {
		t.Error("w:1 write not rolled back")
	}
	checkCatalog(t, old, catalogOf(t, np))
	if strings.Contains(catalogOf(t, old), "lost_1") {
		t.Error("the rolled-back index build is still listed")
	}
	makePrimary(t, ms, old)
	enforced(t, old, "rolled-back")
	// the rolled-back index is gone: a duplicate of its key is accepted
	items := old.client(t).Database("app").Collection("items")
	for i := range 2 {
		if _, err := items.InsertOne(ctx, bson.D{{Key: "sku", Value: fmt.Sprintf("l%d", i)}, {Key: "lost", Value: 1}}); err != nil {
			t.Fatalf("insert %d under the rolled-back index: %v", i, err)
		}
	}
}

// itemOn says whether m holds app.items document id.
func itemOn(t *testing.T, m *member, id string) bool {
	c := m.shortClient()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	defer func() { _ = c.Disconnect(ctx) }()
	err := c.Database("app").Collection("items", options.Collection().SetReadPreference(readpref.PrimaryPreferred())).
		FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Err()
	return err == nil
}
