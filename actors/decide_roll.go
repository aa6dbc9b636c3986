package actors

import (
	"math"
	"sort"

	"github.com/mgors/operator/mongo"
)

// outdated lists the member pods that run an older template, sorted.
func outdated(o Observation) []string {
	var out []string
	for name, p := range o.Pods {
		if p.Outdated && !p.Deleting {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// rolling says whether a rolling restart is not over: the objects are not
// as built, a pod runs an older template or is not ready, or a desired
// member is not PRIMARY, SECONDARY or ARBITER.
func (d *decider) rolling() bool {
	o := d.in.Obs
	if !o.ObjectsReady || len(outdated(o)) > 0 {
		return true
	}
	for _, dm := range d.in.Desired {
		mv := o.Members[dm.Host]
		if !mv.Answers || (mv.State != mongo.StatePrimary && mv.State != mongo.StateSecondary && mv.State != mongo.StateArbiter) {
			return true
		}
	}
	for _, p := range o.Pods {
		if p.Deleting || !p.Ready {
			return true
		}
	}
	return false
}

// finishStep ends the step of a procedure whose every step is a rolling
// restart (a TLS mode step, a keyfile or CA rotation step) once no member
// rolls any more: it emits done. It returns true while a step (stepping)
// is under way.
func (d *decider) finishStep(stepping bool, done Event) bool {
	if !stepping {
		return false
	}
	if !d.rolling() {
		d.emit(done)
	}
	return true
}

// roll restarts one out-of-date member when every member is healthy: the
// arbiter first, then secondaries, highest ordinal first, the primary last and only after it
// stepped down, so no restart ever takes more than one member away.
func (d *decider) roll() bool {
	o := d.in.Obs
	pods := outdated(o)
	if len(pods) == 0 {
		return false
	}
	for _, dm := range d.in.Desired {
		mv := o.Members[dm.Host]
		if !mv.Answers || (mv.State != mongo.StatePrimary && mv.State != mongo.StateSecondary && mv.State != mongo.StateArbiter) {
			return true // a member is away (perhaps the last one restarted): wait for it
		}
	}
	for _, p := range o.Pods {
		if p.Deleting || !p.Ready {
			return true
		}
	}
	primaryPod := d.podOf(o.Primary)
	byPod := map[string]mongo.DesiredMember{}
	for _, dm := range d.in.Desired {
		byPod[dm.Name] = dm
	}
	// The arbiter first (it holds no data), then secondaries by highest ordinal.
	rank := func(name string) int32 {
		if dm := byPod[name]; !dm.Arbiter {
			return dm.Ordinal
		}
		return math.MaxInt32
	}
	sort.SliceStable(pods, func(i, j int) bool { return rank(pods[i]) > rank(pods[j]) })
	for _, name := range pods {
		if name == primaryPod {
			continue
		}
		d.act(Action{Kind: ActRestartMember, Host: name}, ActionStarted{Target: name,
			Reason: "its pod runs an older template; secondaries restart first, one at a time"})
		return true
	}
	if len(d.in.Desired) == 1 {
		d.act(Action{Kind: ActRestartMember, Host: primaryPod}, ActionStarted{Target: primaryPod,
			Reason: "its pod runs an older template; a one-member set cannot restart without downtime"})
		return true
	}
	d.act(Action{Kind: ActStepDown, Host: o.Primary}, ActionStarted{Target: o.Primary,
		Reason: "the primary's pod runs an older template: it steps down before it restarts"})
	return true
}
