package actors

import (
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// Watcher is a World that wakes a cluster's actor when the driver's own
// monitoring of its members sees them move (mongo.Options.Changed: a new
// primary, a member gone or back, a new config), so such a change is
// observed at once rather than at the next --interval tick. The Kubernetes
// side wakes the actor through the watches (Poke).
type Watcher interface {
	// Watch calls wake, which must not block, on every move of m's
	// members, until Forget(m); a later Watch of the same Mgors replaces it.
	Watch(m *v1alpha1.Mgors, wake func())
}

// membersMoved is the message a wakeup sends: observe now.
type membersMoved struct{}

// wakeup coalesces wake-ups: at most one membersMoved is pending in the
// mailbox however many moves the driver reports (a stepdown moves every
// member at once); the actor takes it before it observes, so a move after
// that observation started wakes it again.
type wakeup struct {
	pending atomic.Bool
	send    func()
}

// ring sends the message unless one is pending; it never blocks.
func (w *wakeup) ring() {
	if w.pending.CompareAndSwap(false, true) {
		w.send()
	}
}

// take marks the pending message received.
func (w *wakeup) take() { w.pending.Store(false) }

// watchMembers asks a Watcher World to wake this incarnation of the actor.
func (c *cluster) watchMembers(ctx actor.Context) {
	w, ok := c.deps.World.(Watcher)
	if !ok {
		return
	}
	root, self := ctx.ActorSystem().Root, ctx.Self()
	c.wake = &wakeup{send: func() { root.Send(self, membersMoved{}) }}
	w.Watch(c.mgors, c.wake.ring)
}
