package sim_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// BenchmarkInsert measures single-document inserts through the driver
// on a 3-member set (real mongod-sim processes), for w:1 and w:majority,
// with one client goroutine, with 16 on one collection (the chaos
// workload runs many writers at once, which is what group commit serves)
// and with 16 spread over 4 collections (what per-collection locking
// serves). It reports inserts/s; measured, never asserted:
//
//	go test -run '^$' -bench Insert -benchtime 3s -count 2 ./mongo/sim/
func BenchmarkInsert(b *testing.B) {
	ms := []*member{newMember(b), newMember(b), newMember(b)}
	mustRun(b, ms[0].client(b), bson.D{{Key: "replSetInitiate", Value: rsConfig(ms, fastSettings)}})
	waitPrimary(b, ms, 60*time.Second)
	for _, m := range ms {
		waitFor(b, 60*time.Second, "all up", func() bool { s := state(b, m); return s == 1 || s == 2 })
	}
	client := connect(b, rsURI(ms, "")+"&maxPoolSize=64")
	for _, wc := range []struct {
		name    string
		concern *writeconcern.WriteConcern
	}{{"w1", &writeconcern.WriteConcern{W: 1}}, {"wmajority", writeconcern.Majority()}} {
		for _, c := range []struct{ writers, colls int }{{1, 1}, {16, 1}, {16, 4}} {
			colls := make([]*mongo.Collection, c.colls)
			for i := range colls {
				colls[i] = client.Database("bench").Collection(fmt.Sprintf("%s_%d", wc.name, i), options.Collection().SetWriteConcern(wc.concern))
			}
			b.Run(fmt.Sprintf("%s/writers=%d/colls=%d", wc.name, c.writers, c.colls), func(b *testing.B) {
				benchInserts(b, colls, c.writers)
			})
		}
	}
}

// benchInserts runs b.N inserts split over writers goroutines, writer i
// inserting into colls[i%len(colls)].
func benchInserts(b *testing.B, colls []*mongo.Collection, writers int) {
	next := make(chan struct{})
	errs := make(chan error, writers)
	b.ResetTimer()
	for i := range writers {
		coll := colls[i%len(colls)]
		go func() {
			var first error // keep draining next after a failure, so the feeder never blocks
			for range next {
				if first != nil {
					continue
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				_, first = coll.InsertOne(ctx, bson.D{{Key: "_id", Value: bson.NewObjectID()}, {Key: "v", Value: 1}})
				cancel()
			}
			errs <- first
		}()
	}
	for range b.N {
		next <- struct{}{}
	}
	close(next)
	for range writers {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "inserts/s")
}
