package actors

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	ktypes "k8s.io/apimachinery/pkg/types"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/mgors/operator/mongo"
)

// runningPods makes the fake clientset list, besides the pods it holds, a
// Running and Ready pod for every ordinal of every StatefulSet it holds, as
// the StatefulSet controller and a kubelet would (the fakes have neither):
// the World dials only the members whose pod runs.
func runningPods(kc *k8sfake.Clientset) {
	kc.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ns := a.GetNamespace()
		held, err := kc.Tracker().List(corev1.SchemeGroupVersion.WithResource("pods"), corev1.SchemeGroupVersion.WithKind("Pod"), ns)
		if err != nil {
			return true, nil, err
		}
		sets, err := kc.Tracker().List(appsv1.SchemeGroupVersion.WithResource("statefulsets"), appsv1.SchemeGroupVersion.WithKind("StatefulSet"), ns)
		if err != nil {
			return true, nil, err
		}
		out := &corev1.PodList{}
		names := map[string]bool{}
		for _, p := range held.(*corev1.PodList).Items {
			out.Items = append(out.Items, p)
			names[p.Name] = true
		}
		for _, s := range sets.(*appsv1.StatefulSetList).Items {
			if s.Spec.Replicas == nil || s.DeletionTimestamp != nil {
				continue
			}
			for i := range *s.Spec.Replicas {
				name := fmt.Sprintf("%s-%d", s.Name, i)
				if names[name] {
					continue
				}
				out.Items = append(out.Items, *runningPod(&s, i))
			}
		}
		sel := a.(k8stesting.ListAction).GetListRestrictions().Labels
		kept := out.Items[:0]
		for _, p := range out.Items {
			if sel == nil || sel.Matches(labels.Set(p.Labels)) {
				kept = append(kept, p)
			}
		}
		out.Items = kept
		return true, out, nil
	})
}

func TestNotRunningSaysWhyWithoutDialing(t *testing.T) {
	pods := map[string]PodView{
		"demo-0": {Name: "demo-0", Phase: "Running"},
		"demo-1": {Name: "demo-1", Phase: "Pending"},
		"demo-2": {Name: "demo-2", Phase: "Running", Deleting: true},
		"demo-3": {Name: "demo-3", Phase: "Failed"},
		"demo-5": {Name: "demo-5"},
	}
	for name, want := range map[string]string{
		"demo-0": "",
		"demo-1": "not reachable: pod demo-1 is Pending",
		"demo-2": "", // its mongod runs until the grace period ends
		"demo-3": "not reachable: pod demo-3 is Failed",
		"demo-4": "not reachable: pod demo-4 does not exist",
		"demo-5": "not reachable: pod demo-5 has no phase yet",
	} {
		if got := notRunning(pods, name); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
}

// countingAdmin counts the hosts asked hello, and keeps what Retain kept.
type countingAdmin struct {
	keepOpen
	mu    sync.Mutex
	hello map[string]int
	kept  []string
}

func (c *countingAdmin) Retain(keep []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.kept = slices.Sorted(slices.Values(keep))
}

func (c *countingAdmin) Hello(ctx context.Context, host string) (mongo.HelloReply, error) {
	c.mu.Lock()
	c.hello[host]++
	c.mu.Unlock()
	return c.keepOpen.Hello(ctx, host)
}

// Scaled from 3 to 5 before the StatefulSet grew: the two new members have
// no pod, are not dialed, and say so; the three others are asked.
func TestKubeWorldDoesNotDialMembersWithoutAPod(t *testing.T) {
	newWorld, rs, hosts := healthyFixture(t)
	m := mgors()
	m.Spec.Members = 5
	desired := mongo.Desired(m, "cluster.local")
	admin := &countingAdmin{keepOpen: keepOpen{rs}, hello: map[string]int{}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	o, err := newWorld(admin).Observe(ctx, m, desired, AuthKeyfile)
	if err != nil {
		t.Fatal(err)
	}
	for _, dm := range desired {
		mv := o.Members[dm.Host]
		if dm.Ordinal < 3 {
			if admin.hello[dm.Host] != 1 || !mv.Answers {
				t.Errorf("%s: asked %d times, seen %+v; want asked once, answering", dm.Name, admin.hello[dm.Host], mv)
			}
			continue
		}
		if admin.hello[dm.Host] != 0 || mv.Answers || !strings.Contains(mv.Err, "pod "+dm.Name+" does not exist") {
			t.Errorf("%s: asked %d times, seen %+v; want not asked, its pod named", dm.Name, admin.hello[dm.Host], mv)
		}
	}
	if o.Primary == "" || len(hosts) != 3 {
		t.Fatalf("primary %q: the three running members were not read", o.Primary)
	}
	var all []string
	for _, dm := range desired {
		all = append(all, dm.Host)
	}
	if slices.Sort(all); !slices.Equal(admin.kept, all) {
		t.Errorf("connections kept %v, want every desired member's %v", admin.kept, all)
	}
	// Back to 3: the connections of the two members no longer asked go.
	m.Spec.Members = 3
	if _, err := newWorld(admin).Observe(ctx, m, mongo.Desired(m, "cluster.local"), AuthKeyfile); err != nil {
		t.Fatal(err)
	}
	if want := slices.Sorted(slices.Values(hosts)); !slices.Equal(admin.kept, want) {
		t.Errorf("connections kept after 5 -> 3: %v, want %v", admin.kept, want)
	}
}

// runningPod is the Running, Ready pod of s's ordinal i, as the StatefulSet
// controller and a kubelet would make it.
func runningPod(s *appsv1.StatefulSet, i int32) *corev1.Pod {
	name := fmt.Sprintf("%s-%d", s.Name, i)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.Namespace, UID: ktypes.UID(name),
			Labels: s.Spec.Template.Labels, Annotations: s.Spec.Template.Annotations},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: fmt.Sprintf("10.0.0.%d", i+1),
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
}
