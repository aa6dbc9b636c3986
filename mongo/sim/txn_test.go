package sim_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readconcern"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// Three inserts in session.WithTransaction are visible to no reader
// before the commit and all together after it; an aborted transaction
// leaves nothing; the commit (one applyOps entry) survives a failover.
func TestTransactionCommitAbortAndFailover(t *testing.T) {
	ms, _ := initiated(t, 3, fastSettings)
	client := connect(t, rsURI(ms, ""))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	coll := client.Database("test").Collection("t")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "seed"}}); err != nil {
		t.Fatal(err)
	}
	sess, err := client.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	_, err = sess.WithTransaction(ctx, func(sc context.Context) (any, error) {
		for i := range 3 {
			if _, err := coll.InsertOne(sc, bson.D{{Key: "_id", Value: i}}); err != nil {
				return nil, err
			}
		}
		// the transaction reads its own writes; nobody else does
		if n, err := coll.CountDocuments(sc, bson.D{}); err != nil || n != 4 {
			return nil, fmt.Errorf("inside the transaction: %d %w", n, err)
		}
		if n, err := coll.CountDocuments(ctx, bson.D{}); err != nil || n != 1 {
			return nil, fmt.Errorf("outside the transaction before commit: %d %w", n, err)
		}
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := coll.CountDocuments(ctx, bson.D{}); err != nil || n != 4 {
		t.Fatalf("after commit: %d %v", n, err)
	}
	// every member applies the commit's applyOps entry
	for _, m := range ms {
		waitFor(t, 20*time.Second, "the transaction on "+m.host, func() bool {
			c := m.shortClient()
			defer func() { _ = c.Disconnect(context.Background()) }()
			n, err := c.Database("test").Collection("t", options.Collection().SetReadPreference(readpref.PrimaryPreferred())).
				CountDocuments(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{0, 1, 2}}}}})
			return err == nil && n == 3
		})
	}
	// reads in a transaction see its snapshot, not later writes of others
	_, err = sess.WithTransaction(ctx, func(sc context.Context) (any, error) {
		if n, err := coll.CountDocuments(sc, bson.D{}); err != nil || n != 4 {
			return nil, fmt.Errorf("first read: %d %w", n, err)
		}
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "later"}}); err != nil {
			return nil, err
		}
		if n, err := coll.CountDocuments(sc, bson.D{}); err != nil || n != 4 {
			return nil, fmt.Errorf("read after another client's insert: %d %w", n, err)
		}
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// abort
	if err := sess.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	sc := mongo.NewSessionContext(ctx, sess)
	if _, err := coll.InsertOne(sc, bson.D{{Key: "_id", Value: "aborted"}}); err != nil {
		t.Fatal(err)
	}
	if err := sess.AbortTransaction(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := coll.CountDocuments(ctx, bson.D{{Key: "_id", Value: "aborted"}}); n != 0 {
		t.Fatal("an aborted transaction's write is visible")
	}
	// a committed transaction survives the loss of the primary
	_, err = sess.WithTransaction(ctx, func(sc context.Context) (any, error) {
		_, err := coll.InsertMany(sc, []any{bson.D{{Key: "_id", Value: "f1"}}, bson.D{{Key: "_id", Value: "f2"}}})
		return nil, err
	})
	if err != nil {
		t.Fatal(err)
	}
	p := primaryOf(ms)
	ms[p].kill()
	waitFor(t, 30*time.Second, "committed transaction on the new primary", func() bool {
		n, err := coll.CountDocuments(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{"f1", "f2"}}}}})
		return err == nil && n == 2
	})
}

