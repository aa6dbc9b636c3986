package v1alpha1

// ExternalAccessType is the kind of the per-member Services that expose the
// members outside the cluster.
// +kubebuilder:validation:Enum=ClusterIP;NodePort;LoadBalancer
type ExternalAccessType string

const (
	// ExternalClusterIP gives each member a Service with a cluster IP (for
	// clients reaching it through something of their own: a mesh, a proxy).
	ExternalClusterIP ExternalAccessType = "ClusterIP"
	// ExternalNodePort gives each member a NodePort Service.
	ExternalNodePort ExternalAccessType = "NodePort"
	// ExternalLoadBalancer gives each member a LoadBalancer Service.
	ExternalLoadBalancer ExternalAccessType = "LoadBalancer"
)

// DefaultHorizon is the replica-set horizon name of spec.externalAccess
// when spec.externalAccess.horizon is not set.
const DefaultHorizon = "external"

// ExternalAccessSpec exposes each member (and the arbiter) through a
// Service of its own, <pod>-external, and gives the replica-set config a
// split horizon (each member's horizons: {<horizon>: "host:port"}), so a
// client outside the cluster that connects by the external names is told
// the external names of the members by hello (docs/design/external-access.md).
//
// MongoDB picks a connection's horizon by the TLS SNI name the client
// sends, so external access needs spec.tls; and mongod refuses IP
// addresses in horizons (SNI carries DNS names only), so a member's
// external address is the DNS name given in members[], else the
// LoadBalancer's ingress host name. A member with neither keeps the
// horizons unset for every member (mongod requires all members to have the
// same horizon names) until it has one.
//
// +kubebuilder:validation:XValidation:rule="!has(self.members) || self.members.all(a, self.members.exists_one(b, b.host == a.host))",message="spec.externalAccess.members[].host must differ from member to member: mongod refuses a host named twice across horizons"
// +kubebuilder:validation:XValidation:rule="!has(self.arbiter) || !has(self.members) || self.members.all(a, a.host != self.arbiter)",message="spec.externalAccess.arbiter must differ from every members[].host: mongod refuses a host named twice across horizons"
type ExternalAccessSpec struct {
	// Type is the kind of the per-member Services: ClusterIP, NodePort or
	// LoadBalancer (the default). Changing it changes the Services in place.
	// +kubebuilder:default=LoadBalancer
	// +optional
	Type ExternalAccessType `json:"type,omitempty"`

	// Horizon is the name of the replica-set horizon that holds the
	// external addresses ("external" by default). It cannot be
	// "__default", which mongod reserves.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9_.-]*$`
	// +kubebuilder:default=external
	// +optional
	Horizon string `json:"horizon,omitempty"`

	// Members are the external DNS names of members by StatefulSet
	// ordinal, for users whose own DNS or load balancers point at them:
	// "host" or "host:port". Without a port, the port of the member's
	// Service is used (the node port for NodePort, 27017 otherwise).
	// +kubebuilder:validation:MaxItems=50
	// +listType=map
	// +listMapKey=ordinal
	// +optional
	Members []ExternalMember `json:"members,omitempty"`

	// Arbiter is the external DNS name of the arbiter (spec.arbiters: 1),
	// "host" or "host:port" as in members[]. mongod requires horizons of
	// every member, the arbiter's too: with NodePort or ClusterIP Services
	// an arbiter without it leaves every member without horizons.
	// +kubebuilder:validation:MaxLength=259
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*(:[0-9]{1,5})?$')",message="spec.externalAccess.arbiter must be a lower-case DNS name with an optional :port, e.g. db-arbiter.example.com:27017"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[0-9.]+(:[0-9]+)?$')",message="spec.externalAccess.arbiter must be a DNS name, not an IP address: mongod refuses IP addresses in horizons (TLS SNI carries DNS names only)"
	// +kubebuilder:validation:XValidation:rule="!self.contains(':') || (int(self.split(':')[1]) >= 1 && int(self.split(':')[1]) <= 65535)",message="spec.externalAccess.arbiter: the port must be 1 to 65535"
	// +optional
	Arbiter string `json:"arbiter,omitempty"`

	// ServiceAnnotations are set on every per-member Service (a cloud's
	// load-balancer options, for example).
	// +optional
	ServiceAnnotations map[string]string `json:"serviceAnnotations,omitempty"`
}

// ExternalMember is the external DNS name of one member.
type ExternalMember struct {
	// Ordinal is the member's StatefulSet ordinal.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=49
	Ordinal int32 `json:"ordinal"`
	// Host is "host" or "host:port", host a DNS name: mongod refuses IP
	// addresses in horizons, as TLS SNI carries only DNS names.
	// +kubebuilder:validation:MaxLength=259
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*(:[0-9]{1,5})?$')",message="spec.externalAccess.members[].host must be a lower-case DNS name with an optional :port, e.g. db-0.example.com:27017"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[0-9.]+(:[0-9]+)?$')",message="spec.externalAccess.members[].host must be a DNS name, not an IP address: mongod refuses IP addresses in horizons (TLS SNI carries DNS names only)"
	// +kubebuilder:validation:XValidation:rule="!self.contains(':') || (int(self.split(':')[1]) >= 1 && int(self.split(':')[1]) <= 65535)",message="spec.externalAccess.members[].host: the port must be 1 to 65535"
	Host string `json:"host"`
}

// HorizonName is the horizon of spec.externalAccess ("" without it).
func (m *Mgors) HorizonName() string {
	if m.Spec.ExternalAccess == nil {
		return ""
	}
	if m.Spec.ExternalAccess.Horizon == "" {
		return DefaultHorizon
	}
	return m.Spec.ExternalAccess.Horizon
}

// ExternalHost is the explicit external host of a data member from
// spec.externalAccess.members ("" when none is given).
func (m *Mgors) ExternalHost(ordinal int32) string {
	if m.Spec.ExternalAccess == nil {
		return ""
	}
	for _, e := range m.Spec.ExternalAccess.Members {
		if e.Ordinal == ordinal {
			return e.Host
		}
	}
	return ""
}
