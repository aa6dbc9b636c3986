package actors

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo"
)

func opt(secs uint32, term int64) mongo.OpTime {
	return OpTime{Secs: secs, Inc: 1, Term: term}.mongo()
}

// withCommit gives the healthy world's primary status a commit point and
// optimes, so the state learns the last commit point seen.
func (w *world) withCommit(commit, applied uint32) *world {
	w.obs.Status.Optimes.LastCommittedOpTime = opt(commit, 1)
	for i := range w.obs.Status.Members {
		w.obs.Status.Members[i].Optime = opt(applied, 1)
	}
	return w
}

// lose takes every member but the kept ordinals away (no answer to hello);
// the survivors see the others down, each at its optime, and have no primary.
func (w *world) lose(optimes map[int]uint32, keep ...int) *world {
	w.obs.Primary = ""
	w.obs.Statuses = map[string]*mongo.Status{}
	for i, dm := range w.desired {
		if slices.Contains(keep, i) {
			mv := w.obs.Members[dm.Host]
			mv.Primary, mv.State, mv.LastWrite = false, mongo.StateSecondary, opt(optimes[i], 1)
			w.obs.Members[dm.Host] = mv
			continue
		}
		w.obs.Members[dm.Host] = MemberView{Name: dm.Name, Host: dm.Host, Err: "connection refused"}
	}
	for _, k := range keep {
		st := &mongo.Status{Set: "demo", MyState: mongo.StateSecondary, Term: 1, Optimes: mongo.StatusOptimes{LastCommittedOpTime: opt(90, 1)}}
		for i, dm := range w.desired {
			ms := mongo.MemberStatus{ID: i, Name: dm.Host, Health: 0, State: mongo.StateDown, Optime: opt(optimes[i], 1), Self: i == k}
			if slices.Contains(keep, i) {
				ms.Health, ms.State = 1, mongo.StateSecondary
			}
			st.Members = append(st.Members, ms)
		}
		w.obs.Statuses[w.desired[k].Host] = st
	}
	w.obs.Status = w.obs.Statuses[w.desired[keep[0]].Host]
	w.obs.ConfigFrom = w.desired[keep[0]].Host
	return w
}

// lostState is a healthy 3-member set that saw commit point 100, then lost
// members 1 and 2 at t0+1m: folded to the MajorityLost, in Recovering.
func lostState(t *testing.T, m *v1alpha1.Mgors) (State, *world) {
	t.Helper()
	w := newWorld(m).initiated().withCommit(100, 100)
	s := healthyState(t, w)
	// A member goes first (the view changes: the commit point rides along).
	w.obs.Members[w.desired[2].Host] = MemberView{Name: w.desired[2].Name, Host: w.desired[2].Host, Err: "connection refused"}
	s = runAt(s, Decide(s, w.in()), t0)
	w.lose(map[int]uint32{0: 95, 1: 100, 2: 98}, 0)
	in := w.in()
	in.Now = t0.Add(time.Minute)
	d := Decide(s, in)
	s = runAt(s, d, in.Now)
	if s.MajorityLost == nil {
		t.Fatalf("no MajorityLost: %v", types(d))
	}
	for i := 0; i < 3 && s.Phase != v1alpha1.PhaseRecovering; i++ {
		s = runAt(s, Decide(s, in), in.Now)
	}
	return s, w
}

func runAt(s State, d Decision, at time.Time) State {
	for _, e := range d.Events {
		s = Evolve(s, s.Seq+1, at, e)
	}
	return s
}

func TestMajorityLostCarriesTheEvidence(t *testing.T) {
	s, w := lostState(t, demo(3))
	ml := s.MajorityLost
	if !slices.Equal(ml.Missing, []string{w.desired[1].Host, w.desired[2].Host}) {
		t.Fatalf("missing %v", ml.Missing)
	}
	if got := ml.MissingSince[w.desired[2].Host]; !got.Equal(t0) {
		t.Errorf("member 2 missing since %v, want %v (when it was first seen down)", got, t0)
	}
	if got := ml.MissingSince[w.desired[1].Host]; !got.Equal(t0.Add(time.Minute)) {
		t.Errorf("member 1 missing since %v", got)
	}
	if len(ml.Survivors) != 1 || ml.Survivors[0].Host != w.desired[0].Host || ml.Survivors[0].Optime.Secs != 95 || ml.Survivors[0].Term != 1 {
		t.Errorf("survivors %+v", ml.Survivors)
	}
	if ml.CommitPoint.Secs != 100 || s.CommitPoint.Secs != 100 {
		t.Errorf("commit point %v / %v, want the 100 seen before the loss", ml.CommitPoint, s.CommitPoint)
	}
	if !s.MajorityLostAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("lost at %v", s.MajorityLostAt)
	}
}

