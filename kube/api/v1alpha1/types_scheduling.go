package v1alpha1

import corev1 "k8s.io/api/core/v1"

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
