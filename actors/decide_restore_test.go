package actors

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo/backup"
)

func restoreOf(name, backupName string, created time.Time) *v1alpha1.MgorsRestore {
	r := &v1alpha1.MgorsRestore{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "db", UID: ktypes.UID("r-" + name),
		Generation: 1, CreationTimestamp: metav1.NewTime(created)}}
	r.Spec.Cluster, r.Spec.Backup = "demo", backupName
	return r
}

func succeeded(b *v1alpha1.MgorsBackup, end time.Time) *v1alpha1.MgorsBackup {
	b.Status = backup.Succeeded(&backup.Manifest{Member: "m", End: backup.Position{T: 50, Wall: end}, Size: 10}, backup.Prefix(b), 1)
	return b
}

func restoreEvents(d Decision) []Event {
	var out []Event
	for _, e := range d.Events {
		switch e.(type) {
		case RestoreStarted, RestoreCompleted, RestoreFailed:
			out = append(out, e)
		}
	}
	return out
}

// A restore waits for its backup to succeed, then restores into the
// primary; a backup of the cluster waits for it; its result is recorded.
func TestRestoreWaitsForItsBackupThenRuns(t *testing.T) {
	w := newWorld(demo(3)).initiated().budgeted()
	s := healthyState(t, w)
	src := backupOf("src", t0) // of another cluster, say
	src.Spec.Cluster = "other"
	r := restoreOf("r1", "src", t0)
	w.obs.Restores, w.obs.RestoresRead = []*v1alpha1.MgorsRestore{r}, true

	// No such backup yet, then one not done: Pending, with the reason.
	for _, b := range []*v1alpha1.MgorsBackup{nil, src} {
		w.obs.RestoreBackups = map[string]*v1alpha1.MgorsBackup{}
		if b != nil {
			w.obs.RestoreBackups[b.Name] = b
		}
		if d := Decide(s, w.in()); len(restoreEvents(d)) > 0 {
			t.Fatalf("started or failed before the backup succeeded: %v", types(d))
		}
		st := RestoreStatuses(s, w.obs)["r1"]
		if st.Phase != v1alpha1.RestorePending || !strings.Contains(st.Message, "MgorsBackup src") {
			t.Fatalf("status %+v", st)
		}
	}

	succeeded(src, t0.Add(time.Minute))
	// A backup of this cluster asked for meanwhile waits for the restore.
	w.obs.Backups, w.obs.BackupsRead = []*v1alpha1.MgorsBackup{backupOf("mine", t0)}, true
	d := Decide(s, w.in())
	ev := restoreEvents(d)
	if len(ev) != 1 || has(d, "BackupStarted") {
		t.Fatalf("want the restore alone started (the backup asked for later): %v", types(d))
	}
	started := ev[0].(RestoreStarted)
	if started.Member != w.obs.Primary || started.Prefix != "mgors/db/other/src" || started.Source != "other" {
		t.Fatalf("started %+v", started)
	}
	s = run(s, d)
	if d = Decide(s, w.in()); has(d, "BackupStarted") {
		t.Fatalf("a backup started during the restore: %v", types(d))
	}
	if st := BackupStatuses(s, w.obs.Backups)["mine"]; !strings.Contains(st.Message, "restore") {
		t.Fatalf("the backup's pending reason: %+v", st)
	}
	if st := RestoreStatuses(s, w.obs)["r1"]; st.Phase != v1alpha1.RestoreRunning || st.Member != w.obs.Primary {
		t.Fatalf("status %+v", st)
	}

	in := w.in()
	in.Results = map[string]Event{started.UID: RestoreCompleted{Restore: "r1", UID: started.UID, Collections: 2, Documents: 9,
		RestoredTo: backup.Position{T: 50, I: 1, Wall: t0.Add(time.Minute)}, Finished: t0.Add(2 * time.Minute)}}
	d = Decide(s, in)
	if !has(d, "RestoreCompleted") || !has(d, "BackupStarted") {
		t.Fatalf("want the restore completed and the waiting backup started: %v", types(d))
	}
	s = run(s, d)
	st := RestoreStatuses(s, w.obs)["r1"]
	if st.Phase != v1alpha1.RestoreSucceeded || st.Documents != 9 || st.RestoredTo == nil || st.RestoredTo.Time == nil {
		t.Fatalf("status %+v", st)
	}
}

// What cannot be restored fails at once, naming the field.
func TestRestoreRefused(t *testing.T) {
	w := newWorld(demo(3)).initiated().budgeted()
	s := healthyState(t, w)
	failed := backupOf("bad", t0)
	failed.Status.Phase, failed.Status.Message = v1alpha1.BackupFailed, "store unreachable"
	good := succeeded(backupOf("good", t0), t0.Add(time.Hour))
	early := restoreOf("early", "good", t0)
	early.Spec.PointInTime = &metav1.Time{Time: t0.Add(time.Minute)}
	for _, tc := range []struct {
		r    *v1alpha1.MgorsRestore
		want string
	}{
		{restoreOf("r-bad", "bad", t0), "spec.backup: the MgorsBackup bad failed"},
		{early, "spec.pointInTime"},
	} {
		w.obs.Restores, w.obs.RestoresRead = []*v1alpha1.MgorsRestore{tc.r}, true
		w.obs.RestoreBackups = map[string]*v1alpha1.MgorsBackup{"bad": failed, "good": good}
		d := Decide(s, w.in())
		ev := restoreEvents(d)
		if len(ev) != 1 || !strings.Contains(ev[0].(RestoreFailed).Reason, tc.want) {
			t.Fatalf("%s: %v, want failed with %q", tc.r.Name, ev, tc.want)
		}
		s2 := run(s, d)
		if st := RestoreStatuses(s2, w.obs)[tc.r.Name]; st.Phase != v1alpha1.RestoreFailed {
			t.Fatalf("%s: status %+v", tc.r.Name, st)
		}
		if d := Decide(s2, w.in()); len(restoreEvents(d)) > 0 {
			t.Fatalf("%s: failed again: %v", tc.r.Name, types(d))
		}
	}
}
