package actors

import (
	"strings"
	"testing"
	"time"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo/backup"
)

// pitrDemo is demo(3) archiving into backupOf's store.
func pitrDemo() *v1alpha1.Mgors {
	m := demo(3)
	m.Spec.Backup = &v1alpha1.BackupSpec{Store: backupOf("x", t0).Spec.Store, PointInTime: &v1alpha1.PointInTimeSpec{Enabled: true, ChunkSeconds: 5}}
	return m
}

// archivedBackup folds a backup of b that completed with start and end.
func archivedBackup(s State, b *v1alpha1.MgorsBackup, start, end backup.Position) State {
	s = Evolve(s, s.Seq+1, t0, BackupStarted{Backup: b.Name, UID: string(b.UID), Member: "m", Endpoint: b.Spec.Store.Endpoint,
		Bucket: b.Spec.Store.Bucket, Prefix: backup.Prefix(b)})
	return Evolve(s, s.Seq+1, t0, BackupCompleted{Backup: b.Name, UID: string(b.UID), Member: "m", Start: start, End: end})
}

func archiveStarts(d Decision) []ArchiveStarted {
	var out []ArchiveStarted
	for _, e := range d.Events {
		if a, ok := e.(ArchiveStarted); ok {
			out = append(out, a)
		}
	}
	return out
}

func pos(t uint32, wall time.Time) backup.Position {
	return backup.Position{T: t, I: 1, Term: 1, Wall: wall}
}

// Nothing is archived before a backup Succeeded into spec.backup.store
// (the status says so); then the role is granted, and the archive starts
// from the newest such backup's Start, on a secondary, under the archive's
// prefix. A backup into another store does not count.
func TestArchiveStartsAfterABackup(t *testing.T) {
	w := newWorld(pitrDemo()).initiated().budgeted()
	w.m = pitrDemo()
	s := healthyState(t, w)
	s.Auth = AuthOperator
	w.obs.Archive = ArchiveProgress{Able: true}
	other := backupOf("other", t0)
	other.Spec.Store.Bucket = "elsewhere"
	w.obs.Backups, w.obs.BackupsRead = []*v1alpha1.MgorsBackup{other}, true
	s = archivedBackup(s, other, pos(10, t0), pos(12, t0.Add(time.Minute)))
	if d := Decide(s, w.in()); len(archiveStarts(d)) > 0 || (d.Action != nil && d.Action.Kind == ActGrantBackupRole) {
		t.Fatalf("archiving without a backup into spec.backup.store: %v", types(d))
	}
	if st := StatusFor(s, w.obs, w.m, "mem", "cluster.local"); st.Backup == nil || !strings.Contains(st.Backup.Message, "waits for a first Succeeded backup into spec.backup.store") {
		t.Fatalf("status.backup %+v", st.Backup)
	}

	first, second := backupOf("first", t0), backupOf("second", t0.Add(time.Hour))
	w.obs.Backups = append(w.obs.Backups, first, second)
	s = archivedBackup(s, first, pos(20, t0), pos(22, t0.Add(time.Minute)))
	s = archivedBackup(s, second, pos(30, t0.Add(time.Hour)), pos(32, t0.Add(time.Hour+time.Minute)))
	d := Decide(s, w.in())
	if d.Action == nil || d.Action.Kind != ActGrantBackupRole {
		t.Fatalf("want the backup role first: %v", types(d))
	}
	s = run(s, d)
	s = run(s, Decision{Events: Conclude(*d.Action, nil)})
	d = Decide(s, w.in())
	as := archiveStarts(d)
	if len(as) != 1 {
		t.Fatalf("want one ArchiveStarted: %v", types(d))
	}
	a := as[0]
	if a.Backup != "second" || a.From != pos(30, t0.Add(time.Hour)) || a.Member == w.obs.Primary || a.Prefix != "mgors/db/demo/oplog_archive" || a.Bucket != "backups" {
		t.Fatalf("started %+v: want from second's Start, on a secondary, under the archive's prefix", a)
	}
	s = run(s, d)

	// Running: nothing more.
	w.obs.Archive = ArchiveProgress{Able: true, Running: true, Store: storeKey(w.m.Spec.Backup.Store), From: a.From}
	if d := Decide(s, w.in()); len(archiveStarts(d)) > 0 {
		t.Fatalf("a second archive: %v", types(d))
	}
	// A World that does not archive: nothing.
	w.obs.Archive = ArchiveProgress{}
	if d := Decide(s, w.in()); len(archiveStarts(d)) > 0 {
		t.Fatalf("an archive without an ArchiveWorld: %v", types(d))
	}
	// Disabled: nothing.
	w.obs.Archive = ArchiveProgress{Able: true}
	w.m.Spec.Backup.PointInTime.Enabled = false
	if d := Decide(s, w.in()); len(archiveStarts(d)) > 0 {
		t.Fatalf("an archive while disabled: %v", types(d))
	}
	// The last backup is still shown (BackupSummary), nothing of an archive.
	if st := StatusFor(s, w.obs, w.m, "mem", "cluster.local"); st.Backup != nil &&
		(st.Backup.ArchivedUntil != nil || st.Backup.PointInTimeRange != "" || st.Backup.Message != "") {
		t.Fatalf("status.backup while disabled: %+v", st.Backup)
	}
}

