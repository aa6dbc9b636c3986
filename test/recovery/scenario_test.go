package recovery

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mgors/operator/actors"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/test/chaos"
)

// majorityOf splits the i-th cluster for a majority loss: the survivor (a
// secondary, the second other than the primary) and the pods to freeze (the
// primary and the other secondary).
func majorityOf(ctx context.Context, s *chaos.Scene, i int) (survivor string, frozen []string, err error) {
	primary, err := s.Member(ctx, i, chaos.RolePrimary)
	if err != nil {
		return "", nil, err
	}
	var others []string
	for _, h := range s.Clusters()[i].Hosts {
		if h != primary {
			others = append(others, h)
		}
	}
	if len(others) != 2 {
		return "", nil, fmt.Errorf("a majority loss needs 3 members, %s has %d", s.Clusters()[i].Name, len(others)+1)
	}
	return others[1], []string{podOf(primary), podOf(others[0])}, nil
}

// majorityLoss freezes (SIGSTOP, every node cordoned: chaos.Freeze) the
// primary and one secondary of the Automatic cluster, so that only one member
// of three answers, holds them until the survivor is primary (the operator
// fenced both, then forced), then thaws them, and waits for Healthy.
// Under Manual it also waits past the grace period (nothing is forced), then
// approves the wrong member (a frozen one: refused), then the survivor.
// With lag, the survivor is first cut off from the other two for lagFor, so
// that they go on committing writes it never gets: they come back diverged
// and must be wiped and resynced, and the writes after the survivor's optime
// are lost, inside the window the force records at risk.
type majorityLoss struct {
	idx    int // the cluster
	manual bool
	lag    bool

	survivor string   // host
	pods     []string // the frozen ones
	start    time.Time
	lostSeen time.Time // the MajorityLost condition True
	primary  time.Time // the survivor seen PRIMARY
	healed   time.Time
	healthy  time.Time
	// Manual: whether the survivor was primary before the approval, and when
	// each approval was handled (the annotation removed).
	primaryBeforeApproval bool
	refusedAt, acceptedAt time.Time
	conditionWhileWaiting string
}

func (ml *majorityLoss) run(ctx context.Context, s *chaos.Scene) error {
	c := s.Clusters()[ml.idx]
	survivor, frozen, err := majorityOf(ctx, s, ml.idx)
	if err != nil {
		return err
	}
	ml.survivor, ml.pods = survivor, frozen
	var evidence []string
	var held *chaos.Frozen
	ml.start = time.Now()
	defer func() {
		if ml.healed.IsZero() && held != nil { // an error on the way: never leave them frozen
			_, _ = held.Thaw(context.WithoutCancel(ctx))
		}
	}()
	lagTag := "recovery-lag-" + c.Name
	if ml.lag {
		if err := s.Faults().Partition(ctx, lagTag, c.Namespace, []string{podOf(ml.survivor)}, ml.pods); err != nil {
			return err
		}
		defer func() { _ = s.Faults().Heal(context.WithoutCancel(ctx), lagTag) }()
		evidence = append(evidence, fmt.Sprintf("%s cut off from %s for %s", podOf(ml.survivor), strings.Join(ml.pods, ", "), lagFor))
		sleepFor(ctx, lagFor)
	}
	held, ev, err := chaos.Freeze(ctx, s.Kube(), s.Faults(), c.Namespace, ml.pods)
	evidence = append(evidence, ev...)
	if err != nil {
		return err
	}
	if ml.lag {
		// The two are frozen: the survivor, reachable again, cannot catch up.
		if err := s.Faults().Heal(ctx, lagTag); err != nil {
			return err
		}
	}
	if until(ctx, evidenceTimeout, func() bool { return condition(ctx, s, c, v1alpha1.ConditionMajorityLost) }) {
		ml.lostSeen = time.Now()
	}
	survivorPrimary := func() bool {
		for _, m := range s.Samples(ml.idx, ml.start, time.Now()) {
			if m.Member == ml.survivor && m.State == "PRIMARY" && m.Error == "" {
				return true
			}
		}
		return false
	}
	if ml.manual && !ml.lostSeen.IsZero() {
		sleepFor(ctx, time.Until(ml.lostSeen.Add(gracePeriod+10*time.Second)))
		ml.primaryBeforeApproval = survivorPrimary()
		ml.conditionWhileWaiting = conditionMessage(ctx, s, c, v1alpha1.ConditionMajorityLost)
		for _, approve := range []struct {
			member string
			at     *time.Time
		}{{ml.pods[0], &ml.refusedAt}, {podOf(ml.survivor), &ml.acceptedAt}} {
			if err := annotate(ctx, s, c, approve.member); err != nil {
				return err
			}
			if until(ctx, evidenceTimeout, func() bool { return !annotated(ctx, s, c) }) {
				*approve.at = time.Now()
			}
		}
	}
	if until(ctx, actionBound, survivorPrimary) {
		ml.primary = time.Now()
	}
	ev, err = held.Thaw(context.WithoutCancel(ctx))
	evidence = append(evidence, ev...)
	if err != nil {
		return err
	}
	ml.healed = time.Now()
	at, err := s.WaitHealthy(ctx, ml.healed)
	if err == nil {
		ml.healthy = at
	}
	evidence = append(evidence, fmt.Sprintf("MajorityLost condition seen %t, survivor %s primary %t", !ml.lostSeen.IsZero(), ml.survivor, !ml.primary.IsZero()))
	kind := chaos.FaultKind("majority-loss-automatic")
	if ml.manual {
		kind = "majority-loss-manual"
	}
	s.Record(chaos.Fault{Kind: kind, Cluster: c.Namespace + "/" + c.Name, Targets: ml.pods, Start: ml.start,
		Healed: ml.healed, Happened: !ml.lostSeen.IsZero(), Evidence: strings.Join(evidence, "; "), HealthyAt: at})
	return nil
}

