package kube

import (
	"context"
	"fmt"
	"maps"
	"net"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// ComponentExternal marks the per-member Services of spec.externalAccess.
const ComponentExternal = "external"

// ExternalServiceName is the Service that exposes one member pod outside
// the cluster: "<pod>-external" (the data members' <name>-<ordinal>, the
// arbiter's <name>-arbiter-0).
func ExternalServiceName(pod string) string { return pod + "-external" }

// ExternalService exposes one member pod (selected by the StatefulSet's
// pod-name label) through a Service of spec.externalAccess.type. It
// publishes the pod while it is not ready, as the headless Service does:
// a member that is not ready is still a host of the config.
func ExternalService(m *v1alpha1.Mgors, pod string) *corev1.Service {
	meta := objectMeta(m, ExternalServiceName(pod), ComponentExternal)
	typ := corev1.ServiceTypeLoadBalancer
	if e := m.Spec.ExternalAccess; e != nil {
		if e.Type != "" {
			typ = corev1.ServiceType(e.Type)
		}
		meta.Annotations = maps.Clone(e.ServiceAnnotations)
	}
	return &corev1.Service{
		ObjectMeta: meta,
		Spec: corev1.ServiceSpec{
			Type:                     typ,
			PublishNotReadyAddresses: true,
			Selector:                 map[string]string{appsv1.StatefulSetPodNameLabel: pod},
			Ports: []corev1.ServicePort{{
				Name:       PortName,
				Port:       v1alpha1.MongoPort,
				TargetPort: intstr.FromString(PortName),
				Protocol:   corev1.ProtocolTCP,
			}},
		},
	}
}

// EnsureExternalService creates or updates a per-member Service: its type,
// selector, ports and annotations change in place (the API server keeps
// the cluster IP and allocates or frees the node port). Annotations
// removed from spec.externalAccess.serviceAnnotations stay on the Service
// (other controllers annotate Services too).
func (a *Applier) EnsureExternalService(ctx context.Context, desired *corev1.Service) (bool, error) {
	return ensure(ctx, a, a.Client.CoreV1().Services(desired.Namespace), "Service", desired,
		func(cur, next *corev1.Service) (bool, error) {
			return updateExternalService(cur, next, desired), nil
		})
}

// ExternalServiceOutdated reports whether the per-member Service cur lacks
// what desired asks: what EnsureExternalService would change, so the
// observation and the ensure never disagree.
func ExternalServiceOutdated(cur, desired *corev1.Service) bool {
	return updateExternalService(cur, cur.DeepCopy(), desired)
}

// updateExternalService sets on next (a copy of cur) what desired asks and
// cur lacks; true when anything differed.
func updateExternalService(cur, next, desired *corev1.Service) bool {
	diff := false
	// The node port the API server allocated (unset in desired) is kept: it
	// is the member's external port, and no difference.
	ports := make([]corev1.ServicePort, len(desired.Spec.Ports))
	for i, p := range desired.Spec.Ports {
		if p.NodePort == 0 && i < len(cur.Spec.Ports) && cur.Spec.Ports[i].Name == p.Name {
			p.NodePort = cur.Spec.Ports[i].NodePort
		}
		ports[i] = p
	}
	if len(cur.Spec.Ports) != len(ports) || !equality.Semantic.DeepDerivative(ports, cur.Spec.Ports) {
		next.Spec.Ports = ports
		diff = true
	}
	if cur.Spec.Type != desired.Spec.Type {
		next.Spec.Type = desired.Spec.Type
		if desired.Spec.Type == corev1.ServiceTypeClusterIP {
			for i := range next.Spec.Ports {
				next.Spec.Ports[i].NodePort = 0 // a ClusterIP Service has none
			}
			next.Spec.ExternalTrafficPolicy = ""
			next.Spec.AllocateLoadBalancerNodePorts = nil
		}
		diff = true
	}
	if !maps.Equal(cur.Spec.Selector, desired.Spec.Selector) {
		next.Spec.Selector = maps.Clone(desired.Spec.Selector)
		diff = true
	}
	if cur.Spec.PublishNotReadyAddresses != desired.Spec.PublishNotReadyAddresses {
		next.Spec.PublishNotReadyAddresses = desired.Spec.PublishNotReadyAddresses
		diff = true
	}
	for k, v := range desired.Annotations {
		if cur.Annotations[k] != v {
			if next.Annotations == nil {
				next.Annotations = map[string]string{}
			}
			next.Annotations[k] = v
			diff = true
		}
	}
	return diff
}

// DeleteExternalService deletes a per-member Service of m (a member scaled
// away, or spec.externalAccess removed), preconditioned on the UID read.
// One already gone is success; one not controlled by m is refused.
func (a *Applier) DeleteExternalService(ctx context.Context, m *v1alpha1.Mgors, name string) error {
	return deleteControlled(ctx, a, a.Client.CoreV1().Services(m.Namespace), m, "Service", name, metav1.DeleteOptions{})
}

// ExternalAddress is the external "host:port" of a member: explicit (from
// field, spec.externalAccess.members or spec.externalAccess.arbiter, "host"
// taking the Service's port) or the LoadBalancer's ingress host name. IP
// addresses are not addresses here: mongod refuses them in horizons (TLS
// SNI carries DNS names only). It returns "" and why when there is none
// yet.
func ExternalAddress(explicit, field string, svc *corev1.Service) (string, string) {
	port := int32(v1alpha1.MongoPort)
	if svc != nil && svc.Spec.Type == corev1.ServiceTypeNodePort {
		port = 0
		if len(svc.Spec.Ports) > 0 {
			port = svc.Spec.Ports[0].NodePort
		}
	}
	if explicit != "" {
		if _, _, err := net.SplitHostPort(explicit); err == nil {
			return explicit, ""
		}
		if port == 0 {
			return "", "its NodePort Service has no node port yet"
		}
		return net.JoinHostPort(explicit, strconv.Itoa(int(port))), ""
	}
	if svc == nil {
		return "", "its Service does not exist yet"
	}
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		return "", fmt.Sprintf("a %s Service gives no DNS name: name it in %s (mongod refuses IP addresses in horizons)", svc.Spec.Type, field)
	}
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if in.Hostname != "" {
			return net.JoinHostPort(in.Hostname, strconv.Itoa(int(port))), ""
		}
	}
	if len(svc.Status.LoadBalancer.Ingress) > 0 {
		return "", "its load balancer has an IP address and no host name: name it in " + field + " (mongod refuses IP addresses in horizons)"
	}
	return "", "its load balancer has no address yet"
}

// ExternalHosts are the DNS names of m's explicit external addresses, the
// members' then the arbiter's, for the members' certificate (tls.go).
func ExternalHosts(m *v1alpha1.Mgors) []string {
	if m.Spec.ExternalAccess == nil {
		return nil
	}
	var out []string
	explicit := make([]string, 0, len(m.Spec.ExternalAccess.Members)+1)
	for _, e := range m.Spec.ExternalAccess.Members {
		explicit = append(explicit, e.Host)
	}
	if a := m.Spec.ExternalAccess.Arbiter; a != "" {
		explicit = append(explicit, a)
	}
	for _, h := range explicit {
		if host, _, err := net.SplitHostPort(h); err == nil {
			h = host
		}
		out = append(out, h)
	}
	return out
}
