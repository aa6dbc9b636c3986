package actors

import (
	"context"
	"sync"
	"testing"

	"github.com/mgors/operator/actors/eventlog"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo"
	"github.com/mgors/operator/mongo/backup"
)

// backupWorld is fakeWorld with MgorsBackups: a dump waits for release (or
// its context), a settling finds a manifest when manifests says so.
type backupWorld struct {
	*fakeWorld
	bmu       sync.Mutex
	backups   []*v1alpha1.MgorsBackup
	dumps     map[string]int // dumps started, by UID
	manifests map[string]bool
	statuses  map[string]v1alpha1.MgorsBackupStatus
	release   chan struct{}
}

func newBackupWorld(bs ...*v1alpha1.MgorsBackup) *backupWorld {
	return &backupWorld{fakeWorld: newFakeWorld(), backups: bs, dumps: map[string]int{}, manifests: map[string]bool{},
		statuses: map[string]v1alpha1.MgorsBackupStatus{}, release: make(chan struct{})}
}

func (w *backupWorld) Observe(ctx context.Context, m *v1alpha1.Mgors, desired []mongo.DesiredMember, auth Auth) (Observation, error) {
	o, err := w.fakeWorld.Observe(ctx, m, desired, auth)
	w.bmu.Lock()
	defer w.bmu.Unlock()
	for _, b := range w.backups {
		c := b.DeepCopy()
		c.Status = w.statuses[b.Name]
		o.Backups = append(o.Backups, c)
	}
	o.BackupsRead = true
	return o, err
}

func (w *backupWorld) Backup(ctx context.Context, m *v1alpha1.Mgors, b *v1alpha1.MgorsBackup, run BackupStarted, auth Auth) Event {
	w.bmu.Lock()
	w.dumps[run.UID]++
	w.bmu.Unlock()
	select {
	case <-w.release:
		w.bmu.Lock()
		w.manifests[run.UID] = true
		w.bmu.Unlock()
		return completed(run, &backup.Manifest{Member: run.Member, Size: 512, End: backup.Position{T: 7, Wall: t0}})
	case <-ctx.Done():
		return BackupFailed{Backup: run.Backup, UID: run.UID, Reason: ctx.Err().Error()}
	}
}

func (w *backupWorld) SettleBackup(ctx context.Context, m *v1alpha1.Mgors, b *v1alpha1.MgorsBackup, run BackupStarted) (Event, error) {
	w.bmu.Lock()
	defer w.bmu.Unlock()
	if w.manifests[run.UID] {
		return completed(run, &backup.Manifest{Member: run.Member, Size: 512, End: backup.Position{T: 7, Wall: t0}}), nil
	}
	return BackupFailed{Backup: run.Backup, UID: run.UID, Reason: "no manifest"}, nil
}

func (w *backupWorld) WriteBackupStatus(ctx context.Context, b *v1alpha1.MgorsBackup, st v1alpha1.MgorsBackupStatus) error {
	w.bmu.Lock()
	defer w.bmu.Unlock()
	w.statuses[b.Name] = st
	return nil
}

func (w *backupWorld) BackupEvent(*v1alpha1.MgorsBackup, bool, string, string) {}

func (w *backupWorld) backupPhase(name string) v1alpha1.BackupPhase {
	w.bmu.Lock()
	defer w.bmu.Unlock()
	return w.statuses[name].Phase
}

func (w *backupWorld) dumpsOf(uid string) int {
	w.bmu.Lock()
	defer w.bmu.Unlock()
	return w.dumps[uid]
}

// A backup runs off the mailbox: the cluster is observed while it runs, its
// status goes Pending or Running, then Succeeded; it is dumped once.
func TestActorRunsABackup(t *testing.T) {
	store, world := eventlog.NewMemory(), newBackupWorld(backupOf("first", t0))
	stop := runOperator(t, testDeps(store, world))
	defer stop()
	waitFor(t, "the backup Running", func() bool { return world.backupPhase("first") == v1alpha1.BackupRunning })
	close(world.release)
	waitFor(t, "the backup Succeeded", func() bool { return world.backupPhase("first") == v1alpha1.BackupSucceeded })
	if n := world.dumpsOf("b-first"); n != 1 {
		t.Fatalf("%d dumps", n)
	}
}

// The operator stops while a dump runs: a new one settles the backup from
// the store, failed without a manifest and completed with one, and never
// dumps it again.
func TestRestartedOperatorSettlesABackup(t *testing.T) {
	for _, manifest := range []bool{false, true} {
		store, world := eventlog.NewMemory(), newBackupWorld(backupOf("first", t0))
		stop := runOperator(t, testDeps(store, world))
		waitFor(t, "the dump", func() bool { return world.dumpsOf("b-first") == 1 })
		stop()
		world.bmu.Lock()
		world.manifests["b-first"] = manifest
		world.bmu.Unlock()
		stop = runOperator(t, testDeps(store, world))
		want := v1alpha1.BackupFailed
		if manifest {
			want = v1alpha1.BackupSucceeded
		}
		waitFor(t, "the backup "+string(want), func() bool { return world.backupPhase("first") == want })
		stop()
		if n := world.dumpsOf("b-first"); n != 1 {
			t.Fatalf("manifest %v: %d dumps", manifest, n)
		}
	}
}
