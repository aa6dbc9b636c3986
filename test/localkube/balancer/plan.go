// Package balancer is localkube's load balancer, what a cloud provider's is to
// Services of type LoadBalancer (docs/design/localkube.md, "Load balancer"): it
// gives each such Service of the default class an address of its own on the host's
// loopback (Range) and a host name (<svc>.<ns>.lb.localkube), records both in
// status.loadBalancer.ingress, and forwards TCP on every Service port at that
// address to the Service's ready endpoints.
//
// Decide is the whole decision, a pure function of the Services, the
// EndpointSlices and the addresses held before; Forwarder carries out its
// listeners; Run watches the API server and writes the statuses.
package balancer

import (
	"cmp"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
)

// HostSuffix ends every ingress host name: <svc>.<ns>.lb.localkube. Nothing
// resolves it: host clients map it to the ingress IP the status carries.
const HostSuffix = "lb.localkube"

// Range holds the ingress addresses: all of 127.0.0.0/8 is local on Linux, so
// any host process can reach an address of it with no setup, and nothing else on
// the machine uses this /16.
var Range = netip.MustParsePrefix("127.244.0.0/16")

// Served reports whether the load balancer serves svc: type LoadBalancer, the
// default class (spec.loadBalancerClass unset: another class is another
// implementation's), not being deleted.
func Served(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.LoadBalancerClass == nil && svc.DeletionTimestamp == nil
}

// HostName is svc's ingress host name.
func HostName(svc *corev1.Service) string {
	return svc.Name + "." + svc.Namespace + "." + HostSuffix
}

// Listener is one forwarded port: connections to Addr go to one of Backends
// ("ip:port", sorted), round robin.
type Listener struct {
	Service  string // namespace/name
	UID      types.UID
	Addr     netip.AddrPort
	Backends []string
}

// Status is a status.loadBalancer.ingress to write; nil Ingress clears it.
type Status struct {
	Namespace, Name string
	UID             types.UID
	Ingress         []corev1.LoadBalancerIngress
}

// Plan is what Decide wants: the listeners (sorted by address) and the statuses
// that differ from what the Services have.
type Plan struct {
	Listeners []Listener
	Status    []Status
	// Held is every served Service's address, for the next Decide.
	Held map[types.UID]netip.Addr
	// Unaddressed names served Services left without an address (Range is full).
	Unaddressed []string
}

// Decide plans the load balancer from the Services, the EndpointSlices and the
// addresses held by the previous plan (nil after a start):
//
//  1. A served Service keeps its address: the one held, else the one its status
//     records (a restart finds them there), if it lies in Range and no older
//     Service (creation time, then namespace/name) holds it. The others get the
//     lowest free address of Range.
//  2. Its status is one ingress: that IP, its host name, ipMode Proxy (the
//     traffic goes through this proxy: kube-proxy must not capture the IP).
//  3. Each TCP port of it is a listener at IP:port whose backends are the ready
//     endpoints of its EndpointSlices, on the slice port of the same name.
//  4. A Service not served (deleted, another type, another class) that still
//     has an ingress of ours gets its status cleared.
func Decide(services []*corev1.Service, endpoints []*discoveryv1.EndpointSlice, held map[types.UID]netip.Addr) Plan {
	var served []*corev1.Service
	plan := Plan{Held: map[types.UID]netip.Addr{}}
	for _, svc := range services {
		if Served(svc) {
			served = append(served, svc)
		} else if ours(svc.Status.LoadBalancer.Ingress) {
			plan.Status = append(plan.Status, Status{Namespace: svc.Namespace, Name: svc.Name, UID: svc.UID})
		}
	}
	slices.SortFunc(served, func(a, b *corev1.Service) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return cmp.Compare(key(a), key(b))
	})
	taken := map[netip.Addr]bool{}
	for _, svc := range served {
		for _, a := range []netip.Addr{held[svc.UID], recorded(svc)} {
			if usable(a) && !taken[a] {
				plan.Held[svc.UID], taken[a] = a, true
				break
			}
		}
	}
	next := Range.Addr().Next()
	for _, svc := range served {
		if _, ok := plan.Held[svc.UID]; ok {
			continue
		}
		for usable(next) && taken[next] {
			next = next.Next()
		}
		if !usable(next) {
			plan.Unaddressed = append(plan.Unaddressed, key(svc))
			continue
		}
		plan.Held[svc.UID], taken[next] = next, true
	}
	for _, svc := range served {
		addr, ok := plan.Held[svc.UID]
		if !ok {
			continue
		}
		want := Ingress(svc, addr)
		if !sameIngress(svc.Status.LoadBalancer.Ingress, want) {
			plan.Status = append(plan.Status, Status{Namespace: svc.Namespace, Name: svc.Name, UID: svc.UID, Ingress: want})
		}
		for _, p := range svc.Spec.Ports {
			if p.Protocol != "" && p.Protocol != corev1.ProtocolTCP {
				continue
			}
			plan.Listeners = append(plan.Listeners, Listener{Service: key(svc), UID: svc.UID,
				Addr: netip.AddrPortFrom(addr, uint16(p.Port)), Backends: Backends(svc, p, endpoints)})
		}
	}
	slices.SortFunc(plan.Listeners, func(a, b Listener) int { return a.Addr.Compare(b.Addr) })
	return plan
}

