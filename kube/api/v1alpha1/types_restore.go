package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// MgorsRestore restores a MgorsBackup into a cluster: the data as it was at
// the backup's end or, with spec.pointInTime, at any later moment the oplog
// archive of the backup's cluster covers (docs/design/backup.md). The
// cluster restored into may be the backup's own or another one; in it, each
// collection the backup holds is dropped and replaced, and the others are
// left as they are.
//
// +genclient
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=mgorsrestores,singular=mgorsrestore,shortName=mgor,scope=Namespaced,categories=all
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.cluster`,description="The Mgors restored into"
// +kubebuilder:printcolumn:name="Backup",type=string,JSONPath=`.spec.backup`,description="The MgorsBackup restored"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`,description="Pending, Running, Succeeded or Failed"
// +kubebuilder:printcolumn:name="Restored-To",type=date,JSONPath=`.status.restoredTo.time`,description="The point in time the data is as of"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MgorsRestore struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec says what to restore, where, and to which point in time. It is
	// fixed at creation: create another MgorsRestore for another restore.
	Spec MgorsRestoreSpec `json:"spec"`
	// Status is what the operator did, written only by the operator.
	Status MgorsRestoreStatus `json:"status,omitempty"`
}

// MgorsRestoreList is a list of MgorsRestore.
//
// +kubebuilder:object:root=true
type MgorsRestoreList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the MgorsRestore objects.
	Items []MgorsRestore `json:"items"`
}

// MgorsRestoreSpec is the restore asked for.
//
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable: a restore is run once; create another MgorsRestore"
type MgorsRestoreSpec struct {
	// Cluster is the name of the Mgors, in the restore's namespace, to
	// restore into: the backup's own cluster or another. Each collection the
	// backup holds is dropped there and replaced.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="spec.cluster must be the name of a Mgors (a DNS label)"
	Cluster string `json:"cluster"`
	// Backup is the name of the MgorsBackup, in the restore's namespace, to
	// restore; it must have Succeeded.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Backup string `json:"backup"`
	// PointInTime, when set, is the moment (the members' clock, UTC) the data
	// is restored as of: the backup is restored, then the oplog archive of
	// the backup's cluster (its spec.backup.pointInTime) is replayed up to
	// the last write at or before it. It must be at or after the backup's
	// end and at or before the newest archived write. Unset: the backup's
	// end.
	// +optional
	PointInTime *metav1.Time `json:"pointInTime,omitempty"`
}

// RestorePhase is where a restore is.
//
// +kubebuilder:validation:Enum=Pending;Running;Succeeded;Failed
type RestorePhase string

// The phases of a restore.
const (
	// RestorePending: not started (the cluster is not Healthy, the backup not
	// Succeeded yet, or a backup or another restore of the cluster runs).
	RestorePending RestorePhase = "Pending"
	// RestoreRunning: the collections are being replaced.
	RestoreRunning RestorePhase = "Running"
	// RestoreSucceeded: the data is as of RestoredTo.
	RestoreSucceeded RestorePhase = "Succeeded"
	// RestoreFailed: it stopped; Message says why. A restore that failed
	// while running leaves the cluster partly restored.
	RestoreFailed RestorePhase = "Failed"
)

// MgorsRestoreStatus is what the operator observed and did.
type MgorsRestoreStatus struct {
	// Phase is Pending, Running, Succeeded or Failed.
	// +optional
	Phase RestorePhase `json:"phase,omitempty"`
	// Message says why the restore is in its phase (the error when Failed).
	// +optional
	Message string `json:"message,omitempty"`
	// Member is the primary restored into.
	// +optional
	Member string `json:"member,omitempty"`
	// StartTime and CompletionTime are when the restore started and finished.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// RestoredTo is the newest write of the source the data holds: the
	// backup's end, or the last archived write at or before spec.pointInTime.
	// +optional
	RestoredTo *OplogPosition `json:"restoredTo,omitempty"`
	// Collections and Documents are what was restored from the backup's
	// dump; Replayed the oplog entries applied over it.
	// +optional
	Collections int32 `json:"collections,omitempty"`
	// +optional
	Documents int64 `json:"documents,omitempty"`
	// +optional
	Replayed int64 `json:"replayed,omitempty"`
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}
