package sim_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// Concurrent writers share the journal's flushes (group commit), yet every
// w:1 acknowledgement means on disk: a SIGKILL in the middle of the
// writes loses none that was acknowledged, and the oplog's timestamps
// still increase strictly in its order.
func TestAcknowledgedGroupCommittedWritesSurviveKill(t *testing.T) {
	ms, p := initiated(t, 1, fastSettings)
	m := ms[p]
	coll := m.client(t).Database("test").Collection("c", options.Collection().SetWriteConcern(writeconcern.W1()))
	var mu sync.Mutex
	var acked []int
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := w*1_000_000 + i
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: id}})
				cancel()
				if err != nil {
					return // the member is gone
				}
				mu.Lock()
				acked = append(acked, id)
				mu.Unlock()
			}
		}()
	}
	waitFor(t, 60*time.Second, "300 acknowledged inserts", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= 300
	})
	m.kill() // writers still running
	close(stop)
	wg.Wait()
	m.start()
	waitPrimary(t, ms, 30*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := m.client(t)
	ids := bson.A{}
	for _, id := range acked {
		ids = append(ids, id)
	}
	n, err := c.Database("test").Collection("c").CountDocuments(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}})
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(len(acked)) {
		t.Errorf("after SIGKILL: %d of %d acknowledged inserts left", n, len(acked))
	}
	cur, err := c.Database("local").Collection("oplog.rs").Find(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var prev bson.Timestamp
	var entries []struct {
		TS bson.Timestamp `bson:"ts"`
	}
	if err := cur.All(ctx, &entries); err != nil {
		t.Fatal(err)
	}
	for i, e := range entries {
		if i > 0 && (e.TS.T < prev.T || e.TS.T == prev.T && e.TS.I <= prev.I) {
			t.Fatalf("oplog entry %d: ts %v after %v", i, e.TS, prev)
		}
		prev = e.TS
	}
	if len(entries) < len(acked) {
		t.Errorf("oplog holds %d entries for %d acknowledged inserts", len(entries), len(acked))
	}
}
