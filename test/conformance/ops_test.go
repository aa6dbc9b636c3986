package conformance

import (
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

func insert(t *testing.T, c *mongo.Collection, docs ...bson.D) {
	t.Helper()
	if _, err := c.InsertMany(ctx(t), docs); err != nil {
		t.Fatalf("insert into %s: %v", c.Name(), err)
	}
}

func update(t *testing.T, c *mongo.Collection, filter, upd bson.D) {
	t.Helper()
	res, err := c.UpdateOne(ctx(t), filter, upd)
	if err != nil {
		t.Fatalf("update %v with %v: %v", filter, upd, err)
	}
	if res.MatchedCount != 1 {
		t.Fatalf("update %v with %v matched %d documents, want 1", filter, upd, res.MatchedCount)
	}
}

func findIDs(t *testing.T, c *mongo.Collection, filter bson.D, opts ...options.Lister[options.FindOptions]) []any {
	t.Helper()
	cur, err := c.Find(ctx(t), filter, opts...)
	if err != nil {
		t.Fatalf("find %v: %v", filter, err)
	}
	var docs []struct {
		ID any `bson:"_id"`
	}
	if err := cur.All(ctx(t), &docs); err != nil {
		t.Fatalf("find %v: %v", filter, err)
	}
	ids := make([]any, len(docs))
	for i, d := range docs {
		ids[i] = d.ID
	}
	return ids
}

// wantIDs checks the _ids a filter finds, in _id order.
func wantIDs(t *testing.T, c *mongo.Collection, filter bson.D, want ...int) {
	t.Helper()
	got := findIDs(t, c, filter, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("find %v: _ids %v, want %v", filter, got, want)
	}
}

func aggregate(t *testing.T, c *mongo.Collection, pipeline bson.A, out any) {
	t.Helper()
	cur, err := c.Aggregate(ctx(t), pipeline)
	if err != nil {
		t.Fatalf("aggregate %v: %v", pipeline, err)
	}
	if err := cur.All(ctx(t), out); err != nil {
		t.Fatalf("aggregate %v: %v", pipeline, err)
	}
}
