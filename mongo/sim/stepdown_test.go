package sim_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
)

// freeze SIGSTOPs m until the test ends (or thaw is called).
func freeze(t *testing.T, m *member) (thaw func()) {
	t.Helper()
	if err := m.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	thaw = func() {
		once.Do(func() {
			if m.cmd != nil {
				_ = m.cmd.Process.Signal(syscall.SIGCONT)
			}
		})
	}
	t.Cleanup(thaw)
	return thaw
}

// writable asks m's hello whether it is a writable primary; ok is false
// when m did not answer.
func writable(m *member) (w, ok bool) {
	h := helloOf(m)
	if h == nil {
		return false, false
	}
	w, _ = h.Lookup("isWritablePrimary").BooleanOK()
	return w, true
}

// From the moment replSetStepDown starts the primary takes no write (10107)
// and serves reads only to secondaryOk readers; when the stepdown
// fails (262) it takes writes again.
func TestStepDownRefusesWritesUntilItFails(t *testing.T) {
	ms := []*member{newMember(t), newMember(t), newMember(t)}
	cfg := rsConfig(ms, fastSettings)
	members := cfg[1].Value.(bson.A)
	members[0] = append(members[0].(bson.D), bson.E{Key: "priority", Value: 2})
	members[2] = append(members[2].(bson.D), bson.E{Key: "priority", Value: 0})
	mustRun(t, ms[0].client(t), bson.D{{Key: "replSetInitiate", Value: cfg}})
	waitFor(t, 60*time.Second, "member 0 primary", func() bool { w, _ := writable(ms[0]); return w })
	waitFor(t, 20*time.Second, "secondaries", func() bool { return state(t, ms[1]) == 2 && state(t, ms[2]) == 2 })
	// Without retries, so that each refusal reaches the test.
	pc := ms[0].client(t, "", "retryWrites=false")
	coll := pc.Database("test").Collection("c")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 0}}); err != nil {
		t.Fatal(err)
	}
	// The only electable secondary cannot catch up: the stepdown waits.
	freeze(t, ms[1])
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the primary to see member 1 down", func() bool {
		r, err := run(pc, bson.D{{Key: "replSetGetStatus", Value: 1}})
		if err != nil {
			return false
		}
		h, _ := r.Lookup("members", "1", "health").AsFloat64OK()
		return h == 0
	})
	res := make(chan error, 1)
	go func() {
		_, err := run(pc, bson.D{{Key: "replSetStepDown", Value: 30}, {Key: "secondaryCatchUpPeriodSecs", Value: 6}})
		res <- err
	}()
	// Writes are accepted until the stepdown starts, then refused with
	// 10107 for as long as it lasts.
	var err error
	for id := 100; ; id++ {
		_, err = coll.InsertOne(ctx, bson.D{{Key: "_id", Value: id}})
		if err != nil {
			break
		}
		select {
		case e := <-res:
			t.Fatalf("the stepdown returned (%v) while writes were accepted", e)
		default:
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !hasCode(err, 10107) || !strings.Contains(err.Error(), "not primary") {
		t.Fatalf("insert while stepping down: want 10107 not primary, got %v", err)
	}
	select {
	case e := <-res:
		t.Fatalf("the stepdown returned (%v) before writes were refused", e)
	default:
	}
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 2}}); !hasCode(err, 10107) {
		t.Fatalf("second insert while stepping down: want 10107, got %v", err)
	}
	// A direct connection reads with secondaryOk (the driver sends
	// primaryPreferred), as from a secondary; without it the read is refused
	// (TestDrainingPrimaryReadRule).
	sec := pc.Database("test").Collection("c", options.Collection().SetReadPreference(readpref.SecondaryPreferred()))
	if n, err := sec.CountDocuments(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$lt", Value: 100}}}}); err != nil || n != 2 {
		t.Fatalf("secondaryOk read while stepping down: %d %v", n, err)
	}
	select {
	case err := <-res:
		if !hasCode(err, 262) {
			t.Fatalf("stepdown: want 262 ExceededTimeLimit, got %v", err)
		}
	case <-ctx.Done():
		t.Fatal("stepdown did not return")
	}
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 3}}); err != nil {
		t.Fatalf("insert after the stepdown failed: %v", err)
	}
}

// Under a retryable write load through a replica-set client, repeated
// stepdowns lose no acknowledged write and roll nothing back: from the
// moment a stepdown starts the old primary writes nothing its successor
// lacks, and the driver's retries carry the load over to the new primary.
func TestStepDownUnderWriteLoad(t *testing.T) {
	ms, _ := initiated(t, 3, fastSettings)
	client := connect(t, rsURI(ms, ""))
	coll := client.Database("test").Collection("c")
	var (
		mu    sync.Mutex
		acked []int64
		errs  []string
		next  atomic.Int64
		stop  atomic.Bool
		wg    sync.WaitGroup
	)
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				id := next.Add(1)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: id}})
				cancel()
				mu.Lock()
				if err == nil {
					acked = append(acked, id)
				} else {
					errs = append(errs, err.Error())
				}
				mu.Unlock()
			}
		}()
	}
	for round := 0; round < 3; round++ {
		p := waitPrimary(t, ms, 30*time.Second)
		time.Sleep(300 * time.Millisecond) // let the load reach the new primary
		if _, err := run(ms[p].client(t), bson.D{{Key: "replSetStepDown", Value: 5}, {Key: "secondaryCatchUpPeriodSecs", Value: 4}}); err != nil {
			t.Fatalf("round %d: stepdown of %s under load: %v", round, ms[p].host, err)
		}
		waitFor(t, 30*time.Second, "a new primary", func() bool { q := primaryOf(ms); return q >= 0 && q != p })
	}
	stop.Store(true)
	wg.Wait()
	if len(errs) > 0 {
		t.Errorf("%d writes failed despite retryable writes, first: %s", len(errs), errs[0])
	}
	p := waitPrimary(t, ms, 30*time.Second)
	ids := bson.A{}
	for _, id := range acked {
		ids = append(ids, id)
	}
	var counts []int64
	deadline := time.Now().Add(30 * time.Second)
	for {
		counts = counts[:0]
		all := true
		for _, m := range ms {
			c := countOn(t, m, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}})
			counts = append(counts, c)
			all = all && c == int64(len(ids))
		}
		if all {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("acknowledged writes missing: %d acknowledged, members have %v", len(ids), counts)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, m := range ms {
		if strings.Contains(m.out.String(), `"id":21612`) {
			t.Errorf("%s rolled back writes: a stepping-down primary accepted writes its successor did not have", m.host)
		}
	}
	t.Logf("%d writes acknowledged over 3 stepdowns; final primary %s", len(acked), ms[p].host)
}
