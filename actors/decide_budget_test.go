package actors

import (
	"fmt"
	"testing"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo"
)

// simulate carries out Decide's actions on the test world until the cluster
// is Healthy with nothing to do, checking after every action that a drain the
// budget allows cannot take the voting majority of the config in effect. It
// returns the actions, as "Kind target" strings.
func simulate(t *testing.T, s State, w *world) (State, []string) {
	t.Helper()
	var done []string
	for step := 0; step < 60; step++ {
		d := Decide(s, w.in())
		s = run(s, d)
		if d.Action == nil {
			if s.Phase == v1alpha1.PhaseHealthy && !has(d, "PhaseChanged") {
				return s, done
			}
			continue
		}
		a := *d.Action
		switch a.Kind {
		case ActSetBudget:
			w.obs.Budget = a.MinAvailable
		case ActScale:
			w.scaleTo(a.Replicas)
		case ActReconfig:
			w.install(*a.Config)
		case ActDeleteArbiters:
			w.obs.ArbiterReplicas = -1
			delete(w.obs.Pods, a.Host+"-0")
		case ActEnsureObjects:
			w.obs.ObjectsReady, w.obs.ArbiterReplicas = true, w.m.Spec.Arbiters
			for _, dm := range w.desired {
				if dm.Arbiter {
					w.obs.Pods[dm.Name] = PodView{Name: dm.Name, Phase: "Running", Ready: true}
					w.obs.Members[dm.Host] = MemberView{Name: dm.Name, Host: dm.Host, Arbiter: true, Answers: true}
				}
			}
		default:
			t.Fatalf("unexpected action %+v", a)
		}
		s = run(s, Decision{Events: Conclude(a, nil)})
		done = append(done, fmt.Sprintf("%s %s", a.Kind, target(a)))
		w.checkBudget(t, a)
	}
	t.Fatalf("not Healthy after 60 steps: %s; actions %v", s, done)
	return s, nil
}

// scaleTo grows or shrinks the member StatefulSet: new members answer without
// a config, members gone are gone.
func (w *world) scaleTo(n int32) {
	w.obs.Replicas = n
	for i := range int32(50) {
		name := w.m.PodName(i)
		host := w.m.MemberHost(i, "cluster.local")
		if i >= n {
			delete(w.obs.Pods, name)
			delete(w.obs.Members, host)
			continue
		}
		if _, ok := w.obs.Pods[name]; !ok {
			w.obs.Pods[name] = PodView{Name: name, Phase: "Running", Ready: true}
			w.obs.Members[host] = MemberView{Name: name, Host: host, Answers: true}
		}
	}
}

// install makes cfg the config every member holds, member 0 primary and the
// others SECONDARY (ARBITER), all up.
func (w *world) install(cfg mongo.Config) {
	w.obs.Config = &cfg
	st := &mongo.Status{Set: cfg.ID, MyState: mongo.StatePrimary, Term: 1}
	for _, cm := range cfg.Members {
		state := mongo.StateSecondary
		switch {
		case cm.ArbiterOnly:
			state = mongo.StateArbiter
		case cm.ID == 0:
			state = mongo.StatePrimary
		}
		st.Members = append(st.Members, mongo.MemberStatus{ID: cm.ID, Name: cm.Host, Health: 1, State: state,
			StateStr: state.String(), ConfigVersion: cfg.Version, Self: cm.ID == 0})
		if mv, ok := w.obs.Members[cm.Host]; ok {
			mv.HasConfig, mv.ConfigVersion, mv.State, mv.Primary = true, cfg.Version, state, cm.ID == 0
			w.obs.Members[cm.Host] = mv
		}
	}
	for host, mv := range w.obs.Members {
		if cfg.Member(host) == nil {
			mv.HasConfig, mv.State, mv.Primary = false, 0, false
			w.obs.Members[host] = mv
		}
	}
	w.obs.Status = st
}

