package actors

import (
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func demo(members int32) *v1alpha1.Mgors {
	m := &v1alpha1.Mgors{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "db", UID: "u-1", Generation: 1}}
	m.Spec.Members = members
	m.Default()
	return m
}

// world is a small builder of observations for Decide's tests.
type world struct {
	m       *v1alpha1.Mgors
	desired []mongo.DesiredMember
	obs     Observation
}

func newWorld(m *v1alpha1.Mgors) *world {
	w := &world{m: m, desired: mongo.Desired(m, "cluster.local")}
	w.obs = Observation{At: t0, ObjectsReady: true, Replicas: m.Spec.Members, ArbiterReplicas: -1, Pods: map[string]PodView{}, Members: map[string]MemberView{}}
	if m.Spec.Arbiters > 0 {
		w.obs.ArbiterReplicas = m.Spec.Arbiters
	}
	w.obs.Budget, _, _ = Budget(w.obs, w.desired, false) // the budget the spec's shape wants
	for _, dm := range w.desired {
		w.obs.Pods[dm.Name] = PodView{Name: dm.Name, UID: dm.Name + "-uid", Phase: "Running"}
	}
	return w
}

// answering makes every desired member answer hello without a config.
func (w *world) answering() *world {
	for _, dm := range w.desired {
		w.obs.Members[dm.Host] = MemberView{Name: dm.Name, Host: dm.Host, Answers: true}
	}
	return w
}

// initiated gives every member the initial config, ordinal 0 primary.
func (w *world) initiated() *world {
	cfg := mongo.InitialConfig(w.m.ReplSetName(), w.desired, w.m.Spec.ReplicaSet)
	w.obs.Config, w.obs.ConfigFrom = &cfg, w.desired[0].Host
	st := &mongo.Status{Set: w.m.ReplSetName(), MyState: mongo.StatePrimary, Term: 1}
	for i, dm := range w.desired {
		state := mongo.StateSecondary
		if i == 0 {
			state = mongo.StatePrimary
		}
		w.obs.Members[dm.Host] = MemberView{Name: dm.Name, Host: dm.Host, Answers: true, HasConfig: true, ConfigVersion: 1, State: state, Primary: i == 0}
		st.Members = append(st.Members, mongo.MemberStatus{ID: i, Name: dm.Host, Health: 1, State: state, StateStr: state.String(), ConfigVersion: 1, Self: i == 0})
	}
	w.obs.Status = st
	w.obs.Primary = w.desired[0].Host
	return w
}

// budgeted gives the world the PodDisruptionBudget the actor sets for what
// it shows (decide_budget_test.go), for tests of the rules after it.
func (w *world) budgeted() *world {
	w.obs.Budget, _, _ = Budget(w.obs, w.desired, true)
	return w
}

func (w *world) in() Inputs {
	return Inputs{Mgors: w.m, Desired: w.desired, Obs: w.obs, Now: t0}
}

// run folds a decision's events into s, as the actor does once they are durable.
func run(s State, d Decision) State {
	for _, e := range d.Events {
		s = Evolve(s, s.Seq+1, t0, e)
	}
	return s
}

func types(d Decision) []string {
	var out []string
	for _, e := range d.Events {
		out = append(out, e.Type())
	}
	return out
}

func has(d Decision, typ string) bool {
	for _, e := range d.Events {
		if e.Type() == typ {
			return true
		}
	}
	return false
}

func TestNewClusterEnsuresObjectsFirst(t *testing.T) {
	w := newWorld(demo(3))
	w.obs.ObjectsReady, w.obs.ObjectsMessage, w.obs.Replicas = false, "StatefulSet demo missing", -1
	d := Decide(Initial(), w.in())
	if d.Action == nil || d.Action.Kind != ActEnsureObjects {
		t.Fatalf("action = %+v, events %v", d.Action, types(d))
	}
	last := d.Events[len(d.Events)-1].(ActionStarted)
	if last.Action != ActEnsureObjects {
		t.Fatalf("the action's ActionStarted must be the last event: %v", types(d))
	}
}

