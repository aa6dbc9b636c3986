package recovery

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/mgors/operator/actors"
	"github.com/mgors/operator/actors/eventlog"
	"github.com/mgors/operator/test/chaos"
	"github.com/mgors/operator/test/localkube/kubelet"
)

// The operator's Deployment and Lease (deploy/operator.yaml).
const (
	operatorNamespace = "mgors-system"
	operatorLease     = "mgors-operator"
	operatorContainer = "operator"
)

// leaderKill freezes the primary and one secondary of an Automatic cluster
// (as majorityLoss does) and SIGKILLs the operator leader the moment the
// cluster's event log shows a record of type on (MajorityLost: in the grace
// period; ActionStarted of the ForceReconfig: around the force and its
// record, after the fencing). The other replica
// takes the Lease over and must finish the recovery with one force. Then the
// frozen members go on and the set must be Healthy with its three members.
//
// With pause set the leader is not killed but frozen (SIGSTOP) until another
// replica holds the Lease (at most pause), then continued: it lost leadership
// without dying, and must write nothing more and exit (cmd/mgors-operator
// stops its actors and ends when it loses the Lease).
type leaderKill struct {
	idx   int
	on    string            // the record type whose appearance triggers the kill
	act   actors.ActionKind // with on ActionStarted: of this action only
	pause time.Duration     // freeze the leader instead, for at most this long
	// fast: SIGKILL the leader's process found before the fault, not through
	// the injector (which reads the API and /proc first, tens of ms): the
	// force and its record are about 10 ms apart.
	fast bool

	survivor  string
	pods      []string
	start     time.Time
	trigger   eventlog.Record // the record that triggered the kill
	killed    string          // the operator pod killed (the trigger's writer)
	killFrom  time.Time       // just before the SIGKILL was sent
	killAt    time.Time       // once it was sent
	evidence  string
	newLeader string // the Lease holder after the kill
	tookOver  time.Time
	resumed   time.Time        // pause: when the old leader was continued
	exited    time.Time        // pause: when its container was seen restarted
	restarts  map[string]int32 // each operator pod's container restarts before the fault
	primary   time.Time        // the survivor seen PRIMARY
	healed    time.Time
	healthy   time.Time
}

