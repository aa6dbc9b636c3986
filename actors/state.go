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
	"maps"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mgors/operator/actors/eventlog"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo"
	"github.com/mgors/operator/mongo/backup"
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
	// Initiates counts the operator's successful initiates: one, and one more
	// for each re-initiate a person approved after every volume was lost.
	Initiates int `json:"initiates"`
	// VolumesLost is set while an initiated set answers without a config
	// anywhere, until a person approves a fresh initiate.
	VolumesLost *VolumesLost `json:"volumesLost,omitempty"`
	// AdminUser is true once the admin user exists.
	AdminUser bool `json:"adminUser"`
	// UsersCreated counts the operator's successful user creations.
	UsersCreated int `json:"usersCreated"`
	// OperatorUser is true once the operator's own user exists.
	OperatorUser bool `json:"operatorUser,omitempty"`
	// Auth is how the operator authenticates to the members (AuthSwitched).
	Auth Auth `json:"auth,omitempty"`

	// View is the replica set as last observed (only decision-relevant fields).
	View MembersObserved `json:"view"`
	// Problems are what blocks progress, as last observed.
	Problems []Problem `json:"problems,omitempty"`
	// MajorityLost is set while a voting majority does not answer.
	MajorityLost *MajorityLost `json:"majorityLost,omitempty"`
	// MajorityLostAt is when the majority was lost.
	MajorityLostAt time.Time `json:"majorityLostAt,omitempty"`
	// UnhealthySince is when each member (by normalized host) was first seen
	// not PRIMARY, SECONDARY or ARBITER; healthy members are not in it.
	UnhealthySince map[string]time.Time `json:"unhealthySince,omitempty"`
	// CommitPoint is the newest majority commit point seen.
	CommitPoint OpTime `json:"commitPoint,omitzero"`
	// Force is the forced reconfig decided (ForceDecided), kept until the set
	// is Healthy again; ForceApplied is true once it finished.
	Force        *ForceDecided `json:"force,omitempty"`
	ForceApplied bool          `json:"forceApplied,omitempty"`
	// Fenced are the pods deleted before the force decided dropped their
	// members (FencePod), by name, until the set is Healthy again or the force
	// is abandoned: a pod of another UID under that name is the fresh one.
	Fenced map[string]Fence `json:"fenced,omitempty"`
	// Handled are the approval annotations (key → value) acted on or refused
	// and not yet removed: a handled value is never acted on again.
	Handled map[string]string `json:"handled,omitempty"`
	// Refused is the last approval refused, until one is accepted or the
	// disaster it was about is over.
	Refused *ApprovalRefused `json:"refused,omitempty"`

	// Claims are the last known UIDs of the members' data claims, by pod name
	// (from MembersObserved; a claim missing for a moment keeps its UID).
	Claims map[string]string `json:"claims,omitempty"`
	// Troubles are the members (by pod name) recorded resyncing, stuck or
	// wiped, until they serve again (decide_stuck.go).
	Troubles map[string]Trouble `json:"troubles,omitempty"`

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

	// Version is the MongoDB version the members run or roll to: the first
	// spec.version, then each one accepted (UpgradeStarted). Objects are
	// built with it, so a refused spec.version rolls nothing.
	Version string `json:"version,omitempty"`
	// Upgrade is the version change under way, until UpgradeFinished.
	Upgrade *UpgradeStarted `json:"upgrade,omitempty"`
	// VersionRefused is the spec.version refused, until the spec changes or
	// it is accepted (the FCV moved).
	VersionRefused *VersionRefused `json:"versionRefused,omitempty"`
	// Versions are the members' binaries and the FCV as last observed.
	Versions VersionsObserved `json:"versions,omitzero"`
	// Storage is a growth of spec.storage.size under way or refused
	// (decide_storage.go).
	Storage *StorageGrowth `json:"storage,omitempty"`
	// MongodOptions are the mongod options of the spec last recorded
	// (ConfigChanged, decide_config.go).
	MongodOptions map[string]string `json:"mongodOptions,omitempty"`
	// ConfigRole is true once the operator's own user was granted
	// mongo.ConfigRole (GrantConfigRole), until it authenticates as that
	// user anew (AuthSwitched).
	ConfigRole bool `json:"configRole,omitempty"`
	// TLS is the spec.tls the members run or step to (decide_tls.go).
	TLS TLSRoll `json:"tls,omitzero"`
	// Keyfile is the keyfile rotation under way, and the step the objects
	// name (decide_keyfile.go).
	Keyfile KeyfileRoll `json:"keyfile,omitzero"`
	// CA is the rotation of the CA the operator keeps, under way
	// (decide_ca.go).
	CA CARoll `json:"ca,omitzero"`
	// External is the members' external addresses last recorded (nil
	// without spec.externalAccess; decide_external.go).
	External *ExternalView `json:"external,omitempty"`
	// Schedules are the backup schedules' last fires (decide_schedule.go).
	Schedules Schedules `json:"schedules,omitzero"`
	// Backups are the backups started, the running ones and the last ended
	// ones (decide_backup.go), oldest first.
	Backups []BackupRun `json:"backups,omitempty"`
	// BackupRole is true once the operator's own user was granted the
	// backup role (GrantBackupRole), until it authenticates as that user
	// anew (AuthSwitched).
	BackupRole bool `json:"backupRole,omitempty"`
	// Restores are the restores into this cluster, the running ones and
	// the last ended ones (decide_restore.go), oldest first.
	Restores []RestoreRun `json:"restores,omitempty"`
	// Archive is the oplog archive's last run (decide_archive.go).
	Archive *ArchiveRun `json:"archive,omitempty"`
	// ArchivePruned is where the archive's chunks were last pruned
	// through (ArchivePruned; decide_archive.go).
	ArchivePruned backup.Position `json:"archivePruned,omitzero"`
}

