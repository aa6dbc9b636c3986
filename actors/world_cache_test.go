package actors

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/mgors/operator/actors/eventlog"
	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
	kubefake "github.com/mgors/operator/kube/client/fake"
	"github.com/mgors/operator/mongo"
	"github.com/mgors/operator/mongo/mongotest"
)

// apiCalls counts the requests the fake clientsets receive, by verb.
type apiCalls struct {
	mu     sync.Mutex
	byVerb map[string]int
	what   []string
}

func (c *apiCalls) reactor(a k8stesting.Action) (bool, runtime.Object, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byVerb[a.GetVerb()]++
	if a.GetVerb() != "watch" {
		c.what = append(c.what, a.GetVerb()+" "+a.GetResource().Resource)
	}
	return false, nil, nil // counted only: the tracker answers
}

// since is the calls other than watches after mark (an earlier len of what).
func (c *apiCalls) since(mark int) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.what[mark:]...)
}

func (c *apiCalls) mark() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.what)
}

// observeCounter is a KubeWorld that counts its observations.
type observeCounter struct {
	*KubeWorld
	n atomic.Int64
}

func (w *observeCounter) Observe(ctx context.Context, m *v1alpha1.Mgors, desired []mongo.DesiredMember, auth Auth) (Observation, error) {
	w.n.Add(1)
	return w.KubeWorld.Observe(ctx, m, desired, auth)
}

// The observation reads the shared informer caches only (issue 13): the
// real KubeWorld over kube.Informers takes a cluster to Healthy, and then
// ten more observations, with their status writes, send the API server no
// GET, no LIST and no write at all (only the informers' watches stay open).
func TestKubeWorldObservesAHealthyClusterFromTheCachesOnly(t *testing.T) {
	m := mgors()
	m.APIVersion, m.Kind = "mgors.io/v1alpha1", "Mgors"
	kc := k8sfake.NewClientset(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: m.KeyfileSecretName(), Namespace: m.Namespace},
			Data: map[string][]byte{v1alpha1.KeyfileSecretKey: []byte("keyfile-0123456789abcdef")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: m.AdminSecretName(), Namespace: m.Namespace},
			Data: map[string][]byte{v1alpha1.AdminUsernameSecretKey: []byte("admin"), v1alpha1.AdminPasswordSecretKey: []byte("pw")}},
	)
	mc := kubefake.NewClientset(m)
	calls := &apiCalls{byVerb: map[string]int{}}
	kc.PrependReactor("*", "*", calls.reactor)
	// No StatefulSet controller runs here: its status says every pod exists,
	// as a healthy cluster's does (else Diagnose asks for its FailedCreate Events).
	kc.PrependReactor("*", "statefulsets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if o, ok := a.(interface{ GetObject() runtime.Object }); ok {
			if s, ok := o.GetObject().(*appsv1.StatefulSet); ok && s.Spec.Replicas != nil {
				s.Status.Replicas = *s.Spec.Replicas
				addRunningPods(t, kc, s) // nor a kubelet: members are dialed only in Running pods
			}
		}
		return false, nil, nil
	})
	mc.PrependReactor("*", "*", calls.reactor)
	inf := kube.NewInformers(kc, mc, kube.InformerOptions{ClusterScoped: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inf.Start(ctx)
	if err := inf.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	var hosts []string
	for _, dm := range mongo.Desired(m, "cluster.local") {
		hosts = append(hosts, dm.Host)
	}
	rs := mongotest.New(m.ReplSetName(), hosts...)
	status := kube.NewStatusWriter(mc)
	status.Cache = inf
	world := &observeCounter{KubeWorld: &KubeWorld{
		Cache: inf, Applier: kube.NewApplier(kc), Status: status, Recorder: kube.NewRecorder(record.NewFakeRecorder(1000)),
		ClusterDomain: "cluster.local", NewAdmin: func(mongo.Options) mongo.Admin { return keepOpen{rs} },
	}}
	stop := runOperator(t, testDeps(eventlog.NewMemory(), world))
	defer stop()
	phase := func() v1alpha1.Phase {
		cur, err := inf.Mgors(m.Namespace, m.Name) // from the cache: no call
		if err != nil {
			return ""
		}
		return cur.Status.Phase
	}
	waitFor(t, "Healthy through the informer caches", func() bool { return phase() == v1alpha1.PhaseHealthy })
	// The observation under way when Healthy was written may still act on
	// what it read before: start counting two observations later.
	settled := world.n.Load() + 2
	waitFor(t, "two more observations", func() bool { return world.n.Load() >= settled })
	mark, from := calls.mark(), world.n.Load()
	waitFor(t, "ten observations of the healthy cluster", func() bool { return world.n.Load() >= from+10 })
	if got := calls.since(mark); len(got) != 0 {
		t.Fatalf("observing a healthy cluster ten times called the API server %d times: %v", len(got), got)
	}
	if phase() != v1alpha1.PhaseHealthy {
		t.Fatalf("phase %s after the observations", phase())
	}
	if inf.SecretValueReads() == 0 {
		t.Fatal("the Secrets' data were never read: the observation did not use SecretData")
	}
}

// addRunningPods puts into kc's tracker a Running, Ready pod for each of s's
// ordinals that has none yet, as the StatefulSet controller and a kubelet
// would; the informers see them through their watch.
func addRunningPods(t *testing.T, kc *k8sfake.Clientset, s *appsv1.StatefulSet) {
	t.Helper()
	gvr := corev1.SchemeGroupVersion.WithResource("pods")
	for i := range *s.Spec.Replicas {
		pod := runningPod(s, i)
		if _, err := kc.Tracker().Get(gvr, s.Namespace, pod.Name); err == nil {
			continue
		}
		if err := kc.Tracker().Create(gvr, pod, s.Namespace); err != nil {
			t.Errorf("adding pod %s: %v", pod.Name, err)
		}
	}
}
