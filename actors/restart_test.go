package actors

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/mgors/operator/actors/eventlog"
	"github.com/mgors/operator/kube/api/v1alpha1"
)

// conflictOnce is a store whose next Append after arm fails with ErrSequence,
// as when another writer got there first: the actor must restart.
type conflictOnce struct {
	eventlog.Store
	mu    sync.Mutex
	armed bool
	fired chan struct{}
}

func (s *conflictOnce) arm() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.armed = true
}

func (s *conflictOnce) Append(ctx context.Context, st eventlog.Stream, recs ...eventlog.Record) error {
	s.mu.Lock()
	fire := s.armed
	s.armed = false
	s.mu.Unlock()
	if fire {
		close(s.fired)
		return eventlog.ErrSequence
	}
	return s.Store.Append(ctx, st, recs...)
}

// TestRestartedActorKeepsTheNewestSpec: an actor restarted by its supervisor
// (here after a conflicting append) starts from the newest spec it was sent,
// not from the one it was spawned with, so it records the new generation
// without anyone editing the object again.
func TestRestartedActorKeepsTheNewestSpec(t *testing.T) {
	store := &conflictOnce{Store: eventlog.NewMemory(), fired: make(chan struct{})}
	world := newFakeWorld()
	sys := actor.NewActorSystem()
	mgr, err := sys.Root.SpawnNamed(NewManagerProps(testDeps(store, world)), "manager")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sys.Root.PoisonFuture(mgr).Wait() }()
	sys.Root.Send(mgr, ClusterChanged{Mgors: mgors()})
	waitFor(t, "Healthy", func() bool { return world.phase("db/demo") == "Healthy" })

	store.arm()
	m := mgors()
	m.Generation = 2
	m.Spec.Paused = true
	sys.Root.Send(mgr, ClusterChanged{Mgors: m})
	<-store.fired

	stream := eventlog.Stream{Namespace: "db", Name: "demo", UID: "u-1"}
	waitFor(t, "the restarted actor to record generation 2", func() bool {
		_, recs, err := store.Load(context.Background(), stream)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if e, ok, _ := Decode(r); ok {
				if so, ok := e.(SpecObserved); ok && so.Generation == 2 && so.Paused {
					return true
				}
			}
		}
		return false
	})
}

// TestPanickedActorKeepsTheNewestSpec: a panic inside the actor's Receive
// (here right after the generation-2 SpecObserved is durable) restarts it
// through the supervisor; the new incarnation works from generation 2, never
// records generation 1 again, and so never un-pauses the cluster.
func TestPanickedActorKeepsTheNewestSpec(t *testing.T) {
	store, world := eventlog.NewMemory(), newFakeWorld()
	deps := testDeps(store, world)
	deps.SnapshotEvery = 0 // the assertion reads every SpecObserved
	var once sync.Once
	panicked := make(chan struct{})
	deps.AfterAppend = func(r eventlog.Record) {
		if e, _, _ := Decode(r); e != nil {
			if so, ok := e.(SpecObserved); ok && so.Generation == 2 {
				once.Do(func() {
					close(panicked)
					panic("injected: the actor fails right after recording generation 2")
				})
			}
		}
	}
	sys := actor.NewActorSystem()
	mgr, err := sys.Root.SpawnNamed(NewManagerProps(deps), "manager")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sys.Root.PoisonFuture(mgr).Wait() }()
	sys.Root.Send(mgr, ClusterChanged{Mgors: mgors()})
	waitFor(t, "Healthy", func() bool { return world.phase("db/demo") == "Healthy" })

	m := mgors()
	m.Generation, m.Spec.Paused = 2, true
	sys.Root.Send(mgr, ClusterChanged{Mgors: m})
	<-panicked
	stream := eventlog.Stream{Namespace: "db", Name: "demo", UID: "u-1"}
	waitFor(t, "the restarted actor to write the paused status", func() bool {
		world.mu.Lock()
		defer world.mu.Unlock()
		return findCond(world.status["db/demo"], "Paused").Status == "True"
	})
	_, recs, err := store.Load(context.Background(), stream)
	if err != nil {
		t.Fatal(err)
	}
	var gens []int64
	for _, r := range recs {
		if e, ok, _ := Decode(r); ok {
			if so, ok := e.(SpecObserved); ok {
				gens = append(gens, so.Generation)
			}
		}
	}
	if len(gens) == 0 || gens[len(gens)-1] != 2 {
		t.Fatalf("spec generations recorded %v: a restarted actor went back to an older spec", gens)
	}
}

// TestFailedSpawnIsRetried: the cluster actor's name is taken (as by a
// predecessor still stopping); the spawn fails, is retried, and succeeds once
// the name is free.
func TestFailedSpawnIsRetried(t *testing.T) {
	store, world := eventlog.NewMemory(), newFakeWorld()
	sys := actor.NewActorSystem()
	squatter, err := sys.Root.SpawnNamed(actor.PropsFromFunc(func(actor.Context) {}), "manager/"+childName("db", "demo", "u-1"))
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := sys.Root.SpawnNamed(NewManagerProps(testDeps(store, world)), "manager")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sys.Root.PoisonFuture(mgr).Wait() }()
	sys.Root.Send(mgr, ClusterChanged{Mgors: mgors()})
	clusters := func() map[string]string {
		r, err := sys.Root.RequestFuture(mgr, Clusters{}, 5*time.Second).Result()
		if err != nil {
			t.Fatal(err)
		}
		return r.(map[string]string)
	}
	if got := clusters(); len(got) != 0 {
		t.Fatalf("spawned over a taken name: %v", got)
	}
	_ = sys.Root.PoisonFuture(squatter).Wait()
	waitFor(t, "the retried spawn to bring the cluster to Healthy", func() bool { return world.phase("db/demo") == "Healthy" })
	if got := clusters(); got["db/demo"] != "u-1" {
		t.Fatalf("clusters %v", got)
	}
}

// panickyStatus is a World whose status writes panic.
type panickyStatus struct{ *fakeWorld }

func (panickyStatus) WriteStatus(context.Context, *v1alpha1.Mgors, v1alpha1.MgorsStatus) error {
	panic("injected: the status writer fails")
}

// TestPanicInTheStatusWriterDoesNotKillTheProcess: status writes and
// snapshots run in goroutines of their own; a panic there is recovered and
// logged, and the actor carries on (an unrecovered one would end the test
// binary).
func TestPanicInTheStatusWriterDoesNotKillTheProcess(t *testing.T) {
	store, world := eventlog.NewMemory(), newFakeWorld()
	deps := testDeps(store, panickyStatus{world})
	deps.SnapshotEvery = 0
	stop := runOperator(t, deps)
	defer stop()
	stream := eventlog.Stream{Namespace: "db", Name: "demo", UID: "u-1"}
	waitFor(t, "Healthy in the log", func() bool {
		_, recs, err := store.Load(context.Background(), stream)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if e, ok, _ := Decode(r); ok {
				if pc, ok := e.(PhaseChanged); ok && pc.To == v1alpha1.PhaseHealthy {
					return true
				}
			}
		}
		return false
	})
}
