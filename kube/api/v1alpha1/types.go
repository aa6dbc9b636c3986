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
// +kubebuilder:validation:XValidation:rule="!has(self.externalAccess) || !has(self.externalAccess.arbiter) || (has(self.arbiters) && self.arbiters > 0)",message="spec.externalAccess.arbiter needs spec.arbiters: 1 (it is the arbiter's external DNS name)"
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

	// Backup takes MgorsBackups of the cluster on schedules and archives its
	// oplog for point-in-time restores (types_backup_schedule.go,
	// docs/design/backup.md).
	// +optional
	Backup *BackupSpec `json:"backup,omitempty"`

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

// SecretReference names a Secret in the Mgors object's namespace.
type SecretReference struct {
	// Name is the Secret's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
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
