package actors

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo/backup"
)

func backupOf(name string, created time.Time) *v1alpha1.MgorsBackup {
	b := &v1alpha1.MgorsBackup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "db", UID: ktypes.UID("b-" + name),
		Generation: 1, CreationTimestamp: metav1.NewTime(created)}}
	b.Spec.Cluster = "demo"
	b.Spec.Store = v1alpha1.BackupStore{Endpoint: "s3.backup.svc:9000", Bucket: "backups", Prefix: "mgors",
		CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3-creds"}}
	return b
}

func backupEvents(d Decision) []Event {
	var out []Event
	for _, e := range d.Events {
		switch e.(type) {
		case BackupStarted, BackupCompleted, BackupFailed:
			out = append(out, e)
		}
	}
	return out
}

// A backup waits, Pending, while the cluster is not Healthy; nothing is
// started.
func TestBackupWaitsForAHealthyCluster(t *testing.T) {
	w := newWorld(demo(3)).answering()
	w.obs.Backups, w.obs.BackupsRead = []*v1alpha1.MgorsBackup{backupOf("first", t0)}, true
	s := Initial()
	for range 3 {
		d := Decide(s, w.in())
		if ev := backupEvents(d); len(ev) > 0 {
			t.Fatalf("backup events before Healthy: %v", ev)
		}
		s = run(s, d)
	}
	st := BackupStatuses(s, w.obs.Backups)["first"]
	if st.Phase != v1alpha1.BackupPending || !strings.Contains(st.Message, "Healthy") {
		t.Fatalf("status %+v, want Pending waiting for Healthy", st)
	}
}

// On a Healthy cluster, authenticated as its own user, the operator grants
// that user the backup role once, then starts the oldest backup from a
// secondary; the next waits for it; the dump's result is recorded and the
// next one starts.
func TestBackupsOneAtATimeFromASecondary(t *testing.T) {
	w := newWorld(demo(3)).initiated().budgeted()
	s := healthyState(t, w)
	s.Auth = AuthOperator
	first, second := backupOf("first", t0), backupOf("second", t0.Add(time.Minute))
	w.obs.Backups, w.obs.BackupsRead = []*v1alpha1.MgorsBackup{first, second}, true

	d := Decide(s, w.in())
	if d.Action == nil || d.Action.Kind != ActGrantBackupRole || d.Action.Host != w.obs.Primary {
		t.Fatalf("want the backup role granted on the primary first: %v %+v", types(d), d.Action)
	}
	s = run(s, d)
	s = run(s, Decision{Events: Conclude(*d.Action, nil)})
	if !s.BackupRole {
		t.Fatal("the role is not recorded")
	}

	d = Decide(s, w.in())
	ev := backupEvents(d)
	if len(ev) != 1 {
		t.Fatalf("want one BackupStarted: %v", types(d))
	}
	started := ev[0].(BackupStarted)
	if started.Backup != "first" || started.Member == w.obs.Primary || started.Prefix != "mgors/db/demo/first" {
		t.Fatalf("started %+v: want the oldest, from a secondary, under its prefix", started)
	}
	s = run(s, d)
	sts := BackupStatuses(s, w.obs.Backups)
	if sts["first"].Phase != v1alpha1.BackupRunning || sts["first"].Member != started.Member {
		t.Fatalf("first: %+v", sts["first"])
	}
	if sts["second"].Phase != v1alpha1.BackupPending || !strings.Contains(sts["second"].Message, "one backup at a time") {
		t.Fatalf("second: %+v", sts["second"])
	}
	if d = Decide(s, w.in()); len(backupEvents(d)) > 0 {
		t.Fatalf("a second backup started while one runs: %v", types(d))
	}

	end := backup.Position{T: 100, I: 3, Term: 1, Wall: t0.Add(2 * time.Minute)}
	in := w.in()
	in.Results = map[string]Event{started.UID: BackupCompleted{Backup: "first", UID: started.UID, Member: started.Member,
		SizeBytes: 4096, Collections: 2, Started: t0, Finished: t0.Add(2 * time.Minute), Start: backup.Position{T: 99}, End: end}}
	d = Decide(s, in)
	ev = backupEvents(d)
	if len(ev) != 2 || ev[0].Type() != "BackupCompleted" || ev[1].(BackupStarted).Backup != "second" {
		t.Fatalf("want first completed, then second started: %v", types(d))
	}
	s = run(s, d)
	st := BackupStatuses(s, w.obs.Backups)["first"]
	if st.Phase != v1alpha1.BackupSucceeded || st.SizeBytes != 4096 || st.End == nil || st.End.Seconds != 100 || st.PointInTimeRange == "" {
		t.Fatalf("first: %+v", st)
	}
	// Once the status shows it, nothing more is written.
	first.Status = st
	if _, ok := BackupStatuses(s, w.obs.Backups)["first"]; ok {
		t.Fatal("an unchanged status is written again")
	}
}

