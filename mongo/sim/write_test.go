package sim_test

import (
	"context"
	"errors"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mgors/operator/mongo/sim"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readconcern"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// rawCmd sends one OP_MSG on its own connection, as a driver retrying
// with a session's lsid and txnNumber does, and returns the reply.
func rawCmd(t *testing.T, host string, doc bson.D) bson.Raw {
	t.Helper()
	c, err := net.DialTimeout("tcp", host, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	b, err := bson.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(sim.EncodeMsg(1, 0, 0, b)); err != nil {
		t.Fatal(err)
	}
	msg, err := sim.ReadMessage(c)
	if err != nil {
		t.Fatal(err)
	}
	req, err := sim.ParseMessage(msg)
	if err != nil {
		t.Fatal(err)
	}
	return req.Body
}

func stopSecondaries(t *testing.T, ms []*member, p int) {
	for i, m := range ms {
		if i == p {
			continue
		}
		if err := m.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if m.cmd != nil {
				_ = m.cmd.Process.Signal(syscall.SIGCONT)
			}
		})
	}
}

func resumeSecondaries(ms []*member, p int) {
	for i, m := range ms {
		if i != p {
			_ = m.cmd.Process.Signal(syscall.SIGCONT)
		}
	}
}

// A write naming no write concern is w:"majority" (mongod's implicit
// default): with both secondaries frozen it is never acknowledged, while
// a w:1 write is. setDefaultRWConcern's default replaces it, and the
// writeConcernError says where the write concern came from.
func TestDefaultWriteConcernIsMajority(t *testing.T) {
	settings := bson.D{{Key: "electionTimeoutMillis", Value: 4000}, {Key: "heartbeatIntervalMillis", Value: 200}}
	ms, p := initiated(t, 3, settings)
	pc := ms[p].client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	coll := pc.Database("test").Collection("c")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 0}}); err != nil {
		t.Fatalf("default write concern with every member up: %v", err)
	}
	stopSecondaries(t, ms, p)
	short, cancelShort := context.WithTimeout(ctx, 700*time.Millisecond)
	_, err := coll.InsertOne(short, bson.D{{Key: "_id", Value: 1}})
	cancelShort()
	if err == nil {
		t.Fatal("a write with the implicit default write concern was acknowledged without a majority")
	}
	w1 := pc.Database("test").Collection("c", options.Collection().SetWriteConcern(writeconcern.W1()))
	if _, err := w1.InsertOne(ctx, bson.D{{Key: "_id", Value: 2}}); err != nil {
		t.Fatalf("w:1 with the secondaries frozen: %v", err)
	}
	r := rawCmd(t, ms[p].host, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 3}}}},
		{Key: "writeConcern", Value: bson.D{{Key: "wtimeout", Value: 200}}}, {Key: "$db", Value: "test"}})
	if p, _ := r.Lookup("writeConcernError", "errInfo", "writeConcern", "provenance").StringValueOK(); p != "implicitDefault" {
		t.Fatalf("provenance of an implicit default: %v", r)
	}
	if code, _ := r.Lookup("writeConcernError", "code").AsInt64OK(); code != 64 {
		t.Fatalf("want writeConcernError 64: %v", r)
	}
	// a transaction's commit whose write concern times out: the outcome is
	// unknown to the client (UnknownTransactionCommitResult); a retry of
	// the commit answers it again
	lsid := bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: []byte("0123456789abcdef")}}}
	txn := bson.D{{Key: "lsid", Value: lsid}, {Key: "txnNumber", Value: int64(1)}, {Key: "autocommit", Value: false}}
	r = rawCmd(t, ms[p].host, append(bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: "txn"}}}},
		{Key: "startTransaction", Value: true}, {Key: "$db", Value: "test"}}, txn...))
	if ok, _ := r.Lookup("ok").AsFloat64OK(); ok != 1 {
		t.Fatalf("insert in a transaction: %v", r)
	}
	for range 2 {
		r = rawCmd(t, ms[p].host, append(bson.D{{Key: "commitTransaction", Value: 1},
			{Key: "writeConcern", Value: bson.D{{Key: "w", Value: "majority"}, {Key: "wtimeout", Value: 200}}}, {Key: "$db", Value: "admin"}}, txn...))
		if l, _ := r.Lookup("errorLabels", "0").StringValueOK(); l != "UnknownTransactionCommitResult" {
			t.Fatalf("commit without a majority: %v", r)
		}
	}
	// a cluster-wide default (set with w:1 itself, the secondaries being frozen)
	mustRun(t, pc, bson.D{{Key: "setDefaultRWConcern", Value: 1},
		{Key: "defaultWriteConcern", Value: bson.D{{Key: "w", Value: "majority"}, {Key: "wtimeout", Value: 200}}},
		{Key: "writeConcern", Value: bson.D{{Key: "w", Value: 1}}}})
	_, err = coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 4}})
	var we mongo.WriteException
	if !errors.As(err, &we) || we.WriteConcernError == nil || we.WriteConcernError.Code != 64 {
		t.Fatalf("custom default w:majority wtimeout 200: %v", err)
	}
	if p, _ := we.WriteConcernError.Details.Lookup("writeConcern", "provenance").StringValueOK(); p != "customDefault" {
		t.Fatalf("provenance of a custom default: %v", we.WriteConcernError.Details)
	}
	mustRun(t, pc, bson.D{{Key: "setDefaultRWConcern", Value: 1}, {Key: "defaultWriteConcern", Value: bson.D{{Key: "w", Value: 1}}},
		{Key: "writeConcern", Value: bson.D{{Key: "w", Value: 1}}}})
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 5}}); err != nil {
		t.Fatalf("custom default w:1 with the secondaries frozen: %v", err)
	}
	// w:0 is not acknowledged at all
	w0 := pc.Database("test").Collection("c", options.Collection().SetWriteConcern(writeconcern.Unacknowledged()))
	if _, err := w0.InsertOne(ctx, bson.D{{Key: "_id", Value: 6}}); err != nil {
		t.Fatalf("w:0: %v", err)
	}
	waitFor(t, 10*time.Second, "the w:0 write applied", func() bool { return countOn(t, ms[p], bson.D{{Key: "_id", Value: 6}}) == 1 })
	// a default read concern applies to reads that name none
	mustRun(t, pc, bson.D{{Key: "setDefaultRWConcern", Value: 1}, {Key: "defaultReadConcern", Value: bson.D{{Key: "level", Value: "majority"}}},
		{Key: "writeConcern", Value: bson.D{{Key: "w", Value: 1}}}})
	if n, err := coll.CountDocuments(ctx, bson.D{{Key: "_id", Value: 2}}); err != nil || n != 0 {
		t.Fatalf("default read concern majority saw a w:1 write: %d %v", n, err)
	}
	local := pc.Database("test").Collection("c", options.Collection().SetReadConcern(readconcern.Local()))
	if n, err := local.CountDocuments(ctx, bson.D{{Key: "_id", Value: 2}}); err != nil || n != 1 {
		t.Fatalf("read concern local: %d %v", n, err)
	}
	resumeSecondaries(ms, p)
	// the default is replicated (config.settings through the oplog)
	for i, m := range ms {
		if i == p {
			continue
		}
		waitFor(t, 20*time.Second, "default on "+m.host, func() bool {
			r, err := run(m.shortClient(), bson.D{{Key: "getDefaultRWConcern", Value: 1}})
			w, _ := r.Lookup("defaultWriteConcern", "w").AsInt64OK()
			src, _ := r.Lookup("defaultWriteConcernSource").StringValueOK()
			lvl, _ := r.Lookup("defaultReadConcern", "level").StringValueOK()
			return err == nil && w == 1 && src == "global" && lvl == "majority"
		})
	}
}

