package actors

// Gate bounds how many of the actors' writing steps run at once, across all
// clusters: appends to the event log, actions, status writes, snapshots and
// recoveries (the LIST of a log). A step waits for a slot first, in the order
// the steps came (a channel's waiters are served first come, first served),
// and its deadline starts only once it has one, as does the Lease's check
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
// than about a second, and the clusters progress one step at a time instead
// of every step failing. Observations do not take a slot: a healthy
// cluster's reads nothing from the API server (its caches), so a reaction
// to a fault never queues behind another cluster's observation.
//
// First come, first served moves many new clusters through each step
// together: at N = 1,000 and 50 requests a second none is Healthy until
// about 15 minutes in, and all are by about 17. Serving the oldest cluster's
// steps first finished them one after another, but left the newest
// restarting on recovery LISTs that timed out; it was reverted
// (docs/performance.md, fourth run).
//
// A nil Gate admits every step at once.
type Gate struct{ slots chan struct{} }

// NewGate admits n steps at once; nil (no bound) when n <= 0.
func NewGate(n int) *Gate {
	if n <= 0 {
		return nil
	}
	return &Gate{slots: make(chan struct{}, n)}
}

// enter waits for a slot and returns what gives it back.
func (g *Gate) enter() (leave func()) {
	if g == nil {
		return func() {}
	}
	g.slots <- struct{}{}
	return func() { <-g.slots }
}