// A MgorsBackup deleted while it runs fails; one shown Running with no
// record in this log (an earlier incarnation's) fails; one that ended is
// never taken again.
func TestBackupsThatCannotEnd(t *testing.T) {
	w := newWorld(demo(3)).initiated().budgeted()
	s := healthyState(t, w)
	b := backupOf("first", t0)
	w.obs.Backups, w.obs.BackupsRead = []*v1alpha1.MgorsBackup{b}, true
	d := Decide(s, w.in())
	s = run(s, d)
	if s.backupRun("b-first") == nil {
		t.Fatalf("not started: %v", types(d))
	}

	w.obs.Backups, w.obs.BackupsRead = nil, false // unreadable: nothing is taken for deleted
	if d = Decide(s, w.in()); len(backupEvents(d)) > 0 {
		t.Fatalf("failed on an unreadable list: %v", types(d))
	}
	w.obs.BackupsRead = true
	d = Decide(s, w.in())
	if ev := backupEvents(d); len(ev) != 1 || !strings.Contains(ev[0].(BackupFailed).Reason, "deleted") {
		t.Fatalf("want failed as deleted: %v", ev)
	}
	s = run(s, d)

	orphan := backupOf("orphan", t0)
	orphan.Status.Phase = v1alpha1.BackupRunning
	done := backupOf("done", t0)
	done.Status.Phase = v1alpha1.BackupSucceeded
	w.obs.Backups = []*v1alpha1.MgorsBackup{done, orphan}
	d = Decide(s, w.in())
	ev := backupEvents(d)
	if len(ev) != 1 || ev[0].(BackupFailed).Backup != "orphan" {
		t.Fatalf("want the orphan failed, the ended one left: %v", ev)
	}
	s = run(s, d)
	if d = Decide(s, w.in()); len(backupEvents(d)) > 0 {
		t.Fatalf("an ended backup was taken again: %v", types(d))
	}
	sts := BackupStatuses(s, w.obs.Backups)
	if _, ok := sts["done"]; ok || sts["orphan"].Phase != v1alpha1.BackupFailed {
		t.Fatalf("statuses %+v", sts)
	}
}

// Paused, a dump's result is still recorded, and no backup starts.
func TestPausedRecordsResultsAndStartsNothing(t *testing.T) {
	w := newWorld(demo(3)).initiated().budgeted()
	s := healthyState(t, w)
	w.obs.Backups, w.obs.BackupsRead = []*v1alpha1.MgorsBackup{backupOf("first", t0), backupOf("second", t0)}, true
	s = run(s, Decide(s, w.in()))
	w.m.Spec.Paused = true
	w.m.Generation++
	in := w.in()
	in.Results = map[string]Event{"b-first": BackupFailed{Backup: "first", UID: "b-first", Reason: "store unreachable"}}
	d := Decide(s, in)
	ev := backupEvents(d)
	if len(ev) != 1 || ev[0].Type() != "BackupFailed" {
		t.Fatalf("want the result alone: %v", types(d))
	}
}

// The state keeps every running backup and the last keptBackups ended ones.
func TestBackupRunsPruned(t *testing.T) {
	s := Initial()
	for i := range keptBackups + 10 {
		uid := fmt.Sprint("u", i)
		s = Evolve(s, s.Seq+1, t0, BackupStarted{Backup: uid, UID: uid})
		s = Evolve(s, s.Seq+1, t0, BackupFailed{Backup: uid, UID: uid, Reason: "x"})
	}
	s = Evolve(s, s.Seq+1, t0, BackupStarted{Backup: "last", UID: "last"})
	if len(s.Backups) != keptBackups || s.Backups[len(s.Backups)-1].UID != "last" || !s.Backups[len(s.Backups)-1].Running() {
		t.Fatalf("%d runs kept, last %+v", len(s.Backups), s.Backups[len(s.Backups)-1])
	}
	if s.backupRun("u0") != nil {
		t.Fatal("the oldest ended run is kept")
	}
}
