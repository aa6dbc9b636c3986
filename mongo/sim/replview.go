package sim

import (
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// The replication view: what hello, the heartbeats (both the answers we
// give and the requests we send) and the reply's $clusterTime read,
// published as one immutable value so that they never wait for n.mu,
// which a write holds while it reads and applies documents.
//
// n.mu is a nodeMu: its Unlock builds a fresh view from the fields it
// guards and publishes it before releasing the lock. Every change of
// those fields happens under n.mu, so the published view is always the
// state as of the latest release, and views are published in lock order.
// A reader of the view sees the node as it was before the current
// holder's changes, exactly what it would have seen had it taken the
// lock first.

// replView is the node's replication state at one release of n.mu.
type replView struct {
	rs         *RSConfig // never modified in place: a new config is a new value
	self       int
	state      int
	term       int64
	primary    int
	writable   bool
	stepping   bool
	inShutdown bool
	applied    OpTime
	commit     OpTime
	leaderTime bson.Timestamp
	lastTS     bson.Timestamp
	syncSource string // only on a secondary
	hasData    bool   // checkEmpty's answer: user data or an oplog
	anyUser    bool   // a user or a role exists (the localhost exception)
	authzGen   uint64
	topoCount  int64
	// topoChanged is closed when a view with a higher topoCount is
	// published, so an awaitable hello that wakes on it reads the new one.
	topoChanged chan struct{}
}

// canAcceptWrites is canAcceptWritesLocked on the view.
func (v *replView) canAcceptWrites() bool {
	return v.state == StatePrimary && v.writable && !v.stepping && !v.inShutdown
}

func (v *replView) topologyVersion(processID bson.ObjectID) bson.D {
	return bson.D{{Key: "processId", Value: processID}, {Key: "counter", Value: v.topoCount}}
}

// nodeMu is the node's lock; releasing it (Unlock, not RUnlock: a shared
// hold changes nothing) publishes the replication view.
type nodeMu struct {
	sync.RWMutex
	n *Node // nil in nodes built as struct literals (unit tests): nothing published
}

// Unlock publishes the view, then releases the lock.
func (m *nodeMu) Unlock() {
	if m.n != nil {
		m.n.publishViewLocked()
	}
	m.RWMutex.Unlock()
}

// viewLocked builds the view from the fields n.mu guards.
func (n *Node) viewLocked() *replView {
	v := &replView{rs: n.rs, self: n.self, state: n.state, term: n.term, primary: n.primary, writable: n.writable,
		stepping: n.stepping, inShutdown: n.inShutdown, applied: n.applied, commit: n.commit, leaderTime: n.leaderTime,
		lastTS: n.lastTS, topoCount: n.topoCount, hasData: len(n.oplog) > 0}
	if n.data != nil {
		v.hasData = v.hasData || n.data.HasUserData()
		v.anyUser = n.data.Coll("admin", "system.users", false).Len() > 0 || n.data.Coll("admin", "system.roles", false).Len() > 0
		v.authzGen = n.data.authzGen
	}
	if n.rs != nil && n.state == StateSecondary {
		v.syncSource = n.syncSourceLocked()
	}
	return v
}

// publishViewLocked stores a fresh view; called by n.mu's Unlock.
func (n *Node) publishViewLocked() {
	v := n.viewLocked()
	old := n.view.Load()
	if old != nil && old.topoCount == v.topoCount {
		v.topoChanged = old.topoChanged
	} else {
		v.topoChanged = make(chan struct{})
	}
	n.view.Store(v)
	if old != nil && old.topoChanged != v.topoChanged {
		close(old.topoChanged)
	}
}

// publishView publishes a view without a change (at start-up).
func (n *Node) publishView() {
	n.mu.Lock()
	defer n.mu.RWMutex.Unlock() // not n.mu.Unlock: it would publish again
	n.publishViewLocked()
}

// replState returns the published view. A node that never published one
// (a unit test's struct literal) builds it under the lock.
func (n *Node) replState() *replView {
	if v := n.view.Load(); v != nil {
		return v
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	v := n.viewLocked()
	v.topoChanged = make(chan struct{})
	return v
}