// Fence is a pod deleted before a force (FencePod): the UID deleted, and
// when the delete was accepted.
type Fence struct {
	UID string    `json:"uid"`
	At  time.Time `json:"at"`
}

// Initial is the state of a cluster before its first event.
func Initial() State { return State{Phase: v1alpha1.PhaseProvisioning} }

// Evolve folds one event into the state. It is pure: no I/O, no clock, no
// randomness; the same events give the same state, live, on restart and in replay.
func Evolve(s State, seq int64, at time.Time, e Event) State {
	s.Seq, s.At = seq, at
	s = foldTrouble(s, at, e)
	s = foldUpgrade(s, e)
	s = foldStorage(s, e)
	s = foldConfig(s, e)
	s = foldTLS(s, e)
	s = foldKeyfile(s, e)
	s = foldCA(s, e)
	s = foldExternal(s, e)
	s = foldBackup(s, at, e)
	s = foldRestore(s, at, e)
	s = foldArchive(s, at, e)
	switch e := e.(type) {
	case SpecObserved:
		s.Generation, s.Members, s.Paused = e.Generation, e.Members, e.Paused
	case PhaseChanged:
		s.Phase, s.PhaseReason = e.To, e.Reason
		if e.To == v1alpha1.PhaseHealthy {
			s.Force, s.ForceApplied, s.Fenced = nil, false, nil // the recovery from a force is over
		}
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
				s.ForceApplied = true
			case ActRemoveAnnotation:
				s.Handled = without(s.Handled, e.Target)
			case ActFencePod:
				s.Fenced = with(s.Fenced, e.Target, Fence{UID: s.InFlight.UID, At: at})
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
		if e.Action == ActForceReconfig {
			s.Force = nil // it did not apply: a later decision starts afresh
		}
		s.InFlight, s.LastFailure, s.FailedAt = nil, &failed, at
	case ActionUncertain:
		// The action stays in flight; the world settles it.
	case Initiated:
		s.Initiated = true
		if !e.Found {
			s.Initiates++
		}
		s.VolumesLost = nil
		if s.Refused != nil && s.Refused.Annotation == ReinitiateAnnotation {
			s.Refused = nil
		}
	case ForceDecided:
		force := e
		s.Force, s.ForceApplied, s.Fenced = &force, false, nil // each force fences afresh
	case ForceAbandoned:
		s.Force, s.Fenced = nil, nil
	case ApprovalAccepted:
		s.Handled = with(s.Handled, e.Annotation, e.Value)
		s.Refused = nil
		if e.Annotation == ReinitiateAnnotation {
			// A fresh initiate starts without users, so as __system.
			s.AdminUser, s.OperatorUser, s.Auth = false, false, AuthKeyfile
		}
	case ApprovalWithdrawn:
		s.Handled = without(s.Handled, e.Annotation)
	case ApprovalRefused:
		s.Handled = with(s.Handled, e.Annotation, e.Value)
		refused := e
		s.Refused = &refused
	case VolumesLost:
		lost := e
		s.VolumesLost = &lost
	case NodeLost:
		// Recorded for people; the ForceDeletePod that follows is the effect.
	case AdminUserReady:
		s.AdminUser = true
		if !e.Found {
			s.UsersCreated++
		}
	case OperatorUserReady:
		s.OperatorUser = true
		if !e.Found {
			s.UsersCreated++
		}
	case AuthSwitched:
		s.Auth = e.To
	case PasswordApplied:
		// Recorded for people: the database now holds the Secret's password.
	case MembersObserved:
		s.View = e
		s.Claims = claims(s.Claims, e.Members)
		s.CommitPoint = newer(s.CommitPoint, e.CommitPoint)
		s.UnhealthySince = unhealthySince(s.UnhealthySince, e.Members, at)
	case ProblemsObserved:
		s.Problems = e.Problems
	case MajorityLost:
		lost := e
		s.MajorityLost, s.MajorityLostAt = &lost, at
		s.CommitPoint = newer(s.CommitPoint, e.CommitPoint)
	case MajorityRestored:
		s.MajorityLost, s.MajorityLostAt = nil, time.Time{}
		if s.Refused != nil && s.Refused.Annotation == ForceAnnotation {
			s.Refused = nil
		}
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

// unhealthySince folds a view into the since-when of unhealthy members: a
// new map (states are values; maps are never shared between two of them).
func unhealthySince(prev map[string]time.Time, members []MemberDigest, at time.Time) map[string]time.Time {
	var out map[string]time.Time
	for _, m := range members {
		if m.Healthy {
			continue
		}
		if out == nil {
			out = map[string]time.Time{}
		}
		h := mongo.NormalizeHost(m.Host)
		if t, ok := prev[h]; ok {
			out[h] = t
		} else {
			out[h] = at
		}
	}
	return out
}

// claims folds a view's claim UIDs into the last known ones (a new map when
// one changed: states are values).
func claims(prev map[string]string, members []MemberDigest) map[string]string {
	out, cloned := prev, false
	for _, m := range members {
		if m.Claim == "" || out[m.Name] == m.Claim {
			continue
		}
		if !cloned {
			out, cloned = make(map[string]string, len(prev)+1), true
			maps.Copy(out, prev)
		}
		out[m.Name] = m.Claim
	}
	return out
}

// with is a copy of m with k set to v: a folded state never shares a map it changes.
func with[V any](m map[string]V, k string, v V) map[string]V {
	out := make(map[string]V, len(m)+1)
	maps.Copy(out, m)
	out[k] = v
	return out
}

func without(m map[string]string, k string) map[string]string {
	if _, ok := m[k]; !ok {
		return m
	}
	out := maps.Clone(m)
	delete(out, k)
	if len(out) == 0 {
		return nil
	}
	return out
}

// newer is the later of two optimes.
func newer(a, b OpTime) OpTime {
	if b.mongo().Compare(a.mongo()) > 0 {
		return b
	}
	return a
}

func optime(o mongo.OpTime) OpTime { return OpTime{Secs: o.TS.T, Inc: o.TS.I, Term: o.T} }

func (o OpTime) mongo() mongo.OpTime {
	return mongo.OpTime{TS: bson.Timestamp{T: o.Secs, I: o.Inc}, T: o.Term}
}

// String prints the optime as mongod's logs do.
func (o OpTime) String() string { return o.mongo().String() }