func (lk *leaderKill) run(ctx context.Context, s *chaos.Scene) error {
	c := s.Clusters()[lk.idx]
	survivor, frozen, err := majorityOf(ctx, s, lk.idx)
	if err != nil {
		return err
	}
	lk.survivor, lk.pods = survivor, frozen
	var armed map[string][]int // the leader's container pids, for a fast kill
	if holder, _ := leaseHolder(ctx, s); lk.fast && holder != "" {
		if pids, err := kubelet.PodProcesses(s.Dir(), operatorNamespace, holder); err == nil && len(pids) > 0 {
			armed = map[string][]int{holder: pids}
		}
	}
	lk.restarts = operatorRestarts(ctx, s)
	lk.start = time.Now()

	// The watch starts before the fault, so the trigger cannot be missed.
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	killed := make(chan error, 1)
	go func() {
		killed <- watchLog(wctx, s, c, func(r eventlog.Record) bool {
			if r.Type != lk.on || r.Time.Before(lk.start) || !lk.aimedAt(r) {
				return false
			}
			lk.trigger, lk.killed, lk.killFrom = r, r.Writer, time.Now()
			var ev string
			var err error
			switch pids := armed[r.Writer]; {
			case lk.pause > 0:
				ev, err = s.Faults().Pause(wctx, operatorNamespace, r.Writer)
			case len(pids) > 0 && sigkill(pids):
				ev = fmt.Sprintf("pod %s/%s: SIGKILL to its container pids %v, found before the fault", operatorNamespace, r.Writer, pids)
			default:
				ev, err = s.Faults().Kill(wctx, operatorNamespace, r.Writer, operatorContainer)
			}
			lk.killAt = time.Now()
			if lk.evidence = ev; err != nil {
				lk.evidence = "kill failed: " + err.Error()
			}
			return true
		})
	}()

	held, evidence, err := chaos.Freeze(ctx, s.Kube(), s.Faults(), c.Namespace, lk.pods)
	if err != nil {
		return err
	}
	defer func() {
		if lk.healed.IsZero() { // an error on the way: never leave them frozen
			_, _ = held.Thaw(context.WithoutCancel(ctx))
		}
	}()
	log := s.Log()
	select {
	case err := <-killed:
		if err != nil {
			log.Warn().Err(err).Str("on", lk.on).Msg("watching the event log for the kill failed")
		}
	case <-time.After(gracePeriod + actionBound):
		stopWatch()
		err := <-killed // the watcher is done with lk
		log.Warn().Err(err).Str("on", lk.on).Msg("no trigger record: the leader was not killed")
	}
	stopWatch()
	if lk.pause > 0 && lk.killed != "" {
		lk.holdPaused(ctx, s)
	} else if lk.killed != "" && until(ctx, time.Minute, func() bool {
		// Another replica takes the Lease, or the killed one's restarted
		// container (same pod, same identity) renews it.
		var renewed time.Time
		lk.newLeader, renewed = leaseHolder(ctx, s)
		if lk.newLeader == lk.killed {
			return renewed.After(lk.killAt) && lk.restarted(ctx, s)
		}
		return lk.newLeader != ""
	}) {
		lk.tookOver = time.Now()
	}
	survivorPrimary := func() bool {
		for _, m := range s.Samples(lk.idx, lk.start, time.Now()) {
			if m.Member == lk.survivor && m.State == "PRIMARY" && m.Error == "" {
				return true
			}
		}
		return false
	}
	if until(ctx, actionBound, survivorPrimary) {
		lk.primary = time.Now()
	}
	ev, err := held.Thaw(context.WithoutCancel(ctx))
	evidence = append(evidence, ev...)
	if err != nil {
		return err
	}
	lk.healed = time.Now()
	at, err := s.WaitHealthy(ctx, lk.healed)
	if err == nil {
		lk.healthy = at
	} else {
		log.Warn().Err(err).Str("on", lk.on).Msg("not Healthy after the majority loss")
	}
	key := c.Namespace + "/" + c.Name
	evidence = append(evidence, fmt.Sprintf("survivor %s primary %t", lk.survivor, !lk.primary.IsZero()))
	s.Record(chaos.Fault{Kind: "majority-loss-automatic", Cluster: key, Targets: lk.pods, Start: lk.start,
		Healed: lk.healed, Happened: !lk.primary.IsZero(), Evidence: strings.Join(evidence, "; "), HealthyAt: at})
	kind, healed := chaos.KillOperatorLeader, lk.killAt
	if lk.pause > 0 {
		kind, healed = "pause-operator-leader", lk.resumed
	}
	s.Record(chaos.Fault{Kind: kind, Cluster: key, Targets: []string{operatorNamespace + "/" + lk.killed},
		Start: lk.killAt, Healed: healed, Happened: !lk.tookOver.IsZero(), HealthyAt: at,
		Evidence: fmt.Sprintf("on %s seq %d: %s; Lease holder now %q; the old leader exited %t", lk.aim(), lk.trigger.Seq,
			lk.evidence, lk.newLeader, !lk.exited.IsZero())})
	return nil
}

// holdPaused keeps the old leader frozen until another replica holds the
// Lease (at most lk.pause: the liveness probe kills a process silent for
// 30 s), continues it, and waits until it ended (its container restarted).
func (lk *leaderKill) holdPaused(ctx context.Context, s *chaos.Scene) {
	if until(ctx, lk.pause, func() bool {
		lk.newLeader, _ = leaseHolder(ctx, s)
		return lk.newLeader != "" && lk.newLeader != lk.killed
	}) {
		lk.tookOver = time.Now()
	}
	ev, err := s.Faults().Resume(context.WithoutCancel(ctx), operatorNamespace, lk.killed)
	lk.resumed = time.Now()
	if err != nil {
		ev = "resume failed: " + err.Error()
	}
	lk.evidence += "; " + ev
	if until(ctx, time.Minute, func() bool { return lk.restarted(ctx, s) }) {
		lk.exited = time.Now()
	}
}

