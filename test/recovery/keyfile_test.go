package recovery

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mgors/operator/actors"
	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/test/chaos"
)

// rotationBound bounds a keyfile rotation: three rolling restarts of three
// members, each primary after a step-down.
const rotationBound = 6 * time.Minute

// keyfileRotation asks the operator to rotate the keyfile of the run's
// cluster and waits until it recorded KeyfileRotated and the set is Healthy,
// watching the member pods meanwhile.
type keyfileRotation struct {
	request string
	secret  string
	before  []string // the keyfile's fingerprints before the request
	after   []string // and after the rotation
	start   time.Time
	rotated time.Time // the KeyfileRotated Event seen, the annotation removed, the set Healthy
	healthy time.Time // every cluster Healthy as the run judges it, after rotated
	maxAway int       // the most member pods not Ready at once
	why     string    // what it still waited for when it did not finish
}

func (kr *keyfileRotation) run(ctx context.Context, s *chaos.Scene) error {
	c := s.Clusters()[0]
	gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	cur, err := s.Mgors().Mgorses(c.Namespace).Get(gctx, c.Name, metav1.GetOptions{})
	cancel()
	if err != nil {
		return err
	}
	kr.secret = cur.KeyfileSecretName()
	data, err := keyfileData(ctx, s, c.Namespace, kr.secret)
	if err != nil {
		return err
	}
	if kr.before, err = kube.KeyfileFingerprints(data); err != nil {
		return err
	}
	// The key retired by the rotation is no Secret's value at the end: the
	// secret scan looks for it too.
	keys, err := kube.KeyfileKeys(data)
	if err != nil {
		return err
	}
	s.KeepSecret(append(keys, string(data))...)

	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var mu sync.Mutex
	wg.Go(func() {
		for wctx.Err() == nil {
			if pods, err := list(wctx, s, c.Namespace, "mgors.io/cluster="+c.Name); err == nil {
				n := 0
				for i := range pods {
					if ready(&pods[i]) {
						n++
					}
				}
				mu.Lock()
				kr.maxAway = max(kr.maxAway, len(c.Hosts)-n)
				mu.Unlock()
			}
			sleepFor(wctx, 500*time.Millisecond)
		}
	})
	defer func() { stop(); wg.Wait() }()

	kr.request = fmt.Sprintf("chaos-%d", time.Now().Unix())
	kr.start = time.Now()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, actors.RotateKeyfileAnnotation, kr.request)
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_, err = s.Mgors().Mgorses(c.Namespace).Patch(pctx, c.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	cancel()
	if err != nil {
		return err
	}
	if until(ctx, rotationBound, func() bool {
		why := kr.pending(ctx, s, c)
		kr.why = why
		return why == ""
	}) {
		kr.rotated = time.Now()
	}
	healed := time.Now()
	at, err := s.WaitHealthy(ctx, healed)
	if err == nil {
		kr.healthy = at
	}
	stop()
	wg.Wait()
	if data, err := keyfileData(ctx, s, c.Namespace, kr.secret); err == nil {
		kr.after, _ = kube.KeyfileFingerprints(data)
	}
	changed := len(kr.after) == 1 && len(kr.before) == 1 && kr.after[0] != kr.before[0]
	s.Record(chaos.Fault{Kind: chaos.KeyfileRotation, Cluster: c.Namespace + "/" + c.Name, Targets: []string{kr.secret},
		Start: kr.start, Healed: healed, Happened: !kr.rotated.IsZero() && changed, HealthyAt: at,
		Evidence: fmt.Sprintf("%s=%s; keyfile fingerprints %v → %v; KeyfileRotated +%s; at most %d member pod(s) not Ready at once",
			actors.RotateKeyfileAnnotation, kr.request, kr.before, kr.after, since(kr.start, kr.rotated), kr.maxAway)})
	return nil
}

// pending says what the rotation still waits for, "" once the KeyfileRotated
// Event is there, the annotation removed and the set Healthy.
func (kr *keyfileRotation) pending(ctx context.Context, s *chaos.Scene, c chaos.ClusterRef) string {
	gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	evs, err := s.Kube().CoreV1().Events(c.Namespace).List(gctx, metav1.ListOptions{
		FieldSelector: "involvedObject.name=" + c.Name + ",reason=KeyfileRotated"})
	switch {
	case err != nil:
		return err.Error()
	case len(evs.Items) == 0:
		return "no KeyfileRotated Event"
	}
	m, err := s.Mgors().Mgorses(c.Namespace).Get(gctx, c.Name, metav1.GetOptions{})
	if err != nil {
		return err.Error()
	}
	if _, asked := m.Annotations[actors.RotateKeyfileAnnotation]; asked {
		return "the annotation is still there"
	}
	if !clusterHealthy(ctx, s, c) {
		return "not Healthy"
	}
	return ""
}

