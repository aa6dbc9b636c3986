package actors

import (
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo"
)

// Observation is the world as one observe pass saw it: the cluster's
// Kubernetes objects and pods, and each member as MongoDB reports it. The World
// builds it off the actor's mailbox, every call with a deadline; Decide reads it.
type Observation struct {
	// At is when the observation was made.
	At time.Time
	// ObjectsReady is true when the Service, StatefulSets and Secrets exist
	// and match what the spec asks for (the PodDisruptionBudget is Budget's).
	ObjectsReady bool
	// ObjectsMessage says what is missing or different when ObjectsReady is false.
	ObjectsMessage string
	// Certificate is the members' certificate as its Secret holds it (no
	// key); nil without TLS or when the Secret is missing or unreadable.
	Certificate *CertificateView
	// Replicas is the data StatefulSet's spec.replicas, -1 when it does not exist.
	Replicas int32
	// ArbiterReplicas is the arbiters' StatefulSet's spec.replicas, -1 when
	// it does not exist (also when spec.arbiters is 0: a StatefulSet left
	// over is deleted once the arbiter left the config).
	ArbiterReplicas int32
	// Budget is the PodDisruptionBudget's minAvailable, -1 when it does not
	// exist.
	Budget int32
	// Pods are the member and arbiter pods found, by name.
	Pods map[string]PodView
	// Claims are the UIDs of the member pods' data claims, by pod name (a
	// claim being deleted or not yet created is absent; nil when they could
	// not be listed): a new UID is a new, empty volume.
	Claims map[string]string
	// Storage is the sizes of the member volumes (decide_storage.go).
	Storage StorageView
	// Problems are what blocks progress outside the operator (unschedulable
	// pods, a missing storage class, crash loops), from kube.Diagnose.
	Problems []Problem
	// Members are the desired members (and any other member of the config), by host.
	Members map[string]MemberView
	// Config is the newest replica-set config any member holds, nil when none does.
	Config *mongo.Config
	// ConfigFrom is the host Config was read from.
	ConfigFrom string
	// ConfigErr is why reading the config from a member that has one failed:
	// an unreadable config is not "no config", and never leads to an initiate.
	ConfigErr string
	// Status is replSetGetStatus from the primary, or from a member holding the
	// config when there is no primary; nil when none answered.
	Status *mongo.Status
	// Statuses is each reachable member's own replSetGetStatus, for the
	// majority-loss evidence.
	Statuses map[string]*mongo.Status
	// Primary is the host of the writable primary, "" when there is none.
	Primary string
	// FCV is the replica set's featureCompatibilityVersion as the member
	// holding the config reports it, "" when unknown (decide_upgrade.go).
	FCV string
	// AdminUser says whether the admin user exists; nil when not checked (no
	// primary, or not initiated).
	AdminUser *bool
	// OperatorUser says whether the operator's own user exists; nil when
	// not checked (as AdminUser).
	OperatorUser *bool
	// AdminLogin and OperatorLogin say whether the password in each user's
	// Secret opens it (a SCRAM login); nil when not checked (no member to
	// ask, the user not there, its Secret unreadable). OperatorLogin false
	// while the operator authenticates as that user means every other
	// field of this observation was read blind (world_users.go).
	AdminLogin, OperatorLogin *bool
	// Admin and Operator name the two users' Secrets as read: the user name,
	// the Secret and its resourceVersion (never the password).
	Admin, Operator Credential
	// ForceAnnotation is the member a person named to force a reconfig onto,
	// under the Manual majority-loss policy ("" when none).
	ForceAnnotation string
	// ReinitiateApproval is the value of ReinitiateAnnotation ("" when none).
	ReinitiateApproval string
	// RotateKeyfile is the value of RotateKeyfileAnnotation ("" when none).
	RotateKeyfile string
	// RotateCA is the value of RotateCAAnnotation ("" when none).
	RotateCA string
	// Backups are the cluster's MgorsBackups, oldest first (decide_backup.go);
	// BackupsRead is false when they could not be read, so that a backup
	// missing from Backups is known to be deleted only when it is true.
	Backups     []*v1alpha1.MgorsBackup
	BackupsRead bool
	// Restores are the MgorsRestores into the cluster, oldest first, and
	// RestoreBackups the MgorsBackups they name, by name (a name missing:
	// no such backup); RestoresRead as BackupsRead (decide_restore.go).
	Restores       []*v1alpha1.MgorsRestore
	RestoresRead   bool
	RestoreBackups map[string]*v1alpha1.MgorsBackup
	// Archive is the oplog archive goroutine's progress, put in by the
	// actor, not the World (archive.go, decide_archive.go).
	Archive ArchiveProgress
	// KeyfileKeys are the fingerprints of the keyfile Secret's keys, in
	// order (kube.KeyFingerprint); nil when it could not be read.
	KeyfileKeys []string
	// External is each member's external address by pod name, with
	// spec.externalAccess (decide_external.go); nil without it.
	External map[string]ExternalObserved
	// Mongod is each answering member's runtime options that the spec sets,
	// by host; nil when it sets none (decide_config.go).
	Mongod map[string]MongodView
}

