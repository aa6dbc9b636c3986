package actors

import (
	"strings"
	"testing"
	"time"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo"
)

// decidedForce is lostState under Automatic, an hour after the loss: the force
// decided, the first dropped member's pod being fenced.
func decidedForce(t *testing.T) (State, *world, Inputs, Decision) {
	t.Helper()
	s, w := lostState(t, automatic(time.Minute))
	in := w.in()
	in.Now = t0.Add(time.Hour)
	d := Decide(s, in)
	if !has(d, "ForceDecided") || d.Action == nil || d.Action.Kind != ActFencePod {
		t.Fatalf("want the force decided and a fence: %+v %v", d.Action, types(d))
	}
	return s, w, in, d
}

// The dropped members' pods are deleted one at a time, each deletion awaited
// until the kubelet confirmed it (the pod recreated), and only then is the
// force sent.
func TestForceWaitsForEveryDroppedPodFenced(t *testing.T) {
	s, w, in, d := decidedForce(t)
	if d.Action.Host != "demo-1" || d.Action.UID != "demo-1-uid" {
		t.Fatalf("fence %+v, want demo-1 with its UID", d.Action)
	}
	s = runAt(s, d, in.Now)
	s = runAt(s, Decision{Events: Conclude(*d.Action, nil)}, in.Now)
	if f := s.Fenced["demo-1"]; f.UID != "demo-1-uid" || !f.At.Equal(in.Now) {
		t.Fatalf("fenced %v", s.Fenced)
	}

	// The kubelet has not killed it yet: the force waits.
	p := w.obs.Pods["demo-1"]
	p.Deleting = true
	w.obs.Pods["demo-1"] = p
	if d := Decide(s, in); d.Action != nil {
		t.Fatalf("acted before the fenced pod was gone: %+v", d.Action)
	}
	// Still not killed after FenceWait (the node lost, unseen): the force goes
	// on without it, and says so.
	late := in
	late.Now = in.Now.Add(FenceWait)
	if d := Decide(s, late); d.Action == nil || d.Action.Kind != ActFencePod || d.Action.Host != "demo-2" {
		t.Fatalf("want demo-2 fenced past the wait: %+v", d.Action)
	}
	// Recreated under a new UID: the next dropped member is fenced.
	p.Deleting, p.UID = false, "demo-1-uid2"
	w.obs.Pods["demo-1"] = p
	d = Decide(s, in)
	if d.Action == nil || d.Action.Kind != ActFencePod || d.Action.Host != "demo-2" {
		t.Fatalf("want demo-2 fenced next: %+v", d.Action)
	}
	s = runAt(s, d, in.Now)
	s = runAt(s, Decision{Events: Conclude(*d.Action, nil)}, in.Now)
	// Gone: the force goes.
	delete(w.obs.Pods, "demo-2")
	d = Decide(s, in)
	if d.Action == nil || d.Action.Kind != ActForceReconfig || d.Action.Host != w.desired[0].Host {
		t.Fatalf("want the force: %+v %v", d.Action, types(d))
	}
	if st := d.Events[len(d.Events)-1].(ActionStarted); strings.Contains(st.Reason, "not fenced") {
		t.Fatalf("reason %q", st.Reason)
	}
	// Healthy again: the fences are forgotten with the force.
	s = runAt(s, d, in.Now)
	s = runAt(s, Decision{Events: Conclude(*d.Action, nil)}, in.Now)
	s = run(s, Decision{Events: []Event{PhaseChanged{From: v1alpha1.PhaseRecovering, To: v1alpha1.PhaseHealthy}}})
	if s.Force != nil || s.Fenced != nil {
		t.Fatalf("after Healthy: force %+v fenced %v", s.Force, s.Fenced)
	}
}

