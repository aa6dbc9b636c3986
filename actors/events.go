package actors

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/mgors/operator/actors/eventlog"
	"github.com/mgors/operator/kube/api/v1alpha1"
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

// ActionUncertain records that the action in flight returned an error that
// does not say whether it took effect (a timeout, a dropped connection). The
// action stays in flight and is settled from the world, never simply retried:
// a forced reconfig must not be sent twice.
type ActionUncertain struct {
	Action ActionKind `json:"action"`
	Target string     `json:"target,omitempty"`
	Error  string     `json:"error"`
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

func (SpecObserved) Type() string     { return "SpecObserved" }
func (PhaseChanged) Type() string     { return "PhaseChanged" }
func (ActionStarted) Type() string    { return "ActionStarted" }
func (ActionFinished) Type() string   { return "ActionFinished" }
func (ActionFailed) Type() string     { return "ActionFailed" }
func (Initiated) Type() string        { return "Initiated" }
func (MembersObserved) Type() string  { return "MembersObserved" }
func (ProblemsObserved) Type() string { return "ProblemsObserved" }
func (WorldDisagreed) Type() string   { return "WorldDisagreed" }
func (ScaledTo) Type() string         { return "ScaledTo" }
func (ActionUncertain) Type() string  { return "ActionUncertain" }

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
	register(MembersObserved{})
	register(ProblemsObserved{})
	register(WorldDisagreed{})
	register(ScaledTo{})
	register(ActionUncertain{})
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
