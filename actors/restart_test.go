package actors

import (
	"context"
	"sync"
	"testing"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/mgors/operator/actors/eventlog"
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
