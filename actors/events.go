package actors

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/mgors/operator/actors/eventlog"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo"
)

// Event is a decision or an observation of a Cluster actor, persisted before it
// takes effect. Payloads hold no secret: hosts, versions, counts and reasons only.
type Event interface {
	// Type names the payload in the log; it never changes once released.
	Type() string
}

// ActionKind is what the actor does to the world.
type ActionKind string

// The actions a Cluster actor carries out, each after its ActionStarted event
// is durable.
const (
	ActEnsureObjects ActionKind = "EnsureObjects"
	ActInitiate      ActionKind = "Initiate"
	ActCreateUser    ActionKind = "CreateAdminUser"
	ActReconfig      ActionKind = "Reconfig"
	ActForceReconfig ActionKind = "ForceReconfig"
	ActStepDown      ActionKind = "StepDown"
	ActScale         ActionKind = "ScaleStatefulSet"
	ActDeleteVolumes ActionKind = "DeleteVolumes"
	// ActRestartMember deletes one member's pod so the StatefulSet recreates
	// it from the current template (rolling restart, one member at a time).
	ActRestartMember ActionKind = "RestartMember"
	// ActRemoveAnnotation removes a person's approval annotation once it was
	// acted on or refused, so it is never acted on twice.
	ActRemoveAnnotation ActionKind = "RemoveAnnotation"
	// ActWipeMember discards a member's data (its volume) so it comes back
	// empty and resyncs: a member that came back after a forced reconfig with
	// writes the survivor never had.
	ActWipeMember ActionKind = "WipeMember"
	// ActForceDeletePod deletes a member pod with grace period 0: its node is
	// NotReady past recovery.nodeLossGracePeriod, so its kubelet will never
	// confirm the deletion and the StatefulSet cannot recreate it elsewhere.
	ActForceDeletePod ActionKind = "ForceDeletePod"
	// ActFencePod deletes the pod of a member a decided force drops, before
	// the force is sent: a hung or cut-off mongod must not come back with its
	// election timer long expired and elect a second primary in the old
	// config. The kubelet kills it; the StatefulSet recreates it afresh.
	ActFencePod ActionKind = "FencePod"
	// ActSetBudget creates or updates the PodDisruptionBudget to the
	// minAvailable the set can afford now and at every step toward the spec
	// (decide_budget.go).
	ActSetBudget ActionKind = "SetDisruptionBudget"
	// ActDeleteArbiters deletes the arbiters' StatefulSet, and with it the
	// arbiter's pod, once spec.arbiters is 0 and the arbiter left the config.
	ActDeleteArbiters ActionKind = "DeleteArbiters"
	// ActCreateOperatorUser creates the operator's own user (mongo.OperatorUser,
	// mongo.OperatorRoles) with the password of its Secret, as __system.
	ActCreateOperatorUser ActionKind = "CreateOperatorUser"
	// ActUpdatePassword sets a user's password to the one its Secret holds
	// (updateUser): the Secret changed, or was re-created.
	ActUpdatePassword ActionKind = "UpdatePassword"
)

// Auth is how the operator authenticates to the members.
type Auth string

// The operator's two identities in MongoDB (docs/design/mongo-admin.md).
const (
	// AuthKeyfile is mongod's internal __system user, opened by the keyfile:
	// the zero value, for a set without the operator's user (before it is
	// created, and logs older than it).
	AuthKeyfile Auth = ""
	// AuthOperator is the operator's own user, with the roles its commands need.
	AuthOperator Auth = "operator"
)

// MarshalText writes the keyfile as "keyfile", so a record says which.
func (a Auth) MarshalText() ([]byte, error) {
	if a == AuthKeyfile {
		return []byte("keyfile"), nil
	}
	return []byte(a), nil
}

// UnmarshalText reads what MarshalText writes.
func (a *Auth) UnmarshalText(b []byte) error {
	*a = Auth(b)
	if *a == "keyfile" {
		*a = AuthKeyfile
	}
	return nil
}

// String names the identity as logs and events show it.
func (a Auth) String() string {
	if a == AuthOperator {
		return "user(" + mongo.OperatorUser + ")"
	}
	return "keyfile(__system)"
}

// SpecObserved records a spec generation the actor started to act on.
type SpecObserved struct {
	Generation int64  `json:"generation"`
	Members    int32  `json:"members"`
	Arbiters   int32  `json:"arbiters,omitempty"`
	Version    string `json:"version"`
	Paused     bool   `json:"paused,omitempty"`
}

// PhaseChanged records a move of the state machine.
type PhaseChanged struct {
	From   v1alpha1.Phase `json:"from"`
	To     v1alpha1.Phase `json:"to"`
	Reason string         `json:"reason"`
}

