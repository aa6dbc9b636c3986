package recovery

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"github.com/mgors/operator/actors"
	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/test/chaos"
	"github.com/mgors/operator/test/localkube/harness"
)

// stuckWipeBound bounds the wait for the operator's wipe of the stale member
// after the scale-up: the re-add, 30 s of stuck evidence (actors.stuckBound),
// the observation pace.
var stuckWipeBound = 4 * time.Minute

// TestStuckMembers runs, on a cluster of its own under the chaos workload,
// cases 2 and 3 of the recovery issue on one 3-member Mgors with a 1 MB oplog
// (spec.storage.oplogSizeMB) and storage.reclaim Retain:
//
//  1. a secondary's volume is lost (the test deletes its claim, then its
//     pod): the member comes back empty and initial-syncs by itself; the
//     event log records it (MemberResyncing, MemberRecovered) and nothing is
//     done to the others (no reconfig, no other pod deleted);
//  2. the set is scaled to 2 (member 2 leaves the config; its claim stays),
//     written past member 2's last optime (the oplog rolls), and scaled back
//     to 3: member 2 comes back on its old claim, is added again, is too
//     stale to catch up, and is wiped (MemberStuck TooStale, WipeMember with
//     the evidence), resyncs, and the set is Healthy.
//
// The chaos checker judges the run (no acknowledged write lost, one primary
// per term, replay --verify); the claims replaced are the one the test
// deleted and the one the operator recorded wiping.
func TestStuckMembers(t *testing.T) {
	endToEnd(t)
	repo, dir := upCluster(t)

	m := sampleMgors(t, repo)
	m.Name = "stuck"
	m.Spec.Storage.OplogSizeMB = ptr.To(int32(1))
	m.Spec.Storage.Reclaim = v1alpha1.VolumeRetain

	var vl volumeLost
	var sc staleComeback
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cfg := chaos.Config{Dir: dir, Repo: repo, Log: harness.Logger(t), Healthy: healthyBound,
		ReportDir: filepath.Join(repo, ".cache", "recovery-stuck"),
		Clusters:  []*v1alpha1.Mgors{m},
		Scenario: func(ctx context.Context, s *chaos.Scene) error {
			if err := vl.run(ctx, s); err != nil {
				return err
			}
			return sc.run(ctx, s)
		}}
	h, err := chaos.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	key := h.Clusters[0]
	if vl.pvc != "" {
		// The claim the test itself deleted (the fault of case 2), as the
		// checker allows a claim the operator recorded wiping.
		h.Wiped = append(h.Wiped, chaos.WipedMember{At: vl.start, Cluster: key, PVC: vl.pvc})
	}
	verdict(t, h, cfg.Healthy)
	recs := records(t, h.Logs["eventlog/"+key])
	t.Run("VolumeLost", func(t *testing.T) { vl.judge(t, recs) })
	t.Run("StaleAfterScaleDown", func(t *testing.T) { sc.judge(t, recs, h, key) })

	out := replay(t, repo, dir, key)
	t.Logf("mgorsctl replay --cluster %s:\n%s", key, out)
	_ = os.MkdirAll(cfg.ReportDir, 0o755)
	_ = os.WriteFile(filepath.Join(cfg.ReportDir, "replay-"+strings.ReplaceAll(key, "/", "_")+".txt"), []byte(out), 0o644)
}

// volumeLost deletes a secondary's claim and then its pod (as kube/wipe.go
// does): the StatefulSet recreates both, the member comes back empty.
type volumeLost struct {
	pod, pvc, pvcUID string
	start, replaced  time.Time
	healthy          time.Time
}

func (vl *volumeLost) run(ctx context.Context, s *chaos.Scene) error {
	c := s.Clusters()[0]
	primary, err := s.Member(ctx, 0, chaos.RolePrimary)
	if err != nil {
		return err
	}
	// A secondary other than member 2, whose claim case 3 is about.
	vl.pod = c.Name + "-0"
	if podOf(primary) == vl.pod {
		vl.pod = c.Name + "-1"
	}
	vl.pvc = kube.DataVolume + "-" + vl.pod
	vl.start = time.Now()
	oldPod, oldPVC, err := wipeVolume(ctx, s, c.Namespace, vl.pod)
	if err != nil {
		return err
	}
	vl.pvcUID = oldPVC
	if until(ctx, actionBound, func() bool { return replaced(ctx, s, c.Namespace, vl.pod, oldPod, oldPVC) }) {
		vl.replaced = time.Now()
	}
	at, err := s.WaitHealthy(ctx, later(vl.replaced, vl.start))
	if err == nil {
		vl.healthy = at
	}
	s.Record(chaos.Fault{Kind: "volume-lost", Cluster: c.Namespace + "/" + c.Name, Targets: []string{vl.pod, vl.pvc},
		Start: vl.start, Healed: later(vl.replaced, vl.start), Happened: !vl.replaced.IsZero(), HealthyAt: at,
		Evidence: fmt.Sprintf("claim %s (uid %s) and pod %s deleted; a new claim and pod %t", vl.pvc, oldPVC, vl.pod, !vl.replaced.IsZero())})
	return nil
}