// checkBudget fails when the pods the budget lets go could include more
// voters than the config can lose.
func (w *world) checkBudget(t *testing.T, after Action) {
	t.Helper()
	pods := max(w.obs.Replicas, 0) + max(w.obs.ArbiterReplicas, 0)
	voters := int32(w.obs.Config.Voters())
	canLose := voters - (voters/2 + 1)
	if evictable := pods - w.obs.Budget; voters > 1 && evictable > canLose {
		t.Fatalf("after %s: %d pods, minAvailable %d: %d may be evicted, the config's %d voters can lose %d",
			after.Kind, pods, w.obs.Budget, evictable, voters, canLose)
	}
}

// spec changes the Mgors the world's actor sees (a new generation).
func (w *world) spec(f func(*v1alpha1.Mgors)) {
	m := w.m.DeepCopy()
	f(m)
	m.Generation++
	w.m, w.desired = m, mongo.Desired(m, "cluster.local")
}

// Issue 15, item 3: the budget follows the voters. Scaling 3→5 raises it
// before the StatefulSet grows and lowers it to 3 of 5 only once five vote;
// scaling back 5→3 keeps one evictable pod at most until the set is 3 again.
// At no moment does the budget allow a drain to take the config's majority.
func TestBudgetFollowsTheVotersThroughAScaling(t *testing.T) {
	w := newWorld(demo(3)).initiated()
	s := healthyState(t, w)
	if w.obs.Budget != 2 {
		t.Fatalf("budget of 3 members %d, want 2", w.obs.Budget)
	}
	w.spec(func(m *v1alpha1.Mgors) { m.Spec.Members = 5 })
	s, actions := simulate(t, s, w)
	if actions[0] != "SetDisruptionBudget poddisruptionbudget" || w.obs.Budget != 3 || w.obs.Config.Voters() != 5 {
		t.Fatalf("3→5: actions %v, budget %d, voters %d; want the budget first and 3 of 5 at the end", actions, w.obs.Budget, w.obs.Config.Voters())
	}
	w.spec(func(m *v1alpha1.Mgors) { m.Spec.Members = 3 })
	_, actions = simulate(t, s, w)
	if actions[0] != "SetDisruptionBudget poddisruptionbudget" || w.obs.Budget != 2 || w.obs.Replicas != 3 {
		t.Fatalf("5→3: actions %v, budget %d, replicas %d; want the budget first and 2 of 3 at the end", actions, w.obs.Budget, w.obs.Replicas)
	}
}

// Issue 15, item 4: an arbiter is added by its StatefulSet and then one
// reconfig (two members and an arbiter: the second member's vote, held back
// while two voters would be even, follows in a reconfig of its own); removed
// by a reconfig first, then its StatefulSet (and pod) is deleted. The budget
// covers the arbiter's pod throughout, and keeps every pod while the set
// passes through two voters.
func TestArbiterAddedAndRemoved(t *testing.T) {
	w := newWorld(demo(2)).initiated()
	s := healthyState(t, w)
	w.spec(func(m *v1alpha1.Mgors) { m.Spec.Arbiters = 1 })
	w.obs.ObjectsReady, w.obs.ObjectsMessage = false, "to create or update: StatefulSet demo-arbiter"
	s, actions := simulate(t, s, w)
	reconfigs := 0
	for _, a := range actions {
		if a[:len("Reconfig")] == "Reconfig" {
			reconfigs++
		}
	}
	arb := w.obs.Config.Member(mongo.ArbiterHost(w.m, "cluster.local"))
	if actions[0] != "EnsureObjects " || reconfigs != 2 || arb == nil || !arb.ArbiterOnly || w.obs.Budget != 2 {
		t.Fatalf("adding: actions %v, arbiter %+v, budget %d; want its StatefulSet, the reconfigs adding it and the vote, 2 of 3 pods", actions, arb, w.obs.Budget)
	}

	w.spec(func(m *v1alpha1.Mgors) { m.Spec.Arbiters = 0 })
	delete(w.obs.Members, arb.Host) // no longer desired, so no longer asked
	_, actions = simulate(t, s, w)
	removed, deleted := -1, -1
	for i, a := range actions {
		switch a {
		case "Reconfig " + w.obs.Primary:
			removed = i
		case "DeleteArbiters demo-arbiter":
			deleted = i
		}
	}
	if removed < 0 || deleted < removed || w.obs.Config.Member(arb.Host) != nil || w.obs.ArbiterReplicas != -1 {
		t.Fatalf("removing: actions %v; want the reconfig removing the arbiter, then its StatefulSet deleted", actions)
	}
	if w.obs.Budget != 0 || w.obs.Config.Voters() != 1 {
		t.Fatalf("budget %d with %d voters; two members keep one voter (odd), whose budget is 0", w.obs.Budget, w.obs.Config.Voters())
	}
}