// StorageView is what a storage growth looks at: the member StatefulSet's
// claim template and each member's data claim.
type StorageView struct {
	// Template is the storage the member StatefulSet's claim template asks;
	// zero when the StatefulSet does not exist.
	Template resource.Quantity
	// Deleting is true while the member StatefulSet is being deleted (a
	// replace waiting for the garbage collector to orphan its pods).
	Deleting bool
	// Claims are the members' data claims by pod name (nil when they could
	// not be listed); claims of ordinals the StatefulSet no longer runs are
	// here too, as a later scale-up reuses them.
	Claims map[string]ClaimSize
	// Class is the claims' StorageClass, Expandable whether it allows volume
	// expansion: read only while the spec asks more than the template (nil
	// otherwise, or when it could not be read).
	Class      string
	Expandable *bool
}

// ClaimSize is one data claim's requested storage and its capacity
// (status.capacity, raised by the resizer once the volume grew).
type ClaimSize struct {
	Name      string
	Ordinal   int32
	Class     string
	Requested resource.Quantity
	Capacity  resource.Quantity
}

// Credential names a user and the Secret holding its password, at the
// Secret's resourceVersion ("" when the Secret could not be read).
type Credential struct {
	User, Secret, SecretVersion string
}

// PodView is one member pod as observed.
type PodView struct {
	Name     string `json:"name"`
	UID      string `json:"uid,omitempty"`
	Phase    string `json:"phase"`
	Ready    bool   `json:"ready"`
	Deleting bool   `json:"deleting,omitempty"`
	// Outdated is true when the pod runs an older template than its
	// StatefulSet's (kube.PodOutdated): it needs a restart to take the spec.
	Outdated bool `json:"outdated,omitempty"`
	// Node is the node the pod is bound to; NodeReady its Ready condition and
	// NodeNotReadySince when that condition last left True (zero when Ready or
	// unknown).
	Node              string    `json:"node,omitempty"`
	NodeReady         bool      `json:"nodeReady,omitempty"`
	NodeNotReadySince time.Time `json:"nodeNotReadySince,omitzero"`
	// Restarts is the mongod container's restart count; LastExitCode the exit
	// code of its last termination (0 when it never ended): mongod exits 14
	// on a fassert, e.g. once initial sync used up its attempts.
	Restarts     int32 `json:"restarts,omitempty"`
	LastExitCode int32 `json:"lastExitCode,omitempty"`
}

// MemberView is one member as its own hello (and status) reports it.
type MemberView struct {
	// Name is the pod name, Host the config host.
	Name, Host string
	// Arbiter is true for the arbiter member.
	Arbiter bool
	// Answers is true when hello succeeded.
	Answers bool
	// Err is why hello failed.
	Err string
	// HasConfig is true when the member holds a replica-set config naming it.
	HasConfig bool
	// Removed is true when the member holds a config that does not name it:
	// its local database holds such a config (its hello shows none), its own
	// replSetGetStatus answers InvalidReplicaSetConfig (93), or the primary's
	// status shows it REMOVED.
	Removed bool
	// Empty is true when the member answers hello without a config and its
	// own replSetGetStatus says NotYetInitialized (94): a volume that came
	// back empty, before a heartbeat hands it the config.
	Empty bool
	// ConfigVersion is the version of its config.
	ConfigVersion int64
	// State is the replica-set state as the primary's status reports it.
	State mongo.MemberState
	// Primary is true when the member says it is the writable primary.
	Primary bool
	// Version is the member's binary version (buildInfo), "" when unknown.
	Version string
	// LastWrite is the member's own last applied write (hello's lastWrite; a
	// REMOVED member's newest oplog entry).
	LastWrite mongo.OpTime
	// Own* come from the member's own replSetGetStatus, read only for a
	// member that is not PRIMARY, SECONDARY or ARBITER: its state, its
	// infoMessage ("Could not find member to sync from" when too stale) and
	// its initial sync progress (nil when not in initial sync).
	OwnState    mongo.MemberState
	InfoMessage string
	InitialSync *mongo.InitialSyncStatus
}

// answering returns the hosts that answer hello, as the planner wants them.
func (o Observation) answering() mongo.Hosts {
	h := mongo.Hosts{}
	for host, m := range o.Members {
		if m.Answers {
			h[mongo.NormalizeHost(host)] = true
		}
	}
	return h
}