// A run that ended on a read error starts again after the back-off, which
// doubles up to 5 minutes; the status says why meanwhile.
func TestArchiveBacksOff(t *testing.T) {
	for n, want := range map[int]time.Duration{0: 0, 1: 10 * time.Second, 2: 20 * time.Second, 5: 160 * time.Second, 6: 5 * time.Minute, 40: 5 * time.Minute} {
		if got := archiveBackoff(n); got != want {
			t.Errorf("archiveBackoff(%d) = %s, want %s", n, got, want)
		}
	}
	w := newWorld(pitrDemo()).initiated().budgeted()
	w.m = pitrDemo()
	s := healthyState(t, w)
	first := backupOf("first", t0)
	w.obs.Backups, w.obs.BackupsRead = []*v1alpha1.MgorsBackup{first}, true
	s = archivedBackup(s, first, pos(20, t0), pos(22, t0.Add(time.Minute)))
	w.obs.Archive = ArchiveProgress{Able: true}
	s = run(s, Decide(s, w.in()))
	if s.Archive == nil {
		t.Fatal("not started")
	}
	w.obs.Archive = ArchiveProgress{Able: true, Store: storeKey(w.m.Spec.Backup.Store), From: s.Archive.From, Failures: 2, EndedAt: t0, Error: "connection refused"}
	in := w.in()
	in.Now = t0.Add(19 * time.Second)
	if d := Decide(s, in); len(archiveStarts(d)) > 0 {
		t.Fatalf("started during the back-off: %v", types(d))
	}
	if st := StatusFor(s, w.obs, w.m, "mem", "cluster.local"); !strings.Contains(st.Backup.Message, "connection refused") {
		t.Fatalf("status.backup %+v", st.Backup)
	}
	in.Now = t0.Add(20 * time.Second)
	if d := Decide(s, in); len(archiveStarts(d)) != 1 {
		t.Fatalf("not started after the back-off: %v", types(d))
	}
}

// A lost window is recorded (ArchiveStopped, with the archive's end); no
// archive starts again from a backup older than the hole, however often
// asked; the status names the hole and the way on; a new backup restarts
// it from its Start.
func TestArchiveStopsUntilANewBackup(t *testing.T) {
	w := newWorld(pitrDemo()).initiated().budgeted()
	w.m = pitrDemo()
	s := healthyState(t, w)
	first := backupOf("first", t0)
	w.obs.Backups, w.obs.BackupsRead = []*v1alpha1.MgorsBackup{first}, true
	s = archivedBackup(s, first, pos(20, t0), pos(22, t0.Add(time.Minute)))
	w.obs.Archive = ArchiveProgress{Able: true}
	s = run(s, Decide(s, w.in()))
	last := pos(40, t0.Add(10*time.Minute))
	w.obs.Archive = ArchiveProgress{Able: true, Store: storeKey(w.m.Spec.Backup.Store), From: s.Archive.From, Last: last,
		Lost: "backup: the oplog window was lost: the entries between are gone"}
	d := Decide(s, w.in())
	if len(d.Events) == 0 || d.Events[0].Type() != "ArchiveStopped" || d.Events[0].(ArchiveStopped).Last != last || len(archiveStarts(d)) > 0 {
		t.Fatalf("want ArchiveStopped at the archive's end and nothing started: %v", types(d))
	}
	s = run(s, d)
	w.obs.Archive.Lost = "" // the actor forgets it once recorded
	for range 3 {
		if d := Decide(s, w.in()); len(d.Events) > 0 && (len(archiveStarts(d)) > 0 || has(d, "ArchiveStopped")) {
			t.Fatalf("after the stop: %v", types(d))
		}
	}
	st := StatusFor(s, w.obs, w.m, "mem", "cluster.local")
	if msg := st.Backup.Message; !strings.Contains(msg, "gone") || !strings.Contains(msg, "2026-11-29T12:10:00Z") || !strings.Contains(msg, "take a MgorsBackup to restart point-in-time archiving") {
		t.Fatalf("status.backup.message %q", msg)
	}
	if st.Backup.ArchivedUntil == nil || !st.Backup.ArchivedUntil.Time.Equal(last.Wall) {
		t.Fatalf("archivedUntil %v, want the archive's end", st.Backup.ArchivedUntil)
	}
	second := backupOf("second", t0.Add(time.Hour))
	w.obs.Backups = append(w.obs.Backups, second)
	s = archivedBackup(s, second, pos(50, t0.Add(time.Hour)), pos(52, t0.Add(time.Hour+time.Minute)))
	d = Decide(s, w.in())
	if as := archiveStarts(d); len(as) != 1 || as[0].Backup != "second" || as[0].From.T != 50 {
		t.Fatalf("want the archive restarted from second's Start: %v %+v", types(d), as)
	}
	s = run(s, d)
	if st := StatusFor(s, w.obs, w.m, "mem", "cluster.local"); st.Backup != nil && strings.Contains(st.Backup.Message, "stopped") {
		t.Fatalf("status.backup.message %q after the restart", st.Backup.Message)
	}
}