func automatic(grace time.Duration) *v1alpha1.Mgors {
	m := demo(3)
	m.Spec.Recovery.MajorityLoss = v1alpha1.RecoveryAutomatic
	m.Spec.Recovery.GracePeriod = &metav1.Duration{Duration: grace}
	return m
}

func TestMajorityLossPolicy(t *testing.T) {
	lostAt := t0.Add(time.Minute)
	tests := []struct {
		name       string
		m          *v1alpha1.Mgors
		annotation string
		handled    bool
		now        time.Time
		change     func(w *world)
		// want is the action kind ("" none), onto the survivor for a force.
		want     ActionKind
		survivor int
		refused  string
	}{
		{name: "manual waits for a person", m: demo(3), now: lostAt.Add(time.Hour)},
		{name: "manual approval of the newest survivor", m: demo(3), annotation: "demo-0", now: lostAt, want: ActForceReconfig, survivor: 0},
		{name: "manual approval by host", m: demo(3), annotation: "demo-0.demo-svc.db.svc.cluster.local:27017", now: lostAt, want: ActForceReconfig, survivor: 0},
		{name: "manual approval of an unreachable member is refused and removed", m: demo(3), annotation: "demo-1", now: lostAt,
			want: ActRemoveAnnotation, refused: "does not answer"},
		{name: "manual approval of a member behind the newest is refused", m: demo(3), annotation: "demo-0", now: lostAt,
			change: func(w *world) { w.lose(map[int]uint32{0: 95, 1: 97}, 0, 1).obs.Status = nil },
			want:   ActRemoveAnnotation, refused: "is newer"},
		{name: "an approval already handled is only removed", m: demo(3), annotation: "demo-0", handled: true, now: lostAt, want: ActRemoveAnnotation},
		{name: "an unknown member is refused", m: demo(3), annotation: "demo-7", now: lostAt, want: ActRemoveAnnotation, refused: "not a member"},
		{name: "automatic waits for the grace period", m: automatic(time.Minute), now: lostAt.Add(59 * time.Second)},
		{name: "automatic forces after the grace period", m: automatic(time.Minute), now: lostAt.Add(time.Minute), want: ActForceReconfig, survivor: 0},
		{name: "automatic never forces while a majority answers hello with a config", m: automatic(time.Minute), now: lostAt.Add(time.Hour),
			change: func(w *world) {
				mv := w.obs.Members[w.desired[1].Host]
				mv.Name, mv.Host, mv.Answers, mv.HasConfig = w.desired[1].Name, w.desired[1].Host, true, true
				w.obs.Members[w.desired[1].Host] = mv
			}},
		{name: "members back empty do not count: automatic forces", m: automatic(time.Minute), now: lostAt.Add(time.Hour),
			change: func(w *world) {
				for _, i := range []int{1, 2} {
					w.obs.Members[w.desired[i].Host] = MemberView{Name: w.desired[i].Name, Host: w.desired[i].Host, Answers: true}
				}
			}, want: ActForceReconfig, survivor: 0},
		{name: "no survivor status: nothing to force onto", m: automatic(time.Minute), now: lostAt.Add(time.Hour),
			change: func(w *world) { w.obs.Statuses = nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, w := lostState(t, tt.m)
			if tt.change != nil {
				tt.change(w)
			}
			w.obs.ForceAnnotation = tt.annotation
			if tt.handled {
				s.Handled = map[string]string{ForceAnnotation: tt.annotation}
			}
			in := w.in()
			in.Now = tt.now
			d := Decide(s, in)
			decided := d
			if tt.want == ActForceReconfig {
				if d.Action == nil || d.Action.Kind != ActFencePod || d.Action.Host != "demo-1" {
					t.Fatalf("want demo-1 fenced before the force: %+v %v", d.Action, types(d))
				}
				in.Obs.ForceAnnotation = "" // removed by the operator meanwhile
				_, d = fenceAll(t, s, w, in, d)
			}
			var got ActionKind
			if d.Action != nil {
				got = d.Action.Kind
			}
			if got != tt.want {
				t.Fatalf("action %q, want %q; events %v", got, tt.want, types(d))
			}
			if tt.want == ActForceReconfig {
				if d.Action.Host != w.desired[tt.survivor].Host || d.Action.Config.Member(w.desired[1].Host) != nil {
					t.Fatalf("force onto %s with %v", d.Action.Host, hosts(*d.Action.Config))
				}
				fd := event[ForceDecided](t, decided)
				if !fd.MajorityWritesLost || fd.CommitPoint.Secs != 100 || fd.SurvivorOptime.Secs != 95 || fd.BestMissing != w.desired[1].Host {
					t.Fatalf("writes at risk not recorded: %+v", fd)
				}
				if !fd.LossSeen.Equal(lostAt) {
					t.Fatalf("loss seen %s, want %s: the bound of the writes at risk", fd.LossSeen, lostAt)
				}
				if started := d.Events[len(d.Events)-1].(ActionStarted); !strings.Contains(started.AtRisk, "w:majority") {
					t.Fatalf("ActionStarted.AtRisk %q", started.AtRisk)
				}
				if tt.annotation != "" && !has(decided, "ApprovalAccepted") {
					t.Fatalf("approval not recorded: %v", types(d))
				}
			}
			if tt.refused != "" {
				r := event[ApprovalRefused](t, d)
				if !strings.Contains(r.Reason, tt.refused) {
					t.Fatalf("refused because %q, want %q", r.Reason, tt.refused)
				}
				if s2 := run(s, d); s2.Refused == nil {
					t.Fatal("the refusal is not in the state (the condition shows it)")
				}
			}
		})
	}
}

