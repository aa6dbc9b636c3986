package actors

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgors/operator/actors/eventlog"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo"
)

// node is one member of setWorld: its process (up) and its volume (config,
// optime).
type node struct {
	up     bool
	config *mongo.Config // nil: an empty volume
	optime uint32        // last applied write, in term 1 (the fake never rolls back)
	pods   int           // pods created before the one running: its UID
	fenced int           // FencePods that deleted a pod
}

// setWorld is a replica set in memory that does what mongod does for the
// recovery paths: members hold their own config and data, a primary exists
// only while a majority of the newest config's voters is up, a forced
// reconfig raises the version by 10000 and is adopted by the members it
// names, members added by a reconfig sync from the primary, every
// observation with a primary is one more write, replicated to the members up.
type setWorld struct {
	mu        sync.Mutex
	nodes     []*node
	user      bool
	initiates int
	users     int
	forces    int
	removed   map[string]int // annotation → removals
	status    v1alpha1.MgorsStatus
	budget    int32 // the PodDisruptionBudget's minAvailable, -1 before it exists
	// violations are reconfigs that changed more than one voting member or
	// added more than one member.
	violations []string
}

// counts is what the world saw, read under its lock.
type counts struct{ initiates, users, forces, removedForce, removedReinit, violations int }

func (w *setWorld) counts() counts {
	w.mu.Lock()
	defer w.mu.Unlock()
	return counts{w.initiates, w.users, w.forces, w.removed[ForceAnnotation], w.removed[ReinitiateAnnotation], len(w.violations)}
}

func newSetWorld(n int) *setWorld {
	w := &setWorld{removed: map[string]int{}, budget: -1}
	for range n {
		w.nodes = append(w.nodes, &node{up: true})
	}
	return w
}

// current is the newest config any member up holds, and the index of a holder.
func (w *setWorld) current() (*mongo.Config, int) {
	var best *mongo.Config
	from := -1
	for i, n := range w.nodes {
		if n.up && n.config != nil && (best == nil || n.config.Version > best.Version) {
			best, from = n.config, i
		}
	}
	return best, from
}

// settle spreads the newest config to the members up that it names (as
// heartbeats do) and returns the primary's index, -1 when there is none.
func (w *setWorld) settle(desired []mongo.DesiredMember) int {
	cfg, _ := w.current()
	if cfg == nil {
		return -1
	}
	up, primary := 0, -1
	for i, n := range w.nodes {
		if !n.up || cfg.Member(desired[i].Host) == nil {
			continue
		}
		if n.config != nil && n.config.Version < cfg.Version {
			c := cfg.Clone()
			n.config = &c
		}
		if n.config != nil {
			up++
			if primary < 0 {
				primary = i
			}
		}
	}
	if up < cfg.MajorityVoteCount() {
		return -1
	}
	return primary
}

