package balancer

import (
	"net/netip"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func lbService(name string, age int, ports ...corev1.ServicePort) *corev1.Service {
	if len(ports) == 0 {
		ports = []corev1.ServicePort{{Name: "mongodb", Port: 27017, Protocol: corev1.ProtocolTCP}}
	}
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name),
			CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(age) * time.Second))},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: ports},
	}
}

func withStatus(svc *corev1.Service, ingress []corev1.LoadBalancerIngress) *corev1.Service {
	svc.Status.LoadBalancer.Ingress = ingress
	return svc
}

func addr(s string) netip.Addr { return netip.MustParseAddr(s) }

func slice(svc, port string, number int32, endpoints ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: svc + "-x", Namespace: "ns", Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To(port), Port: ptr.To(number), Protocol: ptr.To(corev1.ProtocolTCP)}},
		Endpoints:   endpoints,
	}
}

func endpoint(ip string, ready *bool) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ready}}
}

func TestServedOnlyDefaultClassLoadBalancers(t *testing.T) {
	cases := map[string]struct {
		edit func(*corev1.Service)
		want bool
	}{
		"default class": {func(*corev1.Service) {}, true},
		"another class": {func(s *corev1.Service) { s.Spec.LoadBalancerClass = ptr.To("example.com/lb") }, false},
		"NodePort":      {func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort }, false},
		"ClusterIP":     {func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeClusterIP }, false},
		"being deleted": {func(s *corev1.Service) { s.DeletionTimestamp = ptr.To(metav1.NewTime(t0)) }, false},
		"ExternalName":  {func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeExternalName }, false},
	}
	for name, c := range cases {
		svc := lbService("a", 0)
		c.edit(svc)
		if got := Served(svc); got != c.want {
			t.Errorf("%s: Served = %v, want %v", name, got, c.want)
		}
	}
}

func TestDecideGivesEachServiceItsOwnAddressAndName(t *testing.T) {
	a, b := lbService("a", 1), lbService("b", 2)
	plan := Decide([]*corev1.Service{b, a}, nil, nil)
	if plan.Held[a.UID] != addr("127.244.0.1") || plan.Held[b.UID] != addr("127.244.0.2") {
		t.Fatalf("held %v: want the older Service first, from 127.244.0.1", plan.Held)
	}
	if len(plan.Status) != 2 {
		t.Fatalf("statuses %+v, want two", plan.Status)
	}
	in := plan.Status[0].Ingress
	if plan.Status[0].Name != "a" || len(in) != 1 || in[0].IP != "127.244.0.1" || in[0].Hostname != "a.ns.lb.localkube" ||
		in[0].IPMode == nil || *in[0].IPMode != corev1.LoadBalancerIPModeProxy {
		t.Errorf("status of a: %+v", plan.Status[0])
	}
	if len(plan.Listeners) != 2 || plan.Listeners[0].Addr != netip.MustParseAddrPort("127.244.0.1:27017") ||
		plan.Listeners[1].Addr != netip.MustParseAddrPort("127.244.0.2:27017") {
		t.Errorf("listeners %+v", plan.Listeners)
	}
}

func TestDecideKeepsRecordedAddressesAcrossARestart(t *testing.T) {
	a := withStatus(lbService("a", 1), Ingress(lbService("a", 1), addr("127.244.0.9")))
	b := lbService("b", 2)
	plan := Decide([]*corev1.Service{a, b}, nil, nil)
	if plan.Held[a.UID] != addr("127.244.0.9") || plan.Held[b.UID] != addr("127.244.0.1") {
		t.Fatalf("held %v: a keeps its recorded address, b gets the lowest free", plan.Held)
	}
	if len(plan.Status) != 1 || plan.Status[0].Name != "b" {
		t.Errorf("statuses %+v: only b's changes", plan.Status)
	}
	// The next pass with what the first held and b's status written: nothing to do.
	b = withStatus(b, Ingress(b, addr("127.244.0.1")))
	again := Decide([]*corev1.Service{a, b}, nil, plan.Held)
	if len(again.Status) != 0 || !reflect.DeepEqual(again.Held, plan.Held) {
		t.Errorf("second pass: statuses %+v, held %v", again.Status, again.Held)
	}
}