// fenceAll carries the fencing of a decided force through (decision d):
// every FencePod succeeds and the StatefulSet recreates the pod under a new
// UID. It returns the state and the first decision that fences nothing.
func fenceAll(t *testing.T, s State, w *world, in Inputs, d Decision) (State, Decision) {
	t.Helper()
	for i := 0; d.Action != nil && d.Action.Kind == ActFencePod; i++ {
		if i == len(w.desired) {
			t.Fatalf("fencing does not end: %+v", d.Action)
		}
		s = runAt(s, d, in.Now)
		s = runAt(s, Decision{Events: Conclude(*d.Action, nil)}, in.Now)
		p := w.obs.Pods[d.Action.Host]
		p.UID += "-new"
		w.obs.Pods[d.Action.Host] = p
		d = Decide(s, in)
	}
	return s, d
}

// event returns the decision's only event of type E.
func event[E Event](t *testing.T, d Decision) E {
	t.Helper()
	for _, e := range d.Events {
		if x, ok := e.(E); ok {
			return x
		}
	}
	var zero E
	t.Fatalf("no %s in %v", zero.Type(), types(d))
	return zero
}

// An approval while a majority answers is refused and removed: it is never
// kept for a later loss.
func TestForceApprovalOnAHealthySetIsRefused(t *testing.T) {
	w := newWorld(demo(3)).initiated()
	s := healthyState(t, w)
	w.obs.ForceAnnotation = "demo-0"
	d := Decide(s, w.in())
	if d.Action == nil || d.Action.Kind != ActRemoveAnnotation || d.Action.Host != ForceAnnotation {
		t.Fatalf("action %+v", d.Action)
	}
	if r := event[ApprovalRefused](t, d); !strings.Contains(r.Reason, "majority") {
		t.Fatalf("reason %q", r.Reason)
	}
	s = run(s, d)
	s = run(s, Decision{Events: Conclude(*d.Action, nil)})
	if len(s.Handled) != 0 {
		t.Fatalf("handled %v after the removal", s.Handled)
	}
}