func (w *setWorld) Observe(ctx context.Context, m *v1alpha1.Mgors, desired []mongo.DesiredMember, _ Auth) (Observation, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	o := Observation{At: time.Now(), ObjectsReady: true, Replicas: m.Spec.Members, ArbiterReplicas: -1, Budget: w.budget,
		Pods: map[string]PodView{}, Members: map[string]MemberView{},
		ForceAnnotation: m.Annotations[ForceAnnotation], ReinitiateApproval: m.Annotations[ReinitiateAnnotation]}
	primary := w.settle(desired)
	if primary >= 0 { // one more write, replicated to the members up in the config
		top := w.nodes[primary].optime + 1
		for i, n := range w.nodes {
			if n.up && n.config != nil && n.config.Member(desired[i].Host) != nil {
				n.optime = top
			}
		}
	}
	cfg, from := w.current()
	for i, dm := range desired {
		n := w.nodes[i]
		o.Pods[dm.Name] = PodView{Name: dm.Name, UID: fmt.Sprintf("%s-%d", dm.Name, n.pods), Phase: "Running", Ready: n.up}
		mv := MemberView{Name: dm.Name, Host: dm.Host, Err: "connection refused"}
		if n.up {
			mv = MemberView{Name: dm.Name, Host: dm.Host, Answers: true, Primary: i == primary, LastWrite: opt(n.optime, 1)}
			if n.config != nil {
				mv.HasConfig, mv.ConfigVersion = true, n.config.Version
			}
		}
		o.Members[dm.Host] = mv
	}
	if cfg == nil {
		return o, nil
	}
	c := cfg.Clone()
	o.Config, o.ConfigFrom = &c, desired[from].Host
	statusFrom := func(self int) *mongo.Status {
		st := &mongo.Status{Set: c.ID, Term: 1, Optimes: mongo.StatusOptimes{LastCommittedOpTime: opt(w.nodes[self].optime, 1)}}
		for _, cm := range c.Members {
			i := ordinalOfHost(desired, cm.Host)
			n := w.nodes[i]
			ms := mongo.MemberStatus{ID: cm.ID, Name: cm.Host, Optime: opt(n.optime, 1), Self: i == self}
			switch {
			case n.up && n.config != nil && i == primary:
				ms.Health, ms.State = 1, mongo.StatePrimary
			case n.up && n.config != nil:
				ms.Health, ms.State = 1, mongo.StateSecondary
			default:
				ms.State = mongo.StateDown
			}
			st.Members = append(st.Members, ms)
		}
		return st
	}
	if primary >= 0 {
		o.Primary, o.Status = desired[primary].Host, statusFrom(primary)
		for _, ms := range o.Status.Members {
			mv := o.Members[ms.Name]
			mv.State = ms.State
			o.Members[ms.Name] = mv
		}
		u := w.user
		o.AdminUser = &u
		return o, nil
	}
	o.Status = statusFrom(from)
	o.Statuses = map[string]*mongo.Status{}
	for i, n := range w.nodes {
		if n.up && n.config != nil && c.Member(desired[i].Host) != nil {
			o.Statuses[desired[i].Host] = statusFrom(i)
		}
	}
	return o, nil
}

func ordinalOfHost(desired []mongo.DesiredMember, host string) int {
	for i, dm := range desired {
		if mongo.SameHost(dm.Host, host) {
			return i
		}
	}
	panic("unknown host " + host)
}

func (w *setWorld) Act(ctx context.Context, m *v1alpha1.Mgors, a Action) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	desired := mongo.Desired(m, "cluster.local")
	install := func(c mongo.Config) {
		var top uint32
		for _, n := range w.nodes {
			top = max(top, n.optime)
		}
		for i, n := range w.nodes {
			if n.up && c.Member(desired[i].Host) != nil {
				cc := c.Clone()
				if n.config == nil {
					n.optime = top // an initial sync
				}
				n.config = &cc
			}
		}
	}
	switch a.Kind {
	case ActInitiate:
		if cfg, _ := w.current(); cfg != nil {
			return mongo.ErrAlreadyInitialized
		}
		install(*a.Config)
		w.initiates++
		w.user = false
	case ActCreateUser:
		if w.user {
			return &mongo.ServerError{Code: mongo.CodeDuplicateUser, Name: "Location51003", Message: "User already exists"}
		}
		w.user = true
		w.users++
	case ActReconfig:
		if w.settle(desired) < 0 {
			return &mongo.ServerError{Code: 10107, Message: "not primary"}
		}
		old, _ := w.current()
		if n := mongo.VotingChanges(*old, *a.Config); n > 1 || len(a.Config.Members) > len(old.Members)+1 {
			w.violations = append(w.violations, fmt.Sprintf("%d voting changes, %d → %d members", n, len(old.Members), len(a.Config.Members)))
		}
		install(*a.Config)
	case ActForceReconfig:
		n := w.nodes[ordinalOfHost(desired, a.Host)]
		if !n.up {
			return errors.New("connection refused")
		}
		c := a.Config.Clone()
		c.Version += 10000
		n.config = &c
		w.forces++
	case ActSetBudget:
		w.budget = a.MinAvailable
	case ActRemoveAnnotation:
		w.removed[a.Host]++
	case ActWipeMember:
		n := w.nodes[podOrdinal(m, a.Host)]
		n.config, n.optime = nil, 0
	case ActFencePod: // the StatefulSet recreates the pod at once; a member down stays down
		n := w.nodes[podOrdinal(m, a.Host)]
		if a.UID == fmt.Sprintf("%s-%d", a.Host, n.pods) {
			n.pods++
			n.fenced++
		}
	}
	return nil
}

