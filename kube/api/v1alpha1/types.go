// Package v1alpha1 holds the Mgors API: one MongoDB replica set, declared by a user,
// run and healed by the operator.
//
// The schema that the API server enforces is generated from these types by
// controller-gen (`make manifests`) into deploy/crd; the markers below are the
// source of truth for validation, so a rule lives in one place.
//
// +kubebuilder:object:generate=true
// +groupName=mgors.io
package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Mgors is a MongoDB replica set managed by the Mgors operator.
//
// +genclient
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=mgorses,singular=mgors,shortName=mgo,scope=Namespaced,categories=all
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.members,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`,description="Where the cluster is in its lifecycle"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.ready`,description="Healthy members over desired members"
// +kubebuilder:printcolumn:name="Primary",type=string,JSONPath=`.status.primary`,description="The member that is PRIMARY"
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`,priority=1,description="MongoDB version"
// +kubebuilder:printcolumn:name="Running",type=string,JSONPath=`.status.version`,priority=1,description="The MongoDB versions the members run (buildInfo)"
// +kubebuilder:printcolumn:name="FCV",type=string,JSONPath=`.status.featureCompatibilityVersion`,priority=1,description="The replica set's featureCompatibilityVersion"
// +kubebuilder:printcolumn:name="Cache",type=string,JSONPath=`.spec.config.wiredTigerCacheSizeGB`,priority=1,description="WiredTiger cache size in GB (spec.config)"
// +kubebuilder:printcolumn:name="Storage",type=string,JSONPath=`.spec.storage.size`,priority=1,description="Each member's volume size"
// +kubebuilder:printcolumn:name="External",type=string,JSONPath=`.status.externalConnectionString`,priority=1,description="The connection string for clients outside the cluster (spec.externalAccess)"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Mgors struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the replica set the user asks for.
	// +kubebuilder:default={}
	Spec MgorsSpec `json:"spec,omitempty"`
	// Status is what the operator observed and did, written only by the operator.
	Status MgorsStatus `json:"status,omitempty"`
}

// MgorsList is a list of Mgors.
//
// +kubebuilder:object:root=true
type MgorsList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the Mgors objects.
	Items []Mgors `json:"items"`
}

// MgorsSpec is the desired replica set.
//
// +kubebuilder:validation:XValidation:rule="!has(self.replicaSetName) || self.replicaSetName.size() > 0",message="spec.replicaSetName must not be empty when set"
// +kubebuilder:validation:XValidation:rule="has(oldSelf.replicaSetName) == has(self.replicaSetName) && (!has(self.replicaSetName) || self.replicaSetName == oldSelf.replicaSetName)",message="spec.replicaSetName is immutable: a replica set cannot be renamed"
// +kubebuilder:validation:XValidation:rule="!has(self.memberOptions) || self.memberOptions.all(m, m.ordinal < self.members)",message="spec.memberOptions[].ordinal must be less than spec.members"
// +kubebuilder:validation:XValidation:rule="!has(self.arbiters) || self.arbiters == 0 || self.members >= 2",message="spec.arbiters needs at least 2 data-bearing spec.members"
// +kubebuilder:validation:XValidation:rule="!has(self.memberOptions) || self.memberOptions.exists(m, !has(m.priority) || m.priority > 0) || self.memberOptions.size() < self.members",message="spec.memberOptions must leave at least one member electable (priority > 0)"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.tls) || has(self.tls) || (has(oldSelf.tls.mode) && oldSelf.tls.mode == 'allowTLS')",message="spec.tls can be removed only when spec.tls.mode is allowTLS: step the mode down first (requireTLS, preferTLS, allowTLS), so clients move to plain connections while members still serve both"
// +kubebuilder:validation:XValidation:rule="!has(self.externalAccess) || has(self.tls)",message="spec.externalAccess needs spec.tls: MongoDB chooses a client's horizon by the TLS SNI name it connects with, so without TLS outside clients would be told the internal member names"
// +kubebuilder:validation:XValidation:rule="!has(self.externalAccess) || !has(self.externalAccess.members) || self.externalAccess.members.all(e, e.ordinal < self.members)",message="spec.externalAccess.members[].ordinal must be less than spec.members"
type MgorsSpec struct {
	// Members is the number of data-bearing members of the replica set. The
	// operator grows and shrinks the set one member at a time, and never lets a
	// step lose the voting majority. Beyond seven, members join without a vote.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=50
	// +kubebuilder:default=3
	// +optional
	Members int32 `json:"members,omitempty"`

	// Version is the MongoDB server version, "MAJOR.MINOR" or "MAJOR.MINOR.PATCH",
	// with a major version from 5 to 8. It chooses the image unless spec.image is set.
	// A change rolls the members one at a time (secondaries first, the primary
	// after a step-down), then sets the featureCompatibilityVersion once every
	// member runs it. One major version at a time; a version below the set's
	// featureCompatibilityVersion is refused (condition Stalled, reason
	// VersionRefused) and nothing is rolled.
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[5-8][.][0-9]+([.][0-9]+)?$')",message="spec.version must be a MongoDB version MAJOR.MINOR[.PATCH] with major 5 to 8, e.g. 7.0.14"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[5-8][.]') || !oldSelf.matches('^[5-8][.]') || int(self.split('.')[0]) <= int(oldSelf.split('.')[0]) + 1",message="spec.version may move up one major version at a time (6.0 to 7.0, then 8.0)"
	// +kubebuilder:default="7.0.14"
	// +optional
	Version string `json:"version,omitempty"`

	// Image overrides the container image of the members. Empty means the
	// official image for spec.version ("mongo:<version>").
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Image string `json:"image,omitempty"`

	// ReplicaSetName is the replica set's name (the config's _id and --replSet).
	// Empty means the Mgors object's name. It cannot change once set.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9][a-zA-Z0-9_-]*$`
	// +optional
	ReplicaSetName string `json:"replicaSetName,omitempty"`

	// Storage is each member's data volume.
	// +kubebuilder:default={}
	// +optional
	Storage StorageSpec `json:"storage,omitempty"`

	// Resources are the CPU and memory requests and limits of each member's
	// mongod container. A change rolls out one member at a time, primary last.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// Scheduling places the members on nodes.
	// +kubebuilder:default={}
	// +optional
	Scheduling SchedulingSpec `json:"scheduling,omitempty"`

	// Arbiters is the number of arbiters (a vote, no data) added to the
	// data-bearing members: 0 or 1, as MongoDB allows one arbiter by default.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	// +optional
	Arbiters int32 `json:"arbiters,omitempty"`

	// ArbiterResources are the CPU and memory requests and limits of the
	// arbiter's mongod container. Unset, a small default (50m CPU and 256Mi
	// memory requested, 512Mi memory limit), as an arbiter holds no data.
	// Ignored while spec.arbiters is 0. A change restarts the arbiter once
	// every member is healthy. Quantities are checked by the schema; a request
	// above its limit is refused by Kubernetes when the arbiter pod is created,
	// and reported as PodCreateFailed (a CEL rule comparing quantities of an
	// unbounded map exceeds the API server's cost budget).
	// +optional
	ArbiterResources corev1.ResourceRequirements `json:"arbiterResources,omitempty"`

	// MemberOptions tune single members by StatefulSet ordinal: hidden or
	// non-voting members, priorities and tags. Members without an entry vote
	// (up to seven voters) with priority 1.
	// +kubebuilder:validation:MaxItems=50
	// +listType=map
	// +listMapKey=ordinal
	// +optional
	MemberOptions []MemberOptions `json:"memberOptions,omitempty"`

	// ReplicaSet holds the replica-set settings users tune; the rest keep
	// MongoDB's defaults.
	// +optional
	ReplicaSet ReplicaSetSettings `json:"replicaSet,omitempty"`

	// Auth names the Secrets that hold the members' shared keyfile and the admin
	// credentials. The operator generates them when they do not exist.
	// +kubebuilder:default={}
	// +optional
	Auth AuthSpec `json:"auth,omitempty"`

	// TLS turns on TLS for client and member traffic.
	// +optional
	TLS *TLSSpec `json:"tls,omitempty"`

	// ExternalAccess exposes each member outside the cluster through a
	// Service of its own and gives the replica set a split horizon with the
	// members' external names (types_external.go). It needs spec.tls.
	// +optional
	ExternalAccess *ExternalAccessSpec `json:"externalAccess,omitempty"`

	// Config is a validated subset of mongod's options: the WiredTiger cache
	// size, the profiler and server parameters. Options mongod reads only at
	// startup roll the members; runtime parameters are applied without a
	// restart (docs/design/mongod-config.md). The oplog's size is
	// spec.storage.oplogSizeMB.
	// +optional
	Config *MongodConfig `json:"config,omitempty"`

	// Recovery is the policy for disasters MongoDB cannot heal by itself.
	// +kubebuilder:default={}
	// +optional
	Recovery RecoverySpec `json:"recovery,omitempty"`

	// PodLabels are added to every member pod.
	// +optional
	PodLabels map[string]string `json:"podLabels,omitempty"`

	// PodAnnotations are added to every member pod.
	// +optional
	PodAnnotations map[string]string `json:"podAnnotations,omitempty"`

	// Paused stops the operator from acting on this cluster: it keeps observing
	// and writing status, and changes nothing, so a person can take over.
	// +optional
	Paused bool `json:"paused,omitempty"`
}