// update and findAndModify read, compute and write under one lock: 200
// concurrent $inc leave exactly 200, and upserts racing on one _id insert
// once and update the rest.
func TestConcurrentIncrementsAndUpsertsAreAtomic(t *testing.T) {
	ms, _ := initiated(t, 1, fastSettings)
	client := connect(t, rsURI(ms, ""))
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	coll := client.Database("test").Collection("counters")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "c"}, {Key: "n", Value: 0}}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 400)
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			inc := bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}
			var err error
			if i%2 == 0 {
				_, err = coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: "c"}}, inc)
			} else {
				err = coll.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: "c"}}, inc).Err()
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	var upserts sync.Map
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: "u"}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}},
				options.UpdateOne().SetUpsert(true))
			if err != nil {
				errs <- err
				return
			}
			if r.UpsertedCount == 1 {
				upserts.Store(i, true)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var got struct{ N int }
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: "c"}}).Decode(&got); err != nil || got.N != 200 {
		t.Fatalf("counter after 200 concurrent $inc: %d %v", got.N, err)
	}
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: "u"}}).Decode(&got); err != nil || got.N != 50 {
		t.Fatalf("counter after 50 racing upserts: %d %v", got.N, err)
	}
	inserted := 0
	upserts.Range(func(any, any) bool { inserted++; return true })
	if inserted != 1 {
		t.Fatalf("%d upserts inserted", inserted)
	}
}

