package actors

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/mgors/operator/actors/eventlog"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo/backup"
)

// archiveWorld is backupWorld that archives: each run publishes its start
// and waits until the test ends it (with end) or its context ends. The
// n-th dump starts at T 10n.
type archiveWorld struct {
	*backupWorld
	amu    sync.Mutex
	runs   []ArchiveStarted
	end    chan error
	events []string
	dumped int
}

func (w *archiveWorld) Backup(ctx context.Context, m *v1alpha1.Mgors, b *v1alpha1.MgorsBackup, run BackupStarted, auth Auth) Event {
	w.amu.Lock()
	w.dumped++
	n := uint32(10 * w.dumped)
	w.amu.Unlock()
	return completed(run, &backup.Manifest{Member: run.Member, Size: 512, Start: backup.Position{T: n, I: 1, Term: 1, Wall: t0},
		End: backup.Position{T: n + 2, I: 1, Term: 1, Wall: t0.Add(time.Second)}})
}

func (w *archiveWorld) Archive(ctx context.Context, m *v1alpha1.Mgors, run ArchiveStarted, auth Auth, progress func(backup.Position)) error {
	w.amu.Lock()
	w.runs = append(w.runs, run)
	w.amu.Unlock()
	progress(backup.Position{T: run.From.T + 5, I: 1, Term: 1, Wall: t0.Add(time.Minute)})
	select {
	case err := <-w.end:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w *archiveWorld) Event(_ *v1alpha1.Mgors, _ bool, reason, _ string) {
	w.amu.Lock()
	defer w.amu.Unlock()
	w.events = append(w.events, reason)
}

func (w *archiveWorld) started() []ArchiveStarted {
	w.amu.Lock()
	defer w.amu.Unlock()
	return append([]ArchiveStarted(nil), w.runs...)
}

func (w *archiveWorld) told(reason string) bool {
	w.amu.Lock()
	defer w.amu.Unlock()
	for _, r := range w.events {
		if r == reason {
			return true
		}
	}
	return false
}

func (w *archiveWorld) addBackup(b *v1alpha1.MgorsBackup) {
	w.bmu.Lock()
	defer w.bmu.Unlock()
	w.backups = append(w.backups, b)
}

// The actor starts the archive once a backup Succeeded, from its Start,
// off the mailbox; a lost window stops it for good (ArchiveStopped, a
// Warning Event), and a new backup restarts it from that backup's Start.
func TestActorArchivesTheOplog(t *testing.T) {
	store := eventlog.NewMemory()
	world := &archiveWorld{backupWorld: newBackupWorld(), end: make(chan error)}
	close(world.release)
	m := mgors()
	m.Spec.Backup = &v1alpha1.BackupSpec{Store: backupOf("x", t0).Spec.Store, PointInTime: &v1alpha1.PointInTimeSpec{Enabled: true, ChunkSeconds: 5}}
	sys := actor.NewActorSystem()
	mgr, err := sys.Root.SpawnNamed(NewManagerProps(testDeps(store, world)), "manager")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sys.Root.PoisonFuture(mgr).Wait() }()
	sys.Root.Send(mgr, ClusterChanged{Mgors: m})

	time.Sleep(200 * time.Millisecond)
	if n := len(world.started()); n != 0 {
		t.Fatalf("%d archive runs before a backup", n)
	}
	world.addBackup(backupOf("first", t0))
	waitFor(t, "the archive started", func() bool { return len(world.started()) == 1 })
	if r := world.started()[0]; r.Backup != "first" || r.From.T != 10 || r.Prefix != "mgors/db/demo/oplog_archive" {
		t.Fatalf("run %+v: want from first's Start", r)
	}
	if !world.told("ArchiveStarted") {
		t.Fatal("no ArchiveStarted Event")
	}
	// A read error: started again (after the back-off).
	world.end <- fmt.Errorf("backup: read the oplog: %w", context.DeadlineExceeded)
	waitForWithin(t, 30*time.Second, "the archive started again", func() bool { return len(world.started()) == 2 })

	world.end <- fmt.Errorf("%w: the entries between are gone", backup.ErrWindowLost)
	waitFor(t, "ArchiveStopped told", func() bool { return world.told("ArchiveStopped") })
	time.Sleep(300 * time.Millisecond)
	if n := len(world.started()); n != 2 {
		t.Fatalf("%d runs after the lost window, want 2", n)
	}
	world.addBackup(backupOf("second", t0.Add(time.Minute)))
	waitFor(t, "the archive restarted", func() bool { return len(world.started()) == 3 })
	if r := world.started()[2]; r.Backup != "second" || r.From.T != 20 {
		t.Fatalf("run %+v: want from second's Start", r)
	}
	// Its status is written at an observation, not with the start.
	waitFor(t, "second's status Succeeded", func() bool {
		world.bmu.Lock()
		defer world.bmu.Unlock()
		return world.statuses["second"].Phase == v1alpha1.BackupSucceeded
	})
}