// forcedState is lostState after a forced reconfig onto member 0 finished.
func forcedState(t *testing.T) (State, *world) {
	t.Helper()
	s, w := lostState(t, automatic(time.Minute))
	in := w.in()
	in.Now = t0.Add(time.Hour)
	s, d := fenceAll(t, s, w, in, Decide(s, in))
	if d.Action == nil || d.Action.Kind != ActForceReconfig {
		t.Fatalf("no force: %v", types(d))
	}
	s = runAt(s, d, in.Now)
	s = runAt(s, Decision{Events: Conclude(*d.Action, nil)}, in.Now)
	if !s.ForceApplied || s.ForcedReconfigs != 1 {
		t.Fatalf("state after the force: %+v", s)
	}
	// The survivor holds the forced config and is elected.
	cfg := d.Action.Config.Clone()
	cfg.Version += 10000
	w.obs.Config = &cfg
	mv := w.obs.Members[w.desired[0].Host]
	mv.Primary, mv.State, mv.ConfigVersion = true, mongo.StatePrimary, cfg.Version
	w.obs.Members[w.desired[0].Host] = mv
	w.obs.Primary = w.desired[0].Host
	w.obs.Status = &mongo.Status{Set: "demo", MyState: mongo.StatePrimary, Term: 2, Members: []mongo.MemberStatus{
		{ID: 0, Name: w.desired[0].Host, Health: 1, State: mongo.StatePrimary, Self: true, Optime: opt(96, 2)}}}
	w.obs.Statuses = nil
	return s, w
}

func TestAfterTheForceLostMembersComeBackOneReconfigAtATime(t *testing.T) {
	s, w := forcedState(t)
	in := w.in()
	in.Now = t0.Add(2 * time.Hour)
	d := Decide(s, in)
	s = runAt(s, d, in.Now)
	if s.MajorityLost != nil {
		t.Fatalf("majority still lost after the force: %v", types(d))
	}
	// Member 1 comes back with its data, ahead of the survivor at the force
	// (it had optime 100, the survivor 95): diverged, wiped before it is added.
	w.obs.Members[w.desired[1].Host] = MemberView{Name: "demo-1", Host: w.desired[1].Host, Answers: true, HasConfig: true, ConfigVersion: 1, LastWrite: opt(100, 1)}
	// Member 2 comes back empty (its volume was lost).
	w.obs.Members[w.desired[2].Host] = MemberView{Name: "demo-2", Host: w.desired[2].Host, Answers: true}
	in = w.budgeted().in()
	in.Now = t0.Add(2 * time.Hour)
	d = Decide(s, in)
	if d.Action == nil || d.Action.Kind != ActWipeMember || d.Action.Host != "demo-1" {
		t.Fatalf("want demo-1 wiped first: %+v %v", d.Action, types(d))
	}
	s = runAt(s, d, in.Now)
	s = runAt(s, Decision{Events: Conclude(*d.Action, errors.New("the wipe failed"))}, in.Now)
	// While the wipe fails (back-off), the empty member is still added: one
	// member per reconfig, never the diverged one.
	in.Now = in.Now.Add(time.Second)
	d = Decide(s, in)
	if d.Action != nil {
		t.Fatalf("acted during the back-off: %+v", d.Action)
	}
	s.LastFailure, s.Failures = nil, 0
	d = Decide(s, in)
	if d.Action == nil || d.Action.Kind != ActWipeMember {
		t.Fatalf("want the wipe retried: %+v", d.Action)
	}
	// Once wiped, member 1 answers empty; the planner adds the members, one per reconfig.
	w.obs.Members[w.desired[1].Host] = MemberView{Name: "demo-1", Host: w.desired[1].Host, Answers: true}
	d = Decide(s, in)
	if d.Action == nil || d.Action.Kind != ActReconfig {
		t.Fatalf("want a reconfig adding a member: %+v %v", d.Action, types(d))
	}
	if added := len(d.Action.Config.Members) - len(w.obs.Config.Members); added != 1 {
		t.Fatalf("a reconfig added %d members", added)
	}
}

