package chaos

import (
	"math/rand/v2"
	"time"
)

// Role is which member of a cluster a fault aims at. It is resolved at injection
// time: "the primary" is whoever is primary when the fault starts.
type Role string

// The roles a step can aim at.
const (
	RolePrimary   Role = "primary"
	RoleSecondary Role = "secondary"
	RoleAny       Role = "any"
	// RoleNone marks faults of the whole Kubernetes cluster (the operator's
	// leader, the control plane).
	RoleNone Role = ""
)

// Step is one planned fault: what, where, how long it is held, and how long the
// runner waits after the clusters are Healthy again before the next one.
type Step struct {
	Kind FaultKind `json:"kind"`
	// Cluster indexes Config's clusters; -1 for faults of the whole Kubernetes
	// cluster.
	Cluster int           `json:"cluster"`
	Target  Role          `json:"target,omitempty"`
	Hold    time.Duration `json:"hold"`
	Pause   time.Duration `json:"pause"`
}

// cycle is what one fault takes on 2 cores, roughly: a hold of about 10 s, the
// heal, about 15 s until every cluster is Healthy again, and the pause. The
// schedule plans Duration/cycle faults.
const cycle = 25 * time.Second

// electionTimeout is MongoDB's default electionTimeoutMillis, which the clusters
// of the run keep: a paused or isolated primary must be held past it so that the
// others elect a new one.
const electionTimeout = 10 * time.Second

// Schedule plans the faults of a run from its seed: the same seed, duration,
// kinds and number of clusters give the same steps. The first len(kinds) steps
// are the kinds shuffled, so any run covers every kind at least once; the rest
// are random kinds, up to duration/cycle steps in all. A majority loss takes
// minutes (the operator's grace period) where another fault takes a cycle:
// it comes once per run, never in the random rest.
func Schedule(seed int64, duration time.Duration, kinds []FaultKind, clusters int) []Step {
	if len(kinds) == 0 || clusters <= 0 {
		return nil
	}
	r := rand.New(rand.NewPCG(uint64(seed), 0x6d676f7273)) //nolint:gosec // a reproducible schedule, not a secret
	n := max(len(kinds), int(duration/cycle))
	order := append([]FaultKind(nil), kinds...)
	r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	var rest []FaultKind
	for _, k := range kinds {
		if k != MajorityLoss {
			rest = append(rest, k)
		}
	}
	steps := make([]Step, 0, n)
	for i := range n {
		if i >= len(order) && len(rest) == 0 {
			break
		}
		kind := order[min(i, len(order)-1)]
		if i >= len(order) {
			kind = rest[r.IntN(len(rest))]
		}
		steps = append(steps, plan(r, kind, clusters))
	}
	return steps
}

// plan draws the target, hold and pause of one fault of kind.
func plan(r *rand.Rand, kind FaultKind, clusters int) Step {
	s := Step{Kind: kind, Cluster: r.IntN(clusters), Pause: between(r, 2*time.Second, 5*time.Second)}
	switch kind {
	case KillMongod, DeletePod:
		s.Target = []Role{RolePrimary, RoleSecondary}[r.IntN(2)]
	case PausePrimary, PartitionPrimary:
		// Past the election timeout, so the others elect a new primary while
		// the old one is frozen or cut off.
		s.Target, s.Hold = RolePrimary, electionTimeout+between(r, 2*time.Second, 5*time.Second)
	case PartitionMinority:
		// Past the heartbeat timeout (10 s, as the election timeout), so the
		// primary declares the isolated secondary down.
		s.Target, s.Hold = RoleSecondary, electionTimeout+between(r, 3*time.Second, 5*time.Second)
	case NodeDown:
		s.Target, s.Hold = RoleAny, between(r, 5*time.Second, 15*time.Second)
	case KillOperatorLeader, RestartControlPlane:
		s.Cluster, s.Target = -1, RoleNone
	case MajorityLoss:
		// The first cluster: the default run's 3-member set, under Automatic.
		s.Cluster, s.Target, s.Hold = 0, RolePrimary, majorityLossHold
	}
	return s
}

// between draws a duration in [lo, hi], in whole 100 ms.
func between(r *rand.Rand, lo, hi time.Duration) time.Duration {
	steps := int64((hi - lo) / (100 * time.Millisecond))
	return lo + time.Duration(r.Int64N(steps+1))*100*time.Millisecond
}
