package kube

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

const defaultDomain = "cluster.local"

// Options are the operator-wide settings of the builders, and the one
// per-call choice of the actor (how many member pods).
type Options struct {
	// ClusterDomain is the cluster's DNS domain, in members' host names
	// (see Domain). Empty means cluster.local.
	ClusterDomain string
	// Replicas is the member StatefulSet's replicas; nil means spec.members.
	// The actor sets it, since it grows and shrinks the set one member at a time.
	Replicas *int32
}

// Domain is the cluster's DNS domain, cluster.local unless set: pass it to
// MemberHost, ArbiterHost and ConnectionString.
func (o Options) Domain() string {
	if o.ClusterDomain == "" {
		return defaultDomain
	}
	return o.ClusterDomain
}

// ArbiterName is the arbiters' StatefulSet, and the prefix of their pods.
func ArbiterName(m *v1alpha1.Mgors) string { return m.Name + "-arbiter" }

// ArbiterHost is the host:port an arbiter is known by in the replica-set
// config, from the same headless Service as the members.
func ArbiterHost(m *v1alpha1.Mgors, ordinal int32, clusterDomain string) string {
	if clusterDomain == "" {
		clusterDomain = defaultDomain
	}
	return fmt.Sprintf("%s-%d.%s.%s.svc.%s:%d", ArbiterName(m), ordinal, m.ServiceName(), m.Namespace, clusterDomain, v1alpha1.MongoPort)
}

// PVCName is the claim of a member's data volume, as the StatefulSet names it.
func PVCName(m *v1alpha1.Mgors, ordinal int32) string {
	return fmt.Sprintf("%s-%s", DataVolume, m.PodName(ordinal))
}

// HeadlessService gives every member and arbiter a stable DNS name
// (<pod>.<service>.<namespace>.svc.<domain>). It publishes pods that are not
// ready, since members must find each other to become ready at all, and it
// selects arbiters too, as they are hosts of the config like the members.
func HeadlessService(m *v1alpha1.Mgors) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: objectMeta(m, m.ServiceName(), ""),
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			PublishNotReadyAddresses: true,
			Selector:                 ClusterSelectorLabels(m),
			Ports: []corev1.ServicePort{{
				Name:       PortName,
				Port:       v1alpha1.MongoPort,
				TargetPort: intstr.FromString(PortName),
				Protocol:   corev1.ProtocolTCP,
			}},
		},
	}
}

// ConnectionString is a mongodb:// URI of the data-bearing members, without
// credentials (it goes into status).
func ConnectionString(m *v1alpha1.Mgors, clusterDomain string) string {
	if clusterDomain == "" {
		clusterDomain = defaultDomain
	}
	n := members(m)
	hosts := make([]string, n)
	for i := range n {
		hosts[i] = m.MemberHost(i, clusterDomain)
	}
	uri := "mongodb://" + strings.Join(hosts, ",") + "/?replicaSet=" + m.ReplSetName() + "&authSource=admin"
	if m.Spec.TLS != nil {
		uri += "&tls=true"
	}
	return uri
}
