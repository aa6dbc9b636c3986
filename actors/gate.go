package actors

import (
	"container/heap"
	"sync"
)

// Gate bounds how many of the actors' writing steps run at once, across all
// clusters: appends to the event log, actions, status writes, snapshots and
// recoveries (the LIST of a log). A step waits for a slot first, and its
// deadline starts only once it has one, as does the Lease's check
// (Deps.Lease): a replica that lost its lease while it waited writes nothing.
//
// Without it, a thousand clusters provisioning at once ask the client's rate
// limiter (50 requests a second) for more than it gives within a call's
// deadline: each request waits its turn inside that deadline, and at N =
// 1,000 the waits grew past 10 s, so calls failed before they were sent,
// appends that timed out were written anyway ("changed under this actor"),
// and actors whose recovery LIST failed restarted to LIST again
// (docs/performance.md, third run). With at most as many steps in flight as
// the limiter gives requests a second, no request waits for the limiter more
// than about a second, and every step that starts ends. Observations do not
// take a slot: a healthy cluster's reads nothing from the API server (its
// caches), so a reaction to a fault never queues behind another cluster's
// observation.
//
// Waiting steps are served oldest cluster first (the Mgors'
// creationTimestamp; steps of clusters made in the same second in the order
// they came). First come, first served would move a thousand new clusters
// through each step in lockstep, so that none is Healthy before nearly all
// are (measured: all 1,000 Initiating, none Healthy, 13 minutes in, at 50
// requests a second); oldest first finishes them one after another in the
// same total time, and a fault in a running cluster is handled before the
// provisioning of newer ones.
//
// A nil Gate admits every step at once.
type Gate struct {
	mu      sync.Mutex
	free    int
	waiting waiters
	seq     uint64
}

// NewGate admits n steps at once; nil (no bound) when n <= 0.
func NewGate(n int) *Gate {
	if n <= 0 {
		return nil
	}
	return &Gate{free: n}
}

// enter waits for a slot for a step of the cluster made at order (its
// creationTimestamp in Unix nanoseconds) and returns what gives it back.
func (g *Gate) enter(order int64) (leave func()) {
	if g == nil {
		return func() {}
	}
	g.mu.Lock()
	if g.free > 0 {
		g.free--
		g.mu.Unlock()
		return g.leave
	}
	w := &waiter{order: order, seq: g.seq, ready: make(chan struct{})}
	g.seq++
	heap.Push(&g.waiting, w)
	g.mu.Unlock()
	<-w.ready
	return g.leave
}

// leave hands the slot to the oldest waiting step, or frees it.
func (g *Gate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.waiting.Len() > 0 {
		close(heap.Pop(&g.waiting).(*waiter).ready)
		return
	}
	g.free++
}

type waiter struct {
	order int64
	seq   uint64
	ready chan struct{}
}

// waiters is a heap of the waiting steps, oldest cluster first, then first come.
type waiters []*waiter

func (h waiters) Len() int { return len(h) }
func (h waiters) Less(i, j int) bool {
	if h[i].order != h[j].order {
		return h[i].order < h[j].order
	}
	return h[i].seq < h[j].seq
}
func (h waiters) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *waiters) Push(x any)   { *h = append(*h, x.(*waiter)) }
func (h *waiters) Pop() any {
	old := *h
	w := old[len(old)-1]
	*h = old[:len(old)-1]
	return w
}