func TestProvisioningWaitsForEveryMember(t *testing.T) {
	w := newWorld(demo(3))
	s := run(Initial(), Decide(Initial(), w.in()))
	w.answering()
	delete(w.obs.Members, w.desired[2].Host)
	d := Decide(s, w.in())
	if d.Action != nil || has(d, "PhaseChanged") {
		t.Fatalf("moved on with a member silent: %v %+v", types(d), d.Action)
	}
}

func TestBootstrapToHealthy(t *testing.T) {
	w := newWorld(demo(3)).answering()
	s := Initial()
	d := Decide(s, w.in())
	s = run(s, d)
	if s.Phase != v1alpha1.PhaseInitiating {
		t.Fatalf("phase %s after every member answered; events %v", s.Phase, types(d))
	}
	d = Decide(s, w.in())
	if d.Action == nil || d.Action.Kind != ActInitiate || d.Action.Host != w.desired[0].Host || d.Action.Config.Version != 1 {
		t.Fatalf("want initiate on member 0: %+v", d.Action)
	}
	s = run(s, d)
	s = run(s, Decision{Events: Conclude(*d.Action, nil)})
	if !s.Initiated || s.Initiates != 1 {
		t.Fatalf("state after initiate: %s", s)
	}
	// Until a primary exists, nothing more happens; then the user is checked.
	w.initiated()
	w.obs.Primary = ""
	if d := Decide(s, w.in()); d.Action != nil {
		t.Fatalf("acted without a primary: %+v", d.Action)
	}
	w.initiated()
	d = Decide(s, w.in())
	s = run(s, d)
	if d.Action != nil {
		t.Fatalf("created a user before checking it exists: %+v", d.Action)
	}
	no := false
	w.obs.AdminUser = &no
	d = Decide(s, w.in())
	if d.Action == nil || d.Action.Kind != ActCreateUser || d.Action.Host != w.obs.Primary {
		t.Fatalf("want user creation on the primary: %+v", d.Action)
	}
	s = run(s, d)
	s = run(s, Decision{Events: Conclude(*d.Action, nil)})
	yes := true
	w.obs.AdminUser = &yes
	d = Decide(s, w.in())
	s = run(s, d)
	if s.Phase != v1alpha1.PhaseHealthy || s.UsersCreated != 1 {
		t.Fatalf("not healthy: %s events %v", s, types(d))
	}
	// A healthy, untouched cluster writes nothing.
	for i := 0; i < 5; i++ {
		if d := Decide(s, w.in()); len(d.Events) != 0 || d.Action != nil {
			t.Fatalf("steady observation wrote %v", types(d))
		}
	}
}

// Invariant 1: a set with a config anywhere is never initiated, whatever the log says.
func TestNeverInitiatesOverAnExistingConfig(t *testing.T) {
	w := newWorld(demo(3)).answering()
	s := run(Initial(), Decide(Initial(), w.in()))
	if s.Phase != v1alpha1.PhaseInitiating {
		t.Fatalf("phase %s", s.Phase)
	}
	// One member (say, an adopted volume) holds a config; the others do not yet.
	w2 := newWorld(demo(3)).answering()
	cfg := mongo.InitialConfig("demo", w2.desired, v1alpha1.ReplicaSetSettings{})
	w2.obs.Config, w2.obs.ConfigFrom = &cfg, w2.desired[2].Host
	d := Decide(s, w2.in())
	if d.Action != nil && d.Action.Kind == ActInitiate {
		t.Fatal("initiated over an existing config")
	}
	if !has(d, "WorldDisagreed") || !has(d, "Initiated") {
		t.Fatalf("want the disagreement and the found config recorded: %v", types(d))
	}
	if s2 := run(s, d); s2.Initiates != 0 || !s2.Initiated {
		t.Fatalf("found config counted as an initiate: %s", s2)
	}
}

