package actors

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/asynkron/protoactor-go/actor"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	"github.com/mgors/operator/actors/eventlog"
	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
	mgorsfake "github.com/mgors/operator/kube/client/fake"
	"github.com/mgors/operator/mongo"
)

func initiatedMgors() *v1alpha1.Mgors {
	m := mgors()
	meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionInitialized,
		Status: metav1.ConditionTrue, Reason: "Initiated"})
	return m
}

func secretsWorld(t *testing.T) (*KubeWorld, *k8sfake.Clientset) {
	kc := k8sfake.NewClientset()
	return &KubeWorld{Cache: mgorsfake.NewReader(kc, nil), Applier: kube.NewApplier(kc), NewAdmin: func(mongo.Options) mongo.Admin {
		t.Fatal("a member was asked")
		return nil
	}}, kc
}

// Before the set is initiated, EnsureObjects makes the keyfile; once it is,
// a keyfile gone is never made again: a KeyfileLost problem, and the action
// fails saying so, while the other objects are still made.
func TestKubeWorldNeverMakesANewKeyfileForAnInitiatedCluster(t *testing.T) {
	ctx := context.Background()
	w, kc := secretsWorld(t)
	m := mgors()
	if err := w.Act(ctx, m, Action{Kind: ActEnsureObjects}); err != nil {
		t.Fatal(err)
	}
	if _, err := kc.CoreV1().Secrets(m.Namespace).Get(ctx, m.KeyfileSecretName(), metav1.GetOptions{}); err != nil {
		t.Fatalf("no keyfile before the initiate: %v", err)
	}

	w, kc = secretsWorld(t)
	m = initiatedMgors()
	o, err := w.Observe(ctx, m, nil, AuthKeyfile)
	if err != nil {
		t.Fatal(err)
	}
	if o.ObjectsReady || len(o.Problems) == 0 || o.Problems[0].Reason != ReasonKeyfileLost {
		t.Fatalf("observation: ready %v, problems %+v", o.ObjectsReady, o.Problems)
	}
	err = w.Act(ctx, m, Action{Kind: ActEnsureObjects})
	var lost *kube.KeyfileLost
	if !errors.As(err, &lost) {
		t.Fatalf("EnsureObjects: %v, want KeyfileLost", err)
	}
	if _, err := kc.CoreV1().Secrets(m.Namespace).Get(ctx, m.KeyfileSecretName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a new keyfile was made for an initiated cluster: %v", err)
	}
	if _, err := kc.AppsV1().StatefulSets(m.Namespace).Get(ctx, m.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("the other objects were not made: %v", err)
	}
}

// An initiated cluster's generated Secrets get the finalizer through
// EnsureObjects; a deletion it holds is a problem that says so; the deleted
// Mgors releases them.
func TestKubeWorldProtectsTheSecretsOfAnInitiatedCluster(t *testing.T) {
	ctx := context.Background()
	w, kc := secretsWorld(t)
	if err := w.Act(ctx, mgors(), Action{Kind: ActEnsureObjects}); err != nil {
		t.Fatal(err)
	}
	m := initiatedMgors()
	// Without its StatefulSet the observation stops before the members:
	// only the objects are looked at here.
	if err := kc.AppsV1().StatefulSets(m.Namespace).Delete(ctx, m.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	o, err := w.Observe(ctx, m, nil, AuthKeyfile)
	if err != nil {
		t.Fatal(err)
	}
	if o.ObjectsReady || !strings.Contains(o.ObjectsMessage, kube.SecretFinalizer) {
		t.Fatalf("the missing finalizer is not seen: %q", o.ObjectsMessage)
	}
	if err := w.Act(ctx, m, Action{Kind: ActEnsureObjects}); err != nil {
		t.Fatal(err)
	}
	for _, name := range kube.SecretNames(m) {
		s, err := kc.CoreV1().Secrets(m.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil || !kube.Protected(s) {
			t.Fatalf("Secret %s not protected: %v", name, err)
		}
	}
	if err := kc.AppsV1().StatefulSets(m.Namespace).Delete(ctx, m.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// A person deletes the keyfile: the API server only marks it.
	s, _ := kc.CoreV1().Secrets(m.Namespace).Get(ctx, m.KeyfileSecretName(), metav1.GetOptions{})
	now := metav1.Now()
	s.DeletionTimestamp = &now
	if _, err := kc.CoreV1().Secrets(m.Namespace).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	o, err = w.Observe(ctx, m, nil, AuthKeyfile)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Problems) == 0 || o.Problems[0].Reason != ReasonSecretDeletionHeld || !strings.Contains(o.Problems[0].Message, m.KeyfileSecretName()) {
		t.Fatalf("problems %+v", o.Problems)
	}
	if err := w.Release(ctx, m); err != nil {
		t.Fatal(err)
	}
	for _, name := range kube.SecretNames(m) {
		s, err := kc.CoreV1().Secrets(m.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil || kube.Protected(s) {
			t.Fatalf("Secret %s still protected after the Mgors was deleted: %v", name, err)
		}
	}
}

// releasingWorld records which Mgors had their Secrets released.
type releasingWorld struct {
	*fakeWorld
	mu       sync.Mutex
	released []string
}

func (w *releasingWorld) Release(_ context.Context, m *v1alpha1.Mgors) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.released = append(w.released, m.Namespace+"/"+m.Name)
	return nil
}

// A deleted Mgors releases its Secrets; an operator stopping does not.
func TestDeletedMgorsReleasesItsSecrets(t *testing.T) {
	world := &releasingWorld{fakeWorld: newFakeWorld()}
	deps := testDeps(eventlog.NewMemory(), world)
	sys := actor.NewActorSystem()
	mgr, err := sys.Root.SpawnNamed(NewManagerProps(deps), "manager")
	if err != nil {
		t.Fatal(err)
	}
	m := mgors()
	sys.Root.Send(mgr, ClusterChanged{Mgors: m})
	waitFor(t, "the actor runs", func() bool { return world.phase("db/demo") != "" })
	sys.Root.Send(mgr, ClusterDeleted{Namespace: m.Namespace, Name: m.Name, UID: string(m.UID)})
	waitFor(t, "the Secrets released", func() bool {
		world.mu.Lock()
		defer world.mu.Unlock()
		return slices.Equal(world.released, []string{"db/demo"})
	})

	// Stopping the operator (the Manager poisoned) releases nothing.
	world2 := &releasingWorld{fakeWorld: newFakeWorld()}
	stop := runOperator(t, testDeps(eventlog.NewMemory(), world2))
	waitFor(t, "the actor runs", func() bool { return world2.phase("db/demo") != "" })
	stop()
	world2.mu.Lock()
	defer world2.mu.Unlock()
	if len(world2.released) != 0 {
		t.Fatalf("an operator stop released %v", world2.released)
	}
	_ = sys.Root.PoisonFuture(mgr).Wait()
}

// The World learns that the set was initiated from the actor's state, not
// from the status of the object the actor holds (refreshed on spec changes
// only).
func TestSubjectCarriesTheStatesInitiated(t *testing.T) {
	c := &cluster{mgors: mgors()}
	if initiated(c.subject()) {
		t.Fatal("initiated before the state says so")
	}
	c.state.Initiated = true
	if !initiated(c.subject()) || initiated(c.mgors) {
		t.Fatal("the subject does not carry the state's Initiated, or the held object was modified")
	}
}
