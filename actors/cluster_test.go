package actors

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgors/operator/actors/eventlog"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo"
)

// fakeWorld is a replica set in memory that behaves as the real one does for
// what the actor does: objects appear when ensured, members answer, an
// initiate installs a config once (mongod refuses a second), a primary
// follows, the admin user is created once.
type fakeWorld struct {
	mu        sync.Mutex
	dead      bool // the "process" crashed: nothing reaches the world any more
	objects   bool
	config    *mongo.Config
	user      bool
	initiates int // successful initiates the world saw
	users     int
	status    map[string]v1alpha1.MgorsStatus
	budget    int32 // the PodDisruptionBudget's minAvailable, -1 before it exists
}

var errDead = errors.New("operator process is dead")

func newFakeWorld() *fakeWorld {
	return &fakeWorld{status: map[string]v1alpha1.MgorsStatus{}, budget: -1}
}

func (w *fakeWorld) Observe(ctx context.Context, m *v1alpha1.Mgors, desired []mongo.DesiredMember, _ Auth) (Observation, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dead {
		return Observation{}, errDead
	}
	o := Observation{At: time.Now(), ObjectsReady: w.objects, Replicas: -1, ArbiterReplicas: -1, Budget: w.budget,
		Pods: map[string]PodView{}, Members: map[string]MemberView{}}
	if !w.objects {
		o.ObjectsMessage = "objects missing"
		return o, nil
	}
	o.Replicas = m.Spec.Members
	st := &mongo.Status{Set: m.ReplSetName()}
	for i, dm := range desired {
		o.Pods[dm.Name] = PodView{Name: dm.Name, Phase: "Running", Ready: true}
		mv := MemberView{Name: dm.Name, Host: dm.Host, Answers: true}
		if w.config != nil {
			mv.HasConfig, mv.ConfigVersion = true, w.config.Version
			mv.State, mv.Primary = mongo.StateSecondary, i == 0
			if i == 0 {
				mv.State = mongo.StatePrimary
			}
			st.Members = append(st.Members, mongo.MemberStatus{ID: i, Name: dm.Host, Health: 1, State: mv.State, ConfigVersion: w.config.Version})
		}
		o.Members[dm.Host] = mv
	}
	if w.config != nil {
		c := w.config.Clone()
		o.Config, o.ConfigFrom, o.Status, o.Primary = &c, desired[0].Host, st, desired[0].Host
		u := w.user
		o.AdminUser = &u
	}
	return o, nil
}

func (w *fakeWorld) Act(ctx context.Context, m *v1alpha1.Mgors, a Action) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dead {
		return errDead
	}
	switch a.Kind {
	case ActEnsureObjects:
		w.objects = true
	case ActSetBudget:
		w.budget = a.MinAvailable
	case ActInitiate:
		if w.config != nil {
			return mongo.ErrAlreadyInitialized
		}
		c := a.Config.Clone()
		w.config = &c
		w.initiates++
	case ActCreateUser:
		if w.user {
			return &mongo.ServerError{Code: mongo.CodeDuplicateUser, Name: "Location51003", Message: "User already exists"}
		}
		w.user = true
		w.users++
	case ActReconfig:
		c := a.Config.Clone()
		w.config = &c
	}
	return nil
}

func (w *fakeWorld) WriteStatus(ctx context.Context, m *v1alpha1.Mgors, st v1alpha1.MgorsStatus) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dead {
		return errDead
	}
	w.status[m.Namespace+"/"+m.Name] = st
	return nil
}

func (w *fakeWorld) Event(*v1alpha1.Mgors, bool, string, string) {}

func (w *fakeWorld) phase(key string) v1alpha1.Phase {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.status[key].Phase
}

func testDeps(store eventlog.Store, w World) *Deps {
	return &Deps{
		Store: store, World: w, Log: zerolog.Nop(), Writer: "test", ClusterDomain: "cluster.local",
		Interval: 20 * time.Millisecond, ObserveTimeout: 5 * time.Second, ActTimeout: 5 * time.Second,
		SnapshotEvery: 4,
	}
}

