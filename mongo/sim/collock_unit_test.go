package sim

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func insertCmd(coll string, docs ...bson.D) *Request {
	a := bson.A{}
	for _, d := range docs {
		a = append(a, d)
	}
	return &Request{Body: mustRaw(bson.D{{Key: "insert", Value: coll}, {Key: "documents", Value: a}, {Key: "$db", Value: "t"}})}
}

func incCmd(coll string, id any, upsert bool) *Request {
	return &Request{Body: mustRaw(bson.D{{Key: "update", Value: coll}, {Key: "updates", Value: bson.A{bson.D{
		{Key: "q", Value: bson.D{{Key: "_id", Value: id}}}, {Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}},
		{Key: "upsert", Value: upsert}}}}, {Key: "$db", Value: "t"}})}
}

func findCmd(coll string) *Request {
	return &Request{Body: mustRaw(bson.D{{Key: "find", Value: coll}, {Key: "$db", Value: "t"}})}
}

// run fails the test on a command error or a write error.
func run(t *testing.T, what string, fn func(*Request) (bson.D, error), req *Request) bson.D {
	t.Helper()
	out, err := fn(req)
	if err != nil {
		t.Errorf("%s: %v", what, err)
		return nil
	}
	for _, e := range out {
		if e.Key == "writeErrors" || e.Key == "writeConcernError" {
			t.Errorf("%s: %v", what, out)
		}
	}
	return out
}

// within fails unless fn returns within a minute (a bound on a deadlock,
// not a timing).
func within(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("%s waited for another collection's write", what)
	}
}

// applyInsert runs an insert's lock, apply and unlock as cmdInsert does,
// without waiting for its acknowledgement: that follows the journal's
// publish, which takes n.mu exclusively and so waits for every write in
// progress (collock.go).
func applyInsert(t *testing.T, n *Node, coll string, id int) {
	t.Helper()
	req := insertCmd(coll, bson.D{{Key: "_id", Value: id}})
	w, unlock, e := n.beginWrite(req, "t", coll)
	if e != nil {
		t.Errorf("insert into %s: %v", coll, e)
		return
	}
	defer unlock()
	if w.coll == nil {
		t.Errorf("insert into %s took n.mu exclusively", coll)
	}
	if err := w.write([]opSpec{{op: "i", ns: "t." + coll, o: mustRaw(bson.D{{Key: "_id", Value: id}}), stmt: -1}}); err != nil {
		t.Errorf("insert into %s: %v", coll, err)
	}
}

// count reads a collection as find does.
func count(t *testing.T, n *Node, coll string) int {
	t.Helper()
	docs, err := n.matching(findCmd(coll), "t", coll, nil)
	if err != nil {
		t.Errorf("read of %s: %v", coll, err)
	}
	return len(docs)
}

// While a write to collection a is held between queueing its entry and
// applying it (under a's lock), a write to b applies and a read of b sees
// it; a second write to a and a read of a wait for the held one and see
// it once it ends.
func TestWriteToOtherCollectionDoesNotWait(t *testing.T) {
	n, c := standaloneConn(t)
	// the first write to a collection creates it under n.mu exclusively
	run(t, "create a", c.cmdInsert, insertCmd("a", bson.D{{Key: "_id", Value: 0}}))
	run(t, "create b", c.cmdInsert, insertCmd("b", bson.D{{Key: "_id", Value: 0}}))

	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	n.applyHook = func(ns string) { // set before any concurrent write
		if ns == "t.a" {
			once.Do(func() { entered <- struct{}{}; <-release }) // only the first
		}
	}
	first := make(chan struct{})
	go func() {
		defer close(first)
		run(t, "held write to a", c.cmdInsert, insertCmd("a", bson.D{{Key: "_id", Value: 1}}))
	}()
	<-entered
	within(t, "write to b", func() { applyInsert(t, n, "b", 1) })
	within(t, "read of b", func() {
		if got := count(t, n, "b"); got != 2 {
			t.Errorf("b holds %d documents, want 2", got)
		}
	})

	second, read := make(chan struct{}), make(chan int, 1)
	go func() { defer close(second); applyInsert(t, n, "a", 2) }()
	go func() { read <- count(t, n, "a") }()
	select {
	case <-second:
		t.Fatal("a second write to a did not wait for the held one")
	case got := <-read:
		t.Fatalf("a read of a did not wait for the held write: %d documents", got)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	<-first
	<-second
	if got := <-read; got < 2 {
		t.Errorf("the read of a after the held write saw %d documents", got)
	}
	if got := count(t, n, "a"); got != 3 {
		t.Errorf("a holds %d documents, want 3", got)
	}
	if err := n.syncJournal(); err != nil {
		t.Fatal(err)
	}
}

// batchOf is a find reply's first batch.
func batchOf(t *testing.T, out bson.D) []bson.Raw {
	t.Helper()
	raw := mustRaw(out)
	vals, err := raw.Lookup("cursor", "firstBatch").Array().Values()
	if err != nil {
		t.Fatalf("find reply %v: %v", out, err)
	}
	docs := make([]bson.Raw, 0, len(vals))
	for _, v := range vals {
		docs = append(docs, v.Document())
	}
	return docs
}

// Writers on several collections and readers at once (run under -race):
// every $inc counts, racing upserts insert once, every insert lands, and
// the journal holds every entry once, in strictly increasing timestamps.
func TestConcurrentWritesToCollections(t *testing.T) {
	n, c := standaloneConn(t)
	const colls, incs, inserts = 4, 50, 25
	for i := range colls {
		run(t, "create", c.cmdInsert, insertCmd(fmt.Sprint("c", i), bson.D{{Key: "_id", Value: "n"}, {Key: "n", Value: 0}}))
	}
	var wg sync.WaitGroup
	for i := range colls {
		coll := fmt.Sprint("c", i)
		for w := range incs {
			wg.Add(3)
			go func() { defer wg.Done(); run(t, "$inc", c.cmdUpdate, incCmd(coll, "n", false)) }()
			go func() { defer wg.Done(); run(t, "upsert", c.cmdUpdate, incCmd(coll, "up", true)) }()
			go func() { defer wg.Done(); run(t, "read", c.cmdFind, findCmd(coll)) }()
			if w < inserts {
				wg.Add(1)
				go func() {
					defer wg.Done()
					run(t, "insert", c.cmdInsert, insertCmd(coll, bson.D{{Key: "_id", Value: w}}))
				}()
			}
		}
	}
	wg.Wait()
	for i := range colls {
		docs := batchOf(t, run(t, "read", c.cmdFind, findCmd(fmt.Sprint("c", i))))
		if len(docs) != 2+inserts {
			t.Errorf("c%d holds %d documents, want %d", i, len(docs), 2+inserts)
		}
		for _, d := range docs {
			if id, _ := d.Lookup("_id").StringValueOK(); id != "" {
				if got, _ := d.Lookup("n").AsInt64OK(); got != incs {
					t.Errorf("c%d %s: n = %d after %d concurrent $inc", i, id, got, incs)
				}
			}
		}
	}
	if err := n.syncJournal(); err != nil {
		t.Fatal(err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	// creates, then incs $inc and incs upserts (one insert, then updates)
	// and inserts per collection
	if want := colls * (1 + 2*incs + inserts); len(n.oplog) != want {
		t.Errorf("%d oplog entries, want %d", len(n.oplog), want)
	}
	for i := 1; i < len(n.oplog); i++ {
		if !tsLess(n.oplog[i-1].TS, n.oplog[i].TS) {
			t.Fatalf("oplog entry %d at %v after %v", i, n.oplog[i].TS, n.oplog[i-1].TS)
		}
	}
}