func TestDecideGivesADuplicatedAddressToTheOlderService(t *testing.T) {
	a, b := lbService("a", 1), lbService("b", 2)
	b = withStatus(b, Ingress(b, addr("127.244.0.5")))
	a = withStatus(a, Ingress(a, addr("127.244.0.5")))
	plan := Decide([]*corev1.Service{b, a}, nil, nil)
	if plan.Held[a.UID] != addr("127.244.0.5") || plan.Held[b.UID] != addr("127.244.0.1") {
		t.Errorf("held %v", plan.Held)
	}
}

func TestDecideIgnoresRecordedAddressesOutsideTheRange(t *testing.T) {
	a := lbService("a", 1)
	a = withStatus(a, []corev1.LoadBalancerIngress{{IP: "10.0.0.1", Hostname: HostName(a)}})
	b := lbService("b", 2)
	b = withStatus(b, Ingress(b, addr("127.244.255.255"))) // the range's last address
	plan := Decide([]*corev1.Service{a, b}, nil, nil)
	if plan.Held[a.UID] != addr("127.244.0.1") || plan.Held[b.UID] != addr("127.244.0.2") {
		t.Errorf("held %v", plan.Held)
	}
}

func TestDecideClearsTheStatusOfServicesNoLongerServed(t *testing.T) {
	gone := withStatus(lbService("gone", 1), Ingress(lbService("gone", 1), addr("127.244.0.1")))
	gone.Spec.Type = corev1.ServiceTypeClusterIP
	other := withStatus(lbService("other", 2), []corev1.LoadBalancerIngress{{Hostname: "elb.example.com"}})
	other.Spec.LoadBalancerClass = ptr.To("example.com/lb")
	plan := Decide([]*corev1.Service{gone, other}, nil, map[types.UID]netip.Addr{gone.UID: addr("127.244.0.1")})
	if len(plan.Listeners) != 0 || len(plan.Held) != 0 {
		t.Errorf("listeners %+v, held %v: want none", plan.Listeners, plan.Held)
	}
	if len(plan.Status) != 1 || plan.Status[0].Name != "gone" || plan.Status[0].Ingress != nil {
		t.Errorf("statuses %+v: want gone's cleared, other's (another class) left alone", plan.Status)
	}
}

func TestBackendsAreTheReadyEndpointsOnTheNamedPort(t *testing.T) {
	svc := lbService("a", 1, corev1.ServicePort{Name: "mongodb", Port: 27017}, corev1.ServicePort{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP})
	slices := []*discoveryv1.EndpointSlice{
		slice("a", "mongodb", 27018, endpoint("10.244.1.3", nil), endpoint("10.244.2.3", ptr.To(true)), endpoint("10.244.3.3", ptr.To(false))),
		slice("a", "mongodb", 27018, endpoint("10.244.1.3", nil), endpoint("10.244.1.2", nil)), // a second slice, one address again
		slice("a", "other", 9999, endpoint("10.244.1.9", nil)),
		slice("b", "mongodb", 27017, endpoint("10.244.1.8", nil)),
	}
	plan := Decide([]*corev1.Service{svc}, slices, nil)
	if len(plan.Listeners) != 1 {
		t.Fatalf("listeners %+v: want one (UDP is not forwarded)", plan.Listeners)
	}
	want := []string{"10.244.1.2:27018", "10.244.1.3:27018", "10.244.2.3:27018"}
	if got := plan.Listeners[0].Backends; !reflect.DeepEqual(got, want) {
		t.Errorf("backends %v, want %v", got, want)
	}
}

func TestDecideLeavesServicesUnaddressedWhenTheRangeIsFull(t *testing.T) {
	held := map[types.UID]netip.Addr{}
	var svcs []*corev1.Service
	a := Range.Addr().Next()
	for i := 0; Range.Contains(a.Next()); i++ {
		s := lbService("s"+a.String(), i)
		svcs = append(svcs, s)
		held[s.UID] = a
		a = a.Next()
	}
	late := lbService("late", len(svcs)+1)
	plan := Decide(append(svcs, late), nil, held)
	if len(plan.Unaddressed) != 1 || plan.Unaddressed[0] != "ns/late" {
		t.Errorf("unaddressed %v", plan.Unaddressed)
	}
}
