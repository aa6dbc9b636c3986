package actors

import (
	"fmt"

	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/mongo"
)

// Budget is the minAvailable the PodDisruptionBudget must have for what the
// set is now and for every step toward the spec, and why; ok is false when it
// is not known and the budget is to stay as it is.
//
// A budget of minAvailable over P pods lets P − minAvailable go, so it is
// safe while P − minAvailable is at most what the voters can lose (V −
// majority). P and V change one step at a time during a scaling, and
// minAvailable must be raised before the step that needs it (the StatefulSet
// grows, a reconfig takes or gives a vote), not after. So the budget is the
// strictest kube.MinAvailable over the most pods and every number of voters
// between now and the spec: pods the larger of the StatefulSets' replicas
// and the desired members, voters each count from the config's to the
// desired one (the planner changes one vote per reconfig, so the set passes
// through each; and two voters can lose none, while a single voter's budget
// is 0). During 3→5 that is 5 pods and 3 voters (4 must stay) from before
// the StatefulSet grows until the fifth member votes; during 5→3 the same
// until the StatefulSet has shrunk; then 2 of 3. Adding an arbiter to two
// members (one voter, then two, then three) keeps every pod until it is in.
//
// A config voter still in initial sync (STARTUP2) does not count: mongod
// holds a newly added member's vote back until it is SECONDARY. Before the
// set is initiated the spec alone decides; an initiated set whose config
// cannot be read keeps the budget it has (only a missing one is created).
func Budget(o Observation, desired []mongo.DesiredMember, initiated bool) (minAvailable int32, why string, ok bool) {
	podsNow := max(o.Replicas, 0) + max(o.ArbiterReplicas, 0)
	podsSpec, votersSpec := int32(len(desired)), int32(0)
	for _, dm := range desired {
		votersSpec += int32(dm.Votes)
	}
	pods, lo, hi := max(podsNow, podsSpec), votersSpec, votersSpec
	switch {
	case o.Config != nil:
		votersNow := configVoters(o)
		lo, hi = min(votersNow, votersSpec), max(votersNow, votersSpec)
		why = fmt.Sprintf("%d pods now, %d desired; %d voters in the config, %d desired", podsNow, podsSpec, votersNow, votersSpec)
	case initiated && o.Budget >= 0:
		return 0, "", false
	default:
		why = fmt.Sprintf("%d pods now, %d desired; %d voters desired", podsNow, podsSpec, votersSpec)
	}
	for v := lo; v <= hi; v++ {
		minAvailable = max(minAvailable, kube.MinAvailable(pods, v))
	}
	return minAvailable, fmt.Sprintf("%s: %d of %d pods must stay", why, minAvailable, pods), true
}

// configVoters counts the config's voting members, less those the status
// shows in initial sync (their vote is held back).
func configVoters(o Observation) int32 {
	n := int32(0)
	for _, m := range o.Config.Members {
		if !m.Voter() {
			continue
		}
		if o.Status != nil {
			if ms := o.Status.Member(m.Host); ms != nil && ms.State == mongo.StateStartup2 {
				continue
			}
		}
		n++
	}
	return n
}

// budget sets the PodDisruptionBudget to Budget when it differs (creating a
// missing one). It runs after the objects and before every other action of
// a phase, so the budget is tightened before the step that needs it. With the
// majority lost there is no majority left to protect: the recovery comes
// first.
func (d *decider) budget() bool {
	if d.s.MajorityLost != nil {
		return false
	}
	want, why, ok := Budget(d.in.Obs, d.in.Desired, d.s.Initiated)
	if !ok || d.in.Obs.Budget == want {
		return false
	}
	d.act(Action{Kind: ActSetBudget, MinAvailable: want},
		ActionStarted{Target: "poddisruptionbudget", MinAvailable: want, Reason: why})
	return true
}