func (w *setWorld) WriteStatus(ctx context.Context, m *v1alpha1.Mgors, st v1alpha1.MgorsStatus) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.status = st
	return nil
}

func (w *setWorld) Event(*v1alpha1.Mgors, bool, string, string) {}

// with runs f on the world under its lock.
func (w *setWorld) with(f func(w *setWorld)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f(w)
}

func (w *setWorld) cond(typ string) metav1.Condition {
	w.mu.Lock()
	defer w.mu.Unlock()
	return findCond(w.status, typ)
}

// healthyWith is true when the status is Healthy with every member in the config.
func (w *setWorld) healthyWith(members int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	cfg, _ := w.current()
	return w.status.Phase == v1alpha1.PhaseHealthy && cfg != nil && len(cfg.Members) == members
}

// lose stops members and empties their volumes ("gone with their volumes").
func (w *setWorld) lose(ordinals ...int) {
	w.with(func(w *setWorld) {
		for _, i := range ordinals {
			w.nodes[i].up, w.nodes[i].config, w.nodes[i].optime = false, nil, 0
		}
	})
}

func (w *setWorld) restart(ordinals ...int) {
	w.with(func(w *setWorld) {
		for _, i := range ordinals {
			w.nodes[i].up = true
		}
	})
}

// operator is a running actor system with a Manager, fed Mgors objects.
type operator struct {
	sys *actor.ActorSystem
	mgr *actor.PID
}

func startOperator(t *testing.T, deps *Deps, m *v1alpha1.Mgors) *operator {
	t.Helper()
	sys := actor.NewActorSystem()
	mgr, err := sys.Root.SpawnNamed(NewManagerProps(deps), "manager")
	if err != nil {
		t.Fatal(err)
	}
	sys.Root.Send(mgr, ClusterChanged{Mgors: m.DeepCopy()})
	return &operator{sys: sys, mgr: mgr}
}

func (o *operator) send(m *v1alpha1.Mgors) {
	o.sys.Root.Send(o.mgr, ClusterChanged{Mgors: m.DeepCopy()})
}

func (o *operator) stop() { _ = o.sys.Root.PoisonFuture(o.mgr).Wait() }

var demoStream = eventlog.Stream{Namespace: "db", Name: "demo", UID: "u-1"}