// The ranges: status.backup.archivedUntil is the archive's last entry;
// pointInTimeRange runs from the oldest covered backup's End (into the
// same store, ending at or after the archive's start) to it; each covered
// MgorsBackup restores up to it, others keep End..End.
func TestArchiveRanges(t *testing.T) {
	w := newWorld(pitrDemo()).initiated().budgeted()
	w.m = pitrDemo()
	s := healthyState(t, w)
	old, first, second, other := backupOf("old", t0), backupOf("first", t0.Add(time.Hour)), backupOf("second", t0.Add(2*time.Hour)), backupOf("other", t0)
	other.Spec.Store.Prefix = "another"
	w.obs.Backups, w.obs.BackupsRead = []*v1alpha1.MgorsBackup{old, first, second, other}, true
	hour := func(h int) time.Time { return t0.Add(time.Duration(h) * time.Hour) }
	s = archivedBackup(s, old, pos(5, t0), pos(6, t0.Add(time.Minute)))
	s = archivedBackup(s, other, pos(95, hour(1)), pos(96, hour(1).Add(time.Minute)))
	s = archivedBackup(s, first, pos(100, hour(1)), pos(101, hour(1).Add(time.Minute)))
	s = archivedBackup(s, second, pos(200, hour(2)), pos(201, hour(2).Add(time.Minute)))
	s = Evolve(s, s.Seq+1, t0, ArchiveStarted{Backup: "first", Member: "m", From: pos(100, hour(1)), Endpoint: "s3.backup.svc:9000", Bucket: "backups", Prefix: "mgors/db/demo/oplog_archive"})
	until := pos(300, hour(3).Add(1500*time.Millisecond))
	w.obs.Archive = ArchiveProgress{Able: true, Running: true, Store: storeKey(w.m.Spec.Backup.Store), From: pos(100, hour(1)), Last: until}

	st := StatusFor(s, w.obs, w.m, "mem", "cluster.local").Backup
	if st == nil || st.ArchivedUntil == nil || !st.ArchivedUntil.Time.Equal(hour(3).Add(time.Second)) {
		t.Fatalf("status.backup %+v: want archivedUntil %s", st, hour(3))
	}
	if want := "2026-11-29T13:01:00Z..2026-11-29T15:00:01Z"; st.PointInTimeRange != want || st.Message != "" {
		t.Fatalf("status.backup %+v: want range %s and no message", st, want)
	}
	sts := BackupStatuses(s, w.obs.Backups, ArchiveCoverFor(s, w.obs, w.m))
	for name, want := range map[string]string{
		"first":  "2026-11-29T13:01:00Z..2026-11-29T15:00:01Z",
		"second": "2026-11-29T14:01:00Z..2026-11-29T15:00:01Z",
		"old":    "2026-11-29T12:01:00Z..2026-11-29T12:01:00Z",
		"other":  "2026-11-29T13:01:00Z..2026-11-29T13:01:00Z",
	} {
		if got := sts[name].PointInTimeRange; got != want {
			t.Errorf("%s: range %q, want %q", name, got, want)
		}
	}
	// After an operator restart, until the new goroutine has read the store,
	// the status last written stands: nothing blinks.
	w.m.Status.Backup = st
	w.obs.Archive.Last = backup.Position{}
	if again := StatusFor(s, w.obs, w.m, "mem", "cluster.local").Backup; again == nil || again.ArchivedUntil == nil ||
		!again.ArchivedUntil.Equal(st.ArchivedUntil) || again.PointInTimeRange != st.PointInTimeRange {
		t.Fatalf("status.backup after a restart %+v, want %+v", again, st)
	}
	w.obs.Archive.Last, w.m.Status.Backup = until, nil
	// A backup ended before this log knew it (its status Succeeded, no
	// record) is extended too; one shown with the range already is left.
	s.Backups = nil
	second.Status = BackupStatuses(archivedBackup(State{}, second, pos(200, hour(2)), pos(201, hour(2).Add(time.Minute))), []*v1alpha1.MgorsBackup{second})["second"]
	sts = BackupStatuses(s, []*v1alpha1.MgorsBackup{second}, ArchiveCoverFor(s, w.obs, w.m))
	if got := sts["second"].PointInTimeRange; got != "2026-11-29T14:01:00Z..2026-11-29T15:00:01Z" {
		t.Fatalf("second from its status: %q", got)
	}
	second.Status = sts["second"]
	if sts := BackupStatuses(s, []*v1alpha1.MgorsBackup{second}, ArchiveCoverFor(s, w.obs, w.m)); len(sts) != 0 {
		t.Fatalf("rewritten: %+v", sts)
	}
	// Without the archive (disabled): no cover.
	w.m.Spec.Backup.PointInTime = nil
	if c := ArchiveCoverFor(s, w.obs, w.m); c.Store != "" {
		t.Fatalf("cover %+v while disabled", c)
	}
}

