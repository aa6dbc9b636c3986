package sim_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// singlePrimary starts a one-member replica set and returns a client to
// its primary.
func singlePrimary(t *testing.T, extra ...string) (*member, *mongo.Client) {
	t.Helper()
	m := newMember(t, extra...)
	mustRun(t, m.client(t), bson.D{{Key: "replSetInitiate", Value: rsConfig([]*member{m}, fastSettings)}})
	waitPrimary(t, []*member{m}, 30*time.Second)
	return m, m.client(t)
}

func ctx20(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// indexSpecs lists a collection's indexes by name.
func indexSpecs(t *testing.T, coll *mongo.Collection) map[string]bson.Raw {
	t.Helper()
	cur, err := coll.Indexes().List(ctx20(t))
	if err != nil {
		t.Fatal(err)
	}
	var specs []bson.Raw
	if err := cur.All(ctx20(t), &specs); err != nil {
		t.Fatal(err)
	}
	out := map[string]bson.Raw{}
	for _, s := range specs {
		out[s.Lookup("name").StringValue()] = s
	}
	return out
}

func wantCode(t *testing.T, what string, err error, code int32) {
	t.Helper()
	if !hasCode(err, code) {
		t.Fatalf("%s: want code %d, got %v", what, code, err)
	}
}

func TestIndexCreateListDrop(t *testing.T) {
	_, c := singlePrimary(t)
	ctx := ctx20(t)
	db := c.Database("shop")
	coll := db.Collection("items")

	r, err := db.RunCommand(ctx, bson.D{{Key: "createIndexes", Value: "items"}, {Key: "indexes", Value: bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}, {Key: "b", Value: -1}}}, {Key: "name", Value: "a_1_b_-1"}}}}}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := r.Lookup("numIndexesBefore").Int32OK(); b != 1 {
		t.Fatalf("reply %v", r)
	}
	if a, _ := r.Lookup("numIndexesAfter").Int32OK(); a != 2 || !r.Lookup("createdCollectionAutomatically").Boolean() {
		t.Fatalf("reply %v", r)
	}
	name, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "a", Value: 1}, {Key: "b", Value: -1}}})
	if err != nil || name != "a_1_b_-1" {
		t.Fatalf("default name %q, %v", name, err)
	}
	r, _ = db.RunCommand(ctx, bson.D{{Key: "createIndexes", Value: "items"}, {Key: "indexes", Value: bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}, {Key: "b", Value: -1}}}, {Key: "name", Value: "a_1_b_-1"}}}}}).Raw()
	if note, _ := r.Lookup("note").StringValueOK(); note != "all indexes already exist" {
		t.Fatalf("reply %v", r)
	}

	names, err := coll.Indexes().CreateMany(ctx, []mongo.IndexModel{
		{Keys: bson.D{{Key: "sku", Value: 1}}, Options: options.Index().SetUnique(true)},
		{Keys: bson.D{{Key: "tag", Value: 1}}, Options: options.Index().SetSparse(true).SetHidden(true)},
		{Keys: bson.D{{Key: "at", Value: 1}}, Options: options.Index().SetExpireAfterSeconds(3600)},
		{Keys: bson.D{{Key: "x.y", Value: -1}}, Options: options.Index().SetName("xy").
			SetPartialFilterExpression(bson.D{{Key: "q", Value: bson.D{{Key: "$gt", Value: 5}}}}).
			SetCollation(&options.Collation{Locale: "en", Strength: 2})},
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(names, ",") != "sku_1,tag_1,at_1,xy" {
		t.Fatalf("names %v", names)
	}
	specs := indexSpecs(t, coll)
	if len(specs) != 6 {
		t.Fatalf("specs %v", specs)
	}
	if s := specs["_id_"]; s.String() != `{"v": {"$numberInt":"2"},"key": {"_id": {"$numberInt":"1"}},"name": "_id_"}` {
		t.Fatalf("_id_ spec %s", s)
	}
	if s := specs["sku_1"]; !s.Lookup("unique").Boolean() || s.Lookup("v").Int32() != 2 {
		t.Fatalf("sku_1 spec %s", s)
	}
	if s := specs["tag_1"]; !s.Lookup("sparse").Boolean() || !s.Lookup("hidden").Boolean() {
		t.Fatalf("tag_1 spec %s", s)
	}
	if s := specs["at_1"]; s.Lookup("expireAfterSeconds").AsInt64() != 3600 {
		t.Fatalf("at_1 spec %s", s)
	}
	if s := specs["xy"]; s.Lookup("partialFilterExpression", "q", "$gt").AsInt64() != 5 || s.Lookup("collation", "locale").StringValue() != "en" ||
		s.Lookup("collation", "strength").Int32() != 2 || s.Lookup("collation", "version").StringValue() != "57.1" {
		t.Fatalf("xy spec %s", s)
	}

	// the same request again is a no-op, collation and all
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "x.y", Value: -1}}, Options: options.Index().SetName("xy").
		SetPartialFilterExpression(bson.D{{Key: "q", Value: bson.D{{Key: "$gt", Value: 5}}}}).
		SetCollation(&options.Collation{Locale: "en", Strength: 2})}); err != nil {
		t.Fatal(err)
	}

	// mongod's conflicts and spec errors
	_, err = coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "other", Value: 1}}, Options: options.Index().SetName("sku_1")})
	wantCode(t, "same name, other key", err, 86)
	_, err = coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "sku", Value: 1}}, Options: options.Index().SetUnique(true).SetName("sku2")})
	wantCode(t, "same index, other name", err, 85)
	if !strings.Contains(err.Error(), "Index already exists with a different name: sku_1") {
		t.Fatalf("message %v", err)
	}
	_, err = coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "_id", Value: 1}}, Options: options.Index().SetName("by_id")})
	wantCode(t, "_id index under another name", err, 85)
	_, err = coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "at", Value: 1}}, Options: options.Index().SetExpireAfterSeconds(10)})
	wantCode(t, "same name, other TTL", err, 85)
	_, err = db.RunCommand(ctx, bson.D{{Key: "createIndexes", Value: "items"}, {Key: "indexes", Value: bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: "z", Value: 1}}}, {Key: "name", Value: "z_1"}, {Key: "bogus", Value: true}}}}}).Raw()
	wantCode(t, "unknown option", err, 197)
	_, err = coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "z", Value: 0}}})
	wantCode(t, "zero key", err, 67)
	_, err = coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "z", Value: "text"}}})
	wantCode(t, "text index", err, 67)
	_, err = coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "z", Value: 1}, {Key: "w", Value: 1}}, Options: options.Index().SetExpireAfterSeconds(5)})
	wantCode(t, "compound TTL", err, 67)

	_, err = coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "z", Value: 1}}, Options: options.Index().SetPartialFilterExpression(bson.D{{Key: "q", Value: bson.D{{Key: "$ne", Value: 1}}}})})
	wantCode(t, "$ne in a partial filter", err, 67)
	var many []mongo.IndexModel
	for i := range 60 {
		many = append(many, mongo.IndexModel{Keys: bson.D{{Key: fmt.Sprintf("f%d", i), Value: 1}}})
	}
	_, err = coll.Indexes().CreateMany(ctx, many)
	wantCode(t, "more than 64 indexes", err, 67)

	// dropIndexes: by name, key pattern, list, "*"
	if err := coll.Indexes().DropOne(ctx, "tag_1"); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "drop missing", coll.Indexes().DropOne(ctx, "tag_1"), 27)
	wantCode(t, "drop _id_", coll.Indexes().DropOne(ctx, "_id_"), 72)
	if err := coll.Indexes().DropWithKey(ctx, bson.D{{Key: "at", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "drop missing key", coll.Indexes().DropWithKey(ctx, bson.D{{Key: "nope", Value: 1}}), 27)
	wantCode(t, "drop _id key", coll.Indexes().DropWithKey(ctx, bson.D{{Key: "_id", Value: 1}}), 72)
	if _, err := db.RunCommand(ctx, bson.D{{Key: "dropIndexes", Value: "items"}, {Key: "index", Value: bson.A{"xy", "a_1_b_-1"}}}).Raw(); err != nil {
		t.Fatal(err)
	}
	if specs := indexSpecs(t, coll); len(specs) != 2 || specs["sku_1"] == nil {
		t.Fatalf("after drops %v", specs)
	}
	if err := coll.Indexes().DropAll(ctx); err != nil {
		t.Fatal(err)
	}
	if specs := indexSpecs(t, coll); len(specs) != 1 {
		t.Fatalf("after drop all %v", specs)
	}
	wantCode(t, "drop on missing collection", db.Collection("missing").Indexes().DropOne(ctx, "a_1"), 26)
}

func dupErr(t *testing.T, what string, err error) mongo.WriteError {
	t.Helper()
	var we mongo.WriteException
	if errors.As(err, &we) && len(we.WriteErrors) == 1 && we.WriteErrors[0].Code == 11000 {
		return we.WriteErrors[0]
	}
	var bwe mongo.BulkWriteException
	if errors.As(err, &bwe) && len(bwe.WriteErrors) == 1 && bwe.WriteErrors[0].Code == 11000 {
		return bwe.WriteErrors[0].WriteError
	}
	t.Fatalf("%s: want a duplicate key write error, got %v", what, err)
	return mongo.WriteError{}
}

func TestUniqueIndexEnforcedOnEveryWritePath(t *testing.T) {
	_, c := singlePrimary(t)
	ctx := ctx20(t)
	coll := c.Database("shop").Collection("c")
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "sku", Value: 1}}, Options: options.Index().SetUnique(true)}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 1}, {Key: "sku", Value: "x"}}, bson.D{{Key: "_id", Value: 2}, {Key: "sku", Value: "y"}}}); err != nil {
		t.Fatal(err)
	}
	_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 3}, {Key: "sku", Value: "x"}})
	we := dupErr(t, "insert", err)
	if we.Message != `E11000 duplicate key error collection: shop.c index: sku_1 dup key: { sku: "x" }` {
		t.Fatalf("message %q", we.Message)
	}
	raw := we.Raw
	if raw.Lookup("keyPattern").String() != `{"sku": {"$numberInt":"1"}}` || raw.Lookup("keyValue", "sku").StringValue() != "x" {
		t.Fatalf("write error %s", raw)
	}
	_, err = coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1.0}, {Key: "sku", Value: "z"}})
	if we := dupErr(t, "insert same _id as double", err); we.Message != "E11000 duplicate key error collection: shop.c index: _id_ dup key: { _id: 1.0 }" {
		t.Fatalf("message %q", we.Message)
	}
	_, err = coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "$set", Value: bson.D{{Key: "sku", Value: "x"}}}})
	_ = dupErr(t, "update", err)
	_, err = coll.ReplaceOne(ctx, bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "sku", Value: "x"}})
	_ = dupErr(t, "replacement", err)
	_, err = coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 9}}, bson.D{{Key: "$set", Value: bson.D{{Key: "sku", Value: "x"}}}}, options.UpdateOne().SetUpsert(true))
	_ = dupErr(t, "upsert", err)
	err = coll.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "$set", Value: bson.D{{Key: "sku", Value: "x"}}}}).Err()
	wantCode(t, "findAndModify", err, 11000)
	if !strings.Contains(err.Error(), `dup key: { sku: "x" }`) {
		t.Fatalf("findAndModify message %v", err)
	}
	// an update that keeps its own key, and one that frees a key, are fine
	if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 1}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "sku", Value: "w"}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 4}, {Key: "sku", Value: "x"}}); err != nil {
		t.Fatal(err)
	}
	// numbers that compare equal are one key; a missing field indexes as null
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 5}, {Key: "sku", Value: int64(7)}}); err != nil {
		t.Fatal(err)
	}
	_, err = coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 6}, {Key: "sku", Value: 7.0}})
	_ = dupErr(t, "7 and 7.0", err)
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 7}}); err != nil {
		t.Fatal(err)
	}
	_, err = coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 8}})
	if we := dupErr(t, "second missing", err); !strings.HasSuffix(we.Message, "dup key: { sku: null }") {
		t.Fatalf("message %q", we.Message)
	}
	// arrays: every element is a key; unordered inserts go on past a duplicate
	_, err = coll.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 10}, {Key: "sku", Value: bson.A{"p", "q"}}},
		bson.D{{Key: "_id", Value: 11}, {Key: "sku", Value: "q"}}, bson.D{{Key: "_id", Value: 12}, {Key: "sku", Value: "r"}}},
		options.InsertMany().SetOrdered(false))
	_ = dupErr(t, "array element", err)
	if n, _ := coll.CountDocuments(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{10, 12}}}}}); n != 2 {
		t.Fatalf("unordered insert kept %d of 2", n)
	}

	// sparse and partial unique indexes
	sp := c.Database("shop").Collection("sparse")
	if _, err := sp.Indexes().CreateMany(ctx, []mongo.IndexModel{
		{Keys: bson.D{{Key: "e", Value: 1}}, Options: options.Index().SetUnique(true).SetSparse(true)},
		{Keys: bson.D{{Key: "u", Value: 1}}, Options: options.Index().SetUnique(true).SetPartialFilterExpression(bson.D{{Key: "active", Value: true}})},
	}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := sp.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "u", Value: "same"}}); err != nil {
			t.Fatalf("sparse/partial insert %d: %v", i, err)
		}
	}
	if _, err := sp.InsertOne(ctx, bson.D{{Key: "_id", Value: 10}, {Key: "u", Value: "same"}, {Key: "active", Value: true}}); err != nil {
		t.Fatal(err)
	}
	_, err = sp.InsertOne(ctx, bson.D{{Key: "_id", Value: 11}, {Key: "u", Value: "same"}, {Key: "active", Value: true}})
	_ = dupErr(t, "partial", err)
	if _, err := sp.InsertOne(ctx, bson.D{{Key: "_id", Value: 12}, {Key: "e", Value: nil}}); err != nil {
		t.Fatal(err)
	}
	_, err = sp.InsertOne(ctx, bson.D{{Key: "_id", Value: 13}, {Key: "e", Value: nil}})
	_ = dupErr(t, "sparse null", err)

	// a unique index over existing duplicates is refused
	_, err = c.Database("shop").Collection("sparse").Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "u", Value: 1}}, Options: options.Index().SetUnique(true).SetName("u_all")})
	wantCode(t, "unique build over duplicates", err, 11000)
	if !strings.Contains(err.Error(), `E11000 duplicate key error collection: shop.sparse index: u_all dup key: { u: "same" }`) {
		t.Fatalf("build message %v", err)
	}
	// two array fields in one compound index
	if _, err := sp.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "p", Value: 1}, {Key: "q", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	_, err = sp.InsertOne(ctx, bson.D{{Key: "p", Value: bson.A{1, 2}}, {Key: "q", Value: bson.A{3}}})
	var wex mongo.WriteException
	if !errors.As(err, &wex) || len(wex.WriteErrors) != 1 || wex.WriteErrors[0].Code != 171 {
		t.Fatalf("parallel arrays: %v", err)
	}
}

