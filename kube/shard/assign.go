package shard

import (
	"hash/fnv"
)

// Owner is the replica among live that should own the Mgors with this UID:
// rendezvous (highest random weight) hashing, so when a replica joins or
// leaves only the Mgors it gains or loses move (about 1/n of them), and every
// assigner with the same view of the members picks the same owner. "" when
// no replica is live.
func Owner(uid string, live []string) string {
	best, bestScore := "", uint64(0)
	for _, r := range live {
		s := score(r, uid)
		if best == "" || s > bestScore || (s == bestScore && r < best) {
			best, bestScore = r, s
		}
	}
	return best
}

// score is the weight of replica for uid: FNV-1a of both, through a
// SplitMix64 finalizer so that similar names spread evenly.
func score(replica, uid string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(replica))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(uid))
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