// Two transactions writing one document: the second writer gets
// WriteConflict (112) labelled TransientTransactionError; the first
// commits; the driver's WithTransaction retries the second to success.
func TestTransactionWriteConflict(t *testing.T) {
	ms, _ := initiated(t, 1, fastSettings)
	client := connect(t, rsURI(ms, ""))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	coll := client.Database("test").Collection("acct")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 0}}); err != nil {
		t.Fatal(err)
	}
	s1, _ := client.StartSession()
	s2, _ := client.StartSession()
	defer s1.EndSession(ctx)
	defer s2.EndSession(ctx)
	inc := bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}
	_ = s1.StartTransaction()
	_ = s2.StartTransaction()
	if _, err := coll.UpdateOne(mongo.NewSessionContext(ctx, s1), bson.D{{Key: "_id", Value: 1}}, inc); err != nil {
		t.Fatal(err)
	}
	_, err := coll.UpdateOne(mongo.NewSessionContext(ctx, s2), bson.D{{Key: "_id", Value: 1}}, inc)
	var se mongo.ServerError
	if !errors.As(err, &se) || !se.HasErrorCode(112) || !se.HasErrorLabel("TransientTransactionError") {
		t.Fatalf("second writer: want WriteConflict with TransientTransactionError, got %v", err)
	}
	if err := s1.CommitTransaction(ctx); err != nil {
		t.Fatal(err)
	}
	_ = s2.AbortTransaction(ctx)
	// a statement of an aborted transaction: NoSuchTransaction, labelled
	_ = s2.StartTransaction()
	sc2 := mongo.NewSessionContext(ctx, s2)
	if _, err := coll.UpdateOne(sc2, bson.D{{Key: "_id", Value: 1}}, inc); err != nil {
		t.Fatal(err)
	}
	if err := s2.AbortTransaction(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.WithTransaction(ctx, func(sc context.Context) (any, error) {
		return coll.UpdateOne(sc, bson.D{{Key: "_id", Value: 1}}, inc)
	}); err != nil {
		t.Fatal(err)
	}
	var got struct{ N int }
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Decode(&got); err != nil || got.N != 2 {
		t.Fatalf("after both: %d %v", got.N, err)
	}
	// A write outside transactions waits for the transaction holding its
	// document (maxTimeMS → 50), then applies on top of its commit.
	_ = s1.StartTransaction()
	if _, err := coll.UpdateOne(mongo.NewSessionContext(ctx, s1), bson.D{{Key: "_id", Value: 1}}, inc); err != nil {
		t.Fatal(err)
	}
	r := rawCmd(t, ms[0].host, bson.D{{Key: "update", Value: "acct"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 1}}},
		{Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 100}}}}}}}}, {Key: "maxTimeMS", Value: 200}, {Key: "$db", Value: "test"}})
	if code, _ := r.Lookup("code").AsInt64OK(); code != 50 {
		t.Fatalf("write to a document held by a transaction, maxTimeMS 200: %v", r)
	}
	done := make(chan error, 1)
	go func() {
		_, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 10}}}})
		done <- err
	}()
	if err := s1.CommitTransaction(ctx); err != nil {
		t.Fatalf("the first writer's commit: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Decode(&got); err != nil || got.N != 13 {
		t.Fatalf("after the transaction and the waiting write: %d %v", got.N, err)
	}
	// a write concern on a statement inside a transaction: 72
	r = rawCmd(t, ms[0].host, bson.D{{Key: "insert", Value: "acct"}, {Key: "documents", Value: bson.A{bson.D{}}},
		{Key: "lsid", Value: bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: make([]byte, 16)}}}}, {Key: "txnNumber", Value: int64(1)},
		{Key: "startTransaction", Value: true}, {Key: "autocommit", Value: false},
		{Key: "writeConcern", Value: bson.D{{Key: "w", Value: 1}}}, {Key: "$db", Value: "test"}})
	if code, _ := r.Lookup("code").AsInt64OK(); code != 72 {
		t.Fatalf("writeConcern inside a transaction: %v", r)
	}
	// a transaction older than the session's latest: 225
	lsid2 := bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: []byte("fedcba9876543210")}}}
	start := func(num int64) bson.Raw {
		return rawCmd(t, ms[0].host, bson.D{{Key: "find", Value: "acct"}, {Key: "lsid", Value: lsid2}, {Key: "txnNumber", Value: num},
			{Key: "startTransaction", Value: true}, {Key: "autocommit", Value: false}, {Key: "$db", Value: "test"}})
	}
	if r := start(5); r.Lookup("ok").Double() != 1 || r.Lookup("cursor").Type == 0 {
		t.Fatalf("start transaction 5: %v", r)
	}
	if r := start(3); r.Lookup("code").Type == 0 || r.Lookup("code").Int32() != 225 {
		t.Fatalf("start transaction 3 after 5: %v", r)
	}
	if r := start(5); r.Lookup("code").Type == 0 || r.Lookup("code").Int32() != 50911 {
		t.Fatalf("start transaction 5 again while in progress: %v", r)
	}
	// malformed write concerns are refused before the write
	for _, w := range []any{-1, bson.A{1}} {
		r := rawCmd(t, ms[0].host, bson.D{{Key: "insert", Value: "acct"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: "bad"}}}},
			{Key: "writeConcern", Value: bson.D{{Key: "w", Value: w}}}, {Key: "$db", Value: "test"}})
		if code, _ := r.Lookup("code").AsInt64OK(); code != 9 {
			t.Fatalf("writeConcern w:%v: %v", w, r)
		}
	}
	// endSessions aborts a session's open transaction: its document is free
	lsid3 := bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: []byte("abandoned-sessio")}}}
	r = rawCmd(t, ms[0].host, bson.D{{Key: "update", Value: "acct"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 1}}},
		{Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}}}}}, {Key: "lsid", Value: lsid3}, {Key: "txnNumber", Value: int64(1)},
		{Key: "startTransaction", Value: true}, {Key: "autocommit", Value: false}, {Key: "$db", Value: "test"}})
	if ok, _ := r.Lookup("ok").AsFloat64OK(); ok != 1 {
		t.Fatalf("update in a transaction: %v", r)
	}
	rawCmd(t, ms[0].host, bson.D{{Key: "endSessions", Value: bson.A{lsid3}}, {Key: "$db", Value: "admin"}})
	r = rawCmd(t, ms[0].host, bson.D{{Key: "update", Value: "acct"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 1}}},
		{Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}}}}}, {Key: "maxTimeMS", Value: 2000}, {Key: "$db", Value: "test"}})
	if ok, _ := r.Lookup("ok").AsFloat64OK(); ok != 1 {
		t.Fatalf("write after the holding session ended: %v", r)
	}
	// commit of an unknown transaction: 251 NoSuchTransaction
	r = rawCmd(t, ms[0].host, bson.D{{Key: "commitTransaction", Value: 1},
		{Key: "lsid", Value: bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: make([]byte, 16)}}}}, {Key: "txnNumber", Value: int64(9)},
		{Key: "autocommit", Value: false}, {Key: "$db", Value: "admin"}})
	if code, _ := r.Lookup("code").AsInt64OK(); code != 251 {
		t.Fatalf("commit of an unknown transaction: %v", r)
	}
}