func TestInFlightSettledFromTheWorld(t *testing.T) {
	w := newWorld(demo(3)).answering()
	s := Initial()
	s = Evolve(s, 1, t0, PhaseChanged{From: v1alpha1.PhaseProvisioning, To: v1alpha1.PhaseInitiating})
	s = Evolve(s, 2, t0, SpecObserved{Generation: 1, Members: 3})
	s = Evolve(s, 3, t0, ActionStarted{Action: ActInitiate, Target: w.desired[0].Host, ConfigVersion: 1})

	// The operator died after sending the initiate, which landed.
	w.initiated()
	d := Decide(s, w.in())
	if d.Action != nil && d.Action.Kind == ActInitiate {
		t.Fatal("initiated twice after a crash")
	}
	s2 := run(s, d)
	if !s2.Initiated || s2.Initiates != 1 || s2.InFlight != nil {
		t.Fatalf("after settling: %s, events %v", s2, types(d))
	}

	// The operator died before the initiate reached anyone: it fails, then
	// after the back-off the initiate is decided again.
	w = newWorld(demo(3)).answering()
	d = Decide(s, w.in())
	s3 := run(s, d)
	if s3.InFlight != nil || s3.LastFailure == nil || d.Action != nil {
		t.Fatalf("want a failure and no action during back-off: %s %+v", s3, d.Action)
	}
	in := w.in()
	in.Now = t0.Add(backoff(1))
	d = Decide(s3, in)
	if d.Action == nil || d.Action.Kind != ActInitiate {
		t.Fatalf("want the initiate again after back-off: %+v", d.Action)
	}
}

func TestConcludeAlreadyInitializedIsTheWorldsEffect(t *testing.T) {
	cfg := mongo.Config{Version: 1}
	evs := Conclude(Action{Kind: ActInitiate, Host: "h:27017", Config: &cfg}, mongo.ErrAlreadyInitialized)
	if len(evs) != 2 || evs[1].(Initiated).Found != true {
		t.Fatalf("events %+v", evs)
	}
	evs = Conclude(Action{Kind: ActReconfig, Host: "h:27017", Config: &cfg}, errors.New("network down"))
	if f, ok := evs[0].(ActionFailed); !ok || f.Error != "network down" {
		t.Fatalf("events %+v", evs)
	}
}

func TestHealthyToRecoveringWhenThePrimaryIsLost(t *testing.T) {
	w := newWorld(demo(3)).initiated()
	yes := true
	w.obs.AdminUser = &yes
	s := Initial()
	for i := 0; i < 4; i++ {
		s = run(s, Decide(s, w.in()))
	}
	if s.Phase != v1alpha1.PhaseHealthy {
		t.Fatalf("phase %s", s)
	}
	w.obs.Primary = ""
	delete(w.obs.Members, w.desired[0].Host)
	d := Decide(s, w.in())
	s = run(s, d)
	if s.Phase != v1alpha1.PhaseRecovering || !has(d, "MembersObserved") {
		t.Fatalf("phase %s events %v", s.Phase, types(d))
	}
	if d := Decide(s, w.in()); d.Action != nil {
		t.Fatalf("the operator acted on a lost primary that mongod heals itself: %+v", d.Action)
	}
}

func TestScaleUpGrowsTheStatefulSetThenAddsOneMemberAtATime(t *testing.T) {
	w := newWorld(demo(3)).initiated()
	yes := true
	w.obs.AdminUser = &yes
	s := Initial()
	for i := 0; i < 4; i++ {
		s = run(s, Decide(s, w.in()))
	}
	m5 := demo(5)
	m5.Generation = 2
	w5 := newWorld(m5)
	w5.obs = w.obs
	d := Decide(s, w5.in())
	s = run(s, d)
	if s.Phase != v1alpha1.PhaseRecovering {
		t.Fatalf("phase %s after scale request; events %v", s.Phase, types(d))
	}
	// The budget first: 5 pods with 3 voters lose at most one.
	d = Decide(s, w5.in())
	if d.Action == nil || d.Action.Kind != ActSetBudget || d.Action.MinAvailable != 4 {
		t.Fatalf("want the budget raised to 4 before the StatefulSet grows: %+v", d.Action)
	}
	s = run(s, d)
	s = run(s, Decision{Events: Conclude(*d.Action, nil)})
	w5.obs.Budget = 4
	d = Decide(s, w5.in())
	if d.Action == nil || d.Action.Kind != ActScale || d.Action.Replicas != 5 {
		t.Fatalf("want the StatefulSet grown to 5: %+v", d.Action)
	}
	s = run(s, d)
	s = run(s, Decision{Events: Conclude(*d.Action, nil)})
	w5.obs.Replicas = 5
	for _, dm := range w5.desired[3:] {
		w5.obs.Members[dm.Host] = MemberView{Name: dm.Name, Host: dm.Host, Answers: true}
	}
	d = Decide(s, w5.in())
	if d.Action == nil || d.Action.Kind != ActReconfig || d.Action.Config.Version != 2 {
		t.Fatalf("want one reconfig to version 2: %+v events %v", d.Action, types(d))
	}
	if n := mongo.VotingChanges(*w5.obs.Config, *d.Action.Config); n > 1 {
		t.Fatalf("a reconfig changed %d voting members", n)
	}
}