// logged decodes the cluster's whole log.
func logged(t *testing.T, store eventlog.Store) []eventlog.Record {
	t.Helper()
	_, recs, err := store.Load(context.Background(), demoStream)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// first returns the first record of the type for which ok holds.
func first[E Event](t *testing.T, recs []eventlog.Record, ok func(E) bool) (eventlog.Record, E, bool) {
	for _, r := range recs {
		e, known, err := Decode(r)
		if err != nil {
			t.Fatal(err)
		}
		if x, is := e.(E); known && is && (ok == nil || ok(x)) {
			return r, x, true
		}
	}
	var zero E
	return eventlog.Record{}, zero, false
}

func recoveryDeps(store eventlog.Store, w World) *Deps {
	deps := testDeps(store, w)
	deps.SnapshotEvery = 0 // the assertions read the whole log
	return deps
}

// Case 1, Manual: two of three members gone with their volumes. The actor
// records the loss and waits; a person's approval is validated, acted on once
// and removed; the lost members come back empty and are added one reconfig at
// a time; Healthy with the full membership.
func TestMajorityLossManualEndToEnd(t *testing.T) {
	store, world := eventlog.NewMemory(), newSetWorld(3)
	m := mgors()
	op := startOperator(t, recoveryDeps(store, world), m)
	defer op.stop()
	waitFor(t, "Healthy", func() bool { return world.healthyWith(3) })

	world.lose(1, 2)
	waitFor(t, "the MajorityLost condition", func() bool { return world.cond(v1alpha1.ConditionMajorityLost).Status == metav1.ConditionTrue })
	if c := world.counts(); c.forces != 0 {
		t.Fatalf("forced without an approval: %+v", c)
	}

	// A wrong approval first: an unreachable member.
	m.Annotations = map[string]string{ForceAnnotation: "demo-2"}
	op.send(m)
	waitFor(t, "the refusal", func() bool {
		_, _, ok := first[ApprovalRefused](t, logged(t, store), nil)
		return ok
	})
	waitFor(t, "the refused approval removed", func() bool { return world.counts().removedForce == 1 })
	delete(m.Annotations, ForceAnnotation)
	op.send(m)

	m.Annotations = map[string]string{ForceAnnotation: "demo-0"}
	op.send(m)
	waitFor(t, "the force", func() bool { return world.counts().forces == 1 })
	waitFor(t, "the approval removed", func() bool { return world.counts().removedForce == 2 })
	delete(m.Annotations, ForceAnnotation)
	op.send(m)
	world.restart(1, 2)
	waitFor(t, "Healthy with three members", func() bool { return world.healthyWith(3) })
	if c := world.counts(); c.forces != 1 || c.violations != 0 {
		t.Fatalf("%+v: %v", c, world.violations)
	}
	_, fd, ok := first[ForceDecided](t, logged(t, store), nil)
	if !ok || fd.Policy != "Manual" || fd.Approval != "demo-0" || len(fd.Kept) != 1 {
		t.Fatalf("ForceDecided %+v", fd)
	}
}

// Case 1, Automatic: the actor forces on its own, not before the grace period
// from the recorded loss, and grows back to Healthy.
func TestMajorityLossAutomaticEndToEnd(t *testing.T) {
	store, world := eventlog.NewMemory(), newSetWorld(3)
	m := mgors()
	m.Spec.Recovery.MajorityLoss = v1alpha1.RecoveryAutomatic
	m.Spec.Recovery.GracePeriod = &metav1.Duration{Duration: 300 * time.Millisecond}
	op := startOperator(t, recoveryDeps(store, world), m)
	defer op.stop()
	waitFor(t, "Healthy", func() bool { return world.healthyWith(3) })

	world.lose(1, 2)
	waitFor(t, "the force", func() bool { return world.counts().forces == 1 })
	world.restart(1, 2)
	waitFor(t, "Healthy with three members", func() bool { return world.healthyWith(3) })
	recs := logged(t, store)
	lostRec, _, ok1 := first[MajorityLost](t, recs, nil)
	forceRec, fd, ok2 := first[ForceDecided](t, recs, nil)
	if !ok1 || !ok2 || fd.Policy != "Automatic" {
		t.Fatalf("log lacks the loss or the force: %v %v %+v", ok1, ok2, fd)
	}
	if gap := forceRec.Time.Sub(lostRec.Time); gap < 300*time.Millisecond {
		t.Fatalf("forced %v after the recorded loss, before the grace period", gap)
	}
	if c := world.counts(); c.forces != 1 || c.violations != 0 {
		t.Fatalf("%+v", c)
	}
}

// Case 4: every volume lost on an initiated set. Never initiated again on its
// own; the approval with the Mgors's UID brings it back, with its admin user.
func TestEveryVolumeLostEndToEnd(t *testing.T) {
	store, world := eventlog.NewMemory(), newSetWorld(3)
	m := mgors()
	op := startOperator(t, recoveryDeps(store, world), m)
	defer op.stop()
	waitFor(t, "Healthy", func() bool { return world.healthyWith(3) })

	world.lose(0, 1, 2)
	world.restart(0, 1, 2)
	waitFor(t, "the VolumesLost condition", func() bool { return world.cond(v1alpha1.ConditionStalled).Reason == "VolumesLost" })
	if c := world.counts(); c.initiates != 1 {
		t.Fatalf("initiated again on its own: %+v", c)
	}
	m.Annotations = map[string]string{ReinitiateAnnotation: string(m.UID)}
	op.send(m)
	waitFor(t, "Healthy again", func() bool { return world.healthyWith(3) && world.counts().users == 2 })
	if c := world.counts(); c.initiates != 2 || c.removedReinit != 1 {
		t.Fatalf("%+v", c)
	}
	if _, _, ok := first[ApprovalAccepted](t, logged(t, store), func(e ApprovalAccepted) bool { return e.Value == "u-1" }); !ok {
		t.Fatal("the approval is not in the log")
	}
}

// killable is a store that can die: an append after kill fails, as when the
// process died right after a record was durable.
type killable struct {
	eventlog.Store
	mu   sync.Mutex
	dead bool
}

func (s *killable) kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dead = true
}

