// Package chaos is Mgors' fault suite: a workload on real replica sets run by the
// operator on localkube, a seeded schedule of faults, and a checker that proves
// from the recorded history that nothing acknowledged was lost, no two primaries
// shared a term, and the operator healed every fault and destroyed nothing.
//
// This file is the record every part shares: the runner (run.go, workload.go,
// sample.go, inject.go) fills a History, the checker (check*.go) judges it, and
// the report (report*.go) shows it. docs/design/chaos.md describes the whole.
package chaos

import "time"

// Outcome is how an operation ended as its client saw it.
type Outcome string

// The outcomes of an operation. Unknown means the client cannot tell whether it
// took effect (a timeout or a network error after sending it): the checker lets
// such a write be present or absent.
const (
	OK      Outcome = "ok"
	Failed  Outcome = "failed"
	Unknown Outcome = "unknown"
)

// OpKind names what an operation did.
type OpKind string

// The workload's operations.
const (
	// Insert writes a document with a unique id (the set workload), w:majority.
	Insert OpKind = "insert"
	// Write sets a register (a single document) to a value no other write
	// uses, w:majority.
	Write OpKind = "write"
	// Read reads a register with read concern Concern.
	Read OpKind = "read"
)

// Op is one operation of the workload.
type Op struct {
	// Index is the operation's position in History.Ops.
	Index int `json:"index"`
	// Cluster is "namespace/name" of the Mgors the operation went to.
	Cluster string `json:"cluster"`
	// Client numbers the client (one driver Client per workload goroutine).
	Client int    `json:"client"`
	Kind   OpKind `json:"kind"`
	// Key is the register of a Write or Read ("" for an Insert).
	Key string `json:"key,omitempty"`
	// Value is the id inserted (Insert), the value written (Write), or the value
	// read (Read; 0 when the register did not exist yet). Values are > 0 and
	// unique per cluster among Inserts and among Writes.
	Value int64 `json:"value"`
	// Concern is the read concern of a Read: "linearizable" or "majority".
	Concern string    `json:"concern,omitempty"`
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	Outcome Outcome   `json:"outcome"`
	Error   string    `json:"error,omitempty"`
}

// MemberSample is one look at one member: hello, plus replSetGetStatus and
// replSetGetConfig when they answered.
type MemberSample struct {
	// At is when hello returned (answered or failed), not when it was sent.
	At      time.Time `json:"at"`
	Cluster string    `json:"cluster"`
	// Member is the member's host:port as in the replica-set config.
	Member string `json:"member"`
	// Error is set when the member did not answer; the other fields are then empty.
	Error string `json:"error,omitempty"`
	// State is the member's own state: PRIMARY, SECONDARY, ARBITER, RECOVERING, ...
	State string `json:"state,omitempty"`
	// Term is the member's current term (replSetGetStatus), ElectionID the
	// electionId hello gives while primary.
	Term       int64  `json:"term,omitempty"`
	ElectionID string `json:"electionId,omitempty"`
	// ReplicaSetID, ConfigVersion and ConfigTerm are from the member's config.
	ReplicaSetID  string `json:"replicaSetId,omitempty"`
	ConfigVersion int64  `json:"configVersion,omitempty"`
	ConfigTerm    int64  `json:"configTerm,omitempty"`
	// ConfigErr is why replSetGetConfig failed on a member that answered
	// hello ("" when it was read): NotYetInitialized on a member without a
	// config, or a timeout, which says nothing of the config.
	ConfigErr string `json:"configErr,omitempty"`
}

// PhaseSample is one look at a Mgors object's status.
type PhaseSample struct {
	At      time.Time `json:"at"`
	Cluster string    `json:"cluster"`
	Phase   string    `json:"phase"`
	// Current is true when status.observedGeneration equals metadata.generation.
	Current bool `json:"current"`
}

// FaultKind names a kind of fault.
type FaultKind string