func TestIndexesReplicatedAndRebuiltFromOplog(t *testing.T) {
	ms := []*member{newMember(t), newMember(t)}
	cfg := rsConfig(ms, fastSettings)
	members := cfg[1].Value.(bson.A)
	members[1] = append(members[1].(bson.D), bson.E{Key: "priority", Value: 0}, bson.E{Key: "votes", Value: 0})
	mustRun(t, ms[0].client(t), bson.D{{Key: "replSetInitiate", Value: cfg}})
	waitPrimary(t, ms, 30*time.Second)
	ctx := ctx20(t)
	coll := ms[0].client(t).Database("app").Collection("users")
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "email", Value: 1}}, Options: options.Index().SetUnique(true)}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "email", Value: "a@x"}}); err != nil {
		t.Fatal(err)
	}
	secColl := ms[1].client(t, "", "readPreference=secondaryPreferred").Database("app").Collection("users")
	waitFor(t, 20*time.Second, "index on the secondary", func() bool {
		cur, err := secColl.Indexes().List(ctx)
		if err != nil {
			return false
		}
		var specs []bson.Raw
		_ = cur.All(ctx, &specs)
		return len(specs) == 2
	})
	uuidOf := func(db *mongo.Database) string {
		specs, err := db.ListCollectionSpecifications(ctx, bson.D{{Key: "name", Value: "users"}})
		if err != nil || len(specs) != 1 || specs[0].UUID == nil {
			t.Fatalf("listCollections: %v %v", specs, err)
		}
		return fmt.Sprintf("%x", specs[0].UUID.Data)
	}
	primaryUUID := uuidOf(ms[0].client(t).Database("app"))
	if got := uuidOf(secColl.Database()); got != primaryUUID {
		t.Fatalf("collection UUID %s on the primary, %s on the secondary", primaryUUID, got)
	}
	// the oplog holds the build as mongod writes it
	oplog := ms[0].client(t).Database("local").Collection("oplog.rs")
	var entry bson.Raw
	if err := oplog.FindOne(ctx, bson.D{{Key: "op", Value: "c"}, {Key: "o.createIndexes", Value: "users"}}).Decode(&entry); err != nil {
		t.Fatal(err)
	}
	if entry.Lookup("o", "name").StringValue() != "email_1" || !entry.Lookup("o", "unique").Boolean() || entry.Lookup("ns").StringValue() != "app.$cmd" {
		t.Fatalf("oplog entry %s", entry)
	}
	// a restarted member rebuilds its indexes from the oplog
	ms[0].kill()
	ms[0].start()
	waitPrimary(t, ms[:1], 30*time.Second)
	coll = ms[0].client(t).Database("app").Collection("users")
	_, err := coll.InsertOne(ctx, bson.D{{Key: "email", Value: "a@x"}})
	_ = dupErr(t, "after restart", err)
	if got := uuidOf(coll.Database()); got != primaryUUID {
		t.Fatalf("collection UUID %s after restart, was %s", got, primaryUUID)
	}
	// a rename reaches the secondary with the indexes; dropDatabase removes them
	if err := ms[0].client(t).Database("admin").RunCommand(ctx, bson.D{{Key: "renameCollection", Value: "app.users"}, {Key: "to", Value: "app.people"}}).Err(); err != nil {
		t.Fatal(err)
	}
	people := ms[1].client(t, "", "readPreference=secondaryPreferred").Database("app").Collection("people")
	waitFor(t, 20*time.Second, "renamed collection on the secondary", func() bool {
		cur, err := people.Indexes().List(ctx)
		if err != nil {
			return false
		}
		var specs []bson.Raw
		_ = cur.All(ctx, &specs)
		return len(specs) == 2
	})
	if err := ms[0].client(t).Database("app").Drop(ctx); err != nil {
		t.Fatal(err)
	}
	people = ms[0].client(t).Database("app").Collection("people")
	if _, err := people.InsertOne(ctx, bson.D{{Key: "email", Value: "a@x"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := people.InsertOne(ctx, bson.D{{Key: "email", Value: "a@x"}}); err != nil {
		t.Fatalf("unique index survived dropDatabase: %v", err)
	}
}

func TestTTLMonitorDeletesExpiredDocuments(t *testing.T) {
	_, c := singlePrimary(t, "--setParameter", "ttlMonitorSleepSecs=1")
	ctx := ctx20(t)
	coll := c.Database("app").Collection("sessions")
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "at", Value: 1}}, Options: options.Index().SetExpireAfterSeconds(60)}); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	fresh := time.Now()
	if _, err := coll.InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: "old"}, {Key: "at", Value: old}},
		bson.D{{Key: "_id", Value: "fresh"}, {Key: "at", Value: fresh}},
		bson.D{{Key: "_id", Value: "array"}, {Key: "at", Value: bson.A{fresh, old}}},
		bson.D{{Key: "_id", Value: "string"}, {Key: "at", Value: "2000-01-01"}},
		bson.D{{Key: "_id", Value: "missing"}},
	}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "expired documents deleted", func() bool {
		n, err := coll.CountDocuments(ctx, bson.D{})
		return err == nil && n == 3
	})
	for _, id := range []string{"fresh", "string", "missing"} {
		if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Err(); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	// the deletes are oplog entries, so secondaries follow
	n, err := c.Database("local").Collection("oplog.rs").CountDocuments(ctx, bson.D{{Key: "op", Value: "d"}, {Key: "ns", Value: "app.sessions"}})
	if err != nil || n != 2 {
		t.Fatalf("delete entries %d, %v", n, err)
	}
}

