package kube

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// The arbiters' StatefulSet goes with its pods (background propagation),
// preconditioned on its UID; gone is success, another incarnation's is
// refused.
func TestDeleteStatefulSet(t *testing.T) {
	ctx := context.Background()
	m := sample(func(m *v1alpha1.Mgors) { m.Spec.Arbiters = 1 })
	set := ArbiterStatefulSet(m)
	set.UID = "arbiter-uid"
	c := fake.NewClientset(set, StatefulSet(m, Options{}))
	a := NewApplier(c)
	other := sample(func(m *v1alpha1.Mgors) { m.UID = "other" })
	var no *NotOwned
	if err := a.DeleteStatefulSet(ctx, other, ArbiterName(m)); !errors.As(err, &no) {
		t.Fatalf("deleting another incarnation's set: %v", err)
	}
	if err := a.DeleteStatefulSet(ctx, m, ArbiterName(m)); err != nil {
		t.Fatal(err)
	}
	var del k8stesting.DeleteActionImpl
	for _, act := range c.Actions() {
		if d, ok := act.(k8stesting.DeleteActionImpl); ok {
			del = d
		}
	}
	opts := del.DeleteOptions
	if del.Name != ArbiterName(m) || opts.PropagationPolicy == nil || *opts.PropagationPolicy != metav1.DeletePropagationBackground ||
		opts.Preconditions == nil || *opts.Preconditions.UID != "arbiter-uid" {
		t.Fatalf("delete %s with %+v, want the arbiters' set, background, preconditioned on its UID", del.Name, opts)
	}
	if _, err := c.AppsV1().StatefulSets("ns").Get(ctx, m.Name, metav1.GetOptions{}); err != nil {
		t.Error("the members' StatefulSet went too")
	}
	if err := a.DeleteStatefulSet(ctx, m, ArbiterName(m)); err != nil {
		t.Errorf("already gone: %v", err)
	}
}

func TestDeletePVCs(t *testing.T) {
	ctx := context.Background()
	retain := sample()
	c := fake.NewClientset(pvc(retain, 0, "10Gi", true))
	if _, err := NewApplier(c).DeletePVCs(ctx, retain, []int32{0}); !errors.Is(err, ErrVolumesRetained) {
		t.Errorf("err = %v, want ErrVolumesRetained", err)
	}
	if n := writes(c, "persistentvolumeclaims"); len(n) != 0 {
		t.Errorf("volumes written under Retain: %v", n)
	}

	del := sample(func(m *v1alpha1.Mgors) { m.Spec.Storage.Reclaim = v1alpha1.VolumeDelete })
	c = fake.NewClientset(pvc(del, 3, "10Gi", true), pvc(del, 4, "10Gi", false))
	a := NewApplier(c)
	got, err := a.DeletePVCs(ctx, del, []int32{3, 5})
	if err != nil || len(got) != 1 || got[0] != "data-db-3" {
		t.Errorf("deleted %v err %v", got, err)
	}
	var no *NotOwned
	if _, err := a.DeletePVCs(ctx, del, []int32{4}); !errors.As(err, &no) {
		t.Errorf("unlabelled claim: err = %v", err)
	}
	if _, err := c.CoreV1().PersistentVolumeClaims("ns").Get(ctx, "data-db-4", metav1.GetOptions{}); err != nil {
		t.Error("a claim that is not ours was deleted")
	}
}