// ActionStarted is written before an action is carried out (write-ahead), so a
// restarted actor knows what may have happened and checks the world for it.
type ActionStarted struct {
	Action ActionKind `json:"action"`
	// Target is the member host or object the action is aimed at.
	Target string `json:"target,omitempty"`
	// ConfigVersion is the config version a (re)config action installs.
	ConfigVersion int64 `json:"configVersion,omitempty"`
	// Replicas is the StatefulSet size a scale action sets.
	Replicas int32 `json:"replicas,omitempty"`
	// Reason says why, in words.
	Reason string `json:"reason,omitempty"`
	// Members are the config's member hosts, for (re)config actions.
	Members []string `json:"members,omitempty"`
	// AtRisk describes writes a forced reconfig may lose.
	AtRisk string `json:"atRisk,omitempty"`
	// UID is the pod a FencePod deletes: a pod recreated since is left alone.
	UID string `json:"uid,omitempty"`
	// MinAvailable is the PodDisruptionBudget a SetDisruptionBudget sets.
	MinAvailable int32 `json:"minAvailable,omitempty"`
	// User, Secret and SecretVersion are the user whose password a user
	// action sets, the Secret it comes from and that Secret's
	// resourceVersion: which password, never the password.
	User          string `json:"user,omitempty"`
	Secret        string `json:"secret,omitempty"`
	SecretVersion string `json:"secretVersion,omitempty"`
	// Step is the keyfile rotation step a RotateKeyfile writes.
	Step int `json:"step,omitempty"`
}

// ActionFinished records that the action in flight succeeded, or that the
// world shows its effect (Observed true: e.g. after a restart).
type ActionFinished struct {
	Action   ActionKind `json:"action"`
	Target   string     `json:"target,omitempty"`
	Observed bool       `json:"observed,omitempty"`
}

// ActionFailed records that the action in flight failed, or that after a
// restart the world shows no sign of it; the actor may decide it again.
type ActionFailed struct {
	Action ActionKind `json:"action"`
	Target string     `json:"target,omitempty"`
	Error  string     `json:"error"`
	Code   int32      `json:"code,omitempty"`
}

// Initiated records that the replica set has a config: the operator's
// initiate succeeded, or a member was found already holding one. After it the
// actor never initiates again (invariant 1).
type Initiated struct {
	Host          string `json:"host"`
	ConfigVersion int64  `json:"configVersion"`
	// Found is true when the config was already there (adopted volumes, a lost
	// log), not made by this operator.
	Found bool `json:"found,omitempty"`
}

// AdminUserReady records that the admin user exists (created, or found).
type AdminUserReady struct {
	User  string `json:"user"`
	Found bool   `json:"found,omitempty"`
}

// OperatorUserReady records that the operator's own user exists (created,
// or found). The operator switches to it with AuthSwitched.
type OperatorUserReady struct {
	User   string `json:"user"`
	Secret string `json:"secret"`
	Found  bool   `json:"found,omitempty"`
}

// AuthSwitched records that the operator authenticates as To from now on:
// to its own user once the user's Secret opens it, back to the keyfile when
// that Secret no longer does (changed or re-created) until the password is
// applied.
type AuthSwitched struct {
	From   Auth   `json:"from"`
	To     Auth   `json:"to"`
	Reason string `json:"reason"`
}

// PasswordApplied records that a user's password is now the one its Secret
// holds at SecretVersion (its resourceVersion). Never the password, nor a
// hash of it.
type PasswordApplied struct {
	User          string `json:"user"`
	Secret        string `json:"secret"`
	SecretVersion string `json:"secretVersion"`
}

// MemberDigest is one member as the actor's view keeps it: what matters for
// decisions, not what changes every second (optimes, ping times).
type MemberDigest struct {
	Name    string `json:"name"`
	Host    string `json:"host"`
	State   string `json:"state"`
	Healthy bool   `json:"healthy"`
	Votes   int32  `json:"votes"`
	Prio    int32  `json:"priority"`
	Hidden  bool   `json:"hidden,omitempty"`
	// Claim is the UID of the member's data claim, when known: a new one is
	// a new, empty volume (decide_stuck.go).
	Claim string `json:"claim,omitempty"`
}

// MembersObserved records a change in the replica set as observed: the
// primary, the config version and term, and each member's state. Steady
// observation that changes nothing writes nothing, so a healthy cluster's log
// does not grow.
type MembersObserved struct {
	Primary       string         `json:"primary,omitempty"`
	ConfigVersion int64          `json:"configVersion,omitempty"`
	ConfigTerm    int64          `json:"configTerm,omitempty"`
	Members       []MemberDigest `json:"members"`
	Pods          int32          `json:"pods"`
	// CommitPoint is the primary's majority commit point at this observation.
	// It rides along when the view changes (it alone never writes a record),
	// so the state knows the last commit point seen before a majority loss.
	CommitPoint OpTime `json:"commitPoint,omitzero"`
}

// Problem is something outside the operator that blocks progress.
type Problem struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// ProblemsObserved records a change in what blocks progress (an empty list
// clears them).
type ProblemsObserved struct {
	Problems []Problem `json:"problems"`
}

// OpTime is an oplog position as the log keeps it (mongo.OpTime in JSON).
type OpTime struct {
	Secs uint32 `json:"secs"`
	Inc  uint32 `json:"inc,omitempty"`
	Term int64  `json:"term"`
}

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

