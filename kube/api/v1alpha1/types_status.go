package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Phase is where a cluster is in its lifecycle.
// +kubebuilder:validation:Enum=Provisioning;Initiating;Healthy;Recovering
type Phase string

const (
	// PhaseProvisioning creates the cluster's objects and waits for members to answer.
	PhaseProvisioning Phase = "Provisioning"
	// PhaseInitiating initiates the replica set once and creates the admin user.
	PhaseInitiating Phase = "Initiating"
	// PhaseHealthy is a replica set of the desired shape with a primary.
	PhaseHealthy Phase = "Healthy"
	// PhaseRecovering brings the set back to the desired shape.
	PhaseRecovering Phase = "Recovering"
)

// Condition types of a Mgors.
const (
	// ConditionReady is True when the set has a primary and every desired member is healthy.
	ConditionReady = "Ready"
	// ConditionInitialized is True once the replica set has a config (it never goes back).
	ConditionInitialized = "Initialized"
	// ConditionProgressing is True while the operator is changing the cluster.
	ConditionProgressing = "Progressing"
	// ConditionMajorityLost is True while fewer than a majority of voting members are reachable.
	ConditionMajorityLost = "MajorityLost"
	// ConditionStalled is True when progress waits on something outside the
	// operator (unschedulable pods, a missing storage class, a person's decision);
	// its reason and message say what.
	ConditionStalled = "Stalled"
	// ConditionPaused is True while spec.paused is set.
	ConditionPaused = "Paused"
)

// MgorsStatus is what the operator observed and did.
type MgorsStatus struct {
	// Phase is where the cluster is: Provisioning, Initiating, Healthy or Recovering.
	// +optional
	Phase Phase `json:"phase,omitempty"`

	// Conditions are the cluster's conditions: Ready, Initialized, Progressing,
	// MajorityLost, Stalled, Paused.
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ObservedGeneration is the metadata.generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Members is the members table as last observed.
	// +kubebuilder:validation:MaxItems=51
	// +listType=atomic
	// +optional
	Members []MemberStatus `json:"members,omitempty"`

	// Ready is "healthy members/desired members", for kubectl.
	// +optional
	Ready string `json:"ready,omitempty"`

	// Replicas is the number of member pods, for the scale subresource.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// Selector is the label selector of the member pods, for the scale subresource.
	// +optional
	Selector string `json:"selector,omitempty"`

	// Primary is the member that is PRIMARY, empty when there is none.
	// +optional
	Primary string `json:"primary,omitempty"`

	// ReplicaSetName is the replica set's name.
	// +optional
	ReplicaSetName string `json:"replicaSetName,omitempty"`

	// ConfigVersion is the version of the replica-set config.
	// +optional
	ConfigVersion int64 `json:"configVersion,omitempty"`

	// ConfigTerm is the term of the replica-set config.
	// +optional
	ConfigTerm int64 `json:"configTerm,omitempty"`

	// EventLog is the position of the cluster's event log that the status reflects.
	// +optional
	EventLog EventLogPosition `json:"eventLog,omitempty"`

	// ConnectionString is a mongodb:// URI of the replica set without credentials.
	// +optional
	ConnectionString string `json:"connectionString,omitempty"`
	// Backup is the cluster's backups as the operator last recorded them
	// (spec.backup and the MgorsBackups naming the cluster).
	// +optional
	Backup *BackupStatus `json:"backup,omitempty"`

	// ExternalConnectionString is a mongodb:// URI of the members' external
	// addresses (spec.externalAccess) without credentials, set once every
	// data member has one and the config carries them as its horizon.
	// +optional
	ExternalConnectionString string `json:"externalConnectionString,omitempty"`

	// Version is the MongoDB versions the members run, as their buildInfo
	// reports them (several, comma-separated, during a roll).
	// +optional
	Version string `json:"version,omitempty"`

	// FeatureCompatibilityVersion is the replica set's featureCompatibilityVersion.
	// +optional
	FeatureCompatibilityVersion string `json:"featureCompatibilityVersion,omitempty"`

	// Rotations are the rotations of secrets and TLS under way (at most one
	// of each kind), with their step.
	// +kubebuilder:validation:MaxItems=3
	// +listType=atomic
	// +optional
	Rotations []RotationStatus `json:"rotations,omitempty"`
}

// EventLogPosition is a position in a cluster's event log.
type EventLogPosition struct {
	// Sequence is the sequence number of the last event the status reflects.
	// +optional
	Sequence int64 `json:"sequence,omitempty"`
	// Store names where the log is kept: memory, file or kube.
	// +optional
	Store string `json:"store,omitempty"`
}

// MemberStatus is one member as last observed.
type MemberStatus struct {
	// Name is the member's pod name.
	Name string `json:"name"`
	// Host is the member's host:port in the replica-set config.
	// +optional
	Host string `json:"host,omitempty"`
	// State is the member's replica-set state (PRIMARY, SECONDARY, ARBITER,
	// STARTUP2, RECOVERING, DOWN, ...), or a pod state when it has none yet.
	// +optional
	State string `json:"state,omitempty"`
	// Healthy is whether the member answers and is PRIMARY, SECONDARY or ARBITER.
	// +optional
	Healthy bool `json:"healthy"`
	// OptimeLagSeconds is how far the member's applied optime is behind the primary's.
	// +optional
	OptimeLagSeconds int64 `json:"optimeLagSeconds,omitempty"`
	// Votes is the member's votes in the config.
	// +optional
	Votes int32 `json:"votes"`
	// Priority is the member's priority in the config.
	// +optional
	Priority int32 `json:"priority"`
	// Hidden is whether the member is hidden.
	// +optional
	Hidden bool `json:"hidden,omitempty"`
	// Version is the MongoDB version the member runs (buildInfo).
	// +optional
	Version string `json:"version,omitempty"`
}