func TestCollModRenameAndCreateOptions(t *testing.T) {
	_, c := singlePrimary(t)
	ctx := ctx20(t)
	db := c.Database("app")
	coll := db.Collection("events")
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "at", Value: 1}}, Options: options.Index().SetExpireAfterSeconds(60)}); err != nil {
		t.Fatal(err)
	}
	r, err := db.RunCommand(ctx, bson.D{{Key: "collMod", Value: "events"}, {Key: "index", Value: bson.D{{Key: "keyPattern", Value: bson.D{{Key: "at", Value: 1}}},
		{Key: "expireAfterSeconds", Value: 120}, {Key: "hidden", Value: true}}}}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	if r.Lookup("expireAfterSeconds_old").AsInt64() != 60 || r.Lookup("expireAfterSeconds_new").AsInt64() != 120 || !r.Lookup("hidden_new").Boolean() {
		t.Fatalf("collMod reply %s", r)
	}
	if s := indexSpecs(t, coll)["at_1"]; s.Lookup("expireAfterSeconds").AsInt64() != 120 || !s.Lookup("hidden").Boolean() {
		t.Fatalf("after collMod %s", s)
	}
	_, err = db.RunCommand(ctx, bson.D{{Key: "collMod", Value: "events"}, {Key: "index", Value: bson.D{{Key: "name", Value: "nope"}, {Key: "hidden", Value: true}}}}).Raw()
	wantCode(t, "collMod missing index", err, 27)
	wantCode(t, "collMod unknown field", db.RunCommand(ctx, bson.D{{Key: "collMod", Value: "events"}, {Key: "bogus", Value: 1}}).Err(), 40415)
	_, err = db.RunCommand(ctx, bson.D{{Key: "collMod", Value: "nothere"}, {Key: "validationLevel", Value: "moderate"}}).Raw()
	wantCode(t, "collMod missing collection", err, 26)
	if _, err := db.RunCommand(ctx, bson.D{{Key: "collMod", Value: "events"}, {Key: "validator", Value: bson.D{{Key: "at", Value: bson.D{{Key: "$exists", Value: true}}}}},
		{Key: "validationLevel", Value: "moderate"}}).Raw(); err != nil {
		t.Fatal(err)
	}

	// create with options, listed by listCollections
	if err := db.CreateCollection(ctx, "log", options.CreateCollection().SetCapped(true).SetSizeInBytes(4096).SetMaxDocuments(10)); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateCollection(ctx, "log", options.CreateCollection().SetCapped(true).SetSizeInBytes(4096).SetMaxDocuments(10)); err != nil {
		t.Fatalf("create again with the same options: %v", err)
	}
	wantCode(t, "create again with other options", db.CreateCollection(ctx, "log"), 48)
	wantCode(t, "size without capped", db.RunCommand(ctx, bson.D{{Key: "create", Value: "c2"}, {Key: "size", Value: 100}}).Err(), 72)
	wantCode(t, "unknown create option", db.RunCommand(ctx, bson.D{{Key: "create", Value: "c2"}, {Key: "unknown", Value: 1}}).Err(), 40415)
	wantCode(t, "capped without size", db.RunCommand(ctx, bson.D{{Key: "create", Value: "c2"}, {Key: "capped", Value: true}}).Err(), 72)
	wantCode(t, "clustered", db.RunCommand(ctx, bson.D{{Key: "create", Value: "c3"}, {Key: "clusteredIndex", Value: bson.D{{Key: "key", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "unique", Value: true}}}}).Err(), 72)
	specs, err := db.ListCollectionSpecifications(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, s := range specs {
		switch s.Name {
		case "log":
			if s.Options.Lookup("capped").Boolean() && s.Options.Lookup("size").AsInt64() == 4096 && s.Options.Lookup("max").AsInt64() == 10 {
				found++
			}
		case "events":
			if s.Options.Lookup("validationLevel").StringValue() == "moderate" {
				found++
			}
		}
	}
	if found != 2 {
		t.Fatalf("collection options %+v", specs)
	}

	// renameCollection keeps documents and indexes; across databases too
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "at", Value: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	admin := c.Database("admin")
	rename := func(from, to string, dropTarget bool) error {
		return admin.RunCommand(ctx, bson.D{{Key: "renameCollection", Value: from}, {Key: "to", Value: to}, {Key: "dropTarget", Value: dropTarget}}).Err()
	}
	if err := rename("app.events", "app.events2", false); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "rename missing", rename("app.events", "app.x", false), 26)
	wantCode(t, "rename onto existing", rename("app.events2", "app.log", false), 48)
	if err := rename("app.events2", "other.events", false); err != nil {
		t.Fatal(err)
	}
	moved := c.Database("other").Collection("events")
	if n, _ := moved.CountDocuments(ctx, bson.D{}); n != 1 || indexSpecs(t, moved)["at_1"] == nil {
		t.Fatalf("renamed collection lost documents or indexes")
	}
	if err := rename("other.events", "app.log", true); err != nil {
		t.Fatal(err)
	}
	if n, _ := db.Collection("log").CountDocuments(ctx, bson.D{}); n != 1 {
		t.Fatalf("dropTarget rename: %d documents", n)
	}

	// drop removes indexes: a new collection of the same name has only _id_
	if err := db.Collection("log").Drop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("log").InsertOne(ctx, bson.D{{Key: "a", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if specs := indexSpecs(t, db.Collection("log")); len(specs) != 1 {
		t.Fatalf("indexes after drop %v", specs)
	}
}
