package v1alpha1

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The schema's defaults, repeated for Go: objects built in Go (tests, fakes, the
// operator reading an object written before a default existed) get the same
// values as the API server gives. A test keeps the two equal.
const (
	DefaultMembers         int32 = 3
	DefaultVersion               = "7.0.14"
	DefaultStorageSize           = "10Gi"
	DefaultGracePeriod           = 5 * time.Minute
	MongoPort                    = 27017
	KeyfileSecretKey             = "keyfile"
	AdminUsernameSecretKey       = "username"
	AdminPasswordSecretKey       = "password"
)

// Default fills in every field the schema defaults, and nothing else.
func (m *Mgors) Default() {
	s := &m.Spec
	if s.Members == 0 {
		s.Members = DefaultMembers
	}
	if s.Version == "" {
		s.Version = DefaultVersion
	}
	if s.Storage.Size == nil {
		q := resource.MustParse(DefaultStorageSize)
		s.Storage.Size = &q
	}
	if s.Storage.Reclaim == "" {
		s.Storage.Reclaim = VolumeRetain
	}
	if s.Scheduling.AntiAffinity == "" {
		s.Scheduling.AntiAffinity = AntiAffinityPreferred
	}
	if s.TLS != nil && s.TLS.Mode == "" {
		s.TLS.Mode = "requireTLS"
	}
	if s.Recovery.MajorityLoss == "" {
		s.Recovery.MajorityLoss = RecoveryManual
	}
	if s.Recovery.GracePeriod == nil {
		s.Recovery.GracePeriod = &metav1.Duration{Duration: DefaultGracePeriod}
	}
}

// ReplSetName is the replica set's name: spec.replicaSetName, or the object's name.
func (m *Mgors) ReplSetName() string {
	if m.Spec.ReplicaSetName != "" {
		return m.Spec.ReplicaSetName
	}
	return m.Name
}

// MemberImage is the members' container image: spec.image, or the official
// image of spec.version.
func (m *Mgors) MemberImage() string {
	if m.Spec.Image != "" {
		return m.Spec.Image
	}
	v := m.Spec.Version
	if v == "" {
		v = DefaultVersion
	}
	return "mongo:" + v
}

// StorageSize is each member's volume size: spec.storage.size, or the default.
func (m *Mgors) StorageSize() resource.Quantity {
	if m.Spec.Storage.Size != nil {
		return m.Spec.Storage.Size.DeepCopy()
	}
	return resource.MustParse(DefaultStorageSize)
}

// KeyfileSecretName is the Secret holding the members' keyfile.
func (m *Mgors) KeyfileSecretName() string {
	if r := m.Spec.Auth.KeyfileSecretRef; r != nil && r.Name != "" {
		return r.Name
	}
	return m.Name + "-keyfile"
}

// AdminSecretName is the Secret holding the admin user's credentials.
func (m *Mgors) AdminSecretName() string {
	if r := m.Spec.Auth.AdminCredentialsSecretRef; r != nil && r.Name != "" {
		return r.Name
	}
	return m.Name + "-admin"
}

// OperatorSecretName is the Secret holding the operator's own user's
// credentials (the keys of the admin Secret); the operator generates it and
// reads it, and a person may change its password: the operator applies it.
func (m *Mgors) OperatorSecretName() string { return m.Name + "-operator" }

// ServiceName is the headless Service that gives members stable DNS names.
func (m *Mgors) ServiceName() string { return m.Name + "-svc" }

// PodName is the member pod with the given StatefulSet ordinal.
func (m *Mgors) PodName(ordinal int32) string { return fmt.Sprintf("%s-%d", m.Name, ordinal) }

// MemberHost is the host:port a member is known by in the replica-set config:
// its stable DNS name, never a pod IP, so a rescheduled pod keeps its identity.
func (m *Mgors) MemberHost(ordinal int32, clusterDomain string) string {
	return fmt.Sprintf("%s.%s.%s.svc.%s:%d", m.PodName(ordinal), m.ServiceName(), m.Namespace, clusterDomain, MongoPort)
}

// Options returns the member options for an ordinal, zero if none are given.
func (m *Mgors) Options(ordinal int32) MemberOptions {
	for _, o := range m.Spec.MemberOptions {
		if o.Ordinal == ordinal {
			return o
		}
	}
	return MemberOptions{Ordinal: ordinal}
}