// Concurrent transfers between accounts in transactions keep the total.
func TestTransactionTransfersKeepTotal(t *testing.T) {
	ms, _ := initiated(t, 3, fastSettings)
	client := connect(t, rsURI(ms, ""))
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	coll := client.Database("bank").Collection("acct", options.Collection().SetWriteConcern(writeconcern.Majority()))
	const accounts, start = 5, 100
	for i := range accounts {
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "bal", Value: start}}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sess, err := client.StartSession()
			if err != nil {
				errs <- err
				return
			}
			defer sess.EndSession(ctx)
			rng := rand.New(rand.NewSource(int64(w)))
			for range 10 {
				from, to, amt := rng.Intn(accounts), rng.Intn(accounts), rng.Intn(20)+1
				_, err := sess.WithTransaction(ctx, func(sc context.Context) (any, error) {
					if _, err := coll.UpdateOne(sc, bson.D{{Key: "_id", Value: from}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "bal", Value: -amt}}}}); err != nil {
						return nil, err
					}
					_, err := coll.UpdateOne(sc, bson.D{{Key: "_id", Value: to}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "bal", Value: amt}}}})
					return nil, err
				}, options.Transaction().SetReadConcern(readconcern.Snapshot()))
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	cur, err := coll.Find(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var all []struct{ Bal int }
	if err := cur.All(ctx, &all); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, a := range all {
		total += a.Bal
	}
	if total != accounts*start {
		t.Fatalf("total after transfers: %d, want %d", total, accounts*start)
	}
}

// A stepdown aborts open transactions; the driver's WithTransaction sees
// TransientTransactionError and runs the transaction again on the new
// primary, which applies it once.
func TestTransactionRetriedAcrossStepdown(t *testing.T) {
	ms, _ := initiated(t, 3, fastSettings)
	client := connect(t, rsURI(ms, ""))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	coll := client.Database("test").Collection("sd")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "seed"}}); err != nil {
		t.Fatal(err)
	}
	sess, _ := client.StartSession()
	defer sess.EndSession(ctx)
	attempts := 0
	_, err := sess.WithTransaction(ctx, func(sc context.Context) (any, error) {
		attempts++
		if _, err := coll.InsertOne(sc, bson.D{{Key: "_id", Value: 1}}); err != nil {
			return nil, err
		}
		if attempts == 1 {
			p := primaryOf(ms)
			_, _ = run(ms[p].client(t), bson.D{{Key: "replSetStepDown", Value: 10}, {Key: "secondaryCatchUpPeriodSecs", Value: 5}})
			waitFor(t, 30*time.Second, "a new primary", func() bool { np := primaryOf(ms); return np >= 0 && np != p })
		}
		_, err := coll.InsertOne(sc, bson.D{{Key: "_id", Value: 2}})
		return nil, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if attempts < 2 {
		t.Fatalf("the transaction ran %d times across a stepdown", attempts)
	}
	if n, err := coll.CountDocuments(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{1, 2}}}}}); err != nil || n != 2 {
		t.Fatalf("after the retried transaction: %d %v", n, err)
	}
}
