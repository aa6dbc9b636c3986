package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MgorsBackup is one logical backup of a Mgors's replica set, taken from a
// secondary into an S3-compatible object store: every database but local and
// config, and the oplog entries applied while it was read, so that it
// restores to one point in time (docs/design/backup.md).
//
// +genclient
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=mgorsbackups,singular=mgorsbackup,shortName=mgob,scope=Namespaced,categories=all
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.cluster`,description="The Mgors backed up"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`,description="Pending, Running, Succeeded or Failed"
// +kubebuilder:printcolumn:name="Size",type=string,JSONPath=`.status.size`,description="The bytes the backup's objects hold"
// +kubebuilder:printcolumn:name="Start",type=date,JSONPath=`.status.startTime`,description="When the dump started"
// +kubebuilder:printcolumn:name="End",type=date,JSONPath=`.status.completionTime`,description="When the dump finished"
// +kubebuilder:printcolumn:name="Restorable",type=string,JSONPath=`.status.pointInTimeRange`,description="The points in time (the members' clock, UTC) the backup restores to"
// +kubebuilder:printcolumn:name="Prefix",type=string,JSONPath=`.status.prefix`,priority=1,description="Where the backup's objects are in the bucket"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MgorsBackup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says which cluster to back up and where to. It is fixed at creation:
	// a backup is taken once; create another MgorsBackup for another one.
	Spec MgorsBackupSpec `json:"spec"`
	// Status is what the operator did, written only by the operator.
	Status MgorsBackupStatus `json:"status,omitempty"`
}

// MgorsBackupList is a list of MgorsBackup.
//
// +kubebuilder:object:root=true
type MgorsBackupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the MgorsBackup objects.
	Items []MgorsBackup `json:"items"`
}

// MgorsBackupSpec is the backup asked for.
//
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable: a backup is taken once; create another MgorsBackup"
type MgorsBackupSpec struct {
	// Cluster is the name of the Mgors, in the backup's namespace, to back up.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="spec.cluster must be the name of a Mgors (a DNS label)"
	Cluster string `json:"cluster"`
	// Store is the S3-compatible object store the backup goes to.
	Store BackupStore `json:"store"`
}

// BackupStore is an S3-compatible object store and the credential to write it.
//
// +kubebuilder:validation:XValidation:rule="!has(self.caSecretRef) || !has(self.tls) || self.tls",message="spec.store.caSecretRef needs spec.store.tls"
type BackupStore struct {
	// Endpoint is the store's host or host:port, without a scheme
	// (spec.store.tls chooses https or http): "s3.eu-west-1.amazonaws.com",
	// "s3.backup.svc:9000".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?(:[0-9]{1,5})?$')",message="spec.store.endpoint must be host or host:port, without a scheme or a path (spec.store.tls chooses https)"
	Endpoint string `json:"endpoint"`
	// Bucket is the bucket the objects go to; it must exist.
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$')",message="spec.store.bucket must be an S3 bucket name: 3 to 63 lower-case letters, digits, dots and hyphens"
	Bucket string `json:"bucket"`
	// Prefix, when set, is put before every key: the backup's objects are
	// under <prefix>/<namespace>/<cluster>/<backup name>/.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.endsWith('/') && !self.contains('//')",message="spec.store.prefix must not start or end with '/' nor hold '//'"
	// +optional
	Prefix string `json:"prefix,omitempty"`
	// Region is signed into every request; "us-east-1" when empty (servers
	// other than AWS accept any).
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Region string `json:"region,omitempty"`
	// CredentialsSecretRef names a Secret in the backup's namespace holding
	// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, which sign every request.
	// The operator reads it when the backup runs; its values appear nowhere else.
	CredentialsSecretRef corev1.LocalObjectReference `json:"credentialsSecretRef"`
	// TLS reaches the store over https (the default); false over plain http.
	// +kubebuilder:default=true
	// +optional
	TLS *bool `json:"tls,omitempty"`
	// CASecretRef names a Secret whose ca.crt is the store's CA, trusted
	// instead of the system's roots.
	// +optional
	CASecretRef *corev1.LocalObjectReference `json:"caSecretRef,omitempty"`
}

// BackupPhase is where a backup is.
//
// +kubebuilder:validation:Enum=Pending;Running;Succeeded;Failed
type BackupPhase string

// The phases of a backup.
const (
	// BackupPending: not started (the cluster has no healthy member to read yet).
	BackupPending BackupPhase = "Pending"
	// BackupRunning: the dump runs.
	BackupRunning BackupPhase = "Running"
	// BackupSucceeded: the manifest is written; the backup restores.
	BackupSucceeded BackupPhase = "Succeeded"
	// BackupFailed: it stopped; Message says why. Objects it wrote stay, without a manifest.
	BackupFailed BackupPhase = "Failed"
)

// OplogPosition is a position in the replica set's oplog: the optime of an
// entry and the wall clock the primary wrote it with.
type OplogPosition struct {
	// Seconds and Increment are the entry's timestamp.
	Seconds   int64 `json:"seconds"`
	Increment int64 `json:"increment"`
	// Term is the entry's election term.
	Term int64 `json:"term"`
	// Time is the entry's wall clock.
	// +optional
	Time *metav1.Time `json:"time,omitempty"`
}

// MgorsBackupStatus is what the operator observed and did.
type MgorsBackupStatus struct {
	// Phase is Pending, Running, Succeeded or Failed.
	// +optional
	Phase BackupPhase `json:"phase,omitempty"`
	// Message says why the backup is in its phase (the error when Failed).
	// +optional
	Message string `json:"message,omitempty"`
	// Member is the member that was read (a secondary when one was healthy).
	// +optional
	Member string `json:"member,omitempty"`
	// Prefix is the key prefix of the backup's objects in the bucket.
	// +optional
	Prefix string `json:"prefix,omitempty"`
	// SizeBytes is the bytes of the backup's objects; Size the same for people
	// ("312Ki").
	// +optional
	SizeBytes int64 `json:"sizeBytes,omitempty"`
	// +optional
	Size string `json:"size,omitempty"`
	// StartTime and CompletionTime are when the dump started and finished.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Start is the newest oplog entry before the dump read anything, End the
	// newest after it read everything: restoring replays (Start, End], so the
	// data is as the set was at End.
	// +optional
	Start *OplogPosition `json:"start,omitempty"`
	// +optional
	End *OplogPosition `json:"end,omitempty"`
	// PointInTimeRange is the points in time the backup restores to, as
	// "FROM..TO" in RFC 3339 (the members' clock). A dump restores to End;
	// continuous oplog archiving will extend TO.
	// +optional
	PointInTimeRange string `json:"pointInTimeRange,omitempty"`
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}