// VolumeReclaim says what happens to members' volumes when the Mgors is deleted.
// +kubebuilder:validation:Enum=Retain;Delete
type VolumeReclaim string

const (
	// VolumeRetain keeps the volumes (the default): data outlives the Mgors.
	VolumeRetain VolumeReclaim = "Retain"
	// VolumeDelete deletes the volumes with the Mgors.
	VolumeDelete VolumeReclaim = "Delete"
)

// StorageSpec is each member's data volume.
//
// +kubebuilder:validation:XValidation:rule="!has(self.size) || quantity(string(self.size)).isGreaterThan(quantity('0'))",message="spec.storage.size must be a positive quantity, e.g. 10Gi"
// +kubebuilder:validation:XValidation:rule="has(oldSelf.storageClassName) == has(self.storageClassName) && (!has(self.storageClassName) || self.storageClassName == oldSelf.storageClassName)",message="spec.storage.storageClassName is immutable: volumes cannot move to another storage class"
// +kubebuilder:validation:XValidation:rule="!has(self.size) || !has(oldSelf.size) || quantity(string(self.size)).compareTo(quantity(string(oldSelf.size))) >= 0",message="spec.storage.size cannot shrink: volumes can only grow"
type StorageSpec struct {
	// Size is the capacity of each member's volume. It may grow, never shrink.
	// Growing it expands every member's volume online, without restarting a
	// member; the StorageClass must allow volume expansion (allowVolumeExpansion).
	// +kubebuilder:default="10Gi"
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`

	// StorageClassName is the StorageClass of the volumes; empty means the
	// cluster's default class. It cannot change once set.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`

	// Reclaim says what happens to the volumes when the Mgors is deleted:
	// Retain (the default) keeps them, Delete removes them.
	// +kubebuilder:default=Retain
	// +optional
	Reclaim VolumeReclaim `json:"reclaim,omitempty"`

	// OplogSizeMB is the size of each member's oplog in megabytes, passed to
	// mongod as --oplogSize. Unset means mongod's default (5% of the disk,
	// 990 MB to 50 GB). mongod uses it only when it creates the oplog; a
	// change of 990 MB or more resizes the running members' oplogs with
	// replSetResizeOplog, without a restart (mongod refuses less than
	// 990 MB at run time: a smaller size applies to new members only). A
	// small oplog makes a member that was away fall too stale to catch up
	// sooner.
	// +kubebuilder:validation:Minimum=1
	// +optional
	OplogSizeMB *int32 `json:"oplogSizeMB,omitempty"`
}

