package actors

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mgors/operator/actors/eventlog"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo"
)

// However many moves the driver reports, one message waits in the mailbox;
// once the actor took it, the next move sends another.
func TestWakeupCoalesces(t *testing.T) {
	sent := 0
	w := &wakeup{send: func() { sent++ }}
	w.ring()
	w.ring()
	w.ring()
	if sent != 1 {
		t.Fatalf("%d messages for three moves before the actor took one, want 1", sent)
	}
	w.take()
	w.ring()
	if sent != 2 {
		t.Fatalf("%d messages after the actor took the first, want 2", sent)
	}
}

// The KubeWorld's admin clients wake the actor that watches their cluster,
// and nobody after Forget.
func TestKubeWorldWakesTheWatcherOnAMove(t *testing.T) {
	newWorld, rs, _, _ := kubeFixture(t, "admin")
	var mu sync.Mutex
	var opts []mongo.Options
	w := newWorld(nil)
	w.NewAdmin = func(o mongo.Options) mongo.Admin {
		mu.Lock()
		defer mu.Unlock()
		opts = append(opts, o)
		return keepOpen{rs}
	}
	m := mgors()
	woken := 0
	w.Watch(m, func() { woken++ })
	if _, err := w.admin(context.Background(), m, AuthKeyfile); err != nil {
		t.Fatal(err)
	}
	if len(opts) != 1 || opts[0].Changed == nil {
		t.Fatalf("the admin client was built without a Changed hook: %d clients", len(opts))
	}
	opts[0].Changed("demo-0")
	if woken != 1 {
		t.Fatalf("woken %d times by one move, want 1", woken)
	}
	w.Forget(m)
	opts[0].Changed("demo-0")
	if woken != 1 {
		t.Fatal("a forgotten cluster's actor was woken")
	}
}

// watchedWorld is the fakeWorld with the driver's moves in the test's hand.
type watchedWorld struct {
	*fakeWorld
	mu           sync.Mutex
	wake         func()
	observations int
}

func (w *watchedWorld) Watch(_ *v1alpha1.Mgors, wake func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.wake = wake
}

func (w *watchedWorld) Observe(ctx context.Context, m *v1alpha1.Mgors, desired []mongo.DesiredMember, auth Auth) (Observation, error) {
	w.mu.Lock()
	w.observations++
	w.mu.Unlock()
	return w.fakeWorld.Observe(ctx, m, desired, auth)
}

func (w *watchedWorld) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.observations
}

// A Healthy cluster whose timer is an hour away is observed again when its
// members move.
func TestActorObservesWhenMembersMove(t *testing.T) {
	world := &watchedWorld{fakeWorld: newFakeWorld()}
	deps := testDeps(eventlog.NewMemory(), world)
	deps.Interval = time.Hour
	stop := runOperator(t, deps)
	defer stop()
	// No timer helps here: each step that changes nothing doubles the wait.
	waitForWithin(t, 2*time.Minute, "Healthy", func() bool { return world.phase("db/demo") == v1alpha1.PhaseHealthy })
	waitFor(t, "watching", func() bool { world.mu.Lock(); defer world.mu.Unlock(); return world.wake != nil })
	before := world.count()
	world.mu.Lock()
	wake := world.wake
	world.mu.Unlock()
	wake()
	wake()
	waitFor(t, "an observation after the move", func() bool { return world.count() > before })
}