// judge reads the cluster's event log: the kill fell where it was aimed; the
// new leader wrote after it; one force applied (a force started and found not
// applied is settled ActionFailed before another is decided), not before the
// grace period after the one MajorityLost; the majority restored; Healthy.
// It says which window the kill hit.
func (lk *leaderKill) judge(t *testing.T, recs []writtenRecord, h *chaos.History, key string) {
	t.Helper()
	name := "leader killed at " + lk.aim()
	if lk.pause > 0 {
		name = "leader paused at " + lk.aim()
		if lk.exited.IsZero() {
			t.Errorf("%s: the old leader %s did not exit after it lost the Lease", name, lk.killed)
		}
	}
	if lk.killed == "" || lk.tookOver.IsZero() || lk.primary.IsZero() || lk.healthy.IsZero() {
		t.Fatalf("%s: killed %q (%s), a new leader took the Lease %t, survivor %s primary %t, Healthy %t", name,
			lk.killed, lk.evidence, !lk.tookOver.IsZero(), lk.survivor, !lk.primary.IsZero(), !lk.healthy.IsZero())
	}
	var lost, decided, finished []writtenRecord
	starts, failed, uncertain, byNew := 0, 0, 0, 0
	for _, r := range recs {
		if r.At.Before(lk.start) {
			continue
		}
		if lk.byNewLeader(r) {
			byNew++
		}
		if lk.pause > 0 && r.Writer == lk.killed && r.At.After(lk.killAt) {
			t.Errorf("%s: the old leader %s wrote seq %d (%s) after it was frozen", name, lk.killed, r.Seq, r.Type)
		}
		switch e := r.Event.(type) {
		case actors.MajorityLost:
			lost = append(lost, r)
		case actors.ForceDecided:
			decided = append(decided, r)
		case actors.ActionStarted:
			if e.Action == actors.ActForceReconfig {
				starts++
			}
		case actors.ActionFinished:
			if e.Action == actors.ActForceReconfig {
				finished = append(finished, r)
			}
		case actors.ActionFailed:
			if e.Action == actors.ActForceReconfig {
				failed++
			}
		case actors.ActionUncertain:
			if e.Action == actors.ActForceReconfig {
				uncertain++
			}
		}
	}
	if byNew == 0 {
		t.Errorf("%s: no record written after the kill of %s", name, lk.killed)
	}
	if len(lost) != 1 || len(decided) == 0 || len(finished) != 1 || starts != 1+failed {
		t.Fatalf("%s: %d MajorityLost, %d ForceDecided, %d ForceReconfig started, %d finished, %d failed; want 1 loss and one force applied",
			name, len(lost), len(decided), starts, len(finished), failed)
	}
	if jumps := forceJumps(h, key, lk.start); jumps != 1 {
		t.Errorf("%s: the members' config version jumped as by a force %d times, want 1", name, jumps)
	}
	last := decided[len(decided)-1]
	if d := last.At.Sub(lost[0].At); d < gracePeriod {
		t.Errorf("%s: forced %s after MajorityLost, before the grace period %s", name, d, gracePeriod)
	}
	if fd := last.Event.(actors.ForceDecided); !strings.HasPrefix(lk.survivor, fd.Survivor+".") && fd.Survivor != lk.survivor {
		t.Errorf("%s: forced onto %s, want %s", name, fd.Survivor, lk.survivor)
	}
	if _, ok := first(records(t, h.Logs["eventlog/"+key]), last.At, func(r record) bool { _, ok := r.Event.(actors.MajorityRestored); return ok }); !ok {
		t.Errorf("%s: no MajorityRestored after the force", name)
	}
	window := ""
	switch {
	case lk.on == "MajorityLost" && lk.byNewLeader(last) && lk.pause > 0:
		window = fmt.Sprintf("in the grace period: the new leader decided the force; the old one, continued %s after the takeover, wrote nothing and exited", lk.resumed.Sub(lk.tookOver).Round(time.Millisecond))
	case lk.on == "MajorityLost" && lk.byNewLeader(last):
		window = "in the grace period: the new leader decided the force from the recorded MajorityLost"
	case lk.on == "MajorityLost":
		t.Errorf("%s: the killed leader %s wrote the ForceDecided", name, lk.killed)
	case failed > 0:
		window = "between the decision and the force: the new leader found it not applied (ActionFailed) and forced once"
	case !lk.byNewLeader(finished[0]):
		window = fmt.Sprintf("after the force and its record: the old leader stamped ActionFinished %s after the trigger's record, %s before the SIGKILL was sent",
			finished[0].At.Sub(lk.trigger.Time), lk.killAt.Sub(finished[0].At))
	case finished[0].Event.(actors.ActionFinished).Observed:
		window = "between the force and its record: the new leader settled it from the survivor's config (ActionFinished observed)"
	default:
		t.Errorf("%s: the new leader finished the force without observing it: %+v", name, finished[0].Event)
	}
	t.Logf("%s (seq %d by %s): killed at %s (+%s); new leader %s +%s; MajorityLost +%s; force decided +%s by %s; force finished +%s by %s; ActionUncertain %d; survivor primary +%s; members resumed +%s; Healthy +%s",
		name, lk.trigger.Seq, lk.killed, lk.killAt.UTC().Format(time.RFC3339Nano), since(lk.start, lk.killAt), lk.newLeader,
		since(lk.start, lk.tookOver), since(lk.start, lost[0].At), since(lk.start, last.At), last.Writer,
		since(lk.start, finished[0].At), finished[0].Writer, uncertain, since(lk.start, lk.primary), since(lk.start, lk.healed),
		since(lk.start, lk.healthy))
	t.Logf("%s: the kill fell %s", name, window)
	for _, r := range recs {
		if a, ok := r.Event.(actors.ActionStarted); ok && !r.At.Before(lk.start) {
			t.Logf("  +%s seq %d by %s: %s %s: %s", since(lk.start, r.At), r.Seq, r.Writer, a.Action, a.Target, a.Reason)
		}
	}
}

