// Package shard spreads the Mgors over several operator replicas
// (docs/design/sharding.md): each replica keeps a Lease of its own, the live
// Leases are the members, each Mgors is assigned to one member by rendezvous
// hashing of its UID and labelled with it, and a Mgors leaves a live owner
// only through the drain handshake. The decisions (membership, assignment,
// the handshake) are pure functions here; the Lease keeper and the assigner
// carry them out.
package shard

import (
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
)

// Labels and names of the sharding mechanism.
const (
	// LabelOwner, on a Mgors, names the replica that runs its actor.
	LabelOwner = "mgors.io/shard"
	// LabelDrain, on a Mgors, asks its owner to stop its actor and give it
	// back (remove both labels), so that it can move to another replica.
	LabelDrain = "mgors.io/drain"
	// LabelLease marks the replicas' Leases; its value is the ring's name
	// (the operator's leader Lease name), so two operators do not mix.
	LabelLease = "mgors.io/shard-lease"
	// LeasePrefix starts the name of a replica's Lease; the rest is the
	// replica's identity, which is also the Lease's holder while it lives.
	LeasePrefix = "mgors-shard-"
)

// LeaseName is the name of the Lease of the replica identity.
func LeaseName(identity string) string { return LeasePrefix + identity }

// State is what a replica's Lease says of it.
type State int

const (
	// Gone: the Lease was released by its replica (a clean shutdown) or taken
	// over by the assigner after it expired; the replica never writes again
	// under it, and its Mgors may move at once.
	Gone State = iota
	// Expired: not renewed within its duration. The replica may be dead or only
	// paused: the assigner takes the Lease over (Gone) before moving anything.
	Expired
	// Ready: held by its replica and renewed within its duration.
	Ready
)

func (s State) String() string {
	switch s {
	case Ready:
		return "ready"
	case Expired:
		return "expired"
	}
	return "gone"
}

// LeaseState reads a replica's Lease at now.
func LeaseState(l *coordinationv1.Lease, now time.Time) State {
	identity := strings.TrimPrefix(l.Name, LeasePrefix)
	if h := l.Spec.HolderIdentity; h == nil || *h != identity {
		return Gone
	}
	if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return Expired
	}
	if !now.Before(l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second)) {
		return Expired
	}
	return Ready
}

// Members are the replicas as their Leases show them.
type Members struct {
	// Live are the replicas whose Lease is Ready, sorted: the assignment's domain.
	Live []string
	// state of every replica with a Lease.
	state map[string]State
}

// Membership reads the replicas' Leases at now.
func Membership(leases []coordinationv1.Lease, now time.Time) Members {
	m := Members{state: map[string]State{}}
	for i := range leases {
		l := &leases[i]
		if !strings.HasPrefix(l.Name, LeasePrefix) {
			continue
		}
		id := strings.TrimPrefix(l.Name, LeasePrefix)
		st := LeaseState(l, now)
		m.state[id] = st
		if st == Ready {
			m.Live = append(m.Live, id)
		}
	}
	slices.Sort(m.Live)
	return m
}

// Of is the state of a replica; one without a Lease is Gone.
func (m Members) Of(identity string) State {
	if st, ok := m.state[identity]; ok {
		return st
	}
	return Gone
}
