package v1alpha1

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
