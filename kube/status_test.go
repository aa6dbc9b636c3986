package kube

import (
	"context"
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/kube/client/fake"
)

func statusWrites(c *fake.Clientset) int {
	n := 0
	for _, a := range c.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() == "status" {
			n++
		}
	}
	return n
}

func TestStatusUpdate(t *testing.T) {
	ctx := context.Background()
	m := sample()
	healthy := func(s *v1alpha1.MgorsStatus) {
		s.Phase = v1alpha1.PhaseHealthy
		SetCondition(s, 1, v1alpha1.ConditionReady, metav1.ConditionTrue, "Healthy", "3 of 3 members healthy")
		SetScale(s, m, 3)
	}
	t.Run("writes once, then a repeat is no change", func(t *testing.T) {
		c := fake.NewClientset(m.DeepCopy())
		w := NewStatusWriter(c)
		for i, want := range []bool{true, false} {
			changed, err := w.Update(ctx, "ns", "db", m.UID, healthy)
			if err != nil || changed != want {
				t.Fatalf("update %d: changed %v err %v", i, changed, err)
			}
		}
		if n := statusWrites(c); n != 1 {
			t.Errorf("%d status writes, want 1", n)
		}
		got, _ := c.Mgorses("ns").Get(ctx, "db", metav1.GetOptions{})
		if got.Status.Phase != v1alpha1.PhaseHealthy || got.Status.Selector != PodSelector(m) || got.Status.Replicas != 3 {
			t.Errorf("status %+v", got.Status)
		}
	})
	t.Run("a condition keeps its transition time while it holds", func(t *testing.T) {
		old := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		seeded := m.DeepCopy()
		seeded.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue,
			Reason: "Healthy", Message: "old", ObservedGeneration: 1, LastTransitionTime: old}}
		c := fake.NewClientset(seeded)
		changed, err := NewStatusWriter(c).Update(ctx, "ns", "db", m.UID, func(s *v1alpha1.MgorsStatus) {
			SetCondition(s, 1, v1alpha1.ConditionReady, metav1.ConditionTrue, "Healthy", "new")
		})
		if err != nil || !changed {
			t.Fatalf("changed %v err %v", changed, err)
		}
		got, _ := c.Mgorses("ns").Get(ctx, "db", metav1.GetOptions{})
		cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady)
		if !cond.LastTransitionTime.Equal(&old) || cond.Message != "new" {
			t.Errorf("condition %+v", cond)
		}
	})
	t.Run("another incarnation is skipped", func(t *testing.T) {
		c := fake.NewClientset(m.DeepCopy())
		changed, err := NewStatusWriter(c).Update(ctx, "ns", "db", "older-uid", healthy)
		if changed || err != nil || statusWrites(c) != 0 {
			t.Errorf("changed %v err %v writes %d", changed, err, statusWrites(c))
		}
	})
	t.Run("conflict: retried from a fresh read", func(t *testing.T) {
		c := fake.NewClientset(m.DeepCopy())
		gets, updates := 0, 0
		c.PrependReactor("get", "mgorses", func(k8stesting.Action) (bool, runtime.Object, error) {
			gets++
			return false, nil, nil
		})
		c.PrependReactor("update", "mgorses", func(k8stesting.Action) (bool, runtime.Object, error) {
			updates++
			if updates == 1 {
				return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "mgors.io", Resource: "mgorses"}, "db", errors.New("modified"))
			}
			return false, nil, nil
		})
		changed, err := NewStatusWriter(c).Update(ctx, "ns", "db", m.UID, healthy)
		if err != nil || !changed || gets != 2 || updates != 2 {
			t.Errorf("changed %v err %v gets %d updates %d", changed, err, gets, updates)
		}
	})
	t.Run("server error is returned", func(t *testing.T) {
		c := fake.NewClientset(m.DeepCopy())
		c.PrependReactor("update", "mgorses", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewInternalError(errors.New("boom"))
		})
		if _, err := NewStatusWriter(c).Update(ctx, "ns", "db", m.UID, healthy); !apierrors.IsInternalError(err) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("missing object", func(t *testing.T) {
		c := fake.NewClientset()
		if _, err := NewStatusWriter(c).Update(ctx, "ns", "db", m.UID, healthy); !apierrors.IsNotFound(err) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("credentials never reach status", func(t *testing.T) {
		c := fake.NewClientset(m.DeepCopy())
		_, err := NewStatusWriter(c).Update(ctx, "ns", "db", m.UID, func(s *v1alpha1.MgorsStatus) {
			s.ConnectionString = "mongodb://admin:hunter2@db-0.db-svc:27017/?replicaSet=db"
		})
		if !errors.Is(err, ErrCredentialsInStatus) || statusWrites(c) != 0 {
			t.Errorf("err = %v, writes %d", err, statusWrites(c))
		}
		if _, err := NewStatusWriter(c).Update(ctx, "ns", "db", m.UID, func(s *v1alpha1.MgorsStatus) {
			s.ConnectionString = ConnectionString(m, "")
		}); err != nil {
			t.Errorf("plain connection string refused: %v", err)
		}
	})
}

func TestReason(t *testing.T) {
	for in, want := range map[string]string{
		"MajorityLost":       "MajorityLost",
		"majority lost":      "MajorityLost",
		"pods-unschedulable": "PodsUnschedulable",
		"3 members down":     "MembersDown",
		"":                   "Unknown",
		"!!!":                "Unknown",
		"Stalled:Storage":    "Stalled:Storage",
	} {
		if got := Reason(in); got != want {
			t.Errorf("Reason(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSetMembers(t *testing.T) {
	m := sample()
	var s v1alpha1.MgorsStatus
	SetMembers(&s, m, []v1alpha1.MemberStatus{
		{Name: "db-0", State: "PRIMARY", Healthy: true},
		{Name: "db-1", State: "SECONDARY", Healthy: true},
		{Name: "db-2", State: "STARTUP2"},
		{Name: "db-arbiter-0", State: "ARBITER", Healthy: true},
	})
	if s.Ready != "2/3" || s.Primary != "db-0" || len(s.Members) != 4 {
		t.Errorf("ready %s primary %s", s.Ready, s.Primary)
	}
	if RemoveCondition(&s, "Nope") {
		t.Error("removing a missing condition reported true")
	}
}

// cachedMgors is a cache holding one Mgors, as the informer's may lag.
type cachedMgors struct{ m *v1alpha1.Mgors }

func (c cachedMgors) Mgors(namespace, name string) (*v1alpha1.Mgors, error) {
	if c.m == nil || c.m.Namespace != namespace || c.m.Name != name {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: v1alpha1.GroupName, Resource: "mgorses"}, name)
	}
	return c.m, nil
}

// With a cache, a status the cache already shows costs no API call; one it
// does not show is written from a fresh read, also when the cache lags.
func TestStatusUpdateFromTheCache(t *testing.T) {
	ctx := context.Background()
	m := sample()
	phase := func(p v1alpha1.Phase) func(*v1alpha1.MgorsStatus) {
		return func(s *v1alpha1.MgorsStatus) { s.Phase = p }
	}
	stored := m.DeepCopy()
	stored.Status.Phase = v1alpha1.PhaseHealthy
	c := fake.NewClientset(stored.DeepCopy())
	w := NewStatusWriter(c)
	w.Cache = cachedMgors{stored}
	if changed, err := w.Update(ctx, "ns", "db", m.UID, phase(v1alpha1.PhaseHealthy)); err != nil || changed || len(c.Actions()) != 0 {
		t.Fatalf("an unchanged status: changed %v, err %v, calls %v", changed, err, c.Actions())
	}
	if changed, err := w.Update(ctx, "ns", "db", m.UID, phase(v1alpha1.PhaseRecovering)); err != nil || !changed || statusWrites(c) != 1 {
		t.Fatalf("a changed status: changed %v, err %v, %d writes", changed, err, statusWrites(c))
	}
	// The cache still shows Healthy (it lags): Recovering differs from it,
	// but the fresh read shows it already, and nothing is written.
	if changed, err := w.Update(ctx, "ns", "db", m.UID, phase(v1alpha1.PhaseRecovering)); err != nil || changed {
		t.Fatalf("the status just written, behind a lagging cache: changed %v, err %v", changed, err)
	}
	w.Cache = cachedMgors{}
	if changed, err := w.Update(ctx, "ns", "db", m.UID, phase(v1alpha1.PhaseHealthy)); err != nil || !changed {
		t.Fatalf("a Mgors the cache lacks: changed %v, err %v", changed, err)
	}
}
