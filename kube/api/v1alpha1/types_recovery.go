package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