// judge reads the cluster's event log: the loss with its evidence, one force
// onto the survivor after both frozen members were fenced (Automatic: not
// before the grace period; Manual: only
// after the right approval, the wrong one refused, each annotation removed),
// its writes at risk, the majority restored, and Healthy within the bound.
func (ml *majorityLoss) judge(t *testing.T, recs []record, h *chaos.History, key string) {
	t.Helper()
	name := "majority loss (Automatic)"
	policy := string(v1alpha1.RecoveryAutomatic)
	if ml.manual {
		name, policy = "majority loss (Manual)", string(v1alpha1.RecoveryManual)
	}
	if ml.lostSeen.IsZero() || ml.primary.IsZero() || ml.healthy.IsZero() {
		t.Errorf("%s: MajorityLost condition seen %t, survivor %s primary %t, Healthy %t", name, !ml.lostSeen.IsZero(),
			ml.survivor, !ml.primary.IsZero(), !ml.healthy.IsZero())
	}
	lost, ok := first(recs, ml.start, func(r record) bool { _, ok := r.Event.(actors.MajorityLost); return ok })
	if !ok {
		t.Fatalf("%s: no MajorityLost in the event log", name)
	}
	if e := lost.Event.(actors.MajorityLost); len(e.Missing) != 2 || len(e.Survivors) != 1 || e.Evidence == "" {
		t.Errorf("%s: MajorityLost %+v, want 2 missing, 1 survivor and the evidence", name, e)
	}
	var forces []record
	for _, r := range recs {
		if a, ok := r.Event.(actors.ActionStarted); ok && a.Action == actors.ActForceReconfig {
			forces = append(forces, r)
		}
	}
	if len(forces) != 1 {
		t.Fatalf("%s: %d forced reconfigs, want 1", name, len(forces))
	}
	decided, ok := first(recs, ml.start, func(r record) bool { _, ok := r.Event.(actors.ForceDecided); return ok })
	if !ok {
		t.Fatalf("%s: no ForceDecided", name)
	}
	fd := decided.Event.(actors.ForceDecided)
	if fd.Policy != policy || !strings.HasPrefix(ml.survivor, fd.Survivor+".") && fd.Survivor != ml.survivor {
		t.Errorf("%s: ForceDecided %+v, want %s onto %s", name, fd, policy, ml.survivor)
	}
	// Fencing: each member the force drops had its pod deleted after the
	// decision and before the force, so no paused mongod could come back
	// with the old config and an expired election timer.
	fenced := map[string]bool{}
	for _, r := range recs {
		if a, ok := r.Event.(actors.ActionStarted); ok && a.Action == actors.ActFencePod && !r.At.Before(decided.At) && !r.At.After(forces[0].At) {
			fenced[a.Target] = a.UID != ""
		}
	}
	for _, p := range ml.pods {
		if !fenced[p] {
			t.Errorf("%s: %s not fenced (by UID) between the decision and the force: %v", name, p, fenced)
		}
	}
	if d := decided.At.Sub(lost.At); d < gracePeriod && !ml.manual {
		t.Errorf("%s: forced %s after MajorityLost, before the grace period %s", name, d, gracePeriod)
	}
	if ml.manual {
		ml.judgeApprovals(t, recs, h, decided, fd)
	}
	if !slices.ContainsFunc(h.AtRisk, func(w chaos.AtRisk) bool { return w.Cluster == key }) {
		t.Errorf("%s: no window of writes at risk collected from the ForceDecided", name)
	}
	restored, ok := first(recs, decided.At, func(r record) bool { _, ok := r.Event.(actors.MajorityRestored); return ok })
	if !ok {
		t.Errorf("%s: no MajorityRestored after the force", name)
	}
	if ml.lag {
		ml.judgeWipes(t, recs, h, key, name, decided, fd)
	}
	action, _ := first(recs, ml.start, func(r record) bool { _, ok := r.Event.(actors.ActionStarted); return ok })
	t.Logf("%s, gracePeriod %s: fault at %s; MajorityLost +%s; first action (%s) +%s; force +%s; majority restored +%s; members resumed +%s; Healthy +%s",
		name, gracePeriod, ml.start.UTC().Format(time.RFC3339), since(ml.start, lost.At), action.Type, since(ml.start, action.At),
		since(ml.start, forces[0].At), since(ml.start, restored.At), since(ml.start, ml.healed), since(ml.start, ml.healthy))
	t.Logf("  writes at risk: %+v", fd)
	for _, r := range recs {
		if a, ok := r.Event.(actors.ActionStarted); ok && !r.At.Before(ml.start) {
			t.Logf("  +%s %s %s: %s", since(ml.start, r.At), a.Action, a.Target, a.Reason)
		}
	}
}