// aimedAt: r is the record the kill waits for (with act, an ActionStarted of
// that action).
func (lk *leaderKill) aimedAt(r eventlog.Record) bool {
	if lk.act == "" {
		return true
	}
	var a actors.ActionStarted
	return json.Unmarshal(r.Data, &a) == nil && a.Action == lk.act
}

// aim names the record the kill waits for.
func (lk *leaderKill) aim() string {
	if lk.act == "" {
		return lk.on
	}
	return lk.on + " " + string(lk.act)
}

// byNewLeader: r was written by the operator process that led after the kill
// (another replica, or the killed pod's restarted container, which keeps its
// identity: then only the time tells).
func (lk *leaderKill) byNewLeader(r writtenRecord) bool {
	return r.Writer != lk.killed || (lk.pause == 0 && r.At.After(lk.killAt))
}

// operatorRestarts is the restart count of each operator pod's container.
func operatorRestarts(ctx context.Context, s *chaos.Scene) map[string]int32 {
	counts := map[string]int32{}
	pods, err := list(ctx, s, operatorNamespace, "")
	if err != nil {
		return counts
	}
	for _, p := range pods {
		for _, c := range p.Status.ContainerStatuses {
			if c.Name == operatorContainer {
				counts[p.Name] = c.RestartCount
			}
		}
	}
	return counts
}