// keyfileData is the keyfile Secret's value.
func keyfileData(ctx context.Context, s *chaos.Scene, ns, name string) ([]byte, error) {
	gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	sec, err := s.Kube().CoreV1().Secrets(ns).Get(gctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return sec.Data[v1alpha1.KeyfileSecretKey], nil
}

// judge: the rotation finished on one new key; the event log shows the
// request accepted, the three steps [old, new], [new, old], [new] each
// rolled, then KeyfileRotated, and nothing forced, wiped or initiated on
// the way; every member pod restarted at every step, one at a time.
func (kr *keyfileRotation) judge(t *testing.T, recs []writtenRecord, h *chaos.History, v chaos.Verdict) {
	t.Helper()
	if kr.rotated.IsZero() || kr.healthy.IsZero() {
		t.Fatalf("keyfile rotation: not finished within %s (%s), Healthy after it %t", rotationBound, kr.why, !kr.healthy.IsZero())
	}
	if len(kr.before) != 1 || len(kr.after) != 1 || kr.after[0] == kr.before[0] {
		t.Fatalf("keyfile rotation: the Secret's keys by fingerprint %v before, %v after; want one, and another", kr.before, kr.after)
	}
	old, next := kr.before[0], kr.after[0]
	want := []string{"started " + old, "step 1 " + old + "," + next, "rolled 1", "step 2 " + next + "," + old, "rolled 2",
		"step 3 " + next, "rolled 3", "rotated " + old + " " + next}
	var steps []string
	restarts := 0
	for _, r := range recs {
		if r.At.Before(kr.start) {
			continue
		}
		switch e := r.Event.(type) {
		case actors.KeyfileRotationStarted:
			if e.Request == kr.request {
				steps = append(steps, "started "+e.Old)
			}
		case actors.KeyfileRotationStep:
			steps = append(steps, fmt.Sprintf("step %d %s", e.Step, strings.Join(e.Keys, ",")))
		case actors.KeyfileStepRolled:
			steps = append(steps, fmt.Sprintf("rolled %d", e.Step))
		case actors.KeyfileRotated:
			steps = append(steps, "rotated "+e.Old+" "+e.New)
		case actors.ActionStarted:
			switch e.Action {
			case actors.ActForceReconfig, actors.ActWipeMember, actors.ActInitiate, actors.ActFencePod:
				t.Errorf("keyfile rotation: %s %s at seq %d: %s", e.Action, e.Target, r.Seq, e.Reason)
			case actors.ActRestartMember:
				restarts++
			}
		}
	}
	if !slices.Equal(steps, want) {
		t.Errorf("keyfile rotation: the event log's steps\n%s\nwant\n%s", strings.Join(steps, "\n"), strings.Join(want, "\n"))
	}
	if kr.maxAway > 1 {
		t.Errorf("keyfile rotation: %d member pods not Ready at once", kr.maxAway)
	}
	deleted := map[string]int{}
	for _, d := range h.Deletions {
		if !d.At.Before(kr.start) && !d.At.After(kr.rotated) {
			deleted[d.Pod]++
		}
	}
	if len(deleted) != 3 || slices.ContainsFunc(slices.Collect(maps.Values(deleted)), func(n int) bool { return n < 3 }) {
		t.Errorf("keyfile rotation: member pods deleted %v, want each of the 3 at each of the 3 steps", deleted)
	}
	gap := time.Duration(0)
	for _, g := range v.Gaps {
		if g.Kind == chaos.KeyfileRotation {
			gap = max(gap, g.Len)
		}
	}
	t.Logf("keyfile rotation %s at %s: KeyfileRotated and Healthy +%s, every cluster Healthy +%s; %d member restarts (pod deletions %v), "+
		"at most %d pod(s) away at once; longest write gap %s; fingerprints %s → %s",
		kr.request, kr.start.UTC().Format(time.RFC3339), since(kr.start, kr.rotated), since(kr.start, kr.healthy), restarts, deleted,
		kr.maxAway, gap.Round(100*time.Millisecond), old, next)
}