// The fault kinds, in the order the short run covers them.
const (
	KillMongod          FaultKind = "kill-mongod"           // SIGKILL of mongod in a member's pod
	DeletePod           FaultKind = "delete-pod"            // a member pod force-deleted
	PausePrimary        FaultKind = "pause-primary"         // the primary SIGSTOPped past the election timeout, then SIGCONT
	PartitionPrimary    FaultKind = "partition-primary"     // the primary cut off from the other members
	PartitionMinority   FaultKind = "partition-minority"    // a minority (one secondary) cut off
	KillOperatorLeader  FaultKind = "kill-operator-leader"  // the operator pod holding the leader Lease killed
	RestartControlPlane FaultKind = "restart-control-plane" // the API server and etcd stopped and started again
	NodeDown            FaultKind = "node-down"             // a node's kubelet and its pods' processes die; later it comes back
	// MajorityLoss freezes the primary and a secondary of the first cluster (3
	// members, recovery.majorityLoss Automatic) until the operator forced the
	// config onto the third member.
	MajorityLoss FaultKind = "majority-loss"
)

// FaultKinds lists every kind, in order.
var FaultKinds = []FaultKind{KillMongod, DeletePod, PausePrimary, PartitionPrimary,
	PartitionMinority, KillOperatorLeader, RestartControlPlane, NodeDown, MajorityLoss}

// KeyfileRotation is not a fault but an operation a Scenario runs under the
// workload (test/recovery): the keyfile rotation a person asks for with
// mgors.io/rotate-keyfile, whose three steps each restart the members one
// at a time (no member is away for longer than its restart). Its record
// starts at the request and is healed when the operator recorded
// KeyfileRotated, so the Healthy bound and the write gap judge the
// rotation's own disruption; Happened means the keyfile Secret holds one
// new key. The schedule never picks it.
const KeyfileRotation FaultKind = "keyfile-rotation"

// ScenarioKinds are the kinds only a Scenario records, in the report's
// order after FaultKinds.
var ScenarioKinds = []FaultKind{KeyfileRotation, RotateCA}

// Fault is one injected fault.
type Fault struct {
	ID   int       `json:"id"`
	Kind FaultKind `json:"kind"`
	// Cluster is the Mgors it aimed at ("" for faults of the whole cluster).
	Cluster string `json:"cluster,omitempty"`
	// Targets names what was hit: pods, members, a node, the Lease holder.
	Targets []string `json:"targets"`
	// Start is when it was injected, Healed when it was undone (equal to Start
	// for instantaneous faults such as a kill).
	Start  time.Time `json:"start"`
	Healed time.Time `json:"healed"`
	// Happened is true when Evidence shows the fault really took effect
	// (a restart count or pid changed, packets were dropped, the Node went
	// NotReady, the Lease moved); the checker fails a fault that did not.
	Happened bool   `json:"happened"`
	Evidence string `json:"evidence"`
	// HealthyAt is when every Mgors was Healthy (and current) again after Healed;
	// zero when it never was within the bound.
	HealthyAt time.Time `json:"healthyAt,omitzero"`
}

// PodDeletion is a member pod that got a deletionTimestamp (or vanished).
type PodDeletion struct {
	At  time.Time `json:"at"`
	Pod string    `json:"pod"` // namespace/name
	// Fault is the ID of the fault that deleted it, 0 when no fault did.
	Fault int `json:"fault,omitempty"`
	// OperatorDown is true when no operator replica held the Lease then.
	OperatorDown bool `json:"operatorDown"`
}

// ForcedReconfig is a forced reconfig the operator recorded in an event log.
type ForcedReconfig struct {
	At      time.Time `json:"at"`
	Cluster string    `json:"cluster"`
	// MajorityAnswered is true when, in the member samples of the seconds before
	// At, a majority of voters answered hello.
	MajorityAnswered bool `json:"majorityAnswered"`
}

// AtRisk is the window of writes a forced reconfig recorded at risk (its
// ForceDecided): past the survivor's optime, up to the newest majority commit
// point or the furthest dropped member seen, as wall-clock times of the oplog.
type AtRisk struct {
	Cluster string    `json:"cluster"`
	Forced  time.Time `json:"forced"`
	From    time.Time `json:"from"`
	// To is the end of the window; the force's time when no survivor knew a
	// dropped member's optime.
	To time.Time `json:"to"`
}

// WipedMember is a member whose claim the operator deleted (WipeMember).
type WipedMember struct {
	At      time.Time `json:"at"`
	Cluster string    `json:"cluster"`
	PVC     string    `json:"pvc"`
}

