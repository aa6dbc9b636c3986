package sim_test

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// Hunts acknowledged w:majority writes that a majority does not have: many
// elections, the other members frozen at random moments right after each
// one, writers on every member at once (deposed primaries included), and CPU
// hogs in the test process; every other round the primary freezes and comes
// back deposed but unaware. Every write a member acknowledged with
// w:majority must afterwards be in the oplog of a majority of members.
func TestMajorityAckSurvivesElectionsUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("long hunt")
	}
	ms, _ := initiated(t, 3, fastSettings)
	stopHog := make(chan struct{})
	var hogs sync.WaitGroup
	for range max(1, runtime.NumCPU()/2) {
		hogs.Add(1)
		go func() {
			defer hogs.Done()
			x := 0
			for {
				select {
				case <-stopHog:
					return
				default:
				}
				for i := 0; i < 1e5; i++ {
					x += i
				}
			}
		}()
	}
	defer func() { close(stopHog); hogs.Wait() }()

	var (
		mu    sync.Mutex
		acked []int64
		next  atomic.Int64
		stop  atomic.Bool
		wg    sync.WaitGroup
	)
	for _, m := range ms {
		c := m.client(t, "", "retryWrites=false")
		wg.Add(1)
		go func(c *mongo.Client) {
			defer wg.Done()
			db := c.Database("test")
			for !stop.Load() {
				id := next.Add(1)
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				err := db.RunCommand(ctx, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: id}}}},
					{Key: "writeConcern", Value: bson.D{{Key: "w", Value: "majority"}, {Key: "wtimeout", Value: 1000}}}}).Err()
				cancel()
				if err == nil {
					mu.Lock()
					acked = append(acked, id)
					mu.Unlock()
				} else {
					time.Sleep(10 * time.Millisecond)
				}
			}
		}(c)
	}
	rounds := 10
	for round := 0; round < rounds; round++ {
		p := waitPrimary(t, ms, 30*time.Second)
		thawOld := func() {}
		if round%2 == 0 {
			// A forced stepdown for a short period: the next election follows at once.
			_, _ = run(ms[p].client(t), bson.D{{Key: "replSetStepDown", Value: 2}, {Key: "force", Value: true}})
		} else {
			// The primary freezes, the others elect a new one, and it comes back
			// still believing it is primary in the old term, with writers on it.
			thawOld = freeze(t, ms[p])
		}
		deadline := time.Now().Add(30 * time.Second)
		q := -1
		for time.Now().Before(deadline) {
			if q = primaryOf(ms); q >= 0 && q != p {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		thawOld()
		if q < 0 || q == p {
			continue // p was elected again; the next round steps it down again
		}
		time.Sleep(time.Duration(rand.IntN(300)) * time.Millisecond)
		var thaws []func()
		for i, m := range ms {
			if i != q {
				thaws = append(thaws, freeze(t, m))
			}
		}
		time.Sleep(time.Duration(500+rand.IntN(1000)) * time.Millisecond)
		for _, thaw := range thaws {
			thaw()
		}
	}
	stop.Store(true)
	wg.Wait()
	// Let the set settle: a primary, and every member's oplog at the same point.
	waitPrimary(t, ms, 30*time.Second)
	mu.Lock()
	ids := append([]int64(nil), acked...)
	mu.Unlock()
	if len(ids) == 0 {
		t.Fatal("no w:majority write was acknowledged at all")
	}
	var missing []int64
	deadline := time.Now().Add(30 * time.Second)
	for {
		missing = missing[:0]
		have := make([]map[int64]bool, len(ms))
		for i, m := range ms {
			have[i] = oplogInserts(t, m)
		}
		for _, id := range ids {
			n := 0
			for i := range ms {
				if have[i][id] {
					n++
				}
			}
			if n < 2 {
				missing = append(missing, id)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if len(missing) > 0 {
		t.Fatalf("%d of %d acknowledged w:majority writes are not in a majority of oplogs, e.g. _id %d", len(missing), len(ids), missing[0])
	}
	t.Logf("%d w:majority writes acknowledged over %d rounds, all in a majority of oplogs", len(ids), rounds)
}

// oplogInserts returns the _ids inserted into test.c by m's oplog.
func oplogInserts(t *testing.T, m *member) map[int64]bool {
	t.Helper()
	c := m.shortClient()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	defer func() { _ = c.Disconnect(ctx) }()
	out := map[int64]bool{}
	cur, err := c.Database("local").Collection("oplog.rs").Find(ctx, bson.D{{Key: "op", Value: "i"}, {Key: "ns", Value: "test.c"}})
	if err != nil {
		return out
	}
	defer func() { _ = cur.Close(ctx) }()
	for cur.Next(ctx) {
		if id, ok := cur.Current.Lookup("o", "_id").AsInt64OK(); ok {
			out[id] = true
		}
	}
	return out
}

// The cause of the w:majority write once acknowledged with both secondaries
// frozen: a member's progress report with an optime of a newer term counted
// towards the commit point of a primary still in the old term (terms order
// first, so it looked ahead of every write). Replayed here with the oplog
// fetch a member sends: an optime of another term never covers the
// primary's writes, and a fetch in a newer term deposes the primary.
func TestCommitPointIgnoresOptimesOfOtherTerms(t *testing.T) {
	settings := bson.D{{Key: "electionTimeoutMillis", Value: 4000}, {Key: "heartbeatIntervalMillis", Value: 200}}
	ms, p := initiated(t, 3, settings)
	pc := ms[p].client(t)
	st := mustRun(t, pc, bson.D{{Key: "replSetGetStatus", Value: 1}})
	term := st.Lookup("term").Int64()
	s := ms[(p+1)%3]
	for i, m := range ms {
		if i != p {
			freeze(t, m)
		}
	}
	future := bson.D{{Key: "ts", Value: bson.Timestamp{T: uint32(time.Now().Unix()) + 3600, I: 1}}, {Key: "t", Value: term + 1}}
	zero := bson.D{{Key: "ts", Value: bson.Timestamp{}}, {Key: "t", Value: int64(-1)}}
	fetch := func(extra ...bson.E) error {
		cmd := bson.D{{Key: "_simOplogFetch", Value: 1}, {Key: "after", Value: zero}, {Key: "applied", Value: future},
			{Key: "from", Value: s.host}, {Key: "maxWaitMS", Value: 0}}
		return pc.Database("admin").RunCommand(context.Background(), append(cmd, extra...)).Err()
	}
	if err := fetch(); err != nil {
		t.Fatal(err)
	}
	err := pc.Database("test").RunCommand(context.Background(), bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}}}},
		{Key: "writeConcern", Value: bson.D{{Key: "w", Value: "majority"}, {Key: "wtimeout", Value: 500}}}}).Err()
	if !hasCode(err, 64) {
		t.Fatalf("w:majority with both secondaries frozen, after a report of a newer term's optime: want writeConcernError 64, got %v", err)
	}
	if err := fetch(bson.E{Key: "term", Value: term + 1}); err != nil {
		t.Fatal(err)
	}
	r := mustRun(t, pc, bson.D{{Key: "replSetGetStatus", Value: 1}})
	if r.Lookup("myState").Int32() == 1 || r.Lookup("term").Int64() != term+1 {
		t.Fatalf("a fetch in term %d left the primary in state %v term %v", term+1, r.Lookup("myState"), r.Lookup("term"))
	}
}