// ActionUncertain records that the action in flight returned an error that
// does not say whether it took effect (a timeout, a dropped connection). The
// action stays in flight and is settled from the world, never simply retried:
// a forced reconfig must not be sent twice.
type ActionUncertain struct {
	Action ActionKind `json:"action"`
	Target string     `json:"target,omitempty"`
	Error  string     `json:"error"`
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

// WorldDisagreed records that the log said one thing and the world another;
// the world wins, and this event says so.
type WorldDisagreed struct {
	Subject string `json:"subject"`
	Log     string `json:"log"`
	World   string `json:"world"`
}

// ScaledTo records the StatefulSet size the actor set.
type ScaledTo struct {
	Replicas int32 `json:"replicas"`
}

func (SpecObserved) Type() string      { return "SpecObserved" }
func (PhaseChanged) Type() string      { return "PhaseChanged" }
func (ActionStarted) Type() string     { return "ActionStarted" }
func (ActionFinished) Type() string    { return "ActionFinished" }
func (ActionFailed) Type() string      { return "ActionFailed" }
func (Initiated) Type() string         { return "Initiated" }
func (AdminUserReady) Type() string    { return "AdminUserReady" }
func (MembersObserved) Type() string   { return "MembersObserved" }
func (ProblemsObserved) Type() string  { return "ProblemsObserved" }
func (MajorityLost) Type() string      { return "MajorityLost" }
func (MajorityRestored) Type() string  { return "MajorityRestored" }
func (WorldDisagreed) Type() string    { return "WorldDisagreed" }
func (ScaledTo) Type() string          { return "ScaledTo" }
func (ForceDecided) Type() string      { return "ForceDecided" }
func (ApprovalRefused) Type() string   { return "ApprovalRefused" }
func (ApprovalAccepted) Type() string  { return "ApprovalAccepted" }
func (ActionUncertain) Type() string   { return "ActionUncertain" }
func (ApprovalWithdrawn) Type() string { return "ApprovalWithdrawn" }
func (VolumesLost) Type() string       { return "VolumesLost" }
func (NodeLost) Type() string          { return "NodeLost" }
func (MemberResyncing) Type() string   { return "MemberResyncing" }
func (MemberStuck) Type() string       { return "MemberStuck" }
func (MemberRecovered) Type() string   { return "MemberRecovered" }
func (ForceAbandoned) Type() string    { return "ForceAbandoned" }
func (OperatorUserReady) Type() string { return "OperatorUserReady" }
func (AuthSwitched) Type() string      { return "AuthSwitched" }
func (PasswordApplied) Type() string   { return "PasswordApplied" }

// payloadVersion is the schema version of every payload written today.
const payloadVersion = 1

// decoders maps a record type to a function decoding its payload. A record of a
// type this build does not know is kept in the log and skipped by the fold.
var decoders = map[string]func(json.RawMessage) (Event, error){}

func register[E Event](zero E) {
	decoders[zero.Type()] = func(raw json.RawMessage) (Event, error) {
		var e E
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &e); err != nil {
				return nil, err
			}
		}
		return e, nil
	}
}

func init() {
	register(SpecObserved{})
	register(PhaseChanged{})
	register(ActionStarted{})
	register(ActionFinished{})
	register(ActionFailed{})
	register(Initiated{})
	register(AdminUserReady{})
	register(MembersObserved{})
	register(ProblemsObserved{})
	register(MajorityLost{})
	register(MajorityRestored{})
	register(WorldDisagreed{})
	register(ScaledTo{})
	register(ForceDecided{})
	register(ApprovalRefused{})
	register(ApprovalAccepted{})
	register(ActionUncertain{})
	register(ApprovalWithdrawn{})
	register(VolumesLost{})
	register(NodeLost{})
	register(MemberResyncing{})
	register(MemberStuck{})
	register(MemberRecovered{})
	register(ForceAbandoned{})
	register(OperatorUserReady{})
	register(AuthSwitched{})
	register(PasswordApplied{})
}

// Encode wraps an event in a record of the given stream, at seq.
func Encode(s eventlog.Stream, seq int64, at time.Time, cause, writer string, e Event) (eventlog.Record, error) {
	data, err := json.Marshal(e)
	if err != nil {
		return eventlog.Record{}, fmt.Errorf("encoding %s: %w", e.Type(), err)
	}
	return eventlog.Record{
		Schema: eventlog.SchemaVersion, Seq: seq, Time: at.UTC(), Cluster: s.Key(), UID: s.UID,
		Type: e.Type(), Version: payloadVersion, Cause: cause, Writer: writer, Data: data,
	}, nil
}

// Decode returns a record's event; ok is false for a type this build does not
// know (kept in the log, ignored by the fold, so newer logs stay readable).
func Decode(r eventlog.Record) (e Event, ok bool, err error) {
	dec, known := decoders[r.Type]
	if !known {
		return nil, false, nil
	}
	e, err = dec(r.Data)
	if err != nil {
		return nil, false, fmt.Errorf("record %d (%s): %w", r.Seq, r.Type, err)
	}
	return e, true, nil
}
