package kube

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/kube/client"
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
// does not show is written from the cached copy, one request, and from a
// fresh read when the cache lags (the API answers Conflict to its stale
// resourceVersion).
func TestStatusUpdateFromTheCache(t *testing.T) {
	ctx := context.Background()
	m := sample()
	phase := func(p v1alpha1.Phase) func(*v1alpha1.MgorsStatus) {
		return func(s *v1alpha1.MgorsStatus) { s.Phase = p }
	}
	stored := m.DeepCopy()
	stored.ResourceVersion = "1"
	stored.Status.Phase = v1alpha1.PhaseHealthy
	c := fake.NewClientset(stored.DeepCopy())
	gets := resourceVersions(c)
	w := NewStatusWriter(c)
	w.Cache = cachedMgors{stored}
	if changed, err := w.Update(ctx, "ns", "db", m.UID, phase(v1alpha1.PhaseHealthy)); err != nil || changed || len(c.Actions()) != 0 {
		t.Fatalf("an unchanged status: changed %v, err %v, calls %v", changed, err, c.Actions())
	}
	if changed, err := w.Update(ctx, "ns", "db", m.UID, phase(v1alpha1.PhaseRecovering)); err != nil || !changed || statusWrites(c) != 1 || *gets != 0 {
		t.Fatalf("a changed status: changed %v, err %v, %d writes, %d reads", changed, err, statusWrites(c), *gets)
	}
	// The cache still shows Healthy at resourceVersion 1 (it lags our
	// write): the answer to that write shows Recovering, and nothing is
	// written or read.
	if changed, err := w.Update(ctx, "ns", "db", m.UID, phase(v1alpha1.PhaseRecovering)); err != nil || changed || *gets != 0 || statusWrites(c) != 1 {
		t.Fatalf("the status just written, behind a lagging cache: changed %v, err %v, %d reads, %d writes", changed, err, *gets, statusWrites(c))
	}
	// Still behind: the next change is written from that answer's
	// resourceVersion, with no Conflict and no read.
	if changed, err := w.Update(ctx, "ns", "db", m.UID, phase(v1alpha1.PhaseInitiating)); err != nil || !changed || *gets != 0 || statusWrites(c) != 2 {
		t.Fatalf("a change behind a lagging cache: changed %v, err %v, %d reads, %d writes", changed, err, *gets, statusWrites(c))
	}
	got, err := c.Mgorses("ns").Get(ctx, "db", metav1.GetOptions{})
	if err != nil || got.Status.Phase != v1alpha1.PhaseInitiating || got.ResourceVersion != "3" {
		t.Fatalf("stored: %v at %s, %v", got.Status.Phase, got.ResourceVersion, err)
	}
	*gets = 0
	// Someone else wrote (resourceVersion 4, a spec change), and the cache
	// shows it: our answer is forgotten, the cache's copy is written from.
	other := got.DeepCopy()
	other.ResourceVersion = "4"
	gvr := v1alpha1.SchemeGroupVersion.WithResource("mgorses")
	if err := c.Tracker().Update(gvr, other.DeepCopy(), "ns"); err != nil {
		t.Fatal(err)
	}
	w.Cache = cachedMgors{other}
	if changed, err := w.Update(ctx, "ns", "db", m.UID, phase(v1alpha1.PhaseHealthy)); err != nil || !changed || *gets != 0 || statusWrites(c) != 3 {
		t.Fatalf("after another writer: changed %v, err %v, %d reads, %d writes", changed, err, *gets, statusWrites(c))
	}
	// The cache lags that other writer (it shows 4, the API has 6): the
	// write conflicts, and the fresh read is written from.
	if err := c.Tracker().Update(gvr, func() *v1alpha1.Mgors { o := other.DeepCopy(); o.ResourceVersion = "6"; return o }(), "ns"); err != nil {
		t.Fatal(err)
	}
	if changed, err := w.Update(ctx, "ns", "db", m.UID, phase(v1alpha1.PhaseRecovering)); err != nil || !changed || *gets != 1 {
		t.Fatalf("behind another writer: changed %v, err %v, %d reads", changed, err, *gets)
	}
	w.Cache = cachedMgors{}
	if changed, err := w.Update(ctx, "ns", "db", m.UID, phase(v1alpha1.PhaseHealthy)); err != nil || !changed {
		t.Fatalf("a Mgors the cache lacks: changed %v, err %v", changed, err)
	}
}

