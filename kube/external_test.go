package kube

import (
	"context"
	"errors"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

func externalMgors(typ v1alpha1.ExternalAccessType) *v1alpha1.Mgors {
	m := &v1alpha1.Mgors{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "db", UID: "u-1"}}
	m.Spec.Members = 3
	m.Spec.ExternalAccess = &v1alpha1.ExternalAccessSpec{Type: typ,
		Members:            []v1alpha1.ExternalMember{{Ordinal: 0, Host: "db-0.example.com"}, {Ordinal: 1, Host: "db-1.example.com:443"}},
		ServiceAnnotations: map[string]string{"lb.example/internal": "false"}}
	return m
}

// The per-member Service selects its one pod by the StatefulSet's
// pod-name label, is owned by the Mgors and carries the annotations.
func TestExternalService(t *testing.T) {
	m := externalMgors(v1alpha1.ExternalNodePort)
	s := ExternalService(m, "demo-1")
	if s.Name != "demo-1-external" || s.Spec.Type != corev1.ServiceTypeNodePort ||
		s.Spec.Selector[appsv1.StatefulSetPodNameLabel] != "demo-1" || len(s.Spec.Selector) != 1 {
		t.Fatalf("service %+v", s)
	}
	if !OwnedBy(s, m) || s.Annotations["lb.example/internal"] != "false" || !s.Spec.PublishNotReadyAddresses {
		t.Errorf("meta %+v", s.ObjectMeta)
	}
}

// An address is a DNS name: explicit (the Service's port when it has
// none), else the load balancer's host name; never an IP.
func TestExternalAddress(t *testing.T) {
	node := &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 27017, NodePort: 31001}}}}
	lb := func(in ...corev1.LoadBalancerIngress) *corev1.Service {
		return &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer},
			Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: in}}}
	}
	cip := &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.0.0.7"}}
	for _, tc := range []struct {
		name, explicit string
		svc            *corev1.Service
		addr, why      string
	}{
		{"explicit with port", "db.example.com:443", nil, "db.example.com:443", ""},
		{"explicit takes the node port", "db.example.com", node, "db.example.com:31001", ""},
		{"explicit on a LoadBalancer", "db.example.com", lb(), "db.example.com:27017", ""},
		{"load balancer host name", "", lb(corev1.LoadBalancerIngress{IP: "1.2.3.4"}, corev1.LoadBalancerIngress{Hostname: "x.elb.example"}), "x.elb.example:27017", ""},
		{"load balancer IP only", "", lb(corev1.LoadBalancerIngress{IP: "1.2.3.4"}), "", "IP address"},
		{"load balancer pending", "", lb(), "", "no address yet"},
		{"node port without a name", "", node, "", "gives no DNS name: name it in spec.externalAccess.members"},
		{"cluster IP without a name", "", cip, "", "gives no DNS name"},
		{"no Service yet", "", nil, "", "does not exist yet"},
	} {
		addr, why := ExternalAddress(tc.explicit, "spec.externalAccess.members", tc.svc)
		if addr != tc.addr || (tc.why == "") != (why == "") || !strings.Contains(why, tc.why) {
			t.Errorf("%s: %q %q, want %q %q", tc.name, addr, why, tc.addr, tc.why)
		}
	}
}

// A type change is made in place; the delete removes only the Mgors' own.
func TestEnsureAndDeleteExternalService(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	a := NewApplier(c)
	m := externalMgors(v1alpha1.ExternalLoadBalancer)
	if _, err := a.EnsureExternalService(ctx, ExternalService(m, "demo-0")); err != nil {
		t.Fatal(err)
	}
	m.Spec.ExternalAccess.Type = v1alpha1.ExternalClusterIP
	changed, err := a.EnsureExternalService(ctx, ExternalService(m, "demo-0"))
	if err != nil || !changed {
		t.Fatalf("type change: %v %v", changed, err)
	}
	got, _ := c.CoreV1().Services("db").Get(ctx, "demo-0-external", metav1.GetOptions{})
	if got.Spec.Type != corev1.ServiceTypeClusterIP {
		t.Errorf("type %s", got.Spec.Type)
	}
	theirs := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "demo-1-external", Namespace: "db"}}
	if _, err := c.CoreV1().Services("db").Create(ctx, theirs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var no *NotOwned
	if err := a.DeleteExternalService(ctx, m, "demo-1-external"); err == nil || !asNotOwned(err, &no) {
		t.Errorf("deleting another's Service: %v", err)
	}
	if err := a.DeleteExternalService(ctx, m, "demo-0-external"); err != nil {
		t.Fatal(err)
	}
	if err := a.DeleteExternalService(ctx, m, "demo-0-external"); err != nil {
		t.Errorf("deleting again: %v", err)
	}
}