// Final is what the runner found after the last fault was healed.
type Final struct {
	Cluster string `json:"cluster"`
	// Present holds the ids an Insert wrote that a read with majority read concern
	// on the final primary found; Registers the registers' final values. ReadError
	// is set when that read failed (the checker then fails the run).
	Present   map[int64]bool   `json:"-"`
	Registers map[string]int64 `json:"registers"`
	ReadError string           `json:"readError,omitempty"`
	// ReplayError is what `mgorsctl replay --verify` said when it failed; empty when it passed.
	ReplayError string `json:"replayError,omitempty"`
	// PVCUIDs maps each member PVC to its UID at the start and at the end.
	PVCStart map[string]string `json:"pvcStart"`
	PVCEnd   map[string]string `json:"pvcEnd"`
}

// History is everything a run recorded, and what the checker judges.
type History struct {
	Seed     int64         `json:"seed"`
	Duration time.Duration `json:"duration"`
	// Kinds are the fault kinds the schedule could choose from.
	Kinds    []FaultKind `json:"kinds"`
	Clusters []string    `json:"clusters"`
	Started  time.Time   `json:"started"`
	Ended    time.Time   `json:"ended"`

	Ops       []Op             `json:"-"` // written to history.ndjson, not the report
	Members   []MemberSample   `json:"-"`
	Phases    []PhaseSample    `json:"-"`
	Faults    []Fault          `json:"faults"`
	Deletions []PodDeletion    `json:"podDeletions"`
	Forced    []ForcedReconfig `json:"forcedReconfigs"`
	// AtRisk are the writes forced reconfigs recorded at risk; Wiped the member
	// claims the operator wiped (both read from the event logs).
	AtRisk []AtRisk      `json:"atRisk,omitempty"`
	Wiped  []WipedMember `json:"wiped,omitempty"`
	Final  []Final       `json:"final"`
	// Restore is the point-in-time restore of one cluster's data taken after
	// the faults (Config.Restore); nil when the run took none.
	Restore *Restore `json:"restore,omitempty"`

	// Logs maps a source ("operator/<pod>", "member/<ns>/<pod>", "events",
	// "eventlog/<cluster>", "status/<cluster>") to its text, for the log and
	// secret scans. Secrets are the values of every Secret the operator owns
	// (admin passwords, keyfiles), never written anywhere by the report.
	Logs    map[string]string `json:"-"`
	Secrets []string          `json:"-"`
}

// Restore is a point-in-time restore of one cluster of the run: a MgorsBackup
// taken before the faults, the oplog archived through them, and a
// MgorsRestore to a moment inside them into a new Mgors, whose data the
// checker compares with the operations (checkRestore).
type Restore struct {
	// Cluster is the Mgors backed up and archived ("namespace/name"), Target
	// the new one restored into, Backup the MgorsBackup.
	Cluster string `json:"cluster"`
	Target  string `json:"target"`
	Backup  string `json:"backup"`
	// BackupEnd is the backup's End (the wall time of its last entry).
	BackupEnd time.Time `json:"backupEnd"`
	// At is the moment asked for (spec.pointInTime): a whole second, since
	// the API's times have second resolution.
	At time.Time `json:"at"`
	// RestoredTo is what the MgorsRestore reports (status.restoredTo): the
	// newest entry the data holds, its timestamp "seconds.increment" and its
	// wall time (a whole second, as the API shows it).
	RestoredTo     string    `json:"restoredTo,omitempty"`
	RestoredToWall time.Time `json:"restoredToWall,omitempty"`
	// Documents and Replayed are the restore's counts: from the dump and
	// oplog entries replayed over it.
	Documents int64 `json:"documents"`
	Replayed  int64 `json:"replayed"`
	// Created is when the MgorsRestore was created, Done when it was seen Succeeded.
	Created time.Time `json:"created"`
	Done    time.Time `json:"done"`
	// Present are the set's ids and Registers the registers' values read from
	// the restored set (majority read concern, the primary).
	Present   []int64          `json:"present"`
	Registers map[string]int64 `json:"registers"`
	// Error says why the restore or the read of its data failed ("" when
	// both worked); the checker then fails the run.
	Error string `json:"error,omitempty"`
}