// Case 7: the operator stopped between the force's ActionStarted and its result.
func TestForceInFlightIsSettledNeverSentTwice(t *testing.T) {
	s, w := lostState(t, automatic(time.Minute))
	in := w.in()
	in.Now = t0.Add(time.Hour)
	s, d := fenceAll(t, s, w, in, Decide(s, in))
	s = runAt(s, d, in.Now)
	f := *s.InFlight
	survivor := w.desired[0].Host

	t.Run("survivor silent: still in flight, nothing decided", func(t *testing.T) {
		w2 := *w
		w2.obs.Members = map[string]MemberView{}
		for h, mv := range w.obs.Members {
			w2.obs.Members[h] = mv
		}
		w2.obs.Members[survivor] = MemberView{Name: "demo-0", Host: survivor, Err: "timeout"}
		in := w2.in()
		in.Now = t0.Add(2 * time.Hour)
		if d := Decide(s, in); d.Action != nil || has(d, "ActionFailed") || has(d, "ActionFinished") {
			t.Fatalf("decided with the force's outcome unknown: %v %+v", types(d), d.Action)
		}
	})
	t.Run("survivor holds the forced config: finished", func(t *testing.T) {
		w2 := *w
		w2.obs.Members = map[string]MemberView{}
		for h, mv := range w.obs.Members {
			w2.obs.Members[h] = mv
		}
		mv := w.obs.Members[survivor]
		mv.ConfigVersion = f.ConfigVersion + 12345
		w2.obs.Members[survivor] = mv
		d := Decide(s, w2.in())
		if !has(d, "ActionFinished") || d.Action != nil && d.Action.Kind == ActForceReconfig {
			t.Fatalf("%v %+v", types(d), d.Action)
		}
		if s2 := run(s, d); s2.ForcedReconfigs != 1 || !s2.ForceApplied {
			t.Fatalf("%+v", s2)
		}
	})
	t.Run("survivor on the old config: failed, forced again after the back-off", func(t *testing.T) {
		d := Decide(s, w.in())
		if !has(d, "ActionFailed") || d.Action != nil {
			t.Fatalf("%v %+v", types(d), d.Action)
		}
		s2 := runAt(s, d, t0.Add(time.Hour))
		in := w.in()
		in.Now = t0.Add(time.Hour + time.Minute)
		d = Decide(s2, in)
		if !has(d, "ForceDecided") {
			t.Fatalf("no second decision after a force that never applied: %v", types(d))
		}
		// A decision fences afresh: the members' pods are deleted again.
		if _, d := fenceAll(t, s2, w, in, d); d.Action == nil || d.Action.Kind != ActForceReconfig {
			t.Fatalf("no force after the second decision: %v", types(d))
		}
	})
	t.Run("an error without a server reply leaves it in flight", func(t *testing.T) {
		evs := Conclude(*d.Action, errors.New("context deadline exceeded"))
		if len(evs) != 1 || evs[0].Type() != "ActionUncertain" {
			t.Fatalf("%v", evs)
		}
		if s2 := run(s, Decision{Events: evs}); s2.InFlight == nil {
			t.Fatal("the force left the in-flight slot on an uncertain error")
		}
		if evs := Conclude(*d.Action, &mongo.ServerError{Code: 103, Message: "newer config"}); evs[0].Type() != "ActionFailed" {
			t.Fatalf("a server's refusal is a failure: %v", evs)
		}
	})
}

// Case 4: every volume lost on an initiated set.
func TestEveryVolumeLostWaitsForAnApprovedReinitiate(t *testing.T) {
	w := newWorld(demo(3)).initiated()
	s := healthyState(t, w)
	empty := newWorld(demo(3)).answering()
	d := Decide(s, empty.in())
	s = run(s, d)
	for i := 0; i < 3; i++ {
		d = Decide(s, empty.in())
		if d.Action != nil && d.Action.Kind == ActInitiate {
			t.Fatal("initiated over lost volumes on its own")
		}
		s = run(s, d)
	}
	if s.VolumesLost == nil {
		t.Fatalf("VolumesLost not recorded: %s", s)
	}
	st := StatusFor(s, empty.obs, empty.m, "memory", "cluster.local")
	if c := findCond(st, v1alpha1.ConditionStalled); c.Status != metav1.ConditionTrue || c.Reason != "VolumesLost" || !strings.Contains(c.Message, "u-1") {
		t.Fatalf("Stalled condition %+v", c)
	}

	empty.obs.ReinitiateApproval = "not-the-uid"
	d = Decide(s, empty.in())
	if r := event[ApprovalRefused](t, d); !strings.Contains(r.Reason, "UID u-1") || d.Action.Kind != ActRemoveAnnotation {
		t.Fatalf("%+v %+v", r, d.Action)
	}
	s = run(s, d)
	s = run(s, Decision{Events: Conclude(*d.Action, nil)})

	empty.obs.ReinitiateApproval = "u-1"
	before := s.Initiates
	d = Decide(s, empty.in())
	if d.Action == nil || d.Action.Kind != ActInitiate || !has(d, "ApprovalAccepted") {
		t.Fatalf("%v %+v", types(d), d.Action)
	}
	s = run(s, d)
	s = run(s, Decision{Events: Conclude(*d.Action, nil)})
	if s.Initiates != before+1 || s.VolumesLost != nil || s.AdminUser || s.Phase != v1alpha1.PhaseInitiating {
		t.Fatalf("after the approved initiate: %s initiates %d", s, s.Initiates)
	}
	// The handled annotation goes next; then the admin user is made again.
	d = Decide(s, empty.in())
	if d.Action == nil || d.Action.Kind != ActRemoveAnnotation {
		t.Fatalf("%+v", d.Action)
	}
	s = run(s, d)
	s = run(s, Decision{Events: Conclude(*d.Action, nil)})
	w.initiated()
	no := false
	w.obs.AdminUser = &no
	d = Decide(s, w.in())
	if d.Action == nil || d.Action.Kind != ActCreateUser {
		t.Fatalf("want the admin user again: %+v %v", d.Action, types(d))
	}
}