func mgors() *v1alpha1.Mgors {
	m := &v1alpha1.Mgors{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "db", UID: "u-1", Generation: 1}}
	m.Spec.Members = 3
	m.Default()
	return m
}

// runOperator starts an actor system with a Manager fed one Mgors.
func runOperator(t *testing.T, deps *Deps) (stop func()) {
	sys := actor.NewActorSystem()
	mgr, err := sys.Root.SpawnNamed(NewManagerProps(deps), "manager")
	if err != nil {
		t.Fatal(err)
	}
	sys.Root.Send(mgr, ClusterChanged{Mgors: mgors()})
	return func() { _ = sys.Root.PoisonFuture(mgr).Wait() }
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitForWithin(t, 20*time.Second, what, cond)
}

// waitForWithin is waitFor with a bound of its own, for a test whose actor
// backs off up to its ten-second cap between steps (a busy machine makes a
// step that changes nothing more likely).
func waitForWithin(t *testing.T, bound time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestClusterActorBootstrapsToHealthy(t *testing.T) {
	store, world := eventlog.NewMemory(), newFakeWorld()
	stop := runOperator(t, testDeps(store, world))
	waitFor(t, "Healthy", func() bool { return world.phase("db/demo") == v1alpha1.PhaseHealthy })
	stop()
	if world.initiates != 1 || world.users != 1 {
		t.Fatalf("initiates %d, users %d", world.initiates, world.users)
	}
	snap, recs, err := store.Load(context.Background(), eventlog.Stream{Namespace: "db", Name: "demo", UID: "u-1"})
	if err != nil {
		t.Fatal(err)
	}
	s := Initial()
	if snap != nil {
		if err := unmarshalState(snap.State, &s); err != nil {
			t.Fatal(err)
		}
	}
	s, err = Fold(s, recs)
	if err != nil || s.Phase != v1alpha1.PhaseHealthy || s.Initiates != 1 {
		t.Fatalf("folded state %s, err %v", s, err)
	}
	// A restarted operator recovers, observes a healthy cluster, writes nothing.
	before := s.Seq
	stop = runOperator(t, testDeps(store, world))
	time.Sleep(200 * time.Millisecond)
	stop()
	_, recs, _ = store.Load(context.Background(), eventlog.Stream{Namespace: "db", Name: "demo", UID: "u-1"})
	if n := len(recs); n > 0 && recs[n-1].Seq != before {
		t.Fatalf("a restart over a healthy cluster wrote events: last seq %d, was %d", recs[n-1].Seq, before)
	}
}

// The operator dies right after each kind of event; a new one recovers from the
// log, and the cluster converges with one initiate, one user and a gapless log.
func TestClusterActorSurvivesACrashAfterEveryEvent(t *testing.T) {
	for _, typ := range []string{"SpecObserved", "ActionStarted", "ActionFinished", "PhaseChanged", "MembersObserved", "Initiated", "AdminUserReady"} {
		for nth := 1; nth <= 3; nth++ {
			store, world := eventlog.NewMemory(), newFakeWorld()
			deps := testDeps(store, world)
			seen := 0
			crashed := make(chan struct{})
			deps.AfterAppend = func(r eventlog.Record) {
				if r.Type != typ {
					return
				}
				seen++
				if seen == nth {
					world.mu.Lock()
					world.dead = true
					world.mu.Unlock()
					close(crashed)
				}
			}
			stop := runOperator(t, deps)
			waitFor(t, "a crash or Healthy", func() bool {
				select {
				case <-crashed:
					return true
				default:
					return world.phase("db/demo") == v1alpha1.PhaseHealthy
				}
			})
			stop()
			world.mu.Lock()
			world.dead = false
			world.mu.Unlock()

			stop = runOperator(t, testDeps(store, world))
			waitFor(t, "Healthy after a crash after "+typ, func() bool { return world.phase("db/demo") == v1alpha1.PhaseHealthy })
			stop()
			if world.initiates != 1 || world.users != 1 {
				t.Fatalf("crash after %s #%d: initiates %d, users %d", typ, nth, world.initiates, world.users)
			}
			snap, recs, err := store.Load(context.Background(), eventlog.Stream{Namespace: "db", Name: "demo", UID: "u-1"})
			if err != nil {
				t.Fatal(err)
			}
			base := int64(0)
			if snap != nil {
				base = snap.Seq
			}
			if err := eventlog.CheckSequence(base, recs); err != nil {
				t.Fatalf("crash after %s #%d: %v", typ, nth, err)
			}
		}
	}
}

// TestWriteFixture records a bootstrap as cmd/mgorsctl's replay fixture when
// MGORS_FIXTURE_DIR names a directory: a file store and the operator's log.
func TestWriteFixture(t *testing.T) {
	dir := os.Getenv("MGORS_FIXTURE_DIR")
	if dir == "" {
		t.Skip("set MGORS_FIXTURE_DIR to record the replay fixture")
	}
	store, err := eventlog.NewFile(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "operator.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = logf.Close() }()
	world := newFakeWorld()
	deps := testDeps(store, world)
	deps.SnapshotEvery = 0
	deps.Log = zerolog.New(logf).With().Timestamp().Logger()
	stop := runOperator(t, deps)
	waitFor(t, "Healthy", func() bool { return world.phase("db/demo") == v1alpha1.PhaseHealthy })
	stop()
}

// stuckWorld hangs every call about one cluster until its deadline, as an
// unreachable API or member would; other clusters go to the fake world.
type stuckWorld struct {
	*fakeWorld
	stuck string
}

func (w stuckWorld) hang(ctx context.Context, m *v1alpha1.Mgors) bool {
	if m.Name != w.stuck {
		return false
	}
	<-ctx.Done()
	return true
}

func (w stuckWorld) Observe(ctx context.Context, m *v1alpha1.Mgors, d []mongo.DesiredMember, auth Auth) (Observation, error) {
	if w.hang(ctx, m) {
		return Observation{}, ctx.Err()
	}
	return w.fakeWorld.Observe(ctx, m, d, auth)
}

func (w stuckWorld) Act(ctx context.Context, m *v1alpha1.Mgors, a Action) error {
	if w.hang(ctx, m) {
		return ctx.Err()
	}
	return w.fakeWorld.Act(ctx, m, a)
}

// One stuck cluster never slows another: each actor observes and acts off its
// own mailbox, every call bounded by its deadline.
func TestAStuckClusterDoesNotSlowAnother(t *testing.T) {
	store, world := eventlog.NewMemory(), newFakeWorld()
	deps := testDeps(store, stuckWorld{fakeWorld: world, stuck: "stuck"})
	deps.ObserveTimeout, deps.ActTimeout = time.Minute, time.Minute // the stuck cluster's calls hang this long
	sys := actor.NewActorSystem()
	mgr, err := sys.Root.SpawnNamed(NewManagerProps(deps), "manager")
	if err != nil {
		t.Fatal(err)
	}
	stuck := mgors()
	stuck.Name, stuck.UID = "stuck", "u-stuck"
	sys.Root.Send(mgr, ClusterChanged{Mgors: stuck})
	time.Sleep(50 * time.Millisecond) // the stuck actor is now blocked in its world call
	sys.Root.Send(mgr, ClusterChanged{Mgors: mgors()})
	// waitFor gives up long before the stuck cluster's calls return (a minute):
	// reaching Healthy means the other actor never waited for the stuck one.
	waitFor(t, "the healthy cluster to reach Healthy", func() bool { return world.phase("db/demo") == v1alpha1.PhaseHealthy })
	// Stopping does not wait for the stuck calls: the Manager stops its children.
	_ = sys.Root.PoisonFuture(mgr).Wait()
}
