package actors

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	"github.com/mgors/operator/kube"
	mgorsfake "github.com/mgors/operator/kube/client/fake"
	"github.com/mgors/operator/mongo"
)

// laggingReader shows the StatefulSets as they were when it was frozen, as
// an informer cache that has not yet seen a write does.
type laggingReader struct {
	*mgorsfake.Reader
	frozen atomic.Bool
	sets   map[string]*appsv1.StatefulSet
}

func (r *laggingReader) freeze(ns string) {
	r.sets = map[string]*appsv1.StatefulSet{}
	for _, name := range []string{"demo", "demo-arbiter"} {
		if s, err := r.Reader.StatefulSet(ns, name); err == nil {
			r.sets[name] = s
		}
	}
	r.frozen.Store(true)
}

func (r *laggingReader) StatefulSet(ns, name string) (*appsv1.StatefulSet, error) {
	if s, ok := r.sets[name]; ok && r.frozen.Load() {
		return s, nil
	}
	return r.Reader.StatefulSet(ns, name)
}

// After its own write, the World does not observe a cluster through a cache
// that does not show the write yet: the observation fails (and is retried on
// the next tick) until the cache shows it, and then reads what was written.
func TestKubeWorldWaitsForTheCacheToShowItsOwnWrite(t *testing.T) {
	ctx := context.Background()
	m := mgors()
	set := kube.StatefulSet(m, kube.Options{ClusterDomain: "cluster.local"})
	kc := k8sfake.NewClientset(set)
	r := &laggingReader{Reader: mgorsfake.NewReader(kc, nil)}
	w := &KubeWorld{Cache: r, Applier: kube.NewApplier(kc), ClusterDomain: "cluster.local"}
	desired := mongo.Desired(m, "cluster.local")
	r.freeze(m.Namespace)
	if err := w.Act(ctx, m, Action{Kind: ActScale, Replicas: 4}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Observe(ctx, m, desired, AuthKeyfile); err == nil || !strings.Contains(err.Error(), "own Scale") {
		t.Fatalf("observed through a cache behind the World's own scale: %v", err)
	}
	r.frozen.Store(false)
	o, err := w.Observe(ctx, m, desired, AuthKeyfile)
	if err != nil || o.Replicas != 4 {
		t.Fatalf("replicas %d, err %v: want the scale seen", o.Replicas, err)
	}
	// Met once, the expectation is gone: a later change by someone else
	// (scaled back) is observed as it is.
	s, _ := kc.AppsV1().StatefulSets(m.Namespace).Get(ctx, m.Name, metav1.GetOptions{})
	three := int32(3)
	s.Spec.Replicas = &three
	if _, err := kc.AppsV1().StatefulSets(m.Namespace).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if o, err := w.Observe(ctx, m, desired, AuthKeyfile); err != nil || o.Replicas != 3 {
		t.Fatalf("replicas %d, err %v", o.Replicas, err)
	}
}

// What the cache must show after each action that writes: a restarted pod
// deleted, being deleted or replaced; nothing after a MongoDB command.
func TestExpected(t *testing.T) {
	m := mgors()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "demo-1", Namespace: m.Namespace, UID: "p1",
		Labels: kube.Labels(m, kube.ComponentMember)}}
	kc := k8sfake.NewClientset(pod)
	w := &KubeWorld{Cache: mgorsfake.NewReader(kc, nil), Applier: kube.NewApplier(kc)}
	if w.expected(m, Action{Kind: ActStepDown, Host: "demo-0"}) != nil {
		t.Error("a MongoDB command expects something of the cache")
	}
	seen := w.expected(m, Action{Kind: ActRestartMember, Host: "demo-1"})
	if seen(w.Cache) {
		t.Fatal("the pod before its restart counts as restarted")
	}
	deleting := pod.DeepCopy()
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	replaced := pod.DeepCopy()
	replaced.UID = "p2"
	for name, p := range map[string]*corev1.Pod{"deleting": deleting, "replaced": replaced, "gone": nil} {
		c := k8sfake.NewClientset()
		if p != nil {
			if _, err := c.CoreV1().Pods(m.Namespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if !seen(mgorsfake.NewReader(c, nil)) {
			t.Errorf("%s: the restart is not seen", name)
		}
	}
}
