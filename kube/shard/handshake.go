package shard

// Move is what the assigner does to one Mgors.
type Move struct {
	Kind MoveKind
	// To is the replica it is assigned to (Assign); From the owner asked to
	// let it go (Drain).
	To, From string
}

// MoveKind names a step of the handshake.
type MoveKind int

const (
	// Stay: nothing to do (in place, or waiting for a drain's
	// acknowledgement, or for an expired owner's Lease to be taken over).
	Stay MoveKind = iota
	// Assign: set the owner label to To and drop any drain label. Only for a
	// Mgors without an owner, or whose owner is Gone.
	Assign
	// Drain: set the drain label; the owner (From), still live, stops the
	// actor and removes both labels; the next pass assigns it.
	Drain
)

// Next decides the handshake's next step for one Mgors from its labels and
// the members (see docs/design/sharding.md). The invariant it keeps: the
// owner label changes only while no replica may run the Mgors's actor, that
// is, when it is empty (the owner acknowledged a drain, or it is new) or names
// a Gone replica (released, or expired and taken over).
func Next(owner string, draining bool, uid string, m Members) Move {
	want := Owner(uid, m.Live)
	if want == "" {
		return Move{} // no live replica: wait
	}
	if owner == "" {
		return Move{Kind: Assign, To: want}
	}
	switch m.Of(owner) {
	case Gone:
		return Move{Kind: Assign, To: want}
	case Expired:
		return Move{} // take its Lease over first; it is Gone after
	}
	if owner == want || draining {
		return Move{} // in place, or waiting for the owner's acknowledgement
	}
	return Move{Kind: Drain, From: owner}
}

// MustRelease says whether the replica self must stop the Mgors's actor and
// give it back: it is labelled as self's and asked to drain.
func MustRelease(labels map[string]string, self string) bool {
	_, drain := labels[LabelDrain]
	return drain && labels[LabelOwner] == self
}