// judgeWipes: after a lagging survivor was forced, the two frozen members came
// back with writes past its optime (the force recorded them at risk, and the
// checker excused them), and each was wiped (WipeMember, its claim replaced)
// and resynced.
func (ml *majorityLoss) judgeWipes(t *testing.T, recs []record, h *chaos.History, key, name string, decided record, fd actors.ForceDecided) {
	t.Helper()
	if fd.LossSeen.IsZero() {
		t.Errorf("%s: ForceDecided without lossSeen: %+v", name, fd)
	}
	wiped := map[string]time.Time{}
	for _, r := range recs {
		if a, ok := r.Event.(actors.ActionStarted); ok && a.Action == actors.ActWipeMember && r.At.After(decided.At) {
			if _, seen := wiped[a.Target]; seen {
				t.Errorf("%s: %s wiped twice", name, a.Target)
			}
			wiped[a.Target] = r.At
			t.Logf("%s: +%s WipeMember %s: %s", name, since(ml.start, r.At), a.Target, a.Reason)
		}
	}
	for _, p := range ml.pods {
		if _, ok := wiped[p]; !ok {
			t.Errorf("%s: %s came back with writes past the survivor's and was not wiped", name, p)
		}
	}
	if len(wiped) != len(ml.pods) {
		t.Errorf("%s: %d members wiped, want %d (%v)", name, len(wiped), len(ml.pods), wiped)
	}
	n := 0
	for _, w := range h.Wiped {
		if w.Cluster == key {
			n++
		}
	}
	if n != len(ml.pods) {
		t.Errorf("%s: the checker collected %d wipes, want %d", name, n, len(ml.pods))
	}
}