// resourceVersions makes the fake's status updates of Mgors objects behave
// as the API server's: a stale resourceVersion is a Conflict, and each write
// increments it. It counts the gets.
func resourceVersions(c *fake.Clientset) (gets *int) {
	gets = new(int)
	gvr := v1alpha1.SchemeGroupVersion.WithResource("mgorses")
	c.PrependReactor("*", "mgorses", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetVerb() == "get" {
			*gets++
			return false, nil, nil
		}
		if a.GetVerb() != "update" || a.GetSubresource() != "status" {
			return false, nil, nil
		}
		next := a.(k8stesting.UpdateAction).GetObject().(*v1alpha1.Mgors).DeepCopy()
		o, err := c.Tracker().Get(gvr, next.Namespace, next.Name)
		if err != nil {
			return true, nil, err
		}
		cur := o.(*v1alpha1.Mgors)
		if next.ResourceVersion != cur.ResourceVersion {
			return true, nil, apierrors.NewConflict(gvr.GroupResource(), next.Name, errors.New("stale resourceVersion"))
		}
		rv, _ := strconv.Atoi(cur.ResourceVersion)
		next.ResourceVersion = strconv.Itoa(rv + 1)
		return true, next, c.Tracker().Update(gvr, next, next.Namespace)
	})
	return gets
}

func backupSample() *v1alpha1.MgorsBackup {
	return &v1alpha1.MgorsBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "nightly", UID: "b-1", ResourceVersion: "5"},
		Spec: v1alpha1.MgorsBackupSpec{Cluster: "db"}, Status: v1alpha1.MgorsBackupStatus{Phase: v1alpha1.BackupPending}}
}

// conflicts makes the first n status updates of MgorsBackups a 409, and
// counts the status updates and gets the writer makes.
func conflicts(c *fake.Clientset, n int) (updates, gets *int) {
	updates, gets = new(int), new(int)
	c.PrependReactor("*", "mgorsbackups", func(a k8stesting.Action) (bool, runtime.Object, error) {
		switch {
		case a.GetVerb() == "update" && a.GetSubresource() == "status":
			*updates++
			if *updates <= n {
				return true, nil, apierrors.NewConflict(schema.GroupResource{Group: v1alpha1.GroupName, Resource: "mgorsbackups"},
					a.(k8stesting.UpdateAction).GetObject().(*v1alpha1.MgorsBackup).Name, errors.New("stale resourceVersion"))
			}
		case a.GetVerb() == "get":
			*gets++
		}
		return false, nil, nil
	})
	return updates, gets
}

