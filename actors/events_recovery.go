package actors

import "time"

// Survivor is one reachable member's own account during a majority loss.
type Survivor struct {
	Host string `json:"host"`
	// Optime is its last applied write, Term its current term.
	Optime OpTime `json:"optime"`
	Term   int64  `json:"term"`
	// CommitPoint is the last write it knows a majority holds.
	CommitPoint OpTime `json:"commitPoint,omitzero"`
}

// MajorityLost records that fewer than a majority of voting members answer,
// with the evidence: who is missing and since when, what each survivor holds.
type MajorityLost struct {
	Missing   []string `json:"missing"`
	Reachable []string `json:"reachable"`
	Evidence  string   `json:"evidence"`
	// MissingSince is when each missing member was first seen unhealthy.
	MissingSince map[string]time.Time `json:"missingSince,omitempty"`
	// Survivors are the reachable members' own statuses.
	Survivors []Survivor `json:"survivors,omitempty"`
	// CommitPoint is the newest majority commit point the operator saw, before
	// the loss or from a survivor: writes up to it were acknowledged w:majority.
	CommitPoint OpTime `json:"commitPoint,omitzero"`
}

// ForceDecided records a forced reconfig, decided and about to be sent: under
// which policy (and whose approval), onto which survivor, and the writes it
// puts at risk. The pods of the dropped members are fenced next (FencePod),
// then the ActionStarted of ActForceReconfig sends it, unless ForceAbandoned.
type ForceDecided struct {
	// Policy is Manual (a person approved) or Automatic.
	Policy string `json:"policy"`
	// Approval is the annotation's value under Manual.
	Approval string `json:"approval,omitempty"`
	// Survivor is the member the forced config is sent to, at SurvivorOptime.
	Survivor       string   `json:"survivor"`
	SurvivorOptime OpTime   `json:"survivorOptime"`
	Kept           []string `json:"kept"`
	Dropped        []string `json:"dropped"`
	// CommitPoint is the newest majority commit point seen. When it is ahead of
	// SurvivorOptime, the writes between the two were acknowledged w:majority
	// and are lost by this force: MajorityWritesLost.
	CommitPoint        OpTime `json:"commitPoint,omitzero"`
	MajorityWritesLost bool   `json:"majorityWritesLost,omitempty"`
	// BestMissing is the dropped member a survivor last saw furthest ahead; its
	// writes past SurvivorOptime are lost too (GapSeconds of oplog).
	BestMissing       string `json:"bestMissing,omitempty"`
	BestMissingOptime OpTime `json:"bestMissingOptime,omitzero"`
	GapSeconds        int64  `json:"gapSeconds,omitempty"`
	// Unknown is true when no survivor knew any dropped member's optime.
	Unknown bool `json:"unknown,omitempty"`
	// LossSeen is when the operator first saw the majority lost. A survivor
	// learns the commit point and the others' optimes by heartbeat, so writes
	// acknowledged just before the loss may lie past both: every write
	// acknowledged after SurvivorOptime and before LossSeen is at risk, the
	// ones named above surely lost.
	LossSeen time.Time `json:"lossSeen,omitzero"`
}

// ApprovalRefused records that a person's approval annotation was not acted
// on, and why. The annotation is removed after it: a new approval is needed.
type ApprovalRefused struct {
	Annotation string `json:"annotation"`
	Value      string `json:"value"`
	Reason     string `json:"reason"`
}

// ApprovalAccepted records that a person's approval annotation is acted on.
type ApprovalAccepted struct {
	Annotation string `json:"annotation"`
	Value      string `json:"value"`
}

// ApprovalWithdrawn records that a handled approval annotation disappeared
// without the operator removing it (a person deleted it): the same value given
// again later is judged afresh.
type ApprovalWithdrawn struct {
	Annotation string `json:"annotation"`
}

// VolumesLost records that an initiated replica set's members all answer
// without a config: every volume was lost. The operator does not initiate
// again on its own; a person approves with ReinitiateAnnotation.
type VolumesLost struct {
	Members []string `json:"members"`
}

// ForceAbandoned records a decided force that was never sent: before it
// went, a voting majority answered again (the fenced members came back), or
// the survivor stopped answering. A later decision starts afresh.
type ForceAbandoned struct {
	Survivor string `json:"survivor"`
	Reason   string `json:"reason"`
}

// NodeLost records member pods on a node NotReady past
// spec.recovery.nodeLossGracePeriod; they are force-deleted next.
type NodeLost struct {
	Node  string    `json:"node"`
	Since time.Time `json:"since"`
	Pods  []string  `json:"pods"`
}

// MemberResyncing records a member that came back empty (its volume lost or
// wiped) and initial-syncs by itself: the operator only watches (case 2).
// Written when first seen, and once more with the initial sync progress.
type MemberResyncing struct {
	Member   string `json:"member"`
	Host     string `json:"host"`
	Evidence string `json:"evidence"`
	// Progress is replSetGetStatus.initialSyncStatus in words, when known.
	Progress string `json:"progress,omitempty"`
}

// MemberStuck records a member that cannot get back by itself, with the
// evidence (case 3): Kind TooStale or InitialSyncFailing (wiped after
// stuckBound), or Removed (added to the config again by the planner).
type MemberStuck struct {
	Member   string `json:"member"`
	Host     string `json:"host"`
	Kind     string `json:"kind"`
	Evidence string `json:"evidence"`
}

// MemberRecovered records that a member recorded resyncing, stuck or wiped
// serves again (SECONDARY or PRIMARY).
type MemberRecovered struct {
	Member string `json:"member"`
	Host   string `json:"host"`
	// Trouble is the last kind recorded, Since when it was recorded.
	Trouble string    `json:"trouble"`
	Since   time.Time `json:"since"`
	State   string    `json:"state"`
}

// MajorityRestored records that a voting majority answers again.
type MajorityRestored struct {
	Reachable []string `json:"reachable"`
}

func (MajorityLost) Type() string      { return "MajorityLost" }
func (MajorityRestored) Type() string  { return "MajorityRestored" }
func (ForceDecided) Type() string      { return "ForceDecided" }
func (ApprovalRefused) Type() string   { return "ApprovalRefused" }
func (ApprovalAccepted) Type() string  { return "ApprovalAccepted" }
func (ApprovalWithdrawn) Type() string { return "ApprovalWithdrawn" }
func (VolumesLost) Type() string       { return "VolumesLost" }
func (NodeLost) Type() string          { return "NodeLost" }
func (MemberResyncing) Type() string   { return "MemberResyncing" }
func (MemberStuck) Type() string       { return "MemberStuck" }
func (MemberRecovered) Type() string   { return "MemberRecovered" }
func (ForceAbandoned) Type() string    { return "ForceAbandoned" }

func init() {
	register(MajorityLost{})
	register(MajorityRestored{})
	register(ForceDecided{})
	register(ApprovalRefused{})
	register(ApprovalAccepted{})
	register(ApprovalWithdrawn{})
	register(VolumesLost{})
	register(NodeLost{})
	register(MemberResyncing{})
	register(MemberStuck{})
	register(MemberRecovered{})
	register(ForceAbandoned{})
}
