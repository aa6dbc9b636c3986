package actors

import (
	"strings"

	"github.com/mgors/operator/kube"
)

// removeArbiters deletes the arbiters' StatefulSet, and with it the
// arbiter's pod, once spec.arbiters is 0 and no arbiter is left in the
// config: the planner removes the arbiter from the config first (one
// reconfig), as every member leaves the config before its pod goes.
// Adding an arbiter is the other way round: EnsureObjects creates its
// StatefulSet, and the planner adds it once it answers.
func (d *decider) removeArbiters() bool {
	o, m := d.in.Obs, d.in.Mgors
	if m.Spec.Arbiters > 0 || o.ArbiterReplicas < 0 || o.Config == nil {
		return false
	}
	for _, cm := range o.Config.Members {
		if pod, _, _ := strings.Cut(cm.Host, "."); cm.ArbiterOnly || strings.HasPrefix(pod, kube.ArbiterName(m)+"-") {
			return false // the planner removes it first
		}
	}
	name := kube.ArbiterName(m)
	d.act(Action{Kind: ActDeleteArbiters, Host: name}, ActionStarted{Target: name,
		Reason: "spec.arbiters is 0 and the arbiter left the config"})
	return true
}
