package scale

import (
	"context"
	"testing"

	"github.com/rs/zerolog"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	crfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/mgors/operator/actors"
	"github.com/mgors/operator/actors/eventlog"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo"
)

// nothingYet is a World where no object of the cluster exists yet; it
// records the actions and statuses it is asked for.
type nothingYet struct {
	acted    []actors.ActionKind
	statuses []v1alpha1.MgorsStatus
}

func (w *nothingYet) Observe(context.Context, *v1alpha1.Mgors, []mongo.DesiredMember, actors.Auth) (actors.Observation, error) {
	return actors.Observation{Replicas: -1, ArbiterReplicas: -1, Budget: -1, Pods: map[string]actors.PodView{}, Members: map[string]actors.MemberView{}}, nil
}

func (w *nothingYet) Act(_ context.Context, _ *v1alpha1.Mgors, a actors.Action) error {
	w.acted = append(w.acted, a.Kind)
	return nil
}

func (w *nothingYet) WriteStatus(_ context.Context, _ *v1alpha1.Mgors, st v1alpha1.MgorsStatus) error {
	w.statuses = append(w.statuses, st)
	return nil
}

func (w *nothingYet) Event(*v1alpha1.Mgors, bool, string, string) {}

func TestBaselineReconcileDecidesActsAndRequeues(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	m := newMgors("db", 0, 1)
	m.UID, m.Generation = "uid-0", 1
	world, store := &nothingYet{}, eventlog.NewMemory()
	env := &Env{World: world, Store: &Probe{Store: store}, Observations: &Observations{}, Log: zerolog.Nop()}
	b := &baseline{cache: crfake.NewClientBuilder().WithScheme(scheme).WithObjects(m).Build(), env: env, states: map[types.UID]actors.State{}}
	ctx := context.Background()

	res, err := b.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "db", Name: m.Name}})
	if err != nil || res.RequeueAfter != BaselineRequeue {
		t.Fatalf("reconcile: %+v, %v", res, err)
	}
	if len(world.acted) != 1 || world.acted[0] != actors.ActEnsureObjects {
		t.Errorf("acted %v, want [%s]", world.acted, actors.ActEnsureObjects)
	}
	_, recs, err := store.Load(ctx, eventlog.Stream{Namespace: "db", Name: m.Name, UID: "uid-0"})
	if err != nil || len(recs) == 0 {
		t.Fatalf("the event log holds %d records (%v)", len(recs), err)
	}
	if st := b.states["uid-0"]; st.Seq != recs[len(recs)-1].Seq || st.Generation != 1 {
		t.Errorf("state seq %d generation %d, the log ends at %d", st.Seq, st.Generation, recs[len(recs)-1].Seq)
	}
	if len(world.statuses) != 1 {
		t.Errorf("%d status writes, want 1", len(world.statuses))
	}

	res, err = b.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "db", Name: "gone"}})
	if err != nil || res.RequeueAfter != 0 {
		t.Errorf("a deleted Mgors: %+v, %v", res, err)
	}
}
