package sim

import (
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// held runs fn while the test holds n.mu, as a write does while it
// applies, and fails if fn waited for the lock (it would never return).
func held(t *testing.T, n *Node, what string, fn func()) {
	t.Helper()
	n.mu.Lock()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(time.Minute): // a bound on a deadlock, not a timing
		t.Fatalf("%s waited for the node's lock", what)
	}
	n.mu.Unlock()
}

// unstartedNode is a member of rs0 made but not started: no listener, no
// loops; its store closed when the test ends.
func unstartedNode(t *testing.T) *Node {
	t.Helper()
	cfg := DefaultConfig()
	cfg.DBPath, cfg.ReplSet = t.TempDir(), "rs0"
	n, err := NewNode(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.store.Close() })
	return n
}

// Hello, a heartbeat's answer, the heartbeat loop's request and the
// folding of its outcome never wait for the node's lock, which a write
// holds while it reads and applies documents.
func TestHelloAndHeartbeatsDoNotWaitForWrites(t *testing.T) {
	n := unstartedNode(t)
	rs, err := ParseRSConfig(mustRaw(bson.D{{Key: "_id", Value: "rs0"}, {Key: "version", Value: int32(1)}, {Key: "term", Value: int64(2)},
		{Key: "members", Value: bson.A{bson.D{{Key: "_id", Value: 0}, {Key: "host", Value: "a:1"}}, bson.D{{Key: "_id", Value: 1}, {Key: "host", Value: "b:1"}}}}}), true)
	if err != nil {
		t.Fatal(err)
	}
	n.mu.Lock()
	n.rs, n.self, n.primary, n.state, n.writable, n.term = rs, 0, 0, StatePrimary, true, 2
	n.peers["b:1"] = &peerState{host: "b:1", health: -1, state: StateUnknown}
	n.bumpTopologyLocked()
	n.mu.Unlock()
	c := &conn{n: n, nc: nopConn{}, id: 1, local: true}

	var hello bson.D
	held(t, n, "hello", func() {
		hello, _ = c.handle(&Request{Body: mustRaw(bson.D{{Key: "hello", Value: 1}, {Key: "$db", Value: "admin"}})})
	})
	if fieldOf(hello, "isWritablePrimary") != true || fieldOf(hello, "setName") != "rs0" || fieldOf(hello, "me") != "a:1" {
		t.Fatalf("hello under a write: %v", hello)
	}

	var hb bson.D
	held(t, n, "the heartbeat answer", func() {
		hb, _ = c.handle(&Request{Body: mustRaw(bson.D{{Key: "replSetHeartbeat", Value: "rs0"}, {Key: "configVersion", Value: int64(1)},
			{Key: "configTerm", Value: int64(2)}, {Key: "from", Value: "b:1"}, {Key: "term", Value: int64(2)}, {Key: "$db", Value: "admin"}})})
	})
	if fieldOf(hb, "ok") != 1.0 || fieldOf(hb, "state") != int32(StatePrimary) || fieldOf(hb, "term") != int64(2) {
		t.Fatalf("heartbeat answer under a write: %v", hb)
	}

	var req bson.D
	held(t, n, "the heartbeat request", func() { req = n.heartbeatRequest(n.replState(), false) })
	if fieldOf(req, "from") != "a:1" || fieldOf(req, "term") != int64(2) || fieldOf(req, "configVersion") != int64(1) {
		t.Fatalf("heartbeat request under a write: %v", req)
	}

	answer := mustRaw(bson.D{{Key: "ok", Value: 1.0}, {Key: "state", Value: int64(StateSecondary)}, {Key: "term", Value: int64(2)},
		{Key: "configVersion", Value: int64(1)}, {Key: "configTerm", Value: int64(2)},
		{Key: "appliedOpTime", Value: bson.D{{Key: "ts", Value: bson.Timestamp{T: 5, I: 1}}, {Key: "t", Value: int64(2)}}}})
	held(t, n, "folding a heartbeat's outcome", func() {
		n.foldHeartbeatSoon(hbResult{host: "b:1", resp: answer, at: time.Now(), seq: n.hbSeq.Add(1)})
	})
	// Folded once the lock is free; an older outcome folded later is dropped.
	stale := hbResult{host: "b:1", err: errNotWritable, at: time.Now(), seq: 0}
	deadline := time.Now().Add(time.Minute)
	for {
		n.mu.Lock()
		p := *n.peers["b:1"]
		if p.foldedSeq > 0 {
			n.foldHeartbeatLocked(stale)
			p = *n.peers["b:1"]
		}
		n.mu.Unlock()
		if p.foldedSeq > 0 {
			if p.health != 1 || p.state != StateSecondary || p.applied.TS.T != 5 {
				t.Fatalf("folded heartbeat: %+v", p)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the heartbeat's outcome was never folded in")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n.peers["b:1"].lastHBRecv.IsZero() {
		t.Fatal("the heartbeat received under a write was not recorded")
	}
}

// An awaitable hello woken by a topology change answers the new
// topologyVersion, never the one it waited on.
func TestAwaitableHelloSeesTheChange(t *testing.T) {
	n := unstartedNode(t)
	c := &conn{n: n, nc: nopConn{}, id: 1, local: true}
	v := n.replState()
	got := make(chan bson.D, 1)
	go func() {
		d, _ := c.handle(&Request{Body: mustRaw(bson.D{{Key: "hello", Value: 1}, {Key: "topologyVersion", Value: v.topologyVersion(n.processID)},
			{Key: "maxAwaitTimeMS", Value: int64(600000)}, {Key: "$db", Value: "admin"}})})
		got <- d
	}()
	n.mu.Lock()
	n.bumpTopologyLocked()
	n.mu.Unlock()
	d := <-got
	tv, _ := fieldOf(d, "topologyVersion").(bson.D)
	if fieldOf(tv, "counter") != v.topoCount+1 {
		t.Fatalf("awaitable hello after a change answered %v, want counter %d", tv, v.topoCount+1)
	}
}

// fieldOf is the value of key in d, nil when absent.
func fieldOf(d bson.D, key string) any {
	for _, e := range d {
		if e.Key == key {
			return e.Value
		}
	}
	return nil
}
