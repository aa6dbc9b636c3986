package actors

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/mgors/operator/actors/eventlog"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo"
)

// inFlight counts the gated steps under way (appends, actions, status
// writes) and remembers the most there ever were at once.
type inFlight struct{ now, most atomic.Int32 }

func (f *inFlight) step() func() {
	n := f.now.Add(1)
	for {
		m := f.most.Load()
		if n <= m || f.most.CompareAndSwap(m, n) {
			break
		}
	}
	return func() { f.now.Add(-1) }
}

type countedStore struct {
	eventlog.Store
	f *inFlight
}

func (s countedStore) Append(ctx context.Context, st eventlog.Stream, recs ...eventlog.Record) error {
	defer s.f.step()()
	return s.Store.Append(ctx, st, recs...)
}

// countedWorld is a fakeWorld per cluster, its writes counted.
type countedWorld struct {
	mu     sync.Mutex
	worlds map[string]*fakeWorld
	f      *inFlight
}

func (w *countedWorld) of(m *v1alpha1.Mgors) *fakeWorld {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.worlds[m.Name] == nil {
		w.worlds[m.Name] = newFakeWorld()
	}
	return w.worlds[m.Name]
}

func (w *countedWorld) Observe(ctx context.Context, m *v1alpha1.Mgors, d []mongo.DesiredMember, auth Auth) (Observation, error) {
	return w.of(m).Observe(ctx, m, d, auth)
}

func (w *countedWorld) Act(ctx context.Context, m *v1alpha1.Mgors, a Action) error {
	defer w.f.step()()
	return w.of(m).Act(ctx, m, a)
}

func (w *countedWorld) WriteStatus(ctx context.Context, m *v1alpha1.Mgors, st v1alpha1.MgorsStatus) error {
	defer w.f.step()()
	return w.of(m).WriteStatus(ctx, m, st)
}

func (w *countedWorld) Event(*v1alpha1.Mgors, bool, string, string) {}

// Five clusters behind a Gate of one slot all reach Healthy, and no two of
// their appends, actions and status writes ever ran at once.
func TestClustersShareTheGate(t *testing.T) {
	var f inFlight
	world := &countedWorld{worlds: map[string]*fakeWorld{}, f: &f}
	deps := testDeps(countedStore{Store: eventlog.NewMemory(), f: &f}, world)
	deps.Gate = NewGate(1)
	sys := actor.NewActorSystem()
	mgr, err := sys.Root.SpawnNamed(NewManagerProps(deps), "manager")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sys.Root.PoisonFuture(mgr).Wait() }()
	var ms []*v1alpha1.Mgors
	for i := range 5 {
		m := mgors()
		m.Name, m.UID = fmt.Sprintf("demo-%d", i), k8stypes.UID(fmt.Sprint("u-", i))
		ms = append(ms, m)
		sys.Root.Send(mgr, ClusterChanged{Mgors: m})
	}
	for _, m := range ms {
		waitFor(t, m.Name+" Healthy", func() bool { return world.of(m).phase("db/"+m.Name) == v1alpha1.PhaseHealthy })
	}
	if most := f.most.Load(); most != 1 {
		t.Fatalf("%d gated steps ran at once behind a Gate of one slot", most)
	}
}

func TestNilGateAdmitsAtOnce(t *testing.T) {
	var g *Gate
	leave := g.enter()
	leave()
	if NewGate(0) != nil {
		t.Fatal("NewGate(0) bounds nothing and is nil")
	}
}