// A retryable write is tracked per (lsid, txnNumber, stmtId) in the
// oplog, so after a failover a retried batch applies only what is
// missing, a retried findAndModify answers its original reply, a retried
// update its original counts, and an older txnNumber is refused (225).
func TestRetryableWritesAcrossFailover(t *testing.T) {
	ms, p := initiated(t, 3, fastSettings)
	lsid := func(b byte) bson.D {
		id := make([]byte, 16)
		id[15] = b
		return bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: id}}}
	}
	maj := bson.E{Key: "writeConcern", Value: bson.D{{Key: "w", Value: "majority"}}}
	db := bson.E{Key: "$db", Value: "test"}
	doc := func(i int) bson.D { return bson.D{{Key: "_id", Value: i}} }
	mustOK := func(r bson.Raw) bson.Raw {
		t.Helper()
		if ok, _ := r.Lookup("ok").AsFloat64OK(); ok != 1 {
			t.Fatalf("reply %v", r)
		}
		return r
	}
	// the first attempt of a batch got only its first two documents in
	insert := func(docs ...any) bson.D {
		return bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A(docs)}, {Key: "lsid", Value: lsid(1)},
			{Key: "txnNumber", Value: int64(3)}, maj, db}
	}
	mustOK(rawCmd(t, ms[p].host, insert(doc(1), doc(2))))
	mustOK(rawCmd(t, ms[p].host, bson.D{{Key: "insert", Value: "k"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: "k"}, {Key: "n", Value: 0}}}}, maj, db}))
	fam := bson.D{{Key: "findAndModify", Value: "k"}, {Key: "query", Value: bson.D{{Key: "_id", Value: "k"}}},
		{Key: "update", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}}, {Key: "new", Value: true},
		{Key: "lsid", Value: lsid(2)}, {Key: "txnNumber", Value: int64(5)}, maj, db}
	first := mustOK(rawCmd(t, ms[p].host, fam))
	upd := bson.D{{Key: "update", Value: "k"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: "k"}}},
		{Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 10}}}}}}}}, {Key: "lsid", Value: lsid(3)}, {Key: "txnNumber", Value: int64(1)}, maj, db}
	mustOK(rawCmd(t, ms[p].host, upd))
	// findAndModify remove (pre-image) and upsert, each in its own session
	remove := bson.D{{Key: "findAndModify", Value: "c"}, {Key: "query", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "remove", Value: true},
		{Key: "lsid", Value: lsid(4)}, {Key: "txnNumber", Value: int64(1)}, maj, db}
	removed := mustOK(rawCmd(t, ms[p].host, remove))
	upsert := bson.D{{Key: "findAndModify", Value: "k"}, {Key: "query", Value: bson.D{{Key: "_id", Value: "new"}}},
		{Key: "update", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}}, {Key: "upsert", Value: true}, {Key: "new", Value: true},
		{Key: "lsid", Value: lsid(5)}, {Key: "txnNumber", Value: int64(1)}, maj, db}
	upserted := mustOK(rawCmd(t, ms[p].host, upsert))

	ms[p].kill()
	var rest []*member
	for i, m := range ms {
		if i != p {
			rest = append(rest, m)
		}
	}
	np := waitPrimary(t, rest, 30*time.Second)
	host := rest[np].host
	r := mustOK(rawCmd(t, host, insert(doc(1), doc(2), doc(3), doc(4))))
	if n, _ := r.Lookup("n").AsInt64OK(); n != 4 {
		t.Fatalf("retried batch: %v", r)
	}
	if _, err := r.LookupErr("writeErrors"); err == nil {
		t.Fatalf("retried batch reported errors: %v", r)
	}
	again := mustOK(rawCmd(t, host, fam))
	if got, want := again.Lookup("value").String(), first.Lookup("value").String(); got != want {
		t.Fatalf("retried findAndModify: %s, first reply %s", got, want)
	}
	for _, c := range []struct {
		cmd   bson.D
		first bson.Raw
	}{{remove, removed}, {upsert, upserted}} {
		r := mustOK(rawCmd(t, host, c.cmd))
		if r.Lookup("value").String() != c.first.Lookup("value").String() || r.Lookup("lastErrorObject").String() != c.first.Lookup("lastErrorObject").String() {
			t.Fatalf("retried %v: %v, first reply %v", c.cmd[0], r, c.first)
		}
	}
	r = mustOK(rawCmd(t, host, upd))
	if n, _ := r.Lookup("n").AsInt64OK(); n != 1 {
		t.Fatalf("retried update: %v", r)
	}
	if nm, _ := r.Lookup("nModified").AsInt64OK(); nm != 1 {
		t.Fatalf("retried update: %v", r)
	}
	old := append(bson.D{}, fam...)
	for i := range old {
		if old[i].Key == "txnNumber" {
			old[i].Value = int64(4)
		}
	}
	r = rawCmd(t, host, old)
	if code, _ := r.Lookup("code").AsInt64OK(); code != 225 {
		t.Fatalf("older txnNumber: %v", r)
	}
	c := rest[np].client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// 2, 3, 4: the retry did not insert 1 again (its statement was applied, then removed)
	if n, err := c.Database("test").Collection("c").CountDocuments(ctx, bson.D{}); err != nil || n != 3 {
		t.Fatalf("documents after the retried batch: %d %v", n, err)
	}
	var got struct{ N int }
	if err := c.Database("test").Collection("k").FindOne(ctx, bson.D{{Key: "_id", Value: "k"}}).Decode(&got); err != nil || got.N != 11 {
		t.Fatalf("counter after retries: %d %v", got.N, err)
	}
	if err := c.Database("test").Collection("k").FindOne(ctx, bson.D{{Key: "_id", Value: "new"}}).Decode(&got); err != nil || got.N != 1 {
		t.Fatalf("upserted counter after its retry: %d %v", got.N, err)
	}
}

// Increments through the driver's retryable findAndModify while the
// primary is SIGKILLed: every acknowledged increment counts exactly once
// (a retry of one applied before the failover is answered, not applied
// again); an unacknowledged one at most once.
func TestRetriedIncrementsCountOnceAcrossFailover(t *testing.T) {
	ms, p := initiated(t, 3, fastSettings)
	client := connect(t, rsURI(ms, ""))
	coll := client.Database("test").Collection("inc")
	ctx0, cancel0 := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel0()
	if _, err := coll.InsertOne(ctx0, bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 0}}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	acked, failed := 0, 0
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				err := coll.FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}).Err()
				cancel()
				mu.Lock()
				if err == nil {
					acked++
				} else {
					failed++
				}
				mu.Unlock()
			}
		}()
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return acked }
	waitFor(t, 20*time.Second, "increments before the kill", func() bool { return count() >= 40 })
	ms[p].kill()
	before := count()
	waitFor(t, 40*time.Second, "increments after the failover", func() bool { return count() >= before+40 })
	close(stop)
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got struct{ N int }
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Decode(&got); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got.N < acked || got.N > acked+failed {
		t.Fatalf("counter %d after %d acknowledged and %d failed increments", got.N, acked, failed)
	}
}