// judge: the member recorded resyncing with the evidence and back as
// SECONDARY, no reconfig and no action on any member during its resync,
// Healthy again.
func (vl *volumeLost) judge(t *testing.T, recs []record) {
	if vl.replaced.IsZero() || vl.healthy.IsZero() {
		t.Errorf("volume lost: claim and pod replaced %t, Healthy %t", !vl.replaced.IsZero(), !vl.healthy.IsZero())
	}
	resync, ok := first(recs, vl.start, func(r record) bool {
		e, ok := r.Event.(actors.MemberResyncing)
		return ok && e.Member == vl.pod
	})
	if !ok {
		t.Fatalf("volume lost: no MemberResyncing of %s in the event log", vl.pod)
	}
	back, ok := first(recs, resync.At, func(r record) bool {
		e, ok := r.Event.(actors.MemberRecovered)
		return ok && e.Member == vl.pod
	})
	if !ok {
		t.Fatalf("volume lost: no MemberRecovered of %s after its MemberResyncing", vl.pod)
	}
	for _, r := range recs {
		a, ok := r.Event.(actors.ActionStarted)
		// The budget is not a member: it stops counting a voter in STARTUP2
		// (decide_budget.go), so it tightens while the member resyncs and
		// relaxes after; that protects the others, it does not disturb them.
		if ok && a.Action != actors.ActSetBudget && !r.At.Before(vl.start) && !r.At.After(back.At) {
			t.Errorf("volume lost: %s %s (%s) while %s resynced; the others must not be disturbed", a.Action, a.Target, a.Reason, vl.pod)
		}
	}
	healthy, _ := first(recs, back.At, func(r record) bool {
		e, ok := r.Event.(actors.PhaseChanged)
		return ok && e.To == v1alpha1.PhaseHealthy
	})
	firstRec, _ := first(recs, vl.start, func(record) bool { return true })
	t.Logf("volume lost (case 2): claim and pod of %s deleted at %s; first record (%s) +%s; MemberResyncing +%s (%s); MemberRecovered +%s; Healthy in the log +%s, as the run saw it +%s",
		vl.pod, vl.start.UTC().Format(time.RFC3339), firstRec.Type, since(vl.start, firstRec.At), since(vl.start, resync.At),
		resync.Event.(actors.MemberResyncing).Evidence, since(vl.start, back.At), since(vl.start, healthy.At), since(vl.start, vl.healthy))
	for _, r := range recs {
		if e, ok := r.Event.(actors.MemberResyncing); ok && !r.At.Before(vl.start) && e.Progress != "" {
			t.Logf("  +%s progress: %s", since(vl.start, r.At), e.Progress)
		}
	}
}

// staleComeback scales the set to 2, writes until the primary's oldest
// oplog entry is past member 2's last optime, and scales back to 3.
type staleComeback struct {
	pod, pvc, oldPVC string
	start, down      time.Time
	lastOptime       string
	oldest           string
	filled           int
	up, wiped        time.Time
	healthy          time.Time
}

func (sc *staleComeback) run(ctx context.Context, s *chaos.Scene) error {
	c := s.Clusters()[0]
	sc.pod = c.Name + "-2"
	sc.pvc = kube.DataVolume + "-" + sc.pod
	sc.start = time.Now()
	if err := scale(ctx, s, c, 2); err != nil {
		return err
	}
	if !until(ctx, actionBound, func() bool { _, err := getPod(ctx, s, c.Namespace, sc.pod); return err != nil }) {
		return fmt.Errorf("scaled to 2: pod %s still there after %s", sc.pod, actionBound)
	}
	sc.down = time.Now()
	uid, err := pvcUID(ctx, s, c.Namespace, sc.pvc)
	if err != nil {
		return fmt.Errorf("scaled to 2: the claim %s must stay (reclaim Retain): %w", sc.pvc, err)
	}
	sc.oldPVC = uid
	f, err := newFiller(ctx, s, c)
	if err != nil {
		return err
	}
	// Member 2 left the config before its pod went: it holds nothing past
	// the primary's last write now.
	last, err := f.lastWrite(ctx)
	if err != nil {
		f.close()
		return err
	}
	sc.lastOptime = fmt.Sprint(last)
	oldest, n, err := f.rollPast(ctx, last)
	f.close()
	if err != nil {
		return err
	}
	sc.oldest, sc.filled = fmt.Sprint(oldest), n
	if err := scale(ctx, s, c, 3); err != nil {
		return err
	}
	sc.up = time.Now()
	if until(ctx, stuckWipeBound, func() bool {
		u, err := pvcUID(ctx, s, c.Namespace, sc.pvc)
		return err == nil && u != sc.oldPVC
	}) {
		sc.wiped = time.Now()
	}
	at, err := s.WaitHealthy(ctx, later(sc.wiped, sc.up))
	if err == nil {
		sc.healthy = at
	}
	s.Record(chaos.Fault{Kind: "stale-after-scale-down", Cluster: c.Namespace + "/" + c.Name, Targets: []string{sc.pod, sc.pvc},
		Start: sc.start, Healed: sc.up, Happened: oldest.After(last), HealthyAt: at,
		Evidence: fmt.Sprintf("scaled to 2, %d documents written, the primary's oldest oplog entry %v past member 2's last optime %v; scaled to 3; claim replaced %t",
			n, oldest, last, !sc.wiped.IsZero())})
	return nil
}

