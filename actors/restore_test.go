package actors

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mgors/operator/actors/eventlog"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo"
	"github.com/mgors/operator/mongo/backup"
)

// restoreWorld is fakeWorld with one MgorsRestore of a Succeeded backup: a
// restore waits for release (or its context).
type restoreWorld struct {
	*fakeWorld
	rmu      sync.Mutex
	restore  *v1alpha1.MgorsRestore
	source   *v1alpha1.MgorsBackup
	runs     int
	statuses map[string]v1alpha1.MgorsRestoreStatus
	release  chan struct{}
}

func newRestoreWorld() *restoreWorld {
	return &restoreWorld{fakeWorld: newFakeWorld(), restore: restoreOf("r1", "src", t0), source: succeeded(backupOf("src", t0), t0),
		statuses: map[string]v1alpha1.MgorsRestoreStatus{}, release: make(chan struct{})}
}

func (w *restoreWorld) Observe(ctx context.Context, m *v1alpha1.Mgors, desired []mongo.DesiredMember, auth Auth) (Observation, error) {
	o, err := w.fakeWorld.Observe(ctx, m, desired, auth)
	w.rmu.Lock()
	defer w.rmu.Unlock()
	r := w.restore.DeepCopy()
	r.Status = w.statuses[r.Name]
	o.Restores, o.RestoresRead, o.RestoreBackups = []*v1alpha1.MgorsRestore{r}, true, map[string]*v1alpha1.MgorsBackup{"src": w.source}
	return o, err
}

func (w *restoreWorld) Restore(ctx context.Context, m *v1alpha1.Mgors, b *v1alpha1.MgorsBackup, run RestoreStarted) Event {
	w.rmu.Lock()
	w.runs++
	w.rmu.Unlock()
	select {
	case <-w.release:
		return restoreResult(run, &backup.Result{Collections: 1, Documents: 3, End: backup.Position{T: 9, Wall: t0}}, time.Now())
	case <-ctx.Done():
		return RestoreFailed{Restore: run.Restore, UID: run.UID, Reason: ctx.Err().Error()}
	}
}

func (w *restoreWorld) WriteRestoreStatus(ctx context.Context, r *v1alpha1.MgorsRestore, st v1alpha1.MgorsRestoreStatus) error {
	w.rmu.Lock()
	defer w.rmu.Unlock()
	w.statuses[r.Name] = st
	return nil
}

func (w *restoreWorld) RestoreEvent(*v1alpha1.MgorsRestore, bool, string, string) {}

func (w *restoreWorld) phase(name string) (v1alpha1.RestorePhase, int) {
	w.rmu.Lock()
	defer w.rmu.Unlock()
	return w.statuses[name].Phase, w.runs
}

// A restore runs off the mailbox to Succeeded, once.
func TestActorRunsARestore(t *testing.T) {
	store, world := eventlog.NewMemory(), newRestoreWorld()
	stop := runOperator(t, testDeps(store, world))
	defer stop()
	waitFor(t, "the restore Running", func() bool { p, _ := world.phase("r1"); return p == v1alpha1.RestoreRunning })
	close(world.release)
	waitFor(t, "the restore Succeeded", func() bool { p, _ := world.phase("r1"); return p == v1alpha1.RestoreSucceeded })
	if _, runs := world.phase("r1"); runs != 1 {
		t.Fatalf("%d restores", runs)
	}
}

// The operator stops while a restore runs: a new one fails it (the cluster
// holds part of it) and never runs it again.
func TestRestartedOperatorFailsARestoreUnderWay(t *testing.T) {
	store, world := eventlog.NewMemory(), newRestoreWorld()
	stop := runOperator(t, testDeps(store, world))
	waitFor(t, "the restore", func() bool { _, runs := world.phase("r1"); return runs == 1 })
	stop()
	stop = runOperator(t, testDeps(store, world))
	defer stop()
	waitFor(t, "the restore Failed", func() bool { p, _ := world.phase("r1"); return p == v1alpha1.RestoreFailed })
	if _, runs := world.phase("r1"); runs != 1 {
		t.Fatalf("%d restores", runs)
	}
}

// TestManagedUsers: a restore keeps the admin user and the operator's own
// user by their Secrets' names and by the default names, once each.
func TestManagedUsers(t *testing.T) {
	for _, tc := range []struct {
		admin, operator string
		want            []string
	}{
		{"admin", "mgors-operator", []string{"admin.admin", "admin.mgors-operator"}},
		{"dba", "mgors-operator", []string{"admin.dba", "admin.mgors-operator", "admin.admin"}},
		{"dba", "op", []string{"admin.dba", "admin.op", "admin.admin", "admin.mgors-operator"}},
		{"", "", []string{"admin.admin", "admin.mgors-operator"}},
	} {
		if got := managedUsers(tc.admin, tc.operator); !slices.Equal(got, tc.want) {
			t.Errorf("managedUsers(%q, %q) = %v, want %v", tc.admin, tc.operator, got, tc.want)
		}
	}
}
