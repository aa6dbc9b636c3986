package scale

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	"github.com/mgors/operator/actors/eventlog"
	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
	mgorsfake "github.com/mgors/operator/kube/client/fake"
)

// statefulSets stands in for the StatefulSet controller on a fake
// clientset: it makes each StatefulSet's pods from its template.
func statefulSets(ctx context.Context, t *testing.T, kc *k8sfake.Clientset, ns string) {
	w, err := kc.AppsV1().StatefulSets(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Error(err)
		return
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		sts, ok := ev.Object.(metav1.Object)
		if !ok || ev.Type == watch.Deleted {
			continue
		}
		s, err := kc.AppsV1().StatefulSets(ns).Get(ctx, sts.GetName(), metav1.GetOptions{})
		if err != nil || s.Spec.Replicas == nil {
			continue
		}
		for i := range *s.Spec.Replicas {
			p := &corev1.Pod{ObjectMeta: *s.Spec.Template.ObjectMeta.DeepCopy(), Spec: *s.Spec.Template.Spec.DeepCopy()}
			p.Namespace, p.Name, p.UID = ns, fmt.Sprintf("%s-%d", s.Name, i), "pod-"+s.UID
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: s.Name, UID: s.UID}}
			_, _ = kc.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		}
	}
}

// TestMgorsRowOnFakes runs the operator's pieces as RunMgors wires them
// on fake clientsets, with the harness's members and kubelet: two clusters
// become Healthy, and a member killed reaches the probe as the cluster's
// next append. (The spec change needs a real API server: a fake does not
// bump metadata.generation.)
func TestMgorsRowOnFakes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two clusters' actors to Healthy, through a fault and back: about a minute")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kc, mc := k8sfake.NewClientset(), mgorsfake.NewClientset()
	members := NewMembers()
	kubelet := &Kubelet{Client: kc, Namespace: "db"}
	go kubelet.Run(ctx)
	go statefulSets(ctx, t, kc, "db")
	recorder, stop := kube.NewEventBroadcaster(ctx, kc)
	defer stop()
	env := &Env{Namespace: "db", Kube: kc, Mgors: mc, Store: &Probe{Store: eventlog.NewMemory()}, Requests: &Requests{}, Observations: &Observations{}, Log: zerolog.Nop()}
	env.Informers = kube.NewInformers(kc, mc, kube.InformerOptions{Namespace: "db", ClusterScoped: true})
	env.World = newWorld(env.Informers, kc, mc, recorder, members, zerolog.Nop())
	var clusters []*v1alpha1.Mgors
	for i := range 2 {
		m := newMgors("db", i, 1)
		m.UID, m.Generation = k8stypes.UID(fmt.Sprintf("uid-%d", i)), 1 // a fake assigns neither
		members.Add(m, clusterDomain)
		got, err := mc.Mgorses("db").Create(ctx, m, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		clusters = append(clusters, got)
	}
	// Started after the creates: a fake clientset's watch does not replay
	// what was created between the informer's list and its watch.
	done := make(chan error, 1)
	go func() { done <- RunMgors(ctx, env) }()
	h := &harness{ns: "db", kc: kc, mc: mc}
	if n := h.waitHealthy(ctx, 2, 2*time.Minute); n != 2 {
		t.Fatalf("%d of 2 clusters Healthy", n)
	}
	f := &faults{h: h, env: env, members: members, kubelet: kubelet, clusters: clusters,
		c: Config{Faults: 2, Spacing: 0, Wait: time.Minute, Log: zerolog.Nop()}}
	reactions, missed, _ := f.run(ctx, f.kill)
	if len(reactions) != 2 || missed != 0 {
		t.Errorf("kill: %d reactions, %d missed", len(reactions), missed)
	}
	if seen, not := f.deliveries(); len(seen) != 2 || not != 0 {
		t.Errorf("kill: the harness's watch saw %d, missed %d, want 2 and 0", len(seen), not)
	}
	if n := h.waitHealthy(ctx, 2, 2*time.Minute); n != 2 {
		t.Fatalf("after the kill: %d of 2 clusters Healthy", n)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("the operator's pieces ended with %v", err)
	}
}
