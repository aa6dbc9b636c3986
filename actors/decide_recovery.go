package actors

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo"
)

// The disaster-recovery rules of Decide (docs/design/recovery.md): a voting
// majority lost (the Manual approval and the Automatic policy), the members
// that come back after a forced reconfig, every volume lost, a node lost.

// ReinitiateAnnotation is the annotation a person sets, with the Mgors's UID
// as its value, to approve a fresh initiate after every volume of an
// initiated replica set was lost. The UID makes a copied manifest harmless.
const ReinitiateAnnotation = "mgors.io/approve-reinitiate"

// observeMajority records a majority lost (with its evidence) or restored.
func (d *decider) observeMajority() {
	o := d.in.Obs
	if o.Config == nil || o.Status == nil {
		return
	}
	lost, ev := mongo.MajorityLost(*o.Config, o.Status)
	switch {
	case lost && d.s.MajorityLost == nil:
		d.emit(d.majorityLost(ev))
	case !lost && d.s.MajorityLost != nil:
		d.emit(MajorityRestored{Reachable: evidenceHosts(ev.Up)})
		if d.s.Force != nil && !d.s.ForceApplied && (d.s.InFlight == nil || d.s.InFlight.Action != ActForceReconfig) {
			d.emit(ForceAbandoned{Survivor: d.s.Force.Survivor,
				Reason: "a voting majority answers again before the force was sent: " + strings.Join(evidenceHosts(ev.Up), ", ")})
		}
	}
}

// majorityLost is the MajorityLost event with its evidence: who is missing
// and since when, each survivor's optime, term and commit point, and the
// newest commit point seen.
func (d *decider) majorityLost(ev mongo.Evidence) MajorityLost {
	e := MajorityLost{Missing: evidenceHosts(ev.Missing), Reachable: evidenceHosts(ev.Up),
		Evidence:    fmt.Sprintf("%s sees %d of %d voters, a primary needs %d", ev.Observer, len(ev.Up), ev.Voters, ev.Needed),
		CommitPoint: d.s.CommitPoint}
	for _, h := range e.Missing {
		if t, ok := d.s.UnhealthySince[mongo.NormalizeHost(h)]; ok {
			if e.MissingSince == nil {
				e.MissingSince = map[string]time.Time{}
			}
			e.MissingSince[h] = t
		}
	}
	for host, st := range d.in.Obs.Statuses {
		if st == nil {
			continue
		}
		sv := Survivor{Host: host, Term: st.Term, CommitPoint: optime(st.Optimes.LastCommittedOpTime)}
		if self := st.Self(); self != nil {
			sv.Optime = optime(self.Optime)
		}
		e.Survivors = append(e.Survivors, sv)
		e.CommitPoint = newer(e.CommitPoint, sv.CommitPoint)
	}
	sort.Slice(e.Survivors, func(i, j int) bool { return e.Survivors[i].Host < e.Survivors[j].Host })
	return e
}

// votersHolding counts the config's voting members that answer hello with a
// config: a member that came back empty answers but cannot vote.
func (d *decider) votersHolding() int {
	return d.votersWhere(func(_ mongo.Member, mv MemberView) bool { return mv.Answers && mv.HasConfig })
}

// votersWhere counts the config's voting members whose observed view says yes.
func (d *decider) votersWhere(yes func(m mongo.Member, mv MemberView) bool) int {
	o := d.in.Obs
	n := 0
	for _, m := range o.Config.Members {
		if !m.Voter() {
			continue
		}
		for host, mv := range o.Members {
			if mongo.SameHost(host, m.Host) && yes(m, mv) {
				n++
				break
			}
		}
	}
	return n
}

// forceBlocked says why no forced reconfig may be sent now, "" when one may:
// never while a majority of voters answers, by replSetGetStatus or by hello.
func (d *decider) forceBlocked() string {
	o := d.in.Obs
	switch {
	case d.s.MajorityLost == nil:
		return "a majority of voting members answers"
	case o.Config == nil:
		return "no member's config could be read"
	case d.votersHolding() >= o.Config.MajorityVoteCount():
		return fmt.Sprintf("%d of %d voting members answer hello with a config: a majority", d.votersHolding(), o.Config.Voters())
	case len(d.in.Obs.Statuses) == 0:
		return "no survivor's own replSetGetStatus could be read"
	}
	return ""
}

