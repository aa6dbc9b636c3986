package actors

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	"github.com/mgors/operator/kube"
	mgorsfake "github.com/mgors/operator/kube/client/fake"
	"github.com/mgors/operator/mongo"
)

// KubeWorld reads the budget and an arbiters' StatefulSet left over after
// spec.arbiters went to 0, sets the budget it is told, and deletes the
// arbiters' StatefulSet; an arbiter pod older than spec.arbiterResources is
// outdated, and its StatefulSet's template too.
func TestKubeWorldBudgetAndArbiters(t *testing.T) {
	ctx := context.Background()
	m := mgors()
	m.Spec.Arbiters = 1
	arbiters := kube.ArbiterStatefulSet(m)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: mongo.ArbiterName(m), Namespace: m.Namespace,
		Labels: kube.Labels(m, kube.ComponentArbiter), Annotations: map[string]string{
			kube.TemplateHashAnnotation: arbiters.Spec.Template.Annotations[kube.TemplateHashAnnotation]}}}
	kc := k8sfake.NewClientset(arbiters, pod, kube.PodDisruptionBudget(m, 3))
	w := &KubeWorld{Cache: mgorsfake.NewReader(kc, nil), Applier: kube.NewApplier(kc), ClusterDomain: "cluster.local"}

	m.Spec.ArbiterResources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}}
	o, err := w.Observe(ctx, m, mongo.Desired(m, "cluster.local"), AuthKeyfile)
	if err != nil {
		t.Fatal(err)
	}
	if o.Budget != 3 || o.ArbiterReplicas != 1 || !strings.Contains(o.ObjectsMessage, "an up-to-date pod template in StatefulSet demo-arbiter") {
		t.Fatalf("budget %d, arbiters %d, objects: %s", o.Budget, o.ArbiterReplicas, o.ObjectsMessage)
	}
	if _, err := w.Applier.EnsureStatefulSet(ctx, kube.ArbiterStatefulSet(m)); err != nil { // EnsureObjects' part
		t.Fatal(err)
	}
	if o, err = w.Observe(ctx, m, mongo.Desired(m, "cluster.local"), AuthKeyfile); err != nil {
		t.Fatal(err)
	}
	if !o.Pods[pod.Name].Outdated {
		t.Fatalf("arbiter pod %+v; want it outdated, to be restarted", o.Pods[pod.Name])
	}

	m.Spec.Arbiters = 0
	if o, err = w.Observe(ctx, m, mongo.Desired(m, "cluster.local"), AuthKeyfile); err != nil {
		t.Fatal(err)
	}
	if o.ArbiterReplicas != 1 || o.Pods[pod.Name].Outdated {
		t.Fatalf("spec.arbiters 0: arbiters %d, pod %+v; want the leftover seen, its pod not rolled", o.ArbiterReplicas, o.Pods[pod.Name])
	}
	if err := w.Act(ctx, m, Action{Kind: ActSetBudget, MinAvailable: 2}); err != nil {
		t.Fatal(err)
	}
	if err := w.Act(ctx, m, Action{Kind: ActDeleteArbiters, Host: kube.ArbiterName(m)}); err != nil {
		t.Fatal(err)
	}
	if o, err = w.Observe(ctx, m, mongo.Desired(m, "cluster.local"), AuthKeyfile); err != nil {
		t.Fatal(err)
	}
	if o.Budget != 2 || o.ArbiterReplicas != -1 {
		t.Fatalf("after the actions: budget %d, arbiters %d; want 2 and gone", o.Budget, o.ArbiterReplicas)
	}
	if _, err := kc.AppsV1().StatefulSets(m.Namespace).Get(ctx, kube.ArbiterName(m), metav1.GetOptions{}); err == nil {
		t.Fatal("the arbiters' StatefulSet is still there")
	}
}