// judgeApprovals: under Manual nothing was forced while waiting, the status
// said what to do, the wrong approval was refused (event log and Event), the
// right one accepted and forced once, each annotation removed.
func (ml *majorityLoss) judgeApprovals(t *testing.T, recs []record, h *chaos.History, decided record, fd actors.ForceDecided) {
	t.Helper()
	if ml.primaryBeforeApproval {
		t.Error("majority loss (Manual): the survivor was primary before any approval")
	}
	if !strings.Contains(ml.conditionWhileWaiting, "mgors.io/force-reconfigure-onto") {
		t.Errorf("majority loss (Manual): the MajorityLost condition does not name the approval: %q", ml.conditionWhileWaiting)
	}
	if ml.refusedAt.IsZero() || ml.acceptedAt.IsZero() {
		t.Errorf("majority loss (Manual): annotation removed after the wrong approval %t, after the right one %t", !ml.refusedAt.IsZero(), !ml.acceptedAt.IsZero())
	}
	refused, ok := first(recs, ml.start, func(r record) bool { _, ok := r.Event.(actors.ApprovalRefused); return ok })
	if !ok || refused.Event.(actors.ApprovalRefused).Value != ml.pods[0] {
		t.Errorf("majority loss (Manual): no ApprovalRefused of %s: %+v", ml.pods[0], refused.Event)
	}
	accepted, ok := first(recs, ml.start, func(r record) bool { _, ok := r.Event.(actors.ApprovalAccepted); return ok })
	if !ok || accepted.Event.(actors.ApprovalAccepted).Value != podOf(ml.survivor) || fd.Approval != podOf(ml.survivor) {
		t.Errorf("majority loss (Manual): accepted %+v, forced with approval %q; want %s", accepted.Event, fd.Approval, podOf(ml.survivor))
	}
	if decided.At.Before(accepted.At) {
		t.Error("majority loss (Manual): forced before the approval was accepted")
	}
	removals := 0
	for _, r := range recs {
		if a, ok := r.Event.(actors.ActionStarted); ok && a.Action == actors.ActRemoveAnnotation {
			removals++
		}
	}
	if removals != 2 {
		t.Errorf("majority loss (Manual): %d annotation removals, want 2", removals)
	}
	if !strings.Contains(h.Logs["events"], "ApprovalRefused") {
		t.Error("majority loss (Manual): no ApprovalRefused Event")
	}
	t.Logf("majority loss (Manual): waiting, the condition said %q; wrong approval handled +%s, right one +%s",
		ml.conditionWhileWaiting, since(ml.start, ml.refusedAt), since(ml.start, ml.acceptedAt))
}

// nodeLoss takes down the node of a secondary of the cluster with
// nodeLossGracePeriod, waits until the operator force-deleted its pod and the
// StatefulSet recreated it elsewhere and the cluster is Healthy, checks that
// the other cluster's pod on that node (no nodeLossGracePeriod) was left
// alone, then brings the node back.
type nodeLoss struct {
	node, pod, uid     string
	other, otherUID    string // the Automatic cluster's pod on the node, if any
	otherKept          bool
	start              time.Time
	recreated, healthy time.Time
	healed, allHealthy time.Time
}