// majorityPolicy is the Recovering rule while a voting majority is lost.
// Manual waits (a person's approval is handled by approvals). Automatic
// waits spec.recovery.gracePeriod from when the loss was first recorded,
// checks again that the majority is still lost, then forces onto the
// reachable member with the newest optime.
func (d *decider) majorityPolicy() {
	if d.s.Force != nil && !d.s.ForceApplied {
		d.carryOutForce() // decided earlier: fencing, then the force
		return
	}
	rec := d.in.Mgors.Spec.Recovery
	if rec.MajorityLoss != v1alpha1.RecoveryAutomatic {
		return
	}
	grace := v1alpha1.DefaultGracePeriod
	if rec.GracePeriod != nil {
		grace = rec.GracePeriod.Duration
	}
	if d.in.Now.Before(d.s.MajorityLostAt.Add(grace)) || d.forceBlocked() != "" {
		return
	}
	f, err := mongo.ForceTarget(*d.in.Obs.Config, d.in.Obs.Statuses)
	if err != nil {
		return // no data-bearing survivor: nothing to force onto; the status shows the loss
	}
	d.force(f, string(v1alpha1.RecoveryAutomatic), "")
}

// force records the forced reconfig with the writes it puts at risk, then
// starts carrying it out: the dropped members fenced first (decide_fence.go).
func (d *decider) force(f mongo.Force, policy, approval string) {
	e := ForceDecided{Policy: policy, Approval: approval, Survivor: f.Survivor, SurvivorOptime: optime(f.SurvivorOptime),
		Kept: f.Kept, Dropped: f.Dropped, CommitPoint: d.s.CommitPoint, Unknown: f.Unknown, LossSeen: d.s.MajorityLostAt}
	if d.s.MajorityLost != nil {
		e.CommitPoint = newer(e.CommitPoint, d.s.MajorityLost.CommitPoint)
	}
	e.MajorityWritesLost = e.CommitPoint.mongo().Compare(f.SurvivorOptime) > 0
	if f.AtRisk {
		e.BestMissing, e.BestMissingOptime, e.GapSeconds = f.BestMissing, optime(f.BestMissingOptime), f.GapSeconds
	}
	d.emit(e)
	d.carryOutForce()
}

// atRisk says in words which writes a force may lose.
func atRisk(e ForceDecided) string {
	var parts []string
	if e.MajorityWritesLost {
		parts = append(parts, fmt.Sprintf("writes acknowledged w:majority between %s and the commit point %s", e.SurvivorOptime, e.CommitPoint))
	}
	if e.BestMissing != "" {
		parts = append(parts, fmt.Sprintf("%d s of oplog %s had past %s", e.GapSeconds, e.BestMissing, e.SurvivorOptime))
	}
	if e.Unknown {
		parts = append(parts, "unknown: no survivor knew the dropped members' optimes")
	}
	if len(parts) == 0 {
		parts = append(parts, "none known: the survivor holds every write the operator saw committed")
	}
	if !e.LossSeen.IsZero() {
		parts = append(parts, fmt.Sprintf("at most the writes acknowledged after %s and before the loss was seen at %s",
			e.SurvivorOptime, e.LossSeen.UTC().Format(time.RFC3339)))
	}
	return strings.Join(parts, "; ")
}

// approvals acts on a person's approval annotation, once: accepted (and acted
// on) or refused, recorded either way, then removed.
func (d *decider) approvals() bool {
	o := d.in.Obs
	switch {
	case o.ForceAnnotation != "":
		return d.approval(ForceAnnotation, o.ForceAnnotation, d.forceApproval)
	case o.ReinitiateApproval != "":
		return d.approval(ReinitiateAnnotation, o.ReinitiateApproval, d.reinitiateApproval)
	}
	return false
}