func findCond(st v1alpha1.MgorsStatus, typ string) metav1.Condition {
	for _, c := range st.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}

// A failed replSetGetConfig is not "no config": never initiate then.
func TestUnreadableConfigIsNotNoConfig(t *testing.T) {
	t.Run("a hello with a set name", func(t *testing.T) {
		w := newWorld(demo(3)).answering()
		s := run(Initial(), Decide(Initial(), w.in()))
		mv := w.obs.Members[w.desired[1].Host]
		mv.HasConfig, mv.ConfigVersion = true, 4
		w.obs.Members[w.desired[1].Host] = mv
		w.obs.ConfigErr = "replSetGetConfig on demo-1: timeout"
		d := Decide(s, w.in())
		if d.Action != nil && d.Action.Kind == ActInitiate {
			t.Fatal("initiated while a member's hello shows a set name")
		}
		if in := event[Initiated](t, d); !in.Found || in.ConfigVersion != 4 {
			t.Fatalf("%+v", in)
		}
	})
	t.Run("a config read error alone", func(t *testing.T) {
		w := newWorld(demo(3)).answering()
		s := run(Initial(), Decide(Initial(), w.in()))
		w.obs.ConfigErr = "replSetGetConfig on demo-0: connection reset"
		if d := Decide(s, w.in()); d.Action != nil {
			t.Fatalf("acted: %+v", d.Action)
		}
	})
}

// Case 5: pods on a NotReady node are force-deleted past nodeLossGracePeriod only.
func TestNodeLoss(t *testing.T) {
	notReady := t0.Add(-10 * time.Minute)
	tests := []struct {
		name  string
		grace *metav1.Duration
		want  bool
	}{
		{"off by default", nil, false},
		{"before the grace period", &metav1.Duration{Duration: 11 * time.Minute}, false},
		{"past the grace period", &metav1.Duration{Duration: 5 * time.Minute}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(demo(3)).initiated()
			s := healthyState(t, w)
			w.m.Spec.Recovery.NodeLossGracePeriod = tt.grace
			for name, p := range w.obs.Pods {
				p.Node, p.NodeReady = "n-"+name, true
				if name == "demo-1" {
					p.NodeReady, p.NodeNotReadySince, p.Deleting = false, notReady, true
				}
				w.obs.Pods[name] = p
			}
			d := Decide(s, w.in())
			got := d.Action != nil && d.Action.Kind == ActForceDeletePod
			if got != tt.want {
				t.Fatalf("force delete %v, want %v: %v", got, tt.want, types(d))
			}
			if got {
				if nl := event[NodeLost](t, d); d.Action.Host != "demo-1" || nl.Node != "n-demo-1" || !nl.Since.Equal(notReady) {
					t.Fatalf("%+v %+v", nl, d.Action)
				}
			}
		})
	}
}

