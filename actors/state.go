// Package actors holds the operator's actors: a Manager that supervises one
// Cluster actor per Mgors, and the Cluster actor's state machine
// (Provisioning → Initiating → Healthy ⇄ Recovering).
//
// A Cluster actor is event-sourced. Each step is: observe the world (off the
// mailbox), Decide (pure) what happened and what to do, persist the events,
// fold them into the state (Evolve, pure), then act. The same Evolve rebuilds
// the state on restart and in `mgorsctl replay`. See docs/design/state-machine.md
// and docs/design/event-log.md.
package actors

import (
	"fmt"
	"time"

	"github.com/mgors/operator/actors/eventlog"
	"github.com/mgors/operator/kube/api/v1alpha1"
)

// State is a cluster's state: a pure fold of its events, nothing else. It is
// JSON-encodable for snapshots and `mgorsctl replay --at`.
type State struct {
	// Seq is the last event folded in.
	Seq int64 `json:"seq"`
	// At is the time of the last event folded in.
	At time.Time `json:"at"`
	// Phase is where the cluster is in its lifecycle.
	Phase v1alpha1.Phase `json:"phase"`
	// PhaseReason is why it is there.
	PhaseReason string `json:"phaseReason,omitempty"`
	// Generation is the spec generation the actor acts on.
	Generation int64 `json:"generation"`
	// Members is the desired number of data-bearing members at Generation.
	Members int32 `json:"members"`
	// Paused mirrors spec.paused at Generation.
	Paused bool `json:"paused,omitempty"`

	// Initiated is true once the replica set has a config; never false again.
	Initiated bool `json:"initiated"`
	// Initiates counts the operator's successful initiates (at most one, ever).
	Initiates int `json:"initiates"`
	// AdminUser is true once the admin user exists.
	AdminUser bool `json:"adminUser"`
	// UsersCreated counts the operator's successful user creations.
	UsersCreated int `json:"usersCreated"`

	// View is the replica set as last observed (only decision-relevant fields).
	View MembersObserved `json:"view"`
	// Problems are what blocks progress, as last observed.
	Problems []Problem `json:"problems,omitempty"`
	// MajorityLost is set while a voting majority does not answer.
	MajorityLost *MajorityLost `json:"majorityLost,omitempty"`
	// MajorityLostAt is when the majority was lost.
	MajorityLostAt time.Time `json:"majorityLostAt,omitempty"`

	// InFlight is the action started and not yet finished or failed.
	InFlight *ActionStarted `json:"inFlight,omitempty"`
	// LastFailure is the last action failure, for status and people.
	LastFailure *ActionFailed `json:"lastFailure,omitempty"`
	// Failures counts consecutive failures of the same action, for back-off.
	Failures int `json:"failures,omitempty"`
	// FailedAt is when the last failure was recorded.
	FailedAt time.Time `json:"failedAt,omitempty"`
	// Reconfigs counts successful non-forced reconfigs.
	Reconfigs int `json:"reconfigs"`
	// ForcedReconfigs counts successful forced reconfigs.
	ForcedReconfigs int `json:"forcedReconfigs"`
	// Replicas is the StatefulSet size the actor last set (from ScaledTo).
	Replicas int32 `json:"replicas"`
}

// Initial is the state of a cluster before its first event.
func Initial() State { return State{Phase: v1alpha1.PhaseProvisioning} }

// Evolve folds one event into the state. It is pure: no I/O, no clock, no
// randomness; the same events give the same state, live, on restart and in replay.
func Evolve(s State, seq int64, at time.Time, e Event) State {
	s.Seq, s.At = seq, at
	switch e := e.(type) {
	case SpecObserved:
		s.Generation, s.Members, s.Paused = e.Generation, e.Members, e.Paused
	case PhaseChanged:
		s.Phase, s.PhaseReason = e.To, e.Reason
	case ActionStarted:
		started := e
		s.InFlight = &started
	case ActionFinished:
		if s.InFlight != nil && s.InFlight.Action == e.Action {
			switch e.Action {
			case ActReconfig:
				s.Reconfigs++
			case ActForceReconfig:
				s.ForcedReconfigs++
			}
		}
		s.InFlight, s.LastFailure, s.Failures, s.FailedAt = nil, nil, 0, time.Time{}
	case ActionFailed:
		failed := e
		if s.LastFailure != nil && s.LastFailure.Action == e.Action {
			s.Failures++
		} else {
			s.Failures = 1
		}
		s.InFlight, s.LastFailure, s.FailedAt = nil, &failed, at
	case Initiated:
		s.Initiated = true
		if !e.Found {
			s.Initiates++
		}
	case AdminUserReady:
		s.AdminUser = true
		if !e.Found {
			s.UsersCreated++
		}
	case MembersObserved:
		s.View = e
	case ProblemsObserved:
		s.Problems = e.Problems
	case MajorityLost:
		lost := e
		s.MajorityLost, s.MajorityLostAt = &lost, at
	case MajorityRestored:
		s.MajorityLost, s.MajorityLostAt = nil, time.Time{}
	case ScaledTo:
		s.Replicas = e.Replicas
	case WorldDisagreed:
		// Recorded for people; the events that follow carry the world's view.
	}
	return s
}

// Fold rebuilds a state from a snapshot's state (or Initial) and the records
// after it. Records of unknown types are skipped; a record out of sequence is
// an error, as is one that cannot be decoded.
func Fold(s State, recs []eventlog.Record) (State, error) {
	if err := eventlog.CheckSequence(s.Seq, recs); err != nil {
		return s, err
	}
	for _, r := range recs {
		e, ok, err := Decode(r)
		if err != nil {
			return s, err
		}
		if !ok {
			s.Seq, s.At = r.Seq, r.Time
			continue
		}
		s = Evolve(s, r.Seq, r.Time, e)
	}
	return s, nil
}

// String is a one-line summary for logs and tools.
func (s State) String() string {
	inflight := "-"
	if s.InFlight != nil {
		inflight = string(s.InFlight.Action)
	}
	return fmt.Sprintf("seq=%d phase=%s initiated=%t admin=%t primary=%q config=%d/%d inflight=%s",
		s.Seq, s.Phase, s.Initiated, s.AdminUser, s.View.Primary, s.View.ConfigVersion, s.View.ConfigTerm, inflight)
}