// restarted: the killed leader's operator container runs again, restarted
// since the scenario began. The restart count tells, not the start time: a
// container status's StartedAt has whole seconds only, and the kubelet
// restarts a container the first time at once, within the second of the kill.
func (lk *leaderKill) restarted(ctx context.Context, s *chaos.Scene) bool {
	p, err := getPod(ctx, s, operatorNamespace, lk.killed)
	if err != nil {
		return false
	}
	for _, c := range p.Status.ContainerStatuses {
		if c.Name == operatorContainer {
			return c.State.Running != nil && c.RestartCount > lk.restarts[lk.killed]
		}
	}
	return false
}

// sigkill kills each pid's process group (a container's main pid leads it);
// false when a pid is gone already.
func sigkill(pids []int) bool {
	for _, pid := range pids {
		if syscall.Kill(pid, 0) != nil {
			return false
		}
	}
	for _, pid := range pids {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return true
}

// forceJumps counts how often the newest config version the samplers saw in
// a cluster since from rose by 10000 or more: mongod raises the version that
// much on a forced reconfig only.
func forceJumps(h *chaos.History, key string, from time.Time) int {
	var top int64
	jumps := 0
	for _, m := range h.Members {
		if m.Cluster != key || m.Error != "" || m.ConfigVersion == 0 {
			continue
		}
		if m.At.Before(from) {
			top = max(top, m.ConfigVersion)
			continue
		}
		if m.ConfigVersion >= top+10000 {
			jumps++
		}
		top = max(top, m.ConfigVersion)
	}
	return jumps
}

// leaseHolder is the operator replica validly holding the leader Lease ("" if
// none) and when it last renewed it.
func leaseHolder(ctx context.Context, s *chaos.Scene) (string, time.Time) {
	gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	l, err := s.Kube().CoordinationV1().Leases(operatorNamespace).Get(gctx, operatorLease, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil || l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return "", time.Time{}
	}
	if time.Now().After(l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second)) {
		return "", time.Time{}
	}
	return *l.Spec.HolderIdentity, l.Spec.RenewTime.Time
}

// watchLog follows the cluster's event log in its ConfigMaps (a list, then a
// watch, again after the watch ends) and hands each record once, in order
// per segment, to fn until fn says it is done or ctx ends.
func watchLog(ctx context.Context, s *chaos.Scene, c chaos.ClusterRef, fn func(eventlog.Record) bool) error {
	seen := map[int64]bool{}
	feed := func(cm *corev1.ConfigMap) bool {
		recs, err := eventlog.SegmentRecords(*cm)
		if err != nil {
			return false // not a segment: the snapshot
		}
		for _, r := range recs {
			if seen[r.Seq] {
				continue
			}
			seen[r.Seq] = true
			if fn(r) {
				return true
			}
		}
		return false
	}
	opts := metav1.ListOptions{LabelSelector: eventlog.LabelEventLog + "=" + c.Name}
	for ctx.Err() == nil {
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		l, err := s.Kube().CoreV1().ConfigMaps(c.Namespace).List(lctx, opts)
		cancel()
		if err != nil {
			sleepFor(ctx, 200*time.Millisecond)
			continue
		}
		for i := range l.Items {
			if feed(&l.Items[i]) {
				return nil
			}
		}
		wopts := opts
		wopts.ResourceVersion = l.ResourceVersion
		w, err := s.Kube().CoreV1().ConfigMaps(c.Namespace).Watch(ctx, wopts)
		if err != nil {
			sleepFor(ctx, 200*time.Millisecond)
			continue
		}
		for ev := range w.ResultChan() {
			if cm, ok := ev.Object.(*corev1.ConfigMap); ok && (ev.Type == watch.Added || ev.Type == watch.Modified) && feed(cm) {
				w.Stop()
				return nil
			}
		}
		w.Stop()
	}
	return ctx.Err()
}