func TestLookAgain(t *testing.T) {
	m, auto := demo(3), automatic(time.Minute)
	healthy := State{Phase: v1alpha1.PhaseHealthy}
	recovering := State{Phase: v1alpha1.PhaseRecovering}
	lost := State{Phase: v1alpha1.PhaseRecovering, MajorityLost: &MajorityLost{}}
	now := time.Unix(1_800_000_000, 0)
	// The third failure in a row: a back-off of 8 s, 5 s of it left.
	failing := State{Phase: v1alpha1.PhaseRecovering, LastFailure: &ActionFailed{}, Failures: 3, FailedAt: now.Add(-3 * time.Second)}
	longFailing := failing
	longFailing.Failures = 10 // 2 min
	stalled := failing
	stalled.FailedAt = now.Add(-time.Minute)
	healthyFailing := failing
	healthyFailing.Phase = v1alpha1.PhaseHealthy
	volumes := State{Phase: v1alpha1.PhaseRecovering, VolumesLost: &VolumesLost{}}
	paused := demo(3)
	paused.Spec.Paused = true
	tests := []struct {
		name  string
		s     State
		m     *v1alpha1.Mgors
		quiet int
		want  time.Duration
	}{
		{"healthy: the interval timer", healthy, m, 0, 0},
		{"recovering after a write", recovering, m, 0, time.Second},
		{"recovering, quiet, backs off", recovering, m, 3, 8 * time.Second},
		{"capped at slowest", recovering, m, 20, slowest},
		{"waiting for a person", lost, m, 0, 0},
		{"automatic policy waits for its grace period", lost, auto, 2, 4 * time.Second},
		{"a failed action: when its back-off ends", failing, m, 0, 5 * time.Second},
		{"a failed action on a healthy cluster too", healthyFailing, m, 0, 5 * time.Second},
		{"a long back-off: capped at the interval", longFailing, m, 0, time.Minute},
		{"stalled past the back-off", stalled, m, 0, 0},
		{"paused", failing, paused, 0, 0},
		{"volumes lost", volumes, m, 0, 0},
	}
	for _, tt := range tests {
		if got := lookAgain(tt.s, tt.m, tt.quiet, time.Minute, now); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
	if got := lookAgain(recovering, m, 20, 5*time.Second, now); got != 5*time.Second {
		t.Errorf("an interval below slowest: %v, want it", got)
	}
}

func TestStatusWhenEveryMemberIsDown(t *testing.T) {
	w := newWorld(demo(3)).initiated()
	s := healthyState(t, w)
	down := newWorld(demo(3))
	st := StatusFor(s, down.obs, down.m, "memory", "cluster.local")
	if c := findCond(st, v1alpha1.ConditionMajorityLost); c.Status != metav1.ConditionUnknown || c.Reason != "NoMemberAnswers" {
		t.Fatalf("MajorityLost condition %+v", c)
	}
}

// A removal whose result was lost in a crash is settled from the object: the
// annotation gone → finished, and the handled value is forgotten, so the same
// approval given again later is acted on.
func TestAnnotationRemovalSettledFromTheObject(t *testing.T) {
	s, w := lostState(t, demo(3))
	s = Evolve(s, s.Seq+1, t0, ApprovalRefused{Annotation: ForceAnnotation, Value: "demo-1", Reason: "does not answer"})
	s = Evolve(s, s.Seq+1, t0, ActionStarted{Action: ActRemoveAnnotation, Target: ForceAnnotation})
	d := Decide(s, w.in())
	if !has(d, "ActionFinished") {
		t.Fatalf("%v", types(d))
	}
	s = run(s, d)
	if len(s.Handled) != 0 {
		t.Fatalf("handled %v", s.Handled)
	}
	w.obs.ForceAnnotation = "demo-1"
	if d := Decide(s, w.in()); !has(d, "ApprovalRefused") {
		t.Fatalf("the same value given again was not judged again: %v", types(d))
	}
}

// A handled approval a person deleted themselves is forgotten (recorded), so
// the same value given again is judged afresh.
func TestApprovalWithdrawnByAPerson(t *testing.T) {
	s, w := lostState(t, demo(3))
	w.obs.ForceAnnotation = "demo-1"
	d := Decide(s, w.in())
	s = run(s, d) // refused; the removal is decided
	s = run(s, Decision{Events: Conclude(*d.Action, errors.New("api server unavailable"))})
	w.obs.ForceAnnotation = ""
	d = Decide(s, w.in())
	if !has(d, "ApprovalWithdrawn") {
		t.Fatalf("%v", types(d))
	}
	if s = run(s, d); len(s.Handled) != 0 {
		t.Fatalf("handled %v", s.Handled)
	}
}