// A member in initial sync holds no vote yet: the budget counts one voter
// fewer until it is SECONDARY, so a drain cannot take the last healthy
// majority while it syncs.
func TestBudgetDiscountsAVoterInInitialSync(t *testing.T) {
	w := newWorld(demo(3)).initiated()
	w.obs.Budget = 2
	w.obs.Status.Members[2].State = mongo.StateStartup2
	got, _, ok := Budget(w.obs, w.desired, true)
	if !ok || got != 3 {
		t.Fatalf("budget %d (ok %v) with a voter in STARTUP2, want 3 of 3", got, ok)
	}
}

// An initiated set whose config cannot be read keeps its budget: no
// evidence, no change; a missing budget is still created from the spec.
func TestBudgetWithoutAConfig(t *testing.T) {
	w := newWorld(demo(5))
	w.obs.Budget = 4
	if _, _, ok := Budget(w.obs, w.desired, true); ok {
		t.Fatal("changed the budget of an initiated set without reading its config")
	}
	w.obs.Budget = -1
	if got, _, ok := Budget(w.obs, w.desired, true); !ok || got != 3 {
		t.Fatalf("missing budget: %d (ok %v), want 3 of 5", got, ok)
	}
	if got, _, ok := Budget(w.obs, w.desired, false); !ok || got != 3 {
		t.Fatalf("before the initiate: %d (ok %v), want 3 of 5", got, ok)
	}
}

// A SetDisruptionBudget whose result was lost is settled from the budget the
// world shows.
func TestBudgetInFlightIsSettledFromTheWorld(t *testing.T) {
	w := newWorld(demo(3)).initiated()
	s := healthyState(t, w)
	s = run(s, Decision{Events: []Event{ActionStarted{Action: ActSetBudget, Target: "poddisruptionbudget", MinAvailable: 2}}})
	d := Decide(s, w.in())
	if !has(d, "ActionFinished") || has(d, "ActionFailed") {
		t.Fatalf("events %v; want the budget seen in place", types(d))
	}
	s = run(Initial(), Decision{Events: []Event{ActionStarted{Action: ActSetBudget, Target: "poddisruptionbudget", MinAvailable: 4}}})
	if d := Decide(s, w.in()); !has(d, "ActionFailed") {
		t.Fatalf("events %v; want the budget not seen: failed", types(d))
	}
}

// An arbiter whose pod runs an older template (spec.arbiterResources
// changed) is restarted like a member, first, while every member is healthy.
func TestOutdatedArbiterRestartsFirst(t *testing.T) {
	m := demo(2)
	m.Spec.Arbiters = 1
	w := newWorld(m).initiated()
	s := healthyState(t, w)
	for _, name := range []string{"demo-1", "demo-arbiter-0"} {
		w.obs.Pods[name] = PodView{Name: name, Phase: "Running", Ready: true, Outdated: true}
	}
	w.obs.Pods["demo-0"] = PodView{Name: "demo-0", Phase: "Running", Ready: true}
	s = run(s, Decide(s, w.in()))
	d := Decide(s, w.in())
	if d.Action == nil || d.Action.Kind != ActRestartMember || d.Action.Host != "demo-arbiter-0" {
		t.Fatalf("action %+v, events %v; want the arbiter restarted first", d.Action, types(d))
	}
}
