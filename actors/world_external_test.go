package actors

import (
	"context"
	"testing"

	k8sfake "k8s.io/client-go/kubernetes/fake"

	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
	kubefake "github.com/mgors/operator/kube/client/fake"
	"github.com/mgors/operator/mongo"
)

// Under NodePort Services the members and the arbiter take the DNS names
// the spec gives them, with their node ports; an arbiter without one has no
// address, and the reason names the field to set.
func TestObserveExternalNamesTheArbiter(t *testing.T) {
	ctx := context.Background()
	m := mgors()
	m.Spec.Arbiters = 1
	m.Spec.ExternalAccess = &v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalNodePort, Members: []v1alpha1.ExternalMember{
		{Ordinal: 0, Host: "db-0.example.com"}, {Ordinal: 1, Host: "db-1.example.com"}, {Ordinal: 2, Host: "db-2.example.com"}}}
	kc := k8sfake.NewClientset()
	a := kube.NewApplier(kc)
	for i, pod := range externalPods(m) {
		svc := kube.ExternalService(m, pod)
		svc.Spec.Ports[0].NodePort = int32(31000 + i) // what the API server allocates
		if _, err := a.EnsureExternalService(ctx, svc); err != nil {
			t.Fatal(err)
		}
	}
	w := &KubeWorld{Cache: kubefake.NewReader(kc, nil), Applier: a}
	observe := func() map[string]ExternalObserved {
		t.Helper()
		var o Observation
		var missing []string
		if err := w.observeExternal(m, &o, &missing); err != nil {
			t.Fatal(err)
		}
		return o.External
	}
	arbiter := mongo.ArbiterName(m)
	got := observe()
	if got["demo-0"].Address != "db-0.example.com:31000" || got[arbiter].Address != "" ||
		got[arbiter].Why != "a NodePort Service gives no DNS name: name it in spec.externalAccess.arbiter (mongod refuses IP addresses in horizons)" {
		t.Fatalf("before the arbiter is named: %+v", got)
	}
	m.Spec.ExternalAccess.Arbiter = "arb.example.com"
	if got := observe(); got[arbiter].Address != "arb.example.com:31003" || got[arbiter].Why != "" {
		t.Fatalf("the arbiter named: %+v", got[arbiter])
	}
	if hosts := kube.ExternalHosts(m); len(hosts) != 4 || hosts[3] != "arb.example.com" {
		t.Fatalf("the certificate's external names %v lack the arbiter's", hosts)
	}
}