func (nl *nodeLoss) run(ctx context.Context, s *chaos.Scene) error {
	c, a := s.Clusters()[nodesIdx], s.Clusters()[autoIdx]
	primary, err := s.Member(ctx, nodesIdx, chaos.RolePrimary)
	if err != nil {
		return err
	}
	operatorNodes := map[string]bool{}
	if l, err := list(ctx, s, "mgors-system", ""); err == nil {
		for _, p := range l {
			operatorNodes[p.Spec.NodeName] = true
		}
	}
	for _, h := range c.Hosts {
		if h == primary {
			continue
		}
		p, err := getPod(ctx, s, c.Namespace, podOf(h))
		if err != nil {
			return err
		}
		if nl.pod == "" || (operatorNodes[nl.node] && !operatorNodes[p.Spec.NodeName]) {
			nl.pod, nl.uid, nl.node = p.Name, string(p.UID), p.Spec.NodeName
		}
	}
	if l, err := list(ctx, s, a.Namespace, "mgors.io/cluster="+a.Name); err == nil {
		for _, p := range l {
			if p.Spec.NodeName == nl.node {
				nl.other, nl.otherUID = p.Name, string(p.UID)
			}
		}
	}
	nl.start = time.Now()
	ev, err := s.Faults().NodeDown(ctx, nl.node)
	if err != nil {
		return err
	}
	defer func() {
		if nl.healed.IsZero() {
			_ = s.Faults().NodeUp(context.WithoutCancel(ctx), nl.node)
		}
	}()
	if until(ctx, actionBound, func() bool {
		p, err := getPod(ctx, s, c.Namespace, nl.pod)
		return err == nil && string(p.UID) != nl.uid && ready(p)
	}) {
		nl.recreated = time.Now()
	}
	if until(ctx, healthyBound, func() bool { return clusterHealthy(ctx, s, c) }) {
		nl.healthy = time.Now()
	}
	if nl.other != "" {
		p, err := getPod(ctx, s, a.Namespace, nl.other)
		nl.otherKept = err == nil && string(p.UID) == nl.otherUID
	}
	if err := s.Faults().NodeUp(context.WithoutCancel(ctx), nl.node); err != nil {
		return err
	}
	nl.healed = time.Now()
	at, err := s.WaitHealthy(ctx, nl.healed)
	if err == nil {
		nl.allHealthy = at
	}
	newNode := ""
	if p, err := getPod(ctx, s, c.Namespace, nl.pod); err == nil {
		newNode = p.Spec.NodeName
	}
	s.Record(chaos.Fault{Kind: chaos.NodeDown, Cluster: c.Namespace + "/" + c.Name, Targets: []string{nl.node, nl.pod},
		Start: nl.start, Healed: nl.healed, Happened: !nl.recreated.IsZero(), HealthyAt: at,
		Evidence: fmt.Sprintf("%s; pod %s recreated on %s %t; %s/%s on the node kept %t", ev, nl.pod, newNode, !nl.recreated.IsZero(), a.Name, nl.other, nl.otherKept)})
	return nil
}

// judge reads both event logs: the cluster with the field recorded NodeLost
// and force-deleted the pod once the node was NotReady past the grace period;
// the cluster without it deleted nothing.
func (nl *nodeLoss) judge(t *testing.T, recs, autoRecs []record) {
	t.Helper()
	if nl.recreated.IsZero() || nl.healthy.IsZero() || nl.allHealthy.IsZero() {
		t.Errorf("node loss: pod %s recreated %t, cluster Healthy while the node was down %t, every cluster Healthy after it came back %t",
			nl.pod, !nl.recreated.IsZero(), !nl.healthy.IsZero(), !nl.allHealthy.IsZero())
	}
	if nl.other != "" && !nl.otherKept {
		t.Errorf("node loss: pod %s of the cluster without nodeLossGracePeriod was replaced", nl.other)
	}
	lost, ok := first(recs, nl.start, func(r record) bool { _, ok := r.Event.(actors.NodeLost); return ok })
	if !ok {
		t.Fatal("node loss: no NodeLost in the event log")
	}
	nlost := lost.Event.(actors.NodeLost)
	del, ok := first(recs, nl.start, func(r record) bool {
		a, ok := r.Event.(actors.ActionStarted)
		return ok && a.Action == actors.ActForceDeletePod
	})
	if !ok || del.Event.(actors.ActionStarted).Target != nl.pod || nlost.Node != nl.node {
		t.Fatalf("node loss: NodeLost %+v, force delete %+v; want node %s, pod %s", nlost, del.Event, nl.node, nl.pod)
	}
	if d := del.At.Sub(nlost.Since); d < nodeLossGrace {
		t.Errorf("node loss: force-deleted %s after the node went NotReady, before the grace period %s", d, nodeLossGrace)
	}
	for _, r := range autoRecs {
		if a, ok := r.Event.(actors.ActionStarted); ok && a.Action == actors.ActForceDeletePod {
			t.Errorf("node loss: the cluster without nodeLossGracePeriod force-deleted %s", a.Target)
		}
	}
	t.Logf("node loss (nodeLossGracePeriod %s): node %s down at %s; NotReady since +%s; first action (force delete %s) +%s; pod Ready again +%s; cluster Healthy +%s; node back +%s; every cluster Healthy +%s",
		nodeLossGrace, nl.node, nl.start.UTC().Format(time.RFC3339), since(nl.start, nlost.Since), nl.pod, since(nl.start, del.At),
		since(nl.start, nl.recreated), since(nl.start, nl.healthy), since(nl.start, nl.healed), since(nl.start, nl.allHealthy))
}