// The archive's chunks are pruned through the End of the oldest backup kept,
// once each time that End moves: after the first backup, and again when
// the oldest backup is deleted. Nothing while the backups are unread or the
// archive is off.
func TestArchivePrunedBehindTheOldestBackup(t *testing.T) {
	w := newWorld(pitrDemo()).initiated().budgeted()
	w.m = pitrDemo()
	s := healthyState(t, w)
	first, second := backupOf("first", t0), backupOf("second", t0.Add(time.Hour))
	w.obs.Backups, w.obs.BackupsRead = []*v1alpha1.MgorsBackup{second, first}, true
	s = archivedBackup(s, first, pos(20, t0), pos(22, t0.Add(time.Minute)))
	s = archivedBackup(s, second, pos(30, t0.Add(time.Hour)), pos(32, t0.Add(time.Hour+time.Minute)))
	w.obs.Archive = ArchiveProgress{Able: true}
	s = run(s, Decide(s, w.in())) // ArchiveStarted
	if s.Archive == nil {
		t.Fatal("the archive did not start")
	}
	w.obs.Archive = ArchiveProgress{Able: true, Running: true, Store: storeKey(w.m.Spec.Backup.Store), From: s.Archive.From}

	prune := func(s State) *Action {
		t.Helper()
		d := Decide(s, w.in())
		if d.Action == nil || d.Action.Kind != ActPruneArchive {
			return nil
		}
		return d.Action
	}
	if a := prune(s); a != nil {
		t.Fatalf("pruned before the archive went past the End: %+v", a)
	}
	w.obs.Archive.Last = pos(40, t0.Add(2*time.Hour))
	a := prune(s)
	if a == nil || a.Backup.Name != "first" || a.Through != pos(22, t0.Add(time.Minute)) {
		t.Fatalf("want the chunks pruned through first's End: %+v", a)
	}
	s = run(s, Decision{Events: []Event{ActionStarted{Action: ActPruneArchive, Target: "first"}}})
	s = run(s, Decision{Events: append(Conclude(*a, nil), ArchivePruned{Backup: "first", Through: a.Through, Chunks: 3})})
	if got := prune(s); got != nil {
		t.Fatalf("pruned again through the same End: %+v", got)
	}
	if reason, msg, warn, ok := Announcement(ArchivePruned{Backup: "first", Through: a.Through, Chunks: 3}); !ok || warn ||
		reason != "ArchivePruned" || !strings.Contains(msg, "3 chunks") || !strings.Contains(msg, "first") {
		t.Errorf("announcement %s %q %t %t", reason, msg, warn, ok)
	}

	// first deleted: second is the oldest kept, and its End the new bound.
	w.obs.Backups = []*v1alpha1.MgorsBackup{second}
	if a := prune(s); a == nil || a.Backup.Name != "second" || a.Through != pos(32, t0.Add(time.Hour+time.Minute)) {
		t.Fatalf("want the chunks pruned through second's End: %+v", a)
	}
	w.obs.BackupsRead = false
	if a := prune(s); a != nil {
		t.Fatalf("pruned with the backups unread: %+v", a)
	}
	w.obs.BackupsRead = true
	w.m.Spec.Backup.PointInTime.Enabled = false
	if a := prune(s); a != nil {
		t.Fatalf("pruned with the archive off: %+v", a)
	}
}