// The issued certificate names the explicit external hosts.
func TestMemberDNSNamesExternal(t *testing.T) {
	names := MemberDNSNames(externalMgors(v1alpha1.ExternalNodePort), "cluster.local")
	joined := "," + strings.Join(names, ",") + ","
	if !strings.Contains(joined, ",db-0.example.com,") || !strings.Contains(joined, ",db-1.example.com,") {
		t.Errorf("names %v", names)
	}
}

func asNotOwned(err error, target **NotOwned) bool { return errors.As(err, target) }

// The observation's "outdated" is the ensure's "changed": a Service whose
// ports or publishNotReadyAddresses differ is made right (the actors' own
// comparison looked at the type, selector and annotations only, so such a
// Service was never updated); an allocated node port is no difference.
func TestExternalServiceOutdated(t *testing.T) {
	m := externalMgors(v1alpha1.ExternalNodePort)
	want := ExternalService(m, "demo-0")
	cur := want.DeepCopy()
	cur.Spec.Ports[0].NodePort = 31017
	cur.Spec.ClusterIP = "10.0.0.7"
	if ExternalServiceOutdated(cur, want) {
		t.Error("an allocated node port and cluster IP: seen outdated")
	}
	for name, change := range map[string]func(s *corev1.Service){
		"publishNotReadyAddresses": func(s *corev1.Service) { s.Spec.PublishNotReadyAddresses = false },
		"target port":              func(s *corev1.Service) { s.Spec.Ports[0].TargetPort.StrVal = "other" },
		"type":                     func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeLoadBalancer },
		"selector":                 func(s *corev1.Service) { s.Spec.Selector = map[string]string{"x": "y"} },
		"annotation":               func(s *corev1.Service) { s.Annotations = nil },
	} {
		c := cur.DeepCopy()
		change(c)
		if !ExternalServiceOutdated(c, want) {
			t.Errorf("%s differs: seen up to date", name)
		}
	}
}

// A Service whose node port the API server allocated is not written again
// (the ensure compared the ports with the node port unset in desired, and
// updated every NodePort and LoadBalancer Service on every ensure).
func TestEnsureExternalServiceKeepsTheNodePort(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	a := NewApplier(c)
	m := externalMgors(v1alpha1.ExternalNodePort)
	if _, err := a.EnsureExternalService(ctx, ExternalService(m, "demo-0")); err != nil {
		t.Fatal(err)
	}
	got, _ := c.CoreV1().Services("db").Get(ctx, "demo-0-external", metav1.GetOptions{})
	got.Spec.Ports[0].NodePort = 31017 // the allocator's part
	if _, err := c.CoreV1().Services("db").Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if changed, err := a.EnsureExternalService(ctx, ExternalService(m, "demo-0")); err != nil || changed {
		t.Fatalf("ensure of an unchanged Service: changed %v, %v", changed, err)
	}
	m.Spec.ExternalAccess.Type = v1alpha1.ExternalLoadBalancer
	if changed, err := a.EnsureExternalService(ctx, ExternalService(m, "demo-0")); err != nil || !changed {
		t.Fatalf("type change: changed %v, %v", changed, err)
	}
	got, _ = c.CoreV1().Services("db").Get(ctx, "demo-0-external", metav1.GetOptions{})
	if got.Spec.Ports[0].NodePort != 31017 {
		t.Errorf("NodePort → LoadBalancer: node port %d, want 31017 kept", got.Spec.Ports[0].NodePort)
	}
}