// annotation is the value of an approval annotation in the observation.
func annotation(o Observation, key string) string {
	switch key {
	case ForceAnnotation:
		return o.ForceAnnotation
	case ReinitiateAnnotation:
		return o.ReinitiateApproval
	case RotateKeyfileAnnotation:
		return o.RotateKeyfile
	case RotateCAAnnotation:
		return o.RotateCA
	}
	return ""
}

func (d *decider) approval(key, value string, decide func(string) string) bool {
	if d.s.Handled[key] != value {
		if why := decide(value); why != "" {
			d.emit(ApprovalRefused{Annotation: key, Value: value, Reason: why})
		}
		if d.out.Action != nil {
			return true // the approved action runs first; the annotation goes next
		}
	}
	d.act(Action{Kind: ActRemoveAnnotation, Host: key}, ActionStarted{Target: key,
		Reason: fmt.Sprintf("the approval %s=%s was handled; a new one is needed for anything more", key, value)})
	return true
}

// forceApproval validates the member a person named and forces onto it; it
// returns why not when it refuses.
func (d *decider) forceApproval(member string) string {
	if why := d.forceBlocked(); why != "" {
		return why + ": nothing is forced"
	}
	f, err := mongo.ForceOnto(*d.in.Obs.Config, d.in.Obs.Statuses, d.hostOf(member))
	if err != nil {
		return strings.TrimPrefix(err.Error(), "mongo: ")
	}
	d.emit(ApprovalAccepted{Annotation: ForceAnnotation, Value: member})
	d.force(f, string(v1alpha1.RecoveryManual), member)
	return ""
}

// podOf is the pod name of a config host, "" when no desired member has it.
func (d *decider) podOf(host string) string {
	for _, dm := range d.in.Desired {
		if mongo.SameHost(dm.Host, host) {
			return dm.Name
		}
	}
	return ""
}

// hostOf resolves a member named by pod name or host to its config host.
func (d *decider) hostOf(member string) string {
	for _, dm := range d.in.Desired {
		if dm.Name == member || mongo.SameHost(dm.Host, member) {
			return dm.Host
		}
	}
	return member
}

// reinitiateApproval initiates again after every volume was lost, when the
// value is this Mgors's UID; it returns why not when it refuses.
func (d *decider) reinitiateApproval(value string) string {
	uid := string(d.in.Mgors.UID)
	switch {
	case value != uid:
		return fmt.Sprintf("the value must be this Mgors's UID %s", uid)
	case !d.s.Initiated:
		return "the replica set was never initiated: the operator initiates it by itself"
	case d.s.VolumesLost == nil || !d.everyMemberEmpty():
		return "not every member answers without a config: a member still holds the data, nothing is initiated"
	}
	host, ok := initiator(d.in.Desired)
	if !ok {
		return "no electable member to initiate on"
	}
	d.emit(ApprovalAccepted{Annotation: ReinitiateAnnotation, Value: value})
	d.phase(v1alpha1.PhaseInitiating, "a person approved a fresh initiate after every volume was lost")
	cfg := mongo.InitialConfig(d.in.Mgors.ReplSetName(), d.in.Desired, d.in.Mgors.Spec.ReplicaSet)
	d.act(Action{Kind: ActInitiate, Host: host, Config: &cfg},
		ActionStarted{Target: host, ConfigVersion: cfg.Version, Members: hosts(cfg),
			Reason: "every volume was lost and " + ReinitiateAnnotation + " approved a fresh initiate"})
	return ""
}

// everyMemberEmpty is true when every desired member answers hello without a
// config and no config read failed: the only state in which an initiated set
// may be initiated again (and only with a person's approval).
func (d *decider) everyMemberEmpty() bool {
	o := d.in.Obs
	if o.Config != nil || o.ConfigErr != "" || len(d.in.Desired) == 0 {
		return false
	}
	for _, dm := range d.in.Desired {
		mv, ok := o.Members[dm.Host]
		if !ok || !mv.Answers || mv.HasConfig || mv.Removed {
			return false
		}
	}
	return true
}

// volumesLost records, once, that an initiated set lost every volume.
func (d *decider) volumesLost() {
	if !d.s.Initiated || d.s.VolumesLost != nil || !d.everyMemberEmpty() {
		return
	}
	var names []string
	for _, dm := range d.in.Desired {
		names = append(names, dm.Name)
	}
	d.emit(VolumesLost{Members: names})
}

