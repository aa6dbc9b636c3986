package kube

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/mgors/operator/kube/api/v1alpha1"
	mfake "github.com/mgors/operator/kube/client/fake"
)

// memberPods is a clientset with a member pod of m (db-1, UID p1) and a pod
// of no Mgors (x-0), and an Applier on it.
func memberPods(m *v1alpha1.Mgors) (*fake.Clientset, *Applier) {
	own := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-1", Namespace: "ns", UID: "p1", Labels: Labels(m, ComponentMember)}}
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x-0", Namespace: "ns", UID: "p2"}}
	c := fake.NewClientset(own, other)
	return c, NewApplier(c)
}

func TestForceDeletePod(t *testing.T) {
	ctx := context.Background()
	m := sample()
	c, a := memberPods(m)
	if err := a.ForceDeletePod(ctx, m, "db-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Pods("ns").Get(ctx, "db-1", metav1.GetOptions{}); err == nil {
		t.Fatal("the pod is still there")
	}
	if err := a.ForceDeletePod(ctx, m, "db-1"); err != nil {
		t.Fatalf("a pod already gone: %v", err)
	}
	if err := a.ForceDeletePod(ctx, m, "x-0"); err == nil {
		t.Fatal("deleted a pod of another owner")
	}
	var grace *int64
	for _, act := range c.Actions() {
		if d, ok := act.(interface{ GetDeleteOptions() metav1.DeleteOptions }); ok && act.GetVerb() == "delete" {
			grace = d.GetDeleteOptions().GracePeriodSeconds
		}
	}
	if grace == nil || *grace != 0 {
		t.Fatalf("grace period %v, want 0", grace)
	}
}

func TestFencePod(t *testing.T) {
	ctx := context.Background()
	m := sample()
	c, a := memberPods(m)
	if err := a.FencePod(ctx, m, "db-1", "recreated"); err != nil {
		t.Fatalf("a pod recreated since: %v", err)
	}
	if _, err := c.CoreV1().Pods("ns").Get(ctx, "db-1", metav1.GetOptions{}); err != nil {
		t.Fatalf("deleted the pod recreated since: %v", err)
	}
	if err := a.FencePod(ctx, m, "db-1", "p1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().Pods("ns").Get(ctx, "db-1", metav1.GetOptions{}); err == nil {
		t.Fatal("the pod is still there")
	}
	if err := a.FencePod(ctx, m, "db-1", "p1"); err != nil {
		t.Fatalf("a pod already gone: %v", err)
	}
	if err := a.FencePod(ctx, m, "x-0", "p2"); err == nil {
		t.Fatal("fenced a pod of another owner")
	}
	var opts *metav1.DeleteOptions
	for _, act := range c.Actions() {
		if d, ok := act.(interface{ GetDeleteOptions() metav1.DeleteOptions }); ok && act.GetVerb() == "delete" {
			o := d.GetDeleteOptions()
			opts = &o
		}
	}
	if opts == nil || opts.GracePeriodSeconds == nil || *opts.GracePeriodSeconds != int64(FenceGrace/time.Second) ||
		opts.Preconditions == nil || opts.Preconditions.UID == nil || *opts.Preconditions.UID != "p1" {
		t.Fatalf("delete options %+v: want the fence grace and the UID precondition", opts)
	}
}

func TestNodes(t *testing.T) {
	since := metav1.NewTime(time.Date(2026, 12, 1, 4, 0, 0, 0, time.UTC))
	ready := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	lost := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, LastTransitionTime: since}}}}
	got, err := Nodes(mfake.NewReader(fake.NewClientset(ready, lost), nil), []string{"n1", "n2", "gone"})
	if err != nil {
		t.Fatal(err)
	}
	if !got["n1"].Ready || got["n2"].Ready || !got["n2"].NotReadySince.Equal(since.Time) || got["gone"].Ready || !got["gone"].NotReadySince.IsZero() {
		t.Fatalf("%+v", got)
	}
}

func TestRemoveAnnotation(t *testing.T) {
	ctx := context.Background()
	m := sample(func(m *v1alpha1.Mgors) {
		m.Annotations = map[string]string{"mgors.io/force-reconfigure-onto": "db-1", "keep": "me"}
	})
	c := mfake.NewClientset(m)
	if err := RemoveAnnotation(ctx, c, 0, m, "mgors.io/force-reconfigure-onto"); err != nil {
		t.Fatal(err)
	}
	got, err := c.Mgorses("ns").Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Annotations["mgors.io/force-reconfigure-onto"]; ok || got.Annotations["keep"] != "me" {
		t.Fatalf("annotations %v", got.Annotations)
	}
	if err := RemoveAnnotation(ctx, c, 0, m, "absent"); err != nil {
		t.Fatalf("an absent annotation: %v", err)
	}
}
