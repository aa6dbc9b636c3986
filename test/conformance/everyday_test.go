package conformance

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readconcern"
)

// scenario is what an application does, and what mongod answers, in one
// database of its own on a shared replica set.
type scenario struct {
	name string
	run  func(t *testing.T, db *mongo.Database)
}

// TestEveryday runs what applications do every day: the expectations a new
// user checks first, each answered as mongod answers it.
func TestEveryday(t *testing.T) {
	eachServer(t, func(t *testing.T, bin string) {
		rs := startReplSet(t, bin)
		for i, sc := range everyday {
			t.Run(sc.name, func(t *testing.T) {
				sc.run(t, rs.client.Database(fmt.Sprintf("everyday%d", i)))
			})
		}
	})
}

var everyday = []scenario{
	{"unique index refuses a duplicate and is listed", func(t *testing.T, db *mongo.Database) {
		c := db.Collection("items")
		name, err := c.Indexes().CreateOne(ctx(t), mongo.IndexModel{Keys: bson.D{{Key: "sku", Value: 1}}, Options: options.Index().SetUnique(true)})
		if err != nil || name != "sku_1" {
			t.Fatalf("createIndex: %q %v", name, err)
		}
		if _, err := c.InsertOne(ctx(t), bson.D{{Key: "sku", Value: "a"}}); err != nil {
			t.Fatal(err)
		}
		_, err = c.InsertOne(ctx(t), bson.D{{Key: "sku", Value: "a"}})
		if !mongo.IsDuplicateKeyError(err) {
			t.Fatalf("second insert of sku a: %v, want E11000", err)
		}
		if !strings.Contains(err.Error(), `index: sku_1 dup key: { sku: "a" }`) {
			t.Errorf("duplicate key message %q lacks mongod's `index: sku_1 dup key: { sku: \"a\" }`", err)
		}
		specs, err := c.Indexes().ListSpecifications(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, s := range specs {
			names = append(names, s.Name)
			if s.Name == "sku_1" && (s.Unique == nil || !*s.Unique) {
				t.Errorf("sku_1 listed without unique: %+v", s)
			}
		}
		if strings.Join(names, ",") != "_id_,sku_1" {
			t.Errorf("listIndexes: %v, want [_id_ sku_1]", names)
		}
		if err := c.Indexes().DropOne(ctx(t), "sku_1"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.InsertOne(ctx(t), bson.D{{Key: "sku", Value: "a"}}); err != nil {
			t.Fatalf("insert after dropping the unique index: %v", err)
		}
	}},
	{"dotted path into an array of sub-documents", func(t *testing.T, db *mongo.Database) {
		c := db.Collection("orders")
		insert(t, c, bson.D{{Key: "_id", Value: 1}, {Key: "items", Value: bson.A{bson.D{{Key: "sku", Value: "x"}, {Key: "qty", Value: 2}}, bson.D{{Key: "sku", Value: "y"}, {Key: "qty", Value: 5}}}}},
			bson.D{{Key: "_id", Value: 2}, {Key: "items", Value: bson.A{bson.D{{Key: "sku", Value: "y"}, {Key: "qty", Value: 1}}}}})
		wantIDs(t, c, bson.D{{Key: "items.sku", Value: "x"}}, 1)
		wantIDs(t, c, bson.D{{Key: "items.qty", Value: bson.D{{Key: "$gt", Value: 4}}}}, 1)
		wantIDs(t, c, bson.D{{Key: "items", Value: bson.D{{Key: "$elemMatch", Value: bson.D{{Key: "sku", Value: "y"}, {Key: "qty", Value: bson.D{{Key: "$lt", Value: 2}}}}}}}}, 2)
		// Without $elemMatch the conditions may hold on different elements.
		wantIDs(t, c, bson.D{{Key: "items.sku", Value: "y"}, {Key: "items.qty", Value: 2}}, 1)
		wantIDs(t, c, bson.D{{Key: "items.0.sku", Value: "y"}}, 2)
	}},
	{"$addToSet, $push with $each and $slice, positional and arrayFilters", func(t *testing.T, db *mongo.Database) {
		c := db.Collection("tags")
		insert(t, c, bson.D{{Key: "_id", Value: 1}, {Key: "tags", Value: bson.A{"a"}}, {Key: "scores", Value: bson.A{1, 5, 9}}})
		update(t, c, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$addToSet", Value: bson.D{{Key: "tags", Value: bson.D{{Key: "$each", Value: bson.A{"a", "b"}}}}}}})
		update(t, c, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$push", Value: bson.D{{Key: "scores", Value: bson.D{{Key: "$each", Value: bson.A{7}}, {Key: "$sort", Value: 1}, {Key: "$slice", Value: -3}}}}}})
		update(t, c, bson.D{{Key: "_id", Value: 1}, {Key: "scores", Value: 9}}, bson.D{{Key: "$set", Value: bson.D{{Key: "scores.$", Value: 10}}}})
		res, err := c.UpdateOne(ctx(t), bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "scores.$[s]", Value: 100}}}},
			options.UpdateOne().SetArrayFilters([]any{bson.D{{Key: "s", Value: bson.D{{Key: "$lt", Value: 6}}}}}))
		if err != nil || res.ModifiedCount != 1 {
			t.Fatalf("arrayFilters update: %+v %v", res, err)
		}
		var got struct {
			Tags   []string `bson:"tags"`
			Scores []int32  `bson:"scores"`
		}
		if err := c.FindOne(ctx(t), bson.D{{Key: "_id", Value: 1}}).Decode(&got); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got.Tags) != "[a b]" || fmt.Sprint(got.Scores) != "[105 7 10]" {
			t.Fatalf("tags %v scores %v, want [a b] [105 7 10]", got.Tags, got.Scores)
		}
		_, err = c.UpdateOne(ctx(t), bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "tags", Value: 1}}}})
		var we mongo.WriteException
		if !errors.As(err, &we) || len(we.WriteErrors) != 1 || we.WriteErrors[0].Code != 14 {
			t.Fatalf("$inc on an array: %v, want write error 14 TypeMismatch", err)
		}
	}},
	{"$group sums a field; $unwind and $sortByCount", func(t *testing.T, db *mongo.Database) {
		c := db.Collection("sales")
		insert(t, c, bson.D{{Key: "item", Value: "a"}, {Key: "amt", Value: 10}, {Key: "tags", Value: bson.A{"x", "y"}}},
			bson.D{{Key: "item", Value: "a"}, {Key: "amt", Value: 5.5}, {Key: "tags", Value: bson.A{"x"}}},
			bson.D{{Key: "item", Value: "b"}, {Key: "amt", Value: 1}})
		var rows []struct {
			ID    string  `bson:"_id"`
			Total float64 `bson:"total"`
			Avg   float64 `bson:"avg"`
			N     int32   `bson:"n"`
		}
		aggregate(t, c, bson.A{
			bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$item"}, {Key: "total", Value: bson.D{{Key: "$sum", Value: "$amt"}}},
				{Key: "avg", Value: bson.D{{Key: "$avg", Value: "$amt"}}}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}}}},
			bson.D{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}},
		}, &rows)
		if fmt.Sprint(rows) != "[{a 15.5 7.75 2} {b 1 1 1}]" {
			t.Fatalf("$group: %v", rows)
		}
		var counts []struct {
			ID    string `bson:"_id"`
			Count int32  `bson:"count"`
		}
		aggregate(t, c, bson.A{bson.D{{Key: "$unwind", Value: "$tags"}}, bson.D{{Key: "$sortByCount", Value: "$tags"}}}, &counts)
		if fmt.Sprint(counts) != "[{x 2} {y 1}]" {
			t.Fatalf("$unwind + $sortByCount: %v", counts)
		}
	}},
	{"concurrent $inc loses nothing", func(t *testing.T, db *mongo.Database) {
		c := db.Collection("counter")
		insert(t, c, bson.D{{Key: "_id", Value: "n"}, {Key: "v", Value: 0}})
		var wg sync.WaitGroup
		errs := make(chan error, 200)
		for range 200 {
			wg.Go(func() {
				_, err := c.UpdateOne(ctx(t), bson.D{{Key: "_id", Value: "n"}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "v", Value: 1}}}})
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		var got struct {
			V int32 `bson:"v"`
		}
		if err := c.FindOne(ctx(t), bson.D{{Key: "_id", Value: "n"}}).Decode(&got); err != nil || got.V != 200 {
			t.Fatalf("counter %d (%v), want 200", got.V, err)
		}
	}},
	{"a transaction applies all of its writes at commit and none on abort", func(t *testing.T, db *mongo.Database) {
		c := db.Collection("txn")
		if err := db.CreateCollection(ctx(t), "txn"); err != nil {
			t.Fatal(err)
		}
		sess, err := db.Client().StartSession()
		if err != nil {
			t.Fatal(err)
		}
		defer sess.EndSession(ctx(t))
		_, err = sess.WithTransaction(ctx(t), func(sc context.Context) (any, error) {
			for i := range 3 {
				if _, err := c.InsertOne(sc, bson.D{{Key: "_id", Value: i}}); err != nil {
					return nil, err
				}
			}
			if n, err := c.CountDocuments(ctx(t), bson.D{}); err != nil || n != 0 {
				return nil, fmt.Errorf("outside the transaction %d documents are visible before commit (%w)", n, err)
			}
			return nil, nil
		})
		if err != nil {
			t.Fatalf("transaction: %v", err)
		}
		if n, _ := c.CountDocuments(ctx(t), bson.D{}); n != 3 {
			t.Fatalf("%d documents after commit, want 3", n)
		}
		if err := sess.StartTransaction(); err != nil {
			t.Fatal(err)
		}
		sc := mongo.NewSessionContext(ctx(t), sess)
		if _, err := c.InsertOne(sc, bson.D{{Key: "_id", Value: 10}}); err != nil {
			t.Fatal(err)
		}
		if err := sess.AbortTransaction(ctx(t)); err != nil {
			t.Fatal(err)
		}
		if n, _ := c.CountDocuments(ctx(t), bson.D{}); n != 3 {
			t.Fatalf("%d documents after an aborted insert, want 3", n)
		}
	}},
	{"case-insensitive regex and sort by array elements", func(t *testing.T, db *mongo.Database) {
		c := db.Collection("names")
		insert(t, c, bson.D{{Key: "_id", Value: 1}, {Key: "name", Value: "Alice"}, {Key: "v", Value: bson.A{5, 1}}},
			bson.D{{Key: "_id", Value: 2}, {Key: "name", Value: "bob"}, {Key: "v", Value: bson.A{3}}},
			bson.D{{Key: "_id", Value: 3}, {Key: "name", Value: "ALAN"}, {Key: "v", Value: bson.A{4, 2}}})
		wantIDs(t, c, bson.D{{Key: "name", Value: bson.Regex{Pattern: "^al", Options: "i"}}}, 1, 3)
		ids := findIDs(t, c, bson.D{}, options.Find().SetSort(bson.D{{Key: "v", Value: 1}}))
		if fmt.Sprint(ids) != "[1 3 2]" {
			t.Errorf("ascending sort by arrays (smallest element): %v, want [1 3 2]", ids)
		}
		ids = findIDs(t, c, bson.D{}, options.Find().SetSort(bson.D{{Key: "v", Value: -1}}))
		if fmt.Sprint(ids) != "[1 3 2]" {
			t.Errorf("descending sort by arrays (largest element): %v, want [1 3 2]", ids)
		}
	}},
	{"the default write concern is majority", func(t *testing.T, db *mongo.Database) {
		var got struct {
			WC     bson.Raw `bson:"defaultWriteConcern"`
			Source string   `bson:"defaultWriteConcernSource"`
		}
		if err := db.Client().Database("admin").RunCommand(ctx(t), bson.D{{Key: "getDefaultRWConcern", Value: 1}}).Decode(&got); err != nil {
			t.Fatal(err)
		}
		if w, _ := got.WC.Lookup("w").StringValueOK(); w != "majority" || got.Source != "implicit" {
			t.Fatalf("getDefaultRWConcern: %v from %q, want w:majority, implicit", got.WC, got.Source)
		}
	}},
	{"linearizable and majority reads see an acknowledged write", func(t *testing.T, db *mongo.Database) {
		c := db.Collection("reg")
		insert(t, c, bson.D{{Key: "_id", Value: "r"}, {Key: "v", Value: 1}})
		update(t, c, bson.D{{Key: "_id", Value: "r"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: 2}}}})
		for _, level := range []string{"linearizable", "majority"} {
			rc := db.Collection("reg", options.Collection().SetReadConcern(&readconcern.ReadConcern{Level: level}))
			var got struct {
				V int32 `bson:"v"`
			}
			if err := rc.FindOne(ctx(t), bson.D{{Key: "_id", Value: "r"}}).Decode(&got); err != nil || got.V != 2 {
				t.Fatalf("readConcern %s: v=%d (%v), want 2", level, got.V, err)
			}
		}
	}},
}
