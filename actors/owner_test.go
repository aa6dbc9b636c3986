package actors

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/mgors/operator/actors/eventlog"
)

// fenceRig runs a Manager over one cluster until it is Healthy and collects
// what the Manager reports as fenced.
type fenceRig struct {
	store    *eventlog.Memory
	world    *fakeWorld
	sys      *actor.ActorSystem
	mgr      *actor.PID
	mu       sync.Mutex
	fenced   []Fenced
	released []string
}

func newFenceRig(t *testing.T, lease func() error) *fenceRig {
	return newRig(t, lease, true)
}

// newRig runs the Manager sharded (Deps.Fenced and Released set) or not.
func newRig(t *testing.T, lease func() error, sharded bool) *fenceRig {
	r := &fenceRig{store: eventlog.NewMemory(), world: newFakeWorld(), sys: actor.NewActorSystem()}
	deps := testDeps(r.store, r.world)
	deps.SnapshotEvery = 0
	deps.Lease = lease
	deps.FenceRespawn = 100 * time.Millisecond
	if sharded {
		deps.Fenced = func(f Fenced) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.fenced = append(r.fenced, f)
		}
	}
	deps.Released = func(ns, name, uid string) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.released = append(r.released, ns+"/"+name+"@"+uid)
	}
	mgr, err := r.sys.Root.SpawnNamed(NewManagerProps(deps), "manager")
	if err != nil {
		t.Fatal(err)
	}
	r.mgr = mgr
	t.Cleanup(func() { _ = r.sys.Root.PoisonFuture(mgr).Wait() })
	r.sys.Root.Send(mgr, ClusterChanged{Mgors: mgors()})
	waitFor(t, "Healthy", func() bool { return r.world.phase("db/demo") == "Healthy" })
	return r
}

func (r *fenceRig) fencedBy() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, f := range r.fenced {
		out = append(out, f.By)
	}
	return out
}

func (r *fenceRig) clusters(t *testing.T) map[string]string {
	res, err := r.sys.Root.RequestFuture(r.mgr, Clusters{}, 5*time.Second).Result()
	if err != nil {
		t.Fatal(err)
	}
	return res.(map[string]string)
}

func (r *fenceRig) records(t *testing.T) []eventlog.Record {
	_, recs, err := r.store.Load(context.Background(), eventlog.Stream{Namespace: "db", Name: "demo", UID: "u-1"})
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// pokeWithNewSpec gives the actor something to write: a new generation.
func (r *fenceRig) pokeWithNewSpec() {
	m := mgors()
	m.Generation = 2
	m.Spec.Paused = true
	r.sys.Root.Send(r.mgr, ClusterChanged{Mgors: m})
}

// TestAnotherWriterFencesTheActor: a second owner appended to the log; the
// actor's next append is refused (ErrSequence), it names that writer, stops
// for good instead of restarting, writes nothing after the other writer's
// record, and the Manager neither keeps nor respawns it.
func TestAnotherWriterFencesTheActor(t *testing.T) {
	r := newFenceRig(t, nil)
	recs := r.records(t)
	foreign := eventlog.Record{
		Seq: recs[len(recs)-1].Seq + 1, Time: time.Now(), Cluster: "db/demo", UID: "u-1",
		Type: "SomeoneElsesEvent", Version: 1, Writer: "replica-b", Data: []byte(`{}`),
	}
	if err := r.store.Append(context.Background(), eventlog.Stream{Namespace: "db", Name: "demo", UID: "u-1"}, foreign); err != nil {
		t.Fatal(err)
	}
	r.pokeWithNewSpec()
	waitFor(t, "the fence", func() bool { return len(r.fencedBy()) == 1 })
	if got := r.fencedBy(); got[0] != "replica-b" {
		t.Fatalf("fenced by %q, want replica-b", got[0])
	}
	r.pokeWithNewSpec() // a fenced incarnation is not respawned
	if got := r.clusters(t); len(got) != 0 {
		t.Fatalf("the Manager still runs %v after the fence", got)
	}
	after := r.records(t)
	if last := after[len(after)-1]; last.Writer != "replica-b" {
		t.Fatalf("the fenced actor wrote after the other writer: %+v", last)
	}
	if n := len(r.fencedBy()); n != 1 {
		t.Fatalf("%d fences, want 1 (a respawned actor was fenced again)", n)
	}
	// The Mgors leaving this Manager (deleted, or moved to another replica)
	// clears the fence: when it comes back it is run again.
	r.sys.Root.Send(r.mgr, ClusterDeleted{Namespace: "db", Name: "demo", UID: "u-1"})
	r.sys.Root.Send(r.mgr, ClusterChanged{Mgors: mgors()})
	waitFor(t, "the actor to run again", func() bool { return r.clusters(t)["db/demo"] == "u-1" })
}

// TestFencedWithoutShardingRunsAgainLater: without sharding the other writer
// is a deposed leader on its way out; the fenced actor is spawned again after
// FenceRespawn, reloads the log (the other writer's record included) and
// carries on from the newest spec.
func TestFencedWithoutShardingRunsAgainLater(t *testing.T) {
	r := newRig(t, nil, false)
	recs := r.records(t)
	foreign := eventlog.Record{
		Seq: recs[len(recs)-1].Seq + 1, Time: time.Now(), Cluster: "db/demo", UID: "u-1",
		Type: "SomeoneElsesEvent", Version: 1, Writer: "old-leader", Data: []byte(`{}`),
	}
	if err := r.store.Append(context.Background(), eventlog.Stream{Namespace: "db", Name: "demo", UID: "u-1"}, foreign); err != nil {
		t.Fatal(err)
	}
	r.pokeWithNewSpec()
	waitFor(t, "generation 2 recorded after the other writer's record", func() bool {
		recs := r.records(t)
		seen := false
		for _, rec := range recs {
			if rec.Writer == "old-leader" {
				seen = true
			}
			if e, ok, _ := Decode(rec); ok && seen {
				if so, ok := e.(SpecObserved); ok && so.Generation == 2 {
					return true
				}
			}
		}
		return false
	})
}

// TestLostLeaseStopsTheActorBeforeItWrites: once this replica's Lease says
// no, the actor appends nothing more, acts no more and stops for good.
func TestLostLeaseStopsTheActorBeforeItWrites(t *testing.T) {
	var lost atomic.Bool
	r := newFenceRig(t, func() error {
		if lost.Load() {
			return errors.New("expired")
		}
		return nil
	})
	before := len(r.records(t))
	lost.Store(true)
	r.pokeWithNewSpec()
	waitFor(t, "the fence", func() bool { return len(r.fencedBy()) == 1 })
	if got := len(r.records(t)); got != before {
		t.Fatalf("%d records after the Lease was lost, want %d", got, before)
	}
	if got := r.clusters(t); len(got) != 0 {
		t.Fatalf("the Manager still runs %v", got)
	}
}

func (r *fenceRig) releasedNow() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.released...)
}

