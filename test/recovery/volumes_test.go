package recovery

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mgors/operator/actors"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/test/chaos"
	"github.com/mgors/operator/test/localkube/harness"
)

// waitForPerson is how long the test watches, after VolumesLost, that nothing
// is initiated before a person approves.
const waitForPerson = 30 * time.Second

// TestEveryVolumeLost (case 4): every member's claim and pod of an initiated
// 3-member set deleted at once, under the chaos workload. The operator must not
// initiate again over nothing on its own: VolumesLost with the members, the
// Stalled condition and a warning Event naming the annotation; nothing
// initiated while it waits. A person annotates mgors.io/approve-reinitiate
// with the Mgors's UID: one Initiate, recorded with the approval, the
// annotation removed, Healthy again (empty: the data went with the volumes).
// The checker judges the run; losing every volume loses every write and makes
// a new replica set, so lost, linearizable, initiated-once and destroyed are
// expected for this cluster; nothing else may fail.
func TestEveryVolumeLost(t *testing.T) {
	endToEnd(t)
	repo, dir := upCluster(t)
	m := sampleMgors(t, repo)
	m.Name = "volumes"

	var ev everyVolume
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cfg := chaos.Config{Dir: dir, Repo: repo, Log: harness.Logger(t), Healthy: healthyBound,
		ReportDir: filepath.Join(repo, ".cache", "recovery-volumes"),
		Clusters:  []*v1alpha1.Mgors{m},
		Scenario:  ev.run}
	h, err := chaos.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Every volume lost loses every write and makes a new replica set.
	verdict(t, h, cfg.Healthy, chaos.PropertyLost, chaos.PropertyLinearizable, chaos.PropertyInitiatedOnce, chaos.PropertyDestroyed)
	key := h.Clusters[0]
	ev.judge(t, records(t, h.Logs["eventlog/"+key]), h)
	out := replay(t, repo, dir, key)
	t.Logf("mgorsctl replay --cluster %s:\n%s", key, out)
}

type everyVolume struct {
	uid               string
	start, recreated  time.Time
	stalled           string // the Stalled condition's message while waiting
	approved, healthy time.Time
	annotationRemoved bool
}

func (ev *everyVolume) run(ctx context.Context, s *chaos.Scene) error {
	c := s.Clusters()[0]
	gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	cur, err := s.Mgors().Mgorses(c.Namespace).Get(gctx, c.Name, metav1.GetOptions{})
	cancel()
	if err != nil {
		return err
	}
	ev.uid = string(cur.UID)
	ev.start = time.Now()
	old := map[string][2]string{}
	for _, h := range c.Hosts {
		pod := podOf(h)
		podUID, pvcUID, err := wipeVolume(ctx, s, c.Namespace, pod)
		if err != nil {
			return err
		}
		old[pod] = [2]string{podUID, pvcUID}
	}
	if until(ctx, actionBound, func() bool {
		for pod, uids := range old {
			if !replaced(ctx, s, c.Namespace, pod, uids[0], uids[1]) {
				return false
			}
		}
		return true
	}) {
		ev.recreated = time.Now()
	}
	until(ctx, evidenceTimeout, func() bool {
		ev.stalled = conditionMessage(ctx, s, c, v1alpha1.ConditionStalled)
		return strings.Contains(ev.stalled, actors.ReinitiateAnnotation)
	})
	sleepFor(ctx, waitForPerson)
	ev.approved = time.Now()
	gctx, cancel = context.WithTimeout(ctx, 5*time.Second)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, actors.ReinitiateAnnotation, ev.uid)
	_, err = s.Mgors().Mgorses(c.Namespace).Patch(gctx, c.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	cancel()
	if err != nil {
		return err
	}
	if until(ctx, healthyBound, func() bool { return clusterHealthy(ctx, s, c) }) {
		ev.healthy = time.Now()
	}
	ev.annotationRemoved = until(ctx, evidenceTimeout, func() bool {
		gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		cur, err := s.Mgors().Mgorses(c.Namespace).Get(gctx, c.Name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		_, on := cur.Annotations[actors.ReinitiateAnnotation]
		return !on
	})
	return nil
}

// judge reads the event log: VolumesLost naming the three members, no
// Initiate before the approval, one after it with the approval accepted,
// Healthy.
func (ev *everyVolume) judge(t *testing.T, recs []record, h *chaos.History) {
	t.Helper()
	if ev.recreated.IsZero() || ev.healthy.IsZero() || !ev.annotationRemoved {
		t.Errorf("every volume lost: pods and claims recreated %t, Healthy after the approval %t, annotation removed %t",
			!ev.recreated.IsZero(), !ev.healthy.IsZero(), ev.annotationRemoved)
	}
	if !strings.Contains(ev.stalled, actors.ReinitiateAnnotation) {
		t.Errorf("every volume lost: the Stalled condition does not name the annotation: %q", ev.stalled)
	}
	lost, ok := first(recs, ev.start, func(r record) bool { _, ok := r.Event.(actors.VolumesLost); return ok })
	if !ok {
		t.Fatal("every volume lost: no VolumesLost in the event log")
	}
	if e := lost.Event.(actors.VolumesLost); len(e.Members) != 3 {
		t.Errorf("every volume lost: VolumesLost %+v, want the 3 members", e)
	}
	var initiates []record
	for _, r := range recs {
		if a, ok := r.Event.(actors.ActionStarted); ok && a.Action == actors.ActInitiate && r.At.After(ev.start) {
			initiates = append(initiates, r)
		}
	}
	if len(initiates) != 1 {
		t.Fatalf("every volume lost: %d Initiates after the loss, want 1", len(initiates))
	}
	if initiates[0].At.Before(ev.approved) {
		t.Errorf("every volume lost: initiated at %s, before the approval at %s", initiates[0].At, ev.approved)
	}
	if _, ok := first(recs, ev.approved, func(r record) bool {
		a, ok := r.Event.(actors.ApprovalAccepted)
		return ok && a.Annotation == actors.ReinitiateAnnotation && a.Value == ev.uid
	}); !ok {
		t.Error("every volume lost: no ApprovalAccepted of the re-initiate")
	}
	if !strings.Contains(h.Logs["events"], "VolumesLost") {
		t.Error("every volume lost: no VolumesLost Event")
	}
	t.Logf("every volume lost: fault at %s; pods and claims recreated +%s; VolumesLost +%s; approved +%s; Initiate +%s; Healthy +%s",
		ev.start.UTC().Format(time.RFC3339), since(ev.start, ev.recreated), since(ev.start, lost.At), since(ev.start, ev.approved),
		since(ev.start, initiates[0].At), since(ev.start, ev.healthy))
}