func TestPausedOnlyObserves(t *testing.T) {
	m := demo(3)
	m.Spec.Paused = true
	w := newWorld(m)
	w.obs.ObjectsReady = false
	d := Decide(Initial(), w.in())
	if d.Action != nil {
		t.Fatalf("acted while paused: %+v", d.Action)
	}
}

func TestOrdinalOf(t *testing.T) {
	m := demo(3)
	for host, want := range map[string]int32{
		"demo-0.demo-svc.db.svc.cluster.local:27017":         0,
		"demo-12.demo-svc.db.svc.cluster.local:27017":        12,
		"demo-arbiter-0.demo-svc.db.svc.cluster.local:27017": -1,
		"other-1.x:27017": -1,
	} {
		if got := ordinalOf(m, host); got != want {
			t.Errorf("ordinalOf(%s) = %d, want %d", host, got, want)
		}
	}
}

// healthyState folds a bootstrap so the state is Healthy for w.
func healthyState(t *testing.T, w *world) State {
	yes := true
	w.obs.AdminUser = &yes
	s := Initial()
	for i := 0; i < 4; i++ {
		s = run(s, Decide(s, w.in()))
	}
	if s.Phase != v1alpha1.PhaseHealthy {
		t.Fatalf("not healthy: %s", s)
	}
	return s
}

// A template change rolls the pods one at a time: secondaries first, highest
// ordinal first, never while a member is away, and the primary only after it
// stepped down.
func TestRollingRestartOneMemberAtATime(t *testing.T) {
	w := newWorld(demo(3)).initiated()
	s := healthyState(t, w)
	for name, p := range w.obs.Pods {
		p.Outdated, p.Ready = true, true
		w.obs.Pods[name] = p
	}
	d := Decide(s, w.in())
	s = run(s, d)
	if s.Phase != v1alpha1.PhaseRecovering {
		t.Fatalf("outdated pods did not start a rollout: %v", types(d))
	}
	d = Decide(s, w.in())
	if d.Action == nil || d.Action.Kind != ActRestartMember || d.Action.Host != "demo-2" {
		t.Fatalf("want demo-2 restarted first: %+v", d.Action)
	}
	s = run(s, d)
	s = run(s, Decision{Events: Conclude(*d.Action, nil)})

	// demo-2 is away (being recreated): nothing else restarts.
	p := w.obs.Pods["demo-2"]
	p.Ready, p.Outdated = false, false
	w.obs.Pods["demo-2"] = p
	mv := w.obs.Members[w.desired[2].Host]
	mv.Answers = false
	w.obs.Members[w.desired[2].Host] = mv
	d = Decide(s, w.in())
	s = run(s, d)
	if d.Action != nil {
		t.Fatalf("restarted a second member while one was away: %+v", d.Action)
	}
	// It is back as a SECONDARY: next is demo-1, then the primary steps down.
	p.Ready = true
	w.obs.Pods["demo-2"] = p
	mv.Answers = true
	w.obs.Members[w.desired[2].Host] = mv
	d = Decide(s, w.in())
	if d.Action == nil || d.Action.Host != "demo-1" {
		t.Fatalf("want demo-1 next: %+v", d.Action)
	}
	s = run(s, d)
	s = run(s, Decision{Events: Conclude(*d.Action, nil)})
	p1 := w.obs.Pods["demo-1"]
	p1.Outdated = false
	w.obs.Pods["demo-1"] = p1
	d = Decide(s, w.in())
	if d.Action == nil || d.Action.Kind != ActStepDown || d.Action.Host != w.desired[0].Host {
		t.Fatalf("want the primary to step down before its restart: %+v", d.Action)
	}
}