// diverged lists the desired members outside the config that came back, after
// a forced reconfig, with writes past the survivor's optime at the force: their
// data must be wiped before they are added again.
func (d *decider) diverged() []mongo.DesiredMember {
	o := d.in.Obs
	if !d.s.ForceApplied || d.s.Force == nil || o.Config == nil {
		return nil
	}
	var out []mongo.DesiredMember
	for _, dm := range d.in.Desired {
		mv := o.Members[dm.Host]
		if !mv.Answers || o.Config.Member(dm.Host) != nil {
			continue
		}
		if mv.LastWrite.Compare(d.s.Force.SurvivorOptime.mongo()) > 0 {
			out = append(out, dm)
		}
	}
	return out
}

// answering is the planner's set of members to add: those that answer hello,
// less the ones that must be wiped first.
func (d *decider) answering() mongo.Hosts {
	h := d.in.Obs.answering()
	for _, dm := range d.diverged() {
		delete(h, mongo.NormalizeHost(dm.Host))
	}
	return h
}

// wipeDiverged wipes one diverged member at a time.
func (d *decider) wipeDiverged() bool {
	div := d.diverged()
	if len(div) == 0 {
		return false
	}
	dm := div[0]
	d.act(Action{Kind: ActWipeMember, Host: dm.Name}, ActionStarted{Target: dm.Name,
		Reason: fmt.Sprintf("%s came back at optime %s, past the survivor's %s at the forced reconfig: its data is wiped so it resyncs",
			dm.Name, d.in.Obs.Members[dm.Host].LastWrite, d.s.Force.SurvivorOptime)})
	return true
}

// nodeLoss force-deletes, one at a time, the member pods of a node NotReady
// past spec.recovery.nodeLossGracePeriod (unset: never).
func (d *decider) nodeLoss() bool {
	grace := d.in.Mgors.Spec.Recovery.NodeLossGracePeriod
	if grace == nil {
		return false
	}
	var lost []PodView
	for _, p := range d.in.Obs.Pods {
		if p.Node != "" && !p.NodeReady && !p.NodeNotReadySince.IsZero() && !d.in.Now.Before(p.NodeNotReadySince.Add(grace.Duration)) {
			lost = append(lost, p)
		}
	}
	if len(lost) == 0 {
		return false
	}
	sort.Slice(lost, func(i, j int) bool { return lost[i].Name < lost[j].Name })
	p := lost[0]
	var onNode []string
	for _, q := range lost {
		if q.Node == p.Node {
			onNode = append(onNode, q.Name)
		}
	}
	d.emit(NodeLost{Node: p.Node, Since: p.NodeNotReadySince, Pods: onNode})
	d.act(Action{Kind: ActForceDeletePod, Host: p.Name}, ActionStarted{Target: p.Name,
		Reason: fmt.Sprintf("node %s is NotReady since %s, past spec.recovery.nodeLossGracePeriod %s: the pod is force-deleted so the StatefulSet recreates it elsewhere",
			p.Node, p.NodeNotReadySince.UTC().Format(time.RFC3339), grace.Duration)})
	return true
}

// settleForce settles a forced reconfig in flight from the survivor's own
// hello, never by sending it again: its config version at or past the forced
// one → finished; an older version → it never applied, failed; the survivor
// silent → still in flight (it may hold the forced config).
func (d *decider) settleForce(f *ActionStarted) (done, settled bool) {
	for host, mv := range d.in.Obs.Members {
		if !mongo.SameHost(host, f.Target) || !mv.Answers {
			continue
		}
		if mv.HasConfig && mv.ConfigVersion >= f.ConfigVersion {
			return true, true
		}
		return false, true
	}
	return false, false
}

// uncertain reports an action error that does not say whether a forced
// reconfig took effect: no server reply (timeout, dropped connection).
func uncertain(a Action, err error) bool {
	var se *mongo.ServerError
	return a.Kind == ActForceReconfig && !errors.As(err, &se)
}