// TestDrainStopsTheActorThenReleases: the drain handshake's owner side. The
// actor stops, only then is the Mgors given back (Released), it is not
// respawned while it still shows here, and a repeated drain acknowledges
// again; once it left (and came back) it runs again.
func TestDrainStopsTheActorThenReleases(t *testing.T) {
	r := newFenceRig(t, nil)
	r.sys.Root.Send(r.mgr, ClusterDrain{Namespace: "db", Name: "demo", UID: "u-1"})
	waitFor(t, "the release", func() bool { return len(r.releasedNow()) == 1 })
	if got := r.releasedNow()[0]; got != "db/demo@u-1" {
		t.Fatalf("released %q", got)
	}
	if got := r.clusters(t); len(got) != 0 {
		t.Fatalf("released while the Manager still runs %v", got)
	}
	n := len(r.records(t))
	r.pokeWithNewSpec() // the watch may still show it here before the labels go
	if got := r.clusters(t); len(got) != 0 {
		t.Fatalf("respawned while given back: %v", got)
	}
	if got := len(r.records(t)); got != n {
		t.Fatalf("%d records after the release, want %d", got, n)
	}
	r.sys.Root.Send(r.mgr, ClusterDrain{Namespace: "db", Name: "demo", UID: "u-1"})
	waitFor(t, "the repeated acknowledgement", func() bool { return len(r.releasedNow()) == 2 })
	r.sys.Root.Send(r.mgr, ClusterDeleted{Namespace: "db", Name: "demo", UID: "u-1"})
	r.sys.Root.Send(r.mgr, ClusterChanged{Mgors: mgors()})
	waitFor(t, "the actor to run again", func() bool { return r.clusters(t)["db/demo"] == "u-1" })
}

// TestEachSpawnIsAWriterOfItsOwn: sharded (WriterTerms), a Mgors that leaves
// this Manager and comes back is run by a new writer, Writer#n with a new n,
// so in its log the writers follow one another and the first does not return.
func TestEachSpawnIsAWriterOfItsOwn(t *testing.T) {
	store, world := eventlog.NewMemory(), newFakeWorld()
	sys := actor.NewActorSystem()
	deps := testDeps(store, world)
	deps.WriterTerms = true
	deps.SnapshotEvery = 0
	mgr := sys.Root.Spawn(NewManagerProps(deps))
	t.Cleanup(func() { _ = sys.Root.PoisonFuture(mgr).Wait() })
	r := &fenceRig{store: store, world: world, sys: sys, mgr: mgr}
	sys.Root.Send(mgr, ClusterChanged{Mgors: mgors()})
	waitFor(t, "Healthy", func() bool { return world.phase("db/demo") == "Healthy" })
	first := r.records(t)[0].Writer
	// Moved away and back at once: the first actor may still hold its name
	// when the second is spawned (then the spawn is retried).
	sys.Root.Send(mgr, ClusterDeleted{Namespace: "db", Name: "demo", UID: "u-1"})
	waitFor(t, "the actor to stop", func() bool { return len(r.clusters(t)) == 0 })
	m := mgors()
	m.Generation, m.Spec.Paused = 2, true        // something to write
	sys.Root.Send(mgr, ClusterChanged{Mgors: m}) // and back
	waitFor(t, "a record of the second actor", func() bool {
		recs := r.records(t)
		return recs[len(recs)-1].Writer != first
	})
	var writers []string
	for _, rec := range r.records(t) {
		if len(writers) == 0 || writers[len(writers)-1] != rec.Writer {
			writers = append(writers, rec.Writer)
		}
	}
	if len(writers) != 2 || !strings.HasPrefix(writers[0], deps.Writer+"#") || !strings.HasPrefix(writers[1], deps.Writer+"#") {
		t.Fatalf("writers in the log: %v, want two, %s#<n> each", writers, deps.Writer)
	}
}
