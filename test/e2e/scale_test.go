package e2e

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/mgors/operator/actors"
	"github.com/mgors/operator/actors/eventlog"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/test/localkube/harness"
)

// A Healthy 3-member set scaled to 5 grows the StatefulSet and ends Healthy
// with 5 members. The two new members have no pod when the spec changes:
// the observation skips them without dialing (world_members.go). The test
// logs, from the event log's timestamps, how long the actor took from the
// spec change to recording it and to its first action (a measurement, not
// an assertion).
func TestScaleUpThreeToFive(t *testing.T) {
	t.Parallel()
	env := harness.Cluster(t)
	deployOperator(t, env)
	ctx := context.Background()
	mc := mgorsClient(t, env)
	created, err := mc.Mgorses(env.Namespace).Create(ctx, sample(t, env, "mgors-3.yaml", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur := waitMgors(t, env, created.Name, "Healthy with 3", 6*time.Minute, func(m *v1alpha1.Mgors) bool {
		return m.Status.Phase == v1alpha1.PhaseHealthy && m.Status.Ready == "3/3"
	})
	cur.Spec.Members = 5
	written := time.Now()
	if _, err := mc.Mgorses(env.Namespace).Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitMgors(t, env, created.Name, "Healthy with 5", 6*time.Minute, func(m *v1alpha1.Mgors) bool {
		return m.Status.Phase == v1alpha1.PhaseHealthy && m.Status.Ready == "5/5" && len(m.Status.Members) == 5
	})

	store := eventlog.NewKube(kubernetes.NewForConfigOrDie(env.Config))
	stream := eventlog.Stream{Namespace: env.Namespace, Name: created.Name, UID: string(created.UID)}
	var recorded, acted time.Time
	_ = wait.PollUntilContextTimeout(ctx, time.Second, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, recs, err := store.Load(ctx, stream)
		if err != nil {
			return false, nil //nolint:nilerr // the measurement is best effort
		}
		for _, r := range recs {
			e, ok, err := actors.Decode(r)
			if !ok || err != nil || r.Time.Before(written.Add(-time.Second)) {
				continue
			}
			switch e := e.(type) {
			case actors.SpecObserved:
				if e.Members == 5 && recorded.IsZero() {
					recorded = r.Time
				}
			case actors.ActionStarted:
				if !recorded.IsZero() && acted.IsZero() {
					acted = r.Time
					t.Logf("first action after the spec change: %s %s", e.Action, e.Reason)
				}
			}
		}
		return !acted.IsZero(), nil
	})
	if acted.IsZero() {
		t.Logf("measurement: the event log did not show the spec change and an action after it")
		return
	}
	t.Logf("measurement: spec written → SpecObserved %s, → first ActionStarted %s",
		recorded.Sub(written).Round(time.Millisecond), acted.Sub(written).Round(time.Millisecond))
}