func TestStatusBackup(t *testing.T) {
	ctx := context.Background()
	running := v1alpha1.MgorsBackupStatus{Phase: v1alpha1.BackupRunning, Member: "db-1", Prefix: "ns/db/nightly",
		StartTime: &metav1.Time{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}}
	stored := func(t *testing.T, c *fake.Clientset) v1alpha1.MgorsBackupStatus {
		t.Helper()
		got, err := c.MgorsBackups("ns").Get(ctx, "nightly", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got.Status
	}
	t.Run("a status equal to the backup's is not written", func(t *testing.T) {
		b := backupSample()
		c := fake.NewClientset(b.DeepCopy())
		if err := NewStatusWriter(c).Backup(ctx, b, *b.Status.DeepCopy()); err != nil || len(c.Actions()) != 0 {
			t.Fatalf("err %v, calls %v", err, c.Actions())
		}
	})
	t.Run("a new status is written to the status subresource, the backup untouched", func(t *testing.T) {
		b := backupSample()
		c := fake.NewClientset(b.DeepCopy())
		updates, gets := conflicts(c, 0)
		if err := NewStatusWriter(c).Backup(ctx, b, running); err != nil {
			t.Fatal(err)
		}
		if *updates != 1 || *gets != 0 {
			t.Errorf("%d status updates and %d gets, want 1 and 0", *updates, *gets)
		}
		if got := stored(t, c); !equality.Semantic.DeepEqual(got, running) {
			t.Errorf("stored %+v", got)
		}
		if b.Status.Phase != v1alpha1.BackupPending {
			t.Errorf("the caller's backup was modified: %+v", b.Status)
		}
	})
	t.Run("a deleted backup is no error", func(t *testing.T) {
		c := fake.NewClientset()
		if err := NewStatusWriter(c).Backup(ctx, backupSample(), running); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a conflict is retried once from a fresh read", func(t *testing.T) {
		b := backupSample()
		fresh := b.DeepCopy()
		fresh.ResourceVersion, fresh.Labels = "6", map[string]string{"team": "a"}
		c := fake.NewClientset(fresh)
		updates, gets := conflicts(c, 1)
		if err := NewStatusWriter(c).Backup(ctx, b, running); err != nil {
			t.Fatal(err)
		}
		if *updates != 2 || *gets != 1 {
			t.Errorf("%d status updates and %d gets, want 2 and 1", *updates, *gets)
		}
		var sent *v1alpha1.MgorsBackup
		for _, a := range c.Actions() {
			if a.GetVerb() == "update" {
				sent = a.(k8stesting.UpdateAction).GetObject().(*v1alpha1.MgorsBackup)
			}
		}
		if sent == nil || sent.ResourceVersion != "6" || sent.Labels["team"] != "a" {
			t.Errorf("the retry did not write over the fresh copy: %+v", sent)
		}
		if got := stored(t, c); !equality.Semantic.DeepEqual(got, running) {
			t.Errorf("stored %+v", got)
		}
	})
	t.Run("a second conflict is the error", func(t *testing.T) {
		b := backupSample()
		c := fake.NewClientset(b.DeepCopy())
		updates, _ := conflicts(c, 2)
		if err := NewStatusWriter(c).Backup(ctx, b, running); !apierrors.IsConflict(err) || *updates != 2 {
			t.Fatalf("err %v after %d updates, want a conflict after 2", err, *updates)
		}
	})
	t.Run("a conflict with a fresh copy that holds the status writes nothing more", func(t *testing.T) {
		b := backupSample()
		fresh := b.DeepCopy()
		fresh.Status = *running.DeepCopy()
		c := fake.NewClientset(fresh)
		updates, gets := conflicts(c, 1)
		if err := NewStatusWriter(c).Backup(ctx, b, running); err != nil || *updates != 1 || *gets != 1 {
			t.Fatalf("err %v, %d updates, %d gets", err, *updates, *gets)
		}
	})
	t.Run("a conflict with another incarnation of the name writes nothing", func(t *testing.T) {
		b := backupSample()
		other := b.DeepCopy()
		other.UID = "b-2"
		c := fake.NewClientset(other)
		updates, _ := conflicts(c, 1)
		if err := NewStatusWriter(c).Backup(ctx, b, running); err != nil || *updates != 1 {
			t.Fatalf("err %v, %d updates", err, *updates)
		}
		if got := stored(t, c); got.Phase != v1alpha1.BackupPending {
			t.Errorf("another backup's status was written: %+v", got)
		}
	})
	t.Run("a deleted backup found by the retry is no error", func(t *testing.T) {
		c := fake.NewClientset()
		conflicts(c, 1)
		if err := NewStatusWriter(c).Backup(ctx, backupSample(), running); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("every call is bounded by ctx", func(t *testing.T) {
		b := backupSample()
		c := fake.NewClientset(b.DeepCopy())
		var deadlines []bool
		w := NewStatusWriter(&ctxClient{Clientset: c, seen: &deadlines})
		w.Timeout = time.Second
		if err := w.Backup(ctx, b, running); err != nil {
			t.Fatal(err)
		}
		if len(deadlines) != 1 || !deadlines[0] {
			t.Fatalf("calls with a deadline: %v", deadlines)
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		next := running.DeepCopy()
		next.Phase = v1alpha1.BackupSucceeded
		if err := w.Backup(cctx, b, *next); !errors.Is(err, context.Canceled) {
			t.Fatalf("a cancelled ctx: %v", err)
		}
	})
}

// ctxClient records whether each MgorsBackup or MgorsRestore call had a deadline, and fails
// one whose ctx is done, as the API client would.
type ctxClient struct {
	*fake.Clientset
	seen *[]bool
}

func (c *ctxClient) MgorsBackups(namespace string) client.MgorsBackupInterface {
	return ctxBackups{MgorsBackupInterface: c.Clientset.MgorsBackups(namespace), seen: c.seen}
}

type ctxBackups struct {
	client.MgorsBackupInterface
	seen *[]bool
}

func (b ctxBackups) check(ctx context.Context) error {
	_, ok := ctx.Deadline()
	*b.seen = append(*b.seen, ok)
	return ctx.Err()
}

func (b ctxBackups) Get(ctx context.Context, name string, opts metav1.GetOptions) (*v1alpha1.MgorsBackup, error) {
	if err := b.check(ctx); err != nil {
		return nil, err
	}
	return b.MgorsBackupInterface.Get(ctx, name, opts)
}

func (b ctxBackups) UpdateStatus(ctx context.Context, x *v1alpha1.MgorsBackup, opts metav1.UpdateOptions) (*v1alpha1.MgorsBackup, error) {
	if err := b.check(ctx); err != nil {
		return nil, err
	}
	return b.MgorsBackupInterface.UpdateStatus(ctx, x, opts)
}

func restoreSample() *v1alpha1.MgorsRestore {
	return &v1alpha1.MgorsRestore{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "back", UID: "r-1", ResourceVersion: "5"},
		Spec: v1alpha1.MgorsRestoreSpec{Cluster: "db", Backup: "nightly"}, Status: v1alpha1.MgorsRestoreStatus{Phase: v1alpha1.RestorePending}}
}

// restoreConflicts makes the first n status updates of MgorsRestores a 409,
// and counts the status updates and gets the writer makes.
func restoreConflicts(c *fake.Clientset, n int) (updates, gets *int) {
	updates, gets = new(int), new(int)
	c.PrependReactor("*", "mgorsrestores", func(a k8stesting.Action) (bool, runtime.Object, error) {
		switch {
		case a.GetVerb() == "update" && a.GetSubresource() == "status":
			*updates++
			if *updates <= n {
				return true, nil, apierrors.NewConflict(schema.GroupResource{Group: v1alpha1.GroupName, Resource: "mgorsrestores"},
					a.(k8stesting.UpdateAction).GetObject().(*v1alpha1.MgorsRestore).Name, errors.New("stale resourceVersion"))
			}
		case a.GetVerb() == "get":
			*gets++
		}
		return false, nil, nil
	})
	return updates, gets
}

func TestStatusRestore(t *testing.T) {
	ctx := context.Background()
	running := v1alpha1.MgorsRestoreStatus{Phase: v1alpha1.RestoreRunning, Member: "db-0",
		StartTime: &metav1.Time{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}}
	stored := func(t *testing.T, c *fake.Clientset) v1alpha1.MgorsRestoreStatus {
		t.Helper()
		got, err := c.MgorsRestores("ns").Get(ctx, "back", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got.Status
	}
	t.Run("a status equal to the restore's is not written", func(t *testing.T) {
		r := restoreSample()
		c := fake.NewClientset(r.DeepCopy())
		if err := NewStatusWriter(c).Restore(ctx, r, *r.Status.DeepCopy()); err != nil || len(c.Actions()) != 0 {
			t.Fatalf("err %v, calls %v", err, c.Actions())
		}
	})
	t.Run("a new status is written to the status subresource, the restore untouched", func(t *testing.T) {
		r := restoreSample()
		c := fake.NewClientset(r.DeepCopy())
		updates, gets := restoreConflicts(c, 0)
		if err := NewStatusWriter(c).Restore(ctx, r, running); err != nil {
			t.Fatal(err)
		}
		if *updates != 1 || *gets != 0 {
			t.Errorf("%d status updates and %d gets, want 1 and 0", *updates, *gets)
		}
		if got := stored(t, c); !equality.Semantic.DeepEqual(got, running) {
			t.Errorf("stored %+v", got)
		}
		if r.Status.Phase != v1alpha1.RestorePending {
			t.Errorf("the caller's restore was modified: %+v", r.Status)
		}
	})
	t.Run("a deleted restore is no error", func(t *testing.T) {
		c := fake.NewClientset()
		if err := NewStatusWriter(c).Restore(ctx, restoreSample(), running); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a conflict is retried once from a fresh read", func(t *testing.T) {
		r := restoreSample()
		fresh := r.DeepCopy()
		fresh.ResourceVersion, fresh.Labels = "6", map[string]string{"team": "a"}
		c := fake.NewClientset(fresh)
		updates, gets := restoreConflicts(c, 1)
		if err := NewStatusWriter(c).Restore(ctx, r, running); err != nil {
			t.Fatal(err)
		}
		if *updates != 2 || *gets != 1 {
			t.Errorf("%d status updates and %d gets, want 2 and 1", *updates, *gets)
		}
		var sent *v1alpha1.MgorsRestore
		for _, a := range c.Actions() {
			if a.GetVerb() == "update" {
				sent = a.(k8stesting.UpdateAction).GetObject().(*v1alpha1.MgorsRestore)
			}
		}
		if sent == nil || sent.ResourceVersion != "6" || sent.Labels["team"] != "a" {
			t.Errorf("the retry did not write over the fresh copy: %+v", sent)
		}
		if got := stored(t, c); !equality.Semantic.DeepEqual(got, running) {
			t.Errorf("stored %+v", got)
		}
	})
	t.Run("a second conflict is the error", func(t *testing.T) {
		r := restoreSample()
		c := fake.NewClientset(r.DeepCopy())
		updates, _ := restoreConflicts(c, 2)
		if err := NewStatusWriter(c).Restore(ctx, r, running); !apierrors.IsConflict(err) || *updates != 2 {
			t.Fatalf("err %v after %d updates, want a conflict after 2", err, *updates)
		}
	})
	t.Run("a conflict with a fresh copy that holds the status writes nothing more", func(t *testing.T) {
		r := restoreSample()
		fresh := r.DeepCopy()
		fresh.Status = *running.DeepCopy()
		c := fake.NewClientset(fresh)
		updates, gets := restoreConflicts(c, 1)
		if err := NewStatusWriter(c).Restore(ctx, r, running); err != nil || *updates != 1 || *gets != 1 {
			t.Fatalf("err %v, %d updates, %d gets", err, *updates, *gets)
		}
	})
	t.Run("a conflict with another incarnation of the name writes nothing", func(t *testing.T) {
		r := restoreSample()
		other := r.DeepCopy()
		other.UID = "r-2"
		c := fake.NewClientset(other)
		updates, _ := restoreConflicts(c, 1)
		if err := NewStatusWriter(c).Restore(ctx, r, running); err != nil || *updates != 1 {
			t.Fatalf("err %v, %d updates", err, *updates)
		}
		if got := stored(t, c); got.Phase != v1alpha1.RestorePending {
			t.Errorf("another restore's status was written: %+v", got)
		}
	})
	t.Run("a deleted restore found by the retry is no error", func(t *testing.T) {
		c := fake.NewClientset()
		restoreConflicts(c, 1)
		if err := NewStatusWriter(c).Restore(ctx, restoreSample(), running); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("every call is bounded by ctx", func(t *testing.T) {
		r := restoreSample()
		c := fake.NewClientset(r.DeepCopy())
		var deadlines []bool
		w := NewStatusWriter(&ctxClient{Clientset: c, seen: &deadlines})
		w.Timeout = time.Second
		if err := w.Restore(ctx, r, running); err != nil {
			t.Fatal(err)
		}
		if len(deadlines) != 1 || !deadlines[0] {
			t.Fatalf("calls with a deadline: %v", deadlines)
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		next := running.DeepCopy()
		next.Phase = v1alpha1.RestoreSucceeded
		if err := w.Restore(cctx, r, *next); !errors.Is(err, context.Canceled) {
			t.Fatalf("a cancelled ctx: %v", err)
		}
	})
}

func (c *ctxClient) MgorsRestores(namespace string) client.MgorsRestoreInterface {
	return ctxRestores{MgorsRestoreInterface: c.Clientset.MgorsRestores(namespace), seen: c.seen}
}

type ctxRestores struct {
	client.MgorsRestoreInterface
	seen *[]bool
}

func (r ctxRestores) check(ctx context.Context) error {
	_, ok := ctx.Deadline()
	*r.seen = append(*r.seen, ok)
	return ctx.Err()
}

func (r ctxRestores) Get(ctx context.Context, name string, opts metav1.GetOptions) (*v1alpha1.MgorsRestore, error) {
	if err := r.check(ctx); err != nil {
		return nil, err
	}
	return r.MgorsRestoreInterface.Get(ctx, name, opts)
}

func (r ctxRestores) UpdateStatus(ctx context.Context, x *v1alpha1.MgorsRestore, opts metav1.UpdateOptions) (*v1alpha1.MgorsRestore, error) {
	if err := r.check(ctx); err != nil {
		return nil, err
	}
	return r.MgorsRestoreInterface.UpdateStatus(ctx, x, opts)
}