func since(from, to time.Time) string {
	if to.IsZero() {
		return "never"
	}
	return to.Sub(from).Round(100 * time.Millisecond).String()
}

// until polls cond every half second for at most bound.
func until(ctx context.Context, bound time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(bound)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if cond() {
			return true
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
	return false
}

func podOf(host string) string {
	name, _, _ := strings.Cut(host, ".")
	return name
}

func getPod(ctx context.Context, s *chaos.Scene, ns, name string) (*corev1.Pod, error) {
	gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return s.Kube().CoreV1().Pods(ns).Get(gctx, name, metav1.GetOptions{})
}

func list(ctx context.Context, s *chaos.Scene, ns, selector string) ([]corev1.Pod, error) {
	gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	l, err := s.Kube().CoreV1().Pods(ns).List(gctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

func ready(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// condition says whether the Mgors has condition typ True.
func condition(ctx context.Context, s *chaos.Scene, c chaos.ClusterRef, typ string) bool {
	gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	m, err := s.Mgors().Mgorses(c.Namespace).Get(gctx, c.Name, metav1.GetOptions{})
	if err != nil {
		return false
	}
	for _, cond := range m.Status.Conditions {
		if cond.Type == typ {
			return cond.Status == metav1.ConditionTrue
		}
	}
	return false
}

// clusterHealthy: the Mgors Healthy at its generation and every member pod
// Ready (one cluster, while another may still be down).
func clusterHealthy(ctx context.Context, s *chaos.Scene, c chaos.ClusterRef) bool {
	gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	m, err := s.Mgors().Mgorses(c.Namespace).Get(gctx, c.Name, metav1.GetOptions{})
	if err != nil || m.Status.Phase != v1alpha1.PhaseHealthy || m.Status.ObservedGeneration != m.Generation {
		return false
	}
	pods, err := list(ctx, s, c.Namespace, "mgors.io/cluster="+c.Name)
	if err != nil || len(pods) != len(c.Hosts) {
		return false
	}
	for i := range pods {
		if !ready(&pods[i]) {
			return false
		}
	}
	return true
}

func sleepFor(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// conditionMessage is the message of the Mgors's condition typ.
func conditionMessage(ctx context.Context, s *chaos.Scene, c chaos.ClusterRef, typ string) string {
	gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	m, err := s.Mgors().Mgorses(c.Namespace).Get(gctx, c.Name, metav1.GetOptions{})
	if err != nil {
		return err.Error()
	}
	for _, cond := range m.Status.Conditions {
		if cond.Type == typ {
			return string(cond.Status) + ": " + cond.Message
		}
	}
	return ""
}

// annotate approves a forced reconfig onto member, as a person does.
func annotate(ctx context.Context, s *chaos.Scene, c chaos.ClusterRef, member string) error {
	gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, actors.ForceAnnotation, member)
	_, err := s.Mgors().Mgorses(c.Namespace).Patch(gctx, c.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}

// annotated says whether the approval annotation is still on the Mgors.
func annotated(ctx context.Context, s *chaos.Scene, c chaos.ClusterRef) bool {
	gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	m, err := s.Mgors().Mgorses(c.Namespace).Get(gctx, c.Name, metav1.GetOptions{})
	if err != nil {
		return true
	}
	_, ok := m.Annotations[actors.ForceAnnotation]
	return ok
}