// AntiAffinity says how strongly members are spread over nodes.
// +kubebuilder:validation:Enum=Preferred;Required;None
type AntiAffinity string

const (
	// AntiAffinityPreferred spreads members over nodes when it can (the default).
	AntiAffinityPreferred AntiAffinity = "Preferred"
	// AntiAffinityRequired never puts two members on one node.
	AntiAffinityRequired AntiAffinity = "Required"
	// AntiAffinityNone leaves placement to the scheduler.
	AntiAffinityNone AntiAffinity = "None"
)

// SchedulingSpec places the members on nodes.
type SchedulingSpec struct {
	// AntiAffinity spreads members over nodes by kubernetes.io/hostname:
	// Preferred (default), Required or None. Ignored when Affinity sets a pod
	// anti-affinity of its own.
	// +kubebuilder:default=Preferred
	// +optional
	AntiAffinity AntiAffinity `json:"antiAffinity,omitempty"`

	// Affinity is added to the member pods as given.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// Tolerations are added to the member pods.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// NodeSelector limits the members to nodes with these labels.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// PriorityClassName is the member pods' priority class.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
}

// MemberOptions tune one member, chosen by its StatefulSet ordinal.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.hidden) && self.hidden) || (has(self.priority) && self.priority == 0)",message="spec.memberOptions[].priority must be 0 when hidden is true"
// +kubebuilder:validation:XValidation:rule="!has(self.votes) || self.votes == 1 || (has(self.priority) && self.priority == 0)",message="spec.memberOptions[].priority must be 0 when votes is 0"
type MemberOptions struct {
	// Ordinal is the member's StatefulSet ordinal (pod NAME-<ordinal>).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=49
	Ordinal int32 `json:"ordinal"`

	// Hidden members replicate and vote but are invisible to clients and never
	// become primary; they need priority 0.
	// +optional
	Hidden *bool `json:"hidden,omitempty"`

	// Votes is 1 (a voting member) or 0 (non-voting, needs priority 0). At most
	// seven members vote; the operator makes members beyond that non-voting.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	// +optional
	Votes *int32 `json:"votes,omitempty"`

	// Priority is the member's election priority, 0 (never primary) to 1000.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	// +optional
	Priority *int32 `json:"priority,omitempty"`

	// Tags are the member's replica-set tags, for read preferences and write concerns.
	// +kubebuilder:validation:MaxProperties=32
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
}