// A fenced pod whose delete was accepted but which shows no deletion (the
// observation raced it) is deleted again, by the same UID: a deletion is
// never assumed.
func TestAFencedPodStillRunningIsFencedAgain(t *testing.T) {
	s, _, in, d := decidedForce(t)
	s = runAt(s, d, in.Now)
	s = runAt(s, Decision{Events: Conclude(*d.Action, nil)}, in.Now)
	d = Decide(s, in)
	if d.Action == nil || d.Action.Kind != ActFencePod || d.Action.Host != "demo-1" || d.Action.UID != "demo-1-uid" {
		t.Fatalf("want demo-1 fenced again: %+v", d.Action)
	}
}

// The fenced members come back with the old config and answer: a voting
// majority again, so the force is abandoned, never sent.
func TestForceAbandonedWhenTheMajorityAnswersWhileFencing(t *testing.T) {
	s, w, in, d := decidedForce(t)
	s = runAt(s, d, in.Now)
	s = runAt(s, Decision{Events: Conclude(*d.Action, nil)}, in.Now)
	for _, i := range []int{1, 2} {
		dm := w.desired[i]
		w.obs.Members[dm.Host] = MemberView{Name: dm.Name, Host: dm.Host, Answers: true, HasConfig: true, ConfigVersion: 1, State: mongo.StateSecondary}
	}
	d = Decide(s, in)
	if d.Action != nil && d.Action.Kind == ActForceReconfig {
		t.Fatalf("forced with a majority answering: %v", types(d))
	}
	if fa := event[ForceAbandoned](t, d); !strings.Contains(fa.Reason, "3 of 3 voting members answer hello") {
		t.Fatalf("reason %q", fa.Reason)
	}
	if s = runAt(s, d, in.Now); s.Force != nil || s.Fenced != nil {
		t.Fatalf("force %+v fenced %v kept", s.Force, s.Fenced)
	}
	if d := Decide(s, in); d.Action != nil && d.Action.Kind == ActForceReconfig || has(d, "ForceDecided") {
		t.Fatalf("forced after the abandon: %v", types(d))
	}
}

// A pod on a NotReady node cannot be fenced (no kubelet confirms a kill): the
// force goes on and its reason says which pod was not fenced.
func TestAPodOnANotReadyNodeIsNotFenced(t *testing.T) {
	s, w := lostState(t, automatic(time.Minute))
	for _, name := range []string{"demo-1", "demo-2"} {
		p := w.obs.Pods[name]
		p.Node, p.NodeReady, p.NodeNotReadySince = "node-b", false, t0
		w.obs.Pods[name] = p
	}
	in := w.in()
	in.Now = t0.Add(time.Hour)
	d := Decide(s, in)
	if d.Action == nil || d.Action.Kind != ActForceReconfig {
		t.Fatalf("want the force: %+v %v", d.Action, types(d))
	}
	st := d.Events[len(d.Events)-1].(ActionStarted)
	if !strings.Contains(st.Reason, "not fenced: demo-1 is on node node-b, NotReady") {
		t.Fatalf("reason %q", st.Reason)
	}
}

// Restarted mid-fence: the FencePod in flight is settled from the pod (gone,
// recreated or deleting means the delete was accepted; untouched, it failed
// and is tried again after the back-off), and fencing goes on.
func TestFenceInFlightIsSettledFromThePod(t *testing.T) {
	s, w, in, d := decidedForce(t)
	s = runAt(s, d, in.Now)
	if s.InFlight == nil || s.InFlight.Action != ActFencePod {
		t.Fatalf("in flight %+v", s.InFlight)
	}
	if d := Decide(s, in); !has(d, "ActionFailed") {
		t.Fatalf("the pod is untouched: the fence never happened, want it failed: %v", types(d))
	}
	p := w.obs.Pods["demo-1"]
	p.UID = "demo-1-uid2"
	w.obs.Pods["demo-1"] = p
	d = Decide(s, in)
	if !has(d, "ActionFinished") {
		t.Fatalf("want the fence settled: %v", types(d))
	}
	if s = runAt(s, d, in.Now); s.Fenced["demo-1"].UID != "demo-1-uid" {
		t.Fatalf("fenced %v", s.Fenced)
	}
}