// Ingress is the status.loadBalancer.ingress of svc at addr.
func Ingress(svc *corev1.Service, addr netip.Addr) []corev1.LoadBalancerIngress {
	mode := corev1.LoadBalancerIPModeProxy
	return []corev1.LoadBalancerIngress{{IP: addr.String(), Hostname: HostName(svc), IPMode: &mode}}
}

// Backends are the "ip:port" of the ready endpoints behind port p of svc,
// sorted: IPv4 EndpointSlices labelled with the Service's name, the slice port
// named as p, endpoints whose ready condition is true or unknown (as kube-proxy
// reads it; publishNotReadyAddresses makes the controller mark every one ready).
func Backends(svc *corev1.Service, p corev1.ServicePort, endpoints []*discoveryv1.EndpointSlice) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range endpoints {
		if s.Namespace != svc.Namespace || s.Labels[discoveryv1.LabelServiceName] != svc.Name || s.AddressType != discoveryv1.AddressTypeIPv4 {
			continue
		}
		port := int32(0)
		for _, sp := range s.Ports {
			name := ""
			if sp.Name != nil {
				name = *sp.Name
			}
			tcp := sp.Protocol == nil || *sp.Protocol == corev1.ProtocolTCP
			if name == p.Name && tcp && sp.Port != nil {
				port = *sp.Port
			}
		}
		if port == 0 {
			continue
		}
		for _, e := range s.Endpoints {
			if (e.Conditions.Ready != nil && !*e.Conditions.Ready) || len(e.Addresses) == 0 {
				continue
			}
			b := net.JoinHostPort(e.Addresses[0], strconv.Itoa(int(port)))
			if !seen[b] {
				seen[b] = true
				out = append(out, b)
			}
		}
	}
	slices.Sort(out)
	return out
}

func key(svc *corev1.Service) string { return svc.Namespace + "/" + svc.Name }

// usable: in Range, neither its first nor its last address.
func usable(a netip.Addr) bool {
	return a.IsValid() && Range.Contains(a) && a != Range.Addr() && a.Next().IsValid() && Range.Contains(a.Next())
}

// recorded is the ingress IP svc's status has from this load balancer, if any.
func recorded(svc *corev1.Service) netip.Addr {
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if a, err := netip.ParseAddr(in.IP); err == nil && in.Hostname == HostName(svc) {
			return a
		}
	}
	return netip.Addr{}
}

// ours: an ingress this load balancer wrote (its host names end in HostSuffix).
func ours(ingress []corev1.LoadBalancerIngress) bool {
	for _, in := range ingress {
		if strings.HasSuffix(in.Hostname, "."+HostSuffix) {
			return true
		}
	}
	return false
}

func sameIngress(have, want []corev1.LoadBalancerIngress) bool {
	if len(have) != len(want) {
		return false
	}
	for i := range have {
		h, w := have[i], want[i]
		if h.IP != w.IP || h.Hostname != w.Hostname || len(h.Ports) != len(w.Ports) ||
			(h.IPMode == nil) != (w.IPMode == nil) || (h.IPMode != nil && *h.IPMode != *w.IPMode) {
			return false
		}
	}
	return true
}