// ReplicaSetSettings are the replica-set config settings users tune.
type ReplicaSetSettings struct {
	// ElectionTimeoutMillis is how long a secondary waits without hearing from
	// a primary before it calls an election. MongoDB's default is 10000.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600000
	// +optional
	ElectionTimeoutMillis *int32 `json:"electionTimeoutMillis,omitempty"`

	// HeartbeatIntervalMillis is how often members heartbeat each other.
	// MongoDB's default is 2000.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=60000
	// +optional
	HeartbeatIntervalMillis *int32 `json:"heartbeatIntervalMillis,omitempty"`

	// HeartbeatTimeoutSecs is how long a heartbeat may take before the member is
	// considered unreachable. MongoDB's default is 10.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	// +optional
	HeartbeatTimeoutSecs *int32 `json:"heartbeatTimeoutSecs,omitempty"`

	// CatchUpTimeoutMillis bounds a new primary's catch-up: -1 waits without
	// limit (MongoDB's default), 0 skips catch-up.
	// +kubebuilder:validation:Minimum=-1
	// +optional
	CatchUpTimeoutMillis *int32 `json:"catchUpTimeoutMillis,omitempty"`

	// ChainingAllowed lets secondaries replicate from other secondaries.
	// MongoDB's default is true.
	// +optional
	ChainingAllowed *bool `json:"chainingAllowed,omitempty"`
}