// judge: member 2 recorded REMOVED or too stale, re-added, recorded too
// stale and wiped with the evidence (once), recorded back, Healthy.
func (sc *staleComeback) judge(t *testing.T, recs []record, h *chaos.History, key string) {
	if sc.wiped.IsZero() || sc.healthy.IsZero() {
		t.Errorf("stale comeback: claim %s wiped %t, Healthy %t", sc.pvc, !sc.wiped.IsZero(), !sc.healthy.IsZero())
	}
	var wipes []record
	for _, r := range recs {
		if a, ok := r.Event.(actors.ActionStarted); ok && a.Action == actors.ActWipeMember {
			wipes = append(wipes, r)
		}
	}
	if len(wipes) != 1 || wipes[0].Event.(actors.ActionStarted).Target != sc.pod {
		t.Fatalf("stale comeback: %d wipes (%+v), want one of %s", len(wipes), wipes, sc.pod)
	}
	wipe := wipes[0].Event.(actors.ActionStarted)
	if !strings.Contains(wipe.Reason, "Could not find member to sync from") || !strings.Contains(wipe.Reason, actors.TroubleTooStale) {
		t.Errorf("stale comeback: the wipe's reason lacks the evidence: %q", wipe.Reason)
	}
	stuck, ok := first(recs, sc.up, func(r record) bool {
		e, ok := r.Event.(actors.MemberStuck)
		return ok && e.Member == sc.pod && e.Kind == actors.TroubleTooStale
	})
	if !ok {
		t.Fatal("stale comeback: no MemberStuck TooStale")
	}
	if d := wipes[0].At.Sub(stuck.At); d < 30*time.Second {
		t.Errorf("stale comeback: wiped %s after the stuck record, before the 30 s bound", d)
	}
	removed, wasRemoved := first(recs, sc.up, func(r record) bool {
		e, ok := r.Event.(actors.MemberStuck)
		return ok && e.Member == sc.pod && e.Kind == actors.TroubleRemoved
	})
	readd, ok := first(recs, sc.up, func(r record) bool {
		a, ok := r.Event.(actors.ActionStarted)
		return ok && a.Action == actors.ActReconfig && strings.Contains(a.Reason, "AddMember "+sc.pod)
	})
	if !ok {
		t.Error("stale comeback: member 2 was never added to the config again")
	}
	back, ok := first(recs, wipes[0].At, func(r record) bool {
		e, ok := r.Event.(actors.MemberRecovered)
		return ok && e.Member == sc.pod
	})
	if !ok {
		t.Error("stale comeback: no MemberRecovered after the wipe")
	}
	if !wiped(h, key, sc.pvc) {
		t.Error("stale comeback: the run did not collect the operator's wipe of the claim")
	}
	t.Logf("stale comeback (case 3): scaled to 2 at %s (pod gone +%s); member 2 last optime %s; %d documents until the oldest oplog entry was %s; scaled to 3 +%s; REMOVED recorded %t +%s; re-added +%s; MemberStuck TooStale +%s; WipeMember +%s; MemberRecovered +%s; Healthy +%s",
		sc.start.UTC().Format(time.RFC3339), since(sc.start, sc.down), sc.lastOptime, sc.filled, sc.oldest, since(sc.start, sc.up),
		wasRemoved, since(sc.start, removed.At), since(sc.start, readd.At), since(sc.start, stuck.At), since(sc.start, wipes[0].At),
		since(sc.start, back.At), since(sc.start, sc.healthy))
	t.Logf("  wipe reason: %s", wipe.Reason)
}

func wiped(h *chaos.History, cluster, pvc string) bool {
	for _, w := range h.Wiped {
		if w.Cluster == cluster && w.PVC == pvc {
			return true
		}
	}
	return false
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