func (s *killable) Append(ctx context.Context, st eventlog.Stream, recs ...eventlog.Record) error {
	s.mu.Lock()
	dead := s.dead
	s.mu.Unlock()
	if dead {
		return errDead
	}
	return s.Store.Append(ctx, st, recs...)
}

// process is one operator process's view of a world: once it dies, its calls
// (including those of goroutines still running after the test stopped it)
// fail, while a new process reaches the world.
type process struct {
	World
	mu   sync.Mutex
	dead bool
}

func (p *process) die() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dead = true
}

func (p *process) isDead() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dead
}

func (p *process) Observe(ctx context.Context, m *v1alpha1.Mgors, d []mongo.DesiredMember, auth Auth) (Observation, error) {
	if p.isDead() {
		return Observation{}, errDead
	}
	return p.World.Observe(ctx, m, d, auth)
}

func (p *process) Act(ctx context.Context, m *v1alpha1.Mgors, a Action) error {
	if p.isDead() {
		return errDead
	}
	return p.World.Act(ctx, m, a)
}

func (p *process) WriteStatus(ctx context.Context, m *v1alpha1.Mgors, st v1alpha1.MgorsStatus) error {
	if p.isDead() {
		return errDead
	}
	return p.World.WriteStatus(ctx, m, st)
}

// Case 7: the operator dies between the force's ActionStarted and its result,
// with the force applied or not. The next operator settles it from the
// survivor's config and never forces twice.
func TestCrashBetweenTheForceAndItsRecord(t *testing.T) {
	for _, applied := range []bool{true, false} {
		t.Run(fmt.Sprintf("applied=%v", applied), func(t *testing.T) {
			mem, world := eventlog.NewMemory(), newSetWorld(3)
			store := &killable{Store: mem}
			m := mgors()
			m.Spec.Recovery.MajorityLoss = v1alpha1.RecoveryAutomatic
			m.Spec.Recovery.GracePeriod = &metav1.Duration{Duration: 100 * time.Millisecond}
			proc := &process{World: world}
			deps := recoveryDeps(store, proc)
			crashed := make(chan struct{})
			deps.AfterAppend = func(r eventlog.Record) {
				if e, _, _ := Decode(r); e != nil {
					if st, ok := e.(ActionStarted); ok && st.Action == ActForceReconfig {
						store.kill()
						if !applied {
							proc.die() // before the force is sent
						}
						close(crashed)
					}
				}
			}
			op := startOperator(t, deps, m)
			waitFor(t, "Healthy", func() bool { return world.healthyWith(3) })
			world.lose(1, 2)
			<-crashed
			if applied {
				waitFor(t, "the force to land", func() bool { return world.counts().forces == 1 })
			}
			proc.die() // the process is gone: its goroutines reach nothing
			op.stop()
			if _, _, ok := first[ActionFinished](t, logged(t, mem), func(e ActionFinished) bool { return e.Action == ActForceReconfig }); ok {
				t.Fatal("the force's result was recorded: no crash")
			}

			op = startOperator(t, recoveryDeps(mem, world), m)
			defer op.stop()
			waitFor(t, "the force settled", func() bool {
				return world.counts().forces == 1 && world.cond(v1alpha1.ConditionMajorityLost).Status == metav1.ConditionFalse
			})
			world.restart(1, 2)
			waitFor(t, "Healthy with three members", func() bool { return world.healthyWith(3) })
			if c := world.counts(); c.forces != 1 {
				t.Fatalf("%+v", c)
			}
			recs := logged(t, mem)
			if err := eventlog.CheckSequence(0, recs); err != nil {
				t.Fatal(err)
			}
			_, fin, finished := first[ActionFinished](t, recs, func(e ActionFinished) bool { return e.Action == ActForceReconfig })
			_, _, failed := first[ActionFailed](t, recs, func(e ActionFailed) bool { return e.Action == ActForceReconfig })
			if applied && (!finished || !fin.Observed || failed) {
				t.Fatalf("an applied force must be settled as observed: finished %v %+v failed %v", finished, fin, failed)
			}
			if !applied && (!failed || !finished || fin.Observed) {
				t.Fatalf("a force that never applied fails, then is decided again and finishes: failed %v finished %+v", failed, fin)
			}
		})
	}
}