// SecretReference names a Secret in the Mgors object's namespace.
type SecretReference struct {
	// Name is the Secret's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// AuthSpec names the Secrets of the replica set's authentication. Authentication
// is always on: members authenticate each other with the keyfile and clients as
// users.
type AuthSpec struct {
	// KeyfileSecretRef names the Secret whose key "keyfile" holds the members'
	// shared key. Empty means "<name>-keyfile", generated when absent.
	// +optional
	KeyfileSecretRef *SecretReference `json:"keyfileSecretRef,omitempty"`

	// AdminCredentialsSecretRef names the Secret whose keys "username" and
	// "password" are the admin user's credentials. Empty means "<name>-admin",
	// generated when absent.
	// +optional
	AdminCredentialsSecretRef *SecretReference `json:"adminCredentialsSecretRef,omitempty"`
}

// TLSMode is how members treat TLS connections.
// +kubebuilder:validation:Enum=requireTLS;preferTLS;allowTLS
type TLSMode string

// TLSSpec turns on TLS for client and member traffic.
// +kubebuilder:validation:XValidation:rule="self.mode == oldSelf.mode || self.mode == 'preferTLS' || oldSelf.mode == 'preferTLS'",message="spec.tls.mode moves one step at a time: allowTLS, preferTLS, requireTLS (members are restarted one by one)"
// +kubebuilder:validation:XValidation:rule="has(self.caSecretRef) == has(oldSelf.caSecretRef) && (!has(self.caSecretRef) || self.caSecretRef.name == oldSelf.caSecretRef.name)",message="spec.tls.caSecretRef cannot change while TLS is on: members restarted one by one would not trust each other; rotate the CA inside its Secret instead (ca.crt holding the old and the new CA, then certificates of the new one, then the new CA alone) or, for the operator's CA, annotate mgors.io/rotate-ca"
type TLSSpec struct {
	// Mode is mongod's --tlsMode: requireTLS (the default), preferTLS or allowTLS.
	// +kubebuilder:default=requireTLS
	// +optional
	Mode TLSMode `json:"mode,omitempty"`

	// CertificateSecretRef names a kubernetes.io/tls Secret (tls.crt, tls.key,
	// and ca.crt unless caSecretRef is given: the layout cert-manager writes)
	// valid for every DNS name of every member and arbiter, for server and
	// client authentication (members present it to each other). Empty means
	// the operator issues the certificate from a CA it keeps per cluster
	// (docs/design/security.md).
	// +optional
	CertificateSecretRef *SecretReference `json:"certificateSecretRef,omitempty"`

	// CASecretRef names a Secret whose key "ca.crt" is the CA that signed the
	// certificates. Empty means the ca.crt of the certificate Secret.
	// +optional
	CASecretRef *SecretReference `json:"caSecretRef,omitempty"`
}

// RecoveryPolicy is what the operator may do when a majority of voting members is lost.
// +kubebuilder:validation:Enum=Manual;Automatic
type RecoveryPolicy string

const (
	// RecoveryManual waits for a person (the default): the operator reports the
	// evidence and forces nothing.
	RecoveryManual RecoveryPolicy = "Manual"
	// RecoveryAutomatic lets the operator force a reconfig onto the reachable
	// member with the newest data once the grace period has passed.
	RecoveryAutomatic RecoveryPolicy = "Automatic"
)

// RecoverySpec is the policy for losing the voting majority.
//
// +kubebuilder:validation:XValidation:rule="!has(self.gracePeriod) || duration(self.gracePeriod) >= duration('30s')",message="spec.recovery.gracePeriod must be at least 30s"
type RecoverySpec struct {
	// MajorityLoss is Manual (the default: report and wait for a person) or
	// Automatic (force-reconfigure onto the survivor with the newest optime after
	// GracePeriod, recording the writes at risk).
	// +kubebuilder:default=Manual
	// +optional
	MajorityLoss RecoveryPolicy `json:"majorityLoss,omitempty"`

	// GracePeriod is how long the majority must stay lost before an Automatic
	// policy acts, at least 30s. Default 5m.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=duration
	// +kubebuilder:default="5m"
	// +optional
	GracePeriod *metav1.Duration `json:"gracePeriod,omitempty"`

	// NodeLossGracePeriod, when set, is how long a member pod's node may stay
	// NotReady before the operator force-deletes the pod (grace period 0) so
	// the StatefulSet recreates it on another node. Unset (the default): never;
	// the pods stay Terminating until the node comes back or a person acts, as
	// Kubernetes does for every StatefulSet. Force-deleting is safe only when
	// the node is really gone (not merely partitioned): its mongod must not run.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=duration
	// +optional
	NodeLossGracePeriod *metav1.Duration `json:"nodeLossGracePeriod,omitempty"`
}

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
