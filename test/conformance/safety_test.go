package conformance

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// TestWriteWithoutConcernWaitsForMajority: with both secondaries frozen, a
// write that names no write concern gets mongod 5.0+'s implicit w:majority
// and is not acknowledged, while a w:1 write is.
func TestWriteWithoutConcernWaitsForMajority(t *testing.T) {
	eachServer(t, func(t *testing.T, bin string) {
		rs := startReplSet(t, bin)
		primary := rs.primary(t)
		for _, m := range rs.members {
			if m != primary {
				m.stop()
			}
		}
		defer func() {
			for _, m := range rs.members {
				m.resume()
			}
		}()
		w1 := rs.client.Database("safety").Collection("w", options.Collection().SetWriteConcern(writeconcern.W1()))
		if _, err := w1.InsertOne(ctx(t), bson.D{{Key: "_id", Value: "w1"}}); err != nil {
			t.Fatalf("w:1 insert with the secondaries frozen: %v", err)
		}
		short, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_, err := rs.client.Database("safety").Collection("w").InsertOne(short, bson.D{{Key: "_id", Value: "implicit"}})
		if err == nil {
			t.Fatal("an insert without a write concern was acknowledged while both secondaries were frozen")
		}
		if !errors.Is(err, context.DeadlineExceeded) && !mongo.IsTimeout(err) {
			t.Logf("the implicit-majority insert failed with %v (not acknowledged, as wanted)", err)
		}
	})
}

// primary is the member that says it is the writable primary.
func (rs *replSet) primary(t *testing.T) *server {
	t.Helper()
	var p *server
	waitUntil(t, 30*time.Second, "a writable primary", func() bool {
		for _, m := range rs.members {
			c, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + m.host + "/?directConnection=true&serverSelectionTimeoutMS=2000"))
			if err != nil {
				continue
			}
			var h struct {
				Writable bool `bson:"isWritablePrimary"`
			}
			cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			err = c.Database("admin").RunCommand(cctx, bson.D{{Key: "hello", Value: 1}}).Decode(&h)
			_ = c.Disconnect(cctx)
			cancel()
			if err == nil && h.Writable {
				p = m
				return true
			}
		}
		return false
	})
	return p
}
