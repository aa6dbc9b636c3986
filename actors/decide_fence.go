package actors

import (
	"fmt"
	"strings"
	"time"

	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/mongo"
)

// Fencing (docs/design/recovery.md, case 1). A force drops the members that
// do not answer, but not answering is not being dead: a mongod hung (or
// paused, or cut off) for the whole grace period keeps the old config, and
// the moment it runs again its election timer has long expired. Two such
// members are a majority of the old config: they elect a primary of their
// own, in the same term as the survivor's, and acknowledge w:majority writes
// that the forced set will never have. So before the force is sent, the pod
// of every dropped member is deleted (FencePod) and the force waits until the
// kubelet confirmed the kill (the pod gone, or recreated under another UID).
// A recreated member starts with a fresh election timeout and learns the
// forced config from the survivor's heartbeats first; if a voting majority
// answers again before the force is sent, the force is abandoned. A pod on a
// NotReady node cannot be fenced (its kubelet confirms nothing), nor one whose
// kill is not confirmed within FenceWait: the force goes on, and says so.

// FenceWait bounds the wait for a fenced pod's kill: a kubelet that has not
// confirmed it by then (its node lost, unseen) will not, and the force goes
// on without it, saying so.
const FenceWait = 30 * time.Second

// carryOutForce takes the next step of the force decided (s.Force): abandon
// it if a majority answers, fence one dropped member, or send it.
func (d *decider) carryOutForce() {
	f := d.s.Force
	if why := d.forceBlocked(); why != "" {
		d.emit(ForceAbandoned{Survivor: f.Survivor, Reason: why})
		return
	}
	unfenced, waiting := d.fence(f.Dropped)
	if waiting {
		return
	}
	cfg, err := mongo.ForcedConfig(*d.in.Obs.Config, f.Survivor, f.Kept)
	if err != nil {
		d.emit(ForceAbandoned{Survivor: f.Survivor, Reason: err.Error()})
		return
	}
	reason := fmt.Sprintf("majority lost (%s policy): force the config onto %s, the reachable member with the newest optime %s",
		f.Policy, f.Survivor, f.SurvivorOptime)
	if len(unfenced) > 0 {
		reason += "; not fenced: " + strings.Join(unfenced, "; ")
	}
	d.act(Action{Kind: ActForceReconfig, Host: f.Survivor, Config: &cfg},
		ActionStarted{Target: f.Survivor, ConfigVersion: cfg.Version, Members: f.Kept, AtRisk: atRisk(*f), Reason: reason})
}

// fence deletes the pod of the first dropped member still running its old
// process, or reports that the force must wait for a deletion the kubelet has
// not confirmed yet. unfenced says which pods could not be fenced and why.
func (d *decider) fence(dropped []string) (unfenced []string, waiting bool) {
	for _, host := range dropped {
		name := d.podOf(host)
		p, ok := d.in.Obs.Pods[name]
		fenced, wasFenced := d.s.Fenced[name]
		switch {
		case name == "" || !ok:
			continue // no pod: no process
		case wasFenced && p.UID != fenced.UID:
			continue // recreated: a fresh process
		case p.Node != "" && !p.NodeReady && !p.NodeNotReadySince.IsZero():
			unfenced = append(unfenced, fmt.Sprintf("%s is on node %s, NotReady: its kubelet cannot confirm a kill", name, p.Node))
			continue
		case wasFenced && p.Deleting && d.in.Now.Sub(fenced.At) >= FenceWait:
			unfenced = append(unfenced, fmt.Sprintf("%s was deleted %s ago and its kubelet has not confirmed the kill", name, FenceWait))
			continue
		case wasFenced && p.Deleting:
			return nil, true // deleted; the kubelet has not confirmed the kill yet
		}
		d.act(Action{Kind: ActFencePod, Host: name, UID: p.UID}, ActionStarted{Target: name, UID: p.UID,
			Reason: fmt.Sprintf("the force drops %s: its pod is deleted (grace %s) so its mongod cannot come back with an expired election timer and elect a second primary in the old config",
				host, kube.FenceGrace)})
		return nil, true
	}
	return unfenced, false
}

// fenceSettled settles a FencePod in flight after a restart: the pod deleted,
// gone or recreated shows the delete was accepted.
func (d *decider) fenceSettled(f *ActionStarted) bool {
	p, ok := d.in.Obs.Pods[f.Target]
	return !ok || p.UID != f.UID || p.Deleting
}
